"""Learn an unknown rule from what was observed: the recordings of the `data:` task kind
(`logicars.tasks.RecordedTask`), read, checked and packed here.

A recording is an `.npz` file of state sequences:

- `states`: `(runs, steps, H, W, C)` of 0/1 (C bits per cell), or `(runs, steps, H, W)`
  of integer states `0..n-1`, which `encoding` `(n, bits)` of 0/1 turns into bits (no
  `encoding`: a 0/1 grid is one bit per cell, other states their binary number, least
  significant bit first);
- `test` (optional): held-out recordings in the same format, on any grid size (the
  example generators record them on a 4x larger grid); without it the last quarter of
  the runs of `states` (at least one) is held out;
- `periodic` (optional, default true): whether the recording wraps around its edges
  (else cells beyond the edge are 0);
- `symmetric` (optional, default false): whether the rule is the same under rotations and
  reflections of the grid (Wireworld, Brian's Brain, Life-like rules are; rule 110 is
  not): training then also draws rotated and mirrored transitions, eight times the
  recording, which the learnt circuit needs to generalise from a small recording.

Training learns a circuit that maps a recorded state to the next one: the start grid is
a recorded frame (the bits on the first channels, any hidden channels 0), the target the
frame `steps` later, reached in `steps` CA steps (`steps` = the task's `num_steps`, 1
by default). With hidden channels the rollouts start at each run's first frame, where
the recording's hidden state is known to be empty, so the hidden channels can carry what
the recording does not show across the steps of a rollout. The held-out check runs the
hard circuit on every transition of the held-out recordings (`holdout`).

A recording whose visible states are not a function of their 3x3 neighbourhood (the same
neighbourhood followed by different next states) cannot be learnt without hidden
channels; `RecordedTask` refuses it with the count and an example position.

`logicars.automata` records known automata (Wireworld, Brian's Brain, rule 110, HighLife)
from random soups; `Recording.save` writes the file.
"""

from __future__ import annotations

import base64
import functools
import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, Union

import numpy as np

from .spec import ModelSpec

if TYPE_CHECKING:
    from .tasks import RecordedTask

PathLike = Union[str, "os.PathLike[str]"]

# Transitions drawn per training batch unless a task says otherwise.
DEFAULT_BATCH = 8
# Files larger than this are refused before reading (a recording is bits).
MAX_FILE_BYTES = 512 * 1024 * 1024


# ---- reading and checking a recording ----------------------------------------------------


@dataclass(frozen=True)
class Recording:
    """State sequences as bits: `states` `(runs, steps, H, W, C)` uint8 0/1, `test` the
    held-out ones (or None), `periodic` the boundary, `encoding` the states' bits when
    the recording was of integer states (`(n, C)` uint8, else None)."""

    states: np.ndarray
    test: np.ndarray | None = None
    periodic: bool = True
    encoding: np.ndarray | None = None
    # The rule is invariant under the square's rotations and reflections (module doc).
    symmetric: bool = False

    @property
    def bits(self) -> int:
        return int(self.states.shape[-1])

    def save(self, path: PathLike) -> None:
        """Writes the recording as a `data:` file (bits, with the encoding when it has one,
        so that the file records the states as integers)."""
        arrays: dict[str, Any] = {
            "periodic": np.array(self.periodic),
            "symmetric": np.array(self.symmetric),
        }
        for key, value in (("states", self.states), ("test", self.test)):
            if value is not None:
                arrays[key] = (
                    value if self.encoding is None else decode_states(value, self.encoding)
                )
        if self.encoding is not None:
            arrays["encoding"] = self.encoding
        with open(path, "wb") as f:
            np.savez_compressed(f, **arrays)


def decode_states(bits: np.ndarray, encoding: np.ndarray) -> np.ndarray:
    """The integer states of bit grids `(..., C)` under `encoding` `(n, C)` (-1 where the
    bits are no state's)."""
    weights = 1 << np.arange(bits.shape[-1])
    codes = (np.asarray(bits).astype(np.int64) * weights).sum(axis=-1)
    table = np.full(1 << bits.shape[-1], -1, dtype=np.int16)
    table[(encoding.astype(np.int64) * weights).sum(axis=-1)] = np.arange(len(encoding))
    return table[codes].astype(np.uint8 if len(encoding) <= 256 else np.int16)


