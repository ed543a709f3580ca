"""The paper's analysis of a trained circuit: `python -m logicars analyze RUN [RUN2 ...]`.

`analyze(run)` runs the experiments of Miotti et al. 2025 on the hard circuit (the
bit-sliced `Model.simulate`, exact) and returns the measured numbers; with an output
directory it also writes one PNG per experiment and `analysis.json`.

- generalisation: the circuit on a grid 4x larger per side, run 4x the training steps;
  fraction of wrong cells against the target at every step.
- fault tolerance: a permanently dead square (20x20 on 64x64) in the centre, 8x the
  training steps; error outside it.
- self-healing: the same square dead for the first half of the steps, then lifted;
  error curve and whether the pattern comes back exactly.
- robustness: 64x64; once the pattern has formed, 4000 asynchronous steps (fire rate
  0.6) with a random 10x10 square reset (to random bits by default) after every step;
  error curve. Several runs given to the CLI (sync- and async-trained) share one plot.
- gates: how often each of the 16 ops is the argmax, for perception and update, and the
  active-gate count (ops other than pass-through A or B).

The error of a grid is the fraction of cells whose loss channels differ from the target
anywhere, by the task's scoring rule (`logicars.tasks.Task.cell_error`: a periodic
pattern such as the checkerboard in whichever of its phases is closest; generalisation
also reports the error against the pattern in its training phase). A pattern's target
exists for any grid size; the lizard, the coloured G and other grown images are fixed
images, so their "generalisation" runs longer on the training grid; a Life-like rule's
circuit is compared with the exact rule instead of a pattern. Experiments that do not
apply to a task are reported as skipped, with the reason.
"""

from __future__ import annotations

import dataclasses
import json
import os
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Union

import numpy as np

from .. import runs
from ..files import write_atomic
from ..tasks import LifeTask, Task, life_step
from ..viz.analysis import write_plots
from .evaluate import GENERALISE_SCALE
from .export import GATE_NAMES, gate_histograms  # noqa: F401 (importable from here too)
from .simulate import Simulator

if TYPE_CHECKING:
    from ..presets import Preset

PathLike = Union[str, "os.PathLike[str]"]

EXPERIMENTS = ("generalisation", "fault_tolerance", "self_healing", "robustness", "gates")
SCALE = GENERALISE_SCALE  # generalisation: grid side and steps, times the training ones
DAMAGE_FRACTION = 20 / 64  # the paper's 20x20 dead square on a 64x64 grid
# Damage runs last twice the generalisation run: on 64x64 the checkerboard takes about
# 60 of the 80 steps to form, so half of 160 steps forms it around the dead square and
# the other half shows the recovery.
DAMAGE_SCALE = 2 * SCALE
ROBUSTNESS_SIZE = 64
ROBUSTNESS_STEPS = 4000
ROBUSTNESS_FIRE_RATE = 0.6
RESET_SIZE = 10
RESET_MODES = ("random", "zeros")
QUICK_ROBUSTNESS_STEPS = 400
RECOVERY_TRIALS = 8  # single-reset recovery: one reset each, in one batch (4 with quick)
RECOVERY_HORIZON = 200  # steps to watch each trial
BOARDS = 4  # random starts per pattern experiment (2 with quick)


def task_for(preset: str | Preset, model: Any | None = None) -> Task:
    """The task of a preset (a name, a task kind or a `Preset`), with the model's channels
    and steps when a model is given (`Preset.task()`); a Life-like rule keeps its one
    step, which its 512-board check is about."""
    from ..presets import resolve_preset

    p = resolve_preset(preset) if isinstance(preset, str) else preset
    if model is not None:
        spec = model.spec
        steps = p.spec.num_steps if p.task_kind.startswith("life:") else spec.num_steps
        p = dataclasses.replace(p, spec=p.spec.replace(channels=spec.channels, num_steps=steps))
    return p.task()


