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
from html import escape as _esc
from typing import TYPE_CHECKING, Any, Union

import numpy as np

from ..errors import InvalidValueError, ShapeError
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
    from ..presets import Preset

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
        from ..files import write_atomic

        write_atomic(path, self.html.encode("utf-8"))

    def _repr_html_(self) -> str:
        return _iframe(self.html, self.height)

    def __repr__(self) -> str:
        return f"LivePage({len(self.html):,} characters)"


def live(source: Any, preset: Preset | str | None = None, height: int = LIVE_HEIGHT) -> LivePage:
    """The live page of a trained circuit, shown inline in Jupyter: play, step, damage
    cells with the mouse (see `logicars.viz.page`).

    `source` is a `Model`, what `train` returns, a `LoadedRun` or a run directory or model
    file (`logicars.runs.load_run`); `preset` (a `Preset` or its name) overrides the run's,
    which sets the page's start states and colours.
    """
    from ..arguments import check_int
    from ..model import Model
    from ..runs import LoadedRun, load_run
    from ..train import RunResult

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
    """Grids over time as a small player that Jupyter shows inline: play, pause, step,
    scrub and speed (made by `show`); `gif` is the same frames as an animated GIF."""

    def __init__(
        self,
        gif: bytes,
        frames: int,
        height: int,
        width: int,
        caption: str,
        pngs: Sequence[bytes] = (),
    ) -> None:
        self.gif = gif
        self.frames = frames
        self.height = height
        self.width = width
        self.caption = caption
        self.pngs = list(pngs)

    def save(self, path: PathLike) -> None:
        """Writes the animation: the player as a page for a `.html` path, else the GIF."""
        from ..files import write_atomic

        if os.fspath(path).lower().endswith((".html", ".htm")):
            page = f"<!doctype html><meta charset=utf-8><title>{_esc(self.caption)}</title>"
            write_atomic(path, (page + self.player_html()).encode("utf-8"))
        else:
            write_atomic(path, self.gif)

    def player_html(self) -> str:
        """The player: the frames as inline PNGs drawn pixel-sharp, with its controls above
        them (so they stay in view at any grid size) and a script that needs nothing
        outside the output (`player_html` in this module)."""
        return player_html(self.pngs, self.height, self.width, self.caption)

    def _repr_html_(self) -> str:
        if not self.pngs:  # an Animation built from a GIF alone
            img = _img("image/gif", self.gif, "animation", grid=True)
            return (
                f'<div class="logicars-animation" style="{_BOX}">{_figure(img, self.caption)}</div>'
            )
        return self.player_html()

    def __repr__(self) -> str:
        return f"Animation({self.caption})"


# Frames per second the player offers; the default is the GIF's pace for ~40 frames.
SPEEDS = (1, 2, 5, 10, 20, 30, 60)
DEFAULT_FPS = 10
# The largest side, in CSS pixels, a grid is drawn at (small grids are scaled up to it).
PLAYER_SIZE = 384

_PLAYER_SCRIPT = """
(function () {
  var root = document.getElementById(%(id)s);
  if (!root || root.dataset.ready) return;
  root.dataset.ready = "1";
  var frames = JSON.parse(root.querySelector("script[type='application/json']").textContent);
  var img = root.querySelector("img"), slider = root.querySelector("input[type=range]");
  var play = root.querySelector(".lc-play"), label = root.querySelector(".lc-frame");
  var speed = root.querySelector("select"), timer = null, t = 0;
  function show(i) {
    t = Math.max(0, Math.min(frames.length - 1, i));
    img.src = "data:image/png;base64," + frames[t];
    slider.value = t;
    label.textContent = (t + 1) + " / " + frames.length;
    root.dataset.frame = t;
  }
  function stop() {
    if (timer !== null) clearInterval(timer);
    timer = null; play.textContent = "\u25b6 play"; root.dataset.playing = "0";
  }
  function start() {
    stop();
    if (t >= frames.length - 1) show(0);
    timer = setInterval(function () {
      if (t >= frames.length - 1) { stop(); return; }
      show(t + 1);
    }, 1000 / Number(speed.value));
    play.textContent = "\u23f8 pause"; root.dataset.playing = "1";
  }
  play.onclick = function () { if (timer === null) start(); else stop(); };
  root.querySelector(".lc-prev").onclick = function () { stop(); show(t - 1); };
  root.querySelector(".lc-next").onclick = function () { stop(); show(t + 1); };
  slider.oninput = function () { stop(); show(Number(slider.value)); };
  speed.onchange = function () { if (timer !== null) start(); };
  show(0);
})();
"""


