"""The batch source of persisting and regenerating growth: `logicars.growth.GrowthBatches`
in the training loop, its pool kept beside the checkpoint."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import numpy as np

from ..files import load_npz, write_atomic
from ..growth import GrowthBatches
from .loop import BatchSource, Run, optimizer_settings

POOL_NAME = "pool.npz"


class PoolBatches(BatchSource):
    """Each epoch's batch from `GrowthBatches`; the step that returns the hard circuit's
    last states, which go back into the pool; the pool saved with every checkpoint (and
    read back when the run resumes), so that a resumed run draws what the straight one
    does."""

    def __init__(self, task: Any, config: Any, seed: int, run_dir: Path, resumed: bool) -> None:
        self.batches = GrowthBatches(
            task,
            seed,
            pool_size=config.pool_size,
            batch=config.pool_batch,
            hold=config.hold,
            max_steps=config.pool_steps,
            hold_schedule=config.hold_schedule,
            hold_tolerance=config.hold_tolerance,
        )
        self.pool_lr = config.pool_lr
        self.pool_epochs, self.pool_binarize_every = config.pool_epochs, config.pool_binarize_every
        self.path = run_dir / POOL_NAME
        if not resumed:
            # A pool left by an earlier run of the directory (one trained again from the
            # start) is not this run's: read, it would change what the run draws.
            self.path.unlink(missing_ok=True)
        elif self.path.exists():
            self.batches.load_state(load_npz(self.path, "the growth pool", 1 << 30, follow=False))

    def batch(self, run: Run) -> tuple[np.ndarray, np.ndarray]:
        return self.batches.sample(run.state.epoch + 1)

    def step(self, run: Run, x: np.ndarray, y: np.ndarray, lr: float) -> tuple[float, float]:
        b = self.batches
        if b.pooling and self.pool_lr is not None:
            lr = self.pool_lr
        soft, hard, last = run.model.train_step_at(
            x,
            y,
            steps=b.steps,
            loss_from=b.loss_from,
            keep_last=b.pooling,
            **optimizer_settings(run, lr),
        )
        was_pooling = b.pooling
        b.keep(run.state.epoch + 1, hard, last)
        if b.pooling and not was_pooling and self.pool_epochs is not None:
            self._start_fine_tune(run)
        return soft, hard

    def _start_fine_tune(self, run: Run) -> None:
        """The pool phase as a fine-tune of the grown circuit (`pool_epochs`): a fresh
        optimizer state, the phase's rounding rule, and `pool_epochs` epochs after this
        one, where the run ends (what persisted more often on the coloured G than the
        pool inside the growing attempt: docs/results.md)."""
        state, spec = run.state, run.model.spec
        if self.pool_binarize_every is not None and spec.binarize_states:
            spec = spec.with_rounding(True, self.pool_binarize_every)
        run.model = run.model.respecified(spec)
        state.pool_end = state.epoch + 1 + self.pool_epochs
        state.target_epochs = state.pool_end
        run.bar.total = state.target_epochs

    def end_attempt(self, run: Run, stalled: bool) -> None:
        self.batches.reset()

    def checkpoint(self, run: Run) -> None:
        state = self.batches.state()
        if not state:
            self.path.unlink(missing_ok=True)  # a restarted attempt has no pool yet
        else:
            buf = io.BytesIO()
            # Any: mypy checks a dict unpacked into np.savez against its allow_pickle too.
            arrays: dict[str, Any] = {k: np.asarray(v) for k, v in state.items()}
            np.savez(buf, **arrays)
            write_atomic(self.path, buf.getvalue())
