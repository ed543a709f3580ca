"""Model specification: the fixture `config` JSON as typed Python objects."""

from __future__ import annotations

import json
import math
import numbers
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from . import _core
from .errors import InvalidValueError

# The engine's constants, from the engine itself (one owner): the wiring kinds, the cells
# it computes together unless a spec says otherwise, its limits on a seed (a u64) and on
# its worker threads, and the training relaxations it validates (rust/core/src/relax.rs):
# the notebook's softmax, Gumbel noise with a straight-through estimator, straight-through
# without noise, Gumbel-softmax without straight-through, annealing, and the truth-table
# parametrization (4 sigmoid parameters per gate) soft or straight-through.
WIRINGS: tuple[str, ...] = tuple(_core.WIRINGS)
DEFAULT_CHUNK_CELLS: int = _core.DEFAULT_CHUNK_CELLS
INIT_LOGIT: float = _core.INIT_LOGIT
MAX_SEED: int = _core.MAX_SEED
MAX_THREADS: int = _core.MAX_THREADS
RELAX_MODES: tuple[str, ...] = tuple(_core.RELAX_MODES)

# The reference notebook's learning rate: a training option (`Model.train_step`'s and a
# `Preset`'s default), not part of a `ModelSpec`.
DEFAULT_LR = 0.05
# The notebook's AdamW weight decay (decoupled), likewise a training option.
DEFAULT_WEIGHT_DECAY = 0.01
# AdamW's first-moment decay, the notebook's (optax's default b1).
DEFAULT_BETA1 = 0.9


@dataclass(frozen=True)
class Relaxation:
    """How gates are relaxed in training: `mode` (one of `RELAX_MODES`), the backward
    temperature `tau` (gumbel-st, hard-st, gumbel-soft), the Gumbel noise scale `noise`
    (gumbel-st, gumbel-soft), `warmup`, the optimizer steps trained as softmax before
    the straight-through forward or the annealing starts (gumbel-st, hard-st, anneal), and
    `steps`, the optimizer steps over which `anneal` lowers the temperature from 1 to
    `tau`, and `hard_fraction` (softmax, truth-table), the fraction of gates that forward
    their hard gate (softmax's most likely op as `hard-st` does, truth-table's
    thresholded table as `truth-table-st` does; straight-through) in each optimizer step
    after `warmup`, drawn per gate and step; with `binarize_states` only in the rounded
    steps. None: the engine's default (tau 1, noise 1, warmup 0, steps 1000,
    hard_fraction 0) where the mode takes the parameter; giving one a mode does not
    take is an error."""

    mode: str = "softmax"
    tau: float | None = None
    noise: float | None = None
    warmup: int | None = None
    steps: int | None = None
    hard_fraction: float | None = None

    def __post_init__(self) -> None:
        # A hard fraction of 0 is none, and without one softmax's and truth-table's warmup
        # does nothing: both are left out, as the engine's config leaves them out, so that
        # a spec reads the same fresh and loaded from a checkpoint.
        if self.hard_fraction == 0:
            object.__setattr__(self, "hard_fraction", None)
        if self.hard_fraction is None and self.mode in ("softmax", "truth-table"):
            object.__setattr__(self, "warmup", None)

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"mode": self.mode}
        d.update({k: v for k, v in asdict(self).items() if k != "mode" and v is not None})
        return d

    @property
    def logits_per_gate(self) -> int:
        """Parameters of one gate: a truth table's 4 rows, else the 16 ops' logits."""
        return 4 if self.mode.startswith("truth-table") else 16

    def label(self) -> str:
        """`gumbel-st(tau=0.5)`, or the bare mode name when it has no parameters set."""
        args = ", ".join(f"{k}={v:g}" for k, v in self.to_dict().items() if k != "mode")
        return f"{self.mode}({args})" if args else self.mode


@dataclass(frozen=True)
class PerceiveSpec:
    """Perception block: `n_kernels` gate networks over each channel's 3x3 patch."""

    n_kernels: int
    layers: list[int]
    connections: list[str]


@dataclass(frozen=True)
class UpdateSpec:
    """Update network: centre cell ++ perception -> the cell's next state."""

    layers: list[int]
    connections: list[str]


