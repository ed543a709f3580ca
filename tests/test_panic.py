"""A Rust panic (an engine bug) must surface as a Python exception and leave the
interpreter, and the engine's thread pool, working. `_core._panic_for_tests` panics on
an engine worker thread with the GIL released, the way a real bug would."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

import logicars
from logicars import _core
from logicars.errors import PanicException

CHILD = r"""
import numpy as np
import logicars
from logicars import _core
from logicars.errors import PanicException

try:
    _core._panic_for_tests("boom in a worker")
except PanicException as e:
    print("caught:", e, flush=True)
model = logicars.Model(logicars.get_preset("gol").spec, seed=0)
out = model.rollout(np.zeros((1, 3, 3, 1), np.float32), hard=True)
print("alive:", out.shape, flush=True)
"""


def test_panic_in_a_subprocess_is_catchable_and_the_interpreter_survives() -> None:
    proc = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr  # not SIGABRT (-6)
    assert "caught: boom in a worker" in proc.stdout
    assert "alive: (1, 3, 3, 1)" in proc.stdout


def test_panic_in_process_then_the_engine_still_works() -> None:
    with pytest.raises(PanicException, match="second boom"):
        _core._panic_for_tests("second boom")
    model = logicars.Model(logicars.get_preset("gol").spec, seed=0)
    x = np.ones((2, 3, 3, 1), np.float32)
    loss, grads = model.loss_and_grad(x, x)
    assert np.isfinite(loss) and grads


def test_panic_is_not_swallowed_by_except_exception() -> None:
    """A bug must not pass for bad input: PanicException is not an Exception."""
    assert issubclass(PanicException, BaseException)
    assert not issubclass(PanicException, Exception)
