"""How well a trained hard circuit does its task, on data it was not trained on.

The training loss is measured on one batch per epoch; `evaluate` asks the question a user
has after training: does the discrete circuit solve the task? The task
(`Preset.task()`, see `logicars.tasks`) says which inputs and how they are scored, and each
check is named by what it checks:

- *exhaustive* (a Life-like rule on 3x3 boards, `gol`, `life:RULE`): all 512 boards; a
  board counts as solved when its next state is exact. These are also the training set:
  the check is complete, not held out.
- *fresh starts* (a pattern, `checkerboard`, `checkerboard-async`, `pattern:...`, and
  rules on larger grids): `samples` random starts (async ones with fresh update masks)
  that no training batch or training-time check drew; a sample counts as solved when the
  loss channels are the pattern, in any phase, after the task's steps.
- *generalises* (a pattern; reported, never required): the paper's generalisation, as
  `analyze`'s experiment: `GENERALISE_BOARDS` random starts on a grid `GENERALISE_SCALE`
  times larger per side, run `GENERALISE_SCALE` times the task's steps, each exact (any
  phase) at the end. A circuit given many steps on a small grid can pass its fresh starts
  by means that fail on a larger one (docs/results.md, *Rollout length*). Training asks
  the same of its circuits on draws of its own (`require_generalise`), so this one is
  held out.
- *held-out recordings* (`data:RECORDING.npz`): every transition of the recordings
  kept out of training.
- *grown*, *persists*, *regrows* (a grown image, `lizard`, `colored-g`, `grow:...`): the
  task's one start grid (also training's) at step T; the target held through
  `PERSIST_HORIZON` x T (which a persisting or regrowing run's training, repair and
  search also score, on that one start grid), and how long it holds up to
  `REPORT_HORIZON` x T (which none of them looks at); and regrown after fresh damage
  discs that no training-time draw makes (`logicars.growth`); and, reported but never
  required, whether the target appears from an empty grid too (*grows without its seed*:
  on a zero-padded boundary a circuit can draw it from the frame).

The checks made during training (`validate`: validation, confirmation, repair, search)
draw from other streams than `evaluate` (`logicars.draws`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from .. import draws
from ..arguments import check_int
from ..growth import (
    PERSIST_HORIZON,
    REGROW_DAMAGES,
    REPORT_HORIZON,
    GrowthChecks,
    growth_checks,
)
from ..model import Model
from ..presets import Preset
from ..tasks import GrowTask, LifeTask, PatternTask, RecordedTask, Task

# Fresh starts of `evaluate`'s check of a pattern: with 1024, a circuit that fails one
# start in 200 shows it in all but ~1% of evaluations.
HELDOUT_SAMPLES = 1024
# A regenerating circuit passes when it regrows at least this share of the damages.
REGROW_PASS = 0.8
# A pattern's *generalises* check: the grid's side and the steps, times the task's, and the
# random starts run there (the paper's 64x64 for the 16x16 checkerboard; `analyze` too).
GENERALISE_SCALE = 4
GENERALISE_BOARDS = 4


@dataclass(frozen=True)
class Generalisation:
    """A pattern circuit on a larger grid: `boards` random starts of `height` x `width`
    run `steps` steps, `solved` of them exact at the end (any phase)."""

    height: int
    width: int
    steps: int
    boards: int
    solved: int
    wrong_cells: int

    @property
    def passed(self) -> bool:
        return self.solved == self.boards


@dataclass(frozen=True)
class Evaluation:
    """What a check found. `check` names it (module docstring); `samples` inputs were run,
    `solved` of them gave exactly the target; `wrong_cells` of `cells` loss-channel cells
    were wrong over all. A growth task adds `growth` (persists, regrows); `passed` says
    whether the circuit does all that its task asks."""

    check: str
    samples: int
    solved: int
    wrong_cells: int
    cells: int
    growth: GrowthChecks | None = None
    # A pattern's larger grid, reported by `evaluate` and never required.
    generalisation: Generalisation | None = None
    # What the task asks of a grown image (`GrowTask.growth`): only "grown" counts for the
    # paper's growing, "persists" too for a persisting circuit, "regrows" for a
    # regenerating one.
    growth_mode: str = "grow"

    @property
    def passed(self) -> bool:
        if self.solved != self.samples:
            return False
        g = self.growth
        if g is None or self.growth_mode == "grow":
            return True
        if not g.persists:
            return False
        return self.growth_mode != "regrow" or g.regrow_share >= REGROW_PASS

    def checks(self) -> dict[str, dict[str, Any]]:
        """Each named check: `samples` run, `solved` of them, whether it `passed`, and
        whether the task `required` it for `passed` (a growing-only circuit is reported
        on persisting and regrowing too, without needing them)."""
        main = {
            "samples": self.samples,
            "solved": self.solved,
            "wrong_cells": self.wrong_cells,
            "passed": self.solved == self.samples,
            "required": True,
        }
        out = {self.check: main}
        gen = self.generalisation
        if gen is not None:
            out[f"generalises to {gen.height}x{gen.width}"] = {
                "samples": gen.boards,
                "solved": gen.solved,
                "wrong_cells": gen.wrong_cells,
                "passed": gen.passed,
                "required": False,
                "steps": gen.steps,
            }
        g = self.growth
        if g is None:
            return out
        persists = {
            "samples": 1,
            "solved": int(g.persists),
            "passed": g.persists,
            "required": self.growth_mode != "grow",
            "holds_until": g.holds_until,
            "horizon": len(g.wrong_by_step) - 1,
        }
        out[f"persists to {PERSIST_HORIZON}T"] = persists
        if g.damages:
            out["regrows"] = {
                "samples": g.damages,
                "solved": g.regrown,
                "passed": g.regrow_share >= REGROW_PASS,
                "required": self.growth_mode == "regrow",
            }
        if g.grows_without_seed is not None:
            out["grows without its seed"] = {
                "samples": 1,
                "solved": int(g.grows_without_seed),
                "passed": g.grows_without_seed,
                "required": False,
            }
        return out

    def to_dict(self) -> dict[str, Any]:
        """The record `summary.json` keeps (`hard_eval`)."""
        d: dict[str, Any] = {
            "check": self.check,
            "samples": self.samples,
            "solved": self.solved,
            "wrong_cells": self.wrong_cells,
            "cells": self.cells,
            "passed": self.passed,
            "checks": self.checks(),
        }
        if self.growth is not None:
            d["growth_mode"] = self.growth_mode
            d["wrong_by_step"] = self.growth.wrong_by_step
        return d


def evaluate(
    model: Model, preset: Preset | Task, samples: int | None = None, seed: int = 0
) -> Evaluation:
    """Runs the hard circuit (bit-sliced, exact) on held-out inputs of the task of
    `preset` (a `Preset` or a `Task`): `samples` fresh starts of a pattern (default
    `HELDOUT_SAMPLES`), fresh damages of a grown image (default `REGROW_DAMAGES`), drawn
    from `seed`'s evaluation streams, which no training-time check draws from."""
    task = _task(preset)
    default = REGROW_DAMAGES if isinstance(task, GrowTask) else HELDOUT_SAMPLES
    samples = default if samples is None else check_int("samples", samples, 1)
    return _run_checks(model, task, samples, draws.evaluation_seed(seed), report=True)


