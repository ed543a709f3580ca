"""Persisting and regenerating growth through `logicars.train` (issue 40): the pool phase
and its checkpoint, on a grow: task of one's own image (tests/data/heart-10x10.png, a
white heart on black). The slow tests train it on seeds outside the tuning (0-19) and
reporting (100-139) ranges (200 and 201, run once before the tests named them) and check
what `evaluate` reports on fresh damages."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from conftest import PAPER_LIZARD

import logicars
from logicars import growth
from logicars.circuit.evaluate import evaluate
from logicars.errors import InvalidValueError
from logicars.training.config import TrainConfig

HEART = Path(__file__).parent / "data" / "heart-10x10.png"

EXPERIMENT = """description = "a 10x10 heart of one's own"
task = "grow:heart.png"
[model]
channels = 16
kernels = 4
perceive = [8, 4, 2]
update = [256, 256, 256, 128, 64, 32, 16]
num_steps = 10
periodic = false
loss_channels = [0]
binarize_states = true
[training]
batch = 1
epochs = {epochs}
seed = {seed}
lr = 0.05
relax = "softmax"
drift_budget = 0
restart_every = 2000
growth = "{growth}"
"""


# The pool options of `train`'s defaults where a test's file does not set them, not the
# lizard preset's regrowing recipe (which a grey grow: image takes since 2026-11-30).
POOL_DEFAULTS = {
    "pool_batch": "4",
    "hold": "0",
    "hold_schedule": '"fixed"',
    "pool_epochs": "0",
    "pool_binarize_every": "0",
    "pool_attempts": "0",
}


def _experiment(tmp_path: Path, growth_mode: str, seed: int, epochs: int, extra: str = "") -> Path:
    shutil.copy(HEART, tmp_path / "heart.png")
    path = tmp_path / f"heart-{growth_mode}.toml"
    text = EXPERIMENT.format(epochs=epochs, seed=seed, growth=growth_mode)
    given = {line.split("=")[0].strip() for line in extra.splitlines()}
    defaults = "".join(f"{k} = {v}\n" for k, v in POOL_DEFAULTS.items() if k not in given)
    path.write_text(text + defaults + extra)
    return path


def test_growth_is_an_option_of_grow_tasks_only(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="option of grow: tasks"):
        logicars.train("gol", growth="persist", epochs=1, out=tmp_path / "r", quiet=True)
    with pytest.raises(InvalidValueError, match="growth must be one of"):
        logicars.train("lizard", growth="heal", epochs=1, out=tmp_path / "s", quiet=True)


def _pool_from_the_start(monkeypatch: pytest.MonkeyPatch) -> None:
    """The pool phase from the first epoch, whatever the circuit grows: so that a few
    epochs exercise it."""
    init = growth.GrowthBatches.__init__

    def pooling_init(self: growth.GrowthBatches, *args: object, **kw: object) -> None:
        init(self, *args, **kw)  # type: ignore[arg-type]
        self._start_pool(0)

    monkeypatch.setattr(growth.GrowthBatches, "__init__", pooling_init)


@pytest.mark.parametrize(
    ("growth_mode", "extra"),
    [
        ("persist", ""),
        ("regrow", "pool_steps = 17\n"),
        ("persist", 'pool_batch = 1\nhold = 20\nhold_schedule = "grow"\n'),
        ("persist", 'pool_batch = 1\nhold = 20\nhold_schedule = "grow"\nhold_tolerance = 1e9\n'),
    ],
)
def test_a_pool_run_resumes_as_the_straight_run(
    growth_mode: str, extra: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _pool_from_the_start(monkeypatch)
    # Windows of 3 epochs: the tolerant hold grows at epochs 3 and 6, and the run stopped
    # at epoch 4 saves a window begun.
    monkeypatch.setattr(growth, "HOLD_WINDOW", 3)
    path = _experiment(tmp_path, growth_mode, seed=3, epochs=8, extra=extra)
    straight = logicars.train(path, out=tmp_path / "straight", quiet=True, checkpoint_every=4)
    part = logicars.train(path, epochs=4, out=tmp_path / "part", quiet=True)
    assert (tmp_path / "part" / "pool.npz").is_file()
    resumed = logicars.train(resume=tmp_path / "part", epochs=8, quiet=True)
    losses = [(r.soft_loss, r.hard_loss) for r in straight.metrics]
    assert losses == [(r.soft_loss, r.hard_loss) for r in resumed.metrics]
    for name, value in straight.model.params().items():
        np.testing.assert_array_equal(value, resumed.model.params()[name])
    with (
        np.load(tmp_path / "straight" / "pool.npz") as a,
        np.load(tmp_path / "part" / "pool.npz") as b,
    ):
        assert np.array_equal(a["pool"], b["pool"])
    assert part.summary["preset"] == straight.summary["preset"]
    assert straight.summary["pool_steps"] == (17 if "pool_steps" in extra else None)
    assert straight.summary["hold_schedule"] == ("grow" if "grow" in extra else "fixed")
    assert straight.summary["hold_tolerance"] == (1e9 if "tolerance" in extra else None)


def _pool_after(monkeypatch: pytest.MonkeyPatch, epochs: set[int]) -> None:
    """The pool phase starts after each of `epochs`, as if its circuit grew the target."""
    keep = growth.GrowthBatches.keep

    def forced(self: growth.GrowthBatches, epoch: int, hard: float, last: object) -> None:
        keep(self, epoch, 0.0 if epoch in epochs else hard, last)  # type: ignore[arg-type]

    monkeypatch.setattr(growth.GrowthBatches, "keep", forced)


def test_a_pool_fine_tune_runs_its_own_epochs_and_resumes_as_the_straight_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`pool_epochs`: from the epoch the pool phase starts (here forced after epoch 2), a
    fresh optimizer state, the phase's rounding rule and its own epochs, past the run's
    --epochs and its --restart-every; a run stopped inside the phase resumes bit for bit."""
    _pool_after(monkeypatch, {2})
    extra = 'pool_batch = 1\nhold = 20\nhold_schedule = "grow"\npool_epochs = 5\n'
    extra += "pool_binarize_every = 2\n"
    path = _experiment(tmp_path, "persist", seed=3, epochs=4, extra=extra)
    straight = logicars.train(path, restart_every=3, out=tmp_path / "straight", quiet=True)
    assert [r.epoch for r in straight.metrics] == list(range(1, 8))  # 2 + 5, no restart
    assert straight.summary["restarts"] == [] and straight.summary["pool_epochs"] == 5
    assert straight.model.spec.binarize_every == 2
    assert int(straight.model.optimizer_state()["t"]) == 5  # fresh after epoch 2

    def crash_at_4(row: logicars.EpochMetrics, context: object) -> None:
        if row.epoch == 4:
            raise RuntimeError("crash")

    with pytest.raises(RuntimeError, match="crash"):
        logicars.train(
            path, restart_every=3, out=tmp_path / "part", quiet=True, callbacks=[crash_at_4]
        )
    resumed = logicars.train(resume=tmp_path / "part", quiet=True)
    losses = [(r.soft_loss, r.hard_loss) for r in straight.metrics]
    assert losses == [(r.soft_loss, r.hard_loss) for r in resumed.metrics]
    for name, value in straight.model.params().items():
        np.testing.assert_array_equal(value, resumed.model.params()[name])
    with pytest.raises(ValueError, match="pool_binarize_every .* give both"):
        TrainConfig(batch=1, height=10, width=10, epochs=9, pool_binarize_every=2)


