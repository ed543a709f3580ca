"""An independent float64 NumPy implementation of the DiffLogic CA, written from the
fixture README's semantics (16-op sums, not the engine's 4-coefficient form), with
hand-written back-propagation. Tests use it as an oracle for shapes, boundaries and
modes the fixtures do not cover."""

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


def _probs(logits: np.ndarray, hard: bool) -> np.ndarray:
    w = logits.astype(np.float64)
    if hard:
        return np.eye(16)[np.argmax(w, axis=-1)]
    e = np.exp(w - w.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def _ops(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """All 16 gate outputs, stacked on a new last axis."""
    basis = np.stack([np.ones_like(a), a, b, a * b], axis=-1)
    return basis @ OPS.T


def _layer(v, wires, p):
    a, b = v[..., wires[0]], v[..., wires[1]]
    return np.einsum("...jg,jg->...j", _ops(a, b), p), (a, b)


def _layer_back(gy, wires, p, a, b, width):
    """Gradients w.r.t. the layer input (width) and p."""
    j = gy.shape[-1]
    gp = np.einsum("nj,njg->jg", gy.reshape(-1, j), _ops(a, b).reshape(-1, j, 16))
    da = OPS[:, 1] + OPS[:, 3] * b[..., None]  # d op_g / da, shape (..., j, 16)
    db = OPS[:, 2] + OPS[:, 3] * a[..., None]
    ga = gy * np.einsum("...jg,jg->...j", da, p)
    gb = gy * np.einsum("...jg,jg->...j", db, p)
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
    """Float64 model from a config dict, wires and logits in the fixture layout."""

    def __init__(self, config: dict, wires: dict, params: dict) -> None:
        self.cfg = config
        self.np_ = len(config["perceive"]["layers"]) - 1
        self.nu = len(config["update"]["layers"]) - 1
        self.pw = [wires[f"perceive_wires_{i}"] for i in range(self.np_)]
        self.uw = [wires[f"update_wires_{i}"] for i in range(self.nu)]
        self.pl = [np.asarray(params[f"perceive_logits_{i}"], np.float64) for i in range(self.np_)]
        self.ul = [np.asarray(params[f"update_logits_{i}"], np.float64) for i in range(self.nu)]

    def _step(self, x, hard):
        c = self.cfg["channels"]
        k_n = self.cfg["perceive"]["n_kernels"]
        pp = [_probs(w, hard) for w in self.pl]
        up = [_probs(w, hard) for w in self.ul]
        patches = _patches(x, self.cfg["periodic"])  # (B,H,W,C,9)
        tape = {"patches": patches, "p": [], "u": []}
        outs = []
        for k in range(k_n):
            v = patches
            acts = []
            for w, p in zip(self.pw, pp):
                v_new, ab = _layer(v, w, p[k])
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

    def rollout(self, x, steps, hard=False, masks=None):
        x = np.asarray(x, np.float64)
        for t in range(steps):
            new = self._step(x, hard)[0]
            x = new if masks is None else x * (1 - masks[:, t]) + new * masks[:, t]
        return x

    def loss_and_grad(self, x, y, steps, masks=None):
        x = np.asarray(x, np.float64)
        states, tapes = [x], []
        for t in range(steps):
            new, tape, pp, up, c = self._step(states[-1], False)
            tapes.append(tape)
            m = None if masks is None else masks[:, t]
            states.append(new if m is None else states[-1] * (1 - m) + new * m)
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
                    gk, gp = _layer_back(gk, self.pw[li], pp[li][k], a, b, width)
                    gpl[li][k] += gp
                g_patch += gk
            g = g_old + g_x + _patches_back(g_patch, self.cfg["periodic"])
        # softmax chain rule: dL/dw = p * (dL/dp - p . dL/dp)
        grads = {}
        for name, ws, gs in (("perceive_logits", self.pl, gpl), ("update_logits", self.ul, gul)):
            for i, (w, gp) in enumerate(zip(ws, gs)):
                p = _probs(w, False)
                grads[f"{name}_{i}"] = p * (gp - (p * gp).sum(-1, keepdims=True))
        return loss, grads
