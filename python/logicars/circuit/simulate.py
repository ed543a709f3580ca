"""Running a trained hard circuit: `Simulator`, which keeps a packed grid between calls
(`Model.simulate` is one call), and what `python -m logicars simulate` runs a circuit from
and compares it with.

The start state follows the run's task (`logicars.tasks`): by default a grow task's fixed
start grid (the lizard's seed cell, the coloured G's zeros) centred on the requested grid,
else random bits; `start="seed"` asks for the task's own start state, `"random"` for
random bits, and `read_start` reads a user's grid from a `.npy` file. When the task has
a target the summary compares with it by the task's scoring rule: a Life-like rule
applied `steps` times, a pattern (in any phase) at any size, the grown image at the
task's size.
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from .. import _core
from ..arguments import MAX_STEPS, as_grid, check_int, run_arguments
from ..errors import InvalidValueError
from ..model import Model
from ..presets import Preset, fixed_start_task, preset_task
from ..tasks import LifeTask

# The start states `start_grid` draws (else a `.npy` file: `read_start`).
START_KINDS = ("seed", "random")


def start_grid(
    preset: Preset | None,
    channels: int,
    size: int,
    batch: int,
    seed: int,
    start: str | None = None,
) -> np.ndarray:
    """The start state `(batch, size, size, C)` uint8 for a run of `preset`: `start`
    "seed" is the task's own start state (a grow task's fixed grid centred on the grid,
    else the task's start draw at this size), "random" random bits on every channel;
    None: "seed" for a task with a fixed start, else "random"."""
    if start not in (None, *START_KINDS):
        raise ValueError(f"start: expected one of {', '.join(START_KINDS)}, got {start!r}")
    rng = np.random.default_rng(seed)
    grow = fixed_start_task(preset)
    if start is None:
        start = "random" if grow is None else "seed"
    if start == "seed" and grow is not None:
        x = grow.start(rng, 1, grow.height, grow.width)
        return np.repeat(_centred(x, size), batch, axis=0).astype(np.uint8)
    if start == "seed":
        task = preset_task(preset)
        if task is None:
            raise ValueError(
                "start 'seed': the model's run names no task (a bare model file); "
                "start from random bits or a .npy grid"
            )
        return np.ascontiguousarray(task.start(rng, batch, size, size), dtype=np.uint8)
    return rng.integers(0, 2, size=(batch, size, size, channels), dtype=np.uint8)


def read_start(path: str | os.PathLike[str], channels: int) -> np.ndarray:
    """A user's start state from a `.npy` file: `(B, H, W, C)` or one board `(H, W, C)`
    of 0/1 (bool or integers), as `(B, H, W, C)` uint8; a ValueError naming the file
    for anything else (the grid's checks are `Model.simulate`'s)."""
    from .._core import memory_cap_mb
    from ..files import open_regular

    try:
        # A regular file (np.load would wait on a FIFO) no larger than the memory cap (a
        # sparse file's header may claim gigabytes that np.load would allocate).
        with open_regular(path, "start grid", memory_cap_mb() << 20) as f:
            _check_npy_size(f)
            grid = np.load(f, allow_pickle=False)
    except (OSError, ValueError, EOFError) as e:
        raise ValueError(f"{path}: not a readable .npy array ({e})") from None
    if not isinstance(grid, np.ndarray):
        raise ValueError(f"{path}: expected one .npy array, got an .npz archive")
    if grid.ndim == 3:
        grid = grid[None]
    try:
        return as_grid(grid, channels)
    except (TypeError, ValueError) as e:
        raise ValueError(f"{path}: {e}") from None


def _check_npy_size(f: Any) -> None:
    """A `.npy` file's header must not claim more bytes than the file holds: np.load
    allocates what the header says before it reads (a 1 KB file claiming 931 GB was a
    MemoryError). An `.npz` archive passes on to np.load's own message."""
    from numpy.lib import format as npy

    start = f.tell()
    if f.read(6) != b"\x93NUMPY":
        f.seek(start)
        return
    f.seek(start)
    version = npy.read_magic(f)
    read = npy.read_array_header_1_0 if version == (1, 0) else npy.read_array_header_2_0
    shape, _, dtype = read(f)
    need = int(np.prod(shape, dtype=object)) * dtype.itemsize
    have = os.fstat(f.fileno()).st_size - f.tell()
    if need > have:
        raise ValueError(f"its header claims {need:,} bytes of data, the file holds {have:,}")
    f.seek(start)


