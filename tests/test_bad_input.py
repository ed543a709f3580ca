"""Bad input at every boundary: each case must raise the documented exception type with
a message that names the parameter and what was expected, within a second, without
crashing the interpreter. Valid arrays in unusual layouts (non-contiguous, read-only,
Fortran order, other dtypes) must give exactly the result of a contiguous float32 copy.

The table is the executable form of docs/reliability.md's validation table.
"""

from __future__ import annotations

import json
import math
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pytest

import logicars
from logicars.checkpoint import save_checkpoint
from logicars.cli import main
from logicars.errors import CheckpointError, InvalidValueError, MemoryLimitError, ShapeError

SECOND = 1.0  # every case must fail within this many seconds

C = 2  # channels of the small test model
B, H, W = 2, 5, 6


def spec_dict(**changes: Any) -> dict[str, Any]:
    """The small test spec as a config dict; `perceive`/`update` changes merge."""
    d: dict[str, Any] = {
        "channels": C,
        "perceive": {
            "n_kernels": 2,
            "layers": [9, 8, 4, 2],
            "connections": ["first_kernel", "unique", "unique"],
        },
        "update": {
            "layers": [C + C * 2 * 2, 8, 4, C],
            "connections": ["unique", "unique", "unique"],
        },
        "num_steps": 3,
        "periodic": False,
        "loss_channels": [0],
    }
    for key, value in changes.items():
        if key in ("perceive", "update"):
            d[key] = {**d[key], **value}
        else:
            d[key] = value
    return d


MODEL = logicars.Model(spec_dict(), seed=1)
ASYNC_MODEL = logicars.Model(spec_dict(fire_rate=0.5), seed=1)
X = (np.random.default_rng(0).random((B, H, W, C)) < 0.5).astype(np.float32)
Y = np.zeros_like(X)
MASKS = np.ones((B, 3, H, W), np.float32)


def with_value(a: np.ndarray, index: tuple[int, ...], value: float) -> np.ndarray:
    out = a.copy()
    out[index] = value
    return out


@contextmanager
def env(name: str, value: str) -> Iterator[None]:
    old = os.environ.get(name)
    os.environ[name] = value
    try:
        yield
    finally:
        if old is None:
            del os.environ[name]
        else:
            os.environ[name] = old


def memory_capped(call: Callable[[], object], mb: str = "1") -> Callable[[Path], object]:
    def run(tmp: Path) -> object:
        with env("LOGICARS_MAX_MEMORY_MB", mb):
            return call()

    return run


def write_file(name: str, data: bytes) -> Callable[[Path], Path]:
    def make(tmp: Path) -> Path:
        path = tmp / name
        path.write_bytes(data)
        return path

    return make


def truncated_checkpoint(tmp: Path) -> Path:
    path = tmp / "model.safetensors"
    save_checkpoint(path, MODEL)
    path.write_bytes(path.read_bytes()[:-10])
    return path


def npz_without_config(tmp: Path) -> Path:
    path = tmp / "params.npz"
    np.savez(path, **MODEL.params())
    return path


@dataclass(frozen=True)
class Case:
    """`call(tmp_path)` must raise `exc` whose message contains every needle."""

    id: str
    call: Callable[[Path], object]
    exc: type[BaseException]
    needles: tuple[str, ...]


def case(id: str, call: Callable[..., object], exc: type[BaseException], *needles: str) -> Case:
    takes_tmp = call.__code__.co_argcount == 1
    return Case(id, call if takes_tmp else (lambda tmp: call()), exc, needles)


