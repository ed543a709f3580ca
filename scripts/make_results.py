"""Write docs/results.md: every preset trained on its defaults, plus the seed sweeps.

    python scripts/make_results.py [--runs runs/results] [--sweeps runs/sweep] [--train]

For each preset it reads the run directory `<runs>/<preset>` (with `--train`, a missing
one is trained first with the preset's defaults, exactly what
`python -m logicars train <preset>` does), copies its loss plot and rollout GIF to
docs/img/results/, writes its interactive page (`python -m logicars view`) to
docs/pages/<preset>.html, and writes one table of all presets, each row linking its page,
and a section per preset. The seed sweeps of `python -m logicars sweep <preset> --seeds
... --out <sweeps>` (scripts/seed_sweep.py runs them all) become the success-rate tables:
the points of `<sweeps>/sweep.json` that set nothing but the preset and the seed.
"""

from __future__ import annotations

import argparse
import csv
import json
import platform
import shutil
from datetime import date
from pathlib import Path

import logicars
from logicars.presets import NOTEBOOK_START
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
        lines.append(
            f"| `{name}` | {NOTEBOOK_START if s.get('init') else s['seed']} | {s['epochs']} "
            f"| {'never' if zero is None else zero} "
            f"| {s['final_hard_loss']:g} | {solved(s)} | {s['wall_seconds']:.0f} s "
            f"| {s['active_gates']} ({'–' if paper is None else paper}) "
            f"| [page](pages/{name}.html) |"
        )
    return lines


def lowest_hard_loss(metrics: Path) -> tuple[float, int]:
    """The lowest hard loss of a run and the first epoch it was reached."""
    with open(metrics, newline="") as f:
        rows = [(float(r["hard_loss"]), int(r["epoch"])) for r in csv.DictReader(f)]
    return min(rows)


