"""The bit-sliced hard engine (`Model.simulate`) against the float hard rollout."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import FIXTURES

import logicars
from logicars import _core
from logicars.errors import InvalidValueError, MemoryLimitError, ShapeError
from logicars.spec import ModelSpec, PerceiveSpec, UpdateSpec

# Genuine two-input gates: AND, A&!B, !A&B, XOR, OR, NOR, XNOR, A|!B, !A|B, NAND.
TWO_INPUT = [1, 2, 4, 6, 7, 8, 9, 11, 13, 14]


def _unique_ok(n_in: int, n_out: int) -> bool:
    return 2 * n_out >= n_in and n_in * (n_in - 1) // 2 >= n_out


def make_spec(
    c: int,
    k: int,
    perceive: list[int],
    hidden: list[int],
    periodic: bool,
    fire_rate: float | None = None,
) -> ModelSpec:
    """The presets' wiring (`first_kernel`, then `unique` where the widths allow it)."""
    update = [c + c * perceive[-1] * k, *hidden, c]

    def wiring(layers: list[int]) -> list[str]:
        return ["unique" if _unique_ok(a, b) else "random" for a, b in zip(layers, layers[1:])]

    return ModelSpec(
        channels=c,
        perceive=PerceiveSpec(k, perceive, ["first_kernel", *wiring(perceive[1:])]),
        update=UpdateSpec(update, wiring(update)),
        num_steps=3,
        periodic=periodic,
        fire_rate=fire_rate,
    )


def random_model(spec: ModelSpec, seed: int, pass_through: float = 0.5) -> logicars.Model:
    """Random logits: a gate is a pass-through of A with probability `pass_through`,
    else mostly a genuine two-input gate (so that circuits do not fold to constants),
    sometimes a NOT or a pass-through of B, rarely a constant. Ties in the logits are kept
    at random places, as the first maximum wins in both engines."""
    model = logicars.Model(spec, seed=seed)
    rng = np.random.default_rng(seed)
    params = {}
    for name, p in model.params().items():
        logits = rng.normal(0, 1, size=p.shape).astype(np.float32)
        flat = logits.reshape(-1, 16)
        u = rng.random(flat.shape[0])
        n = flat.shape[0]
        op = np.select(
            [u < pass_through, u < pass_through + 0.003, u < pass_through + 0.05],
            [3, rng.choice([0, 15], n), rng.choice([5, 10, 12], n)],
            rng.choice(TWO_INPUT, n),
        )
        flat[np.arange(flat.shape[0]), op] = 4.0
        params[name] = logits
    model.set_params(params)
    return model


