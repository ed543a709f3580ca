"""A sweep's grid: the options `train` takes, their values as written (a list, a
range of seeds, a sweep file), and the points they expand to."""

from __future__ import annotations

import dataclasses
import hashlib
import inspect
import itertools
import json
import math
import os
import re
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, Union

import numpy as np

from ..files import check_name, read_text, read_toml
from ..spec import MAX_SEED
from ..training.config import TrainConfig

PathLike = Union[str, "os.PathLike[str]"]

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
# The most points one sweep (or seed list) may have: far above a real sweep, low
# enough that listing them costs nothing (`--seeds 0-1000000000` is refused, not built).
MAX_POINTS = 100_000
# A sweep file is a few lines; this bounds what a hostile one costs.
_MAX_SWEEP_FILE_BYTES = 1 << 20


def train_options() -> dict[str, inspect.Parameter]:
    """The keyword options of `logicars.train`, its own and every `TrainConfig` setting:
    what a sweep can vary."""
    from ..train import train

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
        if last > MAX_SEED:
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


def format_value(value: Any) -> str:
    if isinstance(value, bool) or value is None:
        return str(value).lower()
    return repr(value) if isinstance(value, float) else str(value)


def point_name(options: Mapping[str, Any]) -> str:
    """The directory name of a point: the preset, then `key=value` for every other
    option in the grid's order, seed last (`checkerboard_lr=0.03_seed=4`)."""
    parts = []
    for key, value in options.items():
        text = re.sub(r"[^A-Za-z0-9.+-]+", "-", format_value(value))  # paths: no slashes
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
