"""The write journal's recovery asked in process, on real repositories: each state a crash can
leave is made by a real write (which leaves its journal until ``finish``) and, for a crash
before the branch moved, the branch put back where it was. ``test_faults.py`` kills the CLI at
each step; these are the same states without a process per case, so the mutation run of the
journal (benchmarks/mutation.py, module ``git_journal``) can ask them of every mutant."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pygit2
import pytest
from support.stores import commit_whose_id_sorts, git, init_repo

from lantern_git.errors import GitError
from lantern_git.git.repo import GitRepo, Provenance, recover

SIDE = "refs/heads/lantern/review/agent"
RECORD = "memory/aa/aaaaaaaaaaaaaaaa.md"


@pytest.fixture
def repo(tmp_path) -> tuple[GitRepo, str]:
    """A repository with one commit of one file (its journal dropped), and a journal folder."""
    init_repo(tmp_path / "repo")
    journal_dir = str(tmp_path / "state")
    repo = GitRepo(str(tmp_path / "repo"))
    repo.commit_files({RECORD: b"first\n"}, "seed", Provenance(op="add"), journal_dir=journal_dir)
    repo.finish(journal_dir)
    return repo, journal_dir


def _journal(journal_dir: str) -> Path:
    return Path(journal_dir) / "journal.json"


def _work(repo: GitRepo, path: str = RECORD) -> bytes | None:
    full = Path(repo.root) / path
    return full.read_bytes() if full.exists() else None


def _point(repo: GitRepo, ref: str, target: pygit2.Oid | None) -> None:
    """Put ``ref`` back where a crash before its move would have left it."""
    if target is None:
        repo.repo.references.delete(ref)
    else:
        repo.repo.references[ref].set_target(target)


def _other_commit(repo: GitRepo, than: pygit2.Oid, *, above: bool) -> pygit2.Oid:
    """A commit whose id sorts above (or below) ``than``'s as text: a branch moved elsewhere."""
    tree = repo.repo[repo.head_oid()].peel(pygit2.Tree).id
    return commit_whose_id_sorts(repo.repo, tree, [], str(than), above=above)


# ---------------------------------------------------------------------------- HEAD's branch


def test_a_write_whose_branch_moved_is_completed_naming_its_commit(repo):
    git_repo, journal_dir = repo
    commit = git_repo.commit_files(
        {RECORD: b"second\n"}, "update", Provenance(op="update"), journal_dir=journal_dir
    )
    # Cut off after the ref moved: the working file never got there.
    os.unlink(os.path.join(git_repo.root, RECORD))
    outcome = recover(git_repo, journal_dir)
    assert outcome == f"lantern: completed an interrupted update (commit {str(commit)[:7]})"
    assert _work(git_repo) == b"second\n"
    assert git(git_repo.root, "status", "--porcelain") == ""
    assert not _journal(journal_dir).exists()


def test_a_write_whose_branch_did_not_move_is_rolled_back(repo):
    git_repo, journal_dir = repo
    head = git_repo.head_oid()
    git_repo.commit_files(
        {RECORD: b"second\n", "memory/bb/new.md": b"new\n"},
        "update",
        Provenance(op="update"),
        journal_dir=journal_dir,
    )
    _point(git_repo, "refs/heads/main", head)
    outcome = recover(git_repo, journal_dir)
    assert outcome == "lantern: rolled back an interrupted update; nothing of it was committed"
    assert (_work(git_repo), _work(git_repo, "memory/bb/new.md")) == (b"first\n", None)
    assert git(git_repo.root, "status", "--porcelain") == ""
    assert not _journal(journal_dir).exists()


def test_a_rollback_puts_back_the_untracked_file_that_was_there(repo):
    git_repo, journal_dir = repo
    head = git_repo.head_oid()
    mine = Path(git_repo.root) / "notes.txt"
    mine.write_bytes(b"my own notes\n")
    git_repo.commit_files(
        {"notes.txt": b"committed over it\n"},
        "adopt",
        Provenance(op="init"),
        journal_dir=journal_dir,
    )
    _point(git_repo, "refs/heads/main", head)
    assert recover(git_repo, journal_dir) is not None
    assert mine.read_bytes() == b"my own notes\n"
    assert git(git_repo.root, "status", "--porcelain") == "?? notes.txt\n"


def test_a_write_whose_branch_moved_elsewhere_is_left_as_is(repo):
    git_repo, journal_dir = repo
    commit = git_repo.commit_files(
        {RECORD: b"second\n"}, "update", Provenance(op="update"), journal_dir=journal_dir
    )
    elsewhere = _other_commit(git_repo, commit, above=True)
    _point(git_repo, "refs/heads/main", elsewhere)
    outcome = recover(git_repo, journal_dir)
    assert outcome == (
        "lantern: found an interrupted update whose branch has since moved; left as is"
    )
    assert git_repo.head_oid() == elsewhere
    assert _work(git_repo) == b"second\n"
    assert not _journal(journal_dir).exists()


