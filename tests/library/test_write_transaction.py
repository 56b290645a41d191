"""The write transaction asked directly (lantern_git.workspace.transaction): what a writer sees
when it reads in review mode, where its commits go, what the index is told, and what entering
checks first.

Every writer's own tests go through it (test_store.py, test_review.py, test_sync.py, ...); these
hold its rules one at a time on real stores, where a writer's test would pass on a transaction
that reads the wrong side or tells the index too little (the mutation run's ``transaction``
module, benchmarks/mutation.py, asks each line).
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pygit2
import pytest
from support.stores import colliding_contents, git, init_repo, make_store, opened, snapshot

from lantern_git.core.fields import JOURNAL, TMP_SUFFIX
from lantern_git.errors import AmbiguousId, GitError, NotFound, StoreError, UncommittedChanges
from lantern_git.evidence.sources import SourceInput
from lantern_git.model.record_file import RECORD_FILES, record_path
from lantern_git.model.source import manifest_path
from lantern_git.model.source_file import SOURCE_FILES
from lantern_git.store import Store
from lantern_git.workspace.transaction import interrupted, recover, write_transaction

REVIEW = "refs/heads/lantern/review/agent"


@pytest.fixture
def seeded(tmp_path: Path) -> tuple[Path, str, str]:
    """A store with two committed records: (path, first id, second id)."""
    path = make_store(tmp_path / "store")
    with opened(path) as store:
        first = store.add("the first record", kind="fact").id
        second = store.add("the second record", kind="fact").id
    return path, first, second


def reviewing(path: Path, **kwargs: Any) -> Any:
    """The store as a review writer named agent opens it (its commits go to REVIEW)."""
    return opened(path, review=True, review_name="agent", actor="agent", **kwargs)


def branch_blob(path: Path, file: str) -> bytes:
    repo = pygit2.Repository(str(path))
    return repo[repo.references[REVIEW].target].tree[file].data


def head_blob(path: Path, file: str) -> bytes:
    repo = pygit2.Repository(str(path))
    return repo.head.peel(pygit2.Commit).tree[file].data


class Told:
    """The store's real search index and chunk index, with what a write told each kept."""

    def __init__(self, real: Any, fail: Exception | None = None) -> None:
        self.real = real
        self.fail = fail
        self.written: list[list[str]] = []
        self.rebuilt = 0

    def note_written(self, paths: Iterable[str]) -> None:
        if self.fail is not None:
            raise self.fail
        self.written.append(list(paths))
        self.real.note_written(self.written[-1])

    def rebuild(self) -> object:
        self.rebuilt += 1
        return self.real.rebuild()


@contextmanager
def transaction_of(
    store: Store, index: Told | None = None, chunks: Told | None = None, **kwargs: Any
) -> Iterator[Any]:
    """``write_transaction`` on the store's own parts, with the index and chunks given."""
    ws = store.workspace
    told = index if index is not None else Told(ws.index)
    with write_transaction(
        ws.root,
        ws.state_dir,
        ws.git,
        ws.lock,
        lambda: told,
        records=RECORD_FILES,
        sources=SOURCE_FILES,
        actor=ws.actor,
        author=None,
        warn=ws.warn,
        chunks=(lambda: chunks) if chunks is not None else None,
        **kwargs,
    ) as tx:
        yield tx


# -- reading in review mode


def test_a_review_writer_reads_what_its_branch_changed_and_the_working_tree_for_the_rest(seeded):
    path, first, second = seeded
    with reviewing(path) as agent:
        agent.update(first, priority=61)
    (path / record_path(second)).write_text(
        (path / record_path(second)).read_text().replace("the second record", "hand edited")
    )
    with reviewing(path) as agent, agent.transaction() as tx:
        text, record = tx.read(first)
        assert record.priority == 61
        assert text.encode() == branch_blob(path, record_path(first))
        assert tx.exists(first)
        assert tx.committed_blob(record_path(first)) == branch_blob(path, record_path(first))
        # The record the branch left alone: the working tree's file, hand edit and all ...
        assert tx.read(second)[1].content == "hand edited"
        # ... but the commit it builds on is HEAD's.
        assert tx.committed_blob(record_path(second)) == head_blob(path, record_path(second))
        assert tx.committed_blob("no/such/file.md") is None
        assert set(tx.pending()) == {record_path(first)}
    with opened(path) as store, store.transaction() as tx:
        assert tx.pending() == {}
        assert tx.read(first)[1].priority != 61


