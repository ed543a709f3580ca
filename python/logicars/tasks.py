"""What an experiment asks of a cellular automaton: one `Task` object.

A task owns the experiment's side of a run: the grid's channels and which of them the
loss reads, the CA steps, the boundary (periodic or zero-padded), synchronous or
asynchronous updates (fire rate), the training grid and batch; and the data:

- `start(rng, batch, h, w)`: start grids `(batch, h, w, C)` float32 0/1;
- `target(x)`: what the CA should reach from start grids `x` after the task's steps, on
  the loss channels `(B, H, W, L)` float32 (None where the task has no target on that
  grid, e.g. a fixed image on another size);
- `sample(rng)`: one training batch `(x, y)`, y the target on the loss channels of a
  zero grid;
- `holdout(samples, seed)`: the inputs of the held-out check and their targets;
- `accepted(target)`: the grids that count as right (the target; for a periodic
  pattern every phase of it), the one scoring rule `wrong`, `solved` and `cell_error`
  apply for training, `evaluate`, `simulate` and `analyze`.

Three kinds cover the paper's experiments and a user's own, each named by a string
(`make_task`): `life:B3/S23` (a Life-like rule, trained on all 512 3x3 boards),
`pattern:...` (self-organise from random bits into a periodic tile, in any phase) and
`grow:...` (grow a fixed image from a seed cell or zeros). Anything else subclasses
`Task` and implements `start` and `target`.

Pure numpy (Pillow only to read an image), so it works without the compiled engine. All
randomness comes from the Generator passed in.
"""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Sequence
from importlib import resources
from typing import Any, Union

import numpy as np

from .recorded import DEFAULT_BATCH as RECORDED_BATCH
from .recorded import (
    Recording,
    as_bits,
    check_encoding,
    cross_inconsistencies,
    inconsistencies,
    neighbourhoods,
    pack_bits,
    read_recording,
    row_keys,
    unpack_bits,
)

PathLike = Union[str, "os.PathLike[str]"]

LIFE_BOARDS = 512
# Conway's Game of Life, the `gol` preset's rule.
CONWAY = "B3/S23"
# The built-in targets a kind may name instead of a file.
CHECKERBOARD = "checkerboard"
LIZARD = "lizard"
COLORED_G = "colored-g"

# The largest image a task reads, checked from its header before anything is decoded
# (a 30000^2 PNG is 870 KB): 4096 x 4096, 256 MB as float RGBA.
MAX_IMAGE_PIXELS = 4096 * 4096
MAX_IMAGE_BYTES = 64 << 20  # the file itself
# A pattern's tile: scoring tries every phase (cyclic shift) of it, so its cells bound
# the work of every check (a 1000 x 1000 tile would be 10^6 phases).
MAX_TILE_CELLS = 64 * 64

_NEIGHBOURS = [(dr, dc) for dr in (-1, 0, 1) for dc in (-1, 0, 1) if (dr, dc) != (0, 0)]
_RULE = re.compile(r"^B([0-8]*)/S([0-8]*)$")


# ---- helpers (the notebook's data) ------------------------------------------------------


def life_boards() -> np.ndarray:
    """All 512 binary 3x3 boards, shape (512, 3, 3, 1) float32.

    Board i's cell (r, c) is bit `r * 3 + c` of i (least significant bit = top-left
    cell). The notebook enumerates the same set most-significant-bit first; the order
    does not matter for training, which samples boards uniformly.
    """
    bits = (np.arange(LIFE_BOARDS)[:, None] >> np.arange(9)[None, :]) & 1
    return bits.reshape(LIFE_BOARDS, 3, 3, 1).astype(np.float32)


def parse_rule(rule: str) -> tuple[frozenset[int], frozenset[int]]:
    """`(birth, survival)` neighbour counts of a rule in B/S notation (`B36/S23`)."""
    match = _RULE.match(rule.strip().upper()) if isinstance(rule, str) else None
    if match is None:
        raise ValueError(
            f"rule {rule!r} is not in B/S notation, e.g. B3/S23 (Conway) or B36/S23 (HighLife)"
        )
    return frozenset(map(int, match[1])), frozenset(map(int, match[2]))