def test_a_kept_working_file_stays_the_users_when_the_write_completes_or_rolls_back(repo):
    """A write that commits a file while the user's uncommitted edit stays in the working tree
    (``worktree``): completed, the edit stays and the index stages the commit's content;
    rolled back, the file is what it was before and the index HEAD's."""
    git_repo, journal_dir = repo
    edit = Path(git_repo.root) / RECORD
    edit.write_bytes(b"first, edited by hand\n")
    head = git_repo.head_oid()
    git_repo.commit_files(
        {RECORD: b"committed\n"},
        "update",
        Provenance(op="update"),
        journal_dir=journal_dir,
        worktree={RECORD: b"committed, edit kept\n"},
    )
    edit.unlink()
    assert recover(git_repo, journal_dir) is not None
    assert edit.read_bytes() == b"committed, edit kept\n"
    assert git(git_repo.root, "show", f":{RECORD}") == "committed\n"
    assert stat.S_IMODE(edit.stat().st_mode) == 0o644

    git_repo.commit_files(
        {RECORD: b"again\n"},
        "update",
        Provenance(op="update"),
        journal_dir=journal_dir,
        worktree={RECORD: b"again, edit kept\n"},
    )
    _point(git_repo, "refs/heads/main", git_repo.repo[git_repo.head_oid()].parents[0].id)
    assert recover(git_repo, journal_dir) is not None
    assert edit.read_bytes() == b"committed, edit kept\n"
    assert git(git_repo.root, "show", f":{RECORD}") == "committed\n"
    assert git_repo.head_oid() != head


def test_apply_writes_each_file_with_its_mode(repo):
    """A change that arrives executable (a sync's merge, say) is written executable."""
    git_repo, journal_dir = repo
    head = git_repo.head_oid()
    base = git_repo.repo[head].peel(pygit2.Tree)
    blob = str(git_repo.repo.create_blob(b"#!/bin/sh\n"))
    changes = {"tools/run.sh": (blob, 0o100755), RECORD: None}
    tree = git_repo.build_tree(base, changes)
    commit = git_repo.create_commit(tree, [head], "tools", Provenance(op="sync"))
    git_repo.apply("sync", head, commit, changes, "tools", journal_dir=journal_dir)
    git_repo.finish(journal_dir)
    assert stat.S_IMODE(os.stat(os.path.join(git_repo.root, "tools/run.sh")).st_mode) == 0o755
    assert _work(git_repo) is None
    assert git(git_repo.root, "status", "--porcelain") == ""


def test_a_rollback_over_an_executable_file_puts_back_its_mode(repo):
    git_repo, journal_dir = repo
    head = git_repo.head_oid()
    blob = str(git_repo.repo.create_blob(b"#!/bin/sh\n"))
    changes = {"tools/run.sh": (blob, 0o100755)}
    tree = git_repo.build_tree(git_repo.repo[head].peel(pygit2.Tree), changes)
    commit = git_repo.create_commit(tree, [head], "tools", Provenance(op="sync"))
    git_repo.apply("sync", head, commit, changes, "tools", journal_dir=journal_dir)
    git_repo.finish(journal_dir)
    git_repo.commit_files(
        {"tools/run.sh": b"#!/bin/sh\nexit 1\n"},
        "u",
        Provenance(op="update"),
        journal_dir=journal_dir,
    )
    _point(git_repo, "refs/heads/main", commit)
    assert recover(git_repo, journal_dir) is not None
    script = os.path.join(git_repo.root, "tools/run.sh")
    assert (Path(script).read_bytes(), stat.S_IMODE(os.stat(script).st_mode)) == (
        b"#!/bin/sh\n",
        0o755,
    )
    assert git(git_repo.root, "status", "--porcelain") == ""


@pytest.mark.parametrize("other", ["refs/heads/aa", "refs/heads/zz"])
def test_a_write_left_on_a_branch_no_longer_checked_out_is_left_as_is(repo, other):
    git_repo, journal_dir = repo
    head = git_repo.head_oid()
    git_repo.commit_files(
        {RECORD: b"second\n"}, "update", Provenance(op="update"), journal_dir=journal_dir
    )
    # Since the crash, another branch was checked out (named before and after the write's).
    git_repo.repo.references.create(other, head)
    git_repo.repo.references["HEAD"].set_target(other)
    outcome = recover(git_repo, journal_dir)
    assert outcome == (
        "lantern: found an interrupted update whose branch has since moved; left as is"
    )
    assert _work(git_repo) == b"second\n"
    assert not _journal(journal_dir).exists()


