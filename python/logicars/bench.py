"""`python -m logicars bench`: time whole training epochs of the presets.

Each epoch is one `Model.train_step` (soft rollout, back-propagation through every
step, hard rollout, AdamW), exactly what training runs. The figure is the median over
repeated epochs after a warm-up, on one fixed batch of the preset's own data.
Several presets are timed in the same alternating rounds, so that their ratios come
from the same spells of a shared host. `--relax softmax,gumbel-st` times each
relaxation on the same batch, in the same rounds, and reports its cost against the
first one's; `MODE+binarized` is the mode with the states binarized between steps
(`binarize_states`).

`bench --hard` times the trained Game of Life circuit instead, beside a compiled-C
reference in the same run (`logicars.hard_bench`).

`bench --to-working SEEDS` also trains the preset on its defaults from each seed (a
sweep, `logicars.sweep`) and reports the expected wall time to a working circuit: every
run's wall seconds, failed attempts and searches included, over the runs whose circuit
passes `evaluate`. That is what a user waits; ms per epoch is only one factor of it.
"""

from __future__ import annotations

import functools
import resource
import statistics
import tempfile
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .presets import Preset
    from .spec import ModelSpec

# FMA-equivalent vector operations per gate-cell in one epoch: 3 multiply-adds in each
# of the two float forward passes (soft, and soft again during BPTT; the hard pass runs
# bit-sliced, 64 cells per word, and is not counted) and about 10 in
# the backward pass (input gradients and the four coefficient sums).
OPS_PER_GATE_CELL = 3 * 2 + 10


@functools.cache
def cpu_peak_fma_per_s(threads: int) -> tuple[float, str]:
    """Peak FMA lane-operations per second on `threads` engine threads and how it was
    obtained: measured (`_core.measure_fma_peak`: independent FMA chains with the
    kernels' SIMD level on every thread at once), once per process and thread count.
    Leaves the engine on `threads` threads."""
    from ._core import measure_fma_peak
    from .runtime import build_info, set_num_threads

    set_num_threads(threads)
    peak = measure_fma_peak()
    level = build_info()["simd_level"]
    how = f"measured: {level} FMA chains on {threads} thread(s), {peak / 1e9:.1f} G lane-ops/s"
    return peak, how


BINARIZED = "+binarized"  # the suffix of a relaxation timed with binarize_states


def _variant(spec: ModelSpec, relax: str) -> ModelSpec:
    """`spec` with relaxation `relax`, or `MODE+binarized` (binarize_states on, every
    `binarize_every` epochs as the spec has it). The spec's own mode keeps its
    parameters (its hard fraction); another starts from the engine's
    defaults."""
    from .spec import Relaxation

    mode, binarized = relax.removesuffix(BINARIZED), relax.endswith(BINARIZED)
    relaxation = spec.relax if mode == spec.relax.mode else Relaxation(mode)
    return spec.replace(relax=relaxation).with_rounding(binarized)


ROUNDS = 5  # alternating rounds when several presets or relaxations are timed side by side


def bench_preset(
    name: str | Preset,
    threads: int,
    epochs: int,
    warmup: int,
    relaxes: tuple[str, ...] = (),
) -> list[dict[str, Any]]:
    """One row per relaxation (the preset's own when `relaxes` is empty) of a preset (or
    its name; a run's preset, `logicars.runs.load_run`, and a task kind's,
    `logicars.presets.resolve_preset`, time the same way). Several are
    timed in alternating rounds on the same batch, so that a busy spell of a shared
    host does not land on one of them only."""
    return bench_presets([name], threads, epochs, warmup, relaxes)


