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
of eleven lizard seeds solves. Both train with their states binarized between steps
(`binarize_states`; the lizard in every second epoch), restart unsolved attempts and, once
a circuit grows the target, fine-tune it to hold and regrow it (`growth = "regrow"`); the
lizard does so with the coloured G's model, 20 steps and a zero boundary (the paper's
torus lizard, growing only with the truth-table relaxation, is
examples/lizard-grow/lizard-grow.toml). Every default seed is 0; the notebook's own
seed-23 lizard wiring stays in `logicars/data/` for `init` (drawn with
`scripts/notebook_init.py`, which needs JAX), which trains the notebook's run with
`relax = "softmax"` and `binarize_states = false` on the paper lizard's model.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np

from .spec import ModelSpec
from .tasks import Task, is_builtin_kind, kind_data, make_task, normalise_rule, split_kind
from .training.config import (
    SETTING_NAMES,
    Setting,
    TrainConfig,
    setting,
    setting_default,
    toml_settings,
    with_rule,
)
from .training.constraints import check_optimizer_number  # noqa: F401 (importable from here too)

# Label of a start from the reference notebook's own seed-23 wiring (the lizard's `init`).
NOTEBOOK_START = "nb23"
# A life: rule's run that ends unsolved ends with a drift search of up to this many
# candidates (seconds on the 512 boards). Chosen on HighLife's tuning seeds 0-19: 12 of 20
# solved against 8 of 20 without it (docs/results.md, records highlife-default and
# highlife-drift). gol's own seeds solve without it, and gol keeps the notebook's setting.
LIFE_DRIFT_BUDGET = 200_000


@dataclass(frozen=True, init=False)
class Preset:
    """A named experiment: its task, the model spec and the training settings
    (`TrainConfig`). The settings read as the preset's own attributes too
    (`preset.lr` is `preset.config.lr`); `Preset(name, spec, batch, height, width,
    epochs, description, lr=..., ...)` and `dataclasses.replace(preset, lr=...)` take
    them as keywords."""

    name: str
    spec: ModelSpec
    config: TrainConfig
    description: str = ""
    # The experiment (`logicars.tasks`): a kind string (`life:B3/S23`, `pattern:...`,
    # `grow:...`), with the kind's tile or image when it came from a file (a run records
    # them, so a run never needs the file again); or a `Task` built in Python.
    task_kind: str = ""
    task_pixels: np.ndarray | None = field(default=None, compare=False, repr=False)
    custom_task: Task | None = field(default=None, compare=False, repr=False)

    def __init__(
        self,
        name: str,
        spec: ModelSpec,
        batch: int | None = None,
        height: int | None = None,
        width: int | None = None,
        epochs: int | None = None,
        description: str = "",
        *,
        config: TrainConfig | None = None,
        task_kind: str = "",
        task_pixels: np.ndarray | None = None,
        custom_task: Task | None = None,
        **settings: Any,
    ) -> None:
        grid = {"batch": batch, "height": height, "width": width, "epochs": epochs}
        settings = {**{k: v for k, v in grid.items() if v is not None}, **settings}
        config = TrainConfig(**settings) if config is None else config.replace(**settings)
        # Training-rule settings belong to the spec: the model carries them.
        spec, config = config.applied_to(spec)
        # A Preset built by hand under a preset's name, as before presets named their
        # task, trains that preset's task.
        if not task_kind and custom_task is None and name in _OWN_KINDS:
            task_kind = _OWN_KINDS[name]
        for key, value in (
            ("name", name), ("spec", spec), ("config", config), ("description", description),
            ("task_kind", task_kind), ("task_pixels", task_pixels), ("custom_task", custom_task),
        ):  # fmt: skip
            object.__setattr__(self, key, value)

    def __getattr__(self, name: str) -> Any:
        # Only for names not found otherwise: the training settings.
        if name in SETTING_NAMES:
            return getattr(self.config, name)
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

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
            growth=self.config.growth or "grow",
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
        return self.config.lr_at(epoch, epochs)

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

    - `life:RULE`: the Game of Life's (`gol`), all 512 3x3 boards, and an unsolved run
      ends with a drift search (`LIFE_DRIFT_BUDGET`);
    - `pattern:TILE.png` (or `pattern:checkerboard`): the checkerboard's, or
      checkerboard-async's with `asynchronous`, on a `size` x `size` grid (default: that
      preset's);
    - `grow:IMAGE.png` (or `grow:lizard`, `grow:colored-g`): a grey image's silhouette
      on the lizard's model, a coloured one's colour bits on the coloured G's, on the
      image's grid (shrunk to fit `size` x `size` when given), from a seed cell;
    - `data:RECORDING.npz`: reproduce recorded state sequences (`tasks.RecordedTask`) on
      `recorded.default_spec`, the recording's grid and `recorded.DEFAULT_TRAINING`.
    """
    family, arg = split_kind(kind)
    if family == "data":
        if size is not None or asynchronous:
            raise ValueError("a data: recording sets its own grid; size and async do not apply")
        from . import recorded
        from .tasks import RecordedTask

        task = RecordedTask.from_file(arg, name=kind)
        return dataclasses.replace(
            preset_for_task(task, recorded.default_spec(task), recorded.DEFAULT_EPOCHS),
            description=recorded.describe(task),
            **recorded.DEFAULT_TRAINING,
        )
    if family == "life":
        if size is not None or asynchronous:
            raise ValueError(
                "a life: rule trains on 3x3 boards; size and async are for grow:/pattern:"
            )
        rule = normalise_rule(arg)
        name = f"life:{rule}"
        # Settings as keywords (drift_budget): mypy checks replace against the fields,
        # not against Preset.__init__, which takes them (python/mypy#19193).
        return dataclasses.replace(  # type: ignore[call-arg]
            PRESETS["gol"],
            name=name,
            task_kind=name,
            description=f"Life-like rule {rule}: one step on 3x3 periodic boards",
            drift_budget=LIFE_DRIFT_BUDGET,
        )
    pixels = kind_data(kind, size)
    assert pixels is not None
    if family == "pattern":
        base = PRESETS["checkerboard-async" if asynchronous else "checkerboard"]
        side = base.height if size is None else size
        return dataclasses.replace(  # type: ignore[call-arg]  # settings: python/mypy#19193
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
    return dataclasses.replace(  # type: ignore[call-arg]  # settings: python/mypy#19193
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


@dataclass(frozen=True)
class Experiment:
    """An experiment file read: the run's preset, whose config holds every training
    setting the file gives; train it with `train(e.preset)`."""

    preset: Preset


# The file's own structure: the task, its grid options and the two tables.
_TOP_KEYS = {
    "task": "str",
    "description": "str",
    "size": "int",
    "async": "bool",
    "model": "table",
    "training": "table",
}
# ModelSpec.build's arguments: types only, the engine's config validation checks the
# values (`_core.param_layout` below). The training settings of the `[model]` table
# (`binarize_states`, `binarize_every`, `init_logit`) come from `TrainConfig`.
_MODEL_KEYS = {
    "channels": "integer",
    "kernels": "integer",
    "perceive": "ints",
    "update": "ints",
    "num_steps": "integer",
    "periodic": "bool",
    "fire_rate": "float",
    "loss_channels": "ints",
    "chunk_cells": "int",
}
_MODEL_REQUIRED = ("channels", "kernels", "perceive", "update", "num_steps")
_EXPECTED = {
    "integer": "an integer",
    "int": "an integer >= 1",
    "float": "a number",
    "bool": "true or false",
    "str": "a string",
    "ints": "a list of integers",
    "table": "a table",
}
# A table's keys: a model key's kind (`_EXPECTED`) or a training setting's declaration.
_Keys = dict[str, "str | Setting"]


def model_keys() -> _Keys:
    """The keys of an experiment file's `[model]` table."""
    return {**_MODEL_KEYS, **toml_settings("model")}


