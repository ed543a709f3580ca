"""`logicars.repair`: the greedy search over gate ops that closes a hard circuit's last
wrong cells."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import logicars
from logicars.circuit.evaluate import heldout_inputs, validate, wrong_cells
from logicars.circuit.repair import RepairResult, repair, repair_on


def _random_model(preset_name: str = "gol", relax: str = "softmax") -> logicars.Model:
    preset = logicars.get_preset(preset_name)
    spec = preset.spec.replace(relax=logicars.Relaxation(relax))
    model = logicars.Model(spec, seed=3)
    rng = np.random.default_rng(0)
    model.set_params(
        {k: rng.normal(size=v.shape).astype(np.float32) for k, v in model.params().items()}
    )
    return model


def _second_choice(model: logicars.Model, name: str, gate: int) -> None:
    """Makes the gate's second most likely op its chosen one, as a hedging gate would."""
    params = model.params()
    rows = params[name].reshape(-1, params[name].shape[-1])
    if rows.shape[1] == 4:
        k = int(np.argmin(np.abs(rows[gate])))
        rows[gate, k] = -rows[gate, k]
    else:
        a, b = np.argsort(-rows[gate], kind="stable")[:2]
        rows[gate, a], rows[gate, b] = rows[gate, b], rows[gate, a]
    model.set_params(params)


def _gates(params: dict[str, np.ndarray]) -> Iterator[tuple[str, int]]:
    """Every `(parameter, gate)`, last layers first."""
    for name in sorted(params, reverse=True):
        for gate in range(params[name].reshape(-1, params[name].shape[-1]).shape[0]):
            yield name, gate


def _own_output_with_a_fault(
    relax: str,
    faults: Callable[[dict[str, np.ndarray]], Iterable[tuple[Any, ...]]],
    plant: Callable[..., None],
) -> tuple[logicars.Model, logicars.Preset, np.ndarray, np.ndarray, dict[str, np.ndarray]]:
    """A random gol circuit whose target is its own output (so a circuit with 0 wrong
    cells exists), with the first of `faults(params)` (`plant(model, *fault)`) that
    changes its output: `(model, preset, x, target, the faulty circuit's ops)`."""
    preset = logicars.get_preset("gol")
    model = _random_model("gol", relax)
    x, _ = heldout_inputs(model, preset)
    target = model.simulate(x, preset.spec.num_steps)[..., :1].astype(bool)
    good = model.params()
    for fault in faults(good):
        model.set_params(good)
        plant(model, *fault)
        if wrong_cells(model, preset, x, target).any():
            return model, preset, x, target, model.hard_ops()
    pytest.fail("no fault changes the circuit's output")


def _assert_changes_applied(
    result: RepairResult, broken: dict[str, np.ndarray], model: logicars.Model
) -> None:
    """Each change the result reports is the change from the faulty op to the model's."""
    ops = model.hard_ops()
    for pname, g, old, new in result.changes:
        assert broken[pname].reshape(-1)[g] == old and ops[pname].reshape(-1)[g] == new


@pytest.mark.parametrize("relax", ["softmax", "truth-table"])
def test_repair_undoes_a_planted_wrong_gate(relax: str) -> None:
    # One gate whose op matters takes its second choice, which repair must undo.
    model, preset, x, target, broken = _own_output_with_a_fault(relax, _gates, _second_choice)

    result = repair_on(model, preset, x, target, budget=5000)

    assert result.wrong_before > 0 and result.wrong_after == 0
    assert not wrong_cells(model, preset, x, target).any()
    assert 1 <= len(result.changes) <= result.evaluations <= 5000
    _assert_changes_applied(result, broken, model)


def test_repair_only_lowers_the_wrong_cells_and_is_deterministic() -> None:
    preset = logicars.get_preset("gol")
    a, b = _random_model(), _random_model()
    before = validate(a, preset, 64, 1).wrong_cells
    ra = repair(a, preset, budget=40, method="greedy")
    rb = repair(b, preset, budget=40, method="greedy")
    assert ra.wrong_before == before
    assert ra.wrong_after == validate(a, preset, 64, 1).wrong_cells <= before
    assert ra.evaluations == 40  # a random circuit is not fixed within 40 runs
    assert (ra.wrong_after, ra.changes) == (rb.wrong_after, rb.changes)
    for k, v in a.params().items():
        np.testing.assert_array_equal(v, b.params()[k])