def test_a_pool_phase_that_ends_unsolved_makes_way_for_a_fresh_wiring(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`pool_attempts`: a pool phase ending without the target held restarts with a fresh
    wiring on the run's spec (not the phase's rounding rule), which grows again for the
    run's --epochs and gets a phase of its own; the run ends after the last phase. A run
    interrupted right where the phase ended restarts when resumed, as the straight one."""
    _pool_after(monkeypatch, {2, 9})  # epoch 2 of each attempt
    extra = "pool_batch = 1\npool_epochs = 5\npool_binarize_every = 3\npool_attempts = 2\n"
    path = _experiment(tmp_path, "persist", seed=3, epochs=4, extra=extra)
    every: dict[int, int | None] = {}

    def rounding(row: logicars.EpochMetrics, context: logicars.EpochContext) -> None:
        every[row.epoch] = context.model.spec.binarize_every

    straight = logicars.train(path, out=tmp_path / "straight", quiet=True, callbacks=[rounding])
    # The grow: kind rounds in every second epoch; the pool phases in every third.
    assert [every[e] for e in (1, 2, 3, 7, 8, 9, 10)] == [2, 3, 3, 3, 2, 3, 3]
    assert int(straight.model.optimizer_state()["t"]) == 5  # fresh after epoch 9
    # Attempt 1: epochs 1-2 growing, 3-7 its pool phase; attempt 2: 8-9 growing, 10-14.
    assert [r.epoch for r in straight.metrics] == list(range(1, 15))
    restarts = straight.summary["restarts"]
    assert [(r["epoch"], r.get("pool")) for r in restarts] == [(7, True)]
    assert restarts[0]["reason"].startswith("its pool phase ended without holding")
    assert [r.attempt for r in straight.metrics] == [1] * 7 + [2] * 7
    assert straight.summary["pool_attempts"] == 2 and straight.summary["solved_epoch"] is None

    def crash_at_7(row: logicars.EpochMetrics, context: object) -> None:
        if row.epoch == 7:
            raise RuntimeError("crash")

    with pytest.raises(RuntimeError, match="crash"):
        logicars.train(path, out=tmp_path / "part", quiet=True, callbacks=[crash_at_7])
    resumed = logicars.train(resume=tmp_path / "part", quiet=True)
    losses = [(r.soft_loss, r.hard_loss) for r in straight.metrics]
    assert losses == [(r.soft_loss, r.hard_loss) for r in resumed.metrics]
    for name, value in straight.model.params().items():
        np.testing.assert_array_equal(value, resumed.model.params()[name])
    with pytest.raises(ValueError, match="pool_attempts counts --pool-epochs"):
        TrainConfig(batch=1, height=10, width=10, epochs=9, pool_attempts=2)


def _summary(run: logicars.train.RunResult) -> dict:  # type: ignore[name-defined]
    return json.loads((run.run_dir / "summary.json").read_text())


@pytest.mark.slow
def test_a_persisting_heart_holds_its_target(tmp_path: Path) -> None:
    """Seed 200's persisting circuit grows the heart and holds it exactly to 10T."""
    run = logicars.train(
        _experiment(tmp_path, "persist", 200, 4000), out=tmp_path / "r", quiet=True
    )
    result = evaluate(run.model, run.preset)
    assert result.passed and result.growth is not None
    assert result.growth.holds_until == growth.REPORT_HORIZON * 10
    assert _summary(run)["hard_eval"]["passed"]