def training_keys() -> _Keys:
    """The keys of an experiment file's `[training]` table: `TrainConfig`'s."""
    return dict(toml_settings("training"))


def _checked(source: str, section: str, key: str, value: Any, kind: str | Setting) -> Any:
    where = f"[{section}] {key}" if section else key
    if isinstance(kind, Setting):
        try:
            return kind.check.check(key, value)
        except TypeError:
            expected = kind.check.expected
            raise ValueError(f"{source}: {where}: expected {expected}, got {value!r}") from None
        except ValueError as e:  # out of range: the check's message names the key
            raise ValueError(f"{source}: [{section}] {e}") from None

    def is_int(v: Any) -> bool:
        return isinstance(v, int) and not isinstance(v, bool)

    ok = {
        "integer": is_int(value),
        "int": is_int(value) and value >= 1,
        "float": (is_int(value) or isinstance(value, float)) and value == value,
        "bool": isinstance(value, bool),
        "str": isinstance(value, str),
        "ints": isinstance(value, list) and all(is_int(v) for v in value),
        "table": isinstance(value, dict),
    }[kind]
    if not ok:
        raise ValueError(f"{source}: {where}: expected {_EXPECTED[kind]}, got {value!r}")
    return float(value) if kind == "float" else value


def _table(
    source: str, section: str, data: dict[str, Any], keys: Mapping[str, str | Setting]
) -> dict[str, Any]:
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
    model = _table(source, "model", top.get("model", {}), model_keys())
    run = _table(source, "training", top.get("training", {}), training_keys())
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
    if base is None:  # a packaged preset gives what no default covers
        for key in SETTING_NAMES:
            if key not in run and setting_default(key) is dataclasses.MISSING:
                raise ValueError(f"{source}: [training] {key}: missing")
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
                "init_logit": b.init_logit,
            }
        try:
            spec = ModelSpec.build(**{**defaults, **model})
            if directory is not None:
                from . import _core

                # The engine's checks of the widths, reported with the file's name.
                _core.param_layout(spec.to_json())
        except (ValueError, TypeError) as e:
            raise ValueError(f"{source}: [model]: {e}") from None
    # The file's relaxation is its preset's (`spec.relax`, a training rule carried by the
    # spec), so that `train(experiment.preset)` trains with it.
    rule = {k: run.pop(k) for k in list(run) if setting(k).spec}
    spec = _with_relaxation(spec, rule, source, check=directory is not None)
    if "init" in run and directory is not None and (directory / run["init"]).is_file():
        run["init"] = str((directory / run["init"]).resolve())  # else a logicars/data file
    try:
        config = TrainConfig(**run) if base is None else base.config.replace(**run)
    except ValueError as e:  # the paired keys' rules (`TrainConfig.__post_init__`)
        raise ValueError(f"{source}: [training] {e}") from None
    preset = Preset(
        name,
        spec,
        config=config,
        description=top.get("description", base.description if base is not None else ""),
        task_kind=task,
        task_pixels=None if base is None else base.task_pixels,
    )
    return Experiment(preset)


def _with_relaxation(spec: ModelSpec, rule: dict[str, Any], source: str, check: bool) -> ModelSpec:
    """`spec` with the training rule a file's `[training]` table sets (`with_rule`);
    `check`: the engine checks the values now."""
    if not rule:
        return spec
    spec = with_rule(spec, rule)
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
    _OWN_KINDS[name] = experiment.preset.task_kind
    return experiment.preset


PRESETS: dict[str, Preset] = {name: _packaged(name) for name in PRESET_NAMES}
