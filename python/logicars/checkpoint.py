"""Checkpoints: a model, its AdamW state and the training state in one safetensors file.

Why this format: safetensors holds raw little-endian arrays plus a JSON header, so a
checkpoint loads without executing anything (no pickle) and other tools can read the
logits directly. The file is written to a temporary name in the same directory,
fsync'ed and renamed over the target, so a crash or a kill at any moment leaves
either the previous checkpoint or the new one, never a mix.

Layout (format "logicars-checkpoint", version 1):

- tensors: the logits by name (`perceive_logits_{i}` float32 `(K, out, 16)`,
  `update_logits_{i}` float32 `(out, 16)`), the wires (`perceive_wires_{i}`,
  `update_wires_{i}`, int32 `(2, out)`) and the AdamW moments `m/<logits name>`,
  `v/<logits name>` (float32, same shapes as the logits);
- metadata (all strings): `format`, `format_version`, `logicars_version`, `config`
  (the model spec as JSON), `t` (AdamW steps taken), `mask_seed` and `mask_draws`
  (where the async mask stream stands), `extra` (caller's JSON, e.g. the training
  loop's epoch, numpy Generator state and metrics) and `checksum`.

`checksum` is the SHA-256 hex digest of, in this order:

1. for every tensor, sorted by name: the name, the dtype tag (`F32`/`I32`), the shape
   as comma-separated decimals and the array's raw little-endian C-order bytes;
2. for every metadata field except `checksum`, sorted by key: the key and the value
   (UTF-8).

Each item is preceded by its length as 8 little-endian bytes, so no two different
contents hash the same input. The checksum catches bit flips anywhere in the tensors
or the metadata; damage to the header's structure is caught by the parser.
"""

from __future__ import annotations

import hashlib
import json
import os
import secrets
import struct
from pathlib import Path
from typing import TYPE_CHECKING, Any, Union

import numpy as np

from .errors import CheckpointError
from .spec import ModelSpec

if TYPE_CHECKING:
    from .model import Model

FORMAT = "logicars-checkpoint"
FORMAT_VERSION = 1

PathLike = Union[str, "os.PathLike[str]"]

_DTYPES = {"F32": np.dtype("<f4"), "I32": np.dtype("<i4")}
_TAGS = {np.dtype("<f4"): "F32", np.dtype("<i4"): "I32"}
_MAX_HEADER = 100 * 1024 * 1024  # safetensors' own limit
_REQUIRED_METADATA = ("config", "t", "mask_seed", "mask_draws", "extra", "checksum")


# ---- saving ---------------------------------------------------------------------------


def save_checkpoint(path: PathLike, model: Model, extra: dict[str, Any] | None = None) -> None:
    """Writes `model` (logits, wiring, AdamW state, mask stream) and `extra` to `path`.

    `extra` must be JSON-serialisable (numpy scalars and arrays are converted). The
    write is atomic: readers see the old file or the complete new one.
    """
    from safetensors.numpy import save

    tensors = _model_tensors(model)
    m_seed, m_draws = model.mask_state
    metadata = {
        "format": FORMAT,
        "format_version": str(FORMAT_VERSION),
        "logicars_version": _version(),
        "config": model.spec.to_json(),
        "t": str(int(model.optimizer_state()["t"])),
        "mask_seed": str(int(m_seed)),
        "mask_draws": str(int(m_draws)),
        "extra": json.dumps({} if extra is None else extra, sort_keys=True, default=_to_json),
    }
    metadata["checksum"] = _checksum(tensors, metadata)
    _atomic_write(Path(path), save(tensors, metadata=metadata))


def _model_tensors(model: Model) -> dict[str, np.ndarray]:
    tensors: dict[str, np.ndarray] = {}
    for name, a in model.params().items():
        tensors[name] = np.ascontiguousarray(a, dtype="<f4")
    for name, a in model.wires().items():
        tensors[name] = np.ascontiguousarray(a, dtype="<i4")
    for name, a in model.optimizer_state().items():
        if name != "t":
            tensors[name] = np.ascontiguousarray(a, dtype="<f4")
    return tensors


def _to_json(o: Any) -> Any:
    """json.dumps fallback for numpy values in `extra`."""
    if isinstance(o, np.generic):
        return o.item()
    if isinstance(o, np.ndarray):
        return o.tolist()
    if isinstance(o, Path):
        return str(o)
    raise TypeError(f"extra: {type(o).__name__} is not JSON-serialisable")


def _version() -> str:
    from . import __version__

    return str(__version__)


def _atomic_write(path: Path, data: bytes) -> None:
    """Temp file in the target's directory, fsync, rename over the target, fsync the dir."""
    directory = path.parent if str(path.parent) else Path(".")
    tmp = directory / f".{path.name}.{secrets.token_hex(6)}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    _fsync_dir(directory)


