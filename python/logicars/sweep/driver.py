"""The driver of a sweep: `sweep()` checks the grid, picks the executor, launches
the points while slots are free, stops on Ctrl-C, and writes the report."""

from __future__ import annotations

import dataclasses
import hashlib
import os
import sys
from collections import deque
from pathlib import Path
from typing import Any

from ..files import SWEEP_MARKER, mark_dir, refuse_foreign_dir
from ..training.interrupts import StopOnInterrupt
from .executors import PoolExecutor, RayExecutor, check_reachable
from .grid import Grid, PathLike, Point, expand_grid, parse_shard, read_sweep_file
from .points import POINT_FILE, damage_message, point_state
from .reporting import SweepReport, point_solved, report


@dataclasses.dataclass
class SweepResult:
    """What `sweep` returns: the report (every point under `out`), this call's points and
    what it did with them (`counts`: trained, resumed, skipped, interrupted, failed,
    busy, not started)."""

    report: SweepReport
    points: list[Point]
    counts: dict[str, int]
    interrupted: bool = False
    until_solved_reached: bool = False

    @property
    def out(self) -> Path:
        return self.report.out

    @property
    def rows(self) -> list[dict[str, Any]]:
        return self.report.rows

    @property
    def table(self) -> str:
        return self.report.table

    def _repr_html_(self) -> str:
        """Jupyter's display: what this call did, the per-cell table and the plot."""
        from ..viz.render import sweep_html

        return sweep_html(self.report, self.counts, self.interrupted, self.until_solved_reached)

    def __repr__(self) -> str:  # short: the report holds every point
        return (
            f"SweepResult(out={os.fspath(self.out)!r}, points={len(self.points)}, "
            f"counts={self.counts}, interrupted={self.interrupted})"
        )