def normalise_rule(rule: str) -> str:
    """The rule in canonical B/S form: digits sorted, no repeats (`b63/s32` -> `B36/S23`)."""
    birth, survive = parse_rule(rule)
    return f"B{''.join(map(str, sorted(birth)))}/S{''.join(map(str, sorted(survive)))}"


def life_step(boards: np.ndarray, rule: str = CONWAY) -> np.ndarray:
    """One step of a Life-like rule with periodic wrap on (B, H, W, 1) grids, float32."""
    birth, survive = parse_rule(rule)
    alive = np.asarray(boards) > 0.5
    counts = sum(np.roll(alive.astype(np.int8), shift, axis=(1, 2)) for shift in _NEIGHBOURS)
    born = np.isin(counts, sorted(birth)) & ~alive
    stays = np.isin(counts, sorted(survive)) & alive
    return (born | stays).astype(np.float32)


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


def load_image(source: PathLike | Any, size: int | None = None) -> np.ndarray:
    """The notebook's `load_byte`: an RGBA image (a path or a binary file), shrunk with a
    LANCZOS thumbnail to fit `size` x `size` (None: as it is), floats in [0, 1], RGB
    premultiplied by alpha; shape (H, W, 4).

    A path must name a regular file of at most `MAX_IMAGE_BYTES` (never a FIFO or a
    device); an image over `MAX_IMAGE_PIXELS`, checked from its header before it is
    decoded, or one Pillow cannot decode raises a one-line ValueError."""
    import io
    import warnings

    from PIL import Image

    from .files import read_bytes

    if isinstance(source, (str, os.PathLike)):
        name = os.fspath(source)
        source = io.BytesIO(read_bytes(name, "image", MAX_IMAGE_BYTES))
    else:
        name = str(getattr(source, "name", "image"))
    try:
        with warnings.catch_warnings():
            # The cap below is ours, and lower than Pillow's bomb check.
            warnings.simplefilter("ignore", Image.DecompressionBombWarning)
            with Image.open(source) as opened:
                width, height = opened.size
                if width * height > MAX_IMAGE_PIXELS:
                    raise _TooLarge(f"{width}x{height}")
                img = opened.convert("RGBA")
    except _TooLarge as e:
        raise ValueError(
            f"image {name}: {e} pixels, over the limit of {MAX_IMAGE_PIXELS:,} pixels"
        ) from None
    except Image.DecompressionBombError:
        raise ValueError(f"image {name}: over the limit of {MAX_IMAGE_PIXELS:,} pixels") from None
    except Exception as e:  # Pillow's decoders raise many types for a damaged file
        reason = str(e).replace("\n", " ")[:200] or type(e).__name__
        raise ValueError(f"image {name}: not a readable image ({reason})") from None
    if size is not None:
        img.thumbnail((size, size), Image.Resampling.LANCZOS)
    arr = np.asarray(img, dtype=np.float32) / 255.0
    arr[..., :3] *= arr[..., 3:]
    return arr


class _TooLarge(Exception):
    """An image over `MAX_IMAGE_PIXELS` (turned into a ValueError by `load_image`)."""


def _data_image(filename: str, size: int) -> np.ndarray:
    with (resources.files("logicars") / "data" / filename).open("rb") as f:
        return load_image(f, size)


def lizard_target() -> np.ndarray:
    """The 20x20 lizard silhouette: 1 where any premultiplied RGB value exceeds 0.26, float32."""
    return silhouette(_data_image("lizard.png", 20))


def silhouette(image: np.ndarray) -> np.ndarray:
    """An (H, W) 0/1 mask of an RGBA image: the lizard's rule, any premultiplied RGB > 0.26."""
    return (image[..., :3] > 0.26).any(axis=-1).astype(np.float32)


def colored_g_target() -> np.ndarray:
    """The 16x16 coloured G as three binary channels (red|yellow, green|yellow, blue), float32."""
    img = _data_image("colored_g.png", 16)
    r, g, b = img[..., 0], img[..., 1], img[..., 2]
    yellow = (r > 0.3) & (g > 0.3)
    red = (r > 0.5) & ~yellow
    green = (g > 0.6) & ~yellow
    blue = b > 0.5
    return np.stack([red | yellow, green | yellow, blue], axis=-1).astype(np.float32)


