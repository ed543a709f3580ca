"""The tasks' data: Life-like rules and their boards, the checkerboard, start grids,
and images (the lizard, the coloured G, a user's own) read into bits."""

from __future__ import annotations

import os
import re
from importlib import resources
from typing import Any, Union

import numpy as np

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


def life_board_index(boards: np.ndarray) -> np.ndarray:
    """Each (3, 3, C) board's index in `life_boards()`, read from channel 0 (> 0.5 alive)."""
    alive = np.asarray(boards)[..., 0].reshape(len(boards), 9) > 0.5
    return alive.astype(np.int64) @ (1 << np.arange(9))


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

    from ..files import read_bytes

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
    return np.any(image[..., :3] > 0.26, axis=-1).astype(np.float32)


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
    check_tile(image.shape[:2], f"pattern tile {os.fspath(path)}")
    return (image[..., :3].mean(axis=-1) > 0.5).astype(np.float32)


def check_tile(shape: tuple[int, ...], what: str) -> None:
    """A tile of at most `MAX_TILE_CELLS` cells (its phases bound every check's work)."""
    cells = int(np.prod(shape))
    if cells > MAX_TILE_CELLS:
        raise ValueError(
            f"{what}: {'x'.join(map(str, shape))} cells, over the limit of {MAX_TILE_CELLS:,} "
            "(every phase of a tile is tried when scoring)"
        )
