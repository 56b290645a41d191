"""supersede, restore, update and expiry, through the library and the real CLI."""

from __future__ import annotations

import json
import time

import pytest
from support.cli import lantern
from support.stores import git, snapshot

from lantern_git.errors import InvalidInput, UncommittedChanges
from lantern_git.git.repo import parse_trailers
from lantern_git.model.record_file import record_path
from lantern_git.store import Store


def head_message(path) -> str:
    return git(path, "log", "-1", "--format=%B")


def changed_lines(path, rev="HEAD", *paths: str) -> list[str]:
    """The +/- lines of a commit's diff, without the file headers."""
    diff = git(path, "show", "--format=", rev, "--", *paths)
    return [
        line
        for line in diff.splitlines()
        if line[:1] in "+-" and not line.startswith(("+++", "---"))
    ]


def backdate(path, record_id: str, stamp: int = 1_700_000_000) -> None:
    """Set created_at and updated_at to a past time, committed with plain git."""
    file = path / record_path(record_id)
    lines = [
        f"{line.split(':')[0]}: {stamp}"
        if line.startswith(("created_at:", "updated_at:"))
        else line
        for line in file.read_text().split("\n")
    ]
    file.write_text("\n".join(lines))
    git(path, "commit", "-qam", "backdate")


# ---------------------------------------------------------------------------- supersede


def test_supersede_changes_only_status_and_updated_at_of_the_old_record(store, store_path):
    old = store.add("Ana drinks tea", kind="preference", scope="user:ana")
    backdate(store_path, old.id)
    new = store.supersede(old.id, "Ana drinks coffee")
    lines = changed_lines(store_path, "HEAD", record_path(old.id))
    assert lines == [
        "-status: active",
        "+status: superseded",
        "-updated_at: 1700000000",
        f"+updated_at: {new.updated_at}",
    ]
    assert store.get(old.id).created_at == 1_700_000_000


@pytest.mark.parametrize("status", ["archived", "superseded"])
def test_superseding_a_record_that_is_not_active_is_refused(store, store_path, status):
    old = store.add("Ana drinks tea", kind="preference")
    if status == "archived":
        store.archive(old.id)
    else:
        store.supersede(old.id, "Ana drinks mate")
    before = snapshot(store_path)
    with pytest.raises(InvalidInput, match=f"is {status}; only an active record"):
        store.supersede(old.id, "Ana drinks coffee")
    assert snapshot(store_path) == before


def test_superseding_with_identical_content_is_refused(store, store_path):
    old = store.add("Ana drinks tea", kind="preference")
    before = snapshot(store_path)
    with pytest.raises(InvalidInput) as err:
        store.supersede(old.id, "  Ana   drinks tea ")
    assert err.value.code == "identical_content"
    assert snapshot(store_path) == before


def test_cli_supersede_json_and_errors(store_path):
    added = lantern("memory", "add", "Tea", "--kind", "fact", "--json", cwd=store_path)
    old_id = json.loads(added.stdout)["id"]
    result = lantern(
        "memory", "supersede", old_id[:6], "Green tea", "--urgency", "30", "--json", cwd=store_path
    )
    assert result.returncode == 0, result.stderr
    new = json.loads(result.stdout)
    assert new["supersedes_id"] == old_id and new["urgency"] == 30 and new["status"] == "active"
    before = snapshot(store_path)
    again = lantern("memory", "supersede", old_id, "Black tea", "--json", cwd=store_path)
    assert again.returncode == 2 and again.stdout == ""
    assert json.loads(again.stderr)["error"]["code"] == "invalid_state"
    same = lantern("memory", "supersede", new["id"], "Green  tea", cwd=store_path)
    assert same.returncode == 2 and "same as the old record" in same.stderr
    missing = lantern("memory", "supersede", "abcdef12", "x", cwd=store_path)
    assert missing.returncode == 3
    assert snapshot(store_path) == before