def validate(model: Model, preset: Preset | Task, samples: int, seed: int) -> Evaluation:
    """The check made during training (validation, confirmation): `evaluate`'s scoring on
    `samples` inputs (damages of a grown image) of the training-time stream `seed`, as far
    as the task's `passed` needs it (a grown image's persistence to `PERSIST_HORIZON` T,
    its damages only when it must regrow)."""
    task = _task(preset)
    samples = check_int("samples", samples, 1)
    return _run_checks(model, task, samples, draws.check_seed(seed), report=False)


def _run_checks(model: Model, task: Task, samples: int, seed: int, report: bool) -> Evaluation:
    x, target = _inputs(model, task, samples, seed)
    wrong = wrong_cells(model, task, x, target, seed)
    per_sample = wrong.reshape(len(x), -1).any(axis=1)
    growth = None
    generalisation = None
    mode = "grow"
    if isinstance(task, PatternTask) and report:
        generalisation = generalise(model, task, seed)
    if isinstance(task, GrowTask):
        mode = task.growth
        if report or mode != "grow":
            # A grown image's `samples` are the damages of its regrows check.
            damages = samples if report or mode == "regrow" else 0
            horizon = REPORT_HORIZON if report else PERSIST_HORIZON
            growth = growth_checks(model, task, draws.damage_rng(seed), damages, horizon)
        name = "grown"
    elif isinstance(task, LifeTask) and not task.random_starts:
        name = "exhaustive"
    elif isinstance(task, RecordedTask):
        name = "held-out recordings"
    else:
        name = "fresh starts"
    return Evaluation(
        check=name,
        samples=len(x),
        solved=int(np.count_nonzero(~per_sample)),
        wrong_cells=int(np.count_nonzero(wrong)),
        cells=int(wrong.size),
        growth=growth,
        generalisation=generalisation,
        growth_mode=mode,
    )


