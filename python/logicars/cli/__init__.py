"""The command line, the package's top layer: one module per command (`train`,
`presets`, `simulate`, `analyze`, `bench`, `export`, `view`, `sweep`), the shared parser
and option types in `common`, the entry point in `main`. No library module imports it."""

from __future__ import annotations

from ..presets import presets_table  # the tutorial imports it from here
from .common import COMMANDS, PROG, UsageError, register
from .main import build_parser, main

__all__ = ["COMMANDS", "PROG", "UsageError", "build_parser", "main", "presets_table", "register"]
