"""What loss.png and rollout.gif show (issue 42): a hard loss of 0 is drawn, attempts,
repairs and warmup are marked, the legend is off the curves, and the GIF has a step
counter and every step including the last."""

from __future__ import annotations

import io
from typing import Any

import numpy as np
import pytest
from PIL import Image

import logicars
from logicars.runstate import EpochMetrics
from logicars.viz.plots import loss_figure, plot_losses, write_frames_gif, write_rollout_gif


def _metrics() -> list[EpochMetrics]:
    # the hard loss reaches 0 at epoch 50; the soft loss goes down to 1e-5
    return [
        EpochMetrics(e, 10.0 ** (1 - e / 10), float(max(0, 50 - e)), 0.1 * e) for e in range(1, 61)
    ]


def test_the_loss_axis_shows_zero_and_every_positive_loss() -> None:
    fig = loss_figure(_metrics(), "t")
    ax = fig.axes[0]
    assert ax.get_yscale() == "symlog" and ax.get_ylim()[0] == 0
    hard = next(line for line in ax.get_lines() if line.get_label().startswith("hard loss ("))
    y = np.asarray(hard.get_ydata(), dtype=float)
    assert np.isfinite(y).all() and (y == 0).sum() == 11  # epochs 50-60 drawn, at 0
    linthresh = ax.yaxis.get_transform().linthresh
    assert 0 < linthresh < min(m.soft_loss for m in _metrics())


def test_attempts_repairs_and_warmup_are_marked_and_the_legend_is_off_the_axes() -> None:
    fig = loss_figure(
        _metrics(),
        restarts=[{"epoch": 20, "seed": 7}, {"epoch": 35, "seed": 8}],
        repairs=[{"epoch": 45, "wrong_before": 1920, "wrong_after": 0}],
        warmup=10,
    )
    ax = fig.axes[0]
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert "warmup (10 epochs per attempt)" in labels and "attempt ended, restart" in labels
    # a warmup after each restart too
    starts = {round(_left(p)) for p in ax.patches}
    assert {0, 20, 35} <= starts
    assert "repair: wrong cells before → after" in labels
    restarts = [ln for ln in ax.get_lines() if ln.get_linestyle() == ":"]
    assert sorted(ln.get_xdata()[0] for ln in restarts) == [20, 35]
    arrows = [a for a in ax.texts if getattr(a, "arrow_patch", None) is not None]
    assert [(a.xy, a.xyann) for a in arrows] == [((45, 0), (45, 1920))]
    fig.canvas.draw()
    legend = ax.get_legend().get_window_extent()
    axes = ax.get_window_extent()
    assert legend.y1 < axes.y0  # below the axes: it covers no curve


def _left(patch: Any) -> float:
    """The left edge of an axvspan in data coordinates (a Rectangle, or in older
    matplotlib a Polygon)."""
    path = patch.get_path().transformed(patch.get_patch_transform())
    return float(np.min(path.vertices[:, 0]))


def test_plot_losses_writes_a_png_without_markers_too() -> None:
    buf = io.BytesIO()
    plot_losses(_metrics(), buf, "gol")
    assert Image.open(io.BytesIO(buf.getvalue())).format == "PNG"
    plot_losses([EpochMetrics(1, 0.0, 0.0, 0.1)], io.BytesIO())  # all zero: still drawn


def test_the_gif_counts_steps_and_keeps_every_frame() -> None:
    frames = np.zeros((21, 4, 4, 1), np.float32)
    frames[:3, 1, 1, 0] = 1  # still from step 3 on: a plain GIF would merge steps 3-20
    buf = io.BytesIO()
    write_frames_gif(frames, [0], buf, steps=range(21))
    gif = Image.open(io.BytesIO(buf.getvalue()))
    assert gif.n_frames == 21
    plain = io.BytesIO()
    write_frames_gif(frames, [0], plain)
    assert Image.open(io.BytesIO(plain.getvalue())).n_frames < 21
    # the bar below the grid differs from frame to frame (its text)
    gif.seek(19)
    bar19 = np.asarray(gif.convert("L"))[-14:]
    gif.seek(20)
    last = np.asarray(gif.convert("L"))
    assert last.shape[0] == gif.size[1] and not np.array_equal(last[-14:], bar19)
    with pytest.raises(ValueError, match="labels"):
        write_frames_gif(frames, [0], io.BytesIO(), steps=range(3))


def test_rollout_gif_has_every_step_of_a_20_step_preset(tmp_path) -> None:
    preset = logicars.get_preset("checkerboard")
    model = logicars.Model(preset.spec, seed=0)
    pixels = write_rollout_gif(model, preset, tmp_path / "rollout.gif")
    assert len(pixels) == preset.spec.num_steps + 1
    with Image.open(tmp_path / "rollout.gif") as gif:
        assert gif.n_frames == preset.spec.num_steps + 1


def test_gate_bar_labels_stay_below_the_titles() -> None:
    """gates.png (`analyze`): the tallest bar's count is drawn under its axes' title."""
    from logicars.circuit.export import GATE_NAMES
    from logicars.viz.analysis import _plot_gates

    counts = {g: (2000 if g == "A" else i * 7) for i, g in enumerate(GATE_NAMES)}
    res = {"perceive": counts, "update": counts, "active_perceive": 9, "active_update": 9}
    fig = _plot_gates(res, logicars.get_preset("gol").task())
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    for ax in fig.axes:
        title = ax.title.get_window_extent(renderer)
        labels = [t for t in ax.texts if t.get_text()]
        assert labels and max(t.get_window_extent(renderer).y1 for t in labels) < title.y0
