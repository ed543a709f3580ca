"""`logicars.growth`: damage discs, the grown/persists/regrows checks, the sample pool of
persistent training, and the rule that `evaluate` never draws what training-time checks
draw (`logicars.draws`)."""

from __future__ import annotations

import dataclasses
import itertools
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from conftest import REPO

import logicars
from logicars import draws, growth
from logicars.circuit.evaluate import evaluate, heldout_inputs, validate
from logicars.circuit.repair import _set_op, repair
from logicars.growth import (
    DAMAGE_RADIUS,
    HOLD_WINDOW,
    PERSIST_HORIZON,
    REPORT_HORIZON,
    GrowthBatches,
    damage_discs,
    growth_checks,
    wrong_while_held,
)
from logicars.pretrained import load_pretrained, pretrained
from logicars.tasks import GrowTask, Task

HEART = np.array(
    [
        [0, 1, 1, 0, 1, 1, 0, 0],
        [1, 1, 1, 1, 1, 1, 1, 0],
        [1, 1, 1, 1, 1, 1, 1, 0],
        [0, 1, 1, 1, 1, 1, 0, 0],
        [0, 0, 1, 1, 1, 0, 0, 0],
        [0, 0, 0, 1, 0, 0, 0, 0],
        [0, 0, 0, 0, 0, 0, 0, 0],
        [0, 0, 0, 0, 0, 0, 0, 0],
    ],
    dtype=np.float32,
)


def _task(growth: str = "grow", steps: int = 3) -> GrowTask:
    return GrowTask(HEART, name="heart", growth=growth, channels=4, num_steps=steps)


def test_damage_discs_cut_the_pattern() -> None:
    masks = damage_discs(np.random.default_rng(0), HEART[..., None], 50)
    assert masks.shape == (50, 8, 8) and masks.dtype == np.uint8
    r = DAMAGE_RADIUS * 8
    assert np.all(masks.sum(axis=(1, 2)) <= np.pi * (r + 1) ** 2)
    assert np.all((masks * HEART).sum(axis=(1, 2)) > 0)  # every disc erases target cells
    again = damage_discs(np.random.default_rng(0), HEART[..., None], 50)
    assert np.array_equal(masks, again)
    assert not np.array_equal(masks, damage_discs(np.random.default_rng(1), HEART[..., None], 50))


class _FakeCircuit:
    """A hard circuit that writes the target from step `reach` on until step `breaks`, and
    regrows a damage only when it erased at most `heals` cells; with `needs_seed`, an
    empty grid stays wrong."""

    def __init__(
        self, task: GrowTask, reach: int, breaks: int, heals: int, needs_seed: bool = False
    ) -> None:
        self.task, self.reach, self.breaks, self.heals = task, reach, breaks, heals
        self.needs_seed = needs_seed

    def simulate(self, x: np.ndarray, steps: int, **kw: Any) -> np.ndarray:
        b = len(x)
        target = np.zeros((b, 8, 8, 4), np.uint8)
        target[..., 0] = HEART
        grids = np.stack(
            [target if self.reach <= t < self.breaks else 1 - target for t in range(steps + 1)]
        )
        damage = kw.get("damage")
        if damage is not None:
            unhealed = damage.reshape(b, -1).sum(axis=1) > self.heals
            grids[-1][unhealed, ..., 0] = 0
        if self.needs_seed:
            empty = ~x.reshape(b, -1).any(axis=1)
            grids[:, empty, ..., 0] = 1 - HEART
        return grids if kw.get("record") else grids[-1]


def test_growth_checks_read_what_the_circuit_does() -> None:
    task = _task(steps=3)
    rng = np.random.default_rng(4)
    fake = _FakeCircuit(task, reach=3, breaks=9, heals=0)
    checks = growth_checks(fake, task, rng, 10)
    assert checks.grown and not checks.persists
    assert checks.holds_until == 8
    assert len(checks.wrong_by_step) == REPORT_HORIZON * 3 + 1
    assert (checks.regrown, checks.damages) == (0, 10)
    forever = _FakeCircuit(task, reach=2, breaks=10**6, heals=10**6)
    checks = growth_checks(forever, task, rng, 10)
    assert checks.persists and checks.holds_until == REPORT_HORIZON * 3
    assert checks.regrow_share == 1.0
    late = _FakeCircuit(task, reach=4, breaks=10**6, heals=10**6)
    checks = growth_checks(late, task, rng, 0)
    assert not checks.grown and not checks.persists and checks.holds_until == 2
    assert PERSIST_HORIZON * 3 < REPORT_HORIZON * 3


