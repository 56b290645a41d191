"""The shape of the package, read from its source: no import cycles, and arrows pointing down.

Every ``import`` statement counts, at module level or inside a function (a function-level import
still makes the two modules depend on each other). Imports under ``if TYPE_CHECKING:`` never
run: the cycle check leaves them out, the layer check (``LAYERS``) counts them too, since a
type from a higher layer is still knowledge of it.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from support.architecture import PACKAGE, import_graph

import lantern_git


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
    graph["lantern_git.model.record"].add("lantern_git.store")
    assert any({"lantern_git.model.record", "lantern_git.store"} <= set(c) for c in cycles(graph))


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
    # The web app is a front end too.
    front_ends = {
        m for m in graph if m.startswith(("lantern_git.cli", "lantern_git.mcp", "lantern_git.web"))
    }
    below = set(graph) - front_ends - {"lantern_git", "lantern_git.__main__"}
    for module in sorted(below):
        assert not (graph[module] & front_ends), f"{module} imports a front end"
    # The MCP server shares no code path with the CLI.
    mcp = {m for m in front_ends if m.startswith("lantern_git.mcp")}
    for module in sorted(mcp):
        assert not any(m.startswith("lantern_git.cli") for m in graph[module])
    # Nor does the web app: it calls the library, as they do.
    web = {m for m in front_ends if m.startswith("lantern_git.web")}
    assert web
    for module in sorted(web):
        assert not any(
            m.startswith(("lantern_git.cli", "lantern_git.mcp")) for m in graph[module]
        ), module


def test_the_model_imports_neither_git_nor_the_index_nor_the_store():
    graph = import_graph()
    model = (
        "errors",
        "core.fields",
        "model.record",
        "model.record_file",
        "model.query",
        "core.timespec",
        "model.record_merge",
        "model.source_merge",
    )
    upper = (
        "lantern_git.store",
        "lantern_git.workspace.transaction",
        "lantern_git.git",
        "lantern_git.index",
    )
    for name in model:
        reached = _reaches(graph, f"lantern_git.{name}")
        assert not {m for m in reached if m.startswith(upper)}, name


# The layers, lowest first. A module imports modules of its own layer and of the layers below,
# never of one above (at run time or for typing alike); in an "independent" layer, not even
# its own layer's other modules. A name stands for that module and the modules under it.
LAYERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    # Names, rules and settings every layer uses.
    ("foundation", ("errors", "core")),
    # Repositories, commits, the journal, remotes: no record or source layout, no record ids.
    ("git", ("git",)),
    # Records and sources: what they are, where their files live, how files and trees merge.
    ("model", ("model",)),
    # Derived, rebuildable state.
    ("indexes", ("index",)),
    # What both parts stand on: the folder, git, the lock, the indexes and the one write path
    # (which reads files only through the kinds the parts hand it).
    ("workspace", ("workspace",)),
    # The memory, evidence and entity parts (which never import each other: see below).
    ("parts", ("memory", "evidence", "entities")),
    ("operations", ("review", "sync")),
    # "": the package itself (lantern_git/__init__.py, which hands out Store).
    ("library", ("store", "")),
    ("surfaces", ("cli", "mcp", "web", "__main__")),
)
INDEPENDENT = {"operations"}

# Arrows that point up today, each with why it stays for now. A listed arrow that is gone
# fails the test too, so this list only shrinks.
EXCEPTIONS: dict[tuple[str, str], str] = {}


def layer_of(module: str, layers: tuple[tuple[str, tuple[str, ...]], ...] = LAYERS) -> int:
    """The position of ``module``'s layer in ``layers`` (ValueError when it has none)."""
    name = module.removeprefix("lantern_git").removeprefix(".")
    for position, (_, members) in enumerate(layers):
        for member in members:
            if name == member or (member and name.startswith(member + ".")):
                return position
    raise ValueError(f"{module} has no layer in LAYERS: add it where it belongs")


def upward_imports(
    graph: dict[str, set[str]],
    layers: tuple[tuple[str, tuple[str, ...]], ...] = LAYERS,
    independent: set[str] = INDEPENDENT,
) -> set[tuple[str, str]]:
    """Every (importer, imported) pair where the imported module's layer is higher, or a peer
    in an independent layer."""
    found = set()
    for module, imported in graph.items():
        mine = layer_of(module, layers)
        for other in imported:
            theirs = layer_of(other, layers)
            if theirs > mine or (theirs == mine and layers[mine][0] in independent):
                found.add((module, other))
    return found


def test_every_module_has_a_layer():
    for module in import_graph():
        layer_of(module)  # raises, naming the module


def test_arrows_point_down_through_the_layers():
    upward = upward_imports(import_graph(typing=True))
    assert sorted(upward - set(EXCEPTIONS)) == []
    assert sorted(set(EXCEPTIONS) - upward) == [], "an exception is no longer needed: remove it"


def test_the_layer_check_finds_planted_upward_imports():
    graph = import_graph(typing=True)
    # The git layer learning the record layout again, as git/repo.py once did.
    graph["lantern_git.git.repo"].add("lantern_git.model.record_file")
    # review borrowing sync's merge again: peers in an independent layer.
    graph["lantern_git.review"].add("lantern_git.sync")
    # An import only a type annotation needs counts as much as one that runs.
    graph["lantern_git.workspace.transaction"].add("lantern_git.store")
    assert {
        ("lantern_git.git.repo", "lantern_git.model.record_file"),
        ("lantern_git.review", "lantern_git.sync"),
        ("lantern_git.workspace.transaction", "lantern_git.store"),
    } <= upward_imports(graph)


