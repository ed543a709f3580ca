"""Ctrl-C, and what batch schedulers (Slurm preemption, Kubernetes) and closed terminals
send: all three stop a training run after its epoch, with a checkpoint, and a sweep's
running points likewise (one handler for both)."""

from __future__ import annotations

import signal
import sys
import threading
from types import FrameType
from typing import Any

STOP_SIGNALS = tuple(
    getattr(signal, name) for name in ("SIGINT", "SIGTERM", "SIGHUP") if hasattr(signal, name)
)


class StopOnInterrupt:
    """SIGINT, SIGTERM and SIGHUP handler: the first signal asks the loop to stop after
    the current epoch (`signal_name` says which), a second one aborts at once
    (KeyboardInterrupt). `who` and `stopping` word the message the first one prints."""

    def __init__(
        self,
        who: str = "logicars",
        stopping: str = "finishing this epoch and saving a checkpoint",
    ) -> None:
        self.who, self.stopping = who, stopping
        self.requested = False
        self.signal_name: str | None = None
        self._previous: dict[int, Any] = {}

    def __enter__(self) -> StopOnInterrupt:
        # Signal handlers can only be set from the main thread; elsewhere the signals
        # keep their default behaviour.
        if threading.current_thread() is threading.main_thread():
            for signum in STOP_SIGNALS:
                self._previous[signum] = signal.signal(signum, self._handle)
        return self

    def __exit__(self, *exc: object) -> None:
        for signum, previous in self._previous.items():
            # None: the previous handler was not set from Python; fall back to the default.
            if previous is None:
                previous = signal.default_int_handler if signum == signal.SIGINT else signal.SIG_DFL
            signal.signal(signum, previous)

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        if self.requested:
            raise KeyboardInterrupt
        self.requested = True
        self.signal_name = signal.Signals(signum).name
        again = "Ctrl-C" if signum == signal.SIGINT else self.signal_name
        try:
            print(
                f"\n{self.who}: {self.signal_name} received; {self.stopping} "
                f"({again} again to abort)",
                file=sys.stderr,
                flush=True,
            )
        except (OSError, ValueError):
            pass  # a closed terminal (SIGHUP) must not stop the checkpoint being written
