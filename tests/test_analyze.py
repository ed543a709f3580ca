"""The analysis suite (`logicars.analyze`, `logicars analyze`) on circuits whose behaviour
is known: the identity circuit, hand-set gate histograms, a fixture GoL-shaped model."""

from __future__ import annotations

import importlib
import json
from pathlib import Path

import numpy as np
import pytest
from conftest import FIXTURES

import logicars
from logicars.circuit.export import active_gates
from logicars.cli import main
from logicars.datasets import checkerboard_target, gol_boards, gol_step
from logicars.spec import ModelSpec, PerceiveSpec, UpdateSpec
from logicars.tasks import PatternTask

an = importlib.import_module("logicars.circuit.analyze")  # `logicars.analyze` is the function
C = 8
OP_A = an.GATE_NAMES.index("A")


def identity_model(channels: int = C, num_steps: int = 20) -> logicars.Model:
    """Every update output is a pass-through of the centre cell's own channel: the CA
    leaves every grid unchanged (checked below), so its errors are known exactly."""
    spec = ModelSpec(
        channels=channels,
        perceive=PerceiveSpec(1, [9, 8], ["first_kernel"]),
        update=UpdateSpec([channels + channels * 8, channels], ["random"]),
        num_steps=num_steps,
    )
    probe = logicars.Model(spec, seed=0)
    params = {}
    for name, p in probe.params().items():
        logits = np.zeros(p.shape, dtype=np.float32)
        logits[..., OP_A] = 1.0
        params[name] = logits
    centre = np.arange(channels, dtype=np.int32)
    return logicars.Model.from_parts(
        spec,
        [np.array([[4] * 8, [0, 1, 2, 3, 5, 6, 7, 8]], dtype=np.int32)],
        [np.stack([centre, centre])],
        params,
    )


def checkerboard_task(channels: int = C) -> PatternTask:
    """The checkerboard task, but starting from the target itself (zeros elsewhere)."""

    class FromTarget(PatternTask):
        def start(self, rng: np.random.Generator, b: int, h: int, w: int) -> np.ndarray:
            x = np.zeros((b, h, w, self.channels), dtype=np.uint8)
            x[..., 0] = checkerboard_target(h, w)
            return x

    tile = checkerboard_target(4, 4)
    return FromTarget(tile, "checkerboard", channels=channels, height=16, width=16, num_steps=20)


def test_identity_model_is_the_identity() -> None:
    x = np.random.default_rng(1).integers(0, 2, size=(2, 9, 11, C), dtype=np.uint8)
    assert np.array_equal(identity_model().simulate(x, 5), x)


def test_cell_error_counts_wrong_cells() -> None:
    target = checkerboard_target(8, 8).astype(np.uint8)[..., None]
    grid = np.zeros((2, 8, 8, 3), dtype=np.uint8)
    grid[0, ..., 0] = target[..., 0]
    grid[1, ..., 0] = target[..., 0]
    grid[1, 0, :3, 0] ^= 1  # three wrong cells
    grid[1, 5, 5, 2] = 1  # not a loss channel
    np.testing.assert_allclose(an.cell_error(grid, target, (0,)), [0.0, 3 / 64])
    region = an.centre_square(8, 8, 4)
    assert region.sum() == 16 and region[2:6, 2:6].all()
    assert an.cell_error(grid, target, (0,), region=region)[1] == 0.0


def test_perfect_circuit_has_zero_error(tmp_path: Path) -> None:
    """A circuit that holds a correct pattern: every pattern metric is exactly 0, and
    the self-healing error is what the dead square removed, computed here directly."""
    report = an.analyze(
        identity_model(),
        tmp_path,
        task=checkerboard_task(),
        quick=True,
        robustness_steps=50,
        reset="zeros",
    )
    ex = report["experiments"]
    gen = ex["generalisation"]
    assert gen["grid"] == [64, 64] and gen["steps"] == 80
    assert gen["final_error"] == 0 and gen["boards_exact"] == gen["boards"]
    assert gen["exact_from_step"] == 0 and len(gen["error_curve"]) == 81
    ft = ex["fault_tolerance"]
    assert ft["damage"] == [20, 20] and ft["final_error_outside"] == 0
    # The identity never regrows the 20x20 hole: the cells where the target is 1 stay
    # wrong, half of the square.
    dead = an.centre_square(64, 64, 20)
    missing = checkerboard_target(64, 64)[dead].sum() / 64**2
    sh = ex["self_healing"]
    assert sh["damage_steps"] == [0, 80] and sh["steps"] == ft["steps"] == 160
    assert sh["final_error"] == pytest.approx(missing) and missing == pytest.approx(200 / 4096)
    assert sh["error_curve"][0] == 0 and sh["error_curve"][1] == pytest.approx(missing, abs=1e-6)
    assert not sh["recovered"] and sh["steps_to_recover"] is None
    rob = ex["robustness"]
    assert rob["steps"] == 50 and len(rob["error_curve"]) == 50
    assert 0 < rob["final_error"] <= 50 * 100 / 4096
    assert rob["single_reset"]["recovered"] == 0 and rob["single_reset"]["median_steps"] is None
    # The identity keeps every reset to zeros: the error never decreases.
    assert np.all(np.diff(rob["error_curve"]) >= 0)
    for name in an.EXPERIMENTS:
        assert (tmp_path / f"{name}.png").stat().st_size > 1000
    saved = json.loads((tmp_path / "analysis.json").read_text())
    assert saved["experiments"]["generalisation"]["final_error"] == 0
    assert sorted(saved["files"]) == sorted(f"{n}.png" for n in an.EXPERIMENTS)


