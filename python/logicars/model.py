"""`Model`: a DiffLogic CA with numpy in and out, backed by the Rust engine."""

from __future__ import annotations

import json
import math
import os
from typing import TYPE_CHECKING, Any, Union

import numpy as np

from . import _core
from .arguments import (
    MAX_STEPS,
    as_binary,
    as_float_array,
    as_grid,
    as_masks,
    as_unit_array,
    as_wires,
    check_int,
    run_arguments,
)
from .checkpoint import read_checkpoint, save_checkpoint
from .errors import (
    CheckpointError,
    CheckpointMemoryError,
    InvalidValueError,
    MemoryLimitError,
    ShapeError,
)
from .npz import read_npz, unreadable, write_npz
from .spec import DEFAULT_BETA1, DEFAULT_LR, DEFAULT_WEIGHT_DECAY, MAX_SEED, ModelSpec

if TYPE_CHECKING:
    from .circuit.export import Netlist
    from .presets import Preset

PathLike = Union[str, "os.PathLike[str]"]
SpecLike = Union[ModelSpec, dict, str]


def _as_spec(spec: SpecLike) -> ModelSpec:
    if isinstance(spec, ModelSpec):
        return spec
    if isinstance(spec, str):
        return ModelSpec.from_json(spec)
    if isinstance(spec, dict):
        return ModelSpec.from_dict(spec)
    raise TypeError(f"spec must be a ModelSpec, dict or JSON string, got {type(spec).__name__}")


