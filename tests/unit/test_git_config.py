"""What a store needs from git's configuration, asked directly on real repositories: the merge
driver's registration and the line of ``.gitattributes`` that routes files to it, the pull
strategy a bare ``git pull`` needs, and the lines added to ``.gitignore`` and
``.gitattributes``. Each rule is held on its own, with the expected values written out here, so
the mutation run's ``git_config`` module (benchmarks/mutation.py) can ask every line of it."""

from __future__ import annotations

import shlex
import subprocess
import sys
from pathlib import Path

import pygit2
import pytest
from support.stores import init_repo

from lantern_git.git.config import (
    attributes_line,
    driver_registered,
    ensure_merge_driver,
    ensure_pull_strategy,
    merge_driver_command,
    routes_to_driver,
    with_lines,
)

DRIVER_LINE = f"{shlex.quote(sys.executable)} -m lantern_git merge-file %O %A %B %P"


@pytest.fixture
def repo(tmp_path: Path) -> pygit2.Repository:
    return init_repo(tmp_path / "repo")


def local_config(repo: pygit2.Repository) -> str:
    """The repository's own config file, as git reads it."""
    return subprocess.run(
        ["git", "config", "--local", "--list"], cwd=repo.workdir, capture_output=True, text=True
    ).stdout


def locked(repo: pygit2.Repository) -> Path:
    """Git's lock on .git/config, as a running ``git config`` holds it: no write gets through."""
    lock = Path(repo.path, "config.lock")
    lock.write_text("")
    return lock


# ------------------------------------------------------------------------ the merge driver


def test_the_driver_runs_this_python_quoted_with_git_s_four_placeholders():
    assert merge_driver_command() == DRIVER_LINE
    assert attributes_line("memory/**/*.md") == "memory/**/*.md merge=lantern"


def test_registering_the_driver_writes_its_name_and_command_once(repo):
    assert not driver_registered(repo)
    assert ensure_merge_driver(repo) is True
    listed = local_config(repo)
    assert (
        "merge.lantern.name=lantern record merge (field by field; see lantern's docs/sync.md)"
        in listed
    )
    assert f"merge.lantern.driver={DRIVER_LINE}" in listed
    assert driver_registered(repo)
    assert ensure_merge_driver(repo) is False


@pytest.mark.parametrize("key", ["merge.lantern.driver", "merge.lantern.name"])
def test_a_driver_entry_set_otherwise_is_set_again(repo, key):
    ensure_merge_driver(repo)
    repo.config[key] = "something else"
    assert ensure_merge_driver(repo) is True
    assert repo.config["merge.lantern.driver"] == DRIVER_LINE
    assert repo.config["merge.lantern.name"].startswith("lantern record merge")


def test_an_empty_driver_is_not_registered(repo):
    repo.config["merge.lantern.driver"] = ""
    assert not driver_registered(repo)


def test_a_config_that_cannot_be_written_warns_and_changes_nothing(repo):
    lock = locked(repo)
    warned: list[str] = []
    assert ensure_merge_driver(repo, warned.append) is False
    assert len(warned) == 1
    assert warned[0].startswith(
        "lantern: could not register the record merge driver in .git/config ("
    )
    assert warned[0].endswith("); plain git pull will merge record files line by line until it is")
    assert ensure_merge_driver(repo) is False  # no warner: quiet
    lock.unlink()
    assert not driver_registered(repo)


# ------------------------------------------------------------------------- .gitattributes


def test_routing_is_read_from_gitattributes_line_by_line(repo):
    root = repo.workdir
    line = attributes_line("memory/**/*.md")
    assert not routes_to_driver(root, line)  # no file
    Path(root, ".gitattributes").write_text("*.txt text\n")
    assert not routes_to_driver(root, line)
    Path(root, ".gitattributes").write_text(f"*.txt text\n  {line}  \n")
    assert routes_to_driver(root, line)
    Path(root, ".gitattributes").write_text(f"# {line}\n{line} -diff\n")
    assert not routes_to_driver(root, line)


def test_routing_reads_the_first_64_kib_of_gitattributes(repo):
    root = repo.workdir
    line = attributes_line("memory/**/*.md")
    filler = "# " + "x" * 97 + "\n"  # 100 bytes
    Path(root, ".gitattributes").write_text(filler * 655 + line + "\n")  # ends before 64 KiB
    assert routes_to_driver(root, line)
    Path(root, ".gitattributes").write_text(filler * 656 + line + "\n")  # starts past it
    assert not routes_to_driver(root, line)


def test_a_gitattributes_that_is_a_folder_routes_nothing(repo):
    Path(repo.workdir, ".gitattributes").mkdir()
    assert not routes_to_driver(repo.workdir, attributes_line("memory/**/*.md"))


# --------------------------------------------------------------------------- pull strategy


def test_a_bare_pull_is_told_to_merge_unless_the_user_chose(repo):
    assert ensure_pull_strategy(repo) is True
    assert "pull.rebase=false" in local_config(repo)
    assert ensure_pull_strategy(repo) is False


@pytest.mark.parametrize(("key", "value"), [("pull.rebase", "true"), ("pull.ff", "only")])
def test_a_pull_strategy_the_user_chose_is_kept(repo, key, value):
    repo.config[key] = value
    assert ensure_pull_strategy(repo) is False
    assert repo.config[key] == value
    if key == "pull.ff":
        assert "pull.rebase" not in repo.config


def test_a_pull_strategy_that_cannot_be_written_warns(repo):
    lock = locked(repo)
    warned: list[str] = []
    assert ensure_pull_strategy(repo, warned.append) is False
    assert len(warned) == 1
    assert warned[0].startswith("lantern: could not set pull.rebase in .git/config (")
    assert warned[0].endswith(
        "); a bare git pull of diverged branches will ask how to reconcile them"
    )
    assert ensure_pull_strategy(repo) is False
    lock.unlink()
    assert "pull.rebase" not in repo.config


# ---------------------------------------------------------------------- lines added to files


def test_each_line_a_file_lacks_is_added_at_its_end_in_order():
    assert with_lines(b"", ("a", "b")) == b"a\nb\n"
    assert with_lines(b"x\n", ("a",)) == b"x\na\n"
    assert with_lines(b"x", ("a", "b")) == b"x\na\nb\n"


def test_a_line_the_file_has_is_not_added_again_even_spaced():
    assert with_lines(b"  a  \nb\n", ("a", "b")) == b"  a  \nb\n"
    assert with_lines(b"ab\n", ("a",)) == b"ab\na\n"
    assert with_lines(b"a\n", ("a", "a")) == b"a\n"


def test_bytes_that_are_not_utf8_are_kept_as_they_are():
    current = b"\xff\xfe odd\n"
    assert with_lines(current, ("a",)) == b"\xff\xfe odd\na\n"
    assert with_lines(current, ()) == current
