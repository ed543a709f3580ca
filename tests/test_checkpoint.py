"""Checkpoints: exact round trip, atomic writes, and a clear error for every damaged file."""

from __future__ import annotations

import json
import struct
from pathlib import Path

import numpy as np
import pytest
from safetensors.numpy import load_file, save_file

import logicars
import logicars.checkpoint as ckpt_mod
from logicars.checkpoint import FORMAT, FORMAT_VERSION, save_checkpoint
from logicars.errors import CheckpointError
from logicars.model import load_checkpoint


def tiny_spec(fire_rate: float | None = 0.6) -> logicars.ModelSpec:
    """2 channels, 2 kernels, async: every kind of state a checkpoint carries, small."""
    return logicars.ModelSpec(
        channels=2,
        perceive=logicars.PerceiveSpec(2, [9, 8, 4, 2], ["first_kernel", "unique", "unique"]),
        update=logicars.UpdateSpec([10, 8, 4, 2], ["unique", "unique", "unique"]),
        num_steps=3,
        fire_rate=fire_rate,
    )


def trained_model(seed: int = 1, steps: int = 2) -> logicars.Model:
    """A model with non-trivial logits, AdamW moments and mask stream position."""
    model = logicars.Model(tiny_spec(), seed)
    rng = np.random.default_rng(seed)
    for _ in range(steps):
        x = rng.integers(0, 2, (2, 5, 5, 2)).astype(np.float32)
        y = rng.integers(0, 2, (2, 5, 5, 2)).astype(np.float32)
        model.train_step(x, y)
    return model


EXTRA = {
    "epoch": 7,
    "rng_state": np.random.default_rng(5).bit_generator.state,
    "metrics": [[1, 12.5, 13.0, 0.01], [2, 0.1 + 0.2, 0.0, 0.02]],
    "preset": "checkerboard",
    "nested": {"none": None, "list": [1, "two", 3.0]},
}


@pytest.fixture(scope="module")
def saved(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, logicars.Model, bytes]:
    path = tmp_path_factory.mktemp("ckpt") / "model.safetensors"
    model = trained_model()
    save_checkpoint(path, model, EXTRA)
    return path, model, path.read_bytes()


def assert_same_model(a: logicars.Model, b: logicars.Model) -> None:
    assert a.spec == b.spec
    for get in (lambda m: m.params(), lambda m: m.wires(), lambda m: m.optimizer_state()):
        da, db = get(a), get(b)
        assert da.keys() == db.keys()
        for k in da:
            assert da[k].dtype == db[k].dtype, k
            np.testing.assert_array_equal(da[k], db[k], err_msg=k)
    assert a.mask_state == b.mask_state


def test_round_trip_is_exact(saved: tuple[Path, logicars.Model, bytes]) -> None:
    path, model, _ = saved
    loaded, extra = load_checkpoint(path)
    assert_same_model(model, loaded)
    assert loaded.optimizer_state()["t"] == 2
    assert loaded.mask_state == (1, 2)  # two async steps drew two mask streams
    assert extra == json.loads(json.dumps(EXTRA))
    assert extra["metrics"][1][1] == 0.1 + 0.2  # floats survive bit for bit


def test_loaded_model_trains_identically(saved: tuple[Path, logicars.Model, bytes]) -> None:
    path, _, _ = saved
    a, _ = load_checkpoint(path)
    b, _ = load_checkpoint(path)
    x = np.random.default_rng(9).integers(0, 2, (2, 5, 5, 2)).astype(np.float32)
    # The mask stream continues from where it stood, so both steps see the same masks.
    assert a.train_step(x, x) == b.train_step(x, x)
    assert_same_model(a, b)


def test_generator_state_restores(saved: tuple[Path, logicars.Model, bytes]) -> None:
    _, extra = load_checkpoint(saved[0])
    rng = np.random.Generator(np.random.PCG64())
    rng.bit_generator.state = extra["rng_state"]
    np.testing.assert_array_equal(
        rng.integers(0, 1 << 30, 8), np.random.default_rng(5).integers(0, 1 << 30, 8)
    )


def test_model_save_and_load(tmp_path: Path) -> None:
    model = trained_model(seed=3)
    model.save(tmp_path / "m.safetensors")
    assert_same_model(model, logicars.Model.load(tmp_path / "m.safetensors"))


def test_file_is_plain_safetensors(saved: tuple[Path, logicars.Model, bytes]) -> None:
    """Other tools can read the logits without logicars (and without pickle)."""
    path, model, _ = saved
    tensors = load_file(str(path))
    expected = set(model.params()) | set(model.wires())
    expected |= {f"{p}/{k}" for k in model.params() for p in ("m", "v")}
    assert set(tensors) == expected
    np.testing.assert_array_equal(tensors["update_logits_0"], model.params()["update_logits_0"])
    assert tensors["perceive_wires_0"].dtype == np.int32


