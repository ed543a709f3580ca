"""The engines of hard circuits (the JIT and the slot engine), `logicars.Simulator` and
`bench --hard`: every engine gives `Model.simulate`'s and the float hard rollout's
grids bit for bit."""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_bitsliced import make_spec
from test_bitsliced import random_model as bitsliced_random_model

import logicars
from logicars import Model, Simulator
from logicars.cli import main
from logicars.errors import InvalidValueError, ShapeError
from logicars.hard_bench import (
    check_game_of_life,
    compare,
    compiler,
    reference_source,
    trained_gol_model,
)


def random_model(channels: int, periodic: bool, seed: int) -> Model:
    """A small model with random hard gates (the slot engine's tests' generator)."""
    spec = make_spec(channels, 2, [9, 8, 4, 2], [24, 16], periodic)
    return bitsliced_random_model(spec, seed)


def _runs_here(engine: str) -> bool:
    """Whether this machine runs `engine` (asking for one it cannot run is an error)."""
    try:
        Simulator(random_model(1, True, 0), np.zeros((1, 4, 4, 1), np.uint8), engine=engine)
    except InvalidValueError:
        return False
    return True


ALL_ENGINES = ["jit-avx2", "jit-avx512", "slots"]
ENGINES = [e for e in ALL_ENGINES if _runs_here(e)]


def _skip_unless_here(engine: str) -> None:
    if engine not in ENGINES:
        pytest.skip(f"this machine cannot run the {engine} engine")


def test_build_info_reports_the_engine() -> None:
    info = logicars.build_info()
    assert info["hard_engine"] in ("jit-avx512", "jit-avx2", "slots")
    if info["simd_level"] != "portable" and "avx2" in info["target_features"]:
        assert info["hard_engine"] in ("jit-avx512", "jit-avx2")
        assert "jit-avx2" in ENGINES
    if info["simd_level"].startswith("avx512") and "jit-avx512" in ENGINES:
        assert info["hard_engine"] == "jit-avx512"


@pytest.mark.parametrize("engine", ["jit-avx2", "jit-avx512"])
def test_jit_back_ends_on_wide_odd_grids(engine: str) -> None:
    """Each JIT back end (the AVX-512 one skipped, visibly, where the CPU lacks it) on
    widths that are not multiples of a vector, every channel count, both boundaries,
    sync and with explicit masks."""
    _skip_unless_here(engine)
    rng = np.random.default_rng(5)
    for channels in range(1, 9):
        for periodic in (True, False):
            model = random_model(channels, periodic, 40 + channels)
            width = [511, 513, 700, 1000, 1025][channels % 5]
            x = (rng.random((1, 3, width, channels)) < 0.5).astype(np.uint8)
            masks = (rng.random((1, 2, 3, width)) < 0.6).astype(np.float32)
            for m in (None, masks):
                got = Simulator(model, x, engine=engine).run(2, masks=m)
                want = Simulator(model, x, engine="slots").run(2, masks=m)
                np.testing.assert_array_equal(got, want, err_msg=f"C={channels} {periodic}")


@settings(max_examples=25, deadline=None)
@given(
    channels=st.integers(1, 8),
    periodic=st.booleans(),
    height=st.integers(1, 9),
    width=st.sampled_from([1, 7, 63, 64, 65, 200, 257, 513, 600]),
    masked=st.booleans(),
    seed=st.integers(0, 1000),
)
def test_engines_equal_the_float_hard_rollout(
    channels: int, periodic: bool, height: int, width: int, masked: bool, seed: int
) -> None:
    model = random_model(channels, periodic, seed)
    rng = np.random.default_rng(seed)
    x = (rng.random((2, height, width, channels)) < 0.5).astype(np.float32)
    steps = 3
    masks = (rng.random((2, steps, height, width)) < 0.6).astype(np.float32) if masked else None
    want = model.rollout(x, steps, hard=True, masks=masks)
    for engine in ENGINES:
        got = Simulator(model, x, engine=engine).run(steps, masks=masks)
        np.testing.assert_array_equal(got, want, err_msg=engine)
    np.testing.assert_array_equal(model.simulate(x, steps, masks=masks), want)


