"""The review list a long-running store keeps (issue 32, speed): a store answers
``review_list`` again from what it read while the store's branch and every review branch
stand where they stood. Asked by one store that stays open (as a server's reader does) while
other processes write, each answer must be the one a fresh store gives: a write on a review
branch, a new review branch, a commit on the store's branch that moves a pending record, an
accept and a reject each show on the next call."""

from __future__ import annotations

import subprocess
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


def test_a_review_list_asked_again_with_nothing_moved_is_the_one_already_read(path):
    bot = Store(str(path), actor="mcp", review=True)
    reader = Store(str(path), actor="cli")
    try:
        bot.add("pending", kind="fact")
        first = reader.review_list().branches
        again = reader.review_list().branches
        assert len(first) == 1 and again[0] is first[0]  # kept: not read again
        bot.add("more pending", kind="fact")
        moved = reader.review_list().branches
        assert moved[0] is not first[0] and len(moved[0].records) == 2
    finally:
        for store in (bot, reader):
            store.close()


def entity_changes(store: Store) -> dict[str, tuple[str, bool, str | None]]:
    """key -> (its change, whether the store's branch moved it, its name as pending)."""
    return {
        e.key: (e.change, e.moved, e.entity.name if e.entity is not None else None)
        for b in store.review_list().branches
        for e in b.entities
    }


def test_pending_entity_changes_say_what_the_store_moved_and_a_broken_file_holds_none(path):
    person = Store(str(path), actor="cli")
    person.entities.add("person:ana", name="Ana García")
    bot = Store(str(path), actor="mcp", review=True)
    try:
        bot.entities.update("person:ana", aliases=["A. García"])
        assert entity_changes(person) == {"person:ana": ("changed", False, "Ana García")}
        person.entities.update("person:ana", description="Our editor.")
        assert entity_changes(person) == {"person:ana": ("changed", True, "Ana García")}
    finally:
        bot.close()
    # A hand commit on the review branch of an entity file that is not one.
    work = path.parent / "review-work"
    subprocess.run(
        ["git", "-C", str(path), "worktree", "add", "-q", str(work), "lantern/review/mcp"],
        check=True,
    )
    (work / "entities" / "person").mkdir(parents=True, exist_ok=True)
    (work / "entities" / "person" / "bob.md").write_text("---\nname: [unclosed\n---\n")
    subprocess.run(["git", "-C", str(work), "add", "-A"], check=True)
    subprocess.run(["git", "-C", str(work), "commit", "-qm", "bob by hand"], check=True)
    subprocess.run(["git", "-C", str(path), "worktree", "remove", str(work)], check=True)
    try:
        assert entity_changes(person)["person:bob"] == ("added", False, None)
    finally:
        person.close()
