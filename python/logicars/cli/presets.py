"""`logicars presets`: the presets and their sizes."""

from __future__ import annotations

import argparse

from ..presets import presets_table

HELP = "list the presets and their sizes"


def add_arguments(p: argparse.ArgumentParser) -> None:
    pass


def run(args: argparse.Namespace) -> int:
    print(presets_table())
    return 0
