"""Hostile run directories, sweeps, pages and command lines (issue 43): what a careless
user or someone sharing a directory can hand the package. Every case at the command line
ends in one line on stderr and exit 2 (or, where the input is only a damaged record, a
clean run), within seconds, and the test checks that nothing outside the run directory
changed: a snapshot of the whole temporary tree (file contents, link targets) before and
after. Trainings are 1-2 epochs of the Game of Life."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_hostile_inputs import deadline, fifo, png, png_header

import logicars
from logicars.cli import main
from logicars.runs import load_run
from logicars.sweep import POINT_FILE, report
from logicars.viz.page import page_html

SECONDS = 20.0  # a case that hangs fails here instead


def snapshot(root: Path) -> dict[str, Any]:
    """Every entry under `root` (symlinks not followed): a file's bytes, a link's target,
    a FIFO or directory by its kind."""
    out: dict[str, Any] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            p = Path(dirpath) / name
            rel = str(p.relative_to(root))
            if p.is_symlink():
                out[rel] = ("link", os.readlink(p))
            elif p.is_dir():
                out[rel] = ("dir",)
            elif p.is_fifo():
                out[rel] = ("fifo",)
            else:
                out[rel] = ("file", p.read_bytes())
    return out


def cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    capsys.readouterr()
    with deadline(SECONDS):
        code = main(list(argv))
    return code, capsys.readouterr().err


def refused(capsys: pytest.CaptureFixture[str], root: Path, *argv: str, needles: tuple = ()) -> str:
    """`logicars ARGV` exits 2 with one line naming every needle, and `root` (the test's
    whole directory) is as it was."""
    before = snapshot(root)
    code, err = cli(capsys, *argv)
    lines = err.strip().splitlines()
    assert code == 2 and len(lines) == 1 and "Traceback" not in err, (code, err)
    for needle in needles:
        assert needle in lines[0], f"{needle!r} not in {lines[0]!r}"
    assert snapshot(root) == before, "something changed on disk"
    return lines[0]


@pytest.fixture(scope="module")
def gol_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("hostile-runs") / "gol"
    logicars.train("gol", epochs=2, out=out, quiet=True)
    return out


@pytest.fixture
def run(gol_run: Path, tmp_path: Path) -> Path:
    """A copy of a finished 2-epoch run, in the test's own directory."""
    dst = tmp_path / "run"
    shutil.copytree(gol_run, dst, symlinks=True)
    return dst


@pytest.fixture
def home(tmp_path: Path) -> Path:
    """A user's file outside any run, which no case may touch."""
    path = tmp_path / "home" / "notes.txt"
    path.parent.mkdir()
    path.write_text("precious\n")
    return path


# ---- lock files and run directories -------------------------------------------------------

TRAIN = ("train", "gol", "--epochs", "2")


def planted_lock(kind: str, run_dir: Path, home: Path) -> None:
    run_dir.mkdir()
    lock = run_dir / ".lock"
    if kind == "symlink":
        lock.symlink_to(home)
    elif kind == "dangling":
        lock.symlink_to(home.parent / "created-by-logicars")
    elif kind == "hardlink":
        os.link(home, lock)
    elif kind == "fifo":
        os.mkfifo(lock)
    elif kind == "directory":
        lock.mkdir()


@pytest.mark.parametrize(
    ("kind", "needle"),
    [
        ("symlink", "symbolic link"),
        ("dangling", "symbolic link"),
        ("hardlink", "hard links"),
        ("fifo", "a FIFO"),
        ("directory", ".lock"),
    ],
)
def test_a_planted_lock_file_is_never_written_through(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, home: Path, kind: str, needle: str
) -> None:
    """`mkdir R; ln -s ~/file R/.lock; logicars train ... --out R` left ~/file holding
    the PID."""
    r = tmp_path / "R"
    planted_lock(kind, r, home)
    refused(capsys, tmp_path, *TRAIN, "--out", str(r), needles=(needle,))
    assert home.read_text() == "precious\n"
    assert not (home.parent / "created-by-logicars").exists()


USER_FILES = {
    "results": ["summary.json", "metrics.csv", "loss.png", "rollout.gif"],
    "notes": ["notes.txt"],
    "hidden": [".bashrc"],
    "subdir": ["data/x.csv"],
}