def as_bits(where: str, a: Any, encoding: np.ndarray | None, bits: int | None = None) -> np.ndarray:
    """`(runs, steps, H, W, C)` uint8 of a recording's array, checked (module docstring)."""
    a = np.asarray(a)
    if a.dtype.kind not in "biu" and not (a.dtype.kind == "f" and np.all(np.mod(a, 1) == 0)):
        raise ValueError(f"{where}: expected integer states or 0/1 bits, got dtype {a.dtype}")
    if a.ndim == 5:
        if encoding is not None:
            raise ValueError(
                f"{where}: an encoding is for integer states (runs, steps, H, W), got bits "
                f"{a.shape}"
            )
        if a.size and (a.min() < 0 or a.max() > 1):
            raise ValueError(
                f"{where}: bits (runs, steps, H, W, C) must be 0 or 1, found {a.min()}..{a.max()}"
            )
        out = a.astype(np.uint8)
    elif a.ndim == 4:
        if a.size and a.min() < 0:
            raise ValueError(f"{where}: states must be >= 0, found {a.min()}")
        top = int(a.max()) if a.size else 0
        if encoding is None:
            width = max(1, top.bit_length())
            encoding = (np.arange(top + 1)[:, None] >> np.arange(width)) & 1
        if top >= len(encoding):
            raise ValueError(
                f"{where}: state {top} has no row in the encoding of {len(encoding)} states"
            )
        out = np.asarray(encoding, dtype=np.uint8)[a.astype(np.int64)]
    else:
        raise ValueError(
            f"{where}: expected (runs, steps, H, W, C) bits or (runs, steps, H, W) states, "
            f"got shape {a.shape}"
        )
    runs, steps, h, w, c = out.shape
    if runs < 1 or h < 1 or w < 1 or c < 1:
        raise ValueError(f"{where}: empty recording, shape {a.shape}")
    if steps < 2:
        raise ValueError(
            f"{where}: a run needs at least 2 steps (a state and its next), got {steps}"
        )
    if bits is not None and c != bits:
        raise ValueError(f"{where}: {c} bits per cell, the training recording has {bits}")
    return np.ascontiguousarray(out)


def check_encoding(where: str, a: Any) -> np.ndarray:
    enc = np.asarray(a)
    if enc.ndim == 1:
        enc = enc[:, None]
    if enc.ndim != 2 or enc.size == 0 or enc.dtype.kind not in "biuf":
        raise ValueError(f"{where}: encoding must be (states, bits) of 0/1, got {enc.shape}")
    if not np.isin(enc, (0, 1)).all():
        raise ValueError(f"{where}: encoding must hold 0/1 bits only")
    enc = enc.astype(np.uint8)
    if len({row.tobytes() for row in enc}) != len(enc):
        raise ValueError(f"{where}: encoding gives two states the same bits")
    return enc


def load_recording(path: PathLike) -> Recording:
    """A recording from a `data:` file (module docstring); ValueError (one line naming the
    file) for anything else."""
    path = os.fspath(path)
    if not os.path.isfile(path):
        raise FileNotFoundError(f"{path}: no such recording file")
    if os.path.getsize(path) > MAX_FILE_BYTES:
        raise ValueError(f"{path}: larger than {MAX_FILE_BYTES >> 20} MB, not a recording")
    from ._core import memory_cap_mb
    from .files import load_npz

    try:
        # Headers checked before anything is allocated (issue 43: a lying member).
        data = load_npz(path, "recording", memory_cap_mb() << 20)
    except ValueError as e:
        raise ValueError(f"{path}: not a readable .npz recording ({e})") from None
    if "states" not in data:
        raise ValueError(f"{path}: no 'states' array (found: {', '.join(data) or 'none'})")
    unknown = sorted(set(data) - {"states", "test", "encoding", "periodic", "symmetric"})
    if unknown:
        raise ValueError(
            f"{path}: unknown array {unknown[0]!r}; expected states, test, encoding, periodic, "
            "symmetric"
        )
    encoding = None if "encoding" not in data else check_encoding(path, data["encoding"])
    states = as_bits(f"{path}: states", data["states"], encoding)
    test = data.get("test")
    if test is not None:
        test = as_bits(f"{path}: test", test, encoding, states.shape[-1])
    flags = {}
    for key, default in (("periodic", True), ("symmetric", False)):
        value = data.get(key, np.array(default))
        if value.shape != () or value.dtype.kind not in "biu":
            raise ValueError(f"{path}: {key} must be one boolean, got {value!r}")
        flags[key] = bool(value)
    return Recording(states, test, flags["periodic"], encoding, flags["symmetric"])


