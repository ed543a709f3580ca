"""Sweeps: many `train` runs over a grid of options, on this machine or a Ray cluster.

    >>> logicars.sweep({"preset": "checkerboard", "seed": range(16), "lr": [0.03, 0.06]},
    ...                out="runs/cb-sweep")

A *point* of the grid is one `logicars.train(...)` call; any keyword `train` accepts can
be swept (a list is swept, a single value is fixed). Every point trains into an
ordinary run directory `<out>/<name>` (metrics.csv, model.safetensors, summary.json,
...) named after its options, e.g. `checkerboard_lr=0.03_seed=4`, plus `point.json`
(the options) so that re-running the same sweep knows what is there:

- a point whose run finished (`summary.json`, not interrupted) is skipped;
- a point with a checkpoint but no final summary (Ctrl-C, SIGKILL, a node lost) is
  resumed from it with `train(resume=...)`: bit-identical to an uninterrupted run;
- any other point is trained.

Executors: a local process pool (default; `workers` processes with `threads_per_run`
engine threads each, started with `spawn`: forking after the engine's thread pool
started is unsafe) or Ray tasks (`ray=True` starts a local Ray instance, `ray="auto"`
or an address joins a cluster). A point's result does not depend on the executor.

At the end (and with `report(out)` at any time) the sweep writes, from every point
directory under `out`: `sweep.csv` and `sweep.json` (one row per point), `sweep.md` (a
Markdown table per grid cell: success rate, median epochs and seconds to hard loss 0)
and `sweep.png`. A point counts as *solved* when its trained hard circuit solves every
held-out input (`summary.json`'s `hard_eval`).
"""

from __future__ import annotations

import concurrent.futures as cf
import csv
import dataclasses
import hashlib
import inspect
import io
import itertools
import json
import math
import os
import re
import shutil
import signal
import statistics
import sys
import tempfile
import threading
import time
import uuid
from collections import deque
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from types import FrameType
from typing import Any, Union

import numpy as np

from .files import (
    MAX_TEXT_BYTES,
    SWEEP_MARKER,
    check_name,
    mark_dir,
    open_nofollow,
    open_regular,
    read_bytes,
    read_json,
    read_text,
    read_toml,
    refuse_foreign_dir,
    save_atomic,
    write_atomic,
)
from .training.config import Resume, TrainConfig, resume_settings

PathLike = Union[str, "os.PathLike[str]"]

POINT_FILE = "point.json"  # the point's options, written before its run starts
ERROR_FILE = "error.txt"  # why the point's last attempt failed
LOCK_FILE = ".sweep.lock"  # held by the process training the point
# Options of `train` that the sweep sets itself for every point.
RESERVED = {
    "out": "every point trains into its own directory under the sweep's out",
    "resume": "re-running the sweep resumes interrupted points",
    "quiet": "points always train quietly; the sweep shows its own progress",
    "threads": "set the engine threads of every point with threads_per_run (--threads-per-run)",
    "task": "name the task as preset: a preset or a task kind (life:B36/S23, ...)",
    "spec": "a sweep trains presets and task kinds, which bring their own spec",
    "callbacks": "callbacks are Python callables of this process, and points train in "
    "others; call train(callbacks=...) to use them",
    "config": "a point's options are JSON: sweep the settings themselves (lr=..., ...)",
}
# What makes a value a list of values to sweep (a string or a number is one value).
_SWEPT_TYPES = (list, tuple, range)
_LOCK_WAIT_S = 10.0  # how long a point waits for another process to release it
# The most points one sweep (or seed list) may have: far above a real sweep, low
# enough that listing them costs nothing (`--seeds 0-1000000000` is refused, not built).
MAX_POINTS = 100_000
_MAX_SEED = 2**64 - 1  # seeds are u64 in the engine
# How long the driver tries to reach a Ray cluster's address before giving up.
RAY_CONNECT_TIMEOUT_S = 10.0
# A sweep file is a few lines; this bounds what a hostile one costs.
_MAX_SWEEP_FILE_BYTES = 1 << 20
# Options that `train` takes only for a new run (a resumed run keeps its start and
# relaxation, and refuses them): `TrainConfig`'s `Resume.NEW_RUN` settings.
NEW_RUN_ONLY = resume_settings(Resume.NEW_RUN)


class PointConflictError(ValueError):
    """A point's directory holds a run of other options, or a run this sweep did not
    start."""


# ---- the grid -------------------------------------------------------------------------


def train_options() -> dict[str, inspect.Parameter]:
    """The keyword options of `logicars.train`, its own and every `TrainConfig` setting:
    what a sweep can vary."""
    from .train import train

    own = [p for p in inspect.signature(train).parameters.values() if p.kind is not p.VAR_KEYWORD]
    kind = inspect.Parameter.KEYWORD_ONLY
    settings = [
        inspect.Parameter(f.name, kind, annotation=f.type) for f in dataclasses.fields(TrainConfig)
    ]
    return {p.name: p for p in [own[0], *settings, *own[1:]]}  # the preset first


def _check_option(key: str) -> inspect.Parameter:
    if key in RESERVED:
        raise ValueError(f"option {key!r} cannot be swept: {RESERVED[key]}")
    params = train_options()
    if key not in params:
        names = ", ".join(k for k in params if k not in RESERVED)
        raise ValueError(f"train() has no option {key!r}; sweepable options: {names}")
    return params[key]


def parse_seeds(text: str) -> list[int]:
    """`"0-4,7"` -> `[0, 1, 2, 3, 4, 7]` (in the order given)."""
    ranges: list[range] = []
    for part in str(text).split(","):
        lo, dash, hi = part.strip().partition("-")
        try:
            first, last = int(lo), int(hi if dash else lo)
        except ValueError:
            raise ValueError(f"seeds: expected a list like 0-99 or 0,3,7, got {text!r}") from None
        if first < 0 or last < first:
            raise ValueError(f"seeds: {part.strip()!r} is not a range of seeds >= 0")
        if last > _MAX_SEED:
            raise ValueError(f"seeds: {part.strip()!r} goes past the largest seed, 2**64 - 1")
        ranges.append(range(first, last + 1))
        # Counted before anything is built: a range of 10^9 seeds is refused, not listed.
        if sum(len(r) for r in ranges) > MAX_POINTS:
            raise ValueError(f"seeds: {text!r} is over {MAX_POINTS:,} seeds")
    return [seed for r in ranges for seed in r]


def _parse_scalar(text: str) -> Any:
    """A value as written on the command line: a number, true/false, none or a string."""
    lowered = text.strip().lower()
    if lowered in ("none", "null"):
        return None
    if lowered in ("true", "false"):
        return lowered == "true"
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text.strip()


