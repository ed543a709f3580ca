#!/usr/bin/env python3
"""The compiled-C reference of the hard circuit (see `logicars.hard_bench`).

    python benches/c_reference.py build DIR   # write, compile and check it; print its path
    python benches/c_reference.py source      # print the generated C
    python benches/c_reference.py compare [--sizes 256,1024,4096] [--threads 1,2]
                                              # = python -m logicars bench --hard

The reference is the trained Game of Life circuit's own C export (`Model.export("c")`)
rewritten as straight-line C over 256-bit vectors, built with
`cc -O3 -march=native -fopenmp`, and checked bit for bit against `Model.simulate` before
it is used. `benches/hard.rs` runs `build` and times the executable's `time` mode
beside the Rust engine. Needs logicars installed (`pip install -e .`) and a C compiler.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def main() -> int:
    from logicars.hard_bench import (
        build_reference,
        compare,
        format_rows,
        reference_source,
        trained_gol_model,
    )

    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    sub = p.add_subparsers(dest="command", required=True)
    sub.add_parser("build").add_argument("dir", type=Path)
    sub.add_parser("source")
    cmp = sub.add_parser("compare")
    cmp.add_argument("--sizes", default="256,1024,4096")
    cmp.add_argument("--threads", default="1,2")
    cmp.add_argument("--rounds", type=int, default=5)
    args = p.parse_args()
    model = trained_gol_model()
    if args.command == "source":
        print(reference_source(model.export("c")), end="")
    elif args.command == "build":
        try:
            print(build_reference(model, args.dir))
        except RuntimeError as e:
            print(f"c_reference.py: {e}", file=sys.stderr)
            return 1
    else:
        sides = [int(s) for s in args.sizes.split(",")]
        threads = [int(t) for t in args.threads.split(",")]
        print(format_rows(compare(sides, threads, args.rounds)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
