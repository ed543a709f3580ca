"""A sweep's report: one row per point directory, the summary per grid cell, its
Markdown table, `sweep.csv`/`sweep.json`/`sweep.md` and the plot `sweep.png`."""

from __future__ import annotations

import csv
import dataclasses
import io
import json
import math
import os
import statistics
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..files import MAX_TEXT_BYTES, open_regular, read_bytes, save_atomic, write_atomic
from .grid import PathLike, format_value
from .points import ERROR_FILE, POINT_FILE, PointDamaged, read_point_file, read_summary

METRIC_COLUMNS = (
    "status",
    "solved",
    "held_out_solved",
    "held_out_samples",
    "generalises",
    "trained_epochs",
    "first_epoch_hard_zero",
    "seconds_to_hard_zero",
    "solved_epoch",
    "solved_seconds",
    "final_soft_loss",
    "final_hard_loss",
    "best_hard_loss",
    "epoch_budget",
    "hard_minus_soft",
    "wall_seconds",
    "active_gates",
    "early_stopped",
    "error",
)


def _seconds_at_epoch(metrics: Path, epoch: int) -> float | None:
    """`elapsed_s` of `epoch` in a run's metrics.csv (training time, resumes included)."""
    try:
        # A regular file (never a FIFO), no symlink followed; read as a stream.
        with open_regular(metrics, "metrics file", 1 << 34, follow=False) as raw:
            f = io.TextIOWrapper(raw, encoding="utf-8", errors="replace", newline="")
            for row in csv.DictReader(f):
                if int(row["epoch"]) == epoch:
                    value = float(row["elapsed_s"])
                    return value if math.isfinite(value) else None
    except (OSError, KeyError, ValueError, TypeError, csv.Error):
        pass
    return None


def _best_hard_loss(metrics: Path) -> float | None:
    """The lowest `hard_loss` of a run's metrics.csv (the wrong cells of its best batch):
    how close a run came, which the final loss hides when the run ends on a bad epoch."""
    best: float | None = None
    try:
        with open_regular(metrics, "metrics file", 1 << 34, follow=False) as raw:
            f = io.TextIOWrapper(raw, encoding="utf-8", errors="replace", newline="")
            for row in csv.DictReader(f):
                value = float(row["hard_loss"])
                if math.isfinite(value) and (best is None or value < best):
                    best = value
    except (OSError, KeyError, ValueError, TypeError, csv.Error):
        return None
    return best


def _error_text(path: Path) -> str:
    """A point's error.txt (a regular file, bounded, no symlink followed)."""
    try:
        data = read_bytes(path, "error file", MAX_TEXT_BYTES, follow=False)
    except (OSError, ValueError) as e:
        return str(e)
    return data[:4096].decode("utf-8", "replace").strip()


def point_record(run_dir: Path) -> dict[str, Any] | None:
    """One row of the report from a point's directory (None: not a point directory).

    `status`: `done`, `interrupted` (stopped by Ctrl-C, resumable), `partial` (a
    checkpoint but no summary: killed), `failed` (`error.txt`) or `started`.
    `solved`: the final circuit passes its check (`summary.json`'s `hard_eval`: every
    held-out input, and what a growth mode asks too), finished runs only.
    `seconds_to_hard_zero`: training seconds to the first epoch with hard loss 0.
    `solved_epoch`, `solved_seconds`: when the run first passed `train`'s validation
    check (the stop of `stop_on_solve`).
    `hard_minus_soft`: final hard loss minus final soft loss.
    `generalises`: a pattern circuit's reported check on a grid 4x larger (`evaluate`),
    None where the summary has none.
    """
    from ..circuit.evaluate import generalised
    from ..runstate import CHECKPOINT_NAME

    try:
        point = read_point_file(run_dir)
    except PointDamaged:
        return None
    if point is None:
        return None
    row: dict[str, Any] = {"name": run_dir.name, "options": point["options"]}
    row.update(dict.fromkeys(METRIC_COLUMNS))
    try:
        summary = read_summary(run_dir)
        damage = None
    except PointDamaged as e:
        summary, damage = None, str(e)
    error = run_dir / ERROR_FILE
    if damage is not None:
        row["status"], row["error"] = "failed", damage
    elif os.path.lexists(error):
        row["status"], row["error"] = "failed", _error_text(error)
    elif summary is not None:
        row["status"] = "interrupted" if summary.get("interrupted") else "done"
    else:
        row["status"] = "partial" if (run_dir / CHECKPOINT_NAME).exists() else "started"
    if summary is None or row["status"] == "failed":
        row["solved"] = False
        return row
    ev = summary["hard_eval"]
    zero = summary["first_epoch_hard_zero"]
    soft, hard = summary["final_soft_loss"], summary["final_hard_loss"]
    row.update(
        # What the task asks (`evaluate`'s `passed`: a persisting circuit must also hold
        # its target), or every held-out input for summaries from before it was recorded.
        solved=row["status"] == "done" and bool(ev.get("passed", ev["solved"] == ev["samples"])),
        held_out_solved=ev["solved"],
        held_out_samples=ev["samples"],
        generalises=generalised(ev.get("checks") or {}),
        trained_epochs=summary["epochs"],
        first_epoch_hard_zero=zero,
        solved_epoch=summary.get("solved_epoch"),
        solved_seconds=summary.get("solved_seconds"),
        seconds_to_hard_zero=None
        if zero is None
        else _seconds_at_epoch(run_dir / "metrics.csv", zero),
        final_soft_loss=soft,
        final_hard_loss=hard,
        best_hard_loss=_best_hard_loss(run_dir / "metrics.csv"),
        epoch_budget=summary.get("target_epochs"),
        hard_minus_soft=None if soft is None or hard is None else hard - soft,
        wall_seconds=summary["wall_seconds"],
        active_gates=summary["active_gates"],
        early_stopped=summary["early_stopped"],
    )
    return row


