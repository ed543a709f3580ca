"""The training loop: run directory, resume identity, determinism, early stop, Ctrl-C."""

from __future__ import annotations

import csv
import dataclasses
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from conftest import PAPER_LIZARD
from PIL import Image

import logicars
from logicars.circuit.evaluate import evaluate, generalised
from logicars.circuit.export import active_gates
from logicars.datasets import checkerboard_target, gol_boards, gol_step, random_bits
from logicars.errors import CheckpointError
from logicars.model import load_checkpoint
from logicars.presets import preset_file_text, read_experiment
from logicars.runs import load_run
from logicars.train import (
    EpochMetrics,
    RunResult,
    plot_losses,
    train,
    write_rollout_gif,
)
from logicars.training.config import FINAL_REPAIR_BUDGET

SUMMARY_KEYS = {
    "preset",
    "seed",
    "epochs",
    "final_soft_loss",
    "final_hard_loss",
    "first_epoch_hard_zero",
    "wall_seconds",
    "active_gates",
    "threads",
    "build_info",
}
RUN_FILES = {"metrics.csv", "model.safetensors", "summary.json", "loss.png", "rollout.gif"}


def tiny_async_preset() -> logicars.Preset:
    """A checkerboard-async stand-in small enough for a few ms per epoch."""
    spec = logicars.ModelSpec(
        channels=2,
        perceive=logicars.PerceiveSpec(2, [9, 8, 4, 2], ["first_kernel", "unique", "unique"]),
        update=logicars.UpdateSpec([10, 8, 4, 2], ["unique", "unique", "unique"]),
        num_steps=4,
        fire_rate=0.6,
    )
    return logicars.Preset(
        name="checkerboard-async",
        spec=spec,
        batch=2,
        height=6,
        width=6,
        epochs=6,
        description="tiny async test preset",
    )


def same_state(a: logicars.Model, b: logicars.Model) -> bool:
    for get in (lambda m: m.params(), lambda m: m.wires(), lambda m: m.optimizer_state()):
        da, db = get(a), get(b)
        if da.keys() != db.keys() or not all(np.array_equal(da[k], db[k]) for k in da):
            return False
    return a.mask_state == b.mask_state


def losses(result: RunResult) -> list[tuple[int, float, float]]:
    return [(r.epoch, r.soft_loss, r.hard_loss) for r in result.metrics]


@pytest.fixture(scope="module")
def gol_run(tmp_path_factory: pytest.TempPathFactory) -> RunResult:
    return train("gol", epochs=3, out=tmp_path_factory.mktemp("runs") / "gol", quiet=True)


def test_run_directory(gol_run: RunResult) -> None:
    d = gol_run.run_dir
    assert RUN_FILES <= {p.name for p in d.iterdir()}
    # no temp files left; the marker says the directory is a run (logicars.files)
    assert [p.name for p in d.iterdir() if p.name.startswith(".")] == [".logicars-run"]

    summary = json.loads((d / "summary.json").read_text())
    assert SUMMARY_KEYS <= set(summary)
    assert summary == gol_run.summary
    seed = logicars.get_preset("gol").seed  # the preset's default seed
    assert (summary["preset"], summary["seed"], summary["epochs"]) == ("gol", seed, 3)
    assert summary["hard_eval"] == evaluate(gol_run.model, logicars.get_preset("gol")).to_dict()
    assert summary["final_hard_loss"] == gol_run.metrics[-1].hard_loss
    assert summary["final_soft_loss"] == gol_run.metrics[-1].soft_loss
    assert summary["threads"] == logicars.num_threads()
    assert summary["build_info"] == logicars.build_info()
    assert summary["interrupted"] is False
    assert summary["active_gates"] == active_gates(gol_run.model)

    with open(d / "metrics.csv", newline="") as f:
        rows = list(csv.reader(f))
    assert rows[0] == list(EpochMetrics._fields)
    assert rows[0][4:] == ["attempt", "lr", "validation", "repair"]
    assert [int(r[0]) for r in rows[1:]] == [1, 2, 3]
    lr = logicars.get_preset("gol").lr
    assert [(int(r[4]), float(r[5])) for r in rows[1:]] == [(1, lr)] * 3
    assert [(float(r[1]), float(r[2])) for r in rows[1:]] == [
        (m.soft_loss, m.hard_loss) for m in gol_run.metrics
    ]
    elapsed = [float(r[3]) for r in rows[1:]]
    assert elapsed == sorted(elapsed) and elapsed[0] >= 0

    assert same_state(logicars.Model.load(d / "model.safetensors"), gol_run.model)
    _, extra = load_checkpoint(d / "model.safetensors")
    assert extra["epoch"] == 3 and extra["preset"]["name"] == "gol"

    with Image.open(d / "loss.png") as im:
        assert im.format == "PNG"
    with Image.open(d / "rollout.gif") as im:
        assert im.format == "GIF"
        assert 1 <= im.n_frames <= logicars.get_preset("gol").spec.num_steps + 1
        assert min(im.size) >= 200  # a 3x3 board scaled up to be visible


def test_metrics_match_engine_losses(gol_run: RunResult) -> None:
    """The loop is one train_step per epoch on `default_rng(seed)` samples: replay it."""

    preset = logicars.get_preset("gol")
    model = logicars.Model(preset.spec, preset.seed)
    rng = np.random.default_rng(preset.seed)
    data = preset.task()
    settings = {"lr": preset.lr, "weight_decay": preset.weight_decay, "beta1": preset.beta1}
    replay = [model.train_step(*data.sample(rng), **settings) for _ in range(3)]
    assert replay == [(m.soft_loss, m.hard_loss) for m in gol_run.metrics]
    assert same_state(model, gol_run.model)


@pytest.mark.parametrize("which", ["gol", "tiny-async"])
def test_resume_is_bit_identical(tmp_path: Path, which: str) -> None:
    """N epochs, then resume to N + M == N + M straight (data, masks and AdamW restored)."""
    preset = "gol" if which == "gol" else tiny_async_preset()
    straight = train(preset, epochs=6, seed=5, out=tmp_path / "straight", quiet=True)
    first = train(preset, epochs=3, seed=5, out=tmp_path / "split", quiet=True)
    resumed = train(preset, epochs=6, resume=first.run_dir, quiet=True)
    assert resumed.run_dir == first.run_dir
    assert same_state(straight.model, resumed.model)
    assert losses(straight) == losses(resumed)
    if which == "tiny-async":
        assert resumed.model.mask_state == (5, 6)  # one mask stream per epoch
    with open(resumed.run_dir / "metrics.csv") as f:
        assert len(f.read().splitlines()) == 1 + 6
    assert logicars.Model.load(resumed.checkpoint).optimizer_state()["t"] == 6


