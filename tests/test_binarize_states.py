"""`binarize_states`: the training rollout rounds every state but the last to 0/1 and
back-propagates through the rounding unchanged (straight-through)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest
from test_engine import assert_matches_oracle, random_model, small_spec
from test_train import losses, same_state, tiny_async_preset

import logicars
from logicars.train import train

RELAXATIONS = [{"mode": "softmax"}, {"mode": "gumbel-st", "tau": 0.7}]


def binarized_model(relax: dict, fire_rate, seed: int, every: int = 1) -> logicars.Model:
    spec = small_spec(2, True, fire_rate, steps=4).replace(
        relax=logicars.Relaxation(**relax), binarize_states=True, binarize_every=every
    )
    return random_model(spec, seed)


@pytest.mark.parametrize("relax", RELAXATIONS, ids=lambda r: r["mode"])
@pytest.mark.parametrize("fire_rate", [None, 0.6])
def test_forward_and_gradient_match_float64_oracle(relax: dict, fire_rate) -> None:
    for seed in (1, 2):
        model = binarized_model(relax, fire_rate, seed)
        assert_matches_oracle(model, fire_rate, seed=seed, step=0, hard=False)


def test_every_state_but_the_last_is_binary() -> None:
    model = binarized_model({"mode": "softmax"}, None, 3)
    x = (np.random.default_rng(3).random((1, 6, 6, 2)) < 0.5).astype(np.float32)
    grids = model.rollout(x, record=True)
    assert set(np.unique(grids[:-1])) <= {0.0, 1.0}
    assert not set(np.unique(grids[-1])) <= {0.0, 1.0}  # the loss sees the relaxed state
    plain = random_model(small_spec(2, True, None, steps=4), 3)
    assert not set(np.unique(plain.rollout(x, record=True)[1:-1])) <= {0.0, 1.0}


def test_training_is_bit_identical_across_thread_counts() -> None:
    spec = small_spec(2, False, 0.6).replace(binarize_states=True)
    rng = np.random.default_rng(5)
    x = (rng.random((2, 6, 7, 2)) < 0.5).astype(np.float32)
    y = (rng.random((2, 6, 7, 2)) < 0.5).astype(np.float32)
    results = []
    for threads in (1, 2):
        logicars.set_num_threads(threads)
        model = logicars.Model(spec, seed=4)
        results.append(([model.train_step(x, y) for _ in range(6)], model.params()))
    logicars.set_num_threads(0)
    assert results[0][0] == results[1][0]
    for name, p in results[0][1].items():
        np.testing.assert_array_equal(p, results[1][1][name], err_msg=name)


def test_spec_field_is_optional_and_round_trips() -> None:
    spec = small_spec(2, False)
    assert "binarize_states" not in spec.to_dict()  # configs without it read as before
    on = spec.replace(binarize_states=True)
    assert on.to_dict()["binarize_states"] is True
    assert logicars.ModelSpec.from_json(on.to_json()) == on
    with pytest.raises(ValueError, match="binarize_states"):
        logicars.ModelSpec.from_dict({**on.to_dict(), "binarize_states": "yes"})


def test_train_stores_it_and_resume_is_bit_identical(tmp_path: Path) -> None:
    preset = tiny_async_preset()
    kw = {"binarize_states": True, "seed": 3, "quiet": True, "stop_on_solve": False}
    straight = train(preset, epochs=6, out=tmp_path / "straight", **kw)
    assert straight.summary["config"]["binarize_states"] is True
    assert logicars.Model.load(straight.checkpoint).spec.binarize_states
    first = train(preset, epochs=3, out=tmp_path / "split", **kw)
    resumed = train(None, epochs=6, resume=first.run_dir, quiet=True, stop_on_solve=False)
    assert same_state(straight.model, resumed.model)
    assert losses(straight) == losses(resumed)
    plain = train(preset, epochs=6, out=tmp_path / "plain", **{**kw, "binarize_states": False})
    assert losses(plain) != losses(straight)
    with pytest.raises(ValueError, match="keeps its binarize_states"):
        train(None, resume=first.run_dir, epochs=8, binarize_states=False, quiet=True)
    with pytest.raises(TypeError, match="binarize_states must be True or False"):
        train(preset, epochs=1, out=tmp_path / "never", binarize_states=1, quiet=True)


def test_init_from_an_npz_without_it_trains_with_the_presets(tmp_path: Path) -> None:
    """Like the relaxation, binarize_states is the preset's training rule, not part of
    the architecture an `init` npz must match: the run trains with the preset's."""
    preset = tiny_async_preset()
    preset = dataclasses.replace(preset, spec=preset.spec.replace(binarize_states=True))
    npz = tmp_path / "start.npz"
    logicars.Model(preset.spec.replace(binarize_states=False), seed=9).to_npz(npz)
    r = train(preset, epochs=2, seed=4, init=npz, out=tmp_path / "r", quiet=True)
    assert r.summary["config"]["binarize_states"] is True