@functools.lru_cache(maxsize=8)
def _cached_recording(path: str, mtime_ns: int, size: int) -> Recording:
    return load_recording(path)


def read_recording(path: PathLike) -> Recording:
    """`load_recording`, read once per file version (a run's checks build its task often)."""
    path = os.fspath(path)
    try:
        st = os.stat(path)
    except OSError:
        raise FileNotFoundError(f"{path}: no such recording file") from None
    return _cached_recording(os.path.abspath(path), st.st_mtime_ns, st.st_size)


def neighbourhoods(grids: np.ndarray, periodic: bool) -> np.ndarray:
    """Each cell's 3x3 neighbourhood of grids `(N, H, W, C)`, `(N, H, W, 9 * C)` uint8
    (rows then columns, every channel; beyond the edge 0 unless `periodic`)."""
    g = np.asarray(grids, dtype=np.uint8)
    n, h, w, c = g.shape
    mode: Literal["wrap", "constant"] = "wrap" if periodic else "constant"
    p = np.pad(g, ((0, 0), (1, 1), (1, 1), (0, 0)), mode=mode)
    parts = [p[:, dr : dr + h, dc : dc + w] for dr in range(3) for dc in range(3)]
    return np.concatenate(parts, axis=-1)


def row_keys(rows: np.ndarray) -> np.ndarray:
    """One hashable value per row of bits `(..., K)` (packed bytes as a void scalar)."""
    packed = np.packbits(rows.reshape(-1, rows.shape[-1]), axis=-1)
    return np.ascontiguousarray(packed).view(np.dtype((np.void, packed.shape[-1]))).ravel()


def inconsistencies(states: np.ndarray, periodic: bool) -> tuple[int, int, tuple[int, ...] | None]:
    """Transitions of `states` `(runs, steps, H, W, C)` whose 3x3 neighbourhood is followed
    by other next states elsewhere: `(neighbourhoods, cells that differ from their
    neighbourhood's most common next state, the first of them (run, step, row, col) or
    None)`."""
    runs, steps, h, w, c = states.shape
    before = states[:, :-1].reshape(-1, h, w, c)
    _, key = np.unique(row_keys(neighbourhoods(before, periodic)), return_inverse=True)
    _, nxt = np.unique(row_keys(states[:, 1:].reshape(-1, c)), return_inverse=True)
    key, nxt = key.ravel(), nxt.ravel()
    pairs, counts = np.unique(np.stack([key, nxt], axis=1), axis=0, return_counts=True)
    outcomes = np.bincount(pairs[:, 0])
    if outcomes.max() <= 1:
        return 0, 0, None
    # Each neighbourhood's most common next state (pairs are sorted by key, then next).
    order = np.lexsort((-counts, pairs[:, 0]))
    firsts = np.flatnonzero(np.r_[True, np.diff(pairs[order, 0]) != 0])
    majority = np.zeros(len(outcomes), dtype=np.int64)
    majority[pairs[order[firsts], 0]] = pairs[order[firsts], 1]
    odd = nxt != majority[key]
    first = int(np.flatnonzero(odd)[0])
    pos = np.unravel_index(first, (runs, steps - 1, h, w))
    return int(np.count_nonzero(outcomes > 1)), int(np.count_nonzero(odd)), tuple(map(int, pos))


