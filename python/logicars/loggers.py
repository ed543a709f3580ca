"""Experiment tracking: a logger protocol on the training callbacks, and three back ends.

A logger is a training callback (`logicars.callbacks`: called with each epoch's metrics
row and an `EpochContext`) with two more methods, `flush()` (before every checkpoint, so
that what a checkpoint holds is logged too) and `finish(result)` (once, after the run,
with what `train` returns), both optional for a plain callback. `RunLogger` implements
the protocol for the back ends; each logs:

- the run's hyper-parameters (the preset's grid, batch, epochs, seed, learning rate, the
  spec's model and relaxation) when the first epoch ends;
- every epoch's `soft_loss`, `hard_loss` and `elapsed_s` at step = epoch;
- every `every` epochs and at the end, the hard circuit's rollout from the task's start
  (frames of the loss channels) and the histogram of its gates' ops;
- at the end, the summary's numbers and the run's files (metrics.csv, summary.json,
  loss.png, rollout.gif, model.safetensors) where the back end keeps files.

Back ends (optional extras; each imported only when used):

- `TensorBoardLogger` (tensorboardX, `pip install 'logicars[tensorboard]'`): scalars,
  hyper-parameters (TensorBoard's HParams tab, with the final losses), rollout frames as
  images, gate-op histograms; event files in the run directory by default;
- `MLflowLogger` (`pip install 'logicars[mlflow]'`): params, metrics, artefacts, in a
  local file store (`mlruns` beside the run directory unless `tracking_uri` says where);
- `WandbLogger` (`pip install 'logicars[wandb]'`): config, metrics, rollout images,
  histograms and the run's files; offline by default (`mode="offline"`: a local
  `wandb/` directory that `wandb sync` uploads later, no network needed).

`make_logger("tensorboard" | "mlflow" | "wandb")` builds one by name (what
`train(log=...)` and `train --log` use).
"""

from __future__ import annotations

import abc
import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import numpy as np

if TYPE_CHECKING:
    from .callbacks import EpochContext

# The back ends by name, and the extra that installs each.
BACKENDS = ("tensorboard", "mlflow", "wandb")
EXTRAS = {"tensorboard": "tensorboard", "mlflow": "mlflow", "wandb": "wandb"}
# Epochs between rollout images and gate histograms (and at the run's end).
DEFAULT_EVERY = 500
# Frames of a logged rollout at most (steps sampled evenly).
MAX_FRAMES = 16
# The run's files a back end that keeps files gets at the end.
RUN_FILES = ("metrics.csv", "summary.json", "loss.png", "rollout.gif", "model.safetensors")


@runtime_checkable
class Logger(Protocol):
    """What `train` calls on a logger: `logger(row, context)` after every epoch (the
    callback protocol: return None to go on), `flush()` before every checkpoint and
    `finish(result)` once after the run (`result`: what `train` returns, None when the
    run ended with an exception)."""

    def __call__(self, row: Any, context: EpochContext) -> bool | None: ...

    def flush(self) -> None: ...

    def finish(self, result: Any) -> None: ...


def _require(module: str, backend: str) -> Any:
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError:
        raise ImportError(
            f"--log {backend} needs the {module} package: pip install 'logicars[{EXTRAS[backend]}]'"
        ) from None


def hyperparameters(context: EpochContext) -> dict[str, Any]:
    """The run's hyper-parameters as flat scalars (what the back ends log as params)."""
    p, s = context.preset, context.preset.spec
    out: dict[str, Any] = {
        "preset": p.name,
        "task": p.task_kind or type(p.task()).__name__,
        "height": p.height,
        "width": p.width,
        "batch": p.batch,
        "epochs": context.target_epochs,
        "seed": p.seed,
        "lr": p.lr,
        "weight_decay": p.weight_decay,
        "beta1": p.beta1,
        "channels": s.channels,
        "kernels": s.perceive.n_kernels,
        "perceive": ",".join(map(str, s.perceive.layers[1:])),
        "update": ",".join(map(str, s.update.layers[1:-1])),
        "num_steps": s.num_steps,
        "periodic": s.periodic,
        "fire_rate": s.fire_rate if s.fire_rate is not None else 0.0,
        "binarize_states": s.binarize_states,
        "relax": s.relax.mode,
        "gates": s.gates(),
    }
    for key in (
        "restart_every",
        "drift_budget",
        "final_repair_budget",
        "require_generalise",
        "stall_epochs",
        "stall_loss",
    ):
        value = getattr(p, key, None)
        if value is not None:
            out[key] = value
    return out


