"""Hostile inputs to the readers and escapers every surface shares (issue 43): files that
are not regular files or are too big, JSON and TOML nested to break the parser, names
that would become `..`, images that decompress to gigabytes, tiles whose phases take
forever, text that would break a page or a plot title, environment variables the engine
would silently ignore. Each must end in a one-line `ValueError` (or a `logicars.errors`
exception) at once, never a hang, a traceback of another type, or a write elsewhere.

Property tests (Hypothesis) cover the escaping helpers and the JSON and TOML readers.
"""

from __future__ import annotations

import io
import json
import os
import re
import signal
import struct
import zlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from logicars import files
from logicars.errors import InvalidValueError
from logicars.markup import escape_html, fill_template, plot_text, script_json
from logicars.runtime import ENVIRONMENT, check_environment
from logicars.sweep import MAX_POINTS, expand_grid, parse_seeds, read_sweep_file
from logicars.sweep.executors import check_reachable
from logicars.tasks import MAX_TILE_CELLS, PatternTask, load_image, make_task, tile_bits

SECOND = 2.0  # every refusal comes within this (a FIFO or /dev/zero would hang forever)


@contextmanager
def deadline(seconds: float = SECOND) -> Iterator[None]:
    """Fails instead of hanging."""

    def fire(signum: int, frame: object) -> None:
        raise TimeoutError(f"took over {seconds} s (hung?)")

    old = signal.signal(signal.SIGALRM, fire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


def refused(call: Callable[[], object], *needles: str, exc: type = ValueError) -> str:
    """`call()` raises `exc` at once, in one line holding every needle."""
    with deadline(), pytest.raises(exc) as info:
        call()
    message = str(info.value)
    assert "\n" not in message, message
    for needle in needles:
        assert needle in message, f"{needle!r} not in {message!r}"
    return message


# ---- special files as inputs -------------------------------------------------------------


def fifo(tmp: Path, name: str) -> Path:
    path = tmp / name
    os.mkfifo(path)
    return path


def dev_zero(tmp: Path, name: str) -> Path:
    path = tmp / name
    path.symlink_to("/dev/zero")
    return path


def sparse(tmp: Path, name: str, size: int = 20 << 20) -> Path:
    path = tmp / name
    with open(path, "wb") as f:
        f.truncate(size)
    return path


def directory(tmp: Path, name: str) -> Path:
    path = tmp / name
    path.mkdir()
    return path


def not_utf8(tmp: Path, name: str) -> Path:
    path = tmp / name
    path.write_bytes(b'task = "\xff\xfe"\n')
    return path


SPECIAL = {
    "fifo": (fifo, "a FIFO"),
    "dev-zero": (dev_zero, "a character device"),
    "sparse-20MB": (sparse, "over the limit"),
    "directory": (directory, ""),
    "not-utf8": (not_utf8, "not UTF-8"),
}
READERS: dict[str, tuple[str, Callable[[Path], object]]] = {
    "experiment": ("e.toml", lambda p: files.read_toml(p, "experiment file")),
    "sweep-toml": ("s.toml", read_sweep_file),
    "sweep-yaml": ("s.yaml", read_sweep_file),
    "json": ("summary.json", lambda p: files.read_json(p, "summary")),
}


@pytest.mark.parametrize("reader", list(READERS))
@pytest.mark.parametrize("kind", list(SPECIAL))
def test_special_files_are_refused_unread(tmp_path: Path, reader: str, kind: str) -> None:
    name, read = READERS[reader]
    make, needle = SPECIAL[kind]
    if kind == "not-utf8" and reader == "json":
        needle = "UTF-8"
    path = make(tmp_path, name)
    refused(lambda: read(path), str(path), needle)


def test_missing_file_is_both_file_not_found_and_value_error(tmp_path: Path) -> None:
    message = refused(lambda: files.read_toml(tmp_path / "no.toml", "experiment file"), "no such")
    assert "no.toml" in message
    with pytest.raises(FileNotFoundError):
        files.read_json(tmp_path / "no.json", "summary")


def test_symlinks_inside_a_run_directory_are_not_followed(tmp_path: Path) -> None:
    secret = tmp_path / "secret.json"
    secret.write_text('{"token": "mine"}')
    link = tmp_path / "run" / "summary.json"
    link.parent.mkdir()
    link.symlink_to(secret)
    refused(lambda: files.read_json(link, "summary", follow=False), "symbolic link")
    assert files.read_json(link, "summary") == {"token": "mine"}  # a user's own input file


# ---- JSON and TOML of bounded depth -----------------------------------------------------


@pytest.mark.parametrize(
    "text",
    ["[" * 100_000, '{"a":' * 100_000 + "1" + "}" * 100_000, "[" * 65 + "]" * 65],
    ids=["lists-1e5", "objects-1e5", "lists-65"],
)
def test_deep_json_is_refused_before_parsing(text: str) -> None:
    refused(lambda: files.loads_json(text, "summary"), "nested deeper than 64")


def test_brackets_in_json_strings_do_not_count() -> None:
    text = json.dumps({"a": "[" * 1000, "b": '\\"[[[['})
    assert files.loads_json(text, "x") == json.loads(text)


@pytest.mark.parametrize(
    "text",
    [
        "a = " + "[" * 100_000 + "]" * 100_000,
        "a = " + "{b = " * 10_000 + "1" + "}" * 10_000,
        "a." * 100_000 + "b = 1",  # tomllib takes quadratic time in dotted keys
        "[" + "t." * 1000 + "u]\nx = 1",
    ],
    ids=["arrays", "inline-tables", "dotted-keys", "table-header"],
)
def test_deep_toml_is_refused_before_parsing(text: str) -> None:
    refused(lambda: files.loads_toml(text, "experiment file"), "nested deeper than 64")


def test_toml_strings_and_comments_hold_any_brackets_and_dots() -> None:
    text = (
        's = "' + "[." * 100 + "\"\nt = '" + "{." * 100 + "'\n# " + "." * 500 + "\n"
        'm = """\n' + "[[" * 100 + '\n"""\nx = 1.5\n'
    )
    assert files.loads_toml(text, "f")["x"] == 1.5


@settings(max_examples=150, deadline=None, derandomize=True)
@given(st.text(max_size=300))
def test_toml_reader_raises_only_value_error(text: str) -> None:
    try:
        result = files.loads_toml(text, "fuzz")
    except ValueError as e:
        assert "\n" not in str(e)
    else:
        assert isinstance(result, dict)


@settings(max_examples=150, deadline=None, derandomize=True)
@given(st.text(alphabet='[]{}"\\:,.0123456789aeflnrstu \n', max_size=300))
def test_json_reader_raises_only_value_error(text: str) -> None:
    try:
        files.loads_json(text, "fuzz")
    except ValueError as e:
        assert "\n" not in str(e)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=20,
)


