"""Type stubs of the compiled engine (`rust/py`)."""

from typing import Any, final

import numpy as np
import numpy.typing as npt

# pyo3 lists what the module adds, in that order; its classes cannot be subclassed (@final).
__all__ = [
    "Engine",
    "HardCircuit",
    "Simulator",
    "unique_pairs",
    "set_num_threads",
    "num_threads",
    "memory_cap_mb",
    "build_info",
    "measure_fma_peak",
    "frame_steps",
    "draw_masks",
    "check_lr",
    "check_weight_decay",
    "check_beta1",
    "param_layout",
    "InvalidValueError",
    "ShapeError",
    "MemoryLimitError",
    "_panic_for_tests",
    "PanicException",
    "EXPORT_FORMATS",
    "GATE_NAMES",
    "MAX_SEED",
    "MAX_THREADS",
    "DEFAULT_CHUNK_CELLS",
    "INIT_LOGIT",
    "RELAX_MODES",
    "WIRINGS",
    "CONFIG_FIELDS",
]

EXPORT_FORMATS: list[str]
# The 16 gate names in index order (FALSE, AND, ..., TRUE).
GATE_NAMES: list[str]

# The engine's limits, defaults and names (rust/py/src/constants.rs): read, never copied.
# The largest seed (seeds are u64).
MAX_SEED: int
# The most threads a pool may have (`set_num_threads`, `RAYON_NUM_THREADS`).
MAX_THREADS: int
# Cells per chunk when a config gives no `chunk_cells`.
DEFAULT_CHUNK_CELLS: int
# The pass-through gate's logit in a fresh model when a config gives no `init_logit`.
INIT_LOGIT: float
# The config's `relax.mode` names and wiring names, in the engine's order.
RELAX_MODES: tuple[str, ...]
WIRINGS: tuple[str, ...]

# Every field of the config JSON (rust/core/src/spec/schema.rs), in the order the
# engine's messages report them, each a dict: "path" (dotted, e.g. "perceive.layers"),
# "list" (a list, each item "expected"), "expected" (what a value must be, as the engine's
# messages say it), "required", and "default" (the value of an absent field, only where
# it has one: a relaxation's parameters depend on the mode).
CONFIG_FIELDS: tuple[dict[str, Any], ...]

class InvalidValueError(ValueError): ...
class ShapeError(ValueError): ...
class MemoryLimitError(MemoryError): ...

class PanicException(BaseException):
    """A Rust panic (a bug in the engine), raised instead of aborting the process."""

@final
class Engine:
    @staticmethod
    def create(config_json: str, seed: int) -> Engine: ...
    @staticmethod
    def from_parts(
        config_json: str,
        perceive_wires: list[npt.NDArray[np.int32]],
        update_wires: list[npt.NDArray[np.int32]],
        logits: npt.NDArray[np.float32],
        mask_seed: int,
    ) -> Engine: ...
    def config_json(self) -> str: ...
    def wires(self) -> tuple[list[npt.NDArray[np.int32]], list[npt.NDArray[np.int32]]]: ...
    def param_info(self) -> list[tuple[str, list[int], int]]: ...
    def logits(self) -> npt.NDArray[np.float32]: ...
    def set_logits(self, logits: npt.NDArray[np.float32]) -> None: ...
    def optimizer_state(
        self,
    ) -> tuple[npt.NDArray[np.float32], npt.NDArray[np.float32], int]: ...
    def set_optimizer_state(
        self, m: npt.NDArray[np.float32], v: npt.NDArray[np.float32], t: int
    ) -> None: ...
    def mask_state(self) -> tuple[int, int]: ...
    def set_mask_state(self, seed: int, draws: int) -> None: ...
    def rollout(
        self,
        x: npt.NDArray[np.float32],
        steps: int,
        hard: bool,
        masks: npt.NDArray[np.float32] | None = None,
        record: bool = False,
    ) -> npt.NDArray[np.float32]: ...
    def loss_and_grad(
        self,
        x: npt.NDArray[np.float32],
        y: npt.NDArray[np.float32],
        masks: npt.NDArray[np.float32] | None = None,
    ) -> tuple[float, npt.NDArray[np.float32]]: ...
    def train_step(
        self,
        x: npt.NDArray[np.float32],
        y: npt.NDArray[np.float32],
        masks: npt.NDArray[np.float32] | None = None,
        *,
        lr: float,
        weight_decay: float,
        beta1: float = 0.9,
    ) -> tuple[float, float]: ...
    def train_step_at(
        self,
        x: npt.NDArray[np.float32],
        y: npt.NDArray[np.float32],
        masks: npt.NDArray[np.float32] | None = None,
        *,
        lr: float,
        weight_decay: float,
        beta1: float = 0.9,
        steps: int,
        loss_from: int,
        keep_last: bool = False,
    ) -> tuple[float, float, npt.NDArray[np.float32] | None]: ...
    def check_training_memory(
        self, batch: int, height: int, width: int, steps: int | None = None
    ) -> None: ...
    def hard_ops(self) -> npt.NDArray[np.uint8]: ...
    def drift_search(
        self,
        x: npt.ArrayLike,
        targets: npt.ArrayLike,
        loss_channels: list[int],
        steps: int,
        periodic: bool,
        fire_rate: float | None,
        seed: int,
        budget: int,
        search_seed: int,
        offset: int,
        score_from: int | None = None,
    ) -> tuple[int, int, int, list[tuple[int, int, int]]]: ...
    def hard_circuit(self) -> HardCircuit: ...