def parse_values(key: str, text: str) -> list[Any]:
    """The values of option `key` written as text, e.g. `"0.03,0.06"` or, for `seed`,
    `"0-99"`."""
    if key == "seed":
        return list(parse_seeds(text))
    return [_parse_scalar(v) for v in text.split(",")]


def _normalize(key: str, value: Any, param: inspect.Parameter) -> Any:
    """One option value as JSON can store it: numbers, strings, booleans, None."""
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, os.PathLike):
        value = os.fspath(value)
    if value is not None and not isinstance(value, (bool, int, float, str)):
        raise TypeError(
            f"option {key!r}: cannot sweep a value of type {type(value).__name__} "
            "(use numbers, strings, booleans or None; a preset by its name)"
        )
    # An int for a float-only option (`lr=1`) is that float, so that its points are the
    # same whichever way it was written. `train`'s annotations are strings (PEP 563).
    types = set(re.findall(r"\w+", str(param.annotation)))
    if type(value) is int and "float" in types and "int" not in types:
        value = float(value)
    if isinstance(value, float) and not math.isfinite(value):
        raise ValueError(f"option {key!r}: {value} is not a finite number")
    return value


def _values(key: str, value: Any, param: inspect.Parameter) -> list[Any]:
    if key == "seed" and isinstance(value, str):
        values: list[Any] = parse_seeds(value)
    elif isinstance(value, _SWEPT_TYPES):
        if len(value) > MAX_POINTS:
            raise ValueError(f"option {key!r}: {len(value):,} values, over {MAX_POINTS:,}")
        values = list(value)
    elif isinstance(value, np.ndarray):
        values = list(value.reshape(-1))
    elif isinstance(value, (set, frozenset)):
        raise TypeError(f"option {key!r}: a set has no order; give a list")
    else:
        values = [value]
    if not values:
        raise ValueError(f"option {key!r}: no values to sweep")
    return [_normalize(key, v, param) for v in values]


def _format_value(value: Any) -> str:
    if isinstance(value, bool) or value is None:
        return str(value).lower()
    return repr(value) if isinstance(value, float) else str(value)


def point_name(options: Mapping[str, Any]) -> str:
    """The directory name of a point: the preset, then `key=value` for every other
    option in the grid's order, seed last (`checkerboard_lr=0.03_seed=4`)."""
    parts = []
    for key, value in options.items():
        text = re.sub(r"[^A-Za-z0-9.+-]+", "-", _format_value(value))  # paths: no slashes
        parts.append(text if key == "preset" else f"{key}={text}")
    name = "_".join(parts)
    if len(name) > 120:  # long paths as values: keep the name short and unique
        digest = hashlib.sha1(json.dumps(dict(options)).encode()).hexdigest()[:12]
        name = f"{name[:100]}-{digest}"
    return name


@dataclasses.dataclass(frozen=True)
class Point:
    """One `train(**options)` call of a sweep and the name of its run directory."""

    name: str
    options: dict[str, Any]


Grid = Union[Mapping[str, Any], Sequence[Mapping[str, Any]]]


def expand_grid(grid: Grid) -> list[Point]:
    """The points of `grid` (option -> value or list of values), in order: the product
    of the options in the grid's order, seeds innermost. A list of grids gives their
    points one grid after the other (e.g. a mode with its parameters, another without)."""
    grids = [grid] if isinstance(grid, Mapping) else grid
    if isinstance(grids, (str, bytes)) or not all(isinstance(g, Mapping) for g in grids):
        raise TypeError("a sweep grid is a mapping of option -> values, or a list of them")
    if not grids:
        raise ValueError("no sweep grid given")
    points = []
    seen: dict[str, dict[str, Any]] = {}
    for g in grids:
        for options in _product(g):
            if options.get("tensorboard") not in (None, False, True):
                raise ValueError(
                    "a sweep takes tensorboard=True (each point's events in its run "
                    "directory), not a directory that every point would write into"
                )
            # The name becomes a directory under `out`: one plain component (no `.`,
            # `..`, separator), checked before anything touches the disk.
            name = check_name(point_name(options), "sweep point name")
            if name in seen:
                if seen[name] == options:
                    raise ValueError(f"the grid holds the point {name} twice")
                raise ValueError(f"two points get the same directory name {name}: {options}")
            seen[name] = options
            points.append(Point(name, options))
    return points


def _product(grid: Mapping[str, Any]) -> Iterator[dict[str, Any]]:
    if "preset" not in grid:
        raise ValueError("a sweep needs a preset (e.g. preset='checkerboard', or --file)")
    keys = ["preset"] + [k for k in grid if k not in ("preset", "seed")]
    if "seed" in grid:
        keys.append("seed")
    axes = []
    for key in keys:
        if not isinstance(key, str):
            raise TypeError(f"option names are strings, got {key!r}")
        axes.append(_values(key, grid[key], _check_option(key)))
    if math.prod(len(a) for a in axes) > MAX_POINTS:
        raise ValueError(f"the grid has over {MAX_POINTS:,} points")
    for combo in itertools.product(*axes):
        yield dict(zip(keys, combo))


def read_sweep_file(path: PathLike) -> dict[str, Any] | list[dict[str, Any]]:
    """A grid from a TOML (`.toml`) or YAML (`.yaml`, `.yml`) file: train options at the
    top level, a list to sweep or one value, `seed` also as a range string:

        preset = "checkerboard"
        seed = "0-15"
        lr = [0.03, 0.06]
        epochs = 500

    or several grids, one after the other, as `[[grid]]` tables (a `grid:` list in YAML).
    """
    p = Path(path)
    suffix = p.suffix.lower()
    if suffix not in (".toml", ".yaml", ".yml"):
        raise ValueError(f"sweep file {p}: expected a .toml, .yaml or .yml file")
    data: Any
    if suffix == ".toml":
        data = read_toml(p, "sweep file")
    else:
        text = read_text(p, "sweep file", _MAX_SWEEP_FILE_BYTES)
        try:
            import yaml

            data = yaml.safe_load(text)
        except Exception as e:  # the parser's own error types, RecursionError too
            raise ValueError(f"sweep file {p}: {e}".replace("\n", " ")) from None
    if isinstance(data, dict) and list(data) == ["grid"]:
        data = data["grid"]
    grids = data if isinstance(data, list) else [data]
    if not grids or not all(isinstance(g, dict) for g in grids):
        raise ValueError(f"sweep file {p}: expected a table of train options, or [[grid]] tables")
    for g in grids:
        _check_file_grid(p, g)
    return data


def _check_file_grid(path: Path, grid: dict[Any, Any]) -> None:
    """A grid read from a file: option names are strings, values are one value
    (number, string, boolean, none) or a flat list of them; a ValueError naming the file
    otherwise (not the TypeError `expand_grid` gives a program)."""
    scalar = (bool, int, float, str, type(None))
    for key, value in grid.items():
        if not isinstance(key, str):
            raise ValueError(f"sweep file {path}: option names are strings, got {key!r}")
        values = value if isinstance(value, list) else [value]
        if not all(isinstance(v, scalar) for v in values):
            raise ValueError(
                f"sweep file {path}: option {key!r} takes a value or a flat list of "
                "numbers, strings or booleans"
            )


