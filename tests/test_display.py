"""Rich display in Jupyter (`logicars.viz.display`): models, runs, sweeps, live pages, progress."""

from __future__ import annotations

import base64
import io
import json
import re
import subprocess
import sys
from html import escape, unescape
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from PIL import Image
from test_viewer import browser, check_sync_steps  # noqa: F401 (browser: a fixture)

import logicars
from logicars.circuit.export import active_gates
from logicars.progress import LOG_INTERVAL_S, progress_bar
from logicars.runs import load_run
from logicars.viz.display import show

_DATA_URI = re.compile(r"data:([\w/+.-]+);base64,([A-Za-z0-9+/=]*)")


def external_urls(page: str) -> list[str]:
    """Whatever in `page` refers to a resource outside it: any http(s) URL, and URL
    attributes (`src`, `href`, ...) or CSS `url()`/`@import` that are not inline `data:`
    (so also scheme-relative `//host/...` ones), network APIs in scripts; the same
    inside the document of an iframe's `srcdoc`."""
    inner = [unescape(d) for d in re.findall(r'srcdoc="([^"]*)"', page)]
    text = _DATA_URI.sub("data:", re.sub(r'srcdoc="[^"]*"', "", page))  # base64 may hold "//"
    found = re.findall(r"https?://\S*", text)
    attributes = r"\b(?:src|href|action|poster|srcset|background)\s*=\s*[\"']?([^\"'\s>]*)"
    found += [a for a in re.findall(attributes, text) if not a.startswith("data:")]
    found += re.findall(r"url\(\s*[\"']?(?!data:)[^)]*\)|@import", text)
    found += re.findall(r"\b(?:fetch|XMLHttpRequest|WebSocket|EventSource|sendBeacon)\b", text)
    return found + [url for doc in inner for url in external_urls(doc)]


def test_external_urls_finds_them() -> None:
    assert external_urls('<img src="data:image/png;base64,a//b">') == []
    assert external_urls('<img src="//cdn.example/x.png">') == ["//cdn.example/x.png"]
    assert external_urls("<a href=https://x.example>") != []
    assert external_urls('<div style="background:url(//x.example/a.png)">') != []
    page = escape('<script src="/app.js"></script><script>fetch("a")</script>')
    assert external_urls(f'<iframe srcdoc="{page}"></iframe>') == ["/app.js", "fetch"]


def images(html: str) -> list[tuple[str, Image.Image]]:
    """The inline images of `html`, decoded (fails on a broken one)."""
    return [
        (mime, Image.open(io.BytesIO(base64.b64decode(data))))
        for mime, data in _DATA_URI.findall(html)
    ]


@pytest.fixture(scope="module")
def gol_run(tmp_path_factory: pytest.TempPathFactory) -> logicars.RunResult:
    """The Game of Life from seed 2, which solves in its first attempt (about 1300 epochs,
    seconds): the run stops once solved."""
    out = tmp_path_factory.mktemp("display") / "gol"
    run = logicars.train("gol", seed=2, out=out, threads=1, quiet=True)
    assert (
        run.summary["solved_epoch"] == len(run.metrics) < logicars.get_preset("gol").restart_every
    )
    return run


def test_fresh_model_html_shows_its_spec_and_no_logic() -> None:
    spec = logicars.get_preset("checkerboard").spec
    model = logicars.Model(spec, seed=0)
    html = model._repr_html_()
    assert 'class="logicars-model"' in html
    assert "8 (loss on 0)" in html
    assert "16 kernels" in html and "layers 9, 8, 4, 2" in html
    assert "layers 264, 256×10, 128, 64, 32, 16, 8, 8" in html  # repeats folded
    assert "20, synchronous, zero boundary" in html
    assert "relaxation softmax" in html
    assert "learning rate" not in html  # the training's (a run's table shows it)
    # Every gate starts as a pass-through of its first input: no logic yet.
    gates = logicars.get_preset("checkerboard").gates()
    assert f"{gates:,} learned" in html and "0 active" in html
    assert f"A {gates:,}" in html
    assert "→ 0</td>" in html and "0 gates (and 0, and_not 0, or 0, xor 0)" in html
    assert external_urls(html) == []


