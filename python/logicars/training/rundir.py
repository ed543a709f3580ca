"""A run's directory: its name, its creation and lock, metrics.csv (rebuilt from the
checkpoint on a resume, then appended to epoch by epoch) and where TensorBoard writes."""

from __future__ import annotations

import os
import re
import stat
from datetime import datetime
from pathlib import Path
from typing import Any, BinaryIO, Union

from ..files import file_kind, open_append, write_atomic
from ..runlock import RunLock
from ..runstate import CHECKPOINT_NAME, EpochMetrics
from ..tensorboard_log import require_writer
from .loop import Policy, Run

PathLike = Union[str, "os.PathLike[str]"]


def run_name(name: str) -> str:
    """A run directory's name for a preset or task kind: a kind that names a file keeps
    the kind and the file's stem (`grow:/tmp/x/heart.png` -> `grow-heart`), not the
    directories it lies in; a rule keeps its text without slashes (`life-B36-S23`)."""
    family, sep, arg = name.partition(":")
    if sep and family != "life" and ("/" in arg or "\\" in arg or Path(arg).suffix):
        stem = Path(arg.replace("\\", "/")).stem  # a Windows path's too
        name = f"{family}-{stem}"
    return re.sub(r"[^A-Za-z0-9._-]+", "-", name).strip("-.") or "run"


def default_run_dir(name: str) -> Path:
    stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
    base = Path("runs") / f"{run_name(name)}-{stamp}"
    path, n = base, 1
    while path.exists():
        n += 1
        path = Path(f"{base}-{n}")
    return path


def prepare_run_dir(path: Path) -> RunLock:
    """Creates the run directory, proves it writable and locks it (one writer per run,
    `logicars.runlock`) before any training starts."""
    try:
        path.mkdir(parents=True, exist_ok=True)
        probe = path / f".write-test-{os.getpid()}"
        probe.write_bytes(b"")
        probe.unlink()
    except FileExistsError:
        raise ValueError(f"output directory {path} exists and is not a directory") from None
    except NotADirectoryError:
        raise ValueError(f"output directory {path}: a parent is not a directory") from None
    except OSError as e:
        raise ValueError(f"output directory {path} is not writable: {e.strerror or e}") from None
    lock = RunLock.acquire(path)  # before the cleanup: another writer's temp files are live
    # Temporary files a killed run left behind (the checkpoint itself is always whole).
    for stale in path.glob(f".{CHECKPOINT_NAME}.*.tmp"):
        try:
            stale.unlink()
        except OSError:
            pass
    return lock


def _metrics_csv(rows: list[EpochMetrics]) -> str:
    """metrics.csv's text: the header and a line per row (`_metrics_line`)."""
    return ",".join(EpochMetrics._fields) + "\n" + "".join(_metrics_line(r) for r in rows)


def _metrics_line(r: EpochMetrics) -> str:
    """One row of metrics.csv: the losses and learning rate exactly (`repr`), the time to
    0.1 ms; an lr or repair not recorded is empty."""
    lr = "" if r.lr is None else repr(r.lr)
    repair = "" if r.repair is None else r.repair
    return (
        f"{r.epoch},{r.soft_loss!r},{r.hard_loss!r},{r.elapsed_s:.4f},"
        f"{r.attempt},{lr},{r.validation},{repair}\n"
    )


def start_metrics_csv(path: Path, rows: list[EpochMetrics]) -> BinaryIO:
    """metrics.csv as of the run's last checkpoint (`rows`: none for a new run), opened
    for appending the rows to come.

    The checkpoint holds every row up to its epoch, so the file is rebuilt from them
    (atomically): rows a killed run logged after its checkpoint are dropped, as that
    training is done again, and whatever else the file held is replaced. Only a
    metrics.csv that is not a regular file (a directory, a FIFO, a device, a symlink) is
    refused, before any training."""
    try:
        mode = path.lstat().st_mode
    except FileNotFoundError:
        mode = None
    except OSError as e:
        raise ValueError(f"{path}: cannot inspect the metrics file: {e.strerror or e}") from None
    if mode is not None and not stat.S_ISREG(mode):
        raise ValueError(
            f"{path} is not a regular file ({file_kind(mode)}); move it away to train "
            "into this run directory"
        )
    write_atomic(path, _metrics_csv(rows).encode())
    return open_append(path)  # issue 43: never through a symlink swapped in meanwhile


def check_tensorboard(tensorboard: Any) -> Path | bool | None:
    """`tensorboard`: True (the run directory), a directory, or None/False (no event
    files); tensorboardX must be importable for the first two."""
    if tensorboard is None or tensorboard is False:
        return None
    if tensorboard is True:
        out: Path | bool = True
    elif isinstance(tensorboard, (str, os.PathLike)) and os.fspath(tensorboard) != "":
        out = Path(tensorboard)
        if out.exists() and not out.is_dir():
            raise ValueError(f"tensorboard: {out} exists and is not a directory")
    else:
        raise TypeError(
            f"tensorboard must be True (the run directory) or a directory, got {tensorboard!r}"
        )
    require_writer()
    return out


def checkpoint_path(resume: PathLike) -> Path:
    path = Path(resume)
    return path / CHECKPOINT_NAME if path.is_dir() else path


class MetricsCsv(Policy):
    """Appends each epoch's row to metrics.csv as it comes: a crash loses at most the
    epoch it interrupts."""

    def __init__(self, metrics_file: BinaryIO) -> None:
        self.file = metrics_file

    def after_step(self, run: Run, row: EpochMetrics) -> None:
        # the row as the policies before left it (`training.loop.note`)
        self.file.write(_metrics_line(run.state.metrics[-1]).encode())
        self.file.flush()
