"""The training loop: one engine call per epoch, checkpoints, interrupt/resume, run outputs.

`train("checkerboard")` trains a preset the way the reference notebook does and leaves a
run directory behind:

- `metrics.csv`: `epoch, soft_loss, hard_loss, elapsed_s, attempt, lr, validation,
  repair`, one row per epoch, appended as training goes (epochs count from 1; the losses
  of epoch e are measured on that epoch's batch with the parameters after e - 1 updates,
  as the engine reports them; `attempt`: the wiring it trained; `lr`: its step's
  learning rate; `validation`: the check after it, empty, `failed`, `unconfirmed` or
  `passed`; `repair`: wrong validation cells after a repair it ran, else empty);
- `model.safetensors`: the checkpoint (see `logicars.checkpoint`), written every
  `checkpoint_every` epochs and at the end; `logicars.Model.load` reads it;
- `summary.json`: preset, seed, epochs, final losses, first epoch with hard loss 0,
  why each attempt ended (`attempt_ends`), repairs, the held-out checks, wall time,
  active gates, threads, build info;
- `loss.png`: soft and hard loss on a symlog scale (0 drawn), restarts, repairs and
  warmup marked;
- `rollout.gif`: the trained circuit's hard rollout of a fresh sample, every step
  with its number;
- with `tensorboard=True`, `events.out.tfevents.*`: the metrics rows for TensorBoard.

Determinism: the seed fixes the wiring (`Model(spec, seed)`), the data
(`numpy.random.default_rng(seed)`, one `sample` per epoch) and the async masks (the
engine's stream seeded with `seed`). The checkpoint stores all three positions plus the
AdamW state, so training N epochs and resuming to N + M gives bit-identical parameters
to training N + M straight.
"""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any, BinaryIO, Union

from . import _core
from .arguments import check_int
from .callbacks import Callback, check_callbacks
from .files import write_atomic
from .loggers import make_logger
from .model import Model, load_checkpoint
from .presets import Preset, preset_for_task, read_experiment, resolve_preset
from .runstate import (  # noqa: F401 (EpochMetrics, TRAIN_STATE_KIND: importable from here too)
    CHECKPOINT_NAME,
    TRAIN_STATE_KIND,
    EpochMetrics,
    RunState,
    new_run_only_message,
)
from .spec import ModelSpec
from .tasks import Task
from .tensorboard_log import TensorBoardLog
from .training.config import (  # noqa: F401 (the constants: importable from here too)
    DEFAULT_CHECKPOINT_EVERY,
    FINAL_REPAIR_BUDGET,
    SETTING_NAMES,
    Resume,
    TrainConfig,
    given_settings,
    resume_settings,
    setting,
    setting_default,
)
from .training.interrupts import StopOnInterrupt
from .training.loop import BatchSource, Run, TaskBatches, train_epochs
from .training.policies import (  # noqa: F401 (the constants: importable from here too)
    BEST_ATTEMPT_NAME,
    CONFIRM_SAMPLES,
    CONFIRM_SEED,
    LOWEST_NAME,
    MAX_STALLS,
    REPAIR_BUDGET,
    REPAIR_EVERY,
    VALIDATION_SAMPLES,
    VALIDATION_SEED,
    Callbacks,
    default_policies,
    drift_due,
    restart_seed,
)
from .training.pool import PoolBatches
from .training.rundir import (
    MetricsCsv,
    check_tensorboard,
    checkpoint_path,
    default_run_dir,
    prepare_run_dir,
    start_metrics_csv,
)
from .training.summary import run_summary
from .viz.plots import (  # noqa: F401 (write_frames_gif: importable from here too)
    plot_losses,
    write_frames_gif,
    write_rollout_gif,
)

PathLike = Union[str, "os.PathLike[str]"]


