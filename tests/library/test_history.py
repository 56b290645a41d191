"""memory history and lantern log, read from real git history."""

from __future__ import annotations

import json

import pytest
from support.cli import lantern
from support.stores import git

from lantern_git.errors import InvalidInput, NotFound
from lantern_git.model.record_file import record_path
from lantern_git.store import Store


def changes_of(entry) -> dict:
    return {c.field: (c.old, c.new) for c in entry.changes}


def test_history_lists_every_commit_that_touched_the_record(store, store_path):
    record = store.add("Ana drinks tea", kind="preference", scope="user:ana")
    other = store.add("Unrelated", kind="fact")
    store.update(record.id, priority=80, reason="matters more")
    store.archive(other.id)
    store.archive(record.id)
    store.restore(record.id)
    new = store.supersede(record.id, "Ana drinks coffee", reason="changed her mind")
    entries = store.history(record.id[:6])
    assert [e.op for e in entries] == ["supersede", "restore", "archive", "update", "add"]
    assert all(e.actor == "api" for e in entries)
    assert entries[0].records == [record.id, new.id]
    assert entries[0].reason == "changed her mind"
    assert entries[3].reason == "matters more"
    assert changes_of(entries[3])["priority"] == (50, 80)
    assert changes_of(entries[2])["status"] == ("active", "archived")
    assert changes_of(entries[1])["status"] == ("archived", "active")
    assert changes_of(entries[0])["status"] == ("active", "superseded")
    created = changes_of(entries[4])
    assert created["content"] == (None, "Ana drinks tea") and created["id"] == (None, record.id)
    head = git(store_path, "rev-parse", "HEAD").strip()
    assert entries[0].commit == head
    assert entries[0].author == "Test Author <author@example.com>"
    times = [e.time for e in entries]
    assert times == sorted(times, reverse=True)
    # the new record's history is its one supersede commit
    assert [e.op for e in store.history(new.id)] == ["supersede"]


def test_history_includes_hand_commits_made_with_plain_git(store, store_path):
    record = store.add("Ana drinks tea", kind="preference")
    path = store_path / record_path(record.id)
    path.write_text(path.read_text().replace("urgency: 0", "urgency: 40"))
    git(store_path, "commit", "-qam", "bump urgency by hand")
    entries = store.history(record.id)
    assert entries[0].op is None and entries[0].summary == "bump urgency by hand"
    assert changes_of(entries[0]) == {"urgency": (0, 40)}


def test_history_reports_a_commit_where_the_file_was_broken(store, store_path):
    record = store.add("Ana drinks tea", kind="preference")
    path = store_path / record_path(record.id)
    good = path.read_text()
    path.write_text(good.replace("kind: preference", "kind: [oops"))
    git(store_path, "commit", "-qam", "broken")
    path.write_text(good)
    git(store_path, "commit", "-qam", "fixed")
    entries = store.history(record.id)
    assert [e.summary for e in entries[:2]] == ["fixed", "broken"]
    assert "invalid" in entries[1].problem and entries[1].changes == []
    assert entries[0].problem is None


def test_history_follows_merges_from_both_sides(tmp_path, store, store_path):
    record = store.add("Ana drinks tea", kind="preference")
    git(store_path, "checkout", "-qb", "side")
    store.update(record.id, urgency=30, reason="side branch")
    git(store_path, "checkout", "-q", "main")
    store.add("Something else", kind="fact")
    git(store_path, "merge", "-q", "--no-edit", "side")
    entries = store.history(record.id)
    assert [e.op for e in entries] == ["update", "add"]
    assert entries[0].reason == "side branch"


def test_history_of_an_unknown_record(store):
    store.add("Ana drinks tea", kind="preference")
    with pytest.raises(NotFound):
        store.history("0123456789abcdef")
    with pytest.raises(InvalidInput):
        store.history("xyz")


def test_cli_history_json_and_text(store_path):
    record_id = lantern("memory", "add", "Tea", "--kind", "fact", "--quiet", cwd=store_path)
    record_id = record_id.stdout.strip()
    lantern("memory", "archive", record_id, "--reason", "done", cwd=store_path)
    result = lantern("memory", "history", record_id, "--json", cwd=store_path)
    assert result.returncode == 0, result.stderr
    document = json.loads(result.stdout)
    assert list(document) == ["id", "history"]
    assert document["id"] == record_id
    entries = document["history"]
    assert [e["op"] for e in entries] == ["archive", "add"]
    assert set(entries[0]) == {
        "commit",
        "time",
        "author",
        "op",
        "actor",
        "records",
        "reason",
        "summary",
        "changes",
        "problem",
    }
    assert entries[0]["actor"] == "cli" and entries[0]["reason"] == "done"
    status = [c for c in entries[0]["changes"] if c["field"] == "status"]
    assert status == [{"field": "status", "old": "active", "new": "archived"}]
    text = lantern("memory", "history", record_id, cwd=store_path)
    assert "status: active -> archived" in text.stdout and "reason: done" in text.stdout
    missing = lantern("memory", "history", "0123456789abcdef", "--json", cwd=store_path)
    assert missing.returncode == 3 and missing.stdout == ""


