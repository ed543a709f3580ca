"""`logicars simulate --start seed|random|FILE.npy`: the task's start state, random bits
or a user's grid, compared with the task's target."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from logicars.cli import main
from logicars.model import load_checkpoint

SMALL_MODEL = (
    "[model]\nchannels = 4\nkernels = 2\nperceive = [8, 4]\nupdate = [32, 16, 8]\nnum_steps = 4\n"
)


def run_cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture(scope="module")
def grow_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One epoch of growing a 6x6 image, on a small model (an experiment file)."""
    d = tmp_path_factory.mktemp("grow")
    image = np.zeros((6, 6), dtype=np.uint8)
    image[1:5, 2:4] = 255
    Image.fromarray(image).save(d / "bar.png")
    (d / "bar.toml").write_text(
        f'task = "grow:bar.png"\n{SMALL_MODEL}[training]\nepochs = 1\nlr = 0.02\ndrift_budget = 0\n'
    )
    assert main(["train", str(d / "bar.toml"), "--quiet", "--out", str(d / "run")]) == 0
    return d / "run"


def final_grids(capsys: pytest.CaptureFixture[str], run: Path, out: Path, *argv: str) -> np.ndarray:
    code, text, err = run_cli(
        capsys, "simulate", str(run), "--steps", "0", "--out", str(out), *argv
    )
    assert code == 0, err
    return np.load(out)


def test_seed_random_and_a_file(
    capsys: pytest.CaptureFixture[str], grow_run: Path, tmp_path: Path
) -> None:
    seed = final_grids(capsys, grow_run, tmp_path / "seed.npy", "--start", "seed", "--size", "9")
    default = final_grids(capsys, grow_run, tmp_path / "default.npy", "--size", "9")
    assert np.array_equal(seed, default)  # a grow task starts from its seed by default
    assert seed.shape == (1, 9, 9, 4) and 0 < seed.sum() <= 4 and seed[0, 4, 4].any()
    random = final_grids(
        capsys, grow_run, tmp_path / "random.npy", "--start", "random", "--size", "32"
    )
    assert random.shape == (1, 32, 32, 4) and 0.4 < random.mean() < 0.6
    mine = np.random.default_rng(1).integers(0, 2, size=(2, 6, 6, 4)).astype(bool)
    np.save(tmp_path / "mine.npy", mine)
    code, text, err = run_cli(
        capsys, "simulate", str(grow_run), "--start", str(tmp_path / "mine.npy"), "--steps", "0",
        "--out", str(tmp_path / "from-file.npy"),
    )  # fmt: skip
    assert code == 0, err
    assert np.array_equal(np.load(tmp_path / "from-file.npy"), mine)
    assert "2 x 6x6" in text and "target cells wrong" in text  # the task's target, 6x6


@pytest.mark.parametrize(
    ("array", "extra", "needle"),
    [
        (np.zeros((6, 6, 3), dtype=np.uint8), (), "C=4"),
        (np.full((6, 6, 4), 0.5), (), "0 or 1"),
        (np.zeros((6, 6, 4), dtype=np.uint8), ("--size", "8"), "give no --size"),
        (None, (), "not a readable .npy"),
    ],
)
def test_bad_start_files_are_one_line_errors(
    capsys: pytest.CaptureFixture[str],
    grow_run: Path,
    tmp_path: Path,
    array: np.ndarray | None,
    extra: tuple[str, ...],
    needle: str,
) -> None:
    path = tmp_path / "start.npy"
    if array is not None:
        np.save(path, array)
    code, _, err = run_cli(capsys, "simulate", str(grow_run), "--start", str(path), *extra)
    assert code == 2 and len(err.strip().splitlines()) == 1 and needle in err, err
    if "give no" not in needle:
        assert str(path) in err


def test_seed_needs_a_task(
    capsys: pytest.CaptureFixture[str], grow_run: Path, tmp_path: Path
) -> None:
    model, _ = load_checkpoint(grow_run / "model.safetensors")
    model.to_npz(tmp_path / "bare.npz")  # a model without its run: no task
    code, _, err = run_cli(capsys, "simulate", str(tmp_path / "bare.npz"), "--start", "seed")
    assert code == 2 and "names no task" in err
    code, _, err = run_cli(capsys, "simulate", str(tmp_path / "bare.npz"), "--start", "random")
    assert code == 0, err
