"""The entity index (``index/entities.py``): derived from the entity files and the sources'
chunks, in step after lantern's writes, hand edits, a pull and under a watch, and rebuilt
from the files when deleted or damaged."""

from __future__ import annotations

import os
import shutil
import time

from support.stores import git

from lantern_git.evidence.sources import SourceInput
from lantern_git.model.query import RecordQuery
from lantern_git.store import Store

ANA = (
    "---\nkey: person:ana\nname: Ana García\naliases:\n{aliases}created_at: 1\nupdated_at: 1\n---\n"
)


def _ana(aliases: list[str]) -> str:
    return ANA.format(aliases="".join(f"- {alias}\n" for alias in aliases))


def _source(store: Store, uri: str, text: str) -> str:
    (added,) = store.sources.add([SourceInput(text.encode(), uri=uri)])
    return added.manifest.id


def _held(store: Store, key: str) -> set[str]:
    return {ref.split("@")[0].removeprefix("source:") for ref in store.entity_show(key)["chunks"]}


def test_lantern_writes_and_hand_edits_are_followed_by_one_open_store(store_path):
    store = Store.open(str(store_path), watch=True)
    store.entities.add("person:ana", name="Ana García", aliases=["A. García"])
    met = _source(store, "chat:1", "I met A. García today.\n")
    nick = _source(store, "chat:2", "Lunch with Anita G. later.\n")
    record = store.add("Dinner with [[Anita G.]].", kind="fact")
    assert _held(store, "person:ana") == {met}
    assert store.list(RecordQuery(mentions=tuple(store.entities.labels("person:ana")))) == []
    # A hand edit adds an alias (no lantern write, no commit): the same open store follows it.
    path = store_path / "entities" / "person" / "ana.md"
    time.sleep(0.01)
    path.write_text(_ana(["A. García", "Anita G."]))
    assert _held(store, "person:ana") == {met, nick}
    labels = tuple(store.entities.labels("person:ana"))
    assert "anita g." in labels
    assert [r.id for r in store.list(RecordQuery(mentions=labels))] == [record.id]
    # A source written later is judged by the labels as they are.
    later = _source(store, "chat:3", "Anita G. called back.\n")
    assert _held(store, "person:ana") == {met, nick, later}
    # The alias removed by hand: its chunks go.
    path.write_text(_ana(["A. García"]))
    assert _held(store, "person:ana") == {met}
    # The file removed: the key is no entity's any more (no record names it by key).
    path.unlink()
    assert store.entities.list() == []
    assert store.entities.labels("person:ana") == ["person:ana"]
    store.close()


def test_a_pull_that_changes_an_entity_and_a_source_is_followed(store_path, tmp_path):
    store = Store.open(str(store_path))
    store.entities.add("project:beta", name="Project Beta")
    first = _source(store, "doc:1", "Project Beta ships in May.\n")
    assert _held(store, "project:beta") == {first}
    other = tmp_path / "other"
    git(tmp_path, "clone", "-q", str(store_path), str(other))
    theirs = Store.open(str(other))
    theirs.entities.update("project:beta", aliases=["the beta"])
    second = _source(theirs, "doc:2", "We talked about the beta again.\n")
    theirs.close()
    git(store_path, "pull", "-q", "--no-rebase", str(other), "HEAD")
    assert _held(store, "project:beta") == {first, second}
    assert "the beta" in store.entities.labels("project:beta")
    store.close()


def test_the_index_is_rebuilt_from_the_files_when_deleted_or_damaged(store_path):
    store = Store.open(str(store_path))
    store.entities.add("person:ana", name="Ana García", aliases=["A. García"])
    met = _source(store, "chat:1", "I met A. García today.\n")
    expected = store.entity_show("person:ana")
    assert _held(store, "person:ana") == {met}
    store.close()
    folder = store_path / ".lantern" / "entities"
    assert folder.is_dir()
    shutil.rmtree(folder)
    store = Store.open(str(store_path))
    assert store.entity_show("person:ana") == expected
    store.close()
    for name in os.listdir(folder):  # every file of it garbled: state and Whoosh's
        if os.path.isfile(folder / name):
            (folder / name).write_bytes(b"\x00garbage")
    store = Store.open(str(store_path))
    assert store.entity_show("person:ana") == expected
    assert [e.key for e in store.entities.list()] == ["person:ana"]
    store.close()


def test_a_broken_entity_file_is_left_out_and_lantern_check_names_it(store_path):
    store = Store.open(str(store_path))
    store.entities.add("person:ana", name="Ana")
    store.entities.add("person:bob", name="Bob")
    assert [e.key for e in store.entities.list()] == ["person:ana", "person:bob"]
    (store_path / "entities" / "person" / "bob.md").write_text("---\nkey: [\n---\n")
    assert [e.key for e in store.entities.list()] == ["person:ana"]
    assert [p.path for p in store.check().problems] == ["entities/person/bob.md"]
    store.close()


def test_rebuild_index_rebuilds_the_entity_index_too(store_path):
    store = Store.open(str(store_path))
    store.entities.add("person:ana", name="Ana García")
    assert [e.key for e in store.entities.list()] == ["person:ana"]
    folder = store_path / ".lantern" / "entities"
    first = os.stat(folder).st_ino
    store.rebuild_index()
    assert os.stat(folder).st_ino != first  # a new folder, swapped in whole
    assert [e.key for e in store.entities.list()] == ["person:ana"]
    store.close()


def test_entity_list_counts_each_record_once_and_only_active_ones(store_path):
    store = Store.open(str(store_path))
    store.entities.add("person:ana", name="Ana García", aliases=["A. García"])
    store.entities.add("project:beta", name="Beta")
    both = store.add("[[A. García]] owns it.", kind="fact", entities=["person:ana"])
    store.add("Lunch with [[ana garcía]].", kind="fact")
    gone = store.add("Old note on [[person:ana]].", kind="fact")
    store.archive(gone.id)
    store.add("Beta ships; [[host:petabyte]] is slow.", kind="fact", entities=["project:beta"])
    _source(store, "chat:1", "Met A. García and Beta.\n")
    _source(store, "chat:2", "Beta again.\n")
    listed = {item["key"]: (item["file"], item["record_count"], item["chunk_count"])
              for item in store.entity_list()}  # fmt: skip
    assert listed == {
        "host:petabyte": (False, 1, 0),
        "person:ana": (True, 2, 1),
        "project:beta": (True, 1, 2),
    }
    assert store.entity_show("person:ana")["record_count"] == 2
    assert {r.id for r in store.entity_show("person:ana")["records"]} >= {both.id}
    store.close()
