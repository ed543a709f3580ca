"""The interactive page (`export --format html`, `view`): built in Python, run in headless
Chromium (Debian's `chromium` and `chromium-driver`, driven by Selenium) against the engine.

Without the browser the tests that need it skip locally and fail in CI (`CI=true`; `.ci/run`
installs it).
"""

from __future__ import annotations

import io
import json
import os
import re
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from conftest import FIXTURES
from test_bitsliced import random_model

import logicars
import logicars.cli
import logicars.viz.page
from logicars.datasets import checkerboard_target
from logicars.pretrained import load_pretrained
from logicars.runs import load_run

# ---- trained circuits -----------------------------------------------------------------


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("runs")


@pytest.fixture(scope="module")
def gol_run(runs: Path) -> Path:
    """GoL trained 400 epochs: a real circuit, mostly Conway's rule (the bit-for-bit
    checks compare with the engine, not with Life)."""
    logicars.train(
        "gol", epochs=400, seed=7, threads=1, out=runs / "gol", quiet=True, checkpoint_every=None
    )
    return runs / "gol"


@pytest.fixture(scope="module")
def checkerboard_run(runs: Path) -> Path:
    """The checkerboard on its preset's defaults (the default seed is one that solves it),
    stopped once the hard loss has been 0 for 20 epochs."""
    logicars.train(
        "checkerboard",
        threads=1,
        early_stop=20,
        out=runs / "checkerboard",
        quiet=True,
        checkpoint_every=None,
    )
    return runs / "checkerboard"


@pytest.fixture(scope="module")
def async_run(runs: Path) -> Path:
    """checkerboard-async after 30 epochs: an async circuit that changes many cells."""
    logicars.train(
        "checkerboard-async",
        epochs=30,
        threads=1,
        out=runs / "async",
        quiet=True,
        checkpoint_every=None,
    )
    return runs / "async"


def model_of(run: Path) -> logicars.Model:
    return logicars.Model.load(run / "model.safetensors")


def write_page(run: Path) -> Path:
    """The run's page, as `python -m logicars view RUN --no-open` writes it."""
    assert logicars.cli.main(["view", str(run), "--no-open"]) == 0
    return run / "circuit.html"


# ---- the page as a file ---------------------------------------------------------------


def test_checkerboard_page_is_one_small_self_contained_file(checkerboard_run: Path) -> None:
    text = write_page(checkerboard_run).read_text()
    assert len(text.encode()) <= 200_000
    assert "default-src 'none'" in text  # the policy refuses any request
    # Nothing that could load a resource: no external URL, no src attribute, only the
    # empty data: icon as a link.
    assert not re.search(r"(https?|wss?|ftp):", text)
    assert not re.search(r"\bsrc\s*=", text)
    assert re.findall(r"\bhref\s*=\s*\"([^\"]*)\"", text) == ["data:,"]
    # The same page from the API and from `export --format html`.
    model = model_of(checkerboard_run)
    assert model.export("html", preset="checkerboard") == text
    assert logicars.cli.main(["export", str(checkerboard_run), "--format", "html"]) == 0


def test_page_config_follows_the_preset() -> None:
    page_config = logicars.viz.page.page_config
    lizard = logicars.get_preset("lizard")
    config = page_config(logicars.Model(lizard.spec), lizard)
    # The lizard's seed: every channel of the centre cell, on its own 20x20 grid.
    assert config["size"] == 20 and config["start"]["kind"] == "cells"
    assert sorted(config["start"]["cells"]) == [[0, 0, c] for c in range(lizard.spec.channels)]
    assert config["palette"]["channels"] == [0] and config["palette"]["colours"][0] == "#ffffff"
    g = logicars.get_preset("colored-g")
    config = page_config(logicars.Model(g.spec), g)
    assert config["start"]["cells"] == [] and config["size"] == 16
    assert config["palette"]["channels"] == [0, 1, 2]
    assert config["palette"]["colours"][0b011] == "#ffff00"  # red and green: yellow
    gol = logicars.get_preset("gol")
    config = page_config(logicars.Model(gol.spec), gol)
    assert config["start"] == {"kind": "random"} and config["periodic"]
    assert config["fireRate"] is None
    cb = logicars.get_preset("checkerboard-async")
    config = page_config(logicars.Model(cb.spec), cb)
    assert config["fireRate"] == 0.6 and not config["periodic"]
    # No preset (an .npz model): random bits, channel 0 in grey.
    config = page_config(logicars.Model(gol.spec))
    assert config["start"] == {"kind": "random"} and config["title"] == "logicars circuit"


