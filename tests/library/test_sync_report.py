"""What lantern sync says it did (the report, the merge commit's summary) and how it walks the
review branches: clones of a real bare remote, driven through the library."""

from __future__ import annotations

from contextlib import contextmanager
from pathlib import Path

import pytest
from support.stores import git, snapshot
from support.sync import (
    Host,
    before_push,
    clone_host,
    cross_merge,
    first_host,
    make_remote,
    merged_by_git,
)

from lantern_git.errors import GitError, UnsupportedFormat
from lantern_git.model.record_file import record_path
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
    assert report.set_upstream is False  # the upstream was set by the first sync
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
    # The branch's move to it is logged with the same line (git reflog)
    assert git(b.path, "reflog", "-1", "--format=%gs", "main").strip() == f"lantern: {summary}"


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
    count = before_push(a, tmp_path, 1, f'git -C "{c.path}" push -q origin lantern/review/agent')
    report = a.store.sync(review_branches=True)
    assert count.read_text().strip() == "1"
    assert report.attempts == 2
    [item] = report.review_branches
    assert (item.how, item.pushed) == ("merged", True)
    tip = git(a.path, "rev-parse", "lantern/review/agent").strip()
    assert remote_tip(remote, "lantern/review/agent") == tip
    with reviewing(a.path, "agent") as agent:
        branches = {branch.name: branch for branch in agent.review_list().branches}
        pending = {r.id for r in branches["agent"].records}
    assert {late.id, mine.id} <= pending


def test_review_branches_after_one_already_in_step_are_still_brought_in_step(tmp_path, remote):
    a = first_host(tmp_path, remote)
    with reviewing(a.path, "agent-a") as agent:
        agent.add("proposed on a", kind="fact")
    a.store.sync(review_branches=True)
    b = clone_host(tmp_path, remote, "b")
    b.store.sync(review_branches=True)  # b now has agent-a, in step with the remote
    with reviewing(a.path, "agent-b") as agent:
        later = agent.add("proposed on a under another name", kind="fact")
    a.store.sync(review_branches=True)
    # "agent-a" is in step on b and sorts first; "agent-b" is new on the remote
    report = b.store.sync(review_branches=True)
    assert {item.name: item.how for item in report.review_branches} == {
        "agent-a": "up to date",
        "agent-b": "created",
    }
    with reviewing(b.path, "agent-b") as agent:
        branches = {branch.name: branch for branch in agent.review_list().branches}
        assert [r.id for r in branches["agent-b"].records] == [later.id]


def test_the_report_counts_the_commits_pushed_and_the_commits_brought_in(tmp_path, remote):
    a = first_host(tmp_path, remote)
    b = clone_host(tmp_path, remote, "b")
    a.add("One on a.")
    a.add("Two on a.")
    pushed = a.sync()
    assert (pushed.pushed, pushed.pushed_commits) == (True, 2)
    b.add("One on b.")
    merged = b.sync()
    assert merged.incoming_commits == 2
    assert merged.pushed_commits == 2  # b's own commit and the merge


def moving_remote_hook(host: Host, mover: Host, tmp_path: Path, times: int) -> Path:
    """``mover`` pushes a new commit to the remote before each of ``host``'s first ``times``
    pushes."""
    return before_push(
        host,
        tmp_path,
        times,
        f'git -C "{mover.path}" commit -q --allow-empty -m "move $n"',
        f'git -C "{mover.path}" push -q origin main',
    )


def test_a_remote_that_moves_four_times_is_pushed_on_the_fifth_attempt(tmp_path, remote):
    a = first_host(tmp_path, remote)
    c = clone_host(tmp_path, remote, "c")
    moving_remote_hook(a, c, tmp_path, times=4)
    a.add("Written on a.")
    report = a.sync()
    assert (report.attempts, report.pushed) == (5, True)
    assert remote_tip(remote, "main") == a.head()


def test_a_remote_that_keeps_moving_is_given_up_on_after_five_attempts(tmp_path, remote):
    a = first_host(tmp_path, remote)
    c = clone_host(tmp_path, remote, "c")
    count = moving_remote_hook(a, c, tmp_path, times=99)
    mine = a.add("Written on a.")
    with pytest.raises(GitError) as failed:
        a.sync()
    assert failed.value.code == "push_rejected"
    assert "kept moving while syncing (5 attempts)" in str(failed.value)
    assert count.read_text().strip() == "5"
    # The merged result is committed here, for the next sync to push
    assert (a.path / record_path(mine.id)).exists() and a.status() == ""
    assert remote_tip(remote, "main") != a.head()


