"""The seed sweeps of docs/results.md: `logicars sweep` of each preset on its defaults.

    python scripts/seed_sweep.py [PRESET ...] [--seeds 0-9] [--root runs/sweep] [--workers N]

Every preset sweeps into its own directory `<root>/<preset>` (the same as
`python -m logicars sweep <preset> --seeds <seeds> --out <root>/<preset>`), on the
preset's defaults (epochs, restarts, repair), with the seeds docs/results.md reports
unless `--seeds` is given; re-running skips the finished points and resumes the
interrupted ones. `python scripts/make_results.py --record <root>/<preset> --name NAME`
turns each into its records (docs/data/sweeps/NAME.jsonl), from which the success-rate
tables are written.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import logicars

# The seeds docs/results.md reports per preset.
SEEDS = {
    "gol": "0-19",
    "checkerboard": "0-19",
    "checkerboard-async": "0-19",
    "lizard": "0-5",
    "colored-g": "0-9",
}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("presets", nargs="*", default=list(SEEDS), help="default: all five")
    p.add_argument("--seeds", help="e.g. 0-9 (default: the ones docs/results.md reports)")
    p.add_argument("--root", type=Path, default=Path("runs/sweep"))
    p.add_argument("--workers", type=int, help="default: one per core")
    args = p.parse_args()
    for name in args.presets:
        grid = {"preset": name, "seed": args.seeds or SEEDS.get(name, "0-9")}
        logicars.sweep(grid, out=args.root / name, workers=args.workers)


if __name__ == "__main__":
    main()
