"""`chunk_cells`, the cells the engine computes together: every width gives the oracle's
values and gradients and trains the same on any thread count; it is checked, stored,
read from experiment files and kept by checkpoints."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from test_engine import oracle, random_model, small_spec

import logicars
from logicars.errors import InvalidValueError
from logicars.presets import read_experiment


@pytest.mark.parametrize("chunk", [16, 48, 80, 128])
@pytest.mark.parametrize(
    "periodic, fire_rate, bhw", [(True, None, (2, 9, 11)), (False, 0.6, (1, 11, 13))]
)
def test_every_chunk_width_matches_the_float64_oracle(chunk, periodic, fire_rate, bhw) -> None:
    # 198 and 143 cells: several chunks of every width but 128, the last one partial.
    spec = small_spec(3, periodic, fire_rate).replace(chunk_cells=chunk)
    model = random_model(spec, seed=4)
    rng = np.random.default_rng(chunk)
    x = (rng.random(bhw + (3,)) < 0.5).astype(np.float32)
    y = (rng.random(bhw + (3,)) < 0.5).astype(np.float32)
    steps = spec.num_steps
    masks = None
    if fire_rate is not None:
        masks = (rng.random(bhw[:1] + (steps,) + bhw[1:] + (1,)) < fire_rate).astype(np.float32)
    ref = oracle(model)
    np.testing.assert_allclose(
        model.rollout(x, masks=masks), ref.rollout(x, steps, masks=masks), atol=1e-5
    )
    loss, grads = model.loss_and_grad(x, y, masks=masks)
    ref_loss, ref_grads = ref.loss_and_grad(x, y, steps, masks=masks)
    assert loss == pytest.approx(ref_loss, rel=1e-5)
    for name, g in grads.items():
        np.testing.assert_allclose(g, ref_grads[name], atol=1e-6, rtol=1e-3, err_msg=name)


def test_a_chunk_width_trains_bit_identically_on_any_thread_count() -> None:
    spec = small_spec(3, True, None, steps=3).replace(chunk_cells=80)
    rng = np.random.default_rng(6)
    x = (rng.random((2, 16, 20, 3)) < 0.5).astype(np.float32)  # 640 cells: 8 chunks
    y = (rng.random((2, 16, 20, 3)) < 0.5).astype(np.float32)
    runs = []
    try:
        for threads in (1, 3):
            logicars.set_num_threads(threads)
            model = random_model(spec, seed=2)
            losses = [model.train_step(x, y) for _ in range(3)]
            runs.append((losses, model.params()))
    finally:
        logicars.set_num_threads(0)
    assert runs[0][0] == runs[1][0]
    for name, p in runs[0][1].items():
        np.testing.assert_array_equal(p, runs[1][1][name])


@pytest.mark.parametrize("bad", [0, 8, 72, 144])
def test_a_width_the_kernels_lack_is_refused(bad: int) -> None:
    spec = small_spec(2, True).replace(chunk_cells=bad)
    with pytest.raises(InvalidValueError, match=f"chunk_cells must be a multiple of 16 .* {bad}"):
        logicars.Model(spec, seed=0)


def test_chunk_cells_is_stored_only_when_not_the_default(tmp_path: Path) -> None:
    spec = small_spec(2, True)
    assert spec.chunk_cells == 64 and "chunk_cells" not in spec.to_dict()
    wide = spec.replace(chunk_cells=80)
    assert wide.to_dict()["chunk_cells"] == 80
    assert logicars.ModelSpec.from_json(wide.to_json()) == wide
    model = logicars.Model(wide, seed=1)
    model.save(tmp_path / "m.safetensors")
    assert logicars.Model.load(tmp_path / "m.safetensors").spec.chunk_cells == 80


def test_an_experiment_file_sets_chunk_cells(tmp_path: Path) -> None:
    path = tmp_path / "wide.toml"
    path.write_text('task = "life:B3/S23"\n[model]\nchunk_cells = 128\n')
    assert read_experiment(path).preset.spec.chunk_cells == 128
    path.write_text('task = "life:B3/S23"\n[model]\nchunk_cells = "wide"\n')
    with pytest.raises(ValueError, match="chunk_cells"):
        read_experiment(path)
