"""Tasks: Game of Life, checkerboard and image targets, per-preset sampling, the task
kinds a user names and the one scoring rule."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from conftest import TARGETS

from logicars.datasets import gol_boards, gol_step
from logicars.presets import PRESETS, get_preset, preset_for_kind
from logicars.tasks import (
    GrowTask,
    LifeTask,
    PatternTask,
    Task,
    checkerboard_target,
    colored_g_target,
    life_boards,
    life_step,
    lizard_target,
    normalise_rule,
    parse_rule,
    random_bits,
    seed_grid,
    task_from_dict,
)


def _reference(name: str) -> np.ndarray:
    path = TARGETS / name
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


# --- preset tasks -------------------------------------------------------------------------


@pytest.mark.parametrize("name", list(PRESETS))
def test_dataset_shapes_and_determinism(name: str) -> None:
    p = get_preset(name)
    ds = p.task()
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
    ds = get_preset("gol").task()
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
        ds = p.task()
        rng = np.random.default_rng(0)
        x1, y1 = ds.sample(rng)
        x2, y2 = ds.sample(rng)
        assert not np.array_equal(x1, x2)
        np.testing.assert_array_equal(y1, y2)
        for b in range(p.batch):
            np.testing.assert_array_equal(y1[b, ..., 0], checkerboard_target(p.height, p.width))


def test_lizard_dataset() -> None:
    p = get_preset("lizard")
    x, y = p.task().sample(np.random.default_rng(0))
    np.testing.assert_array_equal(x, seed_grid(20, 20, p.spec.channels))
    np.testing.assert_array_equal(y[0, ..., 0], lizard_target())


def test_colored_g_dataset() -> None:
    p = get_preset("colored-g")
    ds = p.task()
    x, y = ds.sample(np.random.default_rng(0))
    assert not x.any()
    np.testing.assert_array_equal(y[0, ..., :3], colored_g_target())
    x[...] = 1  # callers may mutate what they get without changing the next sample
    x2, _ = ds.sample(np.random.default_rng(0))
    assert not x2.any()


def test_preset_task_needs_a_kind_and_its_image_grid() -> None:
    from dataclasses import replace

    with pytest.raises(ValueError, match="names no task"):
        replace(get_preset("gol"), name="nope", task_kind="").task()
    with pytest.raises(ValueError, match="20x20"):
        replace(get_preset("lizard"), height=32, width=32).task()


# --- rules, kinds and scoring ----------------------------------------------------------


def test_rules_parse_and_conway_is_gol() -> None:
    assert parse_rule("b36/s23") == (frozenset({3, 6}), frozenset({2, 3}))
    assert normalise_rule(" B63/S32 ") == "B36/S23"
    assert normalise_rule("B/S") == "B/S"
    for bad in ("B9/S23", "S23/B3", "B3S23", "life"):
        with pytest.raises(ValueError, match="B/S notation"):
            parse_rule(bad)
    boards = life_boards()
    np.testing.assert_array_equal(life_step(boards, "B3/S23"), gol_step(gol_boards()))
    # HighLife differs from Conway exactly where a dead cell has 6 live neighbours.
    alive = boards[..., 0] > 0.5
    neighbours = sum(
        np.roll(alive, s, axis=(1, 2)).astype(int)
        for s in [(a, b) for a in (-1, 0, 1) for b in (-1, 0, 1) if (a, b) != (0, 0)]
    )
    differ = life_step(boards, "B36/S23")[..., 0] != life_step(boards)[..., 0]
    np.testing.assert_array_equal(differ, ~alive & (neighbours == 6))
    assert differ.any()


def test_life_task_holds_out_all_512_boards_for_any_rule() -> None:
    preset = preset_for_kind("life:B36/S23")
    assert preset.name == "life:B36/S23" and preset.spec == PRESETS["gol"].spec
    task = preset.task()
    assert isinstance(task, LifeTask) and task.rule == "B36/S23"
    x, target = task.holdout(samples=3, seed=5)
    assert x.shape == (512, 3, 3, 1) and target.shape == (512, 3, 3, 1)
    np.testing.assert_array_equal(target, life_step(life_boards(), "B36/S23") > 0.5)
    xb, yb = task.sample(np.random.default_rng(0))
    np.testing.assert_array_equal(yb, life_step(xb, "B36/S23"))


@pytest.mark.parametrize("rule", ["B3/S23", "B36/S23", "B/S", "B012345678/S012345678"])
def test_life_targets_on_3x3_boards_are_the_rule_steps(rule: str) -> None:
    # 3x3 boards look their next state up by index; any board (extra channels, values
    # other than 0 and 1) and any number of steps must give what life_step gives.
    task = LifeTask(rule, channels=1, height=3, width=3, num_steps=1)
    x = np.random.default_rng(7).uniform(0, 1, (300, 3, 3, 2)).astype(np.float32)
    want = x[..., :1]
    for steps in (1, 2, 3):
        want = life_step(want, rule)
        got = task.target(x, steps)
        assert got.dtype == np.float32 and got.shape == (300, 3, 3, 1)
        np.testing.assert_array_equal(got, want)


def test_pattern_scoring_accepts_every_phase_and_only_those() -> None:
    tile = np.array([[1, 0, 0], [1, 1, 0]])
    task = PatternTask(tile, channels=2, height=7, width=8, batch=3)
    target = task.target(np.zeros((3, 7, 8, 2)))
    phases = task.accepted(target)
    assert len(phases) == 6  # every cyclic shift of a tile without symmetry
    out = np.zeros((3, 7, 8, 2), dtype=np.uint8)
    out[0, ..., 0] = task.pattern(7, 8)  # the training phase
    out[1, ..., 0] = task.pattern(7, 8, shift=(1, 2))  # another phase
    out[2, ..., 0] = task.pattern(7, 8, shift=(1, 2))
    out[2, 3, 3, 0] ^= 1  # one cell off another phase
    wrong = task.wrong(out, target)
    assert wrong.shape == (3, 7, 8, 1)
    assert [int(w.sum()) for w in wrong] == [0, 0, 1]
    assert np.count_nonzero(out[1, ..., :1] != target[1]) > 1  # not the training phase
    inverse = 1 - out[:1]  # the inverse is no phase of this tile
    assert task.wrong(inverse, target[:1]).any()
    errors = task.cell_error(out, target[0])
    np.testing.assert_allclose(errors, [0, 0, 1 / 56])


def test_pattern_phases_are_kept_per_grid_size_and_read_only() -> None:
    """The phases are made once per grid size (a repair scores thousands of candidates):
    the same for another size as a fresh task's, and no caller can change them."""
    tile = np.array([[1, 0, 0], [1, 1, 0]])
    task = PatternTask(tile, channels=2, height=7, width=8, batch=3)
    assert len(task.accepted(np.zeros((1, 7, 8, 1)))) == 6
    fresh = PatternTask(tile, channels=2, height=7, width=8, batch=3)
    for a, b in zip(task.accepted(np.zeros((1, 5, 4, 1))), fresh.accepted(np.zeros((1, 5, 4, 1)))):
        assert a.shape == (1, 5, 4, 1)
        np.testing.assert_array_equal(a, b)
    phase = task.accepted(np.zeros((1, 7, 8, 1)))[0]
    with pytest.raises(ValueError, match="read-only"):
        phase[0, 0, 0, 0] = not phase[0, 0, 0, 0]


