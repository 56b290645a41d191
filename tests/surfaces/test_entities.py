"""Entity files: ``lantern entity add|update|list|show``, their commits, their checks."""

from __future__ import annotations

import json

import pytest
from support.cli import lantern
from support.cli import lantern_json as run
from support.format1 import unpack_format1
from support.stores import git, snapshot

from lantern_git.errors import NeedsMigration, ValidationError
from lantern_git.store import Store


def test_entity_add_writes_its_file_in_one_commit_with_its_trailers(store_path):
    result, added = run(
        store_path, "entity", "add", "Person:Ana", "--name", "Ana García",
        "--alias", "A. García", "--description", "Runs project Beta",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert added["key"] == "person:ana" and added["aliases"] == ["A. García"]
    text = (store_path / "entities" / "person" / "ana.md").read_text()
    assert text.startswith("---\nkey: person:ana\nname: Ana García\naliases:\n- A. García\n")
    message = git(store_path, "log", "-1", "--format=%B")
    assert "Lantern-Op: entity-add\n" in message and "Lantern-Entity: person:ana\n" in message
    assert git(store_path, "show", "--name-only", "--format=", "HEAD").split() == [
        "entities/person/ana.md"
    ]
    assert git(store_path, "status", "--porcelain") == ""
    result, answer = run(store_path, "entity", "show", "PERSON:ana")
    shown = answer["entity"]
    assert answer["key"] == "person:ana"
    assert shown["name"] == "Ana García" and shown["description"] == "Runs project Beta"
    result, listed = run(store_path, "entity", "list", "--type", "person")
    assert [e["key"] for e in listed] == ["person:ana"]
    # The same key again is refused, and nothing is written.
    before = snapshot(store_path)
    result, refused = run(store_path, "entity", "add", "person:ana")
    assert result.returncode == 2 and refused["error"]["code"] == "entity_exists"
    assert snapshot(store_path) == before


def test_entity_update_adds_and_removes_aliases_and_commits_only_a_change(store_path):
    assert run(store_path, "entity", "add", "project:beta", "--alias", "B")[0].returncode == 0
    head = git(store_path, "rev-parse", "HEAD")
    result, same = run(store_path, "entity", "update", "project:beta", "--alias", "b")
    assert result.returncode == 0 and same["aliases"] == ["B"]
    assert git(store_path, "rev-parse", "HEAD") == head
    result, changed = run(
        store_path, "entity", "update", "project:beta", "--alias", "Beta project",
        "--remove-alias", "B", "--name", "Project Beta",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert changed["aliases"] == ["Beta project"] and changed["name"] == "Project Beta"
    assert "Lantern-Op: entity-update\n" in git(store_path, "log", "-1", "--format=%B")
    result, missing = run(store_path, "entity", "update", "project:gamma", "--alias", "G")
    assert result.returncode == 3 and missing["error"]["code"] == "not_found"


HOSTILE_KEYS = [
    "..",
    "person:..",
    "person:../escape",
    "person:a/b",
    "../x:y",
    "person:.hidden",
    "person:a\x01b",
    "person:a\nb",
    "person:a\\b",
    "global",
    "nocolon",
    "person:" + "a" * 300,
    "person:" + "é" * 150,
    "person:*",
    "",
]


@pytest.mark.parametrize("key", HOSTILE_KEYS)
def test_a_hostile_key_is_refused_before_anything_is_written(store_path, key):
    before = snapshot(store_path)
    result, refused = run(store_path, "entity", "add", key)
    assert result.returncode == 2, (key, result.stderr)
    assert refused["error"]["code"] == "invalid_entity"
    assert "entity key" in refused["error"]["message"]
    assert snapshot(store_path) == before
    assert not (store_path / "entities").exists()
    assert not (store_path.parent / "escape.md").exists()


def test_ten_thousand_aliases_are_refused_and_a_hundred_are_kept(store):
    with pytest.raises(ValidationError) as caught:
        store.entities.add("person:many", aliases=[f"alias {n}" for n in range(10_000)])
    assert caught.value.code == "invalid_entity" and "at most 100 aliases" in caught.value.message
    assert store.entities.list() == []
    kept = store.entities.add("person:many", aliases=[f"alias {n}" for n in range(100)])
    assert len(store.entities.get("person:many").aliases) == 100 == len(kept.aliases)


def test_an_entity_write_in_a_format1_store_needs_migration(tmp_path):
    beta = unpack_format1(tmp_path).beta
    before = snapshot(beta)
    result, refused = run(beta, "entity", "add", "person:ana")
    assert result.returncode == 2
    assert refused["error"]["code"] == "needs_migration"
    assert "lantern migrate" in refused["error"]["message"]
    assert snapshot(beta) == before
    store = Store.open(str(beta))
    with pytest.raises(NeedsMigration):
        store.entities.update("person:ana", aliases=["A."])
    store.close()
    # Migrated, the same write goes through.
    assert run(beta, "migrate")[0].returncode == 0
    assert run(beta, "entity", "add", "person:ana")[0].returncode == 0


def test_lantern_check_reports_invalid_and_misplaced_entity_files(store_path):
    assert run(store_path, "entity", "add", "person:ana")[0].returncode == 0
    assert run(store_path, "check")[0].returncode == 0
    folder = store_path / "entities" / "person"
    (folder / "bob.md").write_text("---\nkey: person:bob\nname: Bob\n---\n")
    (folder / "carol.md").write_text(
        "---\nkey: person:dave\nname: Dave\ncreated_at: 1\nupdated_at: 1\n---\n"
    )
    result, report = run(store_path, "check")
    assert result.returncode == 4
    problems = {p["path"]: p["message"] for p in report["problems"]}
    assert "created_at: is missing" in problems["entities/person/bob.md"]
    assert "belongs in entities/person/dave.md" in problems["entities/person/carol.md"]


BROKEN_ENTITY_FILES = {
    # What the entity model refuses, each in a file of its own (the message's words expected).
    "invalid_yaml.md": ("---\nkey: person:invalid_yaml\nname: [unclosed\n---\n", "not valid YAML"),
    "bad_key.md": ("---\nkey: person:../x\ncreated_at: 1\nupdated_at: 1\n---\n", "entity key"),
    "aliases_text.md": (
        "---\nkey: person:aliases_text\naliases: just one\ncreated_at: 1\nupdated_at: 1\n---\n",
        "aliases: must be a list",
    ),
    "control.md": (
        '---\nkey: person:control\nname: "a\\x1bb"\ncreated_at: 1\nupdated_at: 1\n---\n',
        "control characters",
    ),
    "when.md": ("---\nkey: person:when\ncreated_at: soon\nupdated_at: 1\n---\n", "unix seconds"),
    "not_mapping.md": ("---\n- a list\n---\n", "mapping"),
}


def test_store_check_reports_every_entity_file_the_model_refuses_and_the_cli_exits_4(store_path):
    assert run(store_path, "entity", "add", "person:ana")[0].returncode == 0
    store = Store.open(str(store_path))
    clean = store.check()
    assert clean.ok and clean.checked == 1  # no record yet, one entity file
    folder = store_path / "entities" / "person"
    for name, (text, _) in BROKEN_ENTITY_FILES.items():
        (folder / name).write_text(text)
    report = store.check()
    store.close()
    problems = {p.path: p.message for p in report.problems}
    assert not report.ok and report.checked == 1 + len(BROKEN_ENTITY_FILES)
    for name, (_, words) in BROKEN_ENTITY_FILES.items():
        assert words in problems[f"entities/person/{name}"], (name, problems)
    assert "entities/person/ana.md" not in problems
    result = lantern("--store", str(store_path), "check")
    assert result.returncode == 4
    summary = f"Error: {len(BROKEN_ENTITY_FILES)} problems in entity files"
    assert result.stderr.splitlines()[-1] == summary
    # A broken record beside them: the summary names both kinds.
    (store_path / "memory" / "ab").mkdir(parents=True)
    (store_path / "memory" / "ab" / "abababababababab.md").write_text("no front matter\n")
    result = lantern("--store", str(store_path), "check")
    assert result.returncode == 4
    assert result.stderr.splitlines()[-1].endswith("problems in record and entity files")


def test_a_hand_edit_of_an_entity_file_is_never_written_over(store_path):
    assert run(store_path, "entity", "add", "person:ana")[0].returncode == 0
    path = store_path / "entities" / "person" / "ana.md"
    path.write_text(path.read_text() + "Met at the offsite.\n")
    before = snapshot(store_path)
    result, refused = run(store_path, "entity", "update", "person:ana", "--alias", "Ana G.")
    assert result.returncode == 1 and refused["error"]["code"] == "uncommitted_changes"
    assert snapshot(store_path) == before


def test_review_mode_applies_to_entity_writes(store_path):
    review = {"LANTERN_REVIEW": "1", "LANTERN_REVIEW_NAME": "agent"}
    head = git(store_path, "rev-parse", "HEAD")
    result, added = run(store_path, "entity", "add", "person:ana", env=review)
    assert result.returncode == 0, result.stderr
    assert added["pending"] is True
    assert git(store_path, "rev-parse", "HEAD") == head
    assert not (store_path / "entities").exists()
    # The writer sees its pending entity: an update starts from it.
    result, updated = run(store_path, "entity", "update", "person:ana", "--alias", "A.", env=review)
    assert result.returncode == 0, result.stderr
    assert updated["aliases"] == ["A."] and updated["pending"] is True
    branch = "lantern/review/agent"
    assert "- A." in git(store_path, "show", f"{branch}:entities/person/ana.md")
    assert "Lantern-Op: entity-update" in git(store_path, "log", "-1", "--format=%B", branch)
    # Nothing on the store's branch until a person accepts; accepting the branch brings it.
    assert run(store_path, "entity", "list")[1] == []
    result, _ = run(store_path, "review", "accept", "--branch", "agent", "--all")
    assert result.returncode == 0, result.stderr
    assert "- A." in (store_path / "entities" / "person" / "ana.md").read_text()
    assert git(store_path, "status", "--porcelain") == ""


def test_lantern_review_and_the_review_page_list_pending_entity_changes(store_path):
    from support.serve import served

    assert run(store_path, "entity", "add", "project:beta", "--name", "Beta")[0].returncode == 0
    review = {"LANTERN_REVIEW": "1", "LANTERN_REVIEW_NAME": "agent"}
    for args in (
        ("entity", "add", "person:ana", "--name", "Ana García", "--alias", "A. García"),
        ("entity", "update", "project:beta", "--alias", "the beta"),
        ("memory", "add", "Ana owns Beta.", "--kind", "fact", "--entity", "person:ana"),
    ):
        result, _ = run(store_path, *args, env=review)
        assert result.returncode == 0, result.stderr
    result, listed = run(store_path, "review")
    assert result.returncode == 0, result.stderr
    (branch,) = listed["branches"]
    assert len(branch["records"]) == 1
    entities = {e["key"]: e for e in branch["entities"]}
    assert set(entities) == {"person:ana", "project:beta"}
    ana, beta = entities["person:ana"], entities["project:beta"]
    assert (ana["change"], ana["entity"]["aliases"], ana["path"]) == (
        "added",
        ["A. García"],
        "entities/person/ana.md",
    )
    assert (beta["change"], beta["entity"]["aliases"], beta["moved"]) == (
        "changed",
        ["the beta"],
        False,
    )
    assert ana["actors"] == ["cli"] and len(ana["commits"]) == 1
    text = lantern("--store", str(store_path), "review")
    assert "1 record, 2 entities, 3 commits" in text.stdout
    assert "  added    entity person:ana  Ana García (aliases: A. García)" in text.stdout
    assert "  changed  entity project:beta  Beta (aliases: the beta)" in text.stdout
    with served(store_path) as (client, _):
        page = client.get("/review")
        assert page.status_code == 200
        assert "1 record, 0 sources, 2 entities pending" in page.text
        assert 'id="pending-entity-person:ana"' in page.text
        assert "entity added" in page.text and "entity changed" in page.text
        assert "A. García" in page.text and "the beta" in page.text
    # Accepted, nothing awaits review.
    assert run(store_path, "review", "accept", "--branch", "agent", "--all")[0].returncode == 0
    assert run(store_path, "review")[1]["branches"] == []


# ---------------------------------------------------------------------------- two hosts


def _two_hosts(tmp_path):
    hub = tmp_path / "hub.git"
    git(tmp_path, "init", "-q", "--bare", "--initial-branch=main", str(hub))
    a = tmp_path / "a"
    git(tmp_path, "init", "-q", "--initial-branch=main", str(a))
    assert lantern("init", str(a)).returncode == 0
    git(a, "remote", "add", "origin", str(hub))
    result, _ = run(a, "entity", "add", "person:ana", "--name", "Ana", "--alias", "A.")
    assert result.returncode == 0, result.stderr
    assert run(a, "sync")[0].returncode == 0
    b = tmp_path / "b"
    assert lantern("clone", str(hub), str(b)).returncode == 0
    return a, b


def test_sync_merges_an_entity_both_hosts_changed_field_by_field(tmp_path):
    a, b = _two_hosts(tmp_path)
    assert run(a, "entity", "update", "person:ana", "--alias", "Ana G.")[0].returncode == 0
    result, _ = run(
        b, "entity", "update", "person:ana", "--alias", "A. García",
        "--description", "Leads Beta",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert run(a, "sync")[0].returncode == 0
    result, _ = run(b, "sync")
    assert result.returncode == 0, result.stderr
    assert run(a, "sync")[0].returncode == 0
    for host in (a, b):
        ana = run(host, "entity", "show", "person:ana")[1]["entity"]
        assert set(ana["aliases"]) == {"A.", "Ana G.", "A. García"}
        assert ana["description"] == "Leads Beta"
        assert git(host, "status", "--porcelain") == ""


def test_a_plain_git_pull_merges_entity_files_through_the_driver(tmp_path):
    a, b = _two_hosts(tmp_path)
    assert run(a, "entity", "update", "person:ana", "--alias", "Ana G.")[0].returncode == 0
    git(a, "push", "-q", "origin", "main")
    assert run(b, "entity", "update", "person:ana", "--alias", "A. García")[0].returncode == 0
    git(b, "pull", "-q", "--no-rebase", "--no-edit", "origin", "main")
    ana = run(b, "entity", "show", "person:ana")[1]["entity"]
    assert set(ana["aliases"]) == {"A.", "Ana G.", "A. García"}
    assert "<<<<" not in (b / "entities" / "person" / "ana.md").read_text()


# ---------------------------------------------------------------------------- export and import


def test_export_and_import_carry_entities(store_path, tmp_path):
    result, _ = run(store_path, "entity", "add", "person:ana", "--name", "Ana", "--alias", "A.")
    assert result.returncode == 0, result.stderr
    notes = store_path / "entities" / "person" / "ana.md"
    notes.write_text(notes.read_text() + "Met at the offsite.\n")
    git(store_path, "commit", "-qam", "notes by hand")
    result = lantern("--store", str(store_path), "export")
    assert result.returncode == 0, result.stderr
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    entity = next(line["entity"] for line in lines if "entity" in line)
    assert entity["key"] == "person:ana" and entity["notes"] == "Met at the offsite."
    other = tmp_path / "other"
    git(tmp_path, "init", "-q", str(other))
    assert lantern("init", str(other)).returncode == 0
    exported = tmp_path / "export.jsonl"
    exported.write_text(result.stdout)
    result, imported = run(other, "import", str(exported))
    assert result.returncode == 0, result.stderr
    assert imported["entities"] == ["person:ana"]
    assert "Lantern-Entity: person:ana" in git(other, "log", "-1", "--format=%B")
    assert (other / "entities" / "person" / "ana.md").read_text() == notes.read_text()
    # Again: nothing new, no commit.
    result, again = run(other, "import", str(exported))
    assert again["entities"] == [] and again["commit"] is None


def test_importing_entities_into_a_format1_store_needs_migration(tmp_path):
    beta = unpack_format1(tmp_path).beta
    line = {"entity": {"key": "person:ana", "created_at": 1, "updated_at": 1}}
    before = snapshot(beta)
    result = lantern("--store", str(beta), "import", "-", "--json", input=json.dumps(line) + "\n")
    assert result.returncode == 2
    assert json.loads(result.stderr)["error"]["code"] == "needs_migration"
    assert snapshot(beta) == before


# ---------------------------------------------------------------------------- MCP


def test_the_mcp_entity_tools_and_the_entity_argument(store_path):
    import jsonschema

    from lantern_git.mcp.server import TOOLS_BY_NAME, StoreTarget, ToolRunner

    runner = ToolRunner(StoreTarget(str(store_path)))

    def call(tool: str, **arguments) -> dict:
        # support.mcp.schema_checked_calls, with room for an argument called "name"
        outcome = runner.run(tool, {k.rstrip("_"): v for k, v in arguments.items()})
        assert not outcome.is_error, outcome.value
        jsonschema.validate(outcome.value, TOOLS_BY_NAME[tool].output_schema)
        return outcome.value

    added = call("lantern_entity_add", key="Person:Ana", name_="Ana García", aliases=["A. García"])
    assert added["key"] == "person:ana"
    assert "Lantern-Op: entity-add" in git(store_path, "log", "-1", "--format=%B")
    updated = call("lantern_entity_update", key="person:ana", aliases=["Ana G."])
    assert updated["aliases"] == ["A. García", "Ana G."]
    named = call("lantern_memory_add", content="Owns Beta.", kind="fact", entities=["person:ana"])
    assert named["entities"] == ["person:ana"]
    linked = call("lantern_memory_add", content="Lunch with [[Ana G.]].", kind="observation")
    call("lantern_memory_add", content="Nothing about her.", kind="fact")
    changed = call("lantern_memory_update", id=linked["id"], entities=["project:beta"])
    assert changed["entities"] == ["project:beta"]
    listed = call("lantern_memory_list", entity="person:ana")
    assert {r["id"] for r in listed["records"]} == {named["id"], linked["id"]}
    found = call("lantern_memory_search", query="lunch", entity="person:ana", mode="keyword")
    assert [r["id"] for r in found["records"]] == [linked["id"]]
    shown = call("lantern_entity_show", key="person:ana", limit=1)
    assert shown["record_count"] == 2 and len(shown["records"]) == 1
    assert shown["entity"]["name"] == "Ana García"
    # A page document as every listing answers: the next page's offset, then none.
    assert (shown["offset"], shown["limit"], shown["next_offset"]) == (0, 1, 1)
    rest = call("lantern_entity_show", key="person:ana", limit=1, offset=1)
    assert (rest["offset"], rest["limit"], rest["next_offset"]) == (1, 1, None)
    assert rest["record_count"] == 2 and len(rest["records"]) == 1
    assert {shown["records"][0]["id"], rest["records"][0]["id"]} == {named["id"], linked["id"]}
    whole = call("lantern_entity_show", key="person:ana", limit=0)
    assert (whole["limit"], whole["next_offset"], len(whole["records"])) == (0, None, 2)
    refused = runner.run("lantern_entity_show", {"key": "person:ana", "limit": -1})
    assert refused.is_error and "usage_error" in json.dumps(refused.value)
    keys = call("lantern_entity_list")["entities"]
    assert [(e["key"], e["file"], e["record_count"]) for e in keys] == [
        ("person:ana", True, 2),
        ("project:beta", False, 1),
    ]
    # A hostile key is the library's refusal, as in the CLI.
    outcome = runner.run("lantern_entity_add", {"key": "person:../x"})
    assert outcome.is_error and "invalid_entity" in json.dumps(outcome.value)
