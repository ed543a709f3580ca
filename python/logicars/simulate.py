"""`python -m logicars simulate`: run a trained circuit with the bit-sliced engine.

The start state follows the run's task (`logicars.tasks`): a grow task's fixed start
grid (the lizard's seed cell, the coloured G's zeros) centred on the requested grid, else
random bits. When the task has a target the summary compares with it by the task's
scoring rule: a Life-like rule applied `steps` times, a pattern (in any phase) at any
size, the grown image at the task's size.
"""

from __future__ import annotations

import numpy as np

from .presets import Preset
from .tasks import LifeTask, Task

# GIFs hold at most about this many frames (steps are sampled evenly).
_GIF_FRAMES = 100


def _task(preset: Preset | None) -> Task | None:
    """The preset's task, if it names one."""
    return preset.task() if preset is not None and preset.has_task() else None


def _fixed_start(preset: Preset | None) -> Task | None:
    """The preset's task when it starts from one fixed grid (a grown image)."""
    task = _task(preset)
    return task if task is not None and task.fixed_start else None


def start_grid(
    preset: Preset | None, channels: int, size: int, batch: int, seed: int
) -> np.ndarray:
    """The start state `(batch, size, size, C)` uint8 for a run of `preset`."""
    rng = np.random.default_rng(seed)
    grow = _fixed_start(preset)
    if grow is not None:
        x = grow.start(rng, 1, grow.height, grow.width)
        return np.repeat(_centred(x, size), batch, axis=0).astype(np.uint8)
    return rng.integers(0, 2, size=(batch, size, size, channels), dtype=np.uint8)


def _centred(x: np.ndarray, size: int) -> np.ndarray:
    """`x` `(B, H, W, C)` cropped or zero-padded to `size × size` around its centre cell."""
    b, h, w, c = x.shape
    out = np.zeros((b, size, size, c), dtype=x.dtype)
    # Source and destination windows that keep cell (h // 2, w // 2) at (size // 2, size // 2).
    src_r0, dst_r0 = max(0, h // 2 - size // 2), max(0, size // 2 - h // 2)
    src_c0, dst_c0 = max(0, w // 2 - size // 2), max(0, size // 2 - w // 2)
    rows = min(h - src_r0, size - dst_r0)
    cols = min(w - src_c0, size - dst_c0)
    out[:, dst_r0 : dst_r0 + rows, dst_c0 : dst_c0 + cols] = x[
        :, src_r0 : src_r0 + rows, src_c0 : src_c0 + cols
    ]
    return out


def target_grid(preset: Preset | None, x: np.ndarray, steps: int) -> np.ndarray | None:
    """The grid a run of `preset` should reach from `x` after `steps` steps, on the loss
    channels `(B, H, W, len(loss_channels))`, or None when there is no fixed target."""
    task = _task(preset)
    if isinstance(task, LifeTask):
        return task.target(x, steps)
    if task is None:
        return None
    if task.fixed_target or (steps == task.num_steps and x.shape[1:3] == (task.height, task.width)):
        return task.target(x)
    return None  # a custom task's target after its own steps, on its own grid only
