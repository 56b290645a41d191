"""memory edit's rules asked through the library, one at a time, each whichever way its values
sort: the id that must stay, the file that changed meanwhile, the line a second record is
named at, the stamp, and an edited copy that is not UTF-8.

test_edit.py holds the command with real editors; these hold what its tests left unasked (the
mutation run's ``editing`` module, benchmarks/mutation.py, found it).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from support.stores import snapshot

from lantern_git.errors import InvalidInput, StoreError, ValidationError
from lantern_git.memory.editing import editor_command
from lantern_git.model.record import Record
from lantern_git.model.record_file import record_path


def text_of(store, record_id: str) -> str:
    return (Path(store.root) / record_path(record_id)).read_text()


@pytest.mark.parametrize("direction", ["smaller", "larger"])
def test_an_edit_may_not_change_the_id_whichever_way_it_sorts(store, direction):
    kept = store.add("the record", kind="fact")
    other = "0" * 15 + "a" if direction == "smaller" else "f" * 16
    text = text_of(store, kept.id)
    before = snapshot(store.root)
    with pytest.raises(ValidationError) as caught:
        store.apply_edit(kept.id, text, text.replace(f"id: {kept.id}", f"id: {other}"))
    assert (caught.value.code, caught.value.line) == ("id_changed", 2)
    assert snapshot(store.root) == before


@pytest.mark.parametrize("priority", [10, 90])
def test_an_edit_is_refused_when_the_file_changed_meanwhile_whichever_way(store, priority):
    kept = store.add("the record", kind="fact", priority=50)
    text = text_of(store, kept.id)
    store.update(kept.id, priority=priority)  # another writer while the editor was open
    before = snapshot(store.root)
    with pytest.raises(StoreError) as caught:
        store.apply_edit(kept.id, text, text.replace("urgency: 0", "urgency: 3"))
    assert caught.value.code == "edit_conflict"
    assert snapshot(store.root) == before


def test_a_second_record_is_named_at_its_own_line(store):
    kept = store.add("the record", kind="fact")
    text = text_of(store, kept.id)
    front_end = text.index("\n---\n") + len("\n---\n")
    body_line = text[:front_end].count("\n") + 1
    # As many lines of text as the body's first line number, so that no sum of the two is
    # also their bitwise or or xor.
    lines = "".join(f"line {n}\n" for n in range(body_line))
    edited = text[:front_end] + lines + "---\nid: 0123456789abcdef\nkind: fact\n---\n"
    with pytest.raises(ValidationError) as caught:
        store.apply_edit(kept.id, text, edited)
    assert caught.value.code == "second_record"
    assert caught.value.line == 2 * body_line
    assert edited.split("\n")[caught.value.line - 1] == "---"


def test_an_edit_of_updated_at_alone_is_kept_as_written(store):
    kept = store.add("the record", kind="fact")
    text = text_of(store, kept.id)
    stamp = kept.updated_at + 12_345
    edited = Record.from_markdown(text).evolve(updated_at=stamp).rewrite(text)
    changed = store.apply_edit(kept.id, text, edited)
    assert changed.updated_at == stamp
    assert text_of(store, kept.id) == edited


def test_an_edited_copy_that_is_not_utf8_names_its_line(store):
    kept = store.add("the record", kind="fact")
    with store.begin_edit(kept.id) as session:
        for data, line in ((b"---\nid: x\n\xff\n---\n", 3), (b"---\n\xff\n", 2)):
            Path(session.path).write_bytes(data)
            with pytest.raises(ValidationError) as caught:
                session.edited_text()
            assert (caught.value.reason, caught.value.line) == ("is not valid UTF-8", line)
            assert caught.value.path == record_path(kept.id)


@pytest.mark.parametrize("script, status", [("exit 3", 3), ("kill -9 $$", -9)])
def test_an_editor_that_fails_or_is_killed_leaves_the_record(store, script, status):
    kept = store.add("the record", kind="fact")
    before = snapshot(store.root)
    with store.begin_edit(kept.id) as session:
        # The script writes a change first: a failed editor's file is never committed.
        command = ["sh", "-c", f'echo "urgency: 9" >> "$1"; {script}', "editor"]
        with pytest.raises(StoreError) as caught:
            session.edit(command)
    assert caught.value.code == "editor_failed"
    assert str(caught.value) == (
        f"the editor exited with status {status}; the record was not changed"
    )
    assert snapshot(store.root) == before


@pytest.mark.parametrize("priority", [40, 60])
def test_an_edit_is_committed_whichever_way_its_text_sorts(store, priority):
    kept = store.add("the record", kind="fact", priority=50)
    text = text_of(store, kept.id)
    changed = store.apply_edit(kept.id, text, text.replace("priority: 50", f"priority: {priority}"))
    assert changed.priority == priority == store.get(kept.id).priority


def test_an_editor_setting_that_cannot_be_split_into_words_is_refused(monkeypatch):
    monkeypatch.delenv("VISUAL", raising=False)
    monkeypatch.setenv("EDITOR", 'vi "unclosed')
    with pytest.raises(InvalidInput) as caught:
        editor_command()
    assert str(caught.value).startswith("$EDITOR: cannot be split into words: ")


def test_closing_an_edit_twice_is_harmless(store):
    kept = store.add("the record", kind="fact")
    session = store.begin_edit(kept.id)
    session.close()
    session.close()
    assert not Path(session.path).exists()