def test_grows_without_its_seed_tells_a_frame_drawing_from_a_growing_circuit() -> None:
    task = _task(steps=3)
    rng = np.random.default_rng(4)
    frame = growth_checks(_FakeCircuit(task, 3, 10**6, 0), task, rng, 0)
    seeded = growth_checks(_FakeCircuit(task, 3, 10**6, 0, needs_seed=True), task, rng, 0)
    assert frame.grown and seeded.grown
    assert frame.grows_without_seed is True and seeded.grows_without_seed is False
    seedless = GrowTask(HEART, name="heart", channels=4, num_steps=3, seed_cell=False)
    none = growth_checks(_FakeCircuit(seedless, 3, 10**6, 0), seedless, rng, 0)
    assert none.grows_without_seed is None
    # The paper's torus lizard (the shipped one until 2026-11-30) grows from its seed: an
    # empty grid stays empty. The check is reported in `evaluate`'s named checks and never
    # required. The shipped regrowing lizard draws it from the zero boundary's frame.
    torus = load_pretrained(REPO / "tests" / "data" / "lizard-grow-seed0.npz")
    paper = dataclasses.replace(torus.preset, config=torus.preset.config.replace(growth="grow"))
    ev = evaluate(torus.model, paper, samples=2)
    check = ev.checks()["grows without its seed"]
    assert check["solved"] == 0 and check["required"] is False
    assert ev.passed
    shipped = pretrained("lizard")
    ev = evaluate(shipped.model, shipped.preset, samples=2)
    assert ev.passed and ev.checks()["grows without its seed"]["solved"] == 1


def test_grow_batches_are_the_start_grid() -> None:
    task = _task("grow")
    batches = GrowthBatches(task, seed=0)
    x, y = batches.sample(1)
    assert (batches.steps, batches.loss_from) == (3, 3)
    assert np.array_equal(x, task.sample(np.random.default_rng(0))[0])
    assert y[..., 0].sum() == HEART.sum()
    batches.keep(1, 0.0, None)  # growing only never pools
    assert not batches.pooling and batches.state() == {}


@pytest.mark.parametrize("growth", ["persist", "regrow"])
def test_pool_batches(growth: str) -> None:
    task = _task(growth)
    batches = GrowthBatches(task, seed=3, pool_size=8, batch=4, damaged=1, hold=2)
    start = task.sample(np.random.default_rng(0))[0][0]
    # First it learns to grow, from the start grid alone.
    x, _ = batches.sample(1)
    assert len(x) == 1 and np.array_equal(x[0], start) and batches.steps == 3
    batches.keep(1, 5.0, None)
    assert not batches.pooling
    batches.keep(2, 0.0, None)  # it grows the target: the pool phase begins
    assert batches.pooling and batches.pooling_from == 2
    assert (batches.steps, batches.loss_from) == (5, 3)
    x, y = batches.sample(3)
    assert x.shape == (4, 8, 8, 4) and y.shape == (4, 8, 8, 4)
    assert np.array_equal(x[0], start)
    # The pool's grids come back as the circuit left them.
    grown = np.zeros((4, 8, 8, 4), np.float32)
    grown[..., 0] = HEART
    batches.keep(3, 1.0, grown)
    assert batches.pool is not None
    assert sum(np.array_equal(g, grown[0]) for g in batches.pool) == 4
    x, _ = batches.sample(4)
    # The grid furthest from the target (a start) is replaced by the start; regrow erases
    # a disc of the last one, which is a grown grid.
    assert np.array_equal(x[0], start)
    lit = x[..., 0].reshape(4, -1).sum(axis=1)
    if growth == "regrow":
        assert lit[-1] < HEART.sum()
    else:
        assert lit[-1] == HEART.sum()
    # Same seed and epoch, same draws: what a resumed run draws.
    again = GrowthBatches(task, seed=3, pool_size=8, batch=4, damaged=1, hold=2)
    again.load_state(batches.state())
    assert again.pooling_from == 2
    assert np.array_equal(again.sample(5)[0], batches.sample(5)[0])


def test_pool_rollouts_of_drawn_lengths() -> None:
    """`max_steps` > T: each pool batch runs a length drawn from T to `max_steps` (the
    loss at its last step), the same on a resumed run; a fresh attempt starts at T."""
    task = _task("persist")
    batches = GrowthBatches(task, seed=3, pool_size=8, batch=4, max_steps=7, hold=1)
    batches.keep(1, 0.0, None)
    lengths = []
    for epoch in range(2, 40):
        batches.sample(epoch)
        assert batches.steps == batches.loss_from + 1
        lengths.append(batches.loss_from)
    assert set(lengths) == set(range(3, 8))
    again = GrowthBatches(task, seed=3, pool_size=8, batch=4, max_steps=7, hold=1)
    again.load_state(batches.state())
    again.sample(39)
    assert again.loss_from == lengths[-1]
    batches.reset()
    assert (batches.steps, batches.loss_from) == (3, 3)
    with pytest.raises(ValueError, match="longest rollout"):
        GrowthBatches(task, seed=3, max_steps=2)


