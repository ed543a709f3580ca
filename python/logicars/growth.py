"""Growth that holds and heals: the checks of a grown pattern, the random damage they and
training use, and the sample pool of persistent training.

A growth task (`GrowTask`) starts every run from one grid, so its circuit is scored on
what it does after the trained step, where training never looked:

- *grown*: the loss channels equal the target at the task's step T;
- *persists*: they equal it at every step from T to `PERSIST_HORIZON` x T; how long the
  pattern holds is reported up to `REPORT_HORIZON` x T;
- *regrows*: the grown pattern, damaged by a disc erased in every channel
  (`damage_discs`), is the target again T steps later; the share of fresh damages for
  which it is.
- *grows without its seed* (reported, never required; a task whose start grid is a seed
  cell): the target at step T from an empty grid. On a zero-padded boundary a circuit can
  read where it is from the edges and draw the target from the frame, ignoring the seed:
  this says whether it does.

Damage discs and pool draws come from `numpy` streams keyed by purpose
(`logicars.draws`), so training's draws and the checks' never coincide.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from . import draws

# The checks' horizons, in multiples of the task's steps T.
PERSIST_HORIZON = 4
REPORT_HORIZON = 10
# A damage disc's radius as a share of the grid's shorter side (4 cells on the lizard's
# 20x20 grid, 3.2 on the G's 16x16): about a sixth of the lizard's cells.
DAMAGE_RADIUS = 0.2
# Fresh damages of the regrows check in `evaluate`.
REGROW_DAMAGES = 100


def damage_discs(
    rng: np.random.Generator, target: np.ndarray, count: int, radius: float = DAMAGE_RADIUS
) -> np.ndarray:
    """`count` damage masks `(count, H, W)` uint8 (1 = erased): discs of `radius` times the
    grid's shorter side, each centred on a cell the target `(H, W, L)` sets (anywhere when
    it sets none), so that every disc cuts the pattern."""
    target = np.asarray(target) > 0.5
    h, w = target.shape[:2]
    live = np.argwhere(target.reshape(h, w, -1).any(axis=-1))
    if len(live) == 0:
        live = np.argwhere(np.ones((h, w), dtype=bool))
    picked = live[rng.integers(0, len(live), size=count)]
    # A sub-cell offset, so that discs are not all symmetric about a cell centre.
    centres = picked + rng.uniform(-0.5, 0.5, size=(count, 2))
    r = radius * min(h, w)
    rows, cols = np.mgrid[:h, :w]
    dist2 = (rows[None] - centres[:, 0, None, None]) ** 2 + (
        cols[None] - centres[:, 1, None, None]
    ) ** 2
    return (dist2 <= r * r).astype(np.uint8)


@dataclass(frozen=True)
class GrowthChecks:
    """What a growth circuit does from its start grid (module docstring).

    `wrong_by_step[t]`: wrong loss-channel cells at step t, for t = 0..`REPORT_HORIZON` T.
    `holds_until`: the last step through which the pattern has held since T (T - 1 when it
    is wrong at T; `REPORT_HORIZON` T when it holds to the end). `regrown` of `damages`:
    damaged grown patterns that were the target again T steps later. `grows_without_seed`:
    whether an empty grid is the target at T too (None when the start grid has no seed
    cell to leave out).
    """

    steps: int
    grown: bool
    persists: bool
    holds_until: int
    regrown: int
    damages: int
    wrong_by_step: list[int]
    grows_without_seed: bool | None = None

    @property
    def regrow_share(self) -> float:
        return self.regrown / self.damages if self.damages else 0.0

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def wrong_by_step(model: Any, task: Any, horizon: int) -> list[int]:
    """Wrong loss-channel cells of the hard circuit run from the task's start grid, at every
    step 0..`horizon`."""
    x = task.start(np.random.default_rng(0), 1, task.height, task.width).astype(np.uint8)
    grids = model.simulate(x, horizon, record=True, periodic=task.periodic)
    target = task.target(x)
    return [int(np.count_nonzero(task.wrong(g, target))) for g in grids]


def grows_without_seed(model: Any, task: Any) -> bool | None:
    """Whether the hard circuit run from an empty grid (the start grid without its seed
    cell) is the target at step T; None when the task's start grid has no seed cell."""
    if not getattr(task, "seed_cell", False):
        return None
    x = np.zeros((1, task.height, task.width, task.channels), dtype=np.uint8)
    out = model.simulate(x, task.num_steps, periodic=task.periodic)
    return not task.wrong(out, task.target(x)).any()


