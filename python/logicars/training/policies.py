"""The policies of a training run (`logicars.training.loop.Policy`), one concern each:

- `LowestCircuit`: with a drift budget, the parameters of the attempt's lowest hard loss,
  which an unsolved attempt ends with when they score better;
- `SolveCheck`: after an epoch whose batch the hard circuit got right, the validation
  check (and its confirmation) that marks the run solved;
- `Repair`: a repair when that check fails, once more at an unsolved attempt's end, and
  the drift search of a run that ends unsolved;
- `Attempts`: restarts (`restart_every`) and stalls (`stall_epochs`, `stall_loss`), and
  the best attempt of a run whose attempts all fail;
- `Stopping`: early stop (`early_stop`) and stop on solve (`stop_on_solve`);
- `Callbacks`: the user's callbacks (and the TensorBoard log), which may stop the run.

The order of `default_policies` is the order they act in within an epoch.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np

from ..callbacks import Callback, EpochContext, run_callbacks
from ..circuit.evaluate import generalise, heldout_inputs, validate
from ..circuit.repair import VALIDATION_SAMPLES, VALIDATION_SEED, repair_on
from ..circuit.repair import repair as repair_circuit
from ..errors import CheckpointError
from ..growth import held_score, holds_target, wrong_while_held
from ..model import Model
from ..presets import Preset
from ..runstate import EpochMetrics, RunState
from ..tasks import PatternTask
from ..tensorboard_log import TensorBoardLog
from .loop import Policy, Run, note

# The validation check during training (`validate` on `logicars.repair`'s
# VALIDATION_SAMPLES inputs of VALIDATION_SEED) draws from its own training-time stream,
# never `evaluate`'s held-out inputs (`logicars.draws`), so a run is not scored on the
# inputs it was stopped on.
# A circuit that passes is confirmed on CONFIRM_SAMPLES more inputs of another draw before
# the run counts as solved: an async circuit can be right on the validation draw's random
# starts and update masks and still fail one start in 50. Tasks without random inputs
# (all 512 Game of Life boards, a growth task's one start) run their check again, which
# is cheap. With `require_generalise`, a pattern's circuit must also pass the *generalises*
# check on the confirmation draw (4x the grid and the steps): on a small grid, circuits
# can settle the pattern by means that fail on a larger one.
CONFIRM_SEED = 2
CONFIRM_SAMPLES = 256

# A drift search fits the inputs it runs on, so where a task has random starts its
# circuit is confirmed on a draw of SEARCH_CONFIRM_SAMPLES (`evaluate`'s number) rather
# than CONFIRM_SAMPLES. One that gets the validation draw right and fails the
# confirmation goes on with that draw's starts joined to its inputs, and the next draw
# (CONFIRM_SEED + 1, + 2, ...) decides, up to SEARCH_ROUNDS draws joined: on the 64
# validation starts alone it leaves one start in ten to one in a hundred wrong, and
# joining only a draw's failing starts breaks as many others (docs/results.md, *A
# search at the end of the first wiring*).
SEARCH_CONFIRM_SAMPLES = 1024
SEARCH_ROUNDS = 3

# Discrete repair during training (`logicars.repair`): after an epoch whose batch the hard
# circuit got right but whose validation check failed, at most once per REPAIR_EVERY
# epochs, twice that after one failed repair of the attempt, four times after two, and so
# on, with REPAIR_BUDGET candidate runs; once more at the end of an unsolved attempt
# that came close (a batch with at most CLOSE_FRACTION of its cells wrong), with the run's
# `final_repair_budget` (FINAL_REPAIR_BUDGET unless its preset says otherwise). Budgets are
# counts, not seconds, so that runs stay deterministic.
REPAIR_EVERY = 100
REPAIR_BUDGET = 300
CLOSE_FRACTION = 0.05

# Attempts a run replaces for having stalled, at most: it then trains at most
# `epochs + MAX_STALLS * stall_epochs` epochs.
MAX_STALLS = 2

# The best unsolved attempt so far of a run that restarts (`Attempts`).
BEST_ATTEMPT_NAME = "best-attempt.safetensors"
# The parameters of the current attempt's lowest training hard loss (`LowestCircuit`).
LOWEST_NAME = "lowest.safetensors"


def default_policies(model: Model, state: RunState, run_dir: Path) -> list[Policy]:
    """A run's policies (the callbacks aside), in the order they act: the lowest circuit
    is settled before an attempt's final repair, which comes before its restart; the
    stopping rules see the epoch's solve."""
    check = SolveCheck()
    return [LowestCircuit(model, state, run_dir), check, Repair(check), Attempts(), Stopping()]