def cross_inconsistencies(
    a: np.ndarray, b: np.ndarray, periodic: bool
) -> tuple[int, int, tuple[int, ...] | None]:
    """`inconsistencies` of `b`'s transitions against `a`'s (b's positions)."""

    def table(part: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        c = part.shape[-1]
        keys = row_keys(neighbourhoods(part[:, :-1].reshape((-1,) + part.shape[2:]), periodic))
        return keys, row_keys(part[:, 1:].reshape(-1, c))

    ka, na = table(a)
    kb, nb = table(b)
    ua, ia = np.unique(ka, return_index=True)
    where = np.searchsorted(ua, kb)
    where = np.minimum(where, len(ua) - 1)
    known = ua[where] == kb
    bad = known & (na[ia[where]] != nb)
    if not bad.any():
        return 0, 0, None
    first = int(np.flatnonzero(bad)[0])
    runs, steps, h, w, _ = b.shape
    pos = np.unravel_index(first, (runs, steps - 1, h, w))
    return len(np.unique(kb[bad])), int(np.count_nonzero(bad)), tuple(map(int, pos))


def pack_bits(bits: np.ndarray) -> dict[str, Any]:
    """Bits as JSON: their shape and the packed bytes in base64 (a run's record)."""
    return {
        "shape": list(bits.shape),
        "bits": base64.b64encode(np.packbits(bits).tobytes()).decode(),
    }


def unpack_bits(record: dict[str, Any]) -> np.ndarray:
    shape = tuple(int(n) for n in record["shape"])
    raw = np.frombuffer(base64.b64decode(record["bits"], validate=True), dtype=np.uint8)
    count = int(np.prod(shape))
    if len(raw) != -(-count // 8):
        raise ValueError(f"a recorded task's bits hold {len(raw) * 8} bits, not {shape}")
    return np.unpackbits(raw, count=count).reshape(shape)


# ---- the preset of `train data:FILE.npz` --------------------------------------------------------

# The model a recording trains on by default. Perception is the first-kernel layer alone
# (each of 4 kernels a gate of the centre and each neighbour, per channel), so the update
# network sees every neighbour's bits and can combine channels: a rule of several bits
# (Wireworld's heads are one combination of 2 bits) needs the neighbours' channels
# together, which the Game of Life's narrowing perception (one output per kernel and
# channel) hides. 17 layers of 128, as the Game of Life's, count the neighbours.
DEFAULT_MODEL: dict[str, Any] = {
    "kernels": 4,
    "perceive": [8],
    "update": [128] * 17,
}
# The update network narrows to the output by halves (unique wiring needs 2 * out >= in).
_TAPER = (64, 32, 16, 8, 4, 2)
DEFAULT_EPOCHS = 8000
# One attempt: a recording's circuit reaches a hard loss of 0 on its batches after a few
# thousand epochs and goes on generalising to the held-out recordings after that.
DEFAULT_TRAINING: dict[str, Any] = {"lr": 0.05}


def default_spec(task: RecordedTask) -> ModelSpec:
    """The model `train data:FILE.npz` trains `task` with: `DEFAULT_MODEL` on the task's
    channels, steps and boundary (an experiment file's [model] table changes any of it,
    hidden channels as `channels`, steps per rollout as `num_steps`)."""
    return ModelSpec.build(
        channels=task.channels,
        num_steps=task.num_steps,
        periodic=task.periodic,
        loss_channels=list(task.loss_channels),
        kernels=DEFAULT_MODEL["kernels"],
        perceive=DEFAULT_MODEL["perceive"],
        update=DEFAULT_MODEL["update"] + [w for w in _TAPER if w >= 2 * task.channels],
    )


def describe(task: RecordedTask) -> str:
    """A recorded task's one-line description (the run's preset's)."""
    runs = task.recording.states.shape[0]
    return (
        f"reproduce the next state of {runs} recorded runs ({task.height}x{task.width}, "
        f"{task.recording.bits} bit(s) per cell)"
    )