def _sort_key(options: Mapping[str, Any]) -> tuple:
    # Numbers in numeric order (epochs=50 before epochs=100), then strings, then None.
    def one(v: Any) -> tuple:
        if isinstance(v, (int, float)):
            return (0, float(v), "")
        return (1, 0.0, str(v)) if v is not None else (2, 0.0, "")

    return tuple((k, one(v)) for k, v in options.items())


def _cell_of(options: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in options.items() if k != "seed"}


def _median(values: list[float]) -> float | None:
    return statistics.median(values) if values else None


def summarize_cells(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per grid cell (the options but the seed): finished runs, solved, success rate, the
    expected wall time to a working circuit (all runs' seconds over the solved ones:
    what a user waits, failed attempts included), the solved runs whose circuit also
    generalises (a pattern's; None where no run records it), runs that reached hard loss
    0 and the medians of epochs and seconds to it."""
    groups: dict[str, list[dict[str, Any]]] = {}
    cells: dict[str, dict[str, Any]] = {}
    for row in rows:
        cell = _cell_of(row["options"])
        key = json.dumps(cell)
        groups.setdefault(key, []).append(row)
        cells.setdefault(key, cell)
    out = []
    for key, members in groups.items():
        done = [r for r in members if r["status"] == "done"]
        reached = [r for r in done if r["first_epoch_hard_zero"] is not None]
        solved = sum(bool(r["solved"]) for r in done)
        checked = [r for r in done if r["solved"] and r["generalises"] is not None]
        seconds = [
            r["seconds_to_hard_zero"] for r in reached if r["seconds_to_hard_zero"] is not None
        ]
        out.append(
            {
                "options": cells[key],
                "runs": len(done),
                "solved": solved,
                "success_rate": solved / len(done) if done else None,
                "solved_and_generalise": (
                    sum(bool(r["generalises"]) for r in checked) if checked else None
                ),
                "seconds_per_solved": (
                    sum(r["wall_seconds"] for r in done) / solved if solved else None
                ),
                "reached_hard_zero": len(reached),
                "median_epochs_to_hard_zero": _median(
                    [r["first_epoch_hard_zero"] for r in reached]
                ),
                "median_seconds_to_hard_zero": _median(seconds),
                "median_wall_seconds": _median([r["wall_seconds"] for r in done]),
                # How far the runs got when none solves: their best and final wrong
                # cells, and the epochs they had.
                "median_best_hard_loss": _median(
                    [r["best_hard_loss"] for r in done if r["best_hard_loss"] is not None]
                ),
                "median_final_hard_loss": _median(
                    [r["final_hard_loss"] for r in done if r["final_hard_loss"] is not None]
                ),
                "median_epochs": _median([r["trained_epochs"] for r in done]),
                "epoch_budget": max(
                    (r["epoch_budget"] for r in done if r["epoch_budget"] is not None),
                    default=None,
                ),
                "unfinished": sum(
                    r["status"] in ("interrupted", "partial", "started") for r in members
                ),
                "failed": sum(r["status"] == "failed" for r in members),
            }
        )
    return out


def _fmt(value: Any, digits: int = 3) -> str:
    if value is None:
        return "–"
    if isinstance(value, float):
        return f"{value:.0f}" if abs(value) >= 100 else f"{value:.{digits}g}"
    return str(value)


def _varying_keys(cells: list[dict[str, Any]]) -> list[str]:
    """The options that tell the cells apart (the preset always)."""
    keys: list[str] = []
    for c in cells:
        keys.extend(k for k in c["options"] if k not in keys)
    return [
        k
        for k in keys
        if k == "preset" or len({json.dumps(c["options"].get(k)) for c in cells}) > 1
    ]


def cells_table(cells: list[dict[str, Any]]) -> str:
    """The cells as a Markdown table (what `sweep.md` holds and the command prints)."""
    varying = _varying_keys(cells)
    extra = [k for k in ("unfinished", "failed") if any(c[k] for c in cells)]
    general = any(c.get("solved_and_generalise") is not None for c in cells)
    header = (
        varying
        + [
            "runs",
            "solved",
            *(["of them generalise"] if general else []),
            "success",
            "s per working circuit",
            "reached hard loss 0",
            "median epochs to hard loss 0",
            "median s to hard loss 0",
            "median best hard loss",
            "median final hard loss",
            "median epochs / budget",
            "median wall s",
        ]
        + extra
    )
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for c in cells:
        rate = c["success_rate"]
        values = (
            [_fmt(c["options"].get(k)) for k in varying]
            + [
                str(c["runs"]),
                str(c["solved"]),
                *([_fmt(c.get("solved_and_generalise"))] if general else []),
                "–" if rate is None else f"{100 * rate:.0f}%",
                _fmt(c.get("seconds_per_solved"), 2),
                str(c["reached_hard_zero"]),
                _fmt(c["median_epochs_to_hard_zero"]),
                _fmt(c["median_seconds_to_hard_zero"], 2),
                _fmt(c.get("median_best_hard_loss")),
                _fmt(c.get("median_final_hard_loss")),
                f"{_fmt(c.get('median_epochs'))} / {_fmt(c.get('epoch_budget'))}",
                _fmt(c["median_wall_seconds"], 2),
            ]
            + [str(c[k]) for k in extra]
        )
        lines.append("| " + " | ".join(values) + " |")
    return "\n".join(lines)


def _cell_label(options: Mapping[str, Any], varying: list[str]) -> str:
    return " ".join(
        format_value(options[k]) if k == "preset" else f"{k}={format_value(options[k])}"
        for k in varying
        if k in options
    )


def plot_sweep(rows: list[dict[str, Any]], cells: list[dict[str, Any]], path: PathLike) -> None:
    """Success rate per cell (left); each finished run's best and final hard loss (middle:
    how close the runs came, which shows progress when nothing solves); its first epoch
    with hard loss 0 (right). Green: solved; orange: not."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    from ..markup import plot_text

    # Option values are text, not mathtext (a preset path with `$`).
    labels = [plot_text(_cell_label(c["options"], _varying_keys(cells))) for c in cells]
    fig = Figure(figsize=(14, 1.5 + 0.45 * len(cells)), dpi=100)
    FigureCanvasAgg(fig)
    left, middle, right = fig.subplots(1, 3, sharey=True)
    ys = list(range(len(cells)))
    rates = [100 * (c["success_rate"] or 0) for c in cells]
    left.barh(ys, rates, height=0.6, color="tab:green")
    left.set_yticks(ys, labels)
    left.invert_yaxis()
    left.set_xlim(0, 115)
    left.set_xticks(range(0, 101, 20))
    left.set_xlabel("runs that solve every held-out input (%)")
    for y, rate, c in zip(ys, rates, cells):
        left.text(rate + 1.5, y, f"{c['solved']}/{c['runs']}", va="center", fontsize="small")
    index = {json.dumps(c["options"]): i for i, c in enumerate(cells)}
    done = [r for r in rows if r["status"] == "done"]
    for solved, color, label in (
        (True, "tab:green", "solved"),
        (False, "tab:orange", "not solved"),
    ):
        mine = [r for r in done if bool(r["solved"]) == solved]
        for key, fill in (("best_hard_loss", color), ("final_hard_loss", "none")):
            shift = 0.12 if fill == "none" else 0.0  # the final loss just below the best
            pts = [
                (r[key], index[json.dumps(_cell_of(r["options"]))] + shift)
                for r in mine
                if r.get(key) is not None
            ]
            if pts:
                kind = "best" if fill != "none" else "final"
                middle.scatter(
                    *zip(*pts), s=22, alpha=0.85, facecolors=fill, edgecolors=color,
                    label=f"{kind}, {label}",
                )  # fmt: skip
        pts = [
            (r["first_epoch_hard_zero"], index[json.dumps(_cell_of(r["options"]))])
            for r in mine
            if r["first_epoch_hard_zero"] is not None
        ]
        if pts:
            right.scatter(*zip(*pts), color=color, label=label, s=18, alpha=0.8)
    middle.set_xscale("symlog", linthresh=1)  # 0 (solved batches) drawn at the left edge
    middle.set_xlim(left=0)
    middle.set_xlabel("hard loss (wrong cells): best ●, final ○")
    middle.grid(True, axis="x", alpha=0.3)
    if middle.collections:
        middle.legend(fontsize="x-small")
    budgets = {c["epoch_budget"] for c in cells if c.get("epoch_budget") is not None}
    budget = f" (budget {', '.join(_fmt(b) for b in sorted(budgets))})" if budgets else ""
    right.set_xlabel(f"first epoch with hard loss 0{budget}")
    right.grid(True, axis="x", alpha=0.3)
    if right.collections:
        right.legend(fontsize="small")
    elif done:
        right.text(0.5, 0.5, "no run reached hard loss 0", transform=right.transAxes,
                   ha="center", va="center", color="0.4")  # fmt: skip
    fig.tight_layout()
    save_atomic(path, lambda f: fig.savefig(f, format=Path(path).suffix[1:] or "png"))


@dataclasses.dataclass
class SweepReport:
    """Every point directory under `out`: one row each, the per-cell summary and its
    Markdown table."""

    out: Path
    rows: list[dict[str, Any]]
    cells: list[dict[str, Any]]
    table: str

    def _repr_html_(self) -> str:
        """Jupyter's display: the per-cell table and the plot (`logicars.viz.render`)."""
        from ..viz.render import sweep_html

        return sweep_html(self)

    def __repr__(self) -> str:  # short: the rows hold every point
        return f"SweepReport(out={os.fspath(self.out)!r}, points={len(self.rows)})"


def _csv_text(rows: list[dict[str, Any]]) -> str:
    option_keys: list[str] = []
    for r in rows:
        option_keys.extend(k for k in r["options"] if k not in option_keys)
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["name", *option_keys, *METRIC_COLUMNS])
    for r in rows:
        opts = [r["options"].get(k, "") for k in option_keys]
        w.writerow([r["name"], *opts, *("" if r[k] is None else r[k] for k in METRIC_COLUMNS)])
    return buf.getvalue()