def holds_target(task: Any) -> bool:
    """Whether the task's check asks a grown pattern to hold (a growth task trained to
    persist or regrow)."""
    return getattr(task, "growth", "grow") != "grow"


def held_score(model: Any, task: Any) -> tuple[int, int]:
    """(wrong loss-channel cells at step T, summed over steps T..`PERSIST_HORIZON` T) from
    the start grid, from one run of the circuit: what a repair of a persisting or
    regenerating run compares, in that order."""
    steps = task.num_steps
    wrong = wrong_by_step(model, task, PERSIST_HORIZON * steps)
    return wrong[steps], sum(wrong[steps:])


def wrong_while_held(model: Any, task: Any) -> int:
    """Wrong loss-channel cells summed over steps T..`PERSIST_HORIZON` T from the start
    grid: how far a circuit is from persisting (0: it does; a circuit right at T alone
    scores its later steps' wrong cells)."""
    return held_score(model, task)[1]


def regrown(model: Any, task: Any, masks: np.ndarray) -> np.ndarray:
    """For each damage mask `(N, H, W)`: whether the pattern grown from the start grid, erased
    there after step T, is the target T steps later; bool `(N,)`."""
    steps = task.num_steps
    x = task.start(np.random.default_rng(0), len(masks), task.height, task.width)
    out = model.simulate(
        x.astype(np.uint8),
        2 * steps,
        damage=masks,
        damage_steps=(steps - 1, steps),
        periodic=task.periodic,
    )
    wrong = task.wrong(out, task.target(x))
    return ~wrong.reshape(len(masks), -1).any(axis=1)


def growth_checks(
    model: Any,
    task: Any,
    damage_rng: np.random.Generator,
    damages: int,
    horizon: int = REPORT_HORIZON,
) -> GrowthChecks:
    """The grown, persists and regrows checks of a growth task's hard circuit, run to
    `horizon` x T, with `damages` damage discs drawn from `damage_rng`."""
    steps = task.num_steps
    wrong = wrong_by_step(model, task, max(horizon, PERSIST_HORIZON) * steps)
    holds_until = steps - 1
    while holds_until + 1 < len(wrong) and wrong[holds_until + 1] == 0:
        holds_until += 1
    restored = 0
    if damages:
        masks = damage_discs(damage_rng, task.image, damages)
        restored = int(np.count_nonzero(regrown(model, task, masks)))
    return GrowthChecks(
        steps=steps,
        grown=wrong[steps] == 0,
        persists=holds_until >= PERSIST_HORIZON * steps,
        holds_until=holds_until,
        regrown=restored,
        damages=damages,
        wrong_by_step=wrong,
        grows_without_seed=grows_without_seed(model, task),
    )


# Persistent and regenerating training (`GrowthBatches`): the pool of earlier end states,
# the batch drawn from it each epoch, and the damaged samples in each batch (regrow).
POOL_SIZE = 32
POOL_BATCH = 4
DAMAGED_PER_BATCH = 1
# How the states after T that the pool phase's loss reads are chosen (`GrowthBatches`).
HOLD_SCHEDULES = ("fixed", "grow")
# With a hold tolerance: the pool epochs whose median hard loss may lengthen the hold.
HOLD_WINDOW = 100


