"""`train(tensorboard=...)`: event files read back with TensorBoard's own reader."""

from __future__ import annotations

import csv
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

# TensorBoard's own reader, independent of the writer (tensorboardX); both are in the
# test extra.
from tensorboard.backend.event_processing import event_accumulator
from test_train import losses, same_state, tiny_async_preset

import logicars
from logicars.train import train

TAGS = ["soft_loss", "hard_loss", "elapsed_s"]


def read_scalars(logdir: Path) -> dict[str, list[tuple[int, float]]]:
    """Every scalar series in `logdir` as TensorBoard shows it (purges applied)."""
    acc = event_accumulator.EventAccumulator(str(logdir))
    acc.Reload()
    return {tag: [(e.step, e.value) for e in acc.Scalars(tag)] for tag in acc.Tags()["scalars"]}


def csv_scalars(run_dir: Path) -> dict[str, list[tuple[int, float]]]:
    """metrics.csv's columns as TensorBoard stores scalars (32-bit floats)."""
    with open(run_dir / "metrics.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    return {
        tag: [(int(r["epoch"]), float(np.float32(float(r[tag])))) for r in rows] for tag in TAGS
    }


def test_event_files_hold_the_metrics_rows(tmp_path: Path) -> None:
    run = train("gol", epochs=6, out=tmp_path / "run", quiet=True, tensorboard=True)
    assert any(p.name.startswith("events.out.tfevents.") for p in run.run_dir.iterdir())
    scalars = read_scalars(run.run_dir)
    assert sorted(scalars) == sorted(TAGS)
    assert scalars == csv_scalars(run.run_dir)
    assert [s for s, _ in scalars["hard_loss"]] == [1, 2, 3, 4, 5, 6]

    other = tmp_path / "board"  # another directory: the events go there
    run = train("gol", epochs=3, out=tmp_path / "run2", quiet=True, tensorboard=other)
    assert read_scalars(other) == csv_scalars(run.run_dir)
    assert not any(p.name.startswith("events.") for p in run.run_dir.iterdir())


def test_resume_after_a_crash_continues_the_log_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A run killed after epoch 5 (checkpoint at 4) logged epoch 5 already; resumed, the
    log shows every epoch once, with the resumed run's values, and equals metrics.csv.
    The training itself is the straight run's."""
    preset = tiny_async_preset()
    straight = train(preset, epochs=8, out=tmp_path / "straight", quiet=True)

    real_step = logicars.Model.train_step
    calls: list[int] = []

    def dying_step(
        self: logicars.Model, x: object, y: object, **opts: float
    ) -> tuple[float, float]:
        calls.append(1)
        if len(calls) == 6:
            raise RuntimeError("simulated crash")
        return real_step(self, x, y, **opts)

    run = tmp_path / "run"
    monkeypatch.setattr(logicars.Model, "train_step", dying_step)
    with pytest.raises(RuntimeError, match="simulated crash"):
        train(preset, epochs=8, out=run, quiet=True, checkpoint_every=2, tensorboard=True)
    monkeypatch.undo()
    assert [s for s, _ in read_scalars(run)["soft_loss"]] == [1, 2, 3, 4, 5]

    resumed = train(None, resume=run, quiet=True, tensorboard=True)
    assert same_state(straight.model, resumed.model) and losses(straight) == losses(resumed)
    scalars = read_scalars(run)
    assert [s for s, _ in scalars["soft_loss"]] == list(range(1, 9))
    assert scalars == csv_scalars(run)


def test_tensorboard_argument_errors(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(TypeError, match="tensorboard must be True"):
        train("gol", epochs=1, out=tmp_path / "a", quiet=True, tensorboard=3)  # type: ignore[arg-type]
    (tmp_path / "file").write_text("")
    with pytest.raises(ValueError, match="exists and is not a directory"):
        train("gol", epochs=1, out=tmp_path / "b", quiet=True, tensorboard=tmp_path / "file")
    monkeypatch.setitem(sys.modules, "tensorboardX", None)  # as if not installed
    with pytest.raises(ImportError, match=r"pip install 'logicars\[tensorboard\]'"):
        train("gol", epochs=1, out=tmp_path / "c", quiet=True, tensorboard=True)
    for name in ("a", "b", "c"):
        assert not (tmp_path / name).exists()  # refused before the run directory


def test_import_logicars_loads_no_tensorboard() -> None:
    code = (
        "import sys, logicars; "
        "print(sorted(m for m in sys.modules if m.split('.')[0] in "
        "('tensorboard', 'tensorboardX', 'google')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_a_sweep_writes_each_points_events_into_its_run(tmp_path: Path) -> None:
    grid = {"preset": "gol", "epochs": 2, "seed": [0, 1], "tensorboard": True}
    result = logicars.sweep(grid, out=tmp_path / "sweep", workers=1, quiet=True)
    assert result.counts["trained"] == 2
    for point in result.points:
        run = tmp_path / "sweep" / point.name
        assert read_scalars(run) == csv_scalars(run)
    with pytest.raises(ValueError, match="a sweep takes tensorboard=True"):
        logicars.sweep({**grid, "tensorboard": str(tmp_path)}, out=tmp_path / "s2")


def test_cli_tensorboard_flag(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from logicars.cli import main

    out = tmp_path / "run"
    assert (
        main(["train", "gol", "--epochs", "3", "--quiet", "--tensorboard", "--out", str(out)]) == 0
    )
    assert read_scalars(out) == csv_scalars(out)

    monkeypatch.setitem(sys.modules, "tensorboardX", None)  # as if not installed
    capsys.readouterr()
    code = main(["train", "gol", "--epochs", "1", "--tensorboard", "--out", str(tmp_path / "b")])
    err = capsys.readouterr().err
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert "pip install 'logicars[tensorboard]'" in err
    assert not (tmp_path / "b").exists()
