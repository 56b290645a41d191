"""lantern sync between clones of a bare remote: real git repositories in temp folders."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pygit2
import pytest
from support.cli import lantern
from support.stores import git, init_repo, snapshot
from support.sync import (
    Host,
    assert_clean_and_valid,
    before_push,
    clone_host,
    cross_merge,
    first_host,
    make_remote,
    merge_message,
    merged_by_git,
)

from lantern_git.errors import GitError, InvalidInput, UncommittedChanges
from lantern_git.git.config import merge_driver_command
from lantern_git.git.repo import parse_trailers
from lantern_git.model.record import Record
from lantern_git.model.record_file import record_path
from lantern_git.model.record_merge import merge_records
from lantern_git.store import Store


@pytest.fixture
def remote(tmp_path) -> Path:
    return make_remote(tmp_path)


@pytest.fixture
def pair(tmp_path, remote) -> tuple[Host, Host]:
    a = first_host(tmp_path, remote)
    return a, clone_host(tmp_path, remote, "b")


# ---------------------------------------------------------------------------- set-up


def test_first_sync_pushes_to_an_empty_remote_and_sets_the_upstream(tmp_path, remote):
    path = tmp_path / "solo"
    init_repo(path)
    Store.init(str(path)).close()
    git(path, "remote", "add", "origin", str(remote))
    report = Host(path).sync()
    assert report.remote_head is None
    assert report.pushed and report.set_upstream
    assert git(path, "rev-parse", "--abbrev-ref", "main@{upstream}").strip() == "origin/main"
    assert git(remote, "rev-parse", "main").strip() == git(path, "rev-parse", "HEAD").strip()


def test_init_and_sync_register_the_merge_driver_in_local_config(pair):
    a, b = pair
    for host in (a, b):
        assert git(host.path, "config", "--local", "merge.lantern.driver").strip() == (
            merge_driver_command()
        )
    git(b.path, "config", "--local", "--remove-section", "merge.lantern")
    b.sync()
    assert "merge-file %O %A %B %P" in git(b.path, "config", "--local", "merge.lantern.driver")
    assert sys.executable in git(b.path, "config", "--local", "merge.lantern.driver")
    attributes = git(b.path, "check-attr", "merge", "--", "memory/ab/abcdefabcdefabcd.md")
    assert attributes.strip().endswith("merge: lantern")
    assert git(b.path, "check-attr", "merge", "--", "notes.md").strip().endswith("unspecified")


# ---------------------------------------------------------------------------- merging


def test_disjoint_adds_meet_on_both_hosts(pair):
    a, b = pair
    one = a.add("Ana drinks tea.")
    two = b.add("Ben drinks coffee.")
    a.sync()
    report = b.sync()
    assert report.merge_commits and report.added == [one.id]
    assert a.sync().fast_forward
    assert a.memory() == b.memory()
    assert {r.id for r in b.store.list()} == {one.id, two.id}
    assert {r.id for r in a.store.list()} == {one.id, two.id}
    assert_clean_and_valid(a, b)
    trailers = parse_trailers(merge_message(b))
    assert trailers["Lantern-Op"] == ["merge"]
    assert trailers["Lantern-Actor"] == ["sync"]
    assert "Lantern-Record" not in trailers


def test_archived_on_one_side_reprioritised_on_the_other(pair):
    a, b = pair
    record = a.add("Ana prefers separate branches.")
    a.sync()
    b.sync()
    a.store.archive(record.id)
    b.store.update(record.id, priority=95)
    a.sync()
    report = b.sync()
    merged = b.read(record.id)
    assert (merged.status, merged.priority) == ("archived", 95)
    assert [r.id for r in report.merged] == [record.id]
    assert report.merged[0].to_dict()["fields"] == []
    assert f"Lantern-Record: {record.id}\n" in merge_message(b)
    a.sync()
    assert a.memory() == b.memory()
    assert_clean_and_valid(a, b)


def test_the_same_field_changed_differently_is_listed_and_decided_by_the_rule(pair):
    a, b = pair
    record = a.add("Deploys happen on Fridays.", priority=50)
    a.sync()
    b.sync()
    later = record.updated_at + 100
    a.hand_edit(record.id, priority=90, status="archived", updated_at=later)
    b.hand_edit(record.id, priority=10, updated_at=later + 5)
    a.sync()
    result = lantern("sync", "--json", "--store", str(b.path))
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    [item] = report["merged"]
    assert item["id"] == record.id
    assert item["fields"] == [
        {"field": "priority", "base": 50, "local": 10, "remote": 90, "merged": 10}
    ]
    merged = b.read(record.id)
    assert (merged.priority, merged.status, merged.updated_at) == (10, "archived", later + 5)
    assert f"Lantern-Record: {record.id} (priority)" in merge_message(b)
    a.sync()
    assert a.memory() == b.memory()
    # Both values stay reachable: each parent of the merge holds its own side.
    for parent, value in (("HEAD^1", 10), ("HEAD^2", 90)):
        text = git(b.path, "show", f"{parent}:{record_path(record.id)}")
        assert Record.from_markdown(text).priority == value


def test_merge_result_does_not_depend_on_which_host_merges(tmp_path):
    """Two identical histories, merged once from each side: byte-identical record files."""
    results = []
    for order in ("ab", "ba"):
        root = tmp_path / order
        root.mkdir()
        remote = make_remote(root)
        a = first_host(root, remote)
        record = a.add("Shared record.", source_refs=["s:1"])
        a.sync()
        b = clone_host(root, remote, "b")
        # Fixed times, so both runs hold the very same values.
        stamp, born = 1_800_000_000, 1_700_000_000
        a.hand_edit(record.id, priority=70, content="Shared record, A.", created_at=born)
        b.hand_edit(record.id, priority=30, content="Shared record, B.", created_at=born)
        a.hand_edit(record.id, source_refs=("s:1", "s:a"), updated_at=stamp)
        b.hand_edit(record.id, source_refs=("s:1", "s:b"), urgency=5, updated_at=stamp)
        first, second = (a, b) if order == "ab" else (b, a)
        first.sync()
        second.sync()
        first.sync()
        assert first.memory() == second.memory()
        results.append(second.memory())
        merged = second.read(record.id)
        assert (merged.priority, merged.urgency) == (70, 5)
        assert merged.content == "Shared record, B."
        assert merged.source_refs == ("s:1", "s:a", "s:b")
    assert results[0] == results[1]


def test_concurrent_supersedes_keep_both_replacements(pair):
    a, b = pair
    old = a.add("The office is in Lyon.", kind="fact")
    a.sync()
    b.sync()
    new_a = a.store.supersede(old.id, "The office is in Paris.")
    new_b = b.store.supersede(old.id, "The office is in Berlin.")
    a.sync()
    b.sync()
    a.sync()
    assert a.memory() == b.memory()
    assert b.read(old.id).status == "superseded"
    for new in (new_a, new_b):
        assert b.read(new.id).supersedes_id == old.id
    assert_clean_and_valid(a, b)


def test_added_on_both_sides_with_the_same_id(pair):
    a, b = pair
    one = a.add("Same words.", priority=20, source_refs=["a:1"])
    two = b.add("Same words.", priority=80, source_refs=["b:1"])
    assert one.id == two.id
    a.sync()
    report = b.sync()
    merged = b.read(one.id)
    assert set(merged.source_refs) == {"a:1", "b:1"}
    assert merged.priority in (20, 80)
    assert [r.id for r in report.merged] == [one.id]
    a.sync()
    assert a.memory() == b.memory()


def test_a_record_deleted_by_hand_on_one_side_and_changed_on_the_other_is_kept(pair):
    a, b = pair
    record = a.add("Keep me.")
    a.sync()
    b.sync()
    git(a.path, "rm", "-q", record_path(record.id))
    git(a.path, "commit", "-q", "-m", "remove by hand")
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
    assert_clean_and_valid(a, b)


@pytest.mark.parametrize("local_change", [False, True], ids=["fast-forward", "merge"])
def test_a_record_deleted_by_hand_on_one_side_and_unchanged_on_the_other_is_removed(
    pair, local_change
):
    """Like git: a deletion committed with plain git reaches a host that did not touch it."""
    a, b = pair
    gone = a.add("Delete me by hand.")
    kept = a.add("Leave me be.")
    a.sync()
    b.sync()
    git(a.path, "rm", "-q", record_path(gone.id))
    git(a.path, "commit", "-q", "-m", "remove by hand")
    a.sync()
    other = b.add("Added on b meanwhile.") if local_change else None
    result = lantern("sync", "--json", "--store", str(b.path))
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["records"] == {"added": [], "changed": [], "removed": [gone.id]}
    assert report["merged"] == [], "not a two-sided change: nothing to report per record"
    if local_change:
        assert not report["fast_forward"] and len(report["merge_commits"]) == 1
        assert "Lantern-Record" not in parse_trailers(merge_message(b))
    else:
        assert report["fast_forward"] and report["merge_commits"] == []
    from lantern_git.cli.render import sync_lines

    assert "records: 1 removed" in sync_lines(report)
    assert not (b.path / record_path(gone.id)).exists()
    listed = {r.id for r in b.store.list(status="all")}
    assert listed == {kept.id} | ({other.id} if other else set())
    # Still in history: the commit before the deletion holds the file.
    assert git(b.path, "log", "--format=%s", "--diff-filter=D", "--", record_path(gone.id)) == (
        "remove by hand\n"
    )
    a.sync()
    assert a.memory() == b.memory()
    assert_clean_and_valid(a, b)


def test_three_clones_converge(tmp_path, remote):
    a = first_host(tmp_path, remote)
    shared = a.add("Everyone sees this.")
    a.sync()
    b = clone_host(tmp_path, remote, "b")
    c = clone_host(tmp_path, remote, "c")
    a.store.update(shared.id, urgency=40)
    b.store.archive(shared.id)
    c.store.update(shared.id, add_source_refs=["c:1"])
    added = {h: h.add(f"Only on {h.path.name}.").id for h in (a, b, c)}
    for host in (c, a, b, c, a, b):
        host.sync()
    assert a.memory() == b.memory() == c.memory()
    final = c.read(shared.id)
    assert (final.urgency, final.status, final.source_refs) == (40, "archived", ("c:1",))
    assert all((c.path / record_path(i)).exists() for i in added.values())
    assert_clean_and_valid(a, b, c)


# ---------------------------------------------------------------------------- pushing


def test_a_remote_that_moves_during_sync_is_merged_again(tmp_path, remote):
    a = first_host(tmp_path, remote)
    c = clone_host(tmp_path, remote, "c")
    late = c.add("Pushed while a was syncing.")
    # Between a's fetch and a's push, c pushes: a real race, staged with git's pre-push hook.
    moved = before_push(a, tmp_path, 1, f'git -C "{c.path}" push -q origin main')
    mine = a.add("Written on a.")
    report = a.sync()
    assert moved.read_text().strip() == "1"
    assert report.attempts == 2 and report.pushed
    assert report.added == [late.id]
    assert git(remote, "rev-parse", "main").strip() == a.head()
    c.sync()
    assert c.memory() == a.memory()
    assert (c.path / record_path(mine.id)).exists()


def test_no_push_merges_locally_only(pair, remote):
    a, b = pair
    a.add("From a.")
    a.sync()
    b.add("From b.")
    before = git(remote, "rev-parse", "main").strip()
    report = b.sync(push=False)
    assert report.merge_commits and not report.pushed
    assert git(remote, "rev-parse", "main").strip() == before
    result = lantern("sync", "--store", str(b.path))
    assert result.returncode == 0, result.stderr
    assert "pushed" in result.stdout
    assert git(remote, "rev-parse", "main").strip() == b.head()


def test_never_force_pushes(pair, remote):
    """A push the remote would only take by force fails, and leaves the remote alone."""
    a, b = pair
    a.add("On the remote.")
    a.sync()
    b.add("Local only.")
    # A pre-receive hook that refuses everything: the push fails, nothing is forced.
    hook = remote / "hooks" / "pre-receive"
    hook.write_text("#!/bin/sh\necho 'closed for maintenance' >&2\nexit 1\n")
    hook.chmod(0o755)
    before = git(remote, "rev-parse", "main").strip()
    result = lantern("sync", "--json", "--store", str(b.path))
    assert result.returncode == 1
    error = json.loads(result.stderr)["error"]
    assert error["code"] == "git_error"
    assert "closed for maintenance" in error["message"] or "rejected" in error["message"]
    assert git(remote, "rev-parse", "main").strip() == before
    assert b.status() == ""


# ---------------------------------------------------------------------------- refusals


def test_refuses_uncommitted_hand_edits_and_changes_nothing(pair, remote):
    a, b = pair
    record = a.add("Original words.")
    a.sync()
    b.sync()
    a.add("Something new on the remote.")
    a.sync()
    path = b.path / record_path(record.id)
    path.write_text(path.read_text().replace("Original words.", "Edited by hand."))
    before = snapshot(b.path)
    remote_before = git(remote, "rev-parse", "main").strip()
    result = lantern("sync", "--store", str(b.path))
    assert result.returncode == 1
    assert "lantern commit" in result.stderr
    assert record_path(record.id) in result.stderr
    assert snapshot(b.path) == before
    assert git(remote, "rev-parse", "main").strip() == remote_before
    with pytest.raises(UncommittedChanges):
        b.sync()


def test_untracked_record_files_also_block(pair):
    _, b = pair
    stray = b.path / "memory" / "ab" / "abababababababab.md"
    stray.parent.mkdir(parents=True)
    stray.write_text("---\n---\n")
    with pytest.raises(UncommittedChanges, match=r"memory/ab/abababababababab\.md"):
        b.sync()


def test_an_untracked_file_where_an_incoming_commit_adds_one_stops_the_sync_untouched(pair):
    """An untracked file outside lantern's folders does not stop a sync, unless the incoming
    commit brings a file of that name: then it would be overwritten, so nothing moves."""
    a, b = pair
    (a.path / "NOTES.txt").write_text("from a\n")
    git(a.path, "add", "NOTES.txt")
    git(a.path, "commit", "-q", "-m", "notes")
    a.sync()
    (b.path / "NOTES.txt").write_text("b's own, never committed\n")
    before = snapshot(b.path)
    with pytest.raises(UncommittedChanges, match=r"^NOTES\.txt has uncommitted changes"):
        b.sync()
    assert snapshot(b.path) == before


def test_conflicting_changes_outside_memory_stop_the_sync_untouched(pair):
    a, b = pair
    for host, line in ((a, "from a\n"), (b, "from b\n")):
        (host.path / "NOTES.txt").write_text(line)
        git(host.path, "add", "NOTES.txt")
        git(host.path, "commit", "-q", "-m", "notes")
    a.sync()
    before = snapshot(b.path)
    with pytest.raises(GitError, match=r"NOTES\.txt.*git pull --no-rebase") as err:
        b.sync()
    assert err.value.code == "merge_conflict"
    assert snapshot(b.path) == before


def test_mergeable_changes_outside_memory_merge_like_git(pair):
    a, b = pair
    (a.path / "NOTES.txt").write_text("one\ntwo\nthree\nfour\nfive\n")
    git(a.path, "add", "NOTES.txt")
    git(a.path, "commit", "-q", "-m", "notes")
    a.sync()
    b.sync()
    for host, old, new in ((a, "one", "ONE"), (b, "five", "FIVE")):
        notes = host.path / "NOTES.txt"
        notes.write_text(notes.read_text().replace(old, new))
        git(host.path, "commit", "-q", "-am", "edit notes")
    a.sync()
    b.sync()
    assert (b.path / "NOTES.txt").read_text() == "ONE\ntwo\nthree\nfour\nFIVE\n"
    assert b.status() == ""


def test_no_remote_and_unknown_remote_are_clear_errors(tmp_path, store_path):
    result = lantern("sync", "--json", "--store", str(store_path))
    assert result.returncode == 1
    assert json.loads(result.stderr)["error"]["code"] == "no_remote"
    result = lantern("sync", "nowhere", "--json", "--store", str(store_path))
    assert result.returncode == 2
    assert json.loads(result.stderr)["error"]["code"] == "unknown_remote"
    with pytest.raises(InvalidInput):
        Store.open(str(store_path)).sync("nowhere")


def test_a_missing_ssh_server_is_an_error_not_a_hang(tmp_path, store_path):
    git(store_path, "remote", "add", "origin", "ssh://git@127.0.0.1:1/store.git")
    result = lantern("sync", "--json", "--store", str(store_path), timeout=120)
    assert result.returncode == 1
    error = json.loads(result.stderr)["error"]
    assert error["code"] == "git_error"
    assert "git fetch origin failed" in error["message"]


# ---------------------------------------------------------------------------- remotes


@pytest.mark.parametrize("form", ["path", "file-url"])
def test_sync_with_a_url_or_path_instead_of_a_named_remote(tmp_path, remote, form):
    a = first_host(tmp_path, remote)
    a.add("Over a URL.")
    a.sync()
    other = tmp_path / "other"
    init_repo(other)
    Store.init(str(other)).close()
    host = Host(other)
    host.add("Started apart.")
    target = str(remote) if form == "path" else remote.as_uri()
    report = host.sync(target)
    assert report.merge_commits and report.pushed and not report.set_upstream
    a.sync()
    assert a.memory() == host.memory()
    assert len(a.memory()) == 2


def test_unrelated_non_lantern_remote_is_refused(tmp_path, store_path):
    foreign = tmp_path / "foreign"
    init_repo(foreign)
    (foreign / "README").write_text("not a store\n")
    git(foreign, "add", "README")
    git(foreign, "commit", "-q", "-m", "x")
    git(store_path, "remote", "add", "origin", str(foreign))
    before = snapshot(store_path)
    with pytest.raises(GitError, match="not a lantern store") as err:
        Store.open(str(store_path)).sync(push=False)
    assert err.value.code == "unrelated_histories"
    assert snapshot(store_path) == before


def test_sync_on_a_path_that_is_not_a_store(tmp_path):
    result = lantern("sync", "--store", str(tmp_path / "nothing"))
    assert result.returncode == 1
    assert "not a lantern store" in result.stderr


# ---------------------------------------------------------------------------- plain git


def test_plain_git_pull_uses_the_record_merge_driver(pair):
    a, b = pair
    record = a.add("Pulled with plain git.", priority=50)
    a.sync()
    b.sync()
    stamp = record.updated_at + 50
    a.hand_edit(record.id, priority=90, urgency=7, updated_at=stamp)
    b.hand_edit(record.id, priority=10, status="archived", updated_at=stamp + 1)
    a.sync()
    path = record_path(record.id)
    base = git(b.path, "show", f"HEAD^:{path}")
    ours = (b.path / path).read_text()
    theirs = git(a.path, "show", f"HEAD:{path}")
    git(b.path, "pull", "-q", "--no-rebase", "--no-edit", "origin", "main")
    text = (b.path / path).read_text()
    assert text == merge_records(base, ours, theirs, path).text
    merged = Record.from_markdown(text)
    assert (merged.priority, merged.urgency, merged.status) == (10, 7, "archived")
    assert_clean_and_valid(b)
    # The store stays usable, and sync carries the merge back to a.
    assert b.read(record.id).priority == 10
    b.sync()
    a.sync()
    assert a.memory() == b.memory()


def test_git_pull_leaves_a_conflict_when_no_side_is_a_valid_record(pair):
    a, b = pair
    record = a.add("Both broken.")
    a.sync()
    b.sync()
    path = record_path(record.id)
    for host, junk in ((a, "junk from a\n"), (b, "junk from b\n")):
        (host.path / path).write_text(junk)
        git(host.path, "commit", "-q", "-am", "break it")
    git(a.path, "push", "-q", "origin", "main")
    result = lantern("sync", "--store", str(b.path))
    assert result.returncode == 1
    assert path in result.stderr
    pulled = git(b.path, "pull", "--no-rebase", "--no-edit", "origin", "main", check=False)
    assert "CONFLICT" in pulled
    assert (b.path / path).read_text() == "junk from b\n"
    git(b.path, "merge", "--abort")


def test_index_sees_pulled_records_and_status_is_clean(pair):
    a, b = pair
    ids = {a.add(f"Record number {n}.").id for n in range(5)}
    a.sync()
    b.sync()
    assert {r.id for r in b.store.list()} == ids
    assert b.status() == ""
    listed = lantern("memory", "list", "--json", "--store", str(b.path))
    assert {r["id"] for r in json.loads(listed.stdout)} == ids
    assert os.path.exists(b.path / ".lantern")


def test_criss_cross_history_merges_like_git_does(tmp_path, remote):
    """Two merge bases (hosts that merged each other at once): a virtual base, as git's ort."""
    a = first_host(tmp_path, remote)
    record = a.add("Criss-cross record.", priority=50)
    other = a.add("Untouched record.")
    a.sync()
    b = clone_host(tmp_path, remote, "b")
    stamp = record.updated_at + 10
    a.hand_edit(record.id, priority=60, updated_at=stamp)
    b.hand_edit(record.id, urgency=9, updated_at=stamp)
    # Each merges the other's pre-merge commit with plain git (through the driver).
    cross_merge(a, b)
    a.hand_edit(record.id, status="archived", updated_at=stamp + 5)
    b.hand_edit(record.id, priority=70, updated_at=stamp + 5)
    b.hand_edit(other.id, urgency=3, updated_at=stamp + 5)
    git(b.path, "push", "-q", "origin", "main")
    twin = merged_by_git(tmp_path, a, b)
    a.sync()
    merged = a.read(record.id)
    assert (merged.priority, merged.urgency, merged.status) == (70, 9, "archived")
    assert a.read(other.id).urgency == 3
    assert a.memory() == twin.memory()
    assert_clean_and_valid(a)


