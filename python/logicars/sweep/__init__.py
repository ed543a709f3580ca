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

The modules, in the order they build on each other: `grid` (the options and the points
they expand to), `points` (one point on disk: its records, its lock and its run),
`reporting` (the rows, the per-cell table and the plot), `executors` (the process pool
and Ray) and `driver` (`sweep()`).
"""

from __future__ import annotations

from .driver import SweepResult, sweep
from .executors import RAY_CONNECT_TIMEOUT_S, RAY_INIT_TIMEOUT_S
from .grid import (
    MAX_POINTS,
    RESERVED,
    Grid,
    PathLike,
    Point,
    expand_grid,
    parse_seeds,
    parse_shard,
    parse_values,
    point_name,
    read_sweep_file,
    train_options,
)
from .points import (
    ERROR_FILE,
    LOCK_FILE,
    NEW_RUN_ONLY,
    POINT_FILE,
    PointBusy,
    PointConflictError,
    PointDamaged,
    point_state,
    run_point,
    train_point,
)
from .reporting import (
    METRIC_COLUMNS,
    SweepReport,
    cells_table,
    plot_sweep,
    point_record,
    report,
    summarize_cells,
)

__all__ = [
    "ERROR_FILE",
    "Grid",
    "LOCK_FILE",
    "MAX_POINTS",
    "METRIC_COLUMNS",
    "NEW_RUN_ONLY",
    "POINT_FILE",
    "PathLike",
    "Point",
    "PointBusy",
    "PointConflictError",
    "PointDamaged",
    "RAY_CONNECT_TIMEOUT_S",
    "RAY_INIT_TIMEOUT_S",
    "RESERVED",
    "SweepReport",
    "SweepResult",
    "cells_table",
    "expand_grid",
    "parse_seeds",
    "parse_shard",
    "parse_values",
    "plot_sweep",
    "point_name",
    "point_record",
    "point_state",
    "read_sweep_file",
    "report",
    "run_point",
    "summarize_cells",
    "sweep",
    "train_options",
    "train_point",
]
