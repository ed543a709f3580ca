"""Where a sweep's points train: a local process pool of spawned workers, or Ray
tasks on a local instance or a cluster."""

from __future__ import annotations

import concurrent.futures as cf
import os
import signal
import tempfile
import threading
import time
import uuid
from pathlib import Path
from typing import Any

from ..files import check_name, read_bytes, write_atomic
from .grid import Point
from .points import LOCK_FILE, POINT_FILE, WORKER, run_point

# How long the driver tries to reach a Ray cluster's address before giving up.
RAY_CONNECT_TIMEOUT_S = 10.0


def worker_init(parent: int, stop: Any, abort: Any) -> None:
    """A pool worker: its own process group (a Ctrl-C in the terminal reaches only the
    driver, which stops the workers once), SIGINT ignored outside `train` (whose own
    handler stops after the current epoch and saves), and a watchdog thread."""
    if hasattr(os, "setpgrp"):
        os.setpgrp()
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)  # a batch scheduler's stop: see driver
    WORKER.stop = stop
    threading.Thread(target=_watchdog, args=(parent, stop, abort), daemon=True).start()


def _watchdog(parent: int, stop: Any, abort: Any) -> None:
    """Exits when the driver is gone (SIGKILL: its points resume from their last
    checkpoint) or aborts; on a stop, sends `train` one SIGINT once its handler is in
    place (a second SIGINT would abort the run without its final checkpoint)."""
    interrupted = False
    while True:
        if os.getppid() != parent or abort.is_set():
            os._exit(1)
        if stop.is_set() and not interrupted:
            if signal.getsignal(signal.SIGINT) not in (signal.SIG_IGN, signal.SIG_DFL, None):
                os.kill(os.getpid(), signal.SIGINT)
                interrupted = True
        time.sleep(0.1)


class PoolExecutor:
    """Points on a local process pool (spawned workers, one point at a time each)."""

    def __init__(self, workers: int) -> None:
        import multiprocessing

        ctx = multiprocessing.get_context("spawn")
        self.slots = workers
        self._stop, self._abort = ctx.Event(), ctx.Event()
        self._pool = cf.ProcessPoolExecutor(
            workers,
            mp_context=ctx,
            initializer=worker_init,
            initargs=(os.getpid(), self._stop, self._abort),
        )

    def submit(self, out: Path, point: Point, threads: int) -> cf.Future:
        return self._pool.submit(run_point, str(out), point.name, point.options, threads)

    def wait(self, running: list[Any], timeout: float) -> list[Any]:
        done, _ = cf.wait(running, timeout=timeout, return_when=cf.FIRST_COMPLETED)
        return list(done)

    def result(self, future: cf.Future, point: Point) -> dict[str, Any]:
        try:
            return future.result()
        except cf.process.BrokenProcessPool as e:
            raise RuntimeError(f"a sweep worker died while training {point.name}: {e}") from None

    def stop(self, running: list[Any]) -> None:
        self._stop.set()

    def close(self, abort: bool) -> None:
        if abort:
            self._abort.set()
        self._pool.shutdown(wait=not abort, cancel_futures=True)


