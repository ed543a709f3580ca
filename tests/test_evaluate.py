"""`logicars.evaluate`: the held-out check of a trained hard circuit."""

from __future__ import annotations

import numpy as np
import pytest

import logicars
from logicars.datasets import checkerboard_target, gol_boards, gol_step, make_dataset
from logicars.evaluate import evaluate


def _wrong(out: np.ndarray, target: np.ndarray) -> tuple[int, int]:
    """(samples solved, wrong cells) counted independently of `evaluate`."""
    wrong = out != target
    return int(np.sum(~wrong.reshape(len(out), -1).any(axis=1))), int(np.sum(wrong))


def test_gol_counts_all_512_boards() -> None:
    preset = logicars.get_preset("gol")
    model = logicars.Model(preset.spec, seed=1)
    model.set_params({k: np.random.default_rng(0).normal(size=v.shape).astype(np.float32)
                      for k, v in model.params().items()})  # fmt: skip
    boards = gol_boards()
    solved, wrong = _wrong(model.rollout(boards, hard=True), gol_step(boards))
    assert 0 < solved < 512  # a random circuit: some boards right, some wrong
    assert evaluate(model, preset) == {
        "samples": 512,
        "solved": solved,
        "wrong_cells": wrong,
        "cells": 512 * 9,
    }


def test_checkerboard_fresh_starts() -> None:
    preset = logicars.get_preset("checkerboard")
    model = logicars.Model(preset.spec, seed=0)
    result = evaluate(model, preset, samples=3, seed=5)
    rng = np.random.default_rng([5, 2])
    x = np.concatenate([make_dataset(preset).sample(rng)[0] for _ in range(2)])  # batch 2
    out = model.rollout(x, hard=True)[..., :1]
    target = np.broadcast_to(checkerboard_target(16, 16)[None, ..., None], out.shape)
    solved, wrong = _wrong(out, target)
    assert result == {"samples": 4, "solved": solved, "wrong_cells": wrong, "cells": 4 * 256}


def test_growth_preset_uses_its_start_grid() -> None:
    preset = logicars.get_preset("colored-g")
    model = logicars.Model(preset.spec, seed=0)
    result = evaluate(model, preset, samples=7)
    assert (result["samples"], result["cells"]) == (1, 16 * 16 * 3)  # one start grid
    # A fresh model passes its zero start through: every lit target pixel is wrong.
    x, y = make_dataset(preset).sample(np.random.default_rng(0))
    out = model.rollout(x, hard=True)
    assert result["wrong_cells"] == int(np.sum(out[..., :3] != y[..., :3]))


def test_bad_arguments() -> None:
    preset = logicars.get_preset("checkerboard")
    model = logicars.Model(logicars.get_preset("gol").spec, seed=0)
    with pytest.raises(ValueError, match="model has 1 channels, preset 'checkerboard' needs 8"):
        evaluate(model, preset)
    with pytest.raises(ValueError, match="samples"):
        evaluate(model, logicars.get_preset("gol"), samples=0)