def test_a_write_whose_journal_cannot_be_written_changes_nothing(repo, tmp_path):
    git_repo, _ = repo
    head = git_repo.head_oid()
    blocked = tmp_path / "not-a-folder"
    blocked.write_bytes(b"")
    with pytest.raises(GitError) as caught:
        git_repo.commit_files(
            {RECORD: b"second\n"}, "update", Provenance(op="update"), journal_dir=str(blocked)
        )
    message = caught.value.message
    assert message.startswith(f"cannot write the write journal {blocked}/journal.json: ")
    assert message.endswith("; nothing changed")
    assert (git_repo.head_oid(), _work(git_repo)) == (head, b"first\n")
    assert git(git_repo.root, "status", "--porcelain") == ""


def test_a_write_whose_index_cannot_be_written_says_it_committed(repo):
    git_repo, journal_dir = repo
    lock = Path(git_repo.repo.path) / "index.lock"
    lock.write_bytes(b"")
    with pytest.raises(GitError) as caught:
        git_repo.commit_files(
            {RECORD: b"second\n"}, "update", Provenance(op="update"), journal_dir=journal_dir
        )
    commit = str(git_repo.head_oid())
    assert caught.value.message.startswith(
        f"committed {commit[:7]}, but .git/index could not be updated ("
    )
    assert caught.value.message.endswith("); the next lantern command finishes it")
    lock.unlink()
    assert recover(git_repo, journal_dir) == (
        f"lantern: completed an interrupted update (commit {commit[:7]})"
    )
    assert git(git_repo.root, "status", "--porcelain") == ""


@pytest.mark.parametrize(
    "text",
    [
        b"{not json",
        b'{"op": "add"}',
        b"[1, 2]",
        b'{"op": "add", "ref": "refs/heads/main", "commit": "0", "head_before": null, "files": []}',
    ],
)
def test_an_unreadable_journal_is_discarded(repo, text):
    git_repo, journal_dir = repo
    os.makedirs(journal_dir, exist_ok=True)
    _journal(journal_dir).write_bytes(text)
    assert recover(git_repo, journal_dir) == "lantern: discarded an unreadable write journal"
    assert not _journal(journal_dir).exists()
    assert recover(git_repo, journal_dir) is None


# ---------------------------------------------------------------------------- a side branch


def test_a_side_branch_write_whose_ref_moved_is_completed_naming_its_commit(repo):
    git_repo, journal_dir = repo
    commit = git_repo.commit_to_branch(
        SIDE, {RECORD: b"pending\n"}, "add", Provenance(op="add"), journal_dir=journal_dir
    )
    assert json.loads(_journal(journal_dir).read_bytes())["worktree"] is False
    outcome = recover(git_repo, journal_dir)
    assert outcome == (
        f"lantern: completed an interrupted add on lantern/review/agent (commit {str(commit)[:7]})"
    )
    assert git_repo.branch_tip(SIDE) == commit
    assert _work(git_repo) == b"first\n"
    assert not _journal(journal_dir).exists()


@pytest.mark.parametrize("existing", [False, True])
def test_a_side_branch_write_whose_ref_did_not_move_is_rolled_back(repo, existing):
    git_repo, journal_dir = repo
    old = None
    if existing:
        old = git_repo.commit_to_branch(
            SIDE, {RECORD: b"earlier\n"}, "add", Provenance(op="add"), journal_dir=journal_dir
        )
        git_repo.finish(journal_dir)
    git_repo.commit_to_branch(
        SIDE, {RECORD: b"pending\n"}, "add", Provenance(op="add"), journal_dir=journal_dir
    )
    _point(git_repo, SIDE, old)
    outcome = recover(git_repo, journal_dir)
    assert outcome == (
        "lantern: rolled back an interrupted add on lantern/review/agent; "
        "nothing of it was committed"
    )
    assert git_repo.branch_tip(SIDE) == old
    assert not _journal(journal_dir).exists()


@pytest.mark.parametrize("above", [False, True])
def test_a_side_branch_moved_elsewhere_is_left_as_is(repo, above):
    git_repo, journal_dir = repo
    commit = git_repo.commit_to_branch(
        SIDE, {RECORD: b"pending\n"}, "add", Provenance(op="add"), journal_dir=journal_dir
    )
    elsewhere = _other_commit(git_repo, commit, above=above)
    _point(git_repo, SIDE, elsewhere)
    outcome = recover(git_repo, journal_dir)
    assert outcome == (
        "lantern: found an interrupted add on lantern/review/agent, which has since moved; "
        "left as is"
    )
    assert git_repo.branch_tip(SIDE) == elsewhere
    assert not _journal(journal_dir).exists()


def test_finish_drops_the_journal_and_is_quiet_when_there_is_none(repo):
    git_repo, journal_dir = repo
    git_repo.commit_files({RECORD: b"x\n"}, "u", Provenance(op="update"), journal_dir=journal_dir)
    assert _journal(journal_dir).exists()
    git_repo.finish(journal_dir)
    assert not _journal(journal_dir).exists()
    git_repo.finish(journal_dir)
    assert recover(git_repo, journal_dir) is None
