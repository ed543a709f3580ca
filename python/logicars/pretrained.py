"""Trained circuits in the box: the hard circuits of the five presets, shipped with the
package (`logicars/data/pretrained/NAME.npz`), so that `view`, `simulate`, `analyze`,
`export` and the tutorial can start before any training.

A shipped circuit is the hard circuit of a run of `python -m logicars train NAME` on the
preset's defaults that passed the preset's checks: each gate's op (0..15) and the wiring,
not the training's logits (a few tens of KB per preset instead of megabytes). It loads
as a `Model` whose logits pick those ops (as the softmax relaxation's, whatever the run
trained with), so `Model.simulate` runs the run's circuit exactly. Training goes on from
the trained logits of a run, not from these.

`scripts/make_pretrained.py` trains and writes them (`save_pretrained`).
"""

from __future__ import annotations

import dataclasses
import json
import os
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np

from .model import Model, PathLike
from .presets import PRESET_NAMES, get_preset
from .runs import LoadedRun
from .spec import ModelSpec, Relaxation

FORMAT = "logicars-pretrained-1"
# The checks a shipped circuit passes, as `(samples, seed)` of `evaluate`: the held-out
# draw and a larger one (`scripts/make_pretrained.py` ships only what passes both).
SHIP_CHECKS = ((64, 1), (256, 2))
# The logit of a gate's op; every other op's is 0, so the op is the gate's argmax.
_OP_LOGIT = 10.0
_GATE_OPS = 16


def _data_dir() -> Path:
    return Path(str(resources.files("logicars") / "data" / "pretrained"))


def available() -> list[str]:
    """The presets with a shipped circuit, in the presets' order."""
    d = _data_dir()
    return [name for name in PRESET_NAMES if (d / f"{name}.npz").is_file()]


def save_pretrained(model: Model, preset: str, path: PathLike, info: dict[str, Any]) -> None:
    """Writes `model`'s hard circuit (ops and wiring) for preset `preset` to `path`;
    `info` (seed, epochs, the run's summary line...) is kept for `pretrained_info`."""
    ops = model.hard_ops()
    # Any: mypy checks a dict unpacked into np.savez_compressed against its allow_pickle too.
    arrays: dict[str, Any] = {
        "format": np.array(FORMAT),
        "preset": np.array(get_preset(preset).name),
        "config": np.array(model.spec.to_json()),
        "info": np.array(json.dumps(info, sort_keys=True)),
    }
    for name, a in ops.items():
        arrays[f"ops/{name}"] = a.astype(np.uint8)
    for name, w in model.wires().items():
        arrays[f"wires/{name}"] = w.astype(np.int16 if w.max() < 2**15 else np.int32)
    with open(path, "wb") as f:
        np.savez_compressed(f, **arrays)


def _has_format(z: Any) -> bool:
    """Whether an opened .npz is in the shipped circuits' format."""
    return "format" in z.files and str(z["format"]) == FORMAT


def _read(path: Path) -> tuple[Model, str, dict[str, Any]]:
    with np.load(path, allow_pickle=False) as z:
        if not _has_format(z):
            raise ValueError(f"{path}: not a logicars pretrained circuit")
        spec = ModelSpec.from_json(str(z["config"]))
        # The ops as a softmax model's logits: the hard circuit does not depend on the
        # relaxation the run trained with (truth-table rows would need the op's table).
        spec = spec.replace(relax=Relaxation())
        ops = {k[4:]: z[k] for k in z.files if k.startswith("ops/")}
        wires = {k[6:]: z[k].astype(np.int64) for k in z.files if k.startswith("wires/")}
        preset = str(z["preset"])
        info = json.loads(str(z["info"]))
    params = {}
    for name, op in ops.items():
        logits = np.zeros(op.shape + (_GATE_OPS,), dtype=np.float32)
        np.put_along_axis(logits, op[..., None].astype(np.int64), _OP_LOGIT, axis=-1)
        params[name] = logits
    n_p, n_u = len(spec.perceive.layers) - 1, len(spec.update.layers) - 1
    model = Model.from_parts(
        spec,
        [wires[f"perceive_wires_{i}"] for i in range(n_p)],
        [wires[f"update_wires_{i}"] for i in range(n_u)],
        params,
    )
    return model, preset, info


def pretrained(name: str) -> LoadedRun:
    """The shipped trained circuit of preset `name` (`available()`), as a `LoadedRun`:
    `.model` (a `Model`), `.preset` (the preset, on the model's spec), `.summary` (how
    it was trained) and `.directory` (the current directory, where outputs go).

        >>> run = logicars.pretrained("lizard")
        >>> logicars.evaluate(run.model, run.preset).solved
        1
    """
    preset = get_preset(name)
    path = _data_dir() / f"{preset.name}.npz"
    if not path.is_file():
        raise ValueError(
            f"no shipped circuit for {preset.name!r}; shipped: {', '.join(available()) or 'none'}"
        )
    return load_pretrained(path)


def load_pretrained(path: PathLike) -> LoadedRun:
    """A circuit file in the shipped circuits' format (`save_pretrained`), as `pretrained`
    gives it: e.g. one the package no longer ships, kept for a test or a bench."""
    model, name, info = _read(Path(path))
    preset = dataclasses.replace(get_preset(name), spec=model.spec)
    summary = {"preset": preset.name, "pretrained": True, **info}
    return LoadedRun(model, preset, Path.cwd(), [], summary)


def is_circuit_file(source: PathLike) -> bool:
    """Whether `source` is a file in the shipped circuits' format (`save_pretrained`)."""
    path = Path(source)
    if path.suffix != ".npz" or not path.is_file():
        return False
    try:
        with np.load(path, allow_pickle=False) as z:
            return _has_format(z)
    except (OSError, ValueError):
        return False


def is_pretrained_name(source: PathLike) -> bool:
    """Whether a command's RUN_OR_MODEL names a shipped circuit (a preset's name that is
    not also a file or directory here)."""
    text = os.fspath(source)
    if os.path.exists(text):
        return False
    try:
        return get_preset(text).name in available()
    except ValueError:
        return False


def open_run(source: PathLike) -> LoadedRun:
    """What `view`, `simulate` and `export` take: a run directory, a model file, a circuit
    file in the shipped circuits' format (`save_pretrained`), or a preset's name for its
    shipped circuit (`pretrained`)."""
    from .runs import load_run

    if is_pretrained_name(source):
        return pretrained(os.fspath(source))
    if is_circuit_file(source):
        return load_pretrained(source)
    try:
        return load_run(source)
    except FileNotFoundError as e:
        raise FileNotFoundError(
            f"{e} (or a preset with a shipped circuit: {', '.join(available())})"
        ) from None
