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
from .model import MAX_SEED
from .presets import Preset, check_optimizer_number
from .spec import DEFAULT_WEIGHT_DECAY, ModelSpec
from .tasks import task_from_dict

# A run directory's checkpoint, and the `kind` of the training state in its `extra`.
CHECKPOINT_NAME = "model.safetensors"
TRAIN_STATE_KIND = "logicars-train"


class EpochMetrics(NamedTuple):
    """One row of `metrics.csv`."""

    epoch: int
    soft_loss: float
    hard_loss: float
    elapsed_s: float


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
    # Candidates of the drift search on the final circuit of a run that ends unsolved
    # (0: none); its records in `repairs` have `"method": "drift"`.
    drift_budget: int = 0
    # Restarts: an attempt unsolved after `restart_every` epochs is replaced by a fresh
    # wiring; each restart's `{"epoch": the last epoch of the old attempt, "seed": the
    # new wiring's}`.
    restart_every: int | None = None
    restarts: list[dict[str, int]] = dataclasses.field(default_factory=list)
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
    # `{"epoch": the epoch that measured it, "hard_loss": ...}` (its parameters are
    # LOWEST_NAME in the run directory), and that epoch when an unsolved run ended with
    # that circuit rather than its last.
    lowest: dict[str, Any] | None = None
    kept_lowest: int | None = None

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

    def to_extra(self, *, interrupted: bool = False, early_stopped: bool = False) -> dict[str, Any]:
        p = self.preset
        return {
            "kind": TRAIN_STATE_KIND,
            "preset": {
                "name": p.name,
                "batch": p.batch,
                "height": p.height,
                "width": p.width,
                "epochs": p.epochs,
                "description": p.description,
                "seed": p.seed,
                "lr": p.lr,
                "weight_decay": p.weight_decay,
                "lr_decay_from": p.lr_decay_from,
                "lr_end": p.lr_end,
                "stall_epochs": p.stall_epochs,
                "stall_loss": p.stall_loss,
                # The task with any tile or image's pixels: resume, simulate and analyze
                # need neither the preset table nor the file it came from.
                "task": p.task_record(),
            },
            "seed": self.seed,
            "target_epochs": self.target_epochs,
            "early_stop": self.early_stop,
            "epoch": self.epoch,
            "rng_state": self.rng.bit_generator.state,
            "metrics": [list(r) for r in self.metrics],
            "zero_streak": self.zero_streak,
            "first_epoch_hard_zero": self.first_zero,
            "init": self.init,
            "stop_on_solve": self.stop_on_solve,
            "solved_epoch": self.solved_epoch,
            "solved_seconds": self.solved_seconds,
            "repair": self.repair,
            "repairs": self.repairs,
            "drift_budget": self.drift_budget,
            "restart_every": self.restart_every,
            "restarts": self.restarts,
            "stalls": self.stalls,
            "best_attempt": self.best_attempt,
            "kept_attempt": self.kept_attempt,
            "lowest": self.lowest,
            "kept_lowest": self.kept_lowest,
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
            _check_state_fields(extra, spec)
            p = extra["preset"]
            preset = Preset(
                name=str(p["name"]),
                spec=spec,
                batch=int(p["batch"]),
                height=int(p["height"]),
                width=int(p["width"]),
                epochs=int(p["epochs"]),
                description=str(p["description"]),
                seed=int(p.get("seed", extra["seed"])),
                lr=_checked_optimizer_number("lr", p["lr"]),
                # A checkpoint from before the option trained with the notebook's.
                weight_decay=_checked_optimizer_number(
                    "weight_decay", p.get("weight_decay", DEFAULT_WEIGHT_DECAY)
                ),
                # A checkpoint from before the decay trained without one.
                lr_decay_from=p.get("lr_decay_from"),
                lr_end=None
                if p.get("lr_end") is None
                else _checked_optimizer_number("lr_end", p["lr_end"]),
                # A checkpoint from before the stall check has none.
                stall_epochs=p.get("stall_epochs"),
                stall_loss=None if p.get("stall_loss") is None else float(p["stall_loss"]),
            )
            preset = with_recorded_task(preset, p.get("task"))
            state = extra["rng_state"]
            if state.get("bit_generator") != "PCG64":
                raise ValueError(f"unsupported generator {state.get('bit_generator')!r}")
            rng = np.random.Generator(np.random.PCG64())
            rng.bit_generator.state = state
            metrics = [
                EpochMetrics(int(e), float(s), float(h), float(t))
                for e, s, h, t in extra["metrics"]
            ]
            if len(metrics) != int(extra["epoch"]):
                raise ValueError(f"{len(metrics)} metrics rows for {extra['epoch']} epochs")
            early = extra["early_stop"]
            first = extra["first_epoch_hard_zero"]
            solved = extra.get("solved_epoch")
            solved_s = extra.get("solved_seconds")
            every = extra.get("restart_every")
            best = extra.get("best_attempt")
            kept = extra.get("kept_attempt")
            lowest = extra.get("lowest")
            kept_lowest = extra.get("kept_lowest")
            return cls(
                preset=preset,
                seed=int(extra["seed"]),
                target_epochs=int(extra["target_epochs"]),
                early_stop=None if early is None else int(early),
                rng=rng,
                metrics=metrics,
                zero_streak=int(extra["zero_streak"]),
                first_zero=None if first is None else int(first),
                init=None if extra.get("init") is None else str(extra["init"]),
                stop_on_solve=bool(extra.get("stop_on_solve", False)),
                solved_epoch=None if solved is None else int(solved),
                solved_seconds=None if solved_s is None else float(solved_s),
                repair=bool(extra.get("repair", False)),
                repairs=[dict(r) for r in extra.get("repairs", [])],
                drift_budget=int(extra.get("drift_budget", 0)),
                restart_every=None if every is None else int(every),
                restarts=[
                    {"epoch": int(r["epoch"]), "seed": int(r["seed"])}
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
                else {"epoch": int(lowest["epoch"]), "hard_loss": float(lowest["hard_loss"])},
                kept_lowest=None if kept_lowest is None else int(kept_lowest),
            )
        except (KeyError, TypeError, ValueError, OverflowError) as e:
            raise CheckpointError(
                f"{where}: invalid training state in the checkpoint: {e}"
            ) from None


def _checked_optimizer_number(key: str, value: Any) -> float:
    """A recorded learning rate or weight decay: a number (JSON), in the training step's
    range."""
    if type(value) not in (int, float):
        raise TypeError(f"preset.{key} must be a number, got {str(value)[:40]}")
    check_optimizer_number(key, float(value))
    return float(value)


def with_recorded_task(preset: Preset, record: dict[str, Any] | None) -> Preset:
    """`preset` with the task a run recorded (`Preset.task_record`); a run from before
    tasks were recorded trained a preset's own (by its name). A custom `Task` subclass
    is not rebuilt: the preset then names no task (resume it with the task again)."""
    if record is None:
        return preset  # `Preset` gives a preset's name its own task
    kind = str(record.get("task_kind", ""))
    if ":" not in kind:
        # A Task built in Python: the three kinds rebuild from their record; a custom
        # subclass does not (the preset then names no task).
        task = task_from_dict(record)
        return preset if task is None else dataclasses.replace(preset, custom_task=task)
    pixels = record.get("tile", record.get("image"))
    pixels = None if pixels is None else np.asarray(pixels, dtype=np.float32)
    out = dataclasses.replace(preset, task_kind=kind, task_pixels=pixels)
    out.task()  # a damaged record fails here, as invalid training state
    return out


# Bounds of a training state's counts: far above any real run, low enough that nothing
# derived from them overflows.
_MAX_EPOCHS = 2**40


def _check_state_fields(extra: dict[str, Any], spec: ModelSpec) -> None:
    """Types and ranges of the training state's numbers before any is used: a file with a
    recomputed checksum can hold anything (a list for `rng_state`, 1e308 for `batch`)."""

    def count(name: str, v: Any, lo: int, hi: int, optional: bool = False) -> None:
        if optional and v is None:
            return
        if type(v) is not int or not lo <= v <= hi:
            raise ValueError(f"{name} must be an integer in [{lo}, {hi}], got {str(v)[:40]}")

    def loss(name: str, v: Any, optional: bool = False) -> None:
        if optional and v is None:
            return
        if type(v) not in (int, float) or not 0 <= v < math.inf:
            raise ValueError(f"{name} must be a number >= 0, got {str(v)[:40]}")

    p = extra["preset"]
    if not isinstance(p, dict):
        raise TypeError("preset is not an object")
    for key in ("batch", "height", "width"):
        count(f"preset.{key}", p[key], 1, 2**31)
    count("preset.epochs", p["epochs"], 1, _MAX_EPOCHS)
    count("preset.seed", p.get("seed", 0), 0, MAX_SEED)
    count("preset.lr_decay_from", p.get("lr_decay_from"), 0, _MAX_EPOCHS, optional=True)
    count("preset.stall_epochs", p.get("stall_epochs"), 1, _MAX_EPOCHS, optional=True)
    loss("preset.stall_loss", p.get("stall_loss"), optional=True)
    # A batch of inputs and targets must fit the memory cap (the dataset draws them).
    grid_bytes = 2 * 4 * p["batch"] * p["height"] * p["width"] * spec.channels
    if grid_bytes > memory_cap_bytes():
        raise ValueError(
            f"a batch of {p['batch']} grids of {p['height']}x{p['width']} needs "
            f"{grid_bytes >> 20} MB, over the memory limit of {memory_cap_bytes() >> 20} MB"
        )
    count("seed", extra["seed"], 0, MAX_SEED)
    count("target_epochs", extra["target_epochs"], 1, _MAX_EPOCHS)
    count("epoch", extra["epoch"], 0, _MAX_EPOCHS)
    count("early_stop", extra["early_stop"], 1, _MAX_EPOCHS, optional=True)
    count("zero_streak", extra["zero_streak"], 0, _MAX_EPOCHS)
    for key in ("first_epoch_hard_zero", "solved_epoch", "kept_attempt", "kept_lowest"):
        count(key, extra.get(key), 0, _MAX_EPOCHS, optional=True)
    lowest = extra.get("lowest")
    if lowest is not None:
        if not isinstance(lowest, dict):
            raise TypeError(f"lowest must be an object, got {str(lowest)[:40]}")
        count("lowest.epoch", lowest.get("epoch"), 1, extra["epoch"])
        loss("lowest.hard_loss", lowest.get("hard_loss"))
    count("restart_every", extra.get("restart_every"), 1, _MAX_EPOCHS, optional=True)
    count("drift_budget", extra.get("drift_budget", 0), 0, _MAX_EPOCHS)
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
    if not isinstance(rows, list) or not all(
        isinstance(r, list)
        and len(r) == 4
        and type(r[0]) is int
        and all(type(v) in (int, float) and math.isfinite(v) for v in r[1:])
        for r in rows
    ):
        raise ValueError("metrics must be rows [epoch, soft_loss, hard_loss, elapsed_s] of numbers")
