"""`logicars presets`: the presets and their sizes."""

from __future__ import annotations

import argparse

from ..presets import preset_file_text, presets_table

HELP = "list the presets and their sizes"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--show",
        metavar="NAME",
        help="print the preset's experiment file (TOML), a starting point for your own: "
        "save it, edit it, `logicars train FILE.toml`",
    )


def run(args: argparse.Namespace) -> int:
    if args.show is not None:
        print(preset_file_text(args.show), end="")
        return 0
    print(presets_table())
    return 0