def test_repair_with_no_budget_changes_nothing() -> None:
    preset = logicars.get_preset("gol")
    model = _random_model()
    params = model.params()
    result = repair(model, preset, budget=0)
    assert result.evaluations == 0 and result.changes == []
    assert result.wrong_after == result.wrong_before
    for k, v in model.params().items():
        np.testing.assert_array_equal(v, params[k])
    with pytest.raises(ValueError, match="budget"):
        repair(model, preset, budget=-1)


def test_result_serialises() -> None:
    preset = logicars.get_preset("gol")
    result = repair(_random_model(), preset, budget=5)
    d = result.to_dict()
    assert set(d) == {f.name for f in dataclasses.fields(result)} - {"seconds"}
    assert all(isinstance(c, list) and len(c) == 4 for c in d["changes"])


# ---- method="drift": the neutral-drift search in the engine --------------------------


@pytest.mark.parametrize("preset_name", ["gol", "checkerboard", "checkerboard-async", "colored-g"])
def test_drift_counts_wrong_cells_as_the_task_does(preset_name: str) -> None:
    # The engine scores each candidate itself: its count must be the task's (a pattern in
    # its closest phase, the async masks of the seed), before and after the changes.
    preset = _growing_only(logicars.get_preset(preset_name))
    model = _random_model(preset_name, "truth-table")
    x, target = heldout_inputs(model, preset, 4, seed=5)
    before = int(wrong_cells(model, preset, x, target, seed=5).sum())
    result = repair_on(model, preset, x, target, budget=30, seed=5, method="drift")
    assert result.wrong_before == before > 0
    assert result.wrong_after == int(wrong_cells(model, preset, x, target, seed=5).sum())
    assert result.wrong_after <= before and result.evaluations == 30


@pytest.mark.parametrize("relax", ["softmax", "truth-table"])
def test_drift_undoes_a_planted_row_flip(relax: str) -> None:
    # One truth-table row of a gate that matters is flipped. The search keeps only flips
    # that do not add wrong cells, so it ends at 0 (by undoing the flip or another way),
    # and the changes it reports are applied.
    def rows(params: dict[str, np.ndarray]) -> Iterator[tuple[str, int, int]]:
        return ((name, gate, row) for name, gate in _gates(params) for row in range(4))

    model, preset, x, target, broken = _own_output_with_a_fault(relax, rows, _flip_row)

    result = repair_on(model, preset, x, target, budget=20000, method="drift")

    assert result.wrong_before > 0 and result.wrong_after == 0
    assert not wrong_cells(model, preset, x, target).any()
    assert 1 <= len(result.changes) and result.evaluations <= 20000
    _assert_changes_applied(result, broken, model)


def _flip_row(model: logicars.Model, name: str, gate: int, row: int) -> None:
    """Flips a row of the gate's hard truth table (through `repair`'s own op setter)."""
    from logicars.circuit.repair import _set_op

    params = model.params()
    op = int(model.hard_ops()[name].reshape(-1)[gate])
    _set_op(params[name].reshape(-1, params[name].shape[-1])[gate], op ^ (8 >> row))
    model.set_params(params)


def _growing_only(preset: logicars.Preset) -> logicars.Preset:
    """The preset with the task's step-T count (colored-g's regrowing default counts the
    wrong cells of every step from T to 4T, which `validate` and `wrong_cells` do not)."""
    return dataclasses.replace(preset, growth="grow") if preset.config.growth else preset


def test_drift_is_deterministic_and_keeps_no_worse_circuit() -> None:
    preset = _growing_only(logicars.get_preset("colored-g"))
    runs = []
    for search_seed in (1, 1, 2):
        model = _random_model("colored-g", "truth-table")
        before = validate(model, preset, 64, search_seed).wrong_cells
        r = repair(model, preset, budget=60, seed=search_seed, method="drift")
        assert r.wrong_before == before
        # the circuit it leaves is the one it reports, and never worse than the start
        assert r.wrong_after == validate(model, preset, 64, search_seed).wrong_cells
        assert r.wrong_after <= r.wrong_before
        runs.append((r.wrong_after, r.changes))
    assert runs[0] == runs[1]
    assert runs[0][1] != runs[2][1]  # another seed draws other flips


