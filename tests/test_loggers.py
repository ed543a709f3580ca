"""Experiment tracking (`logicars.loggers`): each back end with its real package, read
back from what it wrote (TensorBoard's event reader, MLflow's client on the local file
store, the W&B offline run file)."""

from __future__ import annotations

import glob
import json
import struct
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import logicars
from logicars.loggers import BACKENDS, Logger, make_logger

EPOCHS = 30


def train_with(logger: Any, out: Path) -> logicars.RunResult:
    result = logicars.train(
        "gol",
        epochs=EPOCHS,
        out=out,
        quiet=True,
        threads=1,
        stop_on_solve=False,
        callbacks=[logger],
    )
    logger.finish(result)
    return result


def test_every_backend_is_a_logger_and_unknown_names_fail_in_one_line() -> None:
    pytest.importorskip("tensorboardX")
    assert isinstance(make_logger("tensorboard"), Logger)
    with pytest.raises(ValueError, match="unknown logger 'neptune'; expected one of"):
        make_logger("neptune")
    with pytest.raises(ValueError, match="every must be an integer"):
        make_logger("tensorboard", every=0)
    assert BACKENDS == ("tensorboard", "mlflow", "wandb")


def test_tensorboard_logs_hparams_rollouts_and_histograms(tmp_path: Path) -> None:
    pytest.importorskip("tensorboardX")
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    result = train_with(make_logger("tensorboard", every=10), tmp_path / "run")
    events = EventAccumulator(str(tmp_path / "run"), size_guidance={"images": 0}).Reload()
    tags = events.Tags()
    hard = [e.value for e in events.Scalars("hard_loss")]
    assert hard == [r.hard_loss for r in result.metrics]
    assert len(events.Images("rollout")) >= 3  # epochs 10, 20, 30 and the end
    assert {"gate_ops/perceive", "gate_ops/update"} <= set(tags["histograms"])
    ops = events.Histograms("gate_ops/update")[-1].histogram_value
    assert ops.num == sum(
        np.asarray(o).size for k, o in result.model.hard_ops().items() if "upd" in k
    )
    # The hyper-parameters with the final losses (TensorBoard's HParams tab).
    hp = EventAccumulator(str(tmp_path / "run" / "hparams")).Reload()
    final = hp.Scalars("hparam/final_hard_loss")
    assert [e.value for e in final] == [result.metrics[-1].hard_loss]
    from tensorboard.plugins.hparams import plugin_data_pb2

    content = hp.PluginTagToContent("hparams")["_hparams_/session_start_info"]
    start = plugin_data_pb2.HParamsPluginData.FromString(content).session_start_info
    assert start.hparams["preset"].string_value == "gol"
    assert start.hparams["epochs"].number_value == EPOCHS


def test_mlflow_logs_params_metrics_and_artefacts_to_a_local_store(tmp_path: Path) -> None:
    mlflow = pytest.importorskip("mlflow")
    store = tmp_path / "mlruns"
    logger = make_logger("mlflow", tracking_uri=store, every=10)
    result = train_with(logger, tmp_path / "run")
    client = mlflow.tracking.MlflowClient(tracking_uri=store.resolve().as_uri())
    run = client.get_run(logger.run_id)
    assert run.info.status == "FINISHED"
    assert run.data.params["preset"] == "gol" and run.data.params["epochs"] == str(EPOCHS)
    history = client.get_metric_history(logger.run_id, "hard_loss")
    assert [m.value for m in sorted(history, key=lambda m: m.step)] == [
        r.hard_loss for r in result.metrics
    ]
    assert run.data.metrics["final_hard_loss"] == result.metrics[-1].hard_loss
    assert run.data.metrics["heldout_samples"] == result.summary["hard_eval"]["samples"]
    names = {a.path for a in client.list_artifacts(logger.run_id)}
    assert {"summary.json", "metrics.csv", "model.safetensors", "rollout", "gate_ops"} <= names
    local = Path(client.download_artifacts(logger.run_id, "summary.json", str(tmp_path)))
    assert json.loads(local.read_text())["preset"] == "gol"


