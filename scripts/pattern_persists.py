"""Whether the working circuits of a pattern task's sweep keep their pattern after the
step they were trained for (docs/results.md, *Rollout length*).

    python scripts/pattern_persists.py SWEEP_DIR [--starts 256] [--until 5]

For every run of the sweep whose final circuit passed its held-out check (`summary.json`'s
`hard_eval`), the hard circuit runs from `--starts` fresh random starts (seed 4242, not
the check's) and the pattern (any phase, as the check scores it) is checked at every step
from T, the trained step, to `--until` x T. Prints, per run, the share of starts right at
every one of those steps, and the count of circuits that keep it on every start.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

from logicars.runs import load_run


def right_throughout(run_dir: Path, starts: int, until: int) -> np.ndarray:
    """Per start, whether the run's circuit has the pattern right at every step from T
    to until x T."""
    run = load_run(run_dir)
    model, preset = run.model, run.preset
    task, spec = preset.task(), model.spec
    horizon = (until - 1) * spec.num_steps
    rng = np.random.default_rng(4242)
    x = task.start(rng, starts, preset.config.height, preset.config.width).astype(np.uint8)
    y = task.target(x)
    state = model.simulate(x, spec.num_steps, periodic=spec.periodic)
    right = np.ones(starts, bool)
    for _ in range(horizon + 1):
        right &= ~task.wrong(state, y).reshape(starts, -1).any(axis=1)
        state = model.simulate(state, 1, periodic=spec.periodic)
    return right


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("sweep", type=Path)
    ap.add_argument("--starts", type=int, default=256)
    ap.add_argument("--until", type=int, default=5)
    args = ap.parse_args()
    kept = total = 0
    for run_dir in sorted(args.sweep.glob("*seed=*")):
        summary = json.loads((run_dir / "summary.json").read_text())
        if not summary["hard_eval"]["passed"]:
            continue
        share = float(right_throughout(run_dir, args.starts, args.until).mean())
        total += 1
        kept += share == 1.0
        print(f"{run_dir.name}: {share:.3f} of {args.starts} starts right to {args.until}T")
    print(f"{kept} of {total} working circuits keep the pattern to {args.until}T on every start")


if __name__ == "__main__":
    main()
