"""`logicars analyze`: the paper's experiments on trained runs (plots + analysis.json)."""

from __future__ import annotations

import argparse
from pathlib import Path

from ..circuit.analyze import (
    EXPERIMENTS,
    RESET_MODES,
    analyze,
    load_run,
    summary_lines,
)
from ..viz.analysis import plot_robustness
from .common import UsageError, int_at_least

HELP = "the paper's experiments on trained runs (plots + analysis.json)"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("runs", nargs="+", metavar="RUN", help="training run directories")
    p.add_argument("--out", metavar="DIR", help="write here instead of into each run directory")
    p.add_argument("--seed", type=int_at_least(0), default=0, help="random starts (default 0)")
    p.add_argument(
        "--quick", action="store_true", help="fewer boards, 400 instead of 4000 robustness steps"
    )
    p.add_argument(
        "--reset",
        choices=RESET_MODES,
        default="random",
        help="robustness: what the 10x10 square is reset to (default random bits)",
    )
    p.add_argument(
        "--only",
        metavar="NAMES",
        help=f"comma-separated subset of: {', '.join(EXPERIMENTS)}",
    )


def run(args: argparse.Namespace) -> int:
    experiments: tuple[str, ...] = EXPERIMENTS
    if args.only:
        experiments = tuple(s.strip() for s in args.only.split(",") if s.strip())
        unknown = sorted(set(experiments) - set(EXPERIMENTS))
        if unknown:
            raise UsageError(
                f"analyze: --only: unknown experiments {unknown}; known: {', '.join(EXPERIMENTS)}"
            )
    loaded = [load_run(r) for r in args.runs]  # every run checked before any work
    out = Path(args.out) if args.out else None
    names = [run_dir.name for _, _, run_dir in loaded]
    if out is not None and len(set(names)) < len(names):
        raise UsageError("analyze: --out with runs of the same directory name; rename one")
    curves = []
    for run, (_, _, run_dir), name in zip(args.runs, loaded, names):
        dest = None if out is None else (out if len(loaded) == 1 else out / name)
        report = analyze(
            run, dest, seed=args.seed, quick=args.quick, experiments=experiments, reset=args.reset
        )
        where = dest if dest is not None else run_dir
        print(f"{report['preset']} ({run}) -> {where}")
        for line in summary_lines(report):
            print(f"  {line}")
        rob = report["experiments"].get("robustness")
        if rob is not None and "skipped" not in rob:
            curves.append((f"{report['preset']} ({name})", rob))
    if len(curves) >= 2:
        path = (out if out is not None else loaded[0][2]) / "robustness_comparison.png"
        plot_robustness(curves, path)
        print(f"robustness of {len(curves)} runs on one plot -> {path}")
    return 0
