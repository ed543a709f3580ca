"""Pruned circuits: the netlist, the pruning report, and `python -m logicars export`.

The Rust core prunes the hard circuit (`HardCircuit`: constants, pass-throughs and NOTs
folded, duplicate gates merged, gates that cannot reach an output dropped) and writes
every export format from its netlist, so C, Verilog, DigitalJS and DOT all describe
exactly the circuit `Model.simulate` runs. This module gives the netlist a numpy
evaluator (used by the tests and handy for inspection), the gate counts of each pruning
stage, and the `export` command. The `html` format, the circuit as an interactive page,
is written in Python from the netlist (`logicars.viz.page`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from .. import _core
from .._core import EXPORT_FORMATS

if TYPE_CHECKING:
    from ..model import Model
    from ..viz.page import PresetLike

# Every export format: the engine's, and the interactive page.
FORMATS = (*EXPORT_FORMATS, "html")
# File name endings of the export formats.
SUFFIXES = {
    "c": ".c",
    "verilog": ".v",
    "digitaljs": ".digitaljs.json",
    "dot": ".dot",
    "html": ".html",
}

_KERNELS = {
    "and": lambda a, b: a & b,
    "and_not": lambda a, b: a & ~b,
    "or": lambda a, b: a | b,
    "xor": lambda a, b: a ^ b,
}


@dataclass(frozen=True)
class Netlist:
    """A pruned hard circuit as plain data.

    Node `i < len(inputs)` is patch input `inputs[i] = (channel, dr, dc)` (offsets in
    -1..1); node `len(inputs) + g` is gate `gates[g] = (kind, a, b)` with kind `and`,
    `and_not` (`a & ~b`), `or` or `xor` on nodes `a`, `b` (always earlier nodes).
    `outputs[c]` is `(node, negated)` for channel `c` of the next state, or
    `(None, value)` for a constant.
    """

    channels: int
    inputs: list[tuple[int, int, int]]
    gates: list[tuple[str, int, int]]
    outputs: list[tuple[int | None, bool]]

    def evaluate(self, patches: Any) -> np.ndarray:
        """Next states of cells from their patches: `(N, 9*C)` bits with patch bit
        `c*9 + (dr+1)*3 + (dc+1)`; returns `(N, C)` uint8."""
        p = np.asarray(patches).astype(bool)
        if p.ndim != 2 or p.shape[1] != 9 * self.channels:
            raise ValueError(f"patches: expected shape (N, {9 * self.channels}), got {p.shape}")
        values = [p[:, c * 9 + (dr + 1) * 3 + (dc + 1)] for c, dr, dc in self.inputs]
        for kind, a, b in self.gates:
            values.append(_KERNELS[kind](values[a], values[b]))
        out = np.empty((p.shape[0], self.channels), dtype=np.uint8)
        for c, (node, flag) in enumerate(self.outputs):
            out[:, c] = flag if node is None else values[node] ^ flag
        return out

    def step(self, grid: Any, periodic: bool) -> np.ndarray:
        """One synchronous step of `(B, H, W, C)` grids by evaluating every cell's patch."""
        g = np.asarray(grid).astype(np.uint8)
        b, h, w, c = g.shape
        padded = np.pad(
            g, ((0, 0), (1, 1), (1, 1), (0, 0)), mode="wrap" if periodic else "constant"
        )
        # (B, H, W, C, 9) neighbourhoods, entry (dr+1)*3 + (dc+1).
        views = [padded[:, r : r + h, q : q + w] for r in range(3) for q in range(3)]
        patches = np.stack(views, axis=-1).reshape(b * h * w, c * 9)
        return self.evaluate(patches).reshape(b, h, w, c)


GATE_NAMES = tuple(_core.GATE_NAMES)  # in index order, as the engine names them
PASS_THROUGH_OPS = (3, 5)  # A and B: wires, not logic


def active_gates(model: Model) -> int:
    """Gates whose hard op (most likely op) is real logic, not pass-through A or B.

    Counted as the paper does: every perception gate once per kernel (kernel weights are
    shared by all channels, so a channel does not add gates) plus every update gate.
    """
    ops = model.hard_ops().values()
    return sum(int(np.count_nonzero(~np.isin(o, PASS_THROUGH_OPS))) for o in ops)


