"""examples/tutorial.ipynb: stored without outputs, and runs top to bottom in a fresh kernel."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import pytest
from conftest import REPO

NOTEBOOK = REPO / "examples" / "tutorial.ipynb"
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"


def test_tutorial_is_valid_and_stored_without_outputs() -> None:
    import nbformat

    nb = nbformat.read(NOTEBOOK, as_version=4)
    nbformat.validate(nb)
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert code, "the tutorial has no code cells"
    for cell in code:
        assert cell.outputs == [] and cell.execution_count is None, (
            f"stored with outputs (strip them before committing): {cell.source[:60]!r}"
        )


def _claimed_colored_g_epoch() -> int:
    """The epoch at which the tutorial says colored-g's growing-only run stops."""
    import re

    text = NOTEBOOK.read_text(encoding="utf-8").replace('\\n",\n    "', " ")
    m = re.search(r"on the default seed 0 at epoch ([\d,]+)", text)
    assert m, "the tutorial no longer says where colored-g stops"
    return int(m.group(1).replace(",", ""))


def test_tutorial_claims_are_the_recorded_runs() -> None:
    """What the tutorial says of colored-g's growing-only run is the recorded run's of
    examples/colored-g-grow, seed 0 (issue 42: it claimed half a minute for a run of 2,715
    epochs)."""
    from logicars.records import read_records

    rows = read_records(REPO / "docs" / "data" / "sweeps" / "colored-g-grow.jsonl")
    run = next(r for r in rows if r["seed"] == 0)
    assert _claimed_colored_g_epoch() == run["epochs"]
    assert "half a minute" not in NOTEBOOK.read_text(encoding="utf-8")


def test_tutorial_runs_are_ignored_by_git() -> None:
    """The tutorial writes its runs next to itself (examples/runs/, megabytes)."""
    import shutil
    import subprocess

    if shutil.which("git") is None or not (REPO / ".git").exists():
        pytest.skip("not a git checkout")
    for path in ("examples/runs/checkerboard-1/model.safetensors", "runs/gol-1/metrics.csv"):
        done = subprocess.run(["git", "check-ignore", "-q", path], cwd=REPO)
        assert done.returncode == 0, f"{path} is not ignored"


def _kernel_spec(where: Path) -> str:
    """A kernel spec of this interpreter in `where`, so that no other `python3` spec on
    the machine (a user's, the system's) runs the notebook."""
    name = "logicars-test"
    spec_dir = where / "kernels" / name
    spec_dir.mkdir(parents=True)
    argv = [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"]
    spec = {"argv": argv, "display_name": name, "language": "python"}
    (spec_dir / "kernel.json").write_text(json.dumps(spec))
    return name


@pytest.mark.slow
def test_tutorial_runs_in_a_fresh_kernel(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import nbformat
    from nbclient import NotebookClient

    monkeypatch.setenv("JUPYTER_PATH", str(tmp_path / "jupyter"))
    kernel = _kernel_spec(tmp_path / "jupyter")
    work = tmp_path / "work"  # the notebook's directory: its runs/ go here
    work.mkdir()
    nb = nbformat.read(NOTEBOOK, as_version=4)
    client = NotebookClient(
        nb, timeout=600, kernel_name=kernel, resources={"metadata": {"path": str(work)}}
    )
    start = time.perf_counter()
    client.execute()  # raises CellExecutionError on the first cell that fails
    print(f"tutorial executed in {time.perf_counter() - start:.0f} s")

    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs]
    html = [o["data"]["text/html"] for o in outputs if "text/html" in o.get("data", {})]
    assert any('class="logicars-model"' in h and "pruned circuit" in h for h in html)
    assert any('class="logicars-run"' in h and "data:image/png;base64," in h for h in html)
    assert any('class="logicars-sweep"' in h and "4 trained" in h for h in html)
    assert any(h.startswith('<iframe id="logicars-live-') for h in html)  # logicars.live
    # logicars.show: players (play, pause, step, scrub, speed) with their frames inline.
    players = [h for h in html if "logicars-player" in h]
    assert len(players) >= 4 and all('class="lc-play"' in h for h in players)
    # Training and the sweep show tqdm's notebook widget, not text bars on stderr.
    assert sum(WIDGET_VIEW in o.get("data", {}) for o in outputs) >= 4
    stderr = "".join(o["text"] for o in outputs if o.output_type == "stream" and o.name == "stderr")
    assert "%|" not in stderr, f"a text progress bar on stderr: {stderr}"
    assert len(list((work / "runs").iterdir())) == 4  # three runs and the sweep
    grown = [json.loads(p.read_text()) for p in (work / "runs").glob("colored-g-*/summary.json")]
    assert [s["epochs"] for s in grown] == [_claimed_colored_g_epoch()]  # what the text says
