"""Shared test helpers: where the reference fixtures live (`tests/fixtures`, in the
repository, so that the suite runs from a clean clone; see its README)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

REPO = Path(__file__).resolve().parents[1]
# The paper's lizard, growing only on the torus: the lizard preset until 2026-11-30.
PAPER_LIZARD = REPO / "examples" / "lizard-grow" / "lizard-grow.toml"
FIXTURES = Path(__file__).resolve().parent / "fixtures"
# The binary targets of the lizard and colored-G experiments, as the notebook derives them.
TARGETS = FIXTURES / "targets"
FIXTURE_NAMES = ["sync_small", "sync_periodic_c1", "async_small", "rgb_small", "checkerboard_full"]


def load_fixture(name: str) -> dict[str, np.ndarray]:
    """The arrays of `tests/fixtures/<name>.npz`; fails (not skips) when missing."""
    path = FIXTURES / f"{name}.npz"
    assert path.exists(), f"reference fixture {path} is missing"
    with np.load(path, allow_pickle=False) as z:
        return {k: z[k] for k in z.files}


@pytest.fixture(params=FIXTURE_NAMES)
def fixture_name(request: pytest.FixtureRequest) -> str:
    return request.param


def pytest_report_header() -> list[str]:
    """Which logicars the suite tests (source tree or an installed wheel) and its build."""
    import logicars

    return [f"logicars: {Path(logicars.__file__).parent}", f"build_info: {logicars.build_info()}"]
