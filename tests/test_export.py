"""Pruning and export: the netlist, C, Verilog, DigitalJS and DOT against the engine."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from conftest import FIXTURES
from test_bitsliced import make_spec, random_model

import logicars
from logicars.circuit.export import Netlist
from logicars.datasets import gol_boards, gol_step

GOL = logicars.get_preset("gol")


def require_tool(name: str) -> str:
    """The tool's path; skips without it locally, fails in CI (`CI=true`)."""
    path = shutil.which(name)
    if path is None:
        if os.environ.get("CI") == "true":
            pytest.fail(f"{name} is required in CI (.ci/run installs it)")
        pytest.skip(f"{name} is not installed")
    return path


def engine_cells(model: logicars.Model, patches: np.ndarray) -> np.ndarray:
    """Next states `(N, C)` by the float hard engine: each patch `(N, 9*C)` becomes a
    3x3 board whose centre cell has exactly that neighbourhood, stepped once."""
    c = model.spec.channels
    boards = patches.reshape(-1, c, 3, 3).transpose(0, 2, 3, 1).astype(np.float32)
    return model.rollout(boards, steps=1, hard=True)[:, 1, 1, :].astype(np.uint8)


def all_patches_c1() -> np.ndarray:
    """The 512 neighbourhoods of a one-channel cell, `(512, 9)`."""
    return gol_boards().reshape(512, 9).astype(np.uint8)


def gol_step_n(x: np.ndarray, steps: int) -> np.ndarray:
    for _ in range(steps):
        x = gol_step(x)
    return x.astype(np.uint8)


def random_patches(c: int, n: int, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 2, size=(n, 9 * c), dtype=np.uint8)


