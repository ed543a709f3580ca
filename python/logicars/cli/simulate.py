"""`logicars simulate`: run a trained circuit on a grid (see `logicars.simulate`)."""

from __future__ import annotations

import argparse

import numpy as np

from ..files import save_atomic
from ..simulate import _fixed_start, _task, start_grid, target_grid
from .common import UsageError, int_at_least

HELP = "run a trained circuit on a grid (bit-sliced engine)"

# GIFs hold at most about this many frames (steps are sampled evenly).
_GIF_FRAMES = 100


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("model", metavar="RUN_OR_MODEL", help="run directory, .safetensors or .npz")
    p.add_argument(
        "--size",
        type=int_at_least(1),
        help="grid side N (default: the preset's grid for grow presets, else 64)",
    )
    p.add_argument("--steps", type=int_at_least(0), help="CA steps (default: the model's)")
    p.add_argument("--batch", type=int_at_least(1), default=1, help="boards (default 1)")
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
    p.add_argument("--gif", metavar="FILE", help="write board 0 as an animated GIF")
    p.add_argument("--out", metavar="FILE", help="save the final grids as .npy (B, N, N, C) uint8")


def run(args: argparse.Namespace) -> int:
    from ..plots import write_frames_gif
    from ..runs import load_run

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
