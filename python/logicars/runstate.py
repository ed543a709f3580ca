"""A training run's recorded state: what `logicars.train` stores as its checkpoint's
`extra` to resume a run (the preset with its task, seed, data stream, metrics, repairs,
restarts), read back with every field checked, since a file with a recomputed checksum
can hold anything. `logicars.runs` reads it to open a run; `logicars.train` writes it."""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from .checkpoint import memory_cap_bytes
from .errors import CheckpointError
from .presets import Preset
from .spec import MAX_SEED, ModelSpec
from .tasks import task_from_dict
from .training.config import (
    FINAL_REPAIR_BUDGET,
    Recorded,
    Resume,
    TrainConfig,
    recorded_settings,
    setting,
    setting_default,
)
from .training.constraints import MAX_COUNT

# A run directory's checkpoint, and the `kind` of the training state in its `extra`.
CHECKPOINT_NAME = "model.safetensors"
TRAIN_STATE_KIND = "logicars-train"


class EpochMetrics(NamedTuple):
    """One row of `metrics.csv`.

    The last four columns came later (issue 42); a checkpoint from before them resumes
    with `attempt` and `repair` rebuilt from its restarts and repairs, and `lr` and
    `validation` not recorded (empty in the CSV)."""

    epoch: int
    soft_loss: float
    hard_loss: float
    elapsed_s: float
    attempt: int = 1  # the attempt (wiring) the epoch trained, from 1
    lr: float | None = None  # the step's learning rate (None: not recorded)
    # The validation check after the epoch: "" (not run: the batch was not exact),
    # "failed", "unconfirmed" (passed the validation draw, not the confirmation draw) or
    # "passed" (the run is solved).
    validation: str = ""
    repair: int | None = None  # wrong validation cells after a repair this epoch, if one ran


VALIDATION_RESULTS = ("", "failed", "unconfirmed", "passed")


def metrics_rows(
    rows: list[list[Any]], restarts: list[dict[str, Any]], repairs: list[dict[str, Any]]
) -> list[EpochMetrics]:
    """A checkpoint's metrics rows: full rows as they are, and the 4-column rows of an
    older checkpoint with what its record still tells (the attempt from its restarts, the
    repair from its repairs)."""
    ends = sorted(int(r["epoch"]) for r in restarts)
    repaired = {int(r["epoch"]): int(r["wrong_after"]) for r in repairs if "wrong_after" in r}
    out = []
    for row in rows:
        if len(row) == 4:
            e, s, h, t = row
            attempt = 1 + sum(end < int(e) for end in ends)
            repair = repaired.get(int(e))
            row4 = EpochMetrics(int(e), float(s), float(h), float(t), attempt, None, "", repair)
            out.append(row4)
        else:
            e, s, h, t, attempt, lr, validation, repair = row
            out.append(
                EpochMetrics(
                    int(e),
                    float(s),
                    float(h),
                    float(t),
                    int(attempt),
                    None if lr is None else float(lr),
                    str(validation),
                    None if repair is None else int(repair),
                )
            )
    return out