def parse_shard(shard: str | tuple[int, int]) -> tuple[int, int]:
    """`"I/N"` or `(I, N)` -> `(I, N)`: the points `I, I + N, I + 2N, ...` (from 0)."""
    if isinstance(shard, str):
        i, slash, n = shard.partition("/")
        try:
            if not slash:
                raise ValueError
            index, count = int(i), int(n)
        except ValueError:
            raise ValueError(f"shard: expected I/N such as 0/4, got {shard!r}") from None
    else:
        index, count = shard
    if count < 1 or not 0 <= index < count:
        raise ValueError(f"shard {index}/{count}: need 0 <= I < N")
    return index, count


# ---- one point on disk ----------------------------------------------------------------


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


def _point_file(run_dir: Path) -> dict[str, Any] | None:
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


def _summary(run_dir: Path) -> dict[str, Any] | None:
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
    from .runstate import CHECKPOINT_NAME

    try:
        point = _point_file(run_dir)
        summary = _summary(run_dir) if point is not None else None
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
    """An exclusive lock on the point's directory while it trains (released by the OS
    when the process dies, however it dies)."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - not POSIX: no lock
        yield
        return
    if run_dir.is_symlink():
        raise PointDamaged(f"{run_dir} is a symbolic link; a point's directory must be its own")
    run_dir.mkdir(parents=True, exist_ok=True)
    # Not through a symlink planted as the lock (it would create or lock a file elsewhere).
    with os.fdopen(open_nofollow(run_dir / LOCK_FILE, os.O_WRONLY | os.O_CREAT), "ab") as f:
        deadline = time.monotonic() + _LOCK_WAIT_S
        while True:
            try:
                fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise PointBusy(f"{run_dir} is being trained by another process") from None
                time.sleep(0.1)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def _checkpoint_finished(ckpt: Path) -> bool:
    """True when the checkpoint is a run's final one (its summary was never written)."""
    from .model import load_checkpoint

    _, extra = load_checkpoint(ckpt)
    return bool(extra.get("early_stopped")) or extra.get("epoch", 0) >= extra.get(
        "target_epochs", math.inf
    )


def train_point(run_dir: Path, options: Mapping[str, Any], threads: int) -> str:
    """Brings one point's run directory to a finished run; returns what it did:
    `"skipped"` (already finished), `"resumed"`, `"trained"` or `"interrupted"` (Ctrl-C:
    stopped with a checkpoint)."""
    from .train import CHECKPOINT_NAME, train

    with _point_lock(run_dir):
        state = point_state(run_dir, options)  # again: another process may have run it
        if state == "done":
            return "skipped"
        if state == "damaged":
            raise PointDamaged(_damage(run_dir))
        (run_dir / ERROR_FILE).unlink(missing_ok=True)
        ckpt = run_dir / CHECKPOINT_NAME
        if state == "resume" and not _checkpoint_finished(ckpt):
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


def _input_error(e: BaseException) -> bool:
    """Bad options or a conflicting directory: the sweep stops (every point would fail
    alike); anything else (a diverged run, an engine panic) fails only its point."""
    from ._core import MemoryLimitError
    from .errors import CheckpointError

    # A damaged point (its checkpoint or records) fails alone, as a diverged run does.
    if isinstance(e, (PointDamaged, CheckpointError)):
        return False
    return isinstance(e, (ValueError, TypeError, MemoryLimitError))


def run_point(out: str, name: str, options: dict[str, Any], threads: int) -> dict[str, Any]:
    """Trains one point where it runs (a pool worker, a Ray task or in-process) and
    says how it went: `{"status": "trained" | "resumed" | "skipped" | "busy" |
    "not started" | "failed" | "input error", "error": message}`. Never raises for a
    failed run: the error is also written to the point's `error.txt`."""
    from ._core import PanicException

    if _WORKER.stop is not None and _WORKER.stop.is_set():
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


# ---- records and the report -----------------------------------------------------------

METRIC_COLUMNS = (
    "status",
    "solved",
    "held_out_solved",
    "held_out_samples",
    "trained_epochs",
    "first_epoch_hard_zero",
    "seconds_to_hard_zero",
    "solved_epoch",
    "solved_seconds",
    "final_soft_loss",
    "final_hard_loss",
    "best_hard_loss",
    "epoch_budget",
    "hard_minus_soft",
    "wall_seconds",
    "active_gates",
    "early_stopped",
    "error",
)


def _seconds_at_epoch(metrics: Path, epoch: int) -> float | None:
    """`elapsed_s` of `epoch` in a run's metrics.csv (training time, resumes included)."""
    try:
        # A regular file (never a FIFO), no symlink followed; read as a stream.
        with open_regular(metrics, "metrics file", 1 << 34, follow=False) as raw:
            f = io.TextIOWrapper(raw, encoding="utf-8", errors="replace", newline="")
            for row in csv.DictReader(f):
                if int(row["epoch"]) == epoch:
                    value = float(row["elapsed_s"])
                    return value if math.isfinite(value) else None
    except (OSError, KeyError, ValueError, TypeError, csv.Error):
        pass
    return None


def _best_hard_loss(metrics: Path) -> float | None:
    """The lowest `hard_loss` of a run's metrics.csv (the wrong cells of its best batch):
    how close a run came, which the final loss hides when the run ends on a bad epoch."""
    best: float | None = None
    try:
        with open_regular(metrics, "metrics file", 1 << 34, follow=False) as raw:
            f = io.TextIOWrapper(raw, encoding="utf-8", errors="replace", newline="")
            for row in csv.DictReader(f):
                value = float(row["hard_loss"])
                if math.isfinite(value) and (best is None or value < best):
                    best = value
    except (OSError, KeyError, ValueError, TypeError, csv.Error):
        return None
    return best


def _damage(run_dir: Path) -> str:
    """Why a point's records are damaged (`PointDamaged`'s message)."""
    try:
        _point_file(run_dir)
        _summary(run_dir)
    except PointDamaged as e:
        return f"{e}; move it away to train the point again"
    return f"{run_dir}: damaged"


def _error_text(path: Path) -> str:
    """A point's error.txt (a regular file, bounded, no symlink followed)."""
    try:
        data = read_bytes(path, "error file", MAX_TEXT_BYTES, follow=False)
    except (OSError, ValueError) as e:
        return str(e)
    return data[:4096].decode("utf-8", "replace").strip()