API_CASES = [
    # ---- model construction: spec and seed -------------------------------------------
    case("spec-type", lambda: logicars.Model(42), TypeError, "spec", "ModelSpec"),
    case("spec-bad-json", lambda: logicars.Model("{"), InvalidValueError, "config", "JSON"),
    case(
        "spec-missing-field",
        lambda: logicars.Model({k: v for k, v in spec_dict().items() if k != "channels"}),
        InvalidValueError,
        "channels",
    ),
    case(
        "channels-0",
        lambda: logicars.Model(spec_dict(channels=0)),
        InvalidValueError,
        "channels",
        ">= 1",
    ),
    case(
        "channels-negative",
        lambda: logicars.Model(spec_dict(channels=-2)),
        InvalidValueError,
        "config.channels",
        "non-negative integer",
    ),
    case(
        "num-steps-0",
        lambda: logicars.Model(spec_dict(num_steps=0)),
        InvalidValueError,
        "num_steps",
        ">= 1",
    ),
    case(
        "n-kernels-0",
        lambda: logicars.Model(spec_dict(perceive={"n_kernels": 0})),
        InvalidValueError,
        "n_kernels",
        ">= 1",
    ),
    case(
        "unique-2out-lt-in",
        lambda: logicars.Model(spec_dict(update={"layers": [10, 4, 4, C]})),
        InvalidValueError,
        "update layer 0",
        "2*out >= in",
        "in 10, out 4",
    ),
    case(
        "first-perceive-not-9",
        lambda: logicars.Model(spec_dict(perceive={"layers": [8, 8, 4, 2]})),
        InvalidValueError,
        "perceive.layers[0]",
        "must be 9",
    ),
    case(
        "layer-width-0",
        lambda: logicars.Model(spec_dict(update={"layers": [10, 0, 4, C]})),
        InvalidValueError,
        "update.layers[1]",
        ">= 1",
    ),
    case(
        "model-too-big",
        lambda: logicars.Model(
            spec_dict(update={"layers": [10, 2**40, C], "connections": ["random", "random"]})
        ),
        MemoryLimitError,
        "1099511627806 gates",
        "LOGICARS_MAX_MEMORY_MB",
    ),
    case(
        "update-input-width",
        lambda: logicars.Model(spec_dict(update={"layers": [11, 8, 4, C]})),
        InvalidValueError,
        "update.layers[0]",
        "= 10",
    ),
    case(
        "update-output-width",
        lambda: logicars.Model(spec_dict(update={"layers": [10, 8, 4, 3]})),
        InvalidValueError,
        "update.layers[-1]",
        "channels = 2",
    ),
    case(
        "connections-count",
        lambda: logicars.Model(spec_dict(update={"connections": ["unique"]})),
        InvalidValueError,
        "update.connections",
        "one wiring per layer (3)",
    ),
    case(
        "unknown-wiring",
        lambda: logicars.Model(spec_dict(update={"connections": ["unique", "bogus", "unique"]})),
        InvalidValueError,
        "config.update.connections[1]",
        '"unique"',
        "bogus",
    ),
    case(
        "loss-channel-range",
        lambda: logicars.Model(spec_dict(loss_channels=[5])),
        InvalidValueError,
        "loss_channels[0]",
        "channels = 2",
    ),
    case(
        "fire-rate-range",
        lambda: logicars.Model(spec_dict(fire_rate=1.5)),
        InvalidValueError,
        "fire_rate",
        "(0, 1]",
    ),
    case(
        "layers-not-a-list",
        lambda: logicars.Model(json.dumps(spec_dict(perceive={"layers": 9}))),
        InvalidValueError,
        "config.perceive.layers",
        "a list",
    ),
    case(
        "periodic-not-bool",
        lambda: logicars.Model(json.dumps(spec_dict(periodic="yes"))),
        InvalidValueError,
        "config.periodic",
        "true or false",
    ),
    case(
        "fire-rate-nan",
        lambda: logicars.Model(spec_dict(fire_rate=float("nan"))),
        InvalidValueError,
        "fire_rate",
        "(0, 1]",
    ),
    case(
        "train-step-lr-nan",
        lambda: MODEL.train_step(X, Y, lr=float("nan")),
        InvalidValueError,
        "lr",
        "finite number > 0",
    ),
    case(
        "seed-negative",
        lambda: logicars.Model(spec_dict(), seed=-1),
        InvalidValueError,
        "seed",
        ">= 0",
    ),
    case(
        "seed-too-big",
        lambda: logicars.Model(spec_dict(), seed=2**64),
        InvalidValueError,
        "seed",
        str(2**64 - 1),
    ),
    case(
        "seed-float",
        lambda: logicars.Model(spec_dict(), seed=1.5),
        TypeError,
        "seed",
        "integer",
    ),
    # ---- rollout -------------------------------------------------------------------
    case("x-rank", lambda: MODEL.rollout(X[0]), ShapeError, "x", "4-d", "(B, H, W, C)"),
    case("x-channels", lambda: MODEL.rollout(X[..., :1]), ShapeError, "x", "2 channels"),
    case("x-dtype", lambda: MODEL.rollout(X.astype(str)), TypeError, "x", "numeric"),
    case("x-empty", lambda: MODEL.rollout(X[:0]), ShapeError, "x", ">= 1"),
    case(
        "x-nan",
        lambda: MODEL.rollout(with_value(X, (0, 1, 1, 0), np.nan)),
        InvalidValueError,
        "x",
        "finite",
    ),
    case(
        "x-inf",
        lambda: MODEL.rollout(with_value(X, (1, 0, 2, 1), np.inf)),
        InvalidValueError,
        "x",
        "finite",
    ),
    case(
        "x-above-1",
        lambda: MODEL.rollout(with_value(X, (0, 0, 0, 0), 1.5)),
        InvalidValueError,
        "x",
        "[0, 1]",
        "1.5",
    ),
    case(
        "x-below-0",
        lambda: MODEL.rollout(with_value(X, (0, 0, 0, 0), -0.25)),
        InvalidValueError,
        "x",
        "[0, 1]",
    ),
    case("steps-0", lambda: MODEL.rollout(X, steps=0), InvalidValueError, "steps", ">= 1"),
    case(
        "async-x-nan-draws-no-mask",
        lambda: ASYNC_MODEL.rollout(with_value(X, (0, 0, 0, 0), np.nan)),
        InvalidValueError,
        "x",
        "finite",
    ),
    case(
        "async-rollout-too-big",
        lambda: ASYNC_MODEL.rollout(X, steps=10**12),
        MemoryLimitError,
        "MB",
        "LOGICARS_MAX_MEMORY_MB",
    ),
    case("steps-float", lambda: MODEL.rollout(X, steps=2.5), TypeError, "steps", "integer"),
    case(
        "masks-shape",
        lambda: ASYNC_MODEL.rollout(X, steps=3, masks=MASKS[:, :2]),
        ShapeError,
        "masks",
        "(2, 3, 5, 6)",
    ),
    case(
        "masks-range",
        lambda: ASYNC_MODEL.rollout(X, steps=3, masks=MASKS * 2),
        InvalidValueError,
        "masks",
        "[0, 1]",
    ),
    case(
        "masks-nan",
        lambda: ASYNC_MODEL.rollout(X, steps=3, masks=with_value(MASKS, (0, 0, 0, 0), np.nan)),
        InvalidValueError,
        "masks",
        "finite",
    ),
    case(
        "rollout-too-big",
        lambda: MODEL.rollout(np.zeros((1, 256, 256, C), np.float32), steps=100_000),
        MemoryLimitError,
        "MB",
        "LOGICARS_MAX_MEMORY_MB",
    ),
    case(
        "rollout-steps-overflow",
        lambda: MODEL.rollout(X, steps=2**62),
        MemoryLimitError,
        "MB",
        "LOGICARS_MAX_MEMORY_MB",
    ),
    case(
        "rollout-over-cap",
        memory_capped(lambda: MODEL.rollout(np.zeros((1, 128, 128, C), np.float32), steps=20)),
        MemoryLimitError,
        "limit of 1 MB",
        "128x128",
    ),
    # ---- loss_and_grad / train_step ------------------------------------------------------
    case("y-grid", lambda: MODEL.loss_and_grad(X, Y[:, :4]), ShapeError, "y", "grid of x"),
    case(
        "y-channels",
        lambda: MODEL.loss_and_grad(X, np.zeros((B, H, W, 3), np.float32)),
        ShapeError,
        "y",
        "2 or 1 channels",
    ),
    case(
        "y-nan",
        lambda: MODEL.loss_and_grad(X, with_value(Y, (0, 0, 0, 0), np.nan)),
        InvalidValueError,
        "y",
        "finite",
    ),
    case(
        "y-above-1",
        lambda: MODEL.train_step(X, with_value(Y, (0, 0, 0, 0), 2.0)),
        InvalidValueError,
        "y",
        "[0, 1]",
    ),
    case(
        "train-x-nan",
        lambda: MODEL.train_step(with_value(X, (0, 0, 0, 0), np.nan), Y),
        InvalidValueError,
        "x",
        "finite",
    ),
    case(
        "grad-masks-steps",
        lambda: ASYNC_MODEL.loss_and_grad(X, Y, masks=MASKS[:, :1]),
        ShapeError,
        "masks",
        "(B, steps, H, W[, 1])",
    ),
    case(
        "set-params-shape",
        lambda: MODEL.set_params({**MODEL.params(), "update_logits_0": np.zeros((3, 16))}),
        ShapeError,
        "update_logits_0",
        "(8, 16)",
    ),
    case(
        "set-params-missing",
        lambda: MODEL.set_params({}),
        InvalidValueError,
        "missing parameter array",
        "perceive_logits_0",
    ),
    case(
        "set-params-nan",
        lambda: MODEL.set_params(
            {**MODEL.params(), "update_logits_1": np.full((4, 16), np.nan, np.float32)}
        ),
        InvalidValueError,
        "logits",
        "finite",
    ),
    case(
        "wires-float",
        lambda: logicars.Model.from_parts(
            spec_dict(),
            [w + 0.5 for k, w in sorted(MODEL.wires().items()) if k.startswith("perceive")],
            [w for k, w in sorted(MODEL.wires().items()) if k.startswith("update")],
            MODEL.params(),
        ),
        TypeError,
        "perceive_wires_0",
        "integer array",
    ),
    case(
        "wires-out-of-range",
        lambda: logicars.Model.from_parts(
            spec_dict(),
            [w for k, w in sorted(MODEL.wires().items()) if k.startswith("perceive")],
            [w * 100 for k, w in sorted(MODEL.wires().items()) if k.startswith("update")],
            MODEL.params(),
        ),
        InvalidValueError,
        "update_wires_0",
        "input width 10",
    ),
    case(
        "mask-state-negative",
        lambda: setattr(ASYNC_MODEL, "mask_state", (-1, 0)),
        InvalidValueError,
        "mask seed",
        ">= 0",
    ),
    case(
        "draw-masks-too-big",
        memory_capped(lambda: logicars._core.draw_masks(1, 1024, 1024, 10, 0.5, 0)),
        MemoryLimitError,
        "draw_masks",
        "limit of 1 MB",
    ),
    # ---- simulate (binary input required) -----------------------------------------------
    case(
        "sim-non-binary",
        lambda: MODEL.simulate(with_value(X, (0, 2, 3, 1), 0.5)),
        InvalidValueError,
        "x",
        "0 or 1",
        "0.5",
    ),
    case(
        "sim-channels",
        lambda: MODEL.simulate(X[..., :1]),
        ShapeError,
        "x",
        "(B, H, W, C=2)",
    ),
    case(
        "sim-steps-negative",
        lambda: MODEL.simulate(X, steps=-1),
        InvalidValueError,
        "steps",
        ">= 0",
    ),
    case(
        "sim-fire-rate",
        lambda: MODEL.simulate(X, fire_rate=0.0),
        InvalidValueError,
        "fire_rate",
        "(0, 1]",
    ),
    case(
        "sim-masks-and-fire-rate",
        lambda: MODEL.simulate(X, masks=MASKS, fire_rate=0.5),
        InvalidValueError,
        "masks",
        "fire_rate",
        "not both",
    ),
    case(
        "sim-masks-non-binary",
        lambda: MODEL.simulate(X, masks=MASKS * 0.5),
        InvalidValueError,
        "masks",
        "0 or 1",
    ),
    case(
        "sim-damage-shape",
        lambda: MODEL.simulate(X, damage=np.zeros((H + 1, W))),
        ShapeError,
        "damage",
        "5, 6",  # the expected (H, W)
    ),
    case(
        "sim-damage-steps",
        lambda: MODEL.simulate(X, damage=np.zeros((H, W)), damage_steps=(2, 1)),
        InvalidValueError,
        "damage_steps",
        "start <= end",
    ),
    case("sim-record", lambda: MODEL.simulate(X, record=-1), InvalidValueError, "record", ">= 0"),
    case(
        "sim-record-too-big",
        lambda: MODEL.simulate(np.zeros((1, 512, 512, C), np.uint8), steps=100_000, record=True),
        MemoryLimitError,
        "MB",
        "LOGICARS_MAX_MEMORY_MB",
    ),
    # ---- files ------------------------------------------------------------------------
    case(
        "load-missing",
        lambda tmp: logicars.Model.load(tmp / "nothing.safetensors"),
        CheckpointError,
        "nothing.safetensors",
        "no such checkpoint",
    ),
    case(
        "load-foreign",
        lambda tmp: logicars.Model.load(write_file("notes.txt", b"hello world " * 10)(tmp)),
        CheckpointError,
        "notes.txt",
        "safetensors",
    ),
    case(
        "load-truncated",
        lambda tmp: logicars.Model.load(truncated_checkpoint(tmp)),
        CheckpointError,
        "model.safetensors",
        "corrupted",
    ),
    case(
        "npz-garbage",
        lambda tmp: logicars.Model.from_npz(write_file("params.npz", b"PK\x03\x04garbage")(tmp)),
        CheckpointError,
        "params.npz",
        "npz",
    ),
    case(
        "npz-no-config",
        lambda tmp: logicars.Model.from_npz(npz_without_config(tmp)),
        CheckpointError,
        "params.npz",
        "'config'",
    ),
    case(
        "npz-missing-file",
        lambda tmp: logicars.Model.from_npz(tmp / "absent.npz"),
        CheckpointError,
        "absent.npz",
        "no such file",
    ),
    # ---- presets, train(), threads ---------------------------------------------------------
    case("unknown-preset", lambda: logicars.get_preset("nope"), ValueError, "nope", "checkerboard"),
    case(
        "train-unknown-preset",
        lambda tmp: logicars.train("nope", out=tmp / "r"),
        ValueError,
        "unknown preset 'nope'",
        "gol",
    ),
    case(
        "train-preset-type",
        lambda tmp: logicars.train(3, out=tmp / "r"),
        TypeError,
        "preset",
        "preset name",
    ),
    case(
        "train-no-preset",
        lambda tmp: logicars.train(None, out=tmp / "r"),
        ValueError,
        "preset is required",
    ),
    case(
        "train-epochs-0",
        lambda tmp: logicars.train("gol", epochs=0, out=tmp / "r"),
        InvalidValueError,
        "epochs",
        ">= 1",
    ),
    case(
        "train-lr-negative",
        lambda tmp: logicars.train("gol", lr=-0.1, out=tmp / "r"),
        InvalidValueError,
        "lr",
        "finite number > 0",
    ),
    case(
        "train-lr-inf",
        lambda tmp: logicars.train("gol", lr=math.inf, out=tmp / "r"),
        InvalidValueError,
        "lr",
        "finite number > 0",
    ),
    case(
        "train-lr-type",
        lambda tmp: logicars.train("gol", lr="fast", out=tmp / "r"),
        TypeError,
        "lr",
        "number",
    ),
    case(
        "train-weight-decay-negative",
        lambda tmp: logicars.train("gol", weight_decay=-0.01, out=tmp / "r"),
        InvalidValueError,
        "weight_decay",
        "finite number >= 0",
    ),
    case(
        "train-weight-decay-type",
        lambda tmp: logicars.train("gol", weight_decay=True, out=tmp / "r"),
        TypeError,
        "weight_decay",
        "number",
    ),
    case(
        "train-beta1-one",
        lambda tmp: logicars.train("gol", beta1=1.0, out=tmp / "r"),
        InvalidValueError,
        "beta1",
        "number in [0, 1)",
    ),
    case(
        "train-seed-negative",
        lambda tmp: logicars.train("gol", seed=-3, out=tmp / "r"),
        InvalidValueError,
        "seed",
        ">= 0",
    ),
    case(
        "train-seed-type",
        lambda tmp: logicars.train("gol", seed="7", out=tmp / "r"),
        TypeError,
        "seed",
        "integer",
    ),
    case(
        "train-threads",
        lambda tmp: logicars.train("gol", threads=5000, out=tmp / "r"),
        InvalidValueError,
        "threads",
        "between 0 and 1024",
    ),
    case(
        "train-checkpoint-every",
        lambda tmp: logicars.train("gol", checkpoint_every=0, out=tmp / "r"),
        InvalidValueError,
        "checkpoint_every",
        ">= 1",
    ),
    case(
        "train-early-stop",
        lambda tmp: logicars.train("gol", early_stop=0, out=tmp / "r"),
        InvalidValueError,
        "early_stop",
        ">= 1",
    ),
    case(
        "train-out-is-file",
        lambda tmp: logicars.train("gol", out=write_file("f", b"x")(tmp)),
        ValueError,
        "output directory",
        "not a directory",
    ),
    case(
        "train-resume-missing",
        lambda tmp: logicars.train(None, resume=tmp / "nothing"),
        CheckpointError,
        "nothing",
        "no such checkpoint",
    ),
    case(
        "train-resume-foreign",
        lambda tmp: logicars.train(None, resume=write_file("x.safetensors", b"\0" * 64)(tmp)),
        CheckpointError,
        "x.safetensors",
        "safetensors",
    ),
    case(
        "threads-negative",
        lambda: logicars.set_num_threads(-1),
        InvalidValueError,
        "threads",
        "between 0 and 1024",
    ),
    case(
        "threads-too-many",
        lambda: logicars.set_num_threads(100_000),
        InvalidValueError,
        "threads",
        "between 0 and 1024",
    ),
    case(
        "threads-type",
        lambda: logicars.set_num_threads("2"),
        TypeError,
        "threads",
        "integer",
    ),
]


