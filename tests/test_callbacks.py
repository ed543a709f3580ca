"""`train(callbacks=[...])`: what a callback sees, stopping, exceptions, determinism."""

from __future__ import annotations

import importlib
import json
from pathlib import Path

import numpy as np
import pytest
from test_train import losses, same_state, tiny_async_preset

import logicars
from logicars.circuit.evaluate import evaluate
from logicars.model import load_checkpoint
from logicars.train import EpochMetrics, restart_seed, train


def csv_losses(run_dir: Path) -> list[tuple[str, str, str]]:
    """Epoch, soft and hard loss of every row of metrics.csv as written (not the times)."""
    lines = (run_dir / "metrics.csv").read_text().splitlines()
    assert lines[0] == "epoch,soft_loss,hard_loss,elapsed_s,attempt,lr,validation,repair"
    return [tuple(line.split(",")[:3]) for line in lines[1:]]  # type: ignore[misc]


def test_callbacks_that_only_read_do_not_change_the_run(tmp_path: Path) -> None:
    """A no-op callback, and one that evaluates the model and runs it (a rollout draws
    async masks from the model's own stream), give the run without callbacks bit for
    bit."""
    preset = tiny_async_preset()
    plain = train(preset, epochs=6, seed=3, out=tmp_path / "plain", quiet=True)
    rows: list[EpochMetrics] = []
    checks: list[int] = []
    rng = np.random.default_rng(0)

    def evaluating(row: EpochMetrics, context: logicars.EpochContext) -> None:
        checks.append(evaluate(context.model, context.preset, samples=4).wrong_cells)
        x, _ = context.preset.task().sample(rng)
        context.model.rollout(x, hard=True)

    hooked = train(
        preset,
        epochs=6,
        seed=3,
        out=tmp_path / "hooked",
        quiet=True,
        callbacks=[lambda row, context: rows.append(row), evaluating],
    )
    assert same_state(plain.model, hooked.model)
    assert losses(plain) == losses(hooked)
    assert rows == hooked.metrics and len(checks) == 6
    assert csv_losses(plain.run_dir) == csv_losses(hooked.run_dir)
    assert hooked.summary["stopped_by_callback"] is None and not hooked.early_stopped


def test_context_across_resume_and_restarts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The context names the run directory, the epoch a call started after, and the
    attempt; its model is the one being trained (a restart's fresh wiring)."""
    policies = importlib.import_module("logicars.training.policies")
    monkeypatch.setattr(policies, "validation_score", lambda model, preset: [1, 0])
    preset = tiny_async_preset()
    seen: list[tuple[int, int, int, int]] = []
    wirings: dict[int, dict[str, np.ndarray]] = {}

    def record(row: EpochMetrics, context: logicars.EpochContext) -> None:
        assert context.run_dir == tmp_path / "run"
        assert context.preset.name == preset.name and context.solved_epoch is None
        seen.append((row.epoch, context.attempt, context.start_epoch, context.target_epochs))
        wirings[context.attempt] = context.model.wires()

    kw = {"seed": 5, "restart_every": 3, "quiet": True, "stop_on_solve": False}
    train(preset, epochs=4, out=tmp_path / "run", callbacks=[record], **kw)
    train(None, epochs=8, resume=tmp_path / "run", callbacks=[record], **kw)
    assert seen == [(1, 0, 0, 4), (2, 0, 0, 4), (3, 0, 0, 4), (4, 1, 0, 4)] + [
        (e, (e - 1) // 3, 4, 8) for e in range(5, 9)
    ]
    for attempt in (1, 2):
        fresh = logicars.Model(preset.spec, restart_seed(5, attempt)).wires()
        assert all(np.array_equal(fresh[k], wirings[attempt][k]) for k in fresh)


@pytest.mark.parametrize("how", ["return", "raise"])
def test_a_callback_stops_the_run_like_an_early_stop(tmp_path: Path, how: str) -> None:
    """Returning True or raising StopTraining ends the run after that epoch with its
    checkpoint and summary; resuming it reaches the straight run exactly."""
    preset = tiny_async_preset()
    straight = train(preset, epochs=7, seed=2, out=tmp_path / "straight", quiet=True)

    def stop_at_3(row: EpochMetrics, context: logicars.EpochContext) -> bool:
        if row.epoch == 3 and how == "raise":
            raise logicars.StopTraining
        return row.epoch == 3

    later: list[int] = []  # a callback after the one that stops still sees the epoch
    stopped = train(
        preset,
        epochs=7,
        seed=2,
        out=tmp_path / "run",
        quiet=True,
        callbacks=[stop_at_3, lambda row, context: later.append(row.epoch)],
    )
    assert later == [1, 2, 3]
    assert stopped.early_stopped and not stopped.interrupted
    assert stopped.summary["epochs"] == 3
    assert stopped.summary["stopped_by_callback"].endswith("stop_at_3")
    assert json.loads((stopped.run_dir / "summary.json").read_text()) == stopped.summary
    assert load_checkpoint(stopped.checkpoint)[1]["epoch"] == 3
    assert (stopped.run_dir / "loss.png").exists()

    resumed = train(None, resume=stopped.run_dir, quiet=True)
    assert same_state(straight.model, resumed.model)
    assert losses(straight) == losses(resumed)
    assert csv_losses(straight.run_dir) == csv_losses(resumed.run_dir)
    assert resumed.summary["stopped_by_callback"] is None


def test_a_callback_error_propagates_after_the_checkpoint(tmp_path: Path) -> None:
    """The exception reaches the caller; the checkpoint and metrics.csv hold the epoch it
    came after, and the run resumes from there to the straight run exactly."""
    preset = tiny_async_preset()
    straight = train(preset, epochs=6, seed=4, out=tmp_path / "straight", quiet=True)

    def fail_at_4(row: EpochMetrics, context: logicars.EpochContext) -> None:
        if row.epoch == 4:
            raise RuntimeError("callback failed")

    with pytest.raises(RuntimeError, match="callback failed"):
        train(
            preset,
            epochs=6,
            seed=4,
            out=tmp_path / "run",
            quiet=True,
            checkpoint_every=None,
            callbacks=[fail_at_4],
        )
    run = tmp_path / "run"
    assert load_checkpoint(run / "model.safetensors")[1]["epoch"] == 4
    assert len(csv_losses(run)) == 4 and not (run / "summary.json").exists()
    resumed = train(None, resume=run, quiet=True)
    assert same_state(straight.model, resumed.model)
    assert csv_losses(straight.run_dir) == csv_losses(run)


def test_bad_callbacks(tmp_path: Path) -> None:
    with pytest.raises(TypeError, match="list of callables"):
        train("gol", epochs=1, out=tmp_path / "a", quiet=True, callbacks=print)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="is not callable"):
        train("gol", epochs=1, out=tmp_path / "b", quiet=True, callbacks=[1])  # type: ignore[list-item]
    assert not (tmp_path / "a").exists() and not (tmp_path / "b").exists()
    # A stop request must be True: a stray return value is an error, not a stop.
    with pytest.raises(TypeError, match="returned float; a callback returns True"):
        train("gol", epochs=3, out=tmp_path / "c", quiet=True, callbacks=[lambda r, c: 1.0])


def test_sweep_refuses_callbacks(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="callbacks are Python callables of this process"):
        logicars.sweep({"preset": "gol", "callbacks": [[print]]}, out=tmp_path / "s")
