"""Run-directory names: a task kind that names a file gives its stem, not the absolute
path of the file (issue 42: `runs/grow-tmp-...-heart.png-...`)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from PIL import Image

import logicars
from logicars.training.rundir import run_name


@pytest.mark.parametrize(
    "kind, name",
    [
        ("grow:/tmp/pytest-of-me/x/heart.png", "grow-heart"),
        ("grow:heart.png", "grow-heart"),
        ("grow:C:\\Users\\me\\heart.png", "grow-heart"),
        ("pattern:../tiles/diag.png", "pattern-diag"),
        ("data:recordings/run7.npz", "data-run7"),
        ("pattern:checkerboard", "pattern-checkerboard"),
        ("life:B36/S23", "life-B36-S23"),
        ("gol", "gol"),
        ("colored-g", "colored-g"),
    ],
)
def test_run_names(kind: str, name: str) -> None:
    assert run_name(kind) == name


def test_a_runs_directory_does_not_carry_the_image_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    plus = np.zeros((5, 5), np.uint8)
    plus[1:4, 2] = plus[2, 1:4] = 255
    image = tmp_path / "deep" / "dir" / "plus.png"
    image.parent.mkdir(parents=True)
    Image.fromarray(plus, "L").save(image)
    monkeypatch.chdir(tmp_path)
    run = logicars.train(f"grow:{image}", epochs=1, drift_budget=0, quiet=True)
    assert run.run_dir.parent == Path("runs")
    assert run.run_dir.name.startswith("grow-plus-") and "deep" not in run.run_dir.name