# ---- checks ---------------------------------------------------------------------------


def solves(model: Model, preset: Preset, require_generalise: bool) -> bool:
    """Whether the model's hard circuit passes the validation check (`validate` on the
    validation draw), and the confirmation (`confirmed`)."""
    check = validate(model, preset, VALIDATION_SAMPLES, VALIDATION_SEED)
    return check.passed and confirmed(model, preset, require_generalise)


def confirmed(
    model: Model,
    preset: Preset,
    require_generalise: bool,
    seed: int = CONFIRM_SEED,
    samples: int = CONFIRM_SAMPLES,
) -> bool:
    """The check on the confirmation draw (`samples` inputs of `seed`), and with
    `require_generalise` a pattern's *generalises* check on that draw's larger grids
    (`evaluate` draws its own)."""
    if not validate(model, preset, samples, seed).passed:
        return False
    task = preset.task() if require_generalise else None
    return not isinstance(task, PatternTask) or generalise(model, task, seed).passed


def validation_score(model: Model, preset: Preset) -> list[int]:
    """How far the hard circuit is from passing the validation check: `[inputs wrong,
    cells wrong]`, compared in that order (a check the task needs beyond the cells, as a
    grown image's persistence, counts as one more input wrong; the cells of a circuit
    that must hold its target are those wrong at any step from T to 4T)."""
    check = validate(model, preset, VALIDATION_SAMPLES, VALIDATION_SEED)
    task = preset.task()
    cells = wrong_while_held(model, task) if holds_target(task) else check.wrong_cells
    return [check.samples - check.solved + (not check.passed), cells]


def attempt_lowest(state: RunState) -> float:
    """The current attempt's lowest training hard loss (inf before its first epoch)."""
    attempt = state.metrics[state.attempt_start :]
    return min((m.hard_loss for m in attempt), default=math.inf)


class SolveCheck(Policy):
    """After an epoch whose batch the hard circuit got exactly right, the validation
    check; passed, the run is solved (`Repair` acts when it fails: `failed`)."""

    failed = False

    def after_step(self, run: Run, row: EpochMetrics) -> None:
        self.failed = False
        if row.hard_loss != 0 or run.state.solved_epoch is not None:
            return
        if solves(run.model, run.state.preset, run.state.require_generalise):
            note(run, validation="passed")
            run.solved()
        else:
            note(run, validation="failed")
            self.failed = True


class Stopping(Policy):
    """Ends the run after an epoch: hard loss 0 for `early_stop` epochs, or the run
    solved this epoch with `stop_on_solve`."""

    def after_step(self, run: Run, row: EpochMetrics) -> None:
        state = run.state
        if state.early_stop is not None and state.zero_streak >= state.early_stop:
            run.stop("early stop")
        elif state.stop_on_solve and state.solved_epoch == row.epoch:
            run.stop("solved")


# ---- repair and the drift search ------------------------------------------------------


