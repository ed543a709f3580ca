"""Train a preset over several seeds and record which reach hard loss 0, and when.

    python scripts/seed_sweep.py checkerboard --seeds 0-9 [--epochs N] [--root runs/sweep]

Each seed trains into `<root>/<preset>/seed-<s>` (a normal run directory); a seed whose
run directory already has a `summary.json` for the same epochs is not trained again. One
JSON line per seed is printed, and `<root>/<preset>/sweep.json` collects them all.
Training uses one engine thread per run (results do not depend on the thread count), so
two sweeps can share a 2-core machine.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import logicars
from logicars.evaluate import evaluate


def parse_seeds(text: str) -> list[int]:
    """`"0-4,7"` -> `[0, 1, 2, 3, 4, 7]`."""
    seeds: list[int] = []
    for part in text.split(","):
        lo, _, hi = part.partition("-")
        seeds.extend(range(int(lo), int(hi or lo) + 1))
    return seeds


def sweep(preset: str, seeds: list[int], epochs: int | None, root: Path) -> list[dict]:
    rows = []
    for seed in seeds:
        run_dir = root / preset / f"seed-{seed}"
        summary_path = run_dir / "summary.json"
        target = epochs or logicars.get_preset(preset).epochs
        summary = json.loads(summary_path.read_text()) if summary_path.exists() else None
        if summary is None or summary["epochs"] != target:
            if run_dir.exists():
                for f in run_dir.iterdir():
                    f.unlink()
            summary = logicars.train(
                preset,
                epochs=target,
                seed=seed,
                out=run_dir,
                threads=1,
                quiet=True,
                checkpoint_every=None,
            ).summary
        keys = ("seed", "epochs", "final_hard_loss", "first_epoch_hard_zero", "wall_seconds")
        row = {"preset": preset, **{key: summary[key] for key in keys}}
        row["active_gates"] = summary["active_gates"]
        model = logicars.Model.load(run_dir / "model.safetensors")
        row["hard_eval"] = evaluate(model, logicars.get_preset(preset))
        print(json.dumps(row), flush=True)
        rows.append(row)
    every = {r["seed"]: r for r in _read(root / preset / "sweep.json")}
    every.update({r["seed"]: r for r in rows})
    (root / preset / "sweep.json").write_text(
        json.dumps([every[s] for s in sorted(every)], indent=1) + "\n"
    )
    return rows


def _read(path: Path) -> list[dict]:
    return json.loads(path.read_text()) if path.exists() else []


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("preset")
    p.add_argument("--seeds", default="0-4", help="e.g. 0-4 or 0,2,5 (default 0-4)")
    p.add_argument("--epochs", type=int, help="default: the preset's")
    p.add_argument("--root", type=Path, default=Path("runs/sweep"))
    args = p.parse_args()
    sweep(args.preset, parse_seeds(args.seeds), args.epochs, args.root)


if __name__ == "__main__":
    main()
