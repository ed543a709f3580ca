"""Checks that the logicars this Python imports is an installed, portable release build.

    python .ci/check_installed.py [SIMD_LEVEL]

Fails when logicars comes from anywhere but this interpreter's site-packages (a source
tree on sys.path would hide the wheel), when the build is not a release build, when AVX
instructions were compiled in outside the dispatched kernels (the wheel would crash on
an older CPU), or when the kernels in use are not SIMD_LEVEL. With SIMD_LEVEL
`portable` (a CPU without AVX), hard circuits must run on the slot engine (no JIT code)
and give the float hard rollout's grids.
"""

from __future__ import annotations

import sys
import sysconfig
from pathlib import Path

import logicars

# Target features that an x86-64-v2 baseline must not enable.
AVX_FEATURES = {"avx", "avx2", "fma", "avx512f"}


def main(argv: list[str]) -> int:
    info = logicars.build_info()
    where = Path(logicars.__file__).resolve().parent
    print(f"logicars {logicars.__version__} imported from {where}")
    print(f"build_info: {info}")
    site = Path(sysconfig.get_paths()["platlib"]).resolve()
    problems = []
    if site not in where.parents:
        problems.append(f"logicars is imported from {where}, not from {site}")
    if info["profile"] != "release":
        problems.append(f"a {info['profile']} build, not a release build")
    compiled_avx = AVX_FEATURES & set(info["target_features"].split(","))
    if compiled_avx:
        problems.append(f"compiled with {sorted(compiled_avx)}: not portable")
    if argv and info["simd_level"] != argv[0]:
        problems.append(f"SIMD level {info['simd_level']}, expected {argv[0]}")
    if argv and argv[0] == "portable":
        if info["hard_engine"] != "slots":
            problems.append(f"hard engine {info['hard_engine']} on a CPU without AVX2")
        problems += hard_circuit_problems()
    for problem in problems:
        print(f"error: {problem}", file=sys.stderr)
    return 1 if problems else 0


def hard_circuit_problems() -> list[str]:
    """The hard circuit of a random model on the engine in use against the float rollout."""
    import numpy as np

    model = logicars.Model(logicars.get_preset("checkerboard").spec, seed=0)
    rng = np.random.default_rng(0)
    params = {k: rng.normal(0, 1, v.shape).astype(np.float32) for k, v in model.params().items()}
    model.set_params(params)
    x = (rng.random((1, 16, 16, 8)) < 0.5).astype(np.float32)
    if not np.array_equal(model.simulate(x, 3), model.rollout(x, 3, hard=True)):
        return ["simulate differs from the float hard rollout"]
    return []


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
