"""The review list a long-running store keeps (issue 32, speed): a store answers
``review_list`` again from what it read while the store's branch and every review branch
stand where they stood. Asked by one store that stays open (as a server's reader does) while
other processes write, each answer must be the one a fresh store gives: a write on a review
branch, a new review branch, a commit on the store's branch that moves a pending record, an
accept and a reject each show on the next call."""

from __future__ import annotations

from pathlib import Path

import pytest
from support.stores import make_store

from lantern_git.store import Store


@pytest.fixture
def path(tmp_path) -> Path:
    return make_store(tmp_path / "store")


def pending(store: Store) -> dict[str, tuple[str, bool]]:
    """id -> (its branch, whether the store's branch moved it), every pending record."""
    return {r.id: (b.name, r.moved) for b in store.review_list().branches for r in b.records}


def fresh(path: Path) -> dict[str, tuple[str, bool]]:
    store = Store(str(path), actor="cli")
    try:
        return pending(store)
    finally:
        store.close()


def test_a_kept_review_list_follows_every_write_made_beside_it(path):
    person = Store(str(path), actor="cli")
    seed = person.add("the seed", kind="fact").id
    person.close()
    bot = Store(str(path), actor="mcp", review=True)
    other = Store(str(path), actor="api", review=True)
    reader = Store(str(path), actor="cli")  # kept open, as a server's reader is
    try:
        assert pending(reader) == {}
        first = bot.add("first pending", kind="fact").id
        assert pending(reader) == fresh(path) == {first: ("mcp", False)}
        assert pending(reader) == {first: ("mcp", False)}  # asked again, nothing moved
        second = bot.add("second pending", kind="fact").id
        assert set(pending(reader)) == {first, second}
        # A review branch that did not exist before.
        bot.update(seed, priority=70)
        third = other.add("from another writer", kind="fact").id
        assert pending(reader)[third] == ("api", False)
        assert pending(reader)[seed] == ("mcp", False)
        # The store's branch changes the record a review branch changed: moved.
        writer = Store(str(path), actor="cli")
        writer.update(seed, urgency=5)
        assert pending(reader)[seed] == ("mcp", True) == fresh(path)[seed]
        # An accept and a reject, each by another store.
        tip = next(b.tip for b in writer.review_list().branches if b.name == "mcp")
        writer.review_accept([second], branch="mcp", expect=tip)
        tip = next(b.tip for b in writer.review_list().branches if b.name == "api")
        writer.review_reject([third], branch="api", expect=tip)
        writer.close()
        assert pending(reader) == fresh(path)
        assert set(pending(reader)) == {first, seed}
    finally:
        for store in (bot, other, reader):
            store.close()
