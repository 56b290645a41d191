"""Bugs a new user met first (issue 11): init's store, all-digit ids, a missing --kind.

Every test drives the real CLI in a subprocess, from a working folder that is not the store.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support.cli import lantern
from support.stores import git, make_store


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


# ---------------------------------------------------------------------------- all-digit ids

QUOTE_HINT = (
    "must be 16 lowercase hex digits in quotes; YAML read {id} as a number, so write {key}: '{id}'"
)


def hand_written(store: Path, record_id: str, extra: str = "") -> str:
    rel = f"memory/{record_id[:2]}/{record_id}.md"
    (store / rel).parent.mkdir(parents=True, exist_ok=True)
    (store / rel).write_text(
        f"---\nid: {record_id}\nkind: fact\n{extra}created_at: 1\nupdated_at: 1\n---\n"
        f"hand {record_id}\n"
    )
    return rel


@pytest.mark.parametrize("record_id", ["1234567890123456", "0000000000000000", "0123456701234567"])
def test_an_unquoted_all_digit_id_is_reported_as_needing_quotes(tmp_path, record_id):
    store = make_store(tmp_path / "store")
    rel = hand_written(store, record_id)
    expected = f"{rel}:2: id: " + QUOTE_HINT.format(id=record_id, key="id")

    check = lantern("--store", str(store), "check", cwd=tmp_path)
    assert check.returncode == 4, check.stdout + check.stderr
    assert expected in check.stdout + check.stderr
    assert "got 0" not in check.stdout + check.stderr

    listing = lantern("--store", str(store), "memory", "list", "--json", cwd=tmp_path)
    assert listing.returncode == 0, listing.stderr
    assert json.loads(listing.stdout) == []
    assert f"warning: skipped {expected}" in listing.stderr


def test_an_unquoted_all_digit_supersedes_id_is_reported_as_needing_quotes(tmp_path):
    store = make_store(tmp_path / "store")
    rel = hand_written(store, "3f9a1c0e2b7d4a61", extra="supersedes_id: 0000000000000001\n")
    expected = f"{rel}:4: supersedes_id: " + QUOTE_HINT.format(
        id="0000000000000001", key="supersedes_id"
    )
    check = lantern("--store", str(store), "check", cwd=tmp_path)
    assert check.returncode == 4, check.stdout + check.stderr
    assert expected in check.stdout + check.stderr

    listing = lantern("--store", str(store), "memory", "list", "--json", cwd=tmp_path)
    assert listing.returncode == 0, listing.stderr
    assert f"warning: skipped {expected}" in listing.stderr


def test_a_quoted_all_digit_id_is_a_valid_record(tmp_path):
    store = make_store(tmp_path / "store")
    path = store / hand_written(store, "1234567890123456")
    # The fix the message asks for.
    path.write_text(path.read_text().replace("id: 1234567890123456", "id: '1234567890123456'"))
    check = lantern("--store", str(store), "check", cwd=tmp_path)
    assert check.returncode == 0, check.stdout + check.stderr
    listing = lantern("--store", str(store), "memory", "list", "--json", cwd=tmp_path)
    assert [r["id"] for r in json.loads(listing.stdout)] == ["1234567890123456"]


def test_a_short_number_id_keeps_the_plain_message(tmp_path):
    store = make_store(tmp_path / "store")
    (store / "memory/12").mkdir(parents=True)
    (store / "memory/12/1234567890123456.md").write_text(
        "---\nid: 12345\nkind: fact\ncreated_at: 1\nupdated_at: 1\n---\nx\n"
    )
    check = lantern("--store", str(store), "check", cwd=tmp_path)
    assert check.returncode == 4
    assert "id: must be 16 lowercase hex digits, got 12345" in check.stdout + check.stderr


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
