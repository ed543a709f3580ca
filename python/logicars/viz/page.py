"""The interactive page of a trained circuit (`export --format html`) and `python -m logicars view`.

The page is one self-contained HTML file (no network, everything inline) that runs the
model's pruned circuit (`Model.netlist()`) bit-sliced over 32-bit words in JavaScript:
32 cells of a row per word, one word array per channel. This module writes the circuit as
straight-line JavaScript (one `const` per gate), so the browser compiles the circuit
itself rather than interpreting a gate list; the engine around it (shifts for the 3x3
neighbourhood, boundaries, async masks, drawing) is `page.html` beside this module.

The page's scripting API is `window.logicars` (documented in the page and in the README).
"""

from __future__ import annotations

from importlib import resources
from typing import TYPE_CHECKING, Any, Union

import numpy as np

from ..markup import escape_html, fill_template, script_json

if TYPE_CHECKING:
    from ..circuit.export import Netlist
    from ..model import Model
    from ..presets import Preset

# A preset or its name; None for none.
PresetLike = Union["Preset", str, None]

# Gates per generated JavaScript function: V8 stops optimising very large functions, so
# big circuits are split, the values that cross a split kept in per-band arrays.
KERNEL_GATES = 2000
# Default grid side of presets that start from random bits (grow presets use their own).
DEFAULT_SIZE = 128
# Colours (CSS hex). Grey shows a channel as the project's GIFs do: 0 black, 1 white.
_BLACK, _WHITE = "#000000", "#ffffff"
# The lizard's channel 0 is its alpha: the silhouette in green over white.
_LIZARD = "#2e7d32"


