"""Reading the past and undoing: ``memory show --at``, ``lantern diff`` and ``lantern revert``.

Real stores in temp folders; the CLI in-process through CliRunner, and as a subprocess where
the index must see what another process wrote.
"""

from __future__ import annotations

import json

from support.cli import lantern
from support.stores import git, snapshot

from lantern_git.git.repo import parse_trailers
from lantern_git.model.record_file import record_path
from lantern_git.store import Store


def ok(run, *args):
    result = run(*args, "--json")
    assert result.exit_code == 0, result.stderr
    return json.loads(result.stdout)


def refused(run, *args) -> tuple[int, dict]:
    result = run(*args, "--json")
    assert result.stdout == ""
    return result.exit_code, json.loads(result.stderr)["error"]


def head(store_path) -> str:
    return git(store_path, "rev-parse", "HEAD").strip()


def _hand_edit(store_path, record_id, old, new):
    path = store_path / record_path(record_id)
    path.write_text(path.read_text().replace(old, new))


# ---------------------------------------------------------------------------- show --at


def test_show_at_reads_the_record_as_it_was_even_after_a_delete(run, store_path):
    record = ok(run, "memory", "add", "Ana likes tea.", "--kind", "preference")
    ok(run, "memory", "update", record["id"], "--priority", "80")
    assert ok(run, "memory", "show", record["id"][:5], "--at", "HEAD~1") == record
    assert ok(run, "memory", "show", record["id"], "--at", "HEAD")["priority"] == 80
    ok(run, "memory", "delete", record["id"])
    assert refused(run, "memory", "show", record["id"]) == (
        3,
        {"code": "not_found", "message": f"no record with id {record['id']}"},
    )
    assert ok(run, "memory", "show", record["id"][:6], "--at", "HEAD~1")["priority"] == 80
    text = run("memory", "show", record["id"], "--at", "HEAD~2")
    assert "priority:      50" in text.stdout and text.stdout.endswith("Ana likes tea.\n")


def test_show_at_refusals(run, store_path):
    record = ok(run, "memory", "add", "Only later.", "--kind", "fact")
    first = git(store_path, "rev-list", "--max-parents=0", "HEAD").strip()
    code, error = refused(run, "memory", "show", record["id"], "--at", first)
    assert (code, error["code"]) == (3, "not_found")
    assert f"at {first}" in error["message"]
    assert refused(run, "memory", "show", record["id"], "--at", "2001-01-01")[0] == 3
    code, error = refused(run, "memory", "show", record["id"], "--at", "no-such-rev")
    assert (code, error["code"]) == (2, "invalid_at")
    assert refused(run, "memory", "show", "xyz!", "--at", "HEAD")[1]["code"] == "invalid_id"


# ---------------------------------------------------------------------------- diff


def test_diff_defaults_to_hand_edits_against_head(run, store_path):
    tea = ok(run, "memory", "add", "Ana likes tea.", "--kind", "preference")
    gone = ok(run, "memory", "add", "Removed by hand.", "--kind", "fact")
    assert ok(run, "diff") == {
        "from": head(store_path),
        "to": None,
        "worktree": True,
        "added": [],
        "removed": [],
        "changed": [],
        "problems": [],
    }
    _hand_edit(store_path, tea["id"], "priority: 50", "priority: 65")
    (store_path / record_path(gone["id"])).unlink()
    new_id = "00000000000000aa"
    new_file = store_path / record_path(new_id)
    new_file.parent.mkdir(parents=True, exist_ok=True)
    new_file.write_text(
        f"---\nid: {new_id}\nkind: fact\ncreated_at: 1700000000\nupdated_at: 1700000000\n---\n"
        "Written by hand.\n"
    )
    value = ok(run, "diff")
    assert [r["id"] for r in value["added"]] == [new_id]
    assert value["removed"] == [gone]
    assert value["changed"] == [
        {
            "id": tea["id"],
            "content": "Ana likes tea.",
            "changes": [{"field": "priority", "old": 50, "new": 65}],
        }
    ]
    text = run("diff").stdout.splitlines()
    assert text == [
        f"added    {new_id[:7]}  Written by hand.",
        f"removed  {gone['id'][:7]}  Removed by hand.",
        f"changed  {tea['id'][:7]}  Ana likes tea.",
        "    priority: 50 -> 65",
    ]
    # Reviewing changes nothing.
    before = snapshot(store_path)
    run("diff")
    assert snapshot(store_path) == before


