"""Per-epoch callbacks of `logicars.train` (`train(..., callbacks=[...])`).

A callback is any callable `callback(row, context)`, called after every epoch with the
epoch's `EpochMetrics` row (the row just appended to `metrics.csv`) and an
`EpochContext`. It returns None (or False) to go on, or True to end the run after this
epoch as an early stop (the final checkpoint, `summary.json` with `early_stopped` and
`stopped_by_callback`, the plots); raising `StopTraining` does the same.

    def stop_below(row, context):
        return row.hard_loss < 10  # True ends the run after this epoch

    logicars.train("gol", callbacks=[stop_below])

Callbacks observe; they do not change the run: training with callbacks that only read
gives the same parameters and losses as training without them. The model's async mask
stream is restored after the callbacks, so evaluating `context.model` (`evaluate`,
`rollout`) is safe; calling `train_step` on it or changing its parameters is not.

Any other exception from a callback ends the run: the checkpoint of this epoch is
written first (so `train(resume=run_dir)` continues from it), then the exception
propagates out of `train`; no summary or plots are written. After the run's last epoch
that checkpoint is the whole run: resume it with more epochs to train on.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Optional

import numpy as np

if TYPE_CHECKING:
    from .model import Model
    from .presets import Preset


class StopTraining(Exception):
    """Raised by a callback to end the run after the current epoch, as an early stop
    (the same as returning True)."""


@dataclasses.dataclass(frozen=True)
class EpochContext:
    """What a callback sees besides the epoch's metrics row."""

    run_dir: Path
    # The model being trained (the current attempt's after a restart): read it, do not
    # train or change it.
    model: Model
    # The run's preset: its task (`preset.task()`), spec, batch and grid.
    preset: Preset
    # The attempt (wiring) being trained, from 0; `restart_every` starts new ones.
    attempt: int
    # The epoch this call of `train` started after: 0 for a new run, the checkpoint's
    # epoch for a resumed one.
    start_epoch: int
    target_epochs: int
    # The first epoch after which the hard circuit passed the validation check, if any.
    solved_epoch: int | None


# `callback(row, context)`: None/False to go on, True to stop (see the module's doc).
Callback = Callable[[Any, EpochContext], Optional[bool]]


def check_callbacks(callbacks: Sequence[Callback] | None) -> list[Callback]:
    """The callbacks as a list, each checked to be callable."""
    if callbacks is None:
        return []
    if callable(callbacks) or isinstance(callbacks, (str, bytes)):
        raise TypeError("callbacks must be a list of callables, e.g. callbacks=[my_callback]")
    out = list(callbacks)
    for cb in out:
        if not callable(cb):
            raise TypeError(f"callbacks: {cb!r} is not callable")
    return out


def callback_name(callback: Callback) -> str:
    """A callback's name for messages and the summary: its qualified name, else its type's."""
    name = getattr(callback, "__qualname__", None) or type(callback).__qualname__
    return str(name)


def run_callbacks(callbacks: Sequence[Callback], row: Any, context: EpochContext) -> str | None:
    """Calls every callback with the epoch's row (a stop request does not skip the ones
    after it); the name of the first that asked to stop (by returning True or raising
    `StopTraining`), else None. The model's mask stream is restored afterwards, whatever
    the callbacks did with it. Other exceptions propagate at once."""
    model = context.model
    mask_state = model.mask_state
    stopped_by = None
    try:
        for cb in callbacks:
            try:
                result = cb(row, context)
            except StopTraining:
                result = True
            if result is None or result is False or result is np.False_:
                continue
            if result is not True and result is not np.True_:
                raise TypeError(
                    f"callback {callback_name(cb)} returned {type(result).__name__}; a "
                    "callback returns True to stop the run, None or False to go on"
                )
            if stopped_by is None:
                stopped_by = callback_name(cb)
        return stopped_by
    finally:
        model.mask_state = mask_state