def test_typing_only_imports_are_read():
    # model/review_refs.py imports GitRepo only under TYPE_CHECKING.
    assert "lantern_git.git.repo" not in import_graph()["lantern_git.model.review_refs"]
    assert "lantern_git.git.repo" in import_graph(typing=True)["lantern_git.model.review_refs"]


def test_typing_only_imports_make_no_cycle_either():
    graph = import_graph(typing=True)
    for importer, imported in EXCEPTIONS:
        graph[importer].discard(imported)
    assert cycles(graph) == []


# The parts of the "parts" layer, which stand on the workspace and never on each other: the
# Store hands the records the evidence's pinning (a ``Citations``), the evidence's verify the
# records it checks, and the entities the records' side of a rename (a ``Mentions``).
MEMORY_PART = "lantern_git.memory"
EVIDENCE_PART = "lantern_git.evidence"
ENTITY_PART = "lantern_git.entities"
PARTS = (MEMORY_PART, EVIDENCE_PART, ENTITY_PART)


def crossings(graph: dict[str, set[str]]) -> set[tuple[str, str]]:
    """Every (module, reached) where one part reaches another through its imports, directly
    or through any module between."""
    members = {part: {m for m in graph if m == part or m.startswith(part + ".")} for part in PARTS}
    found = set()
    for part, mine in members.items():
        theirs = set().union(*(others for name, others in members.items() if name != part))
        for module in sorted(mine):
            found |= {(module, other) for other in _reaches(graph, module) & theirs}
    return found


def test_the_memory_evidence_and_entity_parts_never_import_each_other():
    assert sorted(crossings(import_graph(typing=True))) == []


def test_the_parts_check_finds_a_planted_crossing():
    # A type-only import of the records by the evidence, as Sources once had of the Store.
    graph = import_graph(typing=True)
    graph["lantern_git.evidence.sources"].add("lantern_git.memory.records")
    assert ("lantern_git.evidence.sources", "lantern_git.memory.records") in crossings(graph)
    # One part reaching the other through a module of neither counts too.
    graph = import_graph(typing=True)
    graph["lantern_git.workspace.transaction"].add("lantern_git.evidence.sources")
    assert ("lantern_git.memory.records", "lantern_git.evidence.sources") in crossings(graph)
    # The entity part reaching the records' mentions, or the records the entities.
    graph = import_graph(typing=True)
    graph["lantern_git.entities.entities"].add("lantern_git.memory.mentions")
    assert ("lantern_git.entities.entities", "lantern_git.memory.mentions") in crossings(graph)
    graph = import_graph(typing=True)
    graph["lantern_git.memory.records"].add("lantern_git.entities.entities")
    assert ("lantern_git.memory.records", "lantern_git.entities.entities") in crossings(graph)


# Inside the web app, the same rule: what the pages stand on (the start-up config, the
# parameters, the guard, the library runner), the one wrapper that runs and renders a page,
# the pages' own modules, and only then the app that wires them. A page's data never knows
# the app, nor the wrapper the page it runs.
WEB_LAYERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("web basics", ("web.config", "web.params", "web.security", "web.runner")),
    ("page wrapper", ("web.pages",)),
    ("pages", ("web.views",)),
    ("app", ("web.app", "web")),
)


def web_arrows_up(graph: dict[str, set[str]]) -> set[tuple[str, str]]:
    """Upward imports between the web app's own modules."""
    web = {m for m in graph if m == "lantern_git.web" or m.startswith("lantern_git.web.")}
    inside = {m: graph[m] & web for m in web}
    return upward_imports(inside, WEB_LAYERS, set())


def test_the_web_app_s_modules_point_down_too():
    assert sorted(web_arrows_up(import_graph(typing=True))) == []


def test_the_web_layer_check_finds_a_planted_upward_import():
    graph = import_graph(typing=True)
    # The wrapper reaching for a page, a page's data for the app: both upward.
    graph["lantern_git.web.pages"].add("lantern_git.web.views.records")
    graph["lantern_git.web.views.source"].add("lantern_git.web.app")
    assert web_arrows_up(graph) == {
        ("lantern_git.web.pages", "lantern_git.web.views.records"),
        ("lantern_git.web.views.source", "lantern_git.web.app"),
    }


def test_a_module_without_a_layer_is_named():
    with pytest.raises(ValueError, match=r"lantern_git\.newcomer has no layer"):
        layer_of("lantern_git.newcomer")


def test_the_transaction_reads_no_file_format_itself():
    """The parts hand the transaction their file kinds; it imports their modules for types
    only."""
    formats = {f"lantern_git.model.{m}" for m in ("record", "record_file", "source", "source_file")}
    assert not import_graph()["lantern_git.workspace.transaction"] & formats


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


def test_every_public_name_of_the_package_imports():
    """``from lantern_git import Record`` and the rest: each name in ``__all__`` is handed out
    on first use from the module that defines it (the package moves modules; this follows)."""
    for name in lantern_git.__all__:
        value = getattr(lantern_git, name)
        if isinstance(value, type):
            assert value.__name__ == name
