"""The drift search of a grown pattern that must hold (scored at every step from T to 4T,
a candidate stopping its run once it is sure to be worse) against one scored at the last
of the same steps (every candidate runs them all), alternated over rounds.

    python benches/drift_held.py [--rounds 3] [--candidates 5000]

On a growing-only coloured-G circuit from its start grid (tests/data/colored-g-grow.npz,
the circuit the package shipped before `colored-g` persisted by default: the shipped one
now holds and regrows its G, and a search from a circuit that already holds ends at
once); prints each round and the medians.
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

from logicars.circuit.evaluate import heldout_inputs
from logicars.growth import PERSIST_HORIZON
from logicars.pretrained import load_pretrained

CIRCUIT = Path(__file__).parents[1] / "tests" / "data" / "colored-g-grow.npz"


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--candidates", type=int, default=5000)
    args = p.parse_args()
    run = load_pretrained(CIRCUIT)
    model, task = run.model, run.preset.task()
    steps = task.num_steps
    x, target = heldout_inputs(model, run.preset, 1, 1)
    x, options = x[:1], target[None, :1]
    searches = {"scored T..4T": steps, "scored at 4T": None}
    times: dict[str, list[float]] = {name: [] for name in searches}
    for r in range(args.rounds):
        for name, score_from in searches.items():
            t0 = time.perf_counter()
            before, after, tried, _ = model.drift_search(
                x,
                options,
                list(task.loss_channels),
                steps=PERSIST_HORIZON * steps,
                budget=args.candidates,
                search_seed=1,
                score_from=score_from,
            )
            times[name].append(time.perf_counter() - t0)
            print(f"round {r} {name}: {times[name][-1]:.2f} s, {before} -> {after} wrong, {tried}")
    for name, t in times.items():
        median = statistics.median(t)
        print(f"{name}: median {median:.2f} s, {args.candidates / median:.0f} candidates/s")


if __name__ == "__main__":
    main()
