"""summary.json: what a finished (or interrupted) run records of itself."""

from __future__ import annotations

from typing import Any

from .. import _core
from ..circuit.evaluate import evaluate
from ..circuit.export import active_gates
from ..model import Model
from ..runstate import RunState
from .config import POOL_SETTINGS


def attempt_ends(state: RunState, interrupted: bool, early_stopped: bool) -> list[dict[str, Any]]:
    """Why each attempt of a run ended, for summary.json: solved (by training, a repair
    or the drift search), restarted at its length, stalled, the repair gave up,
    interrupted or stopped early."""
    ends = [
        {"attempt": i + 1, "epoch": r["epoch"], "reason": r.get("reason", "restarted")}
        for i, r in enumerate(state.restarts)
    ]
    if state.solved_epoch is not None:
        by = [r for r in state.repairs if r["epoch"] == state.solved_epoch and r.get("confirmed")]
        how = "solved"
        if by:
            how += " by the drift search" if by[-1].get("method") == "drift" else " by a repair"
        reason = f"{how} at epoch {state.solved_epoch}"
    elif interrupted:
        reason = "interrupted (resume to go on)"
    elif early_stopped:
        reason = "stopped early"
    else:
        reason = "ran its epochs unsolved"
        final = [r for r in state.repairs if r["epoch"] == state.epoch]
        if final:
            what = "drift search" if final[-1].get("method") == "drift" else "repair"
            reason += f"; the {what} gave up at {final[-1]['wrong_after']} wrong cells"
        if state.kept_attempt is not None:
            reason += f"; the run keeps attempt {state.kept_attempt + 1}'s circuit"
    ends.append({"attempt": len(state.restarts) + 1, "epoch": state.epoch, "reason": reason})
    return ends


def run_summary(
    model: Model,
    state: RunState,
    interrupted: bool,
    early_stopped: bool,
    stopped_by_callback: str | None = None,
) -> dict[str, Any]:
    from ..runtime import build_info, version

    last = state.metrics[-1] if state.metrics else None
    p = state.preset
    return {
        "preset": p.name,
        "task": p.task_kind or p.task().kind,
        "seed": state.seed,
        "init": state.init,
        "epochs": state.epoch,
        "target_epochs": state.target_epochs,
        # What "the first wiring solved in the notebook's epochs" counts against.
        "notebook_epochs": p.paper_epochs(),
        "lr": p.lr,
        "weight_decay": p.weight_decay,
        "beta1": p.beta1,
        "lr_decay_from": p.lr_decay_from,
        "lr_end": p.lr_end,
        "relax": model.spec.relax.to_dict(),
        # What a grow: task's circuit must do, and the sample pool that trained it.
        "growth": p.config.growth or "grow",
        **(
            {k: getattr(p.config, k) for k in POOL_SETTINGS}
            if p.config.growth not in (None, "grow")
            else {}
        ),
        "final_soft_loss": None if last is None else last.soft_loss,
        "final_hard_loss": None if last is None else last.hard_loss,
        "first_epoch_hard_zero": state.first_zero,
        "stop_on_solve": state.stop_on_solve,
        "solved_epoch": state.solved_epoch,
        "solved_seconds": state.solved_seconds,
        "repair": state.repair,
        "repairs": state.repairs,
        "drift_budget": state.drift_budget,
        "final_repair_budget": state.final_repair_budget,
        "require_generalise": state.require_generalise,
        "restart_every": state.restart_every,
        "stall_epochs": p.stall_epochs,
        "stall_loss": p.stall_loss,
        "stalls": state.stalls,
        "restarts": state.restarts,
        "attempt_ends": attempt_ends(state, interrupted, early_stopped),
        "kept_attempt": state.kept_attempt,
        "kept_lowest": state.kept_lowest,
        "wall_seconds": round(state.wall_seconds, 3),
        "active_gates": active_gates(model),
        # Held-out check of the discrete circuit (all 512 boards for gol, fresh starts
        # for the checkerboards, the target image for the growth presets).
        "hard_eval": evaluate(model, p).to_dict(),
        "gates": p.gates(),
        "early_stop": state.early_stop,
        "early_stopped": early_stopped,
        # The callback (`train(callbacks=...)`) that ended the run, if one did.
        "stopped_by_callback": stopped_by_callback,
        "interrupted": interrupted,
        "threads": _core.num_threads(),
        "batch": p.batch,
        "grid": [p.height, p.width],
        "config": model.spec.to_dict(),
        "logicars_version": version(),
        "build_info": build_info(),
    }
