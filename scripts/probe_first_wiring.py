"""Probe levers the package has no option for, on the checkerboard's first wiring
(docs/results.md, *First wiring: levers without an option*).

    python scripts/probe_first_wiring.py VARIANT [VARIANT ...] [--seeds 0-19] [--out FILE]
        [--chunk-cells 64]

Each variant trains a fresh wiring of the `checkerboard` preset (its spec, batch, learning
rate and pass-through logit; AdamW's β1 the notebook's 0.9, 64 cells a chunk
(`--chunk-cells`) and 20 steps, as when the rows were recorded) for the notebook's 500
epochs, one random start per epoch, and records the first epoch whose hard circuit is
exact on its batch and then on 64 fixed random starts (the probe's own check; `train`
validates and confirms on other draws, so the counts compare between variants, not with
`sweep`'s). Variants:

- `plain`: the loss at step 20, the last, as `train` does;
- `loss-from=L`: the loss the mean over steps L..20 (the engine's `train_step_at`);
- `hold=N`: rollouts of 20 + N steps, the loss over steps 20..20+N;
- `steps-jitter=J`: each epoch's rollout length drawn from 20-J..20+J, the loss at its last;
- `lr-warmup=E`: the learning rate rising linearly from 0 to the preset's over E epochs;
- `kernels=K`: K perception kernels instead of 16;
- `channels=C`: C state channels instead of 8 (the check drawn on C channels);
- `batches=K`: the run's wiring, trained on batch stream K instead of the seed's own
  (does the wiring decide, or the draws?);
- `round-every=N`: the states rounded to 0/1 between steps (straight-through) in every
  N-th epoch's rollout, the others relaxed (the lizard's `binarize_every`);
- `beta1=B`: AdamW's first-moment decay B instead of the notebook's 0.9 (`train --beta1`);
- `lr-cosine=F`: the learning rate decayed along a cosine to F times the preset's over the
  500 epochs;
- `beta2=B`: the engine's AdamW (gradients clipped to ±100, β1 0.9, β2 0.99) redone in
  numpy with β2 = B (`beta2=0.99` is that numpy baseline: float rounding apart, `plain`);
- `logit-noise=S`: the numpy AdamW, and Gaussian noise of deviation S added to every logit
  after each step (a random walk off plateaus);
- `choose=KxE`: K wirings (the run's, then its restart seeds') trained E epochs each,
  each on a batch stream of its own, and the one with the lowest mean hard loss over its
  last 10 epochs trained on: a choice among wirings, whose epochs all count against the
  500 (a wiring exact during its trial stops the probe there).
- `lr=R`: the learning rate R instead of the preset's;
- `init-noise=S`: Gaussian noise of deviation S added to every logit of the fresh wiring
  (on top of the pass-through init; difflogic's original init is noise alone).
- `nearest-phase`: each start's target the phase of the tile nearest to what the hard
  circuit grows from it before the step (the check accepts any phase);
- `grid=N`: training on N x N grids (the check stays on the preset's 16 x 16);
  `grid-warmup=E`: 8 x 8 for the first E epochs; `grid-mix=LO`: each epoch's side drawn
  from the even sides LO..16; `grid-after=N`: the preset's grid until the circuit first
  solves there, then N x N, and solved only at an epoch exact on an N x N batch (and on
  the check);
- `steps=N`: rollouts of N steps instead of 20, in training and in the check (the
  circuit has N steps to form the checkerboard);
- `wiring=random`: every layer the preset wires `unique` (each input read, in pairs)
  wired with two random distinct inputs per gate instead (difflogic's `random`);
- `eps=E`, `clip=C`: the numpy AdamW with ε = E instead of 1e-8, or the gradients clipped
  to ±C instead of ±100.
- `hard=Q@W`: softmax with a hard fraction: from epoch W on, a random share Q of the gates
  forwards its most likely op in each epoch, straight-through (`--hard-fraction Q
  --warmup W`).
- `init=Z`: a fresh gate's pass-through logit Z instead of the preset's;
  `wd=X`: AdamW's weight decay X instead of the preset's; `batch=N`: N random starts
  per epoch instead of the preset's one.
- `width=F`: every update layer of the preset's widest (256 gates) F times as wide, and
  the layers after them halving down to the channels; `depth=D`: D layers of the
  preset's widest instead of its 10.

Variants of the training loop combine with `+`, e.g. `beta1=0+lr=0.2`; `choose` runs
alone, and the numpy optimizer's variants combine only with `beta1` and `lr`.

One JSON line per (variant, seed) goes to `--out` (appended; docs/results.md's table of
them is `scripts/make_results.py`'s `{{probe-table NAME}}`), and a count per variant to
stdout. A wiring that solves is also run through `logicars.analyze`'s generalisation
experiment (4 random starts on a grid 4x larger per side, 4x the variant's steps, analysis
seed 0): `generalises` says whether it ends exact on all four.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np
from pattern_checks import generalises  # scripts/ is the path's first entry

import logicars
from logicars.training.policies import restart_seed

EPOCHS = 500  # the reference notebook's
CHECK_STARTS = 64
CHECK_SEED = 12345  # the probe's own check draw, fixed across variants
# AdamW's β1 of every variant but `beta1=B`: the notebook's, the preset's when the rows
# of docs/data/probes/first-wiring-checkerboard.jsonl were recorded (it is 0 since).
BETA1 = 0.9
# Cells the engine computes at a time: the preset's when the rows were recorded (it is
# 128 since); the width orders the gradient sums, so it is part of a run.
CHUNK_CELLS = 64
# The rollout's steps: the notebook's and the preset's (`steps=N` trains N).
NUM_STEPS = 20


def parse_seeds(text: str) -> list[int]:
    lo, _, hi = text.partition("-")
    return list(range(int(lo), int(hi or lo) + 1))


# Variants trained by `NumpyAdamW` instead of the engine's optimizer.
NUMPY_OPTIMIZER = ("beta2", "logit-noise", "eps", "clip")
# Variants whose argument is a float.
FLOAT_ARGUMENT = ("beta1", "lr-cosine", "lr", "init-noise", "width", "init", "wd")
FLOAT_ARGUMENT += NUMPY_OPTIMIZER
# Spec variants that build the network anew (`ModelSpec.build`).
REBUILT = ("kernels", "channels", "width", "depth")
# Variants that change the model's spec.
SPEC_KINDS = ("round-every", "steps", "wiring", "hard", "init") + REBUILT
# Variants that must run alone.
ALONE = ("choose",)
# What the numpy optimizer's variants combine with.
WITH_NUMPY_OPTIMIZER = NUMPY_OPTIMIZER + ("beta1", "lr")
KNOWN = ("plain", "loss-from", "hold", "steps-jitter", "lr-warmup", "batches", "batch")
KNOWN += ("nearest-phase", "grid", "grid-mix", "grid-warmup", "grid-after")
KNOWN += FLOAT_ARGUMENT + SPEC_KINDS + ALONE


def parse_variant(variant: str) -> dict[str, str]:
    """`kind=value+kind=value` as {kind: value} (a kind without a value reads ""), every
    kind known and those that run alone alone."""
    parts = dict(part.partition("=")[::2] for part in variant.split("+"))
    unknown = [kind for kind in parts if kind not in KNOWN]
    if unknown:
        raise SystemExit(f"unknown variant {unknown[0]!r}")
    if len(parts) > 1 and any(kind in ALONE for kind in parts):
        raise SystemExit(f"{variant!r}: {', '.join(ALONE)} run alone")
    if any(k in NUMPY_OPTIMIZER for k in parts) and any(
        k not in WITH_NUMPY_OPTIMIZER for k in parts
    ):
        raise SystemExit(
            f"{variant!r}: {', '.join(NUMPY_OPTIMIZER)} combine only with "
            f"{', '.join(WITH_NUMPY_OPTIMIZER)}"
        )
    return parts


class NumpyAdamW:
    """The engine's clipped AdamW (rust/core/src/optim.rs) in numpy, with β1, β2, ε, the
    clip and noise on the logits open to change (`knobs`: the variant's)."""

    def __init__(self, knobs: dict[str, float], seed: int) -> None:
        self.beta1 = knobs.get("beta1", BETA1)
        self.beta2 = knobs.get("beta2", 0.99)
        self.noise = knobs.get("logit-noise", 0.0)
        self.eps = knobs.get("eps", 1e-8)
        self.clip = knobs.get("clip", 100.0)
        self.rng = np.random.default_rng([seed, 777])  # the noise's own stream
        self.m: dict[str, np.ndarray] = {}
        self.v: dict[str, np.ndarray] = {}
        self.t = 0

    def step(
        self, model: logicars.Model, x: np.ndarray, y: np.ndarray, lr: float, wd: float
    ) -> None:
        self.t += 1
        _, grads = model.loss_and_grad(x, y)
        params = model.params()
        b1, b2 = self.beta1, self.beta2
        for name, p in params.items():
            g = np.clip(grads[name], -self.clip, self.clip)
            m = self.m[name] = b1 * self.m.get(name, 0.0) + (1 - b1) * g
            v = self.v[name] = b2 * self.v.get(name, 0.0) + (1 - b2) * g * g
            m_hat, v_hat = m / (1 - b1**self.t), v / (1 - b2**self.t)
            p -= lr * (m_hat / (np.sqrt(v_hat) + self.eps) + wd * p)
            if self.noise:
                p += self.rng.normal(0.0, self.noise, p.shape)
        model.set_params({k: p.astype(np.float32) for k, p in params.items()})


def variant_spec(kind: str, arg: str, spec: logicars.ModelSpec) -> logicars.ModelSpec:
    """The preset's spec, with `kernels=K`'s perception kernels, `channels=C`'s channels,
    `width=F`'s or `depth=D`'s update network, `round-every=N`'s rounding, `steps=N`'s
    rollout length, `wiring=W`'s wiring of every layer the preset wires `unique`,
    `hard=Q@W`'s hard fraction or `init=Z`'s pass-through logit."""
    if kind == "hard":
        share, _, warmup = arg.partition("@")
        relax = logicars.Relaxation("softmax", hard_fraction=float(share), warmup=int(warmup))
        return spec.replace(relax=relax)
    if kind == "init":
        return spec.replace(init_logit=float(arg))
    if kind == "wiring":
        d = spec.to_dict()
        for part in ("perceive", "update"):
            d[part]["connections"] = [arg if c == "unique" else c for c in d[part]["connections"]]
        return logicars.ModelSpec.from_dict(d)
    if kind in REBUILT:
        return logicars.ModelSpec.build(
            channels=int(arg) if kind == "channels" else spec.channels,
            kernels=int(arg) if kind == "kernels" else spec.perceive.n_kernels,
            perceive=spec.perceive.layers[1:],
            update=update_layers(kind, arg, spec),
            num_steps=spec.num_steps,
            periodic=spec.periodic,
            loss_channels=spec.loss_channels,
            # What a variant before this one set (`hard=`, `round-every=`, `init=`) stays.
            fire_rate=spec.fire_rate,
            relax=spec.relax,
            binarize_states=spec.binarize_states,
            binarize_every=spec.binarize_every,
            chunk_cells=spec.chunk_cells,
            init_logit=spec.init_logit,
        )
    if kind == "steps":
        return spec.replace(num_steps=int(arg))
    return spec.with_rounding(True, int(arg))  # round-every


def update_layers(kind: str, arg: str, spec: logicars.ModelSpec) -> list[int]:
    """The update network's hidden widths, with `width=F`'s wider or `depth=D`'s more or
    fewer layers of the preset's widest width (the layers narrowing to the channels after
    them kept); else the preset's."""
    hidden = list(spec.update.layers[1:-1])
    widest = max(hidden)
    body = [w for w in hidden if w == widest]
    tail = hidden[len(body) :]
    if kind == "width":
        body = [round(widest * float(arg))] * len(body)
        # Halving down to the channels, as the preset's: a unique wiring reads every
        # input, so no layer may have more than twice its gates.
        tail, w = [], body[0]
        while w > spec.channels:
            w = max(spec.channels, w // 2)
            tail.append(w)
    elif kind == "depth":
        body = [widest] * int(arg)
    return body + tail


def solves(
    model: logicars.Model, check: tuple[np.ndarray, np.ndarray], task: Any, spec: logicars.ModelSpec
) -> bool:
    """The probe's check: the hard circuit exact on the fixed random starts."""
    out = model.simulate(check[0], spec.num_steps, periodic=spec.periodic)
    return not task.wrong(out, check[1]).any()


def variant_preset(preset: logicars.Preset, variant: str) -> logicars.Preset:
    """The preset with the variant's spec (its task then draws starts of its channels)."""
    spec = preset.spec
    for kind, arg in parse_variant(variant).items():
        if kind in SPEC_KINDS:
            spec = variant_spec(kind, arg, spec)
    return dataclasses.replace(preset, spec=spec)


def check_draw(preset: logicars.Preset) -> tuple[np.ndarray, np.ndarray]:
    """The probe's fixed check: CHECK_STARTS random starts and their targets."""
    task, cfg = preset.task(), preset.config
    rng = np.random.default_rng(CHECK_SEED)
    check_x = task.start(rng, CHECK_STARTS, cfg.height, cfg.width).astype(np.uint8)
    check_y = task.target(check_x)
    assert check_y is not None  # the checkerboard has a target on every start
    return check_x, check_y


def first_solving_epoch(
    preset: logicars.Preset, check: tuple[np.ndarray, np.ndarray], variant: str, seed: int
) -> tuple[int, logicars.Model] | None:
    task, cfg, spec = preset.task(), preset.config, preset.spec
    kind, _, arg = variant.partition("=")
    if kind == "choose":
        return chosen_wiring_epoch(preset, check, arg, seed)
    parts = parse_variant(variant).items()
    knobs = {kind: float(arg or 0) for kind, arg in parts if kind not in ("wiring", "hard")}
    if any(kind in NUMPY_OPTIMIZER for kind in knobs):
        lr = knobs.get("lr", cfg.lr)
        return numpy_optimizer_epoch(preset, check, NumpyAdamW(knobs, seed), seed, lr)
    t = spec.num_steps
    model = logicars.Model(spec, seed=seed)
    if "init-noise" in knobs:
        noise = np.random.default_rng([seed, 778])  # the init noise's own stream
        params = model.params()
        for p in params.values():
            p += noise.normal(0.0, knobs["init-noise"], p.shape).astype(np.float32)
        model.set_params(params)
    batches = knobs.get("batches")
    rng = np.random.default_rng(seed if batches is None else [seed, int(batches)])
    switched = False  # grid-after: the circuit solved on the preset's grid once
    for epoch in range(1, EPOCHS + 1):
        h, w = training_grid(knobs, epoch, rng, (cfg.height, cfg.width))
        if switched:
            h = w = int(knobs["grid-after"])
        x = task.start(rng, int(knobs.get("batch", cfg.batch)), h, w)
        y = task.target(x)
        if "nearest-phase" in knobs:
            y = nearest_phase(model, task, spec, x, y)
        steps, loss_from = t, int(knobs.get("loss-from", t))
        lr, beta1 = knobs.get("lr", cfg.lr), knobs.get("beta1", BETA1)
        weight_decay = knobs.get("wd", cfg.weight_decay)
        if "hold" in knobs:
            steps = t + int(knobs["hold"])
        if "steps-jitter" in knobs:
            jitter = int(knobs["steps-jitter"])
            steps = loss_from = int(rng.integers(t - jitter, t + jitter + 1))
        if "lr-warmup" in knobs:
            lr *= min(1.0, epoch / knobs["lr-warmup"])
        if "lr-cosine" in knobs:
            floor = knobs["lr-cosine"]
            lr *= floor + (1 - floor) * 0.5 * (1 + np.cos(np.pi * epoch / EPOCHS))
        _, hard, _ = model.train_step_at(
            x, y, steps=steps, loss_from=loss_from, lr=lr, weight_decay=weight_decay,
            beta1=beta1,
        )  # fmt: skip
        if hard == 0 and solves(model, check, task, spec):
            if switched or "grid-after" not in knobs:
                return epoch, model
            switched = True
    return None


def training_grid(
    knobs: dict[str, float], epoch: int, rng: np.random.Generator, size: tuple[int, int]
) -> tuple[int, int]:
    """The epoch's grid: `grid=N` N x N throughout, `grid-warmup=E` 8 x 8 for the first E
    epochs, `grid-mix=LO` a side drawn from LO..the preset's each epoch (even sides, so the
    tile's phase at the corner is the same); else the preset's."""
    if "grid" in knobs:
        side = int(knobs["grid"])
        return side, side
    if "grid-warmup" in knobs and epoch <= knobs["grid-warmup"]:
        return 8, 8
    if "grid-mix" in knobs:
        side = 2 * int(rng.integers(int(knobs["grid-mix"]) // 2, size[0] // 2 + 1))
        return side, side
    return size


def nearest_phase(
    model: logicars.Model, task: Any, spec: logicars.ModelSpec, x: np.ndarray, y: np.ndarray
) -> np.ndarray:
    """Each start's target the accepted phase nearest to what the hard circuit grows from
    it now (the check accepts any phase; the preset's loss anchors one at the corner)."""
    out = model.simulate(x.astype(np.uint8), spec.num_steps, periodic=spec.periodic)
    got = out[..., spec.loss_channels] > 0.5
    phases = task.accepted(y)
    picked = [min(phases, key=lambda p, b=b: int((got[b] != p[0]).sum()))[0] for b in range(len(x))]
    return np.stack(picked).astype(np.float32)


def numpy_optimizer_epoch(
    preset: logicars.Preset,
    check: tuple[np.ndarray, np.ndarray],
    opt: NumpyAdamW,
    seed: int,
    lr: float,
) -> tuple[int, logicars.Model] | None:
    """The first epoch whose hard circuit is exact on its batch (before the step, as the
    engine's `hard`) and on the check, trained by `opt`."""
    task, cfg, spec = preset.task(), preset.config, preset.spec
    model = logicars.Model(spec, seed=seed)
    rng = np.random.default_rng(seed)
    for epoch in range(1, EPOCHS + 1):
        x = task.start(rng, cfg.batch, cfg.height, cfg.width)
        y = task.target(x)
        out = model.simulate(x.astype(np.uint8), spec.num_steps, periodic=spec.periodic)
        if not task.wrong(out, y).any() and solves(model, check, task, spec):
            return epoch, model
        opt.step(model, x, y, lr, cfg.weight_decay)
    return None


def chosen_wiring_epoch(
    preset: logicars.Preset, check: tuple[np.ndarray, np.ndarray], arg: str, seed: int
) -> tuple[int, logicars.Model] | None:
    """`choose=KxE`: the epochs, all wirings' together, until the chosen one solves."""
    task, cfg, spec = preset.task(), preset.config, preset.spec
    count, _, length = arg.partition("x")
    k_wirings, trial = int(count), int(length)
    if k_wirings * trial >= EPOCHS:
        raise SystemExit(f"choose={arg}: the trials alone use the {EPOCHS} epochs")
    used = 0
    candidates: list[tuple[float, int, logicars.Model, np.random.Generator]] = []

    def epoch_of(model: logicars.Model, rng: np.random.Generator) -> float:
        x, y = task.sample(rng, cfg.batch)
        _, hard, _ = model.train_step_at(
            x, y, steps=spec.num_steps, loss_from=spec.num_steps, lr=cfg.lr,
            weight_decay=cfg.weight_decay, beta1=BETA1,
        )  # fmt: skip
        return hard

    for k in range(k_wirings):
        model = logicars.Model(spec, seed=seed if k == 0 else restart_seed(seed, k))
        rng = np.random.default_rng([seed, k])
        recent: list[float] = []
        for _ in range(trial):
            used += 1
            hard = epoch_of(model, rng)
            if hard == 0 and solves(model, check, task, spec):
                return used, model
            recent = (recent + [hard])[-10:]
        candidates.append((float(np.mean(recent)), k, model, rng))
    _, _, model, rng = min(candidates, key=lambda c: c[:2])
    while used < EPOCHS:
        used += 1
        if epoch_of(model, rng) == 0 and solves(model, check, task, spec):
            return used, model
    return None


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("variants", nargs="+")
    ap.add_argument("--seeds", default="0-19", type=parse_seeds)
    ap.add_argument("--out", type=Path, default=Path("first-wiring-probe.jsonl"))
    ap.add_argument(
        "--chunk-cells", type=int, default=CHUNK_CELLS,
        help=f"cells the engine computes at a time (default {CHUNK_CELLS}; the preset's 128)",
    )  # fmt: skip
    args = ap.parse_args()
    logicars.set_num_threads(1)
    solved: dict[str, list[int | None]] = defaultdict(list)
    for variant in args.variants:
        checkerboard = logicars.get_preset("checkerboard")
        checkerboard = dataclasses.replace(
            checkerboard,
            spec=checkerboard.spec.replace(chunk_cells=args.chunk_cells, num_steps=NUM_STEPS),
        )
        preset = variant_preset(checkerboard, variant)
        check = check_draw(preset)
        for seed in args.seeds:
            found = first_solving_epoch(preset, check, variant, seed)
            row: dict[str, Any] = {"variant": variant, "seed": seed, "solved": None}
            if found is not None:
                row["solved"] = found[0]
                row["generalises"] = generalises(found[1], preset)
            solved[variant].append(row["solved"])
            with args.out.open("a") as f:
                f.write(json.dumps(row) + "\n")
    for variant, epochs in solved.items():
        hit = sum(e is not None for e in epochs)
        print(f"{variant}: {hit} of {len(epochs)} first wirings solve within {EPOCHS} epochs")


if __name__ == "__main__":
    main()