def test_the_two_hosts_example_runs(tmp_path):
    script = Path(__file__).resolve().parents[2] / "examples" / "two_hosts.sh"
    env = dict(os.environ)
    env["LANTERN"] = f"{sys.executable} -m lantern_git"
    env["PATH"] = os.path.dirname(sys.executable) + os.pathsep + env.get("PATH", "")
    env["TMPDIR"] = str(tmp_path)
    result = subprocess.run(
        ["sh", str(script)], env=env, capture_output=True, text=True, timeout=300, check=False
    )
    assert result.returncode == 0, result.stderr
    assert "laptop/memory and desktop/memory are identical" in result.stdout
    assert "Lantern-Record: " in result.stdout and "(priority, source_refs)" in result.stdout


def test_syncing_with_a_second_remote_keeps_the_upstream(pair, tmp_path):
    a, _ = pair
    backup = tmp_path / "backup.git"
    pygit2.init_repository(str(backup), bare=True, initial_head="main")
    git(a.path, "remote", "add", "backup", str(backup))
    a.add("Also kept in the backup.")
    report = a.sync("backup")
    assert report.pushed and not report.set_upstream
    assert git(a.path, "rev-parse", "--abbrev-ref", "main@{upstream}").strip() == "origin/main"
    assert git(backup, "rev-parse", "main").strip() == a.head()
