"""How well a trained hard circuit does its preset's task, on data it was not trained on.

The training loss is measured on one batch per epoch; `evaluate` asks the question a user
has after training: does the discrete circuit solve the task?

- `gol`: all 512 boards; a board counts as solved when its next state is exact.
- `checkerboard`, `checkerboard-async`: `samples` fresh random starts (async ones with
  fresh update masks); a sample counts as solved when channel 0 is the exact pattern
  after the preset's steps.
- `lizard`, `colored-g`: the preset's own start grid (their task has one); solved when
  the loss channels equal the target image exactly.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .datasets import gol_boards, gol_step, make_dataset
from .model import Model, check_int
from .presets import Preset


def evaluate(model: Model, preset: Preset, samples: int = 16, seed: int = 0) -> dict[str, Any]:
    """Runs the hard circuit (bit-sliced, exact) on held-out inputs of `preset`'s task.

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


def heldout_inputs(
    model: Model, preset: Preset, samples: int = 16, seed: int = 0
) -> tuple[np.ndarray, np.ndarray]:
    """The inputs `evaluate` runs and their targets on the loss channels, as booleans:
    `(x (N, H, W, C) uint8, target (N, H, W, len(loss_channels)) bool)`."""
    samples = check_int("samples", samples, 1)
    if model.spec.channels != preset.spec.channels:
        raise ValueError(
            f"model has {model.spec.channels} channels, preset {preset.name!r} needs "
            f"{preset.spec.channels}"
        )
    if preset.name == "gol":
        boards = gol_boards()
        x = np.zeros(boards.shape[:3] + (model.spec.channels,), dtype=np.uint8)
        x[..., 0] = boards[..., 0]
        return x, gol_step(boards) > 0.5
    dataset = make_dataset(preset)
    rng = np.random.default_rng([seed, 2])
    draws = -(-samples // preset.batch) if _random_starts(preset) else 1
    pairs = [dataset.sample(rng) for _ in range(draws)]
    x = np.concatenate([p[0] for p in pairs])
    target = np.concatenate([p[1] for p in pairs])[..., model.spec.loss_channels]
    return x, target > 0.5


def wrong_cells(
    model: Model, preset: Preset, x: np.ndarray, target: np.ndarray, seed: int = 0
) -> np.ndarray:
    """Where the hard circuit run from `x` for the task's steps (async masks drawn from
    `seed`) differs from `target` on the loss channels: a boolean array of its shape."""
    # The task's steps and boundary (a model may come with other ones, e.g. from an .npz).
    out = model.simulate(x, preset.spec.num_steps, seed=seed, periodic=preset.spec.periodic)
    return out[..., model.spec.loss_channels] != target


def _random_starts(preset: Preset) -> bool:
    return preset.name.startswith("checkerboard")
