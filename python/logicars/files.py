"""Files the package reads and writes, and the rules that keep them safe, each in one
place (docs/reliability.md):

- every output file (checkpoints, plots, GIFs, CSV, JSON, pages) is written to a
  temporary file in its directory, flushed, fsync'ed and renamed over the target, so a
  reader, a crash or a full disk sees the old file or the new one, never a half-written
  one (`write_atomic`);
- files the package reads are regular files of bounded size, opened without waiting on a
  FIFO (`open_regular`, `read_bytes`, `read_text`); files inside a run directory, which
  may come from someone else, are also opened without following symlinks;
- JSON is parsed with bounded nesting (`loads_json`), TOML likewise (`read_toml`);
- names that become paths are one path component, checked before anything touches the
  disk (`check_name`);
- lock and output files are opened without following symlinks (`open_nofollow`);
- an existing directory is written into only if it is one of the package's own, or
  empty (`refuse_foreign_dir`).

Every refusal is a one-line `ValueError` naming the file.
"""

from __future__ import annotations

import io
import itertools
import json
import os
import re
import secrets
import stat
from collections.abc import Iterable
from pathlib import Path
from typing import Any, BinaryIO, Callable, Union

PathLike = Union[str, "os.PathLike[str]"]

# Text files the package reads (experiment and sweep files, summary.json, point.json,
# error.txt) are a few KB; this bounds what a hostile one costs.
MAX_TEXT_BYTES = 16 << 20
# Nesting of JSON and TOML: the package's own files are a few levels deep; a hostile
# file nested 10^5 deep would end the parser in RecursionError.
MAX_DEPTH = 64
# Directory entries looked at when deciding whether a directory is the package's own.
_MAX_ENTRIES = 10_000
_O_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_O_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_O_NONBLOCK = getattr(os, "O_NONBLOCK", 0)


