"""``lantern memory delete``: the one way lantern removes a record, for data stored by mistake.

The CLI in-process through CliRunner, the sync between real clones of a bare remote, and the
purge docs/usage.md describes, run with git's own filter-branch.
"""

from __future__ import annotations

import json

import pytest
from support.stores import git, snapshot
from support.sync import assert_clean_and_valid, merge_message

from lantern_git.model.record_file import record_path
from lantern_git.store import Store


def _add(run, content: str) -> dict:
    result = run("memory", "add", content, "--kind", "fact", "--json")
    assert result.exit_code == 0, result.stderr
    return json.loads(result.stdout)


def test_delete_removes_the_file_in_one_commit_with_provenance(run, store_path):
    keep = _add(run, "Ana prefers tea.")
    secret = _add(run, "The API key is sk-0123.")
    head = git(store_path, "rev-parse", "HEAD").strip()
    result = run("memory", "delete", secret["id"][:6], "--reason", "stored by mistake", "--json")
    assert result.exit_code == 0, result.stderr
    value = json.loads(result.stdout)
    assert value == {
        "id": secret["id"],
        "commit": git(store_path, "rev-parse", "HEAD").strip(),
        "record": secret,
    }
    assert git(store_path, "rev-parse", "HEAD~1").strip() == head
    message = git(store_path, "log", "-1", "--format=%B")
    assert message == (
        f"delete {secret['id']}\n\n"
        "Lantern-Op: delete\n"
        f"Lantern-Record: {secret['id']}\n"
        "Lantern-Actor: cli\n"
        "Lantern-Reason: stored by mistake\n\n"
    )
    assert git(store_path, "show", "--format=", "--name-status", "HEAD") == (
        f"D\t{record_path(secret['id'])}\n"
    )
    assert (
        not (store_path / "memory" / secret["id"][:2]).exists()
        or secret["id"][:2] == (keep["id"][:2])
    )
    assert git(store_path, "status", "--porcelain") == ""
    listed = json.loads(run("memory", "list", "--status", "all", "--json").stdout)
    assert [r["id"] for r in listed] == [keep["id"]]
    assert json.loads(run("memory", "search", "key", "--json").stdout) == []
    # History keeps the text: the record's history by its full id, and git.
    history = json.loads(run("memory", "history", secret["id"], "--json").stdout)
    assert [e["op"] for e in history["history"]] == ["delete", "add"]
    assert "sk-0123" in git(store_path, "show", f"HEAD~1:{record_path(secret['id'])}")


def test_delete_text_output_and_an_add_brings_the_record_back(run, store_path):
    record = _add(run, "Written by mistake.")
    result = run("memory", "delete", record["id"])
    assert result.exit_code == 0, result.stderr
    assert result.stdout == f"deleted {record['id'][:7]}  Written by mistake.\n"
    again = run("memory", "add", "Written by mistake.", "--kind", "fact")
    assert again.stdout.startswith("added ")
    history = run("memory", "history", record["id"][:8])
    assert "(the record file was deleted in this commit)" in history.stdout
    assert "content: Written by mistake. -> (none)" not in history.stdout


@pytest.mark.parametrize(
    ("args", "exit_code", "code"),
    [
        (["0123456789abcdef"], 3, "not_found"),
        (["01"], 2, "invalid_id"),
        (["zzzz"], 2, "invalid_id"),
        ([], 2, "usage_error"),
    ],
)
def test_delete_refusals_change_nothing(run, store_path, args, exit_code, code):
    _add(run, "Stays.")
    before = snapshot(store_path)
    result = run("memory", "delete", *args, "--json")
    assert result.exit_code == exit_code
    assert result.stdout == ""
    assert json.loads(result.stderr)["error"]["code"] == code
    assert snapshot(store_path) == before


def test_delete_refuses_a_record_with_uncommitted_hand_edits(run, store_path):
    record = _add(run, "Edited by hand.")
    path = store_path / record_path(record["id"])
    path.write_text(path.read_text().replace("priority: 50", "priority: 60"))
    before = snapshot(store_path)
    result = run("memory", "delete", record["id"])
    assert result.exit_code == 1
    assert "has uncommitted changes; commit them first" in result.stderr
    assert snapshot(store_path) == before


def test_library_delete_returns_the_record_and_the_commit(store):
    record = store.add("Library record.", kind="fact")
    written = store.written(store.delete, record.id[:5])
    deletion = written.value
    assert deletion.record == record
    assert deletion.commit == written.commit
    assert store.list(status="all") == []
    assert "Lantern-Actor: api" in git(store.root, "log", "-1", "--format=%B")


# ---------------------------------------------------------------------------- sync


def _hosts(tmp_path):
    from support.sync import clone_host, first_host, make_remote

    remote = make_remote(tmp_path)
    a = first_host(tmp_path, remote)
    return a, clone_host(tmp_path, remote, "b")


def test_a_delete_on_one_host_and_a_change_on_the_other_keeps_the_change(tmp_path):
    a, b = _hosts(tmp_path)
    record = a.add("Deleted on a, changed on b.")
    a.sync()
    b.sync()
    a.store.delete(record.id, reason="stored by mistake")
    b.store.update(record.id, priority=77)
    a.sync()
    report = b.sync()
    assert b.read(record.id).priority == 77
    assert report.to_dict()["merged"] == [
        {"id": record.id, "fields": [], "note": "deleted remote; kept"}
    ]
    assert f"Lantern-Record: {record.id} (deleted remote; kept)" in merge_message(b)
    a.sync()
    assert a.read(record.id).priority == 77
    assert a.memory() == b.memory()
    assert_clean_and_valid(a, b)


def test_a_delete_reaches_a_host_that_did_not_change_the_record(tmp_path):
    a, b = _hosts(tmp_path)
    gone, kept = a.add("Delete me."), a.add("Leave me.")
    a.sync()
    b.sync()
    b.add("Added on b meanwhile.")
    a.store.delete(gone.id)
    a.sync()
    report = b.sync().to_dict()
    assert report["records"]["removed"] == [gone.id]
    assert not (b.path / record_path(gone.id)).exists()
    assert kept.id in {r.id for r in b.store.list()}
    a.sync()
    assert a.memory() == b.memory()
    assert_clean_and_valid(a, b)


def test_the_purge_the_readme_describes_removes_the_text_from_history(store_path):
    store = Store.open(str(store_path))
    secret = store.add("The door code is 4711.", kind="fact")
    store.add("Harmless.", kind="fact")
    store.delete(secret.id)
    path = record_path(secret.id)
    assert "4711" in git(store_path, "log", "--all", "-p")
    git(
        store_path,
        "-c",
        "advice.filterBranch=false",
        "filter-branch",
        "--force",
        "--index-filter",
        f"git rm --cached --ignore-unmatch {path}",
        "--prune-empty",
        "--",
        "--all",
    )
    git(store_path, "update-ref", "-d", "refs/original/refs/heads/main")
    git(store_path, "reflog", "expire", "--expire=now", "--all")
    git(store_path, "gc", "--prune=now", "--quiet")
    assert "4711" not in git(store_path, "log", "--all", "-p")
    assert git(store_path, "status", "--porcelain") == ""
    assert [r.content for r in Store.open(str(store_path)).list()] == ["Harmless."]
