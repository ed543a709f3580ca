"""Rich display in Jupyter: models, runs and sweeps as HTML, grids over time as animations.

`Model`, `RunResult` (what `train` returns), `LoadedRun` (`logicars.runs.load_run`) and
the results of `logicars.sweep` have a `_repr_html_` built here, `show(frames)` turns a
recorded rollout or `simulate` result into an animated GIF and `live(run)` shows the
circuit's interactive page. Everything is inline: images are base64 `data:` URIs, the
live page is the self-contained page of `logicars view` in a sandboxed iframe's `srcdoc`,
and nothing refers to an external URL, so the output shows offline and stays in a saved
notebook.
"""

from __future__ import annotations

import io
import os
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Union

import numpy as np

from .errors import InvalidValueError, ShapeError
from .render import (  # noqa: F401 (model_html, run_html, sweep_html: importable from here too)
    _BOX,
    LIVE_HEIGHT,
    _figure,
    _iframe,
    _img,
    _join,
    model_html,
    run_html,
    sweep_html,
)

if TYPE_CHECKING:
    from .presets import Preset

PathLike = Union[str, "os.PathLike[str]"]

# Animations hold at most this many frames by default (more are sampled evenly).
MAX_FRAMES = 100


# ---- the live page ------------------------------------------------------------------


class LivePage:
    """The interactive page of a circuit (`Model.export("html")`, `logicars view`) to show
    inline: Jupyter renders it in a sandboxed iframe whose document is the page itself, so
    it runs offline, as the file does (made by `live`)."""

    def __init__(self, page: str, height: int = LIVE_HEIGHT) -> None:
        self.html = page
        self.height = height

    def save(self, path: PathLike) -> None:
        """Writes the page as a file (what `logicars view --no-open` writes)."""
        from .files import write_atomic

        write_atomic(path, self.html.encode("utf-8"))

    def _repr_html_(self) -> str:
        return _iframe(self.html, self.height)

    def __repr__(self) -> str:
        return f"LivePage({len(self.html):,} characters)"


def live(source: Any, preset: Preset | str | None = None, height: int = LIVE_HEIGHT) -> LivePage:
    """The live page of a trained circuit, shown inline in Jupyter: play, step, damage
    cells with the mouse (see `logicars.viewer`).

    `source` is a `Model`, what `train` returns, a `LoadedRun` or a run directory or model
    file (`logicars.runs.load_run`); `preset` (a `Preset` or its name) overrides the run's,
    which sets the page's start states and colours.
    """
    from .model import Model, check_int
    from .runs import LoadedRun, load_run
    from .train import RunResult

    height = check_int("height", height, 100)
    if isinstance(source, Model):
        model, known = source, None
    elif isinstance(source, (RunResult, LoadedRun)):
        model, known = source.model, source.preset
    elif isinstance(source, (str, os.PathLike)):
        run = load_run(source)
        model, known = run.model, run.preset
    else:
        raise TypeError(
            "source must be a Model, a run (train's result, load_run's) or a path, "
            f"got {type(source).__name__}"
        )
    return LivePage(model.export("html", preset=known if preset is None else preset), height)


# ---- animations ---------------------------------------------------------------------


class Animation:
    """Grids over time as an animated GIF that Jupyter shows inline (made by `show`)."""

    def __init__(self, gif: bytes, frames: int, height: int, width: int, caption: str) -> None:
        self.gif = gif
        self.frames = frames
        self.height = height
        self.width = width
        self.caption = caption

    def save(self, path: PathLike) -> None:
        """Writes the GIF file."""
        from .files import write_atomic

        write_atomic(path, self.gif)

    def _repr_html_(self) -> str:
        img = _img("image/gif", self.gif, "animation", grid=True)
        return f'<div class="logicars-animation" style="{_BOX}">{_figure(img, self.caption)}</div>'

    def __repr__(self) -> str:
        return f"Animation({self.caption})"


def show(
    frames: Any,
    channels: Sequence[int] | None = None,
    board: int = 0,
    max_frames: int = MAX_FRAMES,
) -> Animation:
    """Grids over time as an inline animation, e.g. `show(model.simulate(x, 60,
    record=True))` or `show(model.rollout(x, hard=True, record=True))`.

    Args:
        frames: `(T, B, H, W, C)` (board `board` is shown), `(T, H, W, C)` or `(T, H, W)`
            of 0/1 (soft values in [0, 1] show as grey levels).
        channels: one channel as grayscale or three as RGB (default: channel 0; e.g.
            `model.spec.loss_channels`).
        board: which board of a batch to show.
        max_frames: longer sequences are sampled evenly (first and last frame kept).
    """
    from .model import check_int
    from .plots import write_frames_gif

    arr = np.asarray(frames)
    if arr.dtype.kind not in "biuf":
        raise TypeError(f"frames: expected a numeric array, got dtype {arr.dtype}")
    if arr.ndim == 5:
        board = check_int("board", board, 0, arr.shape[1] - 1)
        arr = arr[:, board]
    elif arr.ndim == 3:
        arr = arr[..., None]
    elif arr.ndim != 4:
        raise ShapeError(
            f"frames: expected shape (T, B, H, W, C), (T, H, W, C) or (T, H, W), got {arr.shape}"
        )
    if 0 in arr.shape:
        raise ShapeError(f"frames: no grid to show in shape {arr.shape}")
    chosen = [0] if channels is None else [int(c) for c in channels]
    if len(chosen) not in (1, 3) or not all(0 <= c < arr.shape[-1] for c in chosen):
        raise InvalidValueError(
            f"channels: expected one or three channels below {arr.shape[-1]}, got {chosen}"
        )
    max_frames = check_int("max_frames", max_frames, 2)
    total = arr.shape[0]
    if total > max_frames:
        arr = arr[np.unique(np.linspace(0, total - 1, max_frames).round().astype(int))]
    buf = io.BytesIO()
    write_frames_gif(arr.astype(np.float32), chosen, buf)
    h, w = arr.shape[1], arr.shape[2]
    what = "RGB of channels " + _join(chosen) if len(chosen) == 3 else f"channel {chosen[0]}"
    sampled = f" (sampled from {total})" if len(arr) < total else ""
    caption = f"{len(arr)} frames{sampled}, {h}×{w}, {what}"
    return Animation(buf.getvalue(), len(arr), h, w, caption)