def point_record(run_dir: Path) -> dict[str, Any] | None:
    """One row of the report from a point's directory (None: not a point directory).

    `status`: `done`, `interrupted` (stopped by Ctrl-C, resumable), `partial` (a
    checkpoint but no summary: killed), `failed` (`error.txt`) or `started`.
    `solved`: the final circuit passes its check (`summary.json`'s `hard_eval`: every
    held-out input, and what a growth mode asks too), finished runs only.
    `seconds_to_hard_zero`: training seconds to the first epoch with hard loss 0.
    `solved_epoch`, `solved_seconds`: when the run first passed `train`'s validation
    check (the stop of `stop_on_solve`).
    `hard_minus_soft`: final hard loss minus final soft loss.
    """
    from .runstate import CHECKPOINT_NAME

    try:
        point = _point_file(run_dir)
    except PointDamaged:
        return None
    if point is None:
        return None
    row: dict[str, Any] = {"name": run_dir.name, "options": point["options"]}
    row.update(dict.fromkeys(METRIC_COLUMNS))
    try:
        summary = _summary(run_dir)
        damage = None
    except PointDamaged as e:
        summary, damage = None, str(e)
    error = run_dir / ERROR_FILE
    if damage is not None:
        row["status"], row["error"] = "failed", damage
    elif os.path.lexists(error):
        row["status"], row["error"] = "failed", _error_text(error)
    elif summary is not None:
        row["status"] = "interrupted" if summary.get("interrupted") else "done"
    else:
        row["status"] = "partial" if (run_dir / CHECKPOINT_NAME).exists() else "started"
    if summary is None or row["status"] == "failed":
        row["solved"] = False
        return row
    ev = summary["hard_eval"]
    zero = summary["first_epoch_hard_zero"]
    soft, hard = summary["final_soft_loss"], summary["final_hard_loss"]
    row.update(
        # What the task asks (`evaluate`'s `passed`: a persisting circuit must also hold
        # its target), or every held-out input for summaries from before it was recorded.
        solved=row["status"] == "done" and bool(ev.get("passed", ev["solved"] == ev["samples"])),
        held_out_solved=ev["solved"],
        held_out_samples=ev["samples"],
        trained_epochs=summary["epochs"],
        first_epoch_hard_zero=zero,
        solved_epoch=summary.get("solved_epoch"),
        solved_seconds=summary.get("solved_seconds"),
        seconds_to_hard_zero=None
        if zero is None
        else _seconds_at_epoch(run_dir / "metrics.csv", zero),
        final_soft_loss=soft,
        final_hard_loss=hard,
        best_hard_loss=_best_hard_loss(run_dir / "metrics.csv"),
        epoch_budget=summary.get("target_epochs"),
        hard_minus_soft=None if soft is None or hard is None else hard - soft,
        wall_seconds=summary["wall_seconds"],
        active_gates=summary["active_gates"],
        early_stopped=summary["early_stopped"],
    )
    return row


def _sort_key(options: Mapping[str, Any]) -> tuple:
    # Numbers in numeric order (epochs=50 before epochs=100), then strings, then None.
    def one(v: Any) -> tuple:
        if isinstance(v, (int, float)):
            return (0, float(v), "")
        return (1, 0.0, str(v)) if v is not None else (2, 0.0, "")

    return tuple((k, one(v)) for k, v in options.items())


def _cell_of(options: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in options.items() if k != "seed"}


def _median(values: list[float]) -> float | None:
    return statistics.median(values) if values else None


