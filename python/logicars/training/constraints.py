"""The values a training setting takes (`Constraint` and its kinds): each checks a Python
value, reads a command-line word and says in words what it accepts. `TrainConfig`'s
declarations (`logicars.training.config`) name one per setting."""

from __future__ import annotations

import abc
import math
import numbers
from dataclasses import dataclass
from typing import Any

from ..errors import InvalidValueError
from ..spec import RELAX_MODES, Relaxation

# The largest count (epochs, budgets, periods) a run takes: what a checkpoint can hold
# and read back (`logicars.runstate`), far above any real run.
MAX_COUNT = 2**40


class Constraint(abc.ABC):
    """The values a setting takes: `check` converts a Python value or raises TypeError
    (wrong type) or `InvalidValueError` (out of range), `parse` reads a command-line
    word, `expected` says in words what is accepted."""

    expected: str = ""

    @abc.abstractmethod
    def check(self, name: str, value: Any) -> Any: ...

    @abc.abstractmethod
    def parse(self, text: str) -> Any: ...


@dataclass(frozen=True)
class Count(Constraint):
    """An integer in `[lo, hi]` (bool refused)."""

    lo: int
    hi: int = MAX_COUNT

    @property
    def expected(self) -> str:  # type: ignore[override]
        return f"an integer >= {self.lo}" if self.hi >= MAX_COUNT else self._between()

    def _between(self) -> str:
        return f"an integer between {self.lo} and {self.hi}"

    def check(self, name: str, value: Any) -> int:
        if isinstance(value, bool) or not isinstance(value, numbers.Integral):
            raise TypeError(f"{name} must be an integer, got {type(value).__name__}")
        if not self.lo <= int(value) <= self.hi:
            # A technical upper bound (seeds, counts) is not worth naming for v < lo.
            bound = f">= {self.lo}" if value < self.lo and self.hi >= 2**32 else None
            bound = bound or self._between().removeprefix("an integer ")
            raise InvalidValueError(f"{name} must be {bound}, got {value}")
        return int(value)

    def parse(self, text: str) -> int:
        try:
            return int(text)
        except ValueError:
            raise ValueError(f"expected an integer, got {text!r}") from None


@dataclass(frozen=True)
class CountOrNone(Count):
    """An integer >= 1, or 0 for none (kept as None): a file or flag can switch off what
    its preset turns on."""

    lo: int = 1

    @property
    def expected(self) -> str:  # type: ignore[override]
        return f"{super().expected}, or 0 for none"

    def check(self, name: str, value: Any) -> int | None:  # type: ignore[override]
        if not isinstance(value, bool) and isinstance(value, numbers.Integral) and value <= 0:
            if value == 0:
                return None
            raise InvalidValueError(f"{name} must be >= {self.lo}, or 0 for none, got {value}")
        return super().check(name, value)


@dataclass(frozen=True)
class Number(Constraint):
    """A finite real number above `lo` (or at it, with `lo_open=False`) and at most
    `hi` (bool refused); an int reads as a float."""

    lo: float
    hi: float = math.inf
    lo_open: bool = False

    @property
    def expected(self) -> str:  # type: ignore[override]
        low = f"> {self.lo:g}" if self.lo_open else f">= {self.lo:g}"
        if self.hi < math.inf:
            bracket = "(" if self.lo_open else "["
            return f"a number in {bracket}{self.lo:g}, {self.hi:g}]"
        return f"a finite number {low}"

    def check(self, name: str, value: Any) -> float:
        if isinstance(value, bool) or not isinstance(value, numbers.Real):
            raise TypeError(f"{name} must be a number, got {value!r}")
        number = float(value)
        above = number > self.lo if self.lo_open else number >= self.lo
        if not (above and number <= self.hi and math.isfinite(number)):
            raise InvalidValueError(f"{name} must be {self.expected}, got {value}")
        return number

    def parse(self, text: str) -> float:
        try:
            return float(text)
        except ValueError:
            raise ValueError(f"expected a number, got {text!r}") from None


@dataclass(frozen=True)
class OptimizerNumber(Number):
    """A learning rate, weight decay or first-moment decay: the training step's own rule
    (the engine's `check_lr`/`check_weight_decay`/`check_beta1`), wherever one is given."""

    lo: float = 0.0
    rule: str = "lr"  # "lr", "weight_decay" or "beta1"

    @property
    def expected(self) -> str:  # type: ignore[override]
        return {
            "lr": "a finite number > 0",
            "weight_decay": "a finite number >= 0",
            "beta1": "a number in [0, 1)",
        }[self.rule]

    def check(self, name: str, value: Any) -> float:
        if isinstance(value, bool) or not isinstance(value, numbers.Real):
            raise TypeError(f"{name} must be a number, got {value!r}")
        check_optimizer_number(name, float(value), self.rule)
        return float(value)


@dataclass(frozen=True)
class Flag(Constraint):
    """True or False."""

    expected: str = "true or false"

    def check(self, name: str, value: Any) -> bool:
        if not isinstance(value, bool):
            raise TypeError(f"{name} must be True or False, got {value!r}")
        return value

    def parse(self, text: str) -> bool:
        lowered = text.strip().lower()
        if lowered not in ("true", "false"):
            raise ValueError(f"expected true or false, got {text!r}")
        return lowered == "true"


@dataclass(frozen=True)
class Choice(Constraint):
    """One of `choices`."""

    choices: tuple[str, ...]

    @property
    def expected(self) -> str:  # type: ignore[override]
        return "one of " + ", ".join(self.choices)

    def check(self, name: str, value: Any) -> str:
        if not isinstance(value, str):
            raise TypeError(f"{name} must be a string, got {type(value).__name__}")
        if value not in self.choices:
            raise InvalidValueError(f"{name} must be {self.expected}, got {value!r}")
        return value

    def parse(self, text: str) -> str:
        return text


@dataclass(frozen=True)
class RelaxMode(Choice):
    """A relaxation: a mode's name (its parameters the engine's defaults) or a
    `Relaxation`."""

    choices: tuple[str, ...] = RELAX_MODES

    def check(self, name: str, value: Any) -> str | Relaxation:  # type: ignore[override]
        if isinstance(value, Relaxation):
            return value
        if not isinstance(value, str):
            raise TypeError(
                f"{name} must be a mode name or a Relaxation, got {type(value).__name__}"
            )
        return super().check(name, value)


@dataclass(frozen=True)
class Text(Constraint):
    """A string (a path)."""

    expected: str = "a string"

    def check(self, name: str, value: Any) -> str:
        if not isinstance(value, str):
            raise TypeError(f"{name} must be a string, got {type(value).__name__}")
        return value

    def parse(self, text: str) -> str:
        return text


def check_optimizer_number(key: str, value: float, rule: str | None = None) -> None:
    """The training step's rule for a learning rate (`rule="lr"`: `lr`, `lr_end`), the
    weight decay or β1, wherever one is given (a file, `train`, a checkpoint):
    `InvalidValueError` naming `key`."""
    from .. import _core

    rule = rule or (key if key in ("weight_decay", "beta1") else "lr")
    check = {
        "lr": _core.check_lr,
        "weight_decay": _core.check_weight_decay,
        "beta1": _core.check_beta1,
    }[rule]
    try:
        check(value)
    except ValueError as e:  # the engine's message names its own argument
        raise type(e)(str(e).replace(rule, key, 1)) from None
