"""`logicars view`: write a trained circuit's interactive page and open it."""

from __future__ import annotations

import argparse
from pathlib import Path

from ..viz.page import page_html

HELP = "write a trained circuit's interactive page and open it in the browser"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "model",
        metavar="RUN_OR_MODEL",
        help="run directory, .safetensors or .npz, or a preset's name for the circuit shipped "
        "with the package (e.g. lizard)",
    )
    p.add_argument(
        "--out",
        metavar="FILE",
        help="page to write (default: circuit.html in the run directory, or the model "
        "file's name with .html)",
    )
    p.add_argument("--no-open", action="store_true", help="write the page, do not open it")


def run(args: argparse.Namespace) -> int:
    import sys
    import webbrowser

    from ..circuit.export import default_output
    from ..pretrained import open_run

    run = open_run(args.model)
    out = Path(args.out) if args.out else default_output(args.model, "html")
    from ..files import write_atomic

    write_atomic(out, page_html(run.model, run.preset).encode("utf-8"))
    print(f"wrote the page to {out}")
    if not args.no_open:
        url = out.resolve().as_uri()
        if not webbrowser.open(url):
            print(f"no browser could be started; open {url} yourself", file=sys.stderr)
    return 0