def kernel_source(net: Netlist, gates_per_kernel: int | None = None) -> tuple[str, int]:
    """The circuit as a JavaScript array `KERNELS` of functions, and how many spill
    arrays they use.

    Each function is `(I, S, O, plane, base, n)`: it reads words `0..n-1` of the input
    planes `I[k]` (patch input k of `net.inputs`, shifted into place) and writes the next
    state of channel `c` to `O[c * plane + base + w]`. Gate values needed by a later
    function go through the spill arrays `S`.
    """
    gates_per_kernel = gates_per_kernel or KERNEL_GATES
    n_in = len(net.inputs)
    n_gates = len(net.gates)
    n_kernels = max(1, -(-n_gates // gates_per_kernel))

    def kernel_of(node: int) -> int:
        return -1 if node < n_in else (node - n_in) // gates_per_kernel

    # Nodes each kernel reads, and the gate nodes read by a later kernel than their own.
    reads: list[set[int]] = [set() for _ in range(n_kernels)]
    for g, (_, a, b) in enumerate(net.gates):
        reads[g // gates_per_kernel].update((a, b))
    reads[-1].update(node for node, _ in net.outputs if node is not None)
    spill: dict[int, int] = {}
    for k, nodes in enumerate(reads):
        for node in sorted(nodes):
            if 0 <= kernel_of(node) < k and node not in spill:
                spill[node] = len(spill)

    ops = {"and": "{a} & {b}", "and_not": "{a} & ~{b}", "or": "{a} | {b}", "xor": "{a} ^ {b}"}
    functions = []
    for k in range(n_kernels):
        own = range(k * gates_per_kernel, min(n_gates, (k + 1) * gates_per_kernel))
        loads = sorted(node for node in reads[k] if kernel_of(node) < k)
        head = [f"const a{node} = I[{node}];" for node in loads if node < n_in]
        spilled = [node for node in loads if node >= n_in]
        spilled += [n_in + g for g in own if n_in + g in spill]
        head += [f"const s{spill[node]} = S[{spill[node]}];" for node in spilled]
        body = [
            f"const v{node} = a{node}[w];" if node < n_in else f"const v{node} = s{spill[node]}[w];"
            for node in loads
        ]
        for g in own:
            kind, a, b = net.gates[g]
            body.append(f"const v{n_in + g} = {ops[kind].format(a=f'v{a}', b=f'v{b}')};")
            if n_in + g in spill:
                body.append(f"s{spill[n_in + g]}[w] = v{n_in + g};")
        if k == n_kernels - 1:
            head += [f"const o{c} = {c} * plane + base;" for c in range(len(net.outputs))]
            for c, (out, flag) in enumerate(net.outputs):
                if out is None:
                    value = "-1" if flag else "0"
                else:
                    value = f"~v{out}" if flag else f"v{out}"
                body.append(f"O[o{c} + w] = {value};")
        functions.append(
            "function (I, S, O, plane, base, n) {\n"
            + "".join(f"  {line}\n" for line in head)
            + "  for (let w = 0; w < n; w++) {\n"
            + "".join(f"    {line}\n" for line in body)
            + "  }\n}"
        )
    return "const KERNELS = [\n" + ",\n".join(functions) + "\n];", len(spill)


def _palette(model: Model, preset: Preset | None) -> dict[str, Any]:
    """Which channels colour a cell and the colour of each combination of their bits
    (bit i of the index = `channels[i]`): the loss channels as the run's GIF shows them
    (three as RGB, else the first in grey), the lizard's as the alpha of its silhouette."""
    loss = model.spec.loss_channels
    if len(loss) == 3:  # the coloured G: channels as R, G, B
        colours = [
            "#{:02x}{:02x}{:02x}".format(*(255 * ((i >> j) & 1) for j in range(3)))
            for i in range(8)
        ]
        return {"channels": list(loss), "colours": colours}
    if preset is not None and preset.task_kind.startswith("grow:"):  # a silhouette
        return {"channels": [loss[0]], "colours": _silhouette_colours(preset.task_kind)}
    return {"channels": [loss[0]], "colours": [_BLACK, _WHITE]}


def _silhouette_colours(kind: str) -> list[str]:
    """A grown silhouette in its image's own colours: cells of 0 and of 1 as the mean
    colour of the image's pixels that became 0 and 1 (over white where transparent). A
    black heart on white, whose white trains as 1, shows as a black heart on white. The
    lizard's green on white; without its image (a run moved from it) the GIF's grey."""
    from ..tasks import LIZARD, load_image, silhouette, split_kind

    _, arg = split_kind(kind)
    if arg == LIZARD:
        return [_WHITE, _LIZARD]
    try:
        image = load_image(arg)
    except (OSError, ValueError):
        return [_BLACK, _WHITE]
    bits = silhouette(image) > 0.5
    # Premultiplied RGB over a white page: rgb + (1 - alpha).
    shown = image[..., :3] + (1.0 - image[..., 3:])
    colours = []
    for value, fallback in ((False, _BLACK), (True, _WHITE)):
        cells = shown[bits == value]
        if not len(cells):
            colours.append(fallback)
            continue
        rgb = np.clip(np.round(cells.mean(axis=0) * 255), 0, 255).astype(int)
        colours.append("#{:02x}{:02x}{:02x}".format(*rgb))
    return colours


def _start(preset: Preset | None) -> dict[str, Any]:
    """The preset's start state: random bits, or the grow presets' fixed grid as the
    cells set to 1, relative to its centre cell (the page centres it, as `simulate` does)."""
    from ..presets import fixed_start_task

    grow = fixed_start_task(preset)
    if grow is None:
        return {"kind": "random"}
    assert preset is not None
    x = grow.start(np.random.default_rng(0), 1, grow.height, grow.width)[0]
    rows, cols, channels = np.nonzero(x)
    cells = [
        [int(r) - preset.height // 2, int(c) - preset.width // 2, int(ch)]
        for r, c, ch in zip(rows, cols, channels)
    ]
    return {"kind": "cells", "height": preset.height, "width": preset.width, "cells": cells}


def page_config(model: Model, preset: Preset | None = None) -> dict[str, Any]:
    """Everything the page needs besides the kernels, as JSON-ready data."""
    spec = model.spec
    net = model.netlist()
    start = _start(preset)
    report = model.prune_report()
    return {
        "title": preset.name if preset is not None else "logicars circuit",
        "description": preset.description if preset is not None else "",
        "channels": spec.channels,
        "inputs": [list(i) for i in net.inputs],
        "periodic": spec.periodic,
        "fireRate": spec.fire_rate,
        "trainedSteps": spec.num_steps,
        "size": start["height"] if start["kind"] == "cells" else DEFAULT_SIZE,
        "start": start,
        "palette": _palette(model, preset),
        "gates": report["pruned_gates"],
        "depth": report["depth"],
    }


def page_html(model: Model, preset: PresetLike = None) -> str:
    """The self-contained interactive page of `model`'s pruned circuit.

    `preset` (a `Preset` or its name) gives the page its start state (random bits, or
    the grow presets' seed), colours and title; without one the page starts from random
    bits and colours the loss channels as a preset's (three as RGB, else the first in
    grey).
    """
    from ..presets import resolve_preset

    if isinstance(preset, str):
        preset = resolve_preset(preset)
    config = page_config(model, preset)
    kernels, spills = kernel_source(model.netlist())
    config["spills"] = spills
    template = (resources.files("logicars.viz") / "page.html").read_text(encoding="utf-8")
    # One pass: a title or description holding a placeholder's text stays text.
    return fill_template(
        template,
        {
            "__TITLE__": escape_html(config["title"]),
            "/*__CONFIG__*/null": script_json(config),
            "/*__KERNELS__*/": kernels,
        },
    )
