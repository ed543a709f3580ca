"""Atomic file writes: every output file (checkpoints, plots, GIFs, CSV, JSON, pages)
is written to a temporary file in its directory, flushed, fsync'ed and renamed over the
target, so a reader, a crash or a full disk sees the old file or the new one, never a
half-written one."""

from __future__ import annotations

import io
import os
import secrets
from pathlib import Path
from typing import Any, BinaryIO, Callable, Union

PathLike = Union[str, "os.PathLike[str]"]


def write_atomic(path: PathLike, data: bytes) -> None:
    """Temp file in the target's directory, fsync, rename over the target, fsync the
    dir. A failed write (disk full, permission) raises and leaves the old file."""
    path = Path(path)
    directory = path.parent if str(path.parent) else Path(".")
    # A unique temporary name: several writers (sweep shards) may write one report.
    tmp = directory / f".{path.name}.{secrets.token_hex(6)}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    _fsync_dir(directory)


def save_atomic(target: PathLike | BinaryIO, save: Callable[[BinaryIO], object]) -> None:
    """Runs a saver (`lambda f: fig.savefig(f, format="png")`) into a file object as it
    is, or into memory and then atomically to a path."""
    if hasattr(target, "write"):
        save(target)  # type: ignore[arg-type]
        return
    buf = io.BytesIO()
    save(buf)
    write_atomic(target, buf.getvalue())  # type: ignore[arg-type]


def _fsync_dir(directory: Path) -> None:
    """Makes the rename itself durable; not every platform can open a directory."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def read_toml(path: PathLike, what: str) -> dict[str, Any]:
    """The TOML file at `path` as a dict (tomllib, or tomli before Python 3.11); a
    one-line ValueError naming `what` and the file if it cannot be read or parsed."""
    import sys

    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - Python < 3.11
        import tomli as tomllib
    p = Path(path)
    try:
        text = p.read_text()
    except OSError as e:
        raise ValueError(f"{what} {p}: {e.strerror or e}") from None
    except UnicodeDecodeError as e:
        raise ValueError(f"{what} {p}: not UTF-8 text ({e.reason})") from None
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise ValueError(f"{what} {p}: {e}".replace("\n", " ")) from None
