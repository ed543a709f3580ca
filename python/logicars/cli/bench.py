"""`logicars bench`: time whole training epochs of the presets (see `logicars.bench`)."""

from __future__ import annotations

import argparse
import json
import os

from ..bench import BINARIZED, bench_presets, cpu_peak_fma_per_s, expected_wall_time
from ..presets import Preset
from ..training.rundir import run_name
from .common import UsageError, int_at_least

HELP = "time whole training epochs of the presets"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "presets",
        nargs="*",
        help="presets to time (default: all), task kinds (life:B36/S23, grow:IMAGE.png, "
        "pattern:TILE.png), experiment files (FILE.toml) or run directories (their model "
        "and task); several take turns "
        "in the same 5 rounds",
    )
    p.add_argument("--threads", default="1,2", help="comma-separated thread counts (default 1,2)")
    p.add_argument(
        "--epochs", type=int_at_least(1), default=30, help="timed epochs per run (default 30)"
    )
    p.add_argument(
        "--warmup", type=int_at_least(0), default=5, help="untimed epochs first (default 5)"
    )
    p.add_argument("--json", action="store_true", help="one JSON object per line")
    p.add_argument(
        "--relax",
        default="",
        metavar="LIST",
        help="relaxations to time side by side, e.g. softmax,gumbel-st,softmax+binarized "
        "(+binarized: with --binarize-states; default: the preset's own); each is compared "
        "with the first",
    )
    p.add_argument(
        "--to-working",
        metavar="SEEDS",
        help="also train each preset on its defaults from these seeds (e.g. 100-109), one "
        "run at a time on the last --threads count, and report the expected wall time to a "
        "working circuit: all runs' seconds over the runs whose circuit passes evaluate",
    )
    p.add_argument(
        "--out",
        metavar="DIR",
        help="with --to-working: keep the runs in DIR/<preset> (a sweep directory; running "
        "again resumes it) instead of a temporary directory",
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
        type=int_at_least(1),
        default=5,
        help="with --hard: alternating rounds per measurement (default 5)",
    )


def _int_list(option: str, text: str, lo: int, example: str) -> list[int]:
    """A comma-separated list of integers >= `lo`, or a UsageError naming `option`."""
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
    from ..hard_bench import compare, format_rows

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


def _bench_preset(name: str) -> Preset:
    """What `name` times: a preset, a task kind's preset, an experiment file's (e.g. the
    paper's lizard, examples/lizard-grow/lizard-grow.toml) or a run's (its spec and task)."""
    from ..presets import PRESETS, read_experiment, resolve_preset
    from ..runs import load_run

    if name in PRESETS:
        return PRESETS[name]
    if ":" in name:
        return resolve_preset(name)
    if name.endswith(".toml"):
        return read_experiment(name).preset
    preset = load_run(name).preset
    if preset is None or not preset.has_task():
        raise UsageError(f"{name}: the run records no task to time (a bare model file)")
    return preset


def run(args: argparse.Namespace) -> int:
    from ..presets import PRESETS

    threads = _int_list("--threads", args.threads, 1, "1,2")
    if args.hard:
        return _run_hard(args, threads)
    names = args.presets or list(PRESETS)
    unknown = [n for n in names if n not in PRESETS and ":" not in n and not os.path.exists(n)]
    if unknown:
        raise UsageError(f"unknown preset(s) {unknown}; valid: {', '.join(PRESETS)}")
    presets = {name: _bench_preset(name) for name in names}
    seeds = _seeds_to_working(args.to_working)
    from ..spec import RELAX_MODES

    relaxes = tuple(r for r in args.relax.split(",") if r)
    bad = [r for r in relaxes if r.removesuffix(BINARIZED) not in RELAX_MODES]
    if bad:
        raise UsageError(f"--relax: unknown mode(s) {bad}; valid: {', '.join(RELAX_MODES)}")
    name_width = _name_width(names)
    if not args.json:
        head = ("preset", "relax", "threads", "ms/epoch", "G gce/s", "FMA peak", "RSS MB", "ratio")
        print(f"{head[0]:<{name_width}}{head[1]:<26}" + "".join(f"{h:>10}" for h in head[2:]))
    per_preset, timed = max(1, len(relaxes)), list(presets)
    for t in threads:
        # Every preset in the same alternating rounds, one thread count at a time.
        rows = bench_presets(list(presets.values()), t, args.epochs, args.warmup, relaxes)
        for i, r in enumerate(rows):
            if args.json:
                print(json.dumps(r), flush=True)
                continue
            name = timed[i // per_preset]
            frac = r["fma_fraction_of_peak"]
            ratio = next((v for k, v in r.items() if k.startswith("vs_")), None)
            every = r["binarize_every"]
            relax = r["relax"] + (f"/{every}" if every > 1 else "")
            print(
                f"{name:<{name_width}}{relax:<26}{t:>10}{r['ms_per_epoch']:>10.2f}"
                f"{r['gce_per_s'] / 1e9:>10.2f}"
                f"{'' if frac is None else f'{100 * frac:.1f}%':>10}{r['peak_rss_mb']:>10.0f}"
                f"{'' if ratio is None else f'{ratio:.3f}':>10}",
                flush=True,
            )
    if not args.json:
        print(f"(FMA peak {cpu_peak_fma_per_s(threads[-1])[1]}; {os.cpu_count()} CPUs)")
    if seeds:
        _run_to_working(args, names, seeds, threads[-1])
    return 0


def _name_width(names: list[str]) -> int:
    """The preset column's width: a file's path can be longer than a preset's name."""
    return max(20, *(len(n) + 2 for n in names))


def _seeds_to_working(text: str | None) -> list[int]:
    from ..sweep.grid import parse_seeds

    try:
        return parse_seeds(text) if text else []
    except ValueError as e:
        raise UsageError(f"--to-working: {e}") from None


def _run_to_working(
    args: argparse.Namespace, names: list[str], seeds: list[int], threads: int
) -> None:
    """The expected wall time to a working circuit of each preset, on its defaults."""
    name_width = _name_width(names)
    if not args.json:
        print(f"\nto a working circuit, seeds {args.to_working}, {threads} thread(s) per run:")
        print(
            f"{'preset':<{name_width}}"
            + "".join(f"{h:>12}" for h in ("runs", "working", "wall s"))
            + "  s per working circuit"
        )
    for name in names:
        out = None if args.out is None else os.path.join(args.out, run_name(name))
        r = expected_wall_time(name, seeds, threads, out)
        if args.json:
            print(json.dumps({"preset": name, "threads": threads, **r}), flush=True)
            continue
        per = r["seconds_per_working"]
        print(
            f"{name:<{name_width}}{r['runs']:>12}{r['working']:>12}{r['wall_seconds']:>12.1f}"
            f"  {'none works' if per is None else f'{per:.1f}'}",
            flush=True,
        )