def _fsync_dir(directory: Path) -> None:
    """Makes the rename itself durable; not every platform can open a directory."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _checksum(tensors: dict[str, np.ndarray], metadata: dict[str, str]) -> str:
    h = hashlib.sha256()

    def item(b: bytes) -> None:
        h.update(struct.pack("<Q", len(b)))
        h.update(b)

    for name in sorted(tensors):
        a = tensors[name]
        item(name.encode())
        item(_TAGS[a.dtype].encode())
        item(",".join(str(d) for d in a.shape).encode())
        item(np.ascontiguousarray(a).tobytes())
    for key in sorted(metadata):
        if key != "checksum":
            item(key.encode())
            item(metadata[key].encode())
    return h.hexdigest()


# ---- loading --------------------------------------------------------------------------


def load_checkpoint(path: PathLike) -> tuple[Model, dict[str, Any]]:
    """Reads a checkpoint written by `save_checkpoint`: `(model, extra)`.

    The model comes back with its logits, wiring, AdamW moments and step count, and
    its mask stream position, so training continues exactly where it stopped. Any
    file that is not an intact checkpoint of a known version raises `CheckpointError`.
    """
    from safetensors.numpy import load

    from .model import Model

    path = Path(path)
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise CheckpointError(f"{path}: no such checkpoint file") from None
    except IsADirectoryError:
        raise CheckpointError(f"{path}: is a directory, expected a checkpoint file") from None
    except OSError as e:
        raise CheckpointError(f"{path}: cannot read checkpoint: {e.strerror or e}") from None

    metadata = _read_metadata(path, data)
    try:
        tensors = load(data)
    except Exception as e:  # the parser's own error type varies by version
        raise CheckpointError(
            f"{path}: corrupted checkpoint (tensor data unreadable: {e})"
        ) from None
    for name, a in tensors.items():
        if a.dtype not in _TAGS:
            raise CheckpointError(f"{path}: tensor {name!r} has unexpected dtype {a.dtype}")
    if _checksum(tensors, metadata) != metadata["checksum"]:
        raise CheckpointError(
            f"{path}: checksum mismatch; the checkpoint is corrupted (bit flip or partial write)"
        )

    try:
        spec = ModelSpec.from_json(metadata["config"])
        extra = json.loads(metadata["extra"])
        t, m_seed, m_draws = (int(metadata[k]) for k in ("t", "mask_seed", "mask_draws"))
    except (ValueError, TypeError) as e:
        raise CheckpointError(f"{path}: invalid checkpoint metadata: {e}") from None
    if not isinstance(extra, dict):
        raise CheckpointError(f"{path}: invalid checkpoint metadata: 'extra' is not an object")

    n_p, n_u = len(spec.perceive.layers) - 1, len(spec.update.layers) - 1
    wire_names = [f"perceive_wires_{i}" for i in range(n_p)] + [
        f"update_wires_{i}" for i in range(n_u)
    ]
    missing = [n for n in wire_names if n not in tensors]
    if missing:
        raise CheckpointError(f"{path}: checkpoint lacks the arrays {missing}")
    logit_names = [n for n in tensors if n.startswith(("perceive_logits_", "update_logits_"))]
    moments = {n: a for n, a in tensors.items() if n.startswith(("m/", "v/"))}
    unknown = sorted(set(tensors) - set(wire_names) - set(logit_names) - set(moments))
    if unknown:
        raise CheckpointError(f"{path}: checkpoint holds unexpected arrays {unknown}")
    try:
        model = Model.from_parts(
            spec,
            [tensors[f"perceive_wires_{i}"] for i in range(n_p)],
            [tensors[f"update_wires_{i}"] for i in range(n_u)],
            {n: tensors[n] for n in logit_names},
            mask_seed=m_seed,
        )
        model.set_optimizer_state({**moments, "t": np.array(t, dtype=np.int64)})
        model.mask_state = (m_seed, m_draws)
    except (ValueError, TypeError, OverflowError, KeyError) as e:
        raise CheckpointError(f"{path}: inconsistent checkpoint: {e}") from None
    return model, extra


def _read_metadata(path: Path, data: bytes) -> dict[str, str]:
    """Parses the safetensors header and checks format, version and required fields."""
    if len(data) < 8:
        raise CheckpointError(f"{path}: truncated checkpoint ({len(data)} bytes)")
    (n,) = struct.unpack("<Q", data[:8])
    if n > _MAX_HEADER or 8 + n > len(data):
        raise CheckpointError(
            f"{path}: not a safetensors file, or truncated (header of {n} bytes in a file "
            f"of {len(data)} bytes)"
        )
    try:
        header = json.loads(data[8 : 8 + n].decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        raise CheckpointError(
            f"{path}: not a safetensors file, or its header is corrupted"
        ) from None
    if not isinstance(header, dict):
        raise CheckpointError(f"{path}: not a safetensors file (header is not a JSON object)")
    meta = header.get("__metadata__")
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        raise CheckpointError(
            f"{path}: not a logicars checkpoint (metadata 'format' is not {FORMAT!r})"
        )
    if not all(isinstance(k, str) and isinstance(v, str) for k, v in meta.items()):
        raise CheckpointError(f"{path}: corrupted checkpoint metadata (non-string values)")
    version = meta.get("format_version", "")
    if not (version.isascii() and version.isdigit()):
        raise CheckpointError(f"{path}: corrupted checkpoint metadata (format_version {version!r})")
    if int(version) > FORMAT_VERSION:
        raise CheckpointError(
            f"{path}: checkpoint format version {version} is newer than this logicars "
            f"({_version()}) reads (up to {FORMAT_VERSION}); upgrade logicars"
        )
    if int(version) < 1:
        raise CheckpointError(f"{path}: unknown checkpoint format version {version}")
    missing = [k for k in _REQUIRED_METADATA if k not in meta]
    if missing:
        raise CheckpointError(f"{path}: corrupted checkpoint metadata (missing {missing})")
    return meta
