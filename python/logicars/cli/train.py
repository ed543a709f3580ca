"""`logicars train`: train a preset or task kind and write a run directory."""

from __future__ import annotations

import argparse
import signal

from .common import (
    PROG,
    UsageError,
    fail,
    fraction,
    int_at_least,
    non_negative_float,
    positive_float,
)

HELP = "train a preset or task kind and write a run directory"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "preset",
        nargs="?",
        help="preset name (see `logicars presets`) or task kind: life:B36/S23 (a Life-like "
        "rule), grow:IMAGE.png (grow the image from a seed cell), pattern:TILE.png "
        "(self-organise into the repeated tile); or an experiment file FILE.toml (task, "
        "model and training options; `logicars presets --show NAME` prints a preset's, and "
        "options given here replace the file's); optional with --resume",
    )
    p.add_argument(
        "--size",
        type=int_at_least(1),
        metavar="N",
        help="grow: shrink the image to fit N x N (default: its own size); pattern: the "
        "N x N training grid (default: the checkerboard's)",
    )
    p.add_argument(
        "--async",
        dest="use_async",
        action="store_true",
        help="pattern: asynchronous updates, on checkerboard-async's model and numbers",
    )
    p.add_argument("--epochs", type=int_at_least(1), help="total epochs (default: the preset's)")
    p.add_argument(
        "--seed",
        type=int_at_least(0),
        help="fixes wiring, data and async masks (default: the preset's)",
    )
    p.add_argument("--lr", type=positive_float, help="learning rate (default: the preset's)")
    p.add_argument(
        "--weight-decay",
        type=non_negative_float,
        help="AdamW's decoupled weight decay (default: the preset's, 0.01 as the notebook's)",
    )
    p.add_argument(
        "--lr-decay-from",
        type=int_at_least(0),
        metavar="EPOCH",
        help="after this epoch the learning rate falls along a half cosine to --lr-end at "
        "the last epoch (with --lr-end; default: the preset's, none)",
    )
    p.add_argument(
        "--lr-end",
        type=positive_float,
        metavar="LR",
        help="the learning rate at the last epoch of --lr-decay-from's decay",
    )
    add_relax_arguments(p)
    p.add_argument("--out", metavar="DIR", help="run directory (default runs/<preset>-<time>)")
    p.add_argument(
        "--threads", type=int_at_least(0), help="engine threads (default/0: one per core)"
    )
    p.add_argument("--resume", metavar="DIR", help="continue the run in DIR from its checkpoint")
    p.add_argument(
        "--init",
        metavar="NPZ",
        help="start from this wiring and logits (fixture-format npz, e.g. the reference "
        "notebook's initialisation) instead of a fresh seeded model (default: the preset's "
        "own start if it has one and no --seed is given)",
    )
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.add_argument(
        "--tensorboard",
        action="store_true",
        help="also write the losses as TensorBoard event files into the run directory "
        "(needs the tensorboard extra: pip install 'logicars[tensorboard]')",
    )
    p.add_argument(
        "--early-stop",
        type=int_at_least(1),
        metavar="K",
        help="stop once the hard loss has been 0 for K consecutive epochs",
    )
    p.add_argument(
        "--stop-on-solve",
        action=argparse.BooleanOptionalAction,
        default=None,  # True, unless an experiment file says otherwise
        help="stop once the hard circuit passes the validation check (default); "
        "--no-stop-on-solve trains every epoch, as the reference notebook",
    )
    p.add_argument(
        "--repair",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="when the hard circuit gets a batch right but fails the validation check, "
        "search for gate changes that make it pass (default for a new run; a resumed "
        "run keeps its setting)",
    )
    p.add_argument(
        "--drift-budget",
        type=int_at_least(0),
        metavar="N",
        help="with --repair, a run that ends its epochs unsolved then searches its hard "
        "circuit's gates for up to N candidates (a drift search, as `repair`; 0: none; "
        "default: the preset's); a resumed run goes on with an interrupted search",
    )
    p.add_argument(
        "--restart-every",
        type=int_at_least(1),
        metavar="N",
        help="replace an attempt that has not solved the task after N epochs by a fresh "
        "wiring, while --epochs last (default: the preset's)",
    )
    p.add_argument(
        "--stall-epochs",
        type=int_at_least(1),
        metavar="N",
        help="with --stall-loss: an attempt whose lowest hard loss after N of its epochs "
        "is still above the loss is replaced by a fresh wiring that trains --epochs epochs "
        "of its own, at most twice (default: the preset's)",
    )
    p.add_argument(
        "--stall-loss",
        type=non_negative_float,
        metavar="L",
        help="the hard loss of --stall-epochs (default: the preset's)",
    )
    p.add_argument(
        "--checkpoint-every",
        type=int_at_least(1),
        metavar="N",
        default=None,
        help="epochs between checkpoints (default 50; one is always written at the end)",
    )


