"""Command line: `python -m logicars <command> ...` (also the `logicars` script).

Every subcommand is a `Command` (help line, `add_arguments(parser)`, `run(args) -> exit
code`) in the `COMMANDS` registry, so a new one needs no change to the parsing code:
write a module that calls `register(...)` at import time and add its dotted name to
`COMMAND_MODULES`, e.g. a `logicars/bench.py` with

    from .cli import register
    register("bench", "time whole epochs", add_arguments, run)

and `"logicars.bench"` in `COMMAND_MODULES`. Heavy imports belong inside `run`, so
`--help` and the other commands stay quick.

User errors (bad preset, bad option values, unreadable checkpoint, unwritable output
directory) print one line to stderr and exit 2, without a traceback.
"""

from __future__ import annotations

import argparse
import importlib
import math
import signal
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Callable, NoReturn

PROG = "logicars"

# Modules that register further subcommands when imported (bench, simulate, ...).
COMMAND_MODULES: list[str] = [
    "logicars.bench",
    "logicars.simulate",
    "logicars.export",
    "logicars.analyze",
    "logicars.viewer",
    "logicars.sweep_cli",
]


@dataclass(frozen=True)
class Command:
    """One subcommand: its help line, how it declares its options and what it runs."""

    help: str
    add_arguments: Callable[[argparse.ArgumentParser], None]
    run: Callable[[argparse.Namespace], int]


COMMANDS: dict[str, Command] = {}


def register(
    name: str,
    help: str,
    add_arguments: Callable[[argparse.ArgumentParser], None],
    run: Callable[[argparse.Namespace], int],
) -> None:
    """Adds (or replaces) the subcommand `name`."""
    COMMANDS[name] = Command(help, add_arguments, run)


