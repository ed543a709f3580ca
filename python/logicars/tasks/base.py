"""`Task`: what every task is (`logicars.tasks`' docstring) and the one scoring rule
its subclasses share."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any, Union

import numpy as np

PathLike = Union[str, "os.PathLike[str]"]


class Task:
    """One experiment: its grid, steps, update mode, data and scoring (module docstring).

    A subclass implements `start` and `target`; the rest follows. `name` labels runs;
    `channels` must be the model's. `loss_channels`, `num_steps`, `periodic` and
    `fire_rate` (None: synchronous updates) are the task's own and win over a spec's:
    `train(task, spec=...)` trains `spec` with them replaced by the task's, and
    `evaluate`, `simulate` and `repair` run any model for the task's steps on its
    boundary (a model from an .npz may have other ones). `height`, `width` and `batch`
    are the training grid and batch.
    """

    # What `to_dict` records (`make_task` rebuilds a kind from it); "custom": a subclass.
    kind = "custom"

    def __init__(
        self,
        name: str,
        *,
        channels: int,
        height: int,
        width: int,
        batch: int = 1,
        loss_channels: Sequence[int] = (0,),
        num_steps: int = 1,
        periodic: bool = False,
        fire_rate: float | None = None,
    ) -> None:
        self.name = str(name)
        self.channels = _at_least(self.name, "channels", channels, 1)
        self.height = _at_least(self.name, "height", height, 1)
        self.width = _at_least(self.name, "width", width, 1)
        self.batch = _at_least(self.name, "batch", batch, 1)
        self.num_steps = _at_least(self.name, "num_steps", num_steps, 0)
        self.loss_channels = [int(c) for c in loss_channels]
        self.periodic = bool(periodic)
        self.fire_rate = None if fire_rate is None else float(fire_rate)
        if not self.loss_channels or not all(0 <= c < self.channels for c in self.loss_channels):
            raise ValueError(
                f"task {self.name!r}: loss_channels {self.loss_channels} must be channels "
                f"of 0..{self.channels - 1}"
            )

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}({self.name!r}, {self.height}x{self.width}x{self.channels}, "
            f"batch {self.batch}, {self.num_steps} steps)"
        )

    # -- what a subclass defines --

    def start(self, rng: np.random.Generator, batch: int, h: int, w: int) -> np.ndarray:
        """Start grids `(batch, h, w, channels)` float32 0/1."""
        raise NotImplementedError(f"{type(self).__name__} must define start(rng, batch, h, w)")

    def target(self, x: np.ndarray) -> np.ndarray | None:
        """What the CA should reach from `x` `(B, H, W, C)` after `num_steps` steps, on the
        loss channels `(B, H, W, len(loss_channels))` float32; None where the task has no
        target on that grid."""
        raise NotImplementedError(f"{type(self).__name__} must define target(x)")

    # -- derived --

    @property
    def random_starts(self) -> bool:
        """Whether the starts are random (the held-out check then draws fresh ones)."""
        return True

    @property
    def fixed_start(self) -> bool:
        """Whether every run starts from the same grid (a grown image's seed)."""
        return False

    @property
    def fixed_target(self) -> bool:
        """Whether the target does not depend on the start (a pattern or an image), so it
        can be compared with at every step of a rollout."""
        return False

    def sample(
        self, rng: np.random.Generator, batch: int | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """One training batch `(x, y)`, both `(B, H, W, C)` float32 on the task's grid; y
        holds the target on the loss channels and 0 elsewhere (the loss reads only those)."""
        x = self.start(rng, self.batch if batch is None else batch, self.height, self.width)
        target = self.target(x)
        if target is None:
            raise ValueError(f"task {self.name!r} has no target on its own grid")
        y = np.zeros(x.shape, dtype=np.float32)
        y[..., self.loss_channels] = target
        return x, y

    def holdout(self, samples: int = 16, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
        """The held-out check's inputs `(N, H, W, C)` and targets on the loss channels
        `(N, H, W, L)` bool: about `samples` fresh starts (whole batches) drawn from
        `seed`, or the one start when the task's start is fixed."""
        rng = np.random.default_rng([seed, 2])
        draws = -(-samples // self.batch) if self.random_starts else 1
        pairs = [self.sample(rng) for _ in range(draws)]
        x = np.concatenate([p[0] for p in pairs])
        y = np.concatenate([p[1] for p in pairs])[..., self.loss_channels]
        return x, y > 0.5

    def accepted(self, target: np.ndarray) -> list[np.ndarray]:
        """Every grid `(B, H, W, L)` that counts as reaching `target` (just the target;
        a periodic pattern accepts every phase)."""
        return [target]

    def wrong(self, out: np.ndarray, target: np.ndarray) -> np.ndarray:
        """The wrong loss-channel cells of each grid of `out` `(N, H, W, C)` against
        `target` `(N or 1, H, W, L)`, in the accepted grid each gets closest to: bool
        `(N, H, W, L)`. The one scoring rule of training, `evaluate` and `simulate`."""
        got = np.asarray(out)[..., self.loss_channels] > 0.5
        best: np.ndarray | None = None
        best_count: np.ndarray | None = None
        for option in self.accepted(np.asarray(target) > 0.5):
            wrong = np.broadcast_to(got != option, got.shape)
            count = wrong.reshape(len(wrong), -1).sum(axis=1)
            if best is None or best_count is None:
                best, best_count = wrong, count
            else:
                better = count < best_count
                best = np.where(better[:, None, None, None], wrong, best)
                best_count = np.minimum(count, best_count)
        assert best is not None
        return np.ascontiguousarray(best)

    def cell_error(
        self, grids: np.ndarray, target: np.ndarray, region: np.ndarray | None = None
    ) -> np.ndarray:
        """The fraction of cells whose loss channels differ from the target anywhere, in
        the accepted grid closest to each: `grids` `(..., H, W, C)`, `target` `(H, W, L)`,
        `region` an optional `(H, W)` bool mask; an array of the leading shape."""
        options = self.accepted(np.asarray(target)[None])
        errors = [_cell_error(grids, o[0], self.loss_channels, region) for o in options]
        return np.minimum.reduce(errors)

    # -- record --

    def to_dict(self) -> dict[str, Any]:
        """What a run directory records of the task (`task_from_dict` rebuilds the kinds;
        a custom subclass records its class name only)."""
        return {
            "kind": self.kind,
            "name": self.name,
            "class": f"{type(self).__module__}.{type(self).__qualname__}",
            **self._geometry(),
        }

    def _geometry(self) -> dict[str, Any]:
        return {
            "channels": self.channels,
            "height": self.height,
            "width": self.width,
            "batch": self.batch,
            "loss_channels": list(self.loss_channels),
            "num_steps": self.num_steps,
            "periodic": self.periodic,
            "fire_rate": self.fire_rate,
        }


def _at_least(task: str, field: str, value: Any, lo: int) -> int:
    """An integer option of a task, checked (booleans and fractions refused)."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < lo:
        raise ValueError(f"task {task!r}: {field} must be an integer >= {lo}, got {value!r}")
    return int(value)


def _cell_error(
    grids: np.ndarray,
    target: np.ndarray,
    loss_channels: Sequence[int],
    region: np.ndarray | None = None,
) -> np.ndarray:
    wrong = np.any(np.asarray(grids)[..., list(loss_channels)] != target, axis=-1)
    if region is not None:
        return wrong[..., region].sum(axis=-1) / max(1, int(region.sum()))
    return wrong.mean(axis=(-2, -1))