@dataclasses.dataclass
class RunResult:
    """What `train` returns: the run directory, the trained model and the record."""

    run_dir: Path
    model: Model
    summary: dict[str, Any]
    metrics: list[EpochMetrics]
    interrupted: bool = False
    early_stopped: bool = False
    preset: Preset | None = None  # the preset as the run used it
    # The signal that stopped the run ("SIGINT", "SIGTERM", "SIGHUP"), if one did.
    stopped_by: str | None = None

    @property
    def checkpoint(self) -> Path:
        return self.run_dir / CHECKPOINT_NAME

    @property
    def final_hard_loss(self) -> float | None:
        return self.metrics[-1].hard_loss if self.metrics else None

    @property
    def final_soft_loss(self) -> float | None:
        return self.metrics[-1].soft_loss if self.metrics else None

    def _repr_html_(self) -> str:
        """Jupyter's display: the run's table, loss curve and rollout (`logicars.viz.render`)."""
        from .viz.render import run_html

        return run_html(self.model, self.run_dir, self.summary, self.metrics, self.preset)

    def __repr__(self) -> str:  # short: the metrics hold a row per epoch
        return (
            f"RunResult(run_dir={os.fspath(self.run_dir)!r}, epochs={len(self.metrics)}, "
            f"final_soft_loss={self.final_soft_loss}, final_hard_loss={self.final_hard_loss}, "
            f"interrupted={self.interrupted}, early_stopped={self.early_stopped})"
        )


# ---- arguments ----------------------------------------------------------------------


def _is_experiment_file(preset: object) -> bool:
    """A path (or a string ending in `.toml`) names an experiment file."""
    return isinstance(preset, os.PathLike) or (
        isinstance(preset, str) and preset.lower().endswith(".toml")
    )


def _resolve_preset(
    preset: str | Preset | Task,
    spec: ModelSpec | None,
    epochs: int | None,
    size: int | None,
    asynchronous: bool,
) -> Preset:
    """The run's preset: a preset's name, a task kind (`life:B36/S23`, `grow:IMG.png`,
    `pattern:TILE.png`), a `Preset`, or a `Task` with the `spec` to train it with."""
    if isinstance(preset, Task):
        if spec is None or epochs is None:
            raise ValueError("training a Task needs spec=ModelSpec(...) and epochs=N")
        if size is not None or asynchronous:
            raise ValueError("size and asynchronous are for task kinds; a Task has its own grid")
        return preset_for_task(preset, spec, epochs)
    if spec is not None:
        raise ValueError("spec= goes with a Task; a preset or task kind has its own spec")
    if isinstance(preset, Preset):
        if size is not None or asynchronous:
            raise ValueError("size and asynchronous are for task kinds, not a Preset")
        return preset
    if isinstance(preset, str):
        return resolve_preset(preset, size=size, asynchronous=asynchronous)
    raise TypeError(
        f"preset must be a preset name, a task kind, a Preset or a Task, got "
        f"{type(preset).__name__}"
    )


def _write_atomic(path: Path, text: str) -> None:
    write_atomic(path, text.encode())


def _initial_model(path: PathLike, preset: Preset, seed: int) -> Model:
    """The run's starting model from an npz in the fixture format (`Model.from_npz`), e.g.
    the wiring and logits the reference notebook draws: its config must be the preset's
    (the training rule excepted, which the preset, `relax` and `binarize_states` set);
    `seed` seeds the async mask stream as `Model(spec, seed)` would."""
    loaded = Model.from_npz(path)
    have_n, want_n = loaded.spec.relax.logits_per_gate, preset.spec.relax.logits_per_gate
    if have_n != want_n:
        raise ValueError(
            f"{path} holds {have_n} parameters per gate ({loaded.spec.relax.mode!r}), the "
            f"run's relaxation {preset.spec.relax.mode!r} takes {want_n}: choose a relax "
            "mode that matches the file"
        )
    s = preset.spec
    rule = {
        "relax": s.relax,
        "binarize_states": s.binarize_states,
        "binarize_every": s.binarize_every,
        "chunk_cells": s.chunk_cells,
        "init_logit": s.init_logit,  # the file holds the logits themselves
    }
    have = loaded.spec.replace(**rule).to_dict()
    want = preset.spec.to_dict()
    if have != want:
        diff = ", ".join(
            f"{k} {have.get(k)!r} (preset: {want.get(k)!r})"
            for k in sorted(want)
            if have.get(k) != want.get(k)
        )
        raise ValueError(f"{path} is not a model of preset {preset.name!r}: {diff}")
    model = loaded.respecified(preset.spec)
    model.mask_state = (seed, 0)
    return model