def colour_bits(image: np.ndarray) -> np.ndarray:
    """An RGBA image's colours quantised to bits, (H, W, 3) float32: each premultiplied
    channel above 0.5."""
    return (image[..., :3] > 0.5).astype(np.float32)


def image_bits(path: PathLike, size: int | None = None) -> np.ndarray:
    """A user's target image as bits (H, W, L) float32: a grey image (R = G = B
    everywhere) as its silhouette on one channel, like the lizard; a coloured one as
    three colour bits (R, G, B), like the coloured G."""
    image = load_image(path, size)
    rgb = image[..., :3]
    if np.allclose(rgb, rgb[..., :1], atol=1 / 255):
        return silhouette(image)[..., None]
    return colour_bits(image)


def tile_bits(path: PathLike) -> np.ndarray:
    """A pattern's tile from an image, (h, w) float32: pixels brighter than half (alpha
    premultiplied, mean of R, G, B) are 1."""
    image = load_image(path)
    _check_tile(image.shape[:2], f"pattern tile {os.fspath(path)}")
    return (image[..., :3].mean(axis=-1) > 0.5).astype(np.float32)


def _check_tile(shape: tuple[int, ...], what: str) -> None:
    """A tile of at most `MAX_TILE_CELLS` cells (its phases bound every check's work)."""
    cells = int(np.prod(shape))
    if cells > MAX_TILE_CELLS:
        raise ValueError(
            f"{what}: {'x'.join(map(str, shape))} cells, over the limit of {MAX_TILE_CELLS:,} "
            "(every phase of a tile is tried when scoring)"
        )


# ---- the Task -----------------------------------------------------------------------------


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
        _check_tile(tile.shape, f"task {name!r}: the pattern's tile")
        self.tile = (tile > 0.5).astype(np.float32)
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
        th, tw = self.tile.shape
        seen: dict[bytes, np.ndarray] = {}
        for shift in [(r, c) for r in range(th) for c in range(tw)]:
            phase = self.pattern(h, w, shift) > 0.5
            seen.setdefault(phase.tobytes(), phase)
        return [p[None, ..., None] for p in seen.values()]

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


# ---- kinds by name and from a record --------------------------------------------------------

KINDS = ("life", "pattern", "grow", "data")


def split_kind(text: str) -> tuple[str, str]:
    """`("life", "B36/S23")` of `"life:B36/S23"`; a ValueError for anything else."""
    kind, sep, arg = str(text).partition(":")
    kind = kind.strip().lower()
    if not sep or kind not in KINDS or not arg.strip():
        raise ValueError(
            f"{text!r} is not a task kind; expected life:RULE (e.g. life:B36/S23), "
            "grow:IMAGE.png, pattern:TILE.png or data:RECORDING.npz"
        )
    return kind, arg.strip()


def kind_data(text: str, size: int | None = None) -> np.ndarray | None:
    """The pixels a kind names (a file's, or a built-in target's), or None for a rule:
    the pattern's tile (h, w), the grown image (H, W, L) at most `size` pixels a side."""
    kind, arg = split_kind(text)
    if kind == "life":
        parse_rule(arg)
        return None
    if kind == "data":  # a recording, read by its task (`logicars.recorded`)
        return None
    if (kind, arg) in _BUILTIN:
        return _builtin_pixels(kind, arg).copy()
    if kind == "pattern":
        return tile_bits(_existing(arg))
    return image_bits(_existing(arg), size)


_BUILTIN = {("pattern", CHECKERBOARD), ("grow", LIZARD), ("grow", COLORED_G)}


def is_builtin_kind(text: str) -> bool:
    """Whether a `grow:`/`pattern:` kind names a preset's own target, not a file."""
    return split_kind(text) in _BUILTIN


@functools.cache
def _builtin_pixels(kind: str, arg: str) -> np.ndarray:
    """The presets' own targets (read once: the validation check builds its task often)."""
    if kind == "pattern":
        return checkerboard_target(4, 4)
    return lizard_target()[..., None] if arg == LIZARD else colored_g_target()


def _existing(path: str) -> str:
    # Anything but a missing file goes on to `load_image`, which says what it is.
    if not os.path.exists(path):
        raise FileNotFoundError(f"{path}: no such image file")
    return path


