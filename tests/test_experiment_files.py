"""Experiment files: `logicars train FILE.toml`, the presets shipped as such files and
`logicars presets --show NAME`."""

from __future__ import annotations

import csv
import dataclasses
import importlib
import json
from pathlib import Path
from typing import Any, NoReturn

import numpy as np
import pytest
from PIL import Image

import logicars
from logicars.cli import main
from logicars.model import Model, load_checkpoint
from logicars.presets import PRESET_NAMES, PRESETS, preset_file_text, read_experiment


def run_cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def losses(run: Path) -> list[tuple[str, str, str]]:
    with open(run / "metrics.csv") as f:
        return [(r["epoch"], r["soft_loss"], r["hard_loss"]) for r in csv.DictReader(f)]


@pytest.mark.parametrize("name", PRESET_NAMES)
def test_show_prints_the_file_a_preset_is_read_from(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, name: str
) -> None:
    code, out, err = run_cli(capsys, "presets", "--show", name)
    assert code == 0, err
    assert out == preset_file_text(name) and "[model]" in out and "[training]" in out
    saved = tmp_path / f"{name}.toml"
    saved.write_text(out)
    experiment = read_experiment(saved)
    assert experiment.preset == PRESETS[name]


def test_a_saved_preset_file_trains_exactly_as_the_preset(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code, out, _ = run_cli(capsys, "presets", "--show", "checkerboard")
    (tmp_path / "mine.toml").write_text(out)
    common = ("--epochs", "3", "--seed", "5", "--no-stop-on-solve", "--quiet")
    by_file, by_name = tmp_path / "by-file", tmp_path / "by-name"
    assert (
        run_cli(capsys, "train", str(tmp_path / "mine.toml"), *common, "--out", str(by_file))[0]
        == 0
    )
    assert run_cli(capsys, "train", "checkerboard", *common, "--out", str(by_name))[0] == 0
    assert losses(by_file) == losses(by_name) and len(losses(by_file)) == 3
    a, _ = load_checkpoint(by_file / "model.safetensors")
    b, _ = load_checkpoint(by_name / "model.safetensors")
    for key, value in a.params().items():
        assert np.array_equal(value, b.params()[key]), key
    assert json.loads((by_file / "summary.json").read_text())["preset"] == "mine"


STRIPES = (
    'task = "pattern:images/tile.png"  # relative to this file\n'
    "size = 8\n"
    "[model]\n"
    "channels = 4\nkernels = 2\nperceive = [8, 4]\nupdate = [32, 16, 8]\nnum_steps = 4\n"
    "[training]\n"
    "epochs = 2\nseed = 3\nlr = 0.02\nweight_decay = 0.001\n"
)
STRIPES_OPTIONS = 'relax = "gumbel-st"\ntau = 0.5\nstop_on_solve = false\n'


def write_stripes(directory: Path, training: str = STRIPES_OPTIONS) -> Path:
    """A pattern: experiment file with its tile image; `training`: more lines of
    [training]."""
    from PIL import Image

    images = directory / "images"
    images.mkdir(exist_ok=True)
    tile = np.array([[1, 1, 0, 0], [1, 1, 0, 0], [0, 0, 1, 1], [0, 0, 1, 1]], dtype=np.uint8)
    Image.fromarray(tile * 255).save(images / "tile.png")
    path = directory / "stripes.toml"
    path.write_text(STRIPES + training)
    return path


def same_params(a: Path, b: Path) -> bool:
    ma, _ = load_checkpoint(a / "model.safetensors")
    mb, _ = load_checkpoint(b / "model.safetensors")
    pa, pb = ma.params(), mb.params()
    return pa.keys() == pb.keys() and all(np.array_equal(pa[k], pb[k]) for k in pa)


def test_a_task_kind_file_with_options_that_the_command_line_replaces(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = write_stripes(tmp_path, STRIPES_OPTIONS + "lr_decay_from = 1\nlr_end = 0.01\n")
    run = tmp_path / "run"
    argv = ("train", str(path), "--tau", "2", "--lr-end", "0.005", "--quiet", "--out", str(run))
    code, out, err = run_cli(capsys, *argv)
    assert code == 0, err
    summary = json.loads((run / "summary.json").read_text())
    assert (summary["lr_decay_from"], summary["lr_end"]) == (1, 0.005)
    assert summary["epochs"] == 2 and summary["seed"] == 3 and summary["grid"] == [8, 8]
    assert summary["relax"]["mode"] == "gumbel-st" and summary["relax"]["tau"] == 2.0
    assert summary["lr"] == 0.02 and summary["config"]["channels"] == 4
    assert "lr" not in summary["config"]  # the training's, not the model's
    assert summary["weight_decay"] == 0.001
    model, _ = load_checkpoint(run / "model.safetensors")
    assert model.spec.update.layers == [4 + 4 * 4 * 2, 32, 16, 8, 4]


@pytest.mark.parametrize("as_path", [False, True])
def test_train_from_python_takes_the_file_as_the_command_line_does(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, as_path: bool
) -> None:
    path = write_stripes(tmp_path)
    by_cli, by_python = tmp_path / "cli", tmp_path / "python"
    argv = ("train", str(path), "--epochs", "4", "--quiet", "--out", str(by_cli))
    assert run_cli(capsys, *argv)[0] == 0
    result = logicars.train(path if as_path else str(path), epochs=4, out=by_python, quiet=True)
    assert result.run_dir == by_python
    assert losses(by_python) == losses(by_cli) and len(losses(by_cli)) == 4
    assert same_params(by_python, by_cli)
    a = json.loads((by_cli / "summary.json").read_text())
    b = json.loads((by_python / "summary.json").read_text())
    assert a["preset"] == b["preset"] == "stripes" and a["relax"] == b["relax"]
    assert a["seed"] == b["seed"] == 3 and a["config"] == b["config"]


def test_a_keyword_replaces_the_files_value(tmp_path: Path) -> None:
    path = write_stripes(tmp_path, STRIPES_OPTIONS + "checkpoint_every = 1\n")
    result = logicars.train(path, tau=2.0, seed=4, lr=0.03, out=tmp_path / "r", quiet=True)
    summary = result.summary
    assert summary["relax"]["mode"] == "gumbel-st"  # the file's
    assert summary["relax"]["tau"] == 2.0 and summary["seed"] == 4  # the keywords'
    assert summary["lr"] == 0.03 and summary["epochs"] == 2
    with pytest.raises(ValueError, match="size = N"):
        logicars.train(path, size=8, out=tmp_path / "s", quiet=True)
    with pytest.raises(ValueError, match="size = N"):
        logicars.train(path, asynchronous=True, out=tmp_path / "s", quiet=True)
    assert not (tmp_path / "s").exists()


class RunArguments(Exception):
    """Raised by a stand-in for the loop with what `train` passed it."""


def test_every_option_a_file_sets_reaches_the_run(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from logicars import _core
    from logicars.training.config import Recorded, toml_settings

    values = {
        "relax": '"gumbel-soft"',
        "tau": "0.25",
        "noise": "0.5",
        "early_stop": "7",
        "stop_on_solve": "false",
        "repair": "false",
        "final_repair_budget": "40",
        "require_generalise": "false",
        "checkpoint_every": "3",
        "threads": "1",
    }
    hard_st = {"relax": '"hard-st"', "tau": "0.25", "warmup": "2"}
    table = {"relax": '"truth-table"', "hard_fraction": "0.3", "warmup": "5"}

    def capture(
        model: Model, state: Any, dataset: Any, run_dir: Path, quiet: bool, every: Any, *_: Any
    ) -> NoReturn:
        raise RunArguments(state, every, _core.num_threads(), model.spec.relax)

    # `logicars.train` is the function; the module is in sys.modules
    monkeypatch.setattr(importlib.import_module("logicars.train"), "_run", capture)
    # A new setting a file gives but no preset records: a line here.
    run_options = {
        name
        for name, declared in toml_settings("training").items()
        if declared.recorded is not Recorded.PRESET
    } - {"init", "notebook_epochs", "drift_budget", "restart_every", "log"}  # tested elsewhere
    assert set(values) | set(hard_st) | set(table) == run_options
    seen = []
    for i, chosen in enumerate((values, hard_st, table)):
        lines = "".join(f"{k} = {v}\n" for k, v in chosen.items())
        path = write_stripes(tmp_path, lines)
        with pytest.raises(RunArguments) as caught:
            logicars.train(path, out=tmp_path / f"r{i}", quiet=True)
        seen.append(caught.value.args)
    state, every, threads, relax = seen[0]
    assert (state.early_stop, state.stop_on_solve, state.repair) == (7, False, False)
    assert state.final_repair_budget == 40 and not state.require_generalise
    assert every == 3 and threads == 1
    assert (relax.mode, relax.tau, relax.noise) == ("gumbel-soft", 0.25, 0.5)
    state, every, _, relax = seen[1]
    assert (relax.mode, relax.tau, relax.warmup) == ("hard-st", 0.25, 2)
    assert state.stop_on_solve is True and state.repair is True and every == 50  # defaults
    assert seen[2][3] == logicars.Relaxation("truth-table", warmup=5, hard_fraction=0.3)
    # Given values, None included, replace the file's.
    path = write_stripes(tmp_path, "checkpoint_every = 3\nearly_stop = 7\nstop_on_solve = false\n")
    with pytest.raises(RunArguments) as caught:
        logicars.train(
            path, out=tmp_path / "r2", quiet=True, checkpoint_every=None, stop_on_solve=True
        )
    state, every, _, _ = caught.value.args
    assert every is None and state.stop_on_solve is True and state.early_stop == 7


def test_the_drift_budget_is_the_files_else_the_kinds_presets(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    def capture(model: Model, state: Any, *_: Any) -> NoReturn:
        raise RunArguments(state.drift_budget)

    monkeypatch.setattr(importlib.import_module("logicars.train"), "_run", capture)
    # measured: docs/results.md
    budgets = {n: p.drift_budget for n, p in PRESETS.items() if p.drift_budget}
    assert budgets == {"lizard": 100000, "colored-g": 100000}
    image = tmp_path / "shape.png"
    Image.fromarray(np.eye(6, dtype=np.uint8) * 255).save(image)
    lizard = dataclasses.replace(PRESETS["lizard"], drift_budget=9)
    monkeypatch.setitem(PRESETS, "lizard", lizard)
    for i, (text, kw, want) in enumerate(
        [
            (f'task = "grow:{image.name}"\n', {}, 9),  # the lizard's
            (f'task = "grow:{image.name}"\n[training]\ndrift_budget = 42\n', {}, 42),
            (
                f'task = "grow:{image.name}"\n[training]\ndrift_budget = 42\n',
                {"drift_budget": 0},
                0,
            ),
        ]
    ):
        path = tmp_path / "grow.toml"
        path.write_text(text)
        with pytest.raises(RunArguments) as caught:
            logicars.train(path, out=tmp_path / f"r{i}", quiet=True, **kw)
        assert caught.value.args == (want,)


@pytest.mark.parametrize(
    ("text", "needles"),
    [
        ('task = "gol"\n[training]\nepoch = 3\n', ("unknown key 'epoch' in [training]",)),
        ('task = "life:B36/S23"\n[training]\nepochs = "x"\n', ("[training] epochs", "'x'")),
        ('task = "life:B36/S23"\n[model]\nperceive = "8"\n', ("[model] perceive", "list")),
        ('task = "life:B36/S23"\n[model]\nupdate = [4, 1]\n', ("[model]:",)),
        # Values are the engine's config check, which names the config's field.
        ('task = "life:B36/S23"\n[model]\nchannels = 0\n', ("[model]:", "channels must be >= 1")),
        ('task = "life:B36/S23"\n[model]\nkernels = -2\n', ("[model]:", "perceive.n_kernels")),
        ('task = "life:B36/S23"\n[model]\nnum_steps = 0\n', ("[model]:", "num_steps must be")),
        ('task = "life:B36/S23"\n[model]\nperceive = []\n', ("[model]:", "perceive.layers")),
        ('task = "life:B36/S23"\n[model]\nloss_channels = [3]\n', ("loss_channels[0] = 3",)),
        # The learning rate is the training step's rule, named as the file's key.
        (
            'task = "life:B36/S23"\n[training]\nlr = -1\n',
            ("[training] lr must be a finite number > 0",),
        ),
        (
            'task = "life:B36/S23"\n[training]\nlr = 0\n',
            ("[training] lr must be a finite number > 0",),
        ),
        (
            'task = "life:B36/S23"\n[training]\nweight_decay = -0.1\n',
            ("[training] weight_decay must be a finite number >= 0",),
        ),
        # The relaxation's values, checked when the file is read.
        (
            'task = "life:B36/S23"\n[training]\nrelax = "gumbel-st"\ntau = -1\n',
            ("[training] tau must be a finite number > 0",),
        ),
        ('task = "life:B36/S23"\n[training]\nrelax = "soft"\n', ("[training]", "soft")),
        ("[training]\nepochs = 3\n", ("task: missing",)),
        ('task = "life:B9/S23"\n', ("task:",)),
        ('task = "pattern:nowhere.png"\n', ("task:", "nowhere.png")),
        ("task = \n", ("experiment file",)),
        ('task = "gol"\ncolour = 1\n', ("unknown key 'colour'",)),
        ('task = "gol"\n[training]\ndrift_budget = -1\n', ("[training] drift_budget",)),
        (
            'task = "life:B36/S23"\n[training]\nlr_decay_from = 5\n',
            ("[training] lr_decay_from and lr_end go together",),
        ),
        (
            'task = "life:B36/S23"\n[training]\nlr_decay_from = 5\nlr_end = 0\n',
            ("[training] lr_end must be a finite number > 0",),
        ),
        (
            'task = "life:B36/S23"\n[training]\nstall_epochs = 5\n',
            ("[training] stall_epochs and stall_loss go together",),
        ),
        (
            'task = "life:B36/S23"\n[training]\nstall_epochs = 5\nstall_loss = -1\n',
            ("[training] stall_loss must be a finite number >= 0",),
        ),
    ],
)
def test_bad_files_give_one_line_naming_the_file_and_key(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, text: str, needles: tuple[str, ...]
) -> None:
    path = tmp_path / "bad.toml"
    path.write_text(text)
    code, _, err = run_cli(capsys, "train", str(path), "--out", str(tmp_path / "r"))
    assert code == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err and str(path) in lines[0], err
    for needle in needles:
        assert needle in lines[0], lines[0]
    assert not (tmp_path / "r").exists()


def test_reading_a_file_checks_its_model_without_building_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    class NoEngine:
        @staticmethod
        def create(*args: object) -> NoReturn:
            raise AssertionError("an engine was built to check a spec")

    monkeypatch.setattr(logicars._core, "Engine", NoEngine)
    experiment = read_experiment(write_stripes(tmp_path))
    assert experiment.preset.spec.update.layers == [4 + 4 * 4 * 2, 32, 16, 8, 4]
    assert experiment.preset.lr == 0.02
    bad = tmp_path / "bad.toml"
    bad.write_text('task = "life:B36/S23"\n[model]\nupdate = [4, 1]\n')
    with pytest.raises(ValueError, match="bad.toml: \\[model\\]: .*unique wiring"):
        read_experiment(bad)


def test_what_a_file_leaves_out_is_the_kinds_presets(tmp_path: Path) -> None:
    path = tmp_path / "b36.toml"
    path.write_text('task = "life:B36/S23"\n[model]\nnum_steps = 2\n[training]\nseed = 7\n')
    preset = read_experiment(path).preset
    gol = PRESETS["gol"]
    assert preset.spec == gol.spec.replace(num_steps=2)
    assert (preset.name, preset.task_kind, preset.seed) == ("b36", "life:B36/S23", 7)
    assert (preset.epochs, preset.batch, preset.restart_every) == (
        gol.epochs,
        gol.batch,
        gol.restart_every,
    )


def test_size_and_async_belong_in_the_file(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = tmp_path / "cb.toml"
    path.write_text(preset_file_text("checkerboard"))
    code, _, err = run_cli(capsys, "train", str(path), "--size", "8")
    assert code == 2 and "size = N" in err
    code, _, err = run_cli(capsys, "presets", "--show", "nope")
    assert code == 2 and "unknown preset 'nope'" in err


def test_the_files_relaxation_is_its_presets(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A file's relaxation goes into its preset's spec (how a packaged preset sets its
    default relaxation), and a file that changes the model keeps its kind's preset's."""
    path = tmp_path / "tt.toml"
    path.write_text('task = "life:B36/S23"\n[training]\nrelax = "gumbel-st"\ntau = 0.5\n')
    experiment = read_experiment(path)
    assert experiment.preset.config.spec_changes() == {}  # the spec holds them
    relax = experiment.preset.spec.relax
    assert (relax.mode, relax.tau, relax.noise) == ("gumbel-st", 0.5, None)
    # A kind's preset whose relaxation is not the default (the paper lizard's, until
    # 2026-11-30): a file that changes its model trains with that relaxation.
    lizard = PRESETS["lizard"]
    rule = logicars.Relaxation("truth-table", warmup=3000, hard_fraction=0.3)
    tt = dataclasses.replace(lizard, spec=lizard.spec.replace(relax=rule))
    monkeypatch.setitem(PRESETS, "lizard", tt)
    path.write_text('task = "grow:lizard"\n[model]\nnum_steps = 3\n')
    assert read_experiment(path).preset.spec == tt.spec.replace(num_steps=3)
