"""`scripts/scaling.py`: how an epoch's cost grows with cells, steps and gates.

The quick mode runs on tiny configurations; the structure of its result is checked, not
the timings (the machine is shared).
"""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType

import pytest

import logicars

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "scaling.py"


@pytest.fixture(scope="module")
def scaling() -> ModuleType:
    spec = importlib.util.spec_from_file_location("scaling", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["scaling"] = module
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("width", [64, 128, 256, 512, 1024])
def test_update_width_keeps_unique_wiring_valid(scaling: ModuleType, width: int) -> None:
    base = logicars.get_preset("checkerboard").spec
    spec = scaling.with_update_width(base, width)
    layers = spec.update.layers
    assert layers[0] == base.update.layers[0] and layers[-6:] == base.update.layers[-6:]
    assert layers.count(width) >= 10
    assert all(2 * out >= inp for inp, out in zip(layers, layers[1:]))
    logicars.Model(spec, seed=0)  # the engine accepts it
    if width == 256:
        assert spec == base


def test_fit_line_recovers_a_line(scaling: ModuleType) -> None:
    f = scaling.fit_line([1, 2, 4, 8], [3.0, 5.0, 9.0, 17.0])
    assert f["slope"] == pytest.approx(2.0) and f["intercept"] == pytest.approx(1.0)
    assert f["r2"] == pytest.approx(1.0)
    assert scaling.fit_line([1, 2, 3], [1.0, 3.0, 2.0])["r2"] < 1


def test_quick_scaling_run_structure(scaling: ModuleType, tmp_path: Path) -> None:
    result = scaling.run_scaling(quick=True, threads=1, repeats=1, warmup=0)
    points = result["points"]
    by_factor = {f: [p for p in points if p["factor"] == f] for f in scaling.FACTORS}
    assert [p["side"] for p in by_factor["cells"]] == scaling.QUICK_SIDES
    assert [p["steps"] for p in by_factor["steps"]] == scaling.QUICK_STEPS
    gates = [p["gates"] for p in by_factor["gates"]]
    assert gates == sorted(gates) and len(gates) == len(scaling.QUICK_WIDTHS)
    for p in points:
        assert p["gate_cell_evals"] == p["gates"] * p["cells"] * p["steps"]
        assert len(p["ms_all"]) == len(p["cpu_ms_all"]) == 1
        assert p["ms_median"] > 0 and p["cpu_ms_median"] > 0
        assert (
            p["x"] == {"cells": p["cells"], "steps": p["steps"], "gates": p["gates"]}[p["factor"]]
        )
    assert set(result["fits"]) == set(scaling.CLOCKS)
    for fits in result["fits"].values():
        assert set(fits) == set(scaling.FACTORS)
        for f in fits.values():
            assert {"slope", "intercept", "r2", "ms_per_m_gate_cells"} <= set(f)
    assert {"cpu", "cpus", "utc", "simd_level"} <= set(result["machine"])
    png = tmp_path / "scaling.png"
    scaling.plot(result, png)
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    json.dumps(result)  # all plain data


def test_bad_arguments_exit_2(scaling: ModuleType, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as e:
        scaling.main(["--threads", "0"])
    assert e.value.code == 2
    assert "--threads" in capsys.readouterr().err