def summarize_cells(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per grid cell (the options but the seed): finished runs, solved, success rate,
    runs that reached hard loss 0 and the medians of epochs and seconds to it."""
    groups: dict[str, list[dict[str, Any]]] = {}
    cells: dict[str, dict[str, Any]] = {}
    for row in rows:
        cell = _cell_of(row["options"])
        key = json.dumps(cell)
        groups.setdefault(key, []).append(row)
        cells.setdefault(key, cell)
    out = []
    for key, members in groups.items():
        done = [r for r in members if r["status"] == "done"]
        reached = [r for r in done if r["first_epoch_hard_zero"] is not None]
        solved = sum(bool(r["solved"]) for r in done)
        seconds = [
            r["seconds_to_hard_zero"] for r in reached if r["seconds_to_hard_zero"] is not None
        ]
        out.append(
            {
                "options": cells[key],
                "runs": len(done),
                "solved": solved,
                "success_rate": solved / len(done) if done else None,
                "reached_hard_zero": len(reached),
                "median_epochs_to_hard_zero": _median(
                    [r["first_epoch_hard_zero"] for r in reached]
                ),
                "median_seconds_to_hard_zero": _median(seconds),
                "median_wall_seconds": _median([r["wall_seconds"] for r in done]),
                # How far the runs got when none solves: their best and final wrong
                # cells, and the epochs they had.
                "median_best_hard_loss": _median(
                    [r["best_hard_loss"] for r in done if r["best_hard_loss"] is not None]
                ),
                "median_final_hard_loss": _median(
                    [r["final_hard_loss"] for r in done if r["final_hard_loss"] is not None]
                ),
                "median_epochs": _median([r["trained_epochs"] for r in done]),
                "epoch_budget": max(
                    (r["epoch_budget"] for r in done if r["epoch_budget"] is not None),
                    default=None,
                ),
                "unfinished": sum(
                    r["status"] in ("interrupted", "partial", "started") for r in members
                ),
                "failed": sum(r["status"] == "failed" for r in members),
            }
        )
    return out


def _fmt(value: Any, digits: int = 3) -> str:
    if value is None:
        return "–"
    if isinstance(value, float):
        return f"{value:.0f}" if abs(value) >= 100 else f"{value:.{digits}g}"
    return str(value)


def _varying_keys(cells: list[dict[str, Any]]) -> list[str]:
    """The options that tell the cells apart (the preset always)."""
    keys: list[str] = []
    for c in cells:
        keys.extend(k for k in c["options"] if k not in keys)
    return [
        k
        for k in keys
        if k == "preset" or len({json.dumps(c["options"].get(k)) for c in cells}) > 1
    ]


def cells_table(cells: list[dict[str, Any]]) -> str:
    """The cells as a Markdown table (what `sweep.md` holds and the command prints)."""
    varying = _varying_keys(cells)
    extra = [k for k in ("unfinished", "failed") if any(c[k] for c in cells)]
    header = (
        varying
        + [
            "runs",
            "solved",
            "success",
            "reached hard loss 0",
            "median epochs to hard loss 0",
            "median s to hard loss 0",
            "median best hard loss",
            "median final hard loss",
            "median epochs / budget",
            "median wall s",
        ]
        + extra
    )
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for c in cells:
        rate = c["success_rate"]
        values = (
            [_fmt(c["options"].get(k)) for k in varying]
            + [
                str(c["runs"]),
                str(c["solved"]),
                "–" if rate is None else f"{100 * rate:.0f}%",
                str(c["reached_hard_zero"]),
                _fmt(c["median_epochs_to_hard_zero"]),
                _fmt(c["median_seconds_to_hard_zero"], 2),
                _fmt(c.get("median_best_hard_loss")),
                _fmt(c.get("median_final_hard_loss")),
                f"{_fmt(c.get('median_epochs'))} / {_fmt(c.get('epoch_budget'))}",
                _fmt(c["median_wall_seconds"], 2),
            ]
            + [str(c[k]) for k in extra]
        )
        lines.append("| " + " | ".join(values) + " |")
    return "\n".join(lines)


def _cell_label(options: Mapping[str, Any], varying: list[str]) -> str:
    return " ".join(
        _format_value(options[k]) if k == "preset" else f"{k}={_format_value(options[k])}"
        for k in varying
        if k in options
    )


def plot_sweep(rows: list[dict[str, Any]], cells: list[dict[str, Any]], path: PathLike) -> None:
    """Success rate per cell (left); each finished run's best and final hard loss (middle:
    how close the runs came, which shows progress when nothing solves); its first epoch
    with hard loss 0 (right). Green: solved; orange: not."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    from .markup import plot_text

    # Option values are text, not mathtext (a preset path with `$`).
    labels = [plot_text(_cell_label(c["options"], _varying_keys(cells))) for c in cells]
    fig = Figure(figsize=(14, 1.5 + 0.45 * len(cells)), dpi=100)
    FigureCanvasAgg(fig)
    left, middle, right = fig.subplots(1, 3, sharey=True)
    ys = list(range(len(cells)))
    rates = [100 * (c["success_rate"] or 0) for c in cells]
    left.barh(ys, rates, height=0.6, color="tab:green")
    left.set_yticks(ys, labels)
    left.invert_yaxis()
    left.set_xlim(0, 115)
    left.set_xticks(range(0, 101, 20))
    left.set_xlabel("runs that solve every held-out input (%)")
    for y, rate, c in zip(ys, rates, cells):
        left.text(rate + 1.5, y, f"{c['solved']}/{c['runs']}", va="center", fontsize="small")
    index = {json.dumps(c["options"]): i for i, c in enumerate(cells)}
    done = [r for r in rows if r["status"] == "done"]
    for solved, color, label in (
        (True, "tab:green", "solved"),
        (False, "tab:orange", "not solved"),
    ):
        mine = [r for r in done if bool(r["solved"]) == solved]
        for key, fill in (("best_hard_loss", color), ("final_hard_loss", "none")):
            shift = 0.12 if fill == "none" else 0.0  # the final loss just below the best
            pts = [
                (r[key], index[json.dumps(_cell_of(r["options"]))] + shift)
                for r in mine
                if r.get(key) is not None
            ]
            if pts:
                kind = "best" if fill != "none" else "final"
                middle.scatter(
                    *zip(*pts), s=22, alpha=0.85, facecolors=fill, edgecolors=color,
                    label=f"{kind}, {label}",
                )  # fmt: skip
        pts = [
            (r["first_epoch_hard_zero"], index[json.dumps(_cell_of(r["options"]))])
            for r in mine
            if r["first_epoch_hard_zero"] is not None
        ]
        if pts:
            right.scatter(*zip(*pts), color=color, label=label, s=18, alpha=0.8)
    middle.set_xscale("symlog", linthresh=1)  # 0 (solved batches) drawn at the left edge
    middle.set_xlim(left=0)
    middle.set_xlabel("hard loss (wrong cells): best ●, final ○")
    middle.grid(True, axis="x", alpha=0.3)
    if middle.collections:
        middle.legend(fontsize="x-small")
    budgets = {c.get("epoch_budget") for c in cells} - {None}
    budget = f" (budget {', '.join(_fmt(b) for b in sorted(budgets))})" if budgets else ""
    right.set_xlabel(f"first epoch with hard loss 0{budget}")
    right.grid(True, axis="x", alpha=0.3)
    if right.collections:
        right.legend(fontsize="small")
    elif done:
        right.text(0.5, 0.5, "no run reached hard loss 0", transform=right.transAxes,
                   ha="center", va="center", color="0.4")  # fmt: skip
    fig.tight_layout()
    save_atomic(path, lambda f: fig.savefig(f, format=Path(path).suffix[1:] or "png"))


@dataclasses.dataclass
class SweepReport:
    """Every point directory under `out`: one row each, the per-cell summary and its
    Markdown table."""

    out: Path
    rows: list[dict[str, Any]]
    cells: list[dict[str, Any]]
    table: str

    def _repr_html_(self) -> str:
        """Jupyter's display: the per-cell table and the plot (`logicars.render`)."""
        from .render import sweep_html

        return sweep_html(self)

    def __repr__(self) -> str:  # short: the rows hold every point
        return f"SweepReport(out={os.fspath(self.out)!r}, points={len(self.rows)})"


def _csv_text(rows: list[dict[str, Any]]) -> str:
    option_keys: list[str] = []
    for r in rows:
        option_keys.extend(k for k in r["options"] if k not in option_keys)
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["name", *option_keys, *METRIC_COLUMNS])
    for r in rows:
        opts = [r["options"].get(k, "") for k in option_keys]
        w.writerow([r["name"], *opts, *("" if r[k] is None else r[k] for k in METRIC_COLUMNS)])
    return buf.getvalue()


def report(out: PathLike) -> SweepReport:
    """Reads every point directory under `out` and (re)writes the sweep's summary:
    `sweep.csv`, `sweep.json`, `sweep.md` and `sweep.png`."""
    from .runtime import version

    root = Path(out)
    if not root.is_dir():
        raise FileNotFoundError(f"{root}: no such sweep directory")
    rows = []
    # Point directories proper: a symlink could point the report anywhere.
    for d in sorted(p for p in root.iterdir() if p.is_dir() and not p.is_symlink()):
        row = point_record(d)
        if row is not None:
            rows.append(row)
    if not rows:
        raise ValueError(f"{root}: no sweep points here (no */{POINT_FILE})")
    rows.sort(key=lambda r: _sort_key(r["options"]))  # by cell, then seed (the last option)
    cells = summarize_cells(rows)
    table = cells_table(cells)
    doc = {"logicars_version": version(), "cells": cells, "rows": rows}
    write_atomic(root / "sweep.json", (json.dumps(doc, indent=1) + "\n").encode())
    write_atomic(root / "sweep.csv", _csv_text(rows).encode())
    write_atomic(root / "sweep.md", (table + "\n").encode())
    plot_sweep(rows, cells, root / "sweep.png")
    return SweepReport(root, rows, cells, table)


# ---- executors ------------------------------------------------------------------------


@dataclasses.dataclass
class _WorkerState:
    """Set in each pool worker by `_worker_init`."""

    stop: Any = None  # multiprocessing.Event: stop the running point after this epoch