@pytest.mark.parametrize("files", list(USER_FILES))
def test_a_users_directory_is_not_overwritten(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, files: str
) -> None:
    out = tmp_path / "mine"
    for name in USER_FILES[files]:
        (out / name).parent.mkdir(parents=True, exist_ok=True)
        (out / name).write_text(f"the user's {name}\n")
    refused(capsys, tmp_path, *TRAIN, "--out", str(out), needles=("not a logicars run",))


def test_resume_into_a_users_directory_is_refused(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, run: Path
) -> None:
    out = tmp_path / "mine"
    out.mkdir()
    (out / "summary.json").write_text("{}")
    argv = ("train", "--resume", str(run), "--epochs", "4", "--out", str(out))
    refused(capsys, tmp_path, *argv, needles=("not a logicars run",))


@pytest.mark.parametrize("state", ["empty", "crashed-before-checkpoint", "sweep-point"])
def test_directories_that_are_runs_or_empty_are_trained_into(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, state: str
) -> None:
    out = tmp_path / "r"
    out.mkdir()
    if state == "crashed-before-checkpoint":  # what a SIGKILL in epoch 1 leaves
        (out / ".logicars-run").write_text("")
        (out / ".lock").write_text("12345\n")
        (out / "metrics.csv").write_text("epoch,soft_loss,hard_loss,elapsed_s\n")
    elif state == "sweep-point":
        (out / POINT_FILE).write_text("{}")
    code, err = cli(capsys, *TRAIN, "--out", str(out))
    assert code == 0, err
    assert (out / "model.safetensors").is_file()


# ---- sweeps -----------------------------------------------------------------------------------


def test_a_point_named_dotdot_touches_nothing(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """`sweep .. --out P/sw` deleted P/error.txt and wrote P/point.json."""
    p = tmp_path / "P"
    p.mkdir()
    (p / "error.txt").write_text("notes\n")
    refused(capsys, tmp_path, "sweep", "..", "--out", str(p / "sw"), needles=("'..'",))
    refused(capsys, tmp_path, "sweep", ".", "--out", str(p), needles=("'.'",))


@pytest.mark.parametrize(
    ("argv", "needle"),
    [
        (("sweep", "nope"), "unknown preset 'nope'"),
        (("sweep", "a/b"), "unknown preset"),
        (("sweep", "pattern:missing.png"), "missing.png"),
        (("sweep", "gol", "--seeds", "0-1000000000"), "over 100,000 seeds"),
        (("sweep", "gol", "--seeds", "0-99999999999999999999"), "2**64 - 1"),
        (("sweep", "gol", "--ray", "127.0.0.1:1"), "cannot reach a Ray cluster"),
        (("sweep", "gol", "--ray", "no-port"), "expected HOST:PORT"),
    ],
    ids=["unknown", "slash", "missing-image", "seeds-1e9", "seed-2^64", "ray-dead", "ray-bad"],
)
def test_sweep_inputs_refused_before_the_disk(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, argv: tuple[str, ...], needle: str
) -> None:
    refused(capsys, tmp_path, *argv, "--out", str(tmp_path / "S"), needles=(needle,))
    assert not (tmp_path / "S").exists()


@pytest.mark.parametrize(
    ("name", "make"),
    [
        ("fifo.toml", lambda p: os.mkfifo(p)),
        ("zero.yaml", lambda p: p.symlink_to("/dev/zero")),
        ("nested.toml", lambda p: p.write_text('preset = "gol"\nlr = [[0.1]]\n')),
        ("key.yaml", lambda p: p.write_text("preset: gol\n1: 2\n")),
        ("deep.toml", lambda p: p.write_text("lr = " + "[" * 10**5 + "]" * 10**5 + "\n")),
    ],
)
def test_sweep_files_end_in_one_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, name: str, make: Callable[[Path], object]
) -> None:
    path = tmp_path / name
    make(path)
    refused(capsys, tmp_path, "sweep", "--file", str(path), "--out", str(tmp_path / "S"))