def bench_presets(
    names: Sequence[str | Preset],
    threads: int,
    epochs: int,
    warmup: int,
    relaxes: tuple[str, ...] = (),
) -> list[dict[str, Any]]:
    """`bench_preset`'s rows for several presets, every preset and relaxation timed in
    the same alternating rounds: the ratio of two presets' rates (the cost of a wide
    model per gate-cell against a narrow one's) then comes from the same spells of a
    shared host, as that of two relaxations does. Each preset's `vs_` column compares
    its relaxations with its first."""
    import numpy as np

    from .model import Model
    from .presets import get_preset
    from .runtime import set_num_threads

    set_num_threads(threads)
    entries = []  # (preset, spec, model, x, y), in row order
    for name in names:
        preset = get_preset(name) if isinstance(name, str) else name
        x, y = preset.task().sample(np.random.default_rng(23))
        for spec in [_variant(preset.spec, r) for r in relaxes] or [preset.spec]:
            model = Model(spec, seed=23)
            # Timed past the relaxation's warmup, where a run spends most of its epochs.
            if model.spec.relax.warmup:
                state = model.optimizer_state()
                state["t"] = np.array(model.spec.relax.warmup, dtype=np.int64)
                model.set_optimizer_state(state)
            for _ in range(warmup):
                model.train_step(x, y, lr=preset.lr, weight_decay=preset.weight_decay)
            entries.append((preset, spec, model, x, y))
    rounds = ROUNDS if len(entries) > 1 else 1
    times: list[list[float]] = [[] for _ in entries]
    for r in range(rounds):
        for (preset, _, model, x, y), t in zip(entries, times):
            # After another model's round, this one's buffers come back from memory:
            # its first epoch of the round is not timed (else a wide model, whose
            # buffers are larger, pays more for the turn-taking than a narrow one).
            timed = epochs * (r + 1) // rounds - epochs * r // rounds
            for i in range(timed + (rounds > 1)):
                t0 = time.perf_counter()
                model.train_step(x, y, lr=preset.lr, weight_decay=preset.weight_decay)
                if i > 0 or rounds == 1:
                    t.append(time.perf_counter() - t0)
    peak, how = cpu_peak_fma_per_s(threads)
    rows: list[dict[str, Any]] = []
    for (preset, spec, _, _, _), t in zip(entries, times):
        gce = preset.gate_cell_evals_per_epoch()
        ms = statistics.median(t) * 1e3
        achieved = gce * OPS_PER_GATE_CELL / (ms / 1e3)
        rows.append(
            {
                "preset": preset.name,
                "relax": spec.relax.label() + (BINARIZED if spec.binarize_states else ""),
                # The rounding's period: a `+binarized` row of the lizard rounds in every
                # second epoch only, as its preset trains.
                "binarize_every": spec.binarize_every,
                # Cells per engine chunk: the checkerboard computes 128 at a time, the
                # lizard 80, the others 64.
                "chunk_cells": spec.chunk_cells,
                "threads": threads,
                "ms_per_epoch": round(ms, 3),
                "ms_min": round(min(t) * 1e3, 3),
                "epochs_timed": epochs,
                "gate_cell_evals_per_epoch": gce,
                "gce_per_s": round(gce / (ms / 1e3)),
                "fma_fraction_of_peak": round(achieved / peak, 4) if peak else None,
                "peak_basis": how,
                "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
            }
        )
    per_preset = max(1, len(relaxes))
    for first in range(0, len(rows), per_preset):
        base, *others = rows[first : first + per_preset]
        for row in others:
            row[f"vs_{base['relax']}"] = round(row["ms_per_epoch"] / base["ms_per_epoch"], 3)
    return rows


def expected_wall_time(
    name: str, seeds: Sequence[int], threads: int, out: str | None = None
) -> dict[str, Any]:
    """Trains preset (or task kind, or experiment file) `name` on its defaults from each
    of `seeds`, one run at a time on `threads` engine threads, into `out` (a sweep
    directory, resumable; default a temporary one) and returns the runs, the working
    circuits, the total wall seconds and their ratio (None when nothing works)."""
    from .sweep import sweep

    with tempfile.TemporaryDirectory(prefix="logicars-bench-") as tmp:
        result = sweep(
            {"preset": name, "seed": list(seeds)},
            out=out or tmp,
            workers=1,
            threads_per_run=threads,
            quiet=True,
        )
        (cell,) = result.report.cells
    done = [r for r in result.rows if r["status"] == "done"]
    return {
        "runs": len(done),
        "working": cell["solved"],
        "wall_seconds": round(sum(r["wall_seconds"] for r in done), 3),
        "seconds_per_working": cell["seconds_per_solved"],
    }
