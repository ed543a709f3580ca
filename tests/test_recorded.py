"""The `data:` task kind: recordings read, checked and learnt (`logicars.recorded`,
`logicars.tasks.RecordedTask`, `logicars.automata`)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import logicars
from logicars import automata
from logicars.recorded import Recording, decode_states, load_recording
from logicars.tasks import RecordedTask, make_task, split_kind, task_from_dict


def _save(path: Path, **arrays: object) -> Path:
    np.savez(path, **arrays)
    return path


def test_examples_record_their_rules_and_hold_out_a_4x_grid() -> None:
    for name, make in automata.EXAMPLES.items():
        rec = make(runs=4, steps=5, size=8)
        assert rec.states.shape[:4] == (4, 5, 8, 8), name
        assert rec.test is not None and rec.test.shape[2:4] == (32, 32), name
        task = RecordedTask(rec, name=name)
        x, y = task.holdout()
        assert x.shape[1:3] == (32, 32) and len(x) == 4
        # The recorded rule reproduces its own held-out frames (the target of the check).
        target = task.target(x)
        assert target is not None and np.array_equal(target > 0.5, y), name


def test_wireworld_and_brians_brain_steps() -> None:
    ww = np.zeros((1, 5, 5), dtype=np.uint8)
    ww[0, 2, :] = 3  # a wire
    ww[0, 2, 1], ww[0, 2, 0] = 1, 2  # a head moving right, its tail behind
    after = automata.wireworld_step(ww)
    assert after[0, 2].tolist() == [3, 2, 1, 3, 3]
    bb = np.zeros((1, 5, 5), dtype=np.uint8)
    bb[0, 2, 1] = bb[0, 2, 3] = 1  # two firing cells: (1, 2) and (3, 2) are born
    after = automata.brians_brain_step(bb)
    assert after[0, 2, 1] == 2 and after[0, 1, 2] == 1 and after[0, 3, 2] == 1
    rule110 = automata.elementary_step(110)
    row = np.array([[[0, 0, 0, 1, 0, 0]]], dtype=np.uint8)
    assert rule110(row)[0, 0].tolist() == [0, 0, 1, 1, 0, 0]
    one = np.zeros((1, 5, 5), dtype=np.uint8)
    one[0, 2, 2] = 1  # a lone cell: its four orthogonal neighbours turn on, it turns off
    after = automata.parity_step(one)
    assert sorted(zip(*np.nonzero(after[0]))) == [(1, 2), (2, 1), (2, 3), (3, 2)]
    a, b = np.random.default_rng(0).integers(0, 2, (2, 1, 6, 6), dtype=np.uint8)
    assert np.array_equal(
        automata.parity_step(a ^ b), automata.parity_step(a) ^ automata.parity_step(b)
    )  # a linear rule


def test_the_parity_rule_is_learnt_past_its_plateau(tmp_path: Path) -> None:
    """The 4-neighbour XOR: the soft loss sits at 0.25 per cell (every output 0.5) before
    the circuit finds it; the kind's defaults then solve the held-out 48x48 recordings."""
    path = tmp_path / "parity.npz"
    automata.parity(runs=16, seed=0).save(path)
    run = logicars.train(f"data:{path}", epochs=2000, out=tmp_path / "run", quiet=True)
    assert run.summary["solved_epoch"] is not None
    cells = run.summary["batch"] * 12 * 12
    plateau = [m.soft_loss / cells for m in run.metrics[60:120]]
    assert all(0.24 < v < 0.26 for v in plateau)


def test_a_file_round_trips_with_its_encoding(tmp_path: Path) -> None:
    rec = automata.wireworld(runs=3, steps=4, size=6)
    path = tmp_path / "ww.npz"
    rec.save(path)
    with np.load(path) as z:
        assert z["states"].shape == (3, 4, 6, 6) and z["states"].max() <= 3  # integer states
        assert z["encoding"].shape == (4, 2)
    back = load_recording(path)
    assert np.array_equal(back.states, rec.states) and np.array_equal(back.test, rec.test)
    assert back.symmetric and back.periodic
    task = make_task(f"data:{path}")
    assert isinstance(task, RecordedTask) and task.channels == 2
    assert split_kind(f"data:{path}") == ("data", str(path))


