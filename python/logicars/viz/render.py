"""HTML views for Jupyter: models, training runs and sweeps (the `_repr_html_` of
`Model`, `RunResult`, `LoadedRun` and the results of `logicars.sweep`), and the pieces
`logicars.viz.display` builds its views from. Everything is inline: images are base64
`data:` URIs and the live page sits in a sandboxed iframe's `srcdoc`, so the output
shows offline and stays in a saved notebook. Imports nothing of the classes it renders,
so they can import it.

Everything that enters HTML goes through one helper, `markup.escape_html`. A run
directory's `summary.json` may come from anyone: each field is shown only if it has the
type `train` writes (`_field`), escaped."""

from __future__ import annotations

import base64
import io
import itertools
import math
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Union

if TYPE_CHECKING:
    from ..model import Model
    from ..presets import Preset
    from ..runstate import EpochMetrics
    from ..sweep import SweepReport

from ..markup import escape_html, script_json
from ..spec import DEFAULT_WEIGHT_DECAY

PathLike = Union[str, "os.PathLike[str]"]

# Pixels of height of an inline live page (its controls sit beside the grid).
LIVE_HEIGHT = 640
_BOX = "font-size:13px;line-height:1.4;margin:2px 0"
_TABLE = "border-collapse:collapse;margin:4px 0"
_KEY = (
    "text-align:left;padding:1px 12px 1px 0;vertical-align:top;font-weight:600;white-space:nowrap"
)
_VALUE = "text-align:left;padding:1px 0;vertical-align:top"
_CELL = "text-align:right;padding:1px 8px"


# ---- models -------------------------------------------------------------------------


def model_html(model: Model) -> str:
    """The model as HTML: its spec, gate counts through pruning and the learned ops."""
    from ..circuit.export import gate_histograms

    s = model.spec
    r = model.prune_report()
    ops = gate_histograms(model)
    counts = {g: ops["perceive"][g] + ops["update"][g] for g in ops["perceive"]}
    learned = ", ".join(f"{g} {n:,}" for g, n in sorted(counts.items(), key=lambda kv: -kv[1]) if n)
    kinds = ", ".join(f"{k} {r[k]:,}" for k in ("and", "and_not", "or", "xor"))
    updates = f"asynchronous, fire rate {s.fire_rate:g}" if s.is_async else "synchronous"
    rows = [
        ("channels", f"{s.channels} (loss on {_join(s.loss_channels)})"),
        (
            "perception",
            f"{s.perceive.n_kernels} kernels over each channel's 3×3 patch, "
            f"layers {_layers(s.perceive.layers)}",
        ),
        ("update", f"layers {_layers(s.update.layers)}"),
        (
            "steps",
            f"{s.num_steps}, {updates}, {'periodic' if s.periodic else 'zero'} boundary",
        ),
        ("training", f"relaxation {s.relax.label()}"),
        (
            "gates",
            f"{ops['gates']:,} learned ({r['gates']:,} evaluated per cell: perception per "
            f"channel), {r['paper_active_gates']:,} active (not a pass-through; the "
            "paper's count)",
        ),
        ("learned ops", learned),
        (
            "pruning",
            f"{r['reachable_gates']:,} reach the next state → {r['folded_gates']:,} after "
            f"folding constants, pass-throughs and NOTs → {r['merged_gates']:,} after "
            f"merging duplicates → {r['pruned_gates']:,}",
        ),
        (
            "pruned circuit",
            f"{r['pruned_gates']:,} gates ({kinds}), depth {r['depth']}, "
            f"{r['patch_inputs']} patch inputs",
        ),
    ]
    return f'<div class="logicars-model" style="{_BOX}"><b>logicars.Model</b>{_table(rows)}</div>'


# ---- runs ---------------------------------------------------------------------------


def _field(summary: Mapping[str, Any], key: str, kind: str) -> Any:
    """`summary[key]` if it has the type `train` writes (`"int"`: an integer >= 0,
    `"num"`: a finite number, `"bool"`, `"str"`), else None: a hostile or damaged
    `summary.json` shows less, never breaks the view."""
    v = summary.get(key)
    if kind == "int":
        return v if type(v) is int and v >= 0 else None
    if kind == "num":
        return v if (type(v) is int or type(v) is float) and math.isfinite(v) else None
    if kind == "bool":
        return v if type(v) is bool else None
    return v if isinstance(v, str) else None