def test_a_push_refused_while_the_remote_stands_still_fails_at_once(tmp_path, remote):
    a = first_host(tmp_path, remote)
    before = remote_tip(remote, "main")
    # A lock left on the remote's branch: git says "cannot lock ref", as when it moves, but
    # a fetch finds it where it was, so retrying cannot help
    (remote / "refs" / "heads" / "main.lock").write_text("")
    a.add("Written on a.")
    with pytest.raises(GitError) as failed:
        a.sync()
    assert failed.value.code == "git_error"
    assert str(failed.value).startswith("git push origin failed: ")
    assert remote_tip(remote, "main") == before


def test_a_criss_cross_merge_keeps_what_each_side_reverted_as_git_does(tmp_path, remote):
    """Two merge bases, each side later reverting the other base's change: only a base that
    merges both bases (git's virtual base) sees the reverts as changes."""
    a = first_host(tmp_path, remote)
    one = a.add("Changed on a, then reverted on a.", priority=50)
    two = a.add("Changed on b, then reverted on b.", priority=50)
    a.sync()
    b = clone_host(tmp_path, remote, "b")
    stamp = one.updated_at + 10
    a.hand_edit(one.id, priority=60, updated_at=stamp)
    b.hand_edit(two.id, priority=80, updated_at=stamp)
    cross_merge(a, b)
    a.hand_edit(one.id, priority=50, updated_at=stamp + 5)
    b.hand_edit(two.id, priority=50, updated_at=stamp + 5)
    git(b.path, "push", "-q", "origin", "main")
    twin = merged_by_git(tmp_path, a, b)
    a.sync()
    assert (a.read(one.id).priority, a.read(two.id).priority) == (50, 50)
    assert a.memory() == twin.memory()


def conflicted_criss_cross(tmp_path: Path, remote: Path, resolved: str | None) -> tuple[Host, str]:
    """Two hosts that changed the same line of notes.txt, then each merged the other's commit
    with plain git and resolved the conflict: each its own side (``resolved`` None) or both
    alike. The second host pushed. Returns the first host and what git's own merge of the two
    says."""
    a = first_host(tmp_path, remote)
    (a.path / "notes.txt").write_text("one\n")
    git(a.path, "add", "notes.txt")
    git(a.path, "commit", "-qm", "notes")
    a.sync()
    b = clone_host(tmp_path, remote, "b")
    for host, line in ((a, "from a\n"), (b, "from b\n")):
        (host.path / "notes.txt").write_text(line)
        git(host.path, "commit", "-qam", "notes changed")
    git(a.path, "remote", "add", "peer", str(b.path))
    git(b.path, "remote", "add", "peer", str(a.path))
    for host in (a, b):
        git(host.path, "fetch", "-q", "peer")
    for host in (a, b):
        git(host.path, "merge", "-q", "peer/main", check=False)
        if resolved is None:
            git(host.path, "checkout", "--ours", "notes.txt")
        else:
            (host.path / "notes.txt").write_text(resolved)
        git(host.path, "commit", "-qam", "resolved")
    git(b.path, "push", "-q", "origin", "main")
    twin = tmp_path / "twin"
    git(tmp_path, "clone", "-q", str(a.path), "twin")
    git(twin, "fetch", "-q", str(b.path), "main")
    return a, git(twin, "merge", "--no-edit", "FETCH_HEAD", check=False)


def test_a_criss_cross_whose_bases_conflicted_is_refused_as_git_refuses_it(tmp_path, remote):
    """Each host kept its own side. Git's virtual base holds that conflict, so the next merge
    conflicts again; a virtual base that kept one side instead would hand the sync the other
    host's version without a word."""
    a, by_git = conflicted_criss_cross(tmp_path, remote, None)
    assert "CONFLICT" in by_git
    before = snapshot(a.path)
    with pytest.raises(GitError) as caught:
        a.sync()
    assert caught.value.code == "merge_conflict" and "notes.txt" in str(caught.value)
    assert snapshot(a.path) == before
    assert (a.path / "notes.txt").read_text() == "from a\n"