@dataclasses.dataclass
class RunState:
    """Everything the loop needs besides the model; stored as the checkpoint's `extra`."""

    preset: Preset
    seed: int
    target_epochs: int
    early_stop: int | None
    rng: np.random.Generator
    metrics: list[EpochMetrics]
    zero_streak: int = 0
    first_zero: int | None = None
    init: str | None = None  # the npz the run started from, if not a fresh Model(spec, seed)
    stop_on_solve: bool = False
    # The first epoch after which the hard circuit passed the validation check, and the
    # training seconds until then.
    solved_epoch: int | None = None
    solved_seconds: float | None = None
    # Discrete repair (`logicars.repair`): whether the run tries it, and each attempt
    # (its epoch and `RepairResult.to_dict()`).
    repair: bool = False
    repairs: list[dict[str, Any]] = dataclasses.field(default_factory=list)
    # Whether a pattern circuit must also generalise to count as solved (`policies.confirmed`).
    require_generalise: bool = False
    # Candidates of the drift search on the final circuit of a run that ends unsolved
    # (0: none); its records in `repairs` have `"method": "drift"`.
    drift_budget: int = 0
    # Candidate runs of the repair at the end of an unsolved attempt that came close.
    final_repair_budget: int = FINAL_REPAIR_BUDGET
    # Restarts: an attempt unsolved after `restart_every` epochs is replaced by a fresh
    # wiring; each restart's `{"epoch": the last epoch of the old attempt, "seed": the
    # new wiring's}`.
    restart_every: int | None = None
    restarts: list[dict[str, Any]] = dataclasses.field(default_factory=list)
    # The restarts that replaced a stalled attempt (`Preset.stall_epochs`).
    stalls: int = 0
    # The unsolved attempt with the best validation score so far, `{"attempt": index from
    # 0, "epoch": its last epoch, "score": [inputs wrong, cells wrong], "kept_lowest": the
    # epoch of its lowest circuit when it ended with that}` (its model is
    # BEST_ATTEMPT_NAME in the run directory), and the attempt a run that ended unsolved
    # kept as its final circuit when that was not its last one.
    best_attempt: dict[str, Any] | None = None
    kept_attempt: int | None = None
    # A run with a drift budget: the current attempt's lowest training hard loss,
    # `{"epoch": the epoch that measured it, "hard_loss": ...}`, and `"held"`:
    # `growth.held_score` for an exact epoch of a run that must hold its target (its
    # parameters are LOWEST_NAME in the run directory), and that epoch when an unsolved
    # run ended with that circuit rather than its last.
    lowest: dict[str, Any] | None = None
    kept_lowest: int | None = None
    # The last epoch of a growth run's pool phase when it is a fine-tune of its own length
    # (`pool_epochs`): no restart comes before it, and the run ends there unless it has
    # pool phases left (`pool_attempts`; a restart after one is marked `"pool": True`).
    pool_end: int | None = None
    # Seconds spent after the last epoch's row (`EpochMetrics.elapsed_s`): the searches
    # that end a run (its final repair, the drift search), across resumes. A new epoch's
    # row counts them, and this goes back to 0.
    after_seconds: float = 0.0

    @classmethod
    def start(cls, preset: Preset, init: str | None) -> RunState:
        """A new run of `preset` (its config's settings), from `init` if not None."""
        config = preset.config
        return cls(
            preset=preset,
            seed=config.seed,
            target_epochs=config.epochs,
            rng=np.random.default_rng(config.seed),
            metrics=[],
            init=init,
            **{name: getattr(config, name) for name in recorded_settings(Recorded.STATE)},
        )

    def resume_with(self, given: dict[str, Any], per_call: dict[str, Any]) -> None:
        """The settings given to the resumed run (`given`: checked values), applied by
        their `Resume` rule, and the `Resume.PER_CALL` settings it records (`per_call`:
        the call's values, given or not). ValueError for a setting the run keeps."""
        preset_changes = {}
        for name, value in given.items():
            rule = setting(name).resume
            if rule is Resume.NEW_RUN:
                raise ValueError(new_run_only_message(name))
            recorded = self.seed if name == "seed" else getattr(self.preset.config, name)
            if rule is Resume.FIXED and value != recorded:
                raise ValueError(
                    f"{name} {value} differs from the resumed run's {name} {recorded}; "
                    f"a resumed run keeps its {name}"
                )
            if rule is not Resume.CHANGES:
                continue
            if name == "epochs":  # the preset keeps its own budget; the run's is the target
                self.target_epochs = value
            else:
                preset_changes[name] = value
        for name, value in per_call.items():
            if setting(name).recorded is Recorded.STATE:
                preset_changes[name] = value
        # The state's own copies of the settings it records follow the preset's.
        for name, value in preset_changes.items():
            if setting(name).recorded is Recorded.STATE:
                setattr(self, name, value)
        if preset_changes:
            self.preset = dataclasses.replace(self.preset, **preset_changes)

    @property
    def epoch(self) -> int:
        return self.metrics[-1].epoch if self.metrics else 0

    @property
    def attempt_start(self) -> int:
        """The epoch after which the current attempt (wiring) started."""
        return self.restarts[-1]["epoch"] if self.restarts else 0

    @property
    def elapsed(self) -> float:
        return self.metrics[-1].elapsed_s if self.metrics else 0.0

    @property
    def wall_seconds(self) -> float:
        """The run's wall time: its epochs, and the searches after its last one."""
        return self.elapsed + self.after_seconds

    def to_extra(self, *, interrupted: bool = False, early_stopped: bool = False) -> dict[str, Any]:
        p = self.preset
        return {
            "kind": TRAIN_STATE_KIND,
            "preset": {
                "name": p.name,
                "description": p.description,
                **{name: getattr(p.config, name) for name in recorded_settings(Recorded.PRESET)},
                # The task with any tile or image's pixels: resume, simulate and analyze
                # need neither the preset table nor the file it came from.
                "task": p.task_record(),
            },
            **{name: getattr(self, name) for name in recorded_settings(Recorded.STATE)},
            "seed": self.seed,
            "target_epochs": self.target_epochs,
            "epoch": self.epoch,
            "rng_state": self.rng.bit_generator.state,
            "metrics": [list(r) for r in self.metrics],
            "zero_streak": self.zero_streak,
            "first_epoch_hard_zero": self.first_zero,
            "init": self.init,
            "solved_epoch": self.solved_epoch,
            "solved_seconds": self.solved_seconds,
            "repairs": self.repairs,
            "restarts": self.restarts,
            "stalls": self.stalls,
            "best_attempt": self.best_attempt,
            "kept_attempt": self.kept_attempt,
            "lowest": self.lowest,
            "kept_lowest": self.kept_lowest,
            "pool_end": self.pool_end,
            "after_seconds": self.after_seconds,
            "interrupted": interrupted,
            "early_stopped": early_stopped,
        }

    @classmethod
    def from_extra(cls, extra: dict[str, Any], spec: ModelSpec, where: Path) -> RunState:
        if extra.get("kind") != TRAIN_STATE_KIND:
            raise CheckpointError(
                f"{where} holds a model but no training state; it cannot be resumed"
            )
        try:
            p = extra["preset"]
            if not isinstance(p, dict):
                raise TypeError("preset is not an object")
            # A checkpoint from before a setting existed trained with `Setting.before`;
            # one from before the preset recorded its seed, with the run's.
            run_settings = _recorded(extra, Recorded.STATE)
            preset_settings = _recorded(p, Recorded.PRESET, "preset.", seed=extra["seed"])
            config = TrainConfig(**preset_settings, **run_settings)
            _check_state_fields(extra, spec, config)
            preset = Preset(str(p["name"]), spec, config=config, description=str(p["description"]))
            preset = with_recorded_task(preset, p.get("task"))
            state = extra["rng_state"]
            if state.get("bit_generator") != "PCG64":
                raise ValueError(f"unsupported generator {state.get('bit_generator')!r}")
            rng = np.random.Generator(np.random.PCG64())
            rng.bit_generator.state = state
            metrics = metrics_rows(
                extra["metrics"], extra.get("restarts", []), extra.get("repairs", [])
            )
            if len(metrics) != int(extra["epoch"]):
                raise ValueError(f"{len(metrics)} metrics rows for {extra['epoch']} epochs")
            first = extra["first_epoch_hard_zero"]
            solved = extra.get("solved_epoch")
            solved_s = extra.get("solved_seconds")
            best = extra.get("best_attempt")
            kept = extra.get("kept_attempt")
            lowest = extra.get("lowest")
            kept_lowest = extra.get("kept_lowest")
            return cls(
                preset=preset,
                seed=int(extra["seed"]),
                target_epochs=int(extra["target_epochs"]),
                rng=rng,
                metrics=metrics,
                zero_streak=int(extra["zero_streak"]),
                first_zero=None if first is None else int(first),
                init=None if extra.get("init") is None else str(extra["init"]),
                solved_epoch=None if solved is None else int(solved),
                solved_seconds=None if solved_s is None else float(solved_s),
                repairs=[dict(r) for r in extra.get("repairs", [])],
                restarts=[
                    {
                        "epoch": int(r["epoch"]),
                        "seed": int(r["seed"]),
                        # why the attempt ended (runs from before it was recorded: none)
                        **({"reason": str(r["reason"])} if "reason" in r else {}),
                        **({"pool": True} if r.get("pool") is True else {}),
                    }
                    for r in extra.get("restarts", [])
                ],
                stalls=int(extra.get("stalls", 0)),
                best_attempt=None
                if best is None
                else {
                    "attempt": int(best["attempt"]),
                    "epoch": int(best["epoch"]),
                    "score": [int(v) for v in best["score"]],
                    # The epoch of its lowest circuit when it ended with that (none
                    # recorded before 2026-11-27).
                    "kept_lowest": None
                    if best.get("kept_lowest") is None
                    else int(best["kept_lowest"]),
                },
                kept_attempt=None if kept is None else int(kept),
                lowest=None
                if lowest is None
                else {
                    "epoch": int(lowest["epoch"]),
                    "hard_loss": float(lowest["hard_loss"]),
                    # an exact epoch of a holding run: `growth.held_score` of its circuit
                    **({"held": [int(v) for v in lowest["held"]]} if "held" in lowest else {}),
                },
                kept_lowest=None if kept_lowest is None else int(kept_lowest),
                pool_end=None if extra.get("pool_end") is None else int(extra["pool_end"]),
                # not recorded before 2026-12-01: the runs' searches then went uncounted
                after_seconds=float(extra.get("after_seconds", 0.0)),
                **run_settings,
            )
        except (KeyError, TypeError, ValueError, OverflowError) as e:
            raise CheckpointError(
                f"{where}: invalid training state in the checkpoint: {e}"
            ) from None


