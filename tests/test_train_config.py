"""`TrainConfig` declares every training setting once: the command line's options, the
experiment file's keys, the sweep's lists and the checkpoint's record are derived from
its fields, and a list written by hand anywhere fails here."""

from __future__ import annotations

import argparse
import dataclasses
import importlib
from pathlib import Path

import numpy as np
import pytest

import logicars
from logicars import presets
from logicars.cli import train as cli_train
from logicars.errors import InvalidValueError
from logicars.presets import PRESETS, read_experiment
from logicars.runstate import RunState
from logicars.training.config import (
    SETTING_NAMES,
    Recorded,
    Resume,
    TrainConfig,
    cli_flag,
    cli_settings,
    recorded_settings,
    resume_settings,
    setting,
    setting_default,
    settings,
    toml_settings,
)
from logicars.training.constraints import MAX_COUNT, Count

# `logicars train`'s own options: what to train and where, not how.
RUN_OPTIONS = {"help", "preset", "size", "use_async", "out", "resume", "quiet", "tensorboard"}


def train_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser()
    cli_train.add_arguments(parser)
    return parser


def test_every_setting_is_declared_whole() -> None:
    assert SETTING_NAMES == tuple(f.name for f in dataclasses.fields(TrainConfig))
    for name, declared in settings():
        assert declared.help and isinstance(declared.resume, Resume), name
        default = setting_default(name)
        if default not in (None, dataclasses.MISSING):
            assert declared.check.check(name, default) == default, name


def test_the_command_line_is_derived_from_the_config() -> None:
    actions = {a.dest: a for a in train_parser()._actions}
    flagged = {name for name, _ in cli_settings()}
    # Every option is a setting's or one of the run's own; no setting is written twice.
    assert set(actions) == RUN_OPTIONS | flagged
    assert not RUN_OPTIONS & set(SETTING_NAMES)
    for name in flagged:
        action, declared = actions[name], setting(name)
        assert action.option_strings[0] == cli_flag(name)
        assert action.help == declared.help  # the declaration's text, not a copy
        assert action.default is None  # not given: the preset's or the file's value
        if action.type is not None:
            assert action.type.__qualname__.startswith("_option_type"), name


def test_a_command_line_value_is_checked_by_its_declaration() -> None:
    parser = train_parser()
    args = parser.parse_args(["gol", "--lr", "0.02", "--no-repair", "--checkpoint-every", "7"])
    assert (args.lr, args.repair, args.checkpoint_every) == (0.02, False, 7)
    too_many = str(MAX_COUNT + 1)
    for argv in (["--epochs", too_many], ["--epochs", "0"], ["--tau", "-1"]):
        with pytest.raises(SystemExit):
            parser.parse_args(["gol", *argv])


def test_the_experiment_file_schema_is_derived_from_the_config() -> None:
    assert presets.training_keys() == toml_settings("training")
    model = presets.model_keys()
    assert {k: model[k] for k in toml_settings("model")} == toml_settings("model")
    # The model's own keys and the file's structure name no training setting.
    assert not set(presets._MODEL_KEYS) & set(SETTING_NAMES)
    assert not set(presets._TOP_KEYS) & set(SETTING_NAMES)
    every_key = set(presets._TOP_KEYS) | set(model) | set(presets.training_keys())
    placed = {name for name, s in settings() if s.section is not None}
    assert placed <= every_key


def test_a_file_sets_every_setting_of_its_tables(tmp_path: Path) -> None:
    path = tmp_path / "all.toml"
    values = {"early_stop": "7", "stop_on_solve": "false", "checkpoint_every": "3"}
    values |= {"threads": "1", "drift_budget": "5", "restart_every": "9", "lr": "0.02"}
    path.write_text('task = "life:B36/S23"\n[training]\n' + "".join(
        f"{k} = {v}\n" for k, v in values.items()
    ))  # fmt: skip
    config = read_experiment(path).preset.config
    assert (config.early_stop, config.stop_on_solve, config.checkpoint_every) == (7, False, 3)
    assert (config.threads, config.drift_budget, config.restart_every) == (1, 5, 9)
    assert config.lr == 0.02


def test_the_sweeps_lists_are_derived_from_the_config() -> None:
    sweep = importlib.import_module("logicars.sweep")  # `logicars.sweep` is the function
    options = sweep.train_options()
    assert set(SETTING_NAMES) <= set(options)
    assert sweep.NEW_RUN_ONLY == resume_settings(Resume.NEW_RUN)
    # The sweep sets the engine threads itself; every other setting can be swept.
    assert set(sweep.RESERVED) & set(SETTING_NAMES) == {"threads"}
    assert options["lr"].annotation == "float"  # an int lr sweeps as that float


def test_the_checkpoint_record_is_derived_from_the_config() -> None:
    preset = PRESETS["gol"]
    rng = np.random.default_rng(0)
    state = RunState.start(preset, None)
    state.rng = rng
    extra = state.to_extra()
    assert set(extra["preset"]) == {"name", "description", "task"} | set(
        recorded_settings(Recorded.PRESET)
    )
    for name in recorded_settings(Recorded.STATE):
        assert extra[name] == getattr(preset.config, name)
    back = RunState.from_extra(extra, preset.spec, Path("x"))
    for name in recorded_settings(Recorded.PRESET) + recorded_settings(Recorded.STATE):
        assert getattr(back.preset.config, name) == getattr(preset.config, name), name


def test_counts_are_capped_at_what_a_checkpoint_holds(tmp_path: Path) -> None:
    assert Count(1).check("epochs", MAX_COUNT) == MAX_COUNT
    for name in ("epochs", "early_stop", "restart_every", "drift_budget", "checkpoint_every"):
        with pytest.raises(InvalidValueError, match=name):
            logicars.train("gol", out=tmp_path / "r", **{name: MAX_COUNT + 1})
    assert not (tmp_path / "r").exists()  # refused before the run started


def test_preset_reads_and_replaces_its_settings() -> None:
    gol = PRESETS["gol"]
    assert gol.lr == gol.config.lr and gol.restart_every == gol.config.restart_every
    faster = dataclasses.replace(gol, lr=0.1)
    assert faster.config == gol.config.replace(lr=0.1) and faster.spec == gol.spec
    # A training-rule setting goes into the spec, which the model carries.
    tt = dataclasses.replace(gol, relax="truth-table", binarize_states=True)
    assert tt.spec.relax.mode == "truth-table" and tt.spec.binarize_states
    assert tt.config.spec_changes() == {}
    with pytest.raises(AttributeError):
        _ = gol.no_such_setting  # type: ignore[attr-defined]


def test_train_takes_a_config_and_keywords(tmp_path: Path) -> None:
    config = PRESETS["gol"].config.replace(epochs=2, lr=0.02)
    run = logicars.train("gol", config, seed=3, out=tmp_path / "r", quiet=True)
    assert (run.summary["epochs"], run.summary["lr"], run.summary["seed"]) == (2, 0.02, 3)
    with pytest.raises(TypeError, match="unexpected keyword argument 'nope'"):
        logicars.train("gol", nope=1, out=tmp_path / "s")