def test_drift_with_no_budget_changes_nothing_and_bad_arguments_are_refused() -> None:
    preset = logicars.get_preset("gol")
    model = _random_model("gol", "truth-table")
    params = model.params()
    result = repair(model, preset, budget=0, method="drift")
    assert result.evaluations == 0 and result.changes == []
    assert result.wrong_after == result.wrong_before > 0
    for k, v in model.params().items():
        np.testing.assert_array_equal(v, params[k])
    with pytest.raises(ValueError, match="method"):
        repair(model, preset, method="anneal")
    with pytest.raises(ValueError, match="offset continues a drift search"):
        repair(model, preset, method="greedy", offset=5)


def test_model_drift_search_refuses_bad_input() -> None:
    model = _random_model()
    x = np.zeros((2, 3, 3, 1), np.uint8)
    with pytest.raises(logicars.errors.ShapeError, match="targets"):
        model.drift_search(x, np.zeros((1, 2, 3, 3, 2), np.uint8), [0])
    with pytest.raises(ValueError, match="0 or 1"):
        model.drift_search(x, np.full((1, 2, 3, 3, 1), 2, np.uint8), [0])
    with pytest.raises(ValueError, match="loss channel"):
        model.drift_search(x, np.zeros((1, 2, 3, 3, 1), np.uint8), [1])
    with pytest.raises(ValueError, match="x: expected 0 or 1"):
        model.drift_search(np.full((2, 3, 3, 1), 2, np.uint8), np.zeros((1, 2, 3, 3, 1)), [0])


def test_drift_in_chunks_is_one_search(monkeypatch: pytest.MonkeyPatch) -> None:
    # repair runs the engine's search in chunks (for its progress bar); each chunk goes
    # on from the candidate position where the last stopped, so the chunk size changes
    # nothing.
    import logicars.circuit.repair as repair_module

    preset = logicars.get_preset("colored-g")
    results = []
    for chunk in (1000, 7):
        monkeypatch.setattr(repair_module, "DRIFT_CHUNK", chunk)
        model = _random_model("colored-g", "truth-table")
        r = repair(model, preset, budget=40, method="drift")
        results.append((r.wrong_after, r.evaluations, r.changes, model.hard_ops()))
    (a_wrong, a_runs, a_changes, a_ops), (b_wrong, b_runs, b_changes, b_ops) = results
    assert (a_wrong, a_runs, a_changes) == (b_wrong, b_runs, b_changes)
    for k in a_ops:
        np.testing.assert_array_equal(a_ops[k], b_ops[k])
    # So does a search stopped after a chunk and continued from its offset.
    model = _random_model("colored-g", "truth-table")
    first = repair(model, preset, budget=40, method="drift", stop=lambda: True)
    assert first.evaluations == 7  # the chunk, then the stop
    rest = repair(model, preset, budget=33, method="drift", offset=7)
    assert rest.wrong_after == a_wrong and rest.evaluations == 33
    for k, v in model.hard_ops().items():
        np.testing.assert_array_equal(v, a_ops[k])


def test_the_library_and_the_command_line_share_the_defaults() -> None:
    """`repair()` and `logicars repair` search the same way unless told otherwise: one
    owner for the method, the budget and the validation draw (`logicars.repair`)."""
    import argparse
    import inspect

    from logicars.circuit import repair as repair_module
    from logicars.cli import repair as cli_repair

    parser = argparse.ArgumentParser()
    cli_repair.add_arguments(parser)
    cli = vars(parser.parse_args(["run"]))
    library = inspect.signature(repair_module.repair).parameters
    for name in ("method", "budget", "samples", "seed"):
        assert cli[name] == library[name].default, name
    assert (cli["method"], cli["budget"]) == (repair_module.DEFAULT_METHOD, 20000)
    assert (cli["samples"], cli["seed"]) == (64, 1)  # the validation draw of training


def test_drift_of_a_holding_task_scores_every_step_from_t_to_4t() -> None:
    """A growing-only colored-g circuit (the one shipped before colored-g persisted by
    default), asked to persist: the drift search reads its wrong cells summed over steps
    T..4T from the start grid, lowers them, and never loses the grown pattern at step T."""
    from logicars import growth
    from logicars.pretrained import load_pretrained

    grown_only = load_pretrained(Path(__file__).parent / "data" / "colored-g-grow.npz")
    preset = dataclasses.replace(grown_only.preset, growth="persist")
    task = preset.task()
    model = grown_only.model
    at_t, held = growth.held_score(model, task)
    assert at_t == 0 and held > 0  # grown at T, falls apart after
    result = repair(model, preset, budget=3000, method="drift")
    assert result.wrong_before == held
    after = growth.held_score(model, task)
    assert after == (0, result.wrong_after) and result.wrong_after < held
