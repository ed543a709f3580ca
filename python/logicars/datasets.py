"""The notebook's data helpers under their former names; everything here now lives in
`logicars.tasks`, where each experiment's data and scoring is one `Task`
(`Preset.task()`)."""

from __future__ import annotations

import numpy as np

from .tasks import (
    LIFE_BOARDS,
    checkerboard_target,
    colored_g_target,
    life_boards,
    life_step,
    lizard_target,
    random_bits,
    seed_grid,
)

GOL_BOARDS = LIFE_BOARDS


def gol_boards() -> np.ndarray:
    """All 512 binary 3x3 boards (`tasks.life_boards`)."""
    return life_boards()


def gol_step(boards: np.ndarray) -> np.ndarray:
    """One Game of Life step (B3/S23) with periodic wrap (`tasks.life_step`)."""
    return life_step(boards)


__all__ = [
    "GOL_BOARDS",
    "checkerboard_target",
    "colored_g_target",
    "gol_boards",
    "gol_step",
    "lizard_target",
    "random_bits",
    "seed_grid",
]
