"""`RecordedTask`: learn an unknown rule from recorded state sequences (the `data:`
kind; the recordings themselves are `logicars.recorded`)."""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from ..recorded import DEFAULT_BATCH as RECORDED_BATCH
from ..recorded import (
    Recording,
    as_bits,
    check_encoding,
    cross_inconsistencies,
    inconsistencies,
    neighbourhoods,
    pack_bits,
    read_recording,
    row_keys,
    unpack_bits,
)
from .base import Task
from .data import PathLike


class RecordedTask(Task):
    """Reproduce recorded state sequences (module docstring): `recording` a `Recording`
    (or its `states` array, then `test`, `periodic` and `encoding` as in the file),
    `hidden` extra channels, `steps` CA steps per training rollout (one per recorded
    frame); the grid and loss channels are the recording's; `batch` transitions a
    training batch draws."""

    kind = "data"

    def __init__(
        self,
        recording: Recording | np.ndarray,
        name: str = "data",
        *,
        hidden: int = 0,
        steps: int = 1,
        batch: int = RECORDED_BATCH,
        test: np.ndarray | None = None,
        periodic: bool | None = None,
        encoding: np.ndarray | None = None,
        channels: int | None = None,
        height: int | None = None,
        width: int | None = None,
        loss_channels: Any = None,
        num_steps: int | None = None,
        fire_rate: float | None = None,
    ) -> None:
        if not isinstance(recording, Recording):
            enc = None if encoding is None else check_encoding(name, encoding)
            states = as_bits(f"{name}: states", recording, enc)
            held = None if test is None else as_bits(f"{name}: test", test, enc, states.shape[-1])
            recording = Recording(states, held, True if periodic is None else bool(periodic), enc)
        elif periodic is not None and bool(periodic) != recording.periodic:
            raise ValueError(
                f"task {name!r}: the recording is {'' if recording.periodic else 'not '}"
                "periodic; its boundary is the recording's"
            )
        self.recording = recording
        bits = recording.bits
        runs, frames, h, w, _ = recording.states.shape
        # The geometry a run records comes back through the same keywords (`make_task`).
        if channels is not None:
            hidden = int(channels) - bits
        if num_steps is not None:
            steps = num_steps
        if hidden < 0:
            raise ValueError(
                f"task {name!r}: the recording has {bits} bits per cell, "
                f"the model {bits + hidden} channels"
            )
        if fire_rate is not None:
            raise ValueError(f"task {name!r}: a recording is learnt with synchronous updates")
        if (height, width) not in ((None, None), (h, w)):
            raise ValueError(
                f"task {name!r}: the recording's grid is {h}x{w}, not {height}x{width}"
            )
        if loss_channels is not None and list(loss_channels) != list(range(bits)):
            raise ValueError(
                f"task {name!r}: the loss channels are the recording's bits, 0..{bits - 1}"
            )
        super().__init__(
            name,
            channels=bits + hidden,
            height=h,
            width=w,
            batch=batch,
            loss_channels=range(bits),
            num_steps=steps,
            periodic=recording.periodic,
        )
        if self.num_steps < 1:
            raise ValueError(f"task {name!r}: steps must be >= 1")
        if self.num_steps >= frames:
            raise ValueError(
                f"task {name!r}: {self.num_steps} steps per rollout need runs of more than "
                f"{self.num_steps} frames, the recording's have {frames}"
            )
        self.hidden = hidden
        if recording.test is not None:
            self._train, self._test = recording.states, recording.test
        elif runs >= 2:
            held = max(1, runs // 4)
            self._train, self._test = recording.states[:-held], recording.states[-held:]
        else:
            raise ValueError(
                f"task {name!r}: one run and no 'test' recordings: nothing to hold out "
                "(record 2 or more runs, or add a 'test' array)"
            )
        if hidden == 0:
            self._check_consistent()
        self._table: dict[bytes, np.ndarray] | None = None

    def _check_consistent(self) -> None:
        for label, part in (("states", self._train), ("test", self._test)):
            n, cells, pos = inconsistencies(part, self.periodic)
            if n:
                run, step, row, col = pos or (0, 0, 0, 0)
                raise ValueError(
                    f"task {self.name!r}: inconsistent transitions: {n} neighbourhood(s) lead to "
                    f"different next states ({cells} cell(s) differ from the most common), "
                    f"e.g. {label} run {run} step {step}->{step + 1} row {row} col {col}; the rule "
                    "is not a function of the 3x3 neighbourhood (learn it with hidden channels)"
                )
        # Across the two sets: the held-out recordings must follow the training ones' rule.
        if self._test is not self._train:
            n, cells, pos = cross_inconsistencies(self._train, self._test, self.periodic)
            if n:
                run, step, row, col = pos or (0, 0, 0, 0)
                raise ValueError(
                    f"task {self.name!r}: inconsistent transitions: {n} neighbourhoods of the "
                    f"held-out recordings ({cells} cells) lead to other next states than in "
                    f"the training ones, e.g. test run {run} step {step}->{step + 1} row {row} "
                    f"col {col}"
                )

    # -- the data --

    def _pairs(self, part: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Every (start frame, frame `num_steps` later) of recordings `part`, as `(N, H, W,
        bits)` each: from every frame, or each run's first with hidden channels."""
        k = self.num_steps
        firsts = part[:, :1] if self.hidden else part[:, :-k]
        lasts = part[:, k : k + 1] if self.hidden else part[:, k:]
        shape = (-1,) + part.shape[2:]
        return firsts.reshape(shape), lasts.reshape(shape)

    def _grids(self, bits: np.ndarray) -> np.ndarray:
        x = np.zeros(bits.shape[:3] + (self.channels,), dtype=np.float32)
        x[..., : self.recording.bits] = bits
        return x

    def transitions(self, held_out: bool = False) -> tuple[np.ndarray, np.ndarray]:
        """The training (or held-out) transitions: start grids `(N, H, W, C)` float32
        (hidden channels 0) and their targets on the loss channels `(N, H, W, bits)`."""
        first, last = self._pairs(self._test if held_out else self._train)
        return self._grids(first), last.astype(np.float32)

    def start(self, rng: np.random.Generator, batch: int, h: int, w: int) -> np.ndarray:
        """Recorded training frames (at the recording's size), else random bits."""
        if (h, w) != (self.height, self.width):
            return self._grids(rng.integers(0, 2, size=(batch, h, w, self.recording.bits)))
        first, _ = self._pairs(self._train)
        return self._grids(first[rng.integers(0, len(first), size=batch)])

    def sample(
        self, rng: np.random.Generator, batch: int | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        first, last = self._pairs(self._train)
        pick = rng.integers(0, len(first), size=self.batch if batch is None else batch)
        before, after = first[pick], last[pick]
        if self.recording.symmetric:
            # A rule the same under the square's symmetries: each transition turned and
            # mirrored at random, the same way before and after.
            square = self.height == self.width
            for i, turn in enumerate(rng.integers(0, 8 if square else 4, size=len(pick))):
                before[i], after[i] = _dihedral(before[i], turn), _dihedral(after[i], turn)
        x = self._grids(before)
        y = np.zeros(x.shape, dtype=np.float32)
        y[..., : self.recording.bits] = after
        return x, y

    def holdout(self, samples: int = 16, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
        """Every transition of the held-out recordings (whatever `samples` asks: the
        recordings are the check, as the Life rule's 512 boards are)."""
        first, last = self._pairs(self._test)
        return self._grids(first), last.astype(bool)

    def target(self, x: np.ndarray) -> np.ndarray | None:
        """The recorded rule applied `num_steps` times to `x`'s bits, where every
        neighbourhood on the way was recorded (None otherwise, or with hidden channels)."""
        if self.hidden:
            return None
        table = self._rule_table()
        bits = self.recording.bits
        y = np.asarray(x)[..., :bits] > 0.5
        for _ in range(self.num_steps):
            keys = row_keys(neighbourhoods(y, self.periodic))
            try:
                rows = [table[k.tobytes()] for k in keys]
            except KeyError:
                return None
            y = np.stack(rows).reshape(y.shape) if rows else y
        return y.astype(np.float32)

    def _rule_table(self) -> dict[bytes, np.ndarray]:
        if self._table is None:
            table: dict[bytes, np.ndarray] = {}
            for part in (self._train, self._test):
                c = part.shape[-1]
                keys = row_keys(
                    neighbourhoods(part[:, :-1].reshape((-1,) + part.shape[2:]), self.periodic)
                )
                nxt = part[:, 1:].reshape(-1, c)
                uniq, first = np.unique(keys, return_index=True)
                for k, i in zip(uniq, first):
                    table[k.tobytes()] = nxt[i]
            self._table = table
        return self._table

    # -- record --

    def to_dict(self) -> dict[str, Any]:
        rec = self.recording
        return {
            "kind": self.kind,
            "name": self.name,
            "hidden": self.hidden,
            "states": pack_bits(rec.states),
            "test": None if rec.test is None else pack_bits(rec.test),
            "encoding": None if rec.encoding is None else rec.encoding.tolist(),
            "symmetric": rec.symmetric,
            **self._geometry(),
        }

    @classmethod
    def from_dict(cls, record: dict[str, Any]) -> RecordedTask:
        """The task `to_dict` recorded (a run never needs the recording file again)."""
        enc = record.get("encoding")
        recording = Recording(
            unpack_bits(record["states"]),
            None if record.get("test") is None else unpack_bits(record["test"]),
            bool(record["periodic"]),
            None if enc is None else np.asarray(enc, dtype=np.uint8),
            bool(record.get("symmetric", False)),
        )
        return cls(
            recording,
            name=str(record["name"]),
            hidden=int(record["hidden"]),
            steps=int(record["num_steps"]),
            batch=int(record["batch"]),
        )

    @classmethod
    def from_file(cls, path: PathLike, name: str | None = None, **options: Any) -> RecordedTask:
        """The task of a recording file (`load_recording`); `options` as the constructor's."""
        recording = read_recording(path)
        try:
            return cls(
                recording, name=name or f"data:{os.path.basename(os.fspath(path))}", **options
            )
        except ValueError as e:
            raise ValueError(f"{os.fspath(path)}: {e}") from None


def _dihedral(grid: np.ndarray, turn: int) -> np.ndarray:
    """`grid` `(H, W, C)` under symmetry `turn` of the square: 0-3 flips (none, rows,
    columns, both), 4-7 the same after a transpose (square grids only)."""
    g = grid.transpose(1, 0, 2) if turn >= 4 else grid
    if turn & 1:
        g = g[::-1]
    if turn & 2:
        g = g[:, ::-1]
    return np.ascontiguousarray(g)
