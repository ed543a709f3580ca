"""The engine against an independent float64 oracle, finite differences, and itself
across thread counts, on shapes and modes the fixtures do not cover."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import PAPER_LIZARD, REPO
from reference import Reference

import logicars
from logicars.errors import InvalidValueError, ShapeError
from logicars.presets import read_experiment


def small_spec(channels: int, periodic: bool, fire_rate=None, steps: int = 3) -> logicars.ModelSpec:
    k = 2
    return logicars.ModelSpec(
        channels=channels,
        perceive=logicars.PerceiveSpec(
            n_kernels=k, layers=[9, 8, 4, 2], connections=["first_kernel", "unique", "unique"]
        ),
        update=logicars.UpdateSpec(
            layers=[channels + channels * 2 * k, 16, 8, channels],
            connections=["random", "unique", "random"],
        ),
        num_steps=steps,
        periodic=periodic,
        fire_rate=fire_rate,
        loss_channels=list(range(min(channels, 2))),
    )


def random_model(spec: logicars.ModelSpec, seed: int) -> logicars.Model:
    """A model whose gates are mixed (not the pass-through init), as in the fixtures."""
    model = logicars.Model(spec, seed=seed)
    rng = np.random.default_rng(seed)
    params = {}
    for name, p in model.params().items():
        w = rng.normal(0, 1.5, p.shape).astype(np.float32)
        w[..., 3] += 2.0
        params[name] = w
    model.set_params(params)
    return model


def oracle(model: logicars.Model) -> Reference:
    return Reference(model.spec.to_dict(), model.wires(), model.params())


CASES = [
    # channels, periodic, fire_rate, (B, H, W)
    (1, True, None, (2, 5, 7)),
    (3, False, None, (1, 9, 4)),
    (2, True, 0.6, (2, 6, 5)),
    (4, False, 0.5, (1, 11, 13)),
    (1, False, None, (3, 1, 1)),
]


@pytest.mark.parametrize("channels, periodic, fire_rate, bhw", CASES)
def test_matches_float64_oracle(channels, periodic, fire_rate, bhw) -> None:
    spec = small_spec(channels, periodic, fire_rate)
    model = random_model(spec, seed=channels)
    rng = np.random.default_rng(7)
    x = (rng.random(bhw + (channels,)) < 0.5).astype(np.float32)
    y = (rng.random(bhw + (channels,)) < 0.5).astype(np.float32)
    steps = spec.num_steps
    masks = (
        None if fire_rate is None else (rng.random(bhw[:1] + (steps,) + bhw[1:] + (1,)) < fire_rate)
    )
    masks = None if masks is None else masks.astype(np.float32)
    ref = oracle(model)
    np.testing.assert_allclose(
        model.rollout(x, masks=masks), ref.rollout(x, steps, masks=masks), atol=1e-5
    )
    np.testing.assert_array_equal(
        model.rollout(x, hard=True, masks=masks), ref.rollout(x, steps, True, masks)
    )
    loss, grads = model.loss_and_grad(x, y, masks=masks)
    ref_loss, ref_grads = ref.loss_and_grad(x, y, steps, masks=masks)
    assert loss == pytest.approx(ref_loss, rel=1e-5)
    for name, g in grads.items():
        np.testing.assert_allclose(g, ref_grads[name], atol=1e-6, rtol=1e-3, err_msg=name)


def _paper_lizard() -> logicars.Preset:
    return read_experiment(PAPER_LIZARD).preset


@pytest.mark.parametrize("name", ["lizard", "colored-g"])
def test_growth_preset_architectures_match_float64_oracle(name: str) -> None:
    """The growth models at their full widths, which the fixtures (C <= 8) do not reach:
    the paper lizard's 128 channels with one perception output per kernel (update input
    640 = 128 + 128 * 1 * 4) and colored-g's 64 channels with two (576; the lizard
    preset's since 2026-11-30). Two steps on a small grid keep it fast; the widths, not
    the grid, are what is checked."""
    preset = logicars.get_preset(name) if name != "lizard" else _paper_lizard()
    spec = preset.spec.replace(num_steps=2)
    model = random_model(spec, seed=1)
    rng = np.random.default_rng(3)
    shape = (1, 4, 5, spec.channels)
    x = (rng.random(shape) < 0.5).astype(np.float32)
    y = (rng.random(shape) < 0.5).astype(np.float32)
    ref = oracle(model)
    np.testing.assert_allclose(model.rollout(x), ref.rollout(x, 2), atol=1e-5)
    np.testing.assert_array_equal(model.rollout(x, hard=True), ref.rollout(x, 2, True))
    loss, grads = model.loss_and_grad(x, y)
    ref_loss, ref_grads = ref.loss_and_grad(x, y, 2)
    assert loss == pytest.approx(ref_loss, rel=1e-5)
    for gname, g in grads.items():
        np.testing.assert_allclose(g, ref_grads[gname], atol=1e-6, rtol=1e-3, err_msg=gname)


@pytest.mark.parametrize(
    "periodic, fire_rate", [(True, None), (False, None), (False, 0.6), (True, 0.6)]
)
def test_gradient_agrees_with_finite_differences(periodic, fire_rate) -> None:
    spec = small_spec(2, periodic, fire_rate, steps=2)
    model = random_model(spec, seed=3)
    rng = np.random.default_rng(11)
    x = (rng.random((2, 6, 7, 2)) < 0.5).astype(np.float32)
    y = (rng.random((2, 6, 7, 2)) < 0.5).astype(np.float32)
    masks = None if fire_rate is None else (rng.random((2, 2, 6, 7)) < fire_rate).astype(np.float32)
    _, grads = model.loss_and_grad(x, y, masks=masks)
    base = model.params()
    h = 1e-2
    checked = 0
    for name, g in grads.items():
        # the entries with the largest gradients: well above float32 noise
        for idx in np.argsort(-np.abs(g).ravel())[:3]:
            losses = []
            for sign in (1, -1):
                p = {k: v.copy() for k, v in base.items()}
                p[name].flat[idx] += sign * h
                model.set_params(p)
                losses.append(model.loss_and_grad(x, y, masks=masks)[0])
            fd = (losses[0] - losses[1]) / (2 * h)
            assert fd == pytest.approx(g.flat[idx], rel=2e-2, abs=2e-3), (name, idx)
            checked += 1
    model.set_params(base)
    assert checked == 3 * len(grads)


def test_training_is_bit_identical_across_thread_counts() -> None:
    # 3 and 5 threads split the 10 chunks unevenly, so the wavefront's workers take
    # each other's chunks; the order they run in must change no bit.
    spec = small_spec(3, False, 0.6, steps=4)
    rng = np.random.default_rng(5)
    x = (rng.random((2, 16, 20, 3)) < 0.5).astype(np.float32)  # 640 cells: 10 chunks
    y = (rng.random((2, 16, 20, 3)) < 0.5).astype(np.float32)
    runs = []
    for threads in (1, 2, 3, 5):
        logicars.set_num_threads(threads)
        model = random_model(spec, seed=9)
        losses = [model.train_step(x, y) for _ in range(3)]
        runs.append((losses, model.params(), model.optimizer_state()))
    logicars.set_num_threads(0)
    for run in runs[1:]:
        assert run[0] == runs[0][0]
        for name in runs[0][1]:
            np.testing.assert_array_equal(run[1][name], runs[0][1][name])
        for name in runs[0][2]:
            np.testing.assert_array_equal(run[2][name], runs[0][2][name])


def test_models_trained_in_parallel_threads_match_serial_training() -> None:
    # Four Python threads train at once (the engine releases the GIL), so several
    # wavefronts share the engine's pool: none may wait on another, or change its results.
    from concurrent.futures import ThreadPoolExecutor

    spec = small_spec(3, True, 0.6, steps=5)
    rng = np.random.default_rng(11)
    x = (rng.random((2, 12, 20, 3)) < 0.5).astype(np.float32)  # 480 cells: 7.5 chunks
    y = (rng.random((2, 12, 20, 3)) < 0.5).astype(np.float32)

    def train(seed: int) -> list[float]:
        model = random_model(spec, seed=seed)
        return [model.train_step(x, y) for _ in range(6)]

    seeds = [1, 2, 3, 4]
    serial = [train(seed) for seed in seeds]
    for threads in (1, 2, 3):
        logicars.set_num_threads(threads)
        try:
            with ThreadPoolExecutor(max_workers=len(seeds)) as pool:
                parallel = list(pool.map(train, seeds))
        finally:
            logicars.set_num_threads(0)
        assert parallel == serial


def test_fresh_model_is_pass_through_and_seeded() -> None:
    spec = small_spec(2, True)
    a, b, c = (
        logicars.Model(spec, seed=1),
        logicars.Model(spec, seed=1),
        logicars.Model(spec, seed=2),
    )
    for p in a.params().values():
        assert np.all(p[..., 3] == 10) and np.all(np.delete(p, 3, axis=-1) == 0)
    for name, w in a.wires().items():
        np.testing.assert_array_equal(w, b.wires()[name])
    assert any(not np.array_equal(w, c.wires()[n]) for n, w in a.wires().items())


def test_recorded_rollout_holds_every_step() -> None:
    model = random_model(small_spec(2, True), seed=4)
    x = (np.random.default_rng(0).random((1, 8, 8, 2)) < 0.5).astype(np.float32)
    traj = model.rollout(x, steps=5, record=True)
    assert traj.shape == (6, 1, 8, 8, 2)
    np.testing.assert_array_equal(traj[0], x)
    np.testing.assert_array_equal(traj[5], model.rollout(x, steps=5))
    np.testing.assert_array_equal(traj[2], model.rollout(x, steps=2))


def test_large_grid_runs() -> None:
    model = random_model(small_spec(1, True), seed=6)
    x = (np.random.default_rng(1).random((1, 96, 130, 1)) < 0.5).astype(np.float32)
    out = model.rollout(x, steps=2, hard=True)
    np.testing.assert_array_equal(out, oracle(model).rollout(x, 2, hard=True))


@pytest.mark.parametrize(
    "make, exc, words",
    [
        (lambda m: m.rollout(np.zeros((1, 4, 4, 3), np.float32)), ShapeError, "channels"),
        (lambda m: m.rollout(np.zeros((4, 4, 2), np.float32)), ShapeError, "4-d"),
        (
            lambda m: m.rollout(np.full((1, 4, 4, 2), np.nan, np.float32)),
            InvalidValueError,
            "finite",
        ),
        (lambda m: m.rollout(np.full((1, 4, 4, 2), 2, np.float32)), InvalidValueError, "[0, 1]"),
        (lambda m: m.rollout(np.zeros((1, 4, 4, 2)), steps=0), ValueError, "steps"),
        (lambda m: m.rollout(np.array([["a"]])), TypeError, "numeric"),
        (
            lambda m: m.loss_and_grad(np.zeros((1, 4, 4, 2)), np.zeros((1, 4, 5, 2))),
            ShapeError,
            "y",
        ),
    ],
)
def test_bad_input_raises_clear_errors(make, exc, words) -> None:
    model = logicars.Model(small_spec(2, True), seed=0)
    with pytest.raises(exc, match=None) as info:
        make(model)
    assert words in str(info.value)


def test_unique_wiring_that_cannot_cover_its_inputs_is_refused() -> None:
    spec = small_spec(2, True)
    bad = spec.replace(
        update=logicars.UpdateSpec(layers=[10, 4, 2], connections=["unique", "unique"])
    )
    with pytest.raises(InvalidValueError, match="2\\*out >= in"):
        logicars.Model(bad)


def test_param_layout_validates_a_config_without_building_a_model() -> None:
    spec = small_spec(2, True)
    layout = logicars._core.param_layout(spec.to_json())
    assert layout == logicars.Model(spec)._engine.param_info()
    assert [name for name, _, _ in layout][:2] == ["perceive_logits_0", "perceive_logits_1"]
    bad = spec.replace(
        update=logicars.UpdateSpec(layers=[10, 4, 2], connections=["unique", "unique"])
    )
    with pytest.raises(InvalidValueError, match="2\\*out >= in"):
        logicars._core.param_layout(bad.to_json())


RELAXATIONS = [
    {"mode": "gumbel-st", "tau": 0.7, "noise": 1.5},
    {"mode": "gumbel-st", "warmup": 3},
    {"mode": "hard-st", "tau": 2.0},
    {"mode": "gumbel-soft", "tau": 0.5},
    {"mode": "anneal", "tau": 0.2, "warmup": 1, "steps": 4},
    {"mode": "truth-table"},
    {"mode": "truth-table-st"},
    {"mode": "truth-table", "hard_fraction": 0.5, "warmup": 2},
    {"mode": "softmax", "hard_fraction": 0.5, "warmup": 2},
]


def relaxed_model(relax: dict, channels: int, fire_rate, seed: int) -> logicars.Model:
    """A model in relaxation `relax` whose gates are mixed, with `seed` optimizer steps
    taken (the noise and the schedules depend on the step)."""
    spec = small_spec(channels, True, fire_rate)
    spec = spec.replace(relax=logicars.Relaxation(**relax))
    model = logicars.Model(spec, seed=seed)
    rng = np.random.default_rng(seed)
    params = {
        name: rng.normal(0, 1.5, p.shape).astype(np.float32) for name, p in model.params().items()
    }
    model.set_params(params)
    state = model.optimizer_state()
    state["t"] = np.array(seed, dtype=np.int64)
    model.set_optimizer_state(state)
    return model


@pytest.mark.parametrize("relax", RELAXATIONS, ids=lambda r: "-".join(map(str, r.values())))
@pytest.mark.parametrize("fire_rate", [None, 0.6])
def test_relaxations_match_float64_oracle(relax, fire_rate) -> None:
    """Forward (soft and hard) and gradients of every relaxation, sync and async, at a
    few optimizer steps (noise, warmup and annealing depend on it), against the oracle's
    own implementation of each definition."""
    for step in (0, 2, 5):
        model = relaxed_model(relax, 2, fire_rate, seed=step)
        assert_matches_oracle(model, fire_rate, seed=step, step=step, hard=True)


def assert_matches_oracle(
    model: logicars.Model, fire_rate, seed: int, step: int, hard: bool
) -> None:
    """`model` (2 channels) against the oracle on random 2x5x6 grids drawn from `seed`:
    the soft rollout (and with `hard` the hard one), the loss and every gradient; the
    oracle's noise is that of `seed` and optimizer step `step`."""
    rng = np.random.default_rng(seed)
    bhw = (2, 5, 6)
    x = (rng.random(bhw + (2,)) < 0.5).astype(np.float32)
    y = (rng.random(bhw + (2,)) < 0.5).astype(np.float32)
    steps = model.spec.num_steps
    masks = None
    if fire_rate is not None:
        masks = (rng.random((2, steps, 5, 6, 1)) < fire_rate).astype(np.float32)
    ref = Reference(model.spec.to_dict(), model.wires(), model.params(), seed=seed, step=step)
    np.testing.assert_allclose(
        model.rollout(x, masks=masks), ref.rollout(x, steps, masks=masks), atol=1e-5
    )
    if hard:
        np.testing.assert_array_equal(
            model.rollout(x, hard=True, masks=masks), ref.rollout(x, steps, True, masks)
        )
    loss, grads = model.loss_and_grad(x, y, masks=masks)
    ref_loss, ref_grads = ref.loss_and_grad(x, y, steps, masks=masks)
    assert loss == pytest.approx(ref_loss, rel=1e-5)
    for name, g in grads.items():
        np.testing.assert_allclose(g, ref_grads[name], atol=1e-6, rtol=1e-3, err_msg=name)


