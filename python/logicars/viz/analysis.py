"""The figures of `logicars.circuit.analyze`: one PNG per experiment, drawn from its
result (the arrays it keeps for plotting under keys `_...`), and `plot_robustness`, the
robustness curves of several circuits in one figure."""

from __future__ import annotations

import os
from collections.abc import Sequence
from functools import partial
from pathlib import Path
from typing import Any, Callable, Union

import numpy as np

from ..circuit.export import GATE_NAMES
from ..files import save_atomic
from ..markup import literal_plot_text
from ..tasks import Task

PathLike = Union[str, "os.PathLike[str]"]

_IMAGE_PX = 3.2  # inches per grid image


def _figure(width: float, height: float) -> Any:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, height), dpi=90)
    FigureCanvasAgg(fig)
    return fig


def _show_grid(
    ax: Any, grid: np.ndarray, loss_channels: Sequence[int], title: str, region: Any = None
) -> None:
    """A grid's loss channels (gray, or RGB for three), with a dead region in red."""
    chans = list(loss_channels)
    if len(chans) == 3:
        img = grid[..., chans].astype(np.float32)
    else:
        img = np.repeat(grid[..., chans[:1]].astype(np.float32), 3, axis=-1)
    if region is not None:
        img = img.copy()
        img[region] = 0.6 * img[region] + 0.4 * np.array([1.0, 0.0, 0.0])
    ax.imshow(img, interpolation="nearest", vmin=0, vmax=1)
    ax.set_title(title, fontsize=9)
    ax.set_xticks([])
    ax.set_yticks([])


def _error_axes(ax: Any, title: str) -> None:
    ax.set_xlabel("step")
    ax.set_ylabel("fraction of wrong cells")
    ax.set_title(title, fontsize=9)
    ax.grid(True, alpha=0.3)
    ax.set_ylim(bottom=0)


def write_plots(results: dict[str, Any], task: Task, out: Path, title: str) -> list[str]:
    files = []
    for name, res in results.items():
        if "skipped" in res:
            continue
        # Names (a task's file, a run's) are text, never mathtext: `a$^{$.png` draws.
        with literal_plot_text():
            fig = _PLOTTERS[name](res, task)
            fig.suptitle(f"{name.replace('_', ' ')}: {title}", fontsize=10)
            fig.tight_layout()
            path = out / f"{name}.png"
            save_atomic(path, partial(fig.savefig, format="png"))
        files.append(path.name)
    return files


def _plot_generalisation(res: dict[str, Any], task: Task) -> Any:
    fig = _figure(3 * _IMAGE_PX, _IMAGE_PX)
    frames, lc = res["_frames"], task.loss_channels
    if task.kind == "life":
        _show_grid(fig.add_subplot(1, 3, 1), frames[0], lc, "start (64x64)")
        _show_grid(fig.add_subplot(1, 3, 2), frames[-1], lc, f"circuit, step {res['steps']}")
        _show_grid(fig.add_subplot(1, 3, 3), res["_exact"][..., None], (0,), "exact rule")
        return fig
    h, w = res["grid"]
    if task.kind == "grow":  # the start is a seed or zeros; the target says more
        target = np.zeros(frames[0].shape, dtype=np.uint8)
        target[..., list(lc)] = res["_target"]
        _show_grid(fig.add_subplot(1, 3, 1), target, lc, f"target ({h}x{w})")
    else:
        _show_grid(fig.add_subplot(1, 3, 1), frames[0], lc, f"start ({h}x{w})")
    _show_grid(
        fig.add_subplot(1, 3, 2),
        frames[-1],
        lc,
        f"step {res['steps']}: error {res['final_error']:.4f}",
    )
    ax = fig.add_subplot(1, 3, 3)
    ax.plot(res["error_curve"], linewidth=1)
    ax.axvline(task.num_steps, color="gray", linestyle=":", label="training steps")
    ax.legend(fontsize=8)
    _error_axes(ax, f"mean of {res['boards']} boards" if res["boards"] > 1 else "one board")
    return fig