_WORKER = _WorkerState()


def _worker_init(parent: int, stop: Any, abort: Any) -> None:
    """A pool worker: its own process group (a Ctrl-C in the terminal reaches only the
    driver, which stops the workers once), SIGINT ignored outside `train` (whose own
    handler stops after the current epoch and saves), and a watchdog thread."""
    if hasattr(os, "setpgrp"):
        os.setpgrp()
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)  # a batch scheduler's stop: see driver
    _WORKER.stop = stop
    threading.Thread(target=_watchdog, args=(parent, stop, abort), daemon=True).start()


def _watchdog(parent: int, stop: Any, abort: Any) -> None:
    """Exits when the driver is gone (SIGKILL: its points resume from their last
    checkpoint) or aborts; on a stop, sends `train` one SIGINT once its handler is in
    place (a second SIGINT would abort the run without its final checkpoint)."""
    interrupted = False
    while True:
        if os.getppid() != parent or abort.is_set():
            os._exit(1)
        if stop.is_set() and not interrupted:
            if signal.getsignal(signal.SIGINT) not in (signal.SIG_IGN, signal.SIG_DFL, None):
                os.kill(os.getpid(), signal.SIGINT)
                interrupted = True
        time.sleep(0.1)


class _PoolExecutor:
    """Points on a local process pool (spawned workers, one point at a time each)."""

    def __init__(self, workers: int) -> None:
        import multiprocessing

        ctx = multiprocessing.get_context("spawn")
        self.slots = workers
        self._stop, self._abort = ctx.Event(), ctx.Event()
        self._pool = cf.ProcessPoolExecutor(
            workers,
            mp_context=ctx,
            initializer=_worker_init,
            initargs=(os.getpid(), self._stop, self._abort),
        )

    def submit(self, out: Path, point: Point, threads: int) -> cf.Future:
        return self._pool.submit(run_point, str(out), point.name, point.options, threads)

    def wait(self, running: list[Any], timeout: float) -> list[Any]:
        done, _ = cf.wait(running, timeout=timeout, return_when=cf.FIRST_COMPLETED)
        return list(done)

    def result(self, future: cf.Future, point: Point) -> dict[str, Any]:
        try:
            return future.result()
        except cf.process.BrokenProcessPool as e:
            raise RuntimeError(f"a sweep worker died while training {point.name}: {e}") from None

    def stop(self, running: list[Any]) -> None:
        self._stop.set()

    def close(self, abort: bool) -> None:
        if abort:
            self._abort.set()
        self._pool.shutdown(wait=not abort, cancel_futures=True)