@pytest.mark.parametrize("relax", RELAXATIONS[:1] + RELAXATIONS[2:], ids=lambda r: r["mode"])
def test_relaxed_training_is_bit_identical_across_thread_counts(relax) -> None:
    spec = small_spec(2, False, 0.6).replace(relax=logicars.Relaxation(**relax))
    rng = np.random.default_rng(5)
    x = (rng.random((2, 6, 7, 2)) < 0.5).astype(np.float32)
    y = (rng.random((2, 6, 7, 2)) < 0.5).astype(np.float32)
    results = []
    for threads in (1, 2):
        logicars.set_num_threads(threads)
        model = logicars.Model(spec, seed=4)
        losses = [model.train_step(x, y) for _ in range(6)]
        results.append((losses, model.params()))
    logicars.set_num_threads(0)
    assert results[0][0] == results[1][0]
    for name, p in results[0][1].items():
        np.testing.assert_array_equal(p, results[1][1][name], err_msg=name)


def test_a_saturated_circuit_stays_in_range_in_a_relaxed_epoch() -> None:
    """Seed 17's lizard circuit at epoch 8847 of a run with hard gates (hard_fraction 0.3
    from epoch 3000): its gates are saturated, float rounding took relaxed states just
    past [0, 1] and its XOR-like gates doubled that in every layer, so this relaxed
    epoch's loss was NaN (inf by step 12) until the states were clamped between steps."""
    model = logicars.Model.load(REPO / "tests" / "data" / "lizard-seed17-epoch8847.safetensors")
    assert model.optimizer_state()["t"] % model.spec.binarize_every != 0, "a relaxed epoch"
    x, y = _paper_lizard().task().sample(np.random.default_rng(0))
    loss, grads = model.loss_and_grad(x, y)
    assert np.isfinite(loss) and all(np.isfinite(g).all() for g in grads.values())
    states = model.respecified(model.spec.with_rounding(False)).rollout(x, record=True)
    assert states.min() >= 0.0 and states.max() <= 1.0


def test_engine_default_beta1_is_the_packages() -> None:
    """The binding's literal default for `beta1` is `DEFAULT_BETA1` (the notebook's)."""
    spec = logicars.get_preset("gol").spec
    x = np.random.default_rng(0).integers(0, 2, (2, 6, 6, spec.channels)).astype(np.float32)
    y = x.copy()
    implicit, explicit = (logicars.Model(spec, seed=3) for _ in range(2))
    for _ in range(2):
        implicit._engine.train_step(x, y, None, lr=0.05, weight_decay=0.01)
        explicit._engine.train_step(
            x, y, None, lr=0.05, weight_decay=0.01, beta1=logicars.spec.DEFAULT_BETA1
        )
    np.testing.assert_array_equal(implicit._engine.logits(), explicit._engine.logits())