def test_diff_between_two_revisions_and_a_revision_against_the_working_tree(run, store_path):
    start = head(store_path)
    old = ok(run, "memory", "add", "Ana likes tea.", "--kind", "preference")
    new = ok(run, "memory", "supersede", old["id"], "Ana likes green tea.")
    ok(run, "memory", "archive", new["id"])
    value = ok(run, "diff", start, "HEAD~1")
    assert (value["from"], value["worktree"]) == (start, False)
    assert value["to"] == git(store_path, "rev-parse", "HEAD~1").strip()
    assert {r["id"] for r in value["added"]} == {old["id"], new["id"]}
    changes = ok(run, "diff", "HEAD~2", "HEAD")
    assert [r["id"] for r in changes["added"]] == [new["id"]]
    by_id = {c["id"]: c["changes"] for c in changes["changed"]}
    assert {"field": "status", "old": "active", "new": "superseded"} in by_id[old["id"]]
    # One revision: against the working files.
    _hand_edit(store_path, new["id"], "urgency: 0", "urgency: 9")
    one = ok(run, "diff", "HEAD~1")
    [change] = one["changed"]
    fields = {c["field"]: (c["old"], c["new"]) for c in change["changes"]}
    assert fields["status"] == ("active", "archived") and fields["urgency"] == (0, 9)
    assert one["to"] is None and one["worktree"] is True


def test_diff_lists_a_broken_file_as_a_problem_and_bad_revisions_are_refused(run, store_path):
    record = ok(run, "memory", "add", "Will break.", "--kind", "fact")
    _hand_edit(store_path, record["id"], "kind: fact", "kind: mood")
    value = ok(run, "diff")
    assert value["changed"] == []
    [problem] = value["problems"]
    assert problem["path"] == record_path(record["id"]) and "kind" in problem["message"]
    code, error = refused(run, "diff", "no-such-rev")
    assert (code, error["code"]) == (2, "invalid_at")


# ---------------------------------------------------------------------------- revert


def test_revert_undoes_one_change_and_keeps_a_later_change_to_another_field(store_path):
    cli = ("--store", str(store_path))
    added = json.loads(
        lantern(*cli, "memory", "add", "Ship Friday.", "--kind", "goal", "--json").stdout
    )
    lantern(*cli, "memory", "update", added["id"], "--priority", "80")
    target = head(store_path)
    lantern(*cli, "memory", "archive", added["id"])
    lantern(*cli, "memory", "update", added["id"], "--urgency", "40")
    result = lantern(*cli, "revert", target, "--reason", "too high", "--json")
    assert result.returncode == 0, result.stderr
    value = json.loads(result.stdout)
    assert value == {
        "reverted": target,
        "commit": head(store_path),
        "records": [added["id"]],
        "summary": f"update {added['id']}: Ship Friday.",
    }
    # Another process reads it back through the index: priority undone, the rest kept.
    [now] = json.loads(lantern(*cli, "memory", "list", "--status", "all", "--json").stdout)
    assert (now["priority"], now["status"], now["urgency"]) == (50, "archived", 40)
    assert now["updated_at"] >= added["updated_at"]
    message = git(store_path, "log", "-1", "--format=%B")
    assert message.splitlines()[0] == f"revert {target[:10]}: update {added['id']}: Ship Friday."
    trailers = parse_trailers(message)
    assert trailers["Lantern-Op"] == ["revert"]
    assert trailers["Lantern-Record"] == [added["id"]]
    assert trailers["Lantern-Reverts"] == [target]
    assert trailers["Lantern-Reason"] == ["too high"]
    # Only the priority line changed, and updated_at where a second has passed.
    diff = git(store_path, "show", "--format=", "-U0", "HEAD")
    changed = {
        line.split(":")[0]
        for line in diff.splitlines()
        if line.startswith(("+", "-")) and not line.startswith(("+++", "---"))
    }
    assert (
        {"-priority", "+priority"}
        <= changed
        <= {
            "-priority",
            "+priority",
            "-updated_at",
            "+updated_at",
        }
    )
    assert git(store_path, "status", "--porcelain") == ""
    # Again: nothing left to undo, no commit.
    again = lantern(*cli, "revert", target)
    assert again.returncode == 0
    assert again.stdout == f"nothing to revert: the changes of {target[:10]} are already undone\n"
    assert head(store_path) == value["commit"]


def test_revert_of_a_delete_a_supersede_and_an_add(store):
    keep = store.add("Deleted then restored.", kind="fact")
    deletion = store.written(store.delete, keep.id).commit
    assert deletion is not None
    reverted = store.written(store.revert, deletion)
    assert store.get(keep.id).content == "Deleted then restored."
    assert reverted.commit is not None
    old = store.add("Old wording.", kind="fact")
    new = store.written(store.supersede, old.id, "New wording.")
    assert new.commit is not None
    result = store.revert(new.commit)
    assert sorted(result.records) == sorted([old.id, new.value.id])
    assert store.get(old.id).status == "active"
    assert [r.id for r in store.list(status="all") if r.id == new.value.id] == []
    extra = store.written(store.add, "Added by mistake.", kind="fact")
    assert extra.commit is not None
    undo = store.written(store.revert, extra.commit)
    assert extra.value.id not in {r.id for r in store.list(status="all")}
    # A revert of a revert puts the change back.
    assert undo.commit is not None
    store.revert(undo.commit)
    assert store.get(extra.value.id).content == "Added by mistake."


