"""Sweep records: the compact, committed form of a seed sweep's results.

A sweep's run directories (`python -m logicars sweep ... --out DIR`) hold megabytes of
checkpoints, CSVs and plots; what the documentation cites of them fits in one JSON line
per run. `docs/data/sweeps/<name>.jsonl` holds a sweep's records and
`scripts/make_results.py` regenerates every table and plot of docs/results.md and
docs/relaxations.md from them, so the published figures can be checked and redrawn
without the runs.

**The format** (`FORMAT_VERSION` 1): a UTF-8 file of JSON objects, one per line, in seed
order. A line with `"kind": "seed"` is one run (one seed) of the sweep:

- `format`: `FORMAT_VERSION`; `kind`: `"seed"` (one run), or `"aggregate"` (below);
  `sweep`: the sweep's name (the file's stem); `preset`, `seed`: what was trained.
- `training`: the training rule as the tables name it (relaxation, binarized states, ...);
  `options`: the run's training options (relax, epochs, attempt length, stall check,
  search budget, ...) as far as known; `budget`: its epochs as the preset gave them, e.g.
  `"9000 (3000)"` (attempts of 3000).
- `attempts`: wirings trained (1 + restarts); `attempt_ends`: why each attempt ended
  (solved, restarted at its length, stalled, repair gave up), where recorded.
- `epochs`, `target_epochs`: epochs trained, and the budget's; `seconds`: wall time.
- `solved_epoch`, `solved_seconds`: when the hard circuit passed the validation check
  (null: never).
- `final_soft_loss`, `final_hard_loss`: at the end of training;
  `final_repair_wrong_after`: wrong cells after the repair at the run's end (null: none
  ran); `first_hard_zero_epoch`: the first epoch with hard loss 0 on the training batch;
  `lowest_hard_loss`, `lowest_hard_epoch`: the lowest hard loss and its first epoch.
- `repairs`, `repair_changes`: repair searches run, and the gates (ops) they changed.
- `checks`: `held_out` (`{"solved", "samples", "passed"}`, the summary's held-out
  check; `passed` null where not recorded: solved == samples decides),
  `named` (`evaluate`'s named checks as the summary records them, where it does:
  `{name: {"samples", "solved", "passed", "required", ...}}`), `validation` (whether the
  run stopped on a passed validation check), `wide` (`{"solved", "samples"}` on
  `WIDE_SAMPLES` more inputs, seed `WIDE_SEED`).
  A grown image's `checks` add `wrong_by_step`: the final circuit's wrong loss-channel
  cells at every step from 0 to 10T from its start grid (`logicars.growth`).
- `active_gates`: gates of the hard circuit that are not a pass-through.
- `build`: logicars version, SIMD level, threads, CPU where known.
- `source`: `"run"` (written from the run directory), or where a transcribed value comes
  from; `cells` (transcribed records only): `{table: {row label: cell}}`, a published
  table with one column per seed, cell by cell as published.

Every field but `format`, `kind`, `sweep`, `source` may be null: not recorded. A value is
never made up: where a sweep's run directories were not kept, its records are transcribed
from the published tables, `source` says from where, and what was not published is null.

A line with `"kind": "aggregate"` is a published summary of a group of runs whose
per-seed values were not kept (`group`: the table row's own label; `columns`: the row's
cells as published); `make_results.py` uses it only for what the seed lines cannot give.

`records_from_sweep(DIR)` writes the records of a sweep directory's runs
(`write_records`), e.g. `python scripts/make_results.py --record DIR --name NAME`.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any, Union

from .training.config import POOL_SETTINGS

PathLike = Union[str, "os.PathLike[str]"]

FORMAT_VERSION = 1
# A stricter held-out check than the summary's: this many more fresh inputs (the same 512
# boards for gol, the one start for the growth presets), with another seed.
WIDE_SAMPLES = 1024
WIDE_SEED = 12345

SEED_FIELDS = (
    "format",
    "kind",
    "sweep",
    "preset",
    "seed",
    "training",
    "options",
    "budget",
    "attempts",
    "attempt_ends",
    "epochs",
    "target_epochs",
    "solved_epoch",
    "solved_seconds",
    "seconds",
    "final_soft_loss",
    "final_hard_loss",
    "final_repair_wrong_after",
    "first_hard_zero_epoch",
    "lowest_hard_loss",
    "lowest_hard_epoch",
    "repairs",
    "repair_changes",
    "checks",
    "active_gates",
    "build",
    "source",
)


def seed_record(sweep: str, **fields: Any) -> dict[str, Any]:
    """A seed line with every field of the format, in its order (unknown ones null)."""
    unknown = set(fields) - set(SEED_FIELDS) - {"cells"}
    if unknown:
        raise ValueError(f"not fields of a seed record: {sorted(unknown)}")
    row: dict[str, Any] = {k: None for k in SEED_FIELDS}
    row.update(format=FORMAT_VERSION, kind="seed", sweep=sweep)
    row.update(fields)
    if row["checks"] is None:
        row["checks"] = {"held_out": None, "validation": None, "wide": None}
    return row


def training_label(summary: dict[str, Any]) -> str:
    """How a run trained, as the tables name it: its relaxation, binarized states, chunk
    width and initial pass-through logit where not the default."""
    from .spec import DEFAULT_CHUNK_CELLS, INIT_LOGIT, Relaxation

    config = summary.get("config", {})
    label = Relaxation(**summary["relax"]).label()
    if config.get("binarize_states"):
        every = config.get("binarize_every", 1)
        label += " + binarized states" + ("" if every == 1 else f" every {every} epochs")
    chunk = config.get("chunk_cells")
    if chunk is not None and chunk != DEFAULT_CHUNK_CELLS:
        label += f", chunks of {chunk} cells"
    init = config.get("init_logit")
    if init is not None and init != INIT_LOGIT:
        label += f", init logit {init:g}"
    return label


def budget_label(summary: dict[str, Any]) -> str:
    """A run's epochs as its preset gave them: with its attempt length or stall check
    (the epochs a stall added taken off)."""
    from .presets import epochs_label

    stall = summary.get("stall_epochs")
    epochs = summary["target_epochs"] - (stall or 0) * summary.get("stalls", 0)
    label = epochs_label(epochs, summary.get("restart_every"), stall, summary.get("stall_loss"))
    if summary.get("drift_budget"):
        label += f", search {summary['drift_budget']:,}"
    return label


def lowest_hard_loss(metrics_csv: Path) -> tuple[float, int] | None:
    """The lowest hard loss of a run's metrics.csv and the first epoch it was reached."""
    import csv

    if not metrics_csv.is_file():
        return None
    with open(metrics_csv, newline="") as f:
        rows = [(float(r["hard_loss"]), int(r["epoch"])) for r in csv.DictReader(f)]
    return min(rows) if rows else None


