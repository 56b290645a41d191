"""The docs (README.md, ARCHITECTURE.md and docs/) document what lantern offers: every CLI
command, and every MCP tool, is named in the hand-written text (as sqlite-utils' docs test checks
its commands); every relative link leads to a file and heading that exist; the README stays a
short entry point."""

from __future__ import annotations

import re
from pathlib import Path

import click

from lantern_git.cli import cli
from lantern_git.cli.support import LanternGroup
from lantern_git.mcp.server import ALL_TOOLS

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", ROOT / "ARCHITECTURE.md", *sorted((ROOT / "docs").glob("*.md"))]
README_MAX_LINES = 220


def hand_written(text: str) -> str:
    """``text`` without the parts cog generates (between ``]]]`` and ``[[[end]]]``), which name
    every command and tool by construction."""
    return re.sub(r"\]\]\].*?\[\[\[end\]\]\]", "", text, flags=re.DOTALL)


DOCS = "\n".join(hand_written(page.read_text()) for page in PAGES)
# With the parts cog generates: the MCP tool reference names each tool the server declared when
# the page was last generated.
DOCS_AND_REFERENCES = "\n".join(page.read_text() for page in PAGES)


def command_paths(group: click.Group, prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    paths = []
    # lantern's own group loads its lazy commands for this.
    every = group.every_command() if isinstance(group, LanternGroup) else group.commands
    for name, command in every.items():
        if command.hidden:
            continue
        paths.append((*prefix, name))
        if isinstance(command, click.Group):
            paths.extend(command_paths(command, (*prefix, name)))
    return paths


def test_every_cli_command_is_in_the_docs():
    missing = [
        " ".join(path) for path in command_paths(cli) if f"lantern {' '.join(path)}" not in DOCS
    ]
    assert missing == []


def test_every_mcp_tool_is_in_the_docs():
    assert [tool.name for tool in ALL_TOOLS if f"`{tool.name}`" not in DOCS_AND_REFERENCES] == []


def test_the_generated_references_are_up_to_date():
    """What CI's ``cog --check docs/cli.md docs/mcp.md`` checks, here too: a command, option or
    tool changed without ``cog -r docs/cli.md docs/mcp.md`` fails."""
    from cogapp import Cog

    pages = [str(ROOT / "docs" / "cli.md"), str(ROOT / "docs" / "mcp.md")]
    assert Cog().main(["cog", "--check", *pages]) == 0


def test_the_walk_finds_the_commands_it_checks():
    paths = {" ".join(path) for path in command_paths(cli)}
    assert {"memory add", "source search", "verify", "clone", "revert"} <= paths


# ---------------------------------------------------------------------------- links


def slug(heading: str) -> str:
    """The anchor GitHub gives a heading: lower case, markup and punctuation but ``-`` and ``_``
    dropped, each space a ``-``."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading.strip()).lower()
    return "".join(c for c in text if c.isalnum() or c in "-_ ").replace(" ", "-")


def anchors(path: Path) -> set[str]:
    """The anchors of ``path``'s headings, outside fenced code; a repeated heading gets ``-1``,
    ``-2``... as on GitHub."""
    found: set[str] = set()
    fenced = False
    for line in path.read_text().splitlines():
        if line.startswith("```"):
            fenced = not fenced
        elif not fenced and re.match(r"#{1,6} ", line):
            base = slug(line.lstrip("#"))
            name, n = base, 0
            while name in found:
                n += 1
                name = f"{base}-{n}"
            found.add(name)
    return found


def links(path: Path) -> list[str]:
    """The targets of ``path``'s markdown links, outside fenced and inline code."""
    text = re.sub(r"```.*?```", "", path.read_text(), flags=re.DOTALL)
    text = re.sub(r"`[^`\n]*`", "", text)
    return re.findall(r"\]\(([^)\s]+)\)", text)


def broken_links(pages: list[Path], root: Path = ROOT) -> list[str]:
    """``page: target (why)`` for each link of ``pages`` to a file or heading that does not
    exist."""
    broken = []
    for page in pages:
        for target in links(page):
            if re.match(r"[a-z]+:", target):  # https:, mailto:
                continue
            file_part, _, anchor = target.partition("#")
            dest = (page.parent / file_part).resolve() if file_part else page
            if not dest.exists():
                broken.append(f"{page.relative_to(root)}: {target} (no such file)")
            elif anchor and dest.suffix == ".md" and anchor not in anchors(dest):
                broken.append(f"{page.relative_to(root)}: {target} (no such heading)")
    return broken


def test_every_relative_link_leads_to_a_file_and_heading_that_exist():
    assert broken_links(PAGES) == []


def test_the_link_check_catches_a_missing_file_and_a_missing_heading(tmp_path):
    (tmp_path / "docs").mkdir()
    (tmp_path / "other.md").write_text("# Other\n\n## Same\n\n## Same\n")
    page = tmp_path / "docs" / "page.md"
    page.write_text(
        "# Title\n\n## Two `code` words\n\n[ok](#two-code-words) [ok](#title) [bad](#three-words)\n"
        "[gone](missing.md) `[code](missing.md)`\n"
        "[ok](../other.md#same-1) [bad](../other.md#same-2)\n"
        "[web](https://example.com/x.md)\n```\n[fenced](missing.md)\n```\n"
    )
    assert broken_links([page], root=tmp_path) == [
        "docs/page.md: #three-words (no such heading)",
        "docs/page.md: missing.md (no such file)",
        "docs/page.md: ../other.md#same-2 (no such heading)",
    ]


def test_every_docs_page_is_linked_from_the_readme_and_the_index():
    pages = {f"docs/{page.name}" for page in (ROOT / "docs").glob("*.md")}
    from_readme = {t.partition("#")[0] for t in links(ROOT / "README.md")}
    from_index = {f"docs/{t.partition('#')[0]}" for t in links(ROOT / "docs" / "index.md")}
    assert sorted(pages - from_readme) == []
    assert sorted(pages - from_index - {"docs/index.md"}) == []


def test_the_readme_is_a_short_entry_point():
    assert len((ROOT / "README.md").read_text().splitlines()) <= README_MAX_LINES


# ---------------------------------------------------------------------------- ARCHITECTURE.md


def architecture_layers() -> list[tuple[str, list[str]]]:
    """ARCHITECTURE.md's layers, bottom first: each ``##`` section's heading and the modules its
    table's first column names (``git/repo.py`` is ``lantern_git.git.repo``)."""
    text = (ROOT / "ARCHITECTURE.md").read_text()
    layers = []
    for section in text.split("\n## ")[1:]:
        heading, _, body = section.partition("\n")
        modules = []
        for row in body.splitlines():
            if row.startswith("| `"):
                for path in re.findall(r"`([\w/]+)\.py`", row.split(" | ")[0]):
                    name = path.removesuffix("/__init__").removesuffix("__init__").strip("/")
                    modules.append(".".join(["lantern_git", *filter(None, name.split("/"))]))
        if modules:
            layers.append((heading, modules))
    return layers


def arrows_up(layers: list[tuple[str, list[str]]], graph: dict[str, set[str]]) -> list[str]:
    """Each import from a module to one of a layer drawn above it."""
    level = {module: n for n, (_, modules) in enumerate(layers) for module in modules}
    return [
        f"{module} -> {target}"
        for module, targets in sorted(graph.items())
        for target in sorted(targets)
        if module in level and target in level and level[target] > level[module]
    ]


def test_architecture_names_every_module_once_in_the_layer_that_holds_it():
    from support.architecture import import_graph

    graph = import_graph()
    # A subpackage's __init__ that imports nothing (git/, index/, mcp/: a docstring) has no
    # place of its own.
    empty = {m for m, deps in graph.items() if not deps and m.count(".") == 1 and is_package(m)}
    named = [module for _, modules in architecture_layers() for module in modules]
    assert sorted(set(named)) == sorted(named), "a module is named in two layers"
    assert sorted(set(graph) - empty - set(named)) == []
    assert sorted(set(named) - set(graph)) == []


def is_package(module: str) -> bool:
    return (ROOT / module.replace(".", "/") / "__init__.py").exists()


def test_the_layers_architecture_draws_are_the_code_s_imports():
    from support.architecture import import_graph

    graph = import_graph()
    layers = architecture_layers()
    assert [heading.split(":")[0] for heading, _ in layers][:3] == [
        "The core",
        "The git layer",
        "The model",
    ]
    assert arrows_up(layers, graph) == []
    # Drawn upside down, the layers are wrong, and the check says so.
    assert arrows_up(layers[::-1], graph) != []


def missing_tests(text: str, root: Path = ROOT) -> list[str]:
    """Each ``tests/...py::name`` (or ``test_x.py::name``, a file named once under tests/) that
    ``text`` cites as a test holding a claim, and that no ``def name`` of that file defines."""
    by_name: dict[str, list[Path]] = {}
    for path in (root / "tests").rglob("test_*.py"):
        by_name.setdefault(path.name, []).append(path)
    missing = []
    for cited, name in re.findall(r"((?:tests/[\w/]+/)?test_\w+\.py)::(\w+)", text):
        files = [root / cited] if "/" in cited else by_name.get(cited, [])
        found = [f for f in files if f.exists()]
        if len(found) != 1 or not re.search(rf"^(async )?def {name}\(", found[0].read_text(), re.M):
            missing.append(f"{cited}::{name}")
    return missing


def test_every_test_the_docs_cite_exists():
    assert missing_tests(DOCS_AND_REFERENCES) == []


def test_the_cited_test_check_catches_a_missing_file_and_a_missing_test(tmp_path):
    (tmp_path / "tests" / "unit").mkdir(parents=True)
    (tmp_path / "tests" / "unit" / "test_a.py").write_text("def test_here():\n    pass\n")
    text = (
        "`tests/unit/test_a.py::test_here`, `test_a.py::test_here`, "
        "`tests/unit/test_a.py::test_gone`, `tests/unit/test_b.py::test_here`, "
        "`test_b.py::test_here`"
    )
    assert missing_tests(text, root=tmp_path) == [
        "tests/unit/test_a.py::test_gone",
        "tests/unit/test_b.py::test_here",
        "test_b.py::test_here",
    ]