@pytest.mark.parametrize(
    "relax",
    [
        {"mode": "softmax"},
        {"mode": "softmax", "hard_fraction": 0.5},
        {"mode": "truth-table", "hard_fraction": 0.5},
    ],
    ids=str,
)
def test_binarize_every_rounds_only_at_its_optimizer_steps(relax: dict) -> None:
    """With `binarize_every = 2` the training rollout rounds at optimizer steps 0, 2, ...
    and runs relaxed at 1, 3, ... (the oracle at each step); a rollout always rounds. A
    truth-table's hard gates run only in the rounded steps."""
    for fire_rate in (None, 0.6):
        model = binarized_model(relax, fire_rate, 6, every=2)
        x = (np.random.default_rng(6).random((2, 5, 6, 2)) < 0.5).astype(np.float32)
        for step in range(3):
            assert model.optimizer_state()["t"] == step
            assert_matches_oracle(model, fire_rate, seed=6, step=step, hard=False)
            model.train_step(x, x)


def test_binarize_every_is_checked_stored_and_resumed(tmp_path: Path) -> None:
    spec = small_spec(2, False).replace(binarize_states=True)
    assert "binarize_every" not in spec.to_dict()  # 1: every step, not written
    every = spec.replace(binarize_every=3)
    assert logicars.ModelSpec.from_json(every.to_json()) == every
    with pytest.raises(ValueError, match="binarize_every must be >= 1"):
        logicars.Model(spec.replace(binarize_every=0), seed=1)
    with pytest.raises(ValueError, match="binarize_every applies only with binarize_states"):
        logicars.Model(spec.replace(binarize_states=False, binarize_every=2), seed=1)

    preset = tiny_async_preset()
    kw = {"binarize_states": True, "binarize_every": 2, "seed": 3, "quiet": True}
    kw["stop_on_solve"] = False
    straight = train(preset, epochs=6, out=tmp_path / "straight", **kw)
    assert straight.summary["config"]["binarize_every"] == 2
    first = train(preset, epochs=3, out=tmp_path / "split", **kw)
    resumed = train(None, epochs=6, resume=first.run_dir, quiet=True, stop_on_solve=False)
    assert same_state(straight.model, resumed.model) and losses(straight) == losses(resumed)
    every_step = train(preset, epochs=6, out=tmp_path / "all", **{**kw, "binarize_every": 1})
    assert losses(every_step)[:1] == losses(straight)[:1]  # step 0 rounds in both
    assert losses(every_step) != losses(straight)
    with pytest.raises(ValueError, match="keeps its binarize_every"):
        train(None, resume=first.run_dir, epochs=8, binarize_every=1, quiet=True)
    # Switching the rounding off drops the preset's period with it.
    lizard_off = train(
        "lizard", epochs=1, binarize_states=False, drift_budget=0, out=tmp_path / "off", quiet=True
    )
    assert "binarize_every" not in lizard_off.summary["config"]


def test_cli_binarize_every_reaches_the_run(tmp_path: Path) -> None:
    from logicars.cli import main

    out = tmp_path / "r"
    argv = ["train", "gol", "--epochs", "1", "--binarize-states", "--binarize-every", "3"]
    assert main([*argv, "--quiet", "--out", str(out)]) == 0
    assert logicars.Model.load(out / "model.safetensors").spec.binarize_every == 3