def fixed_target(task: Task, h: int, w: int) -> np.ndarray:
    """A pattern's or an image's target on an (h, w) grid, `(h, w, L)` uint8 (a ValueError
    where the task has none there: an image on another grid, a rule)."""
    if not task.fixed_target:
        raise ValueError(f"{task.name}: the task has a rule, not a target pattern")
    target = task.target(np.zeros((1, h, w, task.channels), dtype=np.uint8))
    if target is None:
        raise ValueError(f"{task.name}: the target is a fixed {task.height}x{task.width} image")
    return np.asarray(target[0]).astype(np.uint8)


# ---- metrics --------------------------------------------------------------------------


def cell_error(
    grids: np.ndarray,
    target: np.ndarray,
    loss_channels: tuple[int, ...] | list[int],
    region: np.ndarray | None = None,
) -> np.ndarray:
    """Fraction of cells whose loss channels differ from `target` anywhere.

    `grids` is `(..., H, W, C)`, `target` `(H, W, L)`; `region` (`(H, W)` bool) restricts
    the count to those cells. Returns an array of the leading shape `(...)`.
    """
    wrong = np.any(grids[..., list(loss_channels)] != target, axis=-1)
    if region is not None:
        return wrong[..., region].sum(axis=-1) / max(1, int(region.sum()))
    return wrong.mean(axis=(-2, -1))


def centre_square(h: int, w: int, side: int) -> np.ndarray:
    """`(h, w)` bool mask of a `side` x `side` square in the middle of the grid."""
    mask = np.zeros((h, w), dtype=bool)
    r, c = (h - side) // 2, (w - side) // 2
    mask[r : r + side, c : c + side] = True
    return mask


def _first_lasting_zero(curve: np.ndarray, start: int = 0) -> int | None:
    """First index >= start from which `curve` stays 0 to the end (None: it never does)."""
    nonzero = np.flatnonzero(curve[start:] != 0)
    if nonzero.size == 0:
        return start
    first = start + int(nonzero[-1]) + 1
    return first if first < len(curve) else None


def _curve(values: np.ndarray) -> list[float]:
    return [round(float(v), 6) for v in values]


# ---- experiments ----------------------------------------------------------------------


def generalisation(model: Any, task: Task, rng: np.random.Generator, quick: bool) -> dict:
    """4x larger grid (pattern tasks) and 4x the training steps."""
    steps = SCALE * task.num_steps
    if task.kind == "pattern":
        h, w, boards = SCALE * task.height, SCALE * task.width, BOARDS // (2 if quick else 1)
    else:
        h, w, boards = task.height, task.width, 1
    target = fixed_target(task, h, w)
    x = task.start(rng, boards, h, w)
    frames = model.simulate(x, steps, seed=_seed(rng), record=True)  # (steps+1, B, h, w, C)
    errors = task.cell_error(frames, target)  # (steps+1, B)
    final = errors[-1]
    fixed_phase = cell_error(frames[-1], target, task.loss_channels)
    return {
        "grid": [h, w],
        "steps": steps,
        "boards": boards,
        "final_error": float(final.mean()),
        "boards_exact": int(np.count_nonzero(final == 0)),
        "final_error_fixed_phase": float(fixed_phase.mean()),
        "error_at_training_steps": float(errors[task.num_steps].mean()),
        "exact_from_step": _first_lasting_zero(errors.max(axis=1)),
        "error_curve": _curve(errors.mean(axis=1)),
        "_frames": frames[:, 0],
        "_target": target,
    }