def test_a_record_its_branch_removed_is_gone_for_the_review_writer_only(seeded):
    path, first, second = seeded
    with reviewing(path) as agent:
        agent.delete(first)
    with reviewing(path) as agent, agent.transaction() as tx:
        assert not tx.exists(first)
        with pytest.raises(NotFound) as caught:
            tx.read(first)
        assert str(caught.value) == f"no record with id {first} (its removal awaits review)"
        assert tx.committed_blob(record_path(first)) is None
        with pytest.raises(NotFound) as caught:
            tx.resolve_id(first)
        assert str(caught.value) == f"no record with id {first}"
        with pytest.raises(NotFound) as caught:
            tx.resolve_id(first[:6])
        assert str(caught.value) == f"no record with id prefix {first[:6]}"
        assert tx.resolve_id(second[:6]) == second
    with opened(path) as store, store.transaction() as tx:
        assert tx.exists(first)
        assert tx.resolve_id(first[:6]) == first


def test_exists_counts_a_link_at_a_records_path_as_a_file_there(seeded):
    path, first, _ = seeded
    ghost = "0123456789abcdef"
    target = path / record_path(ghost)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.symlink_to(path / "nowhere.md")  # dangling: exists() would say False
    with opened(path) as store, store.transaction() as tx:
        assert tx.exists(ghost)
        assert tx.exists(first)
        assert not tx.exists("fedcba9876543210")


def test_an_id_prefix_resolves_among_the_records_the_review_writer_sees(seeded):
    path, first, _ = seeded
    ours, theirs = colliding_contents()
    with opened(path) as store:
        kept = store.add(ours, kind="fact").id
    with reviewing(path) as agent:
        added = agent.add(theirs, kind="fact").id
        other = agent.add("a record of the branch alone", kind="fact").id
    prefix = kept[:4]
    assert added[:4] == prefix
    with reviewing(path) as agent, agent.transaction() as tx:
        assert tx.resolve_id(other[:8]) == other
        assert tx.resolve_id(first[:8]) == first  # the branch's own adds do not crowd it
        with pytest.raises(AmbiguousId) as caught:
            tx.resolve_id(prefix)
        assert caught.value.candidates == sorted([kept, added])
    with opened(path) as store, store.transaction() as tx:
        assert tx.resolve_id(prefix) == kept
        with pytest.raises(NotFound):
            tx.resolve_id(other[:8])


def test_a_commit_to_the_branch_is_read_back_by_the_same_transaction(seeded):
    path, first, _ = seeded
    with reviewing(path) as agent, agent.transaction() as tx:
        assert tx.pending() == {}
        _, record = tx.read(first)
        changed = record.evolve(priority=77).to_markdown().encode()
        tx.commit({record_path(first): changed}, "a priority", "update", [first])
        assert tx.read(first)[1].priority == 77
        assert record_path(first) in tx.pending()


def test_a_record_file_on_the_branch_that_does_not_read_is_refused_naming_the_branch(seeded):
    path, first, _ = seeded
    with reviewing(path) as agent, agent.transaction() as tx:
        tx.commit({record_path(first): b"not a record\n"}, "broken", "update", [first])
    with reviewing(path) as agent, agent.transaction() as tx:
        with pytest.raises(StoreError) as caught:
            tx.read(first)
        assert caught.value.code == "invalid_record"
        assert str(caught.value).endswith(f" on {REVIEW}")