def _recorded(
    record: dict[str, Any], where: Recorded, prefix: str = "", **before: Any
) -> dict[str, Any]:
    """The settings a checkpoint records in `where`, each checked by its declaration
    (`TrainConfig`): a file with a recomputed checksum can hold anything. A setting the
    record lacks is what the run trained with before it existed (`Setting.before`, or
    `before`); one without a default must be there."""
    values = {}
    for name in recorded_settings(where):
        declared = setting(name)
        if name in record:
            value = record[name]
        elif setting_default(name) is dataclasses.MISSING:
            raise KeyError(f"{prefix}{name}")
        else:
            value = before.get(name, declared.before)
        optional = value is None and (setting_default(name) is None or declared.none_is_value)
        values[name] = value if optional else declared.check.check(prefix + name, value)
    return values


# The settings of the relaxation, which a resumed run keeps with its spec.
_RELAXATION = ("relax", "tau", "noise", "warmup", "hard_fraction")


def new_run_only_message(name: str) -> str:
    """Why a resumed run refuses the `Resume.NEW_RUN` setting `name`."""
    if name == "init":
        return "init starts a new run; a resumed run continues from its checkpoint"
    if name in _RELAXATION:
        return (
            f"a resumed run keeps its relaxation; {', '.join(_RELAXATION[:-1])} and "
            f"{_RELAXATION[-1]} start new runs"
        )
    return f"a resumed run keeps its {name}; it starts new runs"


