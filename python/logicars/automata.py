"""Example automata recorded from random soups, for the `data:` task kind: Wireworld (4
states in 2 bits), Brian's Brain (3 states in 2 bits), an elementary rule (110) on every
row of a 2-D grid, a Life-like rule (HighLife) recorded rather than named, and the XOR
of the four orthogonal neighbours (a parity, which no rule of fewer inputs predicts).

    >>> from logicars import automata
    >>> automata.wireworld().save("wireworld.npz")   # then: logicars train data:wireworld.npz

Each generator records `runs` runs of `steps` frames on a `size` x `size` periodic grid
and held-out runs on a `test_scale` times larger one (`Recording.test`).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from .recorded import Recording
from .tasks import life_step

# ---- the automata -----------------------------------------------------------------------

# A step function of integer state grids `(N, H, W)` on a periodic grid.
StepFn = Callable[[np.ndarray], np.ndarray]


def _moore_count(mask: np.ndarray) -> np.ndarray:
    m = mask.astype(np.int8)
    neighbours = (
        np.roll(m, (dr, dc), axis=(1, 2))
        for dr in (-1, 0, 1)
        for dc in (-1, 0, 1)
        if (dr, dc) != (0, 0)
    )
    return sum(neighbours, np.zeros_like(m))


def wireworld_step(s: np.ndarray) -> np.ndarray:
    """Wireworld: 0 empty, 1 electron head, 2 tail, 3 conductor (a head's neighbour
    conductor becomes a head when 1 or 2 of its neighbours are heads)."""
    heads = _moore_count(s == 1)
    out = s.copy()
    out[s == 1] = 2
    out[s == 2] = 3
    out[(s == 3) & ((heads == 1) | (heads == 2))] = 1
    return out


def brians_brain_step(s: np.ndarray) -> np.ndarray:
    """Brian's Brain: 0 off, 1 firing, 2 dying (off fires with exactly 2 firing neighbours)."""
    firing = _moore_count(s == 1)
    out = np.zeros_like(s)
    out[(s == 0) & (firing == 2)] = 1
    out[s == 1] = 2
    return out


def elementary_step(rule: int) -> StepFn:
    """An elementary (1-D, radius 1) rule applied to every row of a 2-D grid on its own,
    wrapping around the row: a 2-D CA whose 3x3 neighbourhood holds the row's three cells."""

    def step(s: np.ndarray) -> np.ndarray:
        code = (np.roll(s, 1, axis=2) << 2) | (s << 1) | np.roll(s, -1, axis=2)
        return ((rule >> code) & 1).astype(s.dtype)

    return step


def parity_step(s: np.ndarray) -> np.ndarray:
    """The XOR of the four orthogonal neighbours (north, south, west, east) on 0/1 grids."""
    return np.roll(s, 1, 1) ^ np.roll(s, -1, 1) ^ np.roll(s, 1, 2) ^ np.roll(s, -1, 2)


def life_like_step(rule: str) -> StepFn:
    """A Life-like rule (B/S notation) on 0/1 grids."""

    def step(s: np.ndarray) -> np.ndarray:
        return life_step(s[..., None], rule)[..., 0].astype(s.dtype)

    return step


def record(
    step: StepFn,
    soup: Callable[[np.random.Generator, tuple[int, ...]], np.ndarray],
    *,
    runs: int,
    steps: int,
    size: int,
    seed: int,
) -> np.ndarray:
    """`runs` recordings of `steps` frames `(runs, steps, size, size)` uint8 of `step`
    from random soups (`soup(rng, shape)`), periodic."""
    rng = np.random.default_rng(seed)
    s = soup(rng, (runs, size, size)).astype(np.uint8)
    frames = [s]
    for _ in range(steps - 1):
        s = step(s)
        frames.append(s)
    return np.stack(frames, axis=1)