def test_trained_model_html_counts_its_gates(gol_run: logicars.RunResult) -> None:
    model = gol_run.model
    html = model._repr_html_()
    r = model.prune_report()
    assert r["pruned_gates"] > 0
    assert f"{active_gates(model):,} active" in html
    assert f"→ {r['pruned_gates']:,}</td>" in html
    assert f"{r['pruned_gates']:,} gates (and {r['and']:,}, and_not {r['and_not']:,}" in html
    assert f"depth {r['depth']}" in html
    assert "1, synchronous, periodic boundary" in html
    assert external_urls(html) == []


def test_run_html_has_losses_held_out_check_and_plots(gol_run: logicars.RunResult) -> None:
    html = gol_run._repr_html_()
    s, last = gol_run.summary, gol_run.metrics[-1]
    ev = s["hard_eval"]
    assert 'class="logicars-run"' in html and "logicars run: gol" in html
    assert f"<code>{gol_run.run_dir}</code>" in html
    assert ">2<" in html  # the preset's seed
    epochs = len(gol_run.metrics)
    budget = logicars.get_preset("gol").epochs
    assert (
        f"{epochs:,} of {budget:,} (stopped: the hard circuit passed the validation check)" in html
    )
    assert f"in {last.elapsed_s:.1f} s" in html
    assert f"soft {last.soft_loss:.4g}, hard 0 (hard loss first 0 at epoch " in html
    assert f"validation check at epoch {epochs:,} ({s['solved_seconds']:.1f} s)" in html
    assert f"✔ the hard circuit solves {ev['solved']:,} of 512 inputs" in html
    assert f"{ev['wrong_cells']:,} of {ev['cells']:,} cells wrong" in html
    kinds = [(mime, img.format) for mime, img in images(html)]
    assert kinds == [("image/png", "PNG"), ("image/gif", "GIF")]  # loss curve, rollout
    assert gol_run.model._repr_html_() in html  # the model's table, folded away
    # The live page, as `logicars view` writes it, in the iframe's document.
    (page,) = [unescape(d) for d in re.findall(r'srcdoc="([^"]*)"', html)]
    assert page == gol_run.model.export("html", preset="gol")
    assert "Content-Security-Policy" in page and "default-src 'none'" in page
    assert external_urls(html) == []
    # The run as loaded from its directory shows the same.
    loaded = load_run(gol_run.run_dir)
    assert len(loaded.metrics) == epochs and loaded.summary == s
    assert loaded._repr_html_() == html
    assert f"epochs={epochs}" in repr(loaded) and f"epochs={epochs}" in repr(gol_run)


def test_run_html_names_the_relaxation(tmp_path: Path) -> None:
    run = logicars.train(
        "gol", epochs=20, out=tmp_path / "run", relax="gumbel-st", tau=0.5, quiet=True
    )
    html = run._repr_html_()
    # The run's row names its learning rate, the model's only the relaxation.
    assert html.count("learning rate 0.05, relaxation gumbel-st(tau=0.5)") == 1
    assert html.count("relaxation gumbel-st(tau=0.5)") == 2  # run, model
    # Loaded from the checkpoint the spec names the engine's defaults too (noise, warmup).
    assert load_run(run.run_dir)._repr_html_().count("relaxation gumbel-st(tau=0.5") == 2


def test_run_html_names_a_weight_decay_other_than_the_notebooks(tmp_path: Path) -> None:
    run = logicars.train("gol", epochs=2, out=tmp_path / "run", weight_decay=0, quiet=True)
    assert "learning rate 0.05, weight decay 0, relaxation softmax" in run._repr_html_()
    decayed = logicars.train(
        "gol", epochs=2, out=tmp_path / "d", lr_decay_from=1, lr_end=0.005, quiet=True
    )
    assert "learning rate 0.05 (after epoch 1 falling to 0.005), relaxation" in (
        decayed._repr_html_()
    )


