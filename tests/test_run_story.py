"""What a run's files say about how it went (issue 42): metrics.csv's attempt, learning
rate, validation and repair columns, and summary.json's reason for each attempt's end;
a run from before the columns resumes."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
from test_train import _fake_repairs

import logicars
from logicars.checkpoint import save_checkpoint
from logicars.model import load_checkpoint
from logicars.train import train


def _csv(run_dir: Path) -> list[dict[str, str]]:
    with open(run_dir / "metrics.csv", newline="") as f:
        return list(csv.DictReader(f))


def test_validation_and_repair_columns_and_an_unconfirmed_repairs_restart(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The issue's case: a repair takes the validation draw to 0 wrong cells, the
    confirmation draw fails, and the attempt restarts: the files say so."""
    _fake_repairs(monkeypatch, [3.0, 0.0, 0.0, 1.0, 5.0, 5.0], fixed_on_call=1, confirmed=False)
    r = train("gol", epochs=6, restart_every=3, out=tmp_path / "r", quiet=True)
    rows = _csv(r.run_dir)
    assert [row["attempt"] for row in rows] == ["1", "1", "1", "2", "2", "2"]
    lr = logicars.get_preset("gol").lr
    assert {float(row["lr"]) for row in rows} == {lr}
    # epoch 2: the check failed and the repair reached 0 on the validation draw only;
    # epoch 3: a check, no repair (within REPAIR_EVERY); epoch 1: no check (batch wrong)
    assert [(row["validation"], row["repair"]) for row in rows[:3]] == [
        ("", ""),
        ("unconfirmed", "0"),
        ("failed", ""),
    ]
    s = r.summary
    assert s["repairs"][0]["confirmed"] is False
    assert s["attempt_ends"][0]["epoch"] == 3
    assert s["attempt_ends"][0]["reason"].startswith("restarted at its length")
    assert s["attempt_ends"][-1]["attempt"] == 2


def test_a_solve_by_repair_is_the_last_attempts_end(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _fake_repairs(monkeypatch, [5.0, 0.0, 0.0], fixed_on_call=1)
    r = train("gol", epochs=50, out=tmp_path / "r", quiet=True)
    assert r.summary["attempt_ends"] == [
        {"attempt": 1, "epoch": 2, "reason": "solved by a repair at epoch 2"}
    ]
    assert [(row["validation"], row["repair"]) for row in _csv(r.run_dir)] == [
        ("", ""),
        ("passed", "0"),
    ]


def test_a_checkpoint_from_before_the_columns_resumes(tmp_path: Path) -> None:
    """Rows of 4 columns (the old format) resume: the attempt comes back from the
    restarts, the lr of those rows is empty, new rows have every column."""
    run = tmp_path / "run"
    kw = {"restart_every": 2, "quiet": True, "stop_on_solve": False, "repair": False}
    train("gol", epochs=5, out=run, **kw)
    model, extra = load_checkpoint(run / "model.safetensors")
    extra["metrics"] = [row[:4] for row in extra["metrics"]]  # as an older run wrote them
    for r in extra["restarts"]:
        del r["reason"]
    save_checkpoint(run / "model.safetensors", model, extra)
    resumed = train(None, resume=run, epochs=6, quiet=True)
    rows = _csv(run)
    assert [row["attempt"] for row in rows] == ["1", "1", "2", "2", "3", "3"]
    assert [row["lr"] == "" for row in rows] == [True] * 5 + [False]
    ends = resumed.summary["attempt_ends"]
    assert [e["reason"] for e in ends[:2]] == ["restarted", "restarted"]
    assert json.loads((run / "summary.json").read_text())["attempt_ends"] == ends
