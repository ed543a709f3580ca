"""Lists a built wheel or sdist and fails when it lacks a needed file or holds a stray one.

    python .ci/check_dist.py wheel dist/logicars-*.whl
    python .ci/check_dist.py sdist dist/logicars-*.tar.gz

The expected package files are the ones in `python/logicars` (build outputs such as
`__pycache__` and compiled extensions excluded), so a new module needs no edit here.
"""

from __future__ import annotations

import re
import sys
import tarfile
import zipfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PACKAGE = REPO / "python" / "logicars"
# What users need beyond the modules: type stubs, the PEP 561 marker, the dataset images,
# the presets' experiment files,
# the lizard's default start, the trained GoL circuit of `bench --hard` and the
# interactive page's template.
REQUIRED_PACKAGE_FILES = {
    "_core.pyi",
    "py.typed",
    "data/colored_g.png",
    "data/lizard.png",
    "data/lizard_notebook_seed23.npz",
    "data/gol_trained_ops.txt",
    # the presets are read from these at import
    "data/presets/gol.toml",
    "data/presets/checkerboard.toml",
    "data/presets/checkerboard-async.toml",
    "data/presets/lizard.toml",
    "data/presets/colored-g.toml",
    "viz/page.html",
}
# What a source build needs besides the package (sdist paths below its top folder).
REQUIRED_SDIST_FILES = {
    "Cargo.toml",
    "Cargo.lock",
    "pyproject.toml",
    "README.md",
    "PKG-INFO",
    "rust/core/Cargo.toml",
    "rust/core/src/lib.rs",
    "rust/py/Cargo.toml",
    "rust/py/src/lib.rs",
}
BUILD_OUTPUTS = {"target", ".venv", "runs", "dist", "__pycache__", ".git", ".pytest_cache"}
EXTENSION = re.compile(r"\.(so|pyd|dylib|dll)$")
# The one compiled file a wheel holds: the stable-ABI extension (one wheel for every
# CPython >= 3.9).
ABI3_EXTENSION = "_core.abi3.so"
# Metadata, plus the licence files and the software bill of materials (PEP 770) that
# maturin adds.
DIST_INFO_FILES = re.compile(
    r"(METADATA|WHEEL|RECORD|entry_points\.txt|licenses/.+|sboms/.+\.json)"
)


def package_files() -> set[str]:
    """Paths under python/logicars that a distribution must ship, relative to it."""
    files = set()
    for path in PACKAGE.rglob("*"):
        rel = path.relative_to(PACKAGE)
        if (
            path.is_file()
            and not BUILD_OUTPUTS & set(rel.parts)
            and not EXTENSION.search(path.name)
        ):
            files.add(rel.as_posix())
    missing = REQUIRED_PACKAGE_FILES - files
    if missing:
        sys.exit(f"python/logicars itself lacks {sorted(missing)}")
    return files


def check_wheel(path: Path) -> list[str]:
    problems = []
    if not re.fullmatch(r"logicars-[^-]+-cp39-abi3-[^-]+\.whl", path.name):
        problems.append(f"{path.name} is not an abi3 wheel for CPython >= 3.9 (cp39-abi3)")
    with zipfile.ZipFile(path) as wheel:
        names = [n for n in wheel.namelist() if not n.endswith("/")]
    expected = {f"logicars/{f}" for f in package_files()} | {f"logicars/{ABI3_EXTENSION}"}
    for name in names:
        top, _, rest = name.partition("/")
        in_dist_info = top.endswith(".dist-info") and DIST_INFO_FILES.fullmatch(rest)
        if name not in expected and not in_dist_info:
            problems.append(f"stray file in the wheel: {name}")
    problems += [f"the wheel lacks {name}" for name in sorted(expected - set(names))]
    print("\n".join(f"  {n}" for n in names))
    return problems


def check_sdist(path: Path) -> list[str]:
    with tarfile.open(path) as sdist:
        names = [m.name for m in sdist.getmembers() if m.isfile()]
    top = names[0].split("/")[0] if names else ""
    inside = {n[len(top) + 1 :] for n in names if n.startswith(top + "/")}
    problems = [f"the sdist lacks {n}" for n in sorted(REQUIRED_SDIST_FILES - inside)]
    expected = {f"python/logicars/{f}" for f in package_files()}
    problems += [f"the sdist lacks {n}" for n in sorted(expected - inside)]
    for name in sorted(inside):
        if BUILD_OUTPUTS & set(name.split("/")) or EXTENSION.search(name):
            problems.append(f"build output in the sdist: {name}")
    print("\n".join(f"  {n}" for n in names))
    return problems


def main(argv: list[str]) -> int:
    if len(argv) != 2 or argv[0] not in ("wheel", "sdist"):
        print(__doc__, file=sys.stderr)
        return 2
    kind, path = argv[0], Path(argv[1])
    print(f"{kind} {path.name} ({path.stat().st_size / 1e6:.1f} MB):")
    problems = check_wheel(path) if kind == "wheel" else check_sdist(path)
    for problem in problems:
        print(f"error: {problem}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
