"""A store kept open with ``watch=True`` learns of changes from file-system notifications, and
falls back to the full sweep whenever they cannot tell (see lantern_git.index.watch)."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from support.cli import lantern
from support.stores import git

from lantern_git.index.watch import Quiet
from lantern_git.model.record_file import record_path
from lantern_git.store import Store


@pytest.fixture
def watched(store_path):
    kept = Store.open(str(store_path), watch=True)
    assert kept.index.watch(), "file-system notifications are not available here"
    kept.refresh()  # the first check after the watch began is a full sweep
    yield kept
    kept.close()


def edit(root: str, record_id: str, old: str, new: str) -> None:
    path = os.path.join(root, record_path(record_id))
    with open(path, encoding="utf-8") as handle:
        text = handle.read()
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(text.replace(old, new))


def test_nothing_changed_is_answered_without_a_sweep(store, watched):
    store.add("The deploy window is Tuesday.", kind="fact")
    watched.refresh()
    report = watched.refresh()
    assert (report.how, report.unchanged, report.scanned) == ("notified", True, 0)


def test_a_read_with_nothing_changed_waits_for_no_barrier(store, watched):
    record = store.add("The deploy window is Tuesday.", kind="fact")
    assert watched.refresh().waited, "a record was written since the last read"
    for _ in range(3):
        report = watched.refresh()
        assert (report.waited, report.unchanged) == (False, True)
    edit(store.root, record.id, "Tuesday", "Fridays")
    report = watched.refresh()
    assert (report.waited, report.updated) == (True, 1)
    assert watched.refresh().waited is False


def test_a_change_in_a_folder_made_after_the_watch_began_is_noticed(tmp_path):
    """The quiet descriptor is read in the reader's thread, without waiting for watchdog: it
    must watch each shard folder made after it began, or an edit there would go unnoticed."""
    root = tmp_path / "store"
    root.mkdir()
    quiet = Quiet.start(str(root))
    assert quiet is not None, "inotify is not available here"
    try:
        assert quiet.still()
        (root / "memory").mkdir()
        assert not quiet.still() and quiet.still()
        (root / "memory" / "ab").mkdir()
        assert not quiet.still() and quiet.still()
        (root / "memory" / "ab" / "ab12.md").write_text("made\n")
        assert not quiet.still() and quiet.still()
        with open(root / "memory" / "ab" / "ab12.md", "a") as handle:
            handle.write("appended\n")
        assert not quiet.still() and quiet.still()
        (root / "memory" / "ab" / "ab12.md").unlink()
        assert not quiet.still() and quiet.still()
        # Elsewhere (lantern's own folder, git's): not a record folder.
        (root / ".lantern").mkdir()
        assert not quiet.still() and quiet.still()
        (root / ".lantern" / "barrier").write_text("")
        (root / ".lantern" / "barrier").unlink()
        assert quiet.still()
    finally:
        quiet.close()


def test_a_quiet_descriptor_that_cannot_watch_a_new_folder_never_again_says_nothing_changed(
    tmp_path,
):
    """The kernel's watch limit reached: a shard folder made after the watch began cannot be
    watched, so the descriptor is closed, and from then on every read must wait for its
    barrier. A closed descriptor that said "nothing changed" would let a read skip the edits
    made in that folder."""
    from watchdog.observers.inotify_c import inotify_add_watch

    root = tmp_path / "store"
    (root / "memory").mkdir(parents=True)
    started = Quiet.start(str(root))
    assert started is not None, "inotify is not available here"
    limit = {"reached": False}

    def add_watch(fd: int, path: bytes, mask: int) -> int:
        # inotify_add_watch's answer once the kernel's limit is reached: -1 (ENOSPC).
        return -1 if limit["reached"] else inotify_add_watch(fd, path, mask)

    quiet = Quiet(str(root), os.dup(started._fd), started._mask, add_watch)
    started.close()
    try:
        assert quiet.still()
        limit["reached"] = True
        (root / "memory" / "ab").mkdir()
        assert not quiet.still(), "the folder was made"
        for _ in range(3):
            (root / "memory" / "ab" / "ab12.md").write_text("edited\n")
            assert not quiet.still(), "an unwatched folder: nothing can be said"
        quiet.close()
        assert not quiet.still()
    finally:
        quiet.close()


def test_a_hand_edit_is_checked_from_its_event_alone(store, watched):
    record = store.add("The deploy window is Tuesday.", kind="fact")
    watched.refresh()
    edit(store.root, record.id, "Tuesday", "Fridays")
    report = watched.refresh()
    assert (report.how, report.scanned, report.updated) == ("notified", 1, 1)
    assert [r.content for r in watched.list()] == ["The deploy window is Fridays."]


def test_a_write_by_another_process_is_seen_by_the_very_next_read(store_path, watched):
    # The other process has exited before the read begins, but its events may not have been
    # handled yet: the read's barrier must wait for them.
    for number in range(8):
        content = f"Written elsewhere, number {number}."
        result = lantern("memory", "add", content, "--kind", "fact", store=store_path)
        assert result.returncode == 0, result.stderr
        assert content in [r.content for r in watched.list(limit=None)]


def test_a_hand_edit_by_another_process_is_seen_by_the_very_next_read(store, watched):
    record = store.add("Counter at 0.", kind="fact")
    watched.refresh()
    for number in range(1, 8):
        script = (
            "import sys\n"
            "path, old, new = sys.argv[1:]\n"
            "text = open(path, encoding='utf-8').read()\n"
            "open(path, 'w', encoding='utf-8').write(text.replace(old, new))\n"
        )
        path = os.path.join(store.root, record_path(record.id))
        subprocess.run(
            [sys.executable, "-c", script, path, f"at {number - 1}.", f"at {number}."], check=True
        )
        assert [r.content for r in watched.list()] == [f"Counter at {number}."]


def test_git_operations_make_the_next_read_sweep(store, watched):
    store.add("first", kind="fact")
    first = git(store.root, "rev-parse", "HEAD").strip()
    store.add("second", kind="fact")
    watched.refresh()
    git(store.root, "checkout", "-q", first)
    report = watched.refresh()
    assert report.how == "swept"
    assert [r.content for r in watched.list()] == ["first"]
    git(store.root, "checkout", "-q", "main")
    assert sorted(r.content for r in watched.list()) == ["first", "second"]


def test_its_own_writes_are_indexed_by_the_next_read_without_a_sweep(store_path, watched):
    watched.add("The first record makes the memory folder: that is swept.", kind="fact")
    watched.refresh()
    first = watched.add("Written by the watching store itself.", kind="fact")
    second = watched.add("Written right after it.", kind="fact")
    report = watched.refresh()
    assert (report.how, report.updated) == ("notified", 2)
    assert {first.id, second.id} <= {r.id for r in watched.list()}
    # Another process sees them too, whether or not the watching store's read came first.
    third = watched.add("Not yet read back by the watching store.", kind="fact")
    other = Store.open(str(store_path))
    assert {first.id, second.id, third.id} <= {r.id for r in other.list()}


def test_a_read_waits_for_events_queued_behind_a_slow_one(store, watched, tmp_path):
    """Watchdog holds a move out of the watched folder for up to 0.5 s (it waits for the move's
    other half), and every event after it queues behind: an edit made right after is not yet
    handled when the next read begins. The read's barrier must wait for it."""
    record = store.add("The deploy window is Tuesday.", kind="fact")
    parked = Path(store.root) / "parked.txt"
    parked.write_text("moved out of the store next\n")
    watched.refresh()
    for before, day in (("Tuesday", "Wednesday"), ("Wednesday", "Thursday")):
        parked.rename(tmp_path / "parked.txt")
        edit(store.root, record.id, before, day)
        assert [r.content for r in watched.list()] == [f"The deploy window is {day}."]
        (tmp_path / "parked.txt").rename(parked)
        watched.refresh()


