"""Text that enters another language, escaped in one place: HTML (`escape_html`), JSON
inside a `<script>` element (`script_json`), templates filled in one pass
(`fill_template`) and matplotlib text (`plot_text`). A name, a description or a field of
a shared run directory's `summary.json` can then never close a tag, open a comment, be
read as another placeholder or as mathtext. Imports nothing of the package."""

from __future__ import annotations

import html
import json
import re
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any


def escape_html(value: object) -> str:
    """`value` as HTML text, safe in an element and in a quoted attribute: the one
    escaping helper of every page and view the package writes."""
    return html.escape(str(value), quote=True)


# Characters that end or confuse a <script> element's text (`</script>`, `<!--`) or a
# JavaScript string (U+2028, U+2029 before ES2019), written as JSON escapes instead.
_SCRIPT_UNSAFE = {
    "<": "\\u003c",
    ">": "\\u003e",
    "&": "\\u0026",
    "\u2028": "\\u2028",
    "\u2029": "\\u2029",
}
_SCRIPT_UNSAFE_RE = re.compile("[<>&\u2028\u2029]")


def script_json(value: Any) -> str:
    """`value` as JSON that is safe inside a `<script>` element: `<`, `>`, `&`, U+2028
    and U+2029 escaped (they can only occur inside JSON strings, where the escape reads
    back as the same character)."""
    text = json.dumps(value, separators=(",", ":"))
    return _SCRIPT_UNSAFE_RE.sub(lambda m: _SCRIPT_UNSAFE[m.group(0)], text)


def fill_template(template: str, values: Mapping[str, str]) -> str:
    """`template` with each placeholder (a key of `values`) replaced by its value, in one
    pass: a value that holds another placeholder's text stays as it is."""
    if not values:
        return template
    keys = sorted(values, key=len, reverse=True)  # the longest placeholder first
    pattern = re.compile("|".join(re.escape(k) for k in keys))
    return pattern.sub(lambda m: values[m.group(0)], template)


def plot_text(value: object) -> str:
    """`value` as literal matplotlib text: `$` escaped, so that a name such as
    `m$\\bogus{$` is drawn as it is instead of failing as mathtext."""
    return str(value).replace("$", r"\$")


@contextmanager
def literal_plot_text() -> Iterator[None]:
    """Within: every matplotlib text made is drawn literally, never parsed as mathtext
    (for figures whose labels hold names deep inside, such as `analyze`'s)."""
    import matplotlib

    with matplotlib.rc_context({"text.parse_math": False}):
        yield