def rollout_frames(context: EpochContext, max_frames: int = MAX_FRAMES) -> np.ndarray:
    """The hard circuit's rollout from the task's start on its own grid, as frames of the
    loss channels `(T, H, W, L)` uint8 (at most `max_frames`, sampled evenly)."""
    from .circuit.simulate import start_grid

    p, model = context.preset, context.model
    spec = model.spec
    x = start_grid(p, spec.channels, max(p.height, p.width), 1, 0)
    steps = spec.num_steps
    frames = model.simulate(x, steps, record=True, fire_rate=spec.fire_rate, seed=0)
    pick = np.unique(np.linspace(0, steps, min(max_frames, steps + 1)).round().astype(int))
    return np.ascontiguousarray(frames[pick, 0][..., list(spec.loss_channels)])


def frame_images(frames: np.ndarray) -> np.ndarray:
    """Frames `(T, H, W, L)` of 0/1 as RGB images `(T, H, W, 3)` uint8: one loss channel
    in grey, three as RGB, two as red and green."""
    f = np.asarray(frames, dtype=np.uint8) * 255
    if f.shape[-1] == 1:
        return np.repeat(f, 3, axis=-1)
    if f.shape[-1] == 2:
        return np.concatenate([f, np.zeros_like(f[..., :1])], axis=-1)
    return f[..., :3]


def gate_ops(model: Any) -> dict[str, np.ndarray]:
    """Every gate's hard op (0..15), perception and update apart (histogram data)."""
    ops = model.hard_ops()
    return {
        part: np.concatenate([o.ravel() for k, o in ops.items() if k.startswith(part)])
        for part in ("perceive", "update")
    }


def final_numbers(result: Any) -> dict[str, float]:
    """The summary's numbers a back end logs at the end (losses, epochs, held-out check)."""
    s = result.summary or {}
    out: dict[str, float] = {}
    for key in (
        "final_soft_loss",
        "final_hard_loss",
        "epochs",
        "solved_epoch",
        "first_epoch_hard_zero",
        "active_gates",
        "wall_seconds",
    ):
        value = s.get(key)
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            out[key] = float(value)
    held = s.get("hard_eval")  # the held-out report (`logicars.evaluate`)
    if isinstance(held, dict):
        for key in ("solved", "samples", "wrong_cells"):
            if isinstance(held.get(key), int) and not isinstance(held.get(key), bool):
                out[f"heldout_{key}"] = float(held[key])
    return out


class RunLogger(abc.ABC):
    """The logger protocol's shared part: starts on the first epoch it sees, logs each
    epoch, the rollout and gate histograms every `every` epochs and at the end. A back
    end implements `_start`, `_scalars`, `_rollout`, `_histograms` and `_end`, and may
    implement `_flush` and `_close`."""

    name = "logger"

    def __init__(self, every: int = DEFAULT_EVERY) -> None:
        if isinstance(every, bool) or not isinstance(every, int) or every < 1:
            raise ValueError(f"every must be an integer >= 1, got {every!r}")
        self.every = every
        self._context: EpochContext | None = None
        self._last_epoch = 0
        self._finished = False

    def __call__(self, row: Any, context: EpochContext) -> None:
        if self._context is None:
            self._start(context, hyperparameters(context))
        self._context = context
        self._last_epoch = int(row.epoch)
        self._scalars(
            {
                "soft_loss": float(row.soft_loss),
                "hard_loss": float(row.hard_loss),
                "elapsed_s": round(float(row.elapsed_s), 4),
            },
            self._last_epoch,
        )
        if self._last_epoch % self.every == 0:
            self._snapshot(context, self._last_epoch)

    def _snapshot(self, context: EpochContext, epoch: int) -> None:
        self._rollout(frame_images(rollout_frames(context)), epoch)
        self._histograms(gate_ops(context.model), epoch)

    def flush(self) -> None:
        if self._context is not None:
            self._flush()

    def finish(self, result: Any) -> None:
        """Logs the run's end (the final circuit's rollout, its histograms, the summary's
        numbers and the run's files) and closes the back end; called once."""
        if self._finished:
            return
        self._finished = True
        try:
            if result is not None and self._context is not None:
                import dataclasses

                context = dataclasses.replace(self._context, model=result.model)
                epoch = max(self._last_epoch, int(result.summary.get("epochs", 0) or 0))
                self._snapshot(context, epoch)
                files = [Path(result.run_dir) / f for f in RUN_FILES]
                self._end(final_numbers(result), [f for f in files if f.is_file()], epoch)
        finally:
            self._close()

    # -- what a back end implements --

    @abc.abstractmethod
    def _start(self, context: EpochContext, params: dict[str, Any]) -> None: ...

    @abc.abstractmethod
    def _scalars(self, values: dict[str, float], epoch: int) -> None: ...

    @abc.abstractmethod
    def _rollout(self, images: np.ndarray, epoch: int) -> None: ...

    @abc.abstractmethod
    def _histograms(self, ops: dict[str, np.ndarray], epoch: int) -> None: ...

    @abc.abstractmethod
    def _end(self, numbers: dict[str, float], files: Sequence[Path], epoch: int) -> None: ...

    # Optional: a back end without buffers or connections has nothing to do.
    def _flush(self) -> None:  # noqa: B027
        pass

    def _close(self) -> None:  # noqa: B027
        pass