def test_sweep_into_a_users_directory_is_refused(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    out = tmp_path / "results"
    out.mkdir()
    for name in ("sweep.csv", "sweep.md", "notes.txt"):
        (out / name).write_text("mine\n")
    refused(capsys, tmp_path, "sweep", "gol", "--out", str(out), needles=("not a logicars sweep",))


@pytest.fixture(scope="module")
def gol_sweep(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("hostile-sweep") / "s"
    logicars.sweep({"preset": "gol", "seed": [0, 1], "epochs": 1}, out=out, quiet=True, workers=1)
    return out


@pytest.fixture
def sweep_dir(gol_sweep: Path, tmp_path: Path) -> Path:
    dst = tmp_path / "s"
    shutil.copytree(gol_sweep, dst, symlinks=True)
    return dst


def _deep(p: Path) -> None:
    p.write_text("[" * 100_000 + "]" * 100_000)


def _outside_link(p: Path) -> None:
    target = p.parents[2] / "elsewhere.json"
    target.write_text('{"hard_eval": {"solved": 1, "samples": 1}}')
    p.symlink_to(target)


DAMAGES: dict[str, tuple[str, Callable[[Path], object]]] = {
    "summary-empty-object": ("summary.json", lambda p: p.write_text("{}")),
    "summary-list": ("summary.json", lambda p: p.write_text("[1, 2]")),
    "summary-hard-eval-5": ("summary.json", lambda p: p.write_text('{"hard_eval": 5}')),
    "summary-deep": ("summary.json", _deep),
    "summary-fifo": ("summary.json", lambda p: os.mkfifo(p)),
    "summary-dev-zero": ("summary.json", lambda p: p.symlink_to("/dev/zero")),
    "summary-not-utf8": ("summary.json", lambda p: p.write_bytes(b"\xff\xfe{")),
    "summary-link-outside": ("summary.json", _outside_link),
    "summary-nan": ("summary.json", lambda p: p.write_text('{"wall_seconds": NaN}')),
    "point-list": (POINT_FILE, lambda p: p.write_text("[1]")),
    "point-deep": (POINT_FILE, _deep),
    "point-fifo": (POINT_FILE, lambda p: os.mkfifo(p)),
    "error-fifo": ("error.txt", lambda p: os.mkfifo(p)),
    "error-dev-zero": ("error.txt", lambda p: p.symlink_to("/dev/zero")),
    "metrics-fifo": ("metrics.csv", lambda p: os.mkfifo(p)),
    "metrics-garbage": ("metrics.csv", lambda p: p.write_bytes(b"epoch\n\xff,1e999\n")),
    "lock-link": (".sweep.lock", lambda p: p.symlink_to(p.parents[2] / "created")),
}


@pytest.mark.parametrize("damage", list(DAMAGES))
def test_one_damaged_point_blocks_neither_the_report_nor_the_sweep(
    capsys: pytest.CaptureFixture[str], sweep_dir: Path, damage: str
) -> None:
    name, make = DAMAGES[damage]
    points = sorted(d for d in sweep_dir.iterdir() if (d / POINT_FILE).exists())
    bad = points[0] / name
    if bad.exists() or bad.is_symlink():
        bad.unlink()
    make(bad)
    with deadline(SECONDS):
        rows = report(sweep_dir).rows
    assert points[1].name in {r["name"] for r in rows}
    # The same sweep again (it writes the report too): the good point is skipped, the
    # damaged one left as it is.
    before = snapshot(points[0])
    argv = ("sweep", "gol", "--seeds", "0-1", "--epochs", "1", "--quiet", "--workers", "1")
    code, err = cli(capsys, *argv, "--out", str(sweep_dir))
    assert code in (0, 1) and "Traceback" not in err, err
    if name in ("summary.json", POINT_FILE):
        assert snapshot(points[0]) == before
    assert not (sweep_dir.parent / "created").exists()


def test_a_point_directory_that_is_a_symlink_is_not_written_through(
    capsys: pytest.CaptureFixture[str], sweep_dir: Path, tmp_path: Path, home: Path
) -> None:
    """A shared sweep's point directory planted as a link to the reader's directory:
    the sweep neither reads nor writes there, and the point is reported as failed."""
    point = sweep_dir / "gol_epochs=1_seed=2"
    point.symlink_to(home.parent)
    before = snapshot(home.parent)
    argv = ("sweep", "gol", "--seeds", "0-2", "--epochs", "1", "--quiet", "--workers", "1")
    code, err = cli(capsys, *argv, "--out", str(sweep_dir))
    assert "symbolic link" in err and "Traceback" not in err, err
    assert snapshot(home.parent) == before


def test_a_point_directory_that_is_a_symlink_is_not_read(
    capsys: pytest.CaptureFixture[str], sweep_dir: Path, tmp_path: Path
) -> None:
    elsewhere = tmp_path / "elsewhere"
    shutil.copytree(next(d for d in sweep_dir.iterdir() if d.is_dir()), elsewhere)
    (sweep_dir / "gol_epochs=1_seed=9").symlink_to(elsewhere)
    assert len(report(sweep_dir).rows) == 2


# ---- a run directory someone else wrote ---------------------------------------------------------

XSS = "<img src=x onerror=alert(document.cookie)>"
SUMMARIES: dict[str, dict[str, Any]] = {
    "early-stop": {"early_stopped": True, "early_stop": XSS},
    "preset": {"preset": XSS},
    "seed-and-init": {"seed": XSS, "init": XSS},
    "seed-int-init": {"seed": 3, "init": XSS},
    "target-epochs": {"target_epochs": XSS},
    "restarts": {"restarts": [{"epoch": XSS}], "kept_attempt": XSS},
    "restarts-not-list": {"restarts": XSS},
    "hard-eval": {"hard_eval": {"solved": XSS, "samples": 1, "wrong_cells": 0, "cells": 1}},
    "hard-eval-missing": {"hard_eval": {}},
    "solved": {"solved_epoch": 2, "solved_seconds": XSS},
    "lr": {"lr": XSS, "lr_decay_from": XSS, "weight_decay": XSS},
    "all-lists": {k: [XSS] for k in ("preset", "seed", "epochs", "hard_eval", "lr")},
}


@pytest.mark.parametrize("fields", list(SUMMARIES))
def test_a_hostile_summary_is_shown_escaped(run: Path, fields: str) -> None:
    """A shared run's summary.json ran script in the notebook of whoever displayed it."""
    summary = json.loads((run / "summary.json").read_text())
    summary.update(SUMMARIES[fields])
    (run / "summary.json").write_text(json.dumps(summary))
    with deadline(SECONDS):
        page = load_run(run)._repr_html_()
    assert "<img" not in page.replace('<img src="data:', "")  # only the run's own pictures
    assert "&lt;img src=x" in page or fields != "preset"  # shown, as text


@settings(
    max_examples=15,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    st.dictionaries(
        st.sampled_from(
            [
                "preset",
                "seed",
                "init",
                "target_epochs",
                "early_stopped",
                "early_stop",
                "interrupted",
                "solved_epoch",
                "solved_seconds",
                "restarts",
                "kept_attempt",
                "lr",
                "lr_decay_from",
                "lr_end",
                "weight_decay",
                "hard_eval",
                "epochs",
            ]
        ),
        st.one_of(
            st.none(),
            st.booleans(),
            st.integers(-5, 10**20),
            st.floats(),
            st.text(alphabet="<>&\"'/ a$", max_size=8),
            st.lists(st.integers(0, 3), max_size=2),
            st.dictionaries(st.sampled_from(["epoch", "solved", "samples"]), st.integers(-1, 3)),
        ),
    )
)
def test_any_summary_renders_without_markup_from_it(gol_run: Path, fields: dict[str, Any]) -> None:
    from logicars.viz.render import run_html

    loaded = load_run(gol_run)
    page = run_html(loaded.model, gol_run, fields, loaded.metrics, loaded.preset)
    assert "<>" not in page and "</ " not in page


@pytest.mark.parametrize(
    ("name", "make"),
    [
        ("summary.json", _deep),
        ("summary.json", lambda p: os.mkfifo(p)),
        ("summary.json", lambda p: p.symlink_to("/dev/zero")),
        ("rollout.gif", lambda p: os.mkfifo(p)),
        ("rollout.gif", lambda p: p.symlink_to("/dev/zero")),
    ],
    ids=["summary-deep", "summary-fifo", "summary-dev-zero", "gif-fifo", "gif-dev-zero"],
)
def test_a_run_with_special_files_still_opens(
    capsys: pytest.CaptureFixture[str], run: Path, name: str, make: Callable[[Path], object]
) -> None:
    """A summary nested 10^5 deep raised RecursionError from export, view, simulate,
    analyze and repair; a FIFO hung them."""
    (run / name).unlink()
    make(run / name)
    with deadline(SECONDS):
        loaded = load_run(run)
        assert "logicars run" in loaded._repr_html_()
    code, err = cli(capsys, "export", str(run), "--format", "c", "--out", str(run / "c.c"))
    assert code == 0, err
    code, err = cli(capsys, "simulate", str(run), "--steps", "2", "--size", "8")
    assert code == 0, err


@pytest.mark.parametrize("name", ["c.c", "circuit.html"])
def test_an_output_planted_as_a_symlink_is_replaced_not_written_through(
    capsys: pytest.CaptureFixture[str], run: Path, home: Path, name: str
) -> None:
    out = run / name
    out.symlink_to(home)
    fmt = "c" if name.endswith(".c") else "html"
    code, err = cli(capsys, "export", str(run), "--format", fmt, "--out", str(out))
    assert code == 0, err
    assert home.read_text() == "precious\n" and not out.is_symlink() and out.is_file()


def test_a_summary_linked_to_a_file_elsewhere_is_not_read(run: Path, tmp_path: Path) -> None:
    secret = tmp_path / "secret.json"
    secret.write_text(json.dumps({"preset": "SECRET", "epochs": 2}))
    (run / "summary.json").unlink()
    (run / "summary.json").symlink_to(secret)
    loaded = load_run(run)
    assert loaded.summary is None and "SECRET" not in loaded._repr_html_()


# ---- the exported page --------------------------------------------------------------------------


def page_config(page: str) -> dict[str, Any]:
    match = re.search(r"const CONFIG = (.*?);\n", page)
    assert match is not None
    return json.loads(match.group(1))


@pytest.mark.parametrize(
    "text",
    [
        "<!--<script> x",
        "</script><script>alert(1)</script>",
        "/*__KERNELS__*/ and /*__CONFIG__*/null and __TITLE__",
        "line\u2028separator\u2029paragraph",
        "</title><script>alert(1)</script>",
        "&lt;already&gt; & <b>",
    ],
)
def test_a_description_or_title_cannot_break_the_page(text: str) -> None:
    import dataclasses

    preset = dataclasses.replace(logicars.get_preset("gol"), name=text, description=text)
    model = logicars.Model(preset.spec, 0)
    page = page_html(model, preset)
    template = (Path(logicars.__file__).parent / "viz" / "page.html").read_text()
    assert page.count("<script") == template.count("<script")
    assert page.count("</script>") == template.count("</script>")
    assert page.count("const KERNELS") == 1
    config = page_config(page)
    assert config["description"] == text and config["title"] == text
    title = page[page.index("<title>") : page.index("</title>")]
    assert "<" not in title[len("<title>") :]


def test_an_image_named_like_markup_makes_a_working_page(tmp_path: Path) -> None:
    path = tmp_path / "<!--<script>.png"
    path.write_bytes(png(np.kron(np.eye(2), np.ones((2, 2))) * 255))
    preset = logicars.presets.resolve_preset(f"pattern:{path}")
    page = page_html(logicars.Model(preset.spec, 0), preset)
    assert page.count("<script") == 1 and page_config(page)["title"].endswith(".png")


# ---- $ in names, numbers a checkpoint cannot hold, the environment -----------------------------


def test_a_dollar_in_an_experiment_file_name_draws(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """`m$\\bogus{$.toml` trained, then failed as mathtext: no loss.png, no GIF."""
    exp = tmp_path / "m$\\bogus{$.toml"
    exp.write_text('task = "life:B3/S23"\n[training]\nepochs = 2\ndrift_budget = 0\n')
    out = tmp_path / "r"
    code, err = cli(capsys, "train", str(exp), "--out", str(out))
    assert code == 0, err
    assert (out / "loss.png").is_file() and (out / "rollout.gif").is_file()


def test_a_dollar_in_an_image_name_draws(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    image = tmp_path / "a$^{$.png"
    image.write_bytes(png(np.kron(np.eye(2), np.ones((2, 2))) * 255))
    out = tmp_path / "r"
    code, err = cli(capsys, "train", f"pattern:{image}", "--epochs", "1", "--size", "8",
                    "--out", str(out))  # fmt: skip
    assert code == 0, err
    assert (out / "loss.png").is_file() and (out / "rollout.gif").is_file()


@pytest.mark.parametrize(
    ("training", "needle"),
    [
        ("batch = 100000000000000000000", "batch"),
        ("height = 100000000000000000000", "height"),
        ("restart_every = 2199023255552", "restart_every"),
        ("early_stop = 2199023255552", "early_stop"),
        ("epochs = 2199023255553", "epochs"),
        ("stall_epochs = 2199023255553\nstall_loss = 1", "stall_epochs"),
        ("seed = 18446744073709551616", "seed"),
    ],
)
def test_numbers_a_checkpoint_cannot_hold_are_refused_at_the_start(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, training: str, needle: str
) -> None:
    exp = tmp_path / "e.toml"
    exp.write_text(f'task = "life:B3/S23"\n[training]\n{training}\n')
    out = tmp_path / "r"
    refused(capsys, tmp_path, "train", str(exp), "--out", str(out), needles=(needle,))


@pytest.mark.parametrize(
    "argv",
    [
        ("train", "pattern:checkerboard", "--size", "99999999999999999999"),
        ("train", "gol", "--early-stop", "2199023255552"),
        ("train", "gol", "--checkpoint-every", "2199023255552"),
    ],
)
def test_options_a_checkpoint_cannot_hold(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, argv: tuple[str, ...]
) -> None:
    refused(capsys, tmp_path, *argv, "--out", str(tmp_path / "r"))


def test_a_grid_whose_size_wraps_is_refused_before_the_run_directory(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    exp = tmp_path / "e.toml"
    big = 2**31
    training = f"batch = {big}\nheight = {big}\nwidth = {big}\n"
    exp.write_text(f'task = "life:B3/S23"\n[training]\n{training}')
    # The engine's product of the sizes wraps (2^93 cells: 0), Python's does not.
    line = refused(capsys, tmp_path, "train", str(exp), "--out", str(tmp_path / "r"))
    assert "more than the limit" in line


@pytest.mark.parametrize(
    "env", ["LOGICARS_MAX_MEMORY_MB=abc", "LOGICARS_MAX_MEMORY_MB=4G", "LOGICARS_SIMD=bogus"]
)
def test_bad_environment_stops_the_cli_before_any_work(
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    env: str,
) -> None:
    name, value = env.split("=")
    monkeypatch.setenv(name, value)
    refused(capsys, tmp_path, *TRAIN, "--out", str(tmp_path / "r"), needles=(name,))


@pytest.mark.skipif(sys.platform != "linux", reason="SIGTERM and Ray's client: Linux")
def test_a_silent_ray_address_gives_way_to_sigterm(tmp_path: Path) -> None:
    """`--ray HOST:PORT` of something that accepts and never answers: Ray waits, and a
    SIGTERM ends the command at once (it hung over 90 s, ignoring SIGTERM)."""
    pytest.importorskip("ray")
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    port = server.getsockname()[1]
    argv = [sys.executable, "-m", "logicars", "sweep", "gol", "--epochs", "1"]
    argv += ["--ray", f"127.0.0.1:{port}", "--out", str(tmp_path / "S")]
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        time.sleep(4)
        proc.send_signal(signal.SIGTERM)
        t0 = time.monotonic()
        proc.wait(timeout=10)
        assert time.monotonic() - t0 < 5
    finally:
        proc.kill()
        server.close()


def test_case_count() -> None:
    """Issue 43: at least 100 hostile cases across the surfaces (both modules)."""
    import test_hostile_inputs as inputs

    here = sys.modules[__name__]
    n = 0
    for module in (here, inputs):
        for name in dir(module):
            marks = getattr(getattr(module, name), "pytestmark", [])
            params = [m for m in marks if m.name == "parametrize"]
            if name.startswith("test_"):
                n += int(np.prod([len(m.args[1]) for m in params])) if params else 1
    assert n >= 100, n


def test_png_header_helper() -> None:
    assert png_header(3, 4).startswith(b"\x89PNG")
    assert fifo  # shared with test_hostile_inputs
