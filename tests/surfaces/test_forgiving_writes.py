"""Forgiving where it costs nothing (issue 14): an add of stored content says in what state it
is and what the given options would change; a store this user cannot write still answers
list, search, show and status, and refuses writes with a clear "read-only"."""

from __future__ import annotations

import json
import os
import stat
import subprocess
from pathlib import Path

import pytest
from support.cli import as_reader, lantern
from support.processes import as_plain_user
from support.stores import git, snapshot

BETA = "Ship the beta on Friday."


def _ok(*args, **kwargs):
    result = lantern(*args, **kwargs)
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_adding_stored_content_names_its_status_and_the_options_that_differ(store_path):
    store = ["--store", str(store_path)]
    _ok("memory", "add", BETA, "--kind", "goal", "--scope", "project:beta", *store)
    _ok("memory", "archive", "4f66", *store)
    before = snapshot(store_path)

    plain = _ok("memory", "add", BETA, "--kind", "goal", "--scope", "project:beta", *store)
    assert plain.splitlines() == [
        f"exists (archived) 4f66f76  {BETA}",
        "  to make it active again: lantern memory restore 4f66f76",
    ]
    differing = _ok(
        "memory", "add", BETA, "--kind", "goal", "--scope", "project:beta", "--priority", "70",
        "--urgency", "0", "--source-ref", "ticket:BETA 12", *store,
    )  # fmt: skip
    # urgency 0 was given but is what the record has: only what differs is named.
    assert differing.splitlines() == [
        f"exists (archived) 4f66f76  {BETA}",
        "  stored record differs: priority is 50 (you gave 70); source_refs lacks 'ticket:BETA 12'",
        "  to change it: lantern memory update 4f66f76 --priority 70 "
        "--add-source-ref 'ticket:BETA 12'",
        "  to make it active again: lantern memory restore 4f66f76",
    ]
    as_json = json.loads(
        _ok("memory", "add", BETA, "--kind", "goal", "--scope", "project:beta", "--priority",
            "70", "--json", *store)
    )  # fmt: skip
    assert as_json["status"] == "archived" and as_json["priority"] == 50
    assert snapshot(store_path) == before

    # The printed command does what it says.
    _ok("memory", "update", "4f66f76", "--priority", "70", "--add-source-ref", "ticket:BETA 12",
        *store)  # fmt: skip
    _ok("memory", "restore", "4f66f76", *store)
    again = _ok(
        "memory", "add", BETA, "--kind", "goal", "--scope", "project:beta", "--priority", "70",
        "--source-ref", "ticket:BETA 12", *store,
    )  # fmt: skip
    assert again.splitlines() == [f"exists (active) 4f66f76  {BETA}"]


# ---------------------------------------------------------------------------- read-only


def _reader_run(command: list[str], env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run(
        command,
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        preexec_fn=as_plain_user,
    )


def _tree(path: Path) -> dict[str, tuple[int, int]]:
    return {
        p.relative_to(path).as_posix(): (p.stat().st_mode, p.stat().st_mtime_ns)
        for p in sorted(path.rglob("*"))
    }


@pytest.fixture
def read_only_store(store_path, tmp_path, request):
    store = ["--store", str(store_path)]
    _ok("memory", "add", BETA, "--kind", "goal", "--scope", "project:beta", *store)
    _ok("memory", "add", "Ana prefers short answers.", "--kind", "preference", *store)
    _ok("memory", "archive", "4f66", *store)
    expected = {
        "list": json.loads(_ok("memory", "list", "--status", "all", "--json", *store)),
        "search": json.loads(_ok("memory", "search", "beta", "--status", "all", "--json", *store)),
        "show": json.loads(_ok("memory", "show", "4f66", "--json", *store)),
    }
    if request.param == "no .lantern":
        for p in sorted((store_path / ".lantern").rglob("*"), reverse=True):
            p.rmdir() if p.is_dir() else p.unlink()
        (store_path / ".lantern").rmdir()
    for p in [store_path, *store_path.rglob("*")]:
        if not p.is_symlink():
            p.chmod(p.stat().st_mode & ~(stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH))
    temp = tmp_path / "tmp"
    temp.mkdir()
    yield store_path, expected, temp
    for p in [store_path, *store_path.rglob("*")]:
        if not p.is_symlink():
            p.chmod(p.stat().st_mode | stat.S_IWUSR)


@pytest.mark.parametrize("read_only_store", ["no .lantern", ".lantern"], indirect=True)
def test_a_read_only_store_answers_reads_and_refuses_writes(read_only_store):
    store_path, expected, temp = read_only_store
    store = ["--store", str(store_path)]
    env = {"TMPDIR": str(temp)}
    before, files = snapshot(store_path), _tree(store_path)
    # The condition is real: this reader cannot create a file in the store.
    probe = _reader_run(["touch", str(store_path / "probe")], env)
    assert probe.returncode != 0

    def read(*args):
        result = as_reader(*args, *store, env=env)
        assert result.returncode == 0, result.stderr
        return result.stdout

    assert json.loads(read("memory", "list", "--status", "all", "--json")) == expected["list"]
    hits = json.loads(read("memory", "search", "beta", "--status", "all", "--json"))
    # The same hits; a score may differ in its last digits (a fresh index has no deleted
    # documents in its statistics).
    assert [{**h, "score": None} for h in hits] == [
        {**h, "score": None} for h in expected["search"]
    ]
    assert all(h["score"] > 0 for h in hits)
    assert json.loads(read("memory", "show", "4f66", "--json")) == expected["show"]
    status = json.loads(read("status", "--json"))
    assert status["read_only"] is True and status["records"] == 2
    assert read("status").splitlines()[0] == f"store:    {store_path} (read-only)"
    assert "Ship the beta" in read("memory", "list", "--status", "archived")
    ops = [e["op"] for e in json.loads(read("memory", "history", "4f66", "--json"))["history"]]
    assert ops == ["archive", "add"]
    assert json.loads(read("log", "--json"))["log"][0]["op"] == "archive"
    assert len(read("export").splitlines()) == 2

    writes = [
        ("memory", "add", "A new fact.", "--kind", "fact"),
        ("memory", "archive", "61f4"),
        ("memory", "restore", "4f66"),
        ("memory", "update", "61f4", "--priority", "10"),
        ("memory", "edit", "61f4"),
        ("commit",),
    ]
    for args in writes:
        result = as_reader(*args, *store, "--json", env={**env, "EDITOR": "true"})
        assert result.returncode == 1, (args, result.stderr)
        assert result.stdout == ""
        error = json.loads(result.stderr.strip().splitlines()[-1])["error"]
        assert error["code"] == "read_only", args
        assert "read-only" in error["message"] and str(store_path) in error["message"]
    text = as_reader("memory", "add", "A new fact.", "--kind", "fact", *store, env=env)
    assert text.returncode == 1
    assert text.stderr.startswith(f"Error: {store_path} is read-only for this user")

    # Nothing was written: not the files, not .lantern/, not git; the temporary index is gone.
    # (The tree first: snapshot runs git status as this test's user, who may refresh .git.)
    assert _tree(store_path) == files
    assert snapshot(store_path) == before
    assert list(temp.iterdir()) == []
    assert git(store_path, "status", "--porcelain") == ""
