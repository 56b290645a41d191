"""A one-shot reader beside a watching process learns what changed from the watch's journal
instead of sweeping every file, and sweeps wherever the journal cannot be trusted (see
lantern_git.index.journal)."""

from __future__ import annotations

import fcntl
import json
import os
import subprocess
import sys
import time

import pytest
from support.stores import edit_in_place

from lantern_git.index import journal
from lantern_git.model.record_file import record_path
from lantern_git.store import Store


@pytest.fixture
def watching(store_path):
    """A store kept open with a watch: it publishes the journal."""
    kept = Store.open(str(store_path), watch=True)
    assert kept.index.watch(), "file-system notifications are not available here"
    kept.refresh()
    assert journal.publishing(os.path.join(str(store_path), ".lantern"))
    yield kept
    kept.close()


def reader(store_path) -> Store:
    """A store opened as a one-shot command opens it (no watch), its index in step."""
    opened = Store.open(str(store_path))
    opened.refresh()  # the first read of a journal it has no position in: a sweep
    return opened


def record_file(store, record) -> str:
    return os.path.join(store.root, record_path(record.id))


def test_nothing_changed_is_answered_from_the_journal(store, store_path, watching):
    store.add("The deploy window is Tuesday.", kind="fact")
    one_shot = reader(store_path)
    report = one_shot.refresh()
    assert (report.how, report.unchanged, report.scanned) == ("journal", True, 0)


def test_an_in_place_edit_is_seen(store, store_path, watching):
    record = store.add("The deploy window is Tuesday.", kind="fact")
    one_shot = reader(store_path)
    path = record_file(store, record)
    edit_in_place(path, "Tuesday", "Fridays")
    report = one_shot.refresh()
    assert (report.how, report.updated) == ("journal", 1)
    assert one_shot.get(record.id).content == "The deploy window is Fridays."


def test_an_edit_that_keeps_the_mtime_but_not_the_size_is_seen(store, store_path, watching):
    record = store.add("The deploy window is Tuesday.", kind="fact")
    one_shot = reader(store_path)
    path = record_file(store, record)
    before = os.stat(path)
    with open(path, encoding="utf-8") as handle:
        text = handle.read()
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(text.replace("Tuesday", "Tuesday and Thursday"))
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert os.stat(path).st_size != before.st_size
    report = one_shot.refresh()
    assert (report.how, report.updated) == ("journal", 1)
    assert one_shot.get(record.id).content == "The deploy window is Tuesday and Thursday."


def test_a_new_file_is_seen(store, store_path, watching, tmp_path):
    # (The store's first record makes memory/ itself, which the reader takes as a reason to
    # sweep: shard folders may have come or gone with it.)
    first = store.add("Ana prefers tea.", kind="preference")
    one_shot = reader(store_path)
    elsewhere = Store.init(str(tmp_path / "other"))
    made = elsewhere.add("Bo reviews on Mondays.", kind="fact")
    target = record_file(store, made)
    os.makedirs(os.path.dirname(target), exist_ok=True)
    with open(record_file(elsewhere, made), "rb") as source, open(target, "wb") as copy:
        copy.write(source.read())
    report = one_shot.refresh()
    assert (report.how, report.updated) == ("journal", 1)
    assert sorted(r.id for r in one_shot.list(limit=None)) == sorted([first.id, made.id])


def test_a_deleted_file_is_seen(store, store_path, watching):
    kept = store.add("Ana prefers tea.", kind="preference")
    gone = store.add("Bo prefers coffee.", kind="preference")
    one_shot = reader(store_path)
    os.unlink(record_file(store, gone))
    report = one_shot.refresh()
    assert (report.how, report.removed) == ("journal", 1)
    assert [r.id for r in one_shot.list(limit=None)] == [kept.id]


