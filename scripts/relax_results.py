"""Success rate of each training relaxation over seeds, per preset, from the run
directories of `python -m logicars sweep` (the form of docs/relaxations.md's table).

    python scripts/relax_results.py SWEEP_DIR [SWEEP_DIR ...]

To publish a sweep, record it instead (`python scripts/make_results.py --record DIR
--name NAME`, `logicars.records`): docs/relaxations.md's tables are written from the
committed records, and a test fails when the page and the records disagree. This script
is for looking at new sweep directories.

Every run directory below the given sweep directories (`*/summary.json`) is one point;
points are grouped by preset, relaxation (`summary.json`'s `relax`, with its
parameters, and "+ repair" for runs with the discrete repair on) and epoch budget. For
each group: the fraction of runs whose hard circuit solves every
held-out input (`hard_eval`), and of those the runs that solved within the preset's own
(the paper's) epochs where the budget was larger, the median and 90th percentile of the
epoch and training seconds at which the run's hard circuit first passed the validation check
(`solved_epoch`, `solved_seconds`: runs stop there), the median final gap between the
hard and the soft loss, and the median active gates. The table is printed, and a bar
plot of the success rates goes to runs/relax-success.png; docs/relaxations.md is not
touched (its tables come from the records).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
PLOT = ROOT / "runs" / "relax-success.png"


# The engine's defaults: a run written with them explicit (a resumed one reads its spec
# back from the engine) is the same relaxation as one that left them out.
DEFAULTS = {"tau": 1.0, "noise": 1.0, "warmup": 0, "steps": 1000}


def label(relax: dict) -> str:
    given = {k: v for k, v in relax.items() if k != "mode" and DEFAULTS.get(k) != v}
    args = ", ".join(f"{k}={v:g}" for k, v in given.items())
    return f"{relax['mode']}({args})" if args else relax["mode"]


def groups(dirs: list[Path]) -> dict[tuple[str, str, int], list[dict]]:
    out: dict[tuple[str, str, int], list[dict]] = {}
    for d in dirs:
        for path in sorted(d.glob("*/summary.json")):
            s = json.loads(path.read_text())
            if s.get("interrupted") or s["epochs"] < s["target_epochs"] and not s["solved_epoch"]:
                continue  # unfinished
            mode = label(s.get("relax", {"mode": "softmax"}))
            mode += " + repair" * bool(s.get("repair"))
            out.setdefault((s["preset"], mode, s["target_epochs"]), []).append(s)
    return out


def stats(values: list[float]) -> str:
    if not values:
        return "–"
    return f"{np.median(values):.0f} / {np.percentile(values, 90):.0f}"


def solved(s: dict) -> bool:
    return s["hard_eval"]["solved"] == s["hard_eval"]["samples"]


def table(grouped: dict[tuple[str, str, int], list[dict]]) -> list[str]:
    from logicars import get_preset

    lines = [
        "| preset | relaxation | epochs | seeds | solved | solved within the paper's epochs "
        "| epochs to solve (median / p90) "
        "| seconds to solve (median / p90) | final hard − soft loss (median) "
        "| active gates (median) |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for (preset, relax, epochs), runs in sorted(grouped.items()):
        paper = get_preset(preset).paper_epochs()
        ok = [s for s in runs if solved(s)]
        early = [s for s in ok if s["solved_epoch"] is not None and s["solved_epoch"] <= paper]
        solved_at = [s for s in runs if s["solved_epoch"] is not None]
        gap = [s["final_hard_loss"] - s["final_soft_loss"] for s in runs]
        gates = [s["active_gates"] for s in runs]
        rate = f"{len(ok)} ({100 * len(ok) / len(runs):.0f}%)"
        lines.append(
            f"| `{preset}` | `{relax}` | {epochs} | {len(runs)} | {rate} "
            f"| {'same' if epochs <= paper else f'{len(early)} (≤ {paper})'} "
            f"| {stats([s['solved_epoch'] for s in solved_at])} "
            f"| {stats([s['solved_seconds'] for s in solved_at])} "
            f"| {np.median(gap):.3g} | {np.median(gates):.0f} |"
        )
    return lines


def plot(grouped: dict[tuple[str, str, int], list[dict]]) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    presets = sorted({p for p, _, _ in grouped})
    modes = sorted({m for _, m, _ in grouped})
    fig, ax = plt.subplots(figsize=(1.6 + 1.4 * len(presets), 3.6))
    width = 0.8 / len(modes)
    for i, mode in enumerate(modes):
        xs, ys = [], []
        for j, preset in enumerate(presets):
            runs = [s for (p, m, _), g in grouped.items() if (p, m) == (preset, mode) for s in g]
            if runs:
                ok = sum(solved(s) for s in runs)
                xs.append(j + (i - (len(modes) - 1) / 2) * width)
                ys.append(100 * ok / len(runs))
        bars = ax.bar(xs, ys, width, label=mode)
        ax.bar_label(bars, fmt="%.0f", fontsize=7)  # 0% bars are otherwise invisible
    ax.set_xticks(range(len(presets)), presets)
    ax.set_ylabel("seeds solved (%)")
    ax.set_ylim(0, 100)
    ax.legend(fontsize=7, ncol=2)
    ax.set_title("Held-out check solved, by relaxation")
    fig.tight_layout()
    PLOT.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(PLOT, dpi=110)
    plt.close(fig)


def main() -> None:
    dirs = [Path(a) for a in sys.argv[1:]]
    if not dirs:
        sys.exit(__doc__)
    grouped = groups(dirs)
    plot(grouped)
    print("\n".join(table(grouped)))
    print(f"plot: {PLOT}")


if __name__ == "__main__":
    main()