@settings(max_examples=150, deadline=None, derandomize=True)
@given(json_values)
def test_json_reader_round_trips_what_json_writes(value: Any) -> None:
    assert files.loads_json(json.dumps(value), "x") == value


# ---- names that become paths --------------------------------------------------------------


@pytest.mark.parametrize(
    "name", ["", ".", "..", "a/b", "../x", "a\0b", "x" * 256, "é" * 200], ids=repr
)
def test_names_that_are_not_one_plain_component(name: str) -> None:
    refused(lambda: files.check_name(name, "sweep point name"), "sweep point name")


def test_plain_names_pass() -> None:
    for name in ("gol_seed=0", ".hidden", "a..b", "checkerboard_lr=0.03_seed=4"):
        assert files.check_name(name, "n") == name


@pytest.mark.parametrize("preset", ["..", "."])
def test_sweep_points_named_dot_or_dotdot_are_refused_before_the_disk(
    tmp_path: Path, preset: str
) -> None:
    refused(lambda: expand_grid({"preset": preset}), "not a plain file name")
    assert list(tmp_path.iterdir()) == []


# ---- seeds, grids and sweep files ---------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("0-1000000000", f"over {MAX_POINTS:,} seeds"),
        ("0-99999,0-99999", f"over {MAX_POINTS:,} seeds"),
        ("0-99999999999999999999", "2**64 - 1"),
        ("-5", "expected a list"),
        ("7-3", "not a range"),
        ("a-b", "expected a list"),
    ],
)
def test_seed_lists_are_checked_before_they_are_built(text: str, needle: str) -> None:
    refused(lambda: parse_seeds(text), needle)


