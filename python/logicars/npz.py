"""The reference fixture format: a model's config (JSON, with the notebook's `lr` where
it has one) and its wiring and gate logits as the arrays of one `.npz` file, as the
reference notebook's files and `tests/fixtures` hold them. `Model.from_npz` and
`Model.to_npz` read and write it; this module knows the file, not the model."""

from __future__ import annotations

import json
import os
import stat
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Union

import numpy as np

from . import _core
from .errors import CheckpointError
from .files import load_npz, save_atomic
from .spec import ModelSpec, legacy_lr

PathLike = Union[str, "os.PathLike[str]"]


@dataclass(frozen=True)
class NpzContents:
    """A fixture-format file as read, before any model is built."""

    spec: ModelSpec
    perceive_wires: list[np.ndarray]
    update_wires: list[np.ndarray]
    params: dict[str, np.ndarray]  # the gate logits by name
    lr: float | None  # the config's learning rate, where it names one


def read_npz(path: PathLike) -> NpzContents:
    """Reads a file in the reference fixture format; `CheckpointError` for a missing,
    damaged or foreign file."""
    try:
        # Regular files only: np.load would wait forever on a FIFO and read a device.
        mode = os.stat(path).st_mode
        if not stat.S_ISREG(mode) and not stat.S_ISDIR(mode):
            raise CheckpointError(f"{path}: not a regular file (a FIFO, device or socket)")
        # Every member's header checked before anything is allocated (issue 43).
        z = load_npz(Path(path), str(path), _core.memory_cap_mb() << 20)
        if "config" not in z:
            raise CheckpointError(f"{path}: no 'config' entry; not a logicars/fixture npz file")
        config = json.loads(str(z["config"]))
        spec = ModelSpec.from_dict(config)
        lr = legacy_lr(config)
        n_p, n_u = len(spec.perceive.layers) - 1, len(spec.update.layers) - 1
        pw = [z[f"perceive_wires_{i}"] for i in range(n_p)]
        uw = [z[f"update_wires_{i}"] for i in range(n_u)]
        logits = ("perceive_logits_", "update_logits_")
        params = {k: v for k, v in z.items() if k.startswith(logits)}
        return NpzContents(spec, pw, uw, params, lr)
    except CheckpointError:
        raise
    except FileNotFoundError:
        raise CheckpointError(f"{path}: no such file") from None
    except KeyError as e:
        raise CheckpointError(f"{path}: missing array {e.args[0]}") from None
    except (ValueError, TypeError, OSError, zipfile.BadZipFile, EOFError) as e:
        raise unreadable(path, e) from None


def unreadable(path: PathLike, e: BaseException) -> CheckpointError:
    """The error of a file that is not an (intact) fixture-format file: np.load's errors
    for files that are not npz archives vary by version, and so do a model's for arrays
    that do not fit its config."""
    return CheckpointError(f"{path}: not a readable logicars/fixture npz file: {e}")


def write_npz(path: PathLike, config_json: str, arrays: dict[str, np.ndarray]) -> None:
    """Writes `config_json` and `arrays` (wiring and logits by name) atomically to `path`,
    `.npz` added when it lacks it (as `np.savez` does)."""
    # Any: mypy checks a dict unpacked into np.savez against its allow_pickle: bool too.
    members: dict[str, Any] = {"config": np.array(config_json), **arrays}
    target = os.fspath(path)
    target = target if target.endswith(".npz") else f"{target}.npz"
    save_atomic(target, lambda f: np.savez(f, **members))
