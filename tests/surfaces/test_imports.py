"""Imports from where users come from (issue 14): records without an id, the MCP reference
memory server's memory.json, and a folder of markdown notes; each one commit, idempotent, with a
progress bar on a terminal (tests/library/test_transfer.py checks the bar)."""

from __future__ import annotations

import json

from support.cli import lantern
from support.stores import git, snapshot

from lantern_git.model.record import compute_id

MEMORY_JSON = "\n".join(
    json.dumps(item)
    for item in (
        {
            "type": "entity",
            "name": "Ana Lopez",
            "entityType": "person",
            "observations": ["Prefers short answers", "Works in UTC+1"],
        },
        {"type": "entity", "name": "Acme", "entityType": "organization", "observations": []},
        {"type": "relation", "from": "Ana Lopez", "to": "Acme", "relationType": "works_at"},
    )
)


def _import(store_path, *args, env=None):
    return lantern("import", *args, "--store", str(store_path), env=env)


def _records(store_path) -> list[dict]:
    result = lantern("memory", "list", "--status", "all", "--json", "--store", str(store_path))
    assert result.returncode == 0, result.stderr
    return sorted(json.loads(result.stdout), key=lambda r: (r["scope"], r["kind"], r["content"]))


def _commits(store_path) -> int:
    return int(git(store_path, "rev-list", "--count", "HEAD"))


def _import_twice(store_path, *args) -> dict:
    """Import, check it made one import commit, import again and check that changed nothing."""
    before = _commits(store_path)
    first = _import(store_path, *args, "--json")
    assert first.returncode == 0, first.stderr
    result = json.loads(first.stdout)
    assert _commits(store_path) == before + 1
    trailers = git(store_path, "log", "-1", "--format=%(trailers:key=Lantern-Op,valueonly)")
    assert trailers.strip() == "import"
    state = snapshot(store_path)
    again = _import(store_path, *args, "--json")
    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout) == {
        "imported": 0,
        "skipped": result["imported"],
        "commit": None,
        "sources": [],
        "entities": [],
    }
    assert snapshot(store_path) == state
    return result


def test_the_mcp_memory_servers_memory_json_becomes_scoped_observations_and_facts(
    store_path, tmp_path
):
    source = tmp_path / "memory.json"
    source.write_text(MEMORY_JSON + "\n")
    assert _import_twice(store_path, str(source))["imported"] == 5
    found = [(r["kind"], r["scope"], r["content"]) for r in _records(store_path)]
    assert found == [
        ("fact", "entity:Acme", "Acme is an entity of type organization."),
        ("fact", "entity:Ana_Lopez", "Ana Lopez is an entity of type person."),
        ("fact", "entity:Ana_Lopez", "Ana Lopez works_at Acme"),
        ("observation", "entity:Ana_Lopez", "Prefers short answers"),
        ("observation", "entity:Ana_Lopez", "Works in UTC+1"),
    ]
    # The ids are add's: adding one of them again finds it.
    again = lantern(
        "memory", "add", "Works in UTC+1", "--kind", "observation", "--scope",
        "entity:Ana_Lopez", "--store", str(store_path),
    )  # fmt: skip
    assert again.stdout.startswith("exists (active) ")


def test_a_folder_of_markdown_notes_becomes_one_record_per_note(store_path, tmp_path):
    notes = tmp_path / "notes"
    (notes / "projects").mkdir(parents=True)
    (notes / ".obsidian").mkdir()
    (notes / "beta.md").write_text("---\ntags: [beta]\n---\n# Beta\n\nShip it on Friday.\n")
    (notes / "projects" / "my plan.markdown").write_text("Plan the launch.\n")
    (notes / "empty.md").write_text("\n\n")
    (notes / "todo.txt").write_text("not a note\n")
    (notes / ".obsidian" / "workspace.md").write_text("editor state\n")
    result = _import_twice(
        store_path, str(notes), "--kind", "fact", "--scope", "project:beta", "--reason", "notes"
    )
    assert result["imported"] == 2
    records = _records(store_path)
    assert [(r["kind"], r["scope"], r["content"], r["source_refs"]) for r in records] == [
        ("fact", "project:beta", "# Beta\n\nShip it on Friday.", ["note:beta.md"]),
        ("fact", "project:beta", "Plan the launch.", ["note:projects/my plan.markdown"]),
    ]
    assert "Lantern-Reason: notes" in git(store_path, "log", "-1", "--format=%B")
    # Without --kind and --scope: observations in the global scope, new records beside those.
    assert _import_twice(store_path, str(notes))["imported"] == 2
    assert {(r["kind"], r["scope"]) for r in _records(store_path)} == {
        ("fact", "project:beta"),
        ("observation", "global"),
    }


def test_records_without_an_id_get_the_id_add_would_give(store_path, tmp_path):
    source = tmp_path / "plain.jsonl"
    source.write_text(
        '{"kind": "fact", "content": "No id   here."}\n'
        '{"kind": "goal", "scope": "project:x", "content": "Also none", "priority": 70}\n'
    )
    assert _import_twice(store_path, str(source))["imported"] == 2
    by_content = {r["content"]: r for r in _records(store_path)}
    # The id is computed over the normalized content, as add's; the content stays as given.
    assert by_content["No id   here."]["id"] == compute_id("fact", "global", "No id here.")
    goal = by_content["Also none"]
    assert goal["id"] == compute_id("goal", "project:x", "Also none")
    assert goal["priority"] == 70
    # From stdin too, and mixed with records that carry their id.
    stdin = (
        json.dumps({"kind": "fact", "content": "Piped."})
        + "\n"
        + json.dumps({**goal, "content": "Also none"})
        + "\n"
    )
    piped = lantern("import", "-", "--json", "--store", str(store_path), input=stdin)
    assert piped.returncode == 0, piped.stderr
    assert json.loads(piped.stdout)["imported"] == 1


def test_bad_imports_name_the_line_or_file_and_change_nothing(store_path, tmp_path):
    before = snapshot(store_path)
    cases = []
    bad_mcp = tmp_path / "memory.json"
    bad_mcp.write_text(
        MEMORY_JSON.splitlines()[0] + "\n" + '{"type": "relation", "from": "Ana", "to": 3}\n'
    )
    cases.append(((str(bad_mcp),), "line 2: to: must be a non-empty string"))
    unknown = tmp_path / "unknown.json"
    unknown.write_text(MEMORY_JSON.splitlines()[0] + "\n" + '{"type": "event"}\n')
    cases.append(((str(unknown),), "line 2: type: must be 'entity' or 'relation'"))
    no_kind = tmp_path / "no-kind.jsonl"
    no_kind.write_text('{"kind": "fact", "content": "ok"}\n{"content": "no kind"}\n')
    cases.append(((str(no_kind),), "line 2: kind: is required"))
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "good.md").write_text("Fine.\n")
    (notes / "latin1.md").write_bytes(b"caf\xe9\n")
    cases.append(((str(notes),), "latin1.md: is not valid UTF-8 (byte 3)"))
    cases.append(((str(notes), "--kind", "wish"), "good.md: kind: must be one of"))
    cases.append(((str(no_kind), "--scope", "user:ana"), "apply to markdown notes only"))
    cases.append(((str(notes), "--format", "jsonl"), "is a folder; only --format markdown"))
    for args, message in cases:
        result = _import(store_path, *args, "--json")
        assert result.returncode == 2, (args, result.stderr)
        assert result.stdout == ""
        error = json.loads(result.stderr)["error"]
        assert message in error["message"], (args, error)
    assert snapshot(store_path) == before
