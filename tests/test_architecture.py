"""The shape of the package, read from its source: no import cycles, and arrows pointing down.

Every ``import`` statement counts, at module level or inside a function (a function-level import
still makes the two modules depend on each other); only imports under ``if TYPE_CHECKING:``
are left out, since they never run.
"""

from __future__ import annotations

import ast
from pathlib import Path

import lantern_git

PACKAGE = Path(lantern_git.__file__).parent


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _modules() -> dict[str, Path]:
    return {_module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def _runtime_imports(tree: ast.AST) -> list[ast.Import | ast.ImportFrom]:
    found: list[ast.Import | ast.ImportFrom] = []

    def visit(node: ast.AST) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test):
                for other in child.orelse:
                    visit(other)
                continue
            if isinstance(child, (ast.Import, ast.ImportFrom)):
                found.append(child)
            visit(child)

    visit(tree)
    return found


def import_graph() -> dict[str, set[str]]:
    """module -> the lantern_git modules it imports (function-level imports included)."""
    modules = _modules()
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        is_package = path.name == "__init__.py"
        for node in _runtime_imports(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            else:
                if node.level:
                    base = name.split(".")
                    base = base if is_package else base[:-1]
                    base = base[: len(base) - (node.level - 1)]
                    source = ".".join(base + ([node.module] if node.module else []))
                else:
                    source = node.module or ""
                # "from package import submodule" depends on the submodule itself.
                targets = [
                    f"{source}.{alias.name}" if f"{source}.{alias.name}" in modules else source
                    for alias in node.names
                ]
            graph[name].update(t for t in targets if t in modules and t != name)
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def connect(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for other in sorted(graph[node]):
            if other not in index:
                connect(other)
                low[node] = min(low[node], low[other])
            elif other in on_stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            connect(node)
    return found


def test_the_package_has_no_import_cycles():
    assert cycles(import_graph()) == []


def test_the_cycle_finder_finds_a_planted_cycle():
    graph = import_graph()
    graph["lantern_git.record"].add("lantern_git.store")
    assert any({"lantern_git.record", "lantern_git.store"} <= set(c) for c in cycles(graph))


def test_function_level_imports_count():
    graph = import_graph()
    # store imports the sync module only inside Store.sync.
    assert "lantern_git.sync" in graph["lantern_git.store"]


def _reaches(graph: dict[str, set[str]], start: str) -> set[str]:
    seen: set[str] = set()
    todo = [start]
    while todo:
        for other in graph[todo.pop()]:
            if other not in seen:
                seen.add(other)
                todo.append(other)
    return seen


def test_arrows_point_down_from_the_front_ends():
    graph = import_graph()
    # render.py is the CLI's text and JSON output: a front end too; so is the web app.
    front_ends = {
        m
        for m in graph
        if m.startswith(
            ("lantern_git.cli", "lantern_git.mcp", "lantern_git.render", "lantern_git.web")
        )
    }
    below = set(graph) - front_ends - {"lantern_git", "lantern_git.__main__"}
    for module in sorted(below):
        assert not (graph[module] & front_ends), f"{module} imports a front end"
    # The MCP server shares no code path with the CLI.
    mcp = {m for m in front_ends if m.startswith("lantern_git.mcp")}
    for module in sorted(mcp):
        assert not any(
            m.startswith(("lantern_git.cli", "lantern_git.render")) for m in graph[module]
        )
    # Nor does the web app: it calls the library, as they do.
    web = {m for m in front_ends if m.startswith("lantern_git.web")}
    assert web
    for module in sorted(web):
        assert not any(
            m.startswith(("lantern_git.cli", "lantern_git.render", "lantern_git.mcp"))
            for m in graph[module]
        ), module


def test_the_model_imports_neither_git_nor_the_index_nor_the_store():
    graph = import_graph()
    model = (
        "errors",
        "fields",
        "record",
        "recordfile",
        "query",
        "timespec",
        "merge",
        "sourcemerge",
    )
    upper = ("lantern_git.store", "lantern_git.transaction", "lantern_git.git", "lantern_git.index")
    for name in model:
        reached = _reaches(graph, f"lantern_git.{name}")
        assert not {m for m in reached if m.startswith(upper)}, name


def _unannotated(path: Path) -> list[str]:
    """Public functions and methods of one module lacking a parameter or return annotation."""
    missing: list[str] = []

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.ClassDef) and not child.name.startswith("_"):
                visit(child, f"{prefix}{child.name}.")
            elif isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                name = child.name
                dunder = name.startswith("__") and name.endswith("__")
                if name.startswith("_") and not dunder:
                    continue
                arguments = child.args.posonlyargs + child.args.args + child.args.kwonlyargs
                bare = [a.arg for a in arguments if a.annotation is None]
                bare = [a for a in bare if a not in ("self", "cls")]
                for star in (child.args.vararg, child.args.kwarg):
                    if star is not None and star.annotation is None:
                        bare.append(star.arg)
                if child.returns is None and name != "__init__":
                    bare.append("return")
                if bare:
                    missing.append(f"{path.name}:{child.lineno} {prefix}{name} {bare}")

    visit(ast.parse(path.read_text()), "")
    return missing


def test_every_public_function_of_the_library_is_annotated():
    # The click command callbacks of lantern_git/cli/ are typed by their decorators.
    library = [
        p for p in sorted(PACKAGE.rglob("*.py")) if "cli" not in p.relative_to(PACKAGE).parts
    ]
    missing = [entry for path in library for entry in _unannotated(path)]
    assert missing == []


def test_a_list_in_a_clean_store_never_imports_pygit2(store_path):
    """Reads go through the index; git is opened only for a write or a repair (CLI start-up)."""
    import subprocess
    import sys

    code = (
        "import sys\n"
        "from lantern_git.store import Store\n"
        f"store = Store.open({str(store_path)!r})\n"
        "store.list(); store.get(store.list(status='all')[0].id)\n"
        "print('pygit2' in sys.modules)\n"
    )
    from lantern_git.store import Store

    Store.open(str(store_path)).add("something to list", kind="fact")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "False"
