"""The entry point: `python -m logicars <command> ...` (also the `logicars` script).

Each subcommand is a module of this package with `HELP`, `add_arguments(parser)` and
`run(args) -> exit code`, listed in `_COMMAND_MODULES`; `register(...)` adds one more at
run time. Heavy imports belong inside `run`, so `--help` and the other commands stay quick.

User errors (bad preset, bad option values, unreadable checkpoint, unwritable output
directory) print one line to stderr and exit 2, without a traceback.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from . import analyze, bench, export, presets, repair, simulate, sweep, train, view
from .common import COMMANDS, PROG, Parser, UsageError, fail, register

# In the order `--help` lists them.
_COMMAND_MODULES = {
    "train": train,
    "presets": presets,
    "analyze": analyze,
    "repair": repair,
    "bench": bench,
    "simulate": simulate,
    "export": export,
    "view": view,
    "sweep": sweep,
}
for _name, _module in _COMMAND_MODULES.items():
    register(_name, _module.HELP, _module.add_arguments, _module.run)


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(prog=PROG, description="Differentiable Logic Cellular Automata (Rust core).")
    sub = parser.add_subparsers(dest="command", metavar="<command>", parser_class=Parser)
    for name, cmd in COMMANDS.items():
        p = sub.add_parser(name, help=cmd.help, description=cmd.help)
        cmd.add_arguments(p)
        p.set_defaults(_run=cmd.run)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Runs the CLI; returns the exit code (0 ok, 1 failed run, 2 usage/input error)."""
    from .._core import MemoryLimitError

    try:
        parser = build_parser()
        args = parser.parse_args(argv)
        if args.command is None:
            parser.print_help(sys.stderr)
            return 2
        from ..runtime import check_environment

        check_environment()  # a bad LOGICARS_*/RAYON_NUM_THREADS: one line, before any work
        return int(args._run(args))
    except UsageError as e:
        return fail(str(e), 2)
    except (ValueError, OSError, MemoryLimitError) as e:
        # Bad input of any kind (logicars.errors subclass ValueError, CheckpointError
        # included): one line, no traceback.
        return fail(f"{PROG}: error: {e}", 2)
    except FloatingPointError as e:
        return fail(f"{PROG}: error: {e}", 1)
    except KeyboardInterrupt:
        return fail(f"{PROG}: aborted", 130)
