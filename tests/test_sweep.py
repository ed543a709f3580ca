"""Sweeps on the local process pool: run directories, identity with `train`, the report,
resume after SIGKILL and Ctrl-C, `--until-solved`, `--shard`, the grid and its errors."""

from __future__ import annotations

import csv
import importlib
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from test_train import RUN_FILES, same_state

import logicars
from logicars.cli import main
from logicars.model import load_checkpoint
from logicars.sweep import (
    METRIC_COLUMNS,
    POINT_FILE,
    SweepResult,
    expand_grid,
    parse_seeds,
    point_name,
    read_sweep_file,
    report,
    run_point,
)
from logicars.train import train

# 4 seeds x 2 learning rates of a tiny training (gol: 3x3 boards, a few ms per epoch).
GRID = {"preset": "gol", "seed": range(4), "lr": [0.03, 0.05], "epochs": 30}
NAMES = [f"gol_lr={lr}_epochs=30_seed={s}" for lr in (0.03, 0.05) for s in range(4)]


@pytest.fixture(scope="module")
def pool_sweep(tmp_path_factory: pytest.TempPathFactory) -> SweepResult:
    out = tmp_path_factory.mktemp("sweep") / "pool"
    return logicars.sweep(GRID, out=out, workers=2, quiet=True)


def run_losses(run_dir: Path) -> list[tuple[int, float, float]]:
    """Epoch, soft and hard loss of every row of a run's metrics.csv (not the times)."""
    with open(run_dir / "metrics.csv", newline="") as f:
        return [
            (int(r["epoch"]), float(r["soft_loss"]), float(r["hard_loss"]))
            for r in csv.DictReader(f)
        ]


def same_run(a: Path, b: Path) -> bool:
    """Two run directories hold the same run: losses epoch by epoch, the whole training
    state (parameters, wiring, AdamW, mask stream) and the summary but its times."""
    timing = {"wall_seconds", "solved_seconds", "threads", "build_info"}
    sa, sb = (json.loads((d / "summary.json").read_text()) for d in (a, b))
    return (
        run_losses(a) == run_losses(b)
        and same_state(logicars.Model.load(a / "model.safetensors"),
                       logicars.Model.load(b / "model.safetensors"))
        and {k: v for k, v in sa.items() if k not in timing}
        == {k: v for k, v in sb.items() if k not in timing}
    )  # fmt: skip


def test_every_point_is_a_run_directory(pool_sweep: SweepResult, tmp_path: Path) -> None:
    out = pool_sweep.out
    assert [p.name for p in pool_sweep.points] == [
        f"gol_lr={lr}_epochs=30_seed={s}" for lr in (0.03, 0.05) for s in range(4)
    ]
    assert pool_sweep.counts["trained"] == 8 and not pool_sweep.interrupted
    for name in NAMES:
        d = out / name
        assert RUN_FILES | {POINT_FILE} <= {f.name for f in d.iterdir()}
        point = json.loads((d / POINT_FILE).read_text())
        summary = json.loads((d / "summary.json").read_text())
        assert point["options"]["lr"] == summary["lr"] and summary["epochs"] == 30
        assert point["options"]["seed"] == summary["seed"]
        assert summary["threads"] == 1  # threads_per_run
    # A point is an ordinary run: it resumes like any other.
    copy = shutil.copytree(out / NAMES[0], tmp_path / "copy")
    more = train(None, resume=copy, epochs=32, quiet=True)
    assert more.summary["epochs"] == 32


def test_points_are_the_runs_train_makes(pool_sweep: SweepResult, tmp_path: Path) -> None:
    for name, seed, lr in ((NAMES[1], 1, 0.03), (NAMES[6], 2, 0.05)):
        own = train("gol", seed=seed, lr=lr, epochs=30, out=tmp_path / name, quiet=True)
        assert same_run(pool_sweep.out / name, own.run_dir)