def test_a_criss_cross_whose_bases_conflicted_merges_when_both_resolved_alike(tmp_path, remote):
    """Both hosts resolved the conflict the same way: git merges, and so does the sync (a
    virtual base that refused what it cannot merge would stop it)."""
    a, by_git = conflicted_criss_cross(tmp_path, remote, "agreed\n")
    assert "CONFLICT" not in by_git
    report = a.sync()
    assert report.merge_commits and report.pushed
    assert (a.path / "notes.txt").read_text() == "agreed\n"
    assert git(a.path, "status", "--porcelain") == ""


def test_the_report_counts_records_past_a_file_that_is_no_record(tmp_path, remote):
    a = first_host(tmp_path, remote)
    b = clone_host(tmp_path, remote, "b")
    (a.path / "a-first.txt").write_text("sorts before memory/\n")
    git(a.path, "add", "a-first.txt")
    git(a.path, "commit", "-qm", "a file")
    added = a.add("Written on a.")
    a.sync()
    report = b.sync()
    assert report.fast_forward and report.added == [added.id]


def test_a_sync_in_step_with_a_remote_it_has_no_upstream_for_sets_one(tmp_path, remote):
    a = first_host(tmp_path, remote)
    git(a.path, "branch", "--unset-upstream")
    report = a.sync()
    assert (report.pushed, report.set_upstream) == (False, True)
    assert git(a.path, "rev-parse", "--abbrev-ref", "main@{upstream}").strip() == "origin/main"


def test_an_untracked_file_that_is_not_lantern_data_does_not_stop_a_sync(tmp_path, remote):
    a = first_host(tmp_path, remote)
    b = clone_host(tmp_path, remote, "b")
    # One file name sorts before lantern.yaml and one after: neither is lantern data.
    (b.path / "a-draft.txt").write_text("mine, not lantern's\n")
    (b.path / "todo.txt").write_text("mine too\n")
    a.add("Written on a.")
    a.sync()
    report = b.sync()
    assert report.fast_forward and (b.path / "a-draft.txt").exists()
    assert (b.path / "todo.txt").read_text() == "mine too\n"


def test_review_branches_synced_without_a_push_say_they_were_not_pushed(tmp_path, remote):
    a = first_host(tmp_path, remote)
    with reviewing(a.path, "agent") as agent:
        agent.add("proposed", kind="fact")
    report = a.store.sync(review_branches=True, push=False)
    assert [(item.name, item.how, item.pushed) for item in report.review_branches] == [
        ("agent", "ahead", False)
    ]
    assert git(remote, "rev-parse", "--verify", "-q", "lantern/review/agent", check=False) == ""


def test_a_remote_branch_under_review_whose_name_is_no_review_name_is_skipped_with_a_warning(
    tmp_path, remote
):
    a = first_host(tmp_path, remote)
    with reviewing(a.path, "agent") as agent:
        agent.add("proposed", kind="fact")
    git(remote, "update-ref", "refs/heads/lantern/review/_odd", "main")
    warnings: list[str] = []
    store = Store.open(str(a.path), warn=warnings.append)
    try:
        report = store.sync(review_branches=True)
    finally:
        store.close()
    assert [(item.name, item.pushed) for item in report.review_branches] == [("agent", True)]
    assert warnings == [
        "warning: skipped refs/heads/lantern/review/_odd on origin: not a review name"
    ]
    assert git(a.path, "rev-parse", "--verify", "-q", "lantern/review/_odd", check=False) == ""


def test_a_fast_forward_to_a_store_format_this_lantern_does_not_know_is_refused(tmp_path, remote):
    a = first_host(tmp_path, remote)
    b = clone_host(tmp_path, remote, "b")
    (a.path / "lantern.yaml").write_text("format: 99\n")
    git(a.path, "commit", "-qam", "a format from the future")
    git(a.path, "push", "-q", "origin", "main")
    before = snapshot(b.path)
    with pytest.raises(UnsupportedFormat) as caught:
        b.sync()
    assert "is store format 99, and this lantern knows formats up to" in str(caught.value)
    assert snapshot(b.path) == before
