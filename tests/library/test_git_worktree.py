"""What the git layer leaves in the working tree, asked directly on real files: the atomic
file write, a file, a link or a removal (its empty folders pruned), what a working file is as
git would store it, and, when a cut-off write is recovered, the temporaries and git lock files
the killed writer left.

The crash tests (test_faults.py, a process killed at each step) and the journal's
(test_journal_recovery.py) go through all of this; here each rule is held on its own, so the
mutation run's ``git_worktree`` module (benchmarks/mutation.py) can ask every line of it.
"""

from __future__ import annotations

import os
import stat
import subprocess
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TypeVar

import pygit2
import pytest
from support.stores import init_repo

from lantern_git.core.fields import JOURNAL, TMP_SUFFIX
from lantern_git.errors import GitError, StoreError
from lantern_git.git.repo import (
    BLOB_MODE,
    EXECUTABLE_MODE,
    LINK_MODE,
    GitRepo,
    Provenance,
    atomic_write,
    recover,
)

SUBMODULE_MODE = 0o160000
T = TypeVar("T")


@pytest.fixture
def repo(tmp_path: Path) -> GitRepo:
    init_repo(tmp_path / "repo")
    return GitRepo(str(tmp_path / "repo"))


@pytest.fixture
def umask() -> Iterator[None]:
    """A umask of 022 while the test runs (the machine's own is no part of what is asked)."""
    before = os.umask(0o022)
    yield
    os.umask(before)


def permissions(path: Path) -> int:
    return stat.S_IMODE(os.lstat(path).st_mode)


def blob(repo: GitRepo, data: bytes) -> str:
    return str(repo.repo.create_blob(data))


def leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.endswith(TMP_SUFFIX))


# ----------------------------------------------------------------------------- atomic_write


def test_an_atomic_write_makes_its_folders_and_leaves_no_temporary(tmp_path, umask):
    target = tmp_path / "a" / "b" / "file.md"
    atomic_write(str(target), b"hello\n")
    assert target.read_bytes() == b"hello\n"
    assert permissions(target) == 0o644
    assert leftovers(target.parent) == []


def test_an_atomic_write_replaces_the_whole_file_and_a_stale_temporary(tmp_path, umask):
    target = tmp_path / "file.md"
    target.write_bytes(b"a much longer old content\n")
    stale = tmp_path / ("." + target.name + TMP_SUFFIX)
    stale.write_bytes(b"a stale temporary, longer than what is written now\n")
    atomic_write(str(target), b"new\n", sync=False)
    assert target.read_bytes() == b"new\n"
    assert leftovers(tmp_path) == []


def test_an_executable_write_is_executable_whatever_the_umask(tmp_path):
    before = os.umask(0o077)
    try:
        atomic_write(str(tmp_path / "run"), b"#!/bin/sh\n", mode=0o755)
        atomic_write(str(tmp_path / "plain"), b"text\n")
    finally:
        os.umask(before)
    assert permissions(tmp_path / "run") == 0o755
    assert permissions(tmp_path / "plain") == 0o600


def test_an_atomic_write_that_cannot_rename_removes_its_temporary_and_raises(tmp_path):
    target = tmp_path / "taken"
    target.mkdir()
    (target / "inside.md").write_bytes(b"kept\n")
    with pytest.raises(OSError):
        atomic_write(str(target), b"over a folder\n")
    assert (target / "inside.md").read_bytes() == b"kept\n"
    assert leftovers(tmp_path) == []


# --------------------------------------------------------------------------- write_worktree


def test_a_file_is_written_with_its_blob_s_bytes_and_its_mode(repo, umask):
    root = Path(repo.root)
    repo.write_worktree("memory/aa/one.md", blob(repo, b"one\n"))
    # The mode as a tree gives it (not the module's own constant object).
    tree = repo.repo[repo.build_tree(None, {"run": (blob(repo, b"#!/bin/sh\n"), EXECUTABLE_MODE)})]
    repo.write_worktree("bin/run", blob(repo, b"#!/bin/sh\n"), int(tree["run"].filemode))
    repo.write_worktree("given.md", blob(repo, b"in git\n"), BLOB_MODE, data=b"given\n")
    assert (root / "memory/aa/one.md").read_bytes() == b"one\n"
    assert permissions(root / "memory/aa/one.md") == 0o644
    assert (root / "bin/run").read_bytes() == b"#!/bin/sh\n"
    assert permissions(root / "bin/run") == 0o755
    # The caller's bytes, when it has them, are what is written (git is not read again).
    assert (root / "given.md").read_bytes() == b"given\n"


