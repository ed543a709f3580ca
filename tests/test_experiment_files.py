"""Experiment files: `logicars train FILE.toml`, the presets shipped as such files and
`logicars presets --show NAME`."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
import pytest

from logicars.cli import main
from logicars.model import load_checkpoint
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
    assert experiment.preset == PRESETS[name] and experiment.options == {}


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


def test_a_task_kind_file_with_options_that_the_command_line_replaces(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    from PIL import Image

    images = tmp_path / "images"
    images.mkdir()
    tile = np.array([[1, 1, 0, 0], [1, 1, 0, 0], [0, 0, 1, 1], [0, 0, 1, 1]], dtype=np.uint8)
    Image.fromarray(tile * 255).save(images / "tile.png")
    (tmp_path / "stripes.toml").write_text(
        'task = "pattern:images/tile.png"  # relative to this file\n'
        "size = 8\n"
        "[model]\n"
        "channels = 4\nkernels = 2\nperceive = [8, 4]\nupdate = [32, 16, 8]\nnum_steps = 4\n"
        "[training]\n"
        'epochs = 2\nseed = 3\nlr = 0.02\nrelax = "gumbel-st"\ntau = 0.5\n'
        "stop_on_solve = false\n"
    )
    run = tmp_path / "run"
    code, out, err = run_cli(
        capsys, "train", str(tmp_path / "stripes.toml"), "--tau", "2", "--quiet", "--out", str(run)
    )
    assert code == 0, err
    summary = json.loads((run / "summary.json").read_text())
    assert summary["epochs"] == 2 and summary["seed"] == 3 and summary["grid"] == [8, 8]
    assert summary["relax"]["mode"] == "gumbel-st" and summary["relax"]["tau"] == 2.0
    assert summary["config"]["lr"] == 0.02 and summary["config"]["channels"] == 4
    model, _ = load_checkpoint(run / "model.safetensors")
    assert model.spec.update.layers == [4 + 4 * 4 * 2, 32, 16, 8, 4]


@pytest.mark.parametrize(
    ("text", "needles"),
    [
        ('task = "gol"\n[training]\nepoch = 3\n', ("unknown key 'epoch' in [training]",)),
        ('task = "life:B36/S23"\n[training]\nepochs = "x"\n', ("[training] epochs", "'x'")),
        ('task = "life:B36/S23"\n[model]\nperceive = "8"\n', ("[model] perceive", "list")),
        ('task = "life:B36/S23"\n[model]\nupdate = [4, 1]\n', ("[model]:",)),
        ("[training]\nepochs = 3\n", ("task: missing",)),
        ('task = "life:B9/S23"\n', ("task:",)),
        ('task = "pattern:nowhere.png"\n', ("task:", "nowhere.png")),
        ("task = \n", ("experiment file",)),
        ('task = "gol"\ncolour = 1\n', ("unknown key 'colour'",)),
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
