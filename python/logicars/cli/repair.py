"""`logicars repair`: search a trained circuit's gate ops for fewer wrong cells."""

from __future__ import annotations

import argparse
from pathlib import Path

from ..circuit.repair import (
    DEFAULT_BUDGET,
    DEFAULT_METHOD,
    REPAIR_METHODS,
    VALIDATION_SAMPLES,
    VALIDATION_SEED,
)
from .common import UsageError, int_at_least

HELP = "search a trained circuit's gate ops for fewer wrong cells (greedy or drift)"

# The file a repaired run's model goes to, in the run directory, unless --out says.
REPAIRED_NAME = "repaired.safetensors"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("run", metavar="RUN", help="training run directory or its checkpoint")
    p.add_argument(
        "--method",
        choices=REPAIR_METHODS,
        default=DEFAULT_METHOD,
        help="greedy: the least confident gates' next ops, kept when they lower the wrong "
        "cells (what training runs); drift: every gate's truth-table rows flipped one at a "
        "time, in passes in random orders, kept when they do not raise them (default: "
        f"{DEFAULT_METHOD})",
    )
    p.add_argument(
        "--budget",
        type=int_at_least(0),
        default=DEFAULT_BUDGET,
        metavar="N",
        help=f"candidate circuits to try at most (default {DEFAULT_BUDGET})",
    )
    p.add_argument(
        "--samples",
        type=int_at_least(1),
        default=VALIDATION_SAMPLES,
        metavar="N",
        help=f"validation inputs, for tasks with random ones (default {VALIDATION_SAMPLES})",
    )
    p.add_argument(
        "--seed",
        type=int_at_least(0),
        default=VALIDATION_SEED,
        help=f"inputs, masks and flips (default {VALIDATION_SEED}, the validation draw's)",
    )
    p.add_argument(
        "--out",
        metavar="FILE",
        help=f"where the repaired model goes (default: {REPAIRED_NAME} in the run directory)",
    )


def run(args: argparse.Namespace) -> int:
    from ..circuit.evaluate import evaluate
    from ..circuit.repair import repair
    from ..model import load_checkpoint
    from ..runs import load_run
    from ..runstate import CHECKPOINT_NAME

    loaded = load_run(args.run)
    preset = loaded.preset
    if preset is None or not preset.has_task():
        raise UsageError(f"repair: {args.run}: cannot tell which task was trained")
    source = Path(args.run)
    source = source / CHECKPOINT_NAME if source.is_dir() else source
    out = Path(args.out) if args.out else loaded.directory / REPAIRED_NAME
    if out.resolve() == source.resolve():
        raise UsageError(f"repair: --out {out} would overwrite the run's own model")
    model = loaded.model
    result = repair(
        model,
        preset,
        budget=args.budget,
        samples=args.samples,
        seed=args.seed,
        method=args.method,
        progress=True,
    )
    # The run's training record goes with it, so the file opens as that run's model
    # (`view`, `analyze`) and training can resume from the repaired gates.
    model.save(out, load_checkpoint(source)[1])
    check = evaluate(model, preset)
    print(
        f"{preset.name} ({args.run}): {result.wrong_before} -> {result.wrong_after} wrong "
        f"cells in {result.evaluations} candidates, {len(result.changes)} gates changed "
        f"({result.seconds:.1f} s)"
    )
    print(f"held-out check: {check.solved} of {check.samples} inputs solved")
    print(f"wrote {out}")
    return 0
