"""The engine's process-wide settings and build: threads, version, compiled features.

Library modules import these from here, not from the package (`logicars/__init__`
imports nearly every module, so `from . import build_info` would be an import cycle)."""

from __future__ import annotations

import os
from collections.abc import Mapping

from . import _core
from ._core import InvalidValueError, num_threads
from .arguments import check_int
from .spec import MAX_THREADS

# Every environment variable the package reads (the engine reads them; it would ignore
# a bad value silently), with what it takes.
ENVIRONMENT = {
    "LOGICARS_MAX_MEMORY_MB": "a whole number of megabytes >= 0, e.g. 4096",
    "LOGICARS_SIMD": "portable or avx2",
    "LOGICARS_HARD_ENGINE": "slots",
    "RAYON_NUM_THREADS": "a whole number of threads >= 0 (0: one per core)",
}
# Larger values mean nothing to the engine (2^44 MB is 16 EB); the bound keeps the
# number a plain integer everywhere.
_MAX_MEMORY_MB = 2**44


def check_environment(environ: Mapping[str, str] | None = None) -> None:
    """Raises `InvalidValueError` naming the variable and what it takes if one of
    `ENVIRONMENT` is set to something the engine would not understand (`4G`, `-5`,
    `bogus`): an unset or empty variable is the default. `RAYON_NUM_THREADS` above 1024
    is allowed (the engine clamps it with a warning)."""
    env = os.environ if environ is None else environ
    for name, takes in ENVIRONMENT.items():
        value = env.get(name, "")
        if not value:  # unset or empty: the default
            continue
        if name in ("LOGICARS_MAX_MEMORY_MB", "RAYON_NUM_THREADS"):
            ok = value.isascii() and value.isdigit() and int(value) <= _MAX_MEMORY_MB
        elif name == "LOGICARS_SIMD":
            ok = value in ("portable", "avx2")
        else:
            ok = value == "slots"
        if not ok:
            raise InvalidValueError(f"environment variable {name}={value[:40]!r}: expected {takes}")


def set_num_threads(threads: int) -> None:
    """Sets the engine's worker threads (0: `RAYON_NUM_THREADS`, else one per core).

    Results do not depend on the thread count.
    """
    _core.set_num_threads(check_int("threads", threads, 0, MAX_THREADS))


def build_info() -> dict[str, str]:
    """Build profile, compiled target features, the SIMD kernels in use and the engine
    of hard circuits (`hard_engine`: `jit-avx512`, `jit-avx2` or `slots`)."""
    return dict(_core.build_info())


def version() -> str:
    """This logicars' version (`logicars.__version__`)."""
    return build_info()["version"]


__all__ = ["build_info", "check_environment", "num_threads", "set_num_threads", "version"]
