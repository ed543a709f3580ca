"""The checks and conversions of what callers pass to the engine: integers in range
(`check_int`), arrays of the right kind, shape and values, within the memory cap, and
the keyword arguments of a hard-circuit run (`run_arguments`). `Model` and `Simulator`
take their arguments through these."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from . import _core
from .checkpoint import memory_cap_bytes
from .errors import InvalidValueError, ShapeError
from .spec import MAX_SEED, ModelSpec

_NUMERIC_KINDS = "biuf"  # bool, signed, unsigned, float
MAX_STEPS = 2**63 - 1  # larger counts do not fit the engine's usize (memory refuses sooner)


def as_float_array(name: str, a: Any) -> np.ndarray:
    """`a` as a C-contiguous float32 array; rejects non-numeric data with TypeError."""
    arr = np.asarray(a)
    if arr.dtype.kind not in _NUMERIC_KINDS:
        raise TypeError(f"{name}: expected a numeric array, got dtype {arr.dtype}")
    _check_conversion_memory(name, arr, np.dtype(np.float32), 0)
    return np.ascontiguousarray(arr, dtype=np.float32)


def as_unit_array(name: str, a: Any) -> np.ndarray:
    """A grid or mask as C-contiguous float32. Floats of another precision are checked
    to lie in [0, 1] before the cast (1 + 1e-9 or -1e-60 would round into the range);
    the engine checks float32 values itself."""
    arr = np.asarray(a)
    if arr.dtype.kind == "f" and arr.dtype != np.float32:
        _check_conversion_memory(name, arr, np.dtype(np.float32), 2)
        inside = arr >= 0
        inside &= arr <= 1  # NaN is in neither
        if not inside.all():
            i = int(np.argmin(inside.ravel()))
            raise InvalidValueError(
                f"{name}: values must lie in [0, 1], found {arr.ravel()[i]} at flat index {i}"
            )
    return as_float_array(name, arr)


def _check_conversion_memory(
    name: str, arr: np.ndarray, target: np.dtype, temporaries: int
) -> None:
    """Refuses, from the shape alone, an input whose contiguous copy (plus `temporaries`
    boolean arrays of its size for value checks) would exceed the memory cap: a
    broadcast view of a huge grid costs nothing until it is converted."""
    if arr.dtype == target and arr.flags.c_contiguous and temporaries == 0:
        return  # no copy: the engine's own estimate covers it
    need = math.prod(arr.shape) * (target.itemsize + temporaries)
    cap = memory_cap_bytes()
    if need > cap:
        raise _core.MemoryLimitError(
            f"{name}: converting an array of shape {arr.shape} ({arr.dtype}) to {target} "
            f"needs about {need >> 20} MB, more than the limit of {cap >> 20} MB "
            "(set LOGICARS_MAX_MEMORY_MB to raise it)"
        )


def as_masks(masks: Any, x: np.ndarray, steps: int) -> np.ndarray | None:
    """Masks as (B, steps, H, W); accepts the fixtures' (B, steps, H, W, 1)."""
    if masks is None:
        return None
    m = as_unit_array("masks", masks)
    if m.ndim == 5 and m.shape[-1] == 1:
        m = m[..., 0]
    b, h, w = x.shape[0], x.shape[1], x.shape[2]
    if m.shape != (b, steps, h, w):
        raise ShapeError(
            f"masks: expected shape (B, steps, H, W[, 1]) = {(b, steps, h, w)}, got {m.shape}"
        )
    return np.ascontiguousarray(m)


def check_int(name: str, v: Any, lo: int, hi: int | None = None) -> int:
    """`v` as an int in `[lo, hi]`; TypeError for non-integers (bool included)."""
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
        raise TypeError(f"{name} must be an integer, got {type(v).__name__}")
    if v < lo or (hi is not None and v > hi):
        # A technical upper bound (seeds, step counts) is not worth naming for v < lo.
        technical = hi is not None and hi >= 2**32
        if hi is None or (v < lo and technical):
            bound = f">= {lo}"
        else:
            bound = f"between {lo} and {hi}"
        raise InvalidValueError(f"{name} must be {bound}, got {v}")
    return int(v)


