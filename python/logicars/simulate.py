"""`python -m logicars simulate`: run a trained circuit with the bit-sliced engine.

The start state follows the run's task (`logicars.tasks`): a grow task's fixed start
grid (the lizard's seed cell, the coloured G's zeros) centred on the requested grid, else
random bits. When the task has a target the summary compares with it by the task's
scoring rule: a Life-like rule applied `steps` times, a pattern (in any phase) at any
size, the grown image at the task's size.
"""

from __future__ import annotations

import argparse

import numpy as np

from .cli import UsageError, _int_at_least, register
from .files import save_atomic
from .presets import Preset
from .tasks import LifeTask, Task

# GIFs hold at most about this many frames (steps are sampled evenly).
_GIF_FRAMES = 100


def _task(preset: Preset | None) -> Task | None:
    """The preset's task, if it names one."""
    return preset.task() if preset is not None and preset.has_task() else None


def _fixed_start(preset: Preset | None) -> Task | None:
    """The preset's task when it starts from one fixed grid (a grown image)."""
    task = _task(preset)
    return task if task is not None and task.fixed_start else None


def start_grid(
    preset: Preset | None, channels: int, size: int, batch: int, seed: int
) -> np.ndarray:
    """The start state `(batch, size, size, C)` uint8 for a run of `preset`."""
    rng = np.random.default_rng(seed)
    grow = _fixed_start(preset)
    if grow is not None:
        x = grow.start(rng, 1, grow.height, grow.width)
        return np.repeat(_centred(x, size), batch, axis=0).astype(np.uint8)
    return rng.integers(0, 2, size=(batch, size, size, channels), dtype=np.uint8)


def _centred(x: np.ndarray, size: int) -> np.ndarray:
    """`x` `(B, H, W, C)` cropped or zero-padded to `size × size` around its centre cell."""
    b, h, w, c = x.shape
    out = np.zeros((b, size, size, c), dtype=x.dtype)
    # Source and destination windows that keep cell (h // 2, w // 2) at (size // 2, size // 2).
    src_r0, dst_r0 = max(0, h // 2 - size // 2), max(0, size // 2 - h // 2)
    src_c0, dst_c0 = max(0, w // 2 - size // 2), max(0, size // 2 - w // 2)
    rows = min(h - src_r0, size - dst_r0)
    cols = min(w - src_c0, size - dst_c0)
    out[:, dst_r0 : dst_r0 + rows, dst_c0 : dst_c0 + cols] = x[
        :, src_r0 : src_r0 + rows, src_c0 : src_c0 + cols
    ]
    return out


def target_grid(preset: Preset | None, x: np.ndarray, steps: int) -> np.ndarray | None:
    """The grid a run of `preset` should reach from `x` after `steps` steps, on the loss
    channels `(B, H, W, len(loss_channels))`, or None when there is no fixed target."""
    task = _task(preset)
    if isinstance(task, LifeTask):
        return task.target(x, steps)
    if task is None:
        return None
    if task.fixed_target or (steps == task.num_steps and x.shape[1:3] == (task.height, task.width)):
        return task.target(x)
    return None  # a custom task's target after its own steps, on its own grid only


def _simulate_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("model", metavar="RUN_OR_MODEL", help="run directory, .safetensors or .npz")
    p.add_argument(
        "--size",
        type=_int_at_least(1),
        help="grid side N (default: the preset's grid for grow presets, else 64)",
    )
    p.add_argument("--steps", type=_int_at_least(0), help="CA steps (default: the model's)")
    p.add_argument("--batch", type=_int_at_least(1), default=1, help="boards (default 1)")
    p.add_argument("--seed", type=_int_at_least(0), default=0, help="start state and async masks")
    p.add_argument(
        "--async",
        dest="use_async",
        action="store_true",
        help="asynchronous updates (fire rate: --fire-rate, else the model's, else 0.6)",
    )
    p.add_argument(
        "--fire-rate",
        type=float,
        metavar="P",
        help="probability that a cell updates in a step, in (0, 1] (implies --async)",
    )
    p.add_argument(
        "--damage",
        type=_int_at_least(1),
        metavar="R",
        help="kill an R x R square at the centre in every step",
    )
    p.add_argument("--gif", metavar="FILE", help="write board 0 as an animated GIF")
    p.add_argument("--out", metavar="FILE", help="save the final grids as .npy (B, N, N, C) uint8")


def _run_simulate(args: argparse.Namespace) -> int:
    from .runs import load_run
    from .train import write_frames_gif

    run = load_run(args.model)
    model, preset, spec = run.model, run.preset, run.model.spec
    size = args.size or (preset.height if preset and _fixed_start(preset) else 64)
    steps = spec.num_steps if args.steps is None else args.steps
    fire_rate: float | None = None
    if args.fire_rate is not None:
        if not 0.0 < args.fire_rate <= 1.0:
            raise UsageError(f"--fire-rate must be in (0, 1], got {args.fire_rate}")
        fire_rate = None if args.fire_rate == 1.0 else args.fire_rate  # every cell fires
    elif args.use_async:
        fire_rate = spec.fire_rate or 0.6
    elif spec.is_async:
        fire_rate = spec.fire_rate
    damage = None
    if args.damage is not None:
        if args.damage > size:
            raise UsageError(f"--damage {args.damage} is larger than the {size}x{size} grid")
        damage = np.zeros((size, size), dtype=np.uint8)
        r0 = (size - args.damage) // 2
        damage[r0 : r0 + args.damage, r0 : r0 + args.damage] = 1

    x = start_grid(preset, spec.channels, size, args.batch, args.seed)
    every = max(1, -(-steps // _GIF_FRAMES)) if args.gif else 0
    out = model.simulate(x, steps, fire_rate=fire_rate, seed=args.seed, damage=damage, record=every)
    final = out[-1] if every else out
    if args.gif:
        write_frames_gif(out[:, 0], spec.loss_channels, args.gif)
    if args.out:
        out_path = args.out if args.out.endswith(".npy") else f"{args.out}.npy"  # as np.save
        save_atomic(out_path, lambda f: np.save(f, final))

    mode = "sync" if fire_rate is None else f"async {fire_rate:g}"
    name = preset.name if preset is not None else "model"
    ch = spec.loss_channels[0]
    line = (
        f"{name}: {args.batch} x {size}x{size}, {steps} steps ({mode})"
        + (f", {args.damage}x{args.damage} centre damaged" if damage is not None else "")
        + f": final density {final[..., ch].mean():.4f} (channel {ch})"
    )
    target = target_grid(preset, x, steps)
    task = _task(preset)
    if target is not None and task is not None:
        wrong = int(np.count_nonzero(task.wrong(final, target)))
        line += f", {wrong} of {target.size} target cells wrong ({wrong / target.size:.2%})"
    print(line)
    for label, path in (("gif", args.gif), ("grids", args.out)):
        if path:
            print(f"wrote {label} to {path}")
    return 0


register(
    "simulate",
    "run a trained circuit on a grid (bit-sliced engine)",
    _simulate_arguments,
    _run_simulate,
)