def wide_check(run_dir: Path, preset: str) -> dict[str, int]:
    """The final circuit on `WIDE_SAMPLES` more inputs (seed `WIDE_SEED`)."""
    from .circuit.evaluate import evaluate
    from .model import Model
    from .presets import get_preset

    model = Model.load(run_dir / "model.safetensors")
    check = evaluate(model, get_preset(preset), samples=WIDE_SAMPLES, seed=WIDE_SEED)
    return {"solved": check.solved, "samples": check.samples}


def record_from_run(
    sweep: str, run_dir: PathLike, *, wide: bool = True, options: dict[str, Any] | None = None
) -> dict[str, Any]:
    """The seed line of a finished run directory (its summary.json and metrics.csv);
    `wide`: also run the wider held-out check on its model."""
    d = Path(run_dir)
    s = json.loads((d / "summary.json").read_text())
    low = lowest_hard_loss(d / "metrics.csv")
    repairs = s.get("repairs") or []
    # A greedy repair lists its changes, a drift search counts them.
    changes = sum(c if isinstance(c := r.get("changes"), int) else len(c or []) for r in repairs)
    final = [r for r in repairs if r.get("epoch") == s["epochs"]]  # the run's last repair
    ev = s.get("hard_eval") or {}
    build = dict(s.get("build_info") or {})
    build.update(logicars_version=s.get("logicars_version"), threads=s.get("threads"))
    given = {
        k: s.get(k)
        for k in (
            "batch",
            "lr",
            "weight_decay",
            "beta1",
            "lr_decay_from",
            "lr_end",
            "relax",
            "restart_every",
            "stall_epochs",
            "stall_loss",
            "drift_budget",
            "repair",
            "final_repair_budget",
            "require_generalise",
            "target_epochs",
            "notebook_epochs",
            "growth",
            *POOL_SETTINGS,
        )
        if k in s
    }
    cfg = s.get("config", {})
    spec_keys = ("binarize_states", "binarize_every", "chunk_cells", "init_logit", "num_steps")
    given.update({k: cfg.get(k) for k in spec_keys})
    return seed_record(
        sweep,
        preset=s["preset"],
        seed=s["seed"],
        training=training_label(s),
        options={**given, **(options or {})},
        budget=budget_label(s),
        attempts=1 + len(s.get("restarts") or []),
        attempt_ends=s.get("attempt_ends"),
        epochs=s["epochs"],
        target_epochs=s["target_epochs"],
        solved_epoch=s.get("solved_epoch"),
        solved_seconds=s.get("solved_seconds"),
        seconds=s.get("wall_seconds"),
        final_soft_loss=s.get("final_soft_loss"),
        final_hard_loss=s.get("final_hard_loss"),
        final_repair_wrong_after=final[-1].get("wrong_after") if final else None,
        first_hard_zero_epoch=s.get("first_epoch_hard_zero"),
        lowest_hard_loss=None if low is None else low[0],
        lowest_hard_epoch=None if low is None else low[1],
        repairs=len(repairs),
        repair_changes=changes,
        checks={
            "held_out": {
                "solved": ev.get("solved"),
                "samples": ev.get("samples"),
                # what the task asks (a persisting circuit: grown and held), where recorded
                "passed": ev.get("passed"),
            },
            # evaluate's named checks (exhaustive, fresh starts, grown, persists, regrows)
            "named": ev.get("checks"),
            "validation": s.get("solved_epoch") is not None,
            "wide": wide_check(d, s["preset"]) if wide else None,
            # A grown image's wrong cells at every step from 0 to 10T (`evaluate`).
            **({"wrong_by_step": ev["wrong_by_step"]} if "wrong_by_step" in ev else {}),
        },
        active_gates=s.get("active_gates"),
        build=build,
        source="run",
    )