class TensorBoardLogger(RunLogger):
    """TensorBoard event files (tensorboardX): scalars per epoch, hyper-parameters with
    the final losses (HParams), rollout frames as images, gate-op histograms. `logdir`:
    the run directory by default."""

    name = "tensorboard"

    def __init__(self, logdir: str | os.PathLike[str] | None = None, every: int = DEFAULT_EVERY):
        super().__init__(every)
        self._writer_class = _require("tensorboardX", "tensorboard").SummaryWriter
        self.logdir = None if logdir is None else Path(logdir)
        self._writer: Any = None
        self._params: dict[str, Any] = {}

    def _start(self, context: EpochContext, params: dict[str, Any]) -> None:
        logdir = self.logdir or Path(context.run_dir)
        logdir.mkdir(parents=True, exist_ok=True)
        self.logdir = logdir
        self._writer = self._writer_class(
            logdir=str(logdir),
            purge_step=context.start_epoch + 1,
            filename_suffix=f".epoch{context.start_epoch:012d}",
            flush_secs=5,
            max_queue=1000,
        )
        self._params = params
        self._writer.add_text("hyperparameters", "\n".join(f"{k}: {v}" for k, v in params.items()))

    def _scalars(self, values: dict[str, float], epoch: int) -> None:
        for key, value in values.items():
            self._writer.add_scalar(key, value, epoch)

    def _rollout(self, images: np.ndarray, epoch: int) -> None:
        self._writer.add_images("rollout", images, epoch, dataformats="NHWC")

    def _histograms(self, ops: dict[str, np.ndarray], epoch: int) -> None:
        for part, values in ops.items():
            self._writer.add_histogram(f"gate_ops/{part}", values, epoch, bins=np.arange(17) - 0.5)

    def _end(self, numbers: dict[str, float], files: Sequence[Path], epoch: int) -> None:
        hparams = {
            k: v if isinstance(v, (int, float, str, bool)) else str(v)
            for k, v in self._params.items()
        }
        metrics = {f"hparam/{k}": v for k, v in numbers.items()}
        self._writer.add_hparams(hparams, metrics, name="hparams", global_step=epoch)

    def _flush(self) -> None:
        self._writer.flush()

    def _close(self) -> None:
        if self._writer is not None:
            self._writer.close()


