"""logicars: Differentiable Logic Cellular Automata with a Rust core.

Train the paper's experiments with `python -m logicars train <preset>`, or from Python:

    >>> import logicars
    >>> model = logicars.Model(logicars.get_preset("checkerboard").spec, seed=0)
"""

from __future__ import annotations

from . import errors
from .callbacks import EpochContext, StopTraining
from .circuit.analyze import analyze
from .circuit.evaluate import Evaluation, evaluate
from .circuit.repair import repair
from .circuit.simulate import Simulator
from .model import Model
from .presets import PRESETS, Preset, get_preset, preset_for_kind
from .pretrained import pretrained
from .runtime import build_info, num_threads, set_num_threads
from .runtime import version as _version
from .spec import ModelSpec, PerceiveSpec, Relaxation, UpdateSpec
from .sweep import sweep  # the function shadows the submodule attribute
from .tasks import GrowTask, LifeTask, PatternTask, RecordedTask, Task
from .train import RunResult, train  # the function shadows the submodule attribute
from .training.config import TrainConfig
from .viz.display import Animation, LivePage, live, show

__version__ = _version()

__all__ = [
    "PRESETS",
    "Animation",
    "EpochContext",
    "Evaluation",
    "GrowTask",
    "LifeTask",
    "LivePage",
    "Model",
    "ModelSpec",
    "PatternTask",
    "RecordedTask",
    "PerceiveSpec",
    "Preset",
    "RunResult",
    "Relaxation",
    "Simulator",
    "StopTraining",
    "Task",
    "TrainConfig",
    "UpdateSpec",
    "analyze",
    "build_info",
    "errors",
    "evaluate",
    "get_preset",
    "live",
    "num_threads",
    "preset_for_kind",
    "pretrained",
    "repair",
    "set_num_threads",
    "show",
    "sweep",
    "train",
]
