"""logicars: Differentiable Logic Cellular Automata with a Rust core.

Train the paper's experiments with `python -m logicars train <preset>`, or from Python:

    >>> import logicars
    >>> model = logicars.Model(logicars.get_preset("checkerboard").spec, seed=0)
"""

from __future__ import annotations

from . import errors
from ._core import build_info as _build_info
from ._core import num_threads
from ._core import set_num_threads as _set_num_threads
from .analyze import analyze  # the function shadows the submodule attribute
from .callbacks import EpochContext, StopTraining
from .display import Animation, LivePage, live, show
from .model import MAX_THREADS, Model, Simulator, check_int
from .presets import PRESETS, Preset, get_preset, preset_for_kind
from .spec import ModelSpec, PerceiveSpec, Relaxation, UpdateSpec
from .sweep import sweep  # the function shadows the submodule attribute
from .tasks import GrowTask, LifeTask, PatternTask, Task
from .train import RunResult, train  # the function shadows the submodule attribute

__version__ = dict(_build_info())["version"]


def set_num_threads(threads: int) -> None:
    """Sets the engine's worker threads (0: `RAYON_NUM_THREADS`, else one per core).

    Results do not depend on the thread count.
    """
    _set_num_threads(check_int("threads", threads, 0, MAX_THREADS))


def build_info() -> dict[str, str]:
    """Build profile, compiled target features, the SIMD kernels in use and the engine
    of hard circuits (`hard_engine`: `jit-avx2` or `slots`)."""
    return dict(_build_info())


__all__ = [
    "PRESETS",
    "Animation",
    "EpochContext",
    "GrowTask",
    "LifeTask",
    "LivePage",
    "Model",
    "ModelSpec",
    "PatternTask",
    "PerceiveSpec",
    "Preset",
    "RunResult",
    "Relaxation",
    "Simulator",
    "StopTraining",
    "Task",
    "UpdateSpec",
    "analyze",
    "build_info",
    "errors",
    "get_preset",
    "live",
    "num_threads",
    "preset_for_kind",
    "set_num_threads",
    "show",
    "sweep",
    "train",
]