def test_run_html_without_summary_or_metrics(gol_run: logicars.RunResult, tmp_path: Path) -> None:
    # A summary.json of another epoch than the checkpoint's is not shown as the run's.
    run = tmp_path / "run"
    run.mkdir()
    for name in ("model.safetensors", "metrics.csv"):
        (run / name).write_bytes((gol_run.run_dir / name).read_bytes())
    epochs = len(gol_run.metrics)
    (run / "summary.json").write_text(json.dumps({**gol_run.summary, "epochs": epochs - 1}))
    stale = load_run(run)
    assert stale.summary is None and len(stale.metrics) == epochs
    html = stale._repr_html_()
    assert f"{epochs:,} in" in html and "held-out" not in html and "solved" not in html
    assert [mime for mime, _ in images(html)] == ["image/png"]
    # Parameters alone (.npz): the model, no losses.
    gol_run.model.to_npz(tmp_path / "gol.npz")
    html = load_run(tmp_path / "gol.npz")._repr_html_()
    assert "logicars run: model" in html and "epochs" not in html and images(html) == []
    assert 'class="logicars-model"' in html and external_urls(html) == []


def test_live_page_of_a_model_a_run_or_a_path(gol_run: logicars.RunResult, tmp_path: Path) -> None:
    page = gol_run.model.export("html", preset="gol")
    for source in (gol_run, load_run(gol_run.run_dir), gol_run.run_dir, str(gol_run.run_dir)):
        assert logicars.live(source).html == page
    assert logicars.live(gol_run.model, preset="gol").html == page
    bare = logicars.live(gol_run.model)  # no preset: random start, loss channels' colours
    assert bare.html == gol_run.model.export("html") != page
    shown = logicars.live(gol_run, height=300)._repr_html_()
    assert shown.startswith("<iframe") and 'sandbox="allow-scripts"' in shown
    assert "height:300px" in shown and external_urls(shown) == []
    assert unescape(re.findall(r'srcdoc="([^"]*)"', shown)[0]) == page
    bare.save(tmp_path / "circuit.html")
    assert (tmp_path / "circuit.html").read_text(encoding="utf-8") == bare.html
    with pytest.raises(TypeError, match="source must be a Model"):
        logicars.live(42)
    with pytest.raises(ValueError, match="height must be"):
        logicars.live(gol_run, height=10)


def test_live_page_runs_inside_the_run_display(
    browser: Any,  # noqa: F811 (the fixture of test_viewer)
    gol_run: logicars.RunResult,
    tmp_path: Path,
) -> None:
    """The run's display as a notebook shows it: the iframe's page steps like the engine
    and nothing but the file itself is requested."""
    shown = gol_run._repr_html_().replace("<details>", "<details open>")
    page = tmp_path / "display.html"
    page.write_text(f"<!DOCTYPE html><html><body>{shown}</body></html>", encoding="utf-8")
    browser.get_log("performance")  # drop earlier events
    browser.get(page.as_uri())
    browser.switch_to.frame(browser.find_element("css selector", "iframe"))
    try:
        assert browser.execute_script("return typeof window.logicars") == "object"
        check_sync_steps(browser, gol_run.model, [(20, 30, True), (9, 40, False)])
    finally:
        browser.switch_to.default_content()
    events = [json.loads(e["message"])["message"] for e in browser.get_log("performance")]
    urls = [
        e["params"]["request"]["url"] for e in events if e["method"] == "Network.requestWillBeSent"
    ]
    assert [u for u in urls if not u.startswith("data:")] == [page.as_uri()]
    assert [e for e in browser.get_log("browser") if e["level"] == "SEVERE"] == []


def test_sweep_html_has_the_cell_table_and_plot(tmp_path: Path) -> None:
    from logicars.sweep import report

    grid = {"preset": "gol", "seed": [0, 1], "epochs": 30}
    result = logicars.sweep(grid, out=tmp_path / "sweep", workers=2, quiet=True)
    html = result._repr_html_()
    assert 'class="logicars-sweep"' in html and f"<code>{tmp_path / 'sweep'}</code>" in html
    assert "2 run directories" in html and "2 trained" in html
    header, _, row = result.table.splitlines()[:3]
    assert "success" in header and "median wall s" in header
    for cell in row.strip("| ").split(" | "):  # every value of the cell's row, in order
        assert f'<td style="text-align:right;padding:1px 8px">{cell}</td>' in html
    assert [(m, img.format) for m, img in images(html)] == [("image/png", "PNG")]
    assert external_urls(html) == []
    again = logicars.sweep(grid, out=tmp_path / "sweep", quiet=True)._repr_html_()
    assert "2 skipped" in again and "trained" not in again
    assert report(tmp_path / "sweep")._repr_html_().count("<tr>") == html.count("<tr>") - 1
    assert "points=2" in repr(result) and len(repr(result)) < 300