def as_binary(name: str, a: Any) -> np.ndarray:
    """`a` as a C-contiguous uint8 array of 0/1; rejects other values with ValueError.
    uint8 arrays pass unchecked: the engine checks them while packing them into bits."""
    arr = np.asarray(a)
    if arr.dtype.kind not in _NUMERIC_KINDS:
        raise TypeError(f"{name}: expected a numeric array, got dtype {arr.dtype}")
    checked = arr.dtype not in (np.bool_, np.uint8)
    _check_conversion_memory(name, arr, np.dtype(np.uint8), 2 if checked else 0)
    if checked:
        bad = arr != 0
        bad &= arr != 1
        if bad.any():
            i = int(np.flatnonzero(bad.ravel())[0])
            raise InvalidValueError(
                f"{name}: values must be 0 or 1, found {arr.ravel()[i]} at flat index {i}"
            )
    return np.ascontiguousarray(arr, dtype=np.uint8)


def as_grid(x: Any, channels: int) -> np.ndarray:
    """`x` as a `(B, H, W, C)` uint8 grid of 0/1."""
    xa = as_binary("x", x)
    if xa.ndim != 4 or xa.shape[3] != channels:
        raise ShapeError(f"x: expected shape (B, H, W, C={channels}), got {xa.shape}")
    return xa


def run_arguments(
    spec: ModelSpec,
    steps: int,
    fire_rate: float | None,
    seed: int,
    masks: Any,
    damage: Any,
    damage_steps: tuple[int, int] | None,
    record: bool | int,
) -> dict[str, Any]:
    """The keyword arguments of a hard-circuit run (`_core.HardCircuit.simulate`,
    `_core.Simulator.run`) from those of `Model.simulate`, converted; the run checks
    them against the grid (shapes, `fire_rate` in (0, 1], masks or fire_rate)."""
    ma = None
    if masks is not None:
        ma = as_binary("masks", masks)
        if ma.ndim == 5 and ma.shape[-1] == 1:
            ma = np.ascontiguousarray(ma[..., 0])
    elif fire_rate is None:
        fire_rate = spec.fire_rate if spec.is_async else None
    if fire_rate is not None:
        fire_rate = float(fire_rate)
        if fire_rate == 1.0 and ma is None:
            fire_rate = None  # every cell fires: the synchronous step
    da = None if damage is None else as_binary("damage", damage)
    if damage_steps is None:
        d_from, d_until = 0, steps
    else:
        d_from, d_until = _damage_steps(damage_steps)
    if isinstance(record, bool):
        every = 1 if record else 0
    else:
        every = check_int("record", record, 0, MAX_STEPS)
    return {
        "fire_rate": fire_rate,
        "seed": check_int("seed", seed, 0, MAX_SEED),
        "masks": ma,
        "damage": da,
        "damage_from": d_from,
        "damage_until": d_until,
        "record_every": every,
    }


def _damage_steps(value: Any) -> tuple[int, int]:
    """`(start, end)` as integers >= 0 (floats are refused, not truncated); that start <=
    end is the engine's check (`_core`'s `damage_from`/`damage_until`), in these names."""
    try:
        start, end = value
    except (TypeError, ValueError):
        raise TypeError(
            f"damage_steps must be a pair (start, end) of integers, got {value!r:.60}"
        ) from None
    start = check_int("damage_steps start", start, 0, MAX_STEPS)
    end = check_int("damage_steps end", end, 0, MAX_STEPS)
    return start, end


def as_wires(name: str, a: Any) -> np.ndarray:
    """Wire indices as C-contiguous int32; floats are refused rather than truncated."""
    arr = np.asarray(a)
    if arr.dtype.kind not in "iu":
        raise TypeError(f"{name}: expected an integer array, got dtype {arr.dtype}")
    if arr.size and (arr.min() < 0 or arr.max() > np.iinfo(np.int32).max):
        bad = arr.min() if arr.min() < 0 else arr.max()
        raise InvalidValueError(f"{name}: wire indices must be >= 0 and fit int32, got {bad}")
    return np.ascontiguousarray(arr, dtype=np.int32)
