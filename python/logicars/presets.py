"""The paper's five experiments as named presets, with the reference notebook's numbers.

Every number here is the one the "Differentiable Logic CA" notebook (Google Research)
uses, so that training a preset reproduces the paper's run; the exceptions are the epoch
budget of a preset that restarts, which allows several attempts (`notebook_epochs` keeps
the notebook's), and the growth presets' training rules (below). The specs are
`ModelSpec.build`'s: hidden widths only, the update network's input width `C + C * S * K`
(the centre cell's channels plus every channel's perception output: S = last perceive
width, K = kernels) and its output `C` derived.

Wiring: perceive layer 0 is `first_kernel` (centre against each of the 8 neighbours),
every other layer is `unique`. Every `unique` layer below satisfies what the notebook's
`get_unique_connections` needs (`2 * out >= in` and `in * (in - 1) / 2 >= out` distinct
pairs), so no preset falls back to `random`.

Seeds: the notebook trains every experiment with seed 23 of JAX's random streams. This
engine draws wiring, data and masks from its own generators (ChaCha8, NumPy's PCG64), so
a seed here is a different run from the notebook's, and whether one attempt of the
notebook's length reaches a working circuit depends on the wiring draw
(docs/results.md has the success rate over seeds). Training therefore repairs nearly
right circuits (`logicars.repair`), a preset with `restart_every` trains up to
`epochs // restart_every` attempts, each from a fresh wiring, so that most seeds solve,
one with a stall check (`stall_epochs`, `stall_loss`) replaces an attempt still far off
after `stall_epochs` by a fresh wiring, and one with a `drift_budget` searches the hard
circuit of a run that ends unsolved (`repair(..., method="drift")`); `seed` is the
preset's default seed.

The growth presets change the notebook's training rule, as the seed sweeps of
docs/results.md measured: with the notebook's softmax, none of ten colored-G seeds and none
of eleven lizard seeds solves. The coloured G trains with its states binarized between
steps (`binarize_states`), the lizard with the truth-table parametrization of its gates
(`relax = "truth-table"`); the coloured G restarts unsolved attempts, the lizard
stalled ones. Every default seed is 0; the notebook's own seed-23 lizard wiring stays in
`logicars/data/` for `init` (drawn with `scripts/notebook_init.py`, which needs JAX),
which trains the notebook's run with `relax = "softmax"` and `binarize_states = false`.
"""

from __future__ import annotations

import dataclasses
import math
import os
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np

from .spec import DEFAULT_LR, DEFAULT_WEIGHT_DECAY, ModelSpec, resolve_relaxation
from .tasks import Task, is_builtin_kind, kind_data, make_task, normalise_rule, split_kind

# Label of a start from the reference notebook's own seed-23 wiring (the lizard's `init`).
NOTEBOOK_START = "nb23"


