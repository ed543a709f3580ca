"""Checkpoints: a model, its AdamW state and the training state in one safetensors file.

Why this format: safetensors holds raw little-endian arrays plus a JSON header, so a
checkpoint loads without executing anything (no pickle) and other tools can read the
logits directly. The file is written to a temporary name in the same directory,
fsync'ed and renamed over the target, so a crash or a kill at any moment leaves
either the previous checkpoint or the new one, never a mix.

This module knows the file, not the model it holds (the model layer imports it):
`read_checkpoint` checks a file and returns its arrays, `logicars.model.load_checkpoint`
(and `Model.load`) builds the model from them.

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
import stat
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO, Union

import numpy as np

from .errors import CheckpointError, CheckpointMemoryError
from .files import json_depth, write_atomic
from .spec import ModelSpec, legacy_lr

if TYPE_CHECKING:
    from .model import Model

FORMAT = "logicars-checkpoint"
FORMAT_VERSION = 1

PathLike = Union[str, "os.PathLike[str]"]

_DTYPES = {"F32": np.dtype("<f4"), "I32": np.dtype("<i4")}
_TAGS = {np.dtype("<f4"): "F32", np.dtype("<i4"): "I32"}
_MAX_HEADER = 100 * 1024 * 1024  # safetensors' own limit
# Nesting of the header, config and extra JSON: ours are a few levels deep; a hostile
# file nested 200,000 deep would end json.loads in RecursionError.
MAX_JSON_DEPTH = 64
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
        "config": model.config_json(),  # with the model's lr where it has one
        "t": str(int(model.optimizer_state()["t"])),
        "mask_seed": str(int(m_seed)),
        "mask_draws": str(int(m_draws)),
        "extra": json.dumps({} if extra is None else extra, sort_keys=True, default=_to_json),
    }
    metadata["checksum"] = _checksum(tensors, metadata)
    write_atomic(Path(path), save(tensors, metadata=metadata))


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
    from ._core import build_info

    return str(dict(build_info())["version"])


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


@dataclass(frozen=True)
class CheckpointContents:
    """An intact checkpoint as read from its file, before any model is built."""

    spec: ModelSpec
    tensors: dict[str, np.ndarray]
    t: int
    mask_seed: int
    mask_draws: int
    extra: dict[str, Any]
    lr: float | None = None  # the model's own learning rate, where its config names one


def read_checkpoint(path: PathLike) -> CheckpointContents:
    """Reads and checks a checkpoint written by `save_checkpoint` (`logicars.model.
    load_checkpoint` builds its model).

    Any file that is not an intact checkpoint of a known version raises `CheckpointError`
    (`CheckpointMemoryError`, also a `MemoryLimitError`, for one over the memory cap).
    Only regular files are opened; the header is read and checked (sizes, JSON depth,
    dtypes and shapes against the config) before any tensor data is read.
    """
    path = Path(path)
    with _open_regular(path) as f:
        size = os.fstat(f.fileno()).st_size
        cap = memory_cap_bytes()
        if size > cap:
            raise CheckpointMemoryError(
                f"{path}: a checkpoint file of {size >> 20} MB is larger than the memory "
                f"limit of {cap >> 20} MB (set LOGICARS_MAX_MEMORY_MB to raise it); "
                "not a checkpoint this logicars wrote"
            )
        header_len, header = _read_header(path, f, size)
        metadata = _check_metadata(path, header)
        spec = _spec_of(path, metadata)
        layout = _tensor_layout(path, header, size, 8 + header_len)
        _check_tensors_against(path, spec, layout)
        data = _read_exact(path, f, size - 8 - header_len)
    tensors = {
        name: np.frombuffer(
            data, dtype=_DTYPES[tag], count=int(np.prod(shape, dtype=np.int64)), offset=begin
        ).reshape(shape)
        for name, (tag, shape, begin, _) in layout.items()
    }
    if _checksum(tensors, metadata) != metadata["checksum"]:
        raise CheckpointError(
            f"{path}: checksum mismatch; the checkpoint is corrupted (bit flip or partial write)"
        )

    extra = _bounded_json(path, "extra", metadata["extra"])
    if not isinstance(extra, dict):
        raise CheckpointError(f"{path}: invalid checkpoint metadata: 'extra' is not an object")
    t, m_seed, m_draws = (_u64(path, k, metadata[k]) for k in ("t", "mask_seed", "mask_draws"))
    lr = _move_legacy_lr(path, metadata, extra)

    return CheckpointContents(spec, tensors, t, m_seed, m_draws, extra, lr)


def _open_regular(path: Path) -> BinaryIO:
    """`path` opened for reading if it is a regular file. O_NONBLOCK: opening a FIFO
    does not wait for a writer, so it is refused here instead of hanging; devices
    (`/dev/zero`, `/dev/urandom`) and sockets are refused the same way."""
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags)
    except FileNotFoundError:
        raise CheckpointError(f"{path}: no such checkpoint file") from None
    except IsADirectoryError:
        raise CheckpointError(f"{path}: is a directory, expected a checkpoint file") from None
    except OSError as e:
        raise CheckpointError(f"{path}: cannot read checkpoint: {e.strerror or e}") from None
    try:
        mode = os.fstat(fd).st_mode
        if stat.S_ISDIR(mode):
            raise CheckpointError(f"{path}: is a directory, expected a checkpoint file")
        if not stat.S_ISREG(mode):
            raise CheckpointError(
                f"{path}: not a regular file (a FIFO, device or socket); expected a checkpoint file"
            )
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def _read_exact(path: Path, f: BinaryIO, n: int) -> bytes:
    """Exactly `n` bytes from `f`; a file that shrank under us is truncated."""
    try:
        data = f.read(n)
    except OSError as e:
        raise CheckpointError(f"{path}: cannot read checkpoint: {e.strerror or e}") from None
    if len(data) != n:
        raise CheckpointError(f"{path}: truncated checkpoint (the file changed while read)")
    return data


def _read_header(path: Path, f: BinaryIO, size: int) -> tuple[int, dict[str, Any]]:
    """The safetensors header's length and its JSON object, checked for size and depth."""
    if size < 8:
        raise CheckpointError(f"{path}: truncated checkpoint ({size} bytes)")
    (n,) = struct.unpack("<Q", _read_exact(path, f, 8))
    if n > _MAX_HEADER or 8 + n > size:
        raise CheckpointError(
            f"{path}: not a safetensors file, or truncated (header of {n} bytes in a file "
            f"of {size} bytes)"
        )
    raw = _read_exact(path, f, n)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise CheckpointError(
            f"{path}: not a safetensors file, or its header is corrupted"
        ) from None
    try:
        header = _bounded_json(path, "header", text)
    except CheckpointError:
        raise CheckpointError(
            f"{path}: not a safetensors file, or its header is corrupted"
        ) from None
    if not isinstance(header, dict):
        raise CheckpointError(f"{path}: not a safetensors file (header is not a JSON object)")
    return n, header