def _same_preset(a: Preset, state: RunState) -> bool:
    """`a` is the run's preset, up to the epoch budget and learning rate, which a resume
    may change (in a pool phase with a rounding rule of its own, the run's spec has it)."""
    b, spec = state.preset, a.spec
    every = b.config.pool_binarize_every
    if state.pool_end is not None and every is not None and spec.binarize_states:
        spec = spec.with_rounding(True, every)
    da, db = spec.to_dict(), b.spec.to_dict()
    return (a.name, a.batch, a.height, a.width, da) == (b.name, b.batch, b.height, b.width, db)


# ---- train ----------------------------------------------------------------------------


def train(
    preset: str | os.PathLike[str] | Preset | Task | None = None,
    config: TrainConfig | None = None,
    *,
    out: PathLike | None = None,
    resume: PathLike | None = None,
    quiet: bool = False,
    size: int | None = None,
    asynchronous: bool = False,
    task: Task | None = None,
    spec: ModelSpec | None = None,
    callbacks: Sequence[Callback] | None = None,
    tensorboard: bool | PathLike | None = None,
    **settings: Any,
) -> RunResult:
    """Trains `preset` and writes a run directory.

    `preset` is a name from `PRESETS`, a task kind (`life:B36/S23`, `grow:IMAGE.png`,
    `pattern:TILE.png`, see `logicars.presets.preset_for_kind`; `size` and
    `asynchronous` choose a grow or pattern task's grid and update mode), a `Preset`, or
    a `logicars.Task` (also as `task=`) trained with `spec` (a `ModelSpec` whose
    channels are the task's) for `epochs`, or an experiment file (a path, or a string
    ending in `.toml`; `logicars.presets.read_experiment`; `size` and `asynchronous`
    belong in the file). It may be None when resuming: the run's own preset is used (a
    run of a custom `Task` subclass needs the task again).

    The run's settings are the preset's `TrainConfig` (`preset.config`), or `config`,
    with every keyword of `settings` replacing one field: `train("gol", epochs=500,
    lr=0.03)`. `TrainConfig` documents each setting, its check and what a resume does
    with it; a setting given as None is not given (except `checkpoint_every=None`:
    checkpoints only at the end). In short:

    - `epochs`, `seed`, `lr`, `weight_decay`, `beta1` (AdamW's momentum: 0 for none),
      `lr_decay_from`/`lr_end` (a late cosine decay, given together; `Preset.lr_at`),
      `threads` (results do not depend on it).
      `seed` fixes wiring, data and async masks.
    - The training rule: `relax` (a mode of `logicars.spec.RELAX_MODES` or a
      `Relaxation`), `tau`, `noise`, `warmup`, `hard_fraction`, `binarize_states`,
      `binarize_every`; they change the run's spec, and a resumed run keeps them.
    - `init`: start from the wiring and logits in this npz (fixture format,
      `Model.from_npz`) instead of a fresh `Model(spec, seed)`; its config must be the
      preset's. Default: the preset's own start (`Preset.init`) unless `seed` is given.
    - Stopping: `early_stop` (hard loss 0 for this many epochs), `stop_on_solve` (the
      hard circuit passes the validation check: `logicars.evaluate` on its own draw of
      inputs, run after every epoch whose batch it got exactly right; default True).
    - `repair`: repair a circuit that gets a batch right but fails the check
      (`logicars.repair`, at most every `REPAIR_EVERY` epochs, a wait that doubles
      after each failed one of the attempt, and once at the end);
      `drift_budget`: then a drift search of that many candidates on the final circuit
      of an unsolved run, from its lowest-loss parameters when those score better
      (`summary["kept_lowest"]`); an interrupted search goes on when resumed.
    - `restart_every`, and `stall_epochs` with `stall_loss`: replace an attempt that is
      unsolved after so many epochs (or stalled above the loss) by a fresh wiring
      (`restart_seed(seed, attempt)`; a stalled one adds its epochs, at most
      `MAX_STALLS` times). A run whose attempts all fail keeps the best one
      (`summary["kept_attempt"]`).
    - `checkpoint_every`: epochs between checkpoints (None: only at the end).

    Resuming (`resume`: a run directory or its checkpoint) continues a run with its
    recorded settings; only keywords change them (`epochs` is then the total to reach),
    and settings that start new runs (the training rule, `init`) or fix the run (`seed`)
    are refused if they differ. `threads`, `checkpoint_every` and `stop_on_solve` are
    each call's own (the given preset's or config's, else the default).

    - `out`: run directory (default `runs/<preset>-<timestamp>`; on resume, the resumed
      directory).
    - `callbacks`: callables `callback(row, context)` called after every epoch, in order,
      with the epoch's `EpochMetrics` row and a `logicars.EpochContext`; returning True
      (or raising `logicars.StopTraining`) ends the run after this epoch as an early
      stop (`summary["stopped_by_callback"]`). Any other exception propagates after this
      epoch's checkpoint is written. Not stored: a resumed run is given them again.
    - `tensorboard`: True writes the metrics rows as TensorBoard event files into the
      run directory, a directory writes them there (needs tensorboardX).
    - `log` (a setting): "tensorboard", "mlflow" or "wandb" tracks the run with that
      logger of `logicars.loggers` (hyper-parameters, losses, rollouts, gate histograms,
      the run's files); for a logger with options, pass it in `callbacks` and call its
      `finish(result)`.

    metrics.csv is appended and flushed after every epoch; a resumed run first rebuilds
    it from the checkpoint's rows, so the file of a resumed run is the file of an
    uninterrupted one (the `elapsed_s` column aside).

    Ctrl-C, SIGTERM and SIGHUP stop after the current epoch, save and return normally
    (`RunResult.interrupted`, `RunResult.stopped_by`). Another process writing the same
    run directory is refused with `logicars.runlock.RunLockedError`. Bad arguments raise
    `ValueError`/`TypeError` before any training starts.
    """
    from .runtime import check_environment

    check_environment()  # issue 43: LOGICARS_*/RAYON_NUM_THREADS the engine would ignore
    unknown = sorted(set(settings) - set(SETTING_NAMES))
    if unknown:
        raise TypeError(f"train() got an unexpected keyword argument {unknown[0]!r}")
    if config is not None and not isinstance(config, TrainConfig):
        raise TypeError(f"config must be a TrainConfig, got {type(config).__name__}")
    given = _checked_settings(settings)
    if _is_experiment_file(preset):
        assert preset is not None and not isinstance(preset, (Preset, Task))
        if size is not None or asynchronous:
            raise ValueError(
                "size (--size) and asynchronous (--async) go into the experiment file "
                "(size = N, async = true)"
            )
        preset = read_experiment(preset).preset
    assert not isinstance(preset, os.PathLike)  # a path names an experiment file, read above
    if task is not None:
        if preset is not None:
            raise ValueError("pass a preset or task=, not both")
        preset = task
    if size is not None:
        size = check_int("size", size, 1)
    hooks = check_callbacks(callbacks)
    tensorboard_dir = check_tensorboard(tensorboard)
    if preset is None and resume is None:
        raise ValueError("a preset is required unless resuming a run")
    refused = sorted(set(given) & resume_settings(Resume.NEW_RUN)) if resume is not None else []
    if refused:
        raise ValueError(new_run_only_message(refused[0]))
    epochs = given.get("epochs", None if config is None else config.epochs)
    chosen = (
        None if preset is None else _resolve_preset(preset, spec, epochs, size, bool(asynchronous))
    )
    if chosen is not None and config is not None:
        chosen = dataclasses.replace(chosen, config=config)
    # The call's own settings where not given: the preset's (or config's), else defaults.
    per_call = {
        name: given.get(name, setting_default(name) if chosen is None else getattr(chosen, name))
        for name in resume_settings(Resume.PER_CALL)
    }

    model: Model | None  # None: a new run without an initial model builds it below
    if resume is not None:
        ckpt = checkpoint_path(resume)
        model, extra = load_checkpoint(ckpt)
        state = RunState.from_extra(extra, model.spec, ckpt)
        if chosen is not None and (
            state.preset.name != chosen.name
            or (isinstance(preset, (Preset, Task)) and not _same_preset(chosen, state))
        ):
            raise ValueError(
                f"{ckpt} is a run of preset {state.preset.name!r}, not {chosen.name!r}"
            )
        if chosen is not None and chosen.custom_task is not None:
            state.preset = dataclasses.replace(state.preset, custom_task=chosen.custom_task)
        state.resume_with(given, per_call)
        _check_resumable(state, ckpt)
        run_dir = Path(out) if out is not None else ckpt.parent
        if run_dir.resolve() != ckpt.parent.resolve() and (run_dir / CHECKPOINT_NAME).exists():
            raise ValueError(
                f"{run_dir} already holds another run ({CHECKPOINT_NAME}); choose another "
                "output directory for the resumed run"
            )
    else:
        assert chosen is not None
        # An explicit start is a path as given; the preset's own is resolved by
        # `Preset.init_path` (a name in logicars/data), and used only without a seed.
        init: str | Path | None = given.pop("init", None)
        p = dataclasses.replace(chosen, **given) if given else chosen
        if init is None and "seed" not in given and p.init is not None:
            init = p.init_path()
        state = RunState.start(p, None if init is None else str(init))
        model = None if init is None else _initial_model(init, p, p.seed)
        run_dir = Path(out) if out is not None else default_run_dir(p.name)
        if (run_dir / CHECKPOINT_NAME).exists():
            raise ValueError(
                f"{run_dir} already holds a run ({CHECKPOINT_NAME}); resume it with "
                "resume=DIR (--resume DIR) or choose another output directory"
            )

    # The logger's package is imported here: a missing extra fails before any training.
    logger = None if per_call["log"] is None else make_logger(per_call["log"])
    dataset = state.preset.task()  # a preset without a task fails here, before the dir
    if model is None:
        model = Model(state.preset.spec, state.seed)  # so does a model over the memory cap
    # and so do grids whose buffers would pass it
    model.check_training_memory(state.preset.batch, state.preset.height, state.preset.width)
    lock = prepare_run_dir(run_dir)

    threads = per_call["threads"]
    previous_threads = _core.num_threads()
    if threads is not None:
        _core.set_num_threads(threads)
    try:
        logdir = run_dir if tensorboard_dir is True else tensorboard_dir
        every = per_call["checkpoint_every"]
        if logger is None:
            return _run(model, state, dataset, run_dir, quiet, every, hooks, logdir)
        result = None
        try:
            # First: it logs the epoch whoever stops the run.
            result = _run(model, state, dataset, run_dir, quiet, every, [logger, *hooks], logdir)
        finally:
            logger.finish(result)  # None: the run ended with an exception
        return result
    finally:
        lock.release()
        if threads is not None:
            _core.set_num_threads(previous_threads)