def _recording(
    step: StepFn,
    soup: Callable[[np.random.Generator, tuple[int, ...]], np.ndarray],
    encoding: np.ndarray | None,
    *,
    runs: int,
    steps: int,
    size: int,
    test_scale: int,
    seed: int,
    symmetric: bool,
) -> Recording:
    states = record(step, soup, runs=runs, steps=steps, size=size, seed=seed)
    test = record(
        step, soup, runs=max(1, runs // 4), steps=steps, size=size * test_scale, seed=seed + 1
    )
    enc = encoding if encoding is not None else np.array([[0], [1]], dtype=np.uint8)
    return Recording(enc[states], enc[test], True, encoding, symmetric)


def _choice(p: list[float]) -> Callable[[np.random.Generator, tuple[int, ...]], np.ndarray]:
    """Soups `(runs, H, W)` of states drawn with probabilities near `p`, each run its own
    (Dirichlet around `p`): sparse and dense runs show a rule more of its neighbourhoods
    than one density does, so a circuit learnt from them generalises to unseen runs."""

    def soup(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
        mix = rng.dirichlet(4 * len(p) * np.asarray(p), size=shape[0])
        return np.stack([rng.choice(len(p), size=shape[1:], p=q) for q in mix])

    return soup


# Wireworld's 4 states in 2 bits: empty 00, head 10, tail 01, conductor 11 (bit 0 first).
WIREWORLD_ENCODING = np.array([[0, 0], [1, 0], [0, 1], [1, 1]], dtype=np.uint8)
# Brian's Brain's 3 states in 2 bits: off 00, firing 10, dying 01.
BRIANS_BRAIN_ENCODING = np.array([[0, 0], [1, 0], [0, 1]], dtype=np.uint8)


def wireworld(
    runs: int = 32, steps: int = 12, size: int = 12, test_scale: int = 4, seed: int = 0
) -> Recording:
    """Wireworld from random soups (mostly conductor, some heads and tails): `runs` runs
    of `steps` frames on `size` x `size`, the held-out ones on a `test_scale` times
    larger grid. 32 runs by default: from 16 the circuit generalised on 2 of 3 seeds
    tried, its heads' count being one combination of 2 bits (docs/recordings.md)."""
    return _recording(
        wireworld_step, _choice([0.3, 0.15, 0.1, 0.45]), WIREWORLD_ENCODING,
        runs=runs, steps=steps, size=size, test_scale=test_scale, seed=seed, symmetric=True,
    )  # fmt: skip


def brians_brain(
    runs: int = 16, steps: int = 12, size: int = 12, test_scale: int = 4, seed: int = 0
) -> Recording:
    """Brian's Brain from random soups (as `wireworld`)."""
    return _recording(
        brians_brain_step, _choice([0.6, 0.25, 0.15]), BRIANS_BRAIN_ENCODING,
        runs=runs, steps=steps, size=size, test_scale=test_scale, seed=seed, symmetric=True,
    )  # fmt: skip


def elementary(
    rule: int = 110,
    runs: int = 16,
    steps: int = 12,
    size: int = 12,
    test_scale: int = 4,
    seed: int = 0,
) -> Recording:
    """An elementary rule (default 110) on every row of a 2-D grid (`elementary_step`)."""
    if not 0 <= int(rule) <= 255:
        raise ValueError(f"an elementary rule is 0..255, got {rule}")
    return _recording(
        elementary_step(int(rule)), _choice([0.5, 0.5]), None,
        runs=runs, steps=steps, size=size, test_scale=test_scale, seed=seed, symmetric=False,
    )  # fmt: skip


def life_like(
    rule: str = "B36/S23",
    runs: int = 16,
    steps: int = 12,
    size: int = 12,
    test_scale: int = 4,
    seed: int = 0,
) -> Recording:
    """A Life-like rule (default HighLife, B36/S23) recorded from random soups."""
    return _recording(
        life_like_step(rule), _choice([0.6, 0.4]), None,
        runs=runs, steps=steps, size=size, test_scale=test_scale, seed=seed, symmetric=True,
    )  # fmt: skip


def parity(
    runs: int = 16, steps: int = 12, size: int = 12, test_scale: int = 4, seed: int = 0
) -> Recording:
    """The XOR of the four orthogonal neighbours (`parity_step`) from random soups. Every
    function of three of them or fewer is uncorrelated with it, so a relaxed circuit
    first settles on 0.5 everywhere (a soft loss of 0.25 per cell) before it finds the
    XOR tree (docs/recordings.md)."""
    return _recording(
        parity_step, _choice([0.5, 0.5]), None,
        runs=runs, steps=steps, size=size, test_scale=test_scale, seed=seed, symmetric=True,
    )  # fmt: skip


EXAMPLES: dict[str, Callable[..., Recording]] = {
    "wireworld": wireworld,
    "brians-brain": brians_brain,
    "rule110": elementary,
    "highlife": life_like,
    "parity": parity,
}
