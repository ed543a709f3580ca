"""Hostile checkpoint files: special files, oversize and sparse files, deep JSON, and
attacks with a recomputed checksum (it is unkeyed, so anyone can recompute it) on every
config and training-state field and every tensor's dtype and shape. Loading must only
ever raise `CheckpointError`, at once, without reading more than the header allows."""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import signal
import struct
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from test_checkpoint import tiny_spec, trained_model

import logicars
import logicars.checkpoint as ckpt_mod
from logicars.checkpoint import save_checkpoint
from logicars.errors import CheckpointError, CheckpointMemoryError, MemoryLimitError
from logicars.model import load_checkpoint
from logicars.runs import load_run
from logicars.runstate import EpochMetrics, RunState


def crafted(path: Path, tensors: dict[str, np.ndarray], meta: dict[str, str]) -> Path:
    """A checkpoint of these tensors and metadata with a valid (recomputed) checksum."""
    from safetensors.numpy import save_file

    meta = dict(meta)
    meta["checksum"] = ckpt_mod._checksum(tensors, meta)
    save_file(tensors, str(path), metadata=meta)
    return path


def parts(path: Path) -> tuple[dict[str, np.ndarray], dict[str, str]]:
    from safetensors.numpy import load_file

    data = path.read_bytes()
    (n,) = struct.unpack("<Q", data[:8])
    return load_file(str(path)), json.loads(data[8 : 8 + n])["__metadata__"]


def train_extra(seed: int = 3) -> dict[str, Any]:
    """A training loop's `extra` for the tiny model, as `train` writes it."""
    preset = dataclasses.replace(
        logicars.get_preset("checkerboard"), spec=tiny_spec(), batch=2, height=5, width=5
    )
    rng = np.random.default_rng(seed)
    rng.random(3)
    state = RunState(
        preset=preset,
        seed=seed,
        target_epochs=10,
        early_stop=None,
        rng=rng,
        metrics=[EpochMetrics(e, 1.5, 2.0, 0.1 * e) for e in (1, 2)],
    )
    return state.to_extra()