@dataclass(frozen=True)
class Preset:
    """A named experiment: the model spec plus the training-loop sizes."""

    name: str
    spec: ModelSpec
    batch: int
    height: int
    width: int
    epochs: int
    description: str
    seed: int = 0
    # The learning rate of the run's AdamW steps: the training's, not the model spec's.
    lr: float = DEFAULT_LR
    # AdamW's decoupled weight decay, likewise the training's.
    weight_decay: float = DEFAULT_WEIGHT_DECAY
    # A late learning-rate decay (`lr_at`): after epoch `lr_decay_from` the rate falls
    # along a half cosine to `lr_end` at the run's last epoch; None (both): a constant `lr`.
    lr_decay_from: int | None = None
    lr_end: float | None = None
    # File in `logicars/data/` (or an absolute path: an experiment file's) in the fixture
    # npz format with the wiring and logits a run starts from when no seed is given;
    # None: a fresh `Model(spec, seed)`.
    init: str | None = None
    # Epochs after which an attempt that has not solved the task is replaced by a fresh
    # wiring (`train(restart_every=...)`); None: one attempt for all `epochs`.
    restart_every: int | None = None
    # Candidates of a drift search (`logicars.repair(..., method="drift")`) on the final
    # circuit of a run that ends unsolved (`train(drift_budget=...)`); 0: none.
    drift_budget: int = 0
    # A stall check (`train(stall_epochs=..., stall_loss=...)`): an attempt whose lowest
    # hard loss after `stall_epochs` of its epochs is still above `stall_loss` is replaced
    # by a fresh wiring that trains `epochs` epochs of its own (at most
    # `train.MAX_STALLS` times); None (both): no check.
    stall_epochs: int | None = None
    stall_loss: float | None = None
    # The reference notebook's epochs where `epochs` is larger (None: the same): a default
    # run may need several attempts of about the notebook's length to solve its task.
    notebook_epochs: int | None = None
    # The experiment (`logicars.tasks`): a kind string (`life:B3/S23`, `pattern:...`,
    # `grow:...`), with the kind's tile or image when it came from a file (a run records
    # them, so a run never needs the file again); or a `Task` built in Python.
    task_kind: str = ""
    task_pixels: np.ndarray | None = field(default=None, compare=False, repr=False)
    custom_task: Task | None = field(default=None, compare=False, repr=False)

    def __post_init__(self) -> None:
        # A Preset built by hand under a preset's name, as before presets named their
        # task, trains that preset's task.
        if not self.task_kind and self.custom_task is None and self.name in _OWN_KINDS:
            object.__setattr__(self, "task_kind", _OWN_KINDS[self.name])
        # A learning-rate decay is both of its numbers or neither, however the preset is
        # made (a file, `train`'s keywords over a preset, a checkpoint).
        if (self.lr_decay_from is None) != (self.lr_end is None):
            raise ValueError("lr_decay_from and lr_end go together: give both or neither")
        if (self.stall_epochs is None) != (self.stall_loss is None):
            raise ValueError("stall_epochs and stall_loss go together: give both or neither")

    def has_task(self) -> bool:
        """Whether the preset names its task (a run of a custom `Task` subclass, loaded
        from its directory, does not)."""
        return self.custom_task is not None or bool(self.task_kind)

    def task(self) -> Task:
        """The task this preset trains, on its grid, batch and spec."""
        if self.custom_task is not None:
            return self.custom_task
        if not self.task_kind:
            raise ValueError(
                f"preset {self.name!r} names no task (a run of a custom Task subclass: "
                "pass the task again, e.g. train(task, spec=..., resume=...))"
            )
        s = self.spec
        return make_task(
            self.task_kind,
            self.task_pixels,
            channels=s.channels,
            height=self.height,
            width=self.width,
            batch=self.batch,
            loss_channels=s.loss_channels,
            num_steps=s.num_steps,
            periodic=s.periodic,
            fire_rate=s.fire_rate,
        )

    def task_record(self) -> dict[str, Any]:
        """What a run records of the task: its kind and pixels (`Task.to_dict`)."""
        return {"task_kind": self.task_kind or "custom", **self.task().to_dict()}

    def paper_epochs(self) -> int:
        """The reference notebook's (the paper's) epoch count for this experiment."""
        return self.epochs if self.notebook_epochs is None else self.notebook_epochs

    def lr_at(self, epoch: int, epochs: int) -> float:
        """The learning rate of training step `epoch` (1-based) of a run of `epochs`."""
        start, end = self.lr_decay_from, self.lr_end
        if start is None or end is None or epoch <= start or epochs <= start:
            return self.lr
        t = min(1.0, (epoch - start) / (epochs - start))
        return end + (self.lr - end) * 0.5 * (1.0 + math.cos(math.pi * t))

    def init_path(self) -> Path | None:
        """The default start's npz, or None (see `init`)."""
        if self.init is None:
            return None
        if Path(self.init).is_absolute():  # an experiment file's own start
            return Path(self.init)
        return Path(str(resources.files("logicars") / "data" / self.init))

    def start(self) -> str:
        """How a default run starts, for tables: the seed, or `NOTEBOOK_START` when it
        starts from the notebook's wiring (`init`)."""
        return str(self.seed) if self.init is None else NOTEBOOK_START

    def gates(self) -> int:
        """Number of gates with their own logits (`ModelSpec.gates`)."""
        return self.spec.gates()

    def gate_cell_evals_per_epoch(self) -> int:
        """Gate evaluations in one epoch's rollout, the unit of DESIGN.md's performance budget.

        `B * H * W * steps * (K * C * sum(perceive outs) + sum(update outs))`: perception
        runs once per channel, the update network once per cell.
        """
        s = self.spec
        return self.batch * self.height * self.width * s.num_steps * s.gates_per_cell()


