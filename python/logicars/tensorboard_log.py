"""TensorBoard event files of a training run (`train(..., tensorboard=True)`).

Each epoch's `metrics.csv` row becomes scalars of the same names (`soft_loss`,
`hard_loss`, `elapsed_s`) at step = epoch, written with tensorboardX (the optional extra:
`pip install 'logicars[tensorboard]'`); view them with `tensorboard --logdir runs`.

Events reach the file every `FLUSH_SECONDS` and before every checkpoint, so the log on
disk holds at least the epochs the last checkpoint holds. A resumed run writes a new
event file into the same directory that starts with TensorBoard's purge marker at the
first epoch it trains: the steps a killed run logged after its last checkpoint are
dropped by TensorBoard, so the log reads as one run with each epoch once, equal to
`metrics.csv`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

INSTALL_HINT = "pip install 'logicars[tensorboard]'"
FLUSH_SECONDS = 5


def require_writer() -> Any:
    """tensorboardX's `SummaryWriter`, or an ImportError that says how to install it."""
    try:
        from tensorboardX import SummaryWriter
    except ImportError:
        raise ImportError(f"tensorboard= needs the tensorboardX package: {INSTALL_HINT}") from None
    return SummaryWriter


class TensorBoardLog:
    """The per-epoch scalars of one call of `train`, from the epoch after `start_epoch`."""

    def __init__(self, logdir: Path, start_epoch: int) -> None:
        writer_class = require_writer()
        logdir.mkdir(parents=True, exist_ok=True)
        # tensorboardX names a file by the second it was opened and truncates a file of
        # that name: the start epoch keeps a resume within the same second apart, and
        # orders the files as TensorBoard reads them (by name).
        # Written by tensorboardX's thread every few seconds (and by `flush`, before each
        # checkpoint), not every epoch: a flush costs about an epoch of a small preset.
        self._writer = writer_class(
            logdir=str(logdir),
            purge_step=start_epoch + 1,
            filename_suffix=f".epoch{start_epoch:012d}",
            flush_secs=FLUSH_SECONDS,
            max_queue=1000,
        )

    def __call__(self, row: Any, context: Any) -> None:
        # The values metrics.csv holds: the elapsed time to 0.1 ms, as written there.
        self._writer.add_scalar("soft_loss", float(row.soft_loss), row.epoch)
        self._writer.add_scalar("hard_loss", float(row.hard_loss), row.epoch)
        self._writer.add_scalar("elapsed_s", round(float(row.elapsed_s), 4), row.epoch)

    def flush(self) -> None:
        self._writer.flush()

    def close(self) -> None:
        self._writer.close()