def test_checkerboard_phases_include_its_inverse() -> None:
    task = get_preset("checkerboard-async").task()
    target = task.target(np.zeros((1, 14, 14, 8)))
    out = np.zeros((1, 14, 14, 8), dtype=np.uint8)
    out[..., 0] = 1 - checkerboard_target(14, 14)
    assert not task.wrong(out, target).any()
    assert len(task.accepted(target)) == 8  # the 2x2-block checkerboard: 8 distinct phases


def _png(path: Path, pixels: np.ndarray, mode: str) -> Path:
    from PIL import Image

    Image.fromarray(pixels.astype(np.uint8), mode).save(path)
    return path


def test_image_kinds_read_their_files(tmp_path: Path) -> None:
    tile = _png(tmp_path / "tile.png", np.array([[0, 255], [255, 255]]), "L")
    p = preset_for_kind(f"pattern:{tile}", size=10, asynchronous=True)
    assert (p.height, p.width, p.spec.fire_rate) == (10, 10, 0.6)
    assert p.spec == PRESETS["checkerboard-async"].spec
    np.testing.assert_array_equal(p.task().tile, [[0, 1], [1, 1]])
    rgba = np.zeros((6, 4, 4))
    rgba[1, 2] = [255, 0, 0, 255]  # red
    rgba[2, 1] = [255, 255, 255, 100]  # half-transparent white: premultiplied below 0.5
    rgb = preset_for_kind(f"grow:{_png(tmp_path / 'c.png', rgba, 'RGBA')}")
    assert rgb.spec == PRESETS["colored-g"].spec and (rgb.height, rgb.width) == (6, 4)
    task = rgb.task()
    assert isinstance(task, GrowTask) and task.seed_cell and task.image.sum() == 1
    assert task.image[1, 2].tolist() == [1, 0, 0]
    grey = np.zeros((9, 9))
    grey[2:7, 3:6] = 255
    small = preset_for_kind(f"grow:{_png(tmp_path / 'g.png', grey, 'L')}", size=5)
    assert small.spec == PRESETS["lizard"].spec and small.init is None
    assert small.task().image.shape[2] == 1 and max(small.height, small.width) <= 5
    with pytest.raises(FileNotFoundError, match="missing.png"):
        preset_for_kind(f"grow:{tmp_path / 'missing.png'}")
    for bad in ("life", "nope:x", "life:B3"):
        with pytest.raises(ValueError):
            preset_for_kind(bad)
    with pytest.raises(ValueError, match="size and async"):
        preset_for_kind("life:B3/S23", size=5)


