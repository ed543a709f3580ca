"""Datasets: Game of Life, checkerboard and image targets, and per-preset sampling."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from logicars.datasets import (
    checkerboard_target,
    colored_g_target,
    gol_boards,
    gol_step,
    lizard_target,
    make_dataset,
    random_bits,
    seed_grid,
)
from logicars.presets import PRESETS, get_preset

SHARED_DATA = Path(__file__).parents[1].parent / "shared" / "data"


def _reference(name: str) -> np.ndarray:
    path = SHARED_DATA / name
    assert path.is_file(), f"reference target {path} is missing"
    return np.load(path)


def _grid(rows: list[str]) -> np.ndarray:
    """A (1, H, W, 1) board from strings of '.' and '#'."""
    return np.array([[[c == "#"] for c in r] for r in rows], dtype=np.float32)[None]


# --- image targets --------------------------------------------------------------------


def test_lizard_target_matches_reference() -> None:
    ref = _reference("lizard_target_20x20.npy")
    t = lizard_target()
    assert t.dtype == np.float32 and t.shape == (20, 20)
    np.testing.assert_array_equal(t, ref.astype(np.float32))
    assert 0 < t.sum() < t.size


def test_colored_g_target_matches_reference() -> None:
    ref = _reference("colored_g_target_16x16x3.npy")
    t = colored_g_target()
    assert t.dtype == np.float32 and t.shape == (16, 16, 3)
    np.testing.assert_array_equal(t, ref.astype(np.float32))
    for ch in range(3):
        assert 0 < t[..., ch].sum() < 256


# --- Game of Life ---------------------------------------------------------------------


def test_gol_boards_are_all_512_distinct() -> None:
    b = gol_boards()
    assert b.shape == (512, 3, 3, 1) and b.dtype == np.float32
    assert len({board.tobytes() for board in b}) == 512
    assert set(np.unique(b)) == {0.0, 1.0}
    # documented order: board i, cell (r, c) = bit r * 3 + c of i
    assert b[1, 0, 0, 0] == 1 and b[1].sum() == 1
    assert b[1 << 5, 1, 2, 0] == 1 and b[1 << 5].sum() == 1
    assert b[511].sum() == 9 and b[0].sum() == 0


def test_gol_step_on_all_3x3_boards() -> None:
    # On a 3x3 torus every cell's 8 neighbours are exactly the other 8 cells.
    b = gol_boards()
    nxt = gol_step(b)
    others = b.sum(axis=(1, 2), keepdims=True) - b
    expected = (others == 3) | ((b == 1) & (others == 2))
    np.testing.assert_array_equal(nxt, expected.astype(np.float32))
    assert nxt.dtype == np.float32 and nxt.shape == b.shape


def test_gol_blinker_oscillates() -> None:
    horizontal = _grid([".....", ".....", ".###.", ".....", "....."])
    vertical = _grid([".....", "..#..", "..#..", "..#..", "....."])
    np.testing.assert_array_equal(gol_step(horizontal), vertical)
    np.testing.assert_array_equal(gol_step(vertical), horizontal)


def test_gol_block_is_still() -> None:
    block = _grid(["....", ".##.", ".##.", "...."])
    np.testing.assert_array_equal(gol_step(block), block)


def test_gol_glider_wraps_around() -> None:
    glider = np.zeros((1, 8, 8, 1), dtype=np.float32)
    glider[0, :3, :3, 0] = _grid([".#.", "..#", "###"])[0, ..., 0]
    g = glider
    for _ in range(4 * 8):  # every 4 steps the glider moves one cell down and right
        g = gol_step(g)
        assert g.sum() == 5
    np.testing.assert_array_equal(g, glider)  # 8 moves on an 8x8 torus: back home
    four = glider
    for _ in range(4):
        four = gol_step(four)
    np.testing.assert_array_equal(four, np.roll(glider, (1, 1), axis=(1, 2)))


def test_gol_step_batches_independently() -> None:
    rng = np.random.default_rng(0)
    boards = random_bits(rng, (4, 6, 7, 1))
    together = gol_step(boards)
    for i in range(4):
        np.testing.assert_array_equal(together[i : i + 1], gol_step(boards[i : i + 1]))


# --- small helpers ----------------------------------------------------------------------


def test_checkerboard_target_values() -> None:
    t = checkerboard_target(4, 6)
    assert t.dtype == np.float32 and t.shape == (4, 6)
    expected = np.array(
        [
            [0, 0, 1, 1, 0, 0],
            [0, 0, 1, 1, 0, 0],
            [1, 1, 0, 0, 1, 1],
            [1, 1, 0, 0, 1, 1],
        ],
        dtype=np.float32,
    )
    np.testing.assert_array_equal(t, expected)
    assert checkerboard_target(16, 16).sum() == 128


def test_random_bits() -> None:
    a = random_bits(np.random.default_rng(5), (3, 4, 4, 2))
    b = random_bits(np.random.default_rng(5), (3, 4, 4, 2))
    assert a.dtype == np.float32 and a.shape == (3, 4, 4, 2)
    assert set(np.unique(a)) <= {0.0, 1.0}
    np.testing.assert_array_equal(a, b)


def test_seed_grid() -> None:
    g = seed_grid(20, 20, 5, batch=2)
    assert g.dtype == np.float32 and g.shape == (2, 20, 20, 5)
    assert np.all(g[:, 10, 10, :] == 1)
    assert g.sum() == 2 * 5
    assert seed_grid(5, 4, 1)[0, 2, 2, 0] == 1


# --- datasets -------------------------------------------------------------------------


@pytest.mark.parametrize("name", list(PRESETS))
def test_dataset_shapes_and_determinism(name: str) -> None:
    p = get_preset(name)
    ds = make_dataset(p)
    shape = (p.batch, p.height, p.width, p.spec.channels)
    x1, y1 = ds.sample(np.random.default_rng(23))
    x2, y2 = ds.sample(np.random.default_rng(23))
    for a in (x1, y1):
        assert a.shape == shape and a.dtype == np.float32
        assert set(np.unique(a)) <= {0.0, 1.0}
    np.testing.assert_array_equal(x1, x2)
    np.testing.assert_array_equal(y1, y2)
    others = [c for c in range(p.spec.channels) if c not in p.spec.loss_channels]
    assert not y1[..., others].any()


def test_gol_dataset_targets_are_one_step() -> None:
    ds = make_dataset(get_preset("gol"))
    rng = np.random.default_rng(1)
    seen = set()
    for _ in range(20):
        x, y = ds.sample(rng)
        np.testing.assert_array_equal(y, gol_step(x))
        seen.update(board.tobytes() for board in x)
    assert len(seen) > 100  # draws spread over the 512 boards


def test_checkerboard_dataset_fresh_bits_each_call() -> None:
    for name in ("checkerboard", "checkerboard-async"):
        p = get_preset(name)
        ds = make_dataset(p)
        rng = np.random.default_rng(0)
        x1, y1 = ds.sample(rng)
        x2, y2 = ds.sample(rng)
        assert not np.array_equal(x1, x2)
        np.testing.assert_array_equal(y1, y2)
        for b in range(p.batch):
            np.testing.assert_array_equal(y1[b, ..., 0], checkerboard_target(p.height, p.width))


def test_lizard_dataset() -> None:
    p = get_preset("lizard")
    x, y = make_dataset(p).sample(np.random.default_rng(0))
    np.testing.assert_array_equal(x, seed_grid(20, 20, 128))
    np.testing.assert_array_equal(y[0, ..., 0], lizard_target())


def test_colored_g_dataset() -> None:
    p = get_preset("colored-g")
    ds = make_dataset(p)
    x, y = ds.sample(np.random.default_rng(0))
    assert not x.any()
    np.testing.assert_array_equal(y[0, ..., :3], colored_g_target())
    x[...] = 1  # callers may mutate what they get without changing the next sample
    x2, _ = ds.sample(np.random.default_rng(0))
    assert not x2.any()


def test_make_dataset_rejects_unknown_preset() -> None:
    from dataclasses import replace

    with pytest.raises(ValueError, match="known"):
        make_dataset(replace(get_preset("gol"), name="nope"))
    with pytest.raises(ValueError, match="20x20"):
        make_dataset(replace(get_preset("lizard"), height=32, width=32))