@pytest.mark.parametrize("c", API_CASES, ids=[c.id for c in API_CASES])
def test_api_rejects_bad_input(c: Case, tmp_path: Path) -> None:
    threads = logicars.num_threads()
    before = [(m.mask_state, m.params(), m.optimizer_state()["t"]) for m in (MODEL, ASYNC_MODEL)]
    start = time.perf_counter()
    with pytest.raises(c.exc) as info:
        c.call(tmp_path)
    elapsed = time.perf_counter() - start
    message = str(info.value)
    for needle in c.needles:
        assert needle in message, f"{needle!r} not in {message!r}"
    assert elapsed < SECOND, f"{c.id} took {elapsed:.2f} s"
    # A refused call changes nothing: no mask drawn, no parameter or optimizer update.
    assert logicars.num_threads() == threads
    for (mask_state, params, t), m in zip(before, (MODEL, ASYNC_MODEL)):
        assert m.mask_state == mask_state
        assert m.optimizer_state()["t"] == t
        for name, p in m.params().items():
            np.testing.assert_array_equal(p, params[name])
    assert not (tmp_path / "r").exists()  # and writes no run directory


def test_every_error_is_a_value_error_except_memory() -> None:
    for exc in (InvalidValueError, ShapeError, CheckpointError):
        assert issubclass(exc, ValueError)
    assert issubclass(MemoryLimitError, MemoryError)