def _plot_fault_tolerance(res: dict[str, Any], task: Task) -> Any:
    fig = _figure(2 * _IMAGE_PX, _IMAGE_PX)
    _show_grid(
        fig.add_subplot(1, 2, 1),
        res["_frames"][-1],
        task.loss_channels,
        f"step {res['steps']}, dead {res['damage'][0]}x{res['damage'][1]} (red)",
        res["_region"],
    )
    ax = fig.add_subplot(1, 2, 2)
    ax.plot(res["error_curve_outside"], linewidth=1)
    _error_axes(ax, "error outside the dead square")
    return fig


def _plot_self_healing(res: dict[str, Any], task: Task) -> Any:
    fig = _figure(4 * _IMAGE_PX, _IMAGE_PX)
    frames, lc = res["_frames"], task.loss_channels
    start, end = res["damage_steps"]
    for k, (t, label) in enumerate(
        ((end, "damage lifted"), (min(end + 10, res["steps"]), "10 steps later"))
    ):
        region = res["_region"] if t == end else None
        _show_grid(fig.add_subplot(1, 4, k + 1), frames[t], lc, f"step {t}: {label}", region)
    _show_grid(fig.add_subplot(1, 4, 3), frames[-1], lc, f"step {res['steps']}")
    ax = fig.add_subplot(1, 4, 4)
    ax.plot(res["error_curve"], linewidth=1)
    ax.axvspan(start, end, color="red", alpha=0.1, label="damaged")
    ax.legend(fontsize=8)
    _error_axes(ax, f"final error {res['final_error']:.4f}")
    return fig


def _plot_robustness(res: dict[str, Any], task: Task) -> Any:
    return plot_robustness([(task.name, res)])


def plot_robustness(curves: list[tuple[str, dict[str, Any]]], path: PathLike | None = None) -> Any:
    """Error curves of robustness results, one line each (sync- vs async-trained)."""
    fig = _figure(8, 3.6)
    ax = fig.add_subplot()
    for label, res in curves:
        tail = res["mean_error_second_half"]
        one = res["single_reset"]
        heal = "" if "skipped" in one else f"; one reset heals in {one['median_steps']} steps"
        ax.plot(
            res["error_curve"], linewidth=0.8, label=f"{label} (mean, 2nd half: {tail:.4f}{heal})"
        )
    first = curves[0][1]
    _error_axes(
        ax,
        f"{first['grid'][0]}x{first['grid'][1]}, fire rate {first['fire_rate']}, {first['reset']}",
    )
    ax.legend(fontsize=8)
    if path is not None:
        fig.tight_layout()
        save_atomic(path, lambda f: fig.savefig(f, format=Path(path).suffix[1:] or "png"))
    return fig


def _plot_gates(res: dict[str, Any], task: Task) -> Any:
    fig = _figure(11, 3.6)
    for k, part in enumerate(("perceive", "update")):
        ax = fig.add_subplot(1, 2, k + 1)
        counts = [res[part][g] for g in GATE_NAMES]
        colors = ["lightgray" if g in ("A", "B") else "tab:blue" for g in GATE_NAMES]
        bars = ax.bar(range(16), counts, color=colors)
        ax.bar_label(bars, fontsize=7)
        ax.set_xticks(range(16))
        ax.set_xticklabels(GATE_NAMES, rotation=70, fontsize=7)
        ax.set_yscale("symlog")
        # Headroom above the tallest bar (a factor on the log part), so its label stays
        # below the title instead of running into it.
        ax.set_ylim(0, max(1, max(counts)) * 4)
        ax.set_title(f"{part}: {res[f'active_{part}']} active (gray: pass-through)", fontsize=9)
    fig.tight_layout()
    return fig


_PLOTTERS: dict[str, Callable[[dict[str, Any], Task], Any]] = {
    "generalisation": _plot_generalisation,
    "fault_tolerance": _plot_fault_tolerance,
    "self_healing": _plot_self_healing,
    "robustness": _plot_robustness,
    "gates": _plot_gates,
}