def write_atomic(path: PathLike, data: bytes) -> None:
    """Temp file in the target's directory, fsync, rename over the target, fsync the
    dir. A failed write (disk full, permission) raises and leaves the old file."""
    path = Path(path)
    directory = path.parent if str(path.parent) else Path(".")
    # A unique temporary name: several writers (sweep shards) may write one report.
    tmp = directory / f".{path.name}.{secrets.token_hex(6)}.tmp"
    # O_EXCL never opens an existing file (nor a symlink planted under that name).
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _O_NOFOLLOW | _O_CLOEXEC, 0o666)
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
    one-line ValueError naming `what` and the file if it cannot be read or parsed (not a
    regular file, over `MAX_TEXT_BYTES`, nested deeper than `MAX_DEPTH`)."""
    p = Path(path)
    return loads_toml(read_text(p, what), f"{what} {p}")


def loads_toml(text: str, what: str) -> dict[str, Any]:
    """TOML text as a dict; ValueError (naming `what`) for anything but a valid document
    of bounded nesting."""
    import sys

    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - Python < 3.11
        import tomli as tomllib
    if _toml_depth(text) > MAX_DEPTH:
        raise ValueError(f"{what}: nested deeper than {MAX_DEPTH} levels")
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise ValueError(f"{what}: {e}".replace("\n", " ")) from None
    except (RecursionError, MemoryError):  # pragma: no cover - the depth check comes first
        raise ValueError(f"{what}: nested too deeply") from None


# TOML strings and comments, so that brackets and dots inside them do not count.
_TOML_SKIP = re.compile(
    r'"""(?:[^\\]|\\.)*?"""|\'\'\'.*?\'\'\'|"(?:[^"\\\n]|\\.)*"|\'[^\'\n]*\'|#[^\n]*',
    re.DOTALL,
)


def _toml_depth(text: str) -> int:
    """An upper bound of a TOML document's nesting: brackets and braces open at once, or
    dots in one line (dotted keys nest tables; tomllib takes quadratic time in them)."""
    bare = _TOML_SKIP.sub("", text)
    deepest = max((line.count(".") for line in bare.splitlines()), default=0)
    return max(deepest, _bracket_depth(bare))


def _bracket_depth(text: str) -> int:
    """The deepest nesting of brackets and braces (numpy: a 16 MB file in milliseconds)."""
    import numpy as np

    b = np.frombuffer(text.encode("utf-8", "surrogatepass"), dtype=np.uint8)
    # "[" 0x5b and "{" 0x7b, "]" 0x5d and "}" 0x7d: equal but for bit 5.
    low = b & 0xDF
    step = (low == 0x5B).astype(np.int32) - (low == 0x5D)
    return int(np.cumsum(step).max()) if step.size else 0


# ---- reading: regular files of bounded size ---------------------------------------------


class MissingFileError(FileNotFoundError, ValueError):
    """A file the package was asked to read does not exist: a `FileNotFoundError`, and a
    `ValueError` like every other refusal of a file."""


def file_kind(mode: int) -> str:
    """What a file of this `st_mode` is, in words (for a refusal's message)."""
    kinds = (
        (stat.S_ISDIR, "a directory"),
        (stat.S_ISLNK, "a symbolic link"),
        (stat.S_ISFIFO, "a FIFO"),
        (stat.S_ISSOCK, "a socket"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
    )
    return next((name for test, name in kinds if test(mode)), "not a regular file")


def open_regular(
    path: PathLike, what: str, limit: int = MAX_TEXT_BYTES, follow: bool = True
) -> BinaryIO:
    """`path` opened for reading if it is a regular file of at most `limit` bytes, else a
    one-line ValueError naming `what`. O_NONBLOCK: a FIFO is refused, never waited on;
    devices (`/dev/zero`) and sockets are refused unread. `follow=False` (files inside a
    run directory, which may be someone else's) refuses a symlink too."""
    p = Path(path)
    flags = os.O_RDONLY | _O_NONBLOCK | _O_CLOEXEC | (0 if follow else _O_NOFOLLOW)
    try:
        fd = os.open(p, flags)
    except FileNotFoundError:
        raise MissingFileError(f"{what} {p}: no such file") from None
    except OSError as e:
        if not follow and os.path.islink(p):
            raise ValueError(f"{what} {p} is a symbolic link; expected a regular file") from None
        raise ValueError(f"{what} {p}: {e.strerror or e}") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise ValueError(f"{what} {p} is {file_kind(st.st_mode)}; expected a regular file")
        if st.st_size > limit:
            raise ValueError(f"{what} {p}: {st.st_size:,} bytes, over the limit of {limit:,} bytes")
        # Back to blocking reads: regular files never block, and some readers mind.
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_bytes(
    path: PathLike, what: str, limit: int = MAX_TEXT_BYTES, follow: bool = True
) -> bytes:
    """The bytes of a regular file of at most `limit` bytes (`open_regular`); a file that
    grows past the limit while read is refused too."""
    with open_regular(path, what, limit, follow) as f:
        try:
            data = f.read(limit + 1)
        except OSError as e:
            raise ValueError(f"{what} {path}: {e.strerror or e}") from None
    if len(data) > limit:
        raise ValueError(f"{what} {path}: over the limit of {limit:,} bytes")
    return data


def read_text(path: PathLike, what: str, limit: int = MAX_TEXT_BYTES, follow: bool = True) -> str:
    """A UTF-8 text file (`read_bytes`); ValueError for anything else."""
    data = read_bytes(path, what, limit, follow)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise ValueError(f"{what} {path}: not UTF-8 text ({e.reason})") from None


# Strings, so that brackets inside them do not count as nesting.
_JSON_STRING = re.compile(r'"(?:[^"\\]|\\.)*"', re.DOTALL)


def json_depth(text: str) -> int:
    """The deepest nesting of a JSON text's arrays and objects (brackets inside strings
    not counted), without parsing it."""
    return _bracket_depth(_JSON_STRING.sub("", text))


def loads_json(text: str | bytes, what: str, max_depth: int = MAX_DEPTH) -> Any:
    """`json.loads(text)` refusing nesting deeper than `max_depth` (counted before
    parsing, so never RecursionError), with a one-line ValueError naming `what`."""
    if isinstance(text, bytes):
        try:
            text = text.decode("utf-8")
        except UnicodeDecodeError as e:
            raise ValueError(f"{what}: not UTF-8 text ({e.reason})") from None
    if json_depth(text) > max_depth:
        raise ValueError(f"{what}: JSON nested deeper than {max_depth} levels")
    try:
        return json.loads(text)
    except (ValueError, RecursionError) as e:
        raise ValueError(f"{what}: not valid JSON ({e})".replace("\n", " ")) from None


def read_json(path: PathLike, what: str, limit: int = MAX_TEXT_BYTES, follow: bool = True) -> Any:
    """A JSON file: a regular file of bounded size (`read_bytes`), bounded nesting
    (`loads_json`). FileNotFoundError when missing; ValueError for anything else."""
    return loads_json(read_bytes(path, what, limit, follow), f"{what} {path}")


# ---- names and directories ---------------------------------------------------------------

_MAX_NAME_BYTES = 255  # a path component on every common file system


def check_name(name: str, what: str) -> str:
    """`name` if it is one plain path component (a file or directory name inside a
    directory the package writes), else ValueError, before anything touches the disk:
    not empty, not `.` or `..`, no separator or NUL, at most 255 bytes."""
    if not isinstance(name, str):
        raise ValueError(f"{what}: a name must be a string, got {type(name).__name__}")
    seps = {"/", "\0"} | ({os.sep, os.altsep} - {None})
    if (
        name in ("", ".", "..")
        or any(s in name for s in seps)  # type: ignore[operator]
        or len(name.encode("utf-8", "surrogateescape")) > _MAX_NAME_BYTES
    ):
        raise ValueError(f"{what}: {name[:80]!r} is not a plain file name")
    return name


# What marks a directory as the package's: written when a run or a sweep starts.
RUN_MARKER = ".logicars-run"
SWEEP_MARKER = ".logicars-sweep"
# Files the package keeps in a run directory before its first checkpoint: a directory
# holding only these is as good as empty.
_BOOKKEEPING = frozenset({".lock", ".sweep.lock", "point.json", RUN_MARKER})


def refuse_foreign_dir(
    path: PathLike,
    what: str,
    marker: str = RUN_MARKER,
    ours: Iterable[str] = (),
    ours_inside: Iterable[str] = (),
) -> None:
    """Refuses (ValueError) to write into an existing directory unless it is one of the
    package's (it holds `marker`, one of the names `ours`, e.g. a run's checkpoint, or a
    subdirectory holding one of `ours_inside`, e.g. a sweep's point) or is empty but for the
    package's bookkeeping files. A user's directory that happens to hold a
    `summary.json` or `loss.png` is never overwritten."""
    p = Path(path)
    try:
        entries = os.scandir(p)
    except FileNotFoundError:
        return
    except NotADirectoryError:
        raise ValueError(f"{what} {p} exists and is not a directory") from None
    except OSError as e:
        raise ValueError(f"{what} {p}: {e.strerror or e}") from None
    with entries:
        names = [e.name for e in itertools.islice(entries, _MAX_ENTRIES)]
    known = {marker, *ours}
    if any(n in known for n in names):
        return
    inside = tuple(ours_inside)
    if inside and any(os.path.isfile(p / n / f) for n in names for f in inside):
        return
    foreign = sorted(n for n in names if n not in _BOOKKEEPING and not n.startswith(".write-test-"))
    if foreign:
        raise ValueError(
            f"{what} {p} already exists and is not a logicars {_what_marks(marker)} (it holds "
            f"{foreign[0]!r}); choose a new or empty directory"
        )


def _what_marks(marker: str) -> str:
    return "sweep" if marker == SWEEP_MARKER else "run"


def mark_dir(path: PathLike, marker: str = RUN_MARKER) -> None:
    """Leaves `marker` in a directory the package now writes (`refuse_foreign_dir`), so
    that a rerun after a crash before its first checkpoint is not refused. Best effort."""
    try:
        os.close(open_nofollow(Path(path) / marker, os.O_WRONLY | os.O_CREAT))
    except (OSError, ValueError):
        pass


# ---- writing: no symlinks followed ------------------------------------------------------


def open_nofollow(path: PathLike, flags: int, mode: int = 0o666) -> int:
    """A file descriptor of `path` opened with `flags` (e.g. `O_RDWR | O_CREAT`) without
    following a symlink and without waiting on a FIFO, if it is a regular file with one
    link (a hard link to someone's file is refused, as it would be written through):
    ValueError naming the file otherwise. Lock and output files go through here."""
    p = Path(path)
    try:
        fd = os.open(p, flags | _O_NOFOLLOW | _O_NONBLOCK | _O_CLOEXEC, mode)
    except OSError as e:
        if os.path.islink(p):
            raise ValueError(
                f"{p} is a symbolic link; remove it (the package never writes through one)"
            ) from None
        if isinstance(e, (FileNotFoundError, PermissionError, IsADirectoryError)):
            raise
        raise ValueError(f"{p}: {e.strerror or e}") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise ValueError(f"{p} is {file_kind(st.st_mode)}; expected a regular file; remove it")
        if st.st_nlink > 1:
            raise ValueError(
                f"{p} has {st.st_nlink} hard links; remove it (writing it would change "
                "another file)"
            )
        os.set_blocking(fd, True)
        return fd
    except BaseException:
        os.close(fd)
        raise


def open_append(path: PathLike) -> BinaryIO:
    """`path` opened for appending (a log such as metrics.csv) without following a
    symlink (`open_nofollow`)."""
    return os.fdopen(open_nofollow(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT), "ab")


# ---- arrays -------------------------------------------------------------------------------


def load_npz(
    source: PathLike | bytes, what: str, limit: int, follow: bool = True
) -> dict[str, Any]:
    """The arrays of an `.npz` archive (a path, read as a bounded regular file, or its
    bytes), none pickled: every member's header is read first and must not claim more
    data than the member holds (np.load allocates what a header says before it reads: a
    300-byte member claiming 931 GB was a MemoryError), and all of them together at most
    `limit` bytes (a zip bomb of zeros). ValueError naming `what` otherwise. `follow=False`
    for a file inside a run directory (`open_regular`)."""
    import zipfile

    import numpy as np
    from numpy.lib import format as npy

    data = source if isinstance(source, bytes) else read_bytes(source, what, limit, follow)
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as z:
            members = [m for m in z.infolist() if not m.is_dir()]
            if sum(m.file_size for m in members) > limit:
                raise ValueError(f"its arrays hold over {limit:,} bytes")
            out = {}
            for m in members:
                with z.open(m) as f:
                    version = npy.read_magic(f)
                    read = npy.read_array_header_1_0 if version == (1, 0) else None
                    shape, _, dtype = (read or npy.read_array_header_2_0)(f)
                    need = int(np.prod(shape, dtype=object)) * dtype.itemsize
                    if dtype.hasobject:
                        raise ValueError(f"member {m.filename!r} holds Python objects")
                    if need > m.file_size:
                        raise ValueError(
                            f"member {m.filename!r} claims {need:,} bytes in {m.file_size:,}"
                        )
                with z.open(m) as f:
                    out[m.filename.removesuffix(".npy")] = npy.read_array(f, allow_pickle=False)
            return out
    except (zipfile.BadZipFile, EOFError, OSError, RuntimeError) as e:
        raise ValueError(f"{what}: not a readable .npz archive ({e})") from None
    except ValueError as e:
        raise ValueError(f"{what}: not a readable .npz archive ({e})") from None