def test_a_rename_is_seen(store, store_path, watching):
    """A record file moved out of its name (a typo, a rename in a file manager) is no record
    any more, and its new name is a broken file; the journal names both."""
    record = store.add("Ana prefers tea.", kind="preference")
    one_shot = reader(store_path)
    path = record_file(store, record)
    os.rename(path, path.replace(".md", "-renamed.md"))
    report = one_shot.refresh()
    assert report.how == "journal"
    assert one_shot.list(limit=None) == []
    assert list(report.broken) == [record_path(record.id).replace(".md", "-renamed.md")]


def test_lost_events_make_the_reader_sweep(store, store_path, watching):
    record = store.add("The deploy window is Tuesday.", kind="fact")
    one_shot = reader(store_path)
    watching.index._watcher.lose()  # as watchdog's log says when the kernel's queue overflows
    path = record_file(store, record)
    with open(path, encoding="utf-8") as handle:
        text = handle.read()
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(text.replace("Tuesday", "Fridays"))
    report = one_shot.refresh()
    assert (report.how, report.updated) == ("swept", 1)
    assert one_shot.refresh().how == "journal"  # and trusts it again from the barrier on


def test_without_a_watching_process_the_reader_sweeps(store, store_path, watching):
    record = store.add("The deploy window is Tuesday.", kind="fact")
    one_shot = reader(store_path)
    watching.close()  # the lock is dropped with the journal
    assert not journal.publishing(os.path.join(store.root, ".lantern"))
    path = record_file(store, record)
    with open(path, encoding="utf-8") as handle:
        text = handle.read()
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(text.replace("Tuesday", "Fridays"))
    report = one_shot.refresh()
    assert (report.how, report.updated) == ("", 1)


def test_a_live_lock_with_a_silent_journal_makes_the_reader_sweep_in_time(store, store_path):
    """A process holds the lock but never journals the barrier (its watcher stuck): the reader
    gives up after BARRIER_TIMEOUT and sweeps."""
    record = store.add("The deploy window is Tuesday.", kind="fact")
    one_shot = reader(store_path)
    state = os.path.join(store.root, ".lantern")
    live = os.open(os.path.join(state, journal.LIVE), os.O_RDWR | os.O_CREAT)
    try:
        fcntl.flock(live, fcntl.LOCK_EX | fcntl.LOCK_NB)
        with open(os.path.join(state, journal.JOURNAL), "w", encoding="utf-8") as handle:
            handle.write("J silent\n")
        path = record_file(store, record)
        with open(path, encoding="utf-8") as handle:
            text = handle.read()
        with open(path, "w", encoding="utf-8") as handle:
            handle.write(text.replace("Tuesday", "Fridays"))
        start = time.monotonic()
        report = one_shot.refresh()
        waited = time.monotonic() - start
    finally:
        os.close(live)
    assert (report.how, report.updated) == ("swept", 1)
    assert journal.BARRIER_TIMEOUT <= waited < journal.BARRIER_TIMEOUT + 10


def test_a_cli_command_beside_a_watching_process_reads_the_journal(store, store_path, watching):
    """Across the process boundary: the command's own barrier, the watcher's thread in this
    process, and the edit both see."""
    record = store.add("The deploy window is Tuesday.", kind="fact")
    env = dict(os.environ, LANTERN_STORE=str(store_path), LANTERN_DEBUG_INDEX="1")
    command = [sys.executable, "-m", "lantern_git", "memory", "list", "--json"]
    first = subprocess.run(command, env=env, capture_output=True, text=True, timeout=60)
    assert first.returncode == 0, first.stderr
    path = record_file(store, record)
    with open(path, encoding="utf-8") as handle:
        text = handle.read()
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(text.replace("Tuesday", "Fridays"))
    second = subprocess.run(command, env=env, capture_output=True, text=True, timeout=60)
    assert second.returncode == 0, second.stderr
    assert "(journal)" in second.stderr
    assert [r["content"] for r in json.loads(second.stdout)] == ["The deploy window is Fridays."]
