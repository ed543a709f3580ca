"""Progress bars for long work (training, sweeps): one policy for every bar of the package.

- In Jupyter, tqdm's notebook widget (`tqdm.auto`; it needs `ipywidgets`, else tqdm
  warns once and falls back to the text bar).
- In a terminal, the usual text bar, redrawn in place.
- Anywhere else (stderr captured to a file or a pipe: CI logs, batch jobs, `nohup`), a
  text bar that redraws at most once every `LOG_INTERVAL_S` seconds, so a long run adds a
  few lines to its log instead of one every tenth of a second.
"""

from __future__ import annotations

import sys
from typing import Any

# Seconds between redraws when stderr is not a terminal.
LOG_INTERVAL_S = 60.0


def progress_bar(**kwargs: Any) -> Any:
    """A tqdm bar (notebook or text) with the policy above; `kwargs` go to tqdm and win
    over the defaults chosen here."""
    from tqdm.auto import tqdm
    from tqdm.autonotebook import tqdm as front_end  # imported (quietly) by tqdm.auto
    from tqdm.std import tqdm as text_tqdm

    file = kwargs.setdefault("file", sys.stderr)
    if front_end is text_tqdm:  # not in a notebook
        if _is_terminal(file):
            kwargs.setdefault("dynamic_ncols", True)
        else:
            kwargs.setdefault("mininterval", LOG_INTERVAL_S)
            kwargs.setdefault("ascii", True)
    return tqdm(**kwargs)


def _is_terminal(file: Any) -> bool:
    try:
        return bool(file.isatty())
    except (AttributeError, ValueError):  # no isatty, or a closed file
        return False
