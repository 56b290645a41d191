"""The source merge's rules asked one at a time (model/source_merge.py; docs/sync.md, "How
sources merge"): which body each case keeps and how it says so, which side a manifest field
comes from, the order that breaks a tie, and the manifest driver's shortcuts. The same rules
through real syncs and the git driver are tests/library/test_source_sync.py."""

from __future__ import annotations

from dataclasses import FrozenInstanceError

import pytest
from support.sources import SID, T0, transcript

from lantern_git.model.record_merge import MergeError
from lantern_git.model.source import SourceManifest, compute_source_id
from lantern_git.model.source_file import describe
from lantern_git.model.source_merge import (
    SourceVersion,
    merge_bodies,
    merge_manifest_files,
    merge_source,
    parse_manifest_side,
)

BASE = b"User: hello\nAssistant: hi\n"


manifest = transcript


def version(body: bytes | None, ext: str | None = "txt", **fields) -> SourceVersion:
    text = manifest(body or b"", **fields).to_yaml()
    return SourceVersion(text, body, ext if body is not None else None)


def merged(base: SourceVersion, ours: SourceVersion, theirs: SourceVersion):
    return merge_source(base, ours, theirs, SID)


def fields_of(result) -> SourceManifest:
    return SourceManifest.from_yaml(result.manifest)


# ---------------------------------------------------------------------------- bodies


@pytest.mark.parametrize(
    "ours, theirs, expected",
    [
        (BASE + b"more\n", BASE, (BASE + b"more\n", "ours")),
        (None, BASE, (None, "removed")),
        (BASE, BASE + b"more\n", (BASE + b"more\n", "theirs")),
        (BASE, None, (None, "removed")),
    ],
)
def test_a_body_only_one_side_changed_is_that_side_or_removed(ours, theirs, expected):
    result = merge_bodies(BASE, ours, theirs)
    assert (result.body, result.how) == expected
    assert (result.winner, result.other) == (None, None)


@pytest.mark.parametrize("removed", ["ours", "theirs"])
def test_a_body_removed_on_one_side_and_changed_on_the_other_is_kept(removed):
    changed = b"User: a whole new talk\n"
    ours, theirs = (None, changed) if removed == "ours" else (changed, None)
    result = merge_bodies(BASE, ours, theirs)
    assert (result.body, result.how, result.winner) == (changed, "kept", None)


@pytest.mark.parametrize("swap", [False, True])
def test_a_body_that_extends_the_other_wins_as_the_longer_with_nothing_left_behind(swap):
    short, long = b"User: other\n", b"User: other\nAssistant: more\n"
    ours, theirs = (long, short) if swap else (short, long)
    result = merge_bodies(BASE, ours, theirs)
    assert (result.body, result.how) == (long, "longer")
    assert result.winner == ("ours" if swap else "theirs")
    assert result.other is None


@pytest.mark.parametrize("swap", [False, True])
def test_two_re_ingests_keep_the_longer_and_give_back_the_other(swap):
    short, long = b"User: one\n", b"User: a longer other\n"
    ours, theirs = (long, short) if swap else (short, long)
    result = merge_bodies(BASE, ours, theirs)
    assert (result.body, result.how, result.other) == (long, "reingested", short)
    assert result.winner == ("ours" if swap else "theirs")


@pytest.mark.parametrize("swap", [False, True])
def test_long_tails_that_differ_in_their_first_line_are_both_kept(swap):
    """Tails longer than the block the shared lines are compared in, differing early: the
    blocks must be equal to count as shared, not merely compare one way."""
    filler = b"c" * 5000 + b"\n"
    ours, theirs = BASE + b"b\n" + filler, BASE + b"a\n" + filler
    if swap:
        ours, theirs = theirs, ours
    result = merge_bodies(BASE, ours, theirs)
    assert result.how == "appended"
    assert result.body == BASE + b"a\n" + filler + b"b\n" + filler


