"""Write docs/results.md: every preset trained on its defaults, plus the seed sweeps.

    python scripts/make_results.py [--runs runs/results] [--sweeps DIR ...] [--train]
    python scripts/make_results.py --plot-only

For each preset it reads the run directory `<runs>/<preset>` (with `--train`, a missing
one is trained first with the preset's defaults, exactly what
`python -m logicars train <preset>` does), copies its loss plot and rollout GIF to
docs/img/results/, writes its interactive page (`python -m logicars view`) to
docs/pages/<preset>.html, and writes one table of all presets, each row linking its page,
and a section per preset. The seed sweeps (`python -m logicars sweep <preset> --seeds
... --out DIR`, scripts/seed_sweep.py runs them) become the success-rate table, its plot
and the per-seed tables. `--plot-only` redraws the plot from the table as results.md
holds it (rows measured later are added to the table by hand, with their sections).
"""

from __future__ import annotations

import argparse
import csv
import json
import platform
import re
import shutil
from datetime import date
from pathlib import Path

import numpy as np

import logicars
from logicars.evaluate import evaluate
from logicars.presets import NOTEBOOK_START, epochs_label
from logicars.runs import load_run
from logicars.viewer import page_html

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
IMAGES = DOCS / "img" / "results"
PAGES = DOCS / "pages"
# Active gates (argmax not pass-through A or B) after training, as the paper reports them.
PAPER_ACTIVE_GATES = {"gol": 336, "checkerboard": 22, "lizard": 577, "colored-g": 927}


def run_summary(runs: Path, name: str, train: bool) -> dict | None:
    run_dir = runs / name
    if not (run_dir / "summary.json").exists():
        if not train:
            return None
        logicars.train(name, out=run_dir, quiet=True)
    return json.loads((run_dir / "summary.json").read_text())


def write_page(runs: Path, name: str) -> None:
    """The run's trained circuit as an interactive page, docs/pages/<name>.html."""
    run = load_run(runs / name)
    PAGES.mkdir(parents=True, exist_ok=True)
    (PAGES / f"{name}.html").write_text(page_html(run.model, run.preset), encoding="utf-8")


def cpu_name() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def solved(s: dict) -> str:
    ev = s["hard_eval"]
    return f"{ev['solved']}/{ev['samples']}"