def _bounded_json(path: Path, what: str, text: str) -> Any:
    """`json.loads(text)`, refusing nesting deeper than `MAX_JSON_DEPTH` (which would
    otherwise end in RecursionError) with CheckpointError."""
    # The one depth rule of the package's JSON readers (`logicars.files`).
    if json_depth(text) > MAX_JSON_DEPTH:
        raise CheckpointError(
            f"{path}: invalid checkpoint metadata: {what} is nested deeper than "
            f"{MAX_JSON_DEPTH} levels"
        )
    try:
        return json.loads(text)
    except (ValueError, RecursionError) as e:
        raise CheckpointError(f"{path}: invalid checkpoint metadata: {what}: {e}") from None


def _check_metadata(path: Path, header: dict[str, Any]) -> dict[str, str]:
    """Checks format, version and required fields of the header's metadata."""
    meta = header.get("__metadata__")
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        raise CheckpointError(
            f"{path}: not a logicars checkpoint (metadata 'format' is not {FORMAT!r})"
        )
    if not all(isinstance(k, str) and isinstance(v, str) for k, v in meta.items()):
        raise CheckpointError(f"{path}: corrupted checkpoint metadata (non-string values)")
    version = meta.get("format_version", "")
    if not (version.isascii() and version.isdigit() and len(version) <= 9):
        raise CheckpointError(
            f"{path}: corrupted checkpoint metadata (format_version {_shown(version)!r})"
        )
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


def _spec_of(path: Path, metadata: dict[str, str]) -> ModelSpec:
    config = _bounded_json(path, "config", metadata["config"])
    try:
        if not isinstance(config, dict):
            raise TypeError("config is not a JSON object")
        return ModelSpec.from_dict(config)
    except (ValueError, TypeError, OverflowError) as e:
        raise CheckpointError(f"{path}: invalid checkpoint metadata: {e}") from None


def _move_legacy_lr(path: Path, metadata: dict[str, str], extra: dict[str, Any]) -> float | None:
    """A checkpoint from before the learning rate was a training option kept it in its
    model config: a training state (an `extra` with a `preset`) gets it where it is now.
    Returns it (the model's own `lr`; `Model.save` writes a reference file's there)."""
    config = _bounded_json(path, "config", metadata["config"])
    try:
        lr = legacy_lr(config)
    except ValueError as e:
        raise CheckpointError(f"{path}: invalid checkpoint metadata: {e}") from None
    preset = extra.get("preset")
    if lr is not None and isinstance(preset, dict):
        preset.setdefault("lr", lr)
    return lr


def _u64(path: Path, key: str, value: str) -> int:
    if not (value.isascii() and value.isdigit() and len(value) <= 20 and int(value) < 2**64):
        raise CheckpointError(
            f"{path}: invalid checkpoint metadata: {key} must be an integer in "
            f"[0, 2**64 - 1], got {_shown(value)!r}"
        )
    return int(value)


def _shown(value: str) -> str:
    """A metadata string for an error message, cut short when a hostile file made it long."""
    return value if len(value) <= 40 else f"{value[:20]}... ({len(value)} chars)"