@pytest.mark.parametrize("swap", [False, True])
def test_long_tails_equal_but_in_their_second_block_keep_only_the_lines_before(swap):
    first = b"s" * 4000 + b"\n"  # the first block: equal, one whole line
    ours = BASE + first + b"a" * 200 + b"\n" + b"t" * 8000 + b"\n"
    theirs = BASE + first + b"b" * 200 + b"\n" + b"t" * 8000 + b"\n"
    if swap:
        ours, theirs = theirs, ours
    result = merge_bodies(BASE, ours, theirs)
    rest_a = b"a" * 200 + b"\n" + b"t" * 8000 + b"\n"
    rest_b = b"b" * 200 + b"\n" + b"t" * 8000 + b"\n"
    assert result.body == BASE + first + rest_a + rest_b


def test_long_tails_sharing_their_first_lines_keep_those_lines_once():
    shared = b"s" * 6000 + b"\n" + b"t" * 3000 + b"\n"
    result = merge_bodies(BASE, BASE + shared + b"ours\n", BASE + shared + b"theirs\n")
    assert result.body == BASE + shared + b"ours\ntheirs\n"


def test_an_append_that_another_extends_is_taken_whole_once():
    tail = b"".join(b"User: line %d\n" % n for n in range(30))  # past CPython's small ints
    assert len(tail) > 300
    result = merge_bodies(BASE, BASE + tail, BASE + tail + b"User: more\n")
    assert (result.body, result.how) == (BASE + tail + b"User: more\n", "appended")


def test_a_body_merge_and_a_source_merge_cannot_be_changed_once_made():
    result = merge_bodies(BASE, BASE + b"a\n", BASE)
    with pytest.raises(FrozenInstanceError):
        result.body = b"changed"  # type: ignore[misc]
    source = merge_source(version(BASE), version(BASE + b"a\n"), version(BASE), SID)
    with pytest.raises(FrozenInstanceError):
        source.ext = "md"  # type: ignore[misc]
    with pytest.raises(FrozenInstanceError):
        version(BASE).ext = "md"  # type: ignore[misc]


def test_a_blank_line_both_tails_start_with_is_kept_once():
    result = merge_bodies(BASE, BASE + b"\nUser: a\n", BASE + b"\nUser: b\n")
    assert result.body == BASE + b"\nUser: a\nUser: b\n"


def test_a_body_that_is_not_text_gives_way_to_the_other_and_two_are_refused():
    result = merge_bodies(BASE, b"\xff\x00binary\n", BASE + b"more\n")
    assert (result.body, result.how, result.winner) == (BASE + b"more\n", "invalid", "theirs")
    with pytest.raises(MergeError):
        merge_bodies(BASE, b"\xff\x00one", b"\xff\x00two")


# ---------------------------------------------------------------------------- sources


def test_a_side_that_lost_only_its_body_file_takes_the_other_sides_body():
    base = version(BASE)
    ours = SourceVersion(manifest(BASE, title="Kickoff", updated_at=T0 + 1).to_yaml())
    theirs = version(BASE + b"more\n", updated_at=T0 + 2)
    result = merged(base, ours, theirs)
    assert (result.body, result.ext, result.kept) == (BASE + b"more\n", "txt", None)
    assert fields_of(result).title == "Kickoff"
    assert fields_of(result).lines == describe(BASE + b"more\n")["lines"]


def test_two_sides_without_a_body_file_are_refused():
    only = SourceVersion(manifest(BASE).to_yaml())
    with pytest.raises(MergeError):
        merged(version(BASE), only, only)


def other_ids() -> tuple[str, str]:
    """Two other sources' ids, one sorting before SID and one after."""
    ids = [compute_source_id(f"session:other-{n}", b"") for n in range(50)]
    return min(i for i in ids if i < SID), max(i for i in ids if i > SID)


def test_a_manifest_naming_another_source_is_replaced_like_an_invalid_one():
    for other in other_ids():
        data = manifest(BASE, id=other).to_yaml()
        assert parse_manifest_side(data, SID) is None
        assert parse_manifest_side(data, other) is not None
        assert parse_manifest_side(data, None) is not None  # no id pinned: any reads
    other = other_ids()[0]
    data = manifest(BASE, id=other).to_yaml()
    result = merged(
        version(BASE),
        SourceVersion(data, BASE + b"a\n", "txt"),
        version(BASE + b"b\n", updated_at=T0 + 1),
    )
    assert result.invalid == ("ours",)
    assert fields_of(result).id == SID