def test_recovery_is_measured_from_the_lift() -> None:
    curve = np.array([0.0, 0.3, 0.2, 0.1, 0.0, 0.0])
    assert an._first_lasting_zero(curve, 2) == 4
    assert an._first_lasting_zero(np.array([0.0, 0.1, 0.0, 0.2]), 0) is None
    assert an._first_lasting_zero(np.zeros(3), 1) == 1


def test_untrained_checkerboard_is_wrong_and_reproducible() -> None:
    """Random starts under the identity stay random: about half the cells are wrong."""
    task = an.task_for("checkerboard", identity_model())
    model = identity_model()
    a = an.analyze(model, task=task, experiments=["generalisation"], seed=3, quick=True)
    b = an.analyze(model, task=task, experiments=["generalisation"], seed=3, quick=True)
    assert a == b
    err = a["experiments"]["generalisation"]["final_error"]
    assert 0.4 < err < 0.6
    assert a["experiments"]["generalisation"]["boards_exact"] == 0


def test_gate_histograms_count_argmax_ops() -> None:
    model = identity_model()
    params = model.params()
    # Perception: 8 gates; make one XOR. Update: 8 gates; make three AND and one B.
    params["perceive_logits_0"][0, 1, :] = 0
    params["perceive_logits_0"][0, 1, an.GATE_NAMES.index("XOR")] = 1
    up = params["update_logits_0"]
    up[:4] = 0
    up[:3, an.GATE_NAMES.index("AND")] = 1
    up[3, an.GATE_NAMES.index("B")] = 1
    model.set_params(params)
    g = an.gate_histograms(model)
    assert g["perceive"]["XOR"] == 1 and g["perceive"]["A"] == 7
    assert g["update"]["AND"] == 3 and g["update"]["B"] == 1 and g["update"]["A"] == 4
    assert sum(g["perceive"].values()) + sum(g["update"].values()) == g["gates"] == 16
    assert (g["active_perceive"], g["active_update"], g["active_gates"]) == (1, 3, 4)
    assert g["active_gates"] == active_gates(model)
    # Every AND reads one channel twice (AND(x, x) = x): nothing is left after folding.
    assert g["circuit_active_gates"] == 0


def test_gol_is_checked_against_the_rule(tmp_path: Path) -> None:
    """A C=1 periodic fixture model as a GoL circuit: the 512-board numbers agree with
    the float hard rollout compared with the rule here; the other experiments skip."""
    model = logicars.Model.from_npz(FIXTURES / "sync_periodic_c1.npz")
    report = an.analyze(model, tmp_path, preset="gol", quick=True)
    gen = report["experiments"]["generalisation"]
    boards = gol_boards()
    got = model.rollout(boards, steps=1, hard=True)
    want = gol_step(boards)
    assert gen["boards_correct"] == int(np.all(got == want, axis=(1, 2, 3)).sum())
    assert gen["cell_accuracy_512"] == pytest.approx(float(np.mean(got == want)))
    assert 0 <= gen["one_step_cell_accuracy"] <= 1 and gen["steps"] == 64
    for name in ("fault_tolerance", "self_healing", "robustness"):
        assert "rule" in report["experiments"][name]["skipped"]
    assert (tmp_path / "generalisation.png").exists()
    assert not (tmp_path / "robustness.png").exists()


