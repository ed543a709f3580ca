"""Regenerates docs/analysis.md and docs/img/analysis/ from trained checkerboard runs.

    python -m logicars train checkerboard --seed 4 --out runs/cb4
    python -m logicars train checkerboard-async --seed S --out runs/cba   # optional
    python scripts/analysis_docs.py runs/cb4 [runs/cba] [--seed 0]

Runs the full analysis (`logicars.analyze.analyze`) on each run, copies its plots into
docs/img/analysis/ (prefixed `sync_` / `async_`) and writes the page with the measured
numbers; nothing on the page is typed in by hand.
"""

from __future__ import annotations

import argparse
import json
import shutil
import tempfile
from pathlib import Path
from typing import Any

from logicars.analyze import analyze, plot_robustness

REPO = Path(__file__).resolve().parents[1]
DOCS = REPO / "docs"
IMAGES = DOCS / "img" / "analysis"

HOW_TO = """\
# The paper's analysis of a trained circuit

`python -m logicars analyze RUN [RUN2 ...]` runs the experiments of Miotti et al. 2025
(arXiv 2506.04912) on the hard logic circuit of a training run, with the bit-sliced
engine (`Model.simulate`, exact). It writes one PNG per experiment and `analysis.json`
(every number, error curves included) into the run directory, or into `--out DIR`, and
prints one line per experiment. From Python, `logicars.analyze(run_dir_or_model, ...)`
returns the same numbers as a dict (a `Model` needs `preset=`).

```bash
python -m logicars train checkerboard --seed 4 --out runs/cb4
python -m logicars analyze runs/cb4                      # about half a minute
python -m logicars analyze runs/cb4 runs/cba --quick     # two runs: robustness on one plot
```

Options: `--seed S` fixes every random start, async mask and reset (default 0);
`--quick` uses half the boards and 400 instead of 4000 robustness steps; `--reset
random|zeros` chooses what the robustness patch is reset to; `--only a,b` runs a subset.

## The experiments

The error of a grid is the fraction of cells whose loss channels differ from the target
(for the checkerboard: wrong cells of channel 0; the hidden channels are free).

- **generalisation**: 4 random starts on a grid 4x larger per side (64x64 for the
  16x16 checkerboard), run 4x the training steps (80). Reported: error at the end and
  at the training step count, boards exactly right, error curve.
- **fault tolerance**: 4 random starts on 64x64 with a 20x20 square in the centre dead
  (all its channels set to 0 after every step) for 160 steps (8x the training steps:
  on 64x64 the pattern needs about 60 steps to form). Reported: error outside the
  square.
- **self-healing**: the same square dead for the first half of the 160 steps, then
  lifted. Reported: error when lifted and at the end, steps until exact again.
- **robustness**: 64x64 from random bits; first 160 asynchronous steps (fire rate 0.6)
  without resets so that the pattern forms, then 4000 asynchronous steps with a random
  10x10 square reset to random bits (`--reset zeros`: to 0) after every step. Reported:
  the error after each CA step (before that step's reset) and its mean over the second
  half.
- **gates**: the argmax op of every gate, perception (all kernels) and update.
  Reported: counts of the 16 ops, active gates (not pass-through A or B) and the gates
  left after folding (`Model.hard_circuit_stats`).

Other presets: `gol` is checked against the exact rule (all 512 3x3 boards, then a
random 64x64 periodic grid for 64 steps, step for step); `lizard` and `colored-g` have
fixed-size targets, so generalisation runs 4x the training steps on the training grid
and self-healing kills a centre square (6x6 resp. 5x5) between 1x and 2x the training
steps, after the image has grown. The experiments that do not apply are reported as
skipped with the reason.

The robustness loop calls `simulate` one step at a time (a per-step random patch is not
a fixed damage mask); the compiled circuit is cached, and the measured cost is given
below (`ms_per_step`).
"""


def _fmt(v: Any) -> str:
    if isinstance(v, float):
        return f"{v:.4g}"
    return str(v)


