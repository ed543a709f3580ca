"""An independent float64 NumPy implementation of the DiffLogic CA, written from the
fixture README's semantics (16-op sums, not the engine's 4-coefficient form), with
hand-written back-propagation. Tests use it as an oracle for shapes, boundaries and
modes the fixtures do not cover.

Relaxations (`config["relax"]`, see `logicars.spec.Relaxation`), each written from its
definition: a gate's output is a weighted sum over a basis (the 16 ops, or for the
truth-table modes the 4 rows of the table, `(1-a)(1-b), (1-a)b, a(1-b), ab`). The
forward weights `wf` and the weights `wb` that carry the gradient to the gate's inputs
differ in the straight-through modes: their output is `y_hard - stopgrad(y_soft) +
y_soft`, so its value is the hard gate's and its gradient the relaxed gate's."""

from __future__ import annotations

import numpy as np

# Truth-table form of the 16 relaxed gates: op_i(a, b) = α + β a + γ b + δ ab.
OPS = np.array(
    [
        [0, 0, 0, 0],
        [0, 0, 0, 1],
        [0, 1, 0, -1],
        [0, 1, 0, 0],
        [0, 0, 1, -1],
        [0, 0, 1, 0],
        [0, 1, 1, -2],
        [0, 1, 1, -1],
        [1, -1, -1, 1],
        [1, -1, -1, 2],
        [1, 0, -1, 0],
        [1, 0, -1, 1],
        [1, -1, 0, 0],
        [1, -1, 0, 1],
        [1, 0, 0, -1],
        [1, 0, 0, 0],
    ],
    dtype=np.float64,
)