def test_the_sources_a_review_branch_changed_are_read_from_its_tip(seeded):
    path, _, _ = seeded
    with opened(path) as store:
        [kept] = store.sources.add([SourceInput(b"kept on main\n", "kept.md", uri="note:kept")])
    with opened(path) as store, store.transaction() as tx:
        assert tx.pending_sources() == set()
        assert tx.read_pending_source(kept.manifest.id) is None  # no review branch: nothing pending
    with reviewing(path) as agent:
        [added] = agent.sources.add([SourceInput(b"on the branch\n", "new.md", uri="note:new")])
    with reviewing(path) as agent, agent.transaction() as tx:
        assert tx.pending_sources() == {added.manifest.id}
        found = tx.read_pending_source(added.manifest.id)
        assert found is not None and found.body == b"on the branch\n"
        assert tx.read_pending_source(kept.manifest.id).body == b"kept on main\n"
        tx.commit({manifest_path(added.manifest.id): b"id: [\n"}, "broken", "update", [])
        with pytest.raises(StoreError) as caught:
            tx.read_pending_source(added.manifest.id)
        assert caught.value.code == "invalid_source"
        assert str(caught.value).endswith(f" on {REVIEW}")


def test_a_review_writer_whose_branch_does_not_exist_yet_has_no_pending_source(seeded):
    path, _, _ = seeded
    with reviewing(path) as agent, agent.transaction() as tx:
        assert tx.read_pending_source("0123456789abcdef") is None


# -- hand edits


def test_a_hand_edit_of_the_working_tree_is_refused_unless_the_record_came_from_the_branch(
    seeded,
):
    path, first, second = seeded
    with opened(path) as store, store.transaction() as tx:
        text, _ = tx.read(first)
        tx.ensure_committed(first, text)  # as committed
    for record_id in (first, second):
        file = path / record_path(record_id)
        file.write_text(file.read_text().replace(" record", " edit"))
    with opened(path) as store, store.transaction() as tx:
        text, _ = tx.read(first)
        with pytest.raises(UncommittedChanges) as caught:
            tx.ensure_committed(first, text)
        assert str(caught.value).startswith(f"{record_path(first)} has uncommitted changes")
    with reviewing(path) as agent:
        git(path, "stash", "-q")
        agent.update(first, priority=62)
        git(path, "stash", "pop", "-q")
    with reviewing(path) as agent, agent.transaction() as tx:
        text, record = tx.read(first)
        assert record.priority == 62
        tx.ensure_committed(first, text)  # the branch's commit, not a hand edit
        text, _ = tx.read(second)
        with pytest.raises(UncommittedChanges):
            tx.ensure_committed(second, text)


# -- provenance and where commits go


def test_provenance_names_the_op_records_sources_reason_and_who(seeded):
    path, first, _ = seeded
    with opened(path, actor="planner") as store, store.transaction() as tx:
        prov = tx.provenance("update", [first], reason="why not", sources=["s1", "s2"])
        assert (prov.op, prov.records, prov.sources) == ("update", (first,), ("s1", "s2"))
        assert (prov.actor, prov.reason) == ("planner", "why not")
        assert prov.author == "Test Author <author@example.com>"
        assert tx.provenance("add", actor="someone").actor == "someone"
        assert tx.provenance("add").records == ()


def test_a_commit_returns_its_id_and_the_transaction_keeps_each(seeded):
    path, _, _ = seeded
    with opened(path) as store, store.transaction() as tx:
        assert (tx.last_commit, tx.commits, tx.pending_review) == (None, [], False)
        one = tx.commit({"notes/one.txt": b"one\n"}, "one", "update", [])
        assert tx.last_commit == one
        two = tx.commit({"notes/two.txt": b"two\n"}, "two", "update", [])
        three = tx.commit({"notes/three.txt": b"three\n"}, "three", "update", [])
        assert tx.commits == [one, two, three] and tx.last_commit == three
        assert not tx.pending_review  # the store's branch, not a review
    assert git(path, "rev-parse", "HEAD").strip() == three
    assert git(path, "rev-parse", "HEAD~1").strip() == two
    assert git(path, "rev-parse", "HEAD~2").strip() == one
    assert (path / "notes/three.txt").read_bytes() == b"three\n"


