"""Discrete repair: closing the last wrong cells of a hard circuit by changing gate ops.

A relaxed circuit that solves its task often hedges: a few gates are mixtures whose most
likely op computes something slightly different, so the hard circuit keeps a handful of
wrong cells that more gradient steps do not remove (the soft loss, and its gradient, are
near 0). `repair` searches the hard circuit directly. Candidate changes are a gate's
next most likely ops, least confident gates first (the smallest logit gap to the
chosen op, or the truth-table row closest to ½); each candidate is run exactly on the
validation inputs (`evaluate.heldout_inputs`, the bit-sliced simulator) and kept when
it strictly lowers the number of wrong cells. Passes repeat while they improve, within
a budget of evaluations, so the result is deterministic.

`method="drift"` searches differently, in the engine (`Model.drift_search`): it flips
one truth-table row of one gate at a time, in passes over all of them in random orders,
and keeps the flip when the wrong cells do not grow. Keeping the flips that leave the
count equal lets it walk across the plateaus where the greedy search stops (on the
lizard's trained circuits, greedy repair ends a few cells short; drift goes on down,
docs/results.md).

A kept change raises the new op's logit just above the old maximum (or flips the
truth-table row): the relaxed model moves as little as possible, and training can go on
from it.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from ..arguments import check_int
from ..growth import PERSIST_HORIZON, held_score, holds_target
from ..model import Model
from ..presets import Preset
from ..progress import progress_bar
from .evaluate import heldout_inputs, wrong_cells

# The searches `repair` offers (see its doc).
REPAIR_METHODS = ("greedy", "drift")
# The validation draw: the inputs the checks during training run on (`logicars.train`),
# and so the inputs a repair runs on unless told otherwise (0 wrong cells on them passes
# the check).
VALIDATION_SAMPLES = 64
VALIDATION_SEED = 1
# A repair's search unless told otherwise, here and in `logicars repair`: the drift search,
# which walks on where the greedy one stops, for up to DEFAULT_BUDGET candidates.
# (Training's repairs choose their own: greedy, with budgets counted per attempt.)
DEFAULT_METHOD = "drift"
DEFAULT_BUDGET = 20000
# Candidates per call of the engine's drift search (about a second on the lizard).
DRIFT_CHUNK = 1000
# Op changes tried per gate, in order of confidence (2: the 2nd and 3rd most likely).
ALTERNATIVES = 2
# A kept change puts the new op's logit this far above the old maximum.
NUDGE = 1e-3


@dataclass
class RepairResult:
    """What `repair` did: wrong cells on the validation inputs before and after, the
    candidate changes run, the kept ones as `(parameter, gate, old op, new op)`, and
    the wall time."""

    wrong_before: int
    wrong_after: int
    evaluations: int
    changes: list[tuple[str, int, int, int]] = field(default_factory=list)
    seconds: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        """The result without its wall time, so that a run's record of its repairs is
        the same whatever the machine (the time counts in `solved_seconds`)."""
        d = asdict(self)
        d["changes"] = [list(c) for c in self.changes]
        del d["seconds"]
        return d


def repair(
    model: Model,
    preset: Preset,
    *,
    budget: int = DEFAULT_BUDGET,
    samples: int = VALIDATION_SAMPLES,
    seed: int = VALIDATION_SEED,
    method: str = DEFAULT_METHOD,
    progress: bool = False,
    offset: int = 0,
    stop: Callable[[], bool] | None = None,
) -> RepairResult:
    """Search over gate ops that lowers the hard circuit's wrong cells on `evaluate`'s
    inputs of `preset` (`samples` and `seed` as `evaluate`'s); changes `model`'s
    parameters in place. `method`: `"greedy"` tries the least confident gates' next
    most likely ops in order and keeps a change that lowers the wrong cells, until a
    pass keeps nothing; `"drift"` flips every gate's truth-table rows one at a time, in
    passes in random orders (drawn from `seed`), and keeps a flip that does not raise
    them (`Model.drift_search`), which walks on where greedy stops. Both stop at 0 wrong
    cells or after `budget` candidates (the drift search keeps a flip of a gate that
    cannot reach the next state without running it); `progress` shows a bar of the
    drift search's candidates. A drift search goes on from where another stopped with
    `offset` = the candidates that one tried (its changes in `model`); `stop`, asked
    after every `DRIFT_CHUNK` candidates, ends it early when it returns True."""
    x, target = heldout_inputs(model, preset, samples, seed)
    return repair_on(
        model,
        preset,
        x,
        target,
        budget=budget,
        seed=seed,
        method=method,
        progress=progress,
        offset=offset,
        stop=stop,
    )


def repair_on(
    model: Model,
    preset: Preset,
    x: np.ndarray,
    target: np.ndarray,
    *,
    budget: int = DEFAULT_BUDGET,
    seed: int = VALIDATION_SEED,
    method: str = DEFAULT_METHOD,
    progress: bool = False,
    offset: int = 0,
    stop: Callable[[], bool] | None = None,
) -> RepairResult:
    """`repair` on given inputs `x` and their `target` on the loss channels (run for
    `preset`'s steps on its boundary, async masks drawn from `seed`). For a grown image
    that must hold its target (`growth` persist or regrow) the greedy search lowers the
    wrong cells of every step from T to 4T from its start grid instead
    (`growth.wrong_while_held`: what its check reads), never at the cost of step T, and
    so does the drift search (its run from the start grid scored at every step from T
    to 4T)."""
    budget = check_int("budget", budget, 0)
    offset = check_int("offset", offset, 0)
    if method not in REPAIR_METHODS:
        raise ValueError(f"method must be one of {REPAIR_METHODS}, got {method!r}")
    if method == "drift":
        return _drift(model, preset, x, target, budget, seed, progress, offset, stop)
    if offset:
        raise ValueError("offset continues a drift search; the greedy one starts over")
    t0 = time.perf_counter()
    task = preset.task()

    def count() -> tuple[int, int]:
        """(wrong cells at step T, wrong cells the check reads), compared in that order:
        a circuit that must hold its target is scored on every step from T to 4T, and a
        change that breaks step T is never kept for fewer wrong cells later (kept, such
        changes had undone a persisting run's growth mid-training)."""
        if holds_target(task):
            return held_score(model, task)
        at_t = int(np.count_nonzero(wrong_cells(model, preset, x, target, seed)))
        return at_t, at_t

    params = model.params()
    best = first = count()
    result = RepairResult(first[1], first[1], 0)
    while best[1] > 0 and result.evaluations < budget:
        kept = 0
        for name, gate, op in _candidates(params):
            if best[1] == 0 or result.evaluations >= budget:
                break
            rows = params[name].reshape(-1, params[name].shape[-1])
            old = rows[gate].copy()
            old_op = _op(old)
            _set_op(rows[gate], op)
            model.set_params(params)
            wrong = count()
            result.evaluations += 1
            if wrong < best:
                best = wrong
                kept += 1
                result.changes.append((name, gate, old_op, op))
            else:
                rows[gate] = old
        model.set_params(params)
        if kept == 0:
            break
    result.wrong_after = best[1]
    result.seconds = time.perf_counter() - t0
    return result


def _drift(
    model: Model,
    preset: Preset,
    x: np.ndarray,
    target: np.ndarray,
    budget: int,
    seed: int,
    progress: bool,
    offset: int,
    stop: Callable[[], bool] | None,
) -> RepairResult:
    """The engine's drift search from candidate `offset` on, in chunks of `DRIFT_CHUNK`
    candidates, so that a long search shows its progress and can stop: the changes of
    each chunk go into the parameters, and the next chunk goes on from there, as one
    search would."""
    t0 = time.perf_counter()
    task = preset.task()
    steps, score_from = task.num_steps, None
    if holds_target(task):
        # One run from the start grid (the batch repeats it) to 4T, scored from T on.
        steps, score_from = PERSIST_HORIZON * task.num_steps, task.num_steps
        x, target = x[:1], target[:1]
    options = np.stack(
        [np.broadcast_to(o, target.shape) for o in task.accepted(np.asarray(target) > 0.5)]
    )
    gates = _gate_rows(model)
    first: dict[tuple[str, int], int] = {}  # each changed gate's op before the search
    result: RepairResult | None = None
    bar = progress_bar(total=budget, unit="candidate", desc="drift", disable=not progress)
    with bar:
        while True:
            left = budget - (result.evaluations if result else 0)
            before, after, evaluations, changes = model.drift_search(
                x,
                options,
                list(task.loss_channels),
                steps=steps,
                periodic=task.periodic,
                seed=seed,
                budget=min(left, DRIFT_CHUNK),
                search_seed=seed,
                offset=offset + (result.evaluations if result else 0),
                score_from=score_from,
            )
            if result is None:
                result = RepairResult(before, before, 0)
            result.wrong_after, result.evaluations = after, result.evaluations + evaluations
            params = model.params()
            for gate, old_op, new_op in changes:
                name, row = gates[gate]
                first.setdefault((name, row), old_op)
                _set_op(params[name].reshape(-1, params[name].shape[-1])[row], new_op)
            model.set_params(params)
            bar.update(evaluations)
            bar.set_postfix(wrong=after)
            if after == 0 or evaluations == 0 or result.evaluations >= budget:
                break
            if stop is not None and stop():
                break
    assert result is not None
    ops = model.hard_ops()
    result.changes = [
        (name, row, old, int(ops[name].reshape(-1)[row]))
        for (name, row), old in sorted(first.items())
        if ops[name].reshape(-1)[row] != old
    ]
    result.seconds = time.perf_counter() - t0
    return result


def _gate_rows(model: Model) -> list[tuple[str, int]]:
    """`(parameter, row)` of every parameter gate, in the engine's gate order."""
    return [
        (name, row)
        for name, arr in model.params().items()
        for row in range(int(np.prod(arr.shape[:-1])))
    ]


def _candidates(params: dict[str, np.ndarray]) -> list[tuple[str, int, int]]:
    """`(parameter, gate, op)` changes, least confident first."""
    found: list[tuple[float, str, int, int]] = []
    for name, arr in params.items():
        rows = arr.reshape(-1, arr.shape[-1]).astype(np.float64)
        if rows.shape[1] == 4:
            # Truth table: flipping row k of the table changes op bit 3 - k.
            top = np.array([_op(r) for r in rows])
            for k in range(4):
                for g in range(len(rows)):
                    found.append((abs(rows[g, k]), name, g, int(top[g] ^ (8 >> k))))
            continue
        order = np.argsort(-rows, axis=1, kind="stable")
        best = rows[np.arange(len(rows)), order[:, 0]]
        for a in range(1, ALTERNATIVES + 1):
            gaps = best - rows[np.arange(len(rows)), order[:, a]]
            found += [(gaps[g], name, g, int(order[g, a])) for g in range(len(rows))]
    found.sort(key=lambda c: (c[0], c[1], c[2], c[3]))
    return [(name, g, op) for _, name, g, op in found]


def _op(row: np.ndarray) -> int:
    """The op a gate's parameters select (as the engine: first maximum; table rows > 0)."""
    if row.shape[0] == 4:
        return int(sum(8 >> k for k in range(4) if row[k] > 0))
    return int(np.argmax(row))


def _set_op(row: np.ndarray, op: int) -> None:
    """Makes `op` the gate's selected op with the smallest change of its parameters."""
    if row.shape[0] == 4:
        for k in range(4):
            want = bool(op & (8 >> k))
            if (row[k] > 0) != want:
                row[k] = -row[k] if row[k] != 0 else (NUDGE if want else -NUDGE)
        return
    row[op] = row.max() + np.float32(NUDGE) * max(1.0, abs(float(row.max())))