def test_a_growing_hold_extends_after_each_exact_epoch() -> None:
    """`hold_schedule="grow"`: the pool phase's loss reads 0 states after T at first, one
    more after each exact epoch (not after an inexact one), up to `hold`; a resumed run
    goes on from the hold it had, and a fresh attempt starts again at 0. `batch` 1 is
    the start grid alone."""
    task = _task("persist")
    batches = GrowthBatches(task, seed=3, pool_size=8, batch=1, hold=2, hold_schedule="grow")
    start = task.sample(np.random.default_rng(0))[0]
    batches.keep(1, 0.0, None)  # grown: the pool phase begins
    holds = []
    for epoch, hard in zip(range(2, 8), [0.0, 3.0, 0.0, 0.0, 0.0, 1.0]):
        x, _ = batches.sample(epoch)
        assert np.array_equal(x, start) and batches.loss_from == 3
        holds.append(batches.steps - 3)
        batches.keep(epoch, hard, np.zeros_like(x))
    assert holds == [0, 1, 1, 2, 2, 2]
    again = GrowthBatches(task, seed=3, pool_size=8, batch=1, hold=2, hold_schedule="grow")
    again.load_state(batches.state())
    assert again.steps == 5
    batches.reset()
    batches.keep(9, 0.0, None)
    assert batches.steps == 3
    fixed = GrowthBatches(task, seed=3, pool_size=8, batch=2, hold=2)
    fixed.keep(1, 0.0, None)
    assert fixed.steps == 5
    with pytest.raises(ValueError, match="hold_schedule"):
        GrowthBatches(task, seed=3, hold_schedule="sometimes")


def test_a_hold_tolerance_lengthens_the_hold_after_a_near_window() -> None:
    """`hold_tolerance`: the growing hold also lengthens after `HOLD_WINDOW` pool epochs
    whose median hard loss is at most the tolerance, and only then (a window above it, or
    one epoch short of it, does not); the window is part of the resume state, and a
    fresh attempt starts it anew."""
    task = _task("persist")

    def batches() -> GrowthBatches:
        return GrowthBatches(
            task, seed=3, pool_size=8, batch=1, hold=3, hold_schedule="grow", hold_tolerance=1.0
        )

    near = batches()
    near.keep(1, 0.0, None)  # grown: the pool phase begins
    for hard in [2.0] * 60 + [0.5] * 50:
        near.keep(0, hard, None)
    assert near.hold == 0  # the last 100: fifty 2.0s and fifty 0.5s, a median of 1.25
    near.keep(0, 0.5, None)
    assert (near.hold, near.recent) == (1, [])  # a median of 0.5: one more step held
    for _ in range(HOLD_WINDOW - 1):
        near.keep(0, 0.5, None)
    assert near.hold == 1  # one epoch short of a window
    near.keep(0, 0.5, None)
    assert near.hold == 2
    near.keep(0, 0.25, None)
    again = batches()
    again.load_state(near.state())
    assert (again.hold, again.recent) == (2, [0.25])
    near.reset()
    assert (near.hold, near.recent) == (0, [])
    with pytest.raises(ValueError, match="hold_tolerance paces"):
        logicars.get_preset("lizard").config.replace(hold_schedule="fixed", hold_tolerance=1.0)


def test_a_pool_larger_than_its_batch_is_required() -> None:
    with pytest.raises(ValueError, match="growth pool"):
        GrowthBatches(_task("persist"), seed=0, pool_size=2, batch=4)
    with pytest.raises(ValueError, match="growth must be one of"):
        _task("heal")


# ---- evaluate never draws what the training-time checks draw ----------------------------