def make_task(
    kind: str, pixels: np.ndarray | None = None, growth: str = "grow", **geometry: Any
) -> Task:
    """The task of a kind string (`life:B3/S23`, `pattern:checkerboard`, `grow:lizard`,
    `grow:PATH.png`, ...) on the given geometry (`Task`'s keywords); `pixels` are the
    kind's tile or image when already loaded (`kind_data`), e.g. from a run's record;
    `growth` a grown image's mode (`GROWTH_MODES`)."""
    name, arg = split_kind(kind)
    if growth != "grow" and name != "grow":
        raise ValueError(f"growth={growth!r} is an option of grow: tasks, not of {kind!r}")
    if name == "life":
        return LifeTask(arg, **geometry)
    if name == "data":
        return RecordedTask.from_file(arg, name=kind, **geometry)
    if pixels is None:
        pixels = kind_data(kind)
    if name == "pattern":
        return PatternTask(np.asarray(pixels), name=kind, **geometry)
    # The coloured G starts from zeros as the notebook's; every other image from a seed.
    return GrowTask(
        np.asarray(pixels), name=kind, seed_cell=arg != COLORED_G, growth=growth, **geometry
    )


def task_from_dict(record: dict[str, Any]) -> Task | None:
    """The task a run recorded (`Task.to_dict`), or None for a custom subclass."""
    kind = record.get("kind")
    if kind == "data":
        return RecordedTask.from_dict(record)
    geometry = {
        k: record[k]
        for k in (
            "channels",
            "height",
            "width",
            "batch",
            "loss_channels",
            "num_steps",
            "periodic",
            "fire_rate",
        )  # fmt: skip
    }
    if kind == "life":
        return LifeTask(str(record["rule"]), **geometry)
    if kind == "pattern":
        return PatternTask(np.array(record["tile"]), name=str(record["name"]), **geometry)
    if kind == "grow":
        return GrowTask(
            np.array(record["image"]),
            name=str(record["name"]),
            seed_cell=bool(record["seed_cell"]),
            # Runs from before the growth modes grew only.
            growth=str(record.get("growth", "grow")),
            **geometry,
        )
    return None


# ---- a recorded automaton (`data:` kind) ---------------------------------------------------------