def test_supersede_refuses_to_sweep_an_uncommitted_hand_edit(store, store_path):
    old = store.add("Ana drinks tea", kind="preference")
    path = store_path / record_path(old.id)
    path.write_text(path.read_text().replace("priority: 50", "priority: 60"))
    before = snapshot(store_path)
    with pytest.raises(UncommittedChanges, match="lantern commit"):
        store.supersede(old.id, "Ana drinks coffee")
    assert snapshot(store_path) == before


# ---------------------------------------------------------------------------- restore


@pytest.mark.parametrize("status", ["archived", "superseded"])
def test_restore_makes_a_record_active_again(store, store_path, status):
    record = store.add("Ana drinks tea", kind="preference")
    if status == "archived":
        store.archive(record.id)
    else:
        store.supersede(record.id, "Ana drinks coffee")
    stored = store.get(record.id)
    assert stored.status == status
    restored = store.restore(record.id, reason="back")
    assert restored.status == "active"
    assert restored.created_at == record.created_at
    assert restored.updated_at >= stored.updated_at
    trailers = parse_trailers(head_message(store_path))
    assert trailers["Lantern-Op"] == ["restore"] and trailers["Lantern-Reason"] == ["back"]
    keys = [
        line[1:].split(":")[0] for line in changed_lines(store_path, "HEAD", record_path(record.id))
    ]
    assert sorted(keys) in (["status", "status"], ["status", "status", "updated_at", "updated_at"])
    assert restored.id in [r.id for r in store.list()]


def test_restoring_an_active_record_makes_no_commit(store, store_path):
    record = store.add("Ana drinks tea", kind="preference")
    before = snapshot(store_path)
    written = store.written(store.restore, record.id)
    assert written.value == record
    assert written.commit is None
    assert snapshot(store_path) == before


def test_cli_restore(store_path):
    record_id = lantern("memory", "add", "Tea", "--kind", "fact", "--quiet", cwd=store_path)
    record_id = record_id.stdout.strip()
    assert lantern("memory", "archive", record_id, cwd=store_path).returncode == 0
    result = lantern("memory", "restore", record_id, "--json", cwd=store_path)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["status"] == "active"
    assert lantern("memory", "restore", "zz", cwd=store_path).returncode == 2


# ---------------------------------------------------------------------------- update


def test_update_touches_only_the_lines_that_changed(store, store_path):
    record = store.add("Ana drinks tea", kind="preference", expires_at=4_000_000_000)
    backdate(store_path, record.id)
    updated = store.update(record.id, priority=90, add_source_refs=["session:1"])
    assert updated.priority == 90 and updated.source_refs == ("session:1",)
    assert updated.created_at == 1_700_000_000
    assert updated.updated_at >= int(time.time()) - 60
    assert updated.expires_at == 4_000_000_000
    assert changed_lines(store_path) == [
        "-priority: 50",
        "+priority: 90",
        "-updated_at: 1700000000",
        f"+updated_at: {updated.updated_at}",
        "+source_refs:",
        "+- session:1",
    ]
    assert parse_trailers(head_message(store_path))["Lantern-Op"] == ["update"]


def test_update_clears_expiry_with_none_and_keeps_created_at(store, store_path):
    record = store.add("Ana drinks tea", kind="preference", expires_at=4_000_000_000)
    updated = store.update(record.id, expires_at=None, urgency=10, confidence=0.5)
    assert updated.expires_at is None and updated.urgency == 10 and updated.confidence == 0.5
    text = (store_path / record_path(record.id)).read_text()
    assert "expires_at" not in text
    assert f"created_at: {record.created_at}\n" in text


def test_update_source_refs_are_added_once(store):
    record = store.add("Ana drinks tea", kind="preference", source_refs=["a"])
    updated = store.update(record.id, add_source_refs=["a", "b"])
    assert updated.source_refs == ("a", "b")