def _tensor_layout(
    path: Path, header: dict[str, Any], size: int, data_start: int
) -> dict[str, tuple[str, tuple[int, ...], int, int]]:
    """Each tensor's `(dtype tag, shape, begin, end)` (offsets into the data section),
    checked: known dtype, sizes that match the shape, the data section covered exactly,
    in order, up to the file's end (no gaps, overlaps or trailing bytes)."""
    layout: dict[str, tuple[str, tuple[int, ...], int, int]] = {}
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        bad = f"{path}: corrupted checkpoint (tensor {name[:80]!r}:"
        if not isinstance(entry, dict):
            raise CheckpointError(f"{bad} its header entry is not an object)")
        tag, shape, offsets = entry.get("dtype"), entry.get("shape"), entry.get("data_offsets")
        if tag not in _DTYPES:
            raise CheckpointError(f"{bad} unexpected dtype {str(tag)[:20]!r})")
        if not (
            isinstance(shape, list)
            and len(shape) <= 8
            and all(type(d) is int and 0 <= d < 2**40 for d in shape)
        ):
            raise CheckpointError(f"{bad} invalid shape)")
        if not (
            isinstance(offsets, list)
            and len(offsets) == 2
            and all(type(o) is int and 0 <= o <= size for o in offsets)
        ):
            raise CheckpointError(f"{bad} invalid data offsets)")
        count = 1
        for d in shape:
            count *= d
        begin, end = offsets
        if end - begin != count * _DTYPES[tag].itemsize:
            raise CheckpointError(f"{bad} data offsets do not match its shape and dtype)")
        layout[name] = (tag, tuple(shape), begin, end)
    position = 0
    for name, (_, _, begin, end) in sorted(layout.items(), key=lambda kv: kv[1][2:]):
        if begin != position:
            raise CheckpointError(
                f"{path}: corrupted checkpoint (tensor data of {name[:80]!r} is not where "
                "the header says)"
            )
        position = end
    if data_start + position != size:
        raise CheckpointError(
            f"{path}: truncated or corrupted checkpoint (the header describes "
            f"{data_start + position} bytes, the file has {size})"
        )
    return layout


def _expected_tensors(spec: ModelSpec) -> dict[str, tuple[str, tuple[int, ...]]]:
    """Every tensor a checkpoint of `spec` holds: name -> (dtype tag, shape)."""
    per_gate = spec.relax.logits_per_gate
    k = spec.perceive.n_kernels
    out: dict[str, tuple[str, tuple[int, ...]]] = {}
    for prefix, layers, kernels in (
        ("perceive", spec.perceive.layers, (k,)),
        ("update", spec.update.layers, ()),
    ):
        for i, width in enumerate(layers[1:]):
            logits = (*kernels, width, per_gate)
            out[f"{prefix}_logits_{i}"] = ("F32", logits)
            out[f"m/{prefix}_logits_{i}"] = ("F32", logits)
            out[f"v/{prefix}_logits_{i}"] = ("F32", logits)
            out[f"{prefix}_wires_{i}"] = ("I32", (2, width))
    return out


def _check_tensors_against(
    path: Path, spec: ModelSpec, layout: dict[str, tuple[str, tuple[int, ...], int, int]]
) -> None:
    """The header's tensors are exactly those of the config, of their dtypes and shapes,
    and the model they make fits the memory cap: all checked before anything is read
    or allocated."""
    gates = spec.gates()
    # Logits, gradient and two AdamW moments per parameter, as the engine counts them.
    need = gates * spec.relax.logits_per_gate * 4 * 4
    cap = memory_cap_bytes()
    if need > cap:
        raise CheckpointMemoryError(
            f"{path}: its model of {gates} gates needs about {need >> 20} MB for its "
            f"logits, gradient and AdamW state, more than the limit of {cap >> 20} MB "
            "(set LOGICARS_MAX_MEMORY_MB to raise it)"
        )
    expected = _expected_tensors(spec)
    missing = sorted(set(expected) - set(layout))
    if missing:
        raise CheckpointError(f"{path}: inconsistent checkpoint: missing arrays {missing[:8]}")
    unknown = sorted(set(layout) - set(expected))
    if unknown:
        raise CheckpointError(
            f"{path}: checkpoint holds unexpected arrays {[u[:80] for u in unknown[:8]]}"
        )
    for name, (tag, shape) in expected.items():
        got_tag, got_shape = layout[name][:2]
        if (got_tag, got_shape) != (tag, shape):
            raise CheckpointError(
                f"{path}: inconsistent checkpoint: {name} is {got_tag} {got_shape}, "
                f"expected {tag} {shape} for its config"
            )


def memory_cap_bytes() -> int:
    """The engine's memory cap in bytes (`LOGICARS_MAX_MEMORY_MB`, else 8192 MB or less
    under an address-space or cgroup limit; rust/core/src/engine.rs)."""
    from . import _core

    return int(_core.memory_cap_mb()) << 20
