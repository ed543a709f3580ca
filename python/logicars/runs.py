"""Opening a trained model from what the commands take: a run directory, a checkpoint
(`.safetensors`) or parameters in the fixture format (`.npz`)."""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from pathlib import Path

from .model import Model, PathLike
from .presets import PRESETS, Preset


@dataclass(frozen=True)
class LoadedRun:
    """A model, the preset it was trained on (None when unknown: `.npz` files, foreign
    checkpoints) and the directory outputs go to by default."""

    model: Model
    preset: Preset | None
    directory: Path


def load_run(path: PathLike) -> LoadedRun:
    """Loads a run directory (its `model.safetensors`), a checkpoint or an `.npz` file.

    Raises `FileNotFoundError` for a missing path, `CheckpointError` for a damaged
    checkpoint and `ValueError` for anything else unreadable.
    """
    from .checkpoint import load_checkpoint
    from .train import CHECKPOINT_NAME, TRAIN_STATE_KIND

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
    if extra.get("kind") == TRAIN_STATE_KIND:
        stored = extra.get("preset", {})
        known = PRESETS.get(str(stored.get("name")))
        if known is not None:
            # The preset as the run used it: its own spec and grid.
            preset = dataclasses.replace(
                known,
                spec=model.spec,
                height=int(stored.get("height", known.height)),
                width=int(stored.get("width", known.width)),
            )
    if preset is None:
        # A model saved on its own next to a run's summary.json (`Model.save`).
        known = PRESETS.get(str(_summary_preset(p.parent / "summary.json")))
        if known is not None:
            preset = dataclasses.replace(known, spec=model.spec)
    return LoadedRun(model, preset, p.parent)


def _summary_preset(path: Path) -> object:
    """The `preset` named by a run's summary.json, or None."""
    try:
        return json.loads(path.read_text()).get("preset")
    except (OSError, ValueError, AttributeError):
        return None