def test_sync_model_and_empty_extra(tmp_path: Path) -> None:
    model = logicars.Model(tiny_spec(fire_rate=None), 4)
    save_checkpoint(tmp_path / "s.safetensors", model, None)
    loaded, extra = load_checkpoint(tmp_path / "s.safetensors")
    assert extra == {}
    assert_same_model(model, loaded)


def test_extra_must_be_json(tmp_path: Path) -> None:
    with pytest.raises(TypeError, match="not JSON-serialisable"):
        save_checkpoint(tmp_path / "x.safetensors", trained_model(), {"f": object()})
    assert not list(tmp_path.iterdir())


# ---- atomic writes --------------------------------------------------------------------


@pytest.mark.parametrize("failing", ["fsync", "replace", "write"])
def test_failed_write_keeps_the_old_checkpoint(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, failing: str
) -> None:
    path = tmp_path / "model.safetensors"
    old = trained_model(seed=1)
    save_checkpoint(path, old, {"version": "old"})
    before = path.read_bytes()

    def boom(*args: object, **kwargs: object) -> None:
        raise OSError(28, "No space left on device")

    if failing == "write":
        real_fdopen = ckpt_mod.os.fdopen

        class HalfWriter:
            """Writes half of the data, then fails, like a full disk."""

            def __init__(self, fd: int, mode: str) -> None:
                self.f = real_fdopen(fd, mode)

            def write(self, data: bytes) -> None:
                self.f.write(data[: len(data) // 2])
                raise OSError(28, "No space left on device")

            def __enter__(self) -> HalfWriter:
                return self

            def __exit__(self, *exc: object) -> None:
                self.f.close()

        monkeypatch.setattr(ckpt_mod.os, "fdopen", HalfWriter)
    else:
        monkeypatch.setattr(ckpt_mod.os, failing, boom)
    with pytest.raises(OSError, match="No space"):
        save_checkpoint(path, trained_model(seed=2, steps=3), {"version": "new"})
    monkeypatch.undo()

    assert path.read_bytes() == before
    model, extra = load_checkpoint(path)
    assert extra == {"version": "old"}
    assert_same_model(old, model)
    assert [p.name for p in tmp_path.iterdir()] == ["model.safetensors"]  # no temp left


def test_overwrite_replaces(tmp_path: Path) -> None:
    path = tmp_path / "model.safetensors"
    save_checkpoint(path, trained_model(seed=1), {"n": 1})
    save_checkpoint(path, trained_model(seed=2), {"n": 2})
    assert load_checkpoint(path)[1] == {"n": 2}
    assert [p.name for p in tmp_path.iterdir()] == ["model.safetensors"]


# ---- damaged and foreign files --------------------------------------------------------


def write(tmp_path: Path, data: bytes, name: str = "bad.safetensors") -> Path:
    p = tmp_path / name
    p.write_bytes(data)
    return p


def rewrite_metadata(data: bytes, **changes: str | None) -> bytes:
    """The file with metadata fields changed (None: removed), header re-encoded."""
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8 : 8 + n])
    meta = header["__metadata__"]
    for k, v in changes.items():
        if v is None:
            meta.pop(k, None)
        else:
            meta[k] = v
    raw = json.dumps(header, separators=(",", ":")).encode()
    raw += b" " * (-len(raw) % 8)
    return struct.pack("<Q", len(raw)) + raw + data[8 + n :]


@pytest.mark.parametrize("cut", [0, 1, 7, 8, 9, 100, 0.5, -100, -1])
def test_truncated(tmp_path: Path, saved: tuple[Path, logicars.Model, bytes], cut: float) -> None:
    data = saved[2]
    n = int(len(data) * cut) if isinstance(cut, float) else cut
    with pytest.raises(CheckpointError, match="truncated|corrupted|not a safetensors"):
        load_checkpoint(write(tmp_path, data[:n]))


