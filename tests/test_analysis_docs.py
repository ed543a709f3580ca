"""`scripts/analysis_docs.py`: regenerates docs/analysis.md from checkerboard runs.

The slow test runs the script end to end on a copy (so that the repository's docs stay
as they are) on a briefly trained run: the page is written from the analysis's numbers,
whatever they are."""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

import logicars

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "analysis_docs.py"


def load_script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("analysis_docs", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_page_gives_the_command_that_trains_the_run_again() -> None:
    command = load_script()._train_command
    summary = {"preset": "checkerboard", "seed": 4, "target_epochs": 500}
    assert command(summary) == "python -m logicars train checkerboard --seed 4 --epochs 500"
    summary["stop_on_solve"] = False
    assert command(summary).endswith("--epochs 500 --no-stop-on-solve")
    assert command({"preset": "gol", "seed": 0}) == "python -m logicars train gol --seed 0"


@pytest.mark.slow
def test_the_script_writes_the_page_from_a_run(tmp_path: Path) -> None:
    run = tmp_path / "cb"
    logicars.train("checkerboard", epochs=3, seed=4, out=run, quiet=True)
    copy = tmp_path / "repo"
    (copy / "scripts").mkdir(parents=True)
    shutil.copy(SCRIPT, copy / "scripts" / SCRIPT.name)
    out = subprocess.run(
        [sys.executable, str(copy / "scripts" / SCRIPT.name), str(run)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert out.returncode == 0, out.stderr
    page = (copy / "docs" / "analysis.md").read_text()
    assert "python -m logicars train checkerboard --seed 4 --epochs 3" in page
    assert "The paper's claims:" in page and "| robustness | mean_error_second_half |" in page
    images = {p.name for p in (copy / "docs" / "img" / "analysis").glob("*.png")}
    assert {"sync_generalisation.png", "sync_robustness.png", "sync_gates.png"} <= images
