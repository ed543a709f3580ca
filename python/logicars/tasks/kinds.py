"""Tasks by name (`make_task("life:B36/S23")`) and from a run's record (`task_from_dict`)."""

from __future__ import annotations

import functools
import os
from typing import Any

import numpy as np

from .base import Task
from .builtin import GrowTask, LifeTask, PatternTask
from .data import (
    CHECKERBOARD,
    COLORED_G,
    LIZARD,
    checkerboard_target,
    colored_g_target,
    image_bits,
    lizard_target,
    parse_rule,
    tile_bits,
)
from .recording import RecordedTask

KINDS = ("life", "pattern", "grow", "data")


def split_kind(text: str) -> tuple[str, str]:
    """`("life", "B36/S23")` of `"life:B36/S23"`; a ValueError for anything else."""
    kind, sep, arg = str(text).partition(":")
    kind = kind.strip().lower()
    if not sep or kind not in KINDS or not arg.strip():
        raise ValueError(
            f"{text!r} is not a task kind; expected life:RULE (e.g. life:B36/S23), "
            "grow:IMAGE.png, pattern:TILE.png or data:RECORDING.npz"
        )
    return kind, arg.strip()


def kind_data(text: str, size: int | None = None) -> np.ndarray | None:
    """The pixels a kind names (a file's, or a built-in target's), or None for a rule:
    the pattern's tile (h, w), the grown image (H, W, L) at most `size` pixels a side."""
    kind, arg = split_kind(text)
    if kind == "life":
        parse_rule(arg)
        return None
    if kind == "data":  # a recording, read by its task (`logicars.recorded`)
        return None
    if (kind, arg) in _BUILTIN:
        return _builtin_pixels(kind, arg).copy()
    if kind == "pattern":
        return tile_bits(_existing(arg))
    return image_bits(_existing(arg), size)


_BUILTIN = {("pattern", CHECKERBOARD), ("grow", LIZARD), ("grow", COLORED_G)}


def is_builtin_kind(text: str) -> bool:
    """Whether a `grow:`/`pattern:` kind names a preset's own target, not a file."""
    return split_kind(text) in _BUILTIN


@functools.cache
def _builtin_pixels(kind: str, arg: str) -> np.ndarray:
    """The presets' own targets (read once: the validation check builds its task often)."""
    if kind == "pattern":
        return checkerboard_target(4, 4)
    return lizard_target()[..., None] if arg == LIZARD else colored_g_target()


def _existing(path: str) -> str:
    # Anything but a missing file goes on to `load_image`, which says what it is.
    if not os.path.exists(path):
        raise FileNotFoundError(f"{path}: no such image file")
    return path


def make_task(
    kind: str, pixels: np.ndarray | None = None, growth: str = "grow", **geometry: Any
) -> Task:
    """The task of a kind string (`life:B3/S23`, `pattern:checkerboard`, `grow:lizard`,
    `grow:PATH.png`, ...) on the given geometry (`Task`'s keywords); `pixels` are the
    kind's tile or image when already loaded (`kind_data`), e.g. from a run's record;
    `growth` a grown image's mode (`GROWTH_MODES`)."""
    name, arg = split_kind(kind)
    if growth != "grow" and name != "grow":
        raise ValueError(f"growth={growth!r} is an option of grow: tasks, not of {kind!r}")
    if name == "life":
        return LifeTask(arg, **geometry)
    if name == "data":
        return RecordedTask.from_file(arg, name=kind, **geometry)
    if pixels is None:
        pixels = kind_data(kind)
    if name == "pattern":
        return PatternTask(np.asarray(pixels), name=kind, **geometry)
    # The coloured G starts from zeros as the notebook's; every other image from a seed.
    return GrowTask(
        np.asarray(pixels), name=kind, seed_cell=arg != COLORED_G, growth=growth, **geometry
    )


def task_from_dict(record: dict[str, Any]) -> Task | None:
    """The task a run recorded (`Task.to_dict`), or None for a custom subclass."""
    kind = record.get("kind")
    if kind == "data":
        return RecordedTask.from_dict(record)
    geometry = {
        k: record[k]
        for k in (
            "channels",
            "height",
            "width",
            "batch",
            "loss_channels",
            "num_steps",
            "periodic",
            "fire_rate",
        )  # fmt: skip
    }
    if kind == "life":
        return LifeTask(str(record["rule"]), **geometry)
    if kind == "pattern":
        return PatternTask(np.array(record["tile"]), name=str(record["name"]), **geometry)
    if kind == "grow":
        return GrowTask(
            np.array(record["image"]),
            name=str(record["name"]),
            seed_cell=bool(record["seed_cell"]),
            # Runs from before the growth modes grew only.
            growth=str(record.get("growth", "grow")),
            **geometry,
        )
    return None
