"""`logicars bench` times a task kind or a run directory as it times a preset."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from logicars.cli import main


def test_bench_a_task_kind_and_a_run(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    run = tmp_path / "run"
    assert (
        main(
            [
                "train",
                "life:B36/S23",
                "--epochs",
                "1",
                "--drift-budget",
                "0",
                "--quiet",
                "--out",
                str(run),
            ]
        )
        == 0
    )
    capsys.readouterr()
    argv = ["bench", "life:B2/S", str(run), "--threads", "1", "--epochs", "1", "--warmup", "0"]
    assert main([*argv, "--json"]) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [r["preset"] for r in rows] == ["life:B2/S", "life:B36/S23"]
    assert all(r["gate_cell_evals_per_epoch"] == rows[0]["gate_cell_evals_per_epoch"] for r in rows)
    (tmp_path / "empty").mkdir()
    assert main(["bench", str(tmp_path / "empty"), "--threads", "1"]) == 2
    assert "not a run directory" in capsys.readouterr().err
    assert main(["bench", "nope", "--threads", "1"]) == 2
    assert "unknown preset(s) ['nope']" in capsys.readouterr().err