def main_table(summaries: dict[str, dict]) -> list[str]:
    lines = [
        "| preset | seed | epochs | first epoch with hard loss 0 | final hard loss "
        "| held-out inputs solved | wall time | active gates (paper) | see it live |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for name, s in summaries.items():
        zero = s["first_epoch_hard_zero"]
        paper = PAPER_ACTIVE_GATES.get(name)
        final = f"{s['final_hard_loss']:g}"
        last = [r for r in s.get("repairs", []) if r["epoch"] == s["epochs"]]
        if last and last[-1]["wrong_after"] < s["final_hard_loss"]:
            final += f" → {last[-1]['wrong_after']} (final repair)"
        lines.append(
            f"| `{name}` | {NOTEBOOK_START if s.get('init') else s['seed']} | {s['epochs']} "
            f"| {'never' if zero is None else zero} "
            f"| {final} | {solved(s)} | {s['wall_seconds']:.0f} s "
            f"| {s['active_gates']} ({'–' if paper is None else paper}) "
            f"| [page](pages/{name}.html) |"
        )
    return lines


def lowest_hard_loss(metrics: Path) -> tuple[float, int]:
    """The lowest hard loss of a run and the first epoch it was reached."""
    with open(metrics, newline="") as f:
        rows = [(float(r["hard_loss"]), int(r["epoch"])) for r in csv.DictReader(f)]
    return min(rows)


def training(s: dict) -> str:
    """How a run trained: its relaxation, and whether it binarized the states."""
    label = logicars.Relaxation(**s["relax"]).label()
    if not s["config"].get("binarize_states"):
        return label
    every = s["config"].get("binarize_every", 1)
    return f"{label} + binarized states" + ("" if every == 1 else f" every {every} epochs")


def seed_runs(sweeps: list[Path]) -> dict[tuple[str, str], list[dict]]:
    """Per preset and training method, the finished runs of the sweep directories (their
    `*/summary.json`) by seed, in seed order; a seed's run in a later directory replaces
    an earlier one (e.g. a sweep that re-ran with restarts the seeds whose first attempt
    failed)."""
    found: dict[tuple[str, str, int], dict] = {}
    for d in sweeps:
        for path in sorted(d.glob("*/summary.json")):
            s = json.loads(path.read_text())
            if s.get("interrupted") or (s["epochs"] < s["target_epochs"] and not s["solved_epoch"]):
                continue  # unfinished
            s["run_dir"] = path.parent
            found[(s["preset"], training(s), s["seed"])] = s
    groups: dict[tuple[str, str], list[dict]] = {}
    order = {name: i for i, name in enumerate(logicars.PRESETS)}
    for (preset, method, _), s in sorted(found.items(), key=lambda kv: (order[kv[0][0]], kv[0])):
        groups.setdefault((preset, method), []).append(s)
    return groups


def held_out_ok(s: dict) -> bool:
    return s["hard_eval"]["solved"] == s["hard_eval"]["samples"]


# A stricter held-out check than the summary's 16 starts: WIDE_SAMPLES more fresh inputs
# (the same 512 boards for gol, the one start for the growth presets), another seed.
WIDE_SAMPLES = 1024
WIDE_SEED = 12345


def wide_ok(s: dict) -> bool:
    model = logicars.Model.load(s["run_dir"] / "model.safetensors")
    preset = logicars.get_preset(s["preset"])
    check = evaluate(model, preset, samples=WIDE_SAMPLES, seed=WIDE_SEED)
    return check["solved"] == check["samples"]


def first_attempt_ok(s: dict) -> bool:
    """Solved by the first wiring within the notebook's epochs."""
    paper = logicars.get_preset(s["preset"]).paper_epochs()
    solved_at = s["solved_epoch"]
    return held_out_ok(s) and not s.get("restarts") and solved_at is not None and solved_at <= paper


def quantiles(values: list[float]) -> str:
    if not values:
        return "–"
    return f"{np.median(values):.0f} / {np.percentile(values, 90):.0f}"


def budget(s: dict) -> str:
    """A run's epochs as its preset gave them: with its attempt length or stall check (the
    epochs a stall added taken off)."""
    stall = s.get("stall_epochs")
    epochs = s["target_epochs"] - (stall or 0) * s.get("stalls", 0)
    return epochs_label(epochs, s.get("restart_every"), stall, s.get("stall_loss"))


def solving_table(runs: dict[tuple[str, str], list[dict]]) -> list[str]:
    lines = [
        "| preset | training | seeds | epochs (attempt) | solved | passed its own validation check "
        f"| solved {WIDE_SAMPLES} more inputs | solved by the first wiring in the "
        "notebook's epochs | epochs to solve (median / p90) | seconds to solve (median / "
        "p90) | attempts (max) | final hard − soft loss (median) | active gates (median) |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for (name, method), rs in runs.items():
        ok = [s for s in rs if held_out_ok(s)]
        first = [s for s in rs if first_attempt_ok(s)]
        paper = logicars.get_preset(name).paper_epochs()
        at = [s for s in ok if s["solved_epoch"] is not None]
        validated = [s for s in rs if s["solved_epoch"] is not None]
        budgets = sorted({budget(s) for s in rs})
        gap = [s["final_hard_loss"] - s["final_soft_loss"] for s in rs]
        lines.append(
            f"| `{name}` | {method} | {len(rs)} | {', '.join(budgets)} "
            f"| **{len(ok)} ({100 * len(ok) / len(rs):.0f}%)** "
            f"| {len(validated)} "
            f"| {sum(map(wide_ok, rs))} "
            f"| {len(first)} ({100 * len(first) / len(rs):.0f}%, ≤ {paper}) "
            f"| {quantiles([s['solved_epoch'] for s in at])} "
            f"| {quantiles([s['solved_seconds'] for s in at])} "
            f"| {1 + max(len(s.get('restarts', [])) for s in rs)} "
            f"| {np.median(gap):.3g} | {np.median([s['active_gates'] for s in rs]):.0f} |"
        )
    return lines


def solving_plot(table: list[str]) -> None:
    """solve-rate.png from the solving table's markdown rows (`solving_table`, or the
    table in docs/results.md with the rows added to it by hand): per row, the seeds
    solved and those solved by the first wiring in the notebook's epochs."""
    import textwrap

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = [[c.strip() for c in line.strip().strip("|").split("|")] for line in table[2:]]
    labels = [
        textwrap.fill(f"{r[0].strip('`')}, {r[2]} seeds: {r[1]}; epochs {r[3]}", 52) for r in rows
    ]

    def percent(cell: str) -> float:
        return float(re.search(r"\((\d+)%", cell).group(1))  # type: ignore[union-attr]

    series = [
        ("solved (repair, restarts, search)", [percent(r[4]) for r in rows]),
        ("first wiring, notebook's epochs", [percent(r[7]) for r in rows]),
    ]
    fig, ax = plt.subplots(figsize=(9.5, 0.62 * len(rows) + 1.2))
    for i, (label, values) in enumerate(series):
        ys = [j + (i - 0.5) * 0.38 for j in range(len(rows))]
        bars = ax.barh(ys, values, 0.38, label=label)
        ax.bar_label(bars, fmt="%.0f", fontsize=7, padding=2)
    ax.set_yticks(range(len(rows)), labels, fontsize=7)
    ax.invert_yaxis()
    ax.set_xlabel("seeds solved (%)")
    ax.set_xlim(0, 110)
    ax.legend(fontsize=7, loc="lower right")
    ax.set_title("Held-out check solved over seeds, per preset and training rule")
    fig.tight_layout()
    fig.savefig(IMAGES / "solve-rate.png", dpi=110, bbox_inches="tight")
    plt.close(fig)


def table_in_results() -> list[str]:
    """The solving table as docs/results.md has it (header, separator, rows)."""
    lines = (DOCS / "results.md").read_text().splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("| preset | training |"))
    end = next(i for i in range(start, len(lines)) if not lines[i].startswith("|"))
    return lines[start:end]


def seed_table(rows: list[dict]) -> list[str]:
    lines = [
        "| seed | attempts | epoch solved | repairs (gates changed) | final soft loss "
        "| lowest hard loss (epoch) | held-out inputs solved | active gates |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for s in rows:
        low, at = lowest_hard_loss(s["run_dir"] / "metrics.csv")
        repairs = s.get("repairs", [])
        # A greedy repair lists its changes, a drift search counts them (thousands).
        changed = sum(c if isinstance(c := r["changes"], int) else len(c) for r in repairs)
        lines.append(
            f"| {s['seed']} | {1 + len(s.get('restarts', []))} "
            f"| {s['solved_epoch'] or 'never'} | {len(repairs)} ({changed}) "
            f"| {s['final_soft_loss']:.3g} | {low:g} ({at}) | {solved(s)} "
            f"| {s['active_gates']} |"
        )
    return lines


# The growth presets' discretization gap: what closed it for colored-G, what was tried
# before (2026-11-24 to -26, this machine; probes on colored-G runs of the softmax sweep,
# not part of the generated tables).
GROWTH_GAP = [
    "## Growth presets: binarized states close the gap",
    "",
    "With the notebook's softmax, most `lizard` and `colored-g` wiring draws do not solve "
    "their task: `colored-g` solves none of seeds 0–9 (the softmax rows above; 2–61 wrong "
    "cells after the final repair), and `lizard` solved none of seeds 0–5 in a sweep of "
    "2026-11-25 on the same training code (3500 epochs, 2–90 wrong cells; its directory "
    "was lost with that session's machine). The relaxed circuit does solve: colored-G's "
    "soft loss falls to 1e-3 and below while the hard circuit keeps wrong cells.",
    "",
    "**Binarized states** (`binarize_states`, `train --binarize-states`, 2026-11-26): the "
    "training rollout rounds every state but the last to 0 or 1 and back-propagates "
    "through the rounding unchanged (straight-through). The relaxed circuit can then no "
    "longer carry information from step to step in fractional cell values, which its hard "
    "circuit does not have. On `colored-g` the first wiring solves in the notebook's 3000 "
    "epochs from many more seeds (the column *solved by the first wiring* above; softmax: "
    "0 of 10), and with attempts of 3000 epochs up to 9000 (the preset's default now) "
    "from the seeds of the row above. On the `lizard` it fails: seed 0 trained "
    "with binarized states falls to the all-dead grid (soft loss 84 = the target's 84 "
    "cells, hard loss 86 after 3500 epochs), and switching the rounding on after 1000 "
    "softmax epochs collapses the run the same way (hard loss 24 at epoch 1030, then "
    "stuck at the dead grid): a lizard grows from one seed cell, and rounded states kill "
    "the seed before the circuit learns to keep it. Gentler versions did not solve seed 0 "
    "either (3500 epochs each, hard loss at the end and lowest): rounding from the start "
    "at learning rate 0.02, 82 (75); the state mixed from relaxed to rounded over the "
    "first 2000 epochs (`x + λ(round(x) − x)`, λ from 0 to 1; a probe build, not in the "
    "package), 124 (21) at the preset's 0.06 and 76 (24) at 0.02; softmax alone ends seed 0 at 11 "
    "wrong cells (lowest 11).",
    "",
    "**The lizard** (2026-11-26; this engine's wiring draws, one thread each). Its softmax "
    "failure is first one of the relaxed circuit: seed 0's soft loss stalls at 7.5 (hard "
    'loss 11) after 3500 epochs. The **truth-table** relaxation (`relax = "truth-table"`, '
    "one sigmoid per truth-table row) learns the relaxed lizard (seed 0: soft loss 1.8 at "
    "epoch 1500 and 0.01 at 3500; seed 1: 0.15 at 1500), but its hard circuits keep 14–60 "
    "wrong cells: the gap again (rounding the states of seed 0's converged circuit gives "
    "its hard loss, 14). With restarts (attempts of 2000 epochs up to 8000) only seed 1 of "
    "seeds 0–2 solved (epoch 1854; seeds 0 and 2 spent 4 attempts each: 1 of 9 attempts), "
    "and rounding in every epoch with the truth-table learns slowly (seed 0: binarized "
    "loss 34–50 and hard loss 68–122 from epoch 2000 to 5000). **Rounding every second "
    "epoch** (`binarize_every = 2`: the relaxed epochs keep the growth learning, the "
    "rounded ones close the gap) solved seed 0: the rounded epochs' loss fell to 0.004 by "
    "epoch 5400, the hard loss to 2 (epoch 5492) and 8 at epoch 6000, and the final repair "
    "changed 5 gates to 0 wrong cells. That is the lizard's default now (truth-table, "
    "`binarize_states` with `binarize_every = 2`, 6000 epochs, seed 0, no shipped wiring), "
    "but it is one seed: of seeds 0–19 only seed 0 solves (the rows above), 1 of 20, far "
    "from the issue's 50%; the other seeds end with 12–280 wrong cells. The lizard stays "
    "open.",
    "",
    "What else was tried on the lizard, seed 0, with the truth-table relaxation unless "
    "said (probe builds switched by environment variables, not in the package; fine-tunes "
    "start from the converged 3500-epoch circuit with a fresh optimizer), none of which "
    "closed the gap:",
    "",
    "- **Stochastic rounding** (a state becomes 1 with probability its value, keyed by "
    "step and cell): from the start the all-dead grid; as a fine-tune of the converged "
    "circuit the hard loss stays 14 (lr 0.003) or collapses (lr 0.01).",
    "- **A penalty** `μ·Σ x(1 − x)` on every state but the last: from the start μ = 0.01 "
    "stalls at soft loss 29 and μ = 0.001 at 17 (1600 epochs); as a fine-tune (μ = 0.01) "
    "the states turn binary (values in (0.1, 0.9): 5% → under 1%) but the hard loss stays "
    "15 (3 after the final repair).",
    "- **A sigmoid temperature** annealed to 0.1 over 800 epochs as a fine-tune: soft loss "
    "0.008 and hard loss 18 throughout; the optimizer scales the weights down with the "
    "temperature.",
    "- **Logistic noise on the truth-table rows** (binary-concrete style) as a fine-tune: "
    "hard loss 14 unchanged. Softmax with `gumbel-soft` noise from the start: the all-dead "
    "grid.",
    "- **Rounding every epoch** as a fine-tune: collapses (hard loss 120 after 600 epochs).",
    "- **Repair with 20,000 candidate runs**: seed 0 after 2000 epochs 52 → 8 wrong cells, "
    "seed 3 37 → 13.",
    "",
    "What was tried next on the default's failing seeds 1 and 2 (later on 2026-11-26; "
    "6000 epochs each, probe builds as above; the default's lowest hard loss on them is 41 "
    "and 33, its last 77 and 65), lowest hard loss (last) per seed, none of which solved "
    "a seed the default does not:",
    "",
    "- **Hard gates in the rounded epochs** (the rounded epochs forward the thresholded "
    "truth tables, as `truth-table-st`, so their forward is the hard circuit itself, and "
    "back-propagate through the sigmoids): from the start, both seeds fall to the "
    "all-dead grid (89 and 118, stopped after 4700 epochs); from epoch 3000 in every "
    "fourth epoch, seed 2 20 (32); the same with weight decay 0, 41 (55) and 25 (36); "
    "from epoch 3000 in every rounded epoch, seed 2 39 (53); from epoch 1500 in every "
    "fourth, seed 2 collapses to the dead grid (49 before, 120 at the end).",
    "- **No weight decay** (AdamW's decoupled 1e-2 pulls a truth-table row towards σ = ½; "
    "`train(weight_decay=0)`, `--weight-decay 0`): 23 (32) and 21 (40) in 6000 epochs, "
    "trained on to 12000 epochs 5 (26) and 10 (33), the closest these seeds came, but no "
    "solve; seed 0, which the default solves, does worse without it (lowest 41 in 6000 "
    "epochs and 22 in 12000, against the default's 2), so it is not the default. "
    "**Growing weights** "
    "(decay −0.003): 47 (70) and 67 (92).",
    "- **A repair at every new low** of an attempt's hard loss at or below 10 wrong cells "
    "(its changes kept only if it solves; 2000 candidate runs each): seeds 1 and 2 without "
    "weight decay, 12000 epochs: seed 1's repairs at 10, 8, 7, 7 and 5 wrong cells end at "
    "8, 7, 7, 5 and 5, seed 2's at 11 ends at 4; on the default with the threshold at 20, seed 5 "
    "(lows 27, 19, 16: 12–13 after each repair) and seed 13 (25 → 17) do not solve "
    "either, and 10,000 candidate runs take seed 2's final circuit from 3 wrong cells to "
    "2; trying every pair of its 120 least confident changes also gets 2 at best. Repair "
    "stops a few cells short of these circuits.",
    "- **The learning rate cosine-decayed** to 5% of 0.06 over the run: 26 (120: seed 1 "
    "falls to the dead grid at epoch 3000) and 49 (64).",
    "- **The truth-table rows initialized at ±3** instead of ±10 (the residual shift of the "
    "truth-table paper's code): seed 1 the dead grid from the start (120), seed 2 52 (120).",
    "- **Relaxed first, rounded later** (the truth-table alone for 2000 epochs, then the "
    "alternation): switching the rounding on throws the run back to the dead grid (loss "
    "80–84 right after the switch): seed 2 47 (88), seed 3 22 (all in the relaxed phase; "
    "108 after the switch); seed 1 solves at epoch 1854, still relaxed, as its truth-table "
    "run does.",
    "- **Softmax with the alternation**: seed 1 68 (83).",
    "- **The target's live cells weighted 3.76×** in the soft loss (the all-dead grid then "
    "costs as much as the all-live one): 63 and 52 by epoch 3500 (stopped there), against "
    "the default's 41 and 44 by the same epoch.",
    "",
    "Tried on 2026-11-27 on the same seeds (probe builds; from epoch 3000 means a copy of "
    "the default's run at epoch 3000 resumed with the change, so the first 3000 epochs are "
    "the default's), lowest hard loss after epoch 3000 (last), against the default's 41 "
    "(77) and 33 (65):",
    "",
    "- **Stochastic truth-table rows in the rounded epochs** (each row sampled as "
    "`w + s·L > 0`, `L` logistic noise per gate, row and optimizer step from the "
    "counter-based stream, straight-through through the sigmoids; the `gumbel-st` idea "
    "for truth tables): s = 1 from the start, both seeds the all-dead grid by epoch 250 "
    "(stopped at 2500); s = 1 from epoch 3000, 64 and 60 (120: the dead grid); s = 0.5 "
    "from epoch 3000, 47 (57) and 48 (58).",
    "- **A saturation penalty** `μ·Σ y(1 − y)` over every gate output of the rounded "
    "epochs' rollout (its gradient `μ(1 − 2y)` added in the backward kernel), from epoch "
    "3000: μ = 1e-5, 35 (55) and 41 (62); μ = 1e-4, 46 (63) and 29 (29), the gap of "
    "seed 2's last circuit halved but no solve; μ = 1e-3 ends both at 86 (stopped at 4500).",
    "- **Learning rate 0.03** from the start: 76 and 85 after epoch 3000 (stopped at 4500), "
    "slower than the default throughout.",
    "- **A ratchet**: every 200 epochs without a new lowest hard loss, the parameters go "
    "back to the lowest's (the optimizer's moments go on): 39 (45) and 39 (67), 13 "
    "returns on seed 1; the excursions from the best circuit do not go lower.",
    "",
    "**A drift search after training** (2026-11-27; `logicars.repair(model, preset, "
    'method="drift")`, `python -m logicars repair RUN`). The greedy repair keeps only '
    "changes that lower the wrong cells and stops a few cells short of these circuits; "
    "the drift search flips one truth-table row of one gate at a time and keeps every "
    "flip that does not add wrong cells, so it walks across the plateaus where greedy "
    "stops (a probe of it in Python took seed 2's final circuit from 65 wrong cells to 4 "
    "in 150,000 candidate runs). Run in the engine on the default's final circuits of "
    "seeds 0–19 (the sweep above: after training and its final greedy repair), one "
    "engine thread each, wrong cells before → after 40,000 candidate runs (random "
    "flips, about 3 minutes a seed with two searches side by side), for four seeds → "
    "after 120,000, and for four others → after 150,000 in passes over every flip (each "
    "pass tries every gate's every row once, in a random order; the search's final "
    "form, 6–8 minutes a seed):",
    "",
    "| seed | 0 | 1 | 2 | 3 | 4 | 5 | 6 | 7 | 8 | 9 | 10 | 11 | 12 | 13 | 14 | 15 | 16 | 17 "
    "| 18 | 19 |",
    "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    "| trained | 0 | 77 | 65 | 85 | 106 | 12 | 67 | 119 | 54 | 120 | 118 | 98 | 29 | 18 | "
    "280 | 50 | 69 | 92 | 96 | 171 |",
    "| 40,000 runs | 0 | 16 | 8 | 40 | 9 | 6 | 19 | 54 | 4 | 45 | 34 | 26 | 17 | 14 | 120 "
    "| 7 | 27 | 27 | 33 | 56 |",
    "| 120,000 runs | 0 | | 1 | | | 4 | | | 1 | | | | | 13 | | | | | | |",
    "| 150,000 in passes | 0 | 13 | | | 3 | 2 | | | | | | | | | | 2 | | | | |",
    "",
    "Every seed loses most of its wrong cells. Seeds 2 and 8 end one cell short after "
    "120,000 runs, and 60,000 more in passes (seed 1) leave both at 1; a further search "
    "with seed 2 (`repair(..., seed=2)`: other pass orders) **solves both**, seed 2's "
    "circuit after 5,812 more runs and seed 8's after 2,928 (the held-out check and "
    "the wide one pass; 3190 and 3664 active gates). So the default's training "
    "followed by about 190,000 drift runs (about 10 minutes a seed) solves 3 of these 20 "
    "seeds (0, 2, 8) where training alone solves 1; the equal-count moves of one seed's "
    "order had not found the way that another's did. The same 60,000 runs with seed 2 "
    "take seed 15 from 2 wrong cells to 1 and leave seed 5 at 2. The passes go further "
    "than random flips "
    "for the same budget (seed 4: 9 wrong cells after 40,000 random flips, 3 after "
    "150,000 in passes; seed 5: 4 after 120,000 random, 2 after 150,000 in passes).",
    "",
    "**The drift search as part of training** (2026-11-27, later: `train(drift_budget=N)`, "
    "`--drift-budget N`, `drift_budget` in an experiment file; a run that ends its epochs "
    "unsolved searches its final circuit on the validation inputs). Measured as a run "
    "would do it: each default's final circuit searched in passes with the validation "
    "seed (1), 200,000 candidates (seeds 1, 4, 5 and 15 go on from their 150,000 above: "
    "the same search), wrong cells before → after:",
    "",
    "| seed | 0 | 1 | 2 | 3 | 4 | 5 | 6 | 7 | 8 | 9 | 10 | "
    "11 | 12 | 13 | 14 | 15 | 16 | 17 | 18 | 19 |",
    "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    "| trained | 0 | 77 | 65 | 85 | 106 | 12 | 67 | 119 | 54 | 120 | "
    "118 | 98 | 29 | 18 | 280 | 50 | 69 | 92 | 96 | 171 |",
    "| 200,000 | 0 | 13 | 7 | 25 | 2 | 2 | 4 | 38 | 4 | 39 | "
    "31 | 18 | 15 | 12 | 63 | 2 | 17 | 18 | 27 | 35 |",
    "",
    "None of the 19 solves; they end 2–63 cells short. Most drop fast for their first "
    "60,000–90,000 candidates and then stay on a plateau (seed 2: 20, 15, 12, 12, 10, 8 "
    "after 10,000 to 60,000 candidates, 7 from 90,000 to 200,000; seed 8: 12, 10, 8, 6 "
    "after 10,000 to 40,000, 4 from 80,000 on; seed 12: 15 from 70,000 on); a few still "
    "creep down at the end (seed 6: 14 at 60,000, 11 at 140,000, 4 at 200,000). So "
    "training with the search solves the same 1 of 20 seeds as training alone, and by the"
    " issue's rule (ties: the faster) the 6000-epoch preset kept `drift_budget` at 0 (after "
    "12,000 epochs the search does solve, below). The earlier solves of "
    "seeds 2 and 8 came from another search (random flips to 120,000, then other orders) "
    "that happened to reach 1 wrong cell. Probes on the plateau, 100,000 candidates on "
    "from the 200,000-candidate "
    "circuits (a probe build; seed: wrong cells after):",
    "",
    "- **The same search continued** (the control): seed 2 7 → 4, seed 8 stays at 4.",
    "- **Simulated annealing at a fixed temperature T** (a flip that adds d wrong cells "
    "kept with probability e^(−d/T), the best circuit returned): T = 0.3 and 0.6 walk "
    "away from the plateau (their last circuits at 12 and 40 wrong cells on seed 5, "
    "whose best stays 2); T = 0.12: seed 5 2, seed 8 4, seed 2 4; T = 0.18: seed 5 2, "
    "seed 8 3, seed 2 4. No better than the control but for one cell of seed 8.",
    "- **Other pass orders** from the trained circuit (search seeds 2 and 3, 60,000 "
    "candidates, against seed 1's): seed 2 9 and 9 (seed 1's 8), seed 8 10 and 6 (5). "
    "The orders differ by a few cells and seed 1's was the best of the three on both, so "
    "restarting with other orders is no shortcut either.",
    "- **Rewiring moves** (half of the moves replace one update gate's input by an input "
    "of another gate of its layer, kept when the wrong cells do not grow; the circuit's "
    "wires then differ from the model's, so a probe only): seed 2 stays at 7, seed 8 at "
    "4, seed 15 at 2; seeds 5 and 4 go from 2 to 1, seed 6 from 4 to 3. The flips-only "
    "search continued over the same 100,000 candidates: seed 2 to 4, seed 8 4, seed 4 1, "
    "seed 6 1 (seed 5: 2 in the annealing probes at low temperature). Not better.",
    "- **A longer search**: seeds 4 and 6, at 1 wrong cell after 300,000 candidates, are "
    "still at 1 after 500,000, and 60,000 more with search seed 2 (the move that solved "
    "seeds 2 and 8 from one cell short before) leave both at 1.",
    "",
    "**More epochs, the lowest circuit and the search** (2026-11-27, later). Late in a "
    "default run the hard loss swings by tens of cells from one epoch to the next while "
    "the rounded epochs' soft loss stays near 1 (seed 5, epochs 10,500–10,750: a median "
    "of 13 wrong cells, lowest 3, and 34 at epoch 12,000), so the last circuit is a poor "
    "one to end with. The runs of seeds 1–19 were continued from their 6000-epoch "
    "checkpoints to 12,000 epochs at the same learning rate (each with its 6000-epoch "
    "final repair, a few gates, in it), a callback keeping the parameters of each run's "
    "lowest hard loss after epoch 6000 (not yet for seeds 2 and 5); then each run was ended as "
    "`train(drift_budget=N)` now ends an unsolved run: the better on the validation check "
    "of its last circuit (after the final greedy repair) and its lowest (greedy-repaired "
    "when kept), then a drift search of 100,000 candidates (seed 15: 200,000). Seed 0 "
    "ran straight with `epochs=12000, drift_budget=100000` (the new default): its hard "
    "circuit reached 0 wrong cells in training at epoch 7627 (1344 s, the main table's row, "
    "sharing the 2 cores with three other runs). Wrong cells:",
    "",
    "| seed | 0 | 1 | 2 | 3 | 4 | 5 | 6 | 7 | 8 | 9 | 10 | 11 | 12 | 13 | 14 | 15 | 16"
    " | 17 | 18 | 19 |",
    "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    "| 6000 epochs: lowest (last) | 2 (8) | 41 (77) | 33 (65) | 58 (105) | 28 (103)"
    " | 16 (24) | 29 (68) | 47 (119) | 33 (54) | 67 (120) | 48 (115) | 37 (97) | 28 (29)"
    " | 18 (29) | 55 (280) | 21 (50) | 52 (69) | 61 (93) | 17 (120) | 52 (171) |",
    "| epochs 6001–12000: lowest | 0 (epoch 7627) | 37 | 29 | 59 | 30 | 3 | 41 | 73 | 23"
    " | 120 | 40 | 39 | 9 | 18 | 120 | 18 | 45 | 62 | 50 | 49 |",
    "| 12000: last, after the final repair |  | 137 | 41 | 86 | 69 | 4 | 94 | 120 | 55"
    " | 120 | 66 | 71 | 9 | 44 | 120 | 15 | 99 | 94 | 73 | 307 |",
    "| kept: the better (a lowest after its greedy repair) |  | lowest 28 | last 41*"
    " | lowest 56 | lowest 25 | last 4* | lowest 30 | lowest 67 | lowest 10 | last 120"
    " | lowest 38 | lowest 29 | last 9 | lowest 18 | last 120 | last 15 | lowest 37"
    " | lowest 31 | lowest 45 | lowest 49 |",
    "| after the drift search | **solved in training** | 6 | 1 | 23 | 1 | **0** | 3 | 41"
    " | 2 | 52 | 20 | 10 | 9 | 14 | 82 | 1 (200,000) | 12 | 12 | 23 | 32 |",
    "",
    "Two of the 20 seeds solve, 0 in training and 5 in the search, where 6000 epochs "
    "solve 1 (with or without a 200,000-candidate search, above); three more end one "
    "wrong cell short (2, 4, 15), seed 8 two and seed 6 three, the rest 6–82. Seeds 9 and "
    "14 fell to the all-dead grid after epoch 6000 (120 wrong cells). Of the 17 runs "
    "whose lowest parameters were recorded, 13 ended with them (they scored better than "
    "the last). *Seeds 2 and 5 ran before the callback, so their lowest circuits (29 and "
    "3 wrong cells) were not kept; their last ones after the final repair had 41 and 4. "
    "The lizard "
    "preset now trains 12,000 epochs with `drift_budget = 100000` (the search takes 2–3 "
    "minutes on one core): of what was measured it solves most often, the issue's rule, "
    "at twice the epochs. Its seeds 1 and 2 still do not solve (6 and 1 wrong cells), "
    "and 2 of 20 is far from the issue's 50%: the lizard stays open.",
    "",
    "Probes on the same runs that did not help:",
    "",
    "- **The learning rate halved every 1000 epochs** after epoch 6000 (0.03, 0.015, "
    "0.0075 to epoch 9000, by resuming with a new `lr`): seed 5 lowest 12, 17, 13 per "
    "1000 epochs (last 29), seed 2 46, 45, 47 (57), seed 13 18 in the first 1000 "
    "(stopped there). The rounded epochs' soft loss falls (seed 2: median 0.44 at lr "
    "0.0075) while the hard loss stays at 50–58: the gap is not an effect of the step "
    "size.",
    "- **Training and the search in turns** (the 6000-epoch circuit searched for 40,000 "
    "candidates, its changed truth-table rows written back with their signs flipped, then "
    "300 epochs of training with the optimizer's moments kept): seed 5 went 12 → 3 wrong "
    "cells in the search, and the training that followed threw it to the all-dead grid "
    "(soft loss 110 → 84, hard loss 277): the search's 3239 flipped rows are far from "
    "what the relaxed circuit needs.",
    "- **Where the gap is**, measured on the 6000-epoch circuits of seeds 0 (solved), 2 "
    "and 5 with the relaxed circuit's rollout rounded between steps as the teacher: the "
    "hard circuit applied to the teacher's state at each step differs from the teacher's "
    "next state in 456–3,228 of the 51,200 cell bits (all 128 channels), on all three "
    "(19,054, 14,813 and 15,228 over the 12 steps), and 3,900–12,900 of the relaxed "
    "outputs per step lie between 0.1 and 0.9; on channel 0 only 0–5 bits per step "
    "differ. The solved circuit's hidden channels disagree with its relaxed twin as much "
    "as the failing ones': what fails is how the disagreement reaches channel 0 in the "
    "free-running rollout (seed 2: 456 bits apart after step 1, 4,989 after step 12; "
    "seed 0: 2,021 and 2,725).",
    "",
    "**Hard gates among the relaxed ones** (2026-11-27, later, a 2-vCPU AMD EPYC with "
    "AVX-512; `truth-table` with "
    "`hard_fraction`, `--hard-fraction Q`). A relaxed circuit only learns to tolerate"
    " what its training forward contains, and the gap above is in how the hard "
    "circuit's disagreements with its relaxed twin reach channel 0. With "
    "`hard_fraction = q`, a share q of the gates, drawn afresh per gate and optimizer"
    " step from a counter-based stream, forwards its thresholded truth table in the "
    "rounded epochs (straight-through as `truth-table-st`: the gradient goes through "
    "the sigmoids), after `warmup` epochs of the plain truth-table; the relaxed "
    "circuit then has to work beside hard gates. Probes of 6000 epochs on the "
    "default's seeds (a probe build switching the same hard gates by environment "
    "variables), lowest hard loss (last):",
    "",
    "| seed | 1 | 2 | 3 | 4 | 5 | 8 |",
    "|---|---|---|---|---|---|---|",
    "| without hard gates (the default's) | 41 (77) | 33 (65) | 58 (105) | 28 (103) |"
    " 16 (24) | 33 (54) |",
    "| q = 0.3 from epoch 3000 | 34 (47) | 16 (37) | 43 (71) | 27 (61) | 16 (20) | 17 (24) |",
    "| q = 0.5 from epoch 3000 | 42 (103) | 14 (20) | | | | |",
    "| q = 0.1 from the start | 36 (74) | 56 (120) | | | | |",
    "| bit flips, p = 0.2% from the start | 43 (90) | 12 (24) | 53 (89) | 47 (70) | | |",
    "| bit flips, p = 1% from the start | 120 (120) | 78 (84) | | | | |",
    "| bit flips, p = 1% from epoch 3000 | 47 (89) | 47 (84) | | | | |",
    "",
    "*Bit flips*: each hidden-channel bit of the rounded states flipped with "
    "probability p (keyed by step, cell and channel), so that the circuit learns to "
    "absorb wrong hidden bits; mixed, not pursued. q = 0.3 from epoch 3000 was the "
    "only change that lowered the last circuit of every probed seed and raised no "
    "seed's lowest.",
    "",
    "Swept at 12,000 epochs with the preset's search (`drift_budget = 100000`), q = "
    "0.3 from epoch 3000 (`--hard-fraction 0.3 --warmup 3000`), seeds 0–19 (the probe"
    " build; its seed 1 was checked bit-identical to the package's option over its "
    "first 3300 epochs): **6 of 20 solve** (2, 4, 5, 6, 15, 18; seed 18 in training "
    "at epoch 7464), against 2 of 20 without the hard gates (the table above); seeds "
    "8 and 14 end one cell short. Most seeds reach their lowest hard loss after epoch"
    " 7000. Seed 17 **diverged**: at epoch 8848 its training forward overflowed to "
    "NaN and the run stopped with a `FloatingPointError` (its lowest before, 26 wrong"
    " cells at epoch 8310; below).",
    "",
    "| seed | 0 | 1 | 2 | 3 | 4 | 5 | 6 | 7 | 8 | 9 | 10 | 11 | 12 | 13 | 14 | 15 | "
    "16 | 17 | 18 | 19 |",
    "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    "| lowest hard loss in training (epoch) | 9 (3343) | 22 (9131) | 4 (11899) | 5 "
    "(11768) | 7 (10636) | 8 (7504) | 15 (10476) | 50 (3063) | 8 (9610) | 67 (1955) |"
    " 59 (3564) | 24 (5982) | 32 (7583) | 9 (11947) | 1 (10342) | 11 (11753) | 42 "
    "(10701) | 26 (8310) | 0 (7464) | 52 (2210) |",
    "| wrong cells after the final repair and search | 3 | 6 | **0** | 5 | **0** | "
    "**0** | **0** | 26 | 1 | 38 | 35 | 9 | 21 | 2 | 1 | **0** | 15 | diverged (epoch"
    " 8848) | **0** | 17 |",
    "",
    "Seed 0, which the plain truth-table solves at epoch 7627, ends 3 cells short "
    "(its lowest, 9, came before the hard gates started). With the plain truth-table "
    "for the first 8000 epochs and the hard gates from epoch 8000 to 16,000 "
    "(`--hard-fraction 0.3 --warmup 8000 --epochs 16000`: the runs are the default's "
    "until epoch 8000, so seed 0 solves as before, checked: epoch 7627, 3189 active "
    "gates), seeds 1–8:",
    "",
    "| seed | 0 | 1 | 2 | 3 | 4 | 5 | 6 | 7 | 8 |",
    "|---|---|---|---|---|---|---|---|---|---|",
    "| lowest hard loss in training (epoch) | 0 (7627) | 21 (14213) | 8 (15966) | 58 "
    "(3982) | 11 (13723) | 10 (10514) | 19 (12174) | 47 (4345) | 16 (8775) |",
    "| wrong cells after the final repair and search | **0** (in training) | 4 | "
    "**0** | 21 | **0** | **0** | 1 | 28 | diverged (epoch 9784) |",
    "",
    "4 of these 9 seeds solve (0, 2, 4, 5) where the default solves 2 (0, and 5 by "
    "its search); seed 8 diverged the same way (seeds 9 and 10 were stopped "
    "unfinished).",
    "",
    "**The overflow, and the clamp that ends it.** The divergence was the relaxed "
    "forward's, not the hard gates': at seed 17's epoch 8847 (a relaxed epoch: no "
    "rounding, no hard gates) the rollout's states left [0, 1] by 5e-8 after one "
    "step, and the excursion grew about 8× a step (−0.27 after step 9, −3.8 after 10,"
    " −1.6e8 after 11, ±inf after 12). In exact arithmetic a gate's output stays in "
    "[0, 1], but the kernels evaluate a gate as c0 + c1·a + c2·b + c3·ab, which "
    "cancels in f32 near the ends of the range; this circuit's gates are saturated "
    "(truth-table rows at σ(±32)), and an XOR-like gate doubles an excursion (a + b −"
    " 2ab at a = b = 1 + ε is −2ε), so the rounding compounded through 13 layers and "
    "11 unrounded steps; the rounded epochs reset the states every step and never saw"
    " it. Hard gates saturate the circuit further: 2 of the 28 runs that trained them"
    " diverged, none of the 20 of the sweep without them. **Since 2026-11-27 the "
    "engine clamps every relaxed state to [0, 1] between steps** (the backward treats"
    " the clamp as the identity). Seed 17's circuit at that epoch now gives a finite "
    "loss (8.7), and it is a regression test "
    "(`tests/data/lizard-seed17-epoch8847.safetensors`; without the clamp the test "
    "fails on the AVX-512, AVX2 and portable kernels). The default runs of `gol`, "
    "`checkerboard`, `checkerboard-async` and `colored-g` are bit-identical with the "
    "clamp (every metrics row and the final parameters): their states never leave the"
    " range. The lizard's runs change, so its sweeps were redone on the clamped "
    "engine.",
    "",
    "**The lizard's default now: hard gates from epoch 3000 and a longer search** "
    "(2026-11-27, the clamped engine, a 2-vCPU AMD EPYC with AVX-512, one engine "
    "thread per run, two to four runs side by side). `--hard-fraction 0.3 --warmup "
    "3000`, 12,000 epochs, seeds 0–19, with the preset's search of 100,000 candidates"
    " and then the same search continued to 400,000: each unsolved run resumed with "
    "`--drift-budget 400000`, which goes on from where its search stopped, so these "
    "are exactly the runs of a 400,000 budget. Seeds 9, 10, 12, 16 and 19 (15–38 "
    "cells short) were not continued (no continued search took a run from more than 4"
    " wrong cells to 0; it lowered the unsolved ones by 0–9 cells).",
    "",
    "| seed | 0 | 1 | 2 | 3 | 4 | 5 | 6 | 7 | 8 | 9 | 10 | 11 | 12 | 13 | 14 | 15 | "
    "16 | 17 | 18 | 19 |",
    "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    "| lowest hard loss in training (epoch) | 0 (4942) | 42 (9456) | 3 (9085) | 19 "
    "(9194) | 13 (11468) | 31 (4911) | 12 (8949) | 54 (5786) | 15 (9478) | 67 (1955) "
    "| 59 (3564) | 2 (11924) | 41 (4049) | 24 (10710) | 22 (8375) | 15 (11130) | 42 "
    "(10701) | 14 (11458) | 12 (6666) | 46 (6473) |",
    "| wrong cells after the final repair and the search of 100,000 | **0** (epoch "
    "4942) | 16 | **0** | 5 | 1 | 4 | **0** | 20 | **0** | 38 | 35 | 1 | 31 | 4 | 7 |"
    " 1 | 15 | 2 | 1 | 26 |",
    "| the search continued to 400,000 (candidates spent when it solved) | **0** | 8 "
    "| **0** | 3 | **0** (154,145) | 2 | **0** | 11 | **0** | – | – | 1 | – | **0** "
    "(271,187) | 5 | **0** (245,406) | – | 1 | **0** (106,605) | – |",
    "",
    "**8 of 20 solve** with the 400,000-candidate search (0, 2, 4, 6, 8, 13, 15 and "
    "18), 4 of 20 with 100,000 (0, 2, 6 and 8); of the others, 4 end 1–3 cells short."
    " Seed 11's search continued to 1,000,000 candidates ended 1 cell short all the "
    "same (the only one tried). Seed 0 solves in training at epoch 4942 (the main "
    "table); seed 1 ends 8 cells short, seed 2 solves. No run diverged. The searches "
    "spend up to about 8 minutes per unsolved run (a run that solves in training "
    "skips them).",
    "",
    "The same seeds on the clamped engine without the hard gates (the lizard's "
    "previous default, `--relax truth-table`, 12,000 epochs, search of 100,000), "
    "seeds 0–14:",
    "",
    "| seed | 0 | 1 | 2 | 3 | 4 | 5 | 6 | 7 | 8 | 9 | 10 | 11 | 12 | 13 | 14 |",
    "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    "| plain truth-table: lowest hard loss in training (epoch) | 0 (8179) | 47 (1691)"
    " | 27 (6736) | 47 (11399) | 23 (11979) | 21 (9856) | 21 (7306) | 48 (11924) | 25"
    " (3536) | 67 (1955) | 40 (9521) | 32 (7778) | 46 (1757) | 24 (8529) | 55 (3704) "
    "|",
    "| plain truth-table: wrong cells after the final repair and the search of "
    "100,000 | **0** (epoch 8179) | 21 | 1 | 23 | 1 | 1 | **0** | 29 | 8 | 38 | 18 | "
    "9 | 36 | 12 | 34 |",
    "| hard gates (the rows above): after the search of 100,000 | **0** (epoch 4942) "
    "| 16 | **0** | 5 | 1 | 4 | **0** | 20 | **0** | 38 | 35 | 1 | 31 | 4 | 7 |",
    "| plain truth-table: the search continued to 400,000 | **0** | – | 1 | – | 1 | "
    "**0** (322,390) | **0** | – | 5 | – | – | 5 | – | – | – |",
    "| hard gates: the search continued to 400,000 | **0** | 8 | **0** | 3 | **0** "
    "(154,145) | 2 | **0** | 11 | **0** | – | – | 1 | – | **0** (271,187) | 5 |",
    "",
    "2 of 15 of these seeds solve without the hard gates (0 and 6), 4 with them (0, "
    "2, 6 and 8) with the search of 100,000; with the search continued to 400,000 "
    "(the plain runs that ended 1–10 cells short; '–': not continued), 3 without (0, "
    "5 and 6) and 6 with them (0, 2, 4, 6, 8 and 13). The lizard's preset therefore "
    "trains with `hard_fraction = 0.3` from epoch 3000 and searches up to 400,000 "
    "candidates (`drift_budget = 400000`). 8 of 20 is short of the issue's 50%: the "
    "lizard stays open.",
    "",
    "**Training longer: 16,000 epochs** (2026-11-27, 18:55–20:34 UTC, the same host "
    "and build, one engine thread per run, two to three runs side by side). `--epochs"
    " 16000`, seeds 0–19, the default otherwise, with the search of 100,000 and then,"
    " for each unsolved run up to 20 cells short, the same search continued to "
    "400,000. Up to epoch 12,000 these runs are the 12,000-epoch runs above (checked:"
    " the same metrics rows for every seed); the last 4000 epochs give the kept "
    "lowest circuit more chances, and the lowest hard loss of 7 of the 20 seeds came "
    "after epoch 12,000.",
    "",
    "| seed | 0 | 1 | 2 | 3 | 4 | 5 | 6 | 7 | 8 | 9 | 10 | 11 | 12 | 13 | 14 | 15 | "
    "16 | 17 | 18 | 19 |",
    "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    "| lowest hard loss in training (epoch) | 0 (4942) | 26 (12692) | 2 (15974) | 1 "
    "(15892) | 13 (11468) | 31 (4911) | 12 (8949) | 54 (5786) | 15 (9478) | 67 (1955)"
    " | 59 (3564) | 1 (12250) | 41 (4049) | 24 (10710) | 22 (8375) | 15 (11130) | 36 "
    "(15485) | 9 (14173) | 12 (6666) | 41 (15109) |",
    "| wrong cells after the final repair and the search of 100,000 | **0** (epoch "
    "4942) | 10 | **0** | **0** | 1 | 4 | **0** | 20 | **0** | 38 | 35 | 1 | 31 | 4 |"
    " 7 | 1 | 11 | **0** | 1 | 20 |",
    "| the search continued to 400,000 (candidates spent when it solved) | **0** | 5 "
    "| **0** | **0** | **0** (154,145) | 2 | **0** | 11 | **0** | – | – | 1 | – | "
    "**0** (271,187) | 5 | **0** (245,406) | 6 | **0** | **0** (106,605) | 12 |",
    "| 12,000 epochs (the rows above): after the search of 400,000 | **0** | 8 | "
    "**0** | 3 | **0** | 2 | **0** | 11 | **0** | – | – | 1 | – | **0** | 5 | **0** |"
    " – | 1 | **0** | – |",
    "",
    "**10 of 20 solve** with the search of 400,000 (0, 2, 3, 4, 6, 8, 13, 15, 17 and "
    "18), 6 with 100,000, where the same seeds at 12,000 epochs solve 8; 3 and 17 "
    "solve only with the longer training. –: not continued (more than 20 cells "
    "short). Seed 0 still solves in training at epoch 4942; seed 1 ends 5 cells "
    "short, seed 2 solves.",
    "",
    "The lizard's preset therefore trains 16,000 epochs (`epochs = 16000`, "
    "lizard.toml): 10 of 20 seeds, the issue's 50%; a run that does not solve spends "
    "about 1.5 minutes more than at 12,000 epochs (4000 epochs at about 22 ms). Seed "
    "1 still ends short (5 cells), so the issue's 'seeds 1 and 2 solve on defaults' "
    "is not met for the lizard by the longer training alone (the stall check below "
    "meets it).",
    "",
    "**Stalled attempts restart** (2026-11-27, 21:11–22:20 UTC, the same host and "
    "build, one engine thread per run, two to four runs side by side). In the "
    "16,000-epoch runs above, every seed that solves was at most 36 cells off by "
    "epoch 8000 (its lowest hard loss so far), and 7 of the 10 that do not were more "
    "than 40 off (1, 7, 9, 10, 12, 16 and 19). A stall check (`--stall-epochs 8000 "
    "--stall-loss 40`, a new option of `train`) replaces such an attempt by a fresh "
    "wiring (`restart_seed(seed, attempt)`) that trains 16,000 epochs of its own, at "
    "most twice (`MAX_STALLS`), so a run trains at most 32,000 epochs. The threshold "
    "was read off these same 20 seeds, so it separates their first attempts by "
    "construction; what this sweep measures is how the fresh wirings fare. A "
    "replacing attempt is exactly the run of its wiring seed (a test shows it on a "
    "small model; seed 1's real run with the check has the metrics rows of its three "
    "attempt runs and solves at the same epoch, 23,136), so the table is assembled "
    "from runs of the wiring seeds `restart_seed(s, 1)` and `restart_seed(s, 2)` "
    "(`python -m logicars sweep lizard --seeds ...`, the search of 100,000, continued"
    " to 400,000 for a run up to 20 cells short); the seeds whose first attempt did "
    "not stall are the runs above.",
    "",
    "| seed | 0 | 1 | 2 | 3 | 4 | 5 | 6 | 7 | 8 | 9 | 10 | 11 | 12 | 13 | 14 | 15 | "
    "16 | 17 | 18 | 19 |",
    "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    "| lowest hard loss by epoch 8000 of attempt 1 (**stalled**: over 40) | 0 | "
    "**45** | 9 | 23 | 23 | 31 | 13 | **54** | 21 | **67** | **59** | 9 | **41** | 33"
    " | 28 | 28 | **43** | 36 | 12 | **46** |",
    "| … of attempt 2 | – | **115** | – | – | – | – | – | 5 | – | **94** | 38 | – | "
    "35 | – | – | – | **45** | – | – | 33 |",
    "| … of attempt 3 | – | 0 | – | – | – | – | – | – | – | 27 | – | – | – | – | – | "
    "– | 113 | – | – | – |",
    "| the last attempt: lowest hard loss in training (epoch of the run) | 0 (4942) |"
    " 0 (23136) | 2 (15974) | 1 (15892) | 13 (11468) | 31 (4911) | 12 (8949) | 1 "
    "(23804) | 15 (9478) | 27 (18676) | 25 (19228) | 1 (12250) | 30 (16972) | 24 "
    "(10710) | 22 (8375) | 15 (11130) | 113 (18213) | 9 (14173) | 12 (6666) | 32 "
    "(17818) |",
    "| the last attempt: wrong cells after the final repair and the search of 100,000"
    " | **0** (epoch 4942) | **0** (epoch 23136) | **0** | **0** | 1 | 4 | **0** | 1 "
    "| **0** | 17 | 13 | 1 | 5 | 4 | 7 | 1 | 63 | **0** | 1 | 6 |",
    "| … the search continued to 400,000 (candidates spent when it solved) | **0** | "
    "**0** | **0** | **0** | **0** (154,145) | 2 | **0** | 1 | **0** | 14 | 5 | 1 | 1"
    " | **0** (271,187) | 5 | **0** (245,406) | – | **0** | **0** (106,605) | 3 |",
    "| epochs of the run | 4,942 | 23,136 | 16,000 | 16,000 | 16,000 | 16,000 | "
    "16,000 | 24,000 | 16,000 | 32,000 | 24,000 | 16,000 | 24,000 | 16,000 | 16,000 |"
    " 16,000 | 32,000 | 16,000 | 16,000 | 24,000 |",
    "",
    "**11 of 20 solve** (0, 1, 2, 3, 4, 6, 8, 13, 15, 17 and 18), against 10 without "
    "the check; seed 1 in a replacing attempt, and no seed that solved before is lost"
    " (the check leaves their runs as they were). Of the 10 replacing attempts, 1 "
    "solved, 3 stalled again and 3 collapsed (a hard circuit that only ever grows the"
    " empty grid or the full one, hard loss 120 or 280: seeds 1, 9 and 16); the last "
    "attempts of the seeds that stalled and did not solve end 1 (seed 7), 14 (seed "
    "9), 5 (seed 10), 1 (seed 12), 63 (seed 16), 3 (seed 19) cells short. The fresh "
    "wirings of these seeds solved less often than first attempts do (1 of the 7 "
    "seeds' last attempts, against 10 of 20 first attempts), though three more ended "
    "1–3 cells short; the gain is the one seed. A stalled attempt costs its 8000 "
    "epochs (about 3 minutes at 22 ms); the median run stays 16,000 epochs, the "
    "longest is 32,000.",
    "",
    "The lizard's preset therefore checks for stalls (`stall_epochs = 8000`, "
    "`stall_loss = 40`, lizard.toml): seeds 0, 1 and 2 solve on its defaults (at "
    "epochs 4942, 23,136 and 16,000 with its search), the issue's last criterion; a "
    "slow test in `.ci/run` trains all three.",
    "",
    "**Chunks of 80 cells: the sweep redone** (2026-11-28, 13:03–14:22 UTC, the "
    "same host, one engine thread per run, two runs side by side). The engine now "
    "computes the lizard's 400 cells as 5 chunks of 80 instead of 6 of 64 and one "
    "of 16 (`chunk_cells = 80`, lizard.toml), which makes its epoch about 11% "
    "faster (docs/performance.md, round nine). Every cell's values are the same, "
    "but the coefficient gradients are summed chunk by chunk, so the training "
    "differs in the last bits from the first epoch on, and from there the runs go "
    "their own ways: the default's sweep was run again, seeds 0–19 on the defaults "
    "above (16,000 epochs, the stall check, the search of 400,000; `python -m "
    "logicars sweep lizard --seeds 0-19`).",
    "",
    "| seed | 0 | 1 | 2 | 3 | 4 | 5 | 6 | 7 | 8 | 9 | 10 | 11 | 12 | 13 | 14 | 15 |"
    " 16 | 17 | 18 | 19 |",
    "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    "| lowest hard loss by epoch 8000 of attempt 1 (**stalled**: over 40) | 0 | 36 "
    "| **50** | 39 | 2 | 0 | 24 | **48** | 10 | 29 | 4 | 25 | **63** | 1 | **48** |"
    " 0 | 25 | **69** | 25 | **64** |",
    "| … of attempt 2 | – | – | **62** | – | – | – | – | 29 | – | – | – | – | "
    "**48** | – | **107** | – | – | 2 | – | 12 |",
    "| … of attempt 3 | – | – | 47 | – | – | – | – | – | – | – | – | – | 15 | – | "
    "17 | – | – | – | – | – |",
    "| the last attempt: lowest hard loss in training (epoch of the run) | 0 (4313)"
    " | 2 (15698) | 11 (29857) | 26 (15327) | 0 (9169) | 0 (5755) | 19 (15942) | 23"
    " (19841) | 4 (12025) | 27 (8065) | 4 (7069) | 25 (3235) | 0 (30814) | 0 (8352)"
    " | 10 (29103) | 0 (3047) | 0 (14686) | 0 (19184) | 25 (2282) | 0 (22950) |",
    "| wrong cells after the final repair and the search of 400,000 | **0** (epoch "
    "4313) | **0** | **0** | 3 | **0** (epoch 9169) | **0** (epoch 5755) | **0** | "
    "2 | **0** | **0** | 1 | 12 | **0** (epoch 30814) | **0** (epoch 8352) | 6 | "
    "**0** (epoch 3047) | **0** (epoch 14686) | **0** (epoch 19184) | 4 | **0** "
    "(epoch 22950) |",
    "| candidates the search spent where it solved | – | – | 9,715 | – | – | – | "
    "333,835 | – | 1,051 | 258,366 | – | – | – | – | – | – | – | – | – | – |",
    "| epochs of the run | 4,313 | 16,000 | 32,000 | 16,000 | 9,169 | 5,755 | "
    "16,000 | 24,000 | 16,000 | 16,000 | 16,000 | 16,000 | 30,814 | 8,352 | 32,000 "
    "| 3,047 | 14,686 | 19,184 | 16,000 | 22,950 |",
    "",
    "**14 of 20 solve** (0, 1, 2, 4, 5, 6, 8, 9, 12, 13, 15, 16, 17 and 19), "
    "against 11 of 20 with chunks of 64; seeds 0, 1 and 2 solve on the defaults "
    "(seed 0 in training at epoch 4313, seed 1 after 16,000 epochs by the greedy "
    "repair of its last 2 wrong cells, seed 2 in its third attempt with the repair "
    "and the search), so the slow test's three runs still solve. Which seeds solve "
    "changed (3 and 18 no longer do; 5, 9, 12, 16 and 19 now do): the width acts as"
    " another draw of the training's rounding, not as a better method, and a sweep "
    "of 20 seeds measures a rate only to within about ±11 points (one standard "
    "error), but the rate stays above the issue's 50%. Of the six that do not "
    "solve, four end 1–4 cells short (10, 7, 3 and 18), seed 14 ends 6 short, and "
    "seed 11's last attempt collapsed to the full grid (hard loss 280; its lowest "
    "circuit, searched, 12 cells short). *–* in the search row: solved in training "
    "or by the greedy repair (seed 1), or not solved. The lizard's preset trains "
    "with chunks of 80.",
    "",
    "**Tried on the lizard's default, and not kept** (2026-11-27, 18:05–19:00 UTC, "
    "the same host, one engine thread per run, two runs side by side; each against "
    "the default's own runs of the same seeds above, whose first epochs they share "
    "exactly):",
    "",
    "- **A late learning-rate decay** (`--lr-decay-from 6000 --lr-end 0.006`, a new "
    "option of `train`: after epoch 6000 the rate falls along a half cosine from 0.06"
    " to 0.006 at epoch 12,000), seeds 0–8 with the search of 100,000. The hard loss "
    "kept swinging by tens of cells from epoch to epoch at the lower rates (seed 2: "
    "lowest hard loss per 1000 epochs 8–15 after epoch 6000, against 3–11 at the "
    "constant rate), so the swings come from the hard gates and the rounding, not "
    "from the step size; 2 of 9 solve (0 and 6) against the default's 4 (0, 2, 6 and "
    "8).",
    "",
    "| seed | 0 | 1 | 2 | 3 | 4 | 5 | 6 | 7 | 8 |",
    "|---|---|---|---|---|---|---|---|---|---|",
    "| with the decay: lowest hard loss in training (epoch) | 0 (4942) | 39 (9142) | "
    "8 (7449) | 17 (7850) | 19 (8039) | 31 (4911) | 14 (9026) | 53 (10928) | 21 "
    "(5678) |",
    "| with the decay: wrong cells after the search of 100,000 | **0** (epoch 4942) |"
    " 11 | 2 | 7 | 4 | 4 | **0** | 27 | 2 |",
    "| the default: wrong cells after the search of 100,000 | **0** (epoch 4942) | 16"
    " | **0** | 5 | 1 | 4 | **0** | 20 | **0** |",
    "",
    "- **Hard gates rising to all gates** (q from 0.3 at epoch 3000 linearly to 1.0 "
    "at epoch 12,000; a probe build that re-specs the model each epoch, checked "
    "bit-identical to the package when q stays 0.3), seeds 0 and 1, search of "
    "100,000: seed 0, which the default solves at epoch 4942, ends 1 cell short "
    "(lowest hard loss 11 at epoch 11,750); seed 1 ends 9 short (the default 16), and"
    " its relaxed loss rose from about 40 to 280 as q neared 1. Stopped after these "
    "two seeds.",
    "- **Annealed acceptance in the drift search** (a probe build: a flip that adds Δ"
    " wrong cells is kept with probability e^(−Δ/T), T = 0.5, the search returning "
    "its best circuit): the 400,000-searched circuits of the five seeds 1–5 cells "
    "short, each searched 150,000 candidates more with it and with the plain search "
    "(T = 0, the package's), search seed 7. Seeds 3 (3 wrong), 11 and 17 (1) stay "
    "where they were with both; seed 5 went from 2 to 1 with it and stayed at 2 "
    "without; seed 14 stayed at 5 with it and went to 4 without. No solve with "
    "either: not kept.",
    "",
    "What was tried before on the failing softmax colored-G runs (seeds 0, 1, 3, 9), none "
    "of which closed the gap:",
    "",
    "- **Training longer**: seeds 1 and 9 resumed from 3000 to 7000 epochs end at hard "
    "loss 6 both (soft 1e-6 and 1e-3): with the soft loss near 0 the gradient is too.",
    "- **Repair with a whole pass**: `logicars.repair` with a budget of 20,000 candidate "
    "runs (every gate's next two ops) took seed 1 from 2 wrong cells to 1, seed 3 from 10 "
    "to 9, seed 0 from 22 to 11: no single-gate change fixes these circuits.",
    "- **Fine-tuning the converged run in another relaxation** (600–800 epochs, the "
    "optimizer state kept): `gumbel-st` and `hard-st` lose the task (hard loss 109–449), "
    "`gumbel-soft` wanders between 4 and 16 wrong cells, `anneal` (τ → 0.3) stays at 2–4.",
    "- **Progressive hardening** (`python scripts/probe_hardening.py colored-g RUN`): the "
    "most confident gates frozen to their op in 12 rounds from 45% to 100% of the gates, "
    "200 epochs of training the others after each. The soft loss climbs to the hard loss "
    "(seed 1: 1e-4 to 6.0; seed 9: 1e-3 to 8) while the hard circuit stays where training "
    "left it (6 and 8 wrong cells): the gates still soft cannot make up for the frozen "
    "gates' mixtures.",
    "- **Binarizing the last state too** (the loss then sees only 0/1 cells): seed 0 did "
    "not learn at all (hard loss 109 to 397 in 2200 epochs), so the last state stays "
    "relaxed.",
    "",
]


def analysis_section() -> list[str]:
    """The paper's robustness claims on the trained checkerboards: the figures of
    docs/analysis.md (written by scripts/analysis_docs.py), with a link to its numbers."""
    figures = [
        ("sync_generalisation", "4x larger grid, 4x the steps"),
        ("sync_fault_tolerance", "a permanently dead 20x20 centre"),
        ("sync_self_healing", "the damage lifted half-way"),
        ("robustness_comparison", "a random 10x10 reset every step, sync vs async"),
    ]
    lines = [
        "## Analysis of the trained checkerboard",
        "",
        "The paper's experiments on the sync-trained checkerboard circuit (and the "
        "async-trained one for robustness), from `python -m logicars analyze`; "
        "[docs/analysis.md](analysis.md) has every number, the async circuit's plots and "
        "which of the paper's claims hold.",
        "",
    ]
    for name, caption in figures:
        if (DOCS / "img" / "analysis" / f"{name}.png").exists():
            lines += [f"*{caption}*", "", f"![{caption}](img/analysis/{name}.png)", ""]
    return lines


def write(runs: Path, sweeps: list[Path], train: bool) -> Path:
    IMAGES.mkdir(parents=True, exist_ok=True)
    summaries = {}
    for name in logicars.PRESETS:
        s = run_summary(runs, name, train)
        if s is not None:
            summaries[name] = s
            for f in ("loss.png", "rollout.gif"):
                shutil.copyfile(runs / name / f, IMAGES / f"{name}-{f}")
            write_page(runs, name)
    threads = sorted({s["threads"] for s in summaries.values()})
    seeds = seed_runs(sweeps)
    out = [
        "# Results: the paper's five experiments on a laptop-class CPU",
        "",
        f"Generated by `python scripts/make_results.py` on {date.today().isoformat()}, on "
        f"{cpu_name()} ({', '.join(map(str, threads))} engine threads), logicars "
        f"{logicars.__version__}, {logicars.build_info()['simd_level']} kernels. Every run is "
        "`python -m logicars train <preset>` on its defaults: the notebook's architecture "
        "and learning rate, and its epochs or, where one attempt of them solves too few "
        "seeds, several attempts (see *Training that solves*). Wall time includes "
        "checkpoints, repairs, plots and the GIF, on the machine as it was during the run "
        "(on a host shared with other work, several times a quiet machine's).",
        "",
        "*Held-out inputs solved*: the trained hard circuit run on inputs it was not "
        "trained on (`logicars.evaluate`): all 512 boards for `gol`, 16 fresh random "
        "starts for the checkerboards (fresh update masks for the async one), the start "
        "grid for the growth presets; an input counts as solved when every cell of the "
        "loss channels matches the target exactly (a checkerboard in any of its phases).",
        "",
        "*See it live*: the trained circuit as an interactive page (what `python -m "
        "logicars view RUN` writes): one self-contained HTML file that runs the pruned "
        "circuit as logic in the browser; play it, scratch it with the mouse and watch it "
        "heal, change the grid. Open the file in a browser (a repository viewer shows its "
        "source).",
        "",
        *main_table(summaries),
        "",
    ]
    if seeds:
        table = solving_table(seeds)
        solving_plot(table)
        out += [
            "## Training that solves: repair and restarts",
            "",
            "A run stops once its hard circuit passes the validation check (the held-out "
            "check on its own draw of 64 inputs, then a confirmation draw of 256 more "
            "where the task has random inputs), *repairs* a circuit that gets its batch "
            "right but fails the check (a greedy search over the least confident gates' "
            "next most likely ops, `logicars.repair`), and, where the preset says so, "
            "*restarts* from a fresh wiring when an attempt of the notebook's length (or "
            "the attempt length shown in brackets) ends unsolved; a run whose attempts "
            "all fail keeps the one closest to passing. The table is the seed "
            "sweeps of the sections below (`python -m logicars sweep <preset> --seeds "
            "...`, one engine thread per run; results do not depend on the thread count); "
            "*solved* means the final circuit passes the held-out check of the summary, on "
            "other inputs than the validation's. *Solved by the first wiring in the "
            "notebook's epochs* counts the runs that passed before the notebook's epoch "
            "count without a restart; *passed its own validation check* counts the runs "
            "that stopped on a passed check (64 inputs and the confirmation draw), where the "
            "others ended their budget with the kept attempt. The relaxation modes of the "
            "literature (Gumbel "
            "straight-through, hard straight-through, truth tables, annealing) are measured "
            "in [relaxations.md](relaxations.md): none beat the notebook's softmax. What "
            "does is binarizing the states between steps (see *Growth presets* below), "
            "which `colored-g` trains with; every other preset trains with softmax alone.",
            "",
            *table,
            "",
            f"*Solved {WIDE_SAMPLES} more inputs* counts the seeds whose final circuit also "
            f"solves {WIDE_SAMPLES} further fresh inputs (seed {WIDE_SEED}; the 512 boards "
            "again for `gol`, the one start for the growth presets): a circuit that fails a "
            "rare start or, on `checkerboard-async`, a rare update mask can pass 16 by "
            "chance, so this column says how robust the solved circuits are. "
            "A row with two budgets is a sweep at the smaller one whose seeds that used "
            "all of it were rerun at the larger (the preset's): a run does not depend on "
            "its budget until it reaches it (`checkerboard-async` seed 13 trained at 6400 "
            "and at 9600: the same parameters and losses bit for bit), so the runs that "
            "stopped earlier are their runs at the larger budget.",
            "",
            "![seeds solved per preset](img/results/solve-rate.png)",
            "",
        ]
    out += [
        "## Seeds",
        "",
        "The notebook trains with seed 23 of JAX's random streams. This engine draws "
        "wiring, initial data and masks from its own generators (ChaCha8, NumPy's "
        "PCG64), so the same number is a different run here. An earlier check fed the "
        "JAX run's own wiring and batches into this engine and it followed the JAX run "
        "to hard loss 0 on all 512 Game of Life boards: the semantics match, and "
        "whether an attempt reaches a working circuit depends on the draws. *Attempts*: "
        "the wirings a run trained (a restart after each unsolved attempt); *repairs*: "
        "the repair searches it ran and the gates they changed. Every default run is "
        "seed 0 (the lizard's started from the notebook's own seed-23 wiring until "
        "2026-11-26).",
        "",
    ]
    for name in logicars.PRESETS:
        out.append(f"### `{name}`")
        out.append("")
        if name in summaries:
            out.append(
                f"![{name} loss](img/results/{name}-loss.png) "
                f"![{name} rollout](img/results/{name}-rollout.gif)"
            )
            out.append("")
        for (preset, method), rows in seeds.items():
            if preset != name:
                continue
            ok = sum(held_out_ok(r) for r in rows)
            out.append(
                f"Trained with {method}: seeds that solve every held-out input: "
                f"{ok} of {len(rows)}."
            )
            out.append("")
            out.extend(seed_table(rows))
            out.append("")
    out.extend(GROWTH_GAP)
    out.extend(analysis_section())
    target = DOCS / "results.md"
    target.write_text("\n".join(out) + "\n")
    return target


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--runs", type=Path, default=ROOT / "runs" / "results")
    p.add_argument(
        "--sweeps",
        type=Path,
        nargs="*",
        default=[],
        help="sweep directories of seed sweeps (a later one's run of a seed replaces an "
        "earlier one's)",
    )
    p.add_argument("--train", action="store_true", help="train presets whose run is missing")
    p.add_argument(
        "--plot-only",
        action="store_true",
        help="only redraw img/results/solve-rate.png from the solving table in results.md",
    )
    args = p.parse_args()
    if args.plot_only:
        solving_plot(table_in_results())
        print(IMAGES / "solve-rate.png")
        return
    print(write(args.runs, args.sweeps, args.train))


if __name__ == "__main__":
    main()