# ---- the command line ----------------------------------------------------------------


def garbage_run_dir(tmp: Path) -> str:
    run = tmp / "garbage"
    run.mkdir()
    (run / "model.safetensors").write_bytes(b"not a checkpoint at all")
    return str(run)


CLI_CASES: list[tuple[str, Callable[[Path], list[str]], tuple[str, ...]]] = [
    ("train-epochs-0", lambda t: ["train", "gol", "--epochs", "0"], ("--epochs", ">= 1")),
    ("train-epochs-word", lambda t: ["train", "gol", "--epochs", "ten"], ("--epochs", "integer")),
    ("train-lr-nan", lambda t: ["train", "gol", "--lr", "nan"], ("--lr", "finite number > 0")),
    (
        "train-weight-decay-negative",
        lambda t: ["train", "gol", "--weight-decay", "-1"],
        ("--weight-decay", "finite number >= 0"),
    ),
    ("train-seed-negative", lambda t: ["train", "gol", "--seed", "-1"], ("--seed", ">= 0")),
    ("train-threads", lambda t: ["train", "gol", "--threads", "2000"], ("threads", "1024")),
    ("train-unknown-flag", lambda t: ["train", "gol", "--fast"], ("unrecognized", "--fast")),
    ("train-unknown-preset", lambda t: ["train", "nope"], ("unknown preset 'nope'", "gol")),
    (
        "train-checkpoint-every",
        lambda t: ["train", "gol", "--checkpoint-every", "0"],
        ("--checkpoint-every", ">= 1"),
    ),
    (
        "train-out-unwritable",
        lambda t: ["train", "gol", "--out", write_file("f", b"x")(t).as_posix() + "/run"],
        ("output directory", "not a directory"),
    ),
    (
        "train-resume-garbage",
        lambda t: ["train", "--resume", garbage_run_dir(t)],
        ("model.safetensors", "safetensors"),
    ),
    ("presets-extra-argument", lambda t: ["presets", "gol"], ("unrecognized arguments", "gol")),
    ("unknown-command", lambda t: ["frobnicate"], ("invalid choice", "train")),
    ("bench-unknown-preset", lambda t: ["bench", "nope"], ("unknown preset", "nope", "gol")),
    ("bench-threads-0", lambda t: ["bench", "gol", "--threads", "0"], ("--threads", ">= 1")),
    ("bench-threads-word", lambda t: ["bench", "gol", "--threads", "a,b"], ("--threads", "1,2")),
    ("bench-epochs-0", lambda t: ["bench", "gol", "--epochs", "0"], ("--epochs", ">= 1")),
    ("bench-warmup-negative", lambda t: ["bench", "gol", "--warmup", "-1"], ("--warmup", ">= 0")),
]


