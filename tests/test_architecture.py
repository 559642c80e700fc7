"""The tree reads as the architecture: imports point one way, modules stay small.

Every import among ``src/urna`` modules counts, including those inside functions and names
read from a package (``from urna import x``). Layers, lowest first: a module may import its
own package or any lower layer, never a higher one, and never a peer (another package of
its own layer): build and search share only what lies below both.
"""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parent.parent / "src" / "urna"
LAYERS = [
    {"errors", "version", "native"},  # native: the load order of native libraries
    {"format"},
    {"index", "embed", "ingest"},
    {"search", "build"},  # peers: the fusion recipe, the text table and the chunk store lie below
    {"library", "evaluate"},
    {"server", "integrations"},
    {"cli"},  # `urna serve` starts the server; the server never imports the CLI
    {"__init__", "__main__"},
]
MAX_MODULE_LINES = 400
MAX_CLASS_LINES = 300
MAX_FUNCTION_LINES = 100


def _modules() -> dict[str, ast.Module]:
    out = {}
    for path in sorted(SRC.rglob("*.py")):
        parts = path.relative_to(SRC.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        out[name] = ast.parse(path.read_text(), str(path))
    return out


def _imports(name: str, tree: ast.Module, known: set[str]) -> set[str]:
    found = set()
    package = name if name in known and _is_package(name) else name.rpartition(".")[0]
    for node in ast.walk(tree):
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                up = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*up, base] if base else up)
            # A name that is not a module is read from ``base``: an edge to it, even when it
            # is an ancestor (``from urna import __version__`` runs the package root).
            reads = any(f"{base}.{a.name}" not in known for a in node.names)
            if reads and base in known and base.startswith("urna") and base != name:
                found.add(base)
            targets = [base] + [f"{base}.{a.name}" for a in node.names]
        for target in targets:
            while target and target not in known:
                target = target.rpartition(".")[0]
            # A module's own ancestors are already importing when it runs: not an edge.
            if target and target.startswith("urna") and not _is_ancestor(target, name):
                found.add(target)
    return found


def _is_ancestor(target: str, name: str) -> bool:
    return target == name or name.startswith(target + ".")


def _is_package(name: str) -> bool:
    return (SRC.parent / Path(*name.split(".")) / "__init__.py").exists()


def _layer(module: str) -> int:
    parts = module.split(".")
    top = parts[1] if len(parts) > 1 else "__init__"
    return next(i for i, layer in enumerate(LAYERS) if top in layer)


def _graph() -> dict[str, set[str]]:
    modules = _modules()
    known = set(modules)
    return {name: _imports(name, tree, known) for name, tree in modules.items()}


def find_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    state: dict[str, int] = {}
    cycles: list[list[str]] = []

    def visit(node: str, stack: list[str]) -> None:
        state[node] = 1
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                cycles.append([*stack[stack.index(nxt) :], nxt])
            elif nxt not in state:
                visit(nxt, [*stack, nxt])
        state[node] = 2

    for node in sorted(graph):
        if node not in state:
            visit(node, [node])
    return cycles


def test_no_import_cycles() -> None:
    assert not find_cycles(_graph())


def test_the_cycle_check_finds_a_planted_cycle() -> None:
    planted = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert find_cycles(planted) == [["a", "b", "c", "a"]]
    assert find_cycles({"a": {"b"}, "b": set()}) == []


def test_imports_point_down() -> None:
    """Never up, never sideways to a peer package (build and search are peers)."""
    upward = [
        f"{a} -> {b}"
        for a, targets in _graph().items()
        for b in targets
        if _layer(b) >= _layer(a) and a.split(".")[:2] != b.split(".")[:2]
    ]
    assert not upward, upward


def test_the_graph_sees_names_read_from_the_package_root() -> None:
    """``from urna import x`` where x is not a module is an edge to the package root."""
    tree = ast.parse("from urna import __version__\nfrom urna import library\n")
    known = {"urna", "urna.library", "urna.build.writer"}
    assert _imports("urna.build.writer", tree, known) == {"urna", "urna.library"}


def test_modules_classes_and_functions_stay_small() -> None:
    big = []
    for path in sorted(SRC.rglob("*.py")):
        lines = path.read_text().count("\n")
        if lines > MAX_MODULE_LINES:
            big.append(f"{path.name}: {lines} lines")
        for node in ast.walk(ast.parse(path.read_text())):
            size = (
                (node.end_lineno or node.lineno) - node.lineno + 1 if hasattr(node, "lineno") else 0
            )
            if isinstance(node, ast.ClassDef) and size > MAX_CLASS_LINES:
                big.append(f"{path.name}: class {node.name} {size} lines")
            if (
                isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
                and size > MAX_FUNCTION_LINES
            ):
                big.append(f"{path.name}: {node.name}() {size} lines")
    assert not big, big


def test_the_graph_sees_the_package_roots_imports() -> None:
    """The graph is not vacuous: the package root imports its submodules."""
    assert "urna.search.corpus" in _graph()["urna"]


# --- the search surface is declared once ---------------------------------------------------

FILTER_PARTS = {"source", "section", "where"}
# What a Query is beyond its text, vector and k (search/request.py).
QUERY_PARTS = FILTER_PARTS | {
    "mode", "fusion", "candidates", "ef", "hops", "space", "expect_model_hash", "model_path",
}  # fmt: skip
# Where the query's parameters are declared: the Query value, the filter it builds, and the
# public methods of Corpus and Collection (written once for both).
CORE = {"search/request.py", "search/filters.py", "search/api.py"}
# Wire schemas a protocol reads off a signature: the MCP search tool (agents see its
# parameters flat), and the LlamaIndex retriever's constructor (that framework's settings
# are keyword arguments, as the LangChain retriever's are fields); each hands them to
# query_from.
WIRE = {("server/mcp.py", "search"), ("integrations/llama_index.py", "__init__")}


def surface_violations(root: Path) -> list[str]:
    """Functions outside the core that list a query's parameters one by one: two or more of
    its filter parts, or three or more of its parts."""
    found = []
    for path in sorted(root.rglob("*.py")):
        name = path.relative_to(root).as_posix()
        if name in CORE:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            if (name, node.name) in WIRE:
                continue
            a = node.args
            params = {x.arg for x in a.posonlyargs + a.args + a.kwonlyargs}
            if len(params & FILTER_PARTS) >= 2 or len(params & QUERY_PARTS) >= 3:
                found.append(f"{name}: {node.name}({', '.join(sorted(params & QUERY_PARTS))})")
    return found


def test_the_search_surface_is_declared_once() -> None:
    assert not surface_violations(SRC)


def test_the_surface_check_sees_a_planted_violation(tmp_path: Path) -> None:
    (tmp_path / "search").mkdir()
    (tmp_path / "search" / "api.py").write_text("def search(source, section, where): ...\n")
    (tmp_path / "cli.py").write_text(
        "def search_text(file, text, k, source=None, section=None):\n    ...\n"
        "def fine(file, kept):\n    ...\n"
    )
    (tmp_path / "shard.py").write_text("def graph_top(q, k, hops, ef, mode, kept): ...\n")
    assert surface_violations(tmp_path) == [
        "cli.py: search_text(section, source)",
        "shard.py: graph_top(ef, hops, mode)",
    ]