def test_a_review_commit_goes_to_the_branch_and_leaves_head_and_the_working_tree(seeded):
    path, _, _ = seeded
    before = snapshot(path)
    with reviewing(path) as agent, agent.transaction() as tx:
        assert not tx.pending_review  # nothing committed yet
        oid = tx.commit({"notes/n.txt": b"n\n"}, "a note", "update", [])
        assert tx.pending_review
    assert snapshot(path) == before
    assert git(path, "rev-parse", REVIEW).strip() == oid
    assert branch_blob(path, "notes/n.txt") == b"n\n"


def test_a_review_commit_that_keeps_working_files_is_refused_and_writes_nothing(seeded):
    path, _, _ = seeded
    before = snapshot(path)
    with reviewing(path) as agent, agent.transaction() as tx:
        with pytest.raises(GitError) as caught:
            tx.commit(
                {"notes/n.txt": b"n\n"}, "a note", "edit", [], worktree={"notes/n.txt": b"m\n"}
            )
        assert str(caught.value) == "a edit that keeps working files cannot go to a review branch"
        assert tx.commits == []
    assert snapshot(path) == before
    assert git(path, "rev-parse", "--verify", "-q", REVIEW, check=False) == ""


def test_a_commit_can_leave_other_content_in_the_working_tree(seeded):
    path, _, _ = seeded
    with opened(path) as store, store.transaction() as tx:
        tx.commit({"n.txt": b"committed\n"}, "n", "edit", [], worktree={"n.txt": b"kept\n"})
    assert head_blob(path, "n.txt") == b"committed\n"
    assert (path / "n.txt").read_bytes() == b"kept\n"


# -- what the index is told


def test_a_commit_tells_the_index_its_record_files_and_the_chunks_its_source_files(seeded):
    path, first, _ = seeded
    with opened(path) as store:
        index, chunks = Told(store.workspace.index), Told(store.workspace.chunks)
        with transaction_of(store, index, chunks) as tx:
            record = tx.read(first)[1].evolve(priority=70)
            source = manifest_path("0123456789abcdef")
            tx.commit({"notes/n.txt": b"n\n"}, "a note", "update", [])
            tx.commit(
                {record_path(first): record.to_markdown().encode(), "notes/m.txt": b"m\n"},
                "a record",
                "update",
                [first],
            )
            tx.commit({source: b"x\n", "notes/o.txt": b"o\n"}, "a source", "update", [])
        assert index.written == [[record_path(first)]]
        assert chunks.written == [[source]]
        assert index.rebuilt == 0
        assert [h.record.id for h in store.search("first")] == [first]


def test_a_commit_asking_for_a_rebuild_rebuilds_instead_of_noting(seeded):
    path, first, _ = seeded
    with opened(path) as store:
        index = Told(store.workspace.index)
        with transaction_of(store, index) as tx:
            record = tx.read(first)[1].evolve(priority=70)
            files = {record_path(first): record.to_markdown().encode()}
            tx.commit(files, "a record", "update", [first], rebuild_index=True)
            tx.commit({"n.txt": b"n\n"}, "a note", "update", [], rebuild_index=True)
        assert (index.rebuilt, index.written) == (1, [])


def test_an_index_that_fails_warns_and_the_commit_stands(seeded):
    path, first, _ = seeded
    warnings: list[str] = []
    with opened(path, warn=warnings.append) as store:
        index = Told(store.workspace.index, fail=OSError("disk full"))
        with transaction_of(store, index) as tx:
            record = tx.read(first)[1].evolve(priority=70)
            oid = tx.commit(
                {record_path(first): record.to_markdown().encode()}, "r", "update", [first]
            )
            assert tx.commits == [oid]
        assert not interrupted(store.state_dir)
    assert warnings == [
        "warning: the search index was not updated (disk full); the next read does it"
    ]
    assert git(path, "rev-parse", "HEAD").strip() == oid


def test_a_review_commit_tells_the_index_nothing(seeded):
    path, first, _ = seeded
    with reviewing(path) as agent:
        index, chunks = Told(agent.workspace.index), Told(agent.workspace.chunks)
        with transaction_of(agent, index, chunks, review_ref=REVIEW) as tx:
            record = tx.read(first)[1].evolve(priority=70)
            source = manifest_path("0123456789abcdef")
            files = {record_path(first): record.to_markdown().encode(), source: b"x\n"}
            tx.commit(files, "r", "update", [first], rebuild_index=True)
        assert (index.written, index.rebuilt, chunks.written) == ([], 0, [])