# ---------------------------------------------------------------------------- lantern log


def test_log_reads_operations_from_trailers(store, store_path):
    a = store.add("Ana drinks tea", kind="preference")
    b = store.supersede(a.id, "Ana drinks coffee", reason="taste")
    entries = store.log()
    assert [e.op for e in entries] == ["supersede", "add", "init"]
    assert entries[0].records == [a.id, b.id]
    assert entries[0].reason == "taste"
    assert entries[0].summary.startswith(f"supersede {a.id} -> {b.id}")
    assert [e.op for e in store.log(limit=1)] == ["supersede"]
    # The one paging rule: limit 0 is no limit, and offset skips.
    assert store.log(limit=0) == entries
    assert [e.op for e in store.log(limit=1, offset=1)] == ["add"]


def test_log_on_a_fresh_folder_without_a_store(tmp_path):
    store = Store(str(tmp_path / "none"), create_on_write=True)
    assert store.log() == []


def test_cli_log(store_path):
    lantern("memory", "add", "Tea", "--kind", "fact", cwd=store_path)
    lantern("memory", "add", "Coffee", "--kind", "fact", "--reason", "why not", cwd=store_path)
    result = lantern("log", "--limit", "2", "--json", cwd=store_path)
    assert result.returncode == 0, result.stderr
    document = json.loads(result.stdout)
    assert list(document) == ["log"]
    entries = document["log"]
    assert len(entries) == 2
    assert list(entries[0]) == [
        "commit",
        "time",
        "author",
        "op",
        "actor",
        "records",
        "reason",
        "summary",
        "sources",
    ]
    assert entries[0]["op"] == "add" and entries[0]["reason"] == "why not"
    assert entries[0]["actor"] == "cli"
    text = lantern("log", cwd=store_path)
    assert text.returncode == 0 and "init" in text.stdout and "reason: why not" in text.stdout
    bad = lantern("log", "--limit", "-1", cwd=store_path)
    assert bad.returncode == 2


def test_history_read_again_follows_the_branch_and_gives_fresh_lists(store, store_path):
    """What is read of a commit and the walk from a branch's tip are kept in the process: a
    second history after a write shows the write, and an entry's lists are the caller's own
    (emptying them changes no later answer)."""
    lines = [json.dumps({"kind": "fact", "content": f"imported {n}"}) for n in range(3)]
    store.import_records(lines)
    named = git(
        store_path, "log", "-1", "--format=%(trailers:key=Lantern-Record,valueonly,separator=%x2C)"
    )
    imported = named.strip().split(",")
    assert len(imported) == 3
    first = store.history(imported[1])
    assert [e.op for e in first] == ["import"]
    assert first[0].records == imported
    first[0].records.clear()
    store.update(imported[1], priority=70)
    again = store.history(imported[1])
    assert [e.op for e in again] == ["update", "import"]
    changed = changes_of(again[0])
    # updated_at is in whole seconds: it shows as a change when the update fell in a later
    # second than the import, and never goes back.
    stamped = changed.pop("updated_at", None)
    assert stamped is None or stamped[1] > stamped[0]
    assert changed == {"priority": (50, 70)}
    assert again[1].records == imported


def test_history_in_a_shallow_clone_grows_when_the_clone_is_deepened(tmp_path, store, store_path):
    """git rewrites a shallow clone's oldest commit to have no parents; once the clone is
    deepened, its tip unchanged, the next store opened on it in the same process reads the
    commits behind it (the walk kept from the first store is not reused)."""
    record = store.add("Ana drinks tea", kind="preference")
    store.update(record.id, priority=80)
    store.update(record.id, urgency=10)
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", "--depth", "1", f"file://{store_path}", str(clone))
    copy = Store.open(str(clone))
    shallow = copy.history(record.id)
    copy.close()
    assert [e.op for e in shallow] == ["update"]
    assert changes_of(shallow[0])["urgency"] == (None, 10)  # as created: no parent here
    git(clone, "fetch", "-q", "--unshallow")
    deepened = Store.open(str(clone))
    try:
        assert [e.op for e in deepened.history(record.id)] == ["update", "update", "add"]
    finally:
        deepened.close()