def add_relax_arguments(p: argparse.ArgumentParser) -> None:
    """`--relax MODE --tau T --noise S --warmup N`, as `train()` takes them."""
    from ..spec import RELAX_MODES

    p.add_argument(
        "--relax",
        choices=RELAX_MODES,
        help="training relaxation (default: the preset's; softmax is the reference notebook's)",
    )
    p.add_argument(
        "--tau", type=positive_float, help="backward temperature (gumbel-st, hard-st, gumbel-soft)"
    )
    p.add_argument(
        "--noise", type=non_negative_float, help="Gumbel noise scale (gumbel-st, gumbel-soft)"
    )
    p.add_argument(
        "--warmup",
        type=int_at_least(0),
        metavar="EPOCHS",
        help="epochs trained as softmax before the straight-through forward (gumbel-st, "
        "hard-st), or relaxed before the hard gates (truth-table --hard-fraction)",
    )
    p.add_argument(
        "--hard-fraction",
        type=fraction,
        metavar="Q",
        help="truth-table: the share of gates forwarded hard, straight-through, in each "
        "epoch (with --binarize-states in the rounded ones); drawn per gate and epoch",
    )
    p.add_argument(
        "--binarize-states",
        action=argparse.BooleanOptionalAction,
        help="round the state to 0/1 between training steps, straight-through "
        "(default: the preset's)",
    )
    p.add_argument(
        "--binarize-every",
        type=int_at_least(1),
        metavar="N",
        help="with --binarize-states, round only in every N-th epoch's rollout, the others "
        "relaxed (default: the preset's)",
    )


def run(args: argparse.Namespace) -> int:
    from ..spec import Relaxation
    from ..tensorboard_log import require_writer
    from ..train import train

    if args.preset is None and args.resume is None:
        raise UsageError(f"{PROG} train: a preset is required (or --resume DIR); see --help")
    if args.tensorboard:
        try:
            require_writer()
        except ImportError as e:  # a missing extra: one line, before any work
            raise UsageError(f"{PROG} train: --tensorboard: {e}") from None
    # Only the options given: `train` takes the rest from an experiment file or its
    # defaults, so a file's options are replaced by the command line's in one place.
    given = {
        "epochs": args.epochs,
        "seed": args.seed,
        "lr": args.lr,
        "weight_decay": args.weight_decay,
        "lr_decay_from": args.lr_decay_from,
        "lr_end": args.lr_end,
        "out": args.out,
        "resume": args.resume,
        "restart_every": args.restart_every,
        "stall_epochs": args.stall_epochs,
        "stall_loss": args.stall_loss,
        "init": args.init,
        "size": args.size,
        "threads": args.threads,
        "early_stop": args.early_stop,
        "stop_on_solve": args.stop_on_solve,
        "repair": args.repair,
        "drift_budget": args.drift_budget,
        "checkpoint_every": args.checkpoint_every,
        "relax": args.relax,
        "tau": args.tau,
        "noise": args.noise,
        "warmup": args.warmup,
        "hard_fraction": args.hard_fraction,
        "binarize_states": args.binarize_states,
        "binarize_every": args.binarize_every,
    }
    result = train(
        args.preset,
        asynchronous=args.use_async,
        quiet=args.quiet,
        tensorboard=True if args.tensorboard else None,
        **{key: value for key, value in given.items() if value is not None},
    )
    s = result.summary
    zero = s["first_epoch_hard_zero"]
    first = f"first 0 at epoch {zero}" if zero is not None else "never 0"
    if s["solved_epoch"] is not None:
        first += f"; solved the validation check at epoch {s['solved_epoch']}"
    ev = s["hard_eval"]
    # A run with restarts: how many wirings its epochs went to.
    attempts = f" over {len(s['restarts']) + 1} attempts" if s["restarts"] else ""
    print(
        f"{s['preset']} ({Relaxation(**s['relax']).label()}): {s['epochs']} epochs{attempts} in "
        f"{s['wall_seconds']:.1f} s, "
        f"final soft loss {s['final_soft_loss']:.4g}, hard loss {s['final_hard_loss']:g} "
        f"({first}), {s['active_gates']} active gates; the hard circuit solves "
        f"{ev['solved']}/{ev['samples']} held-out inputs -> {result.run_dir}"
    )
    if result.interrupted:
        print(f"interrupted; continue with: {PROG} train --resume {result.run_dir}")
    if result.stopped_by in ("SIGTERM", "SIGHUP"):
        # Preempted (a scheduler or a closed terminal): 128 + the signal, as a shell
        # reports a process the signal killed, but with the checkpoint written.
        signum = int(getattr(signal, result.stopped_by))
        return fail(
            f"{PROG}: stopped by {result.stopped_by} after epoch {s['epochs']}; checkpoint "
            f"saved; continue with: {PROG} train --resume {result.run_dir}",
            128 + signum,
        )
    return 0
