"""What lantern sync says it did (the report, the merge commit's summary) and how it walks the
review branches: clones of a real bare remote, driven through the library."""

from __future__ import annotations

import stat
from contextlib import contextmanager
from pathlib import Path

import pytest
from support.stores import git
from support.sync import Host, clone_host, first_host, make_remote

from lantern_git.store import Store


@pytest.fixture
def remote(tmp_path) -> Path:
    return make_remote(tmp_path)


@contextmanager
def reviewing(path: Path, name: str):
    """The store at ``path`` writing to the review branch ``lantern/review/<name>``."""
    store = Store.open(str(path), review=True, review_name=name)
    try:
        yield store
    finally:
        store.close()


def remote_tip(remote: Path, ref: str) -> str:
    return git(remote, "rev-parse", ref).strip()


def test_a_sync_already_in_step_pushes_nothing_and_names_the_head(tmp_path, remote):
    a = first_host(tmp_path, remote)
    a.add("Written on a.")
    assert a.sync().pushed
    report = a.sync()
    assert (report.pushed, report.pushed_commits, report.attempts) == (False, 0, 1)
    assert report.head_before == report.head_after == report.remote_head == a.head()
    assert report.to_dict()["head_after"] == a.head()


def test_a_first_push_counts_every_commit_of_the_history(tmp_path, remote):
    path = tmp_path / "solo"
    git(tmp_path, "init", "-q", "-b", "main", str(path))
    git(path, "config", "user.name", "Test Author")
    git(path, "config", "user.email", "author@example.com")
    Store.init(str(path)).close()
    host = Host(path)
    host.add("One.")
    host.add("Two.")
    git(path, "remote", "add", "origin", str(remote))
    report = host.sync()
    commits = int(git(path, "rev-list", "--count", "HEAD").strip())
    assert commits >= 3  # init's commit and the two adds
    assert report.pushed and report.pushed_commits == commits
    assert report.head_after == host.head() == remote_tip(remote, "main")


@pytest.mark.parametrize("count, words", [(1, "1 record"), (2, "2 records")])
def test_the_merge_commit_says_how_many_records_both_sides_changed(tmp_path, remote, count, words):
    a = first_host(tmp_path, remote)
    ids = [a.add(f"Record {n}.").id for n in range(2)]
    a.sync()
    b = clone_host(tmp_path, remote, "b")
    for record_id in ids[:count]:
        a.store.update(record_id, priority=80)
        b.store.update(record_id, urgency=90)
    a.sync()
    report = b.sync()
    assert len(report.merge_commits) == 1
    summary = git(b.path, "log", "-1", "--format=%s", report.merge_commits[0]).strip()
    assert summary == f"merge origin/main: {words} changed on both sides"


def test_each_review_branch_is_brought_in_step_after_one_only_this_host_has(tmp_path, remote):
    a = first_host(tmp_path, remote)
    b = clone_host(tmp_path, remote, "b")
    # "agent-b" exists on the remote (from b); "agent-a" only here, and sorts first
    with reviewing(b.path, "agent-b") as agent:
        proposed = agent.add("proposed on b", kind="fact")
    b.store.sync(review_branches=True)
    with reviewing(a.path, "agent-a") as agent:
        agent.add("proposed on a", kind="fact")
    report = a.store.sync(review_branches=True)
    hows = {item.name: item.how for item in report.review_branches}
    assert hows == {"agent-a": "ahead", "agent-b": "created"}
    assert git(a.path, "rev-parse", "lantern/review/agent-b").strip() == remote_tip(
        remote, "lantern/review/agent-b"
    )
    with reviewing(a.path, "agent-b") as agent:
        branches = {branch.name: branch for branch in agent.review_list().branches}
        assert [r.id for r in branches["agent-b"].records] == [proposed.id]


def test_a_review_branch_already_on_the_remote_is_not_pushed_again(tmp_path, remote):
    a = first_host(tmp_path, remote)
    with reviewing(a.path, "agent") as agent:
        agent.add("proposed", kind="fact")
    first = a.store.sync(review_branches=True)
    assert [(item.name, item.pushed) for item in first.review_branches] == [("agent", True)]
    a.add("the store's branch moves on")
    again = a.store.sync(review_branches=True)
    assert again.pushed
    assert [(item.name, item.pushed) for item in again.review_branches] == [("agent", False)]


def test_a_review_push_refused_because_the_remote_moved_is_merged_and_pushed_again(
    tmp_path, remote
):
    a = first_host(tmp_path, remote)
    c = clone_host(tmp_path, remote, "c")
    with reviewing(a.path, "agent") as agent:
        agent.add("proposed on a", kind="fact")
    a.store.sync(review_branches=True)
    c.store.sync(review_branches=True)
    with reviewing(c.path, "agent") as agent:
        late = agent.add("proposed on c while a syncs", kind="fact")
    with reviewing(a.path, "agent") as agent:
        mine = agent.add("proposed on a again", kind="fact")
    # Between a's fetch and a's first push (the review branches'), c pushes its review branch
    hook = a.path / ".git" / "hooks" / "pre-push"
    marker = tmp_path / "moved"
    hook.write_text(
        "#!/bin/sh\n"
        f'if [ ! -e "{marker}" ]; then touch "{marker}"; '
        f'git -C "{c.path}" push -q origin lantern/review/agent >&2; fi\n'
    )
    hook.chmod(hook.stat().st_mode | stat.S_IXUSR)
    report = a.store.sync(review_branches=True)
    assert marker.exists()
    assert report.attempts == 2
    [item] = report.review_branches
    assert (item.how, item.pushed) == ("merged", True)
    tip = git(a.path, "rev-parse", "lantern/review/agent").strip()
    assert remote_tip(remote, "lantern/review/agent") == tip
    with reviewing(a.path, "agent") as agent:
        branches = {branch.name: branch for branch in agent.review_list().branches}
        pending = {r.id for r in branches["agent"].records}
    assert {late.id, mine.id} <= pending