@dataclass(frozen=True)
class ModelSpec:
    """Everything that fixes a DiffLogic CA model, as in the fixtures' `config` JSON.

    `fire_rate` is None for synchronous updates, else the probability that a cell
    updates in a step (asynchronous). Validation happens in Rust when a model is built.
    The learning rate is not the architecture's but the training's (`Model.train_step`,
    `Preset.lr`, `train(lr=...)`); a config from before it moved there (a checkpoint's,
    a fixture's, an old `summary.json`'s) still reads, its `lr` ignored here
    (`legacy_lr` reads it).
    """

    channels: int
    perceive: PerceiveSpec
    update: UpdateSpec
    num_steps: int
    periodic: bool = False
    fire_rate: float | None = None
    loss_channels: list[int] = field(default_factory=lambda: [0])
    relax: Relaxation = field(default_factory=Relaxation)
    # Training rounds the state to 0/1 between steps, straight-through (the last state,
    # which the loss sees, stays relaxed): the relaxed circuit then cannot pass
    # information from step to step in fractional values its hard circuit lacks.
    binarize_states: bool = False
    # With binarize_states: only the training rollout of every `binarize_every`-th optimizer
    # step rounds (the step count before its update a multiple of it), the others run
    # relaxed, so that a circuit that needs relaxed steps to learn (the lizard) still
    # learns while its rounded steps close the gap.
    binarize_every: int = 1
    # Cells the engine computes together (a multiple of 16 up to 128). Each cell's values
    # do not depend on it, but the coefficient gradients are summed chunk by chunk, so it
    # sets the last bits of training; a wide model on a small grid trains faster with
    # wider chunks (the lizard: 80, its 400 cells in 5 chunks; docs/performance.md).
    chunk_cells: int = DEFAULT_CHUNK_CELLS
    # The pass-through gate's logit in a fresh model (every other logit 0): how strongly
    # a new network starts as the identity (residual initialisation). The notebook's 10
    # makes a softmax gate ~0.9993 pass-through; from 5 (~0.91) the checkerboard's first
    # wirings solved hundreds of epochs sooner (docs/results.md, *Residual initialisation*).
    init_logit: float = INIT_LOGIT

    @property
    def is_async(self) -> bool:
        return self.fire_rate is not None

    def gates(self) -> int:
        """Number of gates with their own logits (perceive weights are shared by channels)."""
        p, u = self.perceive, self.update
        return p.n_kernels * sum(p.layers[1:]) + sum(u.layers[1:])

    def gates_per_cell(self) -> int:
        """Gate evaluations per cell and step: perception runs once per channel (and
        kernel), the update network once."""
        p, u = self.perceive, self.update
        return p.n_kernels * self.channels * sum(p.layers[1:]) + sum(u.layers[1:])

    @classmethod
    def build(
        cls,
        *,
        channels: int,
        kernels: int,
        perceive: Sequence[int],
        update: Sequence[int],
        num_steps: int,
        periodic: bool = False,
        fire_rate: float | None = None,
        loss_channels: Sequence[int] = (0,),
        relax: Relaxation | None = None,
        binarize_states: bool = False,
        binarize_every: int = 1,
        chunk_cells: int = DEFAULT_CHUNK_CELLS,
        init_logit: float = INIT_LOGIT,
    ) -> ModelSpec:
        """A spec wired as the reference notebook wires its models, from the widths alone.

        `perceive`: the perception layers' widths after the 3x3 patch's 9 inputs (e.g.
        `[8, 4, 2, 1]`); `update`: the update network's hidden widths (e.g. `[256] * 6`),
        to which its output layer of `channels` is added. The update network's input
        width `C + C * S * K` (the centre cell's channels and every channel's perception
        output: S = the last perceive width, K = `kernels`) and the wiring lists
        (`first_kernel` for the first perception layer, `unique` everywhere else) are
        derived; the engine checks the rest when a model is built.
        """
        perceive, update = [int(w) for w in perceive], [int(w) for w in update]
        # No perceive width: the engine's check of `perceive.layers` reports it.
        update_in = channels + channels * (perceive[-1] if perceive else 0) * kernels
        return cls(
            channels=channels,
            perceive=PerceiveSpec(
                n_kernels=kernels,
                layers=[9, *perceive],
                connections=(["first_kernel"] + ["unique"] * (len(perceive) - 1))[: len(perceive)],
            ),
            update=UpdateSpec(
                layers=[update_in, *update, channels],
                connections=["unique"] * (len(update) + 1),
            ),
            num_steps=num_steps,
            periodic=periodic,
            fire_rate=fire_rate,
            loss_channels=[int(c) for c in loss_channels],
            relax=Relaxation() if relax is None else relax,
            binarize_states=binarize_states,
            binarize_every=binarize_every,
            chunk_cells=chunk_cells,
            init_logit=init_logit,
        )

    def with_rounding(
        self, binarize_states: bool | None = None, binarize_every: int | None = None
    ) -> ModelSpec:
        """The spec with the given `binarize_states` and `binarize_every` (None: this
        spec's). Switching the rounding off without a period resets the period to 1: it
        only applies with the rounding."""
        states = self.binarize_states if binarize_states is None else binarize_states
        if binarize_every is None:
            binarize_every = self.binarize_every if states else 1
        return self.replace(binarize_states=states, binarize_every=binarize_every)

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["async"] = self.is_async
        # Softmax is the default and is not written, so such configs read as before.
        if self.relax == Relaxation():
            del d["relax"]
        else:
            d["relax"] = self.relax.to_dict()
        if not self.binarize_states:  # likewise
            del d["binarize_states"]
        if self.binarize_every == 1:
            del d["binarize_every"]
        if self.chunk_cells == DEFAULT_CHUNK_CELLS:  # likewise
            del d["chunk_cells"]
        if self.init_logit == INIT_LOGIT:  # likewise
            del d["init_logit"]
        return d

    def to_json(self) -> str:
        d = self.to_dict()
        # JSON has no NaN or infinity; name the field here rather than let the engine
        # report a JSON syntax error.
        numbers = [("fire_rate", d["fire_rate"], "in (0, 1]")]
        numbers += [("init_logit", d.get("init_logit"), "a finite number >= 0")]
        relax = d.get("relax", {}).items()
        numbers += [(f"relax.{k}", v, "a finite number") for k, v in relax if k != "mode"]
        for key, v, expected in numbers:
            if isinstance(v, float) and not math.isfinite(v):
                raise InvalidValueError(f"{key} must be {expected}, got {v}")
        return json.dumps(d, sort_keys=True, allow_nan=False)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> ModelSpec:
        """A spec from the fixtures' `config` dict. Types are checked, not coerced (a
        string "yes" is not `periodic=True`); value ranges are checked in Rust when a
        model is built."""
        if not isinstance(d, dict):
            raise TypeError(f"config must be a dict, got {type(d).__name__}")
        p, u = _object(d, "perceive"), _object(d, "update")
        fire_rate = d.get("fire_rate")
        is_async = _bool(d, "async", fire_rate is not None)
        if fire_rate is not None:
            fire_rate = _number(d, "fire_rate")
        elif is_async:
            fire_rate = 0.6  # the notebook's default
        return cls(
            channels=_int(d, "channels"),
            perceive=PerceiveSpec(
                n_kernels=_int(p, "n_kernels", "perceive."),
                layers=_ints(p, "layers", "perceive."),
                connections=_strs(p, "connections", "perceive."),
            ),
            update=UpdateSpec(
                layers=_ints(u, "layers", "update."),
                connections=_strs(u, "connections", "update."),
            ),
            num_steps=_int(d, "num_steps"),
            periodic=_bool(d, "periodic", False),
            fire_rate=fire_rate if is_async else None,
            loss_channels=_ints(d, "loss_channels", default=[0]),
            relax=_relaxation(d),
            binarize_states=_bool(d, "binarize_states", False),
            binarize_every=_int(d, "binarize_every") if "binarize_every" in d else 1,
            chunk_cells=_int(d, "chunk_cells") if "chunk_cells" in d else DEFAULT_CHUNK_CELLS,
            init_logit=_number(d, "init_logit") if "init_logit" in d else INIT_LOGIT,
        )

    @classmethod
    def from_json(cls, text: str) -> ModelSpec:
        try:
            d = json.loads(text)
        except json.JSONDecodeError as e:
            raise InvalidValueError(f"config is not valid JSON: {e}") from None
        return cls.from_dict(d)

    def replace(self, **changes: Any) -> ModelSpec:
        d = asdict(self)
        d.update(changes)
        d["perceive"] = (
            PerceiveSpec(**d["perceive"]) if isinstance(d["perceive"], dict) else d["perceive"]
        )
        d["update"] = UpdateSpec(**d["update"]) if isinstance(d["update"], dict) else d["update"]
        d["relax"] = Relaxation(**d["relax"]) if isinstance(d["relax"], dict) else d["relax"]
        return ModelSpec(**d)