@pytest.fixture(scope="module")
def good(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("hostile") / "model.safetensors"
    save_checkpoint(path, trained_model(), train_extra())
    return path


@contextlib.contextmanager
def deadline(seconds: int) -> Iterator[None]:
    """Fails instead of hanging (a FIFO open waits for a writer forever)."""

    def expired(signum: int, frame: Any) -> None:
        raise TimeoutError(f"still loading after {seconds} s: hangs")

    previous = signal.signal(signal.SIGALRM, expired)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def refused(path: Path, match: str | None = None) -> CheckpointError:
    """Loading `path` raises CheckpointError (matching `match`), within a second."""
    t0 = time.perf_counter()
    with deadline(10), pytest.raises(CheckpointError, match=match) as info:
        model, extra = load_checkpoint(path)
        RunState.from_extra(extra, model.spec, path)
    assert time.perf_counter() - t0 < 2.0
    assert str(path) in str(info.value)
    return info.value


def test_the_good_file_loads(good: Path) -> None:
    model, extra = load_checkpoint(good)
    state = RunState.from_extra(extra, model.spec, good)
    assert state.epoch == 2 and state.seed == 3


# ---- special files --------------------------------------------------------------------


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
def test_fifo_is_refused_not_waited_on(tmp_path: Path) -> None:
    fifo = tmp_path / "model.safetensors"
    os.mkfifo(fifo)
    refused(fifo, "not a regular file")


@pytest.mark.parametrize("device", ["/dev/zero", "/dev/urandom", "/dev/null"])
def test_device_symlinks_are_refused(tmp_path: Path, device: str) -> None:
    if not os.path.exists(device):
        pytest.skip(f"no {device}")
    link = tmp_path / "model.safetensors"
    link.symlink_to(device)
    refused(link, "not a regular file")


def test_npz_loading_refuses_special_files(tmp_path: Path) -> None:
    fifo = tmp_path / "params.npz"
    os.mkfifo(fifo)
    link = tmp_path / "zero.npz"
    link.symlink_to("/dev/zero")
    for path in (fifo, link):
        with deadline(10), pytest.raises(CheckpointError, match="not a regular file"):
            logicars.Model.from_npz(path)
        with deadline(10), pytest.raises(CheckpointError, match="not a regular file"):
            load_run(path)


def test_symlink_to_a_good_file_loads(tmp_path: Path, good: Path) -> None:
    link = tmp_path / "link.safetensors"
    link.symlink_to(good)
    load_checkpoint(link)


# ---- sizes ----------------------------------------------------------------------------


def test_sparse_file_over_the_cap_is_refused_unread(tmp_path: Path) -> None:
    """A 20 GB sparse file: refused from its size, nothing read."""
    path = tmp_path / "sparse.safetensors"
    with open(path, "wb") as f:
        f.truncate(20 << 30)
    err = refused(path, "larger than the memory limit")
    assert isinstance(err, MemoryLimitError)


def test_trailing_data_is_refused_unread(tmp_path: Path, good: Path) -> None:
    """A valid checkpoint followed by 6 GiB of zeros (sparse): refused from the header."""
    path = tmp_path / "trailing.safetensors"
    path.write_bytes(good.read_bytes())
    with open(path, "r+b") as f:
        f.truncate(path.stat().st_size + (6 << 30))
    refused(path, "the header describes")


def test_cap_follows_the_environment(
    tmp_path: Path, good: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LOGICARS_MAX_MEMORY_MB", "0")
    refused(good, "LOGICARS_MAX_MEMORY_MB")
    for value in ("junk", "9" * 30, ""):
        monkeypatch.setenv("LOGICARS_MAX_MEMORY_MB", value)
        assert ckpt_mod.memory_cap_bytes() == 8192 << 20


# ---- deep JSON ------------------------------------------------------------------------


def raw_header_file(path: Path, header: bytes) -> Path:
    path.write_bytes(struct.pack("<Q", len(header)) + header)
    return path


def test_deeply_nested_header_is_refused(tmp_path: Path) -> None:
    refused(raw_header_file(tmp_path / "deep.safetensors", b"[" * 200_000), "not a safetensors")
    deep_obj = b'{"a":' * 100_000 + b"1" + b"}" * 100_000
    refused(raw_header_file(tmp_path / "deep2.safetensors", deep_obj), "not a safetensors")


def test_brackets_inside_strings_do_not_count_as_nesting(tmp_path: Path) -> None:
    model = trained_model()
    path = tmp_path / "m.safetensors"
    save_checkpoint(path, model, {"note": "[" * 1000 + '\\"{' * 100})
    assert load_checkpoint(path)[1]["note"].startswith("[[[")


@pytest.mark.parametrize("field", ["config", "extra"])
def test_deeply_nested_metadata_is_refused(tmp_path: Path, good: Path, field: str) -> None:
    tensors, meta = parts(good)
    meta[field] = "[" * 100_000 + "]" * 100_000
    refused(crafted(tmp_path / "deep.safetensors", tensors, meta), "nested deeper")


# ---- recomputed checksums: metadata and config ----------------------------------------


@pytest.mark.parametrize(
    ("field", "value", "match"),
    [
        ("format_version", "9" * 5000, "format_version"),
        ("format_version", "1" + "0" * 30, "format_version"),
        ("t", "9" * 5000, "t must be"),
        ("t", str(2**64), "t must be"),
        ("t", "-1", "t must be"),
        ("mask_seed", "1e9", "mask_seed"),
        ("mask_draws", "", "mask_draws"),
        ("extra", "[]", "not an object"),
        ("extra", "{", "extra"),
        ("config", "[]", "not a JSON object"),
        ("config", "{}", "config"),
    ],
)
def test_metadata_fields(tmp_path: Path, good: Path, field: str, value: str, match: str) -> None:
    tensors, meta = parts(good)
    meta[field] = value
    refused(crafted(tmp_path / "m.safetensors", tensors, meta), match)


def test_huge_config_is_refused_before_any_allocation(tmp_path: Path, good: Path) -> None:
    """10**12 gates: CheckpointError as documented, and a MemoryLimitError too."""
    tensors, meta = parts(good)
    config = json.loads(meta["config"])
    config["update"]["layers"] = [10, 10**12, 2]
    meta["config"] = json.dumps(config)
    err = refused(crafted(tmp_path / "huge.safetensors", tensors, meta), "more than the limit")
    assert isinstance(err, CheckpointMemoryError) and isinstance(err, MemoryLimitError)


def config_mutations(config: dict[str, Any], rng: np.random.Generator) -> list[dict[str, Any]]:
    """Every config field replaced by hostile values of other types and sizes."""
    hostile: list[Any] = [None, -1, 0, 10**12, 2**70, 1e308, 0.5, "x", [], {}, [1] * 3, True]
    out = []

    def paths(d: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        if isinstance(d, dict):
            return [p for k, v in d.items() for p in paths(v, (*prefix, k))] + [prefix]
        if isinstance(d, list):
            return [p for i, v in enumerate(d) for p in paths(v, (*prefix, i))] + [prefix]
        return [prefix]

    for p in paths(config):
        if not p:
            continue
        for value in rng.choice(np.array(hostile, dtype=object), size=4, replace=False):
            c = json.loads(json.dumps(config))
            node = c
            for k in p[:-1]:
                node = node[k]
            node[p[-1]] = value
            out.append(c)
    return out


def test_fuzz_config_with_recomputed_checksum(tmp_path: Path, good: Path) -> None:
    tensors, meta = parts(good)
    config = json.loads(meta["config"])
    cases = config_mutations(config, np.random.default_rng(17))
    assert len(cases) > 100
    path = tmp_path / "cfg.safetensors"
    for i, c in enumerate(cases):
        m = dict(meta, config=json.dumps(c))
        crafted(path, tensors, m)
        try:
            load_checkpoint(path)
        except CheckpointError:
            continue
        except BaseException as e:  # noqa: BLE001 - the point: nothing else may escape
            pytest.fail(f"config case {i} {c}: {type(e).__name__}: {e}")
        # A mutation can leave an equivalent config (e.g. fire_rate 0.5): then it loads.


# ---- recomputed checksums: tensors ----------------------------------------------------


def test_every_tensor_dtype_and_shape(tmp_path: Path, good: Path) -> None:
    tensors, meta = parts(good)
    path = tmp_path / "t.safetensors"
    for name, a in tensors.items():
        other = np.int32 if a.dtype == np.float32 else np.float32
        variants = {
            "dtype": a.astype(other),
            "transposed": np.ascontiguousarray(a.T) if a.shape != a.T.shape else None,
            "extra row": np.concatenate([a, a[:1]]),
            "flat": a.ravel(),
            "scalar": a.ravel()[:1].reshape(()),
            "empty": a[:0],
        }
        for kind, v in variants.items():
            if v is None:
                continue
            crafted(path, {**tensors, name: v}, meta)
            err = refused(path)
            assert name in str(err), (name, kind, str(err))
        # Missing, and an unknown extra array.
        crafted(path, {k: t for k, t in tensors.items() if k != name}, meta)
        assert name in str(refused(path, "missing"))
    crafted(path, {**tensors, "bogus": np.zeros(3, np.float32)}, meta)
    refused(path, "unexpected arrays")


def test_int32_logits_do_not_load_as_floats(tmp_path: Path, good: Path) -> None:
    tensors, meta = parts(good)
    tensors["update_logits_0"] = tensors["update_logits_0"].view(np.int32)
    refused(crafted(tmp_path / "i32.safetensors", tensors, meta), "update_logits_0 is I32")


def test_header_offsets(tmp_path: Path, good: Path) -> None:
    """Overlapping, gapped and out-of-file offsets in an otherwise valid header."""
    data = good.read_bytes()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8 : 8 + n])
    name = next(k for k in header if k != "__metadata__")
    for offsets in ([0, 0], [1, 1 + header[name]["data_offsets"][1]], [0, 2**63], [-8, 0], "x"):
        h = json.loads(json.dumps(header))
        h[name]["data_offsets"] = offsets
        raw = json.dumps(h).encode()
        path = tmp_path / "off.safetensors"
        path.write_bytes(struct.pack("<Q", len(raw)) + raw + data[8 + n :])
        refused(path, "corrupted|truncated")


# ---- recomputed checksums: the training state -----------------------------------------


def state_mutations() -> list[tuple[str, Any]]:
    """(field path, hostile value) for every training-state field."""
    out: list[tuple[str, Any]] = []
    numbers = ["seed", "target_epochs", "epoch", "zero_streak"]
    for key in numbers + ["preset.batch", "preset.height", "preset.width", "preset.epochs"]:
        for v in (float("inf"), float("nan"), 1e308, -1, 2**70, "3", [1], None, 2.5):
            out.append((key, v))
    for v in ([], [1, 2], "PCG64", 7, {"bit_generator": "PCG64", "state": []}, None):
        out.append(("rng_state", v))
    for v in (float("inf"), -1, "1", 2**200):
        out.append(("rng_state.state.state", v))
    out += [("preset.batch", 10**9), ("preset.height", 10**9), ("preset", [])]
    for v in ([[1, 2]], [[float("inf"), 1.0, 1.0, 1.0]], [[1, "a", 1.0, 1.0]], {}, [1]):
        out.append(("metrics", v))
    for key in ("early_stop", "restart_every", "solved_epoch", "first_epoch_hard_zero"):
        out += [(key, float("inf")), (key, -5), (key, "x")]
    out += [("drift_budget", v) for v in (-1, "x", None, 2.5)]
    out += [("kept_lowest", v) for v in (float("inf"), -5, "x")]
    out += [("after_seconds", v) for v in (float("inf"), float("nan"), -1.0, "x", None)]
    # A stall check is both numbers or neither (5 alone breaks that).
    out += [("preset.stall_epochs", v) for v in (0, -1, "x", 2.5, 5)]
    out += [("preset.stall_loss", v) for v in (-1.0, float("nan"), float("inf"), "2")]
    out += [("stalls", v) for v in (-1, "x", 1)]  # 1: more than the run's restarts
    out += [("lowest", v) for v in ([], "x", {"hard_loss": 1.0})]
    lowest = {"epoch": 1, "hard_loss": 1.0}
    for key, v in [("epoch", 0), ("epoch", 10**9), ("epoch", "1")] + [
        ("hard_loss", v) for v in (-1.0, float("nan"), float("inf"), "2", None)
    ]:
        out.append(("lowest", {**lowest, key: v}))
    drift = {"epoch": 1, "method": "drift", "wrong_before": 3, "evaluations": 10}
    for key, v in (("evaluations", "10"), ("evaluations", -1), ("wrong_after", "2")):
        out.append(("repairs", [{**drift, "wrong_after": 2, key: v}]))
    out += [("repairs", {}), ("repairs", [1])]
    return out


@pytest.mark.parametrize(("field", "value"), state_mutations())
def test_training_state_fields(tmp_path: Path, field: str, value: Any) -> None:
    extra = train_extra()
    node = extra
    *parents, last = field.split(".")
    for k in parents:
        node = node[k]
    node[last] = value
    path = tmp_path / "state.safetensors"
    save_checkpoint(path, trained_model(), extra)  # a valid checksum over hostile content
    refused(path, "invalid training state")
    run = load_run(path)  # the model is still usable without its record
    assert run.metrics == []


def test_cli_resume_of_hostile_files(tmp_path: Path, good: Path) -> None:
    """At the CLI: one line, exit 2, no traceback, no hang."""
    fifo_dir = tmp_path / "fifo-run"
    fifo_dir.mkdir()
    os.mkfifo(fifo_dir / "model.safetensors")
    extra = train_extra()
    extra["rng_state"] = [1, 2]
    bad_dir = tmp_path / "bad-run"
    bad_dir.mkdir()
    save_checkpoint(bad_dir / "model.safetensors", trained_model(), extra)
    for run_dir in (fifo_dir, bad_dir):
        r = subprocess.run(
            [sys.executable, "-m", "logicars", "train", "--resume", str(run_dir)],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert r.returncode == 2, r.stderr
        assert "Traceback" not in r.stderr
        assert r.stderr.strip().count("\n") == 0 and "logicars: error:" in r.stderr