def test_a_link_is_written_as_a_link_to_its_blob_s_target_over_what_was_there(repo):
    root = Path(repo.root)
    (root / "a").mkdir()
    (root / "a" / "link").write_bytes(b"a file first\n")
    repo.write_worktree("a/link", blob(repo, b"../target.md"), LINK_MODE)
    assert os.readlink(root / "a" / "link") == "../target.md"
    repo.write_worktree("new/deeper/link", blob(repo, b"elsewhere"), LINK_MODE)
    assert os.readlink(root / "new/deeper/link") == "elsewhere"


def test_a_submodule_entry_writes_nothing(repo):
    repo.write_worktree("vendor/lib", "1" * 40, SUBMODULE_MODE)
    assert not (Path(repo.root) / "vendor").exists()


def test_a_folder_where_a_file_goes_is_refused_and_kept(repo):
    root = Path(repo.root)
    (root / "memory" / "x.md").mkdir(parents=True)
    (root / "memory" / "x.md" / "mine.txt").write_bytes(b"mine\n")
    with pytest.raises(StoreError, match=r"memory/x\.md is a folder here") as raised:
        repo.write_worktree("memory/x.md", blob(repo, b"x\n"))
    assert raised.value.code == "uncommitted_changes"
    assert (root / "memory" / "x.md" / "mine.txt").read_bytes() == b"mine\n"


def test_a_link_to_a_folder_where_a_file_goes_is_replaced_and_its_folder_left(repo, tmp_path):
    root = Path(repo.root)
    outside = tmp_path / "outside"
    outside.mkdir()
    (root / "x.md").symlink_to(outside)
    repo.write_worktree("x.md", blob(repo, b"x\n"))
    assert not (root / "x.md").is_symlink()
    assert (root / "x.md").read_bytes() == b"x\n"
    assert list(outside.iterdir()) == []


def test_a_removal_prunes_the_folders_it_empties_and_stops_at_one_in_use(repo):
    root = Path(repo.root)
    for path in ("memory/aa/one.md", "memory/bb/two.md", "top.md"):
        repo.write_worktree(path, blob(repo, b"x\n"))
    repo.write_worktree("memory/aa/one.md", None)
    assert not (root / "memory" / "aa").exists()
    assert (root / "memory" / "bb" / "two.md").exists()
    repo.write_worktree("memory/bb/two.md", None)
    assert not (root / "memory").exists()
    # Nothing there: nothing to do, and the store's own folder always stays.
    repo.write_worktree("memory/cc/none.md", None)
    repo.write_worktree("top.md", None)
    assert root.is_dir()
    assert sorted(p.name for p in root.iterdir()) == [".git"]


# --------------------------------------------------------------------------- worktree_entry


def test_a_working_file_is_read_as_git_would_store_it(repo):
    root = Path(repo.root)
    (root / "plain.md").write_bytes(b"plain\n")
    (root / "run").write_bytes(b"#!/bin/sh\n")
    (root / "run").chmod(0o755)
    (root / "link").symlink_to("plain.md")
    (root / "dangling").symlink_to("nowhere/at/all")
    assert repo.worktree_entry("plain.md") == (str(pygit2.hash(b"plain\n")), BLOB_MODE)
    assert repo.worktree_entry("run") == (str(pygit2.hash(b"#!/bin/sh\n")), EXECUTABLE_MODE)
    assert repo.worktree_entry("link") == (str(pygit2.hash(b"plain.md")), LINK_MODE)
    assert repo.worktree_entry("dangling") == (str(pygit2.hash(b"nowhere/at/all")), LINK_MODE)
    assert repo.worktree_entry("missing.md") is None


@pytest.mark.parametrize(
    "permission",
    [0o644, 0o654, 0o645, 0o655, 0o744, 0o700, 0o600, 0o755],
    ids=lambda permission: f"{permission:o}",
)
def test_a_working_file_is_executable_exactly_when_git_says_so(repo, permission):
    """Git's own answer is the oracle: ``git add`` then ``git ls-files -s``."""
    path = Path(repo.root) / "file.md"
    path.write_bytes(b"text\n")
    path.chmod(permission)
    subprocess.run(["git", "add", "file.md"], cwd=repo.root, check=True)
    listed = subprocess.run(
        ["git", "ls-files", "-s", "file.md"], cwd=repo.root, capture_output=True, text=True
    ).stdout
    assert repo.worktree_entry("file.md") == (str(pygit2.hash(b"text\n")), int(listed[:6], 8))


