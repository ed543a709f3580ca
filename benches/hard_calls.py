"""Fixed cost of one `Model.simulate` call on a small grid (what a step-by-step loop,
analyze's probes or the viewer pay per call), and of `simulate(steps=0)` on a big one.

    python benches/hard_calls.py [--rounds 7]

Prints the median over rounds of each call's wall time, with the machine's SIMD level.
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

import logicars
from logicars.hard_bench import trained_gol_model


def per_call_us(fn, calls: int) -> float:
    fn()
    start = time.perf_counter()
    for _ in range(calls):
        fn()
    return (time.perf_counter() - start) / calls * 1e6


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=7)
    args = p.parse_args()
    model = trained_gol_model()
    rng = np.random.default_rng(0)
    small = rng.integers(0, 2, (1, 64, 64, 1), dtype=np.uint8)
    big = rng.integers(0, 2, (1, 4096, 4096, 1), dtype=np.uint8)
    cases = {
        "hard circuit (cached)": (lambda: model._hard_circuit(), 2000),
        "simulate 64x64, 1 step": (lambda: model.simulate(small, 1), 500),
        "simulate 4096x4096, 0 steps": (lambda: model.simulate(big, 0), 5),
    }
    info = logicars.build_info()
    print(
        f"simd {info['simd_level']}, hard engine {info['hard_engine']}, threads {info['threads']}"
    )
    times: dict[str, list[float]] = {name: [] for name in cases}
    for _ in range(args.rounds):
        for name, (fn, calls) in cases.items():
            times[name].append(per_call_us(fn, calls))
    for name, ts in times.items():
        print(f"{name:30s} {statistics.median(ts):10.1f} us")


if __name__ == "__main__":
    main()
