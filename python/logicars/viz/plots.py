"""Pictures of training: the loss curve (PNG, matplotlib's Agg backend) and grids over
time as animated GIFs (Pillow). Both libraries are imported only when a picture is made."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, BinaryIO, Union

import numpy as np

from ..files import save_atomic
from ..markup import plot_text

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from ..model import Model
    from ..presets import Preset
    from ..runstate import EpochMetrics

PathLike = Union[str, "os.PathLike[str]"]

_GIF_SIZE = 256  # the rollout GIF's longer side in pixels, about


def plot_losses(
    metrics: list[EpochMetrics],
    path: PathLike | BinaryIO,
    title: str = "",
    *,
    restarts: Sequence[Mapping[str, Any]] = (),
    repairs: Sequence[Mapping[str, Any]] = (),
    warmup: int | None = None,
) -> None:
    """`loss_figure` as a PNG file (Agg backend, no display needed); `path` may be a
    binary file object."""
    fig = loss_figure(metrics, title, restarts=restarts, repairs=repairs, warmup=warmup)
    save_atomic(path, lambda f: fig.savefig(f, format="png"))


def loss_figure(
    metrics: list[EpochMetrics],
    title: str = "",
    *,
    restarts: Sequence[Mapping[str, Any]] = (),
    repairs: Sequence[Mapping[str, Any]] = (),
    warmup: int | None = None,
) -> Figure:
    """Soft and hard loss per epoch, as a matplotlib figure.

    The axis is symmetric-log: logarithmic above a threshold below the smallest positive
    loss, linear below it, so a hard loss of 0 is drawn (at the bottom) instead of left
    out. Marked: the end of each attempt that restarted (`restarts`, the summary's
    `{"epoch": ...}` entries), each repair (`repairs`: an arrow from its wrong cells
    before to after, so a final repair that takes the hard loss to 0 shows), the first
    epoch with hard loss 0, and a relaxation's warmup (`warmup` epochs, shaded). The
    legend sits below the axes, off the curves.
    """
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(7.5, 4.8), dpi=100)
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    epochs = np.array([r.epoch for r in metrics], dtype=float)
    soft = np.array([r.soft_loss for r in metrics], dtype=float)
    hard = np.array([r.hard_loss for r in metrics], dtype=float)
    ax.plot(epochs, soft, label="soft loss", linewidth=1)
    ax.plot(epochs, hard, label="hard loss (discrete circuit)", linewidth=1)
    if warmup:
        # Each attempt starts a fresh optimizer, so each has its warmup.
        for i, start in enumerate([0, *(r["epoch"] for r in restarts)]):
            label = f"warmup ({warmup} epochs per attempt)" if i == 0 else None
            ax.axvspan(start, start + warmup, color="0.85", alpha=0.5, linewidth=0, label=label)
    for i, r in enumerate(restarts):
        label = "attempt ended, restart" if i == 0 else None
        ax.axvline(r["epoch"], color="0.4", linestyle=":", linewidth=1, label=label)
    drawn = False
    for r in repairs:
        before, after = r.get("wrong_before"), r.get("wrong_after")
        if before is None or after is None:
            continue
        ax.annotate(
            "",
            xy=(r["epoch"], after),
            xytext=(r["epoch"], before),
            arrowprops={"arrowstyle": "->", "color": "tab:red", "linewidth": 1},
        )
        ax.plot(
            [r["epoch"]],
            [after],
            marker="v",
            color="tab:red",
            markersize=4,
            linestyle="none",
            label=None if drawn else "repair: wrong cells before → after",
        )
        drawn = True
    zero = next((r.epoch for r in metrics if r.hard_loss == 0), None)
    if zero is not None:
        ax.axvline(
            zero,
            color="green",
            linestyle="--",
            linewidth=1,
            label=f"hard loss 0 (first at epoch {zero})",
        )
    values = np.concatenate([soft, hard])
    positive = values[np.isfinite(values) & (values > 0)]
    # Linear below a decade under the smallest positive loss: every positive value sits
    # on the log part and 0 is drawn.
    ax.set_yscale("symlog", linthresh=_linthresh(positive), linscale=0.5)
    ax.set_ylim(bottom=0)
    ax.set_xlabel("epoch")
    ax.set_ylabel("loss (sum of squared errors; symlog, 0 at the bottom)")
    ax.set_title(plot_text(title))  # a name with `$` is text, not mathtext
    ax.grid(True, which="major", alpha=0.3)
    if metrics:
        ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.14), ncol=3, fontsize=8)
    fig.tight_layout()
    return fig


def _linthresh(positive: np.ndarray) -> float:
    """The symlog axis's linear range: a power of ten below the smallest positive value
    (at least 1e-6), 1 without one."""
    if positive.size == 0:
        return 1.0
    return float(10.0 ** max(-6, np.floor(np.log10(positive.min())) - 1))


def write_rollout_gif(model: Model, preset: Preset, path: PathLike, seed: int = 0) -> np.ndarray:
    """The trained circuit's hard rollout of a fresh sample from the preset's dataset.

    Channel 0 as grayscale, or the three loss channels as RGB when there are three
    (colored-g). Cells are scaled up with nearest-neighbour so small grids are visible.
    The sample comes from its own generator and the model's mask stream is restored
    afterwards, so writing the GIF never changes the training state. Returns the frames
    as uint8 `(steps + 1, H, W)` or `(steps + 1, H, W, 3)` (GIF writers merge identical
    consecutive frames, so the file may hold fewer).
    """
    rng = np.random.default_rng([seed, 1])
    x, _ = preset.task().sample(rng)
    mask_state = model.mask_state
    try:
        frames = model.rollout(x[:1], hard=True, record=True)[:, 0]  # (steps + 1, H, W, C)
    finally:
        model.mask_state = mask_state
    steps = len(frames) - 1
    return write_frames_gif(frames, model.spec.loss_channels, path, steps=range(steps + 1))


def write_frames_gif(
    frames: np.ndarray,
    channels: list[int],
    path: PathLike | BinaryIO,
    steps: Sequence[int] | None = None,
) -> np.ndarray:
    """Writes grids `(T, H, W, C)` of 0/1 as an animated GIF (to a path or a binary file
    object): `channels[0]` as grayscale, or three channels as RGB. Cells are scaled up
    with nearest-neighbour so small grids are visible. With `steps` (one per frame),
    each frame gets a bar below the grid saying `step t / last`, and every frame is
    kept (GIF writers merge identical consecutive frames, so without the bar a grid that
    stops changing loses its last steps). Returns the frames as uint8 `(T, H, W)` or
    `(T, H, W, 3)`."""
    from PIL import Image

    if len(channels) == 3:
        pixels = frames[..., channels]
    else:
        pixels = frames[..., channels[0]]
    pixels = (np.clip(pixels, 0, 1) * 255).astype(np.uint8)
    h, w = pixels.shape[1], pixels.shape[2]
    scale = max(1, _GIF_SIZE // max(h, w))
    images = [
        Image.fromarray(np.ascontiguousarray(f)).resize(
            (w * scale, h * scale), Image.Resampling.NEAREST
        )
        for f in pixels
    ]
    if steps is not None:
        steps = list(steps)
        if len(steps) != len(images):
            raise ValueError(f"steps: {len(steps)} labels for {len(images)} frames")
        images = [_with_step(im, s, steps[-1]) for im, s in zip(images, steps)]
    duration = int(min(500, max(60, 4000 // len(images))))
    save_atomic(
        path,
        lambda f: images[0].save(
            f, format="GIF", save_all=True, append_images=images[1:], duration=duration, loop=0
        ),
    )
    return pixels


_BAR = 14  # the step bar's height in pixels


def _with_step(image: Any, step: int, last: int) -> Any:
    """`image` with a dark bar below it that says `step <step> / <last>`."""
    from PIL import Image, ImageDraw

    fill = 40 if image.mode == "L" else (40, 40, 40)
    ink = 255 if image.mode == "L" else (255, 255, 255)
    out = Image.new(image.mode, (image.width, image.height + _BAR), fill)
    out.paste(image, (0, 0))
    ImageDraw.Draw(out).text((3, image.height + 1), f"step {step} / {last}", fill=ink)
    return out
