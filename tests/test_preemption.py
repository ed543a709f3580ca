"""Preemption and concurrent writers: SIGTERM and SIGHUP stop a training run with a
final checkpoint (and a resume is bit-identical to a straight run); a second writer into
a run directory is refused at once while the first run stays intact."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from test_train import _wait_for_rows, losses, same_state

from logicars.model import load_checkpoint
from logicars.runlock import LOCK_NAME, RunLock, RunLockedError
from logicars.train import train

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals and flock")


def interruptible() -> None:
    """A child's SIGINT as in a terminal's foreground process: a test suite started as a
    background job (`cmd &`, nohup) inherits SIGINT ignored, and Python then never raises
    KeyboardInterrupt, which is not what these tests are about."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def start_training(out: Path, *extra: str) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "logicars", "train", "gol", "--epochs", "1000000", "--quiet",
         "--seed", "4", "--out", str(out), *extra],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
        preexec_fn=interruptible,
    )  # fmt: skip


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP])
def test_sigterm_and_sighup_checkpoint_and_resume_bit_identically(
    tmp_path: Path, signum: int
) -> None:
    out = tmp_path / "run"
    proc = start_training(out)
    _wait_for_rows(out / "metrics.csv", 3, proc)
    proc.send_signal(signum)
    stdout, stderr = proc.communicate(timeout=60)
    name = signal.Signals(signum).name
    assert proc.returncode == 128 + signum, stderr
    assert "Traceback" not in stderr
    last = stderr.strip().splitlines()[-1]
    assert f"stopped by {name}" in last and "--resume" in last

    model, extra = load_checkpoint(out / "model.safetensors")
    done = extra["epoch"]
    assert extra["interrupted"] is True and 3 <= done < 1000000
    assert model.optimizer_state()["t"] == done

    resumed = train(None, resume=out, epochs=done + 2, quiet=True)
    straight = train("gol", epochs=done + 2, seed=4, out=tmp_path / "straight", quiet=True)
    assert same_state(straight.model, resumed.model)
    assert losses(straight) == losses(resumed)


def test_second_writer_is_refused_and_first_run_stays_intact(tmp_path: Path) -> None:
    out = tmp_path / "run"
    first = start_training(out, "--checkpoint-every", "1")
    _wait_for_rows(out / "metrics.csv", 2, first)
    while not (out / "model.safetensors").exists():
        time.sleep(0.05)
    for args in (
        ["train", "--resume", str(out), "--epochs", "2000000", "--quiet"],
        ["train", "gol", "--epochs", "5", "--quiet", "--seed", "9", "--out", str(out)],
    ):
        t0 = time.monotonic()
        r = subprocess.run(
            [sys.executable, "-m", "logicars", *args], capture_output=True, text=True, timeout=60
        )
        if args[1] == "gol" and r.returncode == 2 and "already holds a run" in r.stderr:
            continue  # a new run into a directory with a checkpoint: refused before the lock
        assert r.returncode == 2, r.stderr
        assert time.monotonic() - t0 < 30
        assert "being written by another logicars process" in r.stderr
        assert f"PID {first.pid}" in r.stderr
        assert r.stderr.count("\n") == 1 and "Traceback" not in r.stderr
    first.send_signal(signal.SIGINT)
    _, stderr = first.communicate(timeout=60)
    assert first.returncode == 0, stderr
    model, extra = load_checkpoint(out / "model.safetensors")
    assert extra["seed"] == 4 and model.optimizer_state()["t"] == extra["epoch"]
    rows = (out / "metrics.csv").read_text().splitlines()
    assert len(rows) == extra["epoch"] + 1


def test_lock_is_exclusive_and_stale_locks_do_not_block(tmp_path: Path) -> None:
    lock = RunLock.acquire(tmp_path)
    with pytest.raises(RunLockedError, match=f"PID {os.getpid()}"):
        RunLock.acquire(tmp_path)
    lock.release()
    RunLock.acquire(tmp_path).release()  # released: free again
    # A lock file whose holder was killed (the OS dropped its flock) does not block.
    holder = subprocess.Popen(
        [sys.executable, "-c",
         "import time; from pathlib import Path; from logicars.runlock import RunLock; "
         f"lock = RunLock.acquire(Path({str(tmp_path)!r})); "
         "print('locked', flush=True); time.sleep(60)"],
        stdout=subprocess.PIPE,
        text=True,
    )  # fmt: skip
    assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
    with pytest.raises(RunLockedError, match=f"PID {holder.pid}"):
        RunLock.acquire(tmp_path)
    holder.kill()
    holder.wait(timeout=30)
    assert (tmp_path / LOCK_NAME).exists()  # the killed holder could not remove it
    RunLock.acquire(tmp_path).release()
    assert not (tmp_path / LOCK_NAME).exists()  # a release removes it


def test_train_api_refuses_a_locked_directory(tmp_path: Path) -> None:
    out = tmp_path / "run"
    out.mkdir()
    lock = RunLock.acquire(out)
    try:
        with pytest.raises(RunLockedError):
            train("gol", epochs=2, out=out, quiet=True)
    finally:
        lock.release()
    assert not (out / "model.safetensors").exists()
    train("gol", epochs=2, out=out, quiet=True)


SIMULATE_FOREVER = """
import sys, numpy as np, logicars
model = logicars.Model(logicars.get_preset("gol").spec, 0)
x = np.zeros((1, 64, 64, 1), np.uint8)
print("started", flush=True)
try:
    if sys.argv[1] == "simulate":
        model.simulate(x, 10**9)
    elif sys.argv[1] == "rollout":
        # The float engine keeps every state: 3000 steps of 128 x 128 cells are 200 MB
        # and tens of seconds.
        model.rollout(np.zeros((1, 128, 128, 1), np.float32), 3000)
    else:
        logicars.Simulator(model, x).run(10**9, fire_rate=0.5, record=10**8)
except KeyboardInterrupt:
    print("KeyboardInterrupt", flush=True)
    sys.exit(7)
"""


@pytest.mark.parametrize("how", ["simulate", "Simulator.run", "rollout"])
def test_ctrl_c_stops_a_long_run_within_a_second(how: str) -> None:
    proc = subprocess.Popen(
        [sys.executable, "-c", SIMULATE_FOREVER, how],
        stdout=subprocess.PIPE,
        text=True,
        preexec_fn=interruptible,
    )
    assert proc.stdout is not None and proc.stdout.readline().strip() == "started"
    time.sleep(0.5)  # well inside the run
    t0 = time.monotonic()
    proc.send_signal(signal.SIGINT)
    try:
        out, _ = proc.communicate(timeout=30)
    finally:
        proc.kill()
    assert time.monotonic() - t0 < 1.0
    assert proc.returncode == 7 and "KeyboardInterrupt" in out


def test_ctrl_c_stops_cli_simulate(tmp_path: Path) -> None:
    run = train("gol", epochs=1, out=tmp_path / "run", quiet=True)
    proc = subprocess.Popen(
        [sys.executable, "-m", "logicars", "simulate", str(run.run_dir), "--steps", "1000000000"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=interruptible,
    )
    time.sleep(3)  # the interpreter starts and the run begins
    assert proc.poll() is None
    t0 = time.monotonic()
    proc.send_signal(signal.SIGINT)
    try:
        _, stderr = proc.communicate(timeout=30)
    finally:
        proc.kill()
    assert time.monotonic() - t0 < 1.0
    assert proc.returncode == 130 and "aborted" in stderr and "Traceback" not in stderr
