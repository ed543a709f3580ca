"""The command line: one-line errors with exit 2, the presets table, train end to end."""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from logicars import PRESETS
from logicars.cli import COMMANDS, main, register


def run_cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def assert_one_line_error(code: int, err: str, *needles: str) -> None:
    assert code == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert "Traceback" not in err
    for n in needles:
        assert n in lines[0], lines[0]


def test_unknown_preset_lists_valid_ones(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code, _, err = run_cli(capsys, "train", "nope", "--out", str(tmp_path / "r"))
    assert_one_line_error(code, err, "unknown preset 'nope'", *PRESETS)
    assert not (tmp_path / "r").exists()


@pytest.mark.parametrize(
    ("args", "needles"),
    [
        (["--epochs", "0"], ["--epochs", "must be >= 1, got 0"]),
        (["--epochs", "-5"], ["--epochs", "must be >= 1"]),
        (["--epochs", "ten"], ["--epochs", "expected an integer"]),
        (["--lr", "-1"], ["--lr", "must be a finite number > 0"]),
        (["--lr", "0"], ["--lr", "must be a finite number > 0"]),
        (["--lr", "nan"], ["--lr", "must be a finite number > 0"]),
        (["--lr", "fast"], ["--lr", "expected a number"]),
        (["--seed", "-2"], ["--seed", "must be >= 0"]),
        (["--threads", "-1"], ["--threads", "must be between 0 and 1024"]),
        (["--threads", "5000"], ["threads must be between 0 and 1024"]),
        (["--early-stop", "0"], ["--early-stop", "must be >= 1"]),
        (["--bogus"], ["unrecognized arguments: --bogus"]),
    ],
)
def test_bad_options(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, args: list[str], needles: list[str]
) -> None:
    code, _, err = run_cli(capsys, "train", "gol", "--out", str(tmp_path / "r"), *args)
    assert_one_line_error(code, err, *needles)
    assert not (tmp_path / "r").exists()


def test_unwritable_out(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    code, _, err = run_cli(capsys, "train", "gol", "--out", str(blocker / "run"))
    assert_one_line_error(code, err, "output directory", "not a directory")
    code, _, err = run_cli(capsys, "train", "gol", "--out", str(blocker))
    assert_one_line_error(code, err, "exists and is not a directory")


def test_missing_preset_and_command(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run_cli(capsys, "train")
    assert_one_line_error(code, err, "a preset is required")
    code, _, err = run_cli(capsys, "frobnicate")
    assert_one_line_error(code, err, "invalid choice", "train", "presets")
    code, _, err = run_cli(capsys)
    assert code == 2 and "train" in err and "presets" in err  # the help


def test_bad_resume(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, _, err = run_cli(capsys, "train", "--resume", str(tmp_path / "nothing"))
    assert_one_line_error(code, err, "no such checkpoint")
    run = tmp_path / "run"
    run.mkdir()
    (run / "model.safetensors").write_bytes(b"\x10\x00\x00\x00\x00\x00\x00\x00{garbage}")
    code, _, err = run_cli(capsys, "train", "gol", "--resume", str(run))
    assert_one_line_error(code, err, "not a safetensors file")


def test_presets_table(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_cli(capsys, "presets")
    assert code == 0 and err == ""
    lines = out.strip().splitlines()
    header = lines[0].split()
    assert header == ["name", "channels", "grid", "batch", "steps", "epochs", "seed", "gates",
                      "gate-cells/epoch"]  # fmt: skip
    # A preset that restarts shows its budget and attempt length: "12000 (750)".
    cells = [re.sub(r"(\d) \((\d+)\)", r"\1(\2)", line).split() for line in lines[1:6]]
    rows = [dict(zip(header, c)) for c in cells]
    assert [r["name"] for r in rows] == list(PRESETS)
    assert [line.split()[-3] for line in lines[1:6]] == ["0"] * 5  # every default seed
    assert not any("nb23" in line for line in lines)
    row = rows[1]  # checkerboard
    p = PRESETS["checkerboard"]
    assert row["grid"] == "16x16" and row["channels"] == "8" and row["batch"] == "1"
    assert row["epochs"] == f"{p.epochs}({p.restart_every})" and row["seed"] == str(p.seed)
    assert row["steps"] == "20" and row["gates"] == f"{p.gates():,}"
    assert row["gate-cells/epoch"] == f"{p.gate_cell_evals_per_epoch():,}"
    assert "async" in lines[3]


def test_train_end_to_end(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    out_dir = tmp_path / "run"
    code, out, err = run_cli(
        capsys, "train", "gol", "--epochs", "2", "--seed", "4", "--quiet", "--out", str(out_dir)
    )
    assert code == 0, err
    assert err == ""  # --quiet: no progress bar
    assert "gol (softmax(warmup=500, hard_fraction=0.6)): 2 epochs" in out
    assert str(out_dir) in out
    summary = json.loads((out_dir / "summary.json").read_text())
    assert summary["seed"] == 4 and summary["epochs"] == 2
    code, out, err = run_cli(capsys, "train", "--resume", str(out_dir), "--epochs", "3", "--quiet")
    assert code == 0, err
    assert json.loads((out_dir / "summary.json").read_text())["epochs"] == 3


def test_train_from_init(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """`--init NPZ` starts from that wiring; an npz of another preset is a usage error."""
    import logicars

    npz = tmp_path / "gol.npz"
    start = logicars.Model(PRESETS["gol"].spec, seed=11)
    start.to_npz(npz)
    out_dir = tmp_path / "run"
    code, out, err = run_cli(
        capsys, "train", "gol", "--init", str(npz), "--epochs", "1", "--quiet", "--out",
        str(out_dir),
    )  # fmt: skip
    assert code == 0, err
    assert json.loads((out_dir / "summary.json").read_text())["init"] == str(npz)
    wires = logicars.Model.load(out_dir / "model.safetensors").wires()
    assert all(np.array_equal(wires[k], w) for k, w in start.wires().items())
    logicars.Model(PRESETS["checkerboard"].spec).to_npz(tmp_path / "cb.npz")
    code, _, err = run_cli(
        capsys, "train", "gol", "--init", str(tmp_path / "cb.npz"), "--out", str(tmp_path / "x")
    )
    assert_one_line_error(code, err, "is not a model of preset 'gol'")
    assert not (tmp_path / "x").exists()


def test_progress_bar_shows_losses(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, _, err = run_cli(capsys, "train", "gol", "--epochs", "2", "--out", str(tmp_path / "r"))
    assert code == 0
    assert "2/2" in err and "soft=" in err and "hard=" in err and "epoch/s" in err


def test_registering_a_subcommand(capsys: pytest.CaptureFixture[str]) -> None:
    """Other modules add subcommands with one `register` call."""

    def add(p: argparse.ArgumentParser) -> None:
        p.add_argument("--n", type=int, default=1)

    def run(args: argparse.Namespace) -> int:
        print(f"hello {args.n}")
        return 0

    register("hello", "say hello", add, run)
    try:
        code, out, _ = run_cli(capsys, "hello", "--n", "3")
        assert code == 0 and out == "hello 3\n"
    finally:
        del COMMANDS["hello"]


def test_module_entry_point(tmp_path: Path) -> None:
    ok = subprocess.run(
        [sys.executable, "-m", "logicars", "presets"], capture_output=True, text=True, timeout=60
    )
    assert ok.returncode == 0 and "checkerboard-async" in ok.stdout
    bad = subprocess.run(
        [sys.executable, "-m", "logicars", "train", "lizzard", "--out", str(tmp_path / "r")],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert bad.returncode == 2
    assert bad.stderr.strip().count("\n") == 0 and "Traceback" not in bad.stderr
    assert "valid presets: gol, checkerboard, checkerboard-async, lizard, colored-g" in bad.stderr


def test_cli_weight_decay_and_lr_reach_the_run(tmp_path: Path) -> None:
    out = tmp_path / "r"
    argv = ["train", "gol", "--epochs", "1", "--lr", "0.02", "--weight-decay", "0"]
    assert main([*argv, "--beta1", "0.5", "--quiet", "--out", str(out)]) == 0
    summary = json.loads((out / "summary.json").read_text())
    assert (summary["lr"], summary["weight_decay"], summary["beta1"]) == (0.02, 0.0, 0.5)
    decayed = tmp_path / "d"
    argv = [*argv, "--lr-decay-from", "0", "--lr-end", "0.01", "--quiet", "--out", str(decayed)]
    assert main(argv) == 0
    summary = json.loads((decayed / "summary.json").read_text())
    assert (summary["lr_decay_from"], summary["lr_end"]) == (0, 0.01)


@pytest.mark.parametrize("method", ["drift", "greedy"])
def test_cli_repair_writes_a_repaired_model_of_the_run(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, method: str
) -> None:
    from logicars.circuit.evaluate import validate
    from logicars.runs import load_run

    run = tmp_path / "r"
    assert main(["train", "gol", "--epochs", "3", "--quiet", "--out", str(run)]) == 0
    capsys.readouterr()
    argv = ["repair", str(run), "--method", method, "--budget", "150", "--samples", "8"]
    code, out, _ = run_cli(capsys, *argv)
    assert code == 0
    m = re.search(r"^gol \(.*\): (\d+) -> (\d+) wrong cells in (\d+) candidates", out, re.M)
    assert m is not None, out
    before, after, runs = map(int, m.groups())
    assert after <= before and 1 <= runs <= 150
    repaired = load_run(run / "repaired.safetensors")
    assert repaired.preset is not None and repaired.preset.name == "gol"
    assert validate(repaired.model, repaired.preset, 8, 1).wrong_cells == after
    assert f"wrote {run / 'repaired.safetensors'}" in out

    code, _, err = run_cli(capsys, "repair", str(run), "--out", str(run / "model.safetensors"))
    assert_one_line_error(code, err, "would overwrite the run's own model")
    code, _, err = run_cli(capsys, "repair", str(run), "--method", "anneal")
    assert code == 2 and "invalid choice: 'anneal'" in err