def test_huge_grids_are_refused_unbuilt() -> None:
    refused(lambda: expand_grid({"preset": "gol", "seed": range(10**12)}), "over")
    grid = {"preset": "gol", "seed": range(1000), "lr": [0.01 * i for i in range(1, 1000)]}
    refused(lambda: expand_grid(grid), f"over {MAX_POINTS:,} points")


@pytest.mark.parametrize(
    ("name", "text", "needle"),
    [
        ("nested.toml", 'preset = "gol"\nlr = [[0.1]]\n', "flat list"),
        ("table.toml", 'preset = "gol"\n[lr]\na = 1\n', "flat list"),
        ("intkey.yaml", "preset: gol\n1: 2\n", "option names are strings"),
        ("nested.yaml", "preset: gol\nlr: [[0.1]]\n", "flat list"),
        (
            "laughs.yaml",
            "a: &a [x, x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a]\n"
            "c: &c [*b, *b, *b, *b, *b, *b, *b, *b]\npreset: gol\nlr: *c\n",
            "flat list",
        ),
        ("deep.yaml", "preset: gol\nlr: " + "[" * 5000 + "]" * 5000 + "\n", "s.yaml"[:0]),
        ("scalar.yaml", "42\n", "expected a table"),
    ],
)
def test_sweep_files_of_the_wrong_shape(tmp_path: Path, name: str, text: str, needle: str) -> None:
    path = tmp_path / name
    path.write_text(text)
    refused(lambda: read_sweep_file(path), name, needle)


@pytest.mark.parametrize(
    ("address", "needle"),
    [
        ("127.0.0.1:1", "cannot reach a Ray cluster at 127.0.0.1:1"),
        ("ray://127.0.0.1:1", "cannot reach"),
        ("nonsense", "expected HOST:PORT"),
        ("host:99999", "expected HOST:PORT"),
        (":6379", "expected HOST:PORT"),
    ],
)
def test_unreachable_ray_addresses_fail_at_once(address: str, needle: str) -> None:
    refused(lambda: check_reachable(address, timeout=1.0), needle)


# ---- images ---------------------------------------------------------------------------------