# The presets, in the order tables list them; each is `data/presets/NAME.toml`, an
# experiment file like a user's (`read_experiment`), which owns its numbers.
PRESET_NAMES = ("gol", "checkerboard", "checkerboard-async", "lizard", "colored-g")


def preset_file_text(name: str) -> str:
    """A preset's experiment file as shipped (`logicars presets --show NAME`)."""
    name = get_preset(name).name
    return (resources.files("logicars") / "data" / "presets" / f"{name}.toml").read_text()


# Set while the packaged files load: a Preset built by hand under a preset's name, as
# before presets named their task, trains that preset's task.
_OWN_KINDS: dict[str, str] = {}


def preset_task(preset: Preset | None) -> Task | None:
    """The preset's task, if it names one (a run's preset may not: see `Preset.has_task`)."""
    return preset.task() if preset is not None and preset.has_task() else None


def fixed_start_task(preset: Preset | None) -> Task | None:
    """The preset's task when it starts from one fixed grid (a grown image)."""
    task = preset_task(preset)
    return task if task is not None and task.fixed_start else None


def preset_for_kind(kind: str, *, size: int | None = None, asynchronous: bool = False) -> Preset:
    """A run's preset for a task kind a user names (`logicars.tasks`), on the model and
    training numbers of the preset that does the same kind of task:

    - `life:RULE`: the Game of Life's (`gol`), all 512 3x3 boards;
    - `pattern:TILE.png` (or `pattern:checkerboard`): the checkerboard's, or
      checkerboard-async's with `asynchronous`, on a `size` x `size` grid (default: that
      preset's);
    - `grow:IMAGE.png` (or `grow:lizard`, `grow:colored-g`): a grey image's silhouette
      on the lizard's model, a coloured one's colour bits on the coloured G's, on the
      image's grid (shrunk to fit `size` x `size` when given), from a seed cell.
    """
    family, arg = split_kind(kind)
    if family == "life":
        if size is not None or asynchronous:
            raise ValueError(
                "a life: rule trains on 3x3 boards; size and async are for grow:/pattern:"
            )
        rule = normalise_rule(arg)
        name = f"life:{rule}"
        return dataclasses.replace(
            PRESETS["gol"],
            name=name,
            task_kind=name,
            description=f"Life-like rule {rule}: one step on 3x3 periodic boards",
        )
    pixels = kind_data(kind, size)
    assert pixels is not None
    if family == "pattern":
        base = PRESETS["checkerboard-async" if asynchronous else "checkerboard"]
        side = base.height if size is None else size
        return dataclasses.replace(
            base,
            name=kind,
            task_kind=kind,
            task_pixels=pixels,
            height=side,
            width=side,
            description=f"self-organise from random bits into the {pixels.shape[0]}x"
            f"{pixels.shape[1]} tile of {arg} on channel 0, in any phase",
        )
    if asynchronous:
        raise ValueError("async is for pattern: tasks")
    base = PRESETS["lizard" if pixels.shape[2] == 1 else "colored-g"]
    return dataclasses.replace(
        base,
        name=kind,
        task_kind=kind,
        task_pixels=pixels,
        height=pixels.shape[0],
        width=pixels.shape[1],
        seed=0,
        init=None,
        description=f"grow {arg} ({pixels.shape[0]}x{pixels.shape[1]}, "
        f"{pixels.shape[2]} channel(s)) from a seed cell",
    )


