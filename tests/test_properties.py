"""Property tests over random small models (hypothesis, derandomized for CI):

- the gradients of `Model.loss_and_grad` are the derivative of the loss: they match
  central finite differences of the float64 oracle's loss (tests/reference.py), whose
  value the engine's loss also matches;
- the bit-sliced hard engine (`Model.simulate`) equals the float hard rollout
  (`Model.rollout(..., hard=True)`) bit for bit.

Random specs vary channels, kernels, depths, wirings, steps, boundary and synchronous
versus explicit update masks; arrays come from a numpy generator seeded by hypothesis,
so a failing example shrinks to a small seed and shape.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from reference import Reference

import logicars

# Fixed examples, no deadline: the same cases every run, whatever the machine's load.
PROPERTY = settings(
    max_examples=25,
    derandomize=True,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow],
)


def unique_ok(n_in: int, out: int) -> bool:
    """What `unique` wiring needs (rust/core/src/wiring.rs::check)."""
    return 2 * out >= n_in and n_in * (n_in - 1) // 2 >= out


@st.composite
def specs(draw: st.DrawFn) -> logicars.ModelSpec:
    channels = draw(st.integers(1, 3))
    kernels = draw(st.integers(1, 2))
    perceive = draw(st.sampled_from([[9, 8], [9, 8, 4], [9, 8, 4, 2], [9, 8, 6, 3]]))
    p_conn = ["first_kernel"] + [
        draw(st.sampled_from(["unique", "random"])) for _ in range(len(perceive) - 2)
    ]
    n_in = channels + channels * perceive[-1] * kernels
    hidden = draw(st.lists(st.integers(2, 12), min_size=0, max_size=2))
    update = [n_in, *hidden, channels]
    u_conn = []
    for a, b in zip(update, update[1:]):
        choices = ["unique", "random"] if unique_ok(a, b) else ["random"]
        u_conn.append(draw(st.sampled_from(choices)))
    return logicars.ModelSpec(
        channels=channels,
        perceive=logicars.PerceiveSpec(kernels, perceive, p_conn),
        update=logicars.UpdateSpec(update, u_conn),
        num_steps=draw(st.integers(1, 3)),
        periodic=draw(st.booleans()),
        fire_rate=draw(st.sampled_from([None, 0.5])),
        loss_channels=sorted(draw(st.sets(st.integers(0, channels - 1), min_size=1))),
    )


@dataclass
class Example:
    model: logicars.Model
    rng: np.random.Generator
    shape: tuple[int, int, int, int]
    masks: np.ndarray | None  # (B, steps, H, W) of 0/1, or None for synchronous updates


@st.composite
def examples(draw: st.DrawFn) -> Example:
    spec = draw(specs())
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    model = logicars.Model(spec, seed=seed)
    scale = draw(st.sampled_from([0.5, 1.5, 3.0]))
    model.set_params(
        {
            name: rng.normal(0.0, scale, p.shape).astype(np.float32)
            for name, p in model.params().items()
        }
    )
    b, h, w = draw(st.integers(1, 2)), draw(st.integers(1, 5)), draw(st.integers(1, 5))
    # Async specs always get explicit masks here: the oracle cannot draw the engine's.
    explicit = spec.is_async or draw(st.booleans())
    masks = None
    if explicit:
        masks = (rng.random((b, spec.num_steps, h, w)) < 0.5).astype(np.float32)
    return Example(model, rng, (b, h, w, spec.channels), masks)


def oracle(model: logicars.Model) -> Reference:
    return Reference(model.spec.to_dict(), model.wires(), model.params())


def oracle_loss(model: logicars.Model, params: dict[str, np.ndarray], *args: Any) -> float:
    ref = Reference(model.spec.to_dict(), model.wires(), params)
    return ref.loss_and_grad(*args)[0]


@PROPERTY
@given(examples())
def test_gradient_matches_finite_differences(ex: Example) -> None:
    model, rng = ex.model, ex.rng
    x = rng.random(ex.shape).astype(np.float32)  # soft states in [0, 1]
    y = rng.random(ex.shape).astype(np.float32)
    steps = model.spec.num_steps
    ref_masks = None if ex.masks is None else ex.masks[..., None].astype(np.float64)

    loss, grads = model.loss_and_grad(x, y, masks=ex.masks)
    ref_loss = oracle(model).loss_and_grad(x, y, steps, ref_masks)[0]
    assert np.isclose(loss, ref_loss, rtol=1e-4, atol=1e-5), (loss, ref_loss)

    params = {k: v.astype(np.float64) for k, v in model.params().items()}
    eps = 1e-4
    # Directional derivatives along random directions, plus the steepest coordinate.
    directions = [{k: rng.normal(size=v.shape) for k, v in params.items()} for _ in range(2)]
    name = max(grads, key=lambda k: np.abs(grads[k]).max())
    unit = {k: np.zeros_like(v) for k, v in params.items()}
    unit[name][np.unravel_index(np.abs(grads[name]).argmax(), grads[name].shape)] = 1.0
    directions.append(unit)
    for d in directions:
        plus = {k: params[k] + eps * d[k] for k in params}
        minus = {k: params[k] - eps * d[k] for k in params}
        fd = (
            oracle_loss(model, plus, x, y, steps, ref_masks)
            - oracle_loss(model, minus, x, y, steps, ref_masks)
        ) / (2 * eps)
        analytic = sum(float(np.sum(grads[k].astype(np.float64) * d[k])) for k in params)
        norm = np.sqrt(sum(float(np.sum(grads[k].astype(np.float64) ** 2)) for k in params))
        scale = np.sqrt(sum(float(np.sum(d[k] ** 2)) for k in params))
        assert abs(analytic - fd) <= 1e-3 * norm * scale + 1e-5, (analytic, fd)


@PROPERTY
@given(examples(), st.integers(1, 4))
def test_bitsliced_engine_equals_float_hard_rollout(ex: Example, steps: int) -> None:
    model, rng = ex.model, ex.rng
    x = (rng.random(ex.shape) < 0.5).astype(np.float32)
    masks = None
    if ex.masks is not None:
        b, _, h, w = ex.masks.shape
        masks = (rng.random((b, steps, h, w)) < 0.5).astype(np.float32)
    want = model.rollout(x, steps=steps, hard=True, masks=masks)
    got = model.simulate(x.astype(np.uint8), steps=steps, masks=masks)
    assert got.dtype == np.uint8
    np.testing.assert_array_equal(got, want.astype(np.uint8))
    # The float hard rollout is exactly binary: nothing to round.
    assert set(np.unique(want)) <= {0.0, 1.0}


@PROPERTY
@given(examples())
def test_hard_rollout_matches_oracle(ex: Example) -> None:
    """The float hard rollout itself against the float64 oracle (argmax gates)."""
    model, rng = ex.model, ex.rng
    x = (rng.random(ex.shape) < 0.5).astype(np.float32)
    steps = model.spec.num_steps
    ref_masks = None if ex.masks is None else ex.masks[..., None].astype(np.float64)
    want = oracle(model).rollout(x, steps, hard=True, masks=ref_masks)
    np.testing.assert_array_equal(model.rollout(x, hard=True, masks=ex.masks), want)
