"""The engine's process-wide settings and build: threads, version, compiled features.

Library modules import these from here, not from the package (`logicars/__init__`
imports nearly every module, so `from . import build_info` would be an import cycle)."""

from __future__ import annotations

from . import _core
from ._core import num_threads
from .model import MAX_THREADS, check_int


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


__all__ = ["build_info", "num_threads", "set_num_threads", "version"]