def test_the_record_rebuilds_the_task_without_the_file(tmp_path: Path) -> None:
    path = tmp_path / "life.npz"
    automata.life_like(runs=4, steps=4, size=6).save(path)
    task = RecordedTask.from_file(path, batch=3)
    record = task.to_dict()
    path.unlink()
    back = task_from_dict(record)
    assert isinstance(back, RecordedTask)
    assert np.array_equal(back.recording.states, task.recording.states)
    assert (back.batch, back.num_steps, back.hidden, back.periodic) == (3, 1, 0, True)
    assert back.recording.symmetric
    for a, b in zip(back.holdout(), task.holdout()):
        assert np.array_equal(a, b)


def test_training_batches_are_recorded_transitions() -> None:
    rec = automata.elementary(110, runs=4, steps=6, size=8)  # not symmetric
    task = RecordedTask(rec, batch=5)
    x, y = task.sample(np.random.default_rng(0))
    assert x.shape == y.shape == (5, 8, 8, 1)
    target = task.target(x)
    assert target is not None and np.array_equal(target, y)
    # A symmetric rule's batches are turned and mirrored transitions: still the rule's.
    rec = automata.brians_brain(runs=4, steps=6, size=8)
    assert rec.symmetric
    task = RecordedTask(rec, batch=64)
    x, y = task.sample(np.random.default_rng(0))
    enc = automata.BRIANS_BRAIN_ENCODING
    states = decode_states(x.astype(np.uint8), enc)
    assert np.array_equal(enc[automata.brians_brain_step(states)], y)
    first = task.transitions()[0][:, ..., :2]
    turned = [not any(np.array_equal(g, f) for f in first) for g in x]
    assert any(turned)  # some are not as recorded
    # Only the training runs: the last quarter is held out when there is no `test`.
    task = RecordedTask(Recording(rec.states), name="no-test")
    assert len(task.holdout()[0]) == 1 * 5 and len(task.transitions()[0]) == 3 * 5


def test_hidden_channels_start_each_run_at_its_first_frame() -> None:
    rec = automata.brians_brain(runs=4, steps=6, size=8)
    task = RecordedTask(rec, hidden=2, steps=3)
    assert task.channels == 4 and task.loss_channels == [0, 1] and task.num_steps == 3
    x, y = task.transitions()
    assert len(x) == 4 and np.array_equal(x[..., :2], rec.states[:, 0])
    assert np.array_equal(y, rec.states[:, 3]) and not x[..., 2:].any()
    assert task.target(x) is None


@pytest.mark.parametrize(
    ("arrays", "message"),
    [
        ({"states": np.zeros((2, 3, 4, 4, 1, 1))}, "expected (runs, steps, H, W, C) bits"),
        ({"states": np.zeros((4, 4))}, "got shape (4, 4)"),
        ({"states": np.full((2, 3, 4, 4, 1), 2)}, "must be 0 or 1, found 2..2"),
        ({"states": np.full((2, 3, 4, 4), 0.5)}, "expected integer states or 0/1 bits"),
        ({"states": np.zeros((2, 1, 4, 4), dtype=np.uint8)}, "at least 2 steps"),
        ({"states": np.full((2, 3, 4, 4), 5), "encoding": np.eye(3)}, "state 5 has no row"),
        ({"states": np.zeros((2, 3, 4, 4)), "encoding": [[0], [0]]}, "the same bits"),
        ({"test": np.zeros((2, 3, 4, 4))}, "no 'states' array"),
        ({"states": np.zeros((2, 3, 4, 4)), "extra": 1}, "unknown array 'extra'"),
        ({"states": np.zeros((1, 3, 4, 4))}, "nothing to hold out"),
        (
            {"states": np.zeros((2, 3, 4, 4)), "test": np.zeros((1, 3, 8, 8, 2))},
            "2 bits per cell, the training recording has 1",
        ),
    ],
)
def test_bad_recordings_get_one_line_errors(tmp_path: Path, arrays: dict, message: str) -> None:
    path = _save(tmp_path / "bad.npz", **arrays)
    with pytest.raises(ValueError) as e:
        RecordedTask.from_file(path)
    assert message in str(e.value) and "\n" not in str(e.value)
    assert str(path) in str(e.value)