@pytest.fixture(scope="module")
def trained_gol(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A run directory of gol trained for 400 epochs: a real, mostly right circuit
    (Conway's rule exactly takes about 2000 epochs, see the slow test)."""
    run_dir = tmp_path_factory.mktemp("runs") / "gol"
    logicars.train("gol", epochs=400, seed=7, out=run_dir, quiet=True, checkpoint_every=None)
    return run_dir


@pytest.fixture(scope="module")
def trained_model(trained_gol: Path) -> logicars.Model:
    return logicars.Model.load(trained_gol / "model.safetensors")


# Sync models of a few shapes: (C, K, perceive, hidden, periodic, seed).
SHAPES = [
    (1, 2, [9, 8, 4, 2, 1], [16, 8], True, 1),
    (2, 2, [9, 8, 4, 2], [24, 12], False, 2),
    (3, 3, [9, 8, 4, 2], [40, 20], True, 3),
]


@pytest.fixture(params=SHAPES, ids=lambda s: f"c{s[0]}-{'periodic' if s[4] else 'zero'}")
def small_model(request: pytest.FixtureRequest) -> logicars.Model:
    c, k, perceive, hidden, periodic, seed = request.param
    return random_model(make_spec(c, k, perceive, hidden, periodic), seed)


def models(trained: logicars.Model) -> Iterator[tuple[str, logicars.Model]]:
    """A trained GoL circuit, GoL with random logits and small multi-channel models."""
    yield "trained-gol", trained
    yield "random-gol", random_model(GOL.spec, 11)
    for c, k, perceive, hidden, periodic, seed in SHAPES[1:]:
        yield f"c{c}", random_model(make_spec(c, k, perceive, hidden, periodic), seed)


def patches_for(model: logicars.Model) -> np.ndarray:
    """All 512 neighbourhoods for one channel, else 1500 random ones."""
    c = model.spec.channels
    return all_patches_c1() if c == 1 else random_patches(c, 1500, seed=c)


# ---- pruning --------------------------------------------------------------------------


def test_prune_report_stages(trained_model: logicars.Model) -> None:
    fresh = logicars.Model(GOL.spec, seed=0)  # every gate a pass-through
    r = fresh.prune_report()
    p, u = GOL.spec.perceive, GOL.spec.update
    assert r["gates"] == p.n_kernels * sum(p.layers[1:]) + sum(u.layers[1:])  # C = 1
    assert r["paper_active_gates"] == 0 and r["pruned_gates"] == 0
    for model in (trained_model, random_model(GOL.spec, 11)):
        r = model.prune_report()
        stages = [r[k] for k in ("gates", "reachable_gates", "folded_gates", "merged_gates")]
        assert stages == sorted(stages, reverse=True)
        assert 0 < r["pruned_gates"] <= r["merged_gates"]
        assert r["and"] + r["and_not"] + r["or"] + r["xor"] == r["pruned_gates"]
        assert len(model.netlist().gates) == r["pruned_gates"]
    assert trained_model.prune_report()["paper_active_gates"] > 0


def test_pruned_gol_circuit_is_the_same_function_on_all_512_neighbourhoods(
    trained_model: logicars.Model,
) -> None:
    patches = all_patches_c1()
    for model in (trained_model, random_model(GOL.spec, 11), random_model(GOL.spec, 12, 0.2)):
        got = model.netlist().evaluate(patches)
        np.testing.assert_array_equal(got, engine_cells(model, patches))


@pytest.mark.slow
def test_fully_trained_gol_circuit_is_conways_rule(tmp_path: Path) -> None:
    # The preset's defaults, stopping at the solve: seed 7's first wiring solves at epoch
    # 1419 since β1 became 0 (2026-11-30). (An early stop after 30 epochs of hard loss 0 on
    # the batch would stop it at 1409, 9 cells short of the 512 boards.)
    result = logicars.train("gol", seed=7, out=tmp_path, quiet=True, checkpoint_every=None)
    assert result.summary["solved_epoch"] is not None, result.summary
    life = gol_step(gol_boards())[:, 1, 1, :]
    np.testing.assert_array_equal(result.model.netlist().evaluate(all_patches_c1()), life)


def test_netlist_rollouts_match_the_float_hard_rollout(small_model: logicars.Model) -> None:
    spec = small_model.spec
    x = np.random.default_rng(5).integers(0, 2, size=(2, 9, 13, spec.channels))
    net = small_model.netlist()
    assert net.gates, "the random model folded to nothing; the test would be vacuous"
    grid = x.astype(np.uint8)
    for _ in range(4):
        grid = net.step(grid, spec.periodic)
    expected = small_model.rollout(x.astype(np.float32), steps=4, hard=True)
    np.testing.assert_array_equal(grid, expected.astype(np.uint8))


def test_netlist_shape_and_errors(small_model: logicars.Model) -> None:
    net = small_model.netlist()
    assert isinstance(net, Netlist) and net.channels == small_model.spec.channels
    n_in = len(net.inputs)
    for g, (kind, a, b) in enumerate(net.gates):
        assert kind in ("and", "and_not", "or", "xor") and 0 <= a < n_in + g and 0 <= b < n_in + g
    assert len(net.outputs) == net.channels
    with pytest.raises(ValueError, match="patches"):
        net.evaluate(np.zeros((3, 9 * net.channels + 1)))
    with pytest.raises(ValueError, match="unknown export format"):
        small_model.export("vhdl")


# ---- C --------------------------------------------------------------------------------


def _compile_c(source: str, tmp_path: Path, name: str) -> Path:
    cc = require_tool("cc")
    src, exe = tmp_path / f"{name}.c", tmp_path / name
    src.write_text(source)
    cmd = [cc, "-std=c99", "-O0", "-Wall", "-Wextra", "-Werror", "-DLOGICARS_MAIN"]
    subprocess.run([*cmd, "-o", str(exe), str(src)], check=True, capture_output=True)
    return exe


def _run_c(exe: Path, grid: np.ndarray, steps: int) -> np.ndarray:
    """Runs the exported program on one `(H, W, C)` grid."""
    h, w, c = grid.shape
    text = f"{h} {w} {steps}\n" + "".join(map(str, grid.ravel())) + "\n"
    out = subprocess.run([str(exe)], input=text, capture_output=True, text=True, check=True)
    rows = out.stdout.split()
    return np.array([[int(ch) for ch in row] for row in rows], dtype=np.uint8).reshape(h, w, c)


def test_exported_c_steps_grids_like_the_engine(
    trained_model: logicars.Model, tmp_path: Path
) -> None:
    rng = np.random.default_rng(3)
    for name, model in models(trained_model):
        exe = _compile_c(model.export("c"), tmp_path, name)
        spec = model.spec
        for h, w, steps in ((7, 11, 3), (5, 70, 2)):  # 70 columns: cells span words
            x = rng.integers(0, 2, size=(h, w, spec.channels), dtype=np.uint8)
            expected = model.simulate(x[None], steps)[0]
            np.testing.assert_array_equal(_run_c(exe, x, steps), expected, err_msg=name)


def test_exported_c_cell_function(trained_model: logicars.Model, tmp_path: Path) -> None:
    """`logicars_cell` from a separate driver, over all 512 GoL neighbourhoods."""
    cc = require_tool("cc")
    (tmp_path / "circuit.c").write_text(trained_model.export("c"))
    (tmp_path / "driver.c").write_text(
        "#include <stdio.h>\n#include <stdint.h>\n"
        "void logicars_cell(const uint8_t *patch, uint8_t *next);\n"
        "int main(void) {\n"
        "    for (int i = 0; i < 512; i++) {\n"
        "        uint8_t patch[9], next[1];\n"
        "        for (int e = 0; e < 9; e++) patch[e] = (i >> e) & 1;\n"
        "        logicars_cell(patch, next);\n"
        "        putchar('0' + next[0]);\n"
        "    }\n"
        "    return 0;\n}\n"
    )
    exe = tmp_path / "cells"
    subprocess.run(
        [cc, "-std=c99", "-Wall", "-Werror", "-o", str(exe), "circuit.c", "driver.c"],
        cwd=tmp_path,
        check=True,
        capture_output=True,
    )
    out = subprocess.run([str(exe)], capture_output=True, text=True, check=True).stdout
    got = np.array([int(ch) for ch in out], dtype=np.uint8)[:, None]
    np.testing.assert_array_equal(got, engine_cells(trained_model, all_patches_c1()))


# ---- Verilog --------------------------------------------------------------------------


def _simulate_verilog(source: str, patches: np.ndarray, c: int, tmp_path: Path) -> np.ndarray:
    iverilog = require_tool("iverilog")
    vvp = require_tool("vvp")
    n, bits = patches.shape
    # $readmemb reads the leftmost digit as the highest bit: write patch bit i at i.
    (tmp_path / "vectors.txt").write_text(
        "\n".join("".join(map(str, row[::-1])) for row in patches) + "\n"
    )
    (tmp_path / "cell.v").write_text(source)
    (tmp_path / "tb.v").write_text(
        f"module tb;\n"
        f"  reg [{bits - 1}:0] vectors [0:{n - 1}];\n"
        f"  reg [{bits - 1}:0] patch;\n"
        f"  wire [{c - 1}:0] next;\n"
        f"  integer i;\n"
        f"  logicars_cell dut (.patch(patch), .next(next));\n"
        f"  initial begin\n"
        f'    $readmemb("vectors.txt", vectors);\n'
        f"    for (i = 0; i < {n}; i = i + 1) begin\n"
        f"      patch = vectors[i];\n"
        f'      #1 $display("%b", next);\n'
        f"    end\n"
        f"    $finish;\n"
        f"  end\n"
        f"endmodule\n"
    )
    subprocess.run(
        [iverilog, "-g2005", "-o", "sim", "tb.v", "cell.v"],
        cwd=tmp_path,
        check=True,
        capture_output=True,
    )
    out = subprocess.run([vvp, "-n", "sim"], cwd=tmp_path, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    lines = [ln for ln in out.stdout.split() if re.fullmatch("[01]+", ln)]
    assert len(lines) == n
    return np.array([[int(ch) for ch in ln[::-1]] for ln in lines], dtype=np.uint8)


def test_exported_verilog_matches_the_engine(trained_model: logicars.Model, tmp_path: Path) -> None:
    for name, model in models(trained_model):
        patches = patches_for(model)
        c = model.spec.channels
        got = _simulate_verilog(model.export("verilog"), patches, c, tmp_path)
        np.testing.assert_array_equal(got, engine_cells(model, patches), err_msg=name)


# ---- DigitalJS ------------------------------------------------------------------------

_BINARY = {"And": np.logical_and, "Or": np.logical_or, "Xor": np.logical_xor}
_PORTS = {  # inputs and outputs of each device type used
    "Input": ((), ("out",)),
    "Constant": ((), ("out",)),
    "Output": (("in",), ()),
    "Not": (("in",), ("out",)),
    **{k: (("in1", "in2"), ("out",)) for k in _BINARY},
}


def _check_digitaljs(doc: dict) -> dict[tuple[str, str], str]:
    """Structural checks; returns the driver of every input port."""
    assert set(doc) == {"devices", "connectors", "subcircuits"}
    devices = doc["devices"]
    for dev in devices.values():
        assert dev["type"] in _PORTS
    driver: dict[tuple[str, str], str] = {}
    for conn in doc["connectors"]:
        src, dst = conn["from"], conn["to"]
        assert src["port"] in _PORTS[devices[src["id"]]["type"]][1]
        assert dst["port"] in _PORTS[devices[dst["id"]]["type"]][0]
        assert (dst["id"], dst["port"]) not in driver, "an input port driven twice"
        driver[(dst["id"], dst["port"])] = src["id"]
    for dev_id, dev in devices.items():
        for port in _PORTS[dev["type"]][0]:
            assert (dev_id, port) in driver, f"{dev_id}.{port} is not connected"
    return driver


def _eval_digitaljs(doc: dict, patches: np.ndarray, c: int) -> np.ndarray:
    """A small DigitalJS interpreter: every device evaluated on all patches at once."""
    devices = doc["devices"]
    driver = _check_digitaljs(doc)
    values: dict[str, np.ndarray] = {}

    def value(dev_id: str) -> np.ndarray:
        if dev_id not in values:
            dev = devices[dev_id]
            kind = dev["type"]
            if kind == "Input":
                ch, dr, dc = re.fullmatch(r"c(\d+)_([mp][01])_([mp][01])", dev["net"]).groups()
                off = {"m1": 0, "p0": 1, "p1": 2}
                values[dev_id] = patches[:, int(ch) * 9 + off[dr] * 3 + off[dc]].astype(bool)
            elif kind == "Constant":
                values[dev_id] = np.full(len(patches), dev["constant"] == "1")
            elif kind == "Not":
                values[dev_id] = ~value(driver[(dev_id, "in")])
            else:
                a, b = value(driver[(dev_id, "in1")]), value(driver[(dev_id, "in2")])
                values[dev_id] = _BINARY[kind](a, b)
        return values[dev_id]

    outputs = {d["net"]: k for k, d in devices.items() if d["type"] == "Output"}
    assert sorted(outputs) == sorted(f"next_c{ch}" for ch in range(c))
    cols = [value(driver[(outputs[f"next_c{ch}"], "in")]) for ch in range(c)]
    return np.stack(cols, axis=1).astype(np.uint8)


def test_exported_digitaljs_matches_the_engine(trained_model: logicars.Model) -> None:
    for name, model in models(trained_model):
        doc = json.loads(model.export("digitaljs"))
        report = model.prune_report()
        types = [d["type"] for d in doc["devices"].values()]
        assert types.count("Input") == report["patch_inputs"]
        assert sum(types.count(k) for k in _BINARY) == report["pruned_gates"]
        patches = patches_for(model)
        got = _eval_digitaljs(doc, patches, model.spec.channels)
        np.testing.assert_array_equal(got, engine_cells(model, patches), err_msg=name)


# ---- DOT ------------------------------------------------------------------------------


def test_exported_dot_is_a_graph_of_the_circuit(
    trained_model: logicars.Model, tmp_path: Path
) -> None:
    text = trained_model.export("dot")
    assert text.startswith("digraph logicars {") and text.rstrip().endswith("}")
    declared = set(re.findall(r"^\s+(\w+) \[", text, flags=re.M))
    edges = re.findall(r"^\s+(\w+) -> (\w+)", text, flags=re.M)
    assert edges and all(a in declared and b in declared for a, b in edges)
    gates = [n for n in declared if re.fullmatch(r"g\d+", n)]
    assert len(gates) == trained_model.prune_report()["pruned_gates"]
    assert len(edges) == 2 * len(gates) + trained_model.spec.channels
    dot = shutil.which("dot")
    if dot is not None:  # optional: Graphviz itself parses it
        (tmp_path / "c.dot").write_text(text)
        subprocess.run([dot, "-Tsvg", "-o", os.devnull, str(tmp_path / "c.dot")], check=True)


# ---- CLI ------------------------------------------------------------------------------


def test_cli_export_every_format(
    trained_gol: Path, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    model = logicars.Model.load(trained_gol / "model.safetensors")
    assert logicars.cli.main(["export", str(trained_gol), "--format", "verilog"]) == 0
    out = capsys.readouterr().out
    report = model.prune_report()
    assert f"{report['pruned_gates']:,} after dropping dead gates" in out
    assert f"{report['gates']:,} in the float program" in out
    assert (trained_gol / "circuit.v").read_text() == model.export("verilog")
    for fmt, name in (("c", "x.c"), ("digitaljs", "x.json"), ("dot", "x.dot")):
        target = tmp_path / name
        assert (
            logicars.cli.main(["export", str(trained_gol), "--format", fmt, "--out", str(target)])
            == 0
        )
        assert target.read_text() == model.export(fmt)
    # A fixture .npz works too; its circuit file goes beside it unless --out is given.
    npz = FIXTURES / "sync_small.npz"
    target = tmp_path / "small.v"
    assert logicars.cli.main(["export", str(npz), "--format", "verilog", "--out", str(target)]) == 0
    assert target.read_text() == logicars.Model.from_npz(npz).export("verilog")


def test_cli_export_errors(
    trained_gol: Path, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    cases = [
        (["export", str(tmp_path / "nope"), "--format", "c"], "no such run directory"),
        (["export", str(tmp_path), "--format", "c"], "not a run directory"),
        (["export", str(trained_gol), "--format", "vhdl"], "invalid choice"),
        (["export", str(trained_gol)], "--format"),
        (["simulate", str(tmp_path / "nope")], "no such run directory"),
        (["simulate", str(trained_gol), "--size", "8", "--damage", "9"], "larger than"),
        (["simulate", str(trained_gol), "--fire-rate", "1.5"], "fire-rate"),
        (["simulate", str(trained_gol), "--size", "0"], "size"),
    ]
    for argv, message in cases:
        assert logicars.cli.main(argv) == 2, argv
        err = capsys.readouterr().err
        assert message in err and "Traceback" not in err, (argv, err)


def test_cli_simulate_gol(
    trained_gol: Path, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    from PIL import Image

    from logicars.circuit.simulate import start_grid

    model = logicars.Model.load(trained_gol / "model.safetensors")
    npy, gif = tmp_path / "final.npy", tmp_path / "run.gif"
    argv = ["simulate", str(trained_gol), "--size", "40", "--steps", "6", "--batch", "2"]
    argv += ["--seed", "4", "--out", str(npy), "--gif", str(gif)]
    assert logicars.cli.main(argv) == 0
    out = capsys.readouterr().out
    final = np.load(npy)
    x = start_grid(None, 1, 40, 2, 4)
    np.testing.assert_array_equal(final, model.simulate(x, 6))
    # The error against six steps of Conway's rule, as printed.
    wrong = int(np.count_nonzero(final != gol_step_n(x, 6)))
    assert "gol: 2 x 40x40, 6 steps (sync)" in out
    assert f", {wrong} of 3200 target cells wrong" in out
    with Image.open(gif) as im:
        assert im.size == (240, 240) and im.n_frames > 1


def test_cli_simulate_async_and_damage(
    trained_gol: Path, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    from logicars.circuit.simulate import start_grid

    model = logicars.Model.load(trained_gol / "model.safetensors")
    npy = tmp_path / "final.npy"
    argv = ["simulate", str(trained_gol), "--size", "32", "--steps", "5", "--damage", "6"]
    argv += ["--fire-rate", "0.5", "--seed", "9", "--out", str(npy)]
    assert logicars.cli.main(argv) == 0
    out = capsys.readouterr().out
    assert "(async 0.5)" in out and "6x6 centre damaged" in out
    final = np.load(npy)
    assert not final[0, 13:19, 13:19].any()
    damage = np.zeros((32, 32), np.uint8)
    damage[13:19, 13:19] = 1
    x = start_grid(None, 1, 32, 1, 9)
    np.testing.assert_array_equal(final, model.simulate(x, 5, fire_rate=0.5, seed=9, damage=damage))


def test_start_grid_of_grow_presets_is_centred() -> None:
    from logicars.circuit.simulate import start_grid

    lizard = logicars.get_preset("lizard")
    x = start_grid(lizard, lizard.spec.channels, 9, 1, 0)
    assert x.shape == (1, 9, 9, 64) and x.sum() == 64 and x[0, 4, 4].all()
    x = start_grid(lizard, lizard.spec.channels, 40, 2, 0)
    assert x.shape == (2, 40, 40, 64) and x[:, 20, 20].all() and x.sum() == 2 * 64


def test_simulate_targets() -> None:
    from logicars.circuit.simulate import target_grid
    from logicars.datasets import checkerboard_target

    board = logicars.get_preset("checkerboard")
    x = np.zeros((2, 12, 20, 8), np.uint8)
    y = target_grid(board, x, 80)
    assert y is not None and y.shape == (2, 12, 20, 1)
    np.testing.assert_array_equal(y[1, ..., 0], checkerboard_target(12, 20))
    lizard = logicars.get_preset("lizard")
    assert target_grid(lizard, np.zeros((1, 20, 20, 64), np.uint8), 20) is not None
    assert target_grid(lizard, np.zeros((1, 32, 32, 64), np.uint8), 20) is None  # other size
    assert target_grid(None, x, 3) is None


def test_cli_simulate_fixture_npz(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    npz, npy = FIXTURES / "sync_small.npz", tmp_path / "x.npy"
    argv = ["simulate", str(npz), "--size", "16", "--steps", "4", "--out", str(npy)]
    assert logicars.cli.main(argv) == 0
    out = capsys.readouterr().out
    assert out.startswith("model: 1 x 16x16, 4 steps (sync)") and "target" not in out
    model = logicars.Model.from_npz(npz)
    x = np.random.default_rng(0).integers(0, 2, size=(1, 16, 16, 8), dtype=np.uint8)
    np.testing.assert_array_equal(np.load(npy), model.simulate(x, 4))