def _wandb_records(path: str) -> list[Any]:
    """The records of a W&B run file (LevelDB-style log blocks of protobuf records)."""
    from wandb.proto import wandb_internal_pb2 as pb

    data = Path(path).read_bytes()
    assert data[:4] == b":W&B"
    pos, block, buf, out = 7, 32768, b"", []
    while pos + 7 <= len(data):
        left = block - pos % block
        if left < 7:
            pos += left
            continue
        _crc, length, kind = struct.unpack("<IHB", data[pos : pos + 7])
        if kind == 0 and length == 0:
            pos += left
            continue
        chunk, pos = data[pos + 7 : pos + 7 + length], pos + 7 + length
        if len(chunk) < length:
            break  # a record still being written
        buf = chunk if kind in (1, 2) else buf + chunk
        if kind in (1, 4):  # a whole record, or its last piece
            record = pb.Record()
            record.ParseFromString(buf)
            out.append(record)
    return out


def test_wandb_logs_offline_without_network(tmp_path: Path, monkeypatch) -> None:  # noqa: ANN001
    pytest.importorskip("wandb")
    monkeypatch.setenv("WANDB_API_KEY", "")  # no account, no network: offline only
    logger = make_logger("wandb", every=10)
    result = train_with(logger, tmp_path / "run")
    files = glob.glob(str(tmp_path / "run" / "wandb" / "offline-run-*" / "run-*.wandb"))
    assert len(files) == 1
    # W&B's service completes the file just after `finish` returns: wait for its end.
    deadline = time.monotonic() + 60
    records = _wandb_records(files[0])
    while not any(r.WhichOneof("record_type") == "exit" for r in records):
        assert time.monotonic() < deadline, "the W&B run file never got its exit record"
        time.sleep(0.2)
        records = _wandb_records(files[0])
    history = [
        {i.key or "/".join(i.nested_key): i.value_json for i in r.history.item}
        for r in records
        if r.WhichOneof("record_type") == "history"
    ]
    assert [float(h["hard_loss"]) for h in history] == [r.hard_loss for r in result.metrics]
    assert any("rollout/_type" in h for h in history)
    assert any("gate_ops/update/values" in h for h in history)
    summary = {
        u.key: u.value_json
        for r in records
        if r.WhichOneof("record_type") == "summary"
        for u in r.summary.update
    }
    assert float(summary["final_hard_loss"]) == result.metrics[-1].hard_loss
    config = [r.run.config for r in records if r.WhichOneof("record_type") == "run"]
    assert any(
        u.key == "preset" and json.loads(u.value_json) == "gol" for c in config for u in c.update
    )
    assert any(r.WhichOneof("record_type") == "artifact" for r in records)


def test_log_is_a_training_setting_from_python_the_cli_and_experiment_files(
    tmp_path: Path,
) -> None:
    pytest.importorskip("tensorboardX")
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    from logicars.cli.main import main

    result = logicars.train(
        "gol", epochs=5, out=tmp_path / "py", quiet=True, threads=1, log="tensorboard"
    )
    events = EventAccumulator(str(tmp_path / "py")).Reload()
    assert [e.value for e in events.Scalars("hard_loss")] == [r.hard_loss for r in result.metrics]
    assert (tmp_path / "py" / "hparams").is_dir()  # finished: the hyper-parameters written
    argv = ["train", "gol", "--epochs", "3", "--log", "tensorboard", "--quiet"]
    assert main([*argv, "--out", str(tmp_path / "cli")]) == 0
    assert EventAccumulator(str(tmp_path / "cli")).Reload().Scalars("soft_loss")
    experiment = tmp_path / "life.toml"
    experiment.write_text(
        'task = "life:B3/S23"\n[training]\nepochs = 3\ndrift_budget = 0\nlog = "tensorboard"\n'
    )
    assert main(["train", str(experiment), "--quiet", "--out", str(tmp_path / "toml")]) == 0
    assert EventAccumulator(str(tmp_path / "toml")).Reload().Scalars("soft_loss")
    with pytest.raises(ValueError, match="log must be one of tensorboard, mlflow, wandb"):
        logicars.train("gol", epochs=3, out=tmp_path / "bad", log="neptune")
