"""Inputs checked before they cost anything: memory from shapes before conversion, the
range of float64 grids before the float32 cast, `damage_steps` as integers, and thread
counts through `RAYON_NUM_THREADS`."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import numpy as np
import pytest

import logicars
from logicars.errors import InvalidValueError, MemoryLimitError


@pytest.fixture(scope="module")
def model() -> logicars.Model:
    return logicars.Model(logicars.get_preset("gol").spec, 0)


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int64, np.uint8, np.bool_])
def test_broadcast_views_are_refused_from_their_shape(model: logicars.Model, dtype: type) -> None:
    """A 60000 x 60000 broadcast view costs nothing until converted: refused with
    MemoryLimitError at once (from its shape), not by numpy's allocator after gigabytes
    of copies and temporaries."""
    grid = np.broadcast_to(np.zeros((1, 1, 1, 1), dtype), (1, 60000, 60000, 1))
    calls = [lambda: model.rollout(grid, 1), lambda: model.train_step(grid, grid)]
    if dtype not in (np.uint8, np.bool_):  # 3.4 GB of uint8 without temporaries fits
        calls.append(lambda: model.simulate(grid, 1))
    for call in calls:
        t0 = time.perf_counter()
        with pytest.raises(MemoryLimitError, match="x: converting an array of shape"):
            call()
        assert time.perf_counter() - t0 < 1.0


def test_memory_check_follows_the_cap(
    model: logicars.Model, monkeypatch: pytest.MonkeyPatch
) -> None:
    x = np.broadcast_to(np.zeros((1, 1, 1, 1)), (1, 64, 64, 1))
    model.rollout(x, 1)
    monkeypatch.setenv("LOGICARS_MAX_MEMORY_MB", "0")
    with pytest.raises(MemoryLimitError, match="limit of 0 MB"):
        model.rollout(x, 1)


@pytest.mark.parametrize("value", [1 + 1e-9, -1e-60, np.nan, np.inf])
def test_float64_range_is_checked_before_the_float32_cast(
    model: logicars.Model, value: float
) -> None:
    x = np.zeros((1, 4, 4, 1))
    x[0, 1, 2, 0] = value
    assert np.float32(value) in (0, 1) or not np.isfinite(value)  # the cast would hide it
    for call in (lambda: model.rollout(x, 1), lambda: model.train_step(x, np.zeros_like(x))):
        with pytest.raises(InvalidValueError, match="x: values must lie in"):
            call()
    with pytest.raises(InvalidValueError, match="y: values must lie in"):
        model.train_step(np.zeros_like(x), x)
    with pytest.raises(InvalidValueError, match="x: values must be 0 or 1"):
        model.simulate(x, 1)


def test_exact_float64_grids_still_run(model: logicars.Model) -> None:
    x = (np.random.default_rng(0).random((1, 8, 8, 1)) < 0.5).astype(np.float64)
    assert np.array_equal(model.rollout(x, 2), model.rollout(x.astype(np.float32), 2))


@pytest.mark.parametrize(
    ("steps", "error", "match"),
    [
        ((0, 2**70), InvalidValueError, "damage_steps end must be between"),
        ((float("nan"), 1), TypeError, "damage_steps start must be an integer"),
        ((0.7, 2.9), TypeError, "damage_steps start must be an integer, got float"),
        ((0, 2.0), TypeError, "damage_steps end must be an integer"),
        ((True, 2), TypeError, "damage_steps start must be an integer, got bool"),
        ((-1, 2), InvalidValueError, "damage_steps start must be"),
        ((3, 2), InvalidValueError, "damage_steps: expected 0 <= start <= end, got \\(3, 2\\)"),
        ((5, 8), InvalidValueError, "damage_steps: start 5 is after the run's 3 steps"),
        (5, TypeError, "damage_steps must be a pair"),
        ((1, 2, 3), TypeError, "damage_steps must be a pair"),
    ],
)
def test_damage_steps_are_integers_in_range(
    model: logicars.Model, steps: object, error: type, match: str
) -> None:
    x = np.zeros((1, 4, 4, 1), np.uint8)
    with pytest.raises(error, match=match):
        model.simulate(x, 3, damage=np.ones((4, 4), np.uint8), damage_steps=steps)  # type: ignore[arg-type]


def test_numpy_integer_damage_steps(model: logicars.Model) -> None:
    x = np.ones((1, 4, 4, 1), np.uint8)
    d = np.ones((4, 4), np.uint8)
    a = model.simulate(x, 3, damage=d, damage_steps=(np.int64(1), np.uint8(2)))
    assert np.array_equal(a, model.simulate(x, 3, damage=d, damage_steps=(1, 2)))


@pytest.mark.parametrize("value", ["100000", "9" * 30])
def test_huge_rayon_num_threads_is_clamped_not_a_panic(value: str) -> None:
    r = subprocess.run(
        [sys.executable, "-c", "import logicars; print(logicars._core.num_threads())"],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "RAYON_NUM_THREADS": value},
    )
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "1024"
    assert "RAYON_NUM_THREADS" in r.stderr and "using 1024" in r.stderr


def test_set_num_threads_refuses_huge_counts() -> None:
    for n in (1025, 10**6, 2**70):
        with pytest.raises((InvalidValueError, OverflowError, TypeError)):
            logicars.set_num_threads(n)


UNDER_RLIMIT_AS = """
import dataclasses, resource, sys
resource.setrlimit(resource.RLIMIT_AS, (4 << 30, 4 << 30))  # ulimit -v 4194304
import numpy as np
import logicars
from logicars.errors import MemoryLimitError