def without_waiting_on(fifo: Path, call: Callable[[], T]) -> T:
    """``call()``'s answer, where nothing writes to ``fifo``: a call that opened it to read
    would wait for ever. It runs in a thread held to a bound; past it the test opens the
    FIFO's other end itself, so the thread ends and the test fails rather than hangs."""
    answers: list[T] = []
    worker = threading.Thread(target=lambda: answers.append(call()))
    worker.start()
    worker.join(20)
    if worker.is_alive():
        os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
        worker.join(20)
        pytest.fail(f"waited on the FIFO {fifo.name}")
    assert answers, "the call raised"
    return answers[0]


def test_what_no_tree_holds_is_an_empty_entry_and_a_fifo_is_never_opened(repo):
    root = Path(repo.root)
    (root / "folder").mkdir()
    os.mkfifo(root / "pipe")
    assert repo.worktree_entry("folder") == ("", 0)
    assert without_waiting_on(root / "pipe", lambda: repo.worktree_entry("pipe")) == ("", 0)


# ---------------------------------------------------------------- what a recovery clears


def cut_off_write(repo: GitRepo, journal: str, files: dict[str, bytes | None]) -> pygit2.Oid:
    """A committed write whose working files were never finished: its journal is left."""
    made = repo.commit_files(files, "w", Provenance(op="update"), journal_dir=journal)
    assert Path(journal, JOURNAL).exists()
    return made


def seeded(repo: GitRepo, journal: str) -> None:
    repo.commit_files({"memory/a.md": b"a\n"}, "seed", Provenance(op="add"), journal_dir=journal)
    repo.finish(journal)


LOCKS = (
    "index.lock",
    "HEAD.lock",
    "packed-refs.lock",
    "logs/HEAD.lock",
    "refs/heads/main.lock",
    "logs/refs/heads/main.lock",
)


def plant_locks(repo: GitRepo, mtime: float) -> None:
    for name in LOCKS:
        lock = Path(repo.repo.path, name)
        lock.parent.mkdir(parents=True, exist_ok=True)
        lock.write_bytes(b"")
        os.utime(lock, (mtime, mtime))


def locks_left(repo: GitRepo) -> list[str]:
    return [name for name in LOCKS if Path(repo.repo.path, name).exists()]


# The journal's time, set by the test: half-way through a second, so that a bound one second
# before it differs from the whole second it falls in.
JOURNAL_TIME = 1_764_000_000.5


def cut_off_at_a_known_time(repo: GitRepo, journal: str) -> None:
    seeded(repo, journal)
    cut_off_write(repo, journal, {"memory/a.md": b"A\n"})
    os.utime(Path(journal, JOURNAL), (JOURNAL_TIME, JOURNAL_TIME))


@pytest.mark.parametrize("before_journal", [0.0, 0.9, 1.0])
def test_a_recovery_clears_every_git_lock_made_from_a_second_before_its_journal(
    repo, tmp_path, before_journal
):
    journal = str(tmp_path / "state")
    cut_off_at_a_known_time(repo, journal)
    plant_locks(repo, JOURNAL_TIME - before_journal)
    assert recover(repo, journal) is not None
    assert locks_left(repo) == []


def refused_naming_each_lock(repo: GitRepo, journal: str, **kwargs: bool) -> None:
    """The recovery cannot finish while git's locks stay: it says which to remove, in git's
    folder, keeps its journal for the next try, and then finishes once they are gone."""
    with pytest.raises(GitError) as raised:
        recover(repo, journal, **kwargs)
    named = ", ".join(os.path.join(repo.repo.path, name) for name in LOCKS)
    assert str(raised.value).endswith(
        f"if no git command is running, remove {named} and run lantern again"
    )
    assert locks_left(repo) == list(LOCKS)
    assert Path(journal, JOURNAL).exists()
    for name in LOCKS:
        os.unlink(Path(repo.repo.path, name))
    assert recover(repo, journal, **kwargs) is not None
    assert Path(repo.root, "memory", "a.md").read_bytes() == b"A\n"


def test_a_git_lock_older_than_the_journal_is_left_for_the_git_that_made_it(repo, tmp_path):
    journal = str(tmp_path / "state")
    cut_off_at_a_known_time(repo, journal)
    plant_locks(repo, JOURNAL_TIME - 1.1)
    refused_naming_each_lock(repo, journal)