def gol_accuracy(model: Any, task: Task, rng: np.random.Generator, quick: bool) -> dict:
    """The Game of Life circuit against the exact rule: all 512 3x3 boards, then a
    random 64x64 periodic grid run for 64 steps, step for step."""
    from .evaluate import evaluate

    assert isinstance(task, LifeTask)
    boards = evaluate(model, task)  # all 512 boards (on its 3x3 grid), one step
    size, steps = ROBUSTNESS_SIZE, 64
    x = task.start(rng, 1, size, size)
    x[..., 1:] = 0
    frames = model.simulate(x, steps, periodic=True, record=True)[:, 0, ..., 0]  # (T+1, h, w)
    exact = [frames[0].astype(np.float32)]
    for _ in range(steps):
        exact.append(life_step(exact[-1][None, ..., None], task.rule)[0, ..., 0])
    exact_frames = np.stack(exact).astype(np.uint8)
    # One-step accuracy on the big grid: the rule applied to the circuit's own states.
    one_step = life_step(frames[:-1, ..., None].astype(np.float32), task.rule)[..., 0].astype(
        np.uint8
    )
    diverged = np.flatnonzero(np.any(frames != exact_frames, axis=(1, 2)))
    return {
        "boards_correct": boards.solved,
        "boards": boards.samples,
        "cell_accuracy_512": 1.0 - boards.wrong_cells / boards.cells,
        "grid": [size, size],
        "steps": steps,
        "one_step_cell_accuracy": float(np.mean(one_step == frames[1:])),
        "trajectory_error": float(np.mean(frames[-1] != exact_frames[-1])),
        "first_divergence_step": None if diverged.size == 0 else int(diverged[0]),
        "_frames": frames[:, ..., None],
        "_exact": exact_frames[-1],
    }


def fault_tolerance(model: Any, task: Task, rng: np.random.Generator, quick: bool) -> dict:
    """A dead square in the centre at every step (8x the training steps); the error
    outside it."""
    h, w, steps = SCALE * task.height, SCALE * task.width, DAMAGE_SCALE * task.num_steps
    side = round(h * DAMAGE_FRACTION)
    dead = centre_square(h, w, side)
    boards = BOARDS // (2 if quick else 1)
    target = fixed_target(task, h, w)
    x = task.start(rng, boards, h, w)
    frames = model.simulate(x, steps, seed=_seed(rng), damage=dead, record=True)
    outside = task.cell_error(frames, target, region=~dead)  # (T+1, B)
    return {
        "grid": [h, w],
        "steps": steps,
        "damage": [side, side],
        "boards": boards,
        "final_error_outside": float(outside[-1].mean()),
        "boards_exact_outside": int(np.count_nonzero(outside[-1] == 0)),
        "error_curve_outside": _curve(outside.mean(axis=1)),
        "_frames": frames[:, 0],
        "_region": dead,
    }


