"""Pictures and pages of circuits, runs and sweeps:

- `plots`: the loss curve (PNG) and grids over time (animated GIFs);
- `page`: the interactive page of a circuit (`export --format html`, `logicars view`),
  its template `page.html` beside it;
- `render`: the HTML of models, runs and sweeps for Jupyter (their `_repr_html_`);
- `display`: `show`, `live`, `Animation`, `LivePage` (exported by `logicars`).

This file imports nothing, so that `Model` can import `render` without an import cycle.
"""
