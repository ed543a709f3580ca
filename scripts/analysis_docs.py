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

from logicars.circuit.analyze import DAMAGE_SCALE, SCALE, analyze
from logicars.viz.analysis import plot_robustness

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
python -m logicars analyze runs/cb4                      # about 10 s
python -m logicars analyze runs/cb4 runs/cba --quick     # two runs: robustness on one plot
```

Options: `--seed S` fixes every random start, async mask and reset (default 0);
`--quick` uses half the boards and 400 instead of 4000 robustness steps; `--reset
random|zeros` chooses what the robustness patch is reset to; `--only a,b` runs a subset.

## The experiments

The error of a grid is the fraction of cells whose loss channels differ from the target
(for the checkerboard: wrong cells of channel 0; the hidden channels are free).

- **generalisation**: 4 random starts on a grid 4x larger per side (64x64 for the
  16x16 checkerboard), run 4x the training steps ({scale_steps} for the checkerboard's
  {steps}). Reported: error at the end and at the training step count, boards exactly
  right, error curve.
- **fault tolerance**: 4 random starts on 64x64 with a 20x20 square in the centre dead
  (all its channels set to 0 after every step) for {damage_steps} steps (8x the training
  steps: the pattern takes longer to form on 64x64, below). Reported: error outside the
  square.
- **self-healing**: the same square dead for the first half of the {damage_steps} steps,
  then lifted. Reported: error when lifted and at the end, steps until exact again.
- **robustness**: 64x64 from random bits; first {damage_steps} asynchronous steps (fire
  rate 0.6) without resets so that the pattern forms, then 4000 asynchronous steps with a random
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
below (`ms_per_step`, wall-clock per step of 64x64 including the reset and the error,
on a busy 2-core machine: 4000 steps take a few seconds).
"""


def _fmt(v: Any) -> str:
    if isinstance(v, float):
        return f"{v:.4g}"
    return str(v)


def _one_reset(rob: dict[str, Any]) -> str:
    one = rob["single_reset"]
    if "skipped" in one:
        return one["skipped"]
    return (
        f"{one['recovered']}/{one['trials']} single resets healed, median "
        f"{one['median_steps']} steps"
    )


def _claims(
    sync: dict[str, Any], asyn: dict[str, Any] | None, zeros: dict[str, dict[str, Any]]
) -> list[str]:
    g, f, s = sync["generalisation"], sync["fault_tolerance"], sync["self_healing"]
    steps = SCALE * training_steps(sync)
    lines = [
        f"- **Exact pattern on 64x64 after {steps} steps**: "
        + ("holds" if g["final_error_fixed_phase"] == 0 else "does not hold")
        + f" ({g['boards_exact']} of {g['boards']} random starts exact; error against "
        f"`checkerboard_target` {_fmt(g['final_error_fixed_phase'])}; " + _exact_from(g) + ").",
        "- **Pattern kept around a dead 20x20 centre**: "
        + ("holds" if f["final_error_outside"] == 0 else "does not hold")
        + f" (error outside the square after {f['steps']} steps "
        f"{_fmt(f['final_error_outside'])}, {f['boards_exact_outside']} of {f['boards']} "
        "boards exact).",
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
        zs, za = zeros["sync"], zeros["async"]
        faster = (
            ra["mean_error_second_half"] < rs["mean_error_second_half"]
            and za["mean_error_second_half"] < zs["mean_error_second_half"]
        )
        lines.append(
            "- **Async-trained circuits recover faster from resets**: "
            + ("holds" if faster else "does not hold for these two runs")
            + ". Mean error over the second half of 4000 steps, resets to random bits: "
            f"async-trained {_fmt(ra['mean_error_second_half'])}, sync-trained "
            f"{_fmt(rs['mean_error_second_half'])}; resets to zeros: async-trained "
            f"{_fmt(za['mean_error_second_half'])}, sync-trained "
            f"{_fmt(zs['mean_error_second_half'])}. One reset at a time (random bits): "
            f"async-trained {_one_reset(ra)}, sync-trained {_one_reset(rs)}."
        )
    return lines


def _observations(sync: dict[str, Any], asyn: dict[str, Any] | None) -> list[str]:
    steps = training_steps(sync)
    lines = [
        "- The pattern needs time to form on the bigger grid: "
        + _exact_from(sync["generalisation"])
        + f", not at the {steps} training steps (error "
        f"{_fmt(sync['generalisation']['error_at_training_steps'])} there). This is why the "
        f"damage experiments run {DAMAGE_SCALE * steps} steps.",
        f"- Under a 10x10 reset every step neither circuit keeps the pattern: one reset takes "
        f"tens of steps to heal ({_one_reset(sync['robustness'])} for the sync-trained run), "
        "so a new reset lands long before the last one is repaired and the error settles "
        f"near {sync['robustness']['mean_error_second_half']:.2f}.",
    ]
    if asyn is not None:
        g = asyn["generalisation"]
        if g["final_error"] == 0 and g["final_error_fixed_phase"] > 0:
            lines.append(
                f"- The async-trained circuit builds a perfect checkerboard on "
                f"{g['grid'][0]}x{g['grid'][1]}, but in the other phase: error "
                f"{_fmt(g['final_error_fixed_phase'])} against `checkerboard_target`, i.e. "
                "its exact inverse. It was trained on 14x14, 7 tiles per side, where all four "
                "corners have the same colour, so nothing in training says which corner "
                "anchors the pattern; with an even number of tiles per side the two "
                "anchorings are each other's inverse. The analysis therefore scores "
                "patterns in any phase (the task's scoring rule, `logicars.tasks`)."
            )
        f = asyn["fault_tolerance"]
        if f["final_error_outside"] > 0:
            lines.append(
                f"- Around a permanently dead {f['damage'][0]}x{f['damage'][1]} square the "
                "same circuit settles, in part of the grid, into a stable state that is not "
                f"the checkerboard (see its fault-tolerance plot): the error outside stays "
                f"{_fmt(f['final_error_outside'])}. Once the damage is lifted it recovers "
                f"({asyn['self_healing']['steps_to_recover']} steps)."
            )
    return lines


def _exact_from(g: dict[str, Any]) -> str:
    """When the generalisation experiment's boards became exact for good, in words."""
    if g["exact_from_step"] is None:
        return f"not exact for good within its {g['steps']} steps"
    return f"exact from step {g['exact_from_step']} on"


def training_steps(report: dict[str, Any]) -> int:
    """The steps the run's circuit was trained for (the generalisation experiment ran
    `SCALE` times as many)."""
    return int(report["generalisation"]["steps"]) // SCALE


def _train_command(summary: dict[str, Any]) -> str:
    """The command that trains the run again, from its summary.json: its epoch budget
    and, for a run that trained past its solve, `--no-stop-on-solve` (older summaries
    lack the keys: the preset's defaults)."""
    words = ["python -m logicars train", summary["preset"], f"--seed {summary['seed']}"]
    if "target_epochs" in summary:
        words.append(f"--epochs {summary['target_epochs']}")
    if summary.get("stop_on_solve") is False:
        words.append("--no-stop-on-solve")
    return " ".join(words)


def _table(label: str, report: dict[str, Any]) -> list[str]:
    t = report["training"]
    rows = [
        f"### {label}: `{t['preset']}`, training seed {t['seed']}",
        "",
        "| experiment | number | value |",
        "|---|---|---|",
    ]
    for name, res in report["experiments"].items():
        for key, value in res.items():
            if "curve" in key or isinstance(value, dict):
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
    zeros: dict[str, dict[str, Any]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for label, run in runs:
            out = Path(tmp) / label
            reports[label] = analyze(run, out, seed=args.seed)
            for png in sorted(out.glob("*.png")):
                shutil.copy(png, IMAGES / f"{label}_{png.name}")
            reports[label]["training"] = json.loads((Path(run) / "summary.json").read_text())
            again = analyze(run, seed=args.seed, experiments=["robustness"], reset="zeros")
            zeros[label] = again["experiments"]["robustness"]
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
    steps = training_steps(sync)
    how_to = HOW_TO.format(
        steps=steps, scale_steps=SCALE * steps, damage_steps=DAMAGE_SCALE * steps
    )
    lines = [how_to, "## Results on a trained checkerboard", ""]
    for label, rep in reports.items():
        t = rep["training"]
        lines.append(
            f"- {label}: `{_train_command(t)}` "
            f"({t['epochs']} epochs, final hard loss {_fmt(t['final_hard_loss'])}, first 0 "
            f"at epoch {t['first_epoch_hard_zero']}, {t['active_gates']} active gates); "
            f"analysis seed {rep['seed']}."
        )
    lines += ["", "The paper's claims:", "", *_claims(sync, asyn, zeros), ""]
    lines += ["Other observations:", "", *_observations(sync, asyn), ""]
    lines += ["### Plots: sync-trained checkerboard", ""]
    for name in ("generalisation", "fault_tolerance", "self_healing", "robustness", "gates"):
        lines += [f"![sync {name}](img/analysis/sync_{name}.png)", ""]
    if asyn is not None:
        lines += [
            "### Plots: robustness of both runs",
            "",
            "![robustness comparison](img/analysis/robustness_comparison.png)",
            "",
            "### Plots: async-trained checkerboard",
            "",
        ]
        for name in ("generalisation", "fault_tolerance", "self_healing", "gates"):
            lines += [f"![async {name}](img/analysis/async_{name}.png)", ""]
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