@pytest.mark.parametrize(
    ("changes", "field"),
    [
        ({"priority": 101}, "priority"),
        ({"urgency": -1}, "urgency"),
        ({"confidence": 1.5}, "confidence"),
        ({"expires_at": -5}, "expires_at"),
        ({}, "nothing to update"),
    ],
)
def test_bad_updates_are_refused_and_change_nothing(store, store_path, changes, field):
    record = store.add("Ana drinks tea", kind="preference")
    before = snapshot(store_path)
    with pytest.raises(InvalidInput, match=field):
        store.update(record.id, **changes)
    assert snapshot(store_path) == before


def test_cli_update(store_path):
    record_id = lantern("memory", "add", "Tea", "--kind", "fact", "--quiet", cwd=store_path)
    record_id = record_id.stdout.strip()
    result = lantern(
        "memory",
        "update",
        record_id,
        "--priority",
        "75",
        "--expires-at",
        "2030-01-01",
        "--add-source-ref",
        "file:notes.md",
        "--json",
        cwd=store_path,
    )
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["priority"] == 75 and data["expires_at"] == 1893456000
    assert data["source_refs"] == ["file:notes.md"]
    cleared = lantern(
        "memory", "update", record_id, "--expires-at", "none", "--json", cwd=store_path
    )
    assert json.loads(cleared.stdout)["expires_at"] is None
    before = snapshot(store_path)
    bad = lantern("memory", "update", record_id, "--urgency", "500", "--json", cwd=store_path)
    assert bad.returncode == 2 and "urgency" in json.loads(bad.stderr)["error"]["message"]
    nothing = lantern("memory", "update", record_id, cwd=store_path)
    assert nothing.returncode == 2 and "nothing to update" in nothing.stderr
    assert snapshot(store_path) == before


# ---------------------------------------------------------------------------- expiry


def test_expired_records_are_hidden_by_default_and_keep_their_status(store, store_path):
    now = int(time.time())
    expired = store.add("Old task", kind="task_state", expires_at=now - 10)
    current = store.add("Current task", kind="task_state", expires_at=now + 3600)
    forever = store.add("Standing fact", kind="fact")
    assert {r.id for r in store.list()} == {current.id, forever.id}
    shown = store.list(include_expired=True)
    assert {r.id for r in shown} == {expired.id, current.id, forever.id}
    assert store.get(expired.id).status == "active"
    assert git(store_path, "status", "--porcelain") == ""
    listed = lantern("memory", "list", "--json", cwd=store_path)
    assert expired.id not in listed.stdout
    listed = lantern("memory", "list", "--include-expired", "--json", cwd=store_path)
    assert expired.id in {r["id"] for r in json.loads(listed.stdout)}
    log = git(store_path, "log", "--format=%s")
    assert "archive" not in log


def test_updating_expiry_into_the_future_shows_the_record_again(store):
    record = store.add("Old task", kind="task_state", expires_at=int(time.time()) - 10)
    assert store.list() == []
    store.update(record.id, expires_at=None)
    assert [r.id for r in store.list()] == [record.id]


def test_library_store_reopened_sees_lifecycle_changes(store_path):
    first = Store.open(str(store_path))
    record = first.add("Ana drinks tea", kind="preference")
    first.archive(record.id)
    first.close()
    second = Store.open(str(store_path))
    assert second.get(record.id).status == "archived"
    assert second.list(status="archived")[0].id == record.id
    second.close()


def test_cli_supersede_text_names_the_old_and_the_new_record(store_path):
    old_id = lantern("memory", "add", "Tea", "--kind", "fact", "-q", cwd=store_path).stdout.strip()
    result = lantern("memory", "supersede", old_id, "Green tea", cwd=store_path)
    assert result.returncode == 0, result.stderr
    listed = json.loads(lantern("memory", "list", "--json", cwd=store_path).stdout)
    assert [r["content"] for r in listed] == ["Green tea"]
    new_id = listed[0]["id"]
    assert result.stdout == f"superseded {old_id[:7]} by {new_id[:7]}  Green tea\n"