def test_show_animates_simulate_and_rollout_results() -> None:
    model = logicars.Model(logicars.get_preset("checkerboard").spec, seed=0)
    x = np.random.default_rng(0).integers(0, 2, size=(2, 12, 10, 8), dtype=np.uint8)
    frames = model.simulate(x, 5, record=True)  # (6, 2, 12, 10, 8)
    anim = show(frames, board=1)
    assert anim.frames == 6 and (anim.height, anim.width) == (12, 10)
    assert anim.caption == "6 frames, 12×10, channel 0"
    gif = Image.open(io.BytesIO(anim.gif))
    assert gif.format == "GIF" and gif.size == (210, 252)  # scaled up 21 times to about 256 pixels
    html = anim._repr_html_()
    assert 'class="logicars-animation logicars-player"' in html and external_urls(html) == []
    # The player's frames: one PNG per frame at one pixel per cell, board 1's channel 0.
    assert len(anim.pngs) == 6
    first = np.asarray(Image.open(io.BytesIO(anim.pngs[0])))
    assert first.shape == (12, 10) and np.array_equal(first > 127, frames[0, 1, ..., 0] == 1)
    soft = model.rollout(x.astype(np.float32), steps=3, record=True)  # float frames
    assert show(soft[:, 0]).frames == 4
    rgb = show(frames[:, 0], channels=[0, 1, 2])
    assert Image.open(io.BytesIO(rgb.gif)).convert("RGB").getpixel((0, 0)) == tuple(
        255 * int(v) for v in frames[0, 0, 0, 0, :3]
    )
    assert "RGB of channels 0, 1, 2" in rgb.caption


def test_animation_saves_its_gif_or_its_player(tmp_path: Path) -> None:
    anim = show(np.random.default_rng(0).integers(0, 2, size=(3, 4, 4), dtype=np.uint8))
    anim.save(tmp_path / "a.gif")
    assert (tmp_path / "a.gif").read_bytes() == anim.gif
    anim.save(tmp_path / "a.html")
    page = (tmp_path / "a.html").read_text()
    assert page.startswith("<!doctype html>") and "logicars-player" in page
    assert external_urls(page) == []


def player_state(driver: Any, pid: str) -> tuple[int, str, str]:
    return tuple(
        driver.execute_script(
            "const r = document.getElementById(arguments[0]);"
            "return [Number(r.dataset.frame), r.dataset.playing,"
            " r.querySelector('.lc-frame').textContent]",
            pid,
        )
    )


@pytest.mark.parametrize("side", [16, 256])
def test_player_plays_pauses_steps_scrubs_and_keeps_its_controls_in_view(
    browser: Any,  # noqa: F811 (the fixture)
    tmp_path: Path,
    side: int,
) -> None:
    import time

    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    frames = np.random.default_rng(side).integers(0, 2, size=(12, side, side), dtype=np.uint8)
    anim = show(frames)
    anim.save(tmp_path / "player.html")
    browser.get((tmp_path / "player.html").resolve().as_uri())
    root = browser.find_element(By.CSS_SELECTOR, ".logicars-player")
    pid = root.get_attribute("id")
    assert player_state(browser, pid) == (0, "0", "1 / 12")
    # Every control inside the window, above the grid, however large the grid is.
    height = browser.execute_script("return window.innerHeight")
    for selector in (".lc-prev", ".lc-play", ".lc-next", "input[type=range]", "select"):
        rect = browser.execute_script(
            "return arguments[0].getBoundingClientRect().bottom",
            root.find_element(By.CSS_SELECTOR, selector),
        )
        assert 0 < rect <= height, selector
    img = root.find_element(By.TAG_NAME, "img")
    assert img.size["width"] <= 420 and img.size["width"] >= 16
    root.find_element(By.CSS_SELECTOR, ".lc-next").click()
    root.find_element(By.CSS_SELECTOR, ".lc-next").click()
    assert player_state(browser, pid)[0] == 2
    root.find_element(By.CSS_SELECTOR, ".lc-prev").click()
    assert player_state(browser, pid)[0] == 1
    # The frame shown is the frame's PNG.
    src = img.get_attribute("src")
    assert base64.b64decode(src.split(",", 1)[1]) == anim.pngs[1]
    # Scrub: the slider's input event shows that frame.
    browser.execute_script(
        "const s = arguments[0]; s.value = 7; s.dispatchEvent(new Event('input'))",
        root.find_element(By.CSS_SELECTOR, "input[type=range]"),
    )
    assert player_state(browser, pid) == (7, "0", "8 / 12")
    # Play at 60 frames a second: it reaches the last frame and stops there.
    Select(root.find_element(By.TAG_NAME, "select")).select_by_value("60")
    root.find_element(By.CSS_SELECTOR, ".lc-play").click()
    assert player_state(browser, pid)[1] == "1"
    deadline = time.monotonic() + 5
    while player_state(browser, pid)[1] == "1" and time.monotonic() < deadline:
        time.sleep(0.05)
    assert player_state(browser, pid) == (11, "0", "12 / 12")
    # Play again from the end starts over; pause holds the frame.
    Select(root.find_element(By.TAG_NAME, "select")).select_by_value("2")
    root.find_element(By.CSS_SELECTOR, ".lc-play").click()
    time.sleep(0.7)
    root.find_element(By.CSS_SELECTOR, ".lc-play").click()
    held = player_state(browser, pid)
    assert held[1] == "0" and 0 <= held[0] <= 3
    time.sleep(0.6)
    assert player_state(browser, pid) == held


