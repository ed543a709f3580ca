"""Training data for the presets: start grids and targets, as the reference notebook makes them.

Pure numpy and Pillow, so it works without the compiled engine. Grids are float32 0/1
arrays shaped (B, H, W, C). A dataset's `sample(rng)` returns `(x, y)`: the start grid and
a grid holding the target on the preset's loss channels and 0 elsewhere (the loss only
reads the loss channels). All randomness comes from the Generator passed in.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from importlib import resources

import numpy as np
from PIL import Image

from .presets import Preset

GOL_BOARDS = 512

_NEIGHBOURS = [(dr, dc) for dr in (-1, 0, 1) for dc in (-1, 0, 1) if (dr, dc) != (0, 0)]


def gol_boards() -> np.ndarray:
    """All 512 binary 3x3 boards, shape (512, 3, 3, 1) float32.

    Board i's cell (r, c) is bit `r * 3 + c` of i (least significant bit = top-left
    cell). The notebook enumerates the same set most-significant-bit first; the order
    does not matter for training, which samples boards uniformly.
    """
    bits = (np.arange(GOL_BOARDS)[:, None] >> np.arange(9)[None, :]) & 1
    return bits.reshape(GOL_BOARDS, 3, 3, 1).astype(np.float32)


def gol_step(boards: np.ndarray) -> np.ndarray:
    """One Game of Life step (B3/S23) with periodic wrap on (B, H, W, 1) grids, float32."""
    alive = np.asarray(boards) > 0.5
    counts = sum(np.roll(alive.astype(np.int8), shift, axis=(1, 2)) for shift in _NEIGHBOURS)
    return ((counts == 3) | (alive & (counts == 2))).astype(np.float32)


def checkerboard_target(h: int, w: int) -> np.ndarray:
    """The checkerboard of 2x2 tiles, `((row // 2) + (col // 2)) % 2`, shape (h, w) float32."""
    rows, cols = np.indices((h, w))
    return (((rows // 2) + (cols // 2)) % 2).astype(np.float32)


def random_bits(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    """Independent fair 0/1 bits, float32."""
    return rng.integers(0, 2, size=shape).astype(np.float32)


def seed_grid(h: int, w: int, c: int, batch: int = 1) -> np.ndarray:
    """Zeros with every channel of the centre cell (h // 2, w // 2) set to 1 (notebook seed)."""
    grid = np.zeros((batch, h, w, c), dtype=np.float32)
    grid[:, h // 2, w // 2, :] = 1.0
    return grid


def _load_image(filename: str, size: int) -> np.ndarray:
    """The notebook's `load_byte`: LANCZOS thumbnail, floats in [0, 1], RGB times alpha."""
    with (resources.files("logicars") / "data" / filename).open("rb") as f:
        img = Image.open(f)
        img.thumbnail((size, size), Image.Resampling.LANCZOS)
        arr = np.asarray(img, dtype=np.float32) / 255.0
    arr[..., :3] *= arr[..., 3:]
    return arr


def lizard_target() -> np.ndarray:
    """The 20x20 lizard silhouette: 1 where any premultiplied RGB value exceeds 0.26, float32."""
    img = _load_image("lizard.png", 20)
    return (img[..., :3] > 0.26).any(axis=-1).astype(np.float32)


def colored_g_target() -> np.ndarray:
    """The 16x16 coloured G as three binary channels (red|yellow, green|yellow, blue), float32."""
    img = _load_image("colored_g.png", 16)
    r, g, b = img[..., 0], img[..., 1], img[..., 2]
    yellow = (r > 0.3) & (g > 0.3)
    red = (r > 0.5) & ~yellow
    green = (g > 0.6) & ~yellow
    blue = b > 0.5
    return np.stack([red | yellow, green | yellow, blue], axis=-1).astype(np.float32)


def _target_grid(preset: Preset, target: np.ndarray) -> np.ndarray:
    """Place a (B or 1, H, W, len(loss_channels)) target on the loss channels of a zero grid."""
    s = preset.spec
    y = np.zeros((preset.batch, preset.height, preset.width, s.channels), dtype=np.float32)
    y[..., s.loss_channels] = target
    return y


def _require_size(preset: Preset, h: int, w: int) -> None:
    """Fixed-target experiments only make sense on the grid their target was drawn for."""
    if (preset.height, preset.width) != (h, w):
        raise ValueError(
            f"preset {preset.name!r} needs a {h}x{w} grid, got {preset.height}x{preset.width}"
        )


class Dataset(ABC):
    """Batches for one preset; `sample` is called once per epoch."""

    def __init__(self, preset: Preset) -> None:
        self.preset = preset

    @abstractmethod
    def sample(self, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        """Return `(x, y)`, both (B, H, W, C) float32; y is the target on the loss channels."""


class GolDataset(Dataset):
    """Game of Life: random 3x3 boards, target = one periodic Game of Life step.

    Like the notebook's `sample_batch`, each epoch draws `batch` board indices uniformly
    from the 512 boards *with replacement* (`jax.random.randint(key, (batch,), 0, 512)`
    there, `rng.integers(0, 512, batch)` here). The board goes on channel 0, the other
    channels start at 0.
    """

    def __init__(self, preset: Preset) -> None:
        super().__init__(preset)
        _require_size(preset, 3, 3)
        self._boards = gol_boards()
        self._next = gol_step(self._boards)

    def sample(self, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        p = self.preset
        idx = rng.integers(0, GOL_BOARDS, size=p.batch)
        x = np.zeros((p.batch, 3, 3, p.spec.channels), dtype=np.float32)
        x[..., 0] = self._boards[idx, ..., 0]
        return x, _target_grid(p, self._next[idx])


class CheckerboardDataset(Dataset):
    """Checkerboard (sync or async): fresh random bits on every channel each epoch."""

    def __init__(self, preset: Preset) -> None:
        super().__init__(preset)
        self._y = _target_grid(preset, checkerboard_target(preset.height, preset.width)[..., None])

    def sample(self, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        p = self.preset
        x = random_bits(rng, (p.batch, p.height, p.width, p.spec.channels))
        return x, self._y.copy()


class GrowDataset(Dataset):
    """Pattern growth: the same start grid and image target every epoch (rng unused)."""

    def __init__(self, preset: Preset, x: np.ndarray, target: np.ndarray) -> None:
        super().__init__(preset)
        self._x = x
        self._y = _target_grid(preset, target)

    def sample(self, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        return self._x.copy(), self._y.copy()


def _lizard(preset: Preset) -> Dataset:
    """Lizard: the notebook seeds the centre cell (all channels) of a zero grid."""
    _require_size(preset, 20, 20)
    x = seed_grid(preset.height, preset.width, preset.spec.channels, preset.batch)
    return GrowDataset(preset, x, lizard_target()[..., None])


def _colored_g(preset: Preset) -> Dataset:
    """Colored G: the notebook starts from an all-zero grid (no seed cell)."""
    _require_size(preset, 16, 16)
    shape = (preset.batch, preset.height, preset.width, preset.spec.channels)
    return GrowDataset(preset, np.zeros(shape, dtype=np.float32), colored_g_target())


_FACTORIES = {
    "gol": GolDataset,
    "checkerboard": CheckerboardDataset,
    "checkerboard-async": CheckerboardDataset,
    "lizard": _lizard,
    "colored-g": _colored_g,
}


def make_dataset(preset: Preset) -> Dataset:
    """The dataset for a preset, chosen by its name (sizes and channels come from the preset)."""
    try:
        factory = _FACTORIES[preset.name]
    except KeyError:
        raise ValueError(
            f"no dataset for preset {preset.name!r}; known: {', '.join(_FACTORIES)}"
        ) from None
    return factory(preset)
