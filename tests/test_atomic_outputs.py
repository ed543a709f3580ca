"""Every output file is written atomically (`logicars.files`): a write that fails
part-way (disk full) leaves the previous file whole and no temporary file behind."""

from __future__ import annotations

import errno
import os
from pathlib import Path
from typing import Callable

import numpy as np
import pytest

import logicars
import logicars.files
from logicars.train import EpochMetrics, plot_losses, write_frames_gif


def disk_full_on_write(monkeypatch: pytest.MonkeyPatch) -> None:
    """Writes into temporary files fail as on a full disk, after the file was created."""
    real_fdopen = os.fdopen

    class Full:
        def __init__(self, f: object) -> None:
            self._f = f

        def __enter__(self) -> Full:
            return self

        def __exit__(self, *exc: object) -> None:
            self._f.close()  # type: ignore[attr-defined]

        def write(self, data: bytes) -> int:
            self._f.write(data[: len(data) // 2])  # type: ignore[attr-defined]
            raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(logicars.files.os, "fdopen", lambda fd, mode: Full(real_fdopen(fd, mode)))


FRAMES = (np.random.default_rng(0).random((4, 8, 8, 1)) < 0.5).astype(np.uint8)
METRICS = [EpochMetrics(e, 1.0 / e, 2.0 / e, 0.1 * e) for e in range(1, 6)]


def model_npz(path: Path) -> None:
    logicars.Model(logicars.get_preset("gol").spec, 0).to_npz(path)


WRITERS: dict[str, tuple[str, Callable[[Path], None]]] = {
    "gif": ("rollout.gif", lambda p: write_frames_gif(FRAMES, [0], p)),
    "png": ("loss.png", lambda p: plot_losses(METRICS, p)),
    "npz": ("model.npz", model_npz),
    "text": ("summary.json", lambda p: logicars.files.write_atomic(p, b"{}\n")),
}


@pytest.mark.parametrize("kind", WRITERS)
def test_a_failed_write_keeps_the_old_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kind: str
) -> None:
    name, write = WRITERS[kind]
    path = tmp_path / name
    path.write_bytes(b"the previous file")
    with monkeypatch.context() as m:
        disk_full_on_write(m)
        with pytest.raises(OSError, match="No space left"):
            write(path)
    assert path.read_bytes() == b"the previous file"
    assert [p.name for p in tmp_path.iterdir()] == [name]  # no temporary file left
    write(path)  # and with room on the disk, the new file replaces it
    assert path.read_bytes() != b"the previous file"
    assert [p.name for p in tmp_path.iterdir()] == [name]


def test_file_objects_are_written_directly(tmp_path: Path) -> None:
    import io

    buf = io.BytesIO()
    write_frames_gif(FRAMES, [0], buf)
    assert buf.getvalue()[:6] == b"GIF89a"


def test_npz_name_is_completed_as_numpy_does(tmp_path: Path) -> None:
    model_npz(tmp_path / "params")
    assert (tmp_path / "params.npz").exists()
    logicars.Model.from_npz(tmp_path / "params.npz")
