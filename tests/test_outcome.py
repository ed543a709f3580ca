"""The last line of a run says SOLVED or NOT SOLVED, on what, and never contradicts
itself (issue 42)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from logicars.outcome import final_repair, outcome_line, solved


def _summary(**changes: Any) -> dict[str, Any]:
    s: dict[str, Any] = {
        "preset": "pattern:tile",
        "epochs": 4500,
        "final_soft_loss": 0.004232,
        "final_hard_loss": 128.0,  # the last epoch's, before the final repair
        "restarts": [{"epoch": 1500, "seed": 7}, {"epoch": 3000, "seed": 8}],
        "repairs": [
            {"epoch": 1500, "wrong_before": 40, "wrong_after": 0, "changes": []},
            {"epoch": 4500, "wrong_before": 1920, "wrong_after": 0, "changes": []},
        ],
        "wall_seconds": 52.06,
        "hard_eval": {"samples": 16, "solved": 16, "wrong_cells": 0, "cells": 4096},
    }
    s.update(changes)
    return s


def test_a_repaired_solve_says_so_and_not_the_last_epochs_hard_loss() -> None:
    s = _summary()
    line = outcome_line(s, "runs/x")
    assert solved(s) and line.startswith("SOLVED pattern:tile: held-out 16/16 (0 wrong cells)")
    assert "after the repair at epoch 4500 (1920 -> 0 wrong validation cells)" in line
    assert "128" not in line  # the pre-repair hard loss would contradict the verdict
    assert line.endswith("; 3 attempts, 4500 epochs, 52.1 s -> runs/x")
    assert final_repair(s) == s["repairs"][-1]


def test_an_unsolved_run_ends_with_not_solved() -> None:
    s = _summary(
        preset="life:B36/S23",
        repairs=[],
        restarts=[],
        hard_eval={"samples": 512, "solved": 491, "wrong_cells": 21, "cells": 512},
    )
    line = outcome_line(s)
    assert not solved(s)
    assert line.startswith("NOT SOLVED life:B36/S23: held-out 491/512 (21 wrong cells)")
    assert "1 attempt," in line and "repair" not in line


def test_named_checks_all_count() -> None:
    checks = {
        "grown": {"samples": 1, "solved": 1},
        "persists": {"samples": 1, "solved": 0, "wrong_cells": 3},
    }
    s = _summary(hard_eval={"samples": 1, "solved": 1, "checks": checks})
    assert not solved(s)
    assert outcome_line(s).startswith("NOT SOLVED pattern:tile: grown 1/1; persists 0/1 (3 wrong")
    checks["persists"] = {"samples": 1, "solved": 1}
    assert solved(s)
    assert not solved(_summary(hard_eval={}))  # nothing checked is not a solve


def test_evaluates_record_reads_as_the_line() -> None:
    """A summary's `hard_eval` as `Evaluation.to_dict` writes it: its `passed` decides,
    and a check the task does not require is named as such."""
    ev = {
        "check": "grown",
        "samples": 1,
        "solved": 1,
        "wrong_cells": 0,
        "cells": 400,
        "passed": True,
        "checks": {
            "grown": {"samples": 1, "solved": 1, "wrong_cells": 0, "passed": True},
            "persists to 4T": {"samples": 1, "solved": 0, "passed": False, "required": False},
        },
    }
    s = _summary(preset="lizard", hard_eval=ev)
    line = outcome_line(s)
    assert solved(s) and line.startswith("SOLVED lizard: grown 1/1 (0 wrong cells); persists")
    assert "persists to 4T 0/1 (reported, not required)" in line


def test_the_cli_ends_a_run_with_its_verdict(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`logicars train` prints the verdict last: two epochs of gol do not solve it."""
    from logicars.cli import main

    out = tmp_path / "run"
    assert main(["train", "gol", "--epochs", "2", "--quiet", "--out", str(out)]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    summary = json.loads((out / "summary.json").read_text())
    assert lines[-1] == outcome_line(summary)
    assert lines[-1].startswith("NOT SOLVED gol: ") and "1 attempt, 2 epochs" in lines[-1]
