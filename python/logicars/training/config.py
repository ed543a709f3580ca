"""`TrainConfig`: every setting of a training run, declared once.

Each field of `TrainConfig` carries a `Setting` in its metadata: its help text, the check
of its values (a `Constraint`, `logicars.training.constraints`), what a resumed run does
with it (`Resume`), its command-line flag and its section in an experiment file.
Everything else is derived from these declarations:

- `logicars train`'s options (`logicars.cli.train` builds argparse from `cli_settings()`);
- the experiment file's `[training]` and `[model]` keys and their error messages
  (`logicars.presets`, `toml_settings(section)`);
- the sweep's sweepable and new-run-only options (`logicars.sweep`);
- the checkpoint's record of a run and the rules of a resume (`logicars.runstate`,
  `recorded_settings(where)`, `logicars.train`).

Adding an option is adding one field here (docs/architecture.md has a worked example).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from ..growth import HOLD_SCHEDULES
from ..spec import (
    DEFAULT_BETA1,
    DEFAULT_LR,
    DEFAULT_WEIGHT_DECAY,
    MAX_SEED,
    MAX_THREADS,
    ModelSpec,
    Relaxation,
    resolve_relaxation,
)
from .constraints import (
    Choice,
    Constraint,
    Count,
    CountOrNone,
    Flag,
    Number,
    OptimizerNumber,
    RelaxMode,
    Text,
)

# The largest grid side or batch a checkpoint reads back.
MAX_GRID = 2**31
DEFAULT_CHECKPOINT_EVERY = 50


# ---- settings -------------------------------------------------------------------------


class Resume(Enum):
    """What resuming a run does with a setting."""

    FIXED = "fixed"  # the run's own: a resume refuses another value
    CHANGES = "changes"  # recorded; a resume keeps it unless given a new value
    PER_CALL = "per-call"  # each call's own (the given value or the default)
    NEW_RUN = "new-run"  # starts a new run only: a resume refuses it


class Recorded(Enum):
    """Where a run's checkpoint records a setting (`logicars.runstate`)."""

    PRESET = "preset"  # the checkpoint's preset record
    STATE = "state"  # the training state beside it (`RunState` has the field)
    NOT = "not"  # not recorded (the spec records the relaxation settings)


@dataclass(frozen=True)
class Setting:
    """What `TrainConfig` declares about one of its fields."""

    help: str
    check: Constraint
    resume: Resume
    recorded: Recorded
    # The command line's flag is `--` + the name with dashes; False: no flag.
    cli: bool = True
    metavar: str | None = None
    # The experiment file's table for the key; None: not in a file.
    section: str | None = "training"
    # None is a value of its own (not "not given"): e.g. checkpoints only at the end.
    none_is_value: bool = False
    # Part of the model's training rule: folded into the `ModelSpec` (see `spec_changes`).
    spec: bool = False
    # What a checkpoint written before the setting existed implies.
    before: Any = None


# Candidate runs of the repair at the end of an unsolved attempt that came close
# (`training.policies`), unless a preset says otherwise.
FINAL_REPAIR_BUDGET = 2000


def _setting(default: Any = dataclasses.MISSING, **declared: Any) -> Any:
    return field(default=default, metadata={"setting": Setting(**declared)})


