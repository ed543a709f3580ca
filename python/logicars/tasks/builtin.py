"""The three kinds of the paper's experiments: a Life-like rule, a periodic pattern and
a grown image."""

from __future__ import annotations

from typing import Any

import numpy as np

from .base import Task
from .data import (
    CONWAY,
    LIFE_BOARDS,
    check_tile,
    life_board_index,
    life_boards,
    life_step,
    normalise_rule,
    random_bits,
    seed_grid,
)


class LifeTask(Task):
    """A Life-like rule (outer-totalistic, Moore neighbourhood, periodic wrap): the CA
    applies it once per step to channel 0. On 3x3 boards the starts are the 512 boards
    (a batch draws board indices uniformly with replacement, as the notebook's
    `sample_batch`) and the held-out check runs all 512; other grids get random bits."""

    kind = "life"

    def __init__(self, rule: str = CONWAY, **geometry: Any) -> None:
        self.rule = normalise_rule(rule)
        geometry.setdefault("periodic", True)
        super().__init__(f"life:{self.rule}", **geometry)
        self._boards = life_boards()
        # Each 3x3 board's next state, looked up by its index: what every training batch
        # and check asks for, at a fraction of `life_step`'s cost on the notebook's boards.
        self._next_boards = life_step(self._boards, self.rule)

    @property
    def random_starts(self) -> bool:
        return (self.height, self.width) != (3, 3)

    def start(self, rng: np.random.Generator, batch: int, h: int, w: int) -> np.ndarray:
        x = np.zeros((batch, h, w, self.channels), dtype=np.float32)
        if (h, w) == (3, 3):
            x[..., 0] = self._boards[rng.integers(0, LIFE_BOARDS, size=batch), ..., 0]
        else:
            x[..., 0] = random_bits(rng, (batch, h, w))
        return x

    def target(self, x: np.ndarray, steps: int | None = None) -> np.ndarray:
        """The rule applied `steps` (default: the task's) times to channel 0."""
        y = np.asarray(x)[..., :1].astype(np.float32)
        for _ in range(self.num_steps if steps is None else steps):
            if y.shape[1:3] == (3, 3):
                y = self._next_boards[life_board_index(y)]
            else:
                y = life_step(y, self.rule)
        return y

    def holdout(self, samples: int = 16, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
        if self.random_starts:
            return super().holdout(samples, seed)
        boards = self._boards
        x = np.zeros(boards.shape[:3] + (self.channels,), dtype=np.uint8)
        x[..., 0] = boards[..., 0]
        return x, self.target(boards) > 0.5

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "rule": self.rule, **self._geometry()}