spec = logicars.get_preset("checkerboard").spec
print("cap", logicars._core.memory_cap_mb(), flush=True)
try:
    if sys.argv[1] == "rollout":
        model = logicars.Model(spec, 0)
        model.rollout(np.zeros((1, 1500, 1500, spec.channels), np.float32), 20)
    elif sys.argv[1] == "train_step":
        model = logicars.Model(spec, 0)
        x = np.zeros((2, 1000, 1000, spec.channels), np.float32)
        model.train_step(x, x)
    elif sys.argv[1] == "threads_then_rollout":
        logicars.set_num_threads(1024)
        model = logicars.Model(spec, 0)
        model.rollout(np.zeros((1, 1500, 1500, spec.channels), np.float32), 20)
    elif sys.argv[1] == "model":  # 18 M gates: 3.5 GB of logits and AdamW moments
        big = logicars.ModelSpec.build(
            channels=8, kernels=16, perceive=[8, 4, 2, 1],
            update=[9000, 9_000_000, 9_000_000], num_steps=1,
        )
        connections = ["unique", "unique", "unique", "random"]  # 8 outputs of 9 M inputs
        big = big.replace(update=dataclasses.replace(big.update, connections=connections))
        logicars.Model(big, 0)
    elif sys.argv[1] == "simulate":  # 201 recorded grids of 32 MB
        model = logicars.Model(spec, 0)
        model.simulate(np.zeros((1, 2000, 2000, spec.channels), np.uint8), 200, record=1)
except MemoryLimitError as e:
    print("MemoryLimitError:", e)
    sys.exit(3)
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux address-space limits")
@pytest.mark.parametrize("cap", [None, "1000000"])
@pytest.mark.parametrize(
    "call", ["rollout", "train_step", "threads_then_rollout", "model", "simulate"]
)
def test_work_over_the_address_space_limit_is_refused_not_aborted(
    call: str, cap: str | None
) -> None:
    """Under `ulimit -v 4194304` the default cap follows the address space left, so work
    that cannot get its memory raises MemoryLimitError instead of aborting (SIGABRT);
    with a cap set far above it, the refused allocation itself raises it: the float
    engine's buffers (also with 1024 threads' arenas), a model's logits and AdamW
    moments, and the hard engine's recorded grids."""
    env = {k: v for k, v in os.environ.items() if k != "LOGICARS_MAX_MEMORY_MB"}
    if cap is not None:
        env["LOGICARS_MAX_MEMORY_MB"] = cap
    r = subprocess.run(
        [sys.executable, "-c", UNDER_RLIMIT_AS, call],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    assert r.returncode == 3, (r.returncode, r.stdout, r.stderr[-2000:])
    reported = int(r.stdout.split()[1])
    if cap is None:
        assert 0 < reported < 4096  # below the limit, not the fixed 8192
    else:
        assert reported == int(cap) and "the system refused" in r.stdout
    assert "MemoryLimitError" in r.stdout