def preset_for_task(task: Task, spec: ModelSpec, epochs: int) -> Preset:
    """A run's preset for a `Task` built in Python, trained with `spec` (its channels must
    be the task's; its steps, boundary, fire rate and loss channels become the task's)."""
    if not isinstance(task, Task):
        raise TypeError(f"task must be a logicars.Task, got {type(task).__name__}")
    if not isinstance(spec, ModelSpec):
        raise TypeError(f"a Task trains with spec=ModelSpec(...), got {type(spec).__name__}")
    if spec.channels != task.channels:
        raise ValueError(
            f"task {task.name!r} has {task.channels} channels, the spec {spec.channels}"
        )
    spec = spec.replace(
        num_steps=task.num_steps,
        periodic=task.periodic,
        fire_rate=task.fire_rate,
        loss_channels=list(task.loss_channels),
    )
    return Preset(
        name=task.name,
        spec=spec,
        batch=task.batch,
        height=task.height,
        width=task.width,
        epochs=epochs,
        description=f"{type(task).__name__} {task.name!r}",
        custom_task=task,
    )


def resolve_preset(name: str, *, size: int | None = None, asynchronous: bool = False) -> Preset:
    """A preset by name (`get_preset`) or a task kind (`preset_for_kind`, a name with `:`)."""
    if ":" in name:
        return preset_for_kind(name, size=size, asynchronous=asynchronous)
    if size is not None or asynchronous:
        raise ValueError("size and async are for grow:/pattern: task kinds, not presets")
    return get_preset(name)


def get_preset(name: str) -> Preset:
    """Look a preset up by name (`_` accepted for `-`); unknown names list the valid ones."""
    key = name.strip().lower().replace("_", "-")
    try:
        return PRESETS[key]
    except KeyError:
        raise ValueError(f"unknown preset {name!r}; valid presets: {', '.join(PRESETS)}") from None


def epochs_label(
    epochs: int,
    restart_every: int | None = None,
    stall_epochs: int | None = None,
    stall_loss: float | None = None,
) -> str:
    """Epochs with the attempt length and the stall check that go with them, as the
    presets table (and docs/results.md) write them: `16000 (stall 8000 > 40)`."""
    label = str(epochs)
    if restart_every is not None:
        label += f" ({restart_every})"
    if stall_epochs is not None and stall_loss is not None:
        label += f" (stall {stall_epochs} > {stall_loss:g})"
    return label


def presets_table() -> str:
    """The presets as an aligned text table (what `logicars presets` prints)."""
    header = (
        "name", "channels", "grid", "batch", "steps", "epochs", "seed", "gates", "gate-cells/epoch",
    )  # fmt: skip
    rows = [header]
    for p in PRESETS.values():
        steps = f"{p.spec.num_steps}" + (" async" if p.spec.is_async else "")
        rows.append(
            (
                p.name,
                str(p.spec.channels),
                f"{p.height}x{p.width}",
                str(p.batch),
                steps,
                epochs_label(p.epochs, p.restart_every, p.stall_epochs, p.stall_loss),
                p.start(),
                f"{p.gates():,}",
                f"{p.gate_cell_evals_per_epoch():,}",
            )
        )
    widths = [max(len(r[i]) for r in rows) for i in range(len(header))]
    left = {0, 2, 4}  # text columns; numbers align right
    lines = []
    for r in rows:
        cells = [c.ljust(w) if i in left else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths))]
        lines.append("  ".join(cells).rstrip())
    if any(p.restart_every is not None for p in PRESETS.values()):
        lines.append(
            "epochs (N): an attempt still unsolved after N epochs restarts from a fresh "
            "wiring (--restart-every)"
        )
    if any(p.stall_epochs is not None for p in PRESETS.values()):
        lines.append(
            "epochs (stall N > L): an attempt whose lowest hard loss after N epochs is above "
            "L restarts from a fresh wiring (--stall-epochs, --stall-loss)"
        )
    if any(p.init is not None for p in PRESETS.values()):
        lines.append(
            f"{NOTEBOOK_START}: starts from the reference notebook's own seed-23 wiring "
            "(logicars/data); --seed N draws this engine's wiring instead"
        )
    return "\n".join(lines)