def records_from_sweep(
    sweep: str, sweep_dir: PathLike, *, wide: bool = True
) -> list[dict[str, Any]]:
    """The seed lines of every finished run below `sweep_dir` (`*/summary.json`), in
    (preset, seed) order; unfinished and interrupted runs are left out."""
    rows = []
    for summary in sorted(Path(sweep_dir).glob("*/summary.json")):
        s = json.loads(summary.read_text())
        unfinished = s["epochs"] < s["target_epochs"] and not s.get("solved_epoch")
        if s.get("interrupted") or unfinished:
            continue
        rows.append(record_from_run(sweep, summary.parent, wide=wide))
    return sorted(rows, key=lambda r: (r["preset"], r["seed"]))


def write_records(path: PathLike, rows: Iterable[dict[str, Any]]) -> None:
    """Writes records as JSON lines (keys in the format's order), atomically."""
    from .files import write_atomic

    text = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)
    write_atomic(Path(path), text.encode())


def read_records(path: PathLike) -> list[dict[str, Any]]:
    """The records of a `.jsonl` file; fails on a line of another format version."""
    rows = []
    for n, line in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        row = json.loads(line)
        if row.get("format") != FORMAT_VERSION:
            raise ValueError(
                f"{path}:{n}: record format {row.get('format')!r}, not {FORMAT_VERSION}"
            )
        rows.append(row)
    return rows
