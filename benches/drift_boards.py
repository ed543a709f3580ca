"""The drift search's candidates per second on the checkerboard's training-time starts
(16x16 boards, 20 steps) and the Game of Life's 512 boards (3x3, one step), alternated
over rounds; run it under each build to compare them (`PYTHONPATH` naming the package
directory of the other build).

    python benches/drift_boards.py [--rounds 3] [--candidates 2000]

Each search starts from the final circuit of an unsolved training run of seed 5 (the
checkerboard's first wiring on the recipe of docs/results.md, 500 epochs; 30 epochs of
the Game of Life), as a run's search at its end would. Prints each round and the
medians.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from logicars import train
from logicars.circuit.evaluate import heldout_inputs
from logicars.circuit.repair import repair_on

# Each preset's training run, and the searches' starts.
RUNS = {
    "checkerboard": {
        "epochs": 500,
        "restart_every": 500,
        "lr": 0.2,
        "hard_fraction": 0.8,
        "warmup": 100,
    },
    "gol": {"epochs": 30},
}
SEED = 5  # a seed whose runs end unsolved
SEARCHES = [("checkerboard", 64), ("checkerboard", 320), ("gol", 512)]


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--candidates", type=int, default=2000)
    args = p.parse_args()
    runs = {}
    with tempfile.TemporaryDirectory() as tmp:
        for preset, kw in RUNS.items():
            out = Path(tmp) / preset
            runs[preset] = train(preset, seed=SEED, repair=False, out=out, quiet=True, **kw)
    times: dict[str, list[float]] = {}
    for r in range(args.rounds):
        for preset, starts in SEARCHES:
            run = runs[preset]
            model = run.model
            params = model.params()
            x, target = heldout_inputs(model, run.preset, starts, 1)
            t0 = time.perf_counter()
            result = repair_on(model, run.preset, x, target, budget=args.candidates, method="drift")
            seconds = time.perf_counter() - t0
            model.set_params(params)  # the next round searches from the same circuit
            name = f"{preset}, {len(x)} boards"
            times.setdefault(name, []).append(seconds)
            print(
                f"round {r} {name}: {seconds:.2f} s, "
                f"{result.wrong_before} -> {result.wrong_after} wrong, {result.evaluations}"
            )
    for name, t in times.items():
        median = statistics.median(t)
        print(f"{name}: median {median:.2f} s, {args.candidates / median:.0f} candidates/s")


if __name__ == "__main__":
    main()