# ---- experiment files -----------------------------------------------------------------


_REQUIRED = object()  # no default: a packaged preset gives the value


@dataclass(frozen=True)
class Experiment:
    """An experiment file read: the run's preset and the other options of
    `logicars.train` it sets; train it with `train(e.preset, **e.options)`."""

    preset: Preset
    options: dict[str, Any]


# Each key's expected value: "integer", "int" (>= 1), "int>=0", "float", "float>=0",
# "bool", "str" or "ints" (a list of integers).
_TOP_KEYS = {
    "task": "str",
    "description": "str",
    "size": "int",
    "async": "bool",
    "model": "table",
    "training": "table",
}
# ModelSpec.build's arguments (lr is the run's: [training]): types only, the engine's
# config validation checks the values (`_core.param_layout` below).
_MODEL_KEYS = {
    "channels": "integer",
    "kernels": "integer",
    "perceive": "ints",
    "update": "ints",
    "num_steps": "integer",
    "periodic": "bool",
    "fire_rate": "float",
    "loss_channels": "ints",
    "binarize_states": "bool",
    "binarize_every": "int",
    "chunk_cells": "int",
}
_MODEL_REQUIRED = ("channels", "kernels", "perceive", "update", "num_steps")
# The Preset's own numbers.
_RUN_KEYS = {
    "height": "int",
    "width": "int",
    "batch": "int",
    "epochs": "int",
    "restart_every": "int",
    "drift_budget": "int>=0",
    "notebook_epochs": "int",
    "seed": "int>=0",
    "init": "str",
    "lr": "float",
    "weight_decay": "float",
    "lr_decay_from": "int>=0",
    "lr_end": "float",
    "stall_epochs": "int",
    "stall_loss": "float>=0",
}
# A run's AdamW numbers (`Preset.lr`, `Preset.weight_decay`, `Preset.lr_end`).
OPTIMIZER_NUMBERS = ("lr", "weight_decay", "lr_end")


def check_optimizer_number(key: str, value: float) -> None:
    """The training step's rule for `lr` or `weight_decay`, wherever one is given (a
    file, `train`, a checkpoint): `InvalidValueError` naming the key."""
    from . import _core

    if key == "lr_end":  # a learning rate too; the engine's message names it lr
        try:
            _core.check_lr(value)
        except ValueError as e:
            raise type(e)(str(e).replace("lr", "lr_end", 1)) from None
        return
    check = {"lr": _core.check_lr, "weight_decay": _core.check_weight_decay}[key]
    check(value)


# Every other option of `logicars.train` an experiment may set (train checks the values).
TRAIN_OPTIONS = {
    "relax": "str",
    "tau": "float",
    "noise": "float",
    "warmup": "int>=0",
    "hard_fraction": "float",
    "early_stop": "int",
    "stop_on_solve": "bool",
    "repair": "bool",
    "checkpoint_every": "int",
    "threads": "int>=0",
}
_EXPECTED = {
    "integer": "an integer",
    "int": "an integer >= 1",
    "int>=0": "an integer >= 0",
    "float": "a number",
    "float>=0": "a finite number >= 0",
    "bool": "true or false",
    "str": "a string",
    "ints": "a list of integers",
    "table": "a table",
}


def _checked(source: str, section: str, key: str, value: Any, kind: str) -> Any:
    def is_int(v: Any) -> bool:
        return isinstance(v, int) and not isinstance(v, bool)

    ok = {
        "integer": is_int(value),
        "int": is_int(value) and value >= 1,
        "int>=0": is_int(value) and value >= 0,
        "float": (is_int(value) or isinstance(value, float)) and value == value,
        "float>=0": (is_int(value) or isinstance(value, float)) and 0 <= value < math.inf,
        "bool": isinstance(value, bool),
        "str": isinstance(value, str),
        "ints": isinstance(value, list) and all(is_int(v) for v in value),
        "table": isinstance(value, dict),
    }[kind]
    if not ok:
        where = f"[{section}] {key}" if section else key
        raise ValueError(f"{source}: {where}: expected {_EXPECTED[kind]}, got {value!r}")
    return float(value) if kind.startswith("float") else value