def test_a_field_one_side_changed_is_taken_without_a_conflict():
    for ours, theirs, expected in (("New", "Old", "New"), ("Old", "New", "New")):
        result = merged(
            version(BASE, title="Old"),
            version(BASE, title=ours, updated_at=T0 + 1),
            version(BASE, title=theirs, updated_at=T0 + 2),
        )
        assert (fields_of(result).title, result.conflicts) == (expected, ())


def test_a_field_both_sides_changed_alike_is_no_conflict():
    result = merged(
        version(BASE),
        version(BASE, title="Weekly sync", updated_at=T0 + 1),
        version(BASE, title="Weekly sync", updated_at=T0 + 2),
    )
    assert fields_of(result).title == "Weekly sync"
    assert result.conflicts == ()


@pytest.mark.parametrize("later", ["ours", "theirs"])
def test_a_field_both_changed_with_no_body_winner_comes_from_the_later_side(later):
    # "B" sorts above "A": the later side must win even with the smaller value
    ours_at, theirs_at = (T0 + 2, T0 + 1) if later == "ours" else (T0 + 1, T0 + 2)
    ours_title, theirs_title = ("A", "B") if later == "ours" else ("B", "A")
    result = merged(
        version(BASE),
        version(BASE, title=ours_title, updated_at=ours_at),
        version(BASE, title=theirs_title, updated_at=theirs_at),
    )
    assert fields_of(result).title == "A"
    assert result.conflicts == ("title",)


def test_a_tie_in_time_takes_the_larger_value_whichever_side_has_it():
    for ours, theirs in (("A", "B"), ("B", "A")):
        result = merged(version(BASE), version(BASE, title=ours), version(BASE, title=theirs))
        assert fields_of(result).title == "B"


def test_a_meta_key_both_sides_changed_is_one_conflict_and_new_keys_follow_sorted():
    base = version(BASE, meta={"room": "1"})
    ours = version(BASE, meta={"room": "2", "zeta": "z"}, updated_at=T0 + 2)
    theirs = version(BASE, meta={"room": "3", "alpha": "a"}, updated_at=T0 + 1)
    result = merged(base, ours, theirs)
    assert result.conflicts == ("meta.room",)
    assert list(fields_of(result).meta.items()) == [("room", "2"), ("alpha", "a"), ("zeta", "z")]


def tie(ours_extra: dict, theirs_extra: dict) -> dict:
    """The extra (unknown) keys two sides changed differently at the same time."""
    result = merged(
        version(BASE, extra={"note": "base"}),
        version(BASE, extra=ours_extra),
        version(BASE, extra=theirs_extra),
    )
    return fields_of(result).extra


def test_a_tie_orders_absent_below_text_below_other_values():
    assert tie({}, {"note": ""}) == {"note": ""}
    assert tie({"note": ""}, {}) == {"note": ""}
    assert tie({}, {"note": "changed"}) == {"note": "changed"}
    assert tie({"note": "changed"}, {}) == {"note": "changed"}
    assert tie({"note": None}, {"note": "changed"}) == {"note": "changed"}
    assert tie({"note": ["a"]}, {"note": "z"}) == {"note": ["a"]}
    assert tie({"note": "z"}, {"note": ["a"]}) == {"note": ["a"]}


def test_values_other_than_text_tie_by_their_yaml_with_keys_sorted_and_unicode_kept():
    # Sorted keys: "a: 1\nb: 1" below "a: 2"; in their own order "b: 1 ..." would be above
    assert tie({"note": {"b": 1, "a": 1}}, {"note": {"a": 2}}) == {"note": {"a": 2}}
    # "é" above "z" as itself; escaped, '"\xE9"' would sort below
    assert tie({"note": ["é"]}, {"note": ["z"]}) == {"note": ["é"]}


