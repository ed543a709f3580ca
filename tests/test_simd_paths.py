"""The run-time dispatched kernels (AVX2 or AVX-512 with FMA) and the portable baseline
forced by `LOGICARS_SIMD=portable` train alike.

Over a 50-epoch checkerboard run the hard losses are identical. That run is too short
for any gate to change its most likely operation (the hard loss stays at its initial
value), so a 600-epoch Game of Life run, whose circuit does change, is compared too.
The soft losses agree only closely: a fused multiply-add rounds once where the portable
path's separate multiply and add round twice, so soft values differ in their last bits
and that difference carries through the optimizer steps.

Both runs use AdamW's notebook β1 (0.9). Without momentum (β1 0, the default of gol and
the checkerboards since 2026-11-30) a step follows the sign of gradients too small for the
two paths' last-bit differences to leave alone, and the portable path's hard losses part
from the FMA paths' within these runs (gol: at epoch 479 of 600; measured 2026-11-30). The
AVX2 and AVX-512 paths, both with FMA, train bit for bit alike under either β1.
"""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

# Relative gap allowed between the two soft-loss curves: last-bit FMA rounding grown over
# the AdamW steps (measured: below 1e-5).
SOFT_RTOL = 1e-4


def start_training(
    preset: str, epochs: int, out: Path, simd: str | None, beta1: str = "0.9"
) -> subprocess.Popen[str]:
    """`python -m logicars train preset --beta1 beta1` in a child process with
    `LOGICARS_SIMD` = simd."""
    env = {k: v for k, v in os.environ.items() if k != "LOGICARS_SIMD"}
    if simd is not None:
        env["LOGICARS_SIMD"] = simd
    # One thread each: the two runs share the machine, and results do not depend on it.
    command = [sys.executable, "-m", "logicars", "train", preset, "--epochs", str(epochs)]
    command += ["--beta1", beta1, "--threads", "1", "--out", str(out), "--quiet"]
    return subprocess.Popen(
        command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )


def finish_training(child: subprocess.Popen[str], out: Path) -> tuple[dict, np.ndarray]:
    """The run's summary and its (soft, hard) loss per epoch."""
    _, stderr = child.communicate(timeout=300)
    assert child.returncode == 0, stderr
    summary = json.loads((out / "summary.json").read_text())
    with open(out / "metrics.csv", newline="") as f:
        rows = [(float(r["soft_loss"]), float(r["hard_loss"])) for r in csv.DictReader(f)]
    return summary, np.array(rows)


# About 8 s on two idle cores (four trainings): opt-in; .ci/run runs it on the wheel.
@pytest.mark.slow
@pytest.mark.parametrize(("preset", "epochs"), [("checkerboard", 50), ("gol", 600)])
def test_dispatched_and_portable_kernels_give_the_same_hard_loss_curve(
    tmp_path: Path, preset: str, epochs: int
) -> None:
    runs = {simd: tmp_path / (simd or "dispatched") for simd in (None, "portable")}
    # Both runs at once, one thread each: they share the machine's cores.
    children = {simd: start_training(preset, epochs, out, simd) for simd, out in runs.items()}
    results = {simd: finish_training(children[simd], out) for simd, out in runs.items()}
    (dispatched_info, dispatched), (portable_info, portable) = results.values()

    assert portable_info["build_info"]["simd_level"] == "portable"
    if dispatched_info["build_info"]["simd_level"] == "portable":
        pytest.skip("this CPU has no AVX2+FMA: both runs used the portable kernels")
    assert dispatched.shape == portable.shape == (epochs, 2)
    assert portable[-1, 0] < portable[0, 0]  # it trained
    if preset == "gol":  # gates changed, so the hard curves could have parted
        assert portable_info["active_gates"] > 0
    np.testing.assert_array_equal(dispatched[:, 1], portable[:, 1], err_msg="hard losses")
    np.testing.assert_allclose(dispatched[:, 0], portable[:, 0], rtol=SOFT_RTOL)


@pytest.mark.slow
def test_avx2_and_avx512_kernels_train_bit_for_bit_alike_without_momentum(
    tmp_path: Path,
) -> None:
    """Both FMA paths round alike: gol's 600 epochs at β1 0 (its default) give the same
    losses to the last bit, where the portable path's part (the module's docstring)."""
    runs = {simd: tmp_path / (simd or "dispatched") for simd in (None, "avx2")}
    children = {
        simd: start_training("gol", 600, out, simd, beta1="0") for simd, out in runs.items()
    }
    results = {simd: finish_training(children[simd], out) for simd, out in runs.items()}
    (wide_info, wide), (avx2_info, avx2) = results.values()
    if wide_info["build_info"]["simd_level"] != "avx512+fma":
        pytest.skip("this CPU has no AVX-512: both runs used the same kernels")
    assert avx2_info["build_info"]["simd_level"] == "avx2+fma"
    np.testing.assert_array_equal(wide, avx2)