class _RayExecutor:
    """Points as Ray tasks, each reserving `threads` CPUs. A task trains into `out` when
    its node sees that directory (shared storage); otherwise it trains in a temporary
    directory and ships the files back to the driver, which writes them into `out`."""

    def __init__(self, address: str, workers: int | None, threads: int, out: Path) -> None:
        try:
            import ray
        except ImportError:
            raise ValueError("the Ray executor needs Ray: pip install 'logicars[ray]'") from None
        self._ray = ray
        self._started = not ray.is_initialized()
        if self._started:
            kwargs: dict[str, Any] = {"log_to_driver": False}
            if address == "local":
                kwargs["include_dashboard"] = False
                if workers is not None:
                    kwargs["num_cpus"] = workers * threads
            if address == "local":
                ray.init(address=address, **kwargs)
            else:
                _ray_connect(ray, address, kwargs)
        cpus = int(ray.cluster_resources().get("CPU", 1))
        self.slots = workers if workers is not None else max(1, cpus // threads)
        self._task = ray.remote(_ray_point).options(num_cpus=threads, max_retries=0)
        # Tasks that see this file share the driver's storage.
        self._token = f".sweep-driver-{uuid.uuid4().hex}"
        self._marker = out / self._token
        self._marker.write_text("")
        self._out = out

    def submit(self, out: Path, point: Point, threads: int) -> Any:
        files = _run_files(out / point.name)
        return self._task.remote(str(out), point.name, point.options, threads, self._token, files)

    def wait(self, running: list[Any], timeout: float) -> list[Any]:
        done, _ = self._ray.wait(running, num_returns=1, timeout=timeout)
        return done

    def result(self, ref: Any, point: Point) -> dict[str, Any]:
        try:
            result = self._ray.get(ref)
        except self._ray.exceptions.TaskCancelledError:
            return {"status": "interrupted"}
        except self._ray.exceptions.RayError as e:
            raise RuntimeError(f"Ray task for {point.name} failed: {e}") from None
        files = result.pop("files", None)
        if files is not None:
            run_dir = self._out / point.name
            run_dir.mkdir(parents=True, exist_ok=True)
            for rel, data in files.items():
                write_atomic(run_dir / check_name(rel, "file from a Ray task"), data)
        return result

    def stop(self, running: list[Any]) -> None:
        # Ray interrupts a running task as Ctrl-C would: `train` stops after its epoch
        # with a checkpoint.
        for ref in running:
            self._ray.cancel(ref)

    def close(self, abort: bool) -> None:
        self._marker.unlink(missing_ok=True)
        if self._started:
            self._ray.shutdown()


# How long the driver waits for Ray to join a cluster that accepted the connection.
RAY_INIT_TIMEOUT_S = 120.0


def _ray_connect(ray: Any, address: str, kwargs: dict[str, Any]) -> None:
    """`ray.init(address)` on a helper thread: Ray blocks in C++ while it retries an
    address that accepts but never answers (minutes), with its own SIGTERM handler in
    place that cannot run meanwhile, so the process ignored SIGTERM. Here the main
    thread waits, signals keep their default (SIGTERM ends the process), and a cluster
    that does not answer within `RAY_INIT_TIMEOUT_S` is a one-line ValueError."""
    failure: list[BaseException] = []

    def connect() -> None:
        try:
            ray.init(address=address, **kwargs)
        except BaseException as e:  # reported by the waiting thread
            failure.append(e)

    helper = threading.Thread(target=connect, name="logicars-ray-init", daemon=True)
    helper.start()
    helper.join(RAY_INIT_TIMEOUT_S)
    if helper.is_alive():
        raise ValueError(
            f"the Ray cluster at {address} did not answer within {RAY_INIT_TIMEOUT_S:g} s"
        )
    if failure:
        e = failure[0]
        if isinstance(e, (ConnectionError, TimeoutError)):
            raise ValueError(f"cannot join the Ray cluster at {address}: {e}") from None
        raise e


def _check_reachable(address: str, timeout: float | None = None) -> None:
    """A cluster address (`HOST:PORT`, `ray://HOST:PORT`) must accept a TCP connection
    within `RAY_CONNECT_TIMEOUT_S`; ValueError otherwise. `local` and `auto` (Ray finds
    its own) are not probed."""
    import socket

    if address in ("local", "auto"):
        return
    where = address.split("://", 1)[1] if "://" in address else address
    host, colon, port_text = where.rpartition(":")
    host = host.strip("[]")  # [::1]:6379
    try:
        port = int(port_text)
    except ValueError:
        port = -1
    if not colon or not host or not 0 < port < 65536:
        raise ValueError(
            f"ray address {address!r}: expected HOST:PORT, ray://HOST:PORT, auto or local"
        )
    wait = RAY_CONNECT_TIMEOUT_S if timeout is None else timeout
    try:
        socket.create_connection((host, port), timeout=wait).close()
    except OSError as e:
        if isinstance(e, socket.timeout):
            reason = f"no answer within {wait:g} s"
        else:
            reason = e.strerror or str(e)
        raise ValueError(f"cannot reach a Ray cluster at {address}: {reason}") from None


def _run_files(run_dir: Path) -> dict[str, bytes] | None:
    """A point's files, for a task on a node without the sweep directory (None: none)."""
    if not (run_dir / POINT_FILE).exists():
        return None
    files = {}
    for f in run_dir.iterdir():
        # Regular files only (a symlink or a FIFO planted there is not shipped or read).
        if f.name != LOCK_FILE and f.is_file() and not f.is_symlink():
            files[f.name] = read_bytes(f, "point file", 1 << 32, follow=False)
    return files


def _ray_point(
    out: str,
    name: str,
    options: dict[str, Any],
    threads: int,
    token: str,
    files: dict[str, bytes] | None,
) -> dict[str, Any]:
    """A Ray task: `run_point` in `out` if this node sees it, else in a temporary copy of
    the point's directory whose files go back to the driver."""
    if (Path(out) / token).exists():
        return run_point(out, name, options, threads)
    with tempfile.TemporaryDirectory(prefix="logicars-sweep-") as tmp:
        run_dir = Path(tmp) / name
        run_dir.mkdir()
        for rel, data in (files or {}).items():
            (run_dir / rel).write_bytes(data)
        result = run_point(tmp, name, options, threads)
        if result["status"] in ("trained", "resumed", "interrupted", "failed"):
            result["files"] = _run_files(run_dir)
        return result


# ---- the driver -----------------------------------------------------------------------


class _StopRequest:
    """SIGINT/SIGTERM in the driver: the first asks the running points to stop after
    their current epoch (they save a checkpoint); a second Ctrl-C aborts at once."""

    def __init__(self) -> None:
        self.requested = False
        self._previous: dict[int, Any] = {}

    def __enter__(self) -> _StopRequest:
        if threading.current_thread() is threading.main_thread():
            for sig in (signal.SIGINT, signal.SIGTERM):
                self._previous[sig] = signal.signal(sig, self._handle)
        return self

    def __exit__(self, *exc: object) -> None:
        for sig, previous in self._previous.items():
            if previous is None:  # not set from Python: Python's own defaults
                previous = signal.default_int_handler if sig == signal.SIGINT else signal.SIG_DFL
            signal.signal(sig, previous)

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        if self.requested and signum == signal.SIGINT:
            raise KeyboardInterrupt
        self.requested = True
        print(
            "\nlogicars sweep: stopping; the running points finish their epoch and save a "
            "checkpoint (Ctrl-C again to abort)",
            file=sys.stderr,
            flush=True,
        )


@dataclasses.dataclass
class SweepResult:
    """What `sweep` returns: the report (every point under `out`), this call's points and
    what it did with them (`counts`: trained, resumed, skipped, interrupted, failed,
    busy, not started)."""

    report: SweepReport
    points: list[Point]
    counts: dict[str, int]
    interrupted: bool = False
    until_solved_reached: bool = False

    @property
    def out(self) -> Path:
        return self.report.out

    @property
    def rows(self) -> list[dict[str, Any]]:
        return self.report.rows

    @property
    def table(self) -> str:
        return self.report.table

    def _repr_html_(self) -> str:
        """Jupyter's display: what this call did, the per-cell table and the plot."""
        from .render import sweep_html

        return sweep_html(self.report, self.counts, self.interrupted, self.until_solved_reached)

    def __repr__(self) -> str:  # short: the report holds every point
        return (
            f"SweepResult(out={os.fspath(self.out)!r}, points={len(self.points)}, "
            f"counts={self.counts}, interrupted={self.interrupted})"
        )


def _default_workers(threads: int) -> int:
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        cores = os.cpu_count() or 1
    return max(1, cores // threads)


def sweep(
    grid: Grid | PathLike,
    *,
    out: PathLike,
    workers: int | None = None,
    threads_per_run: int = 1,
    ray: bool | str | None = None,
    shard: str | tuple[int, int] | None = None,
    until_solved: int | None = None,
    quiet: bool = False,
) -> SweepResult:
    """Trains every point of `grid` into `<out>/<point name>` and writes the report.

    - `grid`: train option -> one value or a list (a range, a tuple) of values to sweep,
      e.g. `{"preset": "gol", "seed": range(10), "lr": [0.03, 0.05]}` (`seed` also as a
      string `"0-9"`); a list of such grids (their points one after the other); or the
      path of a TOML/YAML sweep file (`read_sweep_file`).
    - `out`: the sweep directory; running the same sweep again skips the finished points
      and resumes the interrupted ones.
    - `workers`: points trained at once (default: cores // threads_per_run; with Ray:
      the cluster's CPUs // threads_per_run).
    - `threads_per_run`: engine threads of each point (results do not depend on it).
    - `ray`: None/False: the local process pool; True or `"local"`: a new local Ray
      instance; `"auto"`, `"HOST:PORT"` or `"ray://..."`: an existing Ray cluster
      (`pip install 'logicars[ray]'`).
    - `shard`: `"I/N"` or `(I, N)`: only the points I, I + N, I + 2N, ... (from 0), so a
      batch-scheduler job array can split the sweep without Ray.
    - `until_solved`: stop launching points once this many have solved their task
      (finished points count; running ones finish).
    - `quiet`: no progress bar and no messages but failures and interruptions.

    Ctrl-C (or SIGTERM) stops the running points after their current epoch with a
    checkpoint; the sweep then returns with `interrupted=True`. Bad options raise
    `ValueError`/`TypeError`, before any training where they can be seen from the grid.
    """
    from .model import MAX_THREADS, check_int
    from .runtime import check_environment

    check_environment()
    threads = check_int("threads_per_run", threads_per_run, 1, MAX_THREADS)
    if workers is not None:
        workers = check_int("workers", workers, 1)
    if until_solved is not None:
        until_solved = check_int("until_solved", until_solved, 1)
    if isinstance(grid, (str, os.PathLike)):
        grid = read_sweep_file(grid)
    points = expand_grid(grid)
    if shard is not None:
        index, count = parse_shard(shard)
        points = points[index::count]
    _check_presets(points)  # an unknown preset or a bad file: before the disk is touched
    address = None if ray in (None, False) else "local" if ray is True else str(ray)
    if address is not None:
        _check_reachable(address)  # Ray itself waits minutes on a dead address
    root = Path(out)
    # Points (and runs a point would conflict with, which `point_state` names) are
    # the sweep's to judge; any other file makes `out` a directory that is not a sweep.
    inside = (POINT_FILE, "model.safetensors")
    refuse_foreign_dir(root, "sweep directory", SWEEP_MARKER, ("sweep.json",), inside)
    try:
        root.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise ValueError(f"sweep directory {root}: {e.strerror or e}") from None

    states = {p.name: point_state(root / p.name, p.options) for p in points}
    mark_dir(root, SWEEP_MARKER)  # after the conflicts: a refused `out` is left as it was
    damaged = [p for p in points if states[p.name] == "damaged"]
    todo = deque(p for p in points if states[p.name] not in ("done", "damaged"))
    run = _Run(root, threads, until_solved, quiet, len(points) - len(todo) - len(damaged))
    for p in damaged:  # one damaged point fails alone; the others go on
        run.counts["failed"] += 1
        run.say(f"sweep: {p.name} failed: {_damage(root / p.name)}", always=True)
    run.solved = sum(_solved(root / p.name) for p in points if states[p.name] == "done")
    resume = sum(states[p.name] == "resume" for p in todo)
    if todo and not run.race_won():
        executor: _PoolExecutor | _RayExecutor
        if address is None:
            executor = _PoolExecutor(min(workers or _default_workers(threads), len(todo)))
            where = f"{executor.slots} workers x {threads} thread{'s' * (threads > 1)}"
        else:
            executor = _RayExecutor(address, workers, threads, root)
            where = f"Ray ({address}), {executor.slots} at once x {threads} CPU"
        run.say(
            f"sweep: {len(points)} points ({len(points) - len(todo) - len(damaged)} finished, "
            f"{len(damaged)} damaged, {resume} to "
            f"resume, {len(todo) - resume} to train) on {where} -> {root}"
        )
        run.drive(executor, todo)
    points_here = any((root / p.name / POINT_FILE).exists() for p in points)
    result = SweepResult(
        report(root) if points_here else SweepReport(root, [], [], ""),
        points,
        run.counts,
        interrupted=run.interrupted,
        until_solved_reached=run.race_won(),
    )
    did = ", ".join(f"{v} {k}" for k, v in run.counts.items() if v)
    run.say(f"sweep: {did or 'no points'}; {run.solved} solved; report in {root}/sweep.md")
    if run.interrupted:
        run.say("sweep: interrupted; run the same sweep again to resume it", always=True)
    elif run.race_won() and todo:
        run.say(f"sweep: until-solved {until_solved} reached; {len(todo)} points not launched")
    return result


def _check_presets(points: list[Point]) -> None:
    """Resolves every distinct preset of the points (a name, a task kind with its size,
    an experiment file) as `train` would, so that a bad one is refused before any
    point's directory is made."""
    from .presets import read_experiment, resolve_preset

    seen = set()
    for point in points:
        o = point.options
        key = (o.get("preset"), o.get("size"), o.get("asynchronous"))
        if key in seen:
            continue
        seen.add(key)
        preset, size, asynchronous = key
        if not isinstance(preset, str):
            continue  # `train` refuses it with its own message
        if preset.lower().endswith(".toml"):
            read_experiment(preset)
        elif type(size) is int or size is None:
            resolve_preset(preset, size=size, asynchronous=bool(asynchronous))


class _Run:
    """The driver's loop and tallies: launches points while slots are free, collects
    results, shows progress, stops on Ctrl-C, a bad option or `until_solved`."""

    def __init__(
        self, root: Path, threads: int, until_solved: int | None, quiet: bool, skipped: int
    ) -> None:
        self.root, self.threads, self.until_solved, self.quiet = root, threads, until_solved, quiet
        self.counts = dict.fromkeys(
            ("trained", "resumed", "skipped", "interrupted", "failed", "busy", "not started"), 0
        )
        self.counts["skipped"] = skipped
        self.solved = 0
        self.interrupted = False
        self._bar: Any = None

    def race_won(self) -> bool:
        return self.until_solved is not None and self.solved >= self.until_solved

    def say(self, message: str, always: bool = False) -> None:
        if self.quiet and not always:
            return
        if self._bar is not None:
            self._bar.write(message, file=sys.stderr)
        else:
            print(message, file=sys.stderr, flush=True)

    def drive(self, executor: _PoolExecutor | _RayExecutor, todo: deque[Point]) -> None:
        from .progress import progress_bar

        running: dict[Any, Point] = {}
        input_error: str | None = None
        stopped = aborted = False
        self._bar = progress_bar(total=len(todo), desc="sweep", unit="point", disable=self.quiet)
        try:
            with _StopRequest() as stop, self._bar:
                while todo or running:
                    if (stop.requested or input_error) and not stopped:
                        executor.stop(list(running))
                        stopped = True
                    launch = not (stopped or self.race_won())
                    while launch and todo and len(running) < executor.slots:
                        p = todo.popleft()
                        running[executor.submit(self.root, p, self.threads)] = p
                    if not running:
                        break
                    for ref in executor.wait(list(running), timeout=0.25):
                        p = running.pop(ref)
                        outcome = executor.result(ref, p)
                        if outcome["status"] == "input error":
                            input_error = input_error or f"point {p.name}: {outcome['error']}"
                        else:
                            self._count(p, outcome)
                    self._bar.set_postfix(running=len(running), solved=self.solved, refresh=False)
                self.interrupted = stop.requested
        except BaseException:
            aborted = True
            raise
        finally:
            executor.close(abort=aborted)
            self._bar = None
        if input_error is not None:
            raise ValueError(input_error)

    def _count(self, p: Point, outcome: dict[str, Any]) -> None:
        status = outcome["status"]
        self.counts[status] = self.counts.get(status, 0) + 1
        if status == "failed":
            self.say(f"sweep: {p.name} failed: {outcome['error']}", always=True)
        elif status in ("trained", "resumed", "skipped") and _solved(self.root / p.name):
            self.solved += 1
        self._bar.update(1)


def _solved(run_dir: Path) -> bool:
    row = point_record(run_dir)
    return bool(row and row["solved"])


__all__ = [
    "Point",
    "PointConflictError",
    "SweepReport",
    "SweepResult",
    "expand_grid",
    "parse_seeds",
    "parse_shard",
    "parse_values",
    "point_name",
    "point_record",
    "read_sweep_file",
    "report",
    "sweep",
    "train_options",
]
