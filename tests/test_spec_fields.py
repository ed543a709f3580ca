"""spec.py's model config is the engine's: the fields `ModelSpec` writes are the ones
`logicars._core.CONFIG_FIELDS` lists (the engine's own table), and a field the engine
defaults reads back as the engine's default."""

from __future__ import annotations

from typing import Any

from logicars import _core
from logicars.spec import ModelSpec, Relaxation

ENGINE_FIELDS = {f["path"]: f for f in _core.CONFIG_FIELDS}


def paths(d: dict[str, Any], prefix: str = "") -> set[str]:
    """Every field of a config dict, nested objects as `object.field` too."""
    found = set()
    for key, value in d.items():
        found.add(prefix + key)
        if isinstance(value, dict):
            found |= paths(value, f"{prefix}{key}.")
    return found


def test_a_spec_with_every_field_writes_the_engines_fields() -> None:
    relax = Relaxation(mode="anneal", tau=0.5, noise=1.0, warmup=3, steps=10, hard_fraction=0.5)
    spec = ModelSpec.build(
        channels=2, kernels=2, perceive=[4, 2], update=[8], num_steps=3, periodic=True,
        fire_rate=0.5, loss_channels=[0], relax=relax, binarize_states=True,
        binarize_every=2, chunk_cells=80, init_logit=5.0,
    )  # fmt: skip
    assert paths(spec.to_dict()) == set(ENGINE_FIELDS)


def test_the_engines_defaults_are_the_specs() -> None:
    minimal = ModelSpec.build(
        channels=1, kernels=1, perceive=[2], update=[4], num_steps=1, periodic=True
    ).to_dict()
    for path, field in ENGINE_FIELDS.items():
        if "default" not in field or "." in path:
            continue
        minimal.pop(path, None)  # absent: the engine's default
    spec = ModelSpec.from_dict(minimal)
    read = {
        "async": spec.is_async,
        "fire_rate": spec.fire_rate,
        "relax": spec.relax.to_dict(),
        "binarize_states": spec.binarize_states,
        "binarize_every": spec.binarize_every,
        "chunk_cells": spec.chunk_cells,
        "init_logit": spec.init_logit,
    }
    defaults = {p: f["default"] for p, f in ENGINE_FIELDS.items() if "default" in f}
    assert read == defaults