class RayExecutor:
    """Points as Ray tasks, each reserving `threads` CPUs. A task trains into `out` when
    its node sees that directory (shared storage); otherwise it trains in a temporary
    directory and ships the files back to the driver, which writes them into `out`."""

    def __init__(self, address: str, workers: int | None, threads: int, out: Path) -> None:
        try:
            import ray
        except ImportError:
            raise ValueError("the Ray executor needs Ray: pip install 'logicars[ray]'") from None
        self._ray = ray
        self._started = not ray.is_initialized()
        if self._started:
            kwargs: dict[str, Any] = {"log_to_driver": False}
            if address == "local":
                kwargs["include_dashboard"] = False
                if workers is not None:
                    kwargs["num_cpus"] = workers * threads
            if address == "local":
                ray.init(address=address, **kwargs)
            else:
                _ray_connect(ray, address, kwargs)
        cpus = int(ray.cluster_resources().get("CPU", 1))
        self.slots = workers if workers is not None else max(1, cpus // threads)
        self._task = ray.remote(_ray_point).options(num_cpus=threads, max_retries=0)
        # Tasks that see this file share the driver's storage.
        self._token = f".sweep-driver-{uuid.uuid4().hex}"
        self._marker = out / self._token
        self._marker.write_text("")
        self._out = out

    def submit(self, out: Path, point: Point, threads: int) -> Any:
        files = _run_files(out / point.name)
        return self._task.remote(str(out), point.name, point.options, threads, self._token, files)

    def wait(self, running: list[Any], timeout: float) -> list[Any]:
        done, _ = self._ray.wait(running, num_returns=1, timeout=timeout)
        return done

    def result(self, ref: Any, point: Point) -> dict[str, Any]:
        try:
            result = self._ray.get(ref)
        except self._ray.exceptions.TaskCancelledError:
            return {"status": "interrupted"}
        except self._ray.exceptions.RayError as e:
            raise RuntimeError(f"Ray task for {point.name} failed: {e}") from None
        files = result.pop("files", None)
        if files is not None:
            run_dir = self._out / point.name
            run_dir.mkdir(parents=True, exist_ok=True)
            for rel, data in files.items():
                write_atomic(run_dir / check_name(rel, "file from a Ray task"), data)
        return result

    def stop(self, running: list[Any]) -> None:
        # Ray interrupts a running task as Ctrl-C would: `train` stops after its epoch
        # with a checkpoint.
        for ref in running:
            self._ray.cancel(ref)

    def close(self, abort: bool) -> None:
        self._marker.unlink(missing_ok=True)
        if self._started:
            self._ray.shutdown()


# How long the driver waits for Ray to join a cluster that accepted the connection.
RAY_INIT_TIMEOUT_S = 120.0


def _ray_connect(ray: Any, address: str, kwargs: dict[str, Any]) -> None:
    """`ray.init(address)` on a helper thread: Ray blocks in C++ while it retries an
    address that accepts but never answers (minutes), with its own SIGTERM handler in
    place that cannot run meanwhile, so the process ignored SIGTERM. Here the main
    thread waits, signals keep their default (SIGTERM ends the process), and a cluster
    that does not answer within `RAY_INIT_TIMEOUT_S` is a one-line ValueError."""
    failure: list[BaseException] = []

    def connect() -> None:
        try:
            ray.init(address=address, **kwargs)
        except BaseException as e:  # reported by the waiting thread
            failure.append(e)

    helper = threading.Thread(target=connect, name="logicars-ray-init", daemon=True)
    helper.start()
    helper.join(RAY_INIT_TIMEOUT_S)
    if helper.is_alive():
        raise ValueError(
            f"the Ray cluster at {address} did not answer within {RAY_INIT_TIMEOUT_S:g} s"
        )
    if failure:
        e = failure[0]
        if isinstance(e, (ConnectionError, TimeoutError)):
            raise ValueError(f"cannot join the Ray cluster at {address}: {e}") from None
        raise e


def check_reachable(address: str, timeout: float | None = None) -> None:
    """A cluster address (`HOST:PORT`, `ray://HOST:PORT`) must accept a TCP connection
    within `RAY_CONNECT_TIMEOUT_S`; ValueError otherwise. `local` and `auto` (Ray finds
    its own) are not probed."""
    import socket

    if address in ("local", "auto"):
        return
    where = address.split("://", 1)[1] if "://" in address else address
    host, colon, port_text = where.rpartition(":")
    host = host.strip("[]")  # [::1]:6379
    try:
        port = int(port_text)
    except ValueError:
        port = -1
    if not colon or not host or not 0 < port < 65536:
        raise ValueError(
            f"ray address {address!r}: expected HOST:PORT, ray://HOST:PORT, auto or local"
        )
    wait = RAY_CONNECT_TIMEOUT_S if timeout is None else timeout
    try:
        socket.create_connection((host, port), timeout=wait).close()
    except OSError as e:
        if isinstance(e, socket.timeout):
            reason = f"no answer within {wait:g} s"
        else:
            reason = e.strerror or str(e)
        raise ValueError(f"cannot reach a Ray cluster at {address}: {reason}") from None


def _run_files(run_dir: Path) -> dict[str, bytes] | None:
    """A point's files, for a task on a node without the sweep directory (None: none)."""
    if not (run_dir / POINT_FILE).exists():
        return None
    files = {}
    for f in run_dir.iterdir():
        # Regular files only (a symlink or a FIFO planted there is not shipped or read).
        if f.name != LOCK_FILE and f.is_file() and not f.is_symlink():
            files[f.name] = read_bytes(f, "point file", 1 << 32, follow=False)
    return files


def _ray_point(
    out: str,
    name: str,
    options: dict[str, Any],
    threads: int,
    token: str,
    files: dict[str, bytes] | None,
) -> dict[str, Any]:
    """A Ray task: `run_point` in `out` if this node sees it, else in a temporary copy of
    the point's directory whose files go back to the driver."""
    if (Path(out) / token).exists():
        return run_point(out, name, options, threads)
    with tempfile.TemporaryDirectory(prefix="logicars-sweep-") as tmp:
        run_dir = Path(tmp) / name
        run_dir.mkdir()
        for rel, data in (files or {}).items():
            (run_dir / rel).write_bytes(data)
        result = run_point(tmp, name, options, threads)
        if result["status"] in ("trained", "resumed", "interrupted", "failed"):
            result["files"] = _run_files(run_dir)
        return result