def with_recorded_task(preset: Preset, record: dict[str, Any] | None) -> Preset:
    """`preset` with the task a run recorded (`Preset.task_record`); a run from before
    tasks were recorded trained a preset's own (by its name). A custom `Task` subclass
    is not rebuilt: the preset then names no task (resume it with the task again)."""
    if record is None:
        return preset  # `Preset` gives a preset's name its own task
    kind = str(record.get("task_kind", ""))
    if ":" not in kind or record.get("kind") == "data":
        # A Task built in Python: the kinds rebuild from their record; a custom subclass
        # does not (the preset then names no task). A recording (`data:`) rebuilds from
        # the bits its record holds, so the run never needs the file again.
        task = task_from_dict(record)
        return preset if task is None else dataclasses.replace(preset, custom_task=task)
    pixels = record.get("tile", record.get("image"))
    pixels = None if pixels is None else np.asarray(pixels, dtype=np.float32)
    out = dataclasses.replace(preset, task_kind=kind, task_pixels=pixels)
    out.task()  # a damaged record fails here, as invalid training state
    return out


# Bounds of a training state's counts: far above any real run, low enough that nothing
# derived from them overflows (the settings' own cap).
_MAX_EPOCHS = MAX_COUNT


def _check_state_fields(extra: dict[str, Any], spec: ModelSpec, config: TrainConfig) -> None:
    """Types and ranges of the training state's numbers before any is used: a file with a
    recomputed checksum can hold anything (a list for `rng_state`, 1e308 for `batch`)."""

    def count(name: str, v: Any, lo: int, hi: int, optional: bool = False) -> None:
        if optional and v is None:
            return
        if type(v) is not int or not lo <= v <= hi:
            raise ValueError(f"{name} must be an integer in [{lo}, {hi}], got {str(v)[:40]}")

    def non_negative(name: str, v: Any) -> None:
        if type(v) not in (int, float) or not 0 <= v < math.inf:
            raise ValueError(f"{name} must be a number >= 0, got {str(v)[:40]}")

    # A batch of inputs and targets must fit the memory cap (the dataset draws them).
    c = config
    grid_bytes = 2 * 4 * c.batch * c.height * c.width * spec.channels
    if grid_bytes > memory_cap_bytes():
        raise ValueError(
            f"a batch of {c.batch} grids of {c.height}x{c.width} needs "
            f"{grid_bytes >> 20} MB, over the memory limit of {memory_cap_bytes() >> 20} MB"
        )
    count("seed", extra["seed"], 0, MAX_SEED)
    count("target_epochs", extra["target_epochs"], 1, _MAX_EPOCHS)
    count("epoch", extra["epoch"], 0, _MAX_EPOCHS)
    count("zero_streak", extra["zero_streak"], 0, _MAX_EPOCHS)
    for key in ("first_epoch_hard_zero", "solved_epoch", "kept_attempt", "kept_lowest"):
        count(key, extra.get(key), 0, _MAX_EPOCHS, optional=True)
    lowest = extra.get("lowest")
    if lowest is not None:
        if not isinstance(lowest, dict):
            raise TypeError(f"lowest must be an object, got {str(lowest)[:40]}")
        count("lowest.epoch", lowest.get("epoch"), 1, extra["epoch"])
        non_negative("lowest.hard_loss", lowest.get("hard_loss"))
    non_negative("after_seconds", extra.get("after_seconds", 0.0))
    count("stalls", extra.get("stalls", 0), 0, len(extra.get("restarts", [])))
    repairs = extra.get("repairs", [])
    if not isinstance(repairs, list) or not all(isinstance(r, dict) for r in repairs):
        raise TypeError(f"repairs must be a list of objects, got {str(repairs)[:40]}")
    for r in repairs:
        for key in ("evaluations", "wrong_after"):
            count(f"repairs.{key}", r.get(key, 0), 0, 2**63)
    state = extra["rng_state"]
    if not isinstance(state, dict) or not isinstance(state.get("state"), dict):
        raise TypeError(f"rng_state must be a numpy generator state object, got {str(state)[:40]}")
    for key in ("state", "inc"):
        count(f"rng_state.state.{key}", state["state"].get(key), 0, 2**128 - 1)
    rows = extra["metrics"]
    if not isinstance(rows, list) or not all(_metrics_row_ok(r) for r in rows):
        raise ValueError(
            "metrics must be rows [epoch, soft_loss, hard_loss, elapsed_s] of numbers, "
            "optionally followed by attempt, lr, validation and repair"
        )


def _metrics_row_ok(r: Any) -> bool:
    """A checkpoint's metrics row: 4 numbers (older runs), or those and attempt, lr,
    validation and repair."""
    if not isinstance(r, list) or len(r) not in (4, 8) or type(r[0]) is not int:
        return False
    if not all(type(v) in (int, float) and math.isfinite(v) for v in r[1:4]):
        return False
    if len(r) == 4:
        return True
    attempt, lr, validation, repair = r[4:]
    return (
        type(attempt) is int
        and attempt >= 1
        and (lr is None or (type(lr) in (int, float) and math.isfinite(lr)))
        and validation in VALIDATION_RESULTS
        and (repair is None or (type(repair) is int and repair >= 0))
    )
