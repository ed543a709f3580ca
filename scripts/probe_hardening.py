"""Progressive hardening probe on a converged run (docs/results.md, growth gap).

    python scripts/probe_hardening.py PRESET RUN_DIR [--rounds 0.45,0.55,...,1.0] [--epochs 200]

Freezes the most confident gates (largest softmax probability of their chosen op) to
one-hot logits, trains the rest on the preset's batch for `--epochs`, and repeats for each
fraction in `--rounds`, until every gate is hard. After each round it prints the soft and
hard loss and the wrong cells on the validation inputs: whether the still-soft gates can
make up for the frozen gates' mixtures, which is what would close the discretization gap.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

import logicars
from logicars.circuit.evaluate import heldout_inputs, wrong_cells

# A frozen gate's logits: its op at +HOT, every other at -HOT (softmax weight ~ 1 - 3e-8).
HOT = 10.0


def confidence(rows: np.ndarray) -> np.ndarray:
    z = rows.astype(np.float64)
    p = np.exp(z - z.max(axis=1, keepdims=True))
    return (p / p.sum(axis=1, keepdims=True)).max(axis=1)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("preset")
    p.add_argument("run_dir", type=Path)
    p.add_argument("--rounds", default="0.45,0.55,0.65,0.72,0.78,0.84,0.88,0.92,0.95,0.97,0.985,1")
    p.add_argument("--epochs", type=int, default=200, help="training epochs after each round")
    args = p.parse_args()

    model = logicars.Model.load(args.run_dir / "model.safetensors")
    preset = logicars.get_preset(args.preset)
    task = preset.task()
    rng = np.random.default_rng(0)
    x_check, target = heldout_inputs(model, preset, 64, 1)

    def wrong() -> int:
        return int(np.count_nonzero(wrong_cells(model, preset, x_check, target, 1)))

    frozen: dict[str, np.ndarray] = {}
    print(f"start: {wrong()} wrong cells", flush=True)
    for fraction in (float(f) for f in args.rounds.split(",")):
        params = model.params()
        for name, arr in params.items():
            rows = arr.reshape(-1, arr.shape[-1])
            done = frozen.setdefault(name, np.zeros(len(rows), bool))
            order = np.argsort(-confidence(rows), kind="stable")
            more = int(np.ceil(fraction * len(rows))) - int(done.sum())
            for g in [g for g in order if not done[g]][: max(0, more)]:
                op = int(np.argmax(rows[g]))
                rows[g] = -HOT
                rows[g, op] = HOT
                done[g] = True
        hard_rows = {
            name: arr.reshape(-1, arr.shape[-1])[frozen[name]].copy()
            for name, arr in params.items()
        }
        model.set_params(params)
        for _ in range(args.epochs):
            soft, hard = model.train_step(*task.sample(rng))
            params = model.params()
            for name, arr in params.items():  # the frozen gates stay as they were set
                arr.reshape(-1, arr.shape[-1])[frozen[name]] = hard_rows[name]
            model.set_params(params)
        print(
            f"{fraction:6.1%} frozen: soft loss {soft:.3g}, hard loss {hard:g}, "
            f"{wrong()} wrong cells",
            flush=True,
        )


if __name__ == "__main__":
    main()
