"""``lantern clone`` and a bare ``git pull`` of diverged hosts: real repositories, real git,
the real ``lantern`` CLI in subprocesses (git runs the merge driver as its own process)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from support.cli import lantern
from support.stores import git, snapshot

from lantern_git.model.record import Record
from lantern_git.model.record_file import read_record_file, record_path
from lantern_git.store import Store


def _driver(path: Path) -> str:
    return git(path, "config", "--get", "merge.lantern.driver", check=False).strip()


def _local(path: Path, key: str) -> str:
    return git(path, "config", "--local", "--get", key, check=False).strip()


@pytest.fixture
def remote(store_path, tmp_path) -> Path:
    """A bare remote holding the test store, which has one record."""
    Store.open(str(store_path)).add("Shared between hosts.", kind="fact", priority=50)
    bare = tmp_path / "remote.git"
    git(tmp_path, "clone", "-q", "--bare", str(store_path), str(bare))
    git(store_path, "remote", "add", "origin", str(bare))
    git(store_path, "fetch", "-q", "origin")
    git(store_path, "branch", "-q", "--set-upstream-to=origin/main")
    return bare


def _clone(url: Path, path: Path, *extra: str) -> dict:
    result = lantern("clone", str(url), str(path), "--json", *extra)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def _pull(path: Path) -> subprocess.CompletedProcess:
    """A bare `git pull`, exactly as a user types it (no --no-rebase, no --no-edit)."""
    env = {**os.environ, "GIT_EDITOR": "true"}
    return subprocess.run(
        ["git", "pull"], cwd=path, capture_output=True, text=True, env=env, check=False
    )


def _assert_valid_records(path: Path) -> None:
    for file in sorted((path / "memory").rglob("*.md")):
        rel = file.relative_to(path).as_posix()
        assert "<<<<<<<" not in file.read_text(), rel
        assert read_record_file(str(path), rel).record is not None, rel


def test_clone_registers_the_merge_driver_and_a_pull_strategy(remote, tmp_path):
    record = Store.open(str(remote.parent / "store")).list()[0]
    value = _clone(remote, tmp_path / "laptop")
    laptop = tmp_path / "laptop"
    assert value == {
        "url": str(remote),
        "path": str(laptop),
        "branch": "main",
        "head": git(laptop, "rev-parse", "HEAD").strip(),
        "records": 1,
        "registered_merge_driver": True,
        "set_pull_rebase": True,
    }
    assert _driver(laptop) != ""
    assert _local(laptop, "pull.rebase") == "false"
    assert (laptop / record_path(record.id)).is_file()
    # The first command has nothing left to register.
    listed = lantern("--store", str(laptop), "memory", "list", "--json")
    assert "merge driver" not in listed.stderr
    assert [r["id"] for r in json.loads(listed.stdout)] == [record.id]
    assert git(laptop, "status", "--porcelain") == ""


def test_clone_without_a_path_names_the_folder_as_git_does(remote, tmp_path):
    work = tmp_path / "work"
    work.mkdir()
    result = lantern("clone", str(remote), cwd=work)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[0] == (
        f"Cloned {remote} into {work / 'remote'} (1 record, branch main)"
    )
    assert (work / "remote" / "lantern.yaml").is_file()


@pytest.mark.parametrize("strategy", ["merge", "rebase"])
def test_a_bare_git_pull_of_diverged_hosts_merges_records_field_by_field(
    store_path, remote, tmp_path, strategy
):
    if strategy == "rebase":
        # The user's own choice, set before the clone, is kept and used.
        git(tmp_path, "config", "--global", "pull.rebase", "true")
    value = _clone(remote, tmp_path / "laptop")
    laptop = tmp_path / "laptop"
    assert value["set_pull_rebase"] is (strategy == "merge")
    assert _local(laptop, "pull.rebase") == ("false" if strategy == "merge" else "")
    record_id = Store.open(str(laptop)).list()[0].id
    desk = lantern("--store", str(store_path), "memory", "update", record_id, "--priority", "90")
    assert desk.returncode == 0, desk.stderr
    git(store_path, "push", "-q", "origin", "main")
    for args in (
        ("update", record_id, "--urgency", "40"),
        ("add", "Laptop only.", "--kind", "fact"),
    ):
        done = lantern("--store", str(laptop), "memory", *args)
        assert done.returncode == 0, done.stderr

    pulled = _pull(laptop)
    assert pulled.returncode == 0, pulled.stderr
    assert "divergent branches" not in pulled.stderr
    merged = Record.from_markdown((laptop / record_path(record_id)).read_text())
    assert (merged.priority, merged.urgency) == (90, 40)
    _assert_valid_records(laptop)
    assert git(laptop, "status", "--porcelain") == ""
    parents = git(laptop, "log", "-1", "--format=%P").split()
    assert len(parents) == (2 if strategy == "merge" else 1)
    checked = lantern("--store", str(laptop), "check")
    assert checked.returncode == 0, checked.stdout + checked.stderr


def test_init_sets_pull_rebase_false_only_when_the_user_chose_no_strategy(tmp_path):
    # In subprocesses: libgit2 finds the global config from the HOME it started with.
    plain = tmp_path / "plain"
    assert lantern("init", str(plain)).returncode == 0
    assert _local(plain, "pull.rebase") == "false"
    git(tmp_path, "config", "--global", "pull.ff", "only")
    chosen = tmp_path / "chosen"
    assert lantern("init", str(chosen)).returncode == 0
    assert _local(chosen, "pull.rebase") == ""
    assert _local(chosen, "pull.ff") == ""


def test_a_plain_git_clone_gets_the_pull_strategy_with_the_merge_driver(remote, tmp_path):
    clone = tmp_path / "plain-clone"
    git(tmp_path, "clone", "-q", str(remote), str(clone))
    assert _local(clone, "pull.rebase") == ""
    lantern("--store", str(clone), "memory", "list")
    assert _local(clone, "pull.rebase") == "false"


def test_clone_into_a_folder_that_is_not_empty_is_refused_and_changes_nothing(remote, tmp_path):
    busy = tmp_path / "busy"
    busy.mkdir()
    (busy / "notes.txt").write_text("mine\n")
    result = lantern("clone", str(remote), str(busy), "--json")
    assert result.returncode == 2
    assert result.stdout == ""
    error = json.loads(result.stderr)["error"]
    assert error["code"] == "destination_exists"
    assert str(busy) in error["message"]
    assert sorted(p.name for p in busy.iterdir()) == ["notes.txt"]


def test_cloning_a_repository_that_is_not_a_store_keeps_nothing(tmp_path):
    plain = tmp_path / "plain"
    plain.mkdir()
    git(plain, "init", "-q")
    (plain / "README").write_text("not a store\n")
    git(plain, "add", "README")
    git(plain, "commit", "-q", "-m", "readme")
    empty = tmp_path / "empty.git"
    git(tmp_path, "init", "-q", "--bare", str(empty))
    kept = tmp_path / "kept"
    kept.mkdir()
    for url, target in ((plain, tmp_path / "c1"), (empty, tmp_path / "c2"), (plain, kept)):
        result = lantern("clone", str(url), str(target))
        assert result.returncode == 1, result.stderr
        assert f"Error: {url} is not a lantern store" in result.stderr
        assert "nothing was kept" in result.stderr
    assert not (tmp_path / "c1").exists() and not (tmp_path / "c2").exists()
    assert kept.is_dir() and list(kept.iterdir()) == []


def test_a_url_git_cannot_clone_is_a_git_error(tmp_path):
    result = lantern("clone", str(tmp_path / "nowhere.git"), str(tmp_path / "x"), "--json")
    assert result.returncode == 1
    error = json.loads(result.stderr)["error"]
    assert error["code"] == "git_error"
    assert error["message"].startswith(f"git clone {tmp_path / 'nowhere.git'} failed:")
    assert not (tmp_path / "x").exists()


def test_clone_leaves_the_source_store_untouched(store_path, remote, tmp_path):
    before = snapshot(store_path)
    _clone(store_path, tmp_path / "direct")
    assert snapshot(store_path) == before


@pytest.mark.parametrize(
    ("url", "name"),
    [
        ("https://example.org/ana/memory.git", "memory"),
        ("https://example.org/ana/memory/", "memory"),
        ("git@example.org:ana/memory.git", "memory"),
        ("example.org:memory.git", "memory"),
        ("/srv/git/memory.git", "memory"),
        ("../memory/.git", "memory"),
        ("https://example.org/ana/memory.git/", "memory"),
        ("https://example.org/ana/memory/.git/", "memory"),
        ("ssh://host:22/memory.git", "memory"),
        ("git@host:team/memory", "memory"),
        ("host:memory", "memory"),
        ("memory.git", "memory"),
        ("https://example.org/.git", "example.org"),
        (".git", "store"),
    ],
)
def test_the_default_folder_is_the_urls_last_part_without_dot_git(url, name):
    from lantern_git.git.remote import clone_name

    assert clone_name(url) == name