def generalised(checks: Mapping[str, Any]) -> bool | None:
    """Whether the *generalises* check of `Evaluation.checks()` (or of a summary's
    `hard_eval["checks"]`) passed; None where it is not among them."""
    found = [c for name, c in checks.items() if name.startswith("generalises")]
    return bool(found[0]["passed"]) if found else None


def generalise(model: Model, task: PatternTask, seed: int) -> Generalisation:
    """The *generalises* check of a pattern circuit, its starts and async masks drawn from
    `seed` (already split: `evaluate`'s or a training-time check's)."""
    h, w = GENERALISE_SCALE * task.height, GENERALISE_SCALE * task.width
    steps = GENERALISE_SCALE * task.num_steps
    x = task.start(draws.generalise_rng(seed), GENERALISE_BOARDS, h, w).astype(np.uint8)
    out = model.simulate(x, steps, seed=seed, periodic=task.periodic)
    wrong = task.wrong(out, task.target(x))
    per_board = wrong.reshape(len(x), -1).any(axis=1)
    return Generalisation(
        height=h,
        width=w,
        steps=steps,
        boards=len(x),
        solved=int(np.count_nonzero(~per_board)),
        wrong_cells=int(np.count_nonzero(wrong)),
    )


def _task(preset: Preset | Task) -> Task:
    return preset if isinstance(preset, Task) else preset.task()


def heldout_inputs(
    model: Model, preset: Preset | Task, samples: int = 16, seed: int = 0
) -> tuple[np.ndarray, np.ndarray]:
    """The inputs a training-time check of `seed` runs (`validate`, `repair`) and their
    targets on the loss channels, as booleans: `(x (N, H, W, C), target (N, H, W,
    len(loss_channels)) bool)` (`Task.holdout`)."""
    return _inputs(model, _task(preset), check_int("samples", samples, 1), draws.check_seed(seed))


def _inputs(model: Model, task: Task, samples: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    if model.spec.channels != task.channels:
        raise ValueError(
            f"model has {model.spec.channels} channels, task {task.name!r} needs {task.channels}"
        )
    return task.holdout(samples, seed)


def wrong_cells(
    model: Model, preset: Preset | Task, x: np.ndarray, target: np.ndarray, seed: int = 0
) -> np.ndarray:
    """Where the hard circuit run from `x` for the task's steps (async masks drawn from
    `seed`) differs from `target` on the loss channels, by the task's scoring rule (a
    pattern in the phase closest to it): a boolean array of its shape."""
    task = _task(preset)
    # The task's steps and boundary (a model may come with other ones, e.g. from an .npz).
    out = model.simulate(x, task.num_steps, seed=seed, periodic=task.periodic)
    return task.wrong(out, target)
