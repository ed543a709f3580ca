"""`python -m logicars bench`: the measured FMA peak and the `--json` fields.

Timings themselves are not checked (the machine is shared); their structure is.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
from pathlib import Path
from typing import Any

import pytest
from conftest import PAPER_LIZARD

import logicars
from logicars import _core, bench
from logicars.cli import bench as cli_bench
from logicars.cli import main


def test_measured_fma_peak_is_positive_and_finite() -> None:
    peak = _core.measure_fma_peak()
    assert math.isfinite(peak) and peak > 0


def test_bench_peak_is_measured_and_cached() -> None:
    bench.cpu_peak_fma_per_s.cache_clear()
    peak, how = bench.cpu_peak_fma_per_s(1)
    assert how.startswith("measured: ") and logicars.build_info()["simd_level"] in how
    assert math.isfinite(peak) and peak > 0
    assert bench.cpu_peak_fma_per_s(1) == (peak, how)  # once per process
    assert bench.cpu_peak_fma_per_s.cache_info().hits == 1


def test_bench_json_fields(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["bench", "gol", "--threads", "1", "--epochs", "2", "--warmup", "0", "--json"]
    assert main(argv) == 0
    (line,) = capsys.readouterr().out.strip().splitlines()
    r = json.loads(line)
    assert {
        "preset",
        "threads",
        "ms_per_epoch",
        "ms_min",
        "epochs_timed",
        "gate_cell_evals_per_epoch",
        "gce_per_s",
        "fma_fraction_of_peak",
        "peak_basis",
        "peak_rss_mb",
    } <= set(r)
    assert r["peak_basis"].startswith("measured: ")
    assert 0 < r["fma_fraction_of_peak"] < 1


def test_bench_times_relaxations_side_by_side(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["bench", "gol", "--threads", "1", "--epochs", "5", "--warmup", "0", "--json"]
    assert main([*argv, "--relax", "softmax,softmax+binarized"]) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.strip().splitlines()]
    # gol's own mode keeps its parameters: its hard gates.
    gol = "softmax(warmup=500, hard_fraction=0.6)"
    assert [r["relax"] for r in rows] == [gol, f"{gol}+binarized"]
    assert rows[1][f"vs_{gol}"] > 0 and f"vs_{gol}" not in rows[0]
    assert [r["binarize_every"] for r in rows] == [1, 1]
    assert main([*argv, "--relax", "softmax+rounded"]) == 2
    assert "unknown mode(s) ['softmax+rounded']" in capsys.readouterr().err


def test_bench_times_presets_in_the_same_rounds(monkeypatch: pytest.MonkeyPatch) -> None:
    """Several presets take turns, each one's timed epochs spread over all the rounds,
    so that the ratio of their rates comes from the same spells of a shared host."""
    from logicars.model import Model

    seen: list[int] = []
    real = Model.train_step

    def spy(self: Model, *args: Any, **kwargs: Any) -> Any:
        seen.append(id(self))
        return real(self, *args, **kwargs)

    monkeypatch.setattr(Model, "train_step", spy)
    rows = bench.bench_presets(["gol", "checkerboard"], 1, 10, 1)
    assert [r["preset"] for r in rows] == ["gol", "checkerboard"]
    gol, cb = seen[0], seen[1]  # one warm-up epoch each, then the rounds
    # Each round: an untimed epoch (the model's buffers back in cache), then 2 timed.
    assert seen == [gol, cb] + ([gol] * 3 + [cb] * 3) * bench.ROUNDS
    assert [r["epochs_timed"] for r in rows] == [10, 10]
    assert all("vs_softmax" not in r for r in rows)  # one relaxation: nothing to compare


def test_bench_variants_keep_the_presets_rounding_period() -> None:
    """`+binarized` times the preset's `binarize_every`; a variant without it rounds
    never, which the engine only accepts with the period reset to 1."""
    from logicars.bench import _variant

    lizard = logicars.PRESETS["lizard"].spec
    plain = _variant(lizard, "softmax")
    assert (plain.binarize_states, plain.binarize_every) == (False, 1)
    rounded = _variant(lizard, "truth-table+binarized")
    assert (rounded.binarize_states, rounded.binarize_every) == (True, 2)
    for spec in (plain, rounded):
        logicars.Model(spec, seed=0)  # specs the engine accepts


def test_bench_table_shows_the_rounding_period(capsys: pytest.CaptureFixture[str]) -> None:
    """The lizard's `+binarized` row rounds in every second epoch, as its preset trains:
    the table says so (`/2`), the JSON row has the period."""
    argv = ["bench", "lizard", "--threads", "1", "--epochs", "1", "--warmup", "0"]
    label = "softmax+binarized"
    assert main([*argv, "--relax", label]) == 0
    assert f"{label}/2 " in capsys.readouterr().out
    assert main([*argv, "--relax", label, "--json"]) == 0
    (row,) = [json.loads(line) for line in capsys.readouterr().out.strip().splitlines()]
    assert (row["relax"], row["binarize_every"]) == (label, 2)


def test_bench_times_an_experiment_files_model(capsys: pytest.CaptureFixture[str]) -> None:
    """The paper's lizard, an experiment file since the preset regrows: its 128 channels
    and 12 steps, as `bench lizard` timed them before 2026-11-30."""
    paper = PAPER_LIZARD
    argv = ["bench", str(paper), "--threads", "1", "--epochs", "1", "--warmup", "0", "--json"]
    assert main(argv) == 0
    (row,) = [json.loads(line) for line in capsys.readouterr().out.strip().splitlines()]
    preset = logicars.presets.read_experiment(paper).preset
    assert (preset.spec.channels, preset.spec.num_steps) == (128, 12)
    gce = row["gate_cell_evals_per_epoch"]
    assert gce == preset.gate_cell_evals_per_epoch()
    assert gce != logicars.PRESETS["lizard"].gate_cell_evals_per_epoch()


def test_bench_table_fits_a_long_file_name(capsys: pytest.CaptureFixture[str]) -> None:
    """A path longer than the preset column stays apart from the relaxation's name."""
    paper = str(PAPER_LIZARD)
    assert len(paper) > 20
    assert main(["bench", paper, "--threads", "1", "--epochs", "1", "--warmup", "0"]) == 0
    lines = capsys.readouterr().out.splitlines()
    (row,) = [line for line in lines if line.startswith(paper)]
    relax_at = lines[0].index("relax")
    assert row[:relax_at].rstrip() == paper
    assert row[relax_at:].startswith("truth-table")  # the paper lizard's relaxation