# -- moving branches


def commit_adding(path: Path, name: str, data: bytes) -> tuple[pygit2.Oid, pygit2.Oid]:
    """A commit on HEAD that adds ``name`` (made beside the store, as a fetch brings one):
    (HEAD, the new commit)."""
    repo = pygit2.Repository(str(path))
    head = repo.head.peel(pygit2.Commit)
    builder = repo.TreeBuilder(head.tree)
    builder.insert(name, repo.create_blob(data), pygit2.GIT_FILEMODE_BLOB)
    who = pygit2.Signature("Other Host", "other@example.com")
    new = repo.create_commit(None, who, who, "from elsewhere", builder.write(), [head.id])
    return head.id, new


def test_advance_moves_the_branch_and_the_working_tree_to_a_commit_made_elsewhere(seeded):
    path, _, _ = seeded
    head, new = commit_adding(path, "brought.txt", b"brought\n")
    repo = pygit2.Repository(str(path))
    changes = {"brought.txt": (str(repo[new].tree["brought.txt"].id), pygit2.GIT_FILEMODE_BLOB)}
    with opened(path) as store, store.transaction() as tx:
        assert tx.advance(head, new, changes, "brought a file", "sync") == str(new)
        assert tx.commits == [str(new)]
        assert not interrupted(store.state_dir)
    assert git(path, "rev-parse", "HEAD").strip() == str(new)
    assert (path / "brought.txt").read_bytes() == b"brought\n"
    assert git(path, "status", "--porcelain") == ""


def test_advance_tells_the_index_the_record_files_it_brought(seeded):
    path, first, _ = seeded
    with reviewing(path) as agent:
        agent.update(first, priority=64)  # a commit on HEAD, made beside the store's branch
    repo = pygit2.Repository(str(path))
    head, new = repo.head.target, repo.references[REVIEW].target
    changes = {record_path(first): (str(repo[new].tree[record_path(first)].id), 0o100644)}
    with opened(path) as store:
        index = Told(store.workspace.index)
        with transaction_of(store, index) as tx:
            tx.advance(head, new, changes, "brought a record", "sync")
        assert (index.written, index.rebuilt) == ([[record_path(first)]], 0)
        assert store.get(first).priority == 64


def test_advance_never_writes_over_an_untracked_file_the_commit_adds(seeded):
    path, _, _ = seeded
    head, new = commit_adding(path, "brought.txt", b"brought\n")
    repo = pygit2.Repository(str(path))
    changes = {"brought.txt": (str(repo[new].tree["brought.txt"].id), pygit2.GIT_FILEMODE_BLOB)}
    (path / "brought.txt").write_text("mine\n")
    before = snapshot(path)
    with opened(path) as store, store.transaction() as tx:
        with pytest.raises(UncommittedChanges) as caught:
            tx.advance(head, new, changes, "brought a file", "sync")
        assert str(caught.value).startswith("brought.txt has uncommitted changes")
    assert snapshot(path) == before


def test_advance_refuses_a_path_outside_the_store_and_a_review_writer(seeded):
    path, _, _ = seeded
    head, new = commit_adding(path, "brought.txt", b"brought\n")
    before = snapshot(path)
    with opened(path) as store, store.transaction() as tx, pytest.raises(GitError):
        tx.advance(head, new, {"../outside.txt": None}, "out", "sync")
    with reviewing(path) as agent, agent.transaction() as tx:
        with pytest.raises(GitError) as caught:
            tx.advance(head, new, {}, "brought", "sync")
        assert str(caught.value) == (
            "a sync moves the store's branch and cannot go to a review branch"
        )
    assert snapshot(path) == before