def _default_workers(threads: int) -> int:
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        cores = os.cpu_count() or 1
    return max(1, cores // threads)


def sweep(
    grid: Grid | PathLike,
    *,
    out: PathLike,
    workers: int | None = None,
    threads_per_run: int = 1,
    ray: bool | str | None = None,
    shard: str | tuple[int, int] | None = None,
    until_solved: int | None = None,
    quiet: bool = False,
) -> SweepResult:
    """Trains every point of `grid` into `<out>/<point name>` and writes the report.

    - `grid`: train option -> one value or a list (a range, a tuple) of values to sweep,
      e.g. `{"preset": "gol", "seed": range(10), "lr": [0.03, 0.05]}` (`seed` also as a
      string `"0-9"`); a list of such grids (their points one after the other); or the
      path of a TOML/YAML sweep file (`read_sweep_file`).
    - `out`: the sweep directory; running the same sweep again skips the finished points
      and resumes the interrupted ones.
    - `workers`: points trained at once (default: cores // threads_per_run; with Ray:
      the cluster's CPUs // threads_per_run).
    - `threads_per_run`: engine threads of each point (results do not depend on it).
    - `ray`: None/False: the local process pool; True or `"local"`: a new local Ray
      instance; `"auto"`, `"HOST:PORT"` or `"ray://..."`: an existing Ray cluster
      (`pip install 'logicars[ray]'`).
    - `shard`: `"I/N"` or `(I, N)`: only the points I, I + N, I + 2N, ... (from 0), so a
      batch-scheduler job array can split the sweep without Ray.
    - `until_solved`: stop launching points once this many have solved their task
      (finished points count; running ones finish).
    - `quiet`: no progress bar and no messages but failures and interruptions.

    Ctrl-C (or SIGTERM, SIGHUP) stops the running points after their current epoch with a
    checkpoint; the sweep then returns with `interrupted=True`. Bad options raise
    `ValueError`/`TypeError`, before any training where they can be seen from the grid.
    """
    from ..arguments import check_int
    from ..runtime import check_environment
    from ..spec import MAX_THREADS

    check_environment()
    threads = check_int("threads_per_run", threads_per_run, 1, MAX_THREADS)
    if workers is not None:
        workers = check_int("workers", workers, 1)
    if until_solved is not None:
        until_solved = check_int("until_solved", until_solved, 1)
    if isinstance(grid, (str, os.PathLike)):
        grid = read_sweep_file(grid)
    points = expand_grid(grid)
    if shard is not None:
        index, count = parse_shard(shard)
        points = points[index::count]
    # An unknown preset or a bad file: before the disk is touched.
    files = _check_presets(points)
    address = None if ray in (None, False) else "local" if ray is True else str(ray)
    if address is not None:
        check_reachable(address)  # Ray itself waits minutes on a dead address
    root = Path(out)
    # Points (and runs a point would conflict with, which `point_state` names) are
    # the sweep's to judge; any other file makes `out` a directory that is not a sweep.
    inside = (POINT_FILE, "model.safetensors")
    refuse_foreign_dir(root, "sweep directory", SWEEP_MARKER, ("sweep.json",), inside)
    try:
        root.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise ValueError(f"sweep directory {root}: {e.strerror or e}") from None

    states = {p.name: point_state(root / p.name, p.options) for p in points}
    mark_dir(root, SWEEP_MARKER)  # after the conflicts: a refused `out` is left as it was
    damaged = [p for p in points if states[p.name] == "damaged"]
    todo = deque(p for p in points if states[p.name] not in ("done", "damaged"))
    run = _Run(root, threads, until_solved, quiet, len(points) - len(todo) - len(damaged))
    for p in damaged:  # one damaged point fails alone; the others go on
        run.counts["failed"] += 1
        run.say(f"sweep: {p.name} failed: {damage_message(root / p.name)}", always=True)
    run.solved = sum(point_solved(root / p.name) for p in points if states[p.name] == "done")
    resume = sum(states[p.name] == "resume" for p in todo)
    if todo and not run.race_won():
        executor: PoolExecutor | RayExecutor
        if address is None:
            executor = PoolExecutor(min(workers or _default_workers(threads), len(todo)))
            where = f"{executor.slots} workers x {threads} thread{'s' * (threads > 1)}"
        else:
            executor = RayExecutor(address, workers, threads, root)
            where = f"Ray ({address}), {executor.slots} at once x {threads} CPU"
        run.say(
            f"sweep: {len(points)} points ({len(points) - len(todo) - len(damaged)} finished, "
            f"{len(damaged)} damaged, {resume} to "
            f"resume, {len(todo) - resume} to train) on {where} -> {root}"
        )
        run.drive(executor, todo, files)
    points_here = any((root / p.name / POINT_FILE).exists() for p in points)
    result = SweepResult(
        report(root) if points_here else SweepReport(root, [], [], ""),
        points,
        run.counts,
        interrupted=run.interrupted,
        until_solved_reached=run.race_won(),
    )
    did = ", ".join(f"{v} {k}" for k, v in run.counts.items() if v)
    run.say(f"sweep: {did or 'no points'}; {run.solved} solved; report in {root}/sweep.md")
    if run.interrupted:
        run.say("sweep: interrupted; run the same sweep again to resume it", always=True)
    elif run.race_won() and todo:
        run.say(f"sweep: until-solved {until_solved} reached; {len(todo)} points not launched")
    return result


def _check_presets(points: list[Point]) -> dict[str, bytes]:
    """Resolves every distinct preset of the points (a name, a task kind with its size,
    an experiment file) as `train` would, so that a bad one is refused before any
    point's directory is made; returns each experiment file's digest (`_changed_files`)."""
    from ..presets import read_experiment, resolve_preset

    seen = set()
    files: dict[str, bytes] = {}
    for point in points:
        o = point.options
        key = (o.get("preset"), o.get("size"), o.get("asynchronous"))
        if key in seen:
            continue
        seen.add(key)
        preset, size, asynchronous = key
        if not isinstance(preset, str):
            continue  # `train` refuses it with its own message
        if preset.lower().endswith(".toml"):
            files[preset] = _digest(preset)
            read_experiment(preset)
        elif type(size) is int or size is None:
            resolve_preset(preset, size=size, asynchronous=bool(asynchronous))
    return files


def _digest(path: str) -> bytes:
    try:
        return hashlib.sha256(Path(path).read_bytes()).digest()
    except OSError:
        return b""  # read_experiment (or the point's train) says what is wrong


def _changed_files(files: dict[str, bytes]) -> str | None:
    """Why no further point may start when an experiment file changed since the sweep
    started: each point's train reads the file again, so a later point would train other
    options under the same point name."""
    changed = [path for path, digest in files.items() if _digest(path) != digest]
    if not changed:
        return None
    return (
        f"{changed[0]} changed since the sweep started; the points that started trained "
        "the earlier text: put it back to go on, or sweep the new text into another "
        "directory"
    )


class _Run:
    """The driver's loop and tallies: launches points while slots are free, collects
    results, shows progress, stops on Ctrl-C, a bad option or `until_solved`."""

    def __init__(
        self, root: Path, threads: int, until_solved: int | None, quiet: bool, skipped: int
    ) -> None:
        self.root, self.threads, self.until_solved, self.quiet = root, threads, until_solved, quiet
        self.counts = dict.fromkeys(
            ("trained", "resumed", "skipped", "interrupted", "failed", "busy", "not started"), 0
        )
        self.counts["skipped"] = skipped
        self.solved = 0
        self.interrupted = False
        self._bar: Any = None

    def race_won(self) -> bool:
        return self.until_solved is not None and self.solved >= self.until_solved

    def say(self, message: str, always: bool = False) -> None:
        if self.quiet and not always:
            return
        if self._bar is not None:
            self._bar.write(message, file=sys.stderr)
        else:
            print(message, file=sys.stderr, flush=True)

    def drive(
        self, executor: PoolExecutor | RayExecutor, todo: deque[Point], files: dict[str, bytes]
    ) -> None:
        """Runs the points of `todo`; an experiment file of `files` (path: digest) that
        changes stops further launches as a bad option does."""
        from ..progress import progress_bar

        running: dict[Any, Point] = {}
        input_error: str | None = None
        stopped = aborted = False
        self._bar = progress_bar(total=len(todo), desc="sweep", unit="point", disable=self.quiet)
        try:
            stop = StopOnInterrupt(
                "logicars sweep", "the running points finish their epoch and save a checkpoint"
            )
            with stop, self._bar:
                while todo or running:
                    if (stop.requested or input_error) and not stopped:
                        executor.stop(list(running))
                        stopped = True
                    launch = not (stopped or self.race_won())
                    if launch and todo and len(running) < executor.slots:
                        input_error = input_error or _changed_files(files)
                        launch = input_error is None
                    while launch and todo and len(running) < executor.slots:
                        p = todo.popleft()
                        running[executor.submit(self.root, p, self.threads)] = p
                    if not running:
                        break
                    for ref in executor.wait(list(running), timeout=0.25):
                        p = running.pop(ref)
                        outcome = executor.result(ref, p)
                        if outcome["status"] == "input error":
                            input_error = input_error or f"point {p.name}: {outcome['error']}"
                        else:
                            self._count(p, outcome)
                    self._bar.set_postfix(running=len(running), solved=self.solved, refresh=False)
                self.interrupted = stop.requested
        except BaseException:
            aborted = True
            raise
        finally:
            executor.close(abort=aborted)
            self._bar = None
        if input_error is not None:
            raise ValueError(input_error)

    def _count(self, p: Point, outcome: dict[str, Any]) -> None:
        status = outcome["status"]
        self.counts[status] = self.counts.get(status, 0) + 1
        if status == "failed":
            self.say(f"sweep: {p.name} failed: {outcome['error']}", always=True)
        elif status in ("trained", "resumed", "skipped") and point_solved(self.root / p.name):
            self.solved += 1
        self._bar.update(1)
