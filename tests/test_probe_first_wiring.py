"""The first-wiring probe's variants (scripts/probe_first_wiring.py) build the spec they
name: a combined variant keeps every part, whichever order the parts come in."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

import logicars

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))
import probe_first_wiring as probe  # noqa: E402


@pytest.fixture(scope="module")
def checkerboard() -> logicars.Preset:
    return logicars.get_preset("checkerboard")


@pytest.mark.parametrize("rebuilt", ["kernels=24", "channels=12", "width=1.5", "depth=6"])
def test_a_rebuilt_spec_keeps_the_hard_gates_before_it(
    checkerboard: logicars.Preset, rebuilt: str
) -> None:
    # The rows of 2026-12-01 11:35 ran `...+hard=0.8@100+kernels=24` without hard gates.
    spec = probe.variant_preset(checkerboard, f"beta1=0+hard=0.8@100+{rebuilt}").spec
    assert spec.relax.hard_fraction == 0.8 and spec.relax.warmup == 100
    assert spec.chunk_cells == checkerboard.spec.chunk_cells


def test_width_and_depth_give_networks_the_engine_wires(checkerboard: logicars.Preset) -> None:
    layers = {
        v: probe.variant_preset(checkerboard, v).spec.update.layers
        for v in ("plain", "width=1.5", "width=2", "depth=6", "depth=14")
    }
    assert layers["plain"] == checkerboard.spec.update.layers
    assert layers["width=1.5"][1:12] == [384] * 10 + [192]
    assert layers["width=2"][1:12] == [512] * 10 + [256]
    assert layers["depth=6"][1:8] == [256] * 6 + [128]
    assert layers["depth=14"].count(256) == 14
    for v in layers:
        # The engine refuses a unique wiring that cannot read every input.
        logicars.Model(probe.variant_preset(checkerboard, v).spec, seed=0)
