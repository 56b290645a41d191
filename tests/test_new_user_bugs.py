"""Bugs a new user met first (issue 11): init's store, all-digit ids, a missing --kind.

Every test drives the real CLI in a subprocess, from a working folder that is not the store.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import git, init_repo, lantern

from lantern_git.store import Store


def make_store(path: Path) -> Path:
    init_repo(path)
    Store.init(str(path)).close()
    return path


def assert_initialized(path: Path) -> None:
    assert (path / "lantern.yaml").is_file()
    assert (path / ".git").is_dir()
    assert "Lantern-Op: init" in git(path, "log", "-1", "--format=%B")


def assert_untouched(folder: Path) -> None:
    """The folder the command ran in did not become a repository or a store."""
    assert not (folder / ".git").exists(), f"{folder} became a git repository"
    assert sorted(p.name for p in folder.iterdir()) == []


# ---------------------------------------------------------------------------- init's store


@pytest.mark.parametrize("where", ["before", "after"])
def test_init_uses_the_store_option_not_the_current_folder(tmp_path, where):
    cwd, target = tmp_path / "cwd", tmp_path / "target"
    cwd.mkdir()
    args = (
        ["--store", str(target), "init"] if where == "before" else ["init", "--store", str(target)]
    )
    result = lantern(*args, "--json", cwd=cwd)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["path"] == str(target)
    assert_initialized(target)
    assert_untouched(cwd)


def test_init_uses_lantern_store_not_the_current_folder(tmp_path):
    cwd, target = tmp_path / "cwd", tmp_path / "target"
    cwd.mkdir()
    result = lantern("init", "--json", cwd=cwd, env={"LANTERN_STORE": str(target)})
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["path"] == str(target)
    assert_initialized(target)
    assert_untouched(cwd)


def test_init_path_wins_over_store_option_and_lantern_store(tmp_path):
    cwd, chosen = tmp_path / "cwd", tmp_path / "chosen"
    cwd.mkdir()
    flag, env = tmp_path / "flag", tmp_path / "env"
    result = lantern(
        "--store", str(flag), "init", str(chosen), "--json",
        cwd=cwd, env={"LANTERN_STORE": str(env)},
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["path"] == str(chosen)
    assert_initialized(chosen)
    assert not flag.exists() and not env.exists()
    assert_untouched(cwd)


def test_init_store_option_wins_over_lantern_store(tmp_path):
    cwd, flag, env = tmp_path / "cwd", tmp_path / "flag", tmp_path / "env"
    cwd.mkdir()
    result = lantern("--store", str(flag), "init", cwd=cwd, env={"LANTERN_STORE": str(env)})
    assert result.returncode == 0, result.stderr
    assert_initialized(flag)
    assert not env.exists()
    assert_untouched(cwd)


def test_init_without_a_store_still_initializes_the_current_folder(tmp_path):
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    result = lantern("init", "--json", cwd=cwd)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["path"] == str(cwd)
    assert_initialized(cwd)


# ---------------------------------------------------------------------------- a missing --kind


def test_add_without_kind_is_a_usage_error_naming_the_option(tmp_path):
    store = make_store(tmp_path / "store")
    head = git(store, "rev-parse", "HEAD")
    result = lantern("--store", str(store), "memory", "add", "x", cwd=tmp_path)
    assert result.returncode == 2, result.stderr
    assert "Missing option '--kind'" in result.stderr
    assert "got null" not in result.stderr

    as_json = lantern("--store", str(store), "memory", "add", "x", "--json", cwd=tmp_path)
    assert as_json.returncode == 2
    assert as_json.stdout == ""
    error = json.loads(as_json.stderr)["error"]
    assert error["code"] == "usage_error"
    assert "--kind" in error["message"]
    assert git(store, "rev-parse", "HEAD") == head


def test_supersede_still_takes_kind_from_the_old_record(tmp_path):
    store = make_store(tmp_path / "store")
    added = lantern(
        "--store", str(store), "memory", "add", "old", "--kind", "goal", "--json", cwd=tmp_path
    )
    assert added.returncode == 0, added.stderr
    old = json.loads(added.stdout)
    result = lantern(
        "--store", str(store), "memory", "supersede", old["id"], "new", "--json", cwd=tmp_path
    )
    assert result.returncode == 0, result.stderr
    new = json.loads(result.stdout)
    assert (new["kind"], new["supersedes_id"]) == ("goal", old["id"])
