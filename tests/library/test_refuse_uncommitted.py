"""The one check every writer makes before it writes over a file (``refuse_uncommitted``),
asked directly on a real repository: which changes a person made count, and how the refusal
names them.

The writers' own tests (test_store.py, test_sync.py, test_undo.py, ...) prove that each
refuses and writes nothing; these hold the rule, where a clause lost from the status filter or
a miscount in the message would otherwise pass (the mutation run's ``uncommitted`` module
found those).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from support.stores import git, init_repo

from lantern_git.errors import UncommittedChanges
from lantern_git.git.repo import GitRepo
from lantern_git.workspace.transaction import refuse_uncommitted


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A repository with seven committed files (a.md ... g.md) and a .gitignore for *.log."""
    path = tmp_path / "repo"
    init_repo(path)
    for name in "abcdefg":
        (path / f"{name}.md").write_text(f"{name}\n")
    (path / ".gitignore").write_text("*.log\n")
    git(path, "add", "-A")
    git(path, "commit", "-q", "-m", "files")
    return path


def refusal(path: Path, *args, **kwargs) -> str:
    with pytest.raises(UncommittedChanges) as caught:
        refuse_uncommitted(GitRepo(str(path)), *args, **kwargs)
    return str(caught.value)


def test_a_clean_tree_and_ignored_files_are_no_uncommitted_changes(repo: Path) -> None:
    (repo / "build.log").write_text("ignored\n")
    refuse_uncommitted(GitRepo(str(repo)))
    refuse_uncommitted(GitRepo(str(repo)), ["a.md"])


def test_an_edit_to_a_committed_file_counts_with_or_without_paths(repo: Path) -> None:
    (repo / "b.md").write_text("b, edited\n")
    assert refusal(repo).startswith("b.md has uncommitted changes; commit them first")
    assert refusal(repo, ["b.md"]).startswith("b.md has uncommitted changes")
    refuse_uncommitted(GitRepo(str(repo)), ["a.md"])  # another file's edit is not this write's


def test_an_untracked_file_counts_unless_the_caller_says_it_does_not(repo: Path) -> None:
    (repo / "new.md").write_text("new\n")
    assert refusal(repo).startswith("new.md has uncommitted changes")
    assert refusal(repo, counts_untracked=lambda path: path == "new.md").startswith("new.md")
    refuse_uncommitted(GitRepo(str(repo)), counts_untracked=lambda path: False)
    # The caller's word is about untracked files only: an edit counts whatever it says.
    (repo / "c.md").write_text("c, edited\n")
    assert refusal(repo, counts_untracked=lambda path: False).startswith("c.md has")


def test_the_refusal_names_five_paths_and_counts_the_rest(repo: Path) -> None:
    for name in "abcde":
        (repo / f"{name}.md").write_text("edited\n")
    five = refusal(repo)
    assert five.startswith("a.md, b.md, c.md, d.md, e.md have uncommitted changes")
    (repo / "f.md").write_text("edited\n")
    assert refusal(repo).startswith("a.md, b.md, c.md, d.md, e.md and 1 more have uncommitted")
    for name in "ghijk":  # g.md edited, four files new: eleven in all
        (repo / f"{name}.md").write_text("edited\n")
    assert refusal(repo).startswith("a.md, b.md, c.md, d.md, e.md and 6 more have uncommitted")


def test_a_new_file_staged_but_not_committed_counts_whatever_the_caller_says(repo: Path) -> None:
    (repo / "staged.md").write_text("new\n")
    git(repo, "add", "staged.md")
    assert refusal(repo, counts_untracked=lambda path: False).startswith("staged.md has")


def test_bytes_already_read_are_compared_with_head_instead_of_the_file(repo: Path) -> None:
    (repo / "a.md").write_text("a, edited since it was read\n")
    refuse_uncommitted(GitRepo(str(repo)), ["a.md"], read={"a.md": b"a\n"})
    assert refusal(repo, ["a.md"], read={"a.md": b"other\n"}).startswith("a.md has")
    assert refusal(repo, ["absent.md"], read={"absent.md": b"x\n"}).startswith("absent.md has")