def random_grid(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    return (rng.random(shape) < 0.5).astype(np.float32)


CASES = [
    # (C, K, perceive, hidden, periodic, (B, H, W), steps)
    (1, 2, [9, 8, 4, 2, 1], [16, 8], True, (2, 5, 7), 4),
    (1, 4, [9, 8, 4, 2, 1], [24, 12], False, (1, 64, 64), 3),
    (1, 16, [9, 8, 4, 2, 1], [128, 128, 64, 32, 16, 8, 4, 2], True, (1, 70, 130), 3),
    (3, 2, [9, 8, 4, 2], [24, 16], True, (1, 70, 130), 2),
    (4, 2, [9, 8, 4, 2], [20, 12], False, (3, 6, 66), 3),
    (5, 3, [9, 8, 4, 2, 1], [32, 16], True, (2, 1, 9), 3),
    (8, 2, [9, 8, 4, 2], [40, 32, 16], False, (2, 16, 16), 4),
    (8, 4, [9, 8, 4, 2], [72, 64, 32, 16], True, (1, 13, 200), 2),
]


@pytest.mark.parametrize("masked", [False, True], ids=["sync", "masks"])
@pytest.mark.parametrize("case", CASES, ids=lambda c: f"C{c[0]}-{c[5]}-{'per' if c[4] else 'zero'}")
def test_simulate_equals_hard_rollout(case: tuple, masked: bool) -> None:
    c, k, perceive, hidden, periodic, (b, h, w), steps = case
    model = random_model(make_spec(c, k, perceive, hidden, periodic), seed=h * w + c)
    stats = model.hard_circuit_stats()
    assert stats["active_gates"] > 0, stats
    rng = np.random.default_rng(c + steps)
    x = random_grid(rng, (b, h, w, c))
    masks = (rng.random((b, steps, h, w)) < 0.6).astype(np.float32) if masked else None
    want = model.rollout(x, steps, hard=True, masks=masks, record=True)
    got = model.simulate(x, steps, masks=masks, record=True)
    assert got.dtype == np.uint8
    assert got.shape == (steps + 1, b, h, w, c)
    np.testing.assert_array_equal(got, want.astype(np.uint8))
    # Not a trivial comparison: the state changes and is not constant.
    assert 0 < got[-1].mean() < 1 and not np.array_equal(got[-1], got[0])


@pytest.mark.parametrize(
    "name", ["sync_small", "sync_periodic_c1", "async_small", "rgb_small", "checkerboard_full"]
)
def test_fixture_hard_out(name: str) -> None:
    path = FIXTURES / f"{name}.npz"
    model = logicars.Model.from_npz(path)
    with np.load(path) as z:
        x, hard_out = z["x"], z["hard_out"]
        masks = z["masks"] if "masks" in z.files else None
    got = model.simulate(x, model.spec.num_steps, masks=masks)
    np.testing.assert_array_equal(got, hard_out.astype(np.uint8))


def test_input_dtypes_agree() -> None:
    model = random_model(make_spec(3, 2, [9, 8, 4, 2], [24, 16], True), seed=4)
    x = random_grid(np.random.default_rng(0), (2, 9, 11, 3))
    want = model.simulate(x, 3)
    for xa in (x.astype(np.uint8), x.astype(bool), x.astype(np.float64), x.astype(np.int64)):
        np.testing.assert_array_equal(model.simulate(xa, 3), want)
    # the engine's own entry point takes uint8, bool and float32 directly
    np.testing.assert_array_equal(model._engine.hard_circuit().simulate(x.astype(bool), 3), want)


def _damage_box(h: int, w: int) -> np.ndarray:
    d = np.zeros((h, w), dtype=np.uint8)
    d[h // 4 : h // 2, w // 3 : w // 3 + 9] = 1
    return d


def test_damage_forces_zeros_and_is_lifted() -> None:
    c, steps = 3, 6
    model = random_model(make_spec(c, 2, [9, 8, 4, 2], [24, 16], False), seed=11)
    rng = np.random.default_rng(5)
    x = random_grid(rng, (2, 16, 70, c))
    dead = _damage_box(16, 70)
    got = model.simulate(x, steps, damage=dead, damage_steps=(1, 4), record=True)
    # The same with the float engine, one step at a time.
    state = x
    np.testing.assert_array_equal(got[0], x.astype(np.uint8))
    for t in range(steps):
        state = model.rollout(state, 1, hard=True)
        if 1 <= t < 4:
            state = state * (1 - dead)[None, :, :, None]
            assert not got[t + 1][:, dead == 1].any()
        np.testing.assert_array_equal(got[t + 1], state.astype(np.uint8))
    # Default: damage during every step; (B, H, W) damage hits only the boards given.
    per_board = np.stack([np.zeros_like(dead), dead])
    final = model.simulate(x, steps, damage=per_board)
    assert not final[1][dead == 1].any()
    np.testing.assert_array_equal(final[0], model.simulate(x, steps)[0])


def test_damage_with_async_masks() -> None:
    model = random_model(make_spec(2, 2, [9, 8, 4, 2], [16, 8], True), seed=3)
    rng = np.random.default_rng(1)
    x = random_grid(rng, (1, 12, 12, 2))
    masks = (rng.random((1, 5, 12, 12)) < 0.6).astype(np.uint8)
    dead = _damage_box(12, 12)
    got = model.simulate(x, 5, masks=masks, damage=dead, record=True)
    state = x
    for t in range(5):
        state = model.rollout(state, 1, hard=True, masks=masks[:, t : t + 1])
        state = state * (1 - dead)[None, :, :, None]
        np.testing.assert_array_equal(got[t + 1], state.astype(np.uint8))


def test_seeded_async_is_deterministic_and_thread_independent() -> None:
    model = random_model(make_spec(2, 2, [9, 8, 4, 2], [16, 8], False), seed=8)
    x = random_grid(np.random.default_rng(2), (2, 40, 150, 2))
    threads = logicars.num_threads()
    try:
        logicars.set_num_threads(1)
        one = model.simulate(x, 6, fire_rate=0.6, seed=42, record=True)
        logicars.set_num_threads(2)
        two = model.simulate(x, 6, fire_rate=0.6, seed=42, record=True)
        logicars.set_num_threads(3)
        three = model.simulate(x, 6, fire_rate=0.6, seed=42, record=True)
    finally:
        logicars.set_num_threads(threads)
    np.testing.assert_array_equal(one, two)
    np.testing.assert_array_equal(one, three)
    np.testing.assert_array_equal(one, model.simulate(x, 6, fire_rate=0.6, seed=42, record=True))
    assert not np.array_equal(one, model.simulate(x, 6, fire_rate=0.6, seed=43, record=True))
    # The masks it used, replayed in the float engine.
    masks = _core.draw_masks(2, 40, 150, 6, 0.6, 42)
    assert masks.shape == (2, 6, 40, 150) and abs(masks.mean() - 0.6) < 0.01
    want = model.rollout(x, 6, hard=True, masks=masks.astype(np.float32), record=True)
    np.testing.assert_array_equal(one, want.astype(np.uint8))


def test_async_spec_uses_its_fire_rate() -> None:
    spec = make_spec(2, 2, [9, 8, 4, 2], [16, 8], False, fire_rate=0.6)
    model = random_model(spec, seed=8)
    x = random_grid(np.random.default_rng(2), (1, 20, 20, 2))
    np.testing.assert_array_equal(
        model.simulate(x, 4, seed=7), model.simulate(x, 4, fire_rate=0.6, seed=7)
    )
    # fire_rate=1.0 forces synchronous updates
    sync = random_model(make_spec(2, 2, [9, 8, 4, 2], [16, 8], False), seed=8)
    np.testing.assert_array_equal(model.simulate(x, 4, fire_rate=1.0), sync.simulate(x, 4))


def test_recording_every_k_steps() -> None:
    model = random_model(make_spec(1, 2, [9, 8, 4, 2, 1], [16, 8], True), seed=2)
    x = random_grid(np.random.default_rng(3), (2, 10, 10, 1))
    full = model.simulate(x, 7, record=True)
    assert full.shape == (8, 2, 10, 10, 1)
    every3 = model.simulate(x, 7, record=3)
    assert _core.frame_steps(7, 3) == [0, 3, 6, 7]
    np.testing.assert_array_equal(every3, full[[0, 3, 6, 7]])
    np.testing.assert_array_equal(model.simulate(x, 7), full[-1])
    np.testing.assert_array_equal(model.simulate(x, 0), x.astype(np.uint8))


def test_bad_inputs_raise() -> None:
    model = random_model(make_spec(2, 2, [9, 8, 4, 2], [16, 8], True), seed=1)
    x = np.zeros((1, 8, 8, 2), dtype=np.float32)
    with pytest.raises(ValueError, match="0 or 1"):
        model.simulate(x + 0.5, 2)
    with pytest.raises(ShapeError):
        model.simulate(np.zeros((1, 8, 8, 3)), 2)
    with pytest.raises(ShapeError):
        model.simulate(np.zeros((8, 8, 2)), 2)
    with pytest.raises(ValueError, match="not both"):
        model.simulate(x, 2, fire_rate=0.5, masks=np.ones((1, 2, 8, 8)))
    with pytest.raises(ShapeError):
        model.simulate(x, 2, masks=np.ones((1, 3, 8, 8)))
    with pytest.raises(ValueError, match="0 or 1"):
        model.simulate(x, 2, masks=np.full((1, 2, 8, 8), 0.6))
    with pytest.raises(ValueError, match="fire_rate"):
        model.simulate(x, 2, fire_rate=0.0)
    with pytest.raises(ShapeError):
        model.simulate(x, 2, damage=np.ones((8, 9)))
    with pytest.raises(ValueError):
        model.simulate(x, 2, damage=np.ones((8, 8)), damage_steps=(2, 1))
    with pytest.raises(TypeError):
        model.simulate(x, 2.5)  # type: ignore[arg-type]
    with pytest.raises(_core.InvalidValueError):
        model._engine.hard_circuit().simulate(np.full((1, 8, 8, 2), 2, dtype=np.uint8), 2)
    with pytest.raises(_core.InvalidValueError):
        model._engine.hard_circuit().simulate(x, 2, words=3)


def test_recording_too_much_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    model = random_model(make_spec(1, 2, [9, 8, 4, 2, 1], [16, 8], True), seed=2)
    x = np.zeros((1, 256, 256, 1), dtype=np.uint8)
    monkeypatch.setenv("LOGICARS_MAX_MEMORY_MB", "16")
    with pytest.raises(MemoryLimitError, match="record"):
        model.simulate(x, 1000, record=True)
    assert model.simulate(x, 1000).shape == (1, 256, 256, 1)
    assert model.simulate(x, 1000, record=100).shape == (11, 1, 256, 256, 1)


def test_gol_preset_circuit_runs_on_a_big_grid() -> None:
    """A fresh GoL model is all pass-throughs: the step is the identity on a patch entry."""
    model = logicars.Model(logicars.get_preset("gol").spec, seed=0)
    stats = model.hard_circuit_stats()
    assert stats["active_gates"] == 0 and stats["program_gates"] > 0
    x = random_grid(np.random.default_rng(0), (1, 300, 257, 1))
    np.testing.assert_array_equal(
        model.simulate(x, 2), model.rollout(x, 2, hard=True).astype(np.uint8)
    )


def test_binary_arguments_are_uint8_bool_or_float32_of_0_and_1() -> None:
    """`_core`'s 0/1 arguments: the same run from uint8, bool or float32; any other
    object is a TypeError naming the argument, a float other than 0 or 1 a value error
    naming it too."""
    spec = make_spec(2, 2, [9, 8, 4, 2], [16, 8], True)
    circuit = random_model(spec, seed=5)._engine.hard_circuit()
    x = random_grid(np.random.default_rng(4), (1, 6, 6, 2))
    damage = np.zeros((6, 6), np.uint8)
    damage[2:4, 1:5] = 1
    want = circuit.simulate(x, 3, damage=damage)
    for as_type in (np.uint8, np.bool_, np.float32):
        got = circuit.simulate(x.astype(as_type), 3, damage=damage.astype(as_type))
        np.testing.assert_array_equal(got, want)
    # pyo3 names the argument in the exception's note.
    with pytest.raises(TypeError, match="expected a numpy array of uint8, bool or float32") as e:
        circuit.simulate(x.tolist(), 3)
    assert e.value.__notes__ == ["while processing 'x'"]
    with pytest.raises(TypeError) as e:
        circuit.simulate(x, 3, damage=damage.astype(np.int64))
    assert e.value.__notes__ == ["while processing 'damage'"]
    half = x.astype(np.float32)
    half[0, 1, 1, 0] = 0.5
    with pytest.raises(InvalidValueError, match="x: values must be 0 or 1"):
        circuit.simulate(half, 3)
    with pytest.raises(InvalidValueError, match="damage: values must be 0 or 1"):
        circuit.simulate(x, 3, damage=damage * np.float32(0.5))
    sim = _core.Simulator(circuit, x.astype(np.bool_))
    sim.load(x.astype(np.float32))
    with pytest.raises(InvalidValueError, match="x: values must be 0 or 1"):
        sim.load(half)


def test_compiled_circuit_follows_the_logits() -> None:
    spec = make_spec(2, 2, [9, 8, 4, 2], [16, 8], True)
    model = random_model(spec, seed=5)
    x = random_grid(np.random.default_rng(4), (1, 12, 12, 2))
    first = model.simulate(x, 3)
    circuit = model._engine.hard_circuit()
    np.testing.assert_array_equal(circuit.simulate(x, 3), first)
    assert dict(circuit.stats()) == model.hard_circuit_stats()
    # New logits: simulate recompiles; the old snapshot keeps the old gates.
    model.set_params(random_model(spec, seed=6).params())
    second = model.simulate(x, 3)
    assert not np.array_equal(second, first)
    np.testing.assert_array_equal(second, model.rollout(x, 3, hard=True).astype(np.uint8))
    np.testing.assert_array_equal(circuit.simulate(x, 3), first)
