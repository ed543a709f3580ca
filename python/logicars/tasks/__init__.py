"""What an experiment asks of a cellular automaton: one `Task` object.

A task owns the experiment's side of a run: the grid's channels and which of them the
loss reads, the CA steps, the boundary (periodic or zero-padded), synchronous or
asynchronous updates (fire rate), the training grid and batch; and the data:

- `start(rng, batch, h, w)`: start grids `(batch, h, w, C)` float32 0/1;
- `target(x)`: what the CA should reach from start grids `x` after the task's steps, on
  the loss channels `(B, H, W, L)` float32 (None where the task has no target on that
  grid, e.g. a fixed image on another size);
- `sample(rng)`: one training batch `(x, y)`, y the target on the loss channels of a
  zero grid;
- `holdout(samples, seed)`: the inputs of the held-out check and their targets;
- `accepted(target)`: the grids that count as right (the target; for a periodic
  pattern every phase of it), the one scoring rule `wrong`, `solved` and `cell_error`
  apply for training, `evaluate`, `simulate` and `analyze`.

Three kinds cover the paper's experiments and a user's own, each named by a string
(`make_task`): `life:B3/S23` (a Life-like rule, trained on all 512 3x3 boards),
`pattern:...` (self-organise from random bits into a periodic tile, in any phase) and
`grow:...` (grow a fixed image from a seed cell or zeros). Anything else subclasses
`Task` and implements `start` and `target`.

Pure numpy (Pillow only to read an image), so it works without the compiled engine. All
randomness comes from the Generator passed in.

The package's modules: `data` (Life rules and boards, the checkerboard, start grids,
images), `base` (`Task`), `builtin` (`LifeTask`, `PatternTask`, `GrowTask`), `recording`
(`RecordedTask`, the `data:` kind) and `kinds` (`make_task`, `task_from_dict`); their
public names are importable from `logicars.tasks`.
"""

from __future__ import annotations

from .base import (
    Task,
)
from .builtin import (
    GROWTH_MODES,
    GrowTask,
    LifeTask,
    PatternTask,
)
from .data import (
    CHECKERBOARD,
    COLORED_G,
    CONWAY,
    LIFE_BOARDS,
    LIZARD,
    MAX_IMAGE_BYTES,
    MAX_IMAGE_PIXELS,
    MAX_TILE_CELLS,
    PathLike,
    checkerboard_target,
    colored_g_target,
    colour_bits,
    image_bits,
    life_boards,
    life_step,
    lizard_target,
    load_image,
    normalise_rule,
    parse_rule,
    random_bits,
    seed_grid,
    silhouette,
    tile_bits,
)
from .kinds import (
    KINDS,
    is_builtin_kind,
    kind_data,
    make_task,
    split_kind,
    task_from_dict,
)
from .recording import (
    RecordedTask,
)

__all__ = [
    "CHECKERBOARD",
    "COLORED_G",
    "CONWAY",
    "GROWTH_MODES",
    "GrowTask",
    "KINDS",
    "LIFE_BOARDS",
    "LIZARD",
    "LifeTask",
    "MAX_IMAGE_BYTES",
    "MAX_IMAGE_PIXELS",
    "MAX_TILE_CELLS",
    "PathLike",
    "PatternTask",
    "RecordedTask",
    "Task",
    "checkerboard_target",
    "colored_g_target",
    "colour_bits",
    "image_bits",
    "is_builtin_kind",
    "kind_data",
    "life_boards",
    "life_step",
    "lizard_target",
    "load_image",
    "make_task",
    "normalise_rule",
    "parse_rule",
    "random_bits",
    "seed_grid",
    "silhouette",
    "split_kind",
    "task_from_dict",
    "tile_bits",
]