def png_header(width: int, height: int) -> bytes:
    """A PNG that claims `width` x `height` pixels and holds none (a bomb's header)."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        crc = zlib.crc32(kind + data)
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", crc)

    ihdr = struct.pack(">IIBBBBB", width, height, 8, 6, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IEND", b"")


def png(pixels: np.ndarray) -> bytes:
    from PIL import Image

    buf = io.BytesIO()
    Image.fromarray(pixels.astype(np.uint8)).save(buf, format="PNG")
    return buf.getvalue()


IMAGES: dict[str, tuple[Callable[[Path], Path], str]] = {
    "bomb-30000": (
        lambda t: _write(t / "bomb.png", png_header(30000, 30000)),
        "over the limit of 16,777,216 pixels",
    ),
    "bomb-2^31": (
        lambda t: _write(t / "huge.png", png_header(2**31 - 1, 2**31 - 1)),
        "over the limit",
    ),
    "tile-12000": (lambda t: _write(t / "t.png", png_header(12000, 12000)), "12000x12000 pixels"),
    "truncated": (
        lambda t: _write(t / "trunc.png", png(np.full((64, 64), 255))[:60]),
        "not a readable image",
    ),
    "text": (lambda t: _write(t / "text.png", b"hello, not a picture\n"), "not a readable image"),
    "empty": (lambda t: _write(t / "empty.png", b""), "not a readable image"),
    "fifo": (lambda t: fifo(t, "f.png"), "a FIFO"),
    "dev-zero": (lambda t: dev_zero(t, "z.png"), "a character device"),
    "directory": (lambda t: directory(t, "d.png"), "d.png"),
    "sparse-80MB": (lambda t: sparse(t, "s.png", 80 << 20), "over the limit"),
}


def _write(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    return path


@pytest.mark.parametrize("kind", list(IMAGES))
def test_hostile_images_end_in_one_line(tmp_path: Path, kind: str) -> None:
    make, needle = IMAGES[kind]
    path = make(tmp_path)
    refused(lambda: load_image(path), needle)
    for kind in ("pattern", "grow"):
        task = f"{kind}:{path}"
        refused(lambda task=task: make_task(task, height=8, width=8, channels=1), needle)


def test_a_large_tile_is_refused_before_its_phases(tmp_path: Path) -> None:
    """A 1000 x 1000 tile (a 1 KB file) would make every check try 10^6 phases."""
    path = _write(tmp_path / "tile.png", png(np.zeros((1000, 1000))))
    refused(lambda: tile_bits(path), "1000x1000 cells", f"{MAX_TILE_CELLS:,}")
    tile = np.ones((100, 100))
    refused(lambda: PatternTask(tile, channels=1, height=8, width=8), "100x100 cells")
    small = PatternTask(np.ones((64, 64)), channels=1, height=8, width=8)  # the cap itself
    assert len(small.accepted(np.zeros((1, 8, 8, 1), bool))) >= 1


def test_images_under_the_cap_still_load(tmp_path: Path) -> None:
    path = _write(tmp_path / "ok.png", png(np.kron(np.eye(2), np.ones((2, 2))) * 255))
    assert tile_bits(path).shape == (4, 4)


# ---- escaping -------------------------------------------------------------------------------

_SCRIPT_BREAKERS = ["</script>", "<!--", "<script", "\u2028", "\u2029", "]]>", "&"]


@settings(max_examples=300, deadline=None, derandomize=True)
@given(st.text())
def test_escape_html_leaves_no_markup(text: str) -> None:
    out = escape_html(text)
    assert not set(out) & set("<>\"'") and "&" not in out.replace("&amp;", "").replace(
        "&lt;", ""
    ).replace("&gt;", "").replace("&quot;", "").replace("&#x27;", "")
    import html

    assert html.unescape(out) == text


@settings(max_examples=300, deadline=None, derandomize=True)
@given(json_values)
def test_script_json_is_inert_in_a_script_and_reads_back(value: Any) -> None:
    out = script_json(value)
    assert not re.search("[<>&\u2028\u2029]", out)
    assert json.loads(out) == value


@settings(max_examples=200, deadline=None, derandomize=True)
@given(st.lists(st.sampled_from(_SCRIPT_BREAKERS + ["a", " ", "/*__KERNELS__*/"]), max_size=12))
def test_script_json_of_page_breakers(parts: list[str]) -> None:
    text = "".join(parts)
    out = script_json({"description": text})
    assert json.loads(out)["description"] == text
    assert "</" not in out and "<!--" not in out


@settings(max_examples=200, deadline=None, derandomize=True)
@given(
    st.dictionaries(
        st.sampled_from(["__A__", "__B__", "/*__C__*/"]),
        st.text(alphabet="_AB/*C x", max_size=12),
        min_size=1,
    ),
    st.lists(st.sampled_from(["__A__", "__B__", "/*__C__*/", "x", "_"]), max_size=10),
)
def test_fill_template_is_one_pass(values: dict[str, str], parts: list[str]) -> None:
    """Each placeholder is replaced by its value, and a value is never scanned again."""
    template = "\n".join(parts)
    expected = "\n".join(values.get(p, p) for p in parts)
    assert fill_template(template, values) == expected


@settings(max_examples=12, deadline=None, derandomize=True)
@given(st.text(alphabet="$\\{}^_ab", min_size=1, max_size=12))
def test_plot_titles_with_dollars_draw(title: str) -> None:
    from logicars.runstate import EpochMetrics
    from logicars.viz.plots import plot_losses

    buf = io.BytesIO()
    plot_losses([EpochMetrics(1, 1.0, 2.0, 0.1)], buf, title=title)
    assert buf.getvalue().startswith(b"\x89PNG")
    assert plot_text("a$b") == "a\\$b"


# ---- environment variables --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("LOGICARS_MAX_MEMORY_MB", "abc"),
        ("LOGICARS_MAX_MEMORY_MB", "-5"),
        ("LOGICARS_MAX_MEMORY_MB", "4G"),
        ("LOGICARS_MAX_MEMORY_MB", "1e3"),
        ("LOGICARS_MAX_MEMORY_MB", " 512"),
        ("LOGICARS_MAX_MEMORY_MB", "9" * 30),
        ("LOGICARS_MAX_MEMORY_MB", "٣"),  # a digit, but not one the engine parses
        ("LOGICARS_SIMD", "bogus"),
        ("LOGICARS_SIMD", "AVX2"),
        ("LOGICARS_HARD_ENGINE", "jit"),
        ("RAYON_NUM_THREADS", "many"),
        ("RAYON_NUM_THREADS", "-1"),
    ],
)
def test_environment_variables_are_validated(name: str, value: str) -> None:
    refused(
        lambda: check_environment({name: value}), name, ENVIRONMENT[name], exc=InvalidValueError
    )


def test_good_environment_passes() -> None:
    check_environment({})
    check_environment(
        {
            "LOGICARS_MAX_MEMORY_MB": "4096",
            "LOGICARS_SIMD": "portable",
            "LOGICARS_HARD_ENGINE": "slots",
            "RAYON_NUM_THREADS": "100000",  # clamped to 1024 by the engine, with a warning
        }
    )
    check_environment({"LOGICARS_SIMD": ""})  # empty: the default


def test_case_count() -> None:
    """Issue 43 asks for at least 100 hostile cases; this module and
    test_hostile_runs.py together hold them (counted there)."""


# ---- held out: start grids and a point's files shipped to Ray --------------------------------


def liar_npy(tmp: Path, name: str) -> Path:
    """A 100-byte .npy whose header claims a 10^12-cell grid (np.load allocated 931 GB)."""
    from numpy.lib import format as npy

    path = tmp / name
    with open(path, "wb") as f:
        header = {"descr": "|u1", "fortran_order": False, "shape": (1, 10**6, 10**6, 1)}
        npy.write_array_header_1_0(f, header)
        f.write(b"\x01" * 100)
    return path


@pytest.mark.parametrize(
    ("make", "needle"),
    [
        (liar_npy, "claims 1,000,000,000,000 bytes"),
        (fifo, "a FIFO"),
        (dev_zero, "a character device"),
        (lambda t, n: _write(t / n, b"\x93NUMPY\x01\x00garbage"), "not a readable"),
    ],
    ids=["header-lies", "fifo", "dev-zero", "garbage"],
)
def test_a_start_grid_file_is_checked_before_it_is_loaded(
    tmp_path: Path, make: Callable[[Path, str], Path], needle: str
) -> None:
    from logicars.circuit.simulate import read_start

    path = make(tmp_path, "start.npy")
    refused(lambda: read_start(path, 1), str(path), needle)


def test_a_points_planted_links_are_not_shipped(tmp_path: Path) -> None:
    from logicars.sweep.executors import _run_files

    point = tmp_path / "p"
    point.mkdir()
    (point / "point.json").write_text("{}")
    (point / "secret").symlink_to("/etc/hostname")
    (point / "zero").symlink_to("/dev/zero")
    os.mkfifo(point / "pipe")
    with deadline():
        assert set(_run_files(point) or {}) == {"point.json"}


def liar_npz(tmp: Path, name: str, member: str = "states") -> Path:
    """A 300-byte .npz whose member's header claims 10^12 bytes (a MemoryError)."""
    import zipfile

    from numpy.lib import format as npy

    buf = io.BytesIO()
    npy.write_array_header_1_0(buf, {"descr": "|u1", "fortran_order": False, "shape": (10**12,)})
    buf.write(b"\0" * 100)
    path = tmp / name
    with zipfile.ZipFile(path, "w") as z:
        z.writestr(f"{member}.npy", buf.getvalue())
    return path


def test_npz_members_are_checked_before_they_are_allocated(tmp_path: Path) -> None:
    from logicars.recorded import load_recording

    path = liar_npz(tmp_path, "rec.npz")
    refused(lambda: files.load_npz(path, "archive", 1 << 30), "claims 1,000,000,000,000")
    refused(lambda: load_recording(path), "not a readable .npz recording", "claims")
    buf = io.BytesIO()
    np.savez(buf, states=np.array([1, "a"], dtype=object))
    refused(lambda: files.load_npz(buf.getvalue(), "archive", 1 << 30), "Python objects")
    np.savez_compressed(tmp_path / "big.npz", states=np.zeros(1 << 20, np.uint8))
    refused(lambda: files.load_npz(tmp_path / "big.npz", "archive", 1 << 19), "over")
    assert files.load_npz(tmp_path / "big.npz", "archive", 1 << 21)["states"].size == 1 << 20


def test_a_parameter_file_with_a_lying_member_is_a_checkpoint_error(tmp_path: Path) -> None:
    import logicars
    from logicars.errors import CheckpointError

    path = liar_npz(tmp_path, "params.npz", member="perceive_logits_0")
    refused(lambda: logicars.Model.from_npz(path), "claims", exc=CheckpointError)
