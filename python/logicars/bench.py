"""`python -m logicars bench`: time whole training epochs of the presets.

Each epoch is one `Model.train_step` (soft rollout, back-propagation through every
step, hard rollout, AdamW), exactly what training runs. The figure is the median over
repeated epochs after a warm-up, on one fixed batch of the preset's own data.
`--relax softmax,gumbel-st` times each relaxation on the same batch in alternating
rounds and reports its cost against the first one's.

`bench --hard` times the trained Game of Life circuit instead, beside a compiled-C
reference in the same run (`logicars.hard_bench`).
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import resource
import statistics
import time
from typing import Any

from .cli import _int_at_least, register

# FMA-equivalent vector operations per gate-cell in one epoch: 3 multiply-adds in each
# of the two float forward passes (soft, and soft again during BPTT; the hard pass runs
# bit-sliced, 64 cells per word, and is not counted) and about 10 in
# the backward pass (input gradients and the four coefficient sums).
OPS_PER_GATE_CELL = 3 * 2 + 10


@functools.cache
def cpu_peak_fma_per_s(threads: int) -> tuple[float, str]:
    """Peak FMA lane-operations per second on `threads` engine threads and how it was
    obtained: measured (`_core.measure_fma_peak`: independent FMA chains with the
    kernels' SIMD level on every thread at once), once per process and thread count.
    Leaves the engine on `threads` threads."""
    from . import build_info, set_num_threads
    from ._core import measure_fma_peak

    set_num_threads(threads)
    peak = measure_fma_peak()
    level = build_info()["simd_level"]
    how = f"measured: {level} FMA chains on {threads} thread(s), {peak / 1e9:.1f} G lane-ops/s"
    return peak, how


ROUNDS = 5  # alternating rounds when several relaxations are timed side by side


def bench_preset(
    name: str, threads: int, epochs: int, warmup: int, relaxes: tuple[str, ...] = ()
) -> list[dict[str, Any]]:
    """One row per relaxation (the preset's own when `relaxes` is empty). Several are
    timed in alternating rounds on the same batch, so that a busy spell of a shared
    host does not land on one of them only."""
    import numpy as np

    from . import Model, Relaxation, get_preset, set_num_threads

    set_num_threads(threads)
    preset = get_preset(name)
    specs = [preset.spec.replace(relax=Relaxation(r)) for r in relaxes] or [preset.spec]
    models = [Model(spec, seed=23) for spec in specs]
    x, y = preset.task().sample(np.random.default_rng(23))
    for model in models:
        for _ in range(warmup):
            model.train_step(x, y)
    rounds = ROUNDS if len(models) > 1 else 1
    times: list[list[float]] = [[] for _ in models]
    for r in range(rounds):
        for model, t in zip(models, times):
            for _ in range(epochs * (r + 1) // rounds - epochs * r // rounds):
                t0 = time.perf_counter()
                model.train_step(x, y)
                t.append(time.perf_counter() - t0)
    gce = preset.gate_cell_evals_per_epoch()
    peak, how = cpu_peak_fma_per_s(threads)
    rows = []
    for spec, t in zip(specs, times):
        ms = statistics.median(t) * 1e3
        achieved = gce * OPS_PER_GATE_CELL / (ms / 1e3)
        rows.append(
            {
                "preset": name,
                "relax": spec.relax.mode,
                "threads": threads,
                "ms_per_epoch": round(ms, 3),
                "ms_min": round(min(t) * 1e3, 3),
                "epochs_timed": epochs,
                "gate_cell_evals_per_epoch": gce,
                "gce_per_s": round(gce / (ms / 1e3)),
                "fma_fraction_of_peak": round(achieved / peak, 4) if peak else None,
                "peak_basis": how,
                "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
            }
        )
    for row in rows[1:]:
        row[f"vs_{rows[0]['relax']}"] = round(row["ms_per_epoch"] / rows[0]["ms_per_epoch"], 3)
    return rows


def _arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("presets", nargs="*", help="presets to time (default: all)")
    p.add_argument("--threads", default="1,2", help="comma-separated thread counts (default 1,2)")
    p.add_argument(
        "--epochs", type=_int_at_least(1), default=30, help="timed epochs per run (default 30)"
    )
    p.add_argument(
        "--warmup", type=_int_at_least(0), default=5, help="untimed epochs first (default 5)"
    )
    p.add_argument("--json", action="store_true", help="one JSON object per line")
    p.add_argument(
        "--relax",
        default="",
        metavar="LIST",
        help="relaxations to time side by side, e.g. softmax,gumbel-st (default: the "
        "preset's own); each is compared with the first",
    )
    p.add_argument(
        "--hard",
        action="store_true",
        help="time the trained GoL hard circuit (G cell-updates/s) beside a compiled-C "
        "reference instead of training epochs",
    )
    p.add_argument(
        "--sizes",
        default="256,1024,4096",
        help="with --hard: comma-separated grid sides (default 256,1024,4096)",
    )
    p.add_argument(
        "--rounds",
        type=_int_at_least(1),
        default=5,
        help="with --hard: alternating rounds per measurement (default 5)",
    )


def _int_list(option: str, text: str, lo: int, example: str) -> list[int]:
    """A comma-separated list of integers >= `lo`, or a UsageError naming `option`."""
    from .cli import UsageError

    try:
        values = [int(t) for t in text.split(",")]
    except ValueError:
        raise UsageError(
            f"{option}: expected comma-separated integers >= {lo} (e.g. {example}), got {text!r}"
        ) from None
    if any(v < lo for v in values):
        raise UsageError(f"{option}: every value must be >= {lo}, got {text!r}")
    return values


def _run_hard(args: argparse.Namespace, threads: list[int]) -> int:
    from .cli import UsageError
    from .hard_bench import compare, format_rows

    if args.presets:
        raise UsageError("--hard times the trained GoL circuit: give no presets")
    sides = _int_list("--sizes", args.sizes, 1, "256,1024")
    note = None if args.json else (lambda text: print(f"timing {text} ...", flush=True))
    rows = compare(sides, threads, args.rounds, progress=note)
    if args.json:
        for r in rows:
            print(json.dumps(r), flush=True)
    else:
        print(format_rows(rows))
    return 0


def _run(args: argparse.Namespace) -> int:
    from .cli import UsageError
    from .presets import PRESETS

    threads = _int_list("--threads", args.threads, 1, "1,2")
    if args.hard:
        return _run_hard(args, threads)
    names = args.presets or list(PRESETS)
    unknown = [n for n in names if n not in PRESETS]
    if unknown:
        raise UsageError(f"unknown preset(s) {unknown}; valid: {', '.join(PRESETS)}")
    from .spec import RELAX_MODES

    relaxes = tuple(r for r in args.relax.split(",") if r)
    bad = [r for r in relaxes if r not in RELAX_MODES]
    if bad:
        raise UsageError(f"--relax: unknown mode(s) {bad}; valid: {', '.join(RELAX_MODES)}")
    if not args.json:
        head = ("preset", "relax", "threads", "ms/epoch", "G gce/s", "FMA peak", "RSS MB", "ratio")
        print(f"{head[0]:<20}{head[1]:<16}" + "".join(f"{h:>10}" for h in head[2:]))
    for name in names:
        for t in threads:
            for r in bench_preset(name, t, args.epochs, args.warmup, relaxes):
                if args.json:
                    print(json.dumps(r), flush=True)
                    continue
                frac = r["fma_fraction_of_peak"]
                ratio = next((v for k, v in r.items() if k.startswith("vs_")), None)
                print(
                    f"{name:<20}{r['relax']:<16}{t:>10}{r['ms_per_epoch']:>10.2f}"
                    f"{r['gce_per_s'] / 1e9:>10.2f}"
                    f"{'' if frac is None else f'{100 * frac:.1f}%':>10}{r['peak_rss_mb']:>10.0f}"
                    f"{'' if ratio is None else f'{ratio:.3f}':>10}",
                    flush=True,
                )
    if not args.json:
        print(f"(FMA peak {cpu_peak_fma_per_s(threads[-1])[1]}; {os.cpu_count()} CPUs)")
    return 0


register("bench", "time whole training epochs of the presets", _arguments, _run)