def test_show_samples_long_sequences_evenly() -> None:
    rng = np.random.default_rng(1)
    frames = rng.integers(0, 2, size=(250, 8, 8), dtype=np.uint8)  # (T, H, W)
    anim = show(frames, max_frames=50)
    assert anim.frames == 50 and "(sampled from 250)" in anim.caption
    gif = Image.open(io.BytesIO(anim.gif))
    assert gif.n_frames == 50  # random frames: no two consecutive ones merge
    gif.seek(49)
    last = np.asarray(gif.convert("L").resize((8, 8), Image.NEAREST)) > 127
    assert np.array_equal(last, frames[-1] == 1)


@pytest.mark.parametrize(
    ("frames", "kwargs", "error", "message"),
    [
        (np.zeros((4, 4)), {}, logicars.errors.ShapeError, "frames: expected shape"),
        (np.zeros((0, 4, 4)), {}, logicars.errors.ShapeError, "no grid"),
        (np.zeros((2, 4, 4, 2)), {"channels": [2]}, ValueError, "channels: expected one or"),
        (np.zeros((2, 4, 4, 4)), {"channels": [0, 1]}, ValueError, "one or three"),
        (np.zeros((2, 3, 4, 4, 1)), {"board": 3}, ValueError, "board must be between 0 and 2"),
        (np.array([["a"]]), {}, TypeError, "numeric"),
        (np.zeros((2, 4, 4)), {"max_frames": 1}, ValueError, "max_frames must be"),
    ],
)
def test_show_rejects_bad_input(frames, kwargs, error, message) -> None:  # noqa: ANN001
    with pytest.raises(error, match=message):
        show(frames, **kwargs)


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_bar_redraws_rarely_off_a_terminal() -> None:
    with progress_bar(total=3, file=io.StringIO()) as bar:
        assert bar.mininterval == LOG_INTERVAL_S and bar.ascii
    with progress_bar(total=3, file=_Terminal()) as bar:
        assert bar.mininterval == 0.1 and bar.dynamic_ncols
    with progress_bar(total=3, file=io.StringIO(), mininterval=0.5) as bar:
        assert bar.mininterval == 0.5  # the caller's choice wins


def test_training_into_a_captured_log_writes_few_lines(tmp_path: Path) -> None:
    # stderr is a pipe: tqdm's default would redraw every 0.1 s, tens of times here.
    proc = subprocess.run(
        [sys.executable, "-m", "logicars", "train", "checkerboard", "--epochs", "60",
         "--threads", "1", "--out", str(tmp_path / "run")],
        capture_output=True, timeout=300, check=True,
    )  # fmt: skip
    redraws = proc.stderr.count(b"\r")
    assert 1 <= redraws <= 3, proc.stderr
    assert b"60/60" in proc.stderr
