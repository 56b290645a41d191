"""``lantern index watch``: a process of its own that keeps the watch's journal, so that the
one-shot commands beside it read what changed instead of checking every record file (as
``lantern mcp`` and ``lantern serve`` do while they run), until it is stopped."""

from __future__ import annotations

import json
import os
import signal
import stat

from support.cli import as_reader, lantern, lantern_json, start_lantern
from support.processes import first_line, stop
from support.stores import edit_in_place, snapshot

from lantern_git.index import journal
from lantern_git.model.record_file import record_path
from lantern_git.store import Store


def state_dir(store_path) -> str:
    return os.path.join(str(store_path), ".lantern")


def test_while_it_runs_commands_read_its_journal_and_see_an_in_place_edit(store, store_path):
    record = store.add("The deploy window is Tuesday.", kind="fact")
    watcher = start_lantern("index", "watch", "--json", store=store_path)
    try:
        started = json.loads(first_line(watcher))
        assert started == {"watching": str(store_path), "pid": watcher.pid}
        assert journal.publishing(state_dir(store_path))
        one_shot = Store.open(str(store_path))
        one_shot.refresh()  # a reader with no position in this journal yet sweeps once
        path = os.path.join(str(store_path), record_path(record.id))
        edit_in_place(path, "Tuesday", "Fridays")
        report = one_shot.refresh()
        assert (report.how, report.updated) == ("journal", 1)
        one_shot.close()
        result, listed = lantern_json(store_path, "memory", "list")
        assert result.returncode == 0, result.stderr
        assert [r["content"] for r in listed] == ["The deploy window is Fridays."]
    finally:
        stop(watcher)
    assert watcher.returncode == 0, watcher.stderr.read() if watcher.stderr else ""
    # Stopped, it no longer publishes: commands check every file again.
    assert not journal.publishing(state_dir(store_path))


def test_sigint_stops_it_with_exit_0(store, store_path):
    store.add("Ana prefers tea.", kind="preference")
    watcher = start_lantern("index", "watch", store=store_path)
    try:
        line = first_line(watcher)
        assert line == f"lantern index watch: watching {store_path} (stop with Ctrl-C)"
        watcher.send_signal(signal.SIGINT)
        assert watcher.wait(timeout=20) == 0
    finally:
        stop(watcher)
    assert not journal.publishing(state_dir(store_path))


def test_a_second_watcher_exits_1_and_leaves_the_first_publishing(store, store_path):
    store.add("Ana prefers tea.", kind="preference")
    watcher = start_lantern("index", "watch", store=store_path)
    try:
        first_line(watcher)
        result, error = lantern_json(store_path, "index", "watch")
        assert result.returncode == 1
        assert error["error"]["code"] == "already_watched"
        assert "another process keeps" in error["error"]["message"]
        assert watcher.poll() is None
        assert journal.publishing(state_dir(store_path))
    finally:
        stop(watcher)


def test_a_folder_that_is_no_store_exits_1_and_is_left_as_it_was(tmp_path):
    folder = tmp_path / "plain"
    folder.mkdir()
    result = lantern("index", "watch", store=folder)
    assert result.returncode == 1
    assert "is not a lantern store" in result.stderr
    assert os.listdir(folder) == []


def test_a_store_this_user_cannot_write_exits_1_read_only_and_is_left_as_it_was(
    store, store_path, tmp_path
):
    """Its journal would go to a temporary folder that no other command reads."""
    store.add("Ana prefers tea.", kind="preference")
    store.close()
    paths = [store_path, *store_path.rglob("*")]
    for path in paths:
        if not path.is_symlink():
            path.chmod(path.stat().st_mode & ~(stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH))
    temp = tmp_path / "tmp"
    temp.mkdir()
    try:
        before = snapshot(store_path)
        result = as_reader("index", "watch", "--store", str(store_path), env={"TMPDIR": str(temp)})
        assert result.returncode == 1, result.stderr
        assert "is read-only for this user" in result.stderr
        assert snapshot(store_path) == before
    finally:
        for path in paths:
            if not path.is_symlink():
                path.chmod(path.stat().st_mode | stat.S_IWUSR)


def test_a_journal_that_cannot_be_begun_exits_1_watch_unavailable(store, store_path):
    """Its lock file cannot be opened for writing (here a folder stands in its place, as a
    full disk or a broken `.lantern/` would refuse it): no journal, so no watch that claims
    one, and it is not another process's either."""
    store.add("Ana prefers tea.", kind="preference")
    os.mkdir(os.path.join(state_dir(store_path), "watch.live"))
    result, error = lantern_json(store_path, "index", "watch")
    assert result.returncode == 1
    assert error["error"]["code"] == "watch_unavailable"
    assert "cannot keep the watch's journal" in error["error"]["message"]
    assert not journal.publishing(state_dir(store_path))
