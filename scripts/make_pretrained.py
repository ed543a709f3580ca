"""Train the five presets on their defaults and ship their hard circuits with the package
(`python/logicars/data/pretrained/NAME.npz`, read by `logicars.pretrained`).

    python scripts/make_pretrained.py                 # train every preset, one at a time
    python scripts/make_pretrained.py lizard          # only the lizard
    python scripts/make_pretrained.py --from lizard=runs/lizard-0  # an existing run

Each run is `python -m logicars train NAME` on the preset's defaults (one engine thread,
so that the result does not depend on the machine's cores; it does not anyway, but the
host is shared). A circuit is written only when it passes the preset's checks
(`evaluate`'s `passed` on the validation and confirmation draws of the held-out check: a
persisting preset's circuit must hold its target too, a regrowing one regrow it), as
tests/test_pretrained.py checks again. Regenerate after changing a preset's model or
training.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

from logicars.circuit.evaluate import evaluate
from logicars.presets import PRESET_NAMES, get_preset
from logicars.pretrained import SHIP_CHECKS, _data_dir, pretrained, save_pretrained
from logicars.runs import load_run


def passes(model, preset) -> bool:  # type: ignore[no-untyped-def]
    for samples, seed in SHIP_CHECKS:
        r = evaluate(model, preset, samples=samples, seed=seed)
        # `passed`, not just every input solved: a persisting preset's circuit must also
        # hold its target (a growing-only one passes through it at step T alone), and a
        # regrowing one's regrow it.
        if not r.passed:
            print(f"  {preset.name}: not passed, {r.solved}/{r.samples} solved (seed {seed})")
            return False
    return True


def train(name: str, out: Path) -> Path:
    cmd = [sys.executable, "-m", "logicars", "train", name, "--threads", "1", "--quiet"]
    subprocess.run([*cmd, "--out", str(out)], check=True)
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("presets", nargs="*", default=list(PRESET_NAMES))
    parser.add_argument(
        "--from", dest="runs", action="append", default=[], metavar="NAME=RUN_DIR",
        help="ship this finished run's circuit instead of training one",
    )  # fmt: skip
    args = parser.parse_args()
    given = dict(item.split("=", 1) for item in args.runs)
    names = [get_preset(n).name for n in (args.presets if not given else given)]
    _data_dir().mkdir(parents=True, exist_ok=True)
    failed = []
    with tempfile.TemporaryDirectory() as tmp:
        for name in names:
            run_dir = Path(given[name]) if name in given else train(name, Path(tmp) / name)
            run = load_run(run_dir)
            assert run.preset is not None
            if not passes(run.model, run.preset):
                failed.append(name)
                continue
            summary = run.summary or {}
            info = {
                k: summary.get(k)
                for k in ("seed", "epochs", "solved_epoch", "active_gates", "logicars")
                if k in summary
            }
            path = _data_dir() / f"{name}.npz"
            save_pretrained(run.model, name, path, info)
            shipped = pretrained(name)
            assert passes(shipped.model, shipped.preset), name
            print(f"{name}: wrote {path} ({path.stat().st_size} bytes)")
    if failed:
        print(f"not shipped (failed the checks; train another seed): {', '.join(failed)}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