def test_inconsistent_transitions_are_counted_with_a_position(tmp_path: Path) -> None:
    states = np.zeros((3, 3, 5, 5), dtype=np.uint8)
    states[1, 2, 3, 4] = 1  # all-dead neighbourhood followed by a live cell, once
    path = _save(tmp_path / "noisy.npz", states=states)
    with pytest.raises(ValueError) as e:
        RecordedTask.from_file(path)
    msg = str(e.value)
    assert "inconsistent transitions: 1 neighbourhood(s)" in msg
    assert "(1 cell(s) differ from the most common), e.g. states run 1 step 1->2 row 3 col 4" in msg
    # Hidden channels may carry what the frames do not show: no check then.
    assert RecordedTask.from_file(path, hidden=1).channels == 2


def test_not_a_file_and_not_an_npz(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="no such recording file"):
        RecordedTask.from_file(tmp_path / "missing.npz")
    (tmp_path / "text.npz").write_text("hello")
    with pytest.raises(ValueError, match="not a readable .npz recording"):
        RecordedTask.from_file(tmp_path / "text.npz")


def test_cli_refuses_a_bad_recording_in_one_line(tmp_path: Path) -> None:
    path = _save(tmp_path / "one.npz", states=np.zeros((2, 1, 4, 4), dtype=np.uint8))
    proc = subprocess.run(
        [sys.executable, "-m", "logicars", "train", f"data:{path}", "--out", str(tmp_path / "r")],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1 and "at least 2 steps" in proc.stderr


def _fresh_rollout_exact(run_dir: Path, make, side: int, seed: int) -> tuple[int, int]:  # noqa: ANN001
    """Wrong cells of the trained circuit run from the first frame of fresh recordings
    (never seen: another seed) on a `side` x `side` grid, step by step against every
    recorded frame; and the cells compared."""
    from logicars.runs import load_run

    run = load_run(run_dir)
    fresh = make(runs=2, steps=10, size=side, test_scale=1, seed=seed)
    frames = fresh.states  # (runs, steps, side, side, bits)
    bits = frames.shape[-1]
    x = np.zeros(frames.shape[:1] + frames.shape[2:4] + (run.model.spec.channels,), np.uint8)
    x[..., :bits] = frames[:, 0]
    out = run.model.simulate(x, frames.shape[1] - 1, record=True)  # (steps, runs, H, W, C)
    got = np.moveaxis(out[..., :bits], 0, 1)
    return int(np.count_nonzero(got != frames)), int(frames.size)


@pytest.mark.slow
@pytest.mark.parametrize("name", ["wireworld", "brians-brain", "rule110", "highlife"])
def test_a_learnt_circuit_reproduces_unseen_recordings_on_a_4x_grid(
    tmp_path: Path, name: str
) -> None:
    make = automata.EXAMPLES[name]
    path = tmp_path / f"{name}.npz"
    make().save(path)  # 12x12 training runs, held-out ones on 48x48
    result = logicars.train(f"data:{path}", out=tmp_path / "run", quiet=True, threads=1)
    assert result.summary["solved_epoch"] is not None, result.summary.get("hard_eval")
    # Recordings it never saw (another seed), on a grid 4x larger than the training one,
    # reproduced exactly frame after frame for 9 steps.
    wrong, cells = _fresh_rollout_exact(tmp_path / "run", make, 48, seed=12345)
    assert wrong == 0, f"{wrong} of {cells} cells wrong"


def test_an_experiment_file_gives_hidden_channels_and_steps(tmp_path: Path) -> None:
    """`[model] channels` above the recording's bits are hidden channels, `num_steps` the
    steps of a rollout from each run's first frame; the run keeps the recording, so it
    loads and resumes with the file gone."""
    from logicars.runs import load_run

    automata.brians_brain(runs=4, steps=6, size=8).save(tmp_path / "bb.npz")
    (tmp_path / "bb.toml").write_text(
        'task = "data:bb.npz"\n[model]\nchannels = 4\nnum_steps = 3\n'
        "[training]\nepochs = 3\nbatch = 2\n"
    )
    logicars.train(tmp_path / "bb.toml", out=tmp_path / "run", quiet=True, threads=1)
    (tmp_path / "bb.npz").unlink()
    run = load_run(tmp_path / "run")
    assert run.preset is not None
    task = run.preset.task()
    assert isinstance(task, RecordedTask)
    assert (task.channels, task.hidden, task.num_steps, task.batch) == (4, 2, 3, 2)
    again = logicars.train(resume=tmp_path / "run", epochs=5, quiet=True, threads=1)
    assert len(again.metrics) == 5
