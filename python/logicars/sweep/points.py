"""One point of a sweep on disk: its records (`point.json`, the run's summary), its
lock, and the run that brings it to a finished run wherever it executes."""

from __future__ import annotations

import dataclasses
import json
import math
import shutil
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from ..files import check_name, read_json, write_atomic
from ..runlock import LockBusy, hold_lock
from ..training.config import Resume, resume_settings

POINT_FILE = "point.json"  # the point's options, written before its run starts
ERROR_FILE = "error.txt"  # why the point's last attempt failed
LOCK_FILE = ".sweep.lock"  # held by the process training the point
_LOCK_WAIT_S = 10.0  # how long a point waits for another process to release it
# Options that `train` takes only for a new run (a resumed run keeps its start and
# relaxation, and refuses them): `TrainConfig`'s `Resume.NEW_RUN` settings.
NEW_RUN_ONLY = resume_settings(Resume.NEW_RUN)


class PointConflictError(ValueError):
    """A point's directory holds a run of other options, or a run this sweep did not
    start."""


def _read_json(path: Path) -> Any:
    """A point's JSON file (None: missing). It lies in a directory anyone sharing the
    sweep may write: a regular file of bounded size and nesting, no symlink followed;
    ValueError otherwise."""
    try:
        return read_json(path, "file", follow=False)
    except FileNotFoundError:
        return None
    except OSError as e:
        raise ValueError(f"{path}: unreadable ({e.strerror or e})") from None


class PointDamaged(ValueError):
    """A point's `point.json` or `summary.json` is unreadable or not what a sweep
    writes: the point is reported as failed and left as it is, the rest of the sweep
    goes on."""


def read_point_file(run_dir: Path) -> dict[str, Any] | None:
    """The point's `point.json` (None: none), checked."""
    if run_dir.is_symlink():  # it would make the sweep read and write elsewhere
        raise PointDamaged(f"{run_dir} is a symbolic link; a point's directory must be its own")
    try:
        point = _read_json(run_dir / POINT_FILE)
    except ValueError as e:
        raise PointDamaged(str(e)) from None
    if point is not None and not (
        isinstance(point, dict) and isinstance(point.get("options"), dict)
    ):
        raise PointDamaged(f"{run_dir / POINT_FILE}: not a sweep point's record")
    return point


def read_summary(run_dir: Path) -> dict[str, Any] | None:
    """The point's `summary.json` (None: none), checked field by field: what a report
    reads of it has the type `train` writes."""
    path = run_dir / "summary.json"
    try:
        summary = _read_json(path)
    except ValueError as e:
        raise PointDamaged(str(e)) from None
    if summary is None:
        return None
    try:
        _check_summary(summary)
    except (TypeError, ValueError, KeyError) as e:
        raise PointDamaged(f"{path}: not a run's summary ({e})") from None
    return summary


def _check_summary(summary: Any) -> None:
    def number(v: Any, optional: bool = False) -> bool:
        if v is None:
            return optional
        return type(v) in (int, float) and math.isfinite(v)

    def count(v: Any, optional: bool = False) -> bool:
        return (optional and v is None) or (type(v) is int and v >= 0)

    if not isinstance(summary, dict):
        raise TypeError("not an object")
    ev = summary.get("hard_eval")
    checks = {
        "hard_eval": isinstance(ev, dict) and count(ev.get("solved")) and count(ev.get("samples")),
        "epochs": count(summary.get("epochs")),
        "first_epoch_hard_zero": count(summary.get("first_epoch_hard_zero"), True),
        "solved_epoch": count(summary.get("solved_epoch"), True),
        "solved_seconds": number(summary.get("solved_seconds"), True),
        "final_soft_loss": number(summary.get("final_soft_loss"), True),
        "final_hard_loss": number(summary.get("final_hard_loss"), True),
        "wall_seconds": number(summary.get("wall_seconds")),
        "active_gates": count(summary.get("active_gates")),
        "early_stopped": isinstance(summary.get("early_stopped"), bool),
        "interrupted": isinstance(summary.get("interrupted", False), bool),
    }
    bad = [k for k, ok in checks.items() if not ok]
    if bad:
        raise ValueError(f"field {bad[0]!r} missing or of the wrong type")


def point_state(run_dir: Path, options: Mapping[str, Any]) -> str:
    """What a point's directory holds: `"done"` (finished run), `"resume"` (a
    checkpoint to continue) or `"new"` (nothing to keep). Raises `PointConflictError`
    when the directory holds another run."""
    from ..runstate import CHECKPOINT_NAME

    try:
        point = read_point_file(run_dir)
        summary = read_summary(run_dir) if point is not None else None
    except PointDamaged:
        return "damaged"
    if point is None:
        if (run_dir / CHECKPOINT_NAME).exists():
            raise PointConflictError(
                f"{run_dir} holds a run that this sweep did not start (no {POINT_FILE}); "
                "move it away or choose another sweep directory"
            )
        return "new"
    if point.get("options") != dict(options):
        raise PointConflictError(
            f"{run_dir} holds a run of other options ({point.get('options')}); "
            "move it away or choose another sweep directory"
        )
    if summary is not None and not summary.get("interrupted"):
        return "done"
    return "resume" if (run_dir / CHECKPOINT_NAME).exists() else "new"


class PointBusy(Exception):
    """Another process holds the point (an overlapping sweep, or one still stopping)."""