class Model:
    """A Differentiable Logic CA: wiring, gate logits and AdamW state.

    `Model(spec, seed=0)` draws a fresh wiring from `seed`, with every gate starting as
    a pass-through of its first input. Grids are float32 arrays `(B, H, W, C)` of 0/1.

    `lr` is the model's training default: the learning rate `train_step` uses when it is
    given none. It is None (meaning `DEFAULT_LR`, 0.05) for a new model; a model read
    from a file whose config names a learning rate (`from_npz`: the reference notebook's
    files; `load`: a checkpoint that `save` wrote from such a model, or one from before
    the learning rate was a training option) keeps that file's, and `to_npz` and `save`
    write it back.
    """

    def __init__(self, spec: SpecLike, seed: int = 0) -> None:
        self._spec = _as_spec(spec)
        seed = check_int("seed", seed, 0, MAX_SEED)
        self._engine = _core.Engine.create(self._spec.to_json(), seed)
        self._lr: float | None = None

    @classmethod
    def _wrap(cls, engine: _core.Engine) -> Model:
        model = cls.__new__(cls)
        model._engine = engine
        model._spec = ModelSpec.from_json(engine.config_json())
        model._lr = None
        return model

    @classmethod
    def from_parts(
        cls,
        spec: SpecLike,
        perceive_wires: list[np.ndarray],
        update_wires: list[np.ndarray],
        params: dict[str, np.ndarray],
        mask_seed: int = 0,
    ) -> Model:
        """A model from wires `(2, out)` per layer and named logits arrays."""
        spec = _as_spec(spec)
        pw = [as_wires(f"perceive_wires_{i}", w) for i, w in enumerate(perceive_wires)]
        uw = [as_wires(f"update_wires_{i}", w) for i, w in enumerate(update_wires)]
        flat = _flatten_params(_core.param_layout(spec.to_json()), params)
        return cls._wrap(_core.Engine.from_parts(spec.to_json(), pw, uw, flat, int(mask_seed)))

    def respecified(self, spec: SpecLike) -> Model:
        """This model's wiring, logits and async-mask stream under `spec` (the same widths,
        a training rule changed), with a fresh AdamW state."""
        spec = _as_spec(spec)
        wires = self.wires()
        n_p, n_u = len(spec.perceive.layers) - 1, len(spec.update.layers) - 1
        model = Model.from_parts(
            spec,
            [wires[f"perceive_wires_{i}"] for i in range(n_p)],
            [wires[f"update_wires_{i}"] for i in range(n_u)],
            self.params(),
        )
        model.mask_state = self.mask_state
        return model

    # ---- inspection -------------------------------------------------------------
    @property
    def spec(self) -> ModelSpec:
        return self._spec

    def params(self) -> dict[str, np.ndarray]:
        """Parameters by fixture name: `perceive_logits_{i}` (K, out, P), `update_logits_{i}`
        (out, P), with P = 16 logits per gate, or 4 truth-table entries for the
        truth-table relaxations."""
        return _unflatten(self._engine.param_info(), self._engine.logits())

    def hard_ops(self) -> dict[str, np.ndarray]:
        """Each gate's op in the hard circuit (its most likely op, 0..15 in the order of
        `logicars.circuit.export.GATE_NAMES`), by parameter name: shapes (K, out) and (out,)."""
        info = [
            (name, shape[:-1] + [1], offset // shape[-1])
            for name, shape, offset in self._engine.param_info()
        ]
        return {k: v[..., 0] for k, v in _unflatten(info, self._engine.hard_ops()).items()}

    def set_params(self, params: dict[str, np.ndarray]) -> None:
        self._engine.set_logits(_flatten_params(self._engine.param_info(), params))

    def wires(self) -> dict[str, np.ndarray]:
        """Wires by fixture name: `perceive_wires_{i}`, `update_wires_{i}`, each (2, out)."""
        pw, uw = self._engine.wires()
        out = {f"perceive_wires_{i}": w for i, w in enumerate(pw)}
        out.update({f"update_wires_{i}": w for i, w in enumerate(uw)})
        return out

    def optimizer_state(self) -> dict[str, np.ndarray]:
        """AdamW moments by parameter name (`m/…`, `v/…`) and the step count `t`."""
        m, v, t = self._engine.optimizer_state()
        info = self._engine.param_info()
        out: dict[str, np.ndarray] = {}
        for prefix, flat in (("m", m), ("v", v)):
            out.update({f"{prefix}/{k}": a for k, a in _unflatten(info, flat).items()})
        out["t"] = np.array(t, dtype=np.int64)
        return out

    def set_optimizer_state(self, state: dict[str, np.ndarray]) -> None:
        info = self._engine.param_info()
        m = _flatten_params(info, {k[2:]: a for k, a in state.items() if k.startswith("m/")})
        v = _flatten_params(info, {k[2:]: a for k, a in state.items() if k.startswith("v/")})
        self._engine.set_optimizer_state(m, v, int(state["t"]))

    @property
    def lr(self) -> float | None:
        """The learning rate `train_step` uses when given none (None: `DEFAULT_LR`)."""
        return self._lr

    @lr.setter
    def lr(self, value: float | None) -> None:
        if value is not None:
            _core.check_lr(value)
            value = float(value)
        self._lr = value

    @property
    def mask_state(self) -> tuple[int, int]:
        """(seed, draws) of the stream async masks are drawn from when none are given."""
        return self._engine.mask_state()

    @mask_state.setter
    def mask_state(self, state: tuple[int, int]) -> None:
        seed, draws = state
        self._engine.set_mask_state(
            check_int("mask seed", seed, 0, MAX_SEED), check_int("mask draws", draws, 0, MAX_SEED)
        )

    # ---- computation ------------------------------------------------------------
    def rollout(
        self,
        x: Any,
        steps: int | None = None,
        hard: bool = False,
        masks: Any = None,
        record: bool = False,
    ) -> np.ndarray:
        """Runs `steps` CA steps (default: the spec's) from `x` `(B, H, W, C)`.

        Soft gates by default, `hard=True` for the discrete circuit. Async models draw
        update masks from their seeded stream unless `masks` `(B, steps, H, W[, 1])`
        is given. Returns the final grid, or with `record` all `steps + 1` grids.
        """
        steps = self._spec.num_steps if steps is None else check_int("steps", steps, 1, MAX_STEPS)
        xa = as_unit_array("x", x)
        return self._engine.rollout(xa, steps, bool(hard), as_masks(masks, xa, steps), bool(record))

    def loss_and_grad(
        self, x: Any, y: Any, masks: Any = None
    ) -> tuple[float, dict[str, np.ndarray]]:
        """Soft loss after `num_steps` steps and its gradient w.r.t. every logit array.

        `y` is `(B, H, W, C)` (only the loss channels are used) or
        `(B, H, W, len(loss_channels))`.
        """
        xa = as_unit_array("x", x)
        ya = as_unit_array("y", y)
        loss, grad = self._engine.loss_and_grad(xa, ya, as_masks(masks, xa, self._spec.num_steps))
        return loss, _unflatten(self._engine.param_info(), grad)

    def train_step(
        self,
        x: Any,
        y: Any,
        masks: Any = None,
        *,
        lr: float | None = None,
        weight_decay: float = DEFAULT_WEIGHT_DECAY,
        beta1: float = DEFAULT_BETA1,
    ) -> tuple[float, float]:
        """One clip + AdamW step with learning rate `lr`, decoupled weight decay
        `weight_decay` and first-moment decay `beta1` (training options, not part of the
        spec); returns (soft_loss, hard_loss) measured at the logits before the update.
        Without `lr`, the model's own (`Model.lr`: a reference file's, so its optimizer
        step is the notebook's), else `DEFAULT_LR`."""
        if lr is None:
            lr = DEFAULT_LR if self._lr is None else self._lr
        xa = as_unit_array("x", x)
        ya = as_unit_array("y", y)
        masks = as_masks(masks, xa, self._spec.num_steps)
        return self._engine.train_step(xa, ya, masks, lr=lr, weight_decay=weight_decay, beta1=beta1)

    def train_step_at(
        self,
        x: Any,
        y: Any,
        *,
        steps: int,
        loss_from: int,
        lr: float | None = None,
        weight_decay: float = DEFAULT_WEIGHT_DECAY,
        beta1: float = DEFAULT_BETA1,
        keep_last: bool = False,
    ) -> tuple[float, float, np.ndarray | None]:
        """`train_step` on a rollout of `steps` steps whose loss is the mean over the
        states of steps `loss_from..steps` (a target that must hold once reached); returns
        `(soft_loss, hard_loss, last)`, `last` the hard circuit's last state `(B, H, W, C)`
        float32 0/1 with `keep_last` (what a sample pool keeps), else None."""
        if lr is None:
            lr = DEFAULT_LR if self._lr is None else self._lr
        steps = check_int("steps", steps, 1, MAX_STEPS)
        loss_from = check_int("loss_from", loss_from, 1, steps)
        xa = as_unit_array("x", x)
        ya = as_unit_array("y", y)
        return self._engine.train_step_at(
            xa,
            ya,
            None,
            lr=lr,
            weight_decay=weight_decay,
            beta1=beta1,
            steps=steps,
            loss_from=loss_from,
            keep_last=bool(keep_last),
        )

    def check_training_memory(
        self, batch: int, height: int, width: int, steps: int | None = None
    ) -> None:
        """Raises `MemoryLimitError` when training on `batch` grids of `height` x `width`
        over rollouts of `steps` steps (default: the spec's) would need buffers over
        `LOGICARS_MAX_MEMORY_MB`: `train` checks it before it makes the run directory."""
        # The batch's inputs and targets alone, in Python's integers: the engine's own
        # product of the sizes can wrap (2^31 each is 2^93 cells), issue 43.
        need = 8 * batch * height * width * self._spec.channels
        cap = _core.memory_cap_mb()
        if need > cap << 20:
            raise _core.MemoryLimitError(
                f"a grid of {batch}x{height}x{width} cells needs at least {need >> 20} MB of "
                f"buffers, more than the limit of {cap} MB (set LOGICARS_MAX_MEMORY_MB to raise it)"
            )
        self._engine.check_training_memory(batch, height, width, steps)

    def simulate(
        self,
        x: Any,
        steps: int | None = None,
        *,
        fire_rate: float | None = None,
        seed: int = 0,
        masks: Any = None,
        damage: Any = None,
        damage_steps: tuple[int, int] | None = None,
        record: bool | int = False,
        periodic: bool | None = None,
    ) -> np.ndarray:
        """Runs the hard circuit on `x` as packed bits (one bit per cell).

        Gives exactly `rollout(x, steps, hard=True, masks=...)`, much faster, on grids of
        any size. Gates are folded first: constants, pass-throughs and NOTs cost nothing.
        Where the CPU has AVX2 the circuit is compiled to machine code (256 cells per
        instruction), else the portable bit-sliced engine runs it (64 cells per word);
        `build_info()["hard_engine"]` says which. A run of fewer than 16,384 cell-steps
        (cells of all grids times steps) takes the bit-sliced engine anyway: making the
        machine code would cost more than it saves. For many short calls on one grid, a
        `Simulator` keeps the packed grid between them.

        Args:
            x: `(B, H, W, C)` grid of 0/1 (bool, integer or float dtype).
            steps: CA steps to run (default: the spec's `num_steps`).
            fire_rate: probability that a cell updates in a step. `None` (default): the
                spec's fire rate for an async model, else every cell updates; `1.0`
                forces synchronous updates. Masks are drawn from `seed` (one ChaCha8
                stream per step and row: reproducible, independent of the thread count;
                `logicars._core.draw_masks` returns them).
            seed: seed of the async masks.
            masks: explicit update masks `(B, steps, H, W[, 1])` of 0/1 instead of
                `fire_rate` (1 = the cell updates in that step).
            damage: `(H, W)` (every board) or `(B, H, W)` mask of 0/1: those cells are set
                to 0 in every channel after each damaged step (a dead region).
            damage_steps: `(start, end)`: steps `t` (0-based, `start <= t < end`) after
                which damage applies; default all steps. E.g. `(0, steps // 2)` lifts the
                damage half-way (self-healing).
            record: `False` returns the final grid `(B, H, W, C)`; `True` every grid from
                `x` on, `(steps + 1, B, H, W, C)`; an integer `k` the grids after steps
                0, k, 2k, ... and always the last, `(frames, B, H, W, C)`. Recording big
                grids over many steps is large; the engine refuses more than
                `LOGICARS_MAX_MEMORY_MB` (default 8192) with `MemoryLimitError`.
            periodic: boundary override (default: the spec's).

        Returns:
            uint8 array of 0/1.
        """
        steps = self._spec.num_steps if steps is None else check_int("steps", steps, 0, MAX_STEPS)
        xa = as_grid(x, self._spec.channels)
        run = run_arguments(self._spec, steps, fire_rate, seed, masks, damage, damage_steps, record)
        return self.hard_circuit().simulate(
            xa, steps, periodic=None if periodic is None else bool(periodic), **run
        )

    def drift_search(
        self,
        x: Any,
        targets: Any,
        loss_channels: list[int],
        *,
        steps: int | None = None,
        periodic: bool | None = None,
        seed: int = 0,
        budget: int = 20000,
        search_seed: int = 0,
        offset: int = 0,
        score_from: int | None = None,
    ) -> tuple[int, int, int, list[tuple[int, int, int]]]:
        """The engine's neutral-drift search over the hard circuit's gate ops, which
        `logicars.repair(..., method="drift")` runs: flips of one truth-table row of one
        gate, each kept when the wrong cells do not grow, for at most `budget` candidates
        (a flip of a gate that cannot reach the next state is kept without a run). The
        flips go in passes over every gate's rows, each pass in an order drawn from
        `search_seed`; `offset` is the position of the first (a search continued with
        `offset` = the candidates so far, its changes applied, goes on as one search).
        The circuit runs from `x` `(B, H, W, C)` for `steps` (default: the spec's), async
        masks from `seed` as `simulate`'s; each grid is scored on `loss_channels` against
        the closest of its options in `targets` `(O, B, H, W, len(loss_channels))`, at
        the last step, or with `score_from` at every step from it to `steps`: a candidate
        is then compared by its wrong cells at `score_from` first, then by their sum (a
        grown pattern that must hold). Returns `(wrong_before, wrong_after, evaluations,
        changes)` (wrong cells summed over the scored steps), each change
        `(parameter gate, old op, new op)` with gates numbered in `params()` order. The
        parameters are not changed."""
        steps = self._spec.num_steps if steps is None else check_int("steps", steps, 0, MAX_STEPS)
        budget = check_int("budget", budget, 0)
        xa = as_grid(x, self._spec.channels)
        ta = as_binary("targets", targets)
        want = (*xa.shape[:3], len(loss_channels))
        if ta.ndim != 5 or ta.shape[1:] != want:
            raise ShapeError(f"targets: expected shape (O, *{want}), got {ta.shape}")
        run = run_arguments(self._spec, steps, None, seed, None, None, None, False)
        if score_from is not None:
            score_from = check_int("score_from", score_from, 0, steps)
        return self._engine.drift_search(
            xa,
            ta,
            [int(c) for c in loss_channels],
            steps,
            self._spec.periodic if periodic is None else bool(periodic),
            run["fire_rate"],
            int(seed),
            budget,
            int(search_seed),
            check_int("offset", offset, 0),
            score_from,
        )

    def hard_circuit_stats(self) -> dict[str, int]:
        """Gate counts of the circuit `simulate` runs: `program_gates` (live gates of the
        step, perception counted per channel), `active_gates` (after folding constants,
        pass-throughs and NOTs, merging duplicates and dropping dead gates), by kernel
        (`and`, `and_not`, `or`, `xor`), arena `slots`, `patch_inputs` and `depth`."""
        return dict(self.hard_circuit().stats())

    def netlist(self) -> Netlist:
        """The pruned hard circuit as inputs, gates and outputs
        (`logicars.circuit.export.Netlist`)."""
        from .circuit.export import netlist

        return netlist(self)

    def prune_report(self) -> dict[str, int]:
        """Gate counts before and after each pruning stage
        (`logicars.circuit.export.prune_report`)."""
        from .circuit.export import prune_report

        return prune_report(self)

    def export(self, format: str, *, preset: Preset | str | None = None) -> str:
        """The pruned hard circuit as source text: `c` (one cell and a whole-grid step with
        the spec's boundary), `verilog` (one cell's combinational update), `digitaljs`
        (DigitalJS circuit JSON), `dot` (Graphviz) or `html` (a self-contained interactive
        page running the circuit; `preset`, a `Preset` or its name, sets its start states
        and colours, see `logicars.viz.page`)."""
        from .circuit.export import export_text

        return export_text(self, format, preset)

    def hard_circuit(self) -> _core.HardCircuit:
        """The compiled hard circuit (each gate its most likely op, folded and pruned) that
        `simulate`, `Simulator`, `netlist` and `export` run and read. The engine keeps it
        (and its JIT kernels) until the logits change, so that calling `simulate` step by
        step does not recompile; it is the model's at this call (later training makes a
        new one)."""
        return self._engine.hard_circuit()

    # ---- files ------------------------------------------------------------------
    @classmethod
    def from_npz(cls, path: PathLike) -> Model:
        """Loads parameters, wiring and config in the reference fixture format. The
        config's `lr`, where it has one, becomes the model's training default (`lr`).

        Raises `logicars.errors.CheckpointError` for a missing, damaged or foreign file.
        """
        contents = read_npz(path)
        try:
            model = cls.from_parts(
                contents.spec, contents.perceive_wires, contents.update_wires, contents.params
            )
            model.lr = contents.lr
        except KeyError as e:
            raise CheckpointError(f"{path}: missing array {e.args[0]}") from None
        except (ValueError, TypeError, OSError) as e:
            raise unreadable(path, e) from None
        return model

    def to_npz(self, path: PathLike) -> None:
        """Saves parameters, wiring and config in the reference fixture format (the
        config with the model's `lr` where it has one, as the notebook's files do)."""
        write_npz(path, self.config_json(), {**self.params(), **self.wires()})

    def config_json(self) -> str:
        """The spec as JSON, with the model's `lr` where it has one (what the files of
        `to_npz` and `save` hold)."""
        if self._lr is None:
            return self._spec.to_json()
        return json.dumps({**self._spec.to_dict(), "lr": self._lr}, sort_keys=True)

    def save(self, path: PathLike, extra: dict[str, Any] | None = None) -> None:
        """Saves everything needed to resume training (see `logicars.checkpoint`), atomically."""
        save_checkpoint(path, self, extra)

    @classmethod
    def load(cls, path: PathLike) -> Model:
        """Loads a model saved by `save` (or a training run's `model.safetensors`).

        Raises `logicars.errors.CheckpointError` for a damaged or foreign file.
        """
        return load_checkpoint(path)[0]

    def _repr_html_(self) -> str:
        """Jupyter's display: spec, gate counts and learned ops (`logicars.viz.render`)."""
        from .viz.render import model_html

        return model_html(self)

    def __repr__(self) -> str:
        s = self._spec
        mode = f"async {s.fire_rate}" if s.is_async else "sync"
        return (
            f"Model(channels={s.channels}, kernels={s.perceive.n_kernels}, "
            f"perceive={s.perceive.layers}, update={s.update.layers}, "
            f"steps={s.num_steps}, {'periodic' if s.periodic else 'zero'} boundary, {mode})"
        )


def _unflatten(info: list[tuple[str, list[int], int]], flat: np.ndarray) -> dict[str, np.ndarray]:
    out = {}
    for name, shape, offset in info:
        size = math.prod(shape)
        out[name] = flat[offset : offset + size].reshape(shape).copy()
    return out


def _flatten_params(
    info: list[tuple[str, list[int], int]], params: dict[str, np.ndarray]
) -> np.ndarray:
    total = sum(math.prod(shape) for _, shape, _ in info)
    flat = np.empty(total, dtype=np.float32)
    expected = {name for name, _, _ in info}
    unknown = sorted(set(params) - expected)
    if unknown:
        raise InvalidValueError(f"unknown parameter arrays {unknown}; expected {sorted(expected)}")
    for name, shape, offset in info:
        if name not in params:
            raise InvalidValueError(f"missing parameter array {name!r} of shape {tuple(shape)}")
        a = as_float_array(name, params[name])
        if a.shape != tuple(shape):
            raise ShapeError(f"{name}: expected shape {tuple(shape)}, got {a.shape}")
        flat[offset : offset + a.size] = a.ravel()
    return flat


def load_checkpoint(path: PathLike) -> tuple[Model, dict[str, Any]]:
    """Reads a checkpoint written by `logicars.checkpoint.save_checkpoint` (or
    `Model.save`): `(model, extra)`.

    The model comes back with its logits, wiring, AdamW moments and step count, and
    its mask stream position, so training continues exactly where it stopped. Any
    file that is not an intact checkpoint of a known version raises `CheckpointError`
    (`CheckpointMemoryError`, also a `MemoryLimitError`, for a model over the memory
    cap); the file is checked (`read_checkpoint`) before any model is built.
    """
    c = read_checkpoint(path)
    n_p, n_u = len(c.spec.perceive.layers) - 1, len(c.spec.update.layers) - 1
    logit_names = [n for n in c.tensors if n.startswith(("perceive_logits_", "update_logits_"))]
    moments = {n: a for n, a in c.tensors.items() if n.startswith(("m/", "v/"))}
    try:
        model = Model.from_parts(
            c.spec,
            [c.tensors[f"perceive_wires_{i}"] for i in range(n_p)],
            [c.tensors[f"update_wires_{i}"] for i in range(n_u)],
            {n: c.tensors[n] for n in logit_names},
            mask_seed=c.mask_seed,
        )
        model.set_optimizer_state({**moments, "t": np.array(c.t, dtype=np.int64)})
        model.mask_state = (c.mask_seed, c.mask_draws)
        model.lr = c.lr
    except MemoryLimitError as e:
        raise CheckpointMemoryError(f"{path}: {e}") from None
    except (ValueError, TypeError, OverflowError, KeyError) as e:
        raise CheckpointError(f"{path}: inconsistent checkpoint: {e}") from None
    return model, c.extra