class PatternTask(Task):
    """Self-organise from random bits (every channel) into a periodic tile on channel 0
    (the loss channel), anchored at the top-left corner for training and counted right
    in any phase (any cyclic shift of the tile) when scored."""

    kind = "pattern"

    def __init__(self, tile: np.ndarray, name: str = "pattern", **geometry: Any) -> None:
        tile = np.asarray(tile, dtype=np.float32)
        if tile.ndim != 2 or tile.size == 0:
            raise ValueError(f"a pattern's tile must be a 2-D array of bits, got {tile.shape}")
        check_tile(tile.shape, f"task {name!r}: the pattern's tile")
        self.tile = (tile > 0.5).astype(np.float32)
        # accepted()'s phases per grid size: a repair scores thousands of candidates on
        # one size, and rolling and tiling the tile for each took a seventh of its time.
        self._phases: dict[tuple[int, int], list[np.ndarray]] = {}
        super().__init__(name, **geometry)
        if len(self.loss_channels) != 1:
            raise ValueError("a pattern task has one loss channel")

    @property
    def fixed_target(self) -> bool:
        return True

    def start(self, rng: np.random.Generator, batch: int, h: int, w: int) -> np.ndarray:
        return random_bits(rng, (batch, h, w, self.channels))

    def pattern(self, h: int, w: int, shift: tuple[int, int] = (0, 0)) -> np.ndarray:
        """The tile repeated over an (h, w) grid from the top-left corner, shifted by
        `shift` cells: (h, w) float32."""
        tile = np.roll(self.tile, shift, axis=(0, 1))
        th, tw = tile.shape
        return np.tile(tile, (-(-h // th), -(-w // tw)))[:h, :w]

    def target(self, x: np.ndarray) -> np.ndarray:
        b, h, w = np.asarray(x).shape[:3]
        return np.broadcast_to(self.pattern(h, w)[None, ..., None], (b, h, w, 1))

    def accepted(self, target: np.ndarray) -> list[np.ndarray]:
        h, w = target.shape[1:3]
        if (h, w) not in self._phases:
            th, tw = self.tile.shape
            seen: dict[bytes, np.ndarray] = {}
            for shift in [(r, c) for r in range(th) for c in range(tw)]:
                phase = self.pattern(h, w, shift) > 0.5
                seen.setdefault(phase.tobytes(), phase)
            phases = [p[None, ..., None] for p in seen.values()]
            for phase in phases:
                phase.flags.writeable = False  # shared by every call
            self._phases[(h, w)] = phases
        return list(self._phases[(h, w)])

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "name": self.name,
            "tile": self.tile.astype(int).tolist(),
            **self._geometry(),
        }


# What a growth task asks of its circuit (`GrowTask.growth`): the paper's growing only
# (the target at step T), persisting (and holding it, trained on a sample pool of its own
# later states), or regenerating (and regrowing it after damage).
GROWTH_MODES = ("grow", "persist", "regrow")


class GrowTask(Task):
    """Grow a fixed image on the loss channels from one start: the centre cell's
    channels set (`seed_cell`, the lizard's) or all zeros (the coloured G's). The target
    exists on the image's grid only. `growth` (`GROWTH_MODES`) says whether the circuit
    must also hold the target once grown, and regrow it after damage
    (`logicars.growth`)."""

    kind = "grow"

    def __init__(
        self,
        image: np.ndarray,
        name: str = "grow",
        seed_cell: bool = True,
        growth: str = "grow",
        **geometry: Any,
    ) -> None:
        if growth not in GROWTH_MODES:
            raise ValueError(f"growth must be one of {', '.join(GROWTH_MODES)}, got {growth!r}")
        self.growth = growth
        image = np.asarray(image, dtype=np.float32)
        if image.ndim == 2:
            image = image[..., None]
        if image.ndim != 3 or image.size == 0:
            raise ValueError(f"a grow task's image must be (H, W) or (H, W, L), got {image.shape}")
        self.image = (image > 0.5).astype(np.float32)
        self.seed_cell = bool(seed_cell)
        geometry.setdefault("height", image.shape[0])
        geometry.setdefault("width", image.shape[1])
        geometry.setdefault("loss_channels", list(range(image.shape[2])))
        super().__init__(name, **geometry)
        if (self.height, self.width, len(self.loss_channels)) != self.image.shape:
            raise ValueError(
                f"task {self.name!r}: a {self.image.shape} image needs a "
                f"{self.image.shape[0]}x{self.image.shape[1]} grid and {self.image.shape[2]} "
                f"loss channels, got {self.height}x{self.width} and {self.loss_channels}"
            )

    @property
    def random_starts(self) -> bool:
        return False

    @property
    def fixed_start(self) -> bool:
        return True

    @property
    def fixed_target(self) -> bool:
        return True

    def start(self, rng: np.random.Generator, batch: int, h: int, w: int) -> np.ndarray:
        if self.seed_cell:
            return seed_grid(h, w, self.channels, batch)
        return np.zeros((batch, h, w, self.channels), dtype=np.float32)

    def target(self, x: np.ndarray) -> np.ndarray | None:
        b, h, w = np.asarray(x).shape[:3]
        if (h, w) != self.image.shape[:2]:
            return None
        return np.broadcast_to(self.image[None], (b,) + self.image.shape)

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "name": self.name,
            "image": self.image.astype(int).tolist(),
            "seed_cell": self.seed_cell,
            "growth": self.growth,
            **self._geometry(),
        }