class UsageError(Exception):
    """Raised by the parser instead of exiting, so `main` reports it in one line."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise UsageError(f"{self.prog}: {message} (see --help)")


# ---- option types ---------------------------------------------------------------------


def _int_at_least(lo: int) -> Callable[[str], int]:
    def parse(text: str) -> int:
        try:
            v = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
        if v < lo:
            raise argparse.ArgumentTypeError(f"must be >= {lo}, got {v}")
        return v

    parse.__name__ = f"integer >= {lo}"
    return parse


def _positive_float(text: str) -> float:
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not math.isfinite(v) or v <= 0:
        raise argparse.ArgumentTypeError(f"must be a finite number > 0, got {text}")
    return v


def _non_negative_float(text: str) -> float:
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not math.isfinite(v) or v < 0:
        raise argparse.ArgumentTypeError(f"must be a finite number >= 0, got {text}")
    return v


# ---- train ----------------------------------------------------------------------------


def _train_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "preset",
        nargs="?",
        help="preset name (see `logicars presets`) or task kind: life:B36/S23 (a Life-like "
        "rule), grow:IMAGE.png (grow the image from a seed cell), pattern:TILE.png "
        "(self-organise into the repeated tile); optional with --resume",
    )
    p.add_argument(
        "--size",
        type=_int_at_least(1),
        metavar="N",
        help="grow: shrink the image to fit N x N (default: its own size); pattern: the "
        "N x N training grid (default: the checkerboard's)",
    )
    p.add_argument(
        "--async",
        dest="use_async",
        action="store_true",
        help="pattern: asynchronous updates, on checkerboard-async's model and numbers",
    )
    p.add_argument("--epochs", type=_int_at_least(1), help="total epochs (default: the preset's)")
    p.add_argument(
        "--seed",
        type=_int_at_least(0),
        help="fixes wiring, data and async masks (default: the preset's)",
    )
    p.add_argument("--lr", type=_positive_float, help="learning rate (default: the preset's)")
    add_relax_arguments(p)
    p.add_argument("--out", metavar="DIR", help="run directory (default runs/<preset>-<time>)")
    p.add_argument(
        "--threads", type=_int_at_least(0), help="engine threads (default/0: one per core)"
    )
    p.add_argument("--resume", metavar="DIR", help="continue the run in DIR from its checkpoint")
    p.add_argument(
        "--init",
        metavar="NPZ",
        help="start from this wiring and logits (fixture-format npz, e.g. the reference "
        "notebook's initialisation) instead of a fresh seeded model (default: the preset's "
        "own start if it has one and no --seed is given: the lizard's is the notebook's)",
    )
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.add_argument(
        "--early-stop",
        type=_int_at_least(1),
        metavar="K",
        help="stop once the hard loss has been 0 for K consecutive epochs",
    )
    p.add_argument(
        "--stop-on-solve",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="stop once the hard circuit passes the validation check (default); "
        "--no-stop-on-solve trains every epoch, as the reference notebook",
    )
    p.add_argument(
        "--repair",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="when the hard circuit gets a batch right but fails the validation check, "
        "search for gate changes that make it pass (default for a new run; a resumed "
        "run keeps its setting)",
    )
    p.add_argument(
        "--restart-every",
        type=_int_at_least(1),
        metavar="N",
        help="replace an attempt that has not solved the task after N epochs by a fresh "
        "wiring, while --epochs last (default: the preset's)",
    )
    p.add_argument(
        "--checkpoint-every",
        type=_int_at_least(1),
        metavar="N",
        default=None,
        help="epochs between checkpoints (default 50; one is always written at the end)",
    )


def add_relax_arguments(p: argparse.ArgumentParser) -> None:
    """`--relax MODE --tau T --noise S --warmup N`, as `train()` takes them."""
    from .spec import RELAX_MODES

    p.add_argument(
        "--relax",
        choices=RELAX_MODES,
        help="training relaxation (default: the preset's; softmax is the reference notebook's)",
    )
    p.add_argument(
        "--tau", type=_positive_float, help="backward temperature (gumbel-st, hard-st, gumbel-soft)"
    )
    p.add_argument(
        "--noise", type=_non_negative_float, help="Gumbel noise scale (gumbel-st, gumbel-soft)"
    )
    p.add_argument(
        "--warmup",
        type=_int_at_least(0),
        metavar="EPOCHS",
        help="epochs trained as softmax before the straight-through forward (gumbel-st, hard-st)",
    )


def _run_train(args: argparse.Namespace) -> int:
    from .spec import Relaxation
    from .train import DEFAULT_CHECKPOINT_EVERY, train

    if args.preset is None and args.resume is None:
        raise UsageError(f"{PROG} train: a preset is required (or --resume DIR); see --help")
    result = train(
        args.preset,
        size=args.size,
        asynchronous=args.use_async,
        epochs=args.epochs,
        seed=args.seed,
        lr=args.lr,
        out=args.out,
        threads=args.threads,
        resume=args.resume,
        quiet=args.quiet,
        early_stop=args.early_stop,
        stop_on_solve=args.stop_on_solve,
        repair=args.repair,
        restart_every=args.restart_every,
        checkpoint_every=args.checkpoint_every or DEFAULT_CHECKPOINT_EVERY,
        init=args.init,
        relax=args.relax,
        tau=args.tau,
        noise=args.noise,
        warmup=args.warmup,
    )
    s = result.summary
    zero = s["first_epoch_hard_zero"]
    first = f"first 0 at epoch {zero}" if zero is not None else "never 0"
    if s["solved_epoch"] is not None:
        first += f"; solved the validation check at epoch {s['solved_epoch']}"
    ev = s["hard_eval"]
    print(
        f"{s['preset']} ({Relaxation(**s['relax']).label()}): {s['epochs']} epochs in "
        f"{s['wall_seconds']:.1f} s, "
        f"final soft loss {s['final_soft_loss']:.4g}, hard loss {s['final_hard_loss']:g} "
        f"({first}), {s['active_gates']} active gates; the hard circuit solves "
        f"{ev['solved']}/{ev['samples']} held-out inputs -> {result.run_dir}"
    )
    if result.interrupted:
        print(f"interrupted; continue with: {PROG} train --resume {result.run_dir}")
    if result.stopped_by in ("SIGTERM", "SIGHUP"):
        # Preempted (a scheduler or a closed terminal): 128 + the signal, as a shell
        # reports a process the signal killed, but with the checkpoint written.
        signum = int(getattr(signal, result.stopped_by))
        return _fail(
            f"{PROG}: stopped by {result.stopped_by} after epoch {s['epochs']}; checkpoint "
            f"saved; continue with: {PROG} train --resume {result.run_dir}",
            128 + signum,
        )
    return 0


# ---- presets --------------------------------------------------------------------------


def _presets_arguments(p: argparse.ArgumentParser) -> None:
    pass


def presets_table() -> str:
    """The presets as an aligned text table (what `logicars presets` prints)."""
    from .presets import NOTEBOOK_START, PRESETS

    header = (
        "name", "channels", "grid", "batch", "steps", "epochs", "seed", "gates", "gate-cells/epoch",
    )  # fmt: skip
    rows = [header]
    for p in PRESETS.values():
        steps = f"{p.spec.num_steps}" + (" async" if p.spec.is_async else "")
        rows.append(
            (
                p.name,
                str(p.spec.channels),
                f"{p.height}x{p.width}",
                str(p.batch),
                steps,
                str(p.epochs) if p.restart_every is None else f"{p.epochs} ({p.restart_every})",
                p.start(),
                f"{p.gates():,}",
                f"{p.gate_cell_evals_per_epoch():,}",
            )
        )
    widths = [max(len(r[i]) for r in rows) for i in range(len(header))]
    left = {0, 2, 4}  # text columns; numbers align right
    lines = []
    for r in rows:
        cells = [c.ljust(w) if i in left else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths))]
        lines.append("  ".join(cells).rstrip())
    if any(p.restart_every is not None for p in PRESETS.values()):
        lines.append(
            "epochs (N): an attempt still unsolved after N epochs restarts from a fresh "
            "wiring (--restart-every)"
        )
    if any(p.init is not None for p in PRESETS.values()):
        lines.append(
            f"{NOTEBOOK_START}: starts from the reference notebook's own seed-23 wiring "
            "(logicars/data); --seed N draws this engine's wiring instead"
        )
    return "\n".join(lines)


def _run_presets(args: argparse.Namespace) -> int:
    print(presets_table())
    return 0


register(
    "train", "train a preset or task kind and write a run directory", _train_arguments, _run_train
)
register("presets", "list the presets and their sizes", _presets_arguments, _run_presets)


# ---- entry point ----------------------------------------------------------------------


def build_parser() -> argparse.ArgumentParser:
    for module in COMMAND_MODULES:
        importlib.import_module(module)
    parser = _Parser(prog=PROG, description="Differentiable Logic Cellular Automata (Rust core).")
    sub = parser.add_subparsers(dest="command", metavar="<command>", parser_class=_Parser)
    for name, cmd in COMMANDS.items():
        p = sub.add_parser(name, help=cmd.help, description=cmd.help)
        cmd.add_arguments(p)
        p.set_defaults(_run=cmd.run)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Runs the CLI; returns the exit code (0 ok, 1 failed run, 2 usage/input error)."""
    from ._core import MemoryLimitError

    try:
        parser = build_parser()
        args = parser.parse_args(argv)
        if args.command is None:
            parser.print_help(sys.stderr)
            return 2
        return int(args._run(args))
    except UsageError as e:
        return _fail(str(e), 2)
    except (ValueError, OSError, MemoryLimitError) as e:
        # Bad input of any kind (logicars.errors subclass ValueError, CheckpointError
        # included): one line, no traceback.
        return _fail(f"{PROG}: error: {e}", 2)
    except FloatingPointError as e:
        return _fail(f"{PROG}: error: {e}", 1)
    except KeyboardInterrupt:
        return _fail(f"{PROG}: aborted", 130)


def _fail(message: str, code: int) -> int:
    try:
        print(message.replace("\n", " "), file=sys.stderr)
    except (OSError, ValueError):
        pass  # stderr is gone (a hung-up terminal): the exit status still says it
    return code