def _table(source: str, section: str, data: dict[str, Any], keys: dict[str, str]) -> dict:
    unknown = [k for k in data if k not in keys]
    if unknown:
        where = f" in [{section}]" if section else ""
        raise ValueError(f"{source}: unknown key {unknown[0]!r}{where}; known: {', '.join(keys)}")
    return {k: _checked(source, section, k, v, keys[k]) for k, v in data.items()}


def _relative_kind(task: str, directory: Path) -> str:
    """`task` with an image or tile path taken relative to the experiment file."""
    family, arg = split_kind(task)
    if family == "life" or is_builtin_kind(task) or Path(arg).is_absolute():
        return task
    return f"{family}:{directory / arg}"


def experiment_from_dict(
    data: dict[str, Any], *, name: str, source: str, directory: Path | None = None
) -> Experiment:
    """An experiment from an experiment file's contents (see `read_experiment`);
    `directory` is the one relative paths start from (None: a packaged preset, which
    gives every number and names only built-in targets and `logicars/data` files)."""
    top = _table(source, "", data, _TOP_KEYS)
    if "task" not in top:
        raise ValueError(f"{source}: task: missing (a preset's task or a task kind)")
    training = top.get("training", {})
    model = _table(source, "model", top.get("model", {}), _MODEL_KEYS)
    run = _table(source, "training", training, {**_RUN_KEYS, **TRAIN_OPTIONS})
    options = {k: run.pop(k) for k in list(run) if k in TRAIN_OPTIONS}
    size, asynchronous = top.get("size"), top.get("async", False)
    try:
        task = top["task"] if directory is None else _relative_kind(top["task"], directory)
        # What a user's file leaves out is the task kind's preset's.
        base = (
            None
            if directory is None
            else resolve_preset(task, size=size, asynchronous=asynchronous)
        )
    except (ValueError, OSError) as e:
        raise ValueError(f"{source}: task: {e}") from None

    def value(key: str, default: Any = _REQUIRED) -> Any:
        if key in run:
            return run[key]
        if base is not None:
            return getattr(base, key)
        if default is _REQUIRED:
            raise ValueError(f"{source}: [training] {key}: missing")
        return default

    for key in OPTIMIZER_NUMBERS:
        if key in run:
            try:
                check_optimizer_number(key, run[key])  # reported with the file
            except ValueError as e:
                raise ValueError(f"{source}: [training] {e}") from None
    if "model" not in top and base is not None:
        spec = base.spec
    else:
        if base is None:
            missing = [k for k in _MODEL_REQUIRED if k not in model]
            if missing:
                raise ValueError(f"{source}: [model] {missing[0]}: missing")
            defaults: dict[str, Any] = {}
        else:  # the keys [model] leaves out are the kind's preset's
            b = base.spec
            defaults = {
                "channels": b.channels,
                "kernels": b.perceive.n_kernels,
                "perceive": b.perceive.layers[1:],
                "update": b.update.layers[1:-1],
                "num_steps": b.num_steps,
                "periodic": b.periodic,
                "fire_rate": b.fire_rate,
                "loss_channels": b.loss_channels,
                "binarize_states": b.binarize_states,
                "binarize_every": b.with_rounding(model.get("binarize_states")).binarize_every,
                "relax": b.relax,
                "chunk_cells": b.chunk_cells,
            }
        try:
            spec = ModelSpec.build(**{**defaults, **model})
            if directory is not None:
                from . import _core

                # The engine's checks of the widths, reported with the file's name.
                _core.param_layout(spec.to_json())
        except (ValueError, TypeError) as e:
            raise ValueError(f"{source}: [model]: {e}") from None
    spec = _with_relaxation(spec, options, source, check=directory is not None)
    init = value("init", None)
    if "init" in run and directory is not None and (directory / init).is_file():
        init = str((directory / init).resolve())  # else the name of a logicars/data file
    # Read first, so that a missing key is reported as itself, not as the decay's rule.
    fields: dict[str, Any] = dict(
        name=name,
        spec=spec,
        description=top.get("description", base.description if base is not None else ""),
        init=init,
        task_kind=task,
        task_pixels=None if base is None else base.task_pixels,
        restart_every=value("restart_every", None),
        drift_budget=value("drift_budget", 0),
        notebook_epochs=value("notebook_epochs", None),
        weight_decay=value("weight_decay", DEFAULT_WEIGHT_DECAY),
        lr_decay_from=value("lr_decay_from", None),
        lr_end=value("lr_end", None),
        stall_epochs=value("stall_epochs", None),
        stall_loss=value("stall_loss", None),
        **{key: value(key) for key in ("height", "width", "batch", "epochs", "seed", "lr")},
    )
    try:
        preset = Preset(**fields)
    except ValueError as e:  # the paired keys' rules (`Preset.__post_init__`)
        raise ValueError(f"{source}: [training] {e}") from None
    return Experiment(preset, options)


