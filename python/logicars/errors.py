"""Exceptions raised by logicars.

Every engine error is one of these; all but `MemoryLimitError` subclass `ValueError`,
so `except ValueError` catches bad input of any kind. Bad argument types raise the
built-in `TypeError`.

`PanicException` is a Rust panic, i.e. a bug in the engine rather than bad input. It
is raised instead of aborting the interpreter; like `KeyboardInterrupt` it derives
from `BaseException`, so `except Exception` does not swallow it. See
docs/reliability.md.
"""

from __future__ import annotations

from ._core import InvalidValueError, MemoryLimitError, PanicException, ShapeError


class CheckpointError(ValueError):
    """A checkpoint file is truncated, corrupted, of a foreign format or version."""


class CheckpointMemoryError(CheckpointError, MemoryLimitError):
    """A checkpoint whose model (or file) is over the memory cap: both a
    `CheckpointError` and a `MemoryLimitError`, so either `except` catches it."""


__all__ = [
    "CheckpointError",
    "CheckpointMemoryError",
    "InvalidValueError",
    "MemoryLimitError",
    "PanicException",
    "ShapeError",
]