def report(out: PathLike) -> SweepReport:
    """Reads every point directory under `out` and (re)writes the sweep's summary:
    `sweep.csv`, `sweep.json`, `sweep.md` and `sweep.png`."""
    from ..runtime import version

    root = Path(out)
    if not root.is_dir():
        raise FileNotFoundError(f"{root}: no such sweep directory")
    rows = []
    # Point directories proper: a symlink could point the report anywhere.
    for d in sorted(p for p in root.iterdir() if p.is_dir() and not p.is_symlink()):
        row = point_record(d)
        if row is not None:
            rows.append(row)
    if not rows:
        raise ValueError(f"{root}: no sweep points here (no */{POINT_FILE})")
    rows.sort(key=lambda r: _sort_key(r["options"]))  # by cell, then seed (the last option)
    cells = summarize_cells(rows)
    table = cells_table(cells)
    doc = {"logicars_version": version(), "cells": cells, "rows": rows}
    write_atomic(root / "sweep.json", (json.dumps(doc, indent=1) + "\n").encode())
    write_atomic(root / "sweep.csv", _csv_text(rows).encode())
    write_atomic(root / "sweep.md", (table + "\n").encode())
    plot_sweep(rows, cells, root / "sweep.png")
    return SweepReport(root, rows, cells, table)


def point_solved(run_dir: Path) -> bool:
    row = point_record(run_dir)
    return bool(row and row["solved"])
