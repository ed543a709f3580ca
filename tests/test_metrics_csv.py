"""metrics.csv: appended row by row, rebuilt from the checkpoint on resume, odd files."""

from __future__ import annotations

import csv
import io
import os
import shutil
from pathlib import Path

import pytest
from test_train import losses, same_state, tiny_async_preset

import logicars
from logicars.train import EpochMetrics, train


def reference_csv(rows: list[EpochMetrics]) -> str:
    """metrics.csv as the loop wrote it before rows were appended (csv module, the
    losses by `repr`, the time to 0.1 ms): the format readers rely on."""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(EpochMetrics._fields)
    for r in rows:
        lr = "" if r.lr is None else repr(r.lr)
        repair = "" if r.repair is None else r.repair
        w.writerow(
            [r.epoch, repr(r.soft_loss), repr(r.hard_loss), f"{r.elapsed_s:.4f}"]
            + [r.attempt, lr, r.validation, repair]
        )
    return buf.getvalue()


def test_rows_are_appended_as_epochs_complete(tmp_path: Path) -> None:
    """After every epoch the file holds the rows so far (flushed before the callbacks
    run); at the end it is byte for byte the format of a whole rewrite."""
    seen: list[str] = []

    def read_file(row: EpochMetrics, context: logicars.EpochContext) -> None:
        seen.append((context.run_dir / "metrics.csv").read_text())

    run = train("gol", epochs=5, out=tmp_path / "run", quiet=True, callbacks=[read_file])
    assert seen == [reference_csv(run.metrics[:e]) for e in range(1, 6)]
    assert (run.run_dir / "metrics.csv").read_text() == reference_csv(run.metrics)


def test_a_resumed_run_gives_the_file_of_a_straight_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Killed after epoch 5 with a checkpoint at 4: the resume drops row 5 and trains it
    again, and the file ends as a straight run's (its times aside)."""
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
    with pytest.raises(RuntimeError):
        train(preset, epochs=8, out=run, quiet=True, checkpoint_every=2)
    monkeypatch.undo()
    assert len((run / "metrics.csv").read_text().splitlines()) == 1 + 5

    resumed = train(None, resume=run, quiet=True)
    assert same_state(straight.model, resumed.model)
    text = (run / "metrics.csv").read_text()
    assert text == reference_csv(resumed.metrics)

    def times_aside(text: str) -> list[list[str]]:
        return [line.split(",")[:3] + line.split(",")[4:] for line in text.splitlines()]

    straight_text = (straight.run_dir / "metrics.csv").read_text()
    assert times_aside(text) == times_aside(straight_text)
    assert losses(straight) == losses(resumed)


def test_odd_regular_files_are_rebuilt_from_the_checkpoint(tmp_path: Path) -> None:
    """The checkpoint holds every row to its epoch: whatever regular file stands in
    metrics.csv (garbage, another run's rows, none) is replaced by them."""
    base = train("gol", epochs=3, out=tmp_path / "base", quiet=True, stop_on_solve=False)
    cases = {"garbage": b"\x00\xff garbage\n", "other": b"epoch,soft_loss\n1,2\n" * 1000}
    for name in ("garbage", "other", "missing"):
        run = tmp_path / name
        shutil.copytree(base.run_dir, run)
        if name == "missing":
            (run / "metrics.csv").unlink()
        else:
            (run / "metrics.csv").write_bytes(cases[name])
        resumed = train(None, resume=run, epochs=4, quiet=True, stop_on_solve=False)
        assert (run / "metrics.csv").read_text() == reference_csv(resumed.metrics)
        assert resumed.metrics[:3] == base.metrics


@pytest.mark.parametrize("kind", ["directory", "fifo", "symlink"])
def test_a_metrics_path_that_is_not_a_regular_file_is_refused(tmp_path: Path, kind: str) -> None:
    """A directory, a FIFO (which would block an open) or a symlink (to a device, or to
    another run's file) in place of metrics.csv: a one-line ValueError before any
    training, the checkpoint untouched."""
    run = train("gol", epochs=2, out=tmp_path / "run", quiet=True).run_dir
    before = (run / "model.safetensors").read_bytes()
    path = run / "metrics.csv"
    path.unlink()
    if kind == "directory":
        path.mkdir()
    elif kind == "fifo":
        os.mkfifo(path)
    else:
        path.symlink_to("/dev/urandom")
    what = {"directory": "a directory", "fifo": "a FIFO", "symlink": "a symbolic link"}[kind]
    with pytest.raises(ValueError, match=f"metrics.csv is not a regular file \\({what}\\)"):
        train(None, resume=run, epochs=4, quiet=True)
    assert (run / "model.safetensors").read_bytes() == before
    # A new run into a directory whose metrics.csv is such a file is refused alike (a
    # directory holding only that is not a run: refused as such, issue 43).
    (tmp_path / "new").mkdir()
    os.mkfifo(tmp_path / "new" / "metrics.csv")
    with pytest.raises(ValueError, match="not a logicars run \\(it holds 'metrics.csv'\\)"):
        train("gol", epochs=1, out=tmp_path / "new", quiet=True)
    (tmp_path / "new" / "metrics.csv").unlink()
    os.rmdir(tmp_path / "new")