def test_values_other_than_text_tie_by_their_yaml_on_one_line_however_long():
    # Wrapped at a width, the single space would become a line break and sort below the
    # double space; on one line the 'a' after it sorts above the second space
    ours, theirs = ["x" * 100 + " a"], ["x" * 100 + "  b"]
    assert tie({"note": ours}, {"note": theirs}) == {"note": ours}


def test_an_invalid_manifest_counts_as_the_earliest_time_for_the_extension():
    # The valid side at time 0 ties with the invalid one: the larger extension, not the side
    ours = SourceVersion(b"id: [broken\n", BASE, "csv")
    theirs = SourceVersion(manifest(BASE, captured_at=0, updated_at=0).to_yaml(), BASE, "md")
    assert merged(version(BASE), ours, theirs).ext == "md"
    assert merged(version(BASE), theirs, ours).ext == "md"


def ext_merged(one: tuple[str, int], other: tuple[str, int], swap: bool) -> str | None:
    """The extension merged from two sides, each (extension, updated_at), against txt."""
    sides = [
        SourceVersion(manifest(BASE, updated_at=at).to_yaml(), BASE, ext)
        for ext, at in (one, other)
    ]
    ours, theirs = sides[::-1] if swap else sides
    return merged(version(BASE), ours, theirs).ext


@pytest.mark.parametrize("swap", [False, True])
def test_an_extension_one_side_changed_is_taken_whatever_the_times(swap):
    assert ext_merged(("md", T0 + 1), ("txt", T0 + 2), swap) == "md"


@pytest.mark.parametrize("swap", [False, True])
def test_an_extension_both_sides_changed_comes_from_the_later_side(swap):
    assert ext_merged(("csv", T0 + 2), ("md", T0 + 1), swap) == "csv"


def test_meta_keys_past_the_limit_take_the_deciding_side_whole():
    ours_meta = {f"ours{n}": "o" for n in range(40)}
    theirs_meta = {f"theirs{n}": "t" for n in range(40)}  # 80 together: over the 64 allowed
    result = merged(
        version(BASE),
        version(BASE + b"a\n", meta=ours_meta, updated_at=T0 + 2),
        version(BASE + b"b\n", meta=theirs_meta, updated_at=T0 + 1),
    )
    found = fields_of(result)
    assert found.meta == ours_meta  # the later side, whole
    assert (found.updated_at, found.lines) == (T0 + 2, describe(result.body)["lines"])


def test_a_merge_equal_to_one_side_keeps_that_sides_own_bytes():
    hand = manifest(BASE + b"more\n", title="Kickoff", updated_at=T0 + 1).to_yaml()
    hand = b"# kept by hand\n" + hand.replace(b"title:", b"title:  ")
    assert SourceManifest.from_yaml(hand).title == "Kickoff"
    result = merged(version(BASE), SourceVersion(hand, BASE + b"more\n", "txt"), version(BASE))
    assert result.manifest == hand


def test_both_sides_equal_to_the_merge_in_different_hands_keep_the_larger_bytes():
    fields = manifest(BASE + b"more\n", title="Kickoff", updated_at=T0 + 1).to_yaml()
    one, two = b"# one\n" + fields, b"# two\n" + fields
    for ours, theirs in ((one, two), (two, one)):
        result = merged(
            version(BASE),
            SourceVersion(ours, BASE + b"more\n", "txt"),
            SourceVersion(theirs, BASE + b"more\n", "txt"),
        )
        assert result.manifest == two


# ---------------------------------------------------------------------------- the driver


@pytest.mark.parametrize("broken", ["ours", "theirs"])
def test_the_manifest_driver_refuses_a_side_whose_manifest_does_not_parse(broken):
    good = manifest(BASE + b"a\n", updated_at=T0 + 1).to_yaml()
    ours, theirs = (b"id: [broken\n", good) if broken == "ours" else (good, b"id: [broken\n")
    with pytest.raises(MergeError, match="does not parse"):
        merge_manifest_files(manifest(BASE).to_yaml(), ours, theirs, SID, no_body)