def test_move_branch_creates_and_moves_a_branch_that_is_not_checked_out(seeded):
    path, _, _ = seeded
    head, new = commit_adding(path, "brought.txt", b"brought\n")
    before = snapshot(path)
    with opened(path) as store, store.transaction() as tx:
        assert tx.move_branch(REVIEW, None, head, "opened", "review") == str(head)
        assert not interrupted(store.state_dir)
        assert tx.move_branch(REVIEW, head, new, "moved", "review") == str(new)
        assert not interrupted(store.state_dir)
    assert git(path, "rev-parse", REVIEW).strip() == str(new)
    assert snapshot(path) == before


# -- entering


@pytest.fixture
def fresh(tmp_path: Path) -> Path:
    """A store's files in a repository whose branch has no commit yet."""
    made = make_store(tmp_path / "store")
    path = tmp_path / "fresh"
    init_repo(path)
    (path / "lantern.yaml").write_bytes((made / "lantern.yaml").read_bytes())
    return path


def test_a_store_whose_branch_has_no_commit_is_refused_with_the_command_that_commits_it(fresh):
    with opened(fresh) as store:
        with pytest.raises(GitError) as caught, store.transaction():
            pass
        assert str(caught.value) == (
            f"branch main has no commits yet; commit the store files first with: "
            f"lantern init {fresh}"
        )
        with store.transaction(require_head=False) as tx:
            assert tx.commits == []
    assert git(fresh, "rev-parse", "--verify", "-q", "HEAD", check=False) == ""


def test_a_write_transaction_asks_for_a_commit_on_the_branch_unless_told_not_to(fresh):
    with opened(fresh) as store:
        with pytest.raises(GitError) as caught, transaction_of(store):
            pass
        assert "has no commits yet" in str(caught.value)
        with transaction_of(store, require_head=False) as tx:
            assert tx.commits == []


def test_a_repository_in_the_middle_of_a_git_merge_is_not_written(seeded):
    path, _, _ = seeded
    (path / ".git" / "MERGE_HEAD").write_text(git(path, "rev-parse", "HEAD"))
    with opened(path) as store:
        with pytest.raises(GitError) as caught, store.transaction():
            pass
        assert "unfinished git operation" in str(caught.value)


def test_a_write_journal_or_its_temporary_file_means_a_write_was_cut_off(tmp_path: Path):
    assert not interrupted(str(tmp_path))
    (tmp_path / ("." + JOURNAL + TMP_SUFFIX)).write_bytes(b"")
    assert interrupted(str(tmp_path))
    os.remove(tmp_path / ("." + JOURNAL + TMP_SUFFIX))
    (tmp_path / JOURNAL).write_bytes(b"")
    assert interrupted(str(tmp_path))


def cut_off_write(path: Path) -> None:
    """An add killed after its commit and before its journal was dropped (a real kill -9)."""
    script = (
        f"from lantern_git.store import Store\nStore.open({str(path)!r}).add('cut', kind='fact')"
    )
    env = {**os.environ, "LANTERN_FAULT": "after-search-index"}
    done = subprocess.run([sys.executable, "-c", script], env=env, timeout=60, check=False)
    assert done.returncode == -9


def test_entering_completes_a_cut_off_write_and_says_so(seeded):
    path, _, _ = seeded
    cut_off_write(path)
    warnings: list[str] = []
    with opened(path, warn=warnings.append) as store:
        assert interrupted(store.state_dir)
        with transaction_of(store) as tx:
            assert not interrupted(store.state_dir)
            tx.commit({"n.txt": b"n\n"}, "n", "update", [])
    assert len(warnings) == 1 and warnings[0].startswith("lantern: ")
    assert git(path, "status", "--porcelain") == ""


def test_recover_repairs_a_cut_off_write_under_the_lock_and_leaves_a_clean_store_alone(seeded):
    path, _, _ = seeded
    warnings: list[str] = []
    with opened(path, warn=warnings.append) as store:
        ws = store.workspace
        recover(ws.git, ws.state_dir, ws.lock, warnings.append)
        assert warnings == []
    cut_off_write(path)
    with opened(path, warn=warnings.append) as store:
        ws = store.workspace
        recover(ws.git, ws.state_dir, ws.lock, warnings.append)
        assert not interrupted(ws.state_dir)
        assert len(warnings) == 1 and warnings[0].startswith("lantern: ")