def resolve_relaxation(
    current: Relaxation, relax: str | Relaxation | None, options: dict[str, Any]
) -> Relaxation:
    """`relax` (None: `current`) with the `options` (tau, noise, warmup, hard_fraction)
    that are given.
    A mode named by string starts from the engine's defaults, not `current`'s parameters;
    the engine checks that the mode takes them and their ranges."""
    if isinstance(relax, Relaxation):
        base = relax
    elif relax is None:
        base = current
    elif isinstance(relax, str):
        base = Relaxation(mode=relax)
    else:
        raise TypeError(f"relax must be a mode name or a Relaxation, got {type(relax).__name__}")
    return replace(base, **{k: v for k, v in options.items() if v is not None})


def legacy_lr(config: dict[str, Any]) -> float | None:
    """The learning rate a config from before it was a training option holds (checked
    as a number; its range is the training step's), or None."""
    if "lr" not in config:
        return None
    return _number(config, "lr")


# ---- typed field access for from_dict ----------------------------------------------------

_MISSING = object()
# The fields of a config's `relax` object, as the engine reads them.
_RELAX_FIELDS = frozenset(
    f["path"].partition(".")[2] for f in _core.CONFIG_FIELDS if f["path"].startswith("relax.")
)


def _get(d: dict[str, Any], key: str, prefix: str, default: Any) -> Any:
    if key in d:
        return d[key]
    if default is _MISSING:
        raise InvalidValueError(f"config is missing the field {prefix + key!r}")
    return default