def run_html(
    model: Model,
    directory: PathLike,
    summary: dict[str, Any] | None,
    metrics: Sequence[EpochMetrics],
    preset: Preset | None,
) -> str:
    """A training run as HTML: what was trained, the losses, the held-out check of the
    hard circuit, the loss curve, the run's rollout GIF, the model (`model_html`) and the
    live page of its circuit (`live`; `preset` gives it its start states and colours).

    `summary` is the run's `summary.json` (None: only what `metrics` and the model say).
    """
    from .plots import plot_losses

    directory = Path(directory)
    summary = summary if isinstance(summary, Mapping) else {}
    name = _field(summary, "preset", "str") or "model"
    last = metrics[-1] if metrics else None
    rows: list[tuple[str, str]] = [("directory", f"<code>{_esc(directory)}</code>")]
    seed = _field(summary, "seed", "int")
    if seed is not None:
        start = _field(summary, "init", "str")
        rows.append(("seed", _esc(seed) + (f", started from {_esc(start)}" if start else "")))
    if last is not None:
        epochs = f"{last.epoch:,}"
        target = _field(summary, "target_epochs", "int")
        if target:
            epochs += f" of {target:,}"
        solved_at = _field(summary, "solved_epoch", "int")
        early_stop = _field(summary, "early_stop", "int")
        if _field(summary, "early_stopped", "bool") and solved_at == last.epoch:
            epochs += " (stopped: the hard circuit passed the validation check)"
        elif _field(summary, "early_stopped", "bool"):
            streak = f" for {early_stop:,} epochs" if early_stop is not None else ""
            epochs += f" (stopped early: hard loss 0{streak})"
        elif _field(summary, "interrupted", "bool"):
            epochs += " (interrupted; resume to train further)"
        rows.append(("epochs", f"{epochs} in {last.elapsed_s:.1f} s"))
        restarts = summary.get("restarts")
        if not isinstance(restarts, list):
            restarts = []
        at = [r["epoch"] for r in restarts if isinstance(r, dict) and _field(r, "epoch", "int")]
        if at and len(at) == len(restarts):
            kept = _field(summary, "kept_attempt", "int")
            after = "a fresh wiring after epoch" if len(at) == 1 else "fresh wirings after epochs"
            text = f"{len(at) + 1}: {after} " + ", ".join(f"{e:,}" for e in at)
            if kept is not None:
                text += f"; the final circuit is attempt {kept + 1}'s"
            rows.append(("attempts", text))
        first_zero = next((m.epoch for m in metrics if m.hard_loss == 0), None)
        rows.append(
            (
                "final loss",
                f"soft {last.soft_loss:.4g}, hard {last.hard_loss:g} "
                + (
                    f"(hard loss first 0 at epoch {first_zero:,})"
                    if first_zero is not None
                    else "(hard loss never 0)"
                ),
            )
        )
        if solved_at is not None:
            seconds = _field(summary, "solved_seconds", "num")
            rows.append(
                (
                    "solved",
                    f"the hard circuit passed the validation check at epoch {solved_at:,}"
                    + (f" ({seconds:.1f} s)" if seconds is not None else ""),
                )
            )
    spec = model.spec
    # The learning rate is the run's (summary.json), not the model's.
    lr = _field(summary, "lr", "num")
    rate = ""
    if lr is not None:
        start, end = _field(summary, "lr_decay_from", "int"), _field(summary, "lr_end", "num")
        falls = start is not None and end is not None
        rate = (
            f"learning rate {lr:g}"
            + (f" (after epoch {start:,} falling to {end:g})" if falls else "")
            + ", "
        )
    decay = _field(summary, "weight_decay", "num")
    if decay is not None and decay != DEFAULT_WEIGHT_DECAY:
        rate += f"weight decay {decay:g}, "
    rows.append(("training", f"{rate}relaxation {spec.relax.label()}"))
    ev = summary.get("hard_eval")
    keys = ("solved", "samples", "wrong_cells", "cells")
    if isinstance(ev, dict) and all(_field(ev, k, "int") is not None for k in keys):
        solved = ev["solved"] == ev["samples"]
        rows.append(
            (
                "held-out check",
                f"{'✔' if solved else '✘'} the hard circuit solves {ev['solved']:,} of "
                f"{ev['samples']:,} inputs it was not trained on "
                f"({ev['wrong_cells']:,} of {ev['cells']:,} cells wrong)",
            )
        )
    figures = []
    if metrics:
        png = io.BytesIO()
        plot_losses(list(metrics), png, title=name)
        figures.append(_figure(_img("image/png", png.getvalue(), "loss curve", 440), "losses"))
    gif = _run_file(directory / "rollout.gif")
    if gif is not None:
        figures.append(_figure(_img("image/gif", gif, "rollout", grid=True), "hard rollout"))
    return (
        f'<div class="logicars-run" style="{_BOX}">'
        f"<b>logicars run: {_esc(name)}</b>{_table(rows)}"
        f'<div style="display:flex;flex-wrap:wrap;gap:16px;align-items:flex-start">'
        f"{''.join(figures)}</div>"
        f"<details><summary>model: spec and gates</summary>{model_html(model)}</details>"
        "<details><summary>live page: run the circuit, damage it with the mouse</summary>"
        f"{_iframe(model.export('html', preset=preset), LIVE_HEIGHT)}</details>"
        "</div>"
    )


# The largest picture a view inlines from a run or sweep directory.
_MAX_PICTURE_BYTES = 64 << 20


