"""What a finished run's output says about it: solved or not, on which checks, and how.

`outcome_line(summary)` is the last line `python -m logicars train` prints: `SOLVED` or
`NOT SOLVED`, what was checked, the final circuit's errors (after any repair: the final
circuit is the one the checks ran, not the last epoch's), the attempts used and the
wall time. `solved(summary)` is the same verdict as a bool. Both read `summary.json`'s
fields only, so they work on the summaries of older runs too.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def _checks(summary: Mapping[str, Any]) -> list[tuple[str, Mapping[str, Any]]]:
    """The held-out checks a summary records: `hard_eval` as one check, or its named
    checks where it has them (`{"checks": {name: {...}}}`)."""
    ev = summary.get("hard_eval") or {}
    named = ev.get("checks")
    if isinstance(named, Mapping) and named:
        return [(str(k), v) for k, v in named.items() if isinstance(v, Mapping)]
    return [("held-out", ev)] if ev else []


def _passed(check: Mapping[str, Any]) -> bool:
    if "passed" in check:
        return bool(check["passed"])
    samples = check.get("samples")
    return bool(samples) and check.get("solved") == samples


def solved(summary: Mapping[str, Any]) -> bool:
    """Whether the run's final circuit passes every check its summary records (that its
    task requires: `evaluate`'s `passed`, where the summary has it)."""
    ev = summary.get("hard_eval") or {}
    if isinstance(ev, Mapping) and "passed" in ev:
        return bool(ev["passed"])
    checks = _checks(summary)
    return bool(checks) and all(_passed(c) for _, c in checks)


def _describe(name: str, check: Mapping[str, Any]) -> str:
    text = f"{name} {check.get('solved', '?')}/{check.get('samples', '?')}"
    if check.get("wrong_cells") is not None:
        text += f" ({check['wrong_cells']} wrong cells)"
    if check.get("required") is False:
        text += " (reported, not required)"
    return text


def final_repair(summary: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The repair (greedy or drift search) that ran at the run's last epoch, if any: its
    circuit is the final one."""
    last = [r for r in summary.get("repairs") or [] if r.get("epoch") == summary.get("epochs")]
    return last[-1] if last else None


def outcome_line(summary: Mapping[str, Any], run_dir: object = None) -> str:
    """`SOLVED name: checks ...; attempts, epochs, wall time [-> run_dir]`, or `NOT SOLVED`.

    Never the last epoch's hard loss as the final one: after a repair the final circuit
    differs from the one that epoch measured, so the errors shown are the checks' on the
    final circuit."""
    verdict = "SOLVED" if solved(summary) else "NOT SOLVED"
    checks = "; ".join(_describe(n, c) for n, c in _checks(summary)) or "no check recorded"
    parts = [f"{verdict} {summary.get('preset', '?')}: {checks} of the final circuit"]
    repair = final_repair(summary)
    if repair is not None and repair.get("wrong_after") is not None:
        what = "drift search" if repair.get("method") == "drift" else "repair"
        parts.append(
            f"after the {what} at epoch {repair['epoch']} "
            f"({repair.get('wrong_before', '?')} -> {repair['wrong_after']} wrong validation cells)"
        )
    attempts = 1 + len(summary.get("restarts") or [])
    line = "; ".join(parts)
    line += f"; {attempts} attempt{'s' * (attempts != 1)}, {summary.get('epochs', '?')} epochs"
    seconds = summary.get("wall_seconds")
    if seconds is not None:
        line += f", {seconds:.1f} s"
    if run_dir is not None:
        line += f" -> {run_dir}"
    return line
