"""The same sweep as tests/test_sweep.py on a real local Ray instance (2 CPUs on
127.0.0.1, started here and shut down after): every point bit-identical to the process
pool's, with the tasks writing into the sweep directory or shipping their files back."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import ray  # the test extra installs it
import test_sweep
from test_sweep import GRID, NAMES, same_run

import logicars
from logicars.cli import main
from logicars.sweep import SweepResult, expand_grid
from logicars.sweep.executors import RayExecutor

pool_sweep = test_sweep.pool_sweep  # the fixture: the same sweep on the process pool


@pytest.fixture(scope="module")
def local_ray() -> Iterator[None]:
    ray.init(
        num_cpus=2,
        address="local",
        include_dashboard=False,
        _node_ip_address="127.0.0.1",
        log_to_driver=False,
    )
    try:
        yield
    finally:
        ray.shutdown()


def test_ray_sweep_matches_the_pool(
    local_ray: None,
    pool_sweep: SweepResult,
    tmp_path: Path,
) -> None:
    result = logicars.sweep(GRID, out=tmp_path, ray=True, quiet=True)
    assert result.counts["trained"] == 8
    assert [r["name"] for r in result.rows] == NAMES
    for name in NAMES:
        assert same_run(tmp_path / name, pool_sweep.out / name), name
    assert _same_table(result.table, pool_sweep.table)
    assert not list(tmp_path.glob(".sweep-driver-*"))  # the storage marker is cleaned up
    again = logicars.sweep(GRID, out=tmp_path, ray=True, quiet=True)
    assert again.counts["skipped"] == 8


def _same_table(a: str, b: str) -> bool:
    """The tables but their timing columns."""
    cut = lambda t: [row.split(" | ")[:-2] for row in t.splitlines()]  # noqa: E731
    return cut(a) == cut(b)


def test_ray_tasks_ship_files_back_without_shared_storage(
    local_ray: None,
    pool_sweep: SweepResult,
    tmp_path: Path,
) -> None:
    executor = RayExecutor("local", None, 1, tmp_path)
    executor._token = ".sweep-driver-on-no-node"  # as if the nodes did not see tmp_path
    try:
        points = [p for p in expand_grid(GRID) if p.name in (NAMES[0], NAMES[5])]
        refs = {executor.submit(tmp_path, p, 1): p for p in points}
        for ref, p in refs.items():
            assert executor.result(ref, p) == {"status": "trained"}
    finally:
        executor.close(abort=False)
    for p in points:
        assert same_run(tmp_path / p.name, pool_sweep.out / p.name)


def test_missing_ray_is_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setitem(sys.modules, "ray", None)  # `import ray` raises ImportError
    code = main(["sweep", "gol", "--epochs", "2", "--ray", "--out", str(tmp_path), "--quiet"])
    err = capsys.readouterr().err
    assert code == 2 and err.strip() == (
        "logicars: error: the Ray executor needs Ray: pip install 'logicars[ray]'"
    )
