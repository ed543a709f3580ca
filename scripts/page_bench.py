"""Steps per second of a trained circuit's interactive page in headless Chromium.

    python scripts/page_bench.py [RUN] [--size 512] [--rounds 5] [--seconds 3]

RUN is a run directory (default: Game of Life trained on its preset's defaults into a
temporary directory, a few seconds). The page is written as `python -m logicars view`
writes it and opened in Debian's `chromium` through `chromedriver` (Selenium). Two
figures, measured inside the page with `performance.now()` and alternated over the
rounds (medians):

- compute: `logicars.benchmark(n)`, the steps alone;
- playing: the page playing "as fast as possible" on its own, drawing the grid on every
  animation frame, as a user sees it (steps counted over `--seconds`).
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import tempfile
import time
from pathlib import Path

import logicars
from logicars.runs import load_run
from logicars.viz.page import page_html


def open_browser():  # selenium's WebDriver; selenium comes with the test extra
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = shutil.which("chromium") or "chromium"
    for arg in ("--headless=new", "--no-sandbox", "--window-size=1400,1000"):
        options.add_argument(arg)
    return webdriver.Chrome(options=options, service=Service(shutil.which("chromedriver")))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("run", nargs="?", type=Path, help="run directory (default: train gol)")
    p.add_argument("--size", type=int, default=512, help="grid side (default 512)")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--seconds", type=float, default=3.0, help="playing time per round")
    args = p.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        run_dir = args.run
        if run_dir is None:
            run_dir = Path(tmp) / "gol"
            logicars.train("gol", out=run_dir, threads=1, quiet=True, checkpoint_every=None)
        run = load_run(run_dir)
        page = Path(tmp) / "page.html"
        page.write_text(page_html(run.model, run.preset), encoding="utf-8")
        report = run.model.prune_report()
        name = run.preset.name if run.preset else "model"
        print(f"{name}: {report['pruned_gates']} gates, {args.size}x{args.size} grid")

        browser = open_browser()
        try:
            browser.get(page.resolve().as_uri())
            browser.execute_script("logicars.configure({size: arguments[0], speed: 0})", args.size)
            browser.execute_script("logicars.benchmark(50)")  # let the JIT compile
            compute, playing = [], []
            for _ in range(args.rounds):
                compute.append(browser.execute_script("return logicars.benchmark(200)"))
                before = browser.execute_script(
                    "logicars.play(); return [performance.now(), logicars.stats().steps]"
                )
                time.sleep(args.seconds)
                after = browser.execute_script(
                    "const s = logicars.stats().steps; logicars.pause();"
                    "return [performance.now(), s]"
                )
                playing.append((after[1] - before[1]) * 1000 / (after[0] - before[0]))
            version = browser.capabilities.get("browserVersion", "?")
        finally:
            browser.quit()
    fmt = ", ".join
    print(f"Chromium {version} (headless)")
    print(
        f"compute: median {statistics.median(compute):.0f} steps/s "
        f"({fmt(f'{v:.0f}' for v in compute)})"
    )
    print(
        f"playing, drawing every frame: median {statistics.median(playing):.0f} steps/s "
        f"({fmt(f'{v:.0f}' for v in playing)})"
    )


if __name__ == "__main__":
    main()