@dataclass(frozen=True)
class TrainConfig:
    """A training run's settings: the grid and batch it trains on, its epochs, seed,
    optimizer and schedule, and the checks, repairs and restarts around the steps.

    A `Preset` holds one (`preset.config`); `logicars.train(preset, config, **settings)`
    trains with the preset's unless given another, keywords replacing single fields.
    `TrainConfig.replace(**changes)` checks every value; bad ones raise TypeError or
    `InvalidValueError` naming the field.
    """

    batch: int = _setting(
        help="inputs per training step", check=Count(1, MAX_GRID), resume=Resume.FIXED,
        recorded=Recorded.PRESET, cli=False,
    )  # fmt: skip
    height: int = _setting(
        help="rows of the training grid", check=Count(1, MAX_GRID), resume=Resume.FIXED,
        recorded=Recorded.PRESET, cli=False,
    )  # fmt: skip
    width: int = _setting(
        help="columns of the training grid", check=Count(1, MAX_GRID), resume=Resume.FIXED,
        recorded=Recorded.PRESET, cli=False,
    )  # fmt: skip
    epochs: int = _setting(
        help="total epochs (default: the preset's); on resume, the total to reach",
        check=Count(1), resume=Resume.CHANGES, recorded=Recorded.PRESET,
    )  # fmt: skip
    seed: int = _setting(
        0, help="fixes wiring, data and async masks (default: the preset's)",
        check=Count(0, MAX_SEED), resume=Resume.FIXED, recorded=Recorded.PRESET,
    )  # fmt: skip
    lr: float = _setting(
        DEFAULT_LR, help="learning rate (default: the preset's)",
        check=OptimizerNumber(rule="lr"), resume=Resume.CHANGES, recorded=Recorded.PRESET,
    )  # fmt: skip
    weight_decay: float = _setting(
        DEFAULT_WEIGHT_DECAY,
        help=f"AdamW's decoupled weight decay (default: the preset's, {DEFAULT_WEIGHT_DECAY:g} "
        "as the notebook's)",
        check=OptimizerNumber(rule="weight_decay"), resume=Resume.CHANGES,
        recorded=Recorded.PRESET, before=DEFAULT_WEIGHT_DECAY,
    )  # fmt: skip
    beta1: float = _setting(
        DEFAULT_BETA1,
        help=f"AdamW's first-moment decay; 0: no momentum, each step follows the latest "
        f"gradient (default: the preset's, {DEFAULT_BETA1:g} as the notebook's)",
        check=OptimizerNumber(rule="beta1"), resume=Resume.CHANGES,
        recorded=Recorded.PRESET, before=DEFAULT_BETA1,
    )  # fmt: skip
    lr_decay_from: int | None = _setting(
        None, help="after this epoch the learning rate falls along a half cosine to "
        "--lr-end at the last epoch (with --lr-end; default: the preset's, none)",
        check=Count(0), resume=Resume.CHANGES, recorded=Recorded.PRESET, metavar="EPOCH",
    )  # fmt: skip
    lr_end: float | None = _setting(
        None, help="the learning rate at the last epoch of --lr-decay-from's decay",
        check=OptimizerNumber(rule="lr"), resume=Resume.CHANGES, recorded=Recorded.PRESET,
        metavar="LR",
    )  # fmt: skip
    relax: str | Relaxation | None = _setting(
        None, help="training relaxation (default: the preset's; softmax is the reference "
        "notebook's)",
        check=RelaxMode(), resume=Resume.NEW_RUN, recorded=Recorded.NOT, spec=True,
    )  # fmt: skip
    tau: float | None = _setting(
        None, help="backward temperature (gumbel-st, hard-st, gumbel-soft)",
        check=Number(0, lo_open=True), resume=Resume.NEW_RUN, recorded=Recorded.NOT,
        spec=True,
    )  # fmt: skip
    noise: float | None = _setting(
        None, help="Gumbel noise scale (gumbel-st, gumbel-soft)", check=Number(0),
        resume=Resume.NEW_RUN, recorded=Recorded.NOT, spec=True,
    )  # fmt: skip
    warmup: int | None = _setting(
        None, help="epochs trained as softmax before the straight-through forward "
        "(gumbel-st, hard-st), or relaxed before the hard gates (softmax or truth-table "
        "with --hard-fraction)",
        check=Count(0), resume=Resume.NEW_RUN, recorded=Recorded.NOT, spec=True,
        metavar="EPOCHS",
    )  # fmt: skip
    hard_fraction: float | None = _setting(
        None, help="softmax, truth-table: the share of gates forwarded hard (the most "
        "likely op, the thresholded table), straight-through, in each epoch after "
        "--warmup (with --binarize-states in the rounded ones); drawn per gate and epoch",
        check=Number(0, 1), resume=Resume.NEW_RUN, recorded=Recorded.NOT, spec=True,
        metavar="Q",
    )  # fmt: skip
    binarize_states: bool | None = _setting(
        None, help="round the state to 0/1 between training steps, straight-through "
        "(default: the preset's)",
        check=Flag(), resume=Resume.NEW_RUN, recorded=Recorded.NOT, spec=True,
        section="model",
    )  # fmt: skip
    binarize_every: int | None = _setting(
        None, help="with --binarize-states, round only in every N-th epoch's rollout, the "
        "others relaxed (default: the preset's)",
        check=Count(1), resume=Resume.NEW_RUN, recorded=Recorded.NOT, spec=True,
        section="model", metavar="N",
    )  # fmt: skip
    init_logit: float | None = _setting(
        None, help="the pass-through gate's logit in a fresh model, every other gate's 0 "
        "(residual initialisation; the notebook's 10; default: the preset's)",
        check=Number(0, 50), resume=Resume.NEW_RUN, recorded=Recorded.NOT, spec=True,
        section="model", metavar="Z",
    )  # fmt: skip
    threads: int | None = _setting(
        None, help="engine threads (default/0: one per core)", check=Count(0, MAX_THREADS),
        resume=Resume.PER_CALL, recorded=Recorded.NOT,
    )  # fmt: skip
    # The back ends' names are logicars.loggers.BACKENDS (a higher layer: not imported).
    log: str | None = _setting(
        None, help="track the run with a logger (logicars.loggers): tensorboard (event "
        "files in the run directory), mlflow (a local file store, mlruns/ beside the run) "
        "or wandb (offline); each needs its extra, e.g. pip install 'logicars[mlflow]'",
        check=Choice(("tensorboard", "mlflow", "wandb")), resume=Resume.PER_CALL,
        recorded=Recorded.NOT, metavar="BACKEND",
    )  # fmt: skip
    init: str | None = _setting(
        None, help="start from this wiring and logits (fixture-format npz, e.g. the "
        "reference notebook's initialisation) instead of a fresh seeded model (default: "
        "the preset's own start if it has one and no --seed is given)",
        check=Text(), resume=Resume.NEW_RUN, recorded=Recorded.NOT, metavar="NPZ",
    )  # fmt: skip
    early_stop: int | None = _setting(
        None, help="stop once the hard loss has been 0 for K consecutive epochs",
        check=Count(1), resume=Resume.CHANGES, recorded=Recorded.STATE, metavar="K",
    )  # fmt: skip
    stop_on_solve: bool = _setting(
        True, help="stop once the hard circuit passes the validation check (default); "
        "--no-stop-on-solve trains every epoch, as the reference notebook",
        check=Flag(), resume=Resume.PER_CALL, recorded=Recorded.STATE, before=False,
    )  # fmt: skip
    repair: bool = _setting(
        True, help="when the hard circuit gets a batch right but fails the validation "
        "check, search for gate changes that make it pass (default for a new run; a "
        "resumed run keeps its setting)",
        check=Flag(), resume=Resume.CHANGES, recorded=Recorded.STATE, before=False,
    )  # fmt: skip
    require_generalise: bool = _setting(
        True, help="a pattern task's circuit counts as solved only if it also generalises: "
        "exact on random starts of a grid 4x larger per side after 4x the task's steps "
        "(training-time draws; default); --no-require-generalise asks only the task's own "
        "grid, as before",
        check=Flag(), resume=Resume.CHANGES, recorded=Recorded.STATE, before=False,
    )  # fmt: skip
    drift_budget: int = _setting(
        0, help="with --repair, a run that ends its epochs unsolved then searches its hard "
        "circuit's gates for up to N candidates (a drift search, as `repair`; 0: none; "
        "default: the preset's); a resumed run goes on with an interrupted search",
        check=Count(0), resume=Resume.CHANGES, recorded=Recorded.STATE, metavar="N",
        before=0,
    )  # fmt: skip
    final_repair_budget: int = _setting(
        FINAL_REPAIR_BUDGET, help="with --repair, candidate runs of the greedy repair at "
        "the end of an unsolved attempt that came close (default: the preset's, else "
        f"{FINAL_REPAIR_BUDGET})", check=Count(0), resume=Resume.CHANGES,
        recorded=Recorded.STATE, metavar="N", before=FINAL_REPAIR_BUDGET,
    )  # fmt: skip
    restart_every: int | None = _setting(
        None, help="replace an attempt that has not solved the task after N epochs by a "
        "fresh wiring, while --epochs last (0: never; default: the preset's)",
        check=CountOrNone(), resume=Resume.CHANGES, recorded=Recorded.STATE, metavar="N",
    )  # fmt: skip
    stall_epochs: int | None = _setting(
        None, help="with --stall-loss: an attempt whose lowest hard loss after N of its "
        "epochs is still above the loss is replaced by a fresh wiring that trains --epochs "
        "epochs of its own, at most twice (default: the preset's)",
        check=Count(1), resume=Resume.CHANGES, recorded=Recorded.PRESET, metavar="N",
    )  # fmt: skip
    stall_loss: float | None = _setting(
        None, help="the hard loss of --stall-epochs (default: the preset's)",
        check=Number(0), resume=Resume.CHANGES, recorded=Recorded.PRESET, metavar="L",
    )  # fmt: skip
    checkpoint_every: int | None = _setting(
        DEFAULT_CHECKPOINT_EVERY,
        help=f"epochs between checkpoints (default: the preset's, else "
        f"{DEFAULT_CHECKPOINT_EVERY}; one is always written at the end)",
        check=Count(1), resume=Resume.PER_CALL, recorded=Recorded.NOT, metavar="N",
        none_is_value=True,
    )  # fmt: skip
    growth: str | None = _setting(
        None, help="what a grow: task's circuit must do (logicars.growth): grow the target "
        "at its step T (the paper's), persist (then hold it, trained on a sample pool of "
        "its own later states) or regrow (hold it and regrow it after damage); default: "
        "the preset's, else grow",
        check=Choice(("grow", "persist", "regrow")), resume=Resume.FIXED,
        recorded=Recorded.PRESET, metavar="MODE",
    )  # fmt: skip
    pool_size: int = _setting(
        32, help="with --growth persist or regrow: the grids of the sample pool",
        check=Count(2, MAX_GRID), resume=Resume.FIXED, recorded=Recorded.PRESET,
        metavar="N", before=32,
    )  # fmt: skip
    pool_batch: int = _setting(
        4, help="with --growth persist or regrow: the pool's grids per training step (the "
        "start grid among them; with regrow, one of them damaged; 1: the start grid alone)",
        check=Count(1, MAX_GRID), resume=Resume.FIXED, recorded=Recorded.PRESET,
        metavar="B", before=4,
    )  # fmt: skip
    pool_lr: float | None = _setting(
        None, help="with --growth persist or regrow: the learning rate once the pool takes "
        "over (default: --lr)",
        check=OptimizerNumber(rule="lr"), resume=Resume.CHANGES, recorded=Recorded.PRESET,
        metavar="LR",
    )  # fmt: skip
    hold: int = _setting(
        0, help="with --growth persist or regrow: the loss also reads the N states after "
        "step T of the pool's rollouts (0: only step T)",
        check=Count(0, 2**20), resume=Resume.FIXED, recorded=Recorded.PRESET, metavar="N",
        before=0,
    )  # fmt: skip
    hold_schedule: str = _setting(
        "fixed", help="with --hold N: fixed, the loss reads the N states after step T from "
        "the pool phase's start; grow, 0 at first and one more after each epoch whose hard "
        "circuit is exact on all of them, up to N (a curriculum)",
        check=Choice(HOLD_SCHEDULES), resume=Resume.FIXED, recorded=Recorded.PRESET,
        metavar="SCHEDULE", before="fixed",
    )  # fmt: skip
    hold_tolerance: float | None = _setting(
        None, help="with --hold-schedule grow: the hold also grows by one after "
        "100 pool epochs whose median hard loss per held step is at most X cells, not only "
        "after an exact epoch (default: only after an exact epoch)",
        check=Number(0), resume=Resume.FIXED, recorded=Recorded.PRESET, metavar="X",
    )  # fmt: skip
    pool_steps: int | None = _setting(
        None, help="with --growth persist or regrow: each pool batch runs a number of steps "
        "drawn from T to this, the loss at the last (default: T, the task's steps; a longer "
        "range asks the pattern to hold between multiples of T too)",
        check=Count(1, 2**20), resume=Resume.FIXED, recorded=Recorded.PRESET, metavar="S",
    )  # fmt: skip
    pool_epochs: int | None = _setting(
        None, help="with --growth persist or regrow: the pool phase as a fine-tune of the "
        "grown circuit: a fresh optimizer state and N epochs of its own, after which the "
        "run ends; no restart cuts it short (default: the pool goes on to the end of the "
        "attempt, with the growth phase's optimizer state; 0: the same)",
        check=CountOrNone(), resume=Resume.FIXED, recorded=Recorded.PRESET, metavar="N",
    )  # fmt: skip
    pool_binarize_every: int | None = _setting(
        None, help="with --pool-epochs and --binarize-states: the pool phase rounds the "
        "states in every N-th epoch's rollout only, the others relaxed (default: as the "
        "growth phase; 0: the same)",
        check=CountOrNone(), resume=Resume.FIXED, recorded=Recorded.PRESET, metavar="N",
    )  # fmt: skip
    pool_attempts: int | None = _setting(
        None, help="with --pool-epochs: a pool phase that ends without its circuit holding "
        "the target makes way for a fresh wiring, which learns to grow again (--epochs, "
        "in attempts of --restart-every) and gets a pool phase of its own; at most N pool "
        "phases in the run (default or 0: 1, the run ends with the first)",
        check=CountOrNone(1, 1000), resume=Resume.FIXED, recorded=Recorded.PRESET, metavar="N",
    )  # fmt: skip
    notebook_epochs: int | None = _setting(
        None, help="the reference notebook's epochs where `epochs` is larger",
        check=Count(1), resume=Resume.PER_CALL, recorded=Recorded.PRESET, cli=False,
    )  # fmt: skip

    def __post_init__(self) -> None:
        for f in dataclasses.fields(self):
            value, declared = getattr(self, f.name), setting(f.name)
            if value is None and (f.default is None or declared.none_is_value):
                continue
            object.__setattr__(self, f.name, declared.check.check(f.name, value))
        # Paired settings are both given or neither, however the config is made (a
        # file, `train`'s keywords over a preset, a checkpoint).
        if (self.lr_decay_from is None) != (self.lr_end is None):
            raise ValueError("lr_decay_from and lr_end go together: give both or neither")
        if (self.stall_epochs is None) != (self.stall_loss is None):
            raise ValueError("stall_epochs and stall_loss go together: give both or neither")
        if self.pool_binarize_every is not None and self.pool_epochs is None:
            raise ValueError("pool_binarize_every sets the rule of --pool-epochs' phase: give both")
        if self.hold_tolerance is not None and self.hold_schedule != "grow":
            raise ValueError("hold_tolerance paces --hold-schedule grow: give that schedule")
        if self.pool_attempts is not None and self.pool_epochs is None:
            raise ValueError("pool_attempts counts --pool-epochs' phases: give both")

    def replace(self, **changes: Any) -> TrainConfig:
        """This config with `changes` (unknown names: TypeError)."""
        unknown = set(changes) - set(SETTING_NAMES)
        if unknown:
            raise TypeError(f"TrainConfig has no setting {sorted(unknown)[0]!r}")
        return dataclasses.replace(self, **changes)

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    def lr_at(self, epoch: int, epochs: int) -> float:
        """The learning rate of training step `epoch` (1-based) of a run of `epochs`."""
        start, end = self.lr_decay_from, self.lr_end
        if start is None or end is None or epoch <= start or epochs <= start:
            return self.lr
        t = min(1.0, (epoch - start) / (epochs - start))
        return end + (self.lr - end) * 0.5 * (1.0 + math.cos(math.pi * t))

    def spec_changes(self) -> dict[str, Any]:
        """The settings of the model's training rule that are given (not None)."""
        return {
            name: getattr(self, name)
            for name in SETTING_NAMES
            if setting(name).spec and getattr(self, name) is not None
        }

    def applied_to(self, spec: ModelSpec) -> tuple[ModelSpec, TrainConfig]:
        """`spec` with this config's training-rule settings (`with_rule`), and this
        config without them: the spec, which the model carries, now holds them."""
        rule = self.spec_changes()
        if not rule:
            return spec, self
        cleared: dict[str, Any] = {k: None for k in rule}  # each a `X | None` field
        return with_rule(spec, rule), dataclasses.replace(self, **cleared)