def test_grow_presets_run_longer_on_their_grid() -> None:
    """Lizard-shaped task (a 20x20 fixed image): generalisation stays on 20x20."""
    model = identity_model(channels=4, num_steps=3)
    base = an.task_for("lizard", model)
    report = an.analyze(model, task=base, quick=True)
    ex = report["experiments"]
    assert ex["generalisation"]["grid"] == [20, 20] and ex["generalisation"]["steps"] == 12
    # The identity keeps the seed cell: everything the target has but the seed is wrong.
    target = an.fixed_target(base, 20, 20)[..., 0]
    seed_only = np.zeros((20, 20))
    seed_only[10, 10] = 1
    assert ex["generalisation"]["final_error"] == pytest.approx(np.mean(target != seed_only))
    assert ex["self_healing"]["damage_steps"] == [3, 6]
    assert "skipped" in ex["fault_tolerance"] and "skipped" in ex["robustness"]


def test_bad_arguments() -> None:
    model = identity_model()
    with pytest.raises(ValueError, match="pass preset="):
        an.analyze(model)
    with pytest.raises(ValueError, match="unknown experiments"):
        an.analyze(model, preset="checkerboard", experiments=["nope"])
    with pytest.raises(ValueError, match="reset must be one of"):
        an.analyze(model, preset="checkerboard", reset="ones")
    with pytest.raises(ValueError, match="unknown preset"):
        an.analyze(model, preset="mnist")


def _fake_run(path: Path, preset: str = "checkerboard") -> Path:
    """A run directory holding the identity model, as `logicars train` lays it out."""
    path.mkdir(parents=True)
    identity_model().save(path / "model.safetensors")
    (path / "summary.json").write_text(json.dumps({"preset": preset}))
    return path


def test_cli_writes_plots_and_compares_runs(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    a = _fake_run(tmp_path / "sync")
    b = _fake_run(tmp_path / "async", "checkerboard-async")
    args = ["analyze", str(a), str(b), "--quick", "--only", "robustness"]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert out.count("mean error") == 2 and "on one plot" in out
    for run in (a, b):
        report = json.loads((run / "analysis.json").read_text())
        assert set(report["experiments"]) == {"robustness"}
        assert report["experiments"]["robustness"]["steps"] == an.QUICK_ROBUSTNESS_STEPS
    assert (a / "robustness_comparison.png").exists()
    # --out: one folder per run.
    assert (
        main(["analyze", str(a), "--quick", "--only", "gates", "--out", str(tmp_path / "o")]) == 0
    )
    assert (tmp_path / "o" / "gates.png").exists()


def _garbage_run(path: Path) -> Path:
    (path / "model.safetensors").write_bytes(b"not a checkpoint")
    return path


@pytest.mark.parametrize(
    ("make", "needles"),
    [
        (lambda p: p / "missing", ["no such run directory"]),
        (lambda p: p, ["not a run directory", "model.safetensors"]),
        (_garbage_run, ["model.safetensors"]),
    ],
)
def test_cli_errors(capsys: pytest.CaptureFixture[str], tmp_path: Path, make, needles) -> None:
    code = main(["analyze", str(make(tmp_path))])
    err = capsys.readouterr().err
    assert code == 2 and len(err.strip().splitlines()) == 1 and "Traceback" not in err
    for n in needles:
        assert n in err


def test_cli_rejects_unknown_experiment(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    run = _fake_run(tmp_path / "r")
    assert main(["analyze", str(run), "--only", "gates,bogus"]) == 2
    assert "unknown experiments ['bogus']" in capsys.readouterr().err
    assert not (run / "analysis.json").exists()


def test_cli_out_needs_distinct_run_names(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    a = _fake_run(tmp_path / "x" / "run")
    b = _fake_run(tmp_path / "y" / "run")
    assert main(["analyze", str(a), str(b), "--out", str(tmp_path / "o")]) == 2
    assert "same directory name" in capsys.readouterr().err
    assert not (tmp_path / "o").exists()


@pytest.mark.slow
def test_trained_checkerboard_reproduces_the_paper(tmp_path: Path) -> None:
    """Seed 4 reaches hard loss 0: exact on 64x64 after 80 steps, and recovers."""
    result = logicars.train("checkerboard", seed=4, out=tmp_path / "cb", quiet=True)
    assert result.summary["first_epoch_hard_zero"] is not None
    report = an.analyze(tmp_path / "cb", quick=True, experiments=["generalisation", "self_healing"])
    assert report["experiments"]["generalisation"]["final_error"] == 0
    assert report["experiments"]["self_healing"]["recovered"]


def test_package_level_function(tmp_path: Path) -> None:
    run = _fake_run(tmp_path / "r")
    report = logicars.analyze(run, experiments=["gates"])
    assert report["preset"] == "checkerboard" and report["run"] == str(run)
    assert (run / "gates.png").exists() and (run / "analysis.json").exists()
