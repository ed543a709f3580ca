"""Crash safety: a training subprocess killed with SIGKILL in the middle of a checkpoint
write leaves the previous checkpoint loadable, and resuming from it gives exactly the
run that was never interrupted.

The child runs the real training loop and the real `save_checkpoint`; only `os.open`,
`os.fdopen`, `os.fsync` and `os.replace` are wrapped so that the child stops at a
chosen point of its n-th checkpoint write and says so, and the parent kills it there:

- `partial`: half of the new file's bytes are in the temporary file;
- `fsync`: the temporary file is complete but not yet renamed over the checkpoint;
- `renamed`: the rename is done but the directory is not yet fsync'ed.

This complements tests/test_train.py's `test_sigkill_20_of_20` (which kills the real
CLI at random moments, 20 times): here the kill provably lands inside a write. The
default run keeps the half-written case; `pytest -m slow -k sigkill` runs every point.
"""

from __future__ import annotations

import os
import select
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from test_train import losses, same_state, tiny_async_preset

from logicars.model import load_checkpoint
from logicars.train import RunResult, train

EPOCHS = 8
POINTS = ("partial", "fsync", "renamed")
TESTS_DIR = Path(__file__).resolve().parent

CHILD = r"""
import os, sys, time

sys.path.insert(0, sys.argv[4])
from test_train import tiny_async_preset
from logicars.train import train

point, target, run = sys.argv[1], int(sys.argv[2]), sys.argv[3]
writes = 0  # checkpoint writes started so far
checkpoint_fds = set()
real_open, real_fdopen, real_fsync, real_replace = os.open, os.fdopen, os.fsync, os.replace


def pause(where):
    print(f"paused {where} {writes}", flush=True)
    time.sleep(120)  # the parent kills us here
    os._exit(3)


class HalfWriter:
    def __init__(self, f):
        self._f = f
    def __enter__(self):
        return self
    def __exit__(self, *exc):
        self._f.close()
    def write(self, data):
        self._f.write(data[: len(data) // 2])
        self._f.flush()
        pause("partial")
    def flush(self):
        self._f.flush()
    def fileno(self):
        return self._f.fileno()


def open_(path, flags, *args, **kwargs):
    global writes
    fd = real_open(path, flags, *args, **kwargs)
    name = os.path.basename(os.fspath(path))
    if name.startswith(".model.safetensors.") and name.endswith(".tmp"):
        writes += 1
        checkpoint_fds.add(fd)
    return fd


def fdopen(fd, *args, **kwargs):
    f = real_fdopen(fd, *args, **kwargs)
    if point == "partial" and writes == target and fd in checkpoint_fds:
        return HalfWriter(f)
    return f


def fsync(fd):
    if point == "fsync" and writes == target and fd in checkpoint_fds:
        pause("fsync")
    real_fsync(fd)


def replace(src, dst, *args, **kwargs):
    real_replace(src, dst, *args, **kwargs)
    if point == "renamed" and writes == target and os.fspath(dst).endswith("model.safetensors"):
        pause("renamed")


os.open, os.fdopen, os.fsync, os.replace = open_, fdopen, fsync, replace
train(tiny_async_preset(), epochs=int(sys.argv[5]), out=run, quiet=True, checkpoint_every=1)
print("finished", flush=True)
"""


@pytest.fixture(scope="module")
def straight(tmp_path_factory: pytest.TempPathFactory) -> RunResult:
    """The run that was never killed."""
    out = tmp_path_factory.mktemp("straight") / "run"
    return train(tiny_async_preset(), epochs=EPOCHS, out=out, quiet=True, checkpoint_every=1)


def kill_during_write(run: Path, point: str, target: int) -> str:
    """Starts the child, waits until it stops at `point` of checkpoint write `target`,
    SIGKILLs it and returns the line it printed."""
    argv = [sys.executable, "-c", CHILD, point, str(target), str(run), str(TESTS_DIR), str(EPOCHS)]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        ready, _, _ = select.select([proc.stdout], [], [], 60)
        assert ready, "the child never reached the kill point"
        assert proc.stdout is not None
        line = proc.stdout.readline().strip()
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert line == f"paused {point} {target}", (line, proc.stderr.read() if proc.stderr else "")
    assert proc.returncode == -signal.SIGKILL
    return line


def check_kill_and_resume(tmp_path: Path, straight: RunResult, point: str, target: int) -> None:
    run = tmp_path / "run"
    kill_during_write(run, point, target)
    ckpt = run / "model.safetensors"
    # Write n saves epoch n (one checkpoint per epoch). Before the rename the previous
    # checkpoint is what is on disk; after it, the new one.
    survived = target if point == "renamed" else target - 1
    model, extra = load_checkpoint(ckpt)
    assert extra["epoch"] == survived
    assert model.optimizer_state()["t"] == survived
    leftovers = list(run.glob(".model.safetensors.*.tmp"))
    assert len(leftovers) == (0 if point == "renamed" else 1), leftovers

    resumed = train(None, resume=run, quiet=True, checkpoint_every=1)
    assert resumed.summary["epochs"] == EPOCHS
    assert same_state(straight.model, resumed.model)
    assert losses(straight) == losses(resumed)
    assert not list(run.glob(".model.safetensors.*.tmp"))  # cleaned up on resume


def test_sigkill_with_half_written_checkpoint(tmp_path: Path, straight: RunResult) -> None:
    check_kill_and_resume(tmp_path, straight, "partial", target=3)


@pytest.mark.slow
@pytest.mark.parametrize("target", [2, EPOCHS - 1])
@pytest.mark.parametrize("point", POINTS)
def test_sigkill_at_every_point_of_a_checkpoint_write(
    tmp_path: Path, straight: RunResult, point: str, target: int
) -> None:
    check_kill_and_resume(tmp_path, straight, point, target)