@final
class HardCircuit:
    def simulate(
        self,
        x: npt.ArrayLike,
        steps: int,
        fire_rate: float | None = None,
        seed: int = 0,
        masks: npt.ArrayLike | None = None,
        damage: npt.ArrayLike | None = None,
        damage_from: int = 0,
        damage_until: int | None = None,
        record_every: int = 0,
        periodic: bool | None = None,
        words: int = 0,
    ) -> npt.NDArray[np.uint8]: ...
    def stats(self) -> list[tuple[str, int]]: ...
    def netlist(
        self,
    ) -> tuple[
        list[tuple[int, int, int]], list[tuple[str, int, int]], list[tuple[int | None, bool]]
    ]: ...
    def export(self, format: str, periodic: bool | None = None) -> str: ...
    @property
    def periodic(self) -> bool: ...

@final
class Simulator:
    def __new__(
        cls,
        circuit: HardCircuit,
        x: npt.ArrayLike,
        periodic: bool | None = None,
        engine: str | None = None,
    ) -> Simulator: ...
    def load(self, x: npt.ArrayLike) -> None: ...
    def read(self) -> npt.NDArray[np.uint8]: ...
    def run(
        self,
        steps: int,
        fire_rate: float | None = None,
        seed: int = 0,
        masks: npt.ArrayLike | None = None,
        damage: npt.ArrayLike | None = None,
        damage_from: int = 0,
        damage_until: int | None = None,
        record_every: int = 0,
        read: bool = True,
    ) -> npt.NDArray[np.uint8] | None: ...
    @property
    def engine(self) -> str: ...
    @property
    def shape(self) -> tuple[int, int, int, int]: ...
    @property
    def periodic(self) -> bool: ...

def frame_steps(steps: int, record_every: int) -> list[int]: ...
def draw_masks(
    batch: int, height: int, width: int, steps: int, fire_rate: float, seed: int
) -> npt.NDArray[np.uint8]: ...
def check_lr(lr: float) -> None: ...
def check_weight_decay(weight_decay: float) -> None: ...
def check_beta1(beta1: float) -> None: ...
def param_layout(config_json: str) -> list[tuple[str, list[int], int]]: ...
def unique_pairs(in_width: int, out: int) -> tuple[list[int], list[int]]: ...
def set_num_threads(threads: int) -> None: ...
def num_threads() -> int: ...
def memory_cap_mb() -> int: ...
def build_info() -> list[tuple[str, str]]: ...
def measure_fma_peak() -> float: ...
def _panic_for_tests(message: str) -> None:
    """Test hook, not API: panics on an engine worker thread."""