def _bad(prefix: str, key: str, expected: str, got: Any) -> InvalidValueError:
    return InvalidValueError(f"config.{prefix}{key}: expected {expected}, got {got!r}")


def _is_int(v: Any) -> bool:
    return isinstance(v, numbers.Integral) and not isinstance(v, bool)


def _object(d: dict[str, Any], key: str) -> dict[str, Any]:
    v = _get(d, key, "", _MISSING)
    if not isinstance(v, dict):
        raise _bad("", key, "an object", v)
    return v


def _int(d: dict[str, Any], key: str, prefix: str = "") -> int:
    v = _get(d, key, prefix, _MISSING)
    if not _is_int(v):
        raise _bad(prefix, key, "an integer", v)
    return int(v)


def _ints(d: dict[str, Any], key: str, prefix: str = "", default: Any = _MISSING) -> list[int]:
    v = _get(d, key, prefix, default)
    if not isinstance(v, (list, tuple)) or not all(_is_int(i) for i in v):
        raise _bad(prefix, key, "a list of integers", v)
    return [int(i) for i in v]


def _strs(d: dict[str, Any], key: str, prefix: str = "") -> list[str]:
    v = _get(d, key, prefix, _MISSING)
    if not isinstance(v, (list, tuple)) or not all(isinstance(i, str) for i in v):
        raise _bad(prefix, key, "a list of strings", v)
    return list(v)


def _relaxation(d: dict[str, Any]) -> Relaxation:
    """The `relax` object (absent: softmax). Types only; the engine checks the values."""
    if "relax" not in d:
        return Relaxation()
    r = _object(d, "relax")
    mode = _get(r, "mode", "relax.", _MISSING)
    if not isinstance(mode, str):
        raise _bad("relax.", "mode", "a string", mode)
    unknown = sorted(set(r) - _RELAX_FIELDS)
    if unknown:
        raise InvalidValueError(f"config.relax: unknown field {unknown[0]!r}")
    tau = _number(r, "tau", None, "relax.") if "tau" in r else None
    noise = _number(r, "noise", None, "relax.") if "noise" in r else None
    warmup = _int(r, "warmup", "relax.") if "warmup" in r else None
    steps = _int(r, "steps", "relax.") if "steps" in r else None
    hard = _number(r, "hard_fraction", None, "relax.") if "hard_fraction" in r else None
    return Relaxation(
        mode=mode, tau=tau, noise=noise, warmup=warmup, steps=steps, hard_fraction=hard
    )


def _bool(d: dict[str, Any], key: str, default: bool) -> bool:
    v = _get(d, key, "", default)
    if not isinstance(v, bool):
        raise _bad("", key, "true or false", v)
    return v


def _number(d: dict[str, Any], key: str, default: Any = _MISSING, prefix: str = "") -> float:
    v = _get(d, key, prefix, default)
    if not isinstance(v, numbers.Real) or isinstance(v, bool):
        raise _bad(prefix, key, "a number", v)
    return float(v)