def player_html(pngs: Sequence[bytes], height: int, width: int, caption: str) -> str:
    """A self-contained HTML player of frames given as PNG files (`show`): play/pause,
    step back and forward, a slider to scrub, a speed menu (frames per second) and the
    frame's number; the root element's `data-frame` and `data-playing` say where it is."""
    import base64
    import json
    import uuid

    if not pngs:
        raise ValueError("a player needs at least one frame")
    pid = f"logicars-player-{uuid.uuid4().hex[:12]}"
    scale = max(1.0, PLAYER_SIZE / max(height, width))
    css_w, css_h = round(width * scale), round(height * scale)
    data = json.dumps([base64.b64encode(p).decode("ascii") for p in pngs])
    options = "".join(
        f'<option value="{fps}"{" selected" if fps == DEFAULT_FPS else ""}>{fps} fps</option>'
        for fps in SPEEDS
    )
    button = "font-size:13px;padding:1px 8px;margin-right:4px;cursor:pointer"
    controls = (
        '<div class="lc-controls" style="display:flex;flex-wrap:wrap;align-items:center;'
        'gap:4px;margin-bottom:4px">'
        f'<button type="button" class="lc-prev" title="previous frame" style="{button}">'
        "\u25c0</button>"
        f'<button type="button" class="lc-play" style="{button}">\u25b6 play</button>'
        f'<button type="button" class="lc-next" title="next frame" style="{button}">'
        "\u25b6|</button>"
        f'<input type="range" min="0" max="{len(pngs) - 1}" value="0" step="1" '
        'aria-label="frame" style="flex:1 1 160px;min-width:120px;max-width:400px">'
        f'<span class="lc-frame" style="min-width:70px">1 / {len(pngs)}</span>'
        f'<select aria-label="speed">{options}</select></div>'
    )
    image = (
        f'<img alt="frame" width="{css_w}" height="{css_h}" style="image-rendering:pixelated;'
        f'max-width:100%;height:auto;display:block;border:1px solid #8884">'
    )
    script = _PLAYER_SCRIPT % {"id": json.dumps(pid)}
    return (
        f'<div class="logicars-animation logicars-player" id="{pid}" data-frame="0" '
        f'data-playing="0" style="{_BOX};max-width:{max(css_w, 420)}px">'
        f"{controls}{image}"
        f'<div style="font-size:12px;opacity:0.75">{_esc(caption)}</div>'
        # JSON in a script element: `</` cannot occur in base64, so the data cannot end it.
        f'<script type="application/json">{data}</script>'
        f"<script>{script}</script></div>"
    )


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
    from ..arguments import check_int
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
    pixels = write_frames_gif(arr.astype(np.float32), chosen, buf)
    h, w = arr.shape[1], arr.shape[2]
    what = "RGB of channels " + _join(chosen) if len(chosen) == 3 else f"channel {chosen[0]}"
    sampled = f" (sampled from {total})" if len(arr) < total else ""
    caption = f"{len(arr)} frames{sampled}, {h}×{w}, {what}"
    return Animation(buf.getvalue(), len(arr), h, w, caption, _pngs(pixels))


def _pngs(pixels: np.ndarray) -> list[bytes]:
    """Each frame `(H, W)` or `(H, W, 3)` uint8 as a PNG file at one pixel per cell (the
    player scales it up sharply)."""
    from PIL import Image

    out = []
    for frame in pixels:
        f = io.BytesIO()
        Image.fromarray(np.ascontiguousarray(frame)).save(f, format="PNG", optimize=False)
        out.append(f.getvalue())
    return out
