"""Wall time of a seed sweep on the local process pool against the same seeds trained one
after another with all cores each (docs/performance.md, "Sweeps").

    python scripts/sweep_timing.py [--preset checkerboard] [--seeds 16] [--rounds 2]

Per round: `logicars.sweep` of seeds 0..N-1 with `--workers` processes of one engine
thread each (`pool`), and a loop of `logicars.train(seed=s, threads=<cores>)` in this
process (`serial`; no process start-up, so the stricter baseline). Rounds alternate
which goes first. Prints one JSON line per measurement and the medians, and checks that
both gave the same losses for every seed.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import statistics
import tempfile
import time
from pathlib import Path

import logicars


def losses(run_dir: Path) -> list[tuple[str, str, str]]:
    with open(run_dir / "metrics.csv", newline="") as f:
        return [(r["epoch"], r["soft_loss"], r["hard_loss"]) for r in csv.DictReader(f)]


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--preset", default="checkerboard")
    p.add_argument("--seeds", type=int, default=16)
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--workers", type=int, default=len(os.sched_getaffinity(0)))
    args = p.parse_args()
    cores = len(os.sched_getaffinity(0))
    times: dict[str, list[float]] = {"pool": [], "serial": []}
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(args.rounds):
            order = ("pool", "serial") if r % 2 == 0 else ("serial", "pool")
            for kind in order:
                out = Path(tmp) / f"{kind}-{r}"
                load = os.getloadavg()[0]
                t0 = time.perf_counter()
                if kind == "pool":
                    grid = {"preset": args.preset, "seed": range(args.seeds)}
                    logicars.sweep(grid, out=out, workers=args.workers, quiet=True)
                else:
                    for s in range(args.seeds):
                        logicars.train(
                            args.preset, seed=s, threads=cores, out=out / str(s), quiet=True
                        )
                wall = time.perf_counter() - t0
                times[kind].append(wall)
                row = {"round": r, "kind": kind, "wall_s": round(wall, 2), "load_before": load}
                print(json.dumps(row), flush=True)
            for s in range(args.seeds):
                pool_dir = Path(tmp) / f"pool-{r}" / f"{args.preset}_seed={s}"
                assert losses(pool_dir) == losses(Path(tmp) / f"serial-{r}" / str(s)), s
    pool, serial = statistics.median(times["pool"]), statistics.median(times["serial"])
    print(
        json.dumps(
            {
                "preset": args.preset,
                "seeds": args.seeds,
                "workers": args.workers,
                "pool_median_s": round(pool, 2),
                "serial_median_s": round(serial, 2),
                "ratio": round(pool / serial, 3),
                "simd": logicars.build_info()["simd_level"],
                "load_after": os.getloadavg()[0],
            }
        )
    )


if __name__ == "__main__":
    main()