def _softmax(v: np.ndarray) -> np.ndarray:
    e = np.exp(v - v.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def _probs(logits: np.ndarray, hard: bool) -> np.ndarray:
    w = logits.astype(np.float64)
    return np.eye(16)[np.argmax(w, axis=-1)] if hard else _softmax(w)


_M64 = (1 << 64) - 1


def _mix(z: int) -> int:
    """SplitMix64's output function."""
    z = (z + 0x9E3779B97F4A7C15) & _M64
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _M64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _M64
    return z ^ (z >> 31)


def _uniform(stream: int, seed: int, *words: int) -> float:
    """A draw in (0, 1) of the engine's counter-based stream `stream` keyed by `seed`
    and `words` (rust/core/src/relax.rs)."""
    h = _mix(seed ^ stream)
    for word in words:
        h = _mix(h ^ word)
    return ((h >> 11) + 0.5) / float(1 << 53)


def gumbel(seed: int, step: int, gate: int, op: int) -> float:
    """Gumbel(0, 1) draw of the engine's stream."""
    return -np.log(-np.log(_uniform(0x6C6F676963617273, seed, step, gate, op)))


def runs_hard(seed: int, step: int, gate: int, q: float) -> bool:
    """Whether a truth-table gate runs hard in a step when a fraction `q` do: a draw of
    the engine's stream apart from the Gumbel one, below `q`."""
    return _uniform(0x48415244 ^ 0x666C6970, seed, step, gate) < q


def _ops(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """All 16 gate outputs, stacked on a new last axis."""
    basis = np.stack([np.ones_like(a), a, b, a * b], axis=-1)
    return basis @ OPS.T


def _rows(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The 4 truth-table rows (a, b) = 00, 01, 10, 11 as functions of the inputs."""
    return np.stack([(1 - a) * (1 - b), (1 - a) * b, a * (1 - b), a * b], axis=-1)


def _basis(a, b, table):
    """Basis outputs and their derivatives w.r.t. a and b, each (..., j, n)."""
    if table:
        da = np.stack([-(1 - b), -b, 1 - b, b], -1)
        db = np.stack([-(1 - a), 1 - a, -a, a], -1)
        return _rows(a, b), da, db
    da = OPS[:, 1] + OPS[:, 3] * b[..., None]  # d op_g / da, shape (..., j, 16)
    db = OPS[:, 2] + OPS[:, 3] * a[..., None]
    return _ops(a, b), da, db


def _drawn_hard(relax: dict, shape: tuple, first_gate: int, seed: int, step) -> np.ndarray | None:
    """The gates (of a parameter array whose gates have shape `shape`) that forward hard
    in optimizer step `step` under softmax's or truth-table's hard fraction q, a random
    share q per step: a mask broadcasting over the gate's weights, or None."""
    q = relax.get("hard_fraction", 0.0)
    mode = relax.get("mode", "softmax")
    if mode not in ("softmax", "truth-table") or q <= 0 or not np.isfinite(step):
        return None
    if step < relax.get("warmup", 0):
        return None
    gates = first_gate + np.arange(int(np.prod(shape)))
    hard = np.array([runs_hard(seed, int(step), int(g), q) for g in gates])
    return hard.reshape(shape)[..., None]


class Gates:
    """One parameter array's gates in one step: forward weights `wf`, input-gradient
    weights `wb` (over the basis: 16 ops or 4 table rows) and `chain`, the map from the
    gradient w.r.t. the weights to the gradient w.r.t. the parameters."""

    def __init__(self, relax: dict, params: np.ndarray, first_gate: int, seed: int, step):
        w = np.asarray(params, np.float64)
        mode = relax.get("mode", "softmax")
        tau, noise = relax.get("tau", 1.0), relax.get("noise", 1.0)
        warmup = relax.get("warmup", 0)
        self.table = mode.startswith("truth-table")
        drawn = _drawn_hard(relax, w.shape[:-1], first_gate, seed, step)
        hard_forward = mode in ("hard-st", "gumbel-st", "truth-table-st")
        if mode in ("hard-st", "gumbel-st") and step < warmup:
            mode, tau, hard_forward = "softmax", 1.0, False
        if mode == "anneal":
            steps = relax.get("steps", 1000)
            tau = tau ** min(1.0, max(0, step - warmup) / max(steps, 1))
        if self.table:
            t = 1 / (1 + np.exp(-w))
            self.wb = t
            self.wf = (t > 0.5).astype(np.float64) if hard_forward else t
            if drawn is not None:  # those gates forward their thresholded table
                self.wf = np.where(drawn, (t > 0.5).astype(np.float64), t)
            self.chain = lambda g: g * t * (1 - t)
            return
        if mode in ("gumbel-st", "gumbel-soft") and np.isfinite(step):
            gates = first_gate + np.arange(int(np.prod(w.shape[:-1]))).reshape(w.shape[:-1])
            g = np.vectorize(lambda gate, op: gumbel(seed, int(step), int(gate), int(op)))(
                gates[..., None], np.arange(16)
            )
            w = w + noise * g
        if mode == "softmax":
            tau = 1.0
        p = _softmax(w / tau)
        self.wb = p
        self.wf = np.eye(16)[np.argmax(w, axis=-1)] if hard_forward else p
        if drawn is not None:  # those gates forward their most likely op
            self.wf = np.where(drawn, _probs(w, True), p)
        self.chain = lambda g: p * (g - (p * g).sum(-1, keepdims=True)) / tau


def _hard_gates(params: np.ndarray, table: bool) -> Gates:
    """The hard circuit's gates: each gate's most likely op (or thresholded table)."""
    g = Gates.__new__(Gates)
    w = np.asarray(params, np.float64)
    g.table = table
    g.wf = g.wb = (w > 0).astype(np.float64) if table else _probs(w, True)
    g.chain = None
    return g


def _layer(v, wires, gates: Gates):
    a, b = v[..., wires[0]], v[..., wires[1]]
    basis = _basis(a, b, gates.table)[0]
    return np.einsum("...jg,jg->...j", basis, gates.wf), (a, b)


def _layer_back(gy, wires, gates: Gates, a, b, width):
    """Gradients w.r.t. the layer input (width) and the gates' weights."""
    j = gy.shape[-1]
    basis, da, db = _basis(a, b, gates.table)
    n = basis.shape[-1]
    gp = np.einsum("nj,njg->jg", gy.reshape(-1, j), basis.reshape(-1, j, n))
    ga = gy * np.einsum("...jg,jg->...j", da, gates.wb)
    gb = gy * np.einsum("...jg,jg->...j", db, gates.wb)
    gv = np.zeros(gy.shape[:-1] + (width,))
    for j in range(gy.shape[-1]):
        gv[..., wires[0][j]] += ga[..., j]
        gv[..., wires[1][j]] += gb[..., j]
    return gv, gp


def _patches(x: np.ndarray, periodic: bool) -> np.ndarray:
    """(B, H, W, C) -> (B, H, W, C, 9), entry 3*(dr+1)+(dc+1)."""
    if periodic:
        xp = np.pad(x, ((0, 0), (1, 1), (1, 1), (0, 0)), mode="wrap")
    else:
        xp = np.pad(x, ((0, 0), (1, 1), (1, 1), (0, 0)))
    h, w = x.shape[1:3]
    return np.stack(
        [xp[:, 1 + dr : 1 + dr + h, 1 + dc : 1 + dc + w] for dr in (-1, 0, 1) for dc in (-1, 0, 1)],
        -1,
    )


def _patches_back(g: np.ndarray, periodic: bool) -> np.ndarray:
    """Adjoint of `_patches`: (B, H, W, C, 9) -> (B, H, W, C)."""
    b, h, w, c, _ = g.shape
    out = np.zeros((b, h + 2, w + 2, c))
    for e, (dr, dc) in enumerate((dr, dc) for dr in (-1, 0, 1) for dc in (-1, 0, 1)):
        out[:, 1 + dr : 1 + dr + h, 1 + dc : 1 + dc + w] += g[..., e]
    if periodic:
        out[:, 1, :] += out[:, h + 1, :]
        out[:, h, :] += out[:, 0, :]
        out[:, :, 1] += out[:, :, w + 1]
        out[:, :, w] += out[:, :, 0]
    return out[:, 1 : h + 1, 1 : w + 1]


class Reference:
    """Float64 model from a config dict, wires and logits in the fixture layout. `seed`
    and `step` key the Gumbel noise of a training step (the model's seed and the
    optimizer steps taken)."""

    def __init__(
        self, config: dict, wires: dict, params: dict, seed: int = 0, step: int = 0
    ) -> None:
        self.cfg = config
        self.relax = config.get("relax", {"mode": "softmax"})
        self.seed, self.step = seed, step
        self.np_ = len(config["perceive"]["layers"]) - 1
        self.nu = len(config["update"]["layers"]) - 1
        self.pw = [wires[f"perceive_wires_{i}"] for i in range(self.np_)]
        self.uw = [wires[f"update_wires_{i}"] for i in range(self.nu)]
        self.pl = [np.asarray(params[f"perceive_logits_{i}"], np.float64) for i in range(self.np_)]
        self.ul = [np.asarray(params[f"update_logits_{i}"], np.float64) for i in range(self.nu)]

    def _gates(self, hard: bool, step) -> tuple[list, list]:
        """Every layer's gates: hard, or relaxed at optimizer step `step` (inf: after any
        warmup or annealing, without noise)."""
        table = self.relax.get("mode", "softmax").startswith("truth-table")
        relax = self.relax
        if self.cfg.get("binarize_states") and step % self.cfg.get("binarize_every", 1):
            relax = {**relax, "hard_fraction": 0.0}  # a relaxed step: every gate relaxed
        if hard:
            return [_hard_gates(w, table) for w in self.pl], [
                _hard_gates(w, table) for w in self.ul
            ]
        first, out = 0, ([], [])
        for layers, dest in ((self.pl, out[0]), (self.ul, out[1])):
            for w in layers:
                dest.append(Gates(relax, w, first, self.seed, step))
                first += int(np.prod(w.shape[:-1]))
        return out

    def _step(self, x, hard, step=np.inf):
        c = self.cfg["channels"]
        k_n = self.cfg["perceive"]["n_kernels"]
        pp, up = self._gates(hard, step)
        patches = _patches(x, self.cfg["periodic"])  # (B,H,W,C,9)
        tape = {"patches": patches, "p": [], "u": []}
        outs = []
        for k in range(k_n):
            v = patches
            acts = []
            for w, p in zip(self.pw, pp):
                v_new, ab = _layer(v, w, _kernel(p, k))
                acts.append((v.shape[-1], ab))
                v = v_new
            tape["p"].append(acts)
            outs.append(v)  # (B,H,W,C,S)
        perc = np.stack(outs, -1)  # (B,H,W,C,S,K) -> flatten (c, s, k)
        v = np.concatenate([x, perc.reshape(x.shape[:3] + (-1,))], -1)
        for w, p in zip(self.uw, up):
            v_new, ab = _layer(v, w, p)
            tape["u"].append((v.shape[-1], ab))
            v = v_new
        tape["perc_shape"] = perc.shape
        return v, tape, pp, up, c

    def _binarized(self, x, t, steps, training=False):
        """State `t + 1`: with `binarize_states`, rounded to 0/1 unless it is the last
        (in training only at optimizer steps that are multiples of `binarize_every`); the
        backward passes through the rounding unchanged (straight-through)."""
        on = self.cfg.get("binarize_states", False)
        if training:
            on = on and self.step % self.cfg.get("binarize_every", 1) == 0
        if on and t + 1 < steps:
            return (x >= 0.5).astype(np.float64)
        return x

    def rollout(self, x, steps, hard=False, masks=None):
        x = np.asarray(x, np.float64)
        for t in range(steps):
            new = self._step(x, hard)[0]
            x = new if masks is None else x * (1 - masks[:, t]) + new * masks[:, t]
            x = self._binarized(x, t, steps)
        return x

    def loss_and_grad(self, x, y, steps, masks=None):
        x = np.asarray(x, np.float64)
        states, tapes = [x], []
        for t in range(steps):
            new, tape, pp, up, c = self._step(states[-1], False, self.step)
            tapes.append(tape)
            m = None if masks is None else masks[:, t]
            state = new if m is None else states[-1] * (1 - m) + new * m
            states.append(self._binarized(state, t, steps, training=True))
        ch = self.cfg["loss_channels"]
        out = states[-1]
        diff = out[..., ch] - np.asarray(y, np.float64)[..., ch]
        loss = float((diff**2).sum())
        g = np.zeros_like(out)
        g[..., ch] = 2 * diff
        gpl = [np.zeros_like(w) for w in self.pl]
        gul = [np.zeros_like(w) for w in self.ul]
        for t in reversed(range(steps)):
            tape = tapes[t]
            m = None if masks is None else masks[:, t]
            gv = g if m is None else g * m
            g_old = np.zeros_like(g) if m is None else g * (1 - m)
            for li in reversed(range(self.nu)):
                width, (a, b) = tape["u"][li]
                gv, gp = _layer_back(gv, self.uw[li], up[li], a, b, width)
                gul[li] += gp
            g_x = gv[..., :c]
            g_perc = gv[..., c:].reshape(tape["perc_shape"])
            g_patch = np.zeros_like(tape["patches"])
            for k in range(self.cfg["perceive"]["n_kernels"]):
                gk = g_perc[..., k]
                for li in reversed(range(self.np_)):
                    width, (a, b) = tape["p"][k][li]
                    gk, gp = _layer_back(gk, self.pw[li], _kernel(pp[li], k), a, b, width)
                    gpl[li][k] += gp
                g_patch += gk
            g = g_old + g_x + _patches_back(g_patch, self.cfg["periodic"])
        # From the weights to the parameters, through each mode's relaxation.
        pp, up = self._gates(False, self.step)
        grads = {}
        for name, gates, gs in (("perceive_logits", pp, gpl), ("update_logits", up, gul)):
            for i, (g, gw) in enumerate(zip(gates, gs)):
                grads[f"{name}_{i}"] = g.chain(gw)
        return loss, grads


def _kernel(gates: Gates, k: int) -> Gates:
    """Kernel `k`'s gates of a perception layer's (K, out, n) gates."""
    g = Gates.__new__(Gates)
    g.table, g.wf, g.wb, g.chain = gates.table, gates.wf[k], gates.wb[k], None
    return g