@pytest.mark.slow
def test_a_regenerating_heart_regrows_after_damage(tmp_path: Path) -> None:
    """Seed 201's regenerating circuit also regrows at least 80% of fresh damages."""
    run = logicars.train(_experiment(tmp_path, "regrow", 201, 6000), out=tmp_path / "r", quiet=True)
    result = evaluate(run.model, run.preset, seed=7)
    assert result.passed and result.growth is not None
    assert result.growth.regrow_share >= 0.8


def test_a_pool_run_is_the_same_on_any_thread_count(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _pool_from_the_start(monkeypatch)
    path = _experiment(tmp_path, "regrow", seed=5, epochs=5)
    one = logicars.train(path, out=tmp_path / "one", quiet=True, threads=1)
    two = logicars.train(path, out=tmp_path / "two", quiet=True, threads=2)
    assert [(r.soft_loss, r.hard_loss) for r in one.metrics] == [
        (r.soft_loss, r.hard_loss) for r in two.metrics
    ]
    for name, value in one.model.params().items():
        np.testing.assert_array_equal(value, two.model.params()[name])


def test_a_persisting_run_keeps_its_lowest_circuit(tmp_path: Path) -> None:
    """With no drift budget, a persisting run still tracks the circuit of its lowest hard
    loss (which is how an unsolved one ends with the circuit that grew its target);
    growing only does not."""
    path = _experiment(tmp_path, "persist", seed=3, epochs=6)
    persist = logicars.train(path, out=tmp_path / "p", quiet=True, checkpoint_every=2)
    assert (tmp_path / "p" / "lowest.safetensors").is_file()
    assert persist.summary["drift_budget"] == 0
    path = _experiment(tmp_path, "grow", seed=3, epochs=6)
    grow = logicars.train(path, out=tmp_path / "g", quiet=True, checkpoint_every=2)
    assert not (tmp_path / "g" / "lowest.safetensors").exists()
    assert grow.summary["growth"] == "grow"


def test_a_holding_runs_drift_search_scores_the_held_steps(tmp_path: Path) -> None:
    """An unsolved run ends with the engine's drift search: a growing run's scores step T,
    a persisting run's every step from T to 4T (what its check reads), never at the cost
    of step T."""
    for mode in ("grow", "persist"):  # regrow: the default
        path = _experiment(tmp_path, mode, seed=3, epochs=3)
        path.write_text(path.read_text().replace("drift_budget = 0", "drift_budget = 300"))
        run = logicars.train(path, out=tmp_path / mode, quiet=True)
        drift = [r for r in run.summary["repairs"] if r.get("method") == "drift"]
        assert drift and drift[-1]["wrong_after"] > 0, "an unsolved run's search"
        task = run.preset.task()
        steps = growth.wrong_by_step(run.model, task, growth.PERSIST_HORIZON * task.num_steps)
        at_t = steps[task.num_steps]
        want = growth.wrong_while_held(run.model, task) if mode == "persist" else at_t
        assert drift[-1]["wrong_after"] == want


def test_a_holding_runs_lowest_circuit_is_its_exact_epoch_closest_to_holding(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Among exact epochs (hard loss 0) of a persisting run, the lowest circuit is the one
    whose held score (wrong at T, then summed over T..4T) is lowest, the first of equals,
    not the latest exact one."""
    from types import SimpleNamespace

    from logicars.runstate import EpochMetrics, RunState
    from logicars.training import policies

    scores = iter([[0, 50], [0, 20], [0, 20], [0, 30]])
    monkeypatch.setattr(policies, "held_score", lambda model, task: next(scores))
    path = _experiment(tmp_path, "persist", seed=3, epochs=10)
    preset = logicars.presets.read_experiment(path).preset
    model = logicars.Model(preset.spec, seed=3)
    state = RunState.start(preset, None)
    run = SimpleNamespace(model=model, state=state)
    lowest = policies.LowestCircuit(model, state, tmp_path)
    for epoch, loss in enumerate([4.0, 0.0, 0.0, 0.0, 0.0, 2.0], start=1):
        lowest.before_step(run)
        lowest.after_step(run, EpochMetrics(epoch, 1.0, loss, 0.0))
    assert state.lowest == {"epoch": 3, "hard_loss": 0.0, "held": [0, 20]}


def test_a_run_trained_again_in_its_directory_ignores_the_old_pool(tmp_path: Path) -> None:
    """A sweep trains a point again from the start in its directory (a run killed between
    its final checkpoint and its summary): the pool an earlier run left there is not read
    (a resumed run's is), so the run draws what a fresh directory's does; and the run
    is the fresh one."""
    from logicars.training.pool import POOL_NAME, PoolBatches

    path = _experiment(tmp_path, "persist", seed=3, epochs=4)
    preset = logicars.presets.read_experiment(path).preset
    stale = growth.GrowthBatches(preset.task(), 3)
    stale._start_pool(7)
    np.savez(tmp_path / POOL_NAME, **stale.state())
    fresh = PoolBatches(preset.task(), preset.config, 3, tmp_path, resumed=False)
    assert not fresh.batches.pooling and not (tmp_path / POOL_NAME).exists()
    np.savez(tmp_path / POOL_NAME, **stale.state())
    resumed = PoolBatches(preset.task(), preset.config, 3, tmp_path, resumed=True)
    assert resumed.batches.pooling and resumed.batches.pooling_from == 7

    logicars.train(path, out=tmp_path / "a", quiet=True)
    (tmp_path / "a" / "model.safetensors").unlink()
    again = logicars.train(path, out=tmp_path / "a", quiet=True)
    first = logicars.train(path, out=tmp_path / "b", quiet=True)
    assert [m[:3] for m in again.metrics] == [m[:3] for m in first.metrics]


def test_a_loaded_run_keeps_its_growth_mode(tmp_path: Path) -> None:
    """`load_run` (what `logicars repair RUN`, `view` and `evaluate RUN` read) gives the
    growth mode the run trained with, not the preset's default: colored-g regrows by
    default, and a `--growth grow` run of it is checked at step T alone."""
    from logicars.growth import holds_target
    from logicars.runs import load_run

    for mode in ("grow", "persist"):  # regrow: the default
        run = logicars.train(
            "colored-g",
            growth=mode,
            epochs=1,
            drift_budget=0,
            repair=False,
            out=tmp_path / mode,
            quiet=True,
            threads=1,
        )
        preset = load_run(run.run_dir).preset
        assert preset is not None and preset.config.growth == mode
        assert holds_target(preset.task()) == (mode == "persist")


def test_the_growing_only_colored_g_example_is_the_old_default() -> None:
    """examples/colored-g-grow: the colored-g preset's model and numbers, growing only and
    with no search, as the preset was before its default became growth that persists (the
    paper's setting, reproducible from a file)."""
    from logicars.presets import get_preset, read_experiment

    path = Path(__file__).parents[1] / "examples" / "colored-g-grow" / "colored-g-grow.toml"
    example = read_experiment(path).preset
    preset = get_preset("colored-g")
    assert example.spec == preset.spec
    assert example.config == preset.config.replace(growth="grow", drift_budget=0)
    assert preset.config.growth == "regrow" and preset.config.pool_attempts == 3


def test_the_persisting_colored_g_example_is_the_default_without_damage() -> None:
    """examples/colored-g-persist: the colored-g preset trained to persist only (its
    default before it regrew): the start grid alone in each batch, no damage."""
    from logicars.presets import get_preset, read_experiment

    path = Path(__file__).parents[1] / "examples" / "colored-g-persist" / "colored-g-persist.toml"
    example = read_experiment(path).preset
    preset = get_preset("colored-g")
    assert example.spec == preset.spec
    assert example.config == preset.config.replace(growth="persist", pool_batch=1)
    assert (preset.config.growth, preset.config.pool_batch) == ("regrow", 2)


def test_the_persisting_lizard_example_is_the_paper_lizard_on_a_zero_boundary() -> None:
    """examples/lizard-persist: the paper lizard's model and growing phase
    (examples/lizard-grow), with a zero boundary for the torus and a long persisting
    fine-tune (docs/results.md, *A lizard that persists*)."""
    from dataclasses import replace

    from logicars.presets import read_experiment

    examples = Path(__file__).parents[1] / "examples"
    example = read_experiment(examples / "lizard-persist" / "lizard-persist.toml").preset
    preset = read_experiment(PAPER_LIZARD).preset
    assert preset.spec.periodic and not example.spec.periodic
    assert example.spec == replace(preset.spec, periodic=False)
    assert example.config == preset.config.replace(
        growth="persist",
        pool_batch=1,
        hold=3 * preset.spec.num_steps,
        hold_schedule="grow",
        pool_epochs=30000,
        pool_binarize_every=2,
        drift_budget=0,
    )
    assert preset.config.growth == "grow"


def test_the_paper_lizard_file_switches_off_the_presets_restarts_and_pool() -> None:
    """examples/lizard-grow takes the lizard preset's settings where it is silent, so it
    sets the ones the paper lizard left unset to 0 (none): its runs are the old preset's."""
    from logicars.presets import get_preset, read_experiment

    cfg = read_experiment(PAPER_LIZARD).preset.config
    none = (cfg.restart_every, cfg.pool_epochs, cfg.pool_binarize_every, cfg.pool_attempts)
    assert none == (None, None, None, None)
    assert (cfg.growth, cfg.pool_batch, cfg.hold, cfg.hold_schedule) == ("grow", 4, 0, "fixed")
    assert (cfg.stall_epochs, cfg.stall_loss, cfg.drift_budget) == (8000, 40, 400000)
    lizard = get_preset("lizard").config
    assert (lizard.restart_every, lizard.pool_epochs, lizard.pool_attempts) == (6000, 4000, 3)


def test_the_lizard_preset_is_the_colored_g_recipe_at_20_steps() -> None:
    """The lizard preset (since 2026-11-30): the coloured G's model and regrowing recipe
    on the lizard's 20x20 grid, with 20 steps, attempts of 6000 epochs and a hold of up to
    3T (docs/results.md, *A lizard that regrows*); the paper's growing only on the torus
    is examples/lizard-grow."""
    from dataclasses import replace

    from logicars.presets import get_preset, read_experiment

    paper = read_experiment(PAPER_LIZARD).preset
    g, example = get_preset("colored-g"), get_preset("lizard")
    assert paper.spec.periodic and paper.config.growth == "grow"
    assert example.task().image.shape == paper.task().image.shape
    assert example.spec == replace(
        g.spec, num_steps=20, loss_channels=[0], binarize_every=2, chunk_cells=80
    )
    assert not example.spec.periodic and example.spec.relax.mode == "softmax"
    cfg = example.config
    assert (cfg.height, cfg.width, cfg.epochs, cfg.restart_every) == (20, 20, 18000, 6000)
    assert (cfg.growth, cfg.pool_batch, cfg.hold) == ("regrow", 2, 3 * 20)
    same = ("hold_schedule", "pool_epochs", "pool_binarize_every", "pool_attempts", "lr")
    assert all(getattr(cfg, k) == getattr(g.config, k) for k in same)
    assert cfg.drift_budget == g.config.drift_budget
