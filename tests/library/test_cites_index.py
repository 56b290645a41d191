"""The record index keeps the source ids each record cites, so that ``cites`` (a source page,
``memory list --cites``, a search citing a source) is one term's postings instead of a read of
every record. These tests hold it to the answer the record-by-record check gives, by the files
as they are: after writes, after a hand edit, after a pull, and over an index that an older
schema (without the field) left behind."""

from __future__ import annotations

import dataclasses

from support.stores import git

from lantern_git.evidence.sources import SourceInput
from lantern_git.index import search
from lantern_git.model.query import RecordQuery
from lantern_git.model.record_file import record_path
from lantern_git.store import Store

EVERY = {"status": "all", "include_expired": True}


def ingest(store: Store, text: str, uri: str) -> str:
    [added] = store.sources.add([SourceInput(text.encode(), "chat.md", uri=uri)])
    return added.manifest.id


def citing(store: Store, source_id: str) -> set[str]:
    return {r.id for r in store.list(RecordQuery(cites=source_id, **EVERY))}


def checked_one_by_one(store: Store, source_id: str) -> set[str]:
    """The answer as the list gave it before the index held citations: every record read,
    each of its references compared with the source id (the test's own rule)."""
    wanted = f"source:{source_id}"
    return {
        r.id
        for r in store.list(RecordQuery(**EVERY))
        if any(
            ref == wanted or ref.startswith((wanted + "@", wanted + "#")) for ref in r.source_refs
        )
    }


def citing_store(store: Store) -> tuple[str, str, dict[str, str]]:
    tea = ingest(store, "User: I prefer tea.\nAssistant: noted.\n", "session:tea")
    talk = ingest(
        store, "User: the deploy is on Friday.\nUser: and the freeze after.\n", "session:talk"
    )
    made = {
        "whole": store.add("cites tea whole", kind="fact", source_refs=[f"source:{tea}"]),
        "lines": store.add("cites tea lines", kind="fact", source_refs=[f"source:{tea}#L1"]),
        "both": store.add(
            "cites both", kind="fact", source_refs=[f"source:{talk}#L2", f"source:{tea}#L2"]
        ),
        "talk": store.add("cites talk", kind="fact", source_refs=[f"source:{talk}#L1"]),
        "url": store.add("cites a url", kind="fact", source_refs=["url:https://example.com"]),
        "none": store.add("cites nothing", kind="fact"),
    }
    store.archive(made["lines"].id)  # any status: a source page lists them all
    return tea, talk, {name: record.id for name, record in made.items()}


def test_cites_answers_exactly_the_records_citing_the_source(store):
    tea, talk, ids = citing_store(store)
    assert citing(store, tea) == {ids["whole"], ids["lines"], ids["both"]}
    assert citing(store, talk) == {ids["both"], ids["talk"]}
    for source_id in (tea, talk):
        assert citing(store, source_id) == checked_one_by_one(store, source_id)
        assert store.count(RecordQuery(cites=source_id, **EVERY)) == len(citing(store, source_id))
        # A prefix is resolved to the full id first, as before.
        assert citing(store, source_id[:6]) == citing(store, source_id)
    # With the other filters: the usual active list leaves the archived citation out.
    assert {r.id for r in store.list(cites=tea)} == {ids["whole"], ids["both"]}
    found = store.search("cites", mode="keyword", cites=talk)
    assert {h.record.id for h in found} == {ids["both"], ids["talk"]}
    # A source nothing cites: no record, not an error.
    unused = ingest(store, "nobody cites this\n", "session:unused")
    assert citing(store, unused) == set()


def test_a_hand_edit_moves_a_citation_before_any_commit(store, store_path):
    tea, talk, ids = citing_store(store)
    path = store_path / record_path(ids["whole"])
    text = path.read_text()
    assert f"source:{tea}" in text
    path.write_text(text.replace(f"source:{tea}", f"source:{talk}"))
    assert citing(store, tea) == {ids["lines"], ids["both"]}
    assert citing(store, talk) == {ids["both"], ids["talk"], ids["whole"]}
    for source_id in (tea, talk):
        assert citing(store, source_id) == checked_one_by_one(store, source_id)


def test_a_pull_brings_the_citations_of_the_records_it_brings(store, store_path, tmp_path):
    tea, talk, ids = citing_store(store)
    assert citing(store, tea) == {ids["whole"], ids["lines"], ids["both"]}  # index built
    other = tmp_path / "other"
    git(tmp_path, "clone", "-q", str(store_path), str(other))
    there = Store(str(other))
    pulled = there.add("cites tea, written elsewhere", kind="fact", source_refs=[f"source:{tea}"])
    there.close()
    # And a record whose citation moved by a plain git commit there.
    moved = other / record_path(ids["talk"])
    moved.write_text(moved.read_text().replace(f"source:{talk}", f"source:{tea}"))
    git(other, "commit", "-qam", "cite tea instead")
    git(store_path, "pull", "-q", str(other), "main")
    assert citing(store, tea) == {ids["whole"], ids["lines"], ids["both"], pulled.id, ids["talk"]}
    assert citing(store, talk) == {ids["both"]}
    for source_id in (tea, talk):
        assert citing(store, source_id) == checked_one_by_one(store, source_id)


def test_an_index_of_the_older_schema_is_rebuilt_with_the_citations(store_path, monkeypatch):
    # The index the older code made: the same documents without the field, under its version.
    older = dataclasses.replace(
        search.SearchIndex.LAYOUT,
        index_name="records_v4",
        state="state_v4.marshal",
        version=4,
        schema=lambda: _without_cites(search._schema()),
    )
    document = search._document
    with monkeypatch.context() as patch:
        patch.setattr(search.SearchIndex, "LAYOUT", older)
        patch.setattr(search, "_document", lambda *a: _without(document(*a)))
        old = Store(str(store_path))
        tea, talk, ids = citing_store(old)
        assert len(old.list(RecordQuery(**EVERY))) == 6  # the older index answers
        old.close()
    store = Store(str(store_path))
    assert citing(store, tea) == {ids["whole"], ids["lines"], ids["both"]}
    assert citing(store, talk) == {ids["both"], ids["talk"]}
    store.close()


def _without_cites(schema):
    schema.remove("cites")
    return schema


def _without(document: dict) -> dict:
    document.pop("cites", None)
    return document
