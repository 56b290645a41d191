"""Records name entities (their ``entities`` field, ``--entity``), and a rename rewrites them."""

from __future__ import annotations

import subprocess
import sys
import time

from support.cli import lantern_json as run
from support.format1 import unpack_format1
from support.stores import git, snapshot

from lantern_git.model.record import Record
from lantern_git.model.record_merge import merge_records


def add(store, content, *entities):
    args = [arg for key in entities for arg in ("--entity", key)]
    result, record = run(store, "memory", "add", content, "--kind", "fact", *args)
    assert result.returncode == 0, result.stderr
    return record


def record_file(store, record_id) -> str:
    return (store / "memory" / record_id[:2] / f"{record_id}.md").read_text()


def test_memory_add_and_update_name_entities_lower_cased_and_once(store_path):
    record = add(
        store_path, "Ana owns the Beta release.", "Person:Ana", "project:beta", "person:ana"
    )
    assert record["entities"] == ["person:ana", "project:beta"]
    assert "entities:\n- person:ana\n- project:beta\n---\n" in record_file(store_path, record["id"])
    result, updated = run(
        store_path, "memory", "update", record["id"], "--entity", "host:zettabyte",
        "--remove-entity", "PROJECT:beta",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert updated["entities"] == ["person:ana", "host:zettabyte"]
    # A key that does not parse is refused, and nothing is written.
    before = snapshot(store_path)
    result, refused = run(store_path, "memory", "update", record["id"], "--entity", "person:../x")
    assert result.returncode == 2 and "entities" in refused["error"]["message"]
    assert snapshot(store_path) == before
    # A record naming none has an empty list in its JSON.
    plain = add(store_path, "No one in particular.")
    assert plain["entities"] == [] and "entities" not in record_file(store_path, plain["id"])


def test_in_a_format1_store_records_show_no_entities_and_naming_one_needs_migration(tmp_path):
    beta = unpack_format1(tmp_path).beta
    result, records = run(beta, "memory", "list")
    assert result.returncode == 0 and records and all(r["entities"] == [] for r in records)
    before = snapshot(beta)
    result, refused = run(beta, "memory", "add", "Ana again", "--kind", "fact", "--entity", "p:a")
    assert result.returncode == 2 and refused["error"]["code"] == "needs_migration"
    result, refused = run(beta, "memory", "update", records[0]["id"], "--entity", "p:a")
    assert result.returncode == 2 and refused["error"]["code"] == "needs_migration"
    assert snapshot(beta) == before


def test_sync_merges_records_entities_as_a_set():
    base = Record.new(kind="fact", content="Ana owns the release.")
    base = base.evolve(entities=("person:ana",), created_at=100, updated_at=100)
    ours = base.evolve(entities=("person:ana", "project:beta"), updated_at=200)
    theirs = base.evolve(entities=("host:zettabyte",), updated_at=300)
    merged = merge_records(base.to_markdown(), ours.to_markdown(), theirs.to_markdown())
    # The union, the base's keys first: one side's additions never drop the other's.
    assert merged.record.entities == ("person:ana", "host:zettabyte", "project:beta")
    both = merge_records(None, ours.to_markdown(), theirs.to_markdown())
    assert set(both.record.entities) == {"person:ana", "project:beta", "host:zettabyte"}


def test_rename_moves_the_file_rewrites_the_records_and_keeps_the_old_name(store_path):
    result, _ = run(store_path, "entity", "add", "person:ana", "--name", "Ana", "--alias", "A.")
    assert result.returncode == 0, result.stderr
    named = add(store_path, "Ana owns the Beta release.", "person:ana", "project:beta")
    linked = add(store_path, "Met [[Person:Ana]] and [[A.]] at the offsite.")
    other = add(store_path, "Nothing about her.", "project:beta")
    other_before = record_file(store_path, other["id"])
    head = git(store_path, "rev-parse", "HEAD").strip()

    result, renamed = run(store_path, "entity", "rename", "person:ana", "person:ana-garcia")
    assert result.returncode == 0, result.stderr
    assert renamed["key"] == "person:ana-garcia" and renamed["name"] == "Ana"
    assert "person:ana" in renamed["aliases"] and "A." in renamed["aliases"]
    # One commit, with its trailers, and nothing else changed.
    assert git(store_path, "rev-parse", "HEAD~1").strip() == head
    message = git(store_path, "log", "-1", "--format=%B")
    assert "Lantern-Op: entity-rename\n" in message
    assert "Lantern-Entity: person:ana\n" in message
    assert "Lantern-Entity: person:ana-garcia\n" in message
    assert not (store_path / "entities" / "person" / "ana.md").exists()
    _, shown = run(store_path, "memory", "show", named["id"])
    assert shown["entities"] == ["person:ana-garcia", "project:beta"]
    _, shown = run(store_path, "memory", "show", linked["id"])
    assert shown["content"] == "Met [[person:ana-garcia]] and [[A.]] at the offsite."
    assert shown["id"] == linked["id"]
    assert record_file(store_path, other["id"]) == other_before
    assert git(store_path, "status", "--porcelain") == ""
    # History follows the file through the move.
    follow = git(
        store_path, "log", "--follow", "--format=%s", "--", "entities/person/ana-garcia.md"
    )
    assert [line.split()[0] for line in follow.splitlines()] == ["entity-rename", "entity-add"]
    result, _taken = run(store_path, "entity", "rename", "person:ana-garcia", "project:beta")
    assert result.returncode == 0  # project:beta has no file: a mention, free to take
    result, refused = run(store_path, "entity", "rename", "person:nobody", "person:x")
    assert result.returncode == 3 and refused["error"]["code"] == "not_found"


def test_a_rename_racing_record_writes_loses_neither(store_path):
    """Writers hold the store one at a time: updates of records naming the key, run while the
    rename runs, all land, and no record is left naming the old key."""
    assert run(store_path, "entity", "add", "person:ana")[0].returncode == 0
    ids = [add(store_path, f"Ana fact {n}.", "person:ana")["id"] for n in range(6)]
    script = (
        "import subprocess, sys\n"
        "for round in range(4):\n"
        "    for rid in sys.argv[2:]:\n"
        "        r = subprocess.run([sys.executable, '-m', 'lantern_git', '--store', sys.argv[1],"
        " 'memory', 'update', rid, '--priority', str(60 + round)], capture_output=True)\n"
        "        assert r.returncode == 0, r.stderr\n"
    )
    writer = subprocess.Popen([sys.executable, "-c", script, str(store_path), *ids])
    time.sleep(0.5)
    result, _ = run(store_path, "entity", "rename", "person:ana", "person:ana-garcia")
    assert result.returncode == 0, result.stderr
    assert writer.wait(timeout=180) == 0
    for record_id in ids:
        _, record = run(store_path, "memory", "show", record_id)
        assert record["entities"] == ["person:ana-garcia"], record_id
        assert record["priority"] == 63
    assert git(store_path, "status", "--porcelain") == ""
    assert (
        git(store_path, "log", "--format=%s", "--grep=^Lantern-Op: entity-rename").count(
            "entity-rename"
        )
        == 1
    )


# ---------------------------------------------------------------------------- finding them


def _ana_store(store_path):
    result, _ = run(
        store_path, "entity", "add", "person:ana", "--name", "Ana García", "--alias", "A. García"
    )
    assert result.returncode == 0, result.stderr
    ids = {
        "field": add(store_path, "Owns the Beta release.", "person:ana")["id"],
        "key": add(store_path, "Met [[PERSON:ANA]] today.")["id"],
        "name": add(store_path, "Lunch with [[ana  garcía]].")["id"],
        "alias": add(store_path, "Call [[A. García]] on Friday.")["id"],
        "other": add(store_path, "Ana Pérez is someone else; [[person:anabel]].")["id"],
    }
    return ids


def test_entity_show_answers_the_records_that_name_or_link_it_in_list_order(store_path):
    ids = _ana_store(store_path)
    result, shown = run(store_path, "entity", "show", "person:ana")
    assert result.returncode == 0, result.stderr
    assert shown["entity"]["name"] == "Ana García"
    expected = {ids["field"], ids["key"], ids["name"], ids["alias"]}
    assert {r["id"] for r in shown["records"]} == expected and shown["record_count"] == 4
    _, listed = run(store_path, "memory", "list", "--limit", "0")
    in_list_order = [r["id"] for r in listed if r["id"] in expected]
    assert [r["id"] for r in shown["records"]] == in_list_order
    # The list filters and the page apply; the count is of every page.
    result, page = run(store_path, "entity", "show", "person:ana", "--limit", "1")
    assert [r["id"] for r in page["records"]] == in_list_order[:1] and page["record_count"] == 4
    assert run(store_path, "memory", "archive", ids["alias"])[0].returncode == 0
    _, active = run(store_path, "entity", "show", "person:ana")
    assert ids["alias"] not in {r["id"] for r in active["records"]}


def test_the_entity_filter_of_memory_list_and_search(store_path):
    ids = _ana_store(store_path)
    _, listed = run(store_path, "memory", "list", "--entity", "Person:Ana")
    assert {r["id"] for r in listed} == {ids["field"], ids["key"], ids["name"], ids["alias"]}
    _, hits = run(store_path, "memory", "search", "friday", "--entity", "person:ana",
                  "--mode", "keyword")  # fmt: skip
    assert [h["id"] for h in hits] == [ids["alias"]]
    _, none = run(store_path, "memory", "search", "someone", "--entity", "person:ana",
                  "--mode", "keyword")  # fmt: skip
    assert none == []
    # A new alias finds the records that link it at once: links are resolved when asked.
    linked = add(store_path, "Dinner with [[Ana G.]].")["id"]
    _, before = run(store_path, "memory", "list", "--entity", "person:ana")
    assert linked not in {r["id"] for r in before}
    assert run(store_path, "entity", "update", "person:ana", "--alias", "ana g.")[0].returncode == 0
    _, after = run(store_path, "memory", "list", "--entity", "person:ana")
    assert linked in {r["id"] for r in after}


def test_a_key_without_a_file_is_a_mention(store_path):
    named = add(store_path, "The staging host is slow.", "host:petabyte")["id"]
    result, shown = run(store_path, "entity", "show", "host:petabyte")
    assert result.returncode == 0, result.stderr
    assert shown["entity"] is None and [r["id"] for r in shown["records"]] == [named]
    result, missing = run(store_path, "entity", "show", "host:nowhere")
    assert result.returncode == 3 and missing["error"]["code"] == "not_found"
    # entity list has it, beside the files, with its counts; a link by key counts too.
    assert run(store_path, "entity", "add", "person:ana")[0].returncode == 0
    add(store_path, "Ask [[person:ana]] and [[Host:Exabyte]].")
    _, listed = run(store_path, "entity", "list")
    assert listed == [
        {"key": "host:exabyte", "name": "exabyte", "file": False, "record_count": 1,
         "chunk_count": 0},
        {"key": "host:petabyte", "name": "petabyte", "file": False, "record_count": 1,
         "chunk_count": 0},
        {"key": "person:ana", "name": "ana", "file": True, "record_count": 1, "chunk_count": 0},
    ]  # fmt: skip
    _, hosts = run(store_path, "entity", "list", "--type", "host")
    assert [item["key"] for item in hosts] == ["host:exabyte", "host:petabyte"]


def test_the_entity_filter_sees_pending_records_with_include_pending(store_path):
    _ana_store(store_path)
    review = {"LANTERN_REVIEW": "1", "LANTERN_REVIEW_NAME": "agent"}
    result, pending = run(
        store_path, "memory", "add", "Ana asked for a summary.", "--kind", "task_state",
        "--entity", "person:ana", env=review,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    _, plain = run(store_path, "memory", "list", "--entity", "person:ana")
    assert pending["id"] not in {r["id"] for r in plain}
    _, shown = run(store_path, "memory", "list", "--entity", "person:ana", "--include-pending")
    assert pending["id"] in {r["id"] for r in shown}


def test_chunks_holding_an_entity_s_names_as_a_phrase(store_path):
    _ana_store(store_path)
    sources = {}
    for uri, text in (
        ("chat:1", "User: I met A. García at the offsite.\nAssistant: Noted.\n"),
        ("chat:2", "User: Ana met Beta's garcia team.\nAssistant: Noted.\n"),
        ("chat:3", "User: [[person:ana]] asked for the notes.\nAssistant: Noted.\n"),
    ):
        result, added = run(store_path, "source", "add", "-", "--uri", uri, input=text)
        assert result.returncode == 0, result.stderr
        sources[uri] = (added[0] if isinstance(added, list) else added)["id"]
    result, shown = run(store_path, "entity", "show", "person:ana")
    assert result.returncode == 0, result.stderr
    held = {ref.split("@")[0].removeprefix("source:") for ref in shown["chunks"]}
    assert held == {sources["chat:1"], sources["chat:3"]} and shown["chunk_count"] == 2
    result, hits = run(store_path, "source", "search", "noted", "--entity", "person:ana",
                       "--mode", "keyword")  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert {h["source_id"] for h in hits} == {sources["chat:1"], sources["chat:3"]}