def test_the_kept_hard_circuit_follows_the_logits() -> None:
    """The engine keeps one hard circuit (and its compiled kernels) between calls, and
    drops it when a training step or new parameters change the logits."""
    model = random_model(2, True, 7)
    rng = np.random.default_rng(2)
    x = (rng.random((2, 9, 70, 2)) < 0.5).astype(np.float32)
    kept = model.hard_circuit()
    assert model.hard_circuit() is kept
    # Widths and variants the kernels are compiled for, called twice each.
    for width in (70, 130, 70):
        xw = (rng.random((1, 5, width, 2)) < 0.5).astype(np.float32)
        for _ in range(2):
            np.testing.assert_array_equal(
                model.simulate(xw, 2, fire_rate=0.5, seed=3),
                model.rollout(xw, 2, hard=True, masks=_core_masks(model, xw, 2, 0.5, 3)),
            )
    params = model.params()
    name = next(n for n in params if n.startswith("update_logits_"))
    params[name] = rng.normal(size=params[name].shape).astype(np.float32) * 5
    model.set_params(params)
    assert model.hard_circuit() is not kept
    np.testing.assert_array_equal(model.simulate(x, 2), model.rollout(x, 2, hard=True))
    kept = model.hard_circuit()
    model.train_step(x, x)
    assert model.hard_circuit() is not kept
    np.testing.assert_array_equal(model.simulate(x, 2), model.rollout(x, 2, hard=True))


def _core_masks(model: Model, x: np.ndarray, steps: int, fire_rate: float, seed: int) -> np.ndarray:
    """The masks `simulate(..., fire_rate, seed)` draws, as rollout's `(B, steps, H, W)`."""
    b, h, w, _ = x.shape
    return logicars._core.draw_masks(b, h, w, steps, fire_rate, seed).astype(np.float32)


@pytest.mark.parametrize("engine", ALL_ENGINES)
def test_simulator_continues_from_its_grid(engine: str) -> None:
    _skip_unless_here(engine)
    model = random_model(3, True, 4)
    rng = np.random.default_rng(1)
    x = (rng.random((2, 17, 70, 3)) < 0.5).astype(np.uint8)
    sim = Simulator(model, x, engine=engine)
    assert sim.engine == engine.split("-")[0] and sim.shape == (2, 17, 70, 3)
    np.testing.assert_array_equal(sim.state(), x)
    sim.advance(2)
    last = sim.run(3)
    np.testing.assert_array_equal(last, model.simulate(x, 5))
    np.testing.assert_array_equal(sim.state(), last)
    # Seeded masks start again at each call, as in `simulate`.
    sim.load(x)
    one = sim.run(1, fire_rate=0.5, seed=9)
    np.testing.assert_array_equal(one, model.simulate(x, 1, fire_rate=0.5, seed=9))
    dead = np.zeros((17, 70), np.uint8)
    dead[3:9, 60:70] = 1
    sim.load(x)
    frames = sim.run(4, damage=dead, damage_steps=(0, 2), record=2)
    np.testing.assert_array_equal(
        frames, model.simulate(x, 4, damage=dead, damage_steps=(0, 2), record=2)
    )


def test_simulator_bad_input() -> None:
    model = random_model(1, True, 0)
    x = np.zeros((1, 8, 8, 1), np.uint8)
    with pytest.raises(InvalidValueError, match="engine must be"):
        Simulator(model, x, engine="fast")
    sim = Simulator(model, x)
    with pytest.raises(ShapeError, match="simulator's grid"):
        sim.load(np.zeros((1, 8, 9, 1), np.uint8))
    bad = x.copy()
    bad[0, 5, 3, 0] = 2
    # uint8 grids are checked once, by the engine while it packs them.
    with pytest.raises(InvalidValueError, match="found 2 at flat index 43"):
        sim.load(bad)
    with pytest.raises(InvalidValueError, match="found 2 at flat index 43"):
        model.simulate(bad, 1)
    with pytest.raises(ShapeError, match="masks"):
        sim.run(2, masks=np.ones((1, 3, 8, 8)))


def test_the_trained_gol_circuit_and_its_c_reference() -> None:
    model = trained_gol_model()
    check_game_of_life(model)
    src = reference_source(model.export("c"))
    assert "v4u" in src and "#pragma omp parallel for" in src
    assert src.count("const v4u g") == model.hard_circuit_stats()["active_gates"]


@pytest.mark.skipif(compiler() is None, reason="no C compiler")
def test_bench_hard_json(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["bench", "--hard", "--sizes", "64", "--threads", "1", "--rounds", "1", "--json"]
    assert main(argv) == 0
    (line,) = capsys.readouterr().out.strip().splitlines()
    r = json.loads(line)
    assert r["side"] == 64 and r["threads"] == 1
    assert r["engine"] == logicars.build_info()["hard_engine"]
    # The reference was built, checked against Model.simulate and timed.
    assert "c_reference_error" not in r, r.get("c_reference_error")
    for key in ("gcups", "gcups_slots", "gcups_c", "ratio_to_c", "gcups_per_cpu_c"):
        assert r[key] > 0


def test_bench_hard_refuses_presets(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bench", "--hard", "gol"]) == 2
    assert "give no presets" in capsys.readouterr().err


def test_the_engine_comparison_needs_a_round() -> None:
    """`compare` takes its rates as medians of the rounds: none is a clear error, not a
    division of None (the CLI's --rounds is checked too)."""
    with pytest.raises(InvalidValueError, match="rounds must be >= 1, got 0"):
        compare([32], [1], 0)
