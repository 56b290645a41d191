"""The git layer's last word on where a write may go (``GitRepo.check_inside``), asked directly:
every commit, review commit and fast-forward checks each path with it before writing a file.

test_hostile_input.py holds that the CLI refuses a store whose folder is a link and writes
nothing; these hold the rule for each kind of path (the mutation run's ``write_paths`` module,
benchmarks/mutation.py, asks each line).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from support.stores import init_repo

from lantern_git.errors import GitError
from lantern_git.git.repo import GitRepo


@pytest.fixture
def repo(tmp_path: Path) -> GitRepo:
    init_repo(tmp_path / "store")
    return GitRepo(str(tmp_path / "store"))


@pytest.mark.parametrize(
    "path", ["memory/01/a.md", "a.md", "memory/..a/b.md", "memory/a..md", "notes/.hidden"]
)
def test_a_plain_relative_path_may_be_written(repo, path):
    repo.check_inside(path)


@pytest.mark.parametrize(
    "path", ["", "/etc/passwd", "../outside.md", "memory/../../x.md", "memory/..", "a\\b.md"]
)
def test_a_path_that_could_leave_the_store_is_refused(repo, path):
    with pytest.raises(GitError) as caught:
        repo.check_inside(path)
    assert str(caught.value) == f"refusing to write {path!r}: not a plain path inside the store"


def test_a_path_under_a_folder_that_is_a_link_is_refused_naming_the_link(repo, tmp_path):
    root = Path(repo.root)
    (tmp_path / "elsewhere").mkdir()
    (root / "memory").mkdir()
    os.symlink(tmp_path / "elsewhere", root / "memory" / "01")
    with pytest.raises(GitError) as caught:
        repo.check_inside("memory/01/a.md")
    assert str(caught.value) == (
        "refusing to write memory/01/a.md: memory/01 is a symbolic link, and lantern never "
        "writes outside the store"
    )
    os.symlink(tmp_path / "elsewhere", root / "linked")
    with pytest.raises(GitError) as caught:
        repo.check_inside("linked/x/a.md")
    assert str(caught.value).startswith("refusing to write linked/x/a.md: linked is a symbolic")
    repo.check_inside("memory/02/a.md")  # a folder that is not there yet is no link
