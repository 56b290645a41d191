"""The record writes asked through the library (lantern_git.memory.records), one choice at a
time: what supersede carries over, the hand-edit commit outside and inside review mode, memory
edit's start, and the summary line every write's commit gets.

test_store.py and test_lifecycle.py hold the writes end to end; these hold what their tests
left unasked (the mutation run's ``record_writes`` module, benchmarks/mutation.py, found it).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from support.format1 import unpack_format1
from support.stores import git, snapshot

from lantern_git.errors import InvalidInput, NeedsMigration, NotFound
from lantern_git.evidence.sources import SourceInput
from lantern_git.model.record_file import record_path
from lantern_git.store import Store

EXPIRY = 2_000_000_000


def summary(store: Store) -> str:
    return git(store.root, "log", "-1", "--format=%s").strip()


def test_supersede_carries_the_expiry_it_is_given(store):
    old = store.add("Ship on Friday.", kind="goal")
    new = store.supersede(old.id, "Ship on Monday.", expires_at=EXPIRY)
    assert new.expires_at == EXPIRY
    assert store.get(new.id).expires_at == EXPIRY
    plain = store.supersede(new.id, "Ship on Tuesday.")
    assert plain.expires_at is None


def test_a_commit_summary_holds_the_contents_first_sixty_characters(store):
    exactly = "x" * 60
    kept = store.add(exactly, kind="fact")
    assert summary(store) == f"add {kept.id}: {exactly}"
    longer = "y" * 61
    cut = store.add(longer, kind="fact")
    assert summary(store) == f"add {cut.id}: {'y' * 57}..."
    spaced = store.add("a   b\n\nc " + "z" * 70, kind="fact")
    assert summary(store) == f"add {spaced.id}: {('a b c ' + 'z' * 70)[:57]}..."


def test_hand_edits_are_committed_outside_review_mode_and_refused_in_it(store_path):
    store = Store.open(str(store_path))
    try:
        kept = store.add("edited by hand", kind="fact")
        path = store_path / record_path(kept.id)
        path.write_text(path.read_text().replace("priority: 50", "priority: 65"))
        committed = store.commit_hand_edits()
        assert committed.commit == git(store_path, "rev-parse", "HEAD").strip()
        assert store.get(kept.id).priority == 65
    finally:
        store.close()
    path.write_text(path.read_text().replace("priority: 65", "priority: 66"))
    agent = Store.open(str(store_path), review=True, review_name="agent")
    try:
        with pytest.raises(InvalidInput) as caught:
            agent.commit_hand_edits()
        assert caught.value.code == "review_mode"
        assert str(caught.value).startswith("lantern commit is not available in review mode")
    finally:
        agent.close()
    assert git(store_path, "status", "--porcelain").strip() == f"M {record_path(kept.id)}"


def test_memory_edit_starts_from_the_records_committed_text(store):
    kept = store.add("to edit", kind="fact")
    text = (Path(store.root) / record_path(kept.id)).read_text()
    with store.begin_edit(kept.id[:6]) as session:
        assert (session.record_id, session.original_text) == (kept.id, text)
        assert Path(session.path).read_text() == text


def test_memory_edit_of_a_default_store_not_made_yet_finds_no_record(tmp_path):
    store = Store.open(str(tmp_path / "nowhere"), create_on_write=True)
    try:
        with pytest.raises(NotFound) as caught:
            store.begin_edit("0123abcd")
        assert str(caught.value) == "no record with id 0123abcd"
    finally:
        store.close()
    assert not (tmp_path / "nowhere").exists()  # reading made nothing


def test_a_format_1_store_takes_plain_writes_and_refuses_entities(tmp_path):
    beta = unpack_format1(tmp_path).beta
    store = Store.open(str(beta))
    try:
        [first, *_] = store.list()
        before = snapshot(beta)
        for write in (
            lambda: store.add("Ana again", kind="fact", entities=["person:ana"]),
            lambda: store.update(first.id, add_entities=["person:ana"]),
            lambda: store.update(first.id, remove_entities=["person:ana"]),
        ):
            with pytest.raises(NeedsMigration):
                write()
            assert snapshot(beta) == before
        added = store.add("A plain fact.", kind="fact")
        changed = store.update(first.id, priority=first.priority + 1)
        assert store.get(added.id).entities == () and changed.priority == first.priority + 1
    finally:
        store.close()


def test_a_records_source_references_are_pinned_to_the_version_current_now(store):
    [ingested] = store.sources.add([SourceInput(b"one\ntwo\n", "n.md", uri="note:1")])
    sid = ingested.manifest.id
    cited = store.add("Cites a note.", kind="fact", source_refs=[f"source:{sid}#L1-L2"])
    [ref] = cited.source_refs
    assert ref.startswith(f"source:{sid}@") and ref.endswith("#L1-L2")
    assert store.get(cited.id).source_refs == (ref,)
    plain = store.add("Cites nothing.", kind="fact", source_refs=["https://example.com/x"])
    assert plain.source_refs == ("https://example.com/x",)