def _centred(x: np.ndarray, size: int) -> np.ndarray:
    """`x` `(B, H, W, C)` cropped or zero-padded to `size × size` around its centre cell."""
    b, h, w, c = x.shape
    out = np.zeros((b, size, size, c), dtype=x.dtype)
    # Source and destination windows that keep cell (h // 2, w // 2) at (size // 2, size // 2).
    src_r0, dst_r0 = max(0, h // 2 - size // 2), max(0, size // 2 - h // 2)
    src_c0, dst_c0 = max(0, w // 2 - size // 2), max(0, size // 2 - w // 2)
    rows = min(h - src_r0, size - dst_r0)
    cols = min(w - src_c0, size - dst_c0)
    out[:, dst_r0 : dst_r0 + rows, dst_c0 : dst_c0 + cols] = x[
        :, src_r0 : src_r0 + rows, src_c0 : src_c0 + cols
    ]
    return out


def target_grid(preset: Preset | None, x: np.ndarray, steps: int) -> np.ndarray | None:
    """The grid a run of `preset` should reach from `x` after `steps` steps, on the loss
    channels `(B, H, W, len(loss_channels))`, or None when there is no fixed target."""
    task = preset_task(preset)
    if isinstance(task, LifeTask):
        return task.target(x, steps)
    if task is None:
        return None
    if task.fixed_target or (steps == task.num_steps and x.shape[1:3] == (task.height, task.width)):
        return task.target(x)
    return None  # a custom task's target after its own steps, on its own grid only


class Simulator:
    """A model's hard circuit with its grid kept between calls, for long loops.

    `Model.simulate` packs the grid into bits, runs, and unpacks it on every call;
    a `Simulator` packs once and keeps the packed grid (and its compiled circuit) until
    `load` replaces it. `run` takes the arguments of `Model.simulate` and gives the same
    results: `Simulator(model, x).run(steps, ...)` equals `model.simulate(x, steps, ...)`.
    The circuit is the model's at construction (later training does not reach it).

    Args:
        model: the `Model` whose hard circuit runs.
        x: the starting grid `(B, H, W, C)` of 0/1.
        periodic: boundary override (default: the spec's).
        engine: `"jit"` (compiled machine code: AVX-512 where the CPU has it and
            `LOGICARS_SIMD` does not say `avx2`, else AVX2; an error where this machine
            cannot run it), `"jit-avx2"` or `"jit-avx512"` (that back end),
            `"slots"` (the portable engine), or `None`: the fastest available, as
            `build_info()["hard_engine"]` reports.
    """

    def __init__(
        self, model: Model, x: Any, *, periodic: bool | None = None, engine: str | None = None
    ) -> None:
        if engine not in (None, "jit", "jit-avx2", "jit-avx512", "slots"):
            raise InvalidValueError(
                f"engine must be 'jit', 'jit-avx2', 'jit-avx512', 'slots' or None, got {engine!r}"
            )
        self._spec = model.spec
        xa = as_grid(x, self._spec.channels)
        p = None if periodic is None else bool(periodic)
        self._sim = _core.Simulator(model.hard_circuit(), xa, periodic=p, engine=engine)

    @property
    def engine(self) -> str:
        """`"jit"` (either back end) or `"slots"`."""
        return self._sim.engine

    @property
    def shape(self) -> tuple[int, int, int, int]:
        """`(B, H, W, C)` of the grid."""
        return self._sim.shape

    def load(self, x: Any) -> None:
        """Replaces the grid with `x` (the same shape)."""
        self._sim.load(as_grid(x, self._spec.channels))

    def state(self) -> np.ndarray:
        """The current grid, uint8 `(B, H, W, C)`."""
        return self._sim.read()

    def run(
        self,
        steps: int,
        *,
        fire_rate: float | None = None,
        seed: int = 0,
        masks: Any = None,
        damage: Any = None,
        damage_steps: tuple[int, int] | None = None,
        record: bool | int = False,
    ) -> np.ndarray:
        """Runs `steps` steps from the current grid; arguments and result as
        `Model.simulate` (the random masks of a seed start again at each call)."""
        steps = check_int("steps", steps, 0, MAX_STEPS)
        run = run_arguments(self._spec, steps, fire_rate, seed, masks, damage, damage_steps, record)
        grids = self._sim.run(steps, **run)
        assert grids is not None  # None only with read=False (`advance`)
        return grids

    def advance(
        self,
        steps: int,
        *,
        fire_rate: float | None = None,
        seed: int = 0,
        masks: Any = None,
        damage: Any = None,
        damage_steps: tuple[int, int] | None = None,
    ) -> None:
        """`run` without reading any grid back (`state()` reads the grid when needed)."""
        steps = check_int("steps", steps, 0, MAX_STEPS)
        run = run_arguments(self._spec, steps, fire_rate, seed, masks, damage, damage_steps, False)
        self._sim.run(steps, read=False, **run)