def sweep_table(rows: list[dict], sweeps: Path) -> list[str]:
    lines = [
        "| seed | first epoch with hard loss 0 | final soft loss | final hard loss "
        "| lowest hard loss (epoch) | held-out inputs solved | active gates |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        zero = r["first_epoch_hard_zero"]
        low, at = lowest_hard_loss(sweeps / r["name"] / "metrics.csv")
        lines.append(
            f"| {r['options']['seed']} | {'never' if zero is None else zero} "
            f"| {r['final_soft_loss']:.3g} | {r['final_hard_loss']:g} | {low:g} ({at}) "
            f"| {r['held_out_solved']}/{r['held_out_samples']} | {r['active_gates']} |"
        )
    return lines


def seed_sweeps(sweeps: Path) -> dict[str, list[dict]]:
    """Per preset, the finished points of the sweep in `sweeps` that vary the seed alone
    (the preset's defaults otherwise), in seed order."""
    path = sweeps / "sweep.json"
    rows = json.loads(path.read_text())["rows"] if path.exists() else []
    by_preset: dict[str, list[dict]] = {}
    for r in rows:
        if r["status"] == "done" and set(r["options"]) == {"preset", "seed"}:
            by_preset.setdefault(r["options"]["preset"], []).append(r)
    return {k: sorted(v, key=lambda r: r["options"]["seed"]) for k, v in by_preset.items()}


def longer_runs(extra: Path) -> list[str]:
    """Runs trained past the notebook's epochs (`train --resume DIR --epochs N`) to see
    whether more training closes the gap between the soft and the hard circuit."""
    dirs = sorted(d for d in extra.glob("*") if (d / "summary.json").exists())
    if not dirs:
        return []
    lines = [
        "## Growth presets: few wiring draws solve them",
        "",
        "Most `lizard` and `colored-g` runs do not reach hard loss 0 in the notebook's "
        "epochs (sweeps above): in the best failing colored-G runs the soft loss falls to "
        "1e-3 and below while a few cells of the hard circuit stay wrong, the relaxed "
        "circuit solving the task through gates that are still mixtures whose argmax "
        "computes something else, and training longer does not close that gap once the "
        "soft loss, and with it the gradient, is near 0 (the runs below continue a sweep "
        "run with `--resume`). The semantics match the notebook at full size and over "
        "training ([notebook.md](notebook.md)); the outcome depends on the wiring draw. "
        "So `colored-g` defaults to seed 13, the one of 16 seeds tried that solves it, "
        "and `lizard` starts from the notebook's own seed-23 wiring (shipped in "
        "`logicars/data`), which solves it where none of this engine's 11 seeds tried "
        "does. The hyper-parameters are the notebook's.",
        "",
        "| run | preset | seed | epochs | final soft loss | final hard loss "
        "| lowest hard loss (epoch) |",
        "|---|---|---|---|---|---|---|",
    ]
    for d in dirs:
        s = json.loads((d / "summary.json").read_text())
        low, at = lowest_hard_loss(d / "metrics.csv")
        lines.append(
            f"| `{d.name}` | `{s['preset']}` | {s['seed']} | {s['epochs']} "
            f"| {s['final_soft_loss']:.3g} | {s['final_hard_loss']:g} | {low:g} ({at}) |"
        )
    return lines + [""]


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


def write(runs: Path, sweeps: Path, train: bool) -> Path:
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
    out = [
        "# Results: the paper's five experiments on a laptop-class CPU",
        "",
        f"Generated by `python scripts/make_results.py` on {date.today().isoformat()}, on "
        f"{cpu_name()} ({', '.join(map(str, threads))} engine threads), logicars "
        f"{logicars.__version__}, {logicars.build_info()['simd_level']} kernels. Every run is "
        "`python -m logicars train <preset>` on its defaults (epochs and learning rate "
        "as the notebook; seed: see below). Wall time includes checkpoints, plots and "
        "the GIF.",
        "",
        "*Held-out inputs solved*: the trained hard circuit run on inputs it was not "
        "trained on (`logicars.evaluate`): all 512 boards for `gol`, 16 fresh random "
        "starts for the checkerboards (fresh update masks for the async one), the start "
        "grid for the growth presets; an input counts as solved when every cell of the "
        "loss channels matches the target exactly.",
        "",
        "*See it live*: the trained circuit as an interactive page (what `python -m "
        "logicars view RUN` writes): one self-contained HTML file that runs the pruned "
        "circuit as logic in the browser; play it, scratch it with the mouse and watch it "
        "heal, change the grid. Open the file in a browser (a repository viewer shows its "
        "source).",
        "",
        *main_table(summaries),
        "",
        "## Seeds",
        "",
        "The notebook trains with seed 23 of JAX's random streams. This engine draws "
        "wiring, initial data and masks from its own generators (ChaCha8, NumPy's "
        "PCG64), so the same number is a different run here. An earlier check fed the "
        "JAX run's own wiring and batches into this engine and it followed the JAX run "
        "to hard loss 0 on all 512 Game of Life boards: the semantics match, and "
        "whether a run reaches hard loss 0 depends on the draws. Each preset's default "
        "seed is therefore the lowest seed from 0 up that reaches it (tables below, from "
        "`python -m logicars sweep <preset> --seeds ...`, one engine thread per run; "
        "results do not depend on the thread count). The lizard is the exception: none "
        "of this engine's seeds tried solves it, so it starts from the notebook's own "
        "seed-23 wiring (seed column `nb23`; `--seed N` trains this engine's draw "
        "instead). The hyper-parameters are the notebook's.",
        "",
    ]
    sweep_rows = seed_sweeps(sweeps)
    for name in logicars.PRESETS:
        out.append(f"### `{name}`")
        out.append("")
        if name in summaries:
            out.append(
                f"![{name} loss](img/results/{name}-loss.png) "
                f"![{name} rollout](img/results/{name}-rollout.gif)"
            )
            out.append("")
        rows = sweep_rows.get(name)
        if rows:
            ok = sum(r["solved"] for r in rows)
            out.append(f"Seeds that solve every held-out input: {ok} of {len(rows)}.")
            out.append("")
            out.extend(sweep_table(rows, sweeps))
            out.append("")
    out.extend(longer_runs(sweeps.parent / "extra"))
    out.extend(analysis_section())
    target = DOCS / "results.md"
    target.write_text("\n".join(out) + "\n")
    return target


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--runs", type=Path, default=ROOT / "runs" / "results")
    p.add_argument("--sweeps", type=Path, default=ROOT / "runs" / "sweep")
    p.add_argument("--train", action="store_true", help="train presets whose run is missing")
    args = p.parse_args()
    print(write(args.runs, args.sweeps, args.train))


if __name__ == "__main__":
    main()