def _checked_settings(settings: dict[str, Any]) -> dict[str, Any]:
    """The settings given to `train` (`given_settings`), each checked by its declaration;
    `init` as a path's string."""
    given = given_settings(settings)
    if "init" in given:
        given["init"] = os.fspath(given["init"])
    return {
        name: value if value is None else setting(name).check.check(name, value)
        for name, value in given.items()
    }


def _check_resumable(state: RunState, ckpt: Path) -> None:
    """ValueError when the resumed run has nothing left to do with its settings."""
    if state.epoch >= state.target_epochs and not drift_due(state):
        raise ValueError(
            f"the run in {ckpt.parent} has already trained {state.epoch} of "
            f"{state.target_epochs} epochs; pass epochs (--epochs) > {state.epoch} "
            "to train further"
        )
    if state.stop_on_solve and state.solved_epoch is not None:
        raise ValueError(
            f"the run in {ckpt.parent} already solved its task at epoch "
            f"{state.solved_epoch}; pass stop_on_solve=False (--no-stop-on-solve) to "
            "train further"
        )
    if state.early_stop is not None and state.zero_streak >= state.early_stop:
        raise ValueError(
            f"the run in {ckpt.parent} already stopped early (hard loss 0 for "
            f"{state.zero_streak} epochs); pass a larger early_stop (--early-stop) "
            "to train further"
        )


