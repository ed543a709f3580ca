"""Builds `tests/fixtures/lr_held_out.npz`: `sync_small.npz` with a learning rate that is
not the default (0.02), and its optimizer step recomputed in float64 by the independent
reference (`tests/reference.py`: gradient, then clip and the first AdamW step as the
fixture README states). It checks that a file's learning rate is kept by `from_npz`
and used by `train_step` (issue 42: one with lr 0.06 stepped at 0.05).

    python tests/make_lr_fixture.py      # rewrites the file; deterministic
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
from reference import Reference

HERE = Path(__file__).resolve().parent / "fixtures"
LR = 0.02


def first_adamw_step(w: np.ndarray, g: np.ndarray, lr: float, wd: float = 1e-2) -> np.ndarray:
    """The first AdamW step from a fresh state (t = 1), in float64."""
    g = np.clip(g, -100, 100)
    m_hat = 0.1 * g / (1 - 0.9)
    v_hat = 0.01 * g * g / (1 - 0.99)
    return w - lr * (m_hat / (np.sqrt(v_hat) + 1e-8) + wd * w)


def main() -> None:
    with np.load(HERE / "sync_small.npz", allow_pickle=False) as z:
        f = {k: z[k] for k in z.files}
    config = json.loads(str(f["config"]))
    config["lr"] = LR
    wires = {k: v for k, v in f.items() if "_wires_" in k}
    params = {k: v for k, v in f.items() if "_logits_" in k}
    ref = Reference(config, wires, params)
    loss, grads = ref.loss_and_grad(f["x"], f["y"], config["num_steps"])
    out = {"config": np.array(json.dumps(config, sort_keys=True)), "x": f["x"], "y": f["y"]}
    out.update(wires)
    out.update(params)
    out["soft_loss"] = np.array(loss, np.float32)
    for name, g in grads.items():
        out["grad_" + name.replace("_logits", "")] = g.astype(np.float32)
        step = first_adamw_step(np.asarray(params[name], np.float64), g, LR)
        out["next_" + name] = step.astype(np.float32)
    np.savez(HERE / "lr_held_out.npz", **out)


if __name__ == "__main__":
    main()
