"""Model specification: the fixture `config` JSON as typed Python objects."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Any

WIRINGS = ("first_kernel", "unique", "random")


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
    """

    channels: int
    perceive: PerceiveSpec
    update: UpdateSpec
    num_steps: int
    periodic: bool = False
    fire_rate: float | None = None
    loss_channels: list[int] = field(default_factory=lambda: [0])
    lr: float = 0.05

    @property
    def is_async(self) -> bool:
        return self.fire_rate is not None

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["async"] = self.is_async
        return d

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), sort_keys=True)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> ModelSpec:
        if not isinstance(d, dict):
            raise TypeError(f"config must be a dict, got {type(d).__name__}")
        try:
            p, u = d["perceive"], d["update"]
            is_async = bool(d.get("async", d.get("fire_rate") is not None))
            fire_rate = d.get("fire_rate")
            if is_async and fire_rate is None:
                fire_rate = 0.6
            return cls(
                channels=int(d["channels"]),
                perceive=PerceiveSpec(
                    n_kernels=int(p["n_kernels"]),
                    layers=[int(v) for v in p["layers"]],
                    connections=[str(v) for v in p["connections"]],
                ),
                update=UpdateSpec(
                    layers=[int(v) for v in u["layers"]],
                    connections=[str(v) for v in u["connections"]],
                ),
                num_steps=int(d["num_steps"]),
                periodic=bool(d.get("periodic", False)),
                fire_rate=float(fire_rate) if is_async else None,
                loss_channels=[int(v) for v in d.get("loss_channels", [0])],
                lr=float(d.get("lr", 0.05)),
            )
        except KeyError as e:
            raise ValueError(f"config is missing the field {e.args[0]!r}") from None

    @classmethod
    def from_json(cls, text: str) -> ModelSpec:
        try:
            d = json.loads(text)
        except json.JSONDecodeError as e:
            raise ValueError(f"config is not valid JSON: {e}") from None
        return cls.from_dict(d)

    def replace(self, **changes: Any) -> ModelSpec:
        d = asdict(self)
        d.update(changes)
        d["perceive"] = (
            PerceiveSpec(**d["perceive"]) if isinstance(d["perceive"], dict) else d["perceive"]
        )
        d["update"] = UpdateSpec(**d["update"]) if isinstance(d["update"], dict) else d["update"]
        return ModelSpec(**d)
