"""``lantern revert``'s rules asked through the library, one at a time: what it refuses and how it
says so, each changed record taken in turn, and the ``updated_at`` a revert writes.

test_undo.py holds the command end to end; these hold the choices its tests left unasked (the
mutation run's ``revert`` module, benchmarks/mutation.py, found them).
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from support.stores import git, init_repo, snapshot

from lantern_git.errors import CannotRevert, InvalidInput
from lantern_git.model.record import Record
from lantern_git.model.record_file import record_path
from lantern_git.store import Store

T0 = 1_764_000_000  # a time in the past


def commit_of(store: Store, write, *args, **kwargs) -> str:
    commit = store.written(write, *args, **kwargs).commit
    assert commit is not None
    return commit


def refusal(store: Store, rev: str) -> CannotRevert:
    before = snapshot(store.root)
    with pytest.raises(CannotRevert) as caught:
        store.revert(rev)
    assert snapshot(store.root) == before
    assert str(caught.value).endswith("; nothing was written")
    return caught.value


@pytest.mark.parametrize("rev", ["", "   "])
def test_an_empty_revision_is_refused_as_empty(store, rev):
    with pytest.raises(InvalidInput) as caught:
        store.revert(rev)
    assert (caught.value.code, caught.value.message) == (
        "invalid_revision",
        "commit: must not be empty",
    )


def test_every_commit_off_the_branch_is_refused(store):
    """Twelve commits of another branch, whatever their ids sort as against HEAD's."""
    store.add("on main", kind="fact")
    git(store.root, "checkout", "-qb", "elsewhere")
    side = [commit_of(store, store.add, f"elsewhere {n}", kind="fact") for n in range(12)]
    git(store.root, "checkout", "-q", "main")
    for rev in side:
        refused = refusal(store, rev)
        assert refused.code == "not_in_history"
        assert str(refused).startswith(f"commit {rev[:10]} is not on this store's branch")


def test_an_init_made_on_a_history_is_a_stores_init_not_a_change_of_records(tmp_path: Path):
    path = tmp_path / "store"
    init_repo(path)
    (path / "README").write_text("a repository before lantern\n")
    git(path, "add", "README")
    git(path, "commit", "-qm", "before lantern")
    Store.init(str(path)).close()
    init = git(path, "rev-parse", "HEAD").strip()
    assert git(path, "rev-parse", "HEAD~1").strip()  # the init has a parent
    store = Store.open(str(path))
    try:
        refused = refusal(store, init)
        assert refused.code == "not_records"
        assert str(refused).startswith(f"commit {init[:10]} is a store's init, not a change")
    finally:
        store.close()


def test_a_commit_that_changed_other_files_names_the_first_three(store):
    kept = store.add("a record", kind="fact")
    for name in ("d.txt", "a.txt", "c.txt", "b.txt"):
        (Path(store.root) / name).write_text(name)
    changed = Path(store.root) / record_path(kept.id)
    changed.write_text(changed.read_text().replace("priority: 50", "priority: 51"))
    git(store.root, "add", "-A")
    git(store.root, "commit", "-qm", "files and a record", "-m", "Lantern-Op: update")
    commit = git(store.root, "rev-parse", "HEAD").strip()
    refused = refusal(store, commit)
    assert refused.code == "not_records"
    assert "changed files that are not records (a.txt, b.txt, c.txt); " in str(refused)


def test_a_record_already_back_as_it_was_is_passed_over_and_the_next_reverted(store):
    first = store.add("first", kind="fact")
    second = store.add("second", kind="fact")
    ids = sorted([first.id, second.id])
    # One commit changing both records: a hand edit of each, committed together.
    for record_id in ids:
        path = Path(store.root) / record_path(record_id)
        path.write_text(path.read_text().replace("priority: 50", "priority: 60"))
    commit = commit_of(store, store.commit_hand_edits)
    # The record whose path sorts first is put back by hand (and committed) first.
    store.update(ids[0], priority=50)
    result = store.revert(commit)
    assert result.records == [ids[1]]
    assert store.get(ids[1]).priority == 50


def hand_stamped(store: Store, record_id: str, **changes) -> str:
    """Commit a hand edit of the record setting ``changes`` (``updated_at`` among them); the
    commit's id."""
    path = Path(store.root) / record_path(record_id)
    text = path.read_text()
    path.write_text(Record.from_markdown(text).evolve(**changes).rewrite(text))
    return commit_of(store, store.commit_hand_edits)


def test_a_revert_stamps_its_records_with_the_time_it_was_written(store):
    kept = store.add("stamped", kind="fact")
    hand_stamped(store, kept.id, updated_at=T0)
    commit = hand_stamped(store, kept.id, priority=70, updated_at=T0 + 1)
    start = int(time.time())
    store.revert(commit)
    reverted = store.get(kept.id)
    assert reverted.priority == 50
    assert start <= reverted.updated_at <= int(time.time())


def test_a_revert_never_stamps_a_record_earlier_than_it_already_is(store):
    """The change undone came from a host whose clock runs ahead: the revert keeps that time
    rather than go back before it (a sync would take the revert as the older change)."""
    kept = store.add("from a host whose clock runs ahead", kind="fact")
    ahead = int(time.time()) + 10**6
    commit = hand_stamped(store, kept.id, priority=70, updated_at=ahead)
    store.revert(commit)
    reverted = store.get(kept.id)
    assert (reverted.priority, reverted.updated_at) == (50, ahead)