def _run_file(path: Path) -> bytes | None:
    """A picture of a run or sweep directory, if it is a regular file of bounded size
    (not a FIFO, a device or a symlink planted by whoever shared the directory)."""
    from ..files import read_bytes

    try:
        return read_bytes(path, "picture", _MAX_PICTURE_BYTES, follow=False)
    except (OSError, ValueError):
        return None


def _iframe(page: str, height: int) -> str:
    # srcdoc keeps the page in the output (no file, no server); the sandbox lets its
    # scripts run but keeps it apart from the notebook. The page posts its height
    # (page.html's reportHeight) and the frame takes it, so it shows whole, with no
    # scrollbar of its own; `height` is the frame's height until then.
    import hashlib

    # Named by the page, so the same run displays the same HTML.
    fid = "logicars-live-" + hashlib.sha1(page.encode("utf-8")).hexdigest()[:12]
    listener = (
        "(function () {"
        f" var f = document.getElementById({script_json(fid)});"
        " window.addEventListener('message', function (e) {"
        "  if (!f || e.source !== f.contentWindow || !e.data) return;"
        "  var h = e.data.logicarsPageHeight;"
        "  if (typeof h === 'number' && h > 0) f.style.height = Math.min(h, 8000) + 'px';"
        " });"
        "})();"
    )
    return (
        f'<iframe id="{fid}" srcdoc="{escape_html(page)}" sandbox="allow-scripts" '
        f'title="live circuit" style="width:100%;height:{height}px;border:1px solid #8884">'
        f"</iframe><script>{listener}</script>"
    )


# ---- sweeps -------------------------------------------------------------------------


def sweep_html(
    report: SweepReport,
    counts: dict[str, int] | None = None,
    interrupted: bool = False,
    until_solved_reached: bool = False,
) -> str:
    """A sweep as HTML: its directory, what this call did (`counts` of `SweepResult`),
    the per-cell table of `sweep.md` and the sweep's plot."""
    rows = [
        ("directory", f"<code>{_esc(report.out)}</code>"),
        ("points", f"{len(report.rows):,} run directories"),
    ]
    if counts is not None:
        did = ", ".join(f"{n:,} {what}" for what, n in counts.items() if n) or "nothing to do"
        if interrupted:
            did += " (interrupted: run the same sweep again to resume it)"
        elif until_solved_reached:
            did += " (until_solved reached: no further points launched)"
        rows.append(("this call", _esc(did)))
    plot = _run_file(report.out / "sweep.png")
    figure = ""
    if plot is not None:
        figure = _figure(_img("image/png", plot, "sweep plot", 560), "per cell")
    return (
        f'<div class="logicars-sweep" style="{_BOX}"><b>logicars sweep</b>{_table(rows)}'
        f"{_markdown_table(report.table)}{figure}</div>"
    )


def _markdown_table(text: str) -> str:
    """A Markdown table of plain cells (`logicars.sweep.cells_table`) as HTML."""
    lines = text.splitlines()
    if len(lines) < 2:
        return ""

    def cells(line: str) -> list[str]:
        return [_esc(c.strip()) for c in line.strip().strip("|").split("|")]

    head = "".join(f'<th style="{_CELL};border-bottom:1px solid">{c}</th>' for c in cells(lines[0]))
    body = "".join(
        "<tr>" + "".join(f'<td style="{_CELL}">{c}</td>' for c in cells(line)) + "</tr>"
        for line in lines[2:]
    )
    return f'<table style="{_TABLE}"><tr>{head}</tr>{body}</table>'


# ---- HTML pieces --------------------------------------------------------------------


_esc = escape_html


def _table(rows: list[tuple[str, str]]) -> str:
    """Key/value rows; keys are escaped here, values are HTML already."""
    body = "".join(
        f'<tr><th style="{_KEY}">{_esc(k)}</th><td style="{_VALUE}">{v}</td></tr>' for k, v in rows
    )
    return f'<table style="{_TABLE}">{body}</table>'


def _img(mime: str, data: bytes, alt: str, width: int | None = None, grid: bool = False) -> str:
    size = f' width="{width}"' if width else ""
    # A grid's cells stay sharp squares if the browser scales the image.
    style = ' style="image-rendering:pixelated"' if grid else ""
    return (
        f'<img src="data:{mime};base64,{base64.b64encode(data).decode("ascii")}" '
        f'alt="{_esc(alt)}"{size}{style}>'
    )


def _figure(img: str, caption: str) -> str:
    return (
        f'<figure style="margin:0">{img}'
        f'<figcaption style="font-size:12px;opacity:0.75">{_esc(caption)}</figcaption></figure>'
    )


def _join(values: Sequence[int]) -> str:
    return ", ".join(str(v) for v in values)


def _layers(layers: Sequence[int]) -> str:
    """Layer widths with runs of three or more folded: `264, 256×10, 128`."""
    parts = []
    for width, group in itertools.groupby(layers):
        n = len(list(group))
        parts.append(f"{width}×{n}" if n > 2 else ", ".join([str(width)] * n))
    return ", ".join(parts)