class RecordedTask(Task):
    """Reproduce recorded state sequences (module docstring): `recording` a `Recording`
    (or its `states` array, then `test`, `periodic` and `encoding` as in the file),
    `hidden` extra channels, `steps` CA steps per training rollout (one per recorded
    frame); the grid and loss channels are the recording's; `batch` transitions a
    training batch draws."""

    kind = "data"

    def __init__(
        self,
        recording: Recording | np.ndarray,
        name: str = "data",
        *,
        hidden: int = 0,
        steps: int = 1,
        batch: int = RECORDED_BATCH,
        test: np.ndarray | None = None,
        periodic: bool | None = None,
        encoding: np.ndarray | None = None,
        channels: int | None = None,
        height: int | None = None,
        width: int | None = None,
        loss_channels: Any = None,
        num_steps: int | None = None,
        fire_rate: float | None = None,
    ) -> None:
        if not isinstance(recording, Recording):
            enc = None if encoding is None else check_encoding(name, encoding)
            states = as_bits(f"{name}: states", recording, enc)
            held = None if test is None else as_bits(f"{name}: test", test, enc, states.shape[-1])
            recording = Recording(states, held, True if periodic is None else bool(periodic), enc)
        elif periodic is not None and bool(periodic) != recording.periodic:
            raise ValueError(
                f"task {name!r}: the recording is {'' if recording.periodic else 'not '}"
                "periodic; its boundary is the recording's"
            )
        self.recording = recording
        bits = recording.bits
        runs, frames, h, w, _ = recording.states.shape
        # The geometry a run records comes back through the same keywords (`make_task`).
        if channels is not None:
            hidden = int(channels) - bits
        if num_steps is not None:
            steps = num_steps
        if hidden < 0:
            raise ValueError(
                f"task {name!r}: the recording has {bits} bits per cell, "
                f"the model {bits + hidden} channels"
            )
        if fire_rate is not None:
            raise ValueError(f"task {name!r}: a recording is learnt with synchronous updates")
        if (height, width) not in ((None, None), (h, w)):
            raise ValueError(
                f"task {name!r}: the recording's grid is {h}x{w}, not {height}x{width}"
            )
        if loss_channels is not None and list(loss_channels) != list(range(bits)):
            raise ValueError(
                f"task {name!r}: the loss channels are the recording's bits, 0..{bits - 1}"
            )
        super().__init__(
            name,
            channels=bits + hidden,
            height=h,
            width=w,
            batch=batch,
            loss_channels=range(bits),
            num_steps=steps,
            periodic=recording.periodic,
        )
        if self.num_steps < 1:
            raise ValueError(f"task {name!r}: steps must be >= 1")
        if self.num_steps >= frames:
            raise ValueError(
                f"task {name!r}: {self.num_steps} steps per rollout need runs of more than "
                f"{self.num_steps} frames, the recording's have {frames}"
            )
        self.hidden = hidden
        if recording.test is not None:
            self._train, self._test = recording.states, recording.test
        elif runs >= 2:
            held = max(1, runs // 4)
            self._train, self._test = recording.states[:-held], recording.states[-held:]
        else:
            raise ValueError(
                f"task {name!r}: one run and no 'test' recordings: nothing to hold out "
                "(record 2 or more runs, or add a 'test' array)"
            )
        if hidden == 0:
            self._check_consistent()
        self._table: dict[bytes, np.ndarray] | None = None

    def _check_consistent(self) -> None:
        for label, part in (("states", self._train), ("test", self._test)):
            n, cells, pos = inconsistencies(part, self.periodic)
            if n:
                run, step, row, col = pos or (0, 0, 0, 0)
                raise ValueError(
                    f"task {self.name!r}: inconsistent transitions: {n} neighbourhood(s) lead to "
                    f"different next states ({cells} cell(s) differ from the most common), "
                    f"e.g. {label} run {run} step {step}->{step + 1} row {row} col {col}; the rule "
                    "is not a function of the 3x3 neighbourhood (learn it with hidden channels)"
                )
        # Across the two sets: the held-out recordings must follow the training ones' rule.
        if self._test is not self._train:
            n, cells, pos = cross_inconsistencies(self._train, self._test, self.periodic)
            if n:
                run, step, row, col = pos or (0, 0, 0, 0)
                raise ValueError(
                    f"task {self.name!r}: inconsistent transitions: {n} neighbourhoods of the "
                    f"held-out recordings ({cells} cells) lead to other next states than in "
                    f"the training ones, e.g. test run {run} step {step}->{step + 1} row {row} "
                    f"col {col}"
                )

    # -- the data --

    def _pairs(self, part: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Every (start frame, frame `num_steps` later) of recordings `part`, as `(N, H, W,
        bits)` each: from every frame, or each run's first with hidden channels."""
        k = self.num_steps
        firsts = part[:, :1] if self.hidden else part[:, :-k]
        lasts = part[:, k : k + 1] if self.hidden else part[:, k:]
        shape = (-1,) + part.shape[2:]
        return firsts.reshape(shape), lasts.reshape(shape)

    def _grids(self, bits: np.ndarray) -> np.ndarray:
        x = np.zeros(bits.shape[:3] + (self.channels,), dtype=np.float32)
        x[..., : self.recording.bits] = bits
        return x

    def transitions(self, held_out: bool = False) -> tuple[np.ndarray, np.ndarray]:
        """The training (or held-out) transitions: start grids `(N, H, W, C)` float32
        (hidden channels 0) and their targets on the loss channels `(N, H, W, bits)`."""
        first, last = self._pairs(self._test if held_out else self._train)
        return self._grids(first), last.astype(np.float32)

    def start(self, rng: np.random.Generator, batch: int, h: int, w: int) -> np.ndarray:
        """Recorded training frames (at the recording's size), else random bits."""
        if (h, w) != (self.height, self.width):
            return self._grids(rng.integers(0, 2, size=(batch, h, w, self.recording.bits)))
        first, _ = self._pairs(self._train)
        return self._grids(first[rng.integers(0, len(first), size=batch)])

    def sample(
        self, rng: np.random.Generator, batch: int | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        first, last = self._pairs(self._train)
        pick = rng.integers(0, len(first), size=self.batch if batch is None else batch)
        before, after = first[pick], last[pick]
        if self.recording.symmetric:
            # A rule the same under the square's symmetries: each transition turned and
            # mirrored at random, the same way before and after.
            square = self.height == self.width
            for i, turn in enumerate(rng.integers(0, 8 if square else 4, size=len(pick))):
                before[i], after[i] = _dihedral(before[i], turn), _dihedral(after[i], turn)
        x = self._grids(before)
        y = np.zeros(x.shape, dtype=np.float32)
        y[..., : self.recording.bits] = after
        return x, y

    def holdout(self, samples: int = 16, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
        """Every transition of the held-out recordings (whatever `samples` asks: the
        recordings are the check, as the Life rule's 512 boards are)."""
        first, last = self._pairs(self._test)
        return self._grids(first), last.astype(bool)

    def target(self, x: np.ndarray) -> np.ndarray | None:
        """The recorded rule applied `num_steps` times to `x`'s bits, where every
        neighbourhood on the way was recorded (None otherwise, or with hidden channels)."""
        if self.hidden:
            return None
        table = self._rule_table()
        bits = self.recording.bits
        y = np.asarray(x)[..., :bits] > 0.5
        for _ in range(self.num_steps):
            keys = row_keys(neighbourhoods(y, self.periodic))
            try:
                rows = [table[k.tobytes()] for k in keys]
            except KeyError:
                return None
            y = np.stack(rows).reshape(y.shape) if rows else y
        return y.astype(np.float32)

    def _rule_table(self) -> dict[bytes, np.ndarray]:
        if self._table is None:
            table: dict[bytes, np.ndarray] = {}
            for part in (self._train, self._test):
                c = part.shape[-1]
                keys = row_keys(
                    neighbourhoods(part[:, :-1].reshape((-1,) + part.shape[2:]), self.periodic)
                )
                nxt = part[:, 1:].reshape(-1, c)
                uniq, first = np.unique(keys, return_index=True)
                for k, i in zip(uniq, first):
                    table[k.tobytes()] = nxt[i]
            self._table = table
        return self._table

    # -- record --

    def to_dict(self) -> dict[str, Any]:
        rec = self.recording
        return {
            "kind": self.kind,
            "name": self.name,
            "hidden": self.hidden,
            "states": pack_bits(rec.states),
            "test": None if rec.test is None else pack_bits(rec.test),
            "encoding": None if rec.encoding is None else rec.encoding.tolist(),
            "symmetric": rec.symmetric,
            **self._geometry(),
        }

    @classmethod
    def from_dict(cls, record: dict[str, Any]) -> RecordedTask:
        """The task `to_dict` recorded (a run never needs the recording file again)."""
        enc = record.get("encoding")
        recording = Recording(
            unpack_bits(record["states"]),
            None if record.get("test") is None else unpack_bits(record["test"]),
            bool(record["periodic"]),
            None if enc is None else np.asarray(enc, dtype=np.uint8),
            bool(record.get("symmetric", False)),
        )
        return cls(
            recording,
            name=str(record["name"]),
            hidden=int(record["hidden"]),
            steps=int(record["num_steps"]),
            batch=int(record["batch"]),
        )

    @classmethod
    def from_file(cls, path: PathLike, name: str | None = None, **options: Any) -> RecordedTask:
        """The task of a recording file (`load_recording`); `options` as the constructor's."""
        recording = read_recording(path)
        try:
            return cls(
                recording, name=name or f"data:{os.path.basename(os.fspath(path))}", **options
            )
        except ValueError as e:
            raise ValueError(f"{os.fspath(path)}: {e}") from None


def _dihedral(grid: np.ndarray, turn: int) -> np.ndarray:
    """`grid` `(H, W, C)` under symmetry `turn` of the square: 0-3 flips (none, rows,
    columns, both), 4-7 the same after a transpose (square grids only)."""
    g = grid.transpose(1, 0, 2) if turn >= 4 else grid
    if turn & 1:
        g = g[::-1]
    if turn & 2:
        g = g[:, ::-1]
    return np.ascontiguousarray(g)