def _run(
    model: Model,
    state: RunState,
    dataset: Any,
    run_dir: Path,
    quiet: bool,
    checkpoint_every: int | None,
    callbacks: list[Callback],
    tensorboard_dir: Path | bool | None,
) -> RunResult:
    """The run from `state` on: metrics.csv as of its checkpoint, the TensorBoard log if
    asked for, then the epochs (`_train_epochs`)."""
    metrics_file = start_metrics_csv(run_dir / "metrics.csv", state.metrics)
    board = None
    if isinstance(tensorboard_dir, Path):
        try:
            board = TensorBoardLog(tensorboard_dir, state.epoch)
        except BaseException:
            metrics_file.close()
            raise
    try:
        return _train_epochs(
            model, state, dataset, run_dir, quiet, checkpoint_every, callbacks, metrics_file, board
        )
    finally:
        if board is not None:
            board.close()


def _train_epochs(
    model: Model,
    state: RunState,
    dataset: Any,
    run_dir: Path,
    quiet: bool,
    checkpoint_every: int | None,
    callbacks: list[Callback],
    metrics_file: BinaryIO,
    board: TensorBoardLog | None,
) -> RunResult:
    """The epochs (`logicars.training.loop.train_epochs`) with the default policies, then
    the final checkpoint, summary and plots."""
    from .progress import progress_bar

    bar = progress_bar(
        total=state.target_epochs,
        initial=state.epoch,
        desc=state.preset.name,
        unit="epoch",
        disable=quiet,
    )
    # The handler stays in place until the outputs are written: a Ctrl-C at any point
    # of a run still ends with a checkpoint and a complete run directory.
    with StopOnInterrupt() as stop:
        run = Run(model, state, run_dir, stop, bar, quiet)
        # The CSV row after the policies that add to it (validation, repair), before the
        # callbacks, which may read the file.
        policies = [*default_policies(model, state, run_dir), MetricsCsv(metrics_file)]
        policies.append(Callbacks(callbacks, board))
        with bar, metrics_file:
            train_epochs(run, _batch_source(state, dataset, run_dir), policies, checkpoint_every)
            os.fsync(metrics_file.fileno())
        early_stopped = run.stop_reason is not None
        unfinished = state.epoch < state.target_epochs and not early_stopped
        # A drift search cut short goes on when the run is resumed.
        interrupted = stop.requested and (unfinished or drift_due(state))
        # The final checkpoint first: whatever happens while plotting, the run is safe.
        run.checkpoint(interrupted=interrupted, early_stopped=early_stopped)
        model = run.model
        summary = run_summary(model, state, interrupted, early_stopped, run.stopped_by_callback)
        _write_atomic(run_dir / "summary.json", json.dumps(summary, indent=2) + "\n")
        plot_losses(
            state.metrics,
            run_dir / "loss.png",
            title=state.preset.name,
            restarts=state.restarts,
            repairs=state.repairs,
            warmup=model.spec.relax.warmup,
        )
        write_rollout_gif(model, state.preset, run_dir / "rollout.gif", seed=state.seed)
    return RunResult(
        run_dir,
        model,
        summary,
        list(state.metrics),
        interrupted,
        early_stopped,
        state.preset,
        stop.signal_name if interrupted else None,
    )


def _batch_source(state: RunState, dataset: Any, run_dir: Path) -> BatchSource:
    """Where the run's batches come from: a persisting or regenerating growth task's pool
    (`training.pool`), else a fresh batch of the task every epoch, drawn from the run's
    data stream."""
    if getattr(dataset, "growth", "grow") != "grow":
        resumed = bool(state.metrics)
        return PoolBatches(dataset, state.preset.config, state.seed, run_dir, resumed)
    return TaskBatches(dataset)
