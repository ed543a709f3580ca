"""The package's layers run one way: every module has a layer (`LAYERS`) and imports
only from its own layer or lower ones; no import cycle among logicars modules; no
library module imports the command line (`logicars.cli`), which sits on top; and no
source file grows past `MAX_SOURCE_LINES` (a module that long does several jobs: split it).

Imports are read with `ast` from every module, at module level and inside functions,
relative and absolute; imports under `if TYPE_CHECKING:` are left out (annotations
only, never executed)."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

PACKAGE_DIR = Path(__file__).resolve().parent.parent / "python" / "logicars"


def module_name(path: Path) -> str:
    parts = ["logicars", *path.relative_to(PACKAGE_DIR).with_suffix("").parts]
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def package_modules() -> dict[str, Path]:
    """Every module by dotted name; `_core` (the compiled extension) by its stub."""
    found = {module_name(p): p for p in sorted(PACKAGE_DIR.rglob("*.pyi"))}
    found.update({module_name(p): p for p in sorted(PACKAGE_DIR.rglob("*.py"))})
    return found


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _runtime_imports(tree: ast.AST) -> list[ast.Import | ast.ImportFrom]:
    found: list[ast.Import | ast.ImportFrom] = []

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            for child in node.orelse:
                visit(child)
            return
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            found.append(node)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(tree)
    return found


def imported_modules(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """The logicars modules that `name` imports: `from .a import b` counts `a` (and
    `a.b` when that is a module), `from . import x` counts the submodule `x` or else
    the package itself."""
    is_package = path.name == "__init__.py"
    package = name if is_package else name.rpartition(".")[0]
    targets: set[str] = set()
    for node in _runtime_imports(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            bases = [alias.name for alias in node.names]
            for base in bases:
                # `import logicars.a.b` runs a.b; the parent packages are already loading
                if base in modules:
                    targets.add(base)
            continue
        if node.level:
            anchor = package.split(".")
            anchor = anchor[: len(anchor) - (node.level - 1)]
            base = ".".join(anchor + ([node.module] if node.module else []))
        else:
            base = node.module or ""
        if not base.startswith("logicars"):
            continue
        for alias in node.names:
            sub = f"{base}.{alias.name}"
            if sub in modules:
                targets.add(sub)
            elif base in modules:
                targets.add(base)
    targets.discard(name)
    return targets


def import_graph() -> dict[str, set[str]]:
    modules = package_modules()
    return {name: imported_modules(name, path, modules) for name, path in modules.items()}


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import cycle as a path `[a, b, ..., a]`, or None."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return path[path.index(nxt) :] + [nxt]
            if nxt not in state:
                cycle = visit(nxt)
                if cycle:
                    return cycle
        path.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state:
            cycle = visit(node)
            if cycle:
                return cycle
    return None


# The layers, lowest first: a module may import from its own layer and the ones below it,
# never from one above. The target order (errors, spec, model, io, tasks, presets,
# then evaluate/training/analysis/circuit, then the CLI) is kept where the code allows;
# the code put three things elsewhere:
# - tasks and presets are data (what an experiment is, a spec and a task) and import no
#   model, while everything that runs or records an experiment holds a Preset (the run
#   state, run directories, evaluate), so they sit below the model;
# - the circuit's presentations (export, the interactive page, plots, Jupyter HTML) take
#   a model without importing it, and `Model.export/netlist/prune_report/_repr_html_`
#   call them; the page reads a preset's task for its start states;
# - the checkpoint format sits with the model (`Model.save`/`Model.load`).
LAYERS: list[tuple[str, tuple[str, ...]]] = [
    (
        "base",
        (
            "_core",
            "files",
            "markup",
            "progress",
            "runlock",
            "tensorboard_log",
            "callbacks",
            "draws",
            "outcome",
            "circuit",  # the packages circuit/ and viz/ import nothing themselves
            "viz",
        ),
    ),
    ("errors", ("errors",)),
    ("spec", ("spec",)),
    (
        "tasks",
        (
            "tasks.data",
            "tasks.base",
            "tasks.builtin",
            "tasks.recording",
            "tasks.kinds",
            "tasks",
            "datasets",
            "recorded",
            "automata",
            "growth",
        ),
    ),
    # TrainConfig: a Preset holds one; its growth settings name the growth schedules
    ("training settings", ("training.constraints", "training.config")),
    ("presets", ("presets",)),
    (
        "circuit presentation",
        ("circuit.export", "viz.page", "viz.plots", "viz.render", "viz.analysis"),
    ),
    ("model", ("checkpoint", "npz", "arguments", "model")),
    ("runs (io)", ("runstate", "runs", "runtime")),
    ("checks", ("circuit.evaluate", "circuit.repair", "circuit.simulate", "pretrained")),
    (
        "training and analysis",
        (
            "training",
            "training.interrupts",
            "training.loop",
            "training.policies",
            "training.pool",
            "training.rundir",
            "training.summary",
            "train",
            "sweep",
            "sweep.grid",
            "sweep.points",
            "sweep.reporting",
            "sweep.executors",
            "sweep.driver",
            "bench",
            "hard_bench",
            "circuit.analyze",
            "viz.display",
            "loggers",
            "records",
        ),
    ),
    ("package", ("",)),  # logicars/__init__.py: the public names
    ("cli", ("cli", "__main__")),  # the cli package and every module in it
]


def layer_rank(name: str) -> int | None:
    """The index in `LAYERS` of module `name` (a `logicars.cli.*` module: the cli's)."""
    short = name.removeprefix("logicars").removeprefix(".")
    if short.startswith("cli."):
        short = "cli"
    return next((i for i, (_, members) in enumerate(LAYERS) if short in members), None)


def upward_imports(graph: dict[str, set[str]], rank: dict[str, int]) -> list[str]:
    """Every import of a module from a higher layer than its own."""
    return sorted(
        f"{name} ({LAYERS[rank[name]][0]}) imports {target} ({LAYERS[rank[target]][0]})"
        for name, targets in graph.items()
        for target in targets
        if rank[target] > rank[name]
    )


def test_the_graph_sees_relative_absolute_and_function_level_imports() -> None:
    graph = import_graph()
    assert "logicars.model" in graph["logicars.train"]  # from .model import ... (top level)
    assert "logicars._core" in graph["logicars.model"]  # from . import _core
    assert "logicars.viz.render" in graph["logicars.model"]  # inside a method
    assert "logicars.viz.plots" not in graph["logicars.model"]
    assert "logicars.cli.train" in graph["logicars.cli.main"]
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None


def test_no_import_cycle_among_logicars_modules() -> None:
    cycle = find_cycle(import_graph())
    assert cycle is None, "import cycle: " + " -> ".join(cycle or [])


def test_no_library_module_imports_the_cli() -> None:
    offenders = sorted(
        f"{name} imports {target}"
        for name, targets in import_graph().items()
        if not (name == "logicars.cli" or name.startswith("logicars.cli."))
        and name != "logicars.__main__"
        for target in targets
        if target == "logicars.cli" or target.startswith("logicars.cli.")
    )
    assert offenders == []


def test_import_logicars_loads_neither_argparse_nor_pil() -> None:
    code = "import sys, logicars; print(sorted(m for m in ('argparse', 'PIL') if m in sys.modules))"
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert out.strip() == "[]"


def test_every_module_has_a_layer() -> None:
    unplaced = sorted(name for name in import_graph() if layer_rank(name) is None)
    assert unplaced == [], f"add these modules to a layer in LAYERS: {unplaced}"
    listed = [m for _, members in LAYERS for m in members]
    assert len(listed) == len(set(listed))


def test_no_module_imports_from_a_higher_layer() -> None:
    graph = import_graph()
    rank = {name: layer_rank(name) for name in graph}
    assert all(r is not None for r in rank.values())
    assert upward_imports(graph, rank) == []  # type: ignore[arg-type]


def test_the_layer_check_sees_an_upward_import() -> None:
    graph = {"logicars.spec": {"logicars.model"}, "logicars.model": {"logicars.spec"}}
    rank = {name: layer_rank(name) or 0 for name in graph}
    assert rank["logicars.model"] > rank["logicars.spec"]
    assert upward_imports(graph, rank) == ["logicars.spec (spec) imports logicars.model (model)"]
    assert layer_rank("logicars.cli.train") == layer_rank("logicars.cli") == len(LAYERS) - 1
    assert layer_rank("logicars") == len(LAYERS) - 2


# A source file longer than this does several jobs (issue 44): split it into a package.
MAX_SOURCE_LINES = 700


def long_source_files(package_dir: Path = PACKAGE_DIR) -> list[str]:
    """Every Python source file (`.py`, `.pyi`) under the package over `MAX_SOURCE_LINES`
    lines, with its count."""
    found = []
    for path in sorted([*package_dir.rglob("*.py"), *package_dir.rglob("*.pyi")]):
        lines = len(path.read_text().splitlines())
        if lines > MAX_SOURCE_LINES:
            found.append(f"{path.relative_to(package_dir)}: {lines} lines")
    return found


def test_no_source_file_is_over_700_lines() -> None:
    assert long_source_files() == [], f"split these (over {MAX_SOURCE_LINES} lines)"


def test_the_size_check_sees_a_long_file(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "long.py").write_text("x = 1\n" * (MAX_SOURCE_LINES + 1))
    (tmp_path / "short.py").write_text("x = 1\n" * MAX_SOURCE_LINES)
    assert long_source_files(tmp_path) == [f"sub/long.py: {MAX_SOURCE_LINES + 1} lines"]