# The [training] keys that set the relaxation: the file's relaxation is its preset's
# (`spec.relax`, a training rule carried by the spec as `binarize_states` is), so that a
# preset file sets its default relaxation and `train(experiment.preset)` trains with it.
_RELAX_KEYS = ("relax", "tau", "noise", "warmup", "hard_fraction")


def _with_relaxation(
    spec: ModelSpec, options: dict[str, Any], source: str, check: bool
) -> ModelSpec:
    """`spec` with the relaxation `options` sets (taken out of `options`): a `relax` mode
    starts from the engine's defaults, `tau`, `noise`, `warmup` and `hard_fraction`
    replace its parameters, as `train`'s keywords do. `check`: the engine checks the
    values now."""
    given = {k: options.pop(k) for k in _RELAX_KEYS if k in options}
    if not given:
        return spec
    mode = given.pop("relax", None)
    spec = spec.replace(relax=resolve_relaxation(spec.relax, mode, given))
    if check:
        from . import _core

        try:
            _core.param_layout(spec.to_json())
        except ValueError as e:
            raise ValueError(f"{source}: [training] {e}") from None
    return spec


def read_experiment(path: str | os.PathLike[str]) -> Experiment:
    """Reads an experiment file (TOML; `python -m logicars train FILE.toml`): the task
    (a preset's or a task kind, `size` and `async` as `train` takes them), `[model]`
    (`ModelSpec.build`'s arguments) and `[training]` (the grid, batch, epochs, seed,
    restarts, start and learning rate of the run, and the other options of
    `logicars.train`). What it leaves out is the task kind's preset's (`preset_for_kind`);
    paths (`grow:`/`pattern:` images, `init`) are relative to the file; the run is named
    after the file. `logicars presets --show NAME` prints a preset's own file.

    Unknown keys and values of the wrong type raise a one-line ValueError naming the
    file and the key.
    """
    from .files import read_toml

    p = Path(path)
    return experiment_from_dict(
        read_toml(p, "experiment file"), name=p.stem, source=str(p), directory=p.parent
    )


def _packaged(name: str) -> Preset:
    from .files import read_toml

    path = Path(str(resources.files("logicars") / "data" / "presets" / f"{name}.toml"))
    experiment = experiment_from_dict(read_toml(path, "preset file"), name=name, source=str(path))
    assert not experiment.options, f"{path}: a preset sets only its own numbers and relaxation"
    _OWN_KINDS[name] = experiment.preset.task_kind
    return experiment.preset


PRESETS: dict[str, Preset] = {name: _packaged(name) for name in PRESET_NAMES}
