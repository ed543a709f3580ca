"""docs/results.md and the tables of docs/relaxations.md are what the committed records
give (issue 42): `scripts/make_results.py` regenerates them byte for byte, and a record
that changes changes the docs."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest

from logicars.records import (
    FORMAT_VERSION,
    SEED_FIELDS,
    read_records,
    record_from_run,
    records_from_sweep,
    seed_record,
    write_records,
)

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))
import make_results  # noqa: E402


def test_results_md_is_what_the_records_give() -> None:
    text, solving = make_results.render_results()
    assert text == (ROOT / "docs" / "results.md").read_text(encoding="utf-8")
    assert len(solving) > 2  # the solving table, which the plot is drawn from


def test_relaxations_md_tables_are_what_the_records_give() -> None:
    text = (ROOT / "docs" / "relaxations.md").read_text(encoding="utf-8")
    assert "<!-- records: " in text
    assert make_results.render_relaxations(text) == text


def test_a_changed_record_changes_the_docs(tmp_path: Path) -> None:
    data = tmp_path / "data"
    shutil.copytree(ROOT / "docs" / "data", data)
    path = data / "sweeps" / "gol-softmax.jsonl"
    rows = read_records(path)
    rows[0]["active_gates"] += 1  # seed 0's per-seed row, and the table's median
    write_records(path, rows)
    before, _ = make_results.render_results()
    after, _ = make_results.render_results(data)
    assert after != before
    assert (
        f"| 0 | 2 | 5578 | 11 (14) | 0.00214 | 0 (1050) | 512/512 | {rows[0]['active_gates']} |"
        in after
    )


def test_every_sweep_file_reads_and_names_its_source() -> None:
    files = sorted((ROOT / "docs" / "data" / "sweeps").glob("*.jsonl"))
    assert files
    for path in files:
        rows = read_records(path)
        assert rows, path
        for r in rows:
            assert r["format"] == FORMAT_VERSION and r["sweep"] == path.stem
            assert r["kind"] in ("seed", "aggregate") and r["source"]
            if r["kind"] == "seed":
                assert list(r)[: len(SEED_FIELDS)] == list(SEED_FIELDS)


def test_the_template_cites_only_recorded_sweeps() -> None:
    template = (ROOT / "docs" / "data" / "results.template.md").read_text()
    names, probes = set(), set()
    for m in make_results.DIRECTIVE.finditer(template):
        kind, args = m.group(1), m.group(2).split()
        if kind == "probe-table":
            probes.add(args[0])
        elif kind in ("solving-table", "growth-table", "variants"):
            names |= set(args)  # every argument a sweep
        elif kind in ("growth-plot", "wiring-plot"):
            names |= set(args[1:])  # the image's file name, then the sweeps
        else:
            names |= set(args[:1])
    for name in names:
        assert (ROOT / "docs" / "data" / "sweeps" / f"{name}.jsonl").is_file(), name
    for name in probes:
        assert (ROOT / "docs" / "data" / "probes" / f"{name}.jsonl").is_file(), name


def test_a_probe_table_counts_the_wirings_that_solve(tmp_path: Path) -> None:
    """`{{probe-table NAME}}`: per variant, in the order met, the first wirings that
    solved (a null epoch did not) and their epochs, sorted."""
    (tmp_path / "probes").mkdir()
    lines = [
        {"variant": "plain", "seed": 0, "solved": 80},
        {"variant": "plain", "seed": 1, "solved": None},
        {"variant": "hold=4", "seed": 0, "solved": None},
        {"variant": "plain", "seed": 2, "solved": 12},
    ]
    (tmp_path / "probes" / "p.jsonl").write_text("".join(json.dumps(r) + "\n" for r in lines))
    table = make_results.probe_table("p", tmp_path)
    assert table[2:] == ["| `plain` | 2 of 3 (67%) | 12, 80 |", "| `hold=4` | 0 of 1 (0%) |  |"]


def test_a_probe_table_counts_the_wirings_that_generalise(tmp_path: Path) -> None:
    """Lines with `generalises` add a column: how many of the solving wirings pass."""
    (tmp_path / "probes").mkdir()
    lines = [
        {"variant": "steps=30", "seed": 0, "solved": 80, "generalises": False},
        {"variant": "steps=30", "seed": 1, "solved": 40, "generalises": True},
        {"variant": "steps=30", "seed": 2, "solved": None},
        {"variant": "plain", "seed": 0, "solved": 90, "generalises": True},
    ]
    (tmp_path / "probes" / "p.jsonl").write_text("".join(json.dumps(r) + "\n" for r in lines))
    table = make_results.probe_table("p", tmp_path)
    assert table[0].endswith("| of them generalise |")
    assert table[2:] == [
        "| `steps=30` | 2 of 3 (67%) | 40, 80 | 1 |",
        "| `plain` | 1 of 1 (100%) | 90 | 1 |",
    ]


def test_seed_record_refuses_unknown_fields() -> None:
    with pytest.raises(ValueError, match="wall"):
        seed_record("x", wall=3)


def test_a_sweep_of_runs_becomes_records(tmp_path: Path) -> None:
    """`records_from_sweep` (what `make_results.py --record` and a sweep write) reads a
    finished run's summary and metrics; the docs' tables are computed from such rows."""
    import logicars

    sweep = tmp_path / "sweep"
    for seed in (0, 1):
        logicars.train("gol", epochs=3, seed=seed, out=sweep / f"gol-{seed}", quiet=True)
    rows = records_from_sweep("tiny", sweep, wide=False)
    assert [r["seed"] for r in rows] == [0, 1]
    summary = json.loads((sweep / "gol-0" / "summary.json").read_text())
    r = rows[0]
    assert r["source"] == "run" and r["preset"] == "gol"
    training = "softmax(warmup=500, hard_fraction=0.6), init logit 5"  # gol's defaults
    assert r["training"] == training and r["options"]["init_logit"] == 5
    assert r["options"]["repair"] is True  # a run without repairs says so
    assert r["epochs"] == summary["epochs"] == 3 and r["attempts"] == 1
    assert r["seconds"] == summary["wall_seconds"]
    assert r["checks"]["held_out"]["samples"] == 512
    assert r["checks"]["held_out"]["passed"] is summary["hard_eval"]["passed"]
    assert r["checks"]["named"] == summary["hard_eval"]["checks"]  # e.g. "exhaustive"
    assert r["checks"]["validation"] is (summary["solved_epoch"] is not None)
    assert r["build"]["logicars_version"] == logicars.__version__
    assert r["lowest_hard_loss"] is not None and r["lowest_hard_epoch"] in (1, 2, 3)
    # rendered as the docs render a sweep: a per-seed table and a solving-table row
    data = tmp_path / "data"
    (data / "sweeps").mkdir(parents=True)
    write_records(data / "sweeps" / "tiny.jsonl", rows)
    assert read_records(data / "sweeps" / "tiny.jsonl") == rows
    lines = make_results.seed_table("tiny", data)
    assert lines[0].startswith(f"Trained with {training}:") and len(lines) == 4 + 2
    columns = make_results.SOLVING_COLUMNS
    assert [columns[c](rows) for c in ("preset", "training", "seeds")] == ["`gol`", training, "2"]
    # the wider check was skipped, so its column cannot be computed: refused, not guessed
    with pytest.raises(SystemExit, match="wide"):
        make_results.solving_table(["tiny"], data)
    assert record_from_run("tiny", sweep / "gol-1", wide=False)["seed"] == 1


def _wiring_runs(data: Path) -> None:
    """A sweep of two variants, written as records: init logit 5 solves seeds 0 and 1 in
    their first wiring (epochs 100 and 300), the notebook's init solves seed 0 in its
    second attempt (of 400 epochs) and not seed 1."""

    def run(seed: int, init: float | None, attempts: int, solved: int | None, epochs: int):
        options = {"init_logit": init, "restart_every": 400, "notebook_epochs": 500}
        return seed_record(
            "wiring", preset="checkerboard", seed=seed, training="softmax", options=options,
            attempts=attempts, epochs=epochs, solved_epoch=solved, seconds=epochs / 100,
            checks={"held_out": {"passed": solved is not None}},
        )  # fmt: skip

    rows = [
        run(0, 5.0, 1, 100, 100),
        run(1, 5.0, 1, 300, 300),
        run(0, None, 2, 600, 600),
        run(1, None, 3, None, 1200),
    ]
    (data / "sweeps").mkdir(parents=True)
    write_records(data / "sweeps" / "wiring.jsonl", rows)


def test_a_variant_without_repairs_is_named_so() -> None:
    def label(**options: object) -> str:
        row = seed_record("r", preset="checkerboard", seed=0, training="softmax", options=options)
        return make_results._variant(row)

    assert "no repairs" in label(repair=False, final_repair_budget=500)
    assert "final repairs of 500" in label(repair=True, final_repair_budget=500)
    assert "repairs" not in label()  # records from before `repair` was recorded


def test_variants_count_first_wirings_and_epochs_per_working_circuit(tmp_path: Path) -> None:
    _wiring_runs(tmp_path)
    lines = make_results.variants_table(["wiring"], tmp_path)
    assert "first wiring in the notebook's epochs | epochs per working circuit" in lines[0]
    weak, notebook = lines[2], lines[3]  # in the order met
    assert "init logit" not in notebook and "init logit 5" in weak
    assert "| 1 (50%) | 0 (0%) | 1800 | 18 |" in notebook  # 1800 epochs, 18 s, 1 works
    assert "| 2 (100%) | 2 (100%) | 200 | 2.0 |" in weak  # a tenth below 10 s
    # attempts shorter than the recorded 400: per variant
    lengths = make_results.attempt_length_table("wiring", 400, tmp_path)
    assert "| options | attempt length |" in lengths[0]
    cells = [line.strip("| ").split(" | ") for line in lengths[2:]]
    weak_rows = {c[1]: c[2:] for c in cells if "init logit 5" in c[0]}
    assert weak_rows["250"] == ["1 of 2 (50%)", "350"]  # (100 + 250) / 2 per attempt, 1/2 solve
    assert weak_rows["400"] == ["2 of 2 (100%)", "200"]


def test_the_wiring_plot_is_drawn_from_the_records(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _wiring_runs(tmp_path)
    monkeypatch.setattr(make_results, "DATA", tmp_path)
    make_results.wiring_plot(["wiring"], tmp_path / "plot.png")
    assert (tmp_path / "plot.png").read_bytes()[:4] == b"\x89PNG"
    template = "{{wiring-plot plot.png wiring}}\n{{growth-plot g.png a b}}\n"
    assert make_results.plots(template) == [
        ("wiring", "plot.png", ["wiring"]),
        ("growth", "g.png", ["a", "b"]),
    ]
