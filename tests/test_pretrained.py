"""The trained circuits shipped with the package (`logicars.pretrained`)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import logicars
import logicars.cli
from logicars.circuit.evaluate import evaluate
from logicars.presets import PRESET_NAMES
from logicars.pretrained import SHIP_CHECKS, available, open_run


def test_every_preset_ships_a_small_circuit() -> None:
    assert available() == list(PRESET_NAMES)
    data = Path(logicars.__file__).parent / "data" / "pretrained"
    total = sum(p.stat().st_size for p in data.glob("*.npz"))
    assert total < 500_000, f"{total} bytes of shipped circuits"


@pytest.mark.parametrize("name", PRESET_NAMES)
def test_each_shipped_circuit_passes_its_presets_checks(name: str) -> None:
    run = logicars.pretrained(name)
    assert run.preset is not None and run.preset.name == name
    for samples, seed in SHIP_CHECKS:
        result = evaluate(run.model, run.preset, samples=samples, seed=seed)
        # passed: every input solved, the target held to 4T by a persisting preset's
        # circuit, and regrown by a regrowing one's
        assert result.passed, (name, seed, result.checks())


def test_a_name_that_is_a_directory_here_is_the_directory(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "gol").mkdir()
    with pytest.raises(ValueError, match="not a run directory"):
        open_run("gol")
    with pytest.raises(ValueError, match="valid presets"):
        logicars.pretrained("nope")
    with pytest.raises(FileNotFoundError, match="shipped circuit: gol"):
        open_run("nope")


def test_view_and_simulate_need_no_training(tmp_path: Path) -> None:
    def cli(*args: str) -> str:
        proc = subprocess.run(
            [sys.executable, "-m", "logicars", *args],
            capture_output=True,
            text=True,
            cwd=tmp_path,
            check=True,
        )
        return proc.stdout

    assert "wrote the page to lizard.html" in cli("view", "lizard", "--no-open")
    assert "logic" in (tmp_path / "lizard.html").read_text()
    out = cli("simulate", "gol", "--size", "32", "--out", "final.npy")
    assert "0 of 1024 target cells wrong" in out
    assert np.load(tmp_path / "final.npy").shape == (1, 32, 32, 1)
    assert "wrote verilog to gol.v" in cli("export", "gol", "--format", "verilog")
    assert "module" in (tmp_path / "gol.v").read_text()


def test_a_circuit_file_opens_as_its_circuit(tmp_path: Path) -> None:
    """A file in the shipped circuits' format opens where a run or a model file would
    (`view`, `simulate`, `export`); another .npz is not taken for one."""
    from logicars.pretrained import is_circuit_file, save_pretrained

    shipped = logicars.pretrained("gol")
    path = tmp_path / "mine.npz"
    save_pretrained(shipped.model, "gol", path, {"seed": 3})
    assert is_circuit_file(path)
    run = open_run(path)
    assert run.summary["seed"] == 3 and run.preset is not None and run.preset.name == "gol"
    assert all(
        np.array_equal(run.model.hard_ops()[k], v) for k, v in shipped.model.hard_ops().items()
    )
    assert logicars.cli.main(["export", str(path), "--format", "c"]) == 0
    assert (tmp_path / "mine.c").is_file()
    other = tmp_path / "other.npz"
    np.savez(other, x=np.zeros(3))
    assert not is_circuit_file(other) and not is_circuit_file(tmp_path / "missing.npz")