def drift_records(repairs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A run's drift search so far: its parts' records among its `repairs`."""
    return [r for r in repairs if r.get("method") == "drift"]


def drift_spent(state: RunState) -> int:
    """The candidates the run's drift search has tried so far."""
    return sum(r["evaluations"] for r in drift_records(state.repairs))


def drift_left(
    repair: bool, solved_epoch: int | None, repairs: list[dict[str, Any]], budget: int
) -> bool:
    """Whether a run's drift search still has candidates to try: the run repairs and is
    unsolved, its `repairs` spent less than `budget` on the search, and no part of it
    reached 0 wrong cells (a run's state, or the summary of an interrupted one)."""
    searched = drift_records(repairs)
    return (
        repair
        and solved_epoch is None
        and sum(r["evaluations"] for r in searched) < budget
        and all(r["wrong_after"] > 0 or r.get("next_round") for r in searched)
    )


def search_round(repairs: list[dict[str, Any]]) -> int:
    """The confirmation draws a run's drift search has joined to its inputs so far (its
    parts that got their inputs right and went on: `next_round`)."""
    return sum(1 for r in drift_records(repairs) if r.get("next_round"))


def search_inputs(model: Model, preset: Preset, rounds: int) -> tuple[np.ndarray, np.ndarray]:
    """The drift search's inputs and targets after `rounds` confirmation draws failed it:
    the validation draw, and those draws."""
    draws = [heldout_inputs(model, preset, VALIDATION_SAMPLES, VALIDATION_SEED)]
    draws += [
        heldout_inputs(model, preset, SEARCH_CONFIRM_SAMPLES, CONFIRM_SEED + k)
        for k in range(rounds)
    ]
    return np.concatenate([x for x, _ in draws]), np.concatenate([t for _, t in draws])


def drift_due(state: RunState) -> bool:
    """Whether the run's drift search (`RunState.drift_budget`) still has candidates to
    try (`drift_left`)."""
    return drift_left(state.repair, state.solved_epoch, state.repairs, state.drift_budget)


class Repair(Policy):
    """Discrete repair (`logicars.repair`) of a hard circuit that gets a batch right but
    fails the validation check, at most every `REPAIR_EVERY` epochs (doubled after each
    failed one of the attempt); at the end of an
    unsolved attempt that came close, a larger one; at the end of an unsolved run, the
    drift search (`RunState.drift_budget`), which an interrupt ends after a chunk of
    candidates and a resume continues."""

    def __init__(self, check: SolveCheck) -> None:
        self.check = check

    def after_step(self, run: Run, row: EpochMetrics) -> None:
        state = run.state
        if not (self.check.failed and state.repair):
            return
        last = max((r["epoch"] for r in state.repairs), default=None)
        # Each repair of this attempt that failed doubles the wait before the next: most
        # never succeed, and beside the Game of Life's cheap epochs they cost more than the
        # training (docs/results.md, *Rarer repairs*).
        failed = sum(1 for r in state.repairs if r["epoch"] > state.attempt_start)
        if last is not None and state.epoch - last < REPAIR_EVERY * 2**failed:
            return
        solved = self.repaired(run, REPAIR_BUDGET)
        last = state.repairs[-1]
        after = "passed" if solved else "unconfirmed" if last["wrong_after"] == 0 else "failed"
        note(run, repair=last["wrong_after"], validation=after)
        if solved:
            run.solved()

    def end_attempt(self, run: Run, stalled: bool) -> None:
        if not stalled and self.final_repair(run):
            run.solved()
            if run.state.stop_on_solve:
                run.stop("solved")

    def end_run(self, run: Run) -> None:
        # The search runs when the greedy repair did not solve (`drift_due`).
        if self.final_repair(run) or self.final_drift(run):
            run.solved()

    def repaired(self, run: Run, budget: int) -> bool:
        """Runs `repair` on the validation inputs (so 0 wrong cells means the check
        passes)."""
        state = run.state
        result = repair_circuit(
            run.model,
            state.preset,
            budget=budget,
            samples=VALIDATION_SAMPLES,
            seed=VALIDATION_SEED,
            method="greedy",
        )
        record = {"epoch": state.epoch, **result.to_dict()}
        state.repairs.append(record)
        if result.wrong_after != 0:
            return False
        # 0 wrong cells on the validation draw; the confirmation draw decides (a repair
        # that passes one and not the other is why such an attempt may still restart).
        record["confirmed"] = confirmed(run.model, state.preset, state.require_generalise)
        return record["confirmed"]

    def final_repair(self, run: Run) -> bool:
        """The repair at the end of an unsolved attempt that came close (some epoch's hard
        loss, the wrong cells of its batch, at most `CLOSE_FRACTION` of the batch's cells,
        or 1); whether it made the circuit pass."""
        state = run.state
        if not state.repair or state.solved_epoch is not None:
            return False
        if any(r["epoch"] == state.epoch for r in state.repairs):
            return False  # this epoch's repair already ran
        p = state.preset
        cells = p.batch * p.height * p.width * len(p.spec.loss_channels)
        if attempt_lowest(state) > max(1.0, CLOSE_FRACTION * cells):
            return False
        return self.repaired(run, state.final_repair_budget)

    def final_drift(self, run: Run) -> bool:
        """The drift search on the final circuit of an unsolved run, from where an earlier
        part of it stopped; whether it made the circuit pass."""
        state, interrupt = run.state, run.interrupt
        if interrupt.requested or not drift_due(state):
            return False
        spent = drift_spent(state)
        if spent == 0:
            # The search starts from the run's best circuit, which may be an earlier
            # attempt's (a persisting run's earlier pool phase can end a few cells short
            # where its last wiring never grew the target); a resumed search goes on from
            # the circuit it was searching.
            run.model = best_of_attempts(run.model, state, run.run_dir)
        random_starts = state.preset.task().random_starts
        samples = SEARCH_CONFIRM_SAMPLES if random_starts else CONFIRM_SAMPLES
        while True:
            rounds = search_round(state.repairs)
            x, target = search_inputs(run.model, state.preset, rounds)
            result = repair_on(
                run.model,
                state.preset,
                x,
                target,
                budget=state.drift_budget - spent,
                seed=VALIDATION_SEED,
                method="drift",
                progress=not run.quiet,
                offset=spent,
                stop=lambda: interrupt.requested,
            )
            # The changed gates as a count: a long search changes thousands.
            record = {"epoch": state.epoch, "method": "drift", **result.to_dict()}
            record["changes"] = len(result.changes)
            state.repairs.append(record)
            if result.wrong_after != 0:
                return False
            record["confirmed"] = confirmed(
                run.model, state.preset, state.require_generalise, CONFIRM_SEED + rounds, samples
            )
            if record["confirmed"] or not (random_starts and rounds < SEARCH_ROUNDS):
                return record["confirmed"]
            # The draw that failed it joins the search's inputs, the next one decides.
            record["next_round"] = True
            spent = drift_spent(state)
            if not drift_due(state):
                return False


# ---- attempts -------------------------------------------------------------------------


def restart_seed(seed: int, attempt: int) -> int:
    """The wiring seed of attempt `attempt` (1, 2, ...) of a run with seed `seed`: a 64-bit
    draw of `SeedSequence([seed, attempt])`, unrelated to the seeds of other runs."""
    words = np.random.SeedSequence([seed, attempt]).generate_state(2, np.uint32)
    return int(words[0]) | int(words[1]) << 32


def attempt_over(state: RunState) -> bool:
    """Whether the current attempt has trained its `restart_every` epochs unsolved (an
    attempt in a pool phase of its own length is not cut short)."""
    return (
        state.restart_every is not None
        and state.solved_epoch is None
        and state.pool_end is None
        and state.epoch - state.attempt_start == state.restart_every
    )


def pool_phase_over(state: RunState) -> bool:
    """Whether the current attempt's pool phase of its own length (`pool_epochs`) has
    trained its last epoch unsolved, with pool phases left in the run (`pool_attempts`):
    a fresh wiring then learns to grow again."""
    ended = sum(1 for r in state.restarts if r.get("pool"))
    return (
        state.pool_end is not None
        and state.solved_epoch is None
        and state.epoch == state.pool_end
        and ended + 1 < (state.preset.config.pool_attempts or 1)
    )


def stalled(state: RunState) -> int:
    """The epochs of the current attempt (`stall_epochs`) when it has stalled: trained
    them with its lowest hard loss still above `stall_loss`, in a run that has replaced
    fewer than `MAX_STALLS` stalled attempts; else 0."""
    p = state.preset
    if p.stall_epochs is None or p.stall_loss is None or state.solved_epoch is not None:
        return 0
    if state.pool_end is not None:  # a pool phase of its own length is not cut short
        return 0
    stall = (
        state.stalls < MAX_STALLS
        and state.epoch - state.attempt_start == p.stall_epochs
        and attempt_lowest(state) > p.stall_loss
    )
    return p.stall_epochs if stall else 0


def keep_if_best(model: Model, state: RunState, run_dir: Path) -> None:
    """Before a restart: keep the ending attempt's model (BEST_ATTEMPT_NAME) if it scores
    better than every earlier one, so that a run whose attempts all fail ends with the
    best of them rather than the last (an async run's first attempt can be right on all
    but a few of the validation's random starts, and its later ones far off)."""
    score = validation_score(model, state.preset)
    if state.best_attempt is None or score < state.best_attempt["score"]:
        model.save(run_dir / BEST_ATTEMPT_NAME)
        state.best_attempt = {
            "attempt": len(state.restarts),
            "epoch": state.epoch,
            "score": score,
            "kept_lowest": state.kept_lowest,
        }


def restart(model: Model, state: RunState, reason: str = "restarted at its length") -> Model:
    """A fresh model (new wiring and logits, fresh optimizer) for the next attempt;
    `reason`: why the ending attempt ended (summary.json's `restarts` and `attempt_ends`).
    After a pool phase (`pool_phase_over`) the attempt's spec was the phase's (its
    rounding rule): the new wiring grows with the run's, and trains the run's epochs."""
    seed = restart_seed(state.seed, len(state.restarts) + 1)
    record: dict[str, Any] = {"epoch": state.epoch, "seed": seed, "reason": reason}
    spec = model.spec
    if state.pool_end is not None:  # the phase is over
        record["pool"] = True
        spec = state.preset.spec
        state.pool_end = None
    state.restarts.append(record)
    state.zero_streak = 0
    state.kept_lowest = None  # the ending attempt's: `best_attempt` keeps it
    return Model(spec, seed)


def best_of_attempts(model: Model, state: RunState, run_dir: Path) -> Model:
    """The final circuit of a run that ended unsolved: its last attempt's, or an earlier
    attempt's that scored better on the validation check."""
    best = state.best_attempt
    if best is None or not best["score"] < validation_score(model, state.preset):
        return model
    state.kept_attempt = best["attempt"]
    state.kept_lowest = best.get("kept_lowest")
    return Model.load(run_dir / BEST_ATTEMPT_NAME)


def attempt_end_reason(state: RunState, stalled: bool) -> str:
    """Why an unsolved attempt ends now: it stalled, or ran its length, and what the
    repair at its end did, if one ran."""
    p = state.preset
    if stalled:
        return (
            f"stalled: lowest hard loss {attempt_lowest(state):g} above {p.stall_loss:g} "
            f"after {p.stall_epochs} epochs"
        )
    if state.pool_end is not None:
        reason = "its pool phase ended without holding the target"
    else:
        reason = "restarted at its length"
    last = [r for r in state.repairs if r["epoch"] == state.epoch]
    if last:
        r = last[-1]
        if r["wrong_after"] == 0 and not r.get("confirmed", True):
            reason += "; the repaired circuit passed the validation draw, not the confirmation"
        else:
            reason += f"; the repair gave up at {r['wrong_after']} wrong cells"
    return reason


class Attempts(Policy):
    """Replaces an attempt unsolved after `restart_every` epochs, or stalled
    (`stall_epochs` above `stall_loss`, which adds its epochs to the run's), or whose pool
    phase ended short with phases left (`pool_attempts`, which gives the new wiring the
    run's epochs again), by a fresh wiring, after the other policies' `end_attempt` (a
    final repair may solve it). Checked before the epoch, so that a run ending (or
    interrupted) right there restarts when resumed, as the straight run does. A run
    ending unsolved keeps its best attempt."""

    def before_epoch(self, run: Run) -> None:
        stall = stalled(run.state)
        if stall or attempt_over(run.state) or pool_phase_over(run.state):
            self.stall = stall
            run.dispatch("end_attempt", bool(stall))

    def after_step(self, run: Run, row: EpochMetrics) -> None:
        state = run.state
        if pool_phase_over(state):
            # The run goes on: the next epoch's `before_epoch` restarts, so that a run
            # interrupted right here restarts when resumed, as the straight run does.
            state.target_epochs = state.epoch + state.preset.config.epochs
            run.bar.total = state.target_epochs

    def end_attempt(self, run: Run, stalled: bool) -> None:
        state = run.state
        if state.solved_epoch is not None:
            if state.pool_end == state.epoch:  # a pool phase ends with its final repair
                state.target_epochs = state.epoch
                run.stop("solved")
            return  # the final repair solved it: the attempt goes on
        keep_if_best(run.model, state, run.run_dir)
        run.model = restart(run.model, state, attempt_end_reason(state, stalled))
        if stalled:
            state.stalls += 1
            state.target_epochs += self.stall
            run.bar.total = state.target_epochs

    def end_run(self, run: Run) -> None:
        state = run.state
        # A drift search cut short goes on when the run is resumed: not the end yet.
        interrupted = run.interrupt.requested and drift_due(state)
        if state.solved_epoch is None and not interrupted:
            run.model = best_of_attempts(run.model, state, run.run_dir)


# ---- the lowest circuit ---------------------------------------------------------------


def same_circuit(a: Model, b: Model) -> bool:
    """Whether two models have the same spec and wiring (their parameters then fit both)."""
    wa, wb = a.wires(), b.wires()
    same_spec = a.spec.to_dict() == b.spec.to_dict()
    return same_spec and wa.keys() == wb.keys() and all(np.array_equal(wa[k], wb[k]) for k in wa)


class LowestCircuit(Policy):
    """The parameters of the current attempt's lowest training hard loss, for a run with a
    drift budget or a growth mode that must hold its target: an unsolved attempt ends with
    them when they score better on the validation check than its last, so that its final
    repair and drift search start from the closest circuit training reached (late in a
    long run the hard loss swings by tens of cells from one epoch to the next), and a
    persisting run that never held its target keeps at least the circuit that grew it.
    Among a holding run's exact epochs, the one whose circuit comes closest to holding
    its target to 4T (`growth.held_score`, which the batch does not show). Written to
    LOWEST_NAME with each checkpoint, so that a resumed run ends as the
    straight one does."""

    def __init__(self, model: Model, state: RunState, run_dir: Path) -> None:
        self.path = run_dir / LOWEST_NAME
        task = state.preset.task()
        # The task, when its runs must hold their target (their exact epochs are compared).
        self.holding_task = task if holds_target(task) else None
        self.params: dict[str, np.ndarray] | None = None
        self.before: dict[str, np.ndarray] | None = None
        self.unsaved = False
        if state.lowest is not None:
            try:
                saved = Model.load(self.path)
                if not same_circuit(saved, model):
                    raise ValueError("it is not the run's current wiring")
                self.params = saved.params()
            except (OSError, ValueError) as e:
                raise CheckpointError(
                    f"{self.path}: the run's lowest circuit (epoch {state.lowest['epoch']}) "
                    f"cannot be read: {e}"
                ) from None

    def before_step(self, run: Run) -> None:
        # The parameters the coming step measures its hard loss on, when tracked.
        state = run.state
        growth = state.preset.config.growth not in (None, "grow")
        tracked = (state.drift_budget > 0 or growth) and state.solved_epoch is None
        self.before = run.model.params() if tracked else None

    def after_step(self, run: Run, row: EpochMetrics) -> None:
        state = run.state
        if self.before is None:
            return
        # Exact epochs of a run that must hold its target differ in what its batch does not
        # show: how far their circuit is from holding it to 4T (`growth.held_score`).
        held = self._held(run) if row.hard_loss == 0 and self.holding_task is not None else None
        if state.lowest is not None:
            lowest = state.lowest["hard_loss"]
            if row.hard_loss > lowest:
                return
            # A tie: only an exact epoch of a holding run that holds better wins (any, over
            # a lowest saved before such epochs were compared).
            best_held = state.lowest.get("held")
            if row.hard_loss == lowest and (held is None or (best_held and held >= best_held)):
                return
        state.lowest = {"epoch": row.epoch, "hard_loss": row.hard_loss}
        if held is not None:
            state.lowest["held"] = held
        self.params, self.unsaved = self.before, True

    def _held(self, run: Run) -> list[int]:
        """`growth.held_score` of the parameters the step measured (`before`), as a list
        (what the run state's JSON gives back)."""
        assert self.before is not None and self.holding_task is not None
        trained = run.model.params()
        run.model.set_params(self.before)
        try:
            return list(held_score(run.model, self.holding_task))
        finally:
            run.model.set_params(trained)

    def checkpoint(self, run: Run) -> None:
        if not self.unsaved or self.params is None:
            return
        trained = run.model.params()
        run.model.set_params(self.params)
        try:
            run.model.save(self.path)
        finally:
            run.model.set_params(trained)
        self.unsaved = False

    def end_attempt(self, run: Run, stalled: bool) -> None:
        self.settle(run)

    def end_run(self, run: Run) -> None:
        self.settle(run)

    def settle(self, run: Run) -> None:
        """At the end of an unsolved attempt: its lowest circuit instead of its last when
        that scores better on the validation check (`summary["kept_lowest"]`: its
        epoch). The choice is made once: a resumed run (a drift search that goes on, more
        epochs) tracks from there. A new attempt (wiring) starts its own lowest."""
        model, state = run.model, run.state
        if self.params is not None and state.solved_epoch is None:
            last = model.params()
            score = validation_score(model, state.preset)
            model.set_params(self.params)
            if validation_score(model, state.preset) < score:
                state.kept_lowest = state.lowest["epoch"] if state.lowest else None
            else:
                model.set_params(last)
        state.lowest, self.params, self.unsaved = None, None, False


# ---- callbacks ------------------------------------------------------------------------


class Callbacks(Policy):
    """The user's callbacks after every epoch (`logicars.callbacks.run_callbacks`), the
    TensorBoard log first (it logs the epoch whoever stops the run). One that asks to
    stop ends the run as an early stop; one that raises ends it after this epoch's
    checkpoint, so that a resume continues from there."""

    def __init__(self, callbacks: list[Callback], board: TensorBoardLog | None = None) -> None:
        self.board = board
        self.callbacks: list[Callback] = callbacks if board is None else [board, *callbacks]

    def after_step(self, run: Run, row: EpochMetrics) -> None:
        if not self.callbacks:
            return
        state = run.state
        context = EpochContext(
            run_dir=run.run_dir,
            model=run.model,
            preset=state.preset,
            attempt=len(state.restarts),
            start_epoch=run.start_epoch,
            target_epochs=state.target_epochs,
            solved_epoch=state.solved_epoch,
        )
        try:
            # the row as metrics.csv has it (with the epoch's validation and repair)
            asked = run_callbacks(self.callbacks, state.metrics[-1], context)
        except Exception:
            run.checkpoint()  # the run resumes from this epoch
            raise
        already = run.stop_reason is not None
        if asked is not None and not already and row.epoch < state.target_epochs:
            run.stop("callback")
            run.stopped_by_callback = asked

    def checkpoint(self, run: Run) -> None:
        # The event log first: what a checkpoint holds, the log has on disk too.
        if self.board is not None:
            self.board.flush()