class GrowthBatches:
    """The training batches of a growth task (`GrowTask.growth`).

    Growing only: the start grid every epoch, the loss at step T (the paper's).

    Persisting and regenerating, in two phases. First the circuit learns to grow, as
    above. From the first epoch whose hard circuit grows the target (hard loss 0), the
    Growing-NCA recipe adapted to circuits: a pool of `pool_size` grids, seeded with the
    start grid, holds the hard circuit's states T steps after earlier batches; each epoch
    draws `batch` of them, puts the start grid in place of the one furthest from the
    target, and (regrow) erases a damage disc in every channel of the `damaged` closest
    ones. The loss is at step T of each, so the grown pattern must come back to the target
    T steps later: it becomes an attractor. With rollouts of T steps the pool's grids are
    all at multiples of T, and a circuit can pass the target only there; `max_steps` > T
    draws each batch's rollout length from T to `max_steps`, the loss at its last step, so
    the pool holds grids of every age and the pattern must hold in between too. `hold` > 0
    also puts the loss on the `hold` steps after that; with `hold_schedule="grow"` on
    0 steps at first and one more after each epoch whose hard circuit is exact on all of
    them, up to `hold` (a curriculum: a grown circuit asked at once to hold the target for
    T more steps tends to lose its growth), and with `hold_tolerance` also after
    `HOLD_WINDOW` epochs whose median hard loss is at most that. `batch` 1 trains on the
    start grid alone.
    Draws are keyed by seed and epoch (`draws.training_rng`); the pool and the current
    hold are part of the checkpoint (`state`, `load_state`).
    """

    def __init__(
        self,
        task: Any,
        seed: int,
        pool_size: int = POOL_SIZE,
        batch: int = POOL_BATCH,
        damaged: int = DAMAGED_PER_BATCH,
        hold: int = 0,
        max_steps: int | None = None,
        hold_schedule: str = "fixed",
        hold_tolerance: float | None = None,
    ) -> None:
        self.task = task
        self.seed = int(seed)
        self.start, self.target_y = task.sample(np.random.default_rng(0), 1)
        self.pool_size, self.pool_batch = pool_size, batch
        self.damaged = damaged if task.growth == "regrow" else 0
        self.num_steps = task.num_steps
        self.max_steps = task.num_steps if max_steps is None else int(max_steps)
        self.loss_from = task.num_steps  # the batch's rollout length, drawn by `sample`
        if hold_schedule not in HOLD_SCHEDULES:
            raise ValueError(
                f"hold_schedule must be one of {HOLD_SCHEDULES}, got {hold_schedule!r}"
            )
        self.hold_max, self.hold_grows = hold, hold_schedule == "grow"
        self.hold = 0 if self.hold_grows else hold  # the states after T the loss reads now
        self.hold_tolerance = hold_tolerance
        self.recent: list[float] = []  # the pool epochs' hard losses since the hold last grew
        self.pooling_from: int | None = None  # the epoch the pool phase began after
        self.pool: np.ndarray | None = None
        self.drawn: np.ndarray | None = None
        if task.growth != "grow" and not 0 <= self.damaged < batch <= pool_size:
            raise ValueError(
                f"a growth pool needs 0 <= damaged ({self.damaged}) < batch ({batch}) "
                f"<= pool size ({pool_size})"
            )
        if self.max_steps < self.num_steps:
            raise ValueError(
                f"the pool's longest rollout ({self.max_steps} steps) is shorter than the "
                f"task's {self.num_steps}"
            )

    @property
    def pooling(self) -> bool:
        return self.pool is not None

    @property
    def steps(self) -> int:
        """The rollout's steps; the loss reads the states from `loss_from` on."""
        return self.loss_from + (self.hold if self.pooling else 0)

    def sample(self, epoch: int) -> tuple[np.ndarray, np.ndarray]:
        """The batch `(x, y)` of `epoch`: float32 `(B, H, W, C)`."""
        if self.pool is None:
            return np.repeat(self.start, self.task.batch, axis=0), np.repeat(
                self.target_y, self.task.batch, axis=0
            )
        y = np.repeat(self.target_y, self.pool_batch, axis=0)
        rng = draws.training_rng(self.seed, epoch)
        picked = rng.choice(len(self.pool), self.pool_batch, replace=False)
        grids = self.pool[picked]
        if self.max_steps > self.num_steps:
            self.loss_from = int(rng.integers(self.num_steps, self.max_steps + 1))
        loss_channels = self.task.loss_channels
        wrong = grids[..., loss_channels] != y[..., loss_channels]
        # Furthest from the target first: it makes way for the start grid.
        order = np.argsort(-wrong.reshape(len(grids), -1).sum(axis=1), kind="stable")
        self.drawn = picked[order]
        x = grids[order].astype(np.float32)
        x[0] = self.start[0]
        if self.damaged:
            masks = damage_discs(rng, self.task.image, self.damaged)
            x[len(x) - self.damaged :] *= 1 - masks[..., None]
        return x, y

    def keep(self, epoch: int, hard_loss: float, last: np.ndarray | None) -> None:
        """After the step of `epoch`: the pool keeps the hard circuit's last states of the
        batch `sample` drew; a circuit that grows the target starts the pool phase."""
        if self.pool is not None:
            if self.drawn is not None and last is not None:
                self.pool[self.drawn] = last > 0.5
            self.drawn = None
            if self.hold_grows and hard_loss == 0:
                self.hold = min(self.hold_max, self.hold + 1)
            self._near_enough(hard_loss)
        elif self.task.growth != "grow" and hard_loss == 0:
            self._start_pool(epoch)

    def _near_enough(self, hard_loss: float) -> None:
        """With a hold tolerance: the hold one longer after `HOLD_WINDOW` pool epochs whose
        median hard loss per held step is at most the tolerance (the lizard's pool phase
        spends thousands of epochs a cell or two off, and its exact epochs are rare)."""
        if self.hold_tolerance is None or not self.hold_grows or self.hold >= self.hold_max:
            return
        self.recent = [*self.recent[-(HOLD_WINDOW - 1) :], float(hard_loss)]
        if len(self.recent) == HOLD_WINDOW and np.median(self.recent) <= self.hold_tolerance:
            self.hold += 1
            self.recent = []

    def reset(self) -> None:
        """A fresh wiring learns to grow again: back to the start grid alone."""
        self.pool, self.pooling_from, self.drawn = None, None, None
        self.recent = []
        self.loss_from = self.num_steps
        self.hold = 0 if self.hold_grows else self.hold_max

    def _start_pool(self, epoch: int) -> None:
        self.pooling_from = epoch
        self.pool = np.repeat(self.start.astype(np.uint8), self.pool_size, axis=0)

    def state(self) -> dict[str, Any]:
        """What a checkpoint keeps: the epoch the pool began after, the grids as bits and
        the current hold."""
        if self.pool is None:
            return {}
        return {
            "pooling_from": self.pooling_from,
            "pool": np.packbits(self.pool, axis=-1),
            "hold": self.hold,
            "recent": np.asarray(self.recent, dtype=np.float64),
        }

    def load_state(self, state: dict[str, Any]) -> None:
        if "pool" not in state:
            return
        self._start_pool(int(state["pooling_from"]))
        assert self.pool is not None
        pool = np.unpackbits(state["pool"], axis=-1, count=self.pool.shape[-1])
        if pool.shape != self.pool.shape:
            raise ValueError(f"the checkpoint's pool is {pool.shape}, the task's {self.pool.shape}")
        self.pool = pool
        if "hold" in state:  # pools saved before the hold schedule held the fixed hold
            self.hold = int(state["hold"])
        self.recent = [float(v) for v in state.get("recent", ())]