def with_rule(spec: ModelSpec, rule: Mapping[str, Any]) -> ModelSpec:
    """`spec` with the training-rule settings in `rule` (None or absent: the spec's): a
    `relax` mode starts from the engine's defaults, `tau`, `noise`, `warmup` and
    `hard_fraction` replace its parameters, `binarize_states` and `binarize_every` apply
    as `ModelSpec.with_rounding` does, `init_logit` replaces the spec's."""
    relaxation = {k: rule.get(k) for k in ("tau", "noise", "warmup", "hard_fraction")}
    if rule.get("relax") is not None or any(v is not None for v in relaxation.values()):
        spec = spec.replace(relax=resolve_relaxation(spec.relax, rule.get("relax"), relaxation))
    states, every = rule.get("binarize_states"), rule.get("binarize_every")
    if states is not None or every is not None:
        spec = spec.with_rounding(states, every)
    if rule.get("init_logit") is not None:
        spec = spec.replace(init_logit=rule["init_logit"])
    return spec


SETTING_NAMES: tuple[str, ...] = tuple(f.name for f in dataclasses.fields(TrainConfig))
# The sample pool's settings of persisting and regenerating growth: what a growth run's
# summary and its record name.
POOL_SETTINGS: tuple[str, ...] = (
    "pool_size",
    "pool_batch",
    "pool_lr",
    "hold",
    "hold_schedule",
    "hold_tolerance",
    "pool_steps",
    "pool_epochs",
    "pool_binarize_every",
    "pool_attempts",
)