def test_resume_from_periodic_checkpoint_after_crash(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A run that dies after epoch 5 resumes from its epoch-4 checkpoint, identically."""
    preset = tiny_async_preset()
    straight = train(preset, epochs=6, out=tmp_path / "straight", quiet=True)

    real_step = logicars.Model.train_step
    calls = []

    def dying_step(
        self: logicars.Model, x: object, y: object, **opts: float
    ) -> tuple[float, float]:
        calls.append(1)
        if len(calls) == 6:
            raise RuntimeError("simulated crash")
        return real_step(self, x, y, **opts)

    monkeypatch.setattr(logicars.Model, "train_step", dying_step)
    with pytest.raises(RuntimeError, match="simulated crash"):
        train(preset, epochs=6, out=tmp_path / "crashed", quiet=True, checkpoint_every=2)
    monkeypatch.undo()
    assert load_checkpoint(tmp_path / "crashed" / "model.safetensors")[1]["epoch"] == 4
    with open(tmp_path / "crashed" / "metrics.csv") as f:
        assert len(f.read().splitlines()) == 1 + 5  # epoch 5 was logged, not checkpointed

    resumed = train(None, resume=tmp_path / "crashed", quiet=True)
    assert same_state(straight.model, resumed.model)
    assert losses(straight) == losses(resumed)
    with open(tmp_path / "crashed" / "metrics.csv") as f:
        assert [r.split(",")[0] for r in f.read().splitlines()[1:]] == [str(i) for i in range(1, 7)]


def test_same_seed_same_result_other_seed_differs(tmp_path: Path) -> None:
    preset = tiny_async_preset()
    a = train(preset, epochs=3, seed=7, out=tmp_path / "a", quiet=True)
    b = train(preset, epochs=3, seed=7, out=tmp_path / "b", quiet=True)
    c = train(preset, epochs=3, seed=8, out=tmp_path / "c", quiet=True)
    assert same_state(a.model, b.model) and losses(a) == losses(b)
    assert not same_state(a.model, c.model)


def test_thread_count_does_not_change_results(tmp_path: Path) -> None:
    before = logicars.num_threads()
    a = train(tiny_async_preset(), epochs=3, out=tmp_path / "a", quiet=True, threads=1)
    assert a.summary["threads"] == 1
    assert logicars.num_threads() == before  # restored after the run
    b = train(tiny_async_preset(), epochs=3, out=tmp_path / "b", quiet=True, threads=2)
    assert same_state(a.model, b.model)


def test_lr_override(tmp_path: Path) -> None:
    r = train(tiny_async_preset(), epochs=2, lr=0.01, out=tmp_path / "r", quiet=True)
    assert r.summary["lr"] == 0.01 and "lr" not in r.summary["config"]
    assert load_checkpoint(r.checkpoint)[1]["preset"]["lr"] == 0.01  # the training state's
    resumed = train(None, resume=r.run_dir, epochs=3, quiet=True)  # keeps the run's lr
    straight = train(tiny_async_preset(), epochs=3, lr=0.01, out=tmp_path / "s", quiet=True)
    assert resumed.summary["lr"] == 0.01
    assert losses(resumed) == losses(straight) and same_state(resumed.model, straight.model)


@pytest.mark.parametrize(("key", "notebook"), [("weight_decay", 0.01), ("beta1", 0.9)])
def test_optimizer_setting_is_the_runs(tmp_path: Path, key: str, notebook: float) -> None:
    """`weight_decay` and `beta1` train, are stored (summary, training state) and kept on
    resume; a checkpoint from before the option reads as the notebook's value."""
    preset = tiny_async_preset()
    r = train(preset, epochs=2, **{key: 0.0}, out=tmp_path / "r", quiet=True)
    default = train(preset, epochs=2, out=tmp_path / "d", quiet=True)
    assert (r.summary[key], default.summary[key]) == (0.0, notebook)
    assert not same_state(r.model, default.model)
    assert load_checkpoint(r.checkpoint)[1]["preset"][key] == 0.0
    resumed = train(None, resume=r.run_dir, epochs=3, quiet=True)
    straight = train(preset, epochs=3, **{key: 0.0}, out=tmp_path / "s", quiet=True)
    assert resumed.summary[key] == 0.0
    assert losses(resumed) == losses(straight) and same_state(resumed.model, straight.model)
    _without_weight_decay(default.run_dir)
    assert getattr(load_run(default.run_dir).preset, key) == notebook


def test_lr_at_follows_a_half_cosine_after_the_decay_start() -> None:
    p = dataclasses.replace(tiny_async_preset(), lr=0.06, lr_decay_from=100, lr_end=0.006)
    assert [p.lr_at(e, 300) for e in (1, 100)] == [0.06, 0.06]
    assert p.lr_at(200, 300) == pytest.approx(0.033)  # half way: the mean
    assert p.lr_at(300, 300) == pytest.approx(0.006) and p.lr_at(400, 300) == 0.006
    assert 0.006 < p.lr_at(290, 300) < p.lr_at(110, 300) < 0.06
    assert p.lr_at(150, 100) == 0.06  # a run that ends before the decay starts
    assert dataclasses.replace(p, lr_decay_from=None, lr_end=None).lr_at(300, 300) == 0.06


def test_lr_decay_trains_is_stored_and_resumes_bit_identically(tmp_path: Path) -> None:
    """The decay changes no epoch up to its start and every one after; it is stored in
    the summary and the training state; a run interrupted in the decay and resumed
    trains as one straight run; a run from before the option has none."""
    preset = tiny_async_preset()
    decay = {"lr_decay_from": 3, "lr_end": 0.001}
    plain = train(preset, epochs=6, out=tmp_path / "plain", quiet=True)
    straight = train(preset, epochs=6, **decay, out=tmp_path / "straight", quiet=True)
    # An epoch's loss is the one before its step: epoch 4's is the last step at full lr.
    assert losses(straight)[:4] == losses(plain)[:4]
    assert all(a != b for a, b in zip(losses(straight)[4:], losses(plain)[4:]))
    assert (straight.summary["lr_decay_from"], straight.summary["lr_end"]) == (3, 0.001)
    assert (plain.summary["lr_decay_from"], plain.summary["lr_end"]) == (None, None)
    recorded = load_checkpoint(straight.checkpoint)[1]["preset"]
    assert (recorded["lr_decay_from"], recorded["lr_end"]) == (3, 0.001)

    def crash_at_4(row: logicars.EpochMetrics, context: object) -> None:
        if row.epoch == 4:
            raise RuntimeError("crash")

    split = tmp_path / "split"
    with pytest.raises(RuntimeError, match="crash"):
        train(preset, epochs=6, **decay, out=split, quiet=True, callbacks=[crash_at_4])
    resumed = train(None, resume=split, quiet=True)
    assert losses(resumed) == losses(straight) and same_state(resumed.model, straight.model)
    with pytest.raises(ValueError, match="lr_decay_from and lr_end go together"):
        train(preset, epochs=2, lr_end=0.001, out=tmp_path / "x", quiet=True)
    with pytest.raises(ValueError, match="lr_end must be a finite number > 0"):
        train(preset, epochs=2, lr_decay_from=1, lr_end=-1.0, out=tmp_path / "x", quiet=True)
    _without_weight_decay(plain.run_dir)  # also drops the decay keys
    old = load_run(plain.run_dir).preset
    assert old.lr_decay_from is None and old.stall_epochs is None


def _without_weight_decay(run_dir: Path) -> None:
    """Rewrites a run's checkpoint as logicars wrote it before `weight_decay` (and the
    learning-rate decay, the stall check and `beta1`)."""
    from safetensors import safe_open
    from safetensors.numpy import load_file, save_file

    import logicars.checkpoint as ckpt_mod

    path = run_dir / "model.safetensors"
    with safe_open(str(path), framework="numpy") as f:
        meta = dict(f.metadata())
    tensors = load_file(str(path))
    extra = json.loads(meta["extra"])
    for key in ("weight_decay", "lr_decay_from", "lr_end", "stall_epochs", "stall_loss", "beta1"):
        del extra["preset"][key]
    meta["extra"] = json.dumps(extra, sort_keys=True)
    meta["checksum"] = ckpt_mod._checksum(tensors, meta)
    save_file(tensors, str(path), metadata=meta)


def _as_before_lr_left_the_spec(run_dir: Path, lr: float) -> None:
    """Rewrites a run as logicars wrote it while the learning rate was part of the model
    config: the checkpoint's config and summary.json's `config` hold it, the training
    state does not."""
    from safetensors import safe_open
    from safetensors.numpy import load_file, save_file

    import logicars.checkpoint as ckpt_mod

    path = run_dir / "model.safetensors"
    with safe_open(str(path), framework="numpy") as f:
        meta = dict(f.metadata())
    tensors = load_file(str(path))
    meta["config"] = json.dumps({**json.loads(meta["config"]), "lr": lr}, sort_keys=True)
    extra = json.loads(meta["extra"])
    del extra["preset"]["lr"]
    meta["extra"] = json.dumps(extra, sort_keys=True)
    meta["checksum"] = ckpt_mod._checksum(tensors, meta)
    save_file(tensors, str(path), metadata=meta)
    summary = json.loads((run_dir / "summary.json").read_text())
    summary["config"]["lr"] = lr
    (run_dir / "summary.json").write_text(json.dumps(summary))


def test_a_run_from_before_the_learning_rate_left_the_spec_loads_and_resumes(
    tmp_path: Path,
) -> None:
    old = train(tiny_async_preset(), epochs=2, lr=0.01, out=tmp_path / "old", quiet=True)
    _as_before_lr_left_the_spec(old.run_dir, 0.01)
    loaded = load_run(old.run_dir)
    assert loaded.preset is not None and loaded.preset.lr == 0.01
    assert loaded.summary is not None and loaded.summary["config"]["lr"] == 0.01
    assert same_state(loaded.model, old.model)
    resumed = train(None, resume=old.run_dir, epochs=3, quiet=True)
    straight = train(tiny_async_preset(), epochs=3, lr=0.01, out=tmp_path / "s", quiet=True)
    assert resumed.summary["lr"] == 0.01
    assert losses(resumed) == losses(straight) and same_state(resumed.model, straight.model)


def test_early_stop(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Stops once the hard loss has been 0 for K consecutive epochs."""
    hard = iter([5.0, 0.0, 3.0, 0.0, 0.0, 0.0, 0.0, 0.0])

    def fake_step(self: logicars.Model, x: object, y: object, **opts: float) -> tuple[float, float]:
        return 1.0, next(hard)

    monkeypatch.setattr(logicars.Model, "train_step", fake_step)
    r = train("gol", epochs=50, early_stop=3, out=tmp_path / "r", quiet=True)
    assert r.early_stopped and not r.interrupted
    assert [m.hard_loss for m in r.metrics] == [5.0, 0.0, 3.0, 0.0, 0.0, 0.0]
    assert r.summary["first_epoch_hard_zero"] == 2
    assert r.summary["epochs"] == 6 and r.summary["early_stopped"] is True
    with pytest.raises(ValueError, match="already stopped early"):
        train("gol", resume=r.run_dir, quiet=True)


def test_init_starts_from_the_npz(tmp_path: Path) -> None:
    """`init` trains the npz's wiring and logits (e.g. the notebook's own initialisation)
    on the preset's data, exactly as a hand-written loop over that model would; the seed
    still fixes the data and the async masks, and the run resumes bit-identically."""
    preset = tiny_async_preset()
    start = logicars.Model(preset.spec, seed=9)
    start.set_params({k: v + np.float32(0.25) * (k[-1] == "0") for k, v in start.params().items()})
    npz = tmp_path / "start.npz"
    start.to_npz(npz)
    with np.load(npz) as z:  # a config from before the learning rate left it
        arrays = dict(z)
    arrays["config"] = np.array(json.dumps({**json.loads(str(arrays["config"])), "lr": 0.5}))
    np.savez(npz, **arrays)

    r = train(preset, epochs=3, seed=4, init=npz, out=tmp_path / "r", quiet=True)
    assert r.summary["init"] == str(npz) and r.summary["seed"] == 4
    assert r.summary["lr"] == preset.lr  # the preset's lr, not the npz's
    for name, w in start.wires().items():
        assert np.array_equal(r.model.wires()[name], w), name
    assert any(  # not the wiring a fresh Model(spec, 4) would draw
        not np.array_equal(w, logicars.Model(preset.spec, seed=4).wires()[k])
        for k, w in start.wires().items()
    )

    by_hand = logicars.Model.from_parts(
        preset.spec,
        [start.wires()[f"perceive_wires_{i}"] for i in range(3)],
        [start.wires()[f"update_wires_{i}"] for i in range(3)],
        start.params(),
        mask_seed=4,
    )
    dataset, rng = preset.task(), np.random.default_rng(4)
    expected = [by_hand.train_step(*dataset.sample(rng)) for _ in range(3)]
    assert [(m.soft_loss, m.hard_loss) for m in r.metrics] == expected
    assert same_state(r.model, by_hand)

    part = train(preset, epochs=2, seed=4, init=npz, out=tmp_path / "part", quiet=True)
    resumed = train(None, resume=part.run_dir, epochs=3, quiet=True)
    assert losses(resumed) == losses(r) and same_state(resumed.model, r.model)
    assert resumed.summary["init"] == str(npz)


def test_the_notebook_lizard_start_is_shipped_for_init(tmp_path: Path) -> None:
    """Every preset's default start is a fresh wiring of seed 0; the notebook's seed-23
    lizard draw stays in the package, and an experiment file that names it as its `init`
    trains from it unless a seed is given."""
    assert all(p.init is None and p.seed == 0 for p in logicars.PRESETS.values())
    # The paper lizard's file (examples/lizard-grow), on the notebook's training rule.
    paper = PAPER_LIZARD.read_text()
    path = tmp_path / "notebook.toml"
    path.write_text(
        paper.replace("binarize_states = true\n", "binarize_states = false\n")
        .replace("binarize_every = 2\n", "")
        .replace('relax = "truth-table"\n', 'relax = "softmax"\n')
        .replace("hard_fraction = 0.3\n", "")
        .replace("warmup = 3000\n", "")
        .replace("drift_budget = 400000\n", "drift_budget = 0\n")
        .replace("[training]\n", '[training]\ninit = "lizard_notebook_seed23.npz"\n')
    )
    preset = read_experiment(path).preset
    shipped_path = preset.init_path()
    assert shipped_path is not None and shipped_path.is_file()
    shipped = logicars.Model.from_npz(shipped_path)
    # The same model; the chunk width is the run's, as its relaxation is (the file's: 80).
    assert shipped.spec.replace(chunk_cells=80).to_dict() == preset.spec.to_dict()

    r = train(path, epochs=1, out=tmp_path / "default", quiet=True)
    assert r.summary["init"] == str(shipped_path) and r.summary["relax"]["mode"] == "softmax"
    assert "binarize_states" not in r.summary["config"]  # the notebook's training rule
    for name, w in shipped.wires().items():
        assert np.array_equal(r.model.wires()[name], w), name

    seeded = train(path, epochs=1, seed=3, out=tmp_path / "seeded", quiet=True)
    assert seeded.summary["init"] is None
    fresh = logicars.Model(preset.spec, seed=3).wires()
    assert all(np.array_equal(seeded.model.wires()[k], w) for k, w in fresh.items())
    # The paper lizard's own relaxation has 4 parameters per gate, not the npz's 16 logits.
    with pytest.raises(ValueError, match="16 parameters per gate .*'truth-table' takes 4"):
        train(
            PAPER_LIZARD,
            epochs=1, init=shipped_path, out=tmp_path / "tt", quiet=True,
        )  # fmt: skip


def test_init_errors(tmp_path: Path, gol_run: RunResult) -> None:
    other = tmp_path / "other.npz"
    logicars.Model(tiny_async_preset().spec).to_npz(other)
    with pytest.raises(ValueError, match="is not a model of preset 'gol'.*channels 2"):
        train("gol", init=other, out=tmp_path / "never", quiet=True)
    with pytest.raises(CheckpointError, match="no such file"):
        train("gol", init=tmp_path / "missing.npz", out=tmp_path / "never", quiet=True)
    with pytest.raises(ValueError, match="init starts a new run"):
        train("gol", init=other, resume=gol_run.run_dir, quiet=True)
    assert not (tmp_path / "never").exists()


def test_default_run_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    r = train(tiny_async_preset(), epochs=1, quiet=True)
    assert r.run_dir.parent == Path("runs")
    assert r.run_dir.name.startswith("checkerboard-async-")
    assert RUN_FILES <= {p.name for p in r.run_dir.iterdir()}
    r2 = train(tiny_async_preset(), epochs=1, quiet=True)  # same second: a new directory
    assert r2.run_dir != r.run_dir


# ---- errors before training -----------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "exc", "match"),
    [
        ({"epochs": 0}, ValueError, "epochs must be >= 1"),
        ({"epochs": -3}, ValueError, "epochs must be >= 1"),
        ({"epochs": 2.5}, TypeError, "epochs must be an integer"),
        ({"epochs": True}, TypeError, "epochs must be an integer"),
        ({"lr": 0}, ValueError, "lr must be a finite number > 0"),
        ({"lr": -1.0}, ValueError, "lr must be a finite number > 0"),
        ({"lr": float("nan")}, ValueError, "lr must be a finite number > 0"),
        ({"lr": float("inf")}, ValueError, "lr must be a finite number > 0"),
        ({"lr": "0.1"}, TypeError, "lr must be a number"),
        ({"seed": -1}, ValueError, "seed must be >= 0"),
        ({"threads": -1}, ValueError, "threads must be between 0 and 1024"),
        ({"threads": 5000}, ValueError, "threads must be between 0 and 1024"),
        ({"early_stop": 0}, ValueError, "early_stop must be >= 1"),
        ({"checkpoint_every": 0}, ValueError, "checkpoint_every must be >= 1"),
    ],
)
def test_bad_overrides(tmp_path: Path, kwargs: dict, exc: type, match: str) -> None:
    with pytest.raises(exc, match=match):
        train("gol", out=tmp_path / "never", quiet=True, **kwargs)
    assert not (tmp_path / "never").exists()


def test_unknown_preset_lists_valid_ones(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="unknown preset 'nope'; valid presets: gol, checker"):
        train("nope", out=tmp_path / "never")
    with pytest.raises(ValueError, match="preset is required"):
        train(None)
    assert not (tmp_path / "never").exists()


def test_unwritable_out(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    with pytest.raises(ValueError, match="exists and is not a directory"):
        train("gol", epochs=1, out=blocker, quiet=True)
    with pytest.raises(ValueError, match="not a directory"):
        train("gol", epochs=1, out=blocker / "sub", quiet=True)


def test_refuses_to_overwrite_a_run(gol_run: RunResult) -> None:
    with pytest.raises(ValueError, match="already holds a run"):
        train("gol", epochs=1, out=gol_run.run_dir, quiet=True)


def make_other_run(tmp_path: Path) -> Path:
    other = tmp_path / "other"
    other.mkdir()
    logicars.Model(logicars.get_preset("gol").spec, 0).save(other / "model.safetensors")
    return other


def test_resume_into_another_directory(tmp_path: Path, gol_run: RunResult) -> None:
    """Resuming with `out` continues the run in a new directory, leaving the old one."""
    before = (gol_run.run_dir / "metrics.csv").read_text()
    r = train(None, resume=gol_run.run_dir, epochs=4, out=tmp_path / "continued", quiet=True)
    assert r.summary["epochs"] == 4 and len(r.metrics) == 4
    assert (gol_run.run_dir / "metrics.csv").read_text() == before
    assert logicars.Model.load(gol_run.checkpoint).optimizer_state()["t"] == 3


def test_resume_errors(tmp_path: Path, gol_run: RunResult) -> None:
    with pytest.raises(ValueError, match="is a run of preset 'gol', not 'checkerboard'"):
        train("checkerboard", resume=gol_run.run_dir)
    seed = gol_run.summary["seed"]
    with pytest.raises(ValueError, match=f"differs from the resumed run's seed {seed}"):
        train("gol", resume=gol_run.run_dir, seed=seed + 1, epochs=9)
    with pytest.raises(ValueError, match="already trained 3 of 3 epochs"):
        train("gol", resume=gol_run.run_dir)
    with pytest.raises(CheckpointError, match="no such checkpoint"):
        train("gol", resume=tmp_path / "missing")
    with pytest.raises(ValueError, match="already holds another run"):
        train("gol", resume=gol_run.run_dir, epochs=5, out=make_other_run(tmp_path))
    plain = tmp_path / "plain.safetensors"
    gol_run.model.save(plain)
    with pytest.raises(CheckpointError, match="no training state"):
        train("gol", resume=plain, epochs=5)


# ---- outputs --------------------------------------------------------------------------


def test_active_gates_counts_kernels_not_channels() -> None:
    model = logicars.Model(tiny_async_preset().spec, 0)
    assert active_gates(model) == 0  # every gate starts as pass-through A
    params = model.params()
    params["perceive_logits_0"][1, 2, :] = 0.0
    params["perceive_logits_0"][1, 2, 6] = 1.0  # XOR in kernel 1: one gate, not one per channel
    params["update_logits_1"][0, :] = 0.0
    params["update_logits_1"][0, 5] = 1.0  # B: a pass-through, not counted
    params["update_logits_1"][1, :] = 0.0  # all ties: argmax 0 (FALSE) counts
    model.set_params(params)
    assert active_gates(model) == 2


def test_loss_plot_handles_zeros(tmp_path: Path) -> None:
    rows = [EpochMetrics(i + 1, 10.0 / (i + 1), max(0.0, 5.0 - i), 0.1 * i) for i in range(10)]
    plot_losses(rows, tmp_path / "a.png", title="zeros")
    plot_losses([EpochMetrics(1, 0.0, 0.0, 0.0)], tmp_path / "b.png")
    for name in ("a.png", "b.png"):
        with Image.open(tmp_path / name) as im:
            assert im.format == "PNG"


def test_rgb_rollout_gif(tmp_path: Path) -> None:
    spec = logicars.ModelSpec(
        channels=3,
        perceive=logicars.PerceiveSpec(1, [9, 8, 4, 2], ["first_kernel", "unique", "unique"]),
        update=logicars.UpdateSpec([9, 6, 3], ["unique", "unique"]),
        num_steps=2,
        loss_channels=[0, 1, 2],
    )
    preset = logicars.Preset("colored-g", spec, 1, 16, 16, 1, "tiny colored-g stand-in")
    model = logicars.Model(spec, 0)
    rng = np.random.default_rng(0)
    model.set_params({k: rng.normal(0, 2, v.shape) for k, v in model.params().items()})
    frames = write_rollout_gif(model, preset, tmp_path / "g.gif")
    assert frames.shape == (3, 16, 16, 3) and frames.dtype == np.uint8
    with Image.open(tmp_path / "g.gif") as im:
        assert im.size == (256, 256 + 14)  # 16 cells, 16 pixels each, and the step bar
        assert im.n_frames == 3  # every step, the last included
        im.seek(im.n_frames - 1)
        last = np.asarray(im.convert("RGB"))[:256:16, ::16]
    np.testing.assert_array_equal(last, frames[-1])


def test_gif_does_not_touch_training_state(tmp_path: Path) -> None:
    preset = tiny_async_preset()
    model = logicars.Model(preset.spec, 3)
    before = model.mask_state
    write_rollout_gif(model, preset, tmp_path / "r.gif")
    assert model.mask_state == before


# ---- Ctrl-C ---------------------------------------------------------------------------


def _wait_for_rows(path: Path, rows: int, proc: subprocess.Popen, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            pytest.fail(f"training exited early: {proc.communicate()}")
        if path.exists() and len(path.read_text().splitlines()) > rows:
            return
        time.sleep(0.05)
    proc.kill()
    pytest.fail("training did not start in time")


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
def test_sigint_finishes_epoch_saves_and_exits_0(tmp_path: Path) -> None:
    out = tmp_path / "run"
    proc = subprocess.Popen(
        [sys.executable, "-m", "logicars", "train", "gol", "--epochs", "1000000", "--quiet",
         "--out", str(out)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )  # fmt: skip
    _wait_for_rows(out / "metrics.csv", 3, proc)
    proc.send_signal(signal.SIGINT)
    stdout, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 0, stderr
    assert "Traceback" not in stderr
    assert "interrupted" in stdout and "--resume" in stdout

    model, extra = load_checkpoint(out / "model.safetensors")
    summary = json.loads((out / "summary.json").read_text())
    assert summary["interrupted"] is True and extra["interrupted"] is True
    done = summary["epochs"]
    assert 3 <= done < 1000000 and extra["epoch"] == done
    assert model.optimizer_state()["t"] == done
    with open(out / "metrics.csv") as f:
        assert len(f.read().splitlines()) == done + 1
    assert RUN_FILES <= {p.name for p in out.iterdir()}

    resumed = train(None, resume=out, epochs=done + 2, quiet=True)
    assert resumed.summary["epochs"] == done + 2 and not resumed.interrupted


# ---- the drift search at the end of an unsolved run ----------------------------------


def _drifts(summary: dict) -> list[dict]:
    return [r for r in summary["repairs"] if r.get("method") == "drift"]


def test_drift_budget_searches_an_unsolved_run_and_a_larger_one_goes_on(tmp_path: Path) -> None:
    """A run that ends its epochs unsolved runs the drift search (a `repairs` record); a
    resumed run given a larger budget goes on with the same search, to the gates and
    truth-table parameters of a run straight through. Off unless the preset or the call
    asks for it."""
    kw: dict = {"epochs": 4, "relax": "truth-table", "quiet": True}
    a = train("gol", drift_budget=300, out=tmp_path / "a", **kw)
    (first,) = _drifts(a.summary)
    assert first["evaluations"] == 300 and first["wrong_after"] <= first["wrong_before"]
    assert a.summary["drift_budget"] == 300 and a.summary["solved_epoch"] is None
    with pytest.raises(ValueError, match="already trained"):
        train(None, resume=tmp_path / "a", quiet=True)  # its search is done
    b = train(None, resume=tmp_path / "a", drift_budget=1500, quiet=True)
    c = train("gol", drift_budget=1500, out=tmp_path / "c", **kw)
    assert [r["evaluations"] for r in _drifts(b.summary)] == [300, 1200]
    (straight,) = _drifts(c.summary)
    assert straight["wrong_after"] == _drifts(b.summary)[-1]["wrong_after"]
    assert straight["wrong_after"] < first["wrong_before"]
    pb, pc = b.model.params(), c.model.params()
    assert all(np.array_equal(pb[k], pc[k]) for k in pb)
    assert _drifts(train("gol", out=tmp_path / "d", **kw).summary) == []


def test_the_wall_time_counts_the_search_that_ends_a_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`wall_seconds` (what `sweep` and `bench --to-working` divide by the working
    circuits) includes the drift search after the last epoch, and a resume that goes on
    with it adds its own seconds to the earlier ones."""
    import importlib

    policies = importlib.import_module("logicars.training.policies")

    def slow(real: Callable[..., object]) -> Callable[..., object]:
        def slow_repair(*args: object, **kw: object) -> object:
            time.sleep(0.3)
            return real(*args, **kw)

        return slow_repair

    # The greedy repair, and the drift search on its inputs.
    monkeypatch.setattr(policies, "repair_circuit", slow(policies.repair_circuit))
    monkeypatch.setattr(policies, "repair_on", slow(policies.repair_on))
    kw: dict = {"epochs": 2, "relax": "truth-table", "quiet": True}
    a = train("gol", drift_budget=50, out=tmp_path / "a", **kw)
    searches = len(a.summary["repairs"])  # the final greedy repair, if any, and the drift
    epochs_s = a.metrics[-1].elapsed_s
    assert a.summary["wall_seconds"] >= epochs_s + 0.3 * searches
    b = train(None, resume=tmp_path / "a", drift_budget=100, quiet=True)
    assert len(b.summary["repairs"]) == searches + 1
    assert b.summary["wall_seconds"] >= a.summary["wall_seconds"] + 0.3


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
def test_sigint_during_the_drift_search_stops_it_and_resume_goes_on(tmp_path: Path) -> None:
    out = tmp_path / "run"
    argv = ["train", "gol", "--epochs", "3", "--relax", "truth-table", "--quiet"]
    proc = subprocess.Popen(
        [sys.executable, "-m", "logicars", *argv, "--drift-budget", "100000000", "--out", str(out)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    _wait_for_rows(out / "metrics.csv", 3, proc)  # the epochs are done: the search runs
    time.sleep(1.5)
    proc.send_signal(signal.SIGINT)
    stdout, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 0, stderr
    assert "interrupted" in stdout and "--resume" in stdout
    summary = json.loads((out / "summary.json").read_text())
    (cut,) = _drifts(summary)
    assert summary["interrupted"] is True and 0 < cut["evaluations"] < 100_000_000
    spent = cut["evaluations"]
    resumed = train(None, resume=out, drift_budget=spent + 500, quiet=True)
    assert not resumed.interrupted
    assert [r["evaluations"] for r in _drifts(resumed.summary)] == [spent, 500]
    straight = train("gol", epochs=3, relax="truth-table", drift_budget=spent + 500,
                     out=tmp_path / "straight", quiet=True)  # fmt: skip
    got, want = resumed.model.hard_ops(), straight.model.hard_ops()
    assert got.keys() == want.keys()
    assert all(np.array_equal(v, want[k]) for k, v in got.items())


def test_a_run_with_a_drift_budget_ends_with_its_lowest_circuit_when_it_scores_better(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An unsolved run with a drift budget keeps the parameters of its first lowest
    training hard loss (those after the epoch before it) and ends with them when they
    score better on the validation check; its search starts there. A run stopped by a
    callback and resumed does the same; a lost lowest.safetensors stops the resume."""
    import importlib

    policies = importlib.import_module("logicars.training.policies")
    kw: dict = {"epochs": 6, "relax": "truth-table", "seed": 3, "quiet": True}
    after: list[dict[str, np.ndarray]] = []  # the parameters after each epoch
    plain = train("gol", out=tmp_path / "plain",
                  callbacks=[lambda row, c: after.append(c.model.params())], **kw)  # fmt: skip
    after.insert(0, logicars.Model(plain.model.spec, 3).params())  # the start
    hard = [m.hard_loss for m in plain.metrics]
    epoch = hard.index(min(hard)) + 1
    lowest = after[epoch - 1]
    assert plain.summary["kept_lowest"] is None  # no drift budget: nothing tracked

    def same(a: dict[str, np.ndarray], b: dict[str, np.ndarray]) -> bool:
        return all(np.array_equal(a[k], b[k]) for k in a)

    def score(model: logicars.Model, preset: object) -> list[int]:
        return [0, 0 if same(model.params(), lowest) else 1]

    monkeypatch.setattr(policies, "validation_score", score)
    a = train("gol", out=tmp_path / "a", drift_budget=1, **kw)
    assert a.summary["kept_lowest"] == epoch
    (search,) = _drifts(a.summary)
    kept = logicars.Model(plain.model.spec, 3)
    kept.set_params(lowest)
    check = evaluate(kept, logicars.get_preset("gol"), samples=64, seed=1)
    assert search["wrong_before"] == check.wrong_cells

    def stop_at_3(row: EpochMetrics, context: object) -> None:
        if row.epoch == 3:
            raise RuntimeError("stop")  # a callback's exception: checkpoint, then out

    with pytest.raises(RuntimeError, match="stop"):
        train("gol", out=tmp_path / "b", drift_budget=1, callbacks=[stop_at_3], **kw)
    gone = tmp_path / "gone"
    shutil.copytree(tmp_path / "b", gone)
    b = train(None, resume=tmp_path / "b", epochs=6, quiet=True)
    assert b.summary["kept_lowest"] == epoch and _drifts(b.summary) == _drifts(a.summary)
    assert same(b.model.params(), a.model.params())
    if epoch <= 3:  # the lowest came before the stop: the resumed run reads it
        (gone / "lowest.safetensors").unlink()
        with pytest.raises(CheckpointError, match="lowest circuit"):
            train(None, resume=gone, epochs=6, quiet=True)

    monkeypatch.setattr(policies, "validation_score", lambda m, p: [0, 1 - score(m, p)[1]])
    c = train("gol", out=tmp_path / "c", drift_budget=1, **kw)
    assert c.summary["kept_lowest"] is None  # the last scores better: kept


# ---- long trainings -------------------------------------------------------------------


# The default runs (seed 0: what the README and the shipped circuits train), and seeds
# that no option was chosen on: outside the tuning seeds (0-19) and the reporting seeds
# (100-139) of docs/results.md. SLOW_SEEDS were run once before the test named them: seeds
# 200 and 201 of each preset (2026-11-28; the lizard's 200 alone, for time: 13,860
# epochs), and on the defaults of 2026-11-29 (pass-through logit 5, shorter attempts)
# gol's and the checkerboards' again, with the async checkerboard's 202 and 203: all of
# them solve now (docs/results.md, *The slow tests' seeds*; before, the async seeds 200
# and 202 ended 12 attempts unsolved and gol's 200 needed a drift search). colored-g's
# default regrows since 2026-11-29, many minutes a run (seed 0: 12,338 epochs, three
# attempts, 800 s on a loaded host), so its seeds 200 and 201 train the paper's growing
# only (`test_growing_only_colored_g_grows_the_g`), as they did before. The lizard's
# default grows, holds and regrows since 2026-11-30, up to 25 minutes a run, on about half
# of the reporting seeds (its default seed 0 did not grow the lizard: docs/results.md), so
# the slow tests train the paper's growing only (examples/lizard-grow) on its old default
# seed 0 and on seed 200, bit for bit the runs they trained before
# (`test_growing_only_lizard_grows_the_lizard`).
SLOW_SEEDS = {
    "gol": (200, 201),
    "checkerboard": (200, 201),
    "checkerboard-async": (200, 201, 202, 203),
    "colored-g": (),
    "lizard": (),
}
DEFAULT_RUNS = [(name, None) for name in logicars.PRESETS if name != "lizard"] + [
    (name, seed) for name in logicars.PRESETS for seed in SLOW_SEEDS[name]
]


@pytest.mark.parametrize(("name", "seed"), DEFAULT_RUNS)
@pytest.mark.slow
def test_preset_defaults_solve_the_task(tmp_path: Path, name: str, seed: int | None) -> None:
    """`train <preset>` on its defaults (and on SLOW_SEEDS): the run passes its
    validation check (possibly after a repair) and the checkpoint's hard circuit passes
    `evaluate` (all 512 Game of Life boards, 1024 fresh starts of the checkerboards, the
    growth targets). A checkerboard may miss a rare start (a rare update mask, for the
    async one): its circuits must solve 99% of the 1024 (measured 2026-11-28: the async
    seed 2 misses 4, the checkerboard's seed 201 one; docs/results.md)."""
    r = train(name, seed=seed, out=tmp_path / name, quiet=True)
    assert r.summary["solved_epoch"] is not None, r.summary
    preset = logicars.get_preset(name)
    result = evaluate(logicars.Model.load(r.checkpoint), preset)
    if name.startswith("checkerboard"):
        assert result.samples - result.solved <= result.samples // 100, result
    else:
        assert result.passed, result
    if name == "gol":
        boards = gol_boards()
        out = logicars.Model.load(r.checkpoint).rollout(boards, hard=True)
        assert np.array_equal(out, gol_step(boards))
    if name == "checkerboard":
        x = random_bits(np.random.default_rng(12345), (8, 16, 16, preset.spec.channels))
        out = logicars.Model.load(r.checkpoint).rollout(x, hard=True)
        assert all(np.array_equal(out[b, ..., 0], checkerboard_target(16, 16)) for b in range(8))


@pytest.mark.parametrize("seed", [200, 201])
@pytest.mark.slow
def test_growing_only_colored_g_grows_the_g(tmp_path: Path, seed: int) -> None:
    """examples/colored-g-grow (the paper's growing only, colored-g's default before it
    persisted) grows the G on seeds outside the tuning and reporting ranges."""
    path = Path(__file__).parents[1] / "examples" / "colored-g-grow" / "colored-g-grow.toml"
    r = train(path, seed=seed, out=tmp_path / "g", quiet=True)
    assert r.summary["solved_epoch"] is not None, r.summary
    result = evaluate(logicars.Model.load(r.checkpoint), r.preset)
    assert result.passed and result.growth is not None and result.growth.grown, result


@pytest.mark.parametrize("seed", [0, 200])
@pytest.mark.slow
def test_growing_only_lizard_grows_the_lizard(tmp_path: Path, seed: int) -> None:
    """examples/lizard-grow (the paper's growing only on the torus, the lizard preset's
    default before it regrew) grows the lizard on its old default seed and on a seed
    outside the tuning and reporting ranges."""
    r = train(PAPER_LIZARD, seed=seed, out=tmp_path / "lizard", quiet=True)
    assert r.summary["solved_epoch"] is not None, r.summary
    result = evaluate(logicars.Model.load(r.checkpoint), r.preset)
    assert result.passed and result.growth is not None and result.growth.grown, result


def test_dataclass_result_fields(gol_run: RunResult) -> None:
    assert {f.name for f in dataclasses.fields(RunResult)} >= {"run_dir", "model", "summary"}
    assert gol_run.final_hard_loss == gol_run.summary["final_hard_loss"]


# ---- SIGKILL during checkpoint writes -------------------------------------------------


def _kill_and_resume(tmp_path: Path, rng: np.random.Generator, i: int) -> None:
    """Kill a run that checkpoints every epoch at a random moment; the checkpoint on disk
    must load, and resuming from it must match training straight to the same epoch."""
    out = tmp_path / f"killed{i}"
    proc = subprocess.Popen(
        [sys.executable, "-m", "logicars", "train", "gol", "--epochs", "1000000", "--quiet",
         "--checkpoint-every", "1", "--seed", str(i), "--out", str(out)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )  # fmt: skip
    _wait_for_rows(out / "metrics.csv", 2, proc)
    if i % 2 == 0:
        # Kill the moment a checkpoint write is in progress (its temp file exists).
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if any(n.startswith(".model.safetensors.") for n in os.listdir(out)):
                break
    else:
        time.sleep(float(rng.uniform(0, 0.2)))  # anywhere in the loop
    proc.kill()
    proc.wait(timeout=30)
    model, extra = load_checkpoint(out / "model.safetensors")
    done = extra["epoch"]
    assert done >= 1 and model.optimizer_state()["t"] == done
    resumed = train(None, resume=out, epochs=done + 1, quiet=True)
    assert not list(out.glob(".*.tmp"))  # the killed writer's temp file was cleaned up
    straight = train("gol", epochs=done + 1, seed=i, out=tmp_path / f"straight{i}", quiet=True)
    assert same_state(straight.model, resumed.model)
    assert losses(straight) == losses(resumed)


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
def test_sigkill_during_checkpoint_writes_then_resume(tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    for i in range(2):  # once mid-write, once anywhere; the slow test does 20
        _kill_and_resume(tmp_path, rng, i)


@pytest.mark.slow
@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
def test_sigkill_20_of_20(tmp_path: Path) -> None:
    rng = np.random.default_rng(1)
    for i in range(20):
        _kill_and_resume(tmp_path, rng, i)


# ---- relaxations and stop-on-solve -----------------------------------------------------


def test_resume_with_gumbel_noise_is_bit_identical(tmp_path: Path) -> None:
    """The noise is keyed by (seed, step, gate): a resumed run draws what the straight
    run drew."""
    preset = tiny_async_preset()
    kw = {"relax": "gumbel-st", "tau": 0.5, "seed": 3, "quiet": True, "stop_on_solve": False}
    straight = train(preset, epochs=6, out=tmp_path / "straight", **kw)
    first = train(preset, epochs=3, out=tmp_path / "split", **kw)
    resumed = train(None, epochs=6, resume=first.run_dir, quiet=True, stop_on_solve=False)
    assert same_state(straight.model, resumed.model)
    assert losses(straight) == losses(resumed)
    other = train(preset, epochs=6, out=tmp_path / "other", **{**kw, "seed": 4})
    assert losses(other) != losses(straight)


def test_relaxation_is_stored_and_kept_on_resume(tmp_path: Path) -> None:
    r = train(
        tiny_async_preset(), epochs=2, relax="hard-st", warmup=1, out=tmp_path / "r", quiet=True
    )
    assert r.summary["relax"] == {"mode": "hard-st", "warmup": 1}
    loaded = logicars.Model.load(r.checkpoint)
    assert loaded.spec.relax == logicars.Relaxation("hard-st", tau=1.0, warmup=1)
    with pytest.raises(ValueError, match="keeps its relaxation"):
        train(None, resume=r.run_dir, epochs=4, relax="softmax", quiet=True)
    t = train(tiny_async_preset(), epochs=2, relax="truth-table", out=tmp_path / "t", quiet=True)
    assert logicars.Model.load(t.checkpoint).params()["update_logits_0"].shape == (8, 4)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        # Ranges: the settings' declarations (`TrainConfig`); what a mode takes: the engine.
        ({"relax": "bogus"}, "relax must be one of softmax"),
        ({"relax": "softmax", "tau": 2.0}, "unknown field `tau`"),
        ({"relax": "hard-st", "tau": 0.0}, "tau must be a finite number > 0"),
        ({"relax": "gumbel-st", "noise": -1.0}, "noise must be a finite number >= 0"),
        ({"relax": "truth-table-st", "warmup": 3}, "unknown field `warmup`"),
        ({"relax": "anneal", "hard_fraction": 0.5}, "unknown field `hard_fraction`"),
        (
            {"relax": "truth-table", "hard_fraction": 1.5},
            r"hard_fraction must be a number in \[0, 1\]",
        ),
    ],
)
def test_bad_relaxations(tmp_path: Path, kwargs: dict, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        train("gol", out=tmp_path / "never", quiet=True, **kwargs)
    assert not (tmp_path / "never").exists()


def test_stop_on_solve(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The run checks its hard circuit after every epoch with hard loss 0 and stops on
    the first that passes the validation check; the summary says when."""
    import importlib

    policies = importlib.import_module("logicars.training.policies")

    hard = iter([5.0, 0.0, 3.0, 0.0, 0.0, 0.0, 0.0])
    checks = []

    def fake_step(self: logicars.Model, x: object, y: object, **opts: float) -> tuple[float, float]:
        return 1.0, next(hard)

    def fake_solves(model: logicars.Model, preset: logicars.Preset, generalise: bool) -> bool:
        checks.append(1)
        return len(checks) == 3  # the third check (epoch 5) passes

    monkeypatch.setattr(logicars.Model, "train_step", fake_step)
    monkeypatch.setattr(policies, "solves", fake_solves)
    r = train("gol", epochs=50, out=tmp_path / "r", quiet=True, repair=False)
    assert [m.hard_loss for m in r.metrics] == [5.0, 0.0, 3.0, 0.0, 0.0]
    assert r.summary["solved_epoch"] == 5 and r.summary["epochs"] == 5
    assert r.summary["solved_seconds"] >= r.metrics[-1].elapsed_s  # the check included
    assert r.summary["repair"] is False and r.summary["repairs"] == []
    with pytest.raises(ValueError, match="already solved its task at epoch 5"):
        train(None, resume=r.run_dir, quiet=True)
    hard = iter([0.0, 1.0])  # noqa: F841 (read by fake_step)
    more = train(None, resume=r.run_dir, epochs=7, stop_on_solve=False, quiet=True)
    assert more.summary["epochs"] == 7 and more.summary["solved_epoch"] == 5


def _fake_repairs(
    monkeypatch: pytest.MonkeyPatch,
    hard: list[float],
    fixed_on_call: int | None,
    confirmed: bool = True,
    budgets: list[int] | None = None,
) -> list[int]:
    """Training whose hard losses are `hard`, whose validation check never passes, and
    whose repair (recorded: the epochs it ran at; its budgets appended to `budgets`)
    succeeds on call `fixed_on_call`; the confirmation draw then passes if `confirmed`."""
    import importlib

    from logicars.circuit.repair import RepairResult

    policies = importlib.import_module("logicars.training.policies")
    losses = iter(hard)
    calls: list[int] = []

    def fake_repair(model: logicars.Model, preset: logicars.Preset, **kw: object) -> RepairResult:
        calls.append(len(calls) + 1)
        if budgets is not None:
            budgets.append(int(kw["budget"]))
        return RepairResult(9, 0 if len(calls) == fixed_on_call else 4, int(kw["budget"]))

    monkeypatch.setattr(
        logicars.Model, "train_step", lambda self, x, y, **opts: (1.0, next(losses))
    )
    monkeypatch.setattr(policies, "solves", lambda model, preset, generalise: False)
    monkeypatch.setattr(policies, "confirmed", lambda model, preset, generalise: confirmed)
    monkeypatch.setattr(policies, "repair_circuit", fake_repair)
    monkeypatch.setattr(policies, "REPAIR_EVERY", 3)
    return calls


def test_repair_runs_after_failed_checks_ever_more_rarely(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Hard loss 0 from epoch 2 on (2 at epoch 5): repairs at 2 (fails), then only after
    # REPAIR_EVERY = 3 epochs doubled once (8: fails) and twice (20), which fixes the
    # circuit: solved, stop.
    hard = [5.0, 0.0, 0.0, 0.0, 2.0] + [0.0] * 15
    calls = _fake_repairs(monkeypatch, hard, fixed_on_call=3)
    r = train("gol", epochs=50, out=tmp_path / "r", quiet=True)
    assert len(calls) == 3 and r.summary["repair"] is True
    assert [x["epoch"] for x in r.summary["repairs"]] == [2, 8, 20]
    assert [x["wrong_after"] for x in r.summary["repairs"]] == [4, 4, 0]
    assert r.summary["solved_epoch"] == 20 and r.summary["epochs"] == 20


def test_a_fresh_wiring_repairs_at_the_first_wait_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Every batch right, every repair failing, REPAIR_EVERY = 3, attempts of 10 epochs:
    # the first attempt repairs at 1 and 1 + 2 * 3 = 7, and once more at its end (10,
    # its final repair); the second attempt's wait starts over at 3 epochs after that.
    calls = _fake_repairs(monkeypatch, [0.0] * 20, fixed_on_call=None)
    r = train("gol", epochs=20, restart_every=10, out=tmp_path / "r", quiet=True)
    epochs = [x["epoch"] for x in r.summary["repairs"]]
    assert epochs[:5] == [1, 7, 10, 13, 19], epochs
    assert len(calls) == len(epochs)


@pytest.mark.parametrize("final", [None, 40])
def test_the_final_repair_runs_with_the_runs_budget(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, final: int | None
) -> None:
    """Repairs during an attempt get REPAIR_BUDGET candidates, the one at its end the
    run's `final_repair_budget` (FINAL_REPAIR_BUDGET unless given), recorded in the
    summary and kept on resume."""
    from logicars.training import policies

    budgets: list[int] = []
    _fake_repairs(monkeypatch, [0.0] * 20, fixed_on_call=None, budgets=budgets)
    given = {} if final is None else {"final_repair_budget": final}
    r = train("gol", epochs=10, restart_every=10, out=tmp_path / "r", quiet=True, **given)
    want = FINAL_REPAIR_BUDGET if final is None else final
    epochs = [x["epoch"] for x in r.summary["repairs"]]
    assert epochs == [1, 7, 10] and budgets == [policies.REPAIR_BUDGET] * 2 + [want]
    assert r.summary["final_repair_budget"] == want
    more = train(None, resume=r.run_dir, epochs=20, quiet=True)
    assert more.summary["final_repair_budget"] == want and budgets[-1] == want


def test_a_repair_counts_only_if_the_confirmation_draw_passes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls = _fake_repairs(monkeypatch, [0.0] * 7, fixed_on_call=1, confirmed=False)
    r = train("gol", epochs=7, out=tmp_path / "r", quiet=True)
    assert r.summary["solved_epoch"] is None and len(calls) == 2  # epochs 1 and 1 + 2 * 3
    assert r.summary["repairs"][0]["wrong_after"] == 0


def test_the_confirmation_draw_is_larger_and_other_than_the_validation_draw() -> None:
    import importlib

    policies = importlib.import_module("logicars.training.policies")
    assert policies.CONFIRM_SAMPLES > policies.VALIDATION_SAMPLES
    assert policies.CONFIRM_SEED not in (0, policies.VALIDATION_SEED)  # 0: held-out
    # A fresh circuit fails it.
    preset = logicars.get_preset("checkerboard")
    assert not policies.confirmed(logicars.Model(preset.spec, 0), preset, True)


def test_the_training_time_generalises_check_draws_its_own_starts(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """With `require_generalise` the confirmation runs the larger grids on its own
    training-time seed, never `evaluate`'s; without it, and for other tasks, it does not
    run them."""
    import importlib
    from types import SimpleNamespace

    from logicars import draws

    policies = importlib.import_module("logicars.training.policies")
    seeds: list[int] = []
    real = policies.generalise

    def spy(model: logicars.Model, task: object, seed: int) -> object:
        seeds.append(seed)
        return real(model, task, seed)

    monkeypatch.setattr(policies, "validate", lambda *_: SimpleNamespace(passed=True))
    monkeypatch.setattr(policies, "generalise", spy)
    preset = logicars.get_preset("checkerboard")
    fresh = logicars.Model(preset.spec, 0)
    assert not policies.confirmed(fresh, preset, True)  # a fresh circuit fails the 64x64
    assert seeds == [policies.CONFIRM_SEED] and seeds[0] < draws.EVALUATION_BASE
    assert policies.confirmed(fresh, preset, False)
    gol = logicars.get_preset("gol")
    assert policies.confirmed(logicars.Model(gol.spec, 0), gol, True)
    assert len(seeds) == 1


def test_a_pattern_circuit_must_generalise_to_count_as_solved(tmp_path: Path) -> None:
    """At 30 steps, seed 0's first checkerboard circuit passes its 16x16 checks at epoch
    64 and fails the 64x64 grid (docs/results.md, *Circuits that must generalise*):
    without `require_generalise` the run stops there; with it (the default) training
    goes on, and the circuit that then solves generalises on `evaluate`'s own draws."""
    path = tmp_path / "cb30.toml"
    text = preset_file_text("checkerboard")
    assert "num_steps = 20" in text
    path.write_text(text.replace("num_steps = 20", "num_steps = 30"))
    loose = train(path, seed=0, require_generalise=False, out=tmp_path / "a", quiet=True)
    assert loose.summary["solved_epoch"] == 64 and not loose.summary["require_generalise"]
    assert generalised(loose.summary["hard_eval"]["checks"]) is False
    strict = train(path, seed=0, epochs=100, restart_every=0, out=tmp_path / "b", quiet=True)
    assert strict.summary["require_generalise"]
    assert strict.summary["solved_epoch"] != 64
    assert strict.metrics[63].hard_loss == 0
    assert strict.metrics[63].validation in ("failed", "unconfirmed")
    if strict.summary["solved_epoch"] is not None:
        assert generalised(strict.summary["hard_eval"]["checks"]) is True


@pytest.mark.parametrize(("lowest", "final_repair"), [(9.0, True), (10.0, False)])
def test_final_repair_only_for_runs_that_came_close(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, lowest: float, final_repair: bool
) -> None:
    # gol's batch holds 20 * 9 = 180 cells: "close" is at most 5% of them, 9 cells.
    calls = _fake_repairs(monkeypatch, [20.0, lowest, 30.0], fixed_on_call=1)
    r = train("gol", epochs=3, out=tmp_path / "r", quiet=True)
    assert len(calls) == int(final_repair)
    assert r.summary["solved_epoch"] == (3 if final_repair else None)
    assert [x["epoch"] for x in r.summary["repairs"]] == ([3] if final_repair else [])


def test_cli_relax_options(tmp_path: Path) -> None:
    from logicars.cli import main

    out = tmp_path / "run"
    assert (
        main(
            [
                "train",
                "gol",
                "--epochs",
                "3",
                "--relax",
                "hard-st",
                "--tau",
                "0.5",
                "--warmup",
                "1",
                "--no-stop-on-solve",
                "--no-repair",
                "--quiet",
                "--out",
                str(out),
            ]
        )
        == 0
    )
    summary = json.loads((out / "summary.json").read_text())
    assert summary["relax"] == {"mode": "hard-st", "tau": 0.5, "warmup": 1}
    assert summary["stop_on_solve"] is False and summary["repair"] is False
    assert main(["train", "--resume", str(out), "--epochs", "4", "--repair", "--quiet"]) == 0
    assert json.loads((out / "summary.json").read_text())["repair"] is True


@pytest.mark.parametrize("mode", ["truth-table", "softmax"])
def test_hard_fraction_from_the_cli_is_stored_and_resumes_bit_identically(
    tmp_path: Path, mode: str
) -> None:
    """`--relax MODE --hard-fraction Q --warmup N`: stored in the summary and the
    checkpoint; a run stopped and resumed trains the same hard gates as one straight
    run; another fraction trains other ones."""
    from logicars.cli import main

    def cli(out: Path, epochs: int, *extra: str) -> None:
        args = ["train", "--epochs", str(epochs), "--quiet", "--out", str(out), *extra]
        assert main(args) == 0

    def curve(name: str) -> list[str]:
        """A run's metrics rows without the wall time."""
        rows = (tmp_path / name / "metrics.csv").read_text().splitlines()
        return [row.split(",")[:3] + row.split(",")[4:] for row in rows]  # times aside

    opts = ("gol", "--relax", mode, "--warmup", "1", "--no-stop-on-solve")
    cli(tmp_path / "straight", 4, *opts, "--hard-fraction", "0.5")
    summary = json.loads((tmp_path / "straight" / "summary.json").read_text())
    assert summary["relax"] == {"mode": mode, "warmup": 1, "hard_fraction": 0.5}
    relax = logicars.Model.load(tmp_path / "straight" / "model.safetensors").spec.relax
    assert relax == logicars.Relaxation(mode, warmup=1, hard_fraction=0.5)
    cli(tmp_path / "split", 2, *opts, "--hard-fraction", "0.5")
    assert main(["train", "--resume", str(tmp_path / "split"), "--epochs", "4", "--quiet"]) == 0
    straight = curve("straight")
    assert curve("split") == straight
    cli(tmp_path / "other", 4, *opts, "--hard-fraction", "0.1")
    other = curve("other")
    assert other[:2] == straight[:2]  # the warmup epoch
    assert other != straight
    assert main(["train", "gol", "--hard-fraction", "2", "--quiet"]) == 2


# ---- restarts --------------------------------------------------------------------------


def test_restarts_draw_fresh_wiring_and_resume_bit_identically(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An unsolved attempt is replaced every `restart_every` epochs by the wiring of
    `restart_seed(seed, attempt)`; a run interrupted before or after a restart resumes
    to exactly the straight run."""
    import importlib

    policies = importlib.import_module("logicars.training.policies")
    from logicars.train import restart_seed

    # Every attempt equally far from solving: the run ends with its last one.
    monkeypatch.setattr(policies, "validation_score", lambda model, preset: [1, 0])
    preset = tiny_async_preset()
    kw = {"seed": 5, "restart_every": 3, "quiet": True, "stop_on_solve": False}
    straight = train(preset, epochs=8, out=tmp_path / "straight", **kw)
    at_length = "restarted at its length"
    assert straight.summary["restarts"] == [
        {"epoch": 3, "seed": restart_seed(5, 1), "reason": at_length},
        {"epoch": 6, "seed": restart_seed(5, 2), "reason": at_length},
    ]
    assert straight.summary["attempt_ends"] == [
        {"attempt": 1, "epoch": 3, "reason": at_length},
        {"attempt": 2, "epoch": 6, "reason": at_length},
        {"attempt": 3, "epoch": 8, "reason": "ran its epochs unsolved"},
    ]
    assert [m.attempt for m in straight.metrics] == [1, 1, 1, 2, 2, 2, 3, 3]
    fresh = logicars.Model(preset.spec, restart_seed(5, 2))
    for k, w in fresh.wires().items():
        np.testing.assert_array_equal(w, straight.model.wires()[k])
    assert straight.model.optimizer_state()["t"] == 2  # its optimizer is new too

    for split in (3, 4):
        first = train(preset, epochs=split, out=tmp_path / f"split{split}", **kw)
        resumed = train(None, epochs=8, resume=first.run_dir, quiet=True, stop_on_solve=False)
        assert same_state(straight.model, resumed.model)
        assert losses(straight) == losses(resumed)
        assert resumed.summary["restarts"] == straight.summary["restarts"]


def test_a_run_whose_attempts_all_fail_keeps_the_best(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The final circuit of an unsolved run is its attempt closest to passing the
    validation check (here the first), also when interrupted and resumed."""
    import importlib

    policies = importlib.import_module("logicars.training.policies")

    preset = tiny_async_preset()
    first = logicars.Model(preset.spec, 5).wires()

    def score(model: logicars.Model, preset: object) -> list[int]:
        wires = model.wires()
        return [1 if all(np.array_equal(wires[k], first[k]) for k in first) else 3, 0]

    monkeypatch.setattr(policies, "validation_score", score)
    kw = {"seed": 5, "restart_every": 3, "quiet": True, "stop_on_solve": False}
    straight = train(preset, epochs=9, out=tmp_path / "straight", **kw)
    s = straight.summary
    assert s["kept_attempt"] == 0 and len(s["restarts"]) == 2 and s["solved_epoch"] is None
    for k, w in first.items():
        np.testing.assert_array_equal(w, straight.model.wires()[k])
    assert (straight.run_dir / "best-attempt.safetensors").exists()
    reloaded = logicars.Model.load(straight.checkpoint)
    assert same_state(straight.model, reloaded)

    part = train(preset, epochs=5, out=tmp_path / "part", **kw)
    resumed = train(None, epochs=9, resume=part.run_dir, quiet=True, stop_on_solve=False)
    assert same_state(straight.model, resumed.model)
    assert resumed.summary["kept_attempt"] == 0


def tiny_grow_file(tmp_path: Path) -> Path:
    """An experiment file growing a 6x6 bar on a small model: a task without random
    inputs, whose epochs depend on the model alone, with a stall check after 3 epochs."""
    from PIL import Image

    image = np.zeros((6, 6), dtype=np.uint8)
    image[1:5, 2:4] = 255
    Image.fromarray(image).save(tmp_path / "bar.png")
    path = tmp_path / "bar.toml"
    path.write_text(
        'task = "grow:bar.png"\n[model]\nchannels = 4\nkernels = 2\nperceive = [8, 4, 2]\n'
        "update = [16, 8, 4]\nnum_steps = 3\n[training]\nepochs = 5\nlr = 0.05\n"
        "drift_budget = 0\nstall_epochs = 3\nstall_loss = 0\n"
    )
    return path


def test_stalled_attempts_are_replaced_by_fresh_wirings(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An attempt whose lowest hard loss after `stall_epochs` is above `stall_loss` makes
    way for the wiring of `restart_seed(seed, attempt)`, which trains `epochs` epochs of
    its own, exactly as a run of that seed, at most `MAX_STALLS` times; a run interrupted
    at or after a check resumes to the straight run."""
    import importlib

    from logicars.train import MAX_STALLS, restart_seed

    policies = importlib.import_module("logicars.training.policies")
    # The last attempt is kept as the final circuit (not a better-scoring earlier one).
    monkeypatch.setattr(policies, "validation_score", lambda model, preset: [1, 0])
    path = tiny_grow_file(tmp_path)
    kw = {"quiet": True, "stop_on_solve": False}
    straight = train(path, seed=5, out=tmp_path / "straight", **kw)
    s = straight.summary
    assert MAX_STALLS == 2 and s["stalls"] == 2
    assert [{k: r[k] for k in ("epoch", "seed")} for r in s["restarts"]] == [
        {"epoch": 3, "seed": restart_seed(5, 1)},
        {"epoch": 6, "seed": restart_seed(5, 2)},
    ]
    assert all(r["reason"].startswith("stalled: lowest hard loss ") for r in s["restarts"])
    assert [e["reason"][:8] for e in s["attempt_ends"]] == ["stalled:", "stalled:", "ran its "]
    assert s["epochs"] == s["target_epochs"] == 5 + 2 * 3
    assert (s["stall_epochs"], s["stall_loss"]) == (3, 0.0)
    assert min(m.hard_loss for m in straight.metrics[3:6]) > 0  # the second did stall
    # A loss no attempt stays above: the last wiring's own run.
    fresh = train(path, seed=restart_seed(5, 2), stall_loss=1e9, out=tmp_path / "fresh", **kw)
    assert fresh.summary["restarts"] == [] and fresh.summary["epochs"] == 5
    assert [r[1:] for r in losses(straight)[6:]] == [r[1:] for r in losses(fresh)]
    assert same_state(straight.model, fresh.model)

    for at in (3, 4, 6):

        def crash(row: logicars.EpochMetrics, context: object, at: int = at) -> None:
            if row.epoch == at:
                raise RuntimeError("crash")

        split = tmp_path / f"split{at}"
        with pytest.raises(RuntimeError, match="crash"):
            train(path, seed=5, out=split, callbacks=[crash], **kw)
        resumed = train(None, resume=split, quiet=True, stop_on_solve=False)
        assert losses(resumed) == losses(straight)
        assert same_state(resumed.model, straight.model)
        assert resumed.summary["restarts"] == s["restarts"]

    with pytest.raises(ValueError, match="stall_epochs and stall_loss go together"):
        train("gol", epochs=2, stall_epochs=1, out=tmp_path / "x", quiet=True)
    with pytest.raises(ValueError, match="stall_loss must be a finite number >= 0"):
        train(path, stall_loss=-1, out=tmp_path / "x", quiet=True)
    assert not (tmp_path / "x").exists()


def test_kept_lowest_belongs_to_the_attempt_that_kept_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An attempt that ended with its lowest circuit (`kept_lowest`) takes that epoch along
    when replaced: the next attempt starts without one, and a run that ends with the
    earlier attempt reports it again."""
    import importlib

    from logicars.runstate import RunState

    policies = importlib.import_module("logicars.training.policies")
    preset = tiny_async_preset()
    first = logicars.Model(preset.spec, 5)
    monkeypatch.setattr(policies, "validation_score", lambda m, p: [1, 0] if m is first else [1, 5])
    rng = np.random.default_rng(0)
    state = RunState(preset=preset, seed=5, target_epochs=9, early_stop=None, rng=rng, metrics=[])
    state.kept_lowest = 7
    policies.keep_if_best(first, state, tmp_path)
    second = policies.restart(first, state)
    assert state.kept_lowest is None
    kept = policies.best_of_attempts(second, state, tmp_path)
    assert (state.kept_attempt, state.kept_lowest) == (0, 7)
    assert same_state(kept, first)


def test_a_search_that_fails_its_confirmation_takes_that_draw_in(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A drift search that gets the validation draw right and fails the confirmation (of
    1024 starts) goes on with that draw's starts joined to its inputs, and the next draw
    decides (up to SEARCH_ROUNDS draws); a task without random starts (the Game of
    Life's 512 boards) has no other draw to take in, and its search ends there."""
    import importlib

    from logicars.circuit.repair import RepairResult

    policies = importlib.import_module("logicars.training.policies")
    inputs: list[int] = []
    seeds: list[int] = []

    def search(model: logicars.Model, preset: object, x: np.ndarray, *_: object, **kw: object):
        inputs.append(len(x))
        return RepairResult(5, 0, 10)

    def confirmed(model: object, preset: object, generalise: bool, seed: int, n: int) -> bool:
        assert n == policies.SEARCH_CONFIRM_SAMPLES == 1024  # `evaluate`'s number of starts
        seeds.append(seed)
        return seed == policies.CONFIRM_SEED + 1

    monkeypatch.setattr(policies, "repair_on", search)
    monkeypatch.setattr(policies, "confirmed", confirmed)
    kw: dict = {"epochs": 2, "drift_budget": 100, "final_repair_budget": 0, "quiet": True}
    r = train("checkerboard", out=tmp_path / "cb", **kw)
    first = policies.VALIDATION_SAMPLES
    assert inputs == [first, first + policies.SEARCH_CONFIRM_SAMPLES]
    assert seeds == [policies.CONFIRM_SEED, policies.CONFIRM_SEED + 1]
    drifts = _drifts(r.summary)
    assert [d.get("next_round", False) for d in drifts] == [True, False]
    assert r.summary["solved_epoch"] == 2 and drifts[-1]["confirmed"]

    draws: list[tuple[int, int]] = []  # (seed, starts) of each confirmation
    inputs.clear()
    monkeypatch.setattr(policies, "confirmed", lambda *a: bool(draws.append(a[3:])))
    r = train("checkerboard", out=tmp_path / "never", **kw)
    assert len(inputs) == policies.SEARCH_ROUNDS + 1 and r.summary["solved_epoch"] is None
    seed, n = policies.CONFIRM_SEED, policies.SEARCH_CONFIRM_SAMPLES
    assert draws == [(seed + k, n) for k in range(policies.SEARCH_ROUNDS + 1)]

    inputs.clear()
    draws.clear()
    r = train("gol", out=tmp_path / "gol", **kw)
    assert inputs == [512] and r.summary["solved_epoch"] is None
    assert draws == [(seed, policies.CONFIRM_SAMPLES)]  # the usual confirmation


def test_the_drift_search_starts_from_the_best_attempts_circuit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A run that ends unsolved searches the best of its attempts' circuits, not its last
    one (a persisting run's earlier pool phase can end a few cells short where its last
    wiring never grew the target), and ends with it."""
    import importlib

    policies = importlib.import_module("logicars.training.policies")
    first_wires = logicars.Model(logicars.get_preset("gol").spec, 3).wires()

    def is_first(model: logicars.Model) -> bool:
        wires = model.wires()
        return all(np.array_equal(wires[k], first_wires[k]) for k in wires)

    def score(model: logicars.Model, preset: object) -> list[int]:
        return [1, 1] if is_first(model) else [1, 5]

    searched: list[bool] = []
    repair = policies.repair_on

    def spy(model: logicars.Model, preset: object, *inputs: object, **kw: object) -> object:
        if kw.get("method") == "drift":
            searched.append(is_first(model))
        return repair(model, preset, *inputs, **kw)

    monkeypatch.setattr(policies, "validation_score", score)
    monkeypatch.setattr(policies, "repair_on", spy)
    r = train(
        "gol", seed=3, epochs=4, restart_every=2, drift_budget=50, out=tmp_path / "r", quiet=True
    )
    assert searched == [True]
    assert r.summary["kept_attempt"] == 0 and is_first(r.model)


def test_restart_seeds_are_distinct_64_bit_draws() -> None:
    from logicars.train import restart_seed

    seeds = {restart_seed(s, a) for s in range(20) for a in range(1, 6)}
    assert len(seeds) == 100 and all(0 <= s < 2**64 for s in seeds)
    assert restart_seed(3, 1) == restart_seed(3, 1)


def test_cli_restart_every(tmp_path: Path) -> None:
    from logicars.cli import main

    out = tmp_path / "r"
    args = ["train", "gol", "--epochs", "5", "--restart-every", "2", "--quiet", "--out", str(out)]
    assert main(args) == 0
    summary = json.loads((out / "summary.json").read_text())
    assert summary["restart_every"] == 2 and [r["epoch"] for r in summary["restarts"]] == [2, 4]
    assert main(["train", "gol", "--restart-every", "-1"]) == 2
    # 0: no restarts, which a file or flag can ask of a preset that restarts
    again = tmp_path / "none"
    args = ["train", "colored-g", "--epochs", "1", "--restart-every", "0", "--growth", "grow"]
    assert main([*args, "--drift-budget", "0", "--quiet", "--out", str(again)]) == 0
    assert json.loads((again / "summary.json").read_text())["restart_every"] is None


def test_cli_stall_check(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from logicars.cli import main

    out = tmp_path / "s"
    args = ["train", "gol", "--epochs", "3", "--stall-epochs", "2", "--stall-loss", "0"]
    assert main([*args, "--quiet", "--out", str(out)]) == 0
    assert ": 7 epochs over 3 attempts in " in capsys.readouterr().out
    summary = json.loads((out / "summary.json").read_text())
    assert [r["epoch"] for r in summary["restarts"]] == [2, 4] and summary["epochs"] == 7
    assert ">attempts</th>" in load_run(out)._repr_html_()
    assert ">3: fresh wirings after epochs 2, 4;" in load_run(out)._repr_html_()
    assert main(["train", "gol", "--stall-epochs", "2", "--stall-loss", "-1"]) == 2


def test_a_resumed_run_keeps_the_notebook_epochs(tmp_path: Path) -> None:
    """What "the first wiring solved in the notebook's epochs" counts against is the run's
    preset's, before and after a resume (the checkpoint's preset record keeps it)."""
    first = train("gol", epochs=2, seed=1, out=tmp_path / "r", quiet=True)
    resumed = train(None, resume=first.run_dir, epochs=3, quiet=True)
    assert first.summary["notebook_epochs"] == resumed.summary["notebook_epochs"] == 3000
