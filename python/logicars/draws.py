"""Who draws from which random stream: one rule, so that the checks `evaluate` reports never
share an input, an update mask or a damage with training or the checks made during it.

- `Task.holdout(samples, seed)` draws start grids from `default_rng([seed, 2])`, and a
  check's async update masks come from the simulator's stream `seed`. The checks made
  during training (validation, confirmation, repair, drift search) use seeds below
  `EVALUATION_BASE`; `evaluate` uses `EVALUATION_BASE + seed`. No seed is both, so no draw
  of one is a draw of the other.
- Damage discs come from `default_rng([seed, DAMAGE_STREAM])` with the same split of seeds,
  and the larger grids of a pattern's *generalises* check from
  `default_rng([seed, GENERALISE_STREAM])`.
- Training draws its batches from the run's own generator (`default_rng(seed)`), and its
  pool picks and damages from `training_rng(seed, epoch)`: keyed by the epoch, so a run
  resumed from a checkpoint draws what the straight run draws.
"""

from __future__ import annotations

import numpy as np

EVALUATION_BASE = 1 << 32
DAMAGE_STREAM = 5
GENERALISE_STREAM = 11
TRAINING_STREAM = 7


def check_seed(seed: int) -> int:
    """A seed of a check made during training, refused when it would be `evaluate`'s."""
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):
        raise TypeError(f"seed must be an integer, got {seed!r}")
    if not 0 <= seed < EVALUATION_BASE:
        raise ValueError(f"a check's seed must be in [0, 2**32), got {seed}")
    return int(seed)


def evaluation_seed(seed: int) -> int:
    """The seed `evaluate` draws from for its `seed`: inputs, masks and damages that no
    check during training can draw."""
    return EVALUATION_BASE + check_seed(seed)


def damage_rng(seed: int) -> np.random.Generator:
    """The damage discs of a check with this (already split) seed."""
    return np.random.default_rng([seed, DAMAGE_STREAM])


def generalise_rng(seed: int) -> np.random.Generator:
    """The starts on a larger grid of a check with this (already split) seed."""
    return np.random.default_rng([seed, GENERALISE_STREAM])


def training_rng(seed: int, epoch: int) -> np.random.Generator:
    """Training's pool picks and damages at `epoch` of a run of `seed`."""
    return np.random.default_rng([seed, epoch, TRAINING_STREAM])
