"""How well a trained hard circuit does its task, on data it was not trained on.

The training loss is measured on one batch per epoch; `evaluate` asks the question a user
has after training: does the discrete circuit solve the task? The task
(`Preset.task()`, see `logicars.tasks`) says which inputs and how they are scored:

- a Life-like rule (`gol`, `life:RULE`): all 512 boards; a board counts as solved when
  its next state is exact;
- a pattern (`checkerboard`, `checkerboard-async`, `pattern:...`): `samples` fresh random
  starts (async ones with fresh update masks); a sample counts as solved when channel 0
  is the pattern, in any phase, after the task's steps;
- a grown image (`lizard`, `colored-g`, `grow:...`): the task's own start grid; solved
  when the loss channels equal the target image exactly.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .model import Model, check_int
from .presets import Preset
from .tasks import Task


def evaluate(
    model: Model, preset: Preset | Task, samples: int = 16, seed: int = 0
) -> dict[str, Any]:
    """Runs the hard circuit (bit-sliced, exact) on held-out inputs of the task of
    `preset` (a `Preset` or a `Task`).

    Returns `{"samples", "solved", "wrong_cells", "cells"}`: how many inputs were run, how
    many gave exactly the target, and the wrong cells (on the loss channels) over all.
    """
    x, target = heldout_inputs(model, preset, samples, seed)
    wrong = wrong_cells(model, preset, x, target, seed)
    per_sample = wrong.reshape(len(x), -1).any(axis=1)
    return {
        "samples": len(x),
        "solved": int(np.count_nonzero(~per_sample)),
        "wrong_cells": int(np.count_nonzero(wrong)),
        "cells": int(wrong.size),
    }


def _task(preset: Preset | Task) -> Task:
    return preset if isinstance(preset, Task) else preset.task()


def heldout_inputs(
    model: Model, preset: Preset | Task, samples: int = 16, seed: int = 0
) -> tuple[np.ndarray, np.ndarray]:
    """The inputs `evaluate` runs and their targets on the loss channels, as booleans:
    `(x (N, H, W, C), target (N, H, W, len(loss_channels)) bool)` (`Task.holdout`)."""
    samples = check_int("samples", samples, 1)
    task = _task(preset)
    if model.spec.channels != task.channels:
        raise ValueError(
            f"model has {model.spec.channels} channels, task {task.name!r} needs {task.channels}"
        )
    return task.holdout(samples, seed)


def wrong_cells(
    model: Model, preset: Preset | Task, x: np.ndarray, target: np.ndarray, seed: int = 0
) -> np.ndarray:
    """Where the hard circuit run from `x` for the task's steps (async masks drawn from
    `seed`) differs from `target` on the loss channels, by the task's scoring rule (a
    pattern in the phase closest to it): a boolean array of its shape."""
    task = _task(preset)
    # The task's steps and boundary (a model may come with other ones, e.g. from an .npz).
    out = model.simulate(x, task.num_steps, seed=seed, periodic=task.periodic)
    return task.wrong(out, target)