@pytest.mark.parametrize("name", list(PRESETS))
def test_task_records_rebuild_the_same_task(name: str) -> None:
    task = get_preset(name).task()
    record = task.to_dict()
    again = task_from_dict(record)
    assert again is not None and again.to_dict() == record
    rng_a, rng_b = np.random.default_rng(3), np.random.default_rng(3)
    for a, b in zip(task.sample(rng_a), again.sample(rng_b)):
        np.testing.assert_array_equal(a, b)


def test_model_spec_build_derives_widths_and_wiring() -> None:
    import logicars
    from logicars.spec import ModelSpec

    spec = ModelSpec.build(channels=3, kernels=2, perceive=[8, 4], update=[16, 8, 4], num_steps=5)
    assert spec.perceive.layers == [9, 8, 4] and spec.perceive.n_kernels == 2
    assert spec.perceive.connections == ["first_kernel", "unique"]
    assert spec.update.layers == [3 + 3 * 4 * 2, 16, 8, 4, 3]
    assert spec.update.connections == ["unique"] * 4
    model = logicars.Model(spec, seed=0)  # the engine accepts the derived widths
    assert model.rollout(np.zeros((1, 5, 5, 3), np.float32)).shape == (1, 5, 5, 3)
    gol = get_preset("gol").spec
    again = ModelSpec.build(
        channels=1, kernels=16, perceive=[8, 4, 2, 1], update=[128] * 17 + [64, 32, 16, 8, 4, 2],
        num_steps=1, periodic=True, init_logit=5,
    )  # fmt: skip
    assert again.replace(relax=gol.relax) == gol  # the relaxation is a training setting
    # No perceive width: the engine's config check says so, naming the field.
    empty = ModelSpec.build(channels=1, kernels=2, perceive=[], update=[4], num_steps=1)
    with pytest.raises(ValueError, match=r"perceive\.layers needs an input width"):
        logicars.Model(empty, seed=0)


def test_task_options_are_checked() -> None:
    with pytest.raises(ValueError, match="height must be an integer >= 1, got 0"):
        LifeTask("B3/S23", channels=1, height=0, width=3)
    with pytest.raises(ValueError, match="batch must be an integer >= 1, got 1.5"):
        PatternTask(np.eye(2), channels=1, height=4, width=4, batch=1.5)
    with pytest.raises(ValueError, match=r"loss_channels \[2\] must be channels of 0..1"):
        PatternTask(np.eye(2), channels=2, height=4, width=4, loss_channels=[2])
    with pytest.raises(ValueError, match="needs a 2x2 grid"):
        GrowTask(np.eye(2), channels=2, height=3, width=2)
    with pytest.raises(NotImplementedError, match="must define start"):
        Task("bare", channels=1, height=2, width=2).sample(np.random.default_rng(0))


def test_a_tasks_boundary_and_steps_win_over_the_specs_as_documented() -> None:
    """`Task` says its `periodic`, `num_steps`, `fire_rate` and loss channels win over a
    spec's (issue 42: it said they must match, yet a mismatch was taken silently): the
    run's spec gets the task's, and the held-out check runs a model on the task's."""
    import logicars
    from logicars.circuit.evaluate import wrong_cells
    from logicars.presets import preset_for_task
    from logicars.tasks import Task

    class Stripes(Task):
        def start(self, rng: np.random.Generator, batch: int, h: int, w: int) -> np.ndarray:
            return random_bits(rng, (batch, h, w, self.channels))

        def target(self, x: np.ndarray) -> np.ndarray:
            t = np.zeros(x.shape[:3] + (1,), np.float32)
            t[:, :, ::2] = 1
            return t

    assert "win over a spec" in " ".join((Task.__doc__ or "").split())
    task = Stripes("stripes", channels=1, height=6, width=6, num_steps=3, periodic=False)
    spec = get_preset("gol").spec.replace(periodic=True, num_steps=1)
    preset = preset_for_task(task, spec, epochs=10)
    assert preset.spec.periodic is False and preset.spec.num_steps == 3
    # a model whose own spec says periodic and 1 step is checked on the task's terms
    model = logicars.Model(spec, seed=1)
    x = task.start(np.random.default_rng(0), 2, 6, 6)
    got = wrong_cells(model, task, x, task.target(x))
    want = task.wrong(model.simulate(x, 3, periodic=False), task.target(x))
    np.testing.assert_array_equal(got, want)
