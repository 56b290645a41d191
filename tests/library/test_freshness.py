"""The index sees every change to the record files at the next command, however it was made.

The freshness check looks only at files whose ctime is newer than its stamp; these tests make
changes that the cheaper signals (mtime, size, folder mtimes) would miss.
"""

from __future__ import annotations

import os
import shutil

import pytest
from support.stores import git

from lantern_git.index import search as search_index
from lantern_git.model.record_file import record_path
from lantern_git.store import Store

# root -> the long-lived watching store that reads in the "notified" runs
WATCHED: dict[str, Store] = {}


@pytest.fixture(autouse=True, params=["python sweep", "one find", "two finds", "notified"])
def sweep(request, monkeypatch):
    """Every test runs with each way of listing changed files (chosen by store size), and
    once more reading through one store kept open and watching, as ``lantern mcp`` does."""
    python_below, two_from = {
        "python sweep": (10**9, 10**9),
        "one find": (0, 10**9),
        "two finds": (0, 0),
        "notified": (10**9, 10**9),
    }[request.param]
    monkeypatch.setattr(search_index, "SWEEP_IN_PYTHON_BELOW", python_below)
    monkeypatch.setattr(search_index, "TWO_FINDS_FROM", two_from)
    WATCHED.clear()
    yield request.param
    for kept in WATCHED.values():
        kept.close()
    WATCHED.clear()


@pytest.fixture
def store(store_path, sweep) -> Store:
    if sweep == "notified":
        watched = WATCHED[str(store_path)] = Store.open(str(store_path), watch=True)
        assert watched.index.watch(), "file-system notifications are not available here"
    return Store.open(str(store_path))


def contents(store: Store, **filters) -> list[str]:
    kept = WATCHED.get(store.root)
    if kept is not None:
        return sorted(r.content for r in kept.list(status="all", **filters))
    fresh = Store.open(store.root)
    try:
        return sorted(r.content for r in fresh.list(status="all", **filters))
    finally:
        fresh.close()


def test_an_in_place_edit_with_the_same_size_and_an_old_mtime_is_seen(store):
    record = store.add("The deploy window is Tuesday.", kind="fact")
    contents(store)  # the index has caught up
    path = os.path.join(store.root, record_path(record.id))
    before = os.stat(path)
    with open(path, encoding="utf-8") as handle:
        text = handle.read()
    with open(path, "w", encoding="utf-8") as handle:  # in place: the folder does not change
        handle.write(text.replace("Tuesday", "Fridays"))
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert os.stat(path).st_size == before.st_size
    assert contents(store) == ["The deploy window is Fridays."]


def test_new_removed_and_moved_files_are_seen(store):
    kept = store.add("kept", kind="fact")
    gone = store.add("gone", kind="fact")
    contents(store)
    elsewhere = os.path.join(store.root, "outside.md")
    shutil.move(os.path.join(store.root, record_path(gone.id)), elsewhere)
    assert contents(store) == ["kept"]
    shutil.move(elsewhere, os.path.join(store.root, record_path(gone.id)))
    assert contents(store) == ["gone", "kept"]
    shutil.rmtree(os.path.join(store.root, "memory", kept.id[:2]))
    assert contents(store) == (["gone"] if gone.id[:2] != kept.id[:2] else [])


def test_a_checkout_of_an_older_commit_and_back_is_seen(store):
    store.add("first", kind="fact")
    contents(store)
    first_commit = git(store.root, "rev-parse", "HEAD").strip()
    store.add("second", kind="fact")
    assert contents(store) == ["first", "second"]
    branch = git(store.root, "rev-parse", "--abbrev-ref", "HEAD").strip()
    git(store.root, "checkout", "-q", first_commit)
    assert contents(store) == ["first"]
    git(store.root, "checkout", "-q", branch)
    assert contents(store) == ["first", "second"]


def test_an_edit_reverted_by_git_is_seen(store):
    record = store.add("Original wording.", kind="fact")
    contents(store)
    path = os.path.join(store.root, record_path(record.id))
    with open(path, encoding="utf-8") as handle:
        text = handle.read()
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(text.replace("Original", "Changed"))
    assert contents(store) == ["Changed wording."]
    git(store.root, "checkout", "--", record_path(record.id))
    assert contents(store) == ["Original wording."]


def test_a_hand_broken_file_is_skipped_then_seen_again_when_fixed(store):
    record = store.add("Will break.", kind="fact")
    contents(store)
    path = os.path.join(store.root, record_path(record.id))
    with open(path, encoding="utf-8") as handle:
        good = handle.read()
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(good.replace("kind: fact", "kind: [unclosed"))
    warnings: list[str] = []
    fresh = WATCHED.get(store.root) or Store.open(store.root)
    fresh.warn = warnings.append
    assert fresh.list(status="all") == []
    assert any(record_path(record.id) in w for w in warnings)
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(good)
    assert contents(store) == ["Will break."]


def test_a_deleted_memory_folder_empties_the_list(store):
    store.add("only one", kind="fact")
    contents(store)
    shutil.rmtree(os.path.join(store.root, "memory"))
    assert contents(store) == []
