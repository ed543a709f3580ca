"""What every command shares: the program name, the registry of commands, the parser
that reports errors as `UsageError` and the option types."""

from __future__ import annotations

import argparse
import math
import sys
from dataclasses import dataclass
from typing import Callable, NoReturn

PROG = "logicars"


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


class Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise UsageError(f"{self.prog}: {message} (see --help)")


def fail(message: str, code: int) -> int:
    """Prints `message` as one line to stderr; returns `code`."""
    try:
        print(message.replace("\n", " "), file=sys.stderr)
    except (OSError, ValueError):
        pass  # stderr is gone (a hung-up terminal): the exit status still says it
    return code


# ---- option types ---------------------------------------------------------------------


def int_at_least(lo: int) -> Callable[[str], int]:
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


def positive_float(text: str) -> float:
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not math.isfinite(v) or v <= 0:
        raise argparse.ArgumentTypeError(f"must be a finite number > 0, got {text}")
    return v


def non_negative_float(text: str) -> float:
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not math.isfinite(v) or v < 0:
        raise argparse.ArgumentTypeError(f"must be a finite number >= 0, got {text}")
    return v


def fraction(text: str) -> float:
    v = non_negative_float(text)
    if v > 1:
        raise argparse.ArgumentTypeError(f"must be in [0, 1], got {text}")
    return v