def _watchdog_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if type(t).__module__.startswith("watchdog")]


def test_a_stopped_watcher_falls_back_to_the_sweep(store, store_path):
    # Its own threads, told from another test's watch still running in this process.
    others = set(_watchdog_threads())
    watched = Store.open(str(store_path), watch=True)
    assert watched.index.watch(), "file-system notifications are not available here"
    watched.refresh()
    record = store.add("Before the watcher stopped.", kind="fact")
    watched.refresh()
    its_threads = set(_watchdog_threads()) - others
    assert its_threads, "the watch runs in watchdog's threads"
    watched.index.stop_watching()
    assert [t for t in its_threads if t.is_alive()] == [], "stopping the watch ends its threads"
    edit(store.root, record.id, "Before", "After")
    report = watched.refresh()
    # A check without a watch (its report names no watch), which found the edit by sweeping.
    assert (report.how, report.updated) == ("", 1), report
    assert [r.content for r in watched.list()] == ["After the watcher stopped."]
    # Every later read sweeps too: nothing tells it what changed any more.
    assert watched.refresh().how == ""
    watched.close()


def test_the_one_shot_cli_does_not_import_watchdog(store_path):
    code = (
        "import sys\n"
        "from lantern_git.cli import cli\n"
        f"cli.main(['memory', 'list', '--json', '--store', {str(store_path)!r}],"
        " standalone_mode=False)\n"
        "print('watchdog' in sys.modules)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().splitlines()[-1] == "False"
