"""How the cost of a training epoch grows with cells, steps and gates (issue 4).

    python scripts/scaling.py [--threads 1] [--repeats 7] [--quick]
        [--json docs/img/performance/scaling.json] [--png docs/img/performance/scaling.png]

Starting from the checkerboard preset, one factor varies at a time:

- cells: grid side 8, 16, 32, 64, 128 (batch 1, 20 steps);
- steps: 1, 5, 10, 20, 50, 100 (16x16, batch 1);
- gates: the 10 hidden update layers 64, 128, 256, 512 or 1024 wide (16x16, 20 steps).

Each point is the median time of `Model.train_step` over `--repeats` epochs after 2
untimed ones, with the engine on `--threads` threads. The configurations take turns
(one untimed and one timed epoch each per round), so that load from other processes
spreads over all points. Each point also records its
gate-cell evaluations (`ModelSpec.gates_per_cell()` x cells x steps). The JSON holds the
raw points and a least-squares line per factor and clock (wall, and the process's CPU
time, which a busy second core does not inflate); the PNG shows both. `--quick` runs tiny
configurations (a smoke test, seconds).
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

import logicars
from logicars.spec import ModelSpec

FULL_SIDES = [8, 16, 32, 64, 128]
FULL_STEPS = [1, 5, 10, 20, 50, 100]
FULL_WIDTHS = [64, 128, 256, 512, 1024]
QUICK_SIDES = [4, 8]
QUICK_STEPS = [1, 2]
QUICK_WIDTHS = [64, 128]
HIDDEN_UPDATE_LAYERS = 10

# The two clocks each point is timed with, and the field of its median.
CLOCKS = {"wall": "ms_median", "cpu": "cpu_ms_median"}

# What each factor's panel plots on x, and the label of that axis.
FACTORS = {
    "cells": "cells (grid side², batch 1)",
    "steps": "CA steps per epoch",
    "gates": "gates per cell and step",
}


def _bridge(in_width: int, out_width: int) -> list[int]:
    """Layers to put between a layer of `in_width` and one of `out_width` so that every
    layer's `unique` wiring sees at most twice its width of inputs (2·out >= in)."""
    layers: list[int] = []
    while 2 * out_width < in_width:
        in_width = (in_width + 1) // 2
        layers.append(in_width)
    return layers


def with_update_width(spec: ModelSpec, width: int) -> ModelSpec:
    """`spec` (the checkerboard's) with its hidden update layers `width` wide.

    The update network keeps its input width (centre cell ++ perception) and its tail
    after the hidden layers; halving layers are inserted where a jump would break the
    `unique` wiring's rule, and they count in `gates_per_cell()` like any other layer.
    """
    layers = spec.update.layers
    first, tail = layers[0], layers[1 + HIDDEN_UPDATE_LAYERS :]
    if len(layers) < 2 + HIDDEN_UPDATE_LAYERS:
        raise ValueError(f"expected {HIDDEN_UPDATE_LAYERS} hidden update layers, got {layers}")
    new = [first, *_bridge(first, width), *[width] * HIDDEN_UPDATE_LAYERS]
    new += [*_bridge(width, tail[0]), *tail]
    update = logicars.UpdateSpec(layers=new, connections=["unique"] * (len(new) - 1))
    return spec.replace(update=update)


class Workload:
    """One configuration ready to train: its model and a batch of 1 random grid."""

    def __init__(self, factor: str, x: int, spec: ModelSpec, side: int, seed: int = 0) -> None:
        self.factor, self.x, self.spec, self.side = factor, x, spec, side
        self.model = logicars.Model(spec, seed=seed)
        rng = np.random.default_rng(seed)
        shape = (1, side, side, spec.channels)
        self.grid = (rng.random(shape) < 0.5).astype(np.float32)
        self.target = (rng.random(shape) < 0.5).astype(np.float32)
        self.wall_ms: list[float] = []
        self.cpu_ms: list[float] = []

    def epoch(self) -> None:
        self.model.train_step(self.grid, self.target)

    def timed_epoch(self) -> None:
        """One epoch, timed by the wall clock and by the process's CPU time (which time
        spent waiting for a busy core does not inflate: with one engine thread it is
        the epoch's own work)."""
        t0, c0 = time.perf_counter(), time.process_time()
        self.epoch()
        self.wall_ms.append((time.perf_counter() - t0) * 1e3)
        self.cpu_ms.append((time.process_time() - c0) * 1e3)

    def point(self) -> dict[str, Any]:
        cells, gates = self.side * self.side, self.spec.gates_per_cell()
        return {
            "factor": self.factor,
            "x": self.x,
            "side": self.side,
            "cells": cells,
            "steps": self.spec.num_steps,
            "update_layers": list(self.spec.update.layers),
            "gates": gates,
            "gate_cell_evals": gates * cells * self.spec.num_steps,
            "ms_median": statistics.median(self.wall_ms),
            "ms_min": min(self.wall_ms),
            "ms_all": self.wall_ms,
            "cpu_ms_median": statistics.median(self.cpu_ms),
            "cpu_ms_all": self.cpu_ms,
        }


def fit_line(x: list[float], y: list[float]) -> dict[str, float]:
    """Least-squares `y = intercept + slope·x` and its R²."""
    xs, ys = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    slope, intercept = np.polyfit(xs, ys, 1)
    residual = float(np.sum((ys - (intercept + slope * xs)) ** 2))
    total = float(np.sum((ys - ys.mean()) ** 2))
    return {
        "slope": float(slope),
        "intercept": float(intercept),
        "r2": 1.0 - residual / total if total > 0 else 1.0,
    }


