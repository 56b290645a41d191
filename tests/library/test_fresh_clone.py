"""A plain ``git clone`` of a store builds its index once: the next command re-reads nothing.

Every file of a fresh clone was written just before the first command's index build, so all of
them are newer than the freshness stamp (set a margin before the build), and the second command
used to read and hash each of them again. ``LANTERN_DEBUG_INDEX=1`` makes each check say on
stderr what it did.
"""

from __future__ import annotations

import json
import time

from support.cli import lantern
from support.stores import git

from lantern_git.model.record import Record
from lantern_git.model.record_file import record_path
from lantern_git.store import Store

RECORDS = 300


def index_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("index: ")]


def test_the_second_list_in_a_fresh_clone_neither_rebuilds_nor_rereads(tmp_path):
    source = tmp_path / "source"
    store = Store.init(str(source))
    records = [
        Record.new(kind="fact", content=f"fact number {i}", scope="global", now=1_700_000_000 + i)
        for i in range(RECORDS)
    ]
    store.import_records(json.dumps(r.to_dict()) for r in records)
    store.close()
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(source), str(clone))
    # Past any filesystem tick between the clone's last write and the build's first look.
    time.sleep(0.3)
    env = {"LANTERN_DEBUG_INDEX": "1"}

    first = lantern("--store", str(clone), "memory", "list", "--limit", "1", env=env)
    assert first.returncode == 0, first.stderr
    assert index_lines(first.stderr) == [f"index: rebuilt from {RECORDS} files"]

    second = lantern("--store", str(clone), "memory", "list", "--limit", "1", env=env)
    assert second.returncode == 0, second.stderr
    [line] = index_lines(second.stderr)
    # Every file is newer than the stamp, so every one is looked at, and none is read.
    assert line.startswith("index: rebuilt 0 / re-read 0 of "), line
    assert second.stdout == first.stdout

    # An edit that keeps the size is still seen at once.
    path = clone / record_path(records[7].id)
    text = path.read_text()
    edited = text.replace("fact number 7\n", "fact numbr 7!\n")
    assert len(edited) == len(text) and edited != text
    path.write_text(edited)
    third = lantern("--store", str(clone), "memory", "search", "numbr", "--json", env=env)
    assert third.returncode == 0, third.stderr
    [line] = index_lines(third.stderr)
    assert line.startswith("index: rebuilt 0 / re-read "), line
    assert not line.startswith("index: rebuilt 0 / re-read 0 "), line
    assert records[7].id in third.stdout


def test_many_files_newer_than_the_stamp_but_as_read_are_not_rebuilt(store, monkeypatch):
    """On a filesystem with whole-second times the stamp stays 3 s back, so a large clone's
    files all look changed to the second command: it must still not rebuild."""
    import os

    from lantern_git.index import search as search_index

    made = [store.add(f"Record {n}.", kind="fact") for n in range(30)]
    time.sleep(0.2)  # past the fine-timestamp margin, so the build remembers every file
    assert store.rebuild_index().updated == 30
    stamp = os.path.join(store.root, ".lantern", "index", search_index.STAMP)
    monkeypatch.setattr(search_index, "REBUILD_ABOVE", 10)

    os.utime(stamp, ns=(0, 0))  # every file is newer than the stamp
    report = Store.open(store.root).refresh()
    assert (report.rebuilt, report.reread) == (False, 0)
    assert report.scanned > 30

    for record in made[:20]:  # now more than REBUILD_ABOVE were written since
        path = os.path.join(store.root, record_path(record.id))
        with open(path, "a", encoding="utf-8"):
            os.utime(path)
    os.utime(stamp, ns=(0, 0))
    assert Store.open(store.root).refresh().rebuilt