def _claims(sync: dict[str, Any], asyn: dict[str, Any] | None) -> list[str]:
    g, f, s = sync["generalisation"], sync["fault_tolerance"], sync["self_healing"]
    lines = [
        "- **Exact pattern on 64x64 after 80 steps**: "
        + ("holds" if g["final_error"] == 0 else "does not hold")
        + f" ({g['boards_exact']} of {g['boards']} random starts exact, mean error "
        f"{_fmt(g['final_error'])}).",
        f"- **Pattern kept around a dead 20x20 centre**: error outside the square "
        f"{_fmt(f['final_error_outside'])} ({f['boards_exact_outside']} of {f['boards']} exact).",
        "- **Recovery after damage**: "
        + (
            f"holds: exact again {s['steps_to_recover']} steps after the damage is lifted"
            if s["recovered"]
            else f"does not hold: error {_fmt(s['final_error'])} at the end"
        )
        + f" (error {_fmt(s['error_when_lifted'])} when lifted).",
    ]
    if asyn is not None:
        rs, ra = sync["robustness"], asyn["robustness"]
        better = ra["mean_error_second_half"] < rs["mean_error_second_half"]
        lines.append(
            "- **Async-trained circuits recover faster from resets**: "
            + ("holds" if better else "does not hold here")
            + f" (mean error over the second half: async-trained "
            f"{_fmt(ra['mean_error_second_half'])}, sync-trained "
            f"{_fmt(rs['mean_error_second_half'])})."
        )
    return lines


def _table(label: str, report: dict[str, Any]) -> list[str]:
    rows = [
        f"### {label}: `{report['run']}`",
        "",
        "| experiment | number | value |",
        "|---|---|---|",
    ]
    for name, res in report["experiments"].items():
        for key, value in res.items():
            if key.endswith("curve") or isinstance(value, dict):
                continue
            rows.append(f"| {name} | {key} | {_fmt(value)} |")
    rows.append("")
    return rows


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("sync_run", help="a checkerboard run directory")
    p.add_argument("async_run", nargs="?", help="a checkerboard-async run directory")
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args()

    IMAGES.mkdir(parents=True, exist_ok=True)
    for old in IMAGES.glob("*.png"):
        old.unlink()
    runs = [("sync", args.sync_run)] + ([("async", args.async_run)] if args.async_run else [])
    reports: dict[str, dict[str, Any]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for label, run in runs:
            out = Path(tmp) / label
            reports[label] = analyze(run, out, seed=args.seed)
            for png in sorted(out.glob("*.png")):
                shutil.copy(png, IMAGES / f"{label}_{png.name}")
            summary = json.loads((Path(run) / "summary.json").read_text())
            reports[label]["training"] = summary
    if "async" in reports:
        plot_robustness(
            [
                (f"{lab}-trained", reports[lab]["experiments"]["robustness"])
                for lab in ("sync", "async")
            ],
            IMAGES / "robustness_comparison.png",
        )

    sync = reports["sync"]["experiments"]
    asyn = reports["async"]["experiments"] if "async" in reports else None
    lines = [HOW_TO, "## Results on a trained checkerboard", ""]
    for label, rep in reports.items():
        t = rep["training"]
        lines.append(
            f"- {label}: preset `{t['preset']}`, seed {t['seed']}, {t['epochs']} epochs, final "
            f"hard loss {_fmt(t['final_hard_loss'])} (first 0 at epoch "
            f"{t['first_epoch_hard_zero']}), {t['active_gates']} active gates; analysis "
            f"seed {rep['seed']}."
        )
    lines += ["", "The paper's claims:", "", *_claims(sync, asyn), ""]
    for name in ("generalisation", "fault_tolerance", "self_healing", "robustness", "gates"):
        lines.append(f"![sync {name}](img/analysis/sync_{name}.png)")
        lines.append("")
    if asyn is not None:
        lines += [
            "Robustness of both runs, on one plot:",
            "",
            "![robustness comparison](img/analysis/robustness_comparison.png)",
            "",
            "The async-trained run's own plots:",
            "",
        ]
        for name in ("generalisation", "self_healing", "gates"):
            lines.append(f"![async {name}](img/analysis/async_{name}.png)")
            lines.append("")
    lines += ["## All numbers", ""]
    for label, rep in reports.items():
        lines += _table(label, rep)
    lines.append(
        "Regenerate this page with `python scripts/analysis_docs.py SYNC_RUN [ASYNC_RUN]`."
    )
    (DOCS / "analysis.md").write_text("\n".join(lines) + "\n")
    print(f"wrote {DOCS / 'analysis.md'} and {len(list(IMAGES.glob('*.png')))} images")


if __name__ == "__main__":
    main()
