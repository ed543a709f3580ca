"""The training loop: one engine step per epoch, and the policies around it.

The loop draws a batch from its `BatchSource`, takes one step, records the epoch's row and
hands it to its policies (`Policy`): stopping on solve, repair, the drift search, restarts
and stalls, the lowest circuit, callbacks (`logicars.training.policies`). Each policy is
called at the same few points of every epoch and changes the run only through `Run`: its
model, its state, its stop. A new concern is a new policy, not a new branch here.
"""

from __future__ import annotations

import abc
import math
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..checkpoint import save_checkpoint
from ..model import Model
from ..runstate import CHECKPOINT_NAME, EpochMetrics, RunState
from .interrupts import StopOnInterrupt


class Run:
    """What the loop and its policies share: the model (a restart replaces it), the
    run's state, its directory, the interrupt handler, the progress bar and the clock."""

    def __init__(
        self,
        model: Model,
        state: RunState,
        run_dir: Path,
        interrupt: StopOnInterrupt,
        bar: Any,
        quiet: bool,
    ) -> None:
        self.model, self.state, self.run_dir = model, state, run_dir
        self.interrupt, self.bar, self.quiet = interrupt, bar, quiet
        self.policies: list[Policy] = []
        self.start_epoch = state.epoch  # the epoch this call started after
        self.stop_reason: str | None = None  # why the run ends early, if it does
        self.stopped_by_callback: str | None = None
        self._offset, self._t0 = state.wall_seconds, time.perf_counter()

    def seconds(self) -> float:
        """Training seconds so far, those of the run before a resume included."""
        return self._offset + time.perf_counter() - self._t0

    def solved(self) -> None:
        """The hard circuit passes the validation check now."""
        self.state.solved_epoch = self.state.epoch
        self.state.solved_seconds = self.seconds()

    def stop(self, reason: str) -> None:
        """Ends the run after this epoch (an early stop)."""
        self.stop_reason = reason

    def dispatch(self, hook: str, *args: Any) -> None:
        """Calls `hook` of every policy, in order."""
        for policy in self.policies:
            getattr(policy, hook)(self, *args)

    def checkpoint(self, **flags: bool) -> None:
        """Writes the checkpoint, after what the policies keep beside it."""
        self.dispatch("checkpoint")
        save_checkpoint(self.run_dir / CHECKPOINT_NAME, self.model, self.state.to_extra(**flags))


class Policy:
    """One concern of a run, called at fixed points of every epoch; each method does
    nothing unless overridden. A policy changes the run through `run`: `run.model`,
    `run.state`, `run.solved()`, `run.stop(...)`."""

    def before_epoch(self, run: Run) -> None:
        """Before the epoch's batch: an attempt may end here (`Run.dispatch("end_attempt")`)."""

    def before_step(self, run: Run) -> None:
        """Right before the training step."""

    def after_step(self, run: Run, row: EpochMetrics) -> None:
        """After the step, with the epoch's metrics row (recorded in `run.state`)."""

    def end_attempt(self, run: Run, stalled: bool) -> None:
        """An attempt (a wiring) ends unsolved before the run does; `stalled`: it
        stalled rather than ran its epochs."""

    def end_run(self, run: Run) -> None:
        """The run trained its last epoch."""

    def checkpoint(self, run: Run) -> None:
        """A checkpoint is about to be written."""


def optimizer_settings(run: Run, lr: float) -> dict[str, float]:
    """A training step's optimizer settings at learning rate `lr`: the run's weight decay
    and β1 (every `BatchSource.step` takes them from here)."""
    p = run.state.preset
    return {"lr": lr, "weight_decay": p.weight_decay, "beta1": p.beta1}


class BatchSource(Policy, abc.ABC):
    """Where each epoch's inputs and targets come from, and the step taken on them; a
    policy too, so that a source that keeps state (a sample pool) sees the run's events
    (its `checkpoint`, say)."""

    @abc.abstractmethod
    def batch(self, run: Run) -> tuple[np.ndarray, np.ndarray]: ...

    def step(self, run: Run, x: np.ndarray, y: np.ndarray, lr: float) -> tuple[float, float]:
        """One training step on the batch at learning rate `lr`: (soft loss, hard loss).
        A pool overrides it to take the step that returns the last states, and keeps
        them."""
        return run.model.train_step(x, y, **optimizer_settings(run, lr))


class TaskBatches(BatchSource):
    """A fresh batch of the task every epoch, drawn from the run's data stream."""

    def __init__(self, task: Any) -> None:
        self.task = task

    def batch(self, run: Run) -> tuple[np.ndarray, np.ndarray]:
        return self.task.sample(run.state.rng)


def train_epochs(
    run: Run, batches: BatchSource, policies: Sequence[Policy], checkpoint_every: int | None
) -> None:
    """Trains `run` until its target epochs, an early stop or an interrupt; then, if it
    trained its last epoch, the policies' `end_run`."""
    state = run.state
    run.policies = [batches, *policies]
    # The epochs to train may grow on the way (a stalled attempt makes way for another).
    while state.epoch < state.target_epochs:
        epoch = state.epoch + 1
        run.dispatch("before_epoch")
        if run.stop_reason is not None:
            break
        x, y = batches.batch(run)
        run.dispatch("before_step")
        lr = state.preset.lr_at(epoch, state.target_epochs)
        soft, hard = batches.step(run, x, y, lr)
        attempt = 1 + len(state.restarts)
        row = _record(run, EpochMetrics(epoch, soft, hard, run.seconds(), attempt, lr))
        run.dispatch("after_step", row)
        if run.stop_reason is not None or run.interrupt.requested:
            break
        if epoch == state.target_epochs:
            break
        if checkpoint_every is not None and epoch % checkpoint_every == 0:
            run.checkpoint()
    run.bar.close()  # the searches at the end show bars of their own
    if state.epoch == state.target_epochs:
        run.dispatch("end_run")
    # The last epoch's validation and repairs, and the searches that end the run.
    state.after_seconds = run.seconds() - state.elapsed


def note(run: Run, **fields: Any) -> None:
    """Adds what a policy found in this epoch (`validation`, `repair`) to its row, before
    metrics.csv gets it (the CSV writer acts after the other policies)."""
    run.state.metrics[-1] = run.state.metrics[-1]._replace(**fields)


def _record(run: Run, row: EpochMetrics) -> EpochMetrics:
    """The epoch's row in the run's state and the progress bar; a soft loss that is not
    finite ends the run (FloatingPointError)."""
    state = run.state
    if not math.isfinite(row.soft_loss):
        ckpt = run.run_dir / CHECKPOINT_NAME
        where = f"{ckpt}" if ckpt.exists() else "none yet"
        raise FloatingPointError(
            f"training diverged at epoch {row.epoch} (soft loss {row.soft_loss}); "
            f"last good checkpoint: {where}"
        )
    state.metrics.append(row)
    state.after_seconds = 0.0  # the row's seconds count them
    if row.hard_loss == 0:
        state.zero_streak += 1
        if state.first_zero is None:
            state.first_zero = row.epoch
    else:
        state.zero_streak = 0
    postfix = {"soft": f"{row.soft_loss:.4g}", "hard": f"{row.hard_loss:.4g}"}
    run.bar.set_postfix(postfix, refresh=False)
    run.bar.update(1)
    return row