def test_report_files_and_table(pool_sweep: SweepResult) -> None:
    out = pool_sweep.out
    assert {"sweep.csv", "sweep.json", "sweep.md", "sweep.png"} <= {f.name for f in out.iterdir()}
    with open(out / "sweep.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    assert [r["name"] for r in rows] == NAMES
    assert list(rows[0]) == ["name", "preset", "lr", "epochs", "seed", *METRIC_COLUMNS]
    doc = json.loads((out / "sweep.json").read_text())
    assert len(doc["rows"]) == 8 and len(doc["cells"]) == 2
    for row in doc["rows"]:
        summary = json.loads((out / row["name"] / "summary.json").read_text())
        ev = summary["hard_eval"]
        assert row["status"] == "done"
        assert row["solved"] == (ev["solved"] == ev["samples"])
        assert row["final_hard_loss"] == summary["final_hard_loss"]
        assert row["hard_minus_soft"] == pytest.approx(
            summary["final_hard_loss"] - summary["final_soft_loss"]
        )
    # The expected wall time to a working circuit: every run's seconds over the solved.
    for cell in doc["cells"]:
        rows_of = [r for r in doc["rows"] if r["options"]["lr"] == cell["options"]["lr"]]
        solved = sum(r["solved"] for r in rows_of)
        expected = sum(r["wall_seconds"] for r in rows_of) / solved if solved else None
        assert cell["seconds_per_solved"] == pytest.approx(expected)
    lines = (out / "sweep.md").read_text().splitlines()
    assert lines[0].startswith("| preset | lr | runs | solved | success | s per working circuit |")
    assert lines[2].startswith("| gol | 0.03 | 4 |") and lines[3].startswith("| gol | 0.05 | 4 |")
    assert pool_sweep.table == "\n".join(lines)


def test_the_table_counts_the_solved_circuits_that_generalise() -> None:
    """A pattern's runs record `evaluate`'s reported *generalises*; the table shows how
    many solved circuits pass it (failed or unsolved runs do not count)."""
    from logicars.sweep.reporting import cells_table, summarize_cells

    def row(seed: int, solved: bool, generalises: bool | None) -> dict[str, Any]:
        r: dict[str, Any] = dict.fromkeys(METRIC_COLUMNS)
        r.update(name=f"s{seed}", options={"preset": "checkerboard", "seed": seed})
        r.update(status="done", solved=solved, generalises=generalises, wall_seconds=1.0)
        r.update(trained_epochs=100, epoch_budget=100)
        return r

    rows = [row(0, True, True), row(1, True, False), row(2, False, False), row(3, True, True)]
    [cell] = summarize_cells(rows)
    assert (cell["solved"], cell["solved_and_generalise"]) == (3, 2)
    header, _, line = cells_table([cell]).splitlines()
    assert header.startswith("| preset | runs | solved | of them generalise | success |")
    assert line.startswith("| checkerboard | 4 | 3 | 2 | 75% |")
    [gol] = summarize_cells([row(0, True, None)])
    assert gol["solved_and_generalise"] is None
    assert "generalise" not in cells_table([gol])


def test_a_pattern_sweep_records_whether_its_circuits_generalise(tmp_path: Path) -> None:
    result = logicars.sweep(
        {"preset": "checkerboard", "seed": [0], "epochs": 2}, out=tmp_path / "s", quiet=True
    )
    doc = json.loads((result.out / "sweep.json").read_text())
    summary = json.loads((result.out / result.points[0].name / "summary.json").read_text())
    check = summary["hard_eval"]["checks"]["generalises to 64x64"]
    assert doc["rows"][0]["generalises"] is check["passed"]
    assert "generalises" in (result.out / "sweep.csv").read_text().splitlines()[0]


def test_rerun_skips_finished_points(pool_sweep: SweepResult) -> None:
    stamps = {n: (pool_sweep.out / n / "summary.json").stat().st_mtime_ns for n in NAMES[1:]}
    again = logicars.sweep(GRID, out=pool_sweep.out, workers=2, quiet=True)
    assert again.counts["skipped"] == 8 and again.counts["trained"] == 0
    assert {n: (pool_sweep.out / n / "summary.json").stat().st_mtime_ns for n in NAMES[1:]} == (
        stamps
    )


def test_report_command_rebuilds_the_summary(
    pool_sweep: SweepResult, capsys: pytest.CaptureFixture[str]
) -> None:
    (pool_sweep.out / "sweep.md").unlink()
    assert main(["sweep", "--report", str(pool_sweep.out)]) == 0
    printed = capsys.readouterr().out
    assert printed.strip() == (pool_sweep.out / "sweep.md").read_text().strip()
    assert "| gol | 0.05 | 4 |" in printed


# ---- the grid -------------------------------------------------------------------------


def test_grid_order_names_and_types() -> None:
    points = expand_grid({"preset": "gol", "seed": "3,1", "lr": [1, 0.5], "early_stop": 7})
    assert [p.name for p in points] == [
        "gol_lr=1.0_early_stop=7_seed=3",
        "gol_lr=1.0_early_stop=7_seed=1",
        "gol_lr=0.5_early_stop=7_seed=3",
        "gol_lr=0.5_early_stop=7_seed=1",
    ]
    assert points[0].options == {"preset": "gol", "lr": 1.0, "early_stop": 7, "seed": 3}
    assert isinstance(points[0].options["lr"], float)  # lr=1 and lr=1.0 are one point
    assert point_name({"preset": "gol", "init": "/a/b c.npz"}) == "gol_init=-a-b-c.npz"
    assert parse_seeds("0-2,7") == [0, 1, 2, 7]
    assert [p.options["seed"] for p in expand_grid({"preset": "gol", "seed": np.arange(2)})] == [
        0,
        1,
    ]


@pytest.mark.parametrize(
    "grid, match",
    [
        ({"seed": [0]}, "needs a preset"),
        ({"preset": "gol", "nope": 1}, "no option 'nope'; sweepable options: preset, .*epochs"),
        ({"preset": "gol", "threads": [1, 2]}, "threads_per_run"),
        ({"preset": "gol", "out": "x"}, "cannot be swept"),
        ({"preset": "gol", "seed": "3-1"}, "not a range"),
        ({"preset": "gol", "seed": "a"}, "expected a list like 0-99"),
        ({"preset": "gol", "seed": [1, 1]}, "twice"),
        ({"preset": "gol", "lr": []}, "no values"),
        ({"preset": "gol", "lr": float("nan")}, "finite"),
    ],
)
def test_bad_grids(grid: dict[str, Any], match: str) -> None:
    with pytest.raises(ValueError, match=match):
        expand_grid(grid)


def test_unordered_or_odd_values() -> None:
    with pytest.raises(TypeError, match="set has no order"):
        expand_grid({"preset": "gol", "seed": {1, 2}})
    with pytest.raises(TypeError, match="cannot sweep a value of type dict"):
        expand_grid({"preset": "gol", "lr": [{"a": 1}]})


def test_sweep_files(tmp_path: Path) -> None:
    toml = tmp_path / "s.toml"
    toml.write_text('preset = "gol"\nseed = "0-2"\nlr = [0.03, 0.05]\nepochs = 30\n')
    yaml = tmp_path / "s.yaml"
    yaml.write_text("preset: gol\nseed: [0, 1, 2]\nlr: [0.03, 0.05]\nepochs: 30\n")
    assert expand_grid(read_sweep_file(toml)) == expand_grid(read_sweep_file(yaml))
    assert len(expand_grid(read_sweep_file(toml))) == 6
    (tmp_path / "bad.toml").write_text("preset = \n")
    (tmp_path / "s.json").write_text("{}")
    (tmp_path / "list.yaml").write_text("- 1\n")
    for name, match in (
        ("bad.toml", "bad.toml"),
        ("s.json", "expected a .toml"),
        ("no.yaml", "no.yaml"),
        ("list.yaml", "expected a table"),
    ):
        with pytest.raises(ValueError, match=match):
            read_sweep_file(tmp_path / name)


def test_several_grids_from_a_file_with_command_line_options(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # A relaxation with its temperatures next to one without: two grids, one sweep.
    path = tmp_path / "relax.toml"
    path.write_text(
        '[[grid]]\npreset = "gol"\nrelax = "softmax"\n\n'
        '[[grid]]\npreset = "gol"\nrelax = "gumbel-st"\ntau = [0.5, 1]\n'
    )
    yaml = tmp_path / "relax.yaml"
    yaml.write_text(
        "grid:\n- {preset: gol, relax: softmax}\n- {preset: gol, relax: gumbel-st, tau: [0.5, 1]}\n"
    )
    assert read_sweep_file(path) == read_sweep_file(yaml)
    out = tmp_path / "out"
    argv = ["--file", str(path), "--seeds", "0-1", "--epochs", "3", "--out", str(out), "--quiet"]
    code, table, _ = run_cli(capsys, *argv)
    assert code == 0
    assert sorted(d.name for d in out.glob("gol_*")) == sorted(
        f"gol_relax={r}_epochs=3_seed={s}"
        for r in ("softmax", "gumbel-st_tau=0.5", "gumbel-st_tau=1.0")
        for s in (0, 1)
    )
    summary = json.loads(
        (out / "gol_relax=gumbel-st_tau=0.5_epochs=3_seed=1/summary.json").read_text()
    )
    assert summary["relax"]["mode"] == "gumbel-st" and summary["relax"]["tau"] == 0.5
    assert "| gol | gumbel-st | 0.5 | 2 |" in table and "| gol | softmax | – | 2 |" in table


def run_cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(["sweep", *argv])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.mark.parametrize(
    "argv, needle",
    [
        (["gol", "--seeds", "0-1"], "--out DIR is required"),
        (["--seeds", "0-1", "--out", "x"], "give a preset"),
        (["gol", "--set", "lr", "--out", "x"], "--set expects KEY=V1,V2"),
        (["gol", "--set", "bogus=1", "--out", "x"], "no option 'bogus'"),
        (["gol", "--seeds", "9-2", "--out", "x"], "not a range"),
        (["gol", "--shard", "3/2", "--out", "x"], "need 0 <= I < N"),
        (["gol", "--shard", "x", "--out", "x"], "expected I/N"),
        (["gol", "--workers", "0", "--out", "x"], "must be >= 1"),
        (["gol", "--file", "missing.toml", "--out", "x"], "missing.toml"),
        (["--report", "x", "--seeds", "1"], "takes no other options"),
        (["--report", "no-such-dir"], "no such sweep directory"),
        (["nopreset", "--epochs", "2", "--out", "x"], "unknown preset 'nopreset'"),
        (["gol", "--lr", "-1", "--out", "x"], "lr must be a finite number > 0"),
    ],
)
def test_cli_errors_are_one_line(
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    argv: list[str],
    needle: str,
) -> None:
    monkeypatch.chdir(tmp_path)
    code, out, err = run_cli(capsys, *argv, "--quiet")
    assert code == 2, (out, err)
    assert needle in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1, err
    # Refused before training: no run directory left behind.
    assert not any(tmp_path.glob("x/*/model.safetensors"))
    assert not any(tmp_path.glob(f"x/*/{POINT_FILE}"))


def test_conflicting_directory_is_refused(tmp_path: Path) -> None:
    out = tmp_path / "s"
    train("gol", epochs=2, out=out / "gol_epochs=2_seed=0", quiet=True)
    with pytest.raises(ValueError, match="this sweep did not start"):
        logicars.sweep({"preset": "gol", "seed": 0, "epochs": 2}, out=out, quiet=True)
    point = out / "gol_epochs=2_seed=1"
    point.mkdir()
    (point / POINT_FILE).write_text(json.dumps({"options": {"preset": "gol", "seed": 9}}))
    with pytest.raises(ValueError, match="other options"):
        logicars.sweep({"preset": "gol", "seed": 1, "epochs": 2}, out=out, quiet=True)


def test_failed_point_is_recorded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def diverge(*args: object, **kwargs: object) -> None:
        raise FloatingPointError("training diverged at epoch 3 (soft loss nan)")

    monkeypatch.setattr(sys.modules["logicars.train"], "train", diverge)
    options = {"preset": "gol", "seed": 0}
    outcome = run_point(str(tmp_path), "p", options, 1)
    assert outcome == {
        "status": "failed",
        "error": "FloatingPointError: training diverged at epoch 3 (soft loss nan)",
    }
    rows = report(tmp_path).rows
    assert [(r["status"], r["solved"]) for r in rows] == [("failed", False)]
    assert "diverged" in rows[0]["error"]


def test_a_crashed_point_resumes_with_its_own_options(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Seed 7 solves gol at epoch 1893 (a repair, from the notebook's init, β1 and softmax
    # without hard gates); with stop_on_solve=False it must train on to 2000 after the resume
    # too (train's default on a resume would stop it at the solve).
    options = {
        "preset": "gol", "epochs": 2000, "stop_on_solve": False, "seed": 7, "init_logit": 10,
        "beta1": 0.9, "hard_fraction": 0,
    }  # fmt: skip
    grid = {**options, "checkpoint_every": 500}
    (point,) = expand_grid(grid)
    real_step = logicars.Model.train_step
    steps = iter(range(10**6))

    def crash_at_1200(
        self: logicars.Model, x: object, y: object, **opts: float
    ) -> tuple[float, float]:
        if next(steps) == 1200:
            raise RuntimeError("node lost")
        return real_step(self, x, y, **opts)

    with monkeypatch.context() as m:
        m.setattr(logicars.Model, "train_step", crash_at_1200)
        outcome = run_point(str(tmp_path), point.name, point.options, 1)
    assert outcome == {"status": "failed", "error": "RuntimeError: node lost"}
    assert report(tmp_path).rows[0]["status"] == "failed"

    again = logicars.sweep(grid, out=tmp_path, workers=1, quiet=True)
    assert again.counts["resumed"] == 1
    row = again.rows[0]
    assert row["status"] == "done" and row["trained_epochs"] == 2000 and row["error"] is None
    assert row["solved_epoch"] == 1893
    own = train(**options, out=tmp_path / "straight", quiet=True)
    assert same_run(tmp_path / point.name, own.run_dir)


# ---- shards and until-solved ----------------------------------------------------------


def test_shards_split_the_sweep(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["gol", "--seeds", "0-5", "--epochs", "3", "--out", str(tmp_path), "--workers", "1"]
    argv.append("--quiet")
    assert run_cli(capsys, *argv, "--shard", "1/3")[0] == 0
    assert sorted(p.name for p in tmp_path.glob("gol_*")) == [
        "gol_epochs=3_seed=1",
        "gol_epochs=3_seed=4",
    ]
    # A re-queued shard is idempotent; the other shards complete the sweep.
    for shard in ("1/3", "0/3", "2/3"):
        code, out, _ = run_cli(capsys, *argv, "--shard", shard)
        assert code == 0
    assert len(list(tmp_path.glob("gol_*"))) == 6
    assert "| gol | 6 |" in out  # the report covers every shard's points


def test_until_solved_stops_launching(tmp_path: Path) -> None:
    # Seed 7 solves gol (every board) within the preset's epochs; seeds 0 and 1 follow it.
    grid = {"preset": "gol", "seed": [7, 0, 1], "early_stop": 50}
    first = logicars.sweep(grid, out=tmp_path, workers=1, until_solved=1, quiet=True)
    assert first.until_solved_reached and first.counts["trained"] == 1
    assert [r["name"] for r in first.rows] == ["gol_early_stop=50_seed=7"]
    assert first.rows[0]["solved"] is True
    # Again: the finished point counts, nothing is launched.
    again = logicars.sweep(grid, out=tmp_path, workers=1, until_solved=1, quiet=True)
    assert again.counts["skipped"] == 1 and again.counts["trained"] == 0
    assert again.until_solved_reached


# ---- interrupting the driver ----------------------------------------------------------

# 3 checkerboard seeds on 2 workers: seeds 0 and 1 finish about together while seed 2
# starts, so the driver can be stopped with points finished, half-trained and not started.
# 80 epochs: at one start per epoch (the preset's since 2026-11-29) 40 were over so soon
# that a point could finish before the signal reached it.
KILL_ARGV = [
    "checkerboard", "--seeds", "0-2", "--epochs", "80", "--set", "checkpoint_every=10",
    "--workers", "2", "--quiet",
]  # fmt: skip
KILL_GRID = {"preset": "checkerboard", "seed": range(3), "epochs": 80, "checkpoint_every": 10}


def start_driver(out: Path) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "logicars", "sweep", *KILL_ARGV, "--out", str(out)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def children(pid: int) -> set[int]:
    found = set()
    for task in Path(f"/proc/{pid}/task").iterdir():
        text = (task / "children").read_text().split()
        found.update(int(c) for c in text)
    return found


def wait_until(proc: subprocess.Popen, ready: Any, what: str, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while not ready():
        if proc.poll() is not None:
            pytest.fail(f"the sweep ended before {what}: {proc.communicate()}")
        if time.monotonic() > deadline:
            proc.kill()
            pytest.fail(f"timed out waiting for {what}")
        time.sleep(0.02)


def finished(out: Path) -> list[Path]:
    return [d for d in out.glob("checkerboard_*") if (d / "summary.json").exists()]


def partial(out: Path) -> list[Path]:
    return [
        d
        for d in out.glob("checkerboard_*")
        if (d / "model.safetensors").exists() and not (d / "summary.json").exists()
    ]


@pytest.mark.skipif(not Path("/proc/self/task").exists(), reason="needs Linux /proc")
def test_sigkill_the_driver_then_rerun(tmp_path: Path) -> None:
    out = tmp_path / "sweep"
    proc = start_driver(out)
    workers: set[int] = set()

    def ready() -> bool:
        workers.update(children(proc.pid))
        return bool(finished(out)) and bool(partial(out))

    wait_until(proc, ready, "one finished and one half-trained point")
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)
    # The workers notice that the driver is gone and exit by themselves.
    deadline = time.monotonic() + 10
    while any(Path(f"/proc/{w}").exists() for w in workers) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert workers and not any(Path(f"/proc/{w}").exists() for w in workers)

    done = {d.name: (d / "summary.json").read_bytes() for d in finished(out)}
    cut = {}  # half-trained point -> metrics rows its checkpoint holds
    for d in partial(out):
        _, extra = load_checkpoint(d / "model.safetensors")
        assert 0 < extra["epoch"] <= KILL_GRID["epochs"]
        # Killed between its final checkpoint and its summary, a point is trained
        # again (counted below as trained), not resumed.
        if extra["epoch"] < KILL_GRID["epochs"]:
            cut[d.name] = extra["metrics"]

    again = logicars.sweep(KILL_GRID, out=out, workers=2, quiet=True)
    assert again.counts["skipped"] == len(done)
    assert again.counts["resumed"] == len(cut)
    assert again.counts["trained"] == 3 - len(done) - len(cut)
    assert {r["status"] for r in again.rows} == {"done"} and len(again.rows) == 3
    for name, data in done.items():  # nothing that had finished was recomputed
        assert (out / name / "summary.json").read_bytes() == data
    for name, rows in cut.items():  # resumed, not retrained: the first epochs are the old ones
        with open(out / name / "metrics.csv", newline="") as f:
            kept = list(csv.DictReader(f))[: len(rows)]
        assert [float(r["elapsed_s"]) for r in kept] == [
            pytest.approx(r[3], abs=1e-4) for r in rows
        ]
        seed = int(name.rsplit("=", 1)[1])
        own = train(
            "checkerboard", seed=seed, epochs=KILL_GRID["epochs"], out=tmp_path / name, quiet=True
        )
        assert same_run(out / name, own.run_dir)


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
def test_ctrl_c_stops_cleanly_then_rerun_resumes(tmp_path: Path) -> None:
    out = tmp_path / "sweep"
    proc = start_driver(out)
    wait_until(proc, lambda: bool(partial(out)), "a half-trained point")
    proc.send_signal(signal.SIGINT)
    stdout, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 0, stderr
    assert "Traceback" not in stderr and "interrupted; run the same sweep again" in stderr
    stopped = [
        d for d in finished(out) if json.loads((d / "summary.json").read_text())["interrupted"]
    ]
    assert stopped, "the running points should have stopped with a final checkpoint"
    for d in stopped:
        _, extra = load_checkpoint(d / "model.safetensors")
        assert extra["interrupted"] is True
    rows = report(out).rows
    assert {r["name"] for r in rows if r["status"] == "interrupted"} == {d.name for d in stopped}

    again = logicars.sweep(KILL_GRID, out=out, workers=2, quiet=True)
    assert again.counts["resumed"] == len(stopped)
    assert {r["status"] for r in again.rows} == {"done"} and len(again.rows) == 3


def test_report_informs_when_nothing_solves(tmp_path: Path) -> None:
    """Runs far too short to solve: the table and plot still say how close each came
    (best and final hard loss, epochs of the budget), not only dashes."""
    from PIL import Image

    grid = {"preset": "gol", "seed": [0, 1], "epochs": 4}
    result = logicars.sweep(grid, out=tmp_path / "short", workers=1, quiet=True)
    rows = result.rows
    assert all(r["status"] == "done" and not r["solved"] for r in rows)
    for row in rows:
        metrics = (tmp_path / "short" / row["name"] / "metrics.csv").read_text().splitlines()
        losses = [float(line.split(",")[2]) for line in metrics[1:]]
        assert row["best_hard_loss"] == min(losses) and row["epoch_budget"] == 4
    table = result.table
    header = table.splitlines()[0]
    assert "median best hard loss" in header and "median final hard loss" in header
    assert "median epochs / budget" in header
    values = table.splitlines()[2].split("|")
    best = statistics.median(r["best_hard_loss"] for r in rows)
    assert _fmt_cell(best) in values and "4 / 4" in " ".join(values)
    csv_header = (tmp_path / "short" / "sweep.csv").read_text().splitlines()[0]
    assert "best_hard_loss" in csv_header and "epoch_budget" in csv_header
    # The plot's middle panel has points: more than the empty axes' few colours.
    png = Image.open(tmp_path / "short" / "sweep.png").convert("RGB")
    w, h = png.size
    middle = np.asarray(png.crop((w // 3, 0, 2 * w // 3, h))).astype(int)
    r, g, b = middle[..., 0], middle[..., 1], middle[..., 2]
    orange = (r > 200) & (g > 100) & (g < 160) & (b < 60)  # tab:orange points
    assert orange.sum() > 20


def _fmt_cell(value: float) -> str:
    from logicars.sweep.reporting import _fmt

    return f" {_fmt(value)} "


def test_a_point_held_by_another_process_is_busy(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The point lock is the run lock's (`runlock.hold_lock`), waiting a while for its
    # holder: a second holder (here another open file description) is refused after it.
    points = importlib.import_module("logicars.sweep.points")
    from logicars.runlock import hold_lock

    monkeypatch.setattr(points, "_LOCK_WAIT_S", 0.2)
    run_dir = tmp_path / "p"
    run_dir.mkdir()
    held = hold_lock(run_dir / points.LOCK_FILE)
    try:
        with pytest.raises(points.PointBusy, match="being trained by another process"):
            with points._point_lock(run_dir):
                pass
    finally:
        assert held is not None
        held.close()
    with points._point_lock(run_dir):  # released: free again
        pass


def test_a_point_stopped_in_its_drift_search_goes_on_rather_than_starting_over() -> None:
    """A point whose run was stopped after its epochs, in the drift search, is resumed
    (the search goes on from its checkpoint); one whose search is done or never due, or
    that solved, is not (its checkpoint is final: trained again if its summary is lost)."""
    from logicars.sweep.points import _search_cut_short

    def summary(drifts: list[tuple[int, int]], budget: int = 1000, **kw: Any) -> dict:
        repairs = [{"method": "drift", "evaluations": n, "wrong_after": w} for n, w in drifts]
        repairs.insert(0, {"evaluations": 300, "wrong_after": 4})  # a greedy repair
        return {"interrupted": True, "solved_epoch": None, "drift_budget": budget,
                "repairs": repairs, **kw}  # fmt: skip

    assert _search_cut_short(summary([(400, 9)]))
    assert _search_cut_short(summary([]))  # stopped before its first chunk
    assert not _search_cut_short(summary([(400, 9), (600, 7)]))  # its budget spent
    assert not _search_cut_short(summary([(400, 0)]))  # it reached 0 wrong cells
    assert not _search_cut_short(summary([], budget=0))
    assert not _search_cut_short(summary([(400, 9)], interrupted=False))
    assert not _search_cut_short(summary([(400, 9)], solved_epoch=12))
    assert not _search_cut_short(None)


def test_an_experiment_file_edited_during_a_sweep_stops_further_points(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each point's train reads the experiment file again: once it changed, no further
    point starts (it would train other options under the same point name)."""
    from logicars.sweep import executors

    path = tmp_path / "gol.toml"
    path.write_text(logicars.presets.preset_file_text("gol"))
    submit = executors.PoolExecutor.submit

    def submit_then_edit(self: Any, *args: Any) -> Any:
        ref = submit(self, *args)
        path.write_text(path.read_text() + "# edited\n")
        return ref

    monkeypatch.setattr(executors.PoolExecutor, "submit", submit_then_edit)
    grid = {"preset": str(path), "seed": [0, 1], "epochs": 2}
    with pytest.raises(ValueError, match="gol.toml changed since the sweep started"):
        logicars.sweep(grid, out=tmp_path / "s", workers=1, quiet=True)
    started = [p for p in (tmp_path / "s").iterdir() if (p / POINT_FILE).exists()]
    assert len(started) == 1