def test_bench_times_a_presets_own_relaxation_with_its_parameters() -> None:
    """The spec's own mode keeps its parameters (a hard fraction and its warmup), another
    mode starts from the engine's defaults; the row's label names the parameters."""
    from logicars.bench import _variant, bench_preset

    relax = logicars.Relaxation("truth-table", warmup=7, hard_fraction=0.5)
    preset = dataclasses.replace(
        logicars.PRESETS["lizard"], spec=logicars.PRESETS["lizard"].spec.replace(relax=relax)
    )
    assert _variant(preset.spec, "truth-table+binarized").relax == relax
    assert _variant(preset.spec, "truth-table-st").relax == logicars.Relaxation("truth-table-st")
    rows = bench_preset(preset, 1, 1, 0, ("softmax", "truth-table+binarized"))
    assert [r["relax"] for r in rows] == [
        "softmax",
        "truth-table(warmup=7, hard_fraction=0.5)+binarized",
    ]


def test_expected_wall_time_counts_every_run(tmp_path: Path) -> None:
    """All runs' wall seconds over the working ones (none here: 3 epochs of HighLife)."""
    exp = tmp_path / "short.toml"
    exp.write_text('task = "life:B36/S23"\n[training]\nepochs = 3\ndrift_budget = 0\n')
    r = bench.expected_wall_time(str(exp), [0, 1], 1, str(tmp_path / "sweep"))
    summaries = [json.loads(p.read_text()) for p in (tmp_path / "sweep").glob("*/summary.json")]
    assert len(summaries) == 2 and (r["runs"], r["working"]) == (2, 0)
    assert r["wall_seconds"] == pytest.approx(sum(s["wall_seconds"] for s in summaries), abs=1e-3)
    assert r["seconds_per_working"] is None


def test_bench_to_working_reports_seconds_per_working_circuit(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[tuple] = []

    def fake(name: str, seeds: list[int], threads: int, out: str | None) -> dict[str, Any]:
        calls.append((name, seeds, threads, out))
        return {"runs": 4, "working": 2, "wall_seconds": 30.0, "seconds_per_working": 15.0}

    monkeypatch.setattr(cli_bench, "expected_wall_time", fake)
    argv = ["bench", "gol", "--threads", "1", "--epochs", "1", "--warmup", "0"]
    assert main([*argv, "--to-working", "100-103"]) == 0
    out = capsys.readouterr().out
    assert calls == [("gol", [100, 101, 102, 103], 1, None)]
    assert "s per working circuit" in out and out.strip().splitlines()[-1].split()[-1] == "15.0"
    assert main([*argv, "--to-working", "3-1"]) != 0  # refused before any timing
    assert "--to-working: seeds" in capsys.readouterr().err and len(calls) == 1
    # --out keeps each preset's runs in one directory below it, a rule's slash and all
    rule = ["bench", "life:B36/S23", "--threads", "1", "--epochs", "1", "--warmup", "0"]
    assert main([*rule, "--to-working", "100", "--out", "kept"]) == 0
    assert calls[-1][3] == os.path.join("kept", "life-B36-S23")
