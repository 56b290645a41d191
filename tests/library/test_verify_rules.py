"""lantern verify asked directly (docs/evidence.md): the lines a reference names when it names
none, a removed source's pinned text, a pin to another source's blob whichever way the ids
sort, text found again at its place or moved, and what the detail says.

test_evidence.py holds the command's statuses; these hold the rules its tests left unasked
(the mutation run of ``verify``, benchmarks/mutation.py, found them).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from support.sources import blob_id, sharing_a_prefix
from support.stores import git, make_store, opened

from lantern_git.evidence.sources import RefCheck, SourceInput
from lantern_git.model.record_file import record_path

FIVE = b"one\ntwo\nthree\nfour\nfive\n"


@pytest.fixture
def path(tmp_path: Path) -> Path:
    return make_store(tmp_path / "store")


def ingest(store, body: bytes, uri: str = "note:five") -> str:
    [result] = store.sources.add([SourceInput(body, "notes.md", uri=uri)])
    return result.manifest.id


def cite(path: Path, refs: list[str]) -> str:
    """A record whose references are written by hand, as lantern never pins them."""
    with opened(path) as store:
        record = store.add("cited by hand", kind="fact")
    file = path / record_path(record.id)
    listed = "".join(f"- {ref}\n" for ref in refs)
    file.write_text(file.read_text().replace("\n---\n", f"\nsource_refs:\n{listed}---\n", 1))
    git(path, "commit", "-q", "--no-verify", "-am", "references by hand")
    return record.id


def checked(path: Path, record_id: str) -> list[tuple]:
    with opened(path) as store:
        record = store.get(record_id)
        return [
            (c.problem, c.detail, c.lines, c.text, c.moved_to)
            for _, c in store.sources.check_refs(record)
        ]


def found_after(path: Path, before: bytes, lines: str, after: bytes) -> RefCheck:
    """What verify finds for a reference to ``lines`` (``#L2``, ``#L2-L3``) of ``before``
    once ``after`` is the source's current version."""
    with opened(path) as store:
        source_id = ingest(store, before)
        record = store.add("cited", kind="fact", source_refs=[f"source:{source_id}{lines}"])
        ingest(store, after)
        [(_, found)] = store.sources.check_refs(record)
    return found


def test_a_reference_without_lines_names_the_whole_pinned_body(path):
    with opened(path) as store:
        source_id = ingest(store, FIVE)
        record = store.add("all five", kind="fact", source_refs=[f"source:{source_id}"])
        [(_, found)] = store.sources.check_refs(record)
    assert (found.problem, found.lines) == ("ok", (1, 5))
    assert found.text == FIVE.decode()


def test_a_reference_past_the_pinned_version_s_end_is_out_of_range_naming_its_length(path):
    with opened(path) as store:
        source_id = ingest(store, FIVE)
    record_id = cite(path, [f"source:{source_id}@{blob_id(FIVE)[:12]}#L3-L6"])
    [(problem, detail, *_)] = checked(path, record_id)
    assert (problem, detail) == ("out_of_range", "lines 3-6: the pinned version has 5 lines")


def test_an_empty_body_cited_whole_is_out_of_range(path):
    with opened(path) as store:
        source_id = ingest(store, b"")
    record_id = cite(path, [f"source:{source_id}"])
    [(problem, detail, *_)] = checked(path, record_id)
    assert (problem, detail) == ("out_of_range", "lines 1-0: the pinned version has 0 lines")


def test_a_removed_source_s_pinned_lines_stay_readable(path):
    with opened(path) as store:
        source_id = ingest(store, FIVE)
        whole = store.add("all five", kind="fact", source_refs=[f"source:{source_id}"])
        two = store.add("two and three", kind="fact", source_refs=[f"source:{source_id}#L2-L3"])
        store.sources.remove(source_id)
        results = [store.sources.check_refs(r)[0][1] for r in (whole, two)]
    assert [(r.problem, r.lines, r.text) for r in results] == [
        ("removed", (1, 5), FIVE.decode()),
        ("removed", (2, 3), "two\nthree\n"),
    ]
    assert results[0].detail == f"source {source_id} was removed; the pinned text is still readable"


def test_a_removed_source_s_reference_past_its_end_has_no_lines(path):
    with opened(path) as store:
        source_id = ingest(store, FIVE)
        store.sources.remove(source_id)
    record_id = cite(path, [f"source:{source_id}@{blob_id(FIVE)[:12]}#L4-L6"])
    [(problem, _, lines, text, _)] = checked(path, record_id)
    assert (problem, lines, text) == ("removed", None, None)


def other_bodies(current: str) -> tuple[bytes, bytes]:
    """Two bodies whose blob ids sort one before ``current`` and one after it."""
    below = above = None
    number = 0
    while below is None or above is None:
        body = f"another note {number}\n".encode()
        if blob_id(body) < current:
            below = below or body
        else:
            above = above or body
        number += 1
    return below, above


def test_a_pin_to_another_source_s_blob_is_no_version_whichever_way_the_ids_sort(path):
    below, above = other_bodies(blob_id(FIVE))
    with opened(path) as store:
        source_id = ingest(store, FIVE)
        ingest(store, below, uri="note:below")
        ingest(store, above, uri="note:above")
    refs = [f"source:{source_id}@{blob_id(body)[:12]}#L1" for body in (below, above)]
    record_id = cite(path, refs)
    assert [(p, d) for p, d, *_ in checked(path, record_id)] == [
        ("unknown_version", f"{blob_id(body)[:12]} is not a version of source {source_id}")
        for body in (below, above)
    ]


def test_an_older_pin_whose_lines_are_unchanged_at_the_end_of_the_body_is_ok(path):
    found = found_after(path, FIVE, "#L5", FIVE.replace(b"one", b"ONE"))
    assert (found.problem, found.lines, found.text) == ("ok", (5, 5), "five\n")


@pytest.mark.parametrize(
    ("lines", "detail"),
    [
        ("#L2", "line 2 no longer holds the pinned text; the text is now at line 3"),
        ("#L2-L3", "lines 2-3 no longer hold the pinned text; the text is now at lines 3-4"),
    ],
)
def test_drifted_text_is_named_by_its_old_and_new_lines(path, lines, detail):
    found = found_after(path, FIVE, lines, b"zero\n" + FIVE)
    assert (found.problem, found.detail) == ("drifted", detail)


def test_drifted_text_on_a_last_line_without_a_newline_is_found(path):
    body = b"one\ntwo\nthree"
    found = found_after(path, body, "#L3", b"zero\n" + body)
    assert (found.problem, found.moved_to) == ("drifted", (4, 4))


def test_drifted_text_is_found_in_a_body_that_starts_with_a_blank_line(path):
    found = found_after(path, b"a\nthree\n", "#L2", b"\nzero\nthree")
    assert (found.problem, found.moved_to) == ("drifted", (3, 3))


def test_evidence_names_the_problem_of_each_reference_but_an_ok_one(path):
    with opened(path) as store:
        source_id = ingest(store, FIVE)
        record = store.add(
            "two then five",
            kind="fact",
            source_refs=[f"source:{source_id}#L2", f"source:{source_id}#L5", "chat:1"],
        )
        ingest(store, FIVE.replace(b"two", b"TWO"))
        shown = store.sources.evidence(record)
    assert [(e["problem"], e["lines"], e["text"]) for e in shown] == [
        ("drifted", [2, 2], "two\n"),
        (None, [5, 5], "five\n"),
        (None, None, None),
    ]


def two_uris_in_one_shard() -> tuple[str, str]:
    """Two uris whose source ids share their first two hex digits (one folder of sources/),
    the first's id sorting after the second's."""
    from lantern_git.model.source import compute_source_id

    def source_id(uri: str) -> str:
        return compute_source_id(uri, b"")

    pair = sharing_a_prefix(lambda n: f"note:{n}", source_id, 2)
    later, earlier = sorted(pair, key=source_id, reverse=True)
    return later, earlier


def test_a_pin_to_a_blob_of_another_source_in_the_same_folder_is_no_version(path):
    later, earlier = two_uris_in_one_shard()
    other_body = b"the other source\n"
    with opened(path) as store:
        source_id = ingest(store, FIVE, uri=later)
        other_id = ingest(store, other_body, uri=earlier)
    assert other_id[:2] == source_id[:2] and other_id < source_id
    pin = blob_id(other_body)[:12]
    record_id = cite(path, [f"source:{source_id}@{pin}#L1"])
    assert [(p, d) for p, d, *_ in checked(path, record_id)] == [
        ("unknown_version", f"{pin} is not a version of source {source_id}")
    ]
    with opened(path) as store:
        assert set(store.sources.versions(source_id)) == {blob_id(FIVE)}


def test_showing_a_pin_that_is_no_version_says_which_kind_of_miss(path):
    from lantern_git.errors import InvalidInput, NotFound

    with opened(path) as store:
        source_id = ingest(store, FIVE)
        other = blob_id(b"the other source\n")
        ingest(store, b"the other source\n", uri="note:other")
        with pytest.raises(InvalidInput) as not_a_version:
            store.sources.show(f"source:{source_id}@{other[:12]}")
        with pytest.raises(NotFound) as missing:
            store.sources.show(f"source:{source_id}@{'0' * 12}")
    assert not_a_version.value.code == "unknown_version"
    assert str(not_a_version.value) == (
        f"source:{source_id}@{other[:12]}: {other[:12]} is not a version of source {source_id}"
    )
    assert str(missing.value) == (
        f"source:{source_id}@{'0' * 12}: no such version in this repository"
    )


def test_drifted_text_that_moved_to_the_first_line_is_found_there(path):
    found = found_after(path, b"zero\nthree\nfour\n", "#L2-L3", b"three\nfour\nzero\n")
    assert (found.problem, found.moved_to) == ("drifted", (1, 2))


def test_drifted_text_is_not_matched_across_the_body_s_start(path):
    # "four" is the rarer line of the two; its first place in the new version is line 1, where
    # the text would have to start at line 0.
    found = found_after(path, b"x\nthree\nfour\n", "#L2-L3", b"four\nthree\nthree\nx\n")
    assert (found.problem, found.moved_to) == ("drifted", None)


def test_a_pinned_line_past_the_end_of_a_shorter_current_version_is_drifted(path):
    found = found_after(path, b"one\ntwo\nthree\n", "#L3", b"one\ntwo\n")
    assert (found.problem, found.moved_to, found.text) == ("drifted", None, "three\n")


def test_a_cited_blank_last_line_is_never_found_past_a_body_s_end(path):
    found = found_after(path, b"a\nx\n\n", "#L2-L3", b"b\nx\n")
    assert (found.problem, found.moved_to) == ("drifted", None)


def test_a_one_line_body_cited_whole_is_ok(path):
    with opened(path) as store:
        source_id = ingest(store, b"only\n")
        record = store.add("only", kind="fact", source_refs=[f"source:{source_id}"])
        [(_, found)] = store.sources.check_refs(record)
    assert (found.problem, found.lines) == ("ok", (1, 1))


def test_verify_checks_the_source_references_after_an_opaque_one(path):
    with opened(path) as store:
        source_id = ingest(store, FIVE)
    record_id = cite(path, ["chat:1", f"source:{source_id}#L9"])
    with opened(path) as store:
        report = store.sources.verify()
    assert report.checked == 1
    assert [(p.record_id, p.problem) for p in report.problems] == [(record_id, "out_of_range")]


def test_drifted_text_is_matched_line_for_line_never_by_order(path):
    # "b" is the rarer line; the line before it in the new version sorts before "a".
    found = found_after(path, b"a\nb\n", "#L1-L2", b"a\na\nZ\nb\n")
    assert (found.problem, found.moved_to) == ("drifted", None)


def test_a_malformed_source_reference_written_by_hand_is_an_unknown_source(path):
    record_id = cite(path, ["source:not-an-id"])
    [(problem, detail, *_)] = checked(path, record_id)
    assert problem == "unknown_source" and detail


def test_a_range_of_one_line_past_256_written_by_hand_is_named_as_one_line(path):
    # Two equal numbers above 256 are two objects in CPython: the label compares values.
    body = b"".join(b"line %d\n" % n for n in range(1, 301))
    with opened(path) as store:
        source_id = ingest(store, body)
        ingest(store, body.replace(b"line 300\n", b"changed\n"))
    record_id = cite(path, [f"source:{source_id}@{blob_id(body)[:12]}#L300-L300"])
    [(problem, detail, *_)] = checked(path, record_id)
    assert (problem, detail) == ("drifted", "line 300 no longer holds the pinned text")