@contextmanager
def _point_lock(run_dir: Path) -> Iterator[None]:
    """An exclusive lock on the point's directory while it trains (`runlock.hold_lock`:
    released by the OS when the process dies, however it dies)."""
    if run_dir.is_symlink():
        raise PointDamaged(f"{run_dir} is a symbolic link; a point's directory must be its own")
    run_dir.mkdir(parents=True, exist_ok=True)
    try:
        # Not through a symlink planted as the lock (it would create or lock a file elsewhere).
        lock = hold_lock(run_dir / LOCK_FILE, _LOCK_WAIT_S)
    except LockBusy:
        raise PointBusy(f"{run_dir} is being trained by another process") from None
    try:
        yield
    finally:
        if lock is not None:
            lock.close()  # closing the file drops the flock


def _checkpoint_finished(ckpt: Path) -> bool:
    """True when the checkpoint is a run's final one (its summary was never written)."""
    from ..model import load_checkpoint

    _, extra = load_checkpoint(ckpt)
    return bool(extra.get("early_stopped")) or extra.get("epoch", 0) >= extra.get(
        "target_epochs", math.inf
    )


def _search_cut_short(summary: dict[str, Any] | None) -> bool:
    """Whether an interrupted run's summary shows a drift search with candidates left
    (`training.policies.drift_left`: what `train`'s resume goes on with)."""
    from ..training.policies import drift_left

    if not summary or not summary.get("interrupted"):
        return False
    return drift_left(
        summary.get("repair", True),
        summary.get("solved_epoch"),
        summary.get("repairs") or [],
        int(summary.get("drift_budget") or 0),
    )


def train_point(run_dir: Path, options: Mapping[str, Any], threads: int) -> str:
    """Brings one point's run directory to a finished run; returns what it did:
    `"skipped"` (already finished), `"resumed"`, `"trained"` or `"interrupted"` (Ctrl-C:
    stopped with a checkpoint)."""
    from ..train import CHECKPOINT_NAME, train

    with _point_lock(run_dir):
        state = point_state(run_dir, options)  # again: another process may have run it
        if state == "done":
            return "skipped"
        if state == "damaged":
            raise PointDamaged(damage_message(run_dir))
        (run_dir / ERROR_FILE).unlink(missing_ok=True)
        ckpt = run_dir / CHECKPOINT_NAME
        # A run stopped in the drift search after its epochs goes on from its checkpoint,
        # as one stopped earlier does (trained again, it would search from the start).
        cut_short = state == "resume" and _search_cut_short(read_summary(run_dir))
        if state == "resume" and (cut_short or not _checkpoint_finished(ckpt)):
            # The point's own options again, as `train` takes them on a resume (the run
            # keeps what the checkpoint holds; stop_on_solve, for one, is replaced).
            again = {k: v for k, v in options.items() if k not in NEW_RUN_ONLY}
            result = train(**again, resume=run_dir, threads=threads, quiet=True)
            return "interrupted" if result.interrupted else "resumed"
        # Killed between the final checkpoint and the summary: train it again (same run).
        ckpt.unlink(missing_ok=True)
        point = {"name": run_dir.name, "options": dict(options)}
        write_atomic(run_dir / POINT_FILE, (json.dumps(point, indent=1) + "\n").encode())
        result = train(**options, out=run_dir, threads=threads, quiet=True)
        return "interrupted" if result.interrupted else "trained"


@dataclasses.dataclass
class WorkerState:
    """Set in each pool worker by `executors.worker_init`."""

    stop: Any = None  # multiprocessing.Event: stop the running point after this epoch


WORKER = WorkerState()


def _input_error(e: BaseException) -> bool:
    """Bad options or a conflicting directory: the sweep stops (every point would fail
    alike); anything else (a diverged run, an engine panic) fails only its point."""
    from .._core import MemoryLimitError
    from ..errors import CheckpointError

    # A damaged point (its checkpoint or records) fails alone, as a diverged run does.
    if isinstance(e, (PointDamaged, CheckpointError)):
        return False
    return isinstance(e, (ValueError, TypeError, MemoryLimitError))


def run_point(out: str, name: str, options: dict[str, Any], threads: int) -> dict[str, Any]:
    """Trains one point where it runs (a pool worker, a Ray task or in-process) and
    says how it went: `{"status": "trained" | "resumed" | "skipped" | "busy" |
    "not started" | "failed" | "input error", "error": message}`. Never raises for a
    failed run: the error is also written to the point's `error.txt`."""
    from .._core import PanicException

    if WORKER.stop is not None and WORKER.stop.is_set():
        return {"status": "not started"}
    run_dir = Path(out) / check_name(name, "sweep point name")
    try:
        return {"status": train_point(run_dir, options, threads)}
    except PointBusy as e:
        return {"status": "busy", "error": str(e)}
    except (Exception, PanicException) as e:
        message = f"{type(e).__name__}: {e}".replace("\n", " ")
        if _input_error(e):
            _discard_unstarted(run_dir)
            return {"status": "input error", "error": str(e)}
        try:
            write_atomic(run_dir / ERROR_FILE, (message + "\n").encode())
        except OSError:
            pass
        return {"status": "failed", "error": message}


def _discard_unstarted(run_dir: Path) -> None:
    """Removes a point directory that holds nothing but what the sweep wrote (its
    options were refused before training started), so it does not show in reports."""
    try:
        # Only a point directory proper (a plain name, not a symlink), never `out` itself.
        if run_dir.name in ("", ".", "..") or run_dir.is_symlink():
            return
        if {f.name for f in run_dir.iterdir()} <= {POINT_FILE, LOCK_FILE}:
            shutil.rmtree(run_dir)
    except OSError:
        pass


def damage_message(run_dir: Path) -> str:
    """Why a point's records are damaged (`PointDamaged`'s message)."""
    try:
        read_point_file(run_dir)
        read_summary(run_dir)
    except PointDamaged as e:
        return f"{e}; move it away to train the point again"
    return f"{run_dir}: damaged"