def _conflicting(run, store_path):
    record = ok(run, "memory", "add", "Priority fought over.", "--kind", "fact")
    ok(run, "memory", "update", record["id"], "--priority", "70")
    target = head(store_path)
    ok(run, "memory", "update", record["id"], "--priority", "90")
    return record, target


def test_revert_refuses_a_later_change_to_the_same_field(run, store_path):
    record, target = _conflicting(run, store_path)
    before = snapshot(store_path)
    code, error = refused(run, "revert", target)
    assert (code, error["code"]) == (2, "revert_conflict")
    assert error["message"] == (
        f"record {record['id']}: priority changed again after {target[:10]}; undoing it would "
        "overwrite the newer value (change it with lantern memory update or edit instead); "
        "nothing was written"
    )
    assert snapshot(store_path) == before


def test_revert_refuses_an_added_record_changed_since(run, store_path):
    record = ok(run, "memory", "add", "Added, then changed.", "--kind", "fact")
    added = head(store_path)
    ok(run, "memory", "update", record["id"], "--urgency", "5")
    before = snapshot(store_path)
    code, error = refused(run, "revert", added)
    assert (code, error["code"]) == (2, "revert_conflict")
    assert "was added by" in error["message"] and "lantern memory delete" in error["message"]
    assert snapshot(store_path) == before


def test_revert_refuses_uncommitted_hand_edits_to_the_same_record(run, store_path):
    record = ok(run, "memory", "add", "Edited by hand.", "--kind", "fact")
    ok(run, "memory", "update", record["id"], "--priority", "70")
    target = head(store_path)
    _hand_edit(store_path, record["id"], "urgency: 0", "urgency: 3")
    before = snapshot(store_path)
    code, error = refused(run, "revert", target)
    assert (code, error["code"]) == (1, "uncommitted_changes")
    assert record_path(record["id"]) in error["message"]
    assert snapshot(store_path) == before


def test_revert_refuses_commits_that_are_not_one_lantern_change(run, store_path, tmp_path):
    record = ok(run, "memory", "add", "Shared.", "--kind", "fact")
    init = git(store_path, "rev-list", "--max-parents=0", "HEAD").strip()
    # A commit made with plain git.
    _hand_edit(store_path, record["id"], "priority: 50", "priority: 55")
    git(store_path, "commit", "-qam", "by hand")
    plain = head(store_path)
    # A merge commit: a branch merged back with git.
    git(store_path, "checkout", "-qb", "side", "HEAD~1")
    other = Store.open(str(store_path)).add("From the side branch.", kind="fact")
    git(store_path, "checkout", "-q", "main")
    git(store_path, "merge", "-q", "--no-edit", "side")
    merge = head(store_path)
    assert other.id
    before = snapshot(store_path)
    cases = {
        plain: "not_lantern_commit",
        merge: "merge_commit",
        init: "not_records",
        "no-such-commit": "invalid_revision",
    }
    for rev, expected in cases.items():
        code, error = refused(run, "revert", rev)
        assert (code, error["code"]) == (2, expected), error
        assert snapshot(store_path) == before
    git(store_path, "branch", "-q", "elsewhere", "HEAD")
    git(store_path, "checkout", "-q", "elsewhere")
    Store.open(str(store_path)).add("Not on main.", kind="fact")
    off_branch = head(store_path)
    git(store_path, "checkout", "-q", "main")
    code, error = refused(run, "revert", off_branch)
    assert (code, error["code"]) == (2, "not_in_history")


def test_hand_edits_to_other_records_stay_uncommitted_through_a_revert(run, store_path):
    target_record = ok(run, "memory", "add", "Reverted.", "--kind", "fact")
    other = ok(run, "memory", "add", "Edited by hand meanwhile.", "--kind", "fact")
    ok(run, "memory", "update", target_record["id"], "--priority", "70")
    _hand_edit(store_path, other["id"], "urgency: 0", "urgency: 8")
    ok(run, "revert", "HEAD")
    assert git(store_path, "show", "--format=", "--name-only", "HEAD") == (
        record_path(target_record["id"]) + "\n"
    )
    assert git(store_path, "status", "--porcelain") == f" M {record_path(other['id'])}\n"
    assert "urgency: 8" in (store_path / record_path(other["id"])).read_text()
