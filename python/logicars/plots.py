"""Pictures of training: the loss curve (PNG, matplotlib's Agg backend) and grids over
time as animated GIFs (Pillow). Both libraries are imported only when a picture is made."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, BinaryIO, Union

import numpy as np

from .files import save_atomic

if TYPE_CHECKING:
    from .model import Model
    from .presets import Preset
    from .runstate import EpochMetrics

PathLike = Union[str, "os.PathLike[str]"]

_GIF_SIZE = 256  # the rollout GIF's longer side in pixels, about


def plot_losses(metrics: list[EpochMetrics], path: PathLike | BinaryIO, title: str = "") -> None:
    """Soft and hard loss per epoch on a log axis as a PNG file (Agg backend, no display
    needed); `path` may be a binary file object.

    A loss of exactly 0 has no place on a log axis: those points are left out of the
    curve and the first epoch with hard loss 0 is marked with a vertical line instead.
    """
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(7, 4), dpi=100)
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    epochs = np.array([r.epoch for r in metrics], dtype=float)
    plotted = False
    for label, values in (
        ("soft loss", np.array([r.soft_loss for r in metrics], dtype=float)),
        ("hard loss", np.array([r.hard_loss for r in metrics], dtype=float)),
    ):
        positive = np.where(values > 0, values, np.nan)
        if np.any(values > 0):
            ax.plot(epochs, positive, label=label, linewidth=1)
            plotted = True
    zero = next((r.epoch for r in metrics if r.hard_loss == 0), None)
    if zero is not None:
        ax.axvline(
            zero,
            color="green",
            linestyle="--",
            linewidth=1,
            label=f"hard loss 0 (first at epoch {zero})",
        )
    if plotted:
        ax.set_yscale("log")
    ax.set_xlabel("epoch")
    ax.set_ylabel("loss (sum of squared errors)")
    ax.set_title(title)
    ax.grid(True, which="both", alpha=0.3)
    if metrics:
        ax.legend()
    fig.tight_layout()
    save_atomic(path, lambda f: fig.savefig(f, format="png"))


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
    return write_frames_gif(frames, model.spec.loss_channels, path)


def write_frames_gif(
    frames: np.ndarray, channels: list[int], path: PathLike | BinaryIO
) -> np.ndarray:
    """Writes grids `(T, H, W, C)` of 0/1 as an animated GIF (to a path or a binary file
    object): `channels[0]` as grayscale, or three channels as RGB. Cells are scaled up
    with nearest-neighbour so small grids are visible. Returns the frames as uint8
    `(T, H, W)` or `(T, H, W, 3)`."""
    from PIL import Image

    if len(channels) == 3:
        pixels = frames[..., channels]
    else:
        pixels = frames[..., channels[0]]
    pixels = (np.clip(pixels, 0, 1) * 255).astype(np.uint8)
    h, w = pixels.shape[1], pixels.shape[2]
    scale = max(1, _GIF_SIZE // max(h, w))
    images = [
        Image.fromarray(np.ascontiguousarray(f)).resize((w * scale, h * scale), Image.NEAREST)
        for f in pixels
    ]
    duration = int(min(500, max(60, 4000 // len(images))))
    save_atomic(
        path,
        lambda f: images[0].save(
            f, format="GIF", save_all=True, append_images=images[1:], duration=duration, loop=0
        ),
    )
    return pixels
