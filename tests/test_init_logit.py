"""`init_logit`: the pass-through gate's logit in a fresh model (residual initialisation's
strength), a spec field that the `[model]` table, `train(init_logit=...)` and
`--init-logit` set."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from test_engine import small_spec

import logicars
from logicars.cli import main
from logicars.presets import preset_file_text, read_experiment
from logicars.records import training_label
from logicars.spec import INIT_LOGIT


def pass_logits(model: logicars.Model) -> set[float]:
    """The largest logit of every gate (its pass-through's in a fresh model)."""
    return {float(v) for p in model.params().values() for v in p.reshape(-1, 16).max(axis=1)}


def test_the_default_is_the_notebooks_and_is_not_written() -> None:
    spec = small_spec(2, False)
    assert spec.init_logit == INIT_LOGIT == 10.0
    assert "init_logit" not in spec.to_dict()  # configs without it read as before
    assert pass_logits(logicars.Model(spec, 1)) == {10.0}


def test_a_fresh_model_starts_at_the_specs_logit_on_the_same_wiring() -> None:
    spec = small_spec(2, False)
    weak = spec.replace(init_logit=4.5)
    assert logicars.ModelSpec.from_json(weak.to_json()) == weak
    model, base = logicars.Model(weak, 3), logicars.Model(spec, 3)
    assert pass_logits(model) == {4.5}
    for name, wires in base.wires().items():
        assert np.array_equal(model.wires()[name], wires)
    for name, logits in base.params().items():  # the same gate is the favourite
        assert np.array_equal(model.params()[name].argmax(-1), logits.argmax(-1))


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"init_logit": -1.0}, "init_logit must be a finite number >= 0"),
        ({"init_logit": float("nan")}, "init_logit must be a finite number >= 0"),
    ],
)
def test_bad_values_are_refused(changes: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        logicars.Model(small_spec(2, False).replace(**changes), 1)


def test_a_truth_table_starts_from_its_own_parameters() -> None:
    table = small_spec(2, False).replace(relax=logicars.Relaxation(mode="truth-table"))
    fresh = logicars.Model(table, 2).params()
    for name, params in logicars.Model(table.replace(init_logit=3.0), 2).params().items():
        assert np.array_equal(params, fresh[name])


def test_train_keeps_it_in_the_run_and_its_label(tmp_path: Path) -> None:
    run = logicars.train("gol", epochs=2, seed=1, init_logit=5, quiet=True, out=tmp_path / "r")
    assert run.model.spec.init_logit == 5.0
    assert run.summary["config"]["init_logit"] == 5.0
    label = "softmax(warmup=500, hard_fraction=0.6), init logit 5"  # gol's hard gates
    assert training_label(run.summary) == label
    with pytest.raises(ValueError, match="init_logit must be a number in"):
        logicars.train("gol", epochs=1, init_logit=-2, quiet=True, out=tmp_path / "bad")


def test_an_experiment_files_model_table_and_the_cli_set_it(tmp_path: Path) -> None:
    text = preset_file_text("gol")
    assert "\ninit_logit = 5\n" in text
    text = text.replace("\ninit_logit = 5\n", "\ninit_logit = 6\n")
    path = tmp_path / "weak.toml"
    path.write_text(text)
    assert read_experiment(path).preset.spec.init_logit == 6.0
    out = tmp_path / "cli"
    argv = ["train", "gol", "--epochs", "1", "--init-logit", "3.5", "--quiet", "--out", str(out)]
    assert main(argv) == 0
    assert logicars.Model.load(out / "model.safetensors").spec.init_logit == 3.5