def _recorded_seeds(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    seeds: list[int] = []
    holdout = Task.holdout

    def spy(self: Task, samples: int = 16, seed: int = 0) -> Any:
        seeds.append(seed)
        return holdout(self, samples, seed)

    monkeypatch.setattr(Task, "holdout", spy)
    damage = draws.damage_rng

    def damage_spy(seed: int) -> np.random.Generator:
        seeds.append(seed)
        return damage(seed)

    monkeypatch.setattr(draws, "damage_rng", damage_spy)
    return seeds


def test_training_time_checks_and_evaluate_use_disjoint_streams(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    seeds = _recorded_seeds(monkeypatch)
    preset = logicars.get_preset("checkerboard-async")
    model = logicars.Model(preset.spec, seed=0)
    for seed in (0, 1, 2):
        validate(model, preset, 64, seed)
        repair(model, preset, budget=1, seed=seed)
    grow = logicars.get_preset("lizard")
    validate(logicars.Model(grow.spec, seed=0), grow, 4, 1)
    training = list(seeds)
    seeds.clear()
    evaluate(model, preset, samples=64, seed=1)
    evaluate(logicars.Model(grow.spec, seed=0), grow, samples=4, seed=1)
    evaluated = list(seeds)
    assert training and evaluated
    assert max(training) < draws.EVALUATION_BASE <= min(evaluated)
    # And so the grids themselves differ: no start of evaluate's is a validation start.
    checked = {g.tobytes() for s in (0, 1, 2) for g in heldout_inputs(model, preset, 64, s)[0]}
    x, _ = preset.task().holdout(64, draws.evaluation_seed(0))
    assert not checked & {g.tobytes() for g in x.astype(np.float32)}


def test_a_training_time_check_cannot_take_an_evaluation_seed() -> None:
    preset = logicars.get_preset("checkerboard")
    model = logicars.Model(preset.spec, seed=0)
    with pytest.raises(ValueError, match="check's seed"):
        validate(model, preset, 4, draws.EVALUATION_BASE)
    with pytest.raises(ValueError, match="check's seed"):
        heldout_inputs(model, preset, 4, draws.EVALUATION_BASE + 1)


def test_train_step_at_reads_the_states_it_is_given() -> None:
    """One loss state is `train_step` exactly; `keep_last` returns the hard circuit's last
    state, which `simulate` gives for the same logits."""
    task = _task("persist", steps=3)
    spec = logicars.ModelSpec.build(
        channels=4, kernels=2, perceive=[8, 4], update=[32, 16, 8], num_steps=3, loss_channels=[0]
    )
    a, b = logicars.Model(spec, seed=0), logicars.Model(spec, seed=0)
    x, y = task.sample(np.random.default_rng(0), 2)
    last_want = a.simulate(x.astype(np.uint8), 5)
    soft, hard, last = a.train_step_at(x, y, steps=5, loss_from=3, lr=0.05, keep_last=True)
    assert last is not None and np.array_equal(last, last_want)
    a2, b2 = logicars.Model(spec, seed=0), logicars.Model(spec, seed=0)
    assert a2.train_step_at(x, y, steps=3, loss_from=3, lr=0.05)[:2] == b2.train_step(x, y, lr=0.05)
    assert np.array_equal(a2._engine.logits(), b2._engine.logits())
    with pytest.raises(ValueError, match="loss_from"):
        b.train_step_at(x, y, steps=3, loss_from=4)


def test_a_repair_of_a_holding_circuit_counts_every_held_step() -> None:
    """A persisting or regenerating run's repair and kept-circuit choice score the wrong
    cells of every step from T to 4T (`wrong_while_held`), the check the run must pass, not
    step T alone: a circuit broken after T scores its later steps."""
    from logicars.runs import load_run
    from logicars.training.policies import validation_score

    run = load_run(Path(__file__).parent / "data" / "heart-regrow-seed0.safetensors")
    assert run.preset is not None and run.preset.config.growth == "regrow"
    task = run.preset.task()
    assert wrong_while_held(run.model, task) == 0  # it persists
    params = run.model.params()
    # Set one gate to constant 0 or 1: the first that leaves the pattern grown at T but
    # no longer held.
    found = None
    for name in sorted(params):
        rows = params[name].reshape(-1, params[name].shape[-1])
        for gate, op in itertools.product(range(len(rows)), (0, 15)):
            old = rows[gate].copy()
            _set_op(rows[gate], op)
            run.model.set_params(params)
            held = wrong_while_held(run.model, task)
            if held > 0 and growth.wrong_by_step(run.model, task, task.num_steps)[-1] == 0:
                found = (name, gate, op)
                break
            rows[gate] = old
        if found:
            break
    assert found is not None
    assert validation_score(run.model, run.preset)[1] == held
    result = repair(run.model, run.preset, budget=50, method="greedy")
    assert result.wrong_before == held and result.wrong_after <= held
    assert wrong_while_held(run.model, task) == result.wrong_after
    assert growth.wrong_by_step(run.model, task, task.num_steps)[-1] == 0  # still grows
