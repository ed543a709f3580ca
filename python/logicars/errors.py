"""Exceptions raised by logicars.

Every engine error is one of these; all but `MemoryLimitError` subclass `ValueError`,
so `except ValueError` catches bad input of any kind.
"""

from __future__ import annotations

from ._core import InvalidValueError, MemoryLimitError, ShapeError


class CheckpointError(ValueError):
    """A checkpoint file is truncated, corrupted, of a foreign format or version."""


__all__ = ["CheckpointError", "InvalidValueError", "MemoryLimitError", "ShapeError"]
