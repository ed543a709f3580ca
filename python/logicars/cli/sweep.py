"""`logicars sweep`: the command line of `logicars.sweep` (see its module)."""

from __future__ import annotations

import argparse
import sys

from .common import PROG, UsageError, int_at_least

HELP = "train a grid of seeds and options in parallel (process pool or Ray); resumable"

# Shortcuts for `--set KEY=...`: the options swept most.
SHORTCUTS = {
    "seeds": ("seed", "seeds, e.g. 0-99 or 0,3,7"),
    "lr": ("lr", "learning rates, e.g. 0.03,0.06"),
    "relax": ("relax", "relaxations, e.g. softmax,gumbel-st"),
    "tau": ("tau", "temperatures, e.g. 0.5,1"),
    "epochs": ("epochs", "epoch budgets, e.g. 500,1000"),
}


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "preset",
        nargs="*",
        help="preset(s) to sweep (several, or comma-separated); or `preset` in --file",
    )
    p.add_argument("--out", metavar="DIR", help="sweep directory (re-run the same to resume)")
    for flag, (_, text) in SHORTCUTS.items():
        p.add_argument(f"--{flag}", metavar="LIST", help=text)
    p.add_argument(
        "--set",
        metavar="KEY=V1,V2",
        action="append",
        default=[],
        help="sweep any train() option, e.g. --set early_stop=50 (repeatable)",
    )
    p.add_argument(
        "--file",
        metavar="FILE",
        help="TOML or YAML sweep file: train options, a list per swept one (or several "
        "[[grid]] tables); command-line options replace its keys",
    )
    p.add_argument(
        "--workers",
        type=int_at_least(1),
        metavar="N",
        help="points trained at once (default: cores // threads per run; "
        "with Ray: the cluster's CPUs // threads per run)",
    )
    p.add_argument(
        "--threads-per-run",
        type=int_at_least(1),
        default=1,
        metavar="T",
        help="engine threads of each point (default 1)",
    )
    p.add_argument(
        "--ray",
        nargs="?",
        const=True,
        metavar="ADDRESS",
        help="run the points as Ray tasks: alone, on a new local Ray instance; `auto` or "
        "HOST:PORT joins a running cluster (needs pip install 'logicars[ray]')",
    )
    p.add_argument(
        "--shard",
        metavar="I/N",
        help="run only the points I, I+N, I+2N, ... (from 0), e.g. one job of a job array",
    )
    p.add_argument(
        "--until-solved",
        type=int_at_least(1),
        metavar="N",
        help="stop launching points once N have solved every held-out input",
    )
    p.add_argument("--quiet", action="store_true", help="no progress bar, no messages but failures")
    p.add_argument(
        "--report",
        metavar="DIR",
        help="only (re)write the summary of the sweep in DIR and print its table",
    )


def _grids(args: argparse.Namespace) -> list[dict[str, object]]:
    """The file's grid(s) with the command line's options put into each."""
    from ..sweep import parse_values, read_sweep_file

    given: dict[str, object] = {}
    if args.preset:
        given["preset"] = [p for text in args.preset for p in text.split(",") if p]
    for flag, (key, _) in SHORTCUTS.items():
        text = getattr(args, flag)
        if text is not None:
            given[key] = parse_values(key, text)
    for item in args.set:
        key, eq, text = item.partition("=")
        if not eq or not key.strip():
            raise UsageError(f"{PROG} sweep: --set expects KEY=V1,V2, got {item!r}")
        given[key.strip()] = parse_values(key.strip(), text)
    from_file = [] if args.file is None else read_sweep_file(args.file)
    grids = [dict(g) for g in (from_file if isinstance(from_file, list) else [from_file])]
    grids = [{**g, **given} for g in grids] or [given]
    if any("preset" not in g for g in grids):
        raise UsageError(f"{PROG} sweep: give a preset (or a --file with one); see --help")
    return grids


def run(args: argparse.Namespace) -> int:
    from ..sweep import report, sweep

    if args.report is not None:
        grid_given = args.preset or args.file or args.set or args.out
        if grid_given or any(getattr(args, f) is not None for f in SHORTCUTS):
            raise UsageError(f"{PROG} sweep: --report DIR takes no other options")
        print(report(args.report).table)
        return 0
    grids = _grids(args)
    if args.out is None:
        raise UsageError(
            f"{PROG} sweep: --out DIR is required (the sweep directory; running the same "
            "command again resumes it)"
        )
    try:
        result = sweep(
            grids,
            out=args.out,
            workers=args.workers,
            threads_per_run=args.threads_per_run,
            ray=args.ray,
            shard=args.shard,
            until_solved=args.until_solved,
            quiet=args.quiet,
        )
    except RuntimeError as e:  # a worker process or Ray task died
        print(f"{PROG}: error: {e}".replace("\n", " "), file=sys.stderr)
        return 1
    if result.table:
        print(result.table)
    return 1 if result.counts.get("failed") else 0