def self_healing(model: Any, task: Task, rng: np.random.Generator, quick: bool) -> dict:
    """The dead square for a while, then lifted: does the pattern come back?

    Pattern tasks: dead from the start for the first half of 8x the training steps.
    Grown images: the image first grows for the training steps, the square is dead for
    the next training-steps' worth, and the rest (2x the training steps) is recovery.
    """
    if task.kind == "pattern":
        h, w = SCALE * task.height, SCALE * task.width
        boards = BOARDS // (2 if quick else 1)
        steps = DAMAGE_SCALE * task.num_steps
        window = (0, steps // 2)
    else:
        h, w, boards = task.height, task.width, 1
        steps = SCALE * task.num_steps
        window = (task.num_steps, 2 * task.num_steps)
    side = max(2, round(h * DAMAGE_FRACTION))
    dead = centre_square(h, w, side)
    target = fixed_target(task, h, w)
    x = task.start(rng, boards, h, w)
    frames = model.simulate(
        x, steps, seed=_seed(rng), damage=dead, damage_steps=window, record=True
    )
    errors = task.cell_error(frames, target)  # (T+1, B)
    worst = errors.max(axis=1)
    # Frame t is the grid after t steps; damage from step index `window[1]` on is lifted,
    # so frame window[1] is the last damaged grid.
    lifted_at = window[1]
    healed = _first_lasting_zero(worst, lifted_at)
    return {
        "grid": [h, w],
        "steps": steps,
        "damage": [side, side],
        "damage_steps": list(window),
        "boards": boards,
        "error_when_lifted": float(errors[lifted_at].mean()),
        "final_error": float(errors[-1].mean()),
        "recovered": bool(np.all(errors[-1] == 0)),
        "steps_to_recover": None if healed is None else healed - lifted_at,
        "error_curve": _curve(errors.mean(axis=1)),
        "_frames": frames[:, 0],
        "_region": dead,
    }


def robustness(
    model: Any,
    task: Task,
    rng: np.random.Generator,
    quick: bool,
    *,
    steps: int | None = None,
    reset: str = "random",
) -> dict:
    """64x64, asynchronous steps at fire rate 0.6, a random 10x10 square reset after each.

    The grid starts from the task's start state (random bits), run asynchronously without
    resets for 8x the training steps so that the pattern forms first (the error then is
    `error_before_resets`); the curve shows how well it holds. `single_reset`: from the
    formed pattern, how many steps one reset square takes to heal. The error at step t is
    measured after the CA step and before that step's reset, i.e. it is the circuit's
    own output. A per-step random patch cannot be expressed as one `simulate` call
    (its damage mask is the same at every step), so the loop runs one step at a time on a
    `Simulator`, which keeps the compiled circuit and the packed grid between steps.
    """
    if reset not in RESET_MODES:
        raise ValueError(f"reset must be one of {RESET_MODES}, got {reset!r}")
    if steps is None:
        steps = QUICK_ROBUSTNESS_STEPS if quick else ROBUSTNESS_STEPS
    h = w = ROBUSTNESS_SIZE
    target = fixed_target(task, h, w)
    x = model.simulate(
        task.start(rng, 1, h, w),
        DAMAGE_SCALE * task.num_steps,
        fire_rate=ROBUSTNESS_FIRE_RATE,
        seed=_seed(rng),
    )
    before = float(task.cell_error(x[0], target))
    single = _single_reset_recovery(model, task, x, target, rng, reset, quick)
    step_seeds = rng.integers(0, 2**63, size=steps)
    corners = rng.integers(0, h - RESET_SIZE + 1, size=(steps, 2))
    errors = np.empty(steps)
    t0 = time.perf_counter()
    sim = Simulator(model, x)
    for t in range(steps):
        x = sim.run(1, fire_rate=ROBUSTNESS_FIRE_RATE, seed=int(step_seeds[t]))
        errors[t] = task.cell_error(x[0], target)
        _reset_square(x, int(corners[t][0]), int(corners[t][1]), reset, rng)
        sim.load(x)
    seconds = time.perf_counter() - t0
    tail = errors[steps // 2 :]
    return {
        "grid": [h, w],
        "steps": steps,
        "fire_rate": ROBUSTNESS_FIRE_RATE,
        "reset": f"{RESET_SIZE}x{RESET_SIZE} square to "
        + ("random bits" if reset == "random" else "zeros")
        + ", every step",
        "warmup_steps": DAMAGE_SCALE * task.num_steps,
        "error_before_resets": before,
        "single_reset": single,
        "final_error": float(errors[-1]),
        "mean_error_second_half": float(tail.mean()),
        "max_error_second_half": float(tail.max()),
        "ms_per_step": round(1000 * seconds / steps, 4),
        "error_curve": _curve(errors),
    }


def _reset_square(grid: np.ndarray, r: int, c: int, reset: str, rng: np.random.Generator) -> None:
    patch = grid[..., r : r + RESET_SIZE, c : c + RESET_SIZE, :]
    patch[...] = rng.integers(0, 2, size=patch.shape) if reset == "random" else 0


def _single_reset_recovery(
    model: Any,
    task: Task,
    formed: np.ndarray,
    target: np.ndarray,
    rng: np.random.Generator,
    reset: str,
    quick: bool,
) -> dict[str, Any]:
    """How long the formed pattern takes to heal one reset square: each trial resets one
    random square, then runs asynchronous steps; steps until exact again (None: not
    within the horizon). Only meaningful when the pattern had formed exactly."""
    before = float(task.cell_error(formed[0], target))
    if before != 0:
        return {"skipped": f"the pattern had not formed before the resets (error {before:.4g})"}
    trials = RECOVERY_TRIALS // (2 if quick else 1)
    boards = np.repeat(formed, trials, axis=0)
    h, w = formed.shape[1:3]
    for i in range(trials):
        r, c = rng.integers(0, [h - RESET_SIZE + 1, w - RESET_SIZE + 1])
        _reset_square(boards[i], int(r), int(c), reset, rng)
    frames = model.simulate(
        boards, RECOVERY_HORIZON, fire_rate=ROBUSTNESS_FIRE_RATE, seed=_seed(rng), record=True
    )
    errors = task.cell_error(frames, target)  # (horizon + 1, trials)
    steps = [_first_lasting_zero(errors[:, i]) for i in range(trials)]
    healed = sorted(s for s in steps if s is not None)
    return {
        "trials": trials,
        "horizon": RECOVERY_HORIZON,
        "recovered": len(healed),
        "median_steps": None if len(healed) * 2 <= trials else healed[trials // 2],
        "steps": steps,
    }


def _seed(rng: np.random.Generator) -> int:
    return int(rng.integers(0, 2**63))


_SKIP_GOL = "the Game of Life circuit has no pattern to hold; it is checked against the rule"
_SKIP_GROW = "only for self-organising patterns (the checkerboard); see self_healing"


# ---- driver ---------------------------------------------------------------------------


def load_run(run: PathLike) -> tuple[Any, Preset, Path]:
    """`(model, preset, run directory)` of a training run directory (or checkpoint)."""
    loaded = runs.load_run(run)
    if loaded.preset is None or not loaded.preset.has_task():
        raise ValueError(f"{run}: cannot tell which task was trained (not a training run)")
    return loaded.model, loaded.preset, loaded.directory


def analyze(
    run: Any,
    out: PathLike | None = None,
    *,
    preset: str | Preset | None = None,
    seed: int = 0,
    quick: bool = False,
    experiments: str | tuple[str, ...] | list[str] = EXPERIMENTS,
    reset: str = "random",
    robustness_steps: int | None = None,
    task: Task | None = None,
) -> dict[str, Any]:
    """Runs the paper's experiments on a trained circuit; returns the measured numbers.

    `run` is a training run directory (or its checkpoint) or a `Model`; a Model needs
    `preset` (the preset or task kind it was trained for) or an explicit `task`. Files (one PNG
    per experiment and `analysis.json`) go to `out`, by default the run directory; for
    a Model without `out` nothing is written. `seed` fixes every random start, mask and
    reset; `quick` halves the boards and runs 400 instead of 4000 robustness steps.
    Experiments that do not apply come back as `{"skipped": reason}`.
    """
    from ..arguments import check_int
    from ..model import Model

    seed = check_int("seed", seed, 0)
    if isinstance(experiments, str):
        experiments = (experiments,)
    unknown = sorted(set(experiments) - set(EXPERIMENTS))
    if unknown:
        raise ValueError(f"unknown experiments {unknown}; known: {', '.join(EXPERIMENTS)}")
    if reset not in RESET_MODES:
        raise ValueError(f"reset must be one of {RESET_MODES}, got {reset!r}")
    if robustness_steps is not None:
        robustness_steps = check_int("robustness_steps", robustness_steps, 1)
    if isinstance(run, Model):
        model, run_dir, source = run, None, "model"
    else:
        model, trained, run_dir = load_run(run)
        preset = preset or trained
        source = str(run)
    if task is None:
        if preset is None:
            raise ValueError("analyze(model): pass preset= (the preset it was trained for)")
        task = task_for(preset, model)
    # The preset's name where there is one (the task's name is its kind).
    label = task.name if preset is None else preset if isinstance(preset, str) else preset.name
    out_dir = Path(out) if out is not None else run_dir
    if out_dir is not None:
        out_dir.mkdir(parents=True, exist_ok=True)

    results: dict[str, Any] = {}
    for i, name in enumerate(EXPERIMENTS):
        if name not in experiments:
            continue
        rng = np.random.default_rng([seed, i])  # each experiment its own stream
        results[name] = _run_experiment(name, model, task, rng, quick, reset, robustness_steps)
    report: dict[str, Any] = {
        "run": source,
        "preset": label,
        "seed": seed,
        "quick": quick,
        "model": repr(model),
        "experiments": {k: _public(v) for k, v in results.items()},
    }
    if out_dir is not None:
        files = write_plots(results, task, out_dir, title=f"{label} ({source})")
        report["files"] = files
        text = json.dumps(report, indent=1) + "\n"
        write_atomic(out_dir / "analysis.json", text.encode())
    return report


def _run_experiment(
    name: str,
    model: Any,
    task: Task,
    rng: np.random.Generator,
    quick: bool,
    reset: str,
    robustness_steps: int | None,
) -> dict[str, Any]:
    if name == "gates":
        return gate_histograms(model)
    if name == "generalisation":
        if task.kind == "life":
            return gol_accuracy(model, task, rng, quick)
        return generalisation(model, task, rng, quick)
    if task.kind == "life":
        return {"skipped": _SKIP_GOL}
    if name == "self_healing":
        return self_healing(model, task, rng, quick)
    if task.kind != "pattern":
        return {"skipped": _SKIP_GROW}
    if name == "fault_tolerance":
        return fault_tolerance(model, task, rng, quick)
    return robustness(model, task, rng, quick, steps=robustness_steps, reset=reset)


def _public(result: dict[str, Any]) -> dict[str, Any]:
    """The numbers of a result, without the arrays kept for plotting (keys `_...`)."""
    return {k: v for k, v in result.items() if not k.startswith("_")}


# ---- summary table --------------------------------------------------------------------


def summary_lines(report: dict[str, Any]) -> list[str]:
    """One line per experiment with its headline numbers (what the CLI prints)."""
    lines = []
    for name, r in report["experiments"].items():
        if "skipped" in r:
            text = f"skipped: {r['skipped']}"
        elif name == "generalisation" and "boards_correct" in r:
            div = r["first_divergence_step"]
            text = (
                f"{r['boards_correct']}/{r['boards']} boards right; {r['grid'][0]}x"
                f"{r['grid'][1]} for {r['steps']} steps: "
                + ("same as the rule" if div is None else f"diverges at step {div}")
            )
        elif name == "generalisation":
            text = (
                f"{r['grid'][0]}x{r['grid'][1]}, {r['steps']} steps: error {r['final_error']:.4g}"
                f" ({r['boards_exact']}/{r['boards']} boards exact)"
            )
        elif name == "fault_tolerance":
            text = (
                f"dead {r['damage'][0]}x{r['damage'][1]}: error outside "
                f"{r['final_error_outside']:.4g} ({r['boards_exact_outside']}/{r['boards']} exact)"
            )
        elif name == "self_healing":
            rec = r["steps_to_recover"]
            text = (
                f"error {r['error_when_lifted']:.4g} when lifted, {r['final_error']:.4g} at end"
                + (f", exact {rec} steps after" if rec is not None else ", not recovered")
            )
        elif name == "robustness":
            one = r["single_reset"]
            text = (
                f"{r['steps']} steps: mean error {r['mean_error_second_half']:.4g} "
                f"(2nd half), final {r['final_error']:.4g}; one reset: "
                + (
                    one["skipped"]
                    if "skipped" in one
                    else f"{one['recovered']}/{one['trials']} healed, median "
                    f"{one['median_steps']} steps"
                )
            )
        else:
            text = (
                f"{r['active_gates']} active of {r['gates']} (perceive {r['active_perceive']}, "
                f"update {r['active_update']}); {r['circuit_active_gates']} after folding"
            )
        lines.append(f"{name:<16} {text}")
    return lines