def test_kernels_split_big_circuits() -> None:
    net = random_model(logicars.get_preset("gol").spec, 11).netlist()
    whole, spills = logicars.viz.page.kernel_source(net)
    assert whole.count("function (") == 1 and spills == 0
    split, spills = logicars.viz.page.kernel_source(net, gates_per_kernel=16)
    assert split.count("function (") == -(-len(net.gates) // 16) and spills > 0
    # Every gate once, whatever the split.
    assert len(re.findall(r"const v\d+ = v", split)) == len(net.gates)


def test_cli_view(
    gol_run: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    import webbrowser

    opened: list[str] = []
    monkeypatch.setattr(webbrowser, "open", lambda url: opened.append(url) or True)
    expected = model_of(gol_run).export("html", preset="gol")
    assert logicars.cli.main(["view", str(gol_run), "--no-open"]) == 0
    assert opened == [] and (gol_run / "circuit.html").read_text() == expected
    out = tmp_path / "life.html"
    assert logicars.cli.main(["view", str(gol_run), "--out", str(out)]) == 0
    assert opened == [out.resolve().as_uri()] and out.read_text() == expected
    assert f"wrote the page to {out}" in capsys.readouterr().out
    # No browser to open: the page is still written, and the user told where it is.
    monkeypatch.setattr(webbrowser, "open", lambda url: False)
    assert logicars.cli.main(["view", str(gol_run / "model.safetensors")]) == 0
    assert (gol_run / "model.html").read_text() == expected
    assert "open file://" in capsys.readouterr().err
    # A model without a preset (fixture format): random bits, channel 0 in grey.
    npz = FIXTURES / "sync_small.npz"
    assert logicars.cli.main(["view", str(npz), "--no-open", "--out", str(out)]) == 0
    assert out.read_text() == logicars.Model.from_npz(npz).export("html")
    assert "<title>logicars circuit · logicars</title>" in out.read_text()
    # Bad input: one line, exit 2.
    for argv, message in (
        (["view", str(tmp_path / "nope")], "no such run directory"),
        (["view", str(gol_run), "--out", str(tmp_path / "no" / "dir" / "x.html")], "error"),
        (["export", str(gol_run), "--format", "htm"], "invalid choice"),
    ):
        assert logicars.cli.main(argv) == 2
        err = capsys.readouterr().err
        assert message in err and len(err.strip().splitlines()) == 1


# ---- in the browser -------------------------------------------------------------------


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """Headless Chromium through chromedriver, logging every network event."""
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    driver_path = shutil.which("chromedriver")
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
    except ImportError:
        webdriver = None
    if chromium is None or driver_path is None or webdriver is None:
        missing = "selenium" if webdriver is None else "chromium and chromium-driver"
        if os.environ.get("CI") == "true":
            pytest.fail(f"{missing} required in CI (.ci/run installs them)")
        pytest.skip(f"{missing} not installed")
    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    for arg in ("--headless=new", "--no-sandbox", "--window-size=1400,1000"):
        options.add_argument(arg)
    options.set_capability("goog:loggingPrefs", {"performance": "ALL", "browser": "ALL"})
    driver = webdriver.Chrome(options=options, service=Service(driver_path))
    try:
        yield driver
    finally:
        driver.quit()


def open_page(browser: Any, page: Path) -> None:
    browser.get(page.resolve().as_uri())
    assert browser.execute_script("return typeof window.logicars") == "object"


def set_state(browser: Any, x: np.ndarray) -> None:
    h, w, _ = x.shape
    script = "logicars.setState(arguments[0], arguments[1], arguments[2])"
    browser.execute_script(script, x.ravel().tolist(), h, w)


def read_state(browser: Any, channels: int) -> np.ndarray:
    bits, h, w = browser.execute_script(
        "const s = logicars.readState(); const c = document.getElementById('grid');"
        "return [Array.from(s), c.height, c.width]"
    )
    return np.array(bits, dtype=np.uint8).reshape(h, w, channels)


def check_sync_steps(browser: Any, model: logicars.Model, shapes: list[tuple]) -> None:
    """Steps 1, 20 and 100 of the page equal `Model.simulate`, bit for bit."""
    c = model.spec.channels
    rng = np.random.default_rng(0)
    for h, w, periodic in shapes:
        x = rng.integers(0, 2, size=(h, w, c), dtype=np.uint8)
        browser.execute_script(
            "logicars.configure({async: false, periodic: arguments[0]})", periodic
        )
        set_state(browser, x)
        expected = model.simulate(x[None], 100, record=True, periodic=periodic, fire_rate=1.0)
        done = 0
        for steps in (1, 20, 100):
            assert browser.execute_script("return logicars.step(arguments[0])", steps - done) == (
                steps
            )
            done = steps
            np.testing.assert_array_equal(
                read_state(browser, c),
                expected[steps, 0],
                err_msg=f"{h}x{w}, periodic={periodic}, step {steps}",
            )


# Grids whose rows end inside a word, fill whole words, or fit in one; both boundaries.
SHAPES = [(45, 70, True), (45, 70, False), (33, 64, False), (32, 64, True), (7, 5, True)]


def test_gol_page_steps_like_the_engine(browser: Any, gol_run: Path) -> None:
    open_page(browser, write_page(gol_run))
    check_sync_steps(browser, model_of(gol_run), SHAPES)


def test_checkerboard_page_steps_like_the_engine(browser: Any, checkerboard_run: Path) -> None:
    open_page(browser, write_page(checkerboard_run))
    check_sync_steps(browser, model_of(checkerboard_run), SHAPES)


def test_split_kernels_step_like_the_engine(
    browser: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A circuit split into many kernels (values passed through spill arrays)."""
    model = random_model(logicars.get_preset("checkerboard").spec, 5)
    monkeypatch.setattr(logicars.viz.page, "KERNEL_GATES", 16)
    page = tmp_path / "split.html"
    page.write_text(model.export("html"))
    assert page.read_text().count("function (I, S, O") > 3
    open_page(browser, page)
    check_sync_steps(browser, model, [(21, 40, False), (9, 33, True)])


def test_async_page_updates_cells_at_the_fire_rate(browser: Any, async_run: Path) -> None:
    model = model_of(async_run)
    open_page(browser, write_page(async_run))
    settings = browser.execute_script("return logicars.settings()")
    assert settings["async"] and settings["fireRate"] == 0.6  # as trained
    c = model.spec.channels
    x = np.random.default_rng(1).integers(0, 2, size=(96, 96, c), dtype=np.uint8)

    def step(state: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """One async step of the page from `state` (already loaded): the new state, the
        cells whose next state differs and which of them were updated."""
        browser.execute_script("logicars.step(1)")
        y = read_state(browser, c)
        sync = model.simulate(state[None], 1, fire_rate=1.0)[0]
        kept, updated = (y == state).all(axis=-1), (y == sync).all(axis=-1)
        assert (kept | updated).all(), "a cell is neither its old nor its next state"
        return y, (sync != state).any(axis=-1), updated

    for rate in (0.6, 0.25):
        browser.execute_script("logicars.configure({fireRate: arguments[0]})", rate)
        set_state(browser, x)
        y1, changing1, updated1 = step(x)
        _, changing2, updated2 = step(y1)
        for changing, updated in ((changing1, updated1), (changing2, updated2)):
            n = int(changing.sum())
            assert n > 2000, "the circuit leaves too few cells changing for a statistical test"
            share = updated[changing].mean()
            assert abs(share - rate) < 5 * np.sqrt(rate * (1 - rate) / n), (share, rate)
        # Fresh masks every step: among the cells changing in step 2, those updated in
        # step 1 and those not are updated at the same rate (identical masks: 1 and 0).
        for group in (changing1 & updated1, changing1 & ~updated1):
            cells = group & changing2
            n = int(cells.sum())
            share = updated2[cells].mean()
            assert abs(share - rate) < 5 * np.sqrt(rate * (1 - rate) / n), (share, rate)
        # The seed fixes the masks: loading the state again repeats the step.
        set_state(browser, x)
        np.testing.assert_array_equal(step(x)[0], y1)
        browser.execute_script("logicars.configure({seed: 1})")
        set_state(browser, x)
        assert (step(x)[0] != y1).any(), "another seed drew the same masks"
        browser.execute_script("logicars.configure({seed: 0})")


def test_mouse_drag_erases_a_square(browser: Any, checkerboard_run: Path) -> None:
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.by import By

    open_page(browser, write_page(checkerboard_run))
    c = model_of(checkerboard_run).spec.channels
    x = np.ones((40, 40, c), dtype=np.uint8)
    set_state(browser, x)
    browser.execute_script("logicars.configure({tool: 'erase', brush: 6})")
    canvas = browser.find_element(By.ID, "grid")
    cell = canvas.size["width"] / 40  # CSS pixels per cell
    assert canvas.size["height"] == pytest.approx(40 * cell)

    def offset(row: float, col: float) -> tuple[int, int]:
        """From the canvas centre (Selenium's origin) to the centre of a cell."""
        return round((col + 0.5 - 20) * cell), round((row + 0.5 - 20) * cell)

    # Press on cell (10, 8), drag to (10, 30) and on to (25, 30), release.
    actions = ActionChains(browser)
    actions.move_to_element_with_offset(canvas, *offset(10, 8)).click_and_hold()
    for col in (14, 20, 26, 30):
        actions.move_to_element_with_offset(canvas, *offset(10, col))
    for row in (15, 20, 25):
        actions.move_to_element_with_offset(canvas, *offset(row, 30))
    actions.release().perform()
    y = read_state(browser, c)
    erased = np.zeros((40, 40), dtype=bool)  # the 6x6 brush's cells along the path
    erased[10 - 3 : 10 + 3, 8 - 3 : 30 + 3] = True
    erased[10 - 3 : 25 + 3, 30 - 3 : 30 + 3] = True
    assert (y[erased] == 0).all(), "cells under the drag were not cleared"
    assert (y[~erased] == 1).all(), "cells away from the drag changed"
    # Drawing sets the shown channel (channel 0) of the cells under the brush.
    browser.execute_script("logicars.configure({tool: 'draw', brush: 1})")
    ActionChains(browser).move_to_element_with_offset(canvas, *offset(10, 20)).click().perform()
    drawn = y.copy()
    drawn[10, 20, 0] = 1
    np.testing.assert_array_equal(read_state(browser, c), drawn)
    assert browser.execute_script("return logicars.stats().steps") == 0


def test_screenshot_shows_the_checkerboard(browser: Any, checkerboard_run: Path) -> None:
    from PIL import Image
    from selenium.webdriver.common.by import By

    summary = json.loads((checkerboard_run / "summary.json").read_text())
    ev = summary["hard_eval"]
    assert ev["solved"] == ev["samples"], (
        f"the checkerboard preset's default run no longer solves the task ({ev}); "
        "this test needs a circuit that does"
    )
    model = model_of(checkerboard_run)
    target = checkerboard_target(16, 16).astype(np.uint8)
    # A random start from which the engine reaches the checkerboard in the spec's steps.
    steps = model.spec.num_steps
    rng = np.random.default_rng(0)
    for _ in range(20):
        x = rng.integers(0, 2, size=(16, 16, model.spec.channels), dtype=np.uint8)
        if (model.simulate(x[None], steps)[0, ..., 0] == target).all():
            break
    else:
        pytest.fail("none of 20 random starts reaches the checkerboard")
    open_page(browser, write_page(checkerboard_run))
    set_state(browser, x)
    browser.execute_script(f"logicars.step({steps})")
    canvas = browser.find_element(By.ID, "grid")
    shot = np.asarray(Image.open(io.BytesIO(canvas.screenshot_as_png)).convert("RGB"))
    sh, sw = shot.shape[:2]
    # Channel 0 as the notebook shows it: 1 white, 0 black, at every cell's centre.
    for r in range(16):
        for col in range(16):
            pixel = shot[int((r + 0.5) * sh / 16), int((col + 0.5) * sw / 16)].astype(int)
            expected = 255 * target[r, col]
            assert np.abs(pixel - expected).max() <= 8, (r, col, pixel)


def test_page_starts_as_the_preset(browser: Any, tmp_path: Path) -> None:
    """The lizard grows from its seed cell on its own 20x20 grid; reset brings it back."""
    lizard = logicars.get_preset("lizard")
    page = tmp_path / "lizard.html"
    page.write_text(logicars.Model(lizard.spec).export("html", preset=lizard))
    open_page(browser, page)
    c = lizard.spec.channels
    start = np.zeros((20, 20, c), dtype=np.uint8)
    start[10, 10] = 1
    np.testing.assert_array_equal(read_state(browser, c), start)
    browser.execute_script("logicars.damage(10, 10, 1)")
    assert read_state(browser, c).sum() == 0
    browser.execute_script("logicars.reset()")
    np.testing.assert_array_equal(read_state(browser, c), start)
    browser.execute_script("logicars.configure({size: 31})")  # centred on a new size
    start = np.zeros((31, 31, c), dtype=np.uint8)
    start[15, 15] = 1
    np.testing.assert_array_equal(read_state(browser, c), start)


def test_the_persisting_lizard_page_holds_its_lizard(browser: Any) -> None:
    """docs/pages/lizard-persist.html, the circuit of examples/lizard-persist's tuning seed
    1: from its start the page grows the lizard at step T and holds it exactly to 10T,
    where the paper's growing-only lizard (docs/pages/lizard-grow.html) fills its grid."""
    pages = Path(__file__).parent.parent / "docs" / "pages"
    lizard = logicars.get_preset("lizard").task().image[..., 0] > 0.5
    for name, holds in (("lizard-persist", True), ("lizard-grow", False)):
        open_page(browser, pages / f"{name}.html")
        browser.execute_script("logicars.reset(); logicars.pause()")
        wrong, done = [], 0
        for step in (12, 13, 24, 48, 120):
            browser.execute_script("logicars.step(arguments[0])", step - done)
            done = step
            wrong.append(int(np.count_nonzero((read_state(browser, 128)[..., 0] > 0) != lizard)))
        assert wrong[0] == 0, name
        assert (max(wrong) == 0) == holds, f"{name}: wrong cells at T, T+1, 2T, 4T, 10T {wrong}"


def test_api_rejects_bad_settings(browser: Any, gol_run: Path) -> None:
    from selenium.common.exceptions import JavascriptException

    open_page(browser, write_page(gol_run))
    for script, message in (
        ("logicars.configure({fireRate: 1.5})", "fireRate must be in (0, 1]"),
        ("logicars.configure({size: 5000})", "grid size must be 1..2048"),
        ("logicars.configure({colour: 1})", "unknown setting colour"),
        ("logicars.setState([1, 0], 3, 3)", "expected 3*3*1 = 9 bits"),
        ("logicars.step(-1)", "n must be an integer >= 0"),
    ):
        with pytest.raises(JavascriptException, match=re.escape(message)):
            browser.execute_script(script)
    # A 1024x1024 grid plays.
    browser.execute_script("logicars.configure({size: 1024}); logicars.step(2)")
    assert browser.execute_script("return logicars.stats().steps") == 2


def test_page_makes_no_network_request(browser: Any, checkerboard_run: Path) -> None:
    """Load, play, step, draw and reset: the only request is the page's own file."""
    page = write_page(checkerboard_run)
    browser.get_log("performance")  # drop earlier events
    open_page(browser, page)
    browser.execute_script("logicars.play()")
    browser.execute_script("return new Promise((done) => setTimeout(done, 500))")
    browser.execute_script(
        "logicars.pause(); logicars.step(5); logicars.damage(3, 3, 4);"
        "logicars.configure({view: 'channel 2'}); logicars.reset(7)"
    )
    events = [json.loads(e["message"])["message"] for e in browser.get_log("performance")]
    sent = [e for e in events if e["method"] == "Network.requestWillBeSent"]
    requests = [e["params"]["request"]["url"] for e in sent]
    assert requests == [page.resolve().as_uri()]
    failed = [e for e in events if e["method"] == "Network.loadingFailed"]
    assert failed == []
    errors = [e for e in browser.get_log("browser") if e["level"] == "SEVERE"]
    assert errors == []


# ---- layout, colours and the notebook frame (issue 45) ----------------------------------


def test_a_grown_silhouette_keeps_its_images_colours(tmp_path: Path) -> None:
    """A black square on white trains white as 1: the page draws 1 white and 0 black,
    as the image (and the run's GIF); the lizard stays green on white."""
    from PIL import Image

    pixels = np.full((12, 12, 3), 255, dtype=np.uint8)
    pixels[3:9, 3:9] = 0
    Image.fromarray(pixels).save(tmp_path / "square.png")
    preset = logicars.preset_for_kind(f"grow:{tmp_path / 'square.png'}")
    model = logicars.Model(preset.spec)
    palette = logicars.viz.page.page_config(model, preset)["palette"]
    assert palette["colours"] == ["#000000", "#ffffff"]
    lizard = logicars.get_preset("lizard")
    colours = logicars.viz.page.page_config(logicars.Model(lizard.spec), lizard)["palette"]
    assert colours["colours"][0] == "#ffffff" and colours["colours"][1] != "#000000"


def _controls_in_view(browser: Any) -> None:
    height, width = browser.execute_script("return [window.innerHeight, window.innerWidth]")
    for element in ("play", "step", "reset", "speed", "size", "view", "status"):
        top, bottom = browser.execute_script(
            "const r = document.getElementById(arguments[0]).getBoundingClientRect();"
            "return [r.top, r.bottom]",
            element,
        )
        assert 0 <= top and bottom <= height, f"#{element} at {top}..{bottom} of {height}"
    right = browser.execute_script(
        "return document.getElementById('grid').getBoundingClientRect().right"
    )
    assert right <= width, f"the grid ends at {right} of {width} px"


@pytest.mark.parametrize("side", [16, 256])
def test_controls_stay_in_view_at_any_grid_size(
    browser: Any, gol_run: Path, tmp_path: Path, side: int
) -> None:
    page = tmp_path / "page.html"
    page.write_text(model_of(gol_run).export("html"))
    try:
        for size in ((1400, 1000), (800, 600)):  # wide, and a laptop-sized window
            browser.set_window_size(*size)
            open_page(browser, page)
            browser.execute_script("logicars.configure({size: arguments[0]})", side)
            _controls_in_view(browser)
            browser.execute_script("logicars.configure({size: 96})")  # the change
            _controls_in_view(browser)
    finally:
        browser.set_window_size(1400, 1000)


@pytest.mark.parametrize("side", [16, 256])
def test_live_frame_fits_its_page_in_a_notebook(
    browser: Any, gol_run: Path, tmp_path: Path, side: int
) -> None:
    """`logicars.live(run)` as Jupyter shows it: the frame takes its page's height (no
    scrollbar of its own) instead of a fixed 640 px."""
    import time

    live = logicars.live(gol_run)
    host = tmp_path / "notebook.html"
    host.write_text(f"<!doctype html><body style='width:900px'>{live._repr_html_()}</body>")
    browser.get(host.resolve().as_uri())
    frame = browser.find_element("tag name", "iframe")
    browser.switch_to.frame(frame)
    browser.execute_script("logicars.configure({size: arguments[0]})", side)
    inner = browser.execute_script(
        "return Math.ceil(document.documentElement.getBoundingClientRect().height)"
    )
    browser.switch_to.default_content()
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        outer = browser.execute_script("return arguments[0].clientHeight", frame)
        if outer >= inner:
            break
        time.sleep(0.05)
    assert inner <= outer <= inner + 40, (inner, outer)


def check_regrows_on_page(browser: Any, run: Any, page: Path) -> None:
    """Cuts the engine regrows (a 3x3 square centred on a cell of the target) are most of
    them; on the page, the grown pattern cut with the brush grows back, bit for bit as the
    engine."""
    task = run.preset.task()
    steps, channels = task.num_steps, run.model.spec.channels
    start = task.start(np.random.default_rng(0), 1, task.height, task.width).astype(np.uint8)
    target = task.target(start)

    def is_target(state: np.ndarray) -> bool:
        return not np.any(task.wrong(state[None], target))

    regrown = []
    cells = np.argwhere(np.any(target[0] > 0.5, axis=-1))
    for r, c in cells:
        cut = np.zeros((1, task.height, task.width), np.uint8)
        cut[0, max(r - 1, 0) : r + 2, max(c - 1, 0) : c + 2] = 1
        out = run.model.simulate(start, 2 * steps, damage=cut, damage_steps=(steps - 1, steps))
        if is_target(out[0]):
            regrown.append((int(r), int(c), out[0]))
    assert len(regrown) >= 0.8 * len(cells)  # most cuts regrow
    open_page(browser, page)
    for r, c, want in regrown[:3]:
        browser.execute_script("logicars.reset(); logicars.step(arguments[0])", steps)
        assert is_target(read_state(browser, channels))  # grown
        browser.execute_script("logicars.damage(arguments[0], arguments[1], 3)", r, c)
        assert not is_target(read_state(browser, channels))  # cut
        browser.execute_script("logicars.step(arguments[0])", steps)
        assert np.array_equal(read_state(browser, channels), want)  # regrown as the engine


def test_a_regenerating_circuit_regrows_on_the_page(browser: Any, tmp_path: Path) -> None:
    """The page of a regenerating circuit of the user's own image (tests/data: the 10x10
    heart trained with `growth = "regrow"`, seed 0)."""
    source = Path(__file__).parent / "data" / "heart-regrow-seed0.safetensors"
    model_file = tmp_path / "heart.safetensors"
    model_file.write_bytes(source.read_bytes())
    assert logicars.cli.main(["view", str(model_file), "--no-open"]) == 0
    check_regrows_on_page(browser, load_run(model_file), tmp_path / "heart.html")


def test_the_regrowing_lizard_regrows_on_its_page(browser: Any, tmp_path: Path) -> None:
    """The circuit of the lizard preset's tuning seed 1 (then examples/lizard-regrow;
    tests/data, in the shipped circuits' format; docs/pages/lizard-regrow.html is its page):
    `view` of the file writes the docs' page, and on it the grown lizard, cut with the
    brush, grows back."""
    source = Path(__file__).parent / "data" / "lizard-regrow-seed1.npz"
    page = tmp_path / "lizard-regrow.html"
    assert logicars.cli.main(["view", str(source), "--no-open", "--out", str(page)]) == 0
    docs_page = Path(__file__).parent.parent / "docs" / "pages" / "lizard-regrow.html"
    assert page.read_bytes() == docs_page.read_bytes()
    check_regrows_on_page(browser, load_pretrained(source), page)


@pytest.mark.parametrize("name", ["colored-g", "lizard"])
def test_the_shipped_growth_circuits_regrow_on_their_pages(
    browser: Any, tmp_path: Path, name: str
) -> None:
    """`view colored-g`, `view lizard`: the shipped circuits of the regrowing defaults, cut
    on their pages, grow back (what README and docs/results.md say of them); the lizard's
    is docs/pages/lizard.html."""
    page = tmp_path / f"{name}.html"
    assert logicars.cli.main(["view", name, "--no-open", "--out", str(page)]) == 0
    check_regrows_on_page(browser, logicars.pretrained(name), page)
    if name == "lizard":
        docs_page = Path(__file__).parent.parent / "docs" / "pages" / "lizard.html"
        assert page.read_bytes() == docs_page.read_bytes()