def machine() -> dict[str, Any]:
    """Where and when the figures were taken."""
    model = platform.processor() or "unknown"
    try:
        lscpu = subprocess.run(["lscpu"], capture_output=True, text=True, check=True).stdout
        names = [ln.split(":", 1)[1] for ln in lscpu.splitlines() if ln.startswith("Model name")]
        model = names[0].strip() if names else model
    except (OSError, subprocess.CalledProcessError):
        pass
    return {
        "cpu": model,
        "cpus": os.cpu_count(),
        "simd_level": logicars.build_info()["simd_level"],
        "python": platform.python_version(),
        "utc": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "load_average": list(os.getloadavg()) if hasattr(os, "getloadavg") else None,
    }


def run_scaling(
    quick: bool = False, threads: int = 1, repeats: int = 7, warmup: int = 2, log: bool = False
) -> dict[str, Any]:
    """Every point of the three sweeps, with a least-squares line per factor."""
    base = logicars.get_preset("checkerboard").spec
    sides, steps, widths = (
        (QUICK_SIDES, QUICK_STEPS, QUICK_WIDTHS) if quick else (FULL_SIDES, FULL_STEPS, FULL_WIDTHS)
    )
    mid_side, mid_steps = (8, 2) if quick else (16, 20)
    logicars.set_num_threads(threads)
    info = machine()
    work = [Workload("cells", s * s, base.replace(num_steps=mid_steps), s) for s in sides]
    work += [Workload("steps", n, base.replace(num_steps=n), mid_side) for n in steps]
    for w in widths:
        spec = with_update_width(base.replace(num_steps=mid_steps), w)
        work.append(Workload("gates", spec.gates_per_cell(), spec, mid_side))
    for w in work:
        for _ in range(warmup):
            w.epoch()
    # Round robin, so that a burst of load from other processes spreads over every
    # point instead of skewing one; an untimed epoch first brings the config back
    # into cache.
    for _ in range(repeats):
        for w in work:
            w.epoch()
            w.timed_epoch()
    points = [w.point() for w in work]
    if log:
        for p in points:
            print(
                f"{p['factor']:<6} x={p['x']:<7} {p['gate_cell_evals'] / 1e6:9.1f} M gce "
                f"{p['ms_median']:9.2f} ms (CPU {p['cpu_ms_median']:.2f})",
                file=sys.stderr,
            )

    fits: dict[str, dict[str, dict[str, float]]] = {clock: {} for clock in CLOCKS}
    for clock, key in CLOCKS.items():
        for factor in FACTORS:
            mine = [p for p in points if p["factor"] == factor]
            line = fit_line([p["x"] for p in mine], [p[key] for p in mine])
            # Within one sweep, gate-cell evaluations are proportional to x.
            per_x = mine[0]["gate_cell_evals"] / mine[0]["x"]
            line["ms_per_m_gate_cells"] = line["slope"] / per_x * 1e6
            fits[clock][factor] = line
    return {
        "machine": info,
        "threads": threads,
        "repeats": repeats,
        "warmup": warmup,
        "quick": quick,
        "points": points,
        "fits": fits,
    }


def plot(result: dict[str, Any], path: Path) -> None:
    """Three panels, ms per epoch against each factor: points and the fitted line."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(13, 4.2), dpi=100)
    FigureCanvasAgg(fig)
    for i, (factor, label) in enumerate(FACTORS.items()):
        ax = fig.add_subplot(1, 3, i + 1)
        mine = [p for p in result["points"] if p["factor"] == factor]
        x = np.array([p["x"] for p in mine], dtype=float)
        # Dense x so that the straight line shows as what it is on log axes.
        xs = np.geomspace(x.min(), x.max(), 200)
        for (clock, key), (marker, color) in zip(CLOCKS.items(), (("o", "C0"), ("s", "C1"))):
            y = np.array([p[key] for p in mine], dtype=float)
            f = result["fits"][clock][factor]
            ax.plot(x, y, marker, color=color, fillstyle="none" if clock == "cpu" else "full")
            ax.plot(
                xs,
                f["intercept"] + f["slope"] * xs,
                "-",
                color=color,
                label=f"{clock}: {f['ms_per_m_gate_cells']:.3f} ms/M gce, R² {f['r2']:.4f}",
            )
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel(label)
        ax.set_ylabel("ms per epoch (median)")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8, loc="upper left")
    m = result["machine"]
    fig.suptitle(
        f"checkerboard train_step, {result['threads']} thread(s), {m['cpu']}, {m['utc']}",
        fontsize=10,
    )
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true", help="tiny configurations (smoke test)")
    p.add_argument("--threads", type=int, default=1, help="engine threads (default 1)")
    p.add_argument("--repeats", type=int, default=7, help="timed epochs per point (default 7)")
    p.add_argument("--warmup", type=int, default=2, help="untimed epochs first (default 2)")
    p.add_argument("--json", type=Path, default=Path("docs/img/performance/scaling.json"))
    p.add_argument("--png", type=Path, default=Path("docs/img/performance/scaling.png"))
    args = p.parse_args(argv)
    if args.threads < 1 or args.repeats < 1 or args.warmup < 0:
        p.error("--threads and --repeats must be >= 1, --warmup >= 0")
    result = run_scaling(args.quick, args.threads, args.repeats, args.warmup, log=True)
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(result, indent=1) + "\n")
    plot(result, args.png)
    for clock, fits in result["fits"].items():
        for factor, f in fits.items():
            print(
                f"{clock:<4} {factor:<6} {f['ms_per_m_gate_cells']:.4f} ms per M gate-cells, "
                f"intercept {f['intercept']:.2f} ms, R² {f['r2']:.4f}"
            )
    print(f"wrote {args.json} and {args.png}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