def no_body(found: SourceManifest) -> bytes | None:
    raise AssertionError(f"the driver looked up a body it did not need: {found.sha256}")


@pytest.mark.parametrize("changed", ["ours", "theirs"])
def test_the_manifest_driver_needs_no_body_when_one_side_kept_the_base_body(changed):
    base = manifest(BASE).to_yaml()
    grown = manifest(BASE + b"more\n", updated_at=T0 + 1).to_yaml()
    retitled = manifest(BASE, title="Kickoff", updated_at=T0 + 2).to_yaml()
    ours, theirs = (grown, retitled) if changed == "ours" else (retitled, grown)
    result = SourceManifest.from_yaml(merge_manifest_files(base, ours, theirs, SID, no_body))
    assert (result.title, result.lines) == ("Kickoff", describe(BASE + b"more\n")["lines"])


def test_the_manifest_driver_finds_the_base_body_as_the_start_of_a_side():
    base_manifest = manifest(BASE).to_yaml()
    ours_body, theirs_body = BASE + b"User: a\n", BASE + b"User: b\n"
    ours = manifest(ours_body, updated_at=T0 + 1).to_yaml()
    theirs = manifest(theirs_body, updated_at=T0 + 2).to_yaml()
    bodies = {manifest(body).sha256: body for body in (ours_body, theirs_body)}  # no base

    def find(found: SourceManifest) -> bytes | None:
        return bodies.get(found.sha256)

    result = SourceManifest.from_yaml(merge_manifest_files(base_manifest, ours, theirs, SID, find))
    assert result.lines == describe(BASE + b"User: a\nUser: b\n")["lines"]


@pytest.mark.parametrize("missing", ["ours", "theirs"])
def test_the_manifest_driver_refuses_when_a_sides_body_cannot_be_found(missing):
    base_manifest = manifest(BASE).to_yaml()
    ours_body, theirs_body = BASE + b"User: a\n", BASE + b"User: b\n"
    ours = manifest(ours_body, updated_at=T0 + 1).to_yaml()
    theirs = manifest(theirs_body, updated_at=T0 + 2).to_yaml()
    found = {manifest(BASE).sha256: BASE}
    kept = theirs_body if missing == "ours" else ours_body
    found[manifest(kept).sha256] = kept

    with pytest.raises(MergeError, match="not in the repository"):
        merge_manifest_files(base_manifest, ours, theirs, SID, lambda m: found.get(m.sha256))


def test_the_manifest_driver_needs_no_body_when_both_sides_hold_the_same_one():
    same = BASE + b"more\n"
    ours = manifest(same, title="A", updated_at=T0 + 1).to_yaml()
    theirs = manifest(same, title="B", updated_at=T0 + 2).to_yaml()
    result = SourceManifest.from_yaml(
        merge_manifest_files(manifest(BASE).to_yaml(), ours, theirs, SID, no_body)
    )
    assert (result.title, result.sha256) == ("B", manifest(same).sha256)


def test_the_manifest_driver_does_not_use_a_body_that_is_not_the_one_described():
    ours_body, theirs_body = BASE + b"User: a\n", BASE + b"User: b\n"
    ours = manifest(ours_body, updated_at=T0 + 1).to_yaml()
    theirs = manifest(theirs_body, updated_at=T0 + 2).to_yaml()

    # Bodies that are not the one named, with digests below and above the named one's
    named = manifest(ours_body).sha256
    others = [BASE + b"User: someone else %d\n" % n for n in range(20)]
    below = next(b for b in others if manifest(b).sha256 < named)
    above = next(b for b in others if manifest(b).sha256 > named)
    for wrong in (below, above):
        found = {manifest(theirs_body).sha256: theirs_body, named: wrong}
        with pytest.raises(MergeError, match="not in the repository"):
            merge_manifest_files(
                manifest(BASE).to_yaml(), ours, theirs, SID, lambda m, f=found: f.get(m.sha256)
            )