def test_a_recovery_told_not_to_clear_locks_leaves_them(repo, tmp_path):
    journal = str(tmp_path / "state")
    cut_off_at_a_known_time(repo, journal)
    plant_locks(repo, JOURNAL_TIME + 5)
    refused_naming_each_lock(repo, journal, clear_locks=False)


def test_a_recovery_removes_the_temporaries_of_the_journal_s_files_only(repo, tmp_path):
    journal = str(tmp_path / "state")
    seeded(repo, journal)
    cut_off_write(repo, journal, {"memory/a.md": b"A\n", "memory/b.md": b"b\n"})
    memory = Path(repo.root, "memory")
    for name in ("a.md", "b.md", "other.md"):
        (memory / ("." + name + TMP_SUFFIX)).write_bytes(b"half\n")
    assert recover(repo, journal) is not None
    assert leftovers(memory) == ["." + "other.md" + TMP_SUFFIX]
    assert (memory / "a.md").read_bytes() == b"A\n"
    assert (memory / "b.md").read_bytes() == b"b\n"


def test_a_completed_recovery_leaves_a_file_that_already_holds_its_content_untouched(
    repo, tmp_path
):
    journal = str(tmp_path / "state")
    seeded(repo, journal)
    cut_off_write(repo, journal, {"memory/a.md": b"A\n", "memory/b.md": b"b\n"})
    done = Path(repo.root, "memory", "a.md")
    inode = os.stat(done).st_ino
    os.unlink(Path(repo.root, "memory", "b.md"))
    assert recover(repo, journal) is not None
    assert os.stat(done).st_ino == inode
    assert Path(repo.root, "memory", "b.md").read_bytes() == b"b\n"


def test_a_rolled_back_recovery_puts_a_link_back_as_the_link_it_was(repo, tmp_path):
    journal = str(tmp_path / "state")
    root = Path(repo.root)
    (root / "memory").mkdir()
    (root / "memory" / "link.md").symlink_to("a.md")
    repo.commit_files({"memory/a.md": b"a\n"}, "seed", Provenance(op="add"), journal_dir=journal)
    repo.finish(journal)
    # The link is committed too, by plain git, so the write below replaces a tracked link.
    index = repo.repo.index
    index.add("memory/link.md")
    index.write()
    tree = index.write_tree()
    head = repo.head_oid()
    sig = repo.signature(None)
    linked = repo.repo.create_commit("HEAD", sig, sig, "link", tree, [head])
    cut_off_write(repo, journal, {"memory/link.md": b"now a file\n"})
    repo.repo.references["refs/heads/main"].set_target(linked)
    assert recover(repo, journal) is not None
    assert os.readlink(root / "memory" / "link.md") == "a.md"


def an_edit_whose_id_sorts(than: str, *, above: bool) -> bytes:
    """Text whose blob id sorts above (or below) ``than`` as text."""
    for n in range(200):
        data = f"an uncommitted edit {n}\n".encode()
        if (str(pygit2.hash(data)) > than) == above:
            return data
    raise AssertionError("no text with its id on that side in 200 tries")


@pytest.mark.parametrize("above", [True, False], ids=["id-above", "id-below"])
def test_a_rollback_puts_back_an_uncommitted_edit_the_write_replaced(repo, tmp_path, above):
    """The git layer alone (the writers above it refuse such a write): the edit's bytes are
    kept as a blob before the file is replaced, whichever way its id sorts."""
    journal = str(tmp_path / "state")
    seeded(repo, journal)
    head = repo.head_oid()
    edit = an_edit_whose_id_sorts(str(pygit2.hash(b"a\n")), above=above)
    working = Path(repo.root, "memory", "a.md")
    working.write_bytes(edit)
    cut_off_write(repo, journal, {"memory/a.md": b"the write\n"})
    repo.repo.references["refs/heads/main"].set_target(head)
    assert recover(repo, journal) == (
        "lantern: rolled back an interrupted update; nothing of it was committed"
    )
    assert working.read_bytes() == edit


def test_a_recovery_over_a_fifo_where_its_file_goes_never_waits_on_it(repo, tmp_path):
    journal = str(tmp_path / "state")
    seeded(repo, journal)
    cut_off_write(repo, journal, {"memory/a.md": b"A\n"})
    working = Path(repo.root, "memory", "a.md")
    working.unlink()
    os.mkfifo(working)
    outcome = without_waiting_on(working, lambda: recover(repo, journal))
    assert outcome is not None and "completed" in outcome
    assert working.read_bytes() == b"A\n"
