"""`logicars simulate`: run a trained circuit on a grid (see `logicars.circuit.simulate`)."""

from __future__ import annotations

import argparse

import numpy as np

from ..circuit.simulate import START_KINDS, read_start, start_grid, target_grid
from ..files import save_atomic
from ..presets import fixed_start_task, preset_task
from .common import UsageError, int_at_least

HELP = "run a trained circuit on a grid (bit-sliced engine)"

# GIFs hold at most about this many frames (steps are sampled evenly).
_GIF_FRAMES = 100


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "model",
        metavar="RUN_OR_MODEL",
        help="run directory, .safetensors or .npz, or a preset's name for the circuit shipped "
        "with the package (e.g. gol)",
    )
    p.add_argument(
        "--size",
        type=int_at_least(1),
        help="grid side N (default: the preset's grid for grow presets, else 64)",
    )
    p.add_argument("--steps", type=int_at_least(0), help="CA steps (default: the model's)")
    p.add_argument("--batch", type=int_at_least(1), help="boards (default 1)")
    p.add_argument("--seed", type=int_at_least(0), default=0, help="start state and async masks")
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
        type=int_at_least(1),
        metavar="R",
        help="kill an R x R square at the centre in every step",
    )
    p.add_argument(
        "--start",
        metavar="seed|random|FILE.npy",
        help="the start state: the task's own (seed: a grow task's seed cell, else its "
        "start draw), random bits, or a grid from a .npy file, (B, H, W, C) or (H, W, C) "
        "of 0/1, which sets the grid and batch (default: seed for grow tasks, else random)",
    )
    p.add_argument("--gif", metavar="FILE", help="write board 0 as an animated GIF")
    p.add_argument("--out", metavar="FILE", help="save the final grids as .npy (B, N, N, C) uint8")


def run(args: argparse.Namespace) -> int:
    from ..pretrained import open_run
    from ..viz.plots import write_frames_gif

    run = open_run(args.model)
    model, preset, spec = run.model, run.preset, run.model.spec
    x = None
    if args.start is not None and args.start not in START_KINDS:
        if args.size is not None or args.batch is not None:
            raise UsageError("--start FILE.npy sets the grid and batch: give no --size or --batch")
        x = read_start(args.start, spec.channels)
    size = args.size or (preset.height if preset and fixed_start_task(preset) else 64)
    batch = 1 if args.batch is None else args.batch
    if x is not None:
        batch, height, width = x.shape[:3]
    else:
        height = width = size
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
        if args.damage > min(height, width):
            raise UsageError(f"--damage {args.damage} is larger than the {height}x{width} grid")
        damage = np.zeros((height, width), dtype=np.uint8)
        r0, c0 = (height - args.damage) // 2, (width - args.damage) // 2
        damage[r0 : r0 + args.damage, c0 : c0 + args.damage] = 1

    if x is None:
        x = start_grid(preset, spec.channels, size, batch, args.seed, args.start)
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
        f"{name}: {batch} x {height}x{width}, {steps} steps ({mode})"
        + (f", {args.damage}x{args.damage} centre damaged" if damage is not None else "")
        + f": final density {final[..., ch].mean():.4f} (channel {ch})"
    )
    target = target_grid(preset, x, steps)
    task = preset_task(preset)
    if target is not None and task is not None:
        wrong = int(np.count_nonzero(task.wrong(final, target)))
        line += f", {wrong} of {target.size} target cells wrong ({wrong / target.size:.2%})"
    print(line)
    for label, path in (("gif", args.gif), ("grids", args.out)):
        if path:
            print(f"wrote {label} to {path}")
    return 0