@pytest.mark.parametrize(("name", "argv", "needles"), CLI_CASES, ids=[c[0] for c in CLI_CASES])
def test_cli_rejects_bad_input(
    name: str,
    argv: Callable[[Path], list[str]],
    needles: tuple[str, ...],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(tmp_path)  # a run directory that slipped through lands here
    args = argv(tmp_path)
    capsys.readouterr()
    start = time.perf_counter()
    code = main(args)
    elapsed = time.perf_counter() - start
    out, err = capsys.readouterr()
    assert code == 2, (out, err)
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err, err
    for needle in needles:
        assert needle in lines[0], f"{needle!r} not in {lines[0]!r}"
    assert elapsed < SECOND, f"{name} took {elapsed:.2f} s"
    assert not (tmp_path / "runs").exists()


def test_cli_model_over_memory_cap(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LOGICARS_MAX_MEMORY_MB", "1")
    code = main(["train", "colored-g", "--epochs", "1", "--out", str(tmp_path / "r")])
    err = capsys.readouterr().err.strip()
    assert code == 2 and "Traceback" not in err
    assert err.startswith("logicars: error: a model of") and "limit of 1 MB" in err, err
    assert not (tmp_path / "r").exists()


def test_cli_grids_over_memory_cap(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A model under the cap whose training grids are not: refused before the run
    directory and the progress bar, like a model over the cap."""
    monkeypatch.setenv("LOGICARS_MAX_MEMORY_MB", "2")
    code = main(["train", "lizard", "--epochs", "1", "--out", str(tmp_path / "r")])
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1, err
    assert err.startswith("logicars: error: a grid of 1x20x20 cells over 20 steps"), err
    assert "limit of 2 MB" in err
    assert not (tmp_path / "r").exists()


def test_case_count() -> None:
    """The issue asks for at least 40 cases across the API and the CLI."""
    assert len(API_CASES) + len(CLI_CASES) >= 40
    assert len({c.id for c in API_CASES}) == len(API_CASES)


# ---- unusual but valid arrays: same result as a contiguous float32 copy ----------------


def layouts(a: np.ndarray) -> dict[str, np.ndarray]:
    """`a` in every layout the API must accept, each with the same values."""
    readonly = a.copy()
    readonly.flags.writeable = False
    wide = np.zeros(a.shape[:-1] + (2 * a.shape[-1],), a.dtype)
    wide[..., ::2] = a
    return {
        "readonly": readonly,
        "fortran": np.asfortranarray(a),
        "strided": wide[..., ::2],
        "reversed": np.ascontiguousarray(a[::-1])[::-1],
        "float64": a.astype(np.float64),
        "bool": a.astype(bool),
        "uint8": a.astype(np.uint8),
        "big-endian": a.astype(">f4"),
    }


@pytest.mark.parametrize("layout", list(layouts(X)))
def test_unusual_layouts_match_contiguous(layout: str) -> None:
    xa = layouts(X)[layout]
    ya = layouts(np.flip(X, axis=2).copy())[layout]
    masks = layouts(MASKS * (np.random.default_rng(1).random(MASKS.shape) < 0.5))[layout]
    assert not np.shares_memory(xa, X)
    np.testing.assert_array_equal(MODEL.rollout(xa), MODEL.rollout(X))
    np.testing.assert_array_equal(
        ASYNC_MODEL.rollout(xa, masks=masks, hard=True),
        ASYNC_MODEL.rollout(X, masks=np.ascontiguousarray(masks, np.float32), hard=True),
    )
    loss, grads = MODEL.loss_and_grad(xa, ya)
    ref_loss, ref_grads = MODEL.loss_and_grad(X, np.flip(X, axis=2).copy())
    assert loss == ref_loss
    for name in grads:
        np.testing.assert_array_equal(grads[name], ref_grads[name])
    np.testing.assert_array_equal(MODEL.simulate(xa), MODEL.simulate(X))
    np.testing.assert_array_equal(
        MODEL.simulate(xa, masks=masks), MODEL.simulate(X, masks=np.asarray(masks, np.uint8))
    )
    # the input arrays are never written to
    np.testing.assert_array_equal(np.asarray(xa, np.float32), X)


def test_train_step_on_readonly_view_matches_copy() -> None:
    a = logicars.Model(spec_dict(), seed=3)
    b = logicars.Model(spec_dict(), seed=3)
    xr, yr = X.copy(), Y.copy()
    xr.flags.writeable = yr.flags.writeable = False
    assert a.train_step(xr[:, ::-1][:, ::-1], yr) == b.train_step(X, Y)
    for name, p in a.params().items():
        np.testing.assert_array_equal(p, b.params()[name])


def test_spec_json_round_trip_of_a_bad_spec_still_fails_cleanly() -> None:
    """The same validation applies whichever form the spec comes in."""
    bad = spec_dict(update={"layers": [10, 4, 4, C]})
    for form in (bad, json.dumps(bad), logicars.ModelSpec.from_dict(bad)):
        with pytest.raises(InvalidValueError, match="2\\*out >= in"):
            logicars.Model(form)
