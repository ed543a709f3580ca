"""Draw the reference notebook's own initialisation of a preset (wiring and logits, as its
`init_state(hyperparams, opt, seed)` makes them with JAX's random streams) and write it as
a fixture-format npz that `logicars train <preset> --init FILE` starts from.

    pip install "jax[cpu]==0.4.33"        # the version the notebook pins; not a logicars dependency
    python scripts/notebook_init.py lizard --seed 23 --out lizard-nb23.npz
    python -m logicars train lizard --relax softmax --init lizard-nb23.npz

This engine draws its wiring from ChaCha8, so `--seed 23` here is not the notebook's run;
with this file the wiring permutations are exactly the notebook's (the logits start as
pass-through either way), and because the growth presets' data is fixed, the run follows
the notebook's up to float rounding. docs/notebook.md says what that showed.

Key order, as in the notebook: `PRNGKey(seed)` splits into (train key, init key); the init
key splits once for the update network and once more for the perceive network; within
each network every layer takes the next split. A `unique` layer permutes the pairs of
`get_unique_connections` (here `logicars._core.unique_pairs`, checked against the
notebook's output by the fixtures) with `jax.random.permutation(key, out)`; the
`first_kernel` layer permutes the 8 neighbours, each paired with the centre.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

import logicars

PASS_THROUGH = 3
PASS_VALUE = 10.0  # the notebook's DEFAULT_PASS_VALUE


def _layer_wires(jax, key, kind: str, n_in: int, n_out: int) -> np.ndarray:
    """(2, n_out) int32 wires of one layer, permuted by `key` as the notebook does."""
    if kind == "first_kernel":
        a = np.array([0, 1, 2, 3, 5, 6, 7, 8])
        b = np.full(8, 4)
    elif kind == "unique":
        a, b = (np.asarray(w) for w in logicars._core.unique_pairs(n_in, n_out))
    else:
        raise SystemExit(f"the notebook's presets use first_kernel/unique wiring, not {kind!r}")
    order = np.asarray(jax.random.permutation(key, len(a)))
    return np.stack([a[order], b[order]]).astype(np.int32)


def _network(jax, key, layers: list[int], kinds: list[str]) -> list[np.ndarray]:
    wires = []
    for n_in, n_out, kind in zip(layers[:-1], layers[1:], kinds):
        key, sub = jax.random.split(key)
        wires.append(_layer_wires(jax, sub, kind, n_in, n_out))
    return wires


def notebook_init(preset: logicars.Preset, seed: int) -> dict[str, np.ndarray]:
    """The notebook's initial wiring and logits for `preset`, by fixture name, plus config."""
    import jax

    spec = preset.spec
    _, init_key = jax.random.split(jax.random.PRNGKey(seed), 2)
    init_key, update_key = jax.random.split(init_key)
    _, perceive_key = jax.random.split(init_key)
    arrays: dict[str, np.ndarray] = {"config": np.array(spec.to_json())}
    update = _network(jax, update_key, spec.update.layers, spec.update.connections)
    perceive = _network(jax, perceive_key, spec.perceive.layers, spec.perceive.connections)
    for name, wires, per_kernel in (("update", update, None), ("perceive", perceive, spec)):
        for i, w in enumerate(wires):
            logits = np.zeros((w.shape[1], 16), np.float32)
            logits[:, PASS_THROUGH] = PASS_VALUE
            if per_kernel is not None:
                logits = np.repeat(logits[None], per_kernel.perceive.n_kernels, axis=0)
            arrays[f"{name}_wires_{i}"] = w
            arrays[f"{name}_logits_{i}"] = logits
    return arrays


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("preset", help="preset name")
    ap.add_argument("--seed", type=int, default=23, help="the notebook's seed (default 23)")
    ap.add_argument("--out", type=Path, required=True, help="npz file to write")
    args = ap.parse_args()
    preset = logicars.get_preset(args.preset)
    arrays = notebook_init(preset, args.seed)
    np.savez_compressed(args.out, **arrays)
    logicars.Model.from_npz(args.out)  # the engine accepts it
    print(json.dumps({"preset": preset.name, "seed": args.seed, "out": str(args.out)}))


if __name__ == "__main__":
    main()
