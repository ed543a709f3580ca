"""Two checks of the working circuits of a pattern task's sweep beyond the one they were
chosen by (docs/results.md, *Rollout length*).

    python scripts/pattern_checks.py SWEEP_DIR [SWEEP_DIR ...] [--starts 256] [--until 5]

For every run of a sweep whose final circuit passed its held-out check (`summary.json`'s
`hard_eval`):

- *persists*: the hard circuit runs from `--starts` fresh random starts (seed 4242, not
  the check's), and the pattern (any phase, as the check scores it) must be right at every
  step from T, the trained step, to `--until` x T;
- *generalises*: `logicars.analyze`'s generalisation experiment (4 random starts on a grid
  4x larger per side, 4T steps, analysis seed 0) must end exact on all four.

Prints, per sweep, the working circuits and how many pass each check.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import numpy as np

from logicars.circuit.analyze import analyze
from logicars.presets import Preset
from logicars.runs import load_run


def persists(model: Any, preset: Preset, starts: int, until: int) -> bool:
    """Whether the circuit has the pattern right at every step from T to until x T from
    every one of `starts` fresh starts."""
    task, spec = preset.task(), model.spec
    rng = np.random.default_rng(4242)
    x = task.start(rng, starts, preset.config.height, preset.config.width).astype(np.uint8)
    y = task.target(x)
    assert y is not None, "a pattern task's target is a function of the start"
    frames = model.simulate(x, until * spec.num_steps, periodic=spec.periodic, record=True)
    return not any(task.wrong(state, y).any() for state in frames[spec.num_steps :])


def generalises(model: Any, preset: Preset) -> bool:
    """Whether `analyze`'s generalisation experiment ends exact on every board (also the
    first-wiring probe's record of it)."""
    report = analyze(model, preset=preset, seed=0, experiments=["generalisation"])
    g = report["experiments"]["generalisation"]
    return bool(g["boards_exact"] == g["boards"])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("sweeps", type=Path, nargs="+")
    ap.add_argument("--starts", type=int, default=256)
    ap.add_argument("--until", type=int, default=5)
    args = ap.parse_args()
    for sweep in args.sweeps:
        working = held = general = 0
        for run_dir in sorted(sweep.glob("*seed=*")):
            summary = json.loads((run_dir / "summary.json").read_text())
            if not summary["hard_eval"]["passed"]:
                continue
            run = load_run(run_dir)
            assert run.preset is not None  # a sweep's run names its preset
            working += 1
            held += persists(run.model, run.preset, args.starts, args.until)
            general += generalises(run.model, run.preset)
        print(
            f"{sweep}: {working} working circuits; persists to {args.until}T on "
            f"{args.starts} starts: {held}; generalises (4x the grid, 4T): {general}"
        )


if __name__ == "__main__":
    main()