@pytest.mark.parametrize(
    ("changes", "match"),
    [
        ({"format_version": str(FORMAT_VERSION + 1)}, "newer than this logicars"),
        ({"format_version": "99"}, "format version 99 is newer"),
        ({"format_version": "0"}, "unknown checkpoint format version"),
        ({"format_version": "one"}, "format_version"),
        ({"format_version": None}, "format_version"),
        ({"format": "something-else"}, "not a logicars checkpoint"),
        ({"format": None}, "not a logicars checkpoint"),
        ({"checksum": None}, "missing"),
        ({"checksum": "0" * 64}, "checksum mismatch"),
        ({"config": '{"channels": 3}'}, "checksum mismatch|invalid checkpoint metadata"),
        ({"t": "999"}, "checksum mismatch"),
    ],
)
def test_bad_metadata(
    tmp_path: Path, saved: tuple[Path, logicars.Model, bytes], changes: dict, match: str
) -> None:
    with pytest.raises(CheckpointError, match=match):
        load_checkpoint(write(tmp_path, rewrite_metadata(saved[2], **changes)))


def test_foreign_files(tmp_path: Path) -> None:
    foreign = tmp_path / "foreign.safetensors"
    save_file({"weight": np.zeros((2, 2), np.float32)}, str(foreign), metadata={"x": "y"})
    no_meta = tmp_path / "nometa.safetensors"
    save_file({"weight": np.zeros((2, 2), np.float32)}, str(no_meta))
    npz = tmp_path / "model.npz"
    np.savez(npz, a=np.zeros(3))
    cases = {
        foreign: "not a logicars checkpoint",
        no_meta: "not a logicars checkpoint",
        npz: "not a safetensors file",
        write(tmp_path, b"", "empty"): "truncated",
        write(tmp_path, b'{"format": "logicars-checkpoint"}', "json"): "not a safetensors",
        write(tmp_path, np.random.default_rng(0).bytes(4096), "random"): "not a safetensors",
        write(tmp_path, struct.pack("<Q", 2) + b"[]", "list-header"): "not a safetensors",
        tmp_path / "missing.safetensors": "no such checkpoint",
        tmp_path: "is a directory",
    }
    for path, match in cases.items():
        with pytest.raises(CheckpointError, match=match):
            load_checkpoint(path)


def test_valid_checksum_but_inconsistent_content(
    tmp_path: Path, saved: tuple[Path, logicars.Model, bytes]
) -> None:
    """A file written by a buggy writer (checksum right, arrays wrong) is refused too."""
    tensors = {k: v for k, v in load_file(str(saved[0])).items() if k != "update_logits_0"}
    (n,) = struct.unpack("<Q", saved[2][:8])
    meta = json.loads(saved[2][8 : 8 + n])["__metadata__"]
    meta["checksum"] = ckpt_mod._checksum(tensors, meta)
    path = tmp_path / "inconsistent.safetensors"
    save_file(tensors, str(path), metadata=meta)
    with pytest.raises(CheckpointError, match="inconsistent checkpoint.*update_logits_0"):
        load_checkpoint(path)


def test_fuzz_mutated_files(tmp_path: Path, saved: tuple[Path, logicars.Model, bytes]) -> None:
    """Random damage of many kinds: every mutated file raises CheckpointError, nothing else."""
    data = saved[2]
    (n,) = struct.unpack("<Q", data[:8])
    rng = np.random.default_rng(2024)
    path = tmp_path / "fuzz.safetensors"
    kinds = ["flip", "flip_header", "byte", "chunk", "cut", "insert", "delete", "append", "swap"]
    for i in range(600):
        kind = kinds[i % len(kinds)]
        d = bytearray(data)
        pos = int(rng.integers(0, len(d)))
        if kind == "flip":
            d[pos] ^= 1 << int(rng.integers(8))
        elif kind == "flip_header":
            pos = int(rng.integers(0, 8 + n))
            d[pos] ^= 1 << int(rng.integers(8))
        elif kind == "byte":
            d[pos] = (d[pos] + int(rng.integers(1, 256))) % 256
        elif kind == "chunk":
            size = int(rng.integers(1, 64))
            d[pos : pos + size] = rng.bytes(len(d[pos : pos + size]))
            if bytes(d) == data:
                continue
        elif kind == "cut":
            d = d[:pos]
        elif kind == "insert":
            d[pos:pos] = rng.bytes(int(rng.integers(1, 16)))
        elif kind == "delete":
            del d[pos : pos + int(rng.integers(1, 16))]
        elif kind == "append":
            d += rng.bytes(int(rng.integers(1, 64)))
        elif kind == "swap":
            q = int(rng.integers(0, len(d)))
            if d[pos] == d[q]:
                continue
            d[pos], d[q] = d[q], d[pos]
        path.write_bytes(bytes(d))
        try:
            load_checkpoint(path)
        except CheckpointError:
            continue
        pytest.fail(f"mutation {i} ({kind} at {pos}) loaded without error")


def test_format_constants() -> None:
    assert FORMAT == "logicars-checkpoint"
    assert FORMAT_VERSION == 1