class MLflowLogger(RunLogger):
    """MLflow: params, per-epoch metrics, rollout images and histograms as artefacts, the
    final numbers and the run's files. `tracking_uri`: a local file store `mlruns` beside
    the run directory by default; `experiment`: the preset's name by default."""

    name = "mlflow"

    def __init__(
        self,
        tracking_uri: str | os.PathLike[str] | None = None,
        experiment: str | None = None,
        every: int = DEFAULT_EVERY,
    ) -> None:
        super().__init__(every)
        self._mlflow = _require("mlflow", "mlflow")
        self.tracking_uri = tracking_uri
        self.experiment = experiment
        self.run_id: str | None = None
        self._client: Any = None

    def _start(self, context: EpochContext, params: dict[str, Any]) -> None:
        uri = self.tracking_uri
        if uri is None:
            uri = Path(context.run_dir).resolve().parent / "mlruns"
        if isinstance(uri, (os.PathLike, Path)) or "://" not in str(uri):
            uri = Path(uri).resolve().as_uri()  # a local file store
        if str(uri).startswith("file:"):
            # MLflow 3 asks file stores to opt in (it prefers a database, which would
            # need SQLAlchemy); a local file store is what this logger is for.
            os.environ.setdefault("MLFLOW_ALLOW_FILE_STORE", "true")
        self.tracking_uri = str(uri)
        client = self._mlflow.tracking.MlflowClient(tracking_uri=self.tracking_uri)
        name = self.experiment or context.preset.name
        found = client.get_experiment_by_name(name)
        experiment_id = found.experiment_id if found else client.create_experiment(name)
        run = client.create_run(experiment_id, run_name=Path(context.run_dir).name)
        self.run_id = run.info.run_id
        self._client = client
        for key, value in params.items():
            client.log_param(self.run_id, key, value)

    def _scalars(self, values: dict[str, float], epoch: int) -> None:
        for key, value in values.items():
            self._client.log_metric(self.run_id, key, value, step=epoch)

    def _rollout(self, images: np.ndarray, epoch: int) -> None:
        strip = np.concatenate(list(images), axis=1)  # the frames side by side
        self._client.log_image(self.run_id, strip, f"rollout/epoch{epoch:07d}.png")

    def _histograms(self, ops: dict[str, np.ndarray], epoch: int) -> None:
        counts = {k: np.bincount(v, minlength=16).tolist() for k, v in ops.items()}
        self._client.log_dict(self.run_id, counts, f"gate_ops/epoch{epoch:07d}.json")

    def _end(self, numbers: dict[str, float], files: Sequence[Path], epoch: int) -> None:
        for key, value in numbers.items():
            self._client.log_metric(self.run_id, key, value, step=epoch)
        for f in files:
            self._client.log_artifact(self.run_id, str(f))

    def _close(self) -> None:
        if self._client is not None and self.run_id is not None:
            self._client.set_terminated(self.run_id)


class WandbLogger(RunLogger):
    """Weights & Biases: config, per-epoch metrics, rollout images, gate-op histograms, the
    final numbers as the summary and the run's files. `mode="offline"` (default) writes
    a local run under `directory` (the run directory by default) for `wandb sync`;
    `project`: "logicars" by default."""

    name = "wandb"

    def __init__(
        self,
        project: str = "logicars",
        mode: str = "offline",
        directory: str | os.PathLike[str] | None = None,
        every: int = DEFAULT_EVERY,
    ) -> None:
        super().__init__(every)
        if mode not in ("offline", "online", "disabled"):
            raise ValueError(f"mode must be offline, online or disabled, got {mode!r}")
        self._wandb = _require("wandb", "wandb")
        self.project, self.mode = project, mode
        self.directory = None if directory is None else Path(directory)
        self.run: Any = None

    def _start(self, context: EpochContext, params: dict[str, Any]) -> None:
        directory = self.directory or Path(context.run_dir)
        directory.mkdir(parents=True, exist_ok=True)
        self.directory = directory
        self.run = self._wandb.init(
            project=self.project,
            mode=self.mode,
            dir=str(directory),
            name=Path(context.run_dir).name,
            config=params,
            reinit="create_new",
            settings=self._wandb.Settings(silent=True, console="off"),
        )

    def _scalars(self, values: dict[str, float], epoch: int) -> None:
        self.run.log(values, step=epoch)

    def _rollout(self, images: np.ndarray, epoch: int) -> None:
        strip = np.concatenate(list(images), axis=1)
        self.run.log({"rollout": self._wandb.Image(strip)}, step=epoch)

    def _histograms(self, ops: dict[str, np.ndarray], epoch: int) -> None:
        self.run.log(
            {
                f"gate_ops/{k}": self._wandb.Histogram(np_histogram=np.histogram(v, np.arange(17)))
                for k, v in ops.items()
            },
            step=epoch,
        )

    def _end(self, numbers: dict[str, float], files: Sequence[Path], epoch: int) -> None:
        for key, value in numbers.items():
            self.run.summary[key] = value
        artifact = self._wandb.Artifact(f"run-{self.run.id}", type="logicars-run")
        for f in files:
            artifact.add_file(str(f))
        self.run.log_artifact(artifact)

    def _close(self) -> None:
        if self.run is not None:
            self.run.finish()


def make_logger(name: str, **options: Any) -> RunLogger:
    """A logger by back-end name (`BACKENDS`), with its keyword options."""
    key = str(name).strip().lower()
    classes = {"tensorboard": TensorBoardLogger, "mlflow": MLflowLogger, "wandb": WandbLogger}
    if key not in classes:
        raise ValueError(f"log: unknown logger {name!r}; expected one of {', '.join(BACKENDS)}")
    return classes[key](**options)
