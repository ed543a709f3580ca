"""Opening a trained model from what the commands take: a run directory, a checkpoint
(`.safetensors`) or parameters in the fixture format (`.npz`)."""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .model import Model, PathLike
from .presets import PRESETS, Preset

if TYPE_CHECKING:
    from .runstate import EpochMetrics


@dataclass(frozen=True)
class LoadedRun:
    """A model, the preset it was trained on (None when unknown: `.npz` files, foreign
    checkpoints) and the directory outputs go to by default; for a training checkpoint
    also its losses epoch by epoch and the run's `summary.json` (None when there is none
    or it describes another epoch than the checkpoint's). Jupyter shows it as a table of
    the run with its loss curve (`_repr_html_`)."""

    model: Model
    preset: Preset | None
    directory: Path
    metrics: list[EpochMetrics] = field(default_factory=list)
    summary: dict[str, Any] | None = None

    def _repr_html_(self) -> str:
        """Jupyter's display: the run's table, loss curve and rollout (`logicars.viz.render`)."""
        from .viz.render import run_html

        return run_html(self.model, self.directory, self.summary, self.metrics, self.preset)

    def __repr__(self) -> str:  # short: the metrics hold a row per epoch
        name = None if self.preset is None else self.preset.name
        return (
            f"LoadedRun(directory={os.fspath(self.directory)!r}, preset={name!r}, "
            f"epochs={len(self.metrics)}, model={self.model!r})"
        )


def load_run(path: PathLike) -> LoadedRun:
    """Loads a run directory (its `model.safetensors`), a checkpoint or an `.npz` file.

    Raises `FileNotFoundError` for a missing path, `CheckpointError` for a damaged
    checkpoint and `ValueError` for anything else unreadable.
    """
    from .errors import CheckpointError
    from .model import load_checkpoint
    from .runstate import CHECKPOINT_NAME, TRAIN_STATE_KIND, RunState, with_recorded_task

    p = Path(path)
    if not p.exists():
        raise FileNotFoundError(f"{p}: no such run directory or model file")
    if p.is_dir():
        if not (p / CHECKPOINT_NAME).is_file():
            raise ValueError(f"{p}: not a run directory (no {CHECKPOINT_NAME})")
        p = p / CHECKPOINT_NAME
    if p.suffix == ".npz":
        return LoadedRun(Model.from_npz(p), None, p.parent)
    model, extra = load_checkpoint(p)
    preset = None
    metrics: list[EpochMetrics] = []
    if extra.get("kind") == TRAIN_STATE_KIND:
        state = None
        try:
            state = RunState.from_extra(extra, model.spec, p)
            metrics = state.metrics
        except CheckpointError:
            pass  # the model is usable without its training record (nor its preset)
        stored = extra.get("preset", {})
        known = PRESETS.get(str(stored.get("name"))) if state is not None else None
        if known is not None:
            assert state is not None  # `known` is looked up only for a readable record
            # The preset as the run used it: its own spec, grid and task, and its growth
            # mode (what its check asks: a `--growth grow` run of a persisting preset is
            # checked at step T, and `logicars repair` scores it so). Settings as keywords:
            # mypy checks replace against the fields, not Preset.__init__ (python/mypy#19193).
            preset = dataclasses.replace(  # type: ignore[call-arg]
                known,
                spec=model.spec,
                lr=state.preset.lr,
                weight_decay=state.preset.weight_decay,
                beta1=state.preset.beta1,
                growth=state.preset.config.growth,
                height=int(stored.get("height", known.height)),
                width=int(stored.get("width", known.width)),
            )
            try:
                preset = with_recorded_task(preset, stored.get("task"))
            except (KeyError, TypeError, ValueError):
                pass  # a damaged record: the preset's own task
        elif state is not None:
            preset = state.preset  # a task kind's run: the task it recorded
    summary = _read_summary(p.parent / "summary.json")
    if preset is None and summary is not None:
        # A model saved on its own next to a run's summary.json (`Model.save`).
        known = PRESETS.get(str(summary.get("preset")))
        if known is not None:
            preset = dataclasses.replace(known, spec=model.spec)
    if summary is not None and metrics and summary.get("epochs") != metrics[-1].epoch:
        summary = None  # written at another epoch (a resumed run stopped before its end)
    return LoadedRun(model, preset, p.parent, metrics, summary)


def _read_summary(path: Path) -> dict[str, Any] | None:
    """A run's summary.json as a dict, or None. The run directory may be someone else's:
    a regular file of bounded size and nesting, no symlink followed (`logicars.files`);
    a FIFO, a device or JSON nested 10^5 deep is no summary, never a hang or a
    RecursionError."""
    from .files import read_json

    try:
        summary = read_json(path, "summary", follow=False)
    except (OSError, ValueError):
        return None
    return summary if isinstance(summary, dict) else None