def gate_histograms(model: Model) -> dict:
    """Argmax op counts for perception (every kernel and layer) and update."""
    counts = {"perceive": np.zeros(16, dtype=np.int64), "update": np.zeros(16, dtype=np.int64)}
    for name, ops in model.hard_ops().items():
        part = "perceive" if name.startswith("perceive_") else "update"
        counts[part] += np.bincount(ops.ravel(), minlength=16)
    passes = [GATE_NAMES.index("A"), GATE_NAMES.index("B")]
    active = {k: int(v.sum() - v[passes].sum()) for k, v in counts.items()}
    return {
        "perceive": dict(zip(GATE_NAMES, map(int, counts["perceive"]))),
        "update": dict(zip(GATE_NAMES, map(int, counts["update"]))),
        "gates": int(counts["perceive"].sum() + counts["update"].sum()),
        "active_perceive": active["perceive"],
        "active_update": active["update"],
        "active_gates": active["perceive"] + active["update"],
        "circuit_active_gates": int(model.hard_circuit_stats()["active_gates"]),
    }


def netlist(model: Model) -> Netlist:
    """The netlist of the circuit `model.simulate` runs."""
    inputs, gates, outputs = model.hard_circuit().netlist()
    return Netlist(model.spec.channels, list(inputs), list(gates), list(outputs))


def prune_report(model: Model) -> dict[str, int]:
    """Gate counts of the model's hard circuit through each pruning stage.

    - `gates`: every gate of the float program, perception counted once per channel;
    - `paper_active_gates`: the paper's "active gates", those whose hard op is not a
      pass-through of A or B (perception once per kernel, as in `summary.json`);
    - `reachable_gates`: gates that can reach the next state;
    - `folded_gates`: of those, the genuine two-input gates left once constants,
      pass-throughs and NOTs are folded into their consumers;
    - `merged_gates`: after merging duplicate gates;
    - `pruned_gates`: after dropping the gates that no longer reach an output: the
      circuit `simulate` runs and the exporters write;
    - by kind (`and`, `and_not`, `or`, `xor`), `depth` and `patch_inputs` of the pruned
      circuit.
    """
    stats = dict(model.hard_circuit().stats())
    report = {
        "gates": model.spec.gates_per_cell(),
        "paper_active_gates": active_gates(model),
        "reachable_gates": stats["program_gates"],
        "folded_gates": stats["folded_gates"],
        "merged_gates": stats["merged_gates"],
        "pruned_gates": stats["active_gates"],
    }
    for key in ("and", "and_not", "or", "xor", "depth", "patch_inputs"):
        report[key] = stats[key]
    return report


def format_prune_report(report: dict[str, int]) -> str:
    """The report as the lines the CLI prints."""
    r = report
    kinds = ", ".join(f"{k} {r[k]:,}" for k in ("and", "and_not", "or", "xor"))
    return "\n".join(
        [
            f"gates: {r['gates']:,} in the float program (perception per channel), "
            f"{r['paper_active_gates']:,} active (not a pass-through; the paper's count)",
            f"pruning: {r['reachable_gates']:,} reach the next state -> "
            f"{r['folded_gates']:,} after folding constants, pass-throughs and NOTs -> "
            f"{r['merged_gates']:,} after merging duplicates -> "
            f"{r['pruned_gates']:,} after dropping dead gates",
            f"pruned circuit: {r['pruned_gates']:,} gates ({kinds}), depth {r['depth']}, "
            f"{r['patch_inputs']} patch inputs",
        ]
    )


def export_text(model: Model, format: str, preset: PresetLike = None) -> str:
    """The model's pruned circuit as `c`, `verilog`, `digitaljs` or `dot` source text, or
    as an interactive `html` page (`preset`, a `Preset` or its name, gives the page its
    start states and colours; see `logicars.viz.page.page_html`)."""
    if format not in FORMATS:
        raise ValueError(f"unknown export format {format!r}; expected one of {', '.join(FORMATS)}")
    if format == "html":
        from ..viz.page import page_html

        return page_html(model, preset)
    return model.hard_circuit().export(format)


def default_output(source: str | Path, format: str) -> Path:
    """Where a command writes `format` for the model at `source` by default: circuit.<ext>
    in a run directory, else beside the model file with the format's extension."""
    source = Path(source)
    base = source / "circuit" if source.is_dir() else source.with_suffix("")
    return Path(f"{base}{SUFFIXES[format]}")
