"""`logicars train`: train a preset or task kind and write a run directory."""

from __future__ import annotations

import argparse
import signal
from typing import TYPE_CHECKING, Any, Callable

from .common import PROG, UsageError, fail, int_at_least

if TYPE_CHECKING:
    from ..training.constraints import Constraint

HELP = "train a preset or task kind and write a run directory"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "preset",
        nargs="?",
        help="preset name (see `logicars presets`) or task kind: life:B36/S23 (a Life-like "
        "rule), grow:IMAGE.png (grow the image from a seed cell), pattern:TILE.png "
        "(self-organise into the repeated tile); or an experiment file FILE.toml (task, "
        "model and training options; `logicars presets --show NAME` prints a preset's, and "
        "options given here replace the file's); optional with --resume",
    )
    p.add_argument(
        "--size",
        type=int_at_least(1),
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
    p.add_argument("--out", metavar="DIR", help="run directory (default runs/<preset>-<time>)")
    p.add_argument("--resume", metavar="DIR", help="continue the run in DIR from its checkpoint")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.add_argument(
        "--tensorboard",
        action="store_true",
        help="also write the losses as TensorBoard event files into the run directory "
        "(needs the tensorboard extra: pip install 'logicars[tensorboard]')",
    )
    add_setting_arguments(p)


def add_setting_arguments(p: argparse.ArgumentParser) -> None:
    """An option for every training setting with a flag (`TrainConfig`'s declarations);
    an option not given is None, so `train` takes the preset's or the file's value."""
    from ..training.config import cli_flag, cli_settings
    from ..training.constraints import Choice, Flag

    for name, declared in cli_settings():
        flag, check = cli_flag(name), declared.check
        if isinstance(check, Flag):
            p.add_argument(flag, action=argparse.BooleanOptionalAction, help=declared.help)
        elif isinstance(check, Choice):
            p.add_argument(
                flag, choices=check.choices, metavar=declared.metavar, help=declared.help
            )
        else:
            kind = _option_type(name, check)
            p.add_argument(flag, type=kind, metavar=declared.metavar, help=declared.help)


def _option_type(name: str, check: Constraint) -> Callable[[str], Any]:
    """argparse's `type` for a setting: the word parsed and checked by its declaration,
    kept as given (a 0 that means none, `CountOrNone`, must still read as given)."""

    def parse(text: str) -> Any:
        try:
            value = check.parse(text)
            check.check(name, value)
            return value
        except (TypeError, ValueError) as e:
            raise argparse.ArgumentTypeError(str(e)) from None

    parse.__name__ = check.expected  # argparse names the type in some messages
    return parse


def run(args: argparse.Namespace) -> int:
    from ..outcome import final_repair, outcome_line
    from ..spec import Relaxation
    from ..tensorboard_log import require_writer
    from ..train import train
    from ..training.config import cli_settings

    if args.preset is None and args.resume is None:
        raise UsageError(f"{PROG} train: a preset is required (or --resume DIR); see --help")
    if args.tensorboard:
        try:
            require_writer()
        except ImportError as e:  # a missing extra: one line, before any work
            raise UsageError(f"{PROG} train: --tensorboard: {e}") from None
    # Only the settings given: `train` takes the rest from the preset, an experiment file
    # or the defaults, so a file's settings are replaced by the command line's in one place.
    given = {name: getattr(args, name) for name, _ in cli_settings()}
    result = train(
        args.preset,
        out=args.out,
        resume=args.resume,
        asynchronous=args.use_async,
        size=args.size,
        quiet=args.quiet,
        tensorboard=True if args.tensorboard else None,
        **{name: value for name, value in given.items() if value is not None},
    )
    s = result.summary
    zero = s["first_epoch_hard_zero"]
    first = f"first 0 at epoch {zero}" if zero is not None else "never 0"
    if s["solved_epoch"] is not None:
        first += f"; solved the validation check at epoch {s['solved_epoch']}"
    ev = s["hard_eval"]
    # A run with restarts: how many wirings its epochs went to.
    attempts = f" over {len(s['restarts']) + 1} attempts" if s["restarts"] else ""
    # The last epoch's hard loss is the circuit before a repair at the run's end, not the
    # final one: say so where such a repair ran.
    before = " before the final repair" if final_repair(s) is not None else ""
    print(
        f"{s['preset']} ({Relaxation(**s['relax']).label()}): {s['epochs']} epochs{attempts} in "
        f"{s['wall_seconds']:.1f} s, "
        f"final soft loss {s['final_soft_loss']:.4g}, hard loss {s['final_hard_loss']:g}{before} "
        f"({first}), {s['active_gates']} active gates; the hard circuit solves "
        f"{ev['solved']}/{ev['samples']} inputs of its {ev['check']} check -> {result.run_dir}"
    )
    print(outcome_line(s))  # the verdict, last: SOLVED or NOT SOLVED
    if result.interrupted:
        print(f"interrupted; continue with: {PROG} train --resume {result.run_dir}")
    if result.stopped_by in ("SIGTERM", "SIGHUP"):
        # Preempted (a scheduler or a closed terminal): 128 + the signal, as a shell
        # reports a process the signal killed, but with the checkpoint written.
        signum = int(getattr(signal, result.stopped_by))
        return fail(
            f"{PROG}: stopped by {result.stopped_by} after epoch {s['epochs']}; checkpoint "
            f"saved; continue with: {PROG} train --resume {result.run_dir}",
            128 + signum,
        )
    return 0
