"""Entity writes asked through the library (lantern_git.entities.entities): add, update and
rename, what each commits, what each refuses, and what a review writer reads.

test_entities.py holds the commands end to end; these hold each write's choices one at a time
(the mutation run's ``entity_writes`` module, benchmarks/mutation.py, asks each line).
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
from support.stores import git, snapshot

from lantern_git.errors import InvalidInput, NotFound, UncommittedChanges, ValidationError
from lantern_git.git.repo import parse_trailers
from lantern_git.model.entity import Entity, entity_path
from lantern_git.store import Store

ANA = entity_path("person:ana")


def message(store: Store) -> str:
    return git(store.root, "log", "-1", "--format=%B")


def head(store: Store) -> str:
    return git(store.root, "rev-parse", "HEAD").strip()


def on_disk(store: Store, key: str) -> Entity:
    path = entity_path(key)
    return Entity.from_markdown((Path(store.root) / path).read_text(), path)


# -- add


def test_add_commits_one_file_with_its_op_and_key(store):
    added = store.entities.add(
        "Person:Ana", name="Ana García", aliases=["A. G."], description="Leads Beta"
    )
    assert (added.key, added.name, added.aliases) == ("person:ana", "Ana García", ("A. G.",))
    assert on_disk(store, "person:ana") == added
    lines = message(store).splitlines()
    assert lines[0] == "entity-add person:ana: Ana García"
    trailers = parse_trailers(message(store))
    assert (trailers["Lantern-Op"], trailers["Lantern-Entity"]) == (
        ["entity-add"],
        ["person:ana"],
    )
    assert "Lantern-Record" not in trailers
    assert git(store.root, "show", "--name-only", "--format=", "HEAD").split() == [ANA]


def test_a_long_name_makes_a_summary_of_at_most_120_characters(store):
    store.entities.add("person:ana", name="A" * 200)
    summary = message(store).splitlines()[0]
    assert summary == ("entity-add person:ana: " + "A" * 200)[:120]


def test_add_refuses_a_key_that_has_a_file_and_writes_nothing(store):
    store.entities.add("person:ana")
    before = snapshot(store.root)
    with pytest.raises(InvalidInput) as caught:
        store.entities.add("PERSON:Ana", name="Another")
    assert caught.value.code == "entity_exists"
    assert str(caught.value) == (
        f"entity person:ana exists ({ANA}); change it with lantern entity update"
    )
    assert snapshot(store.root) == before


def test_add_never_writes_over_an_uncommitted_removal_at_its_path(store):
    store.entities.add("person:ana")
    (Path(store.root) / ANA).unlink()  # removed by hand, not committed
    before = snapshot(store.root)
    with pytest.raises(UncommittedChanges) as caught:
        store.entities.add("person:ana")
    assert str(caught.value).startswith(f"{ANA} has uncommitted changes")
    assert snapshot(store.root) == before


def test_an_entity_file_that_is_a_link_is_refused_by_reads_and_writes(store, tmp_path):
    (tmp_path / "elsewhere.md").write_text("---\nkey: person:ana\n---\n")
    path = Path(store.root) / ANA
    path.parent.mkdir(parents=True)
    os.symlink(tmp_path / "elsewhere.md", path)
    for call in (
        lambda: store.entities.add("person:ana"),
        lambda: store.entities.update("person:ana", name="x"),
        lambda: store.entities.get("person:ana"),
    ):
        with pytest.raises(ValidationError) as caught:
            call()
        assert caught.value.code == "invalid_entity"
        assert "is a symbolic link; entity files must be regular files" in str(caught.value)


# -- update


def test_an_update_that_changes_nothing_commits_nothing(store):
    added = store.entities.add("project:beta", aliases=["B"], description="d", notes="n")
    before = head(store)
    same = store.entities.update("project:beta", aliases=["b"], name=added.name)
    assert same == added
    assert head(store) == before


def test_update_adds_and_removes_aliases_case_insensitively_and_keeps_the_rest(store):
    added = store.entities.add(
        "project:beta", name="Beta", aliases=["B", "Bee"], description="d", notes="n"
    )
    changed = store.entities.update("project:beta", aliases=["Beta project"], remove_aliases=["b"])
    assert changed.aliases == ("Bee", "Beta project")
    assert (changed.name, changed.description, changed.notes) == ("Beta", "d", "n")
    assert changed.created_at == added.created_at
    assert on_disk(store, "project:beta") == changed
    assert message(store).splitlines()[0] == "entity-update project:beta: Beta"
    assert parse_trailers(message(store))["Lantern-Op"] == ["entity-update"]


def test_update_sets_what_it_is_given(store):
    store.entities.add("project:beta", name="Beta", description="d", notes="n")
    changed = store.entities.update(
        "project:beta", name="Project Beta", description="new", notes="more"
    )
    assert (changed.name, changed.description, changed.notes) == ("Project Beta", "new", "more")
    assert on_disk(store, "project:beta") == changed


def test_update_keeps_keys_a_person_added_and_never_moves_updated_at_back(store):
    store.entities.add("project:beta")
    path = Path(store.root) / entity_path("project:beta")
    ahead = int(time.time()) + 10**6
    text = path.read_text().replace("updated_at: ", "owner: ops\nupdated_at: ", 1)
    entity = Entity.from_markdown(text, entity_path("project:beta"))
    path.write_text(entity.evolve(updated_at=ahead).to_markdown())
    git(store.root, "commit", "-qam", "by hand")
    start = int(time.time())
    changed = store.entities.update("project:beta", description="now")
    assert changed.extra == {"owner": "ops"}
    assert changed.updated_at == ahead
    store.entities.update("project:beta", description="again")
    later = store.entities.get("project:beta")
    assert later.updated_at >= max(start, ahead)


def test_update_stamps_the_time_of_the_write(store):
    store.entities.add("project:beta")
    path = Path(store.root) / entity_path("project:beta")
    entity = Entity.from_markdown(path.read_text(), entity_path("project:beta"))
    path.write_text(entity.evolve(created_at=1_000, updated_at=1_000).to_markdown())
    git(store.root, "commit", "-qam", "an old entity")
    start = int(time.time())
    changed = store.entities.update("project:beta", description="now")
    assert start <= changed.updated_at <= int(time.time())
    assert changed.created_at == 1_000


def test_update_of_a_key_without_a_file_says_how_to_add_one(store):
    with pytest.raises(NotFound) as caught:
        store.entities.update("project:gamma", name="G")
    assert str(caught.value) == (
        f"no entity file for project:gamma ({entity_path('project:gamma')}); add one with "
        "lantern entity add"
    )


# -- rename


def test_rename_moves_the_file_keeps_the_old_key_as_an_alias_and_rewrites_records(store):
    added = store.entities.add("person:ana", name="Ana", aliases=["A."])
    named = store.add("Ana leads Beta.", kind="fact", entities=["person:ana"])
    linked = store.add("Met [[person:ana]] today.", kind="fact")
    other = store.add("Unrelated.", kind="fact")
    moved = store.entities.rename("person:ana", "person:ana-garcia")
    assert moved.key == "person:ana-garcia"
    assert moved.aliases == ("A.", "person:ana")
    assert (moved.name, moved.updated_at) == ("Ana", added.updated_at)
    assert not (Path(store.root) / ANA).exists()
    assert on_disk(store, "person:ana-garcia") == moved
    assert store.get(named.id).entities == ("person:ana-garcia",)
    assert "[[person:ana-garcia]]" in store.get(linked.id).content
    trailers = parse_trailers(message(store))
    assert trailers["Lantern-Op"] == ["entity-rename"]
    assert trailers["Lantern-Entity"] == ["person:ana", "person:ana-garcia"]
    assert sorted(trailers["Lantern-Record"]) == sorted([named.id, linked.id])
    assert message(store).splitlines()[0] == "entity-rename person:ana -> person:ana-garcia"
    assert other.id not in trailers["Lantern-Record"]
    assert git(store.root, "status", "--porcelain") == ""


def test_rename_refuses_its_own_key_and_a_key_that_has_a_file(store):
    store.entities.add("person:ana")
    store.entities.add("person:bea")
    before = snapshot(store.root)
    with pytest.raises(InvalidInput) as caught:
        store.entities.rename("person:ana", "PERSON:Ana")
    assert (caught.value.code, str(caught.value)) == (
        "usage_error",
        "entity rename: person:ana is already its key",
    )
    with pytest.raises(InvalidInput) as caught:
        store.entities.rename("person:ana", "person:bea")
    assert caught.value.code == "entity_exists"
    assert str(caught.value) == (
        f"entity person:bea exists ({entity_path('person:bea')}); rename to a free key"
    )
    with pytest.raises(NotFound):
        store.entities.rename("person:cy", "person:dee")
    assert snapshot(store.root) == before


@pytest.mark.parametrize("edited", ["old", "new"])
def test_rename_never_writes_over_an_uncommitted_file_at_either_path(store, edited):
    store.entities.add("person:ana")
    if edited == "old":
        target = "person:yan"
        path = Path(store.root) / ANA
        path.write_text(path.read_text() + "a note by hand\n")
    else:
        target = "person:zed"
        store.entities.add(target)
        (Path(store.root) / entity_path(target)).unlink()  # removed by hand, not committed
    before = snapshot(store.root)
    with pytest.raises(UncommittedChanges):
        store.entities.rename("person:ana", target)
    assert snapshot(store.root) == before


def test_rename_to_a_key_that_sorts_first_is_a_rename_like_any(store):
    store.entities.add("person:zed")
    moved = store.entities.rename("person:zed", "person:ana")
    assert moved.key == "person:ana" and moved.aliases == ("person:zed",)


def test_the_list_of_one_type_is_that_types_entities(store):
    for key in ("person:ana", "person:bea", "project:beta", "host:zettabyte"):
        store.entities.add(key)
    assert [e.key for e in store.entities.list(type="Person")] == ["person:ana", "person:bea"]
    assert [e.key for e in store.entities.list(type="host")] == ["host:zettabyte"]
    assert len(store.entities.list()) == 4


# -- review mode


def test_a_review_writer_reads_and_changes_the_entity_its_branch_holds(store_path):
    main = Store.open(str(store_path))
    main.entities.add("person:ana", name="Ana")
    main.close()
    agent = Store.open(str(store_path), review=True, review_name="agent")
    try:
        agent.entities.update("person:ana", name="Ana G.")
        # The working tree still has the store's branch's version; the agent reads its own.
        assert on_disk(agent, "person:ana").name == "Ana"
        changed = agent.entities.update("person:ana", description="from the branch")
        assert (changed.name, changed.description) == ("Ana G.", "from the branch")
        with pytest.raises(InvalidInput) as caught:
            agent.entities.add("person:ana")
        assert caught.value.code == "entity_exists"
        agent.entities.add("person:bea")  # on the branch only
        with pytest.raises(InvalidInput):
            agent.entities.add("person:bea")
    finally:
        agent.close()
    assert not (store_path / entity_path("person:bea")).exists()
