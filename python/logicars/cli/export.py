"""`logicars export`: a trained circuit as C, Verilog, DigitalJS, DOT or an HTML page."""

from __future__ import annotations

import argparse
from pathlib import Path

from ..circuit.export import FORMATS, default_output, export_text, format_prune_report, prune_report
from ..files import write_atomic

HELP = "export a trained circuit as C, Verilog, DigitalJS, DOT or an interactive HTML page"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "model",
        metavar="RUN_OR_MODEL",
        help="run directory, .safetensors or .npz, or a preset's name for the circuit shipped "
        "with the package (e.g. gol)",
    )
    p.add_argument("--format", required=True, choices=FORMATS, help="output format")
    p.add_argument(
        "--out",
        metavar="FILE",
        help="output file (default: circuit.<ext> in the run directory, or the model file's "
        "name with the format's extension)",
    )


def run(args: argparse.Namespace) -> int:
    from ..pretrained import open_run

    run = open_run(args.model)
    text = export_text(run.model, args.format, run.preset)
    out = Path(args.out) if args.out else default_output(args.model, args.format)
    write_atomic(out, text.encode("utf-8"))
    print(format_prune_report(prune_report(run.model)))
    print(f"wrote {args.format} to {out}")
    return 0
