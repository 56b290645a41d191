"""What every command does with record files that are not what they should be, through the real
CLI in subprocesses: FIFOs, sockets, folders and symlinks where a record file should be, files
with git conflict markers, a store path that is a file, and a plain ``git clone`` that was never
``lantern init``-ed (so its record merge driver is not registered)."""

from __future__ import annotations

import json
import os
import socket
from pathlib import Path

import pytest
from support.cli import lantern
from support.stores import git

from lantern_git.model.record import Record
from lantern_git.model.record_file import record_path

ODD = "0123456789abcdef"
ODD_PATH = record_path(ODD)


def _add(store: Path, content: str) -> str:
    result = lantern("--store", str(store), "memory", "add", content, "--kind", "fact", "--json")
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)["id"]


def _plant(store: Path, kind: str, outside: Path) -> str:
    """A non-regular entry where a record file should be; the word its report must use."""
    target = store / ODD_PATH
    target.parent.mkdir(parents=True, exist_ok=True)
    if kind == "fifo":
        os.mkfifo(target)
        return "named pipe"
    if kind == "socket":
        # AF_UNIX paths are limited to ~108 bytes: bind from inside the folder.
        cwd = os.getcwd()
        os.chdir(target.parent)
        try:
            sock = socket.socket(socket.AF_UNIX)
            sock.bind(target.name)
            sock.close()
        finally:
            os.chdir(cwd)
        return "socket"
    if kind == "folder":
        target.mkdir()
        (target / "inside.md").write_text("not a record\n")
        return "folder"
    outside.write_text(Record.new(kind="fact", content="outside").to_markdown())
    target.symlink_to(outside)
    return "symbolic link"


@pytest.mark.parametrize("kind", ["fifo", "socket", "folder", "symlink"])
def test_every_command_reports_a_non_regular_record_file_and_none_hangs(store_path, tmp_path, kind):
    good = _add(store_path, "a readable record")
    word = _plant(store_path, kind, tmp_path / "outside.md")
    store = str(store_path)
    # A hang fails here through the subprocess timeout.
    check = lantern("--store", store, "check", "--json", timeout=30)
    assert check.returncode == 4, check.stderr
    problems = json.loads(check.stdout)["problems"]
    assert any(p["path"] == ODD_PATH and word in p["message"] for p in problems), problems
    listing = lantern("--store", store, "memory", "list", "--json", timeout=30)
    assert listing.returncode == 0, listing.stderr
    assert [r["id"] for r in json.loads(listing.stdout)] == [good]
    assert ODD_PATH in listing.stderr and word in listing.stderr
    show = lantern("--store", store, "memory", "show", ODD, timeout=30)
    assert show.returncode == 1
    assert ODD_PATH in show.stderr and word in show.stderr
    status = lantern("--store", store, "status", "--json", timeout=30)
    assert status.returncode == 0, status.stderr
    assert json.loads(status.stdout)["broken_files"] == 1
    export = lantern("--store", store, "export", timeout=30)
    assert export.returncode == 4
    assert [json.loads(line)["id"] for line in export.stdout.splitlines()] == [good]
    assert ODD_PATH in export.stderr and "left out 1 record file" in export.stderr


def test_export_exits_4_and_counts_the_hand_broken_files_it_skipped(store_path):
    kept = _add(store_path, "kept in the backup")
    broken = _add(store_path, "broken by hand")
    path = store_path / record_path(broken)
    path.write_text(path.read_text().replace("kind: fact", "kind: [nonsense"))
    result = lantern("--store", str(store_path), "export", "--json")
    assert result.returncode == 4
    assert [json.loads(line)["id"] for line in result.stdout.splitlines()] == [kept]
    error = json.loads(result.stderr.splitlines()[-1])["error"]
    assert error["code"] == "check_failed"
    assert "left out 1 record file" in error["message"]
    assert record_path(broken) in result.stderr


def test_a_whole_export_still_exits_0(store_path):
    _add(store_path, "one")
    _add(store_path, "two")
    result = lantern("--store", str(store_path), "export")
    assert result.returncode == 0, result.stderr
    assert len(result.stdout.splitlines()) == 2


CONFLICTED = """---
id: {id}
kind: fact
scope: global
status: active
<<<<<<< ours
priority: 70
=======
priority: 80
>>>>>>> theirs
urgency: 0
confidence: 1.0
created_at: 1764690000
updated_at: 1764690000
---
{content}
"""


def test_conflict_markers_are_reported_as_a_merge_conflict_with_the_way_out(store_path):
    record_id = _add(store_path, "merged without the driver")
    path = store_path / record_path(record_id)
    path.write_text(CONFLICTED.format(id=record_id, content="merged without the driver"))
    check = lantern("--store", str(store_path), "check")
    assert check.returncode == 4
    line = next(x for x in check.stdout.splitlines() if record_path(record_id) in x)
    # Located at the first marker (line 6), and saying what resolves it.
    assert line.startswith(f"{record_path(record_id)}:6: holds git merge conflict markers")
    assert "git merge --abort" in line and "lantern sync" in line
    listing = lantern("--store", str(store_path), "memory", "list")
    assert "merge conflict markers" in listing.stderr
    assert "invalid YAML" not in listing.stderr


def test_a_store_path_that_is_a_file_is_named_as_a_file(tmp_path):
    plain = tmp_path / "notes.txt"
    plain.write_text("a file, not a store\n")
    for args in (["memory", "list"], ["init"]):
        result = lantern("--store", str(plain), *args)
        assert result.returncode == 1, result.stderr
        assert "is a file, not a folder" in result.stderr
        assert "Errno" not in result.stderr
        assert f"lantern init {plain}" not in result.stderr
    init = lantern("init", str(plain))
    assert init.returncode == 1
    assert "is a file, not a folder" in init.stderr
    assert plain.read_text() == "a file, not a store\n"


def _driver(path: Path) -> str:
    return git(path, "config", "--get", "merge.lantern.driver", check=False).strip()


def test_a_plain_clone_gets_its_merge_driver_from_the_first_command_and_pull_merges_records(
    store_path, tmp_path
):
    record_id = _add(store_path, "shared between hosts")
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(store_path), str(clone))
    for path in (clone,):
        git(path, "config", "user.name", "Clone Author")
        git(path, "config", "user.email", "clone@example.com")
    assert _driver(clone) == ""
    first = lantern("--store", str(clone), "memory", "list", "--json")
    assert first.returncode == 0, first.stderr
    assert first.stderr.count("registered the record merge driver") == 1
    assert _driver(clone) != ""
    again = lantern("--store", str(clone), "memory", "list", "--json")
    assert "merge driver" not in again.stderr
    # Both sides change the record; a plain git pull in the clone merges it field by field.
    assert lantern("--store", str(store_path), "memory", "update", record_id, "--priority", "90")
    assert lantern("--store", str(clone), "memory", "update", record_id, "--urgency", "40")
    git(clone, "pull", "-q", "--no-rebase", "--no-edit")
    text = (clone / record_path(record_id)).read_text()
    assert "<<<<<<<" not in text
    merged = Record.from_markdown(text)
    assert (merged.priority, merged.urgency) == (90, 40)