def setting(name: str) -> Setting:
    """The declaration of the `TrainConfig` field `name`."""
    return _SETTINGS[name]


_SETTINGS: dict[str, Setting] = {
    f.name: f.metadata["setting"] for f in dataclasses.fields(TrainConfig)
}


def settings() -> Iterator[tuple[str, Setting]]:
    """Every setting, in declaration order."""
    return iter(_SETTINGS.items())


def setting_default(name: str) -> Any:
    """The setting's default (`dataclasses.MISSING` when a preset must give it)."""
    return TrainConfig.__dataclass_fields__[name].default


def cli_flag(name: str) -> str:
    """The command line's flag of a setting: `--` and its name with dashes."""
    return "--" + name.replace("_", "-")


def cli_settings() -> list[tuple[str, Setting]]:
    """The settings `logicars train` takes as options, in declaration order."""
    return [(name, s) for name, s in settings() if s.cli]


def toml_settings(section: str) -> dict[str, Setting]:
    """The settings an experiment file's `[section]` table holds."""
    return {name: s for name, s in settings() if s.section == section}


def recorded_settings(where: Recorded) -> list[str]:
    """The settings a checkpoint records in `where`."""
    return [name for name, s in settings() if s.recorded is where]


def resume_settings(rule: Resume) -> frozenset[str]:
    """The settings a resume treats by `rule` (e.g. `Resume.NEW_RUN`: refused)."""
    return frozenset(name for name, s in settings() if s.resume is rule)


def given_settings(values: Mapping[str, Any]) -> dict[str, Any]:
    """The settings in `values` that are given: not None, unless None is a value of the
    setting's own (`Setting.none_is_value`)."""
    return {k: v for k, v in values.items() if v is not None or setting(k).none_is_value}
