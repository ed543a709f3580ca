"""One writer per run directory: an advisory lock on `<run>/.lock`.

Two trainings (or a training and a `--resume`) into one directory would each overwrite
the other's checkpoint, metrics and plots, and both report success. `train` takes this
lock before it touches anything in the run directory and holds it until its outputs
are written; a second writer is refused at once with `RunLockedError` naming the
holder's PID. The lock is `flock` on an open file, so the operating system drops it
when its process dies however it dies: a lock file left by a killed run never blocks.
The file holds the holder's PID and is removed when the lock is released; a writer
that locked a file just removed under it sees that (the path no longer names its file)
and tries again, so two writers never hold locks on two different files.

The lock file is opened without following a symlink and must be a regular file with
one link (`files.open_nofollow`): anyone who can write into a shared run directory could
otherwise plant `.lock` as a link to a file of whoever trains there, which the PID would
overwrite. Holding the lock also claims the directory: an existing directory that is not
a run of this package (nor empty) is refused before anything is written into it
(`files.refuse_foreign_dir`), and a claimed one is marked as a run.

`hold_lock` is the lock itself (a file opened that way and `flock`ed), which a sweep's
point lock (`logicars.sweep.points`) takes as well, waiting a while for its holder.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import IO

from .files import RUN_MARKER, mark_dir, open_nofollow, refuse_foreign_dir

LOCK_NAME = ".lock"
# A run's own files: a directory holding its checkpoint is a run (one from before runs
# were marked, too).
_RUN_FILES = ("model.safetensors",)


class RunLockedError(ValueError):
    """Another process is writing the run directory."""


class LockBusy(Exception):
    """Another process holds the lock; `holder` is `" (PID n)"` from its file, or ""."""

    def __init__(self, holder: str) -> None:
        super().__init__(holder)
        self.holder = holder


def hold_lock(path: Path, wait_s: float = 0.0) -> IO[str] | None:
    """The lock file `path`, created if absent and opened without following a symlink
    (`files.open_nofollow`), held with an exclusive `flock` until the file is closed or
    its process dies; `LockBusy` when another process still holds it after `wait_s`
    seconds. None where the platform has no advisory locks (not POSIX)."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - not POSIX: no advisory locks
        return None
    deadline = time.monotonic() + wait_s
    f = os.fdopen(open_nofollow(path, os.O_RDWR | os.O_CREAT), "r+")
    try:
        while True:
            try:
                fcntl.flock(f.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
                return f
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    raise LockBusy(_holder(f)) from None
                time.sleep(0.1)
    except BaseException:
        f.close()
        raise


class RunLock:
    """The held lock of a run directory; `release()` (or process exit) drops it."""

    def __init__(self, file: IO[str] | None, path: Path | None = None) -> None:
        self._file = file
        self._path = path

    @classmethod
    def acquire(cls, run_dir: Path) -> RunLock:
        """Locks `run_dir` (which must exist) or raises `RunLockedError` at once; a
        directory that is not a run of this package (nor empty) or a lock file that is
        not a plain file raises ValueError, before anything is written."""
        refuse_foreign_dir(run_dir, "output directory", RUN_MARKER, _RUN_FILES)
        path = run_dir / LOCK_NAME
        for _ in range(100):
            try:
                f = hold_lock(path)
            except LockBusy as e:
                raise RunLockedError(
                    f"{run_dir} is being written by another logicars process{e.holder}; "
                    "wait for it to end or choose another output directory"
                ) from None
            if f is None:  # pragma: no cover - not POSIX: no advisory locks
                mark_dir(run_dir)
                return cls(None)
            if _names(path, f):
                break
            f.close()  # released and removed by its holder meanwhile: lock the new file
        else:  # pragma: no cover - 100 holders in a row released under us
            raise RunLockedError(
                f"{run_dir}: could not lock {path}; another writer keeps taking it"
            )
        mark_dir(run_dir)
        try:
            f.truncate(0)  # only ever our own lock file: open_nofollow checked it
            f.write(f"{os.getpid()}\n")
            f.flush()
        except OSError:
            pass  # the PID is only for the message; the lock is what counts
        return cls(f, path)

    def release(self) -> None:
        if self._file is not None:
            if self._path is not None:
                try:
                    self._path.unlink()  # while still locked: nobody holds the name next
                except OSError:
                    pass
            self._file.close()  # closing the file drops the flock
            self._file = None


def _holder(f: IO[str]) -> str:
    """`" (PID n)"` from the lock file, or nothing when it holds no PID."""
    try:
        f.seek(0)
        pid = f.read(32).strip()
    except (OSError, ValueError):
        return ""
    return f" (PID {pid})" if pid.isdigit() else ""


def _names(path: Path, f: IO[str]) -> bool:
    """Whether `path` still names the open file `f` (not removed or replaced)."""
    try:
        a, b = os.lstat(path), os.fstat(f.fileno())
    except OSError:
        return False
    return (a.st_dev, a.st_ino) == (b.st_dev, b.st_ino)
