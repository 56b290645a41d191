"""The record merge: field rules, symmetry (hypothesis), invalid sides, and the git driver CLI."""

from __future__ import annotations

from dataclasses import FrozenInstanceError, replace

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.cli import lantern

from lantern_git.model.record import Record
from lantern_git.model.record_file import record_path
from lantern_git.model.record_merge import MergeError, expected_id, merge_records

T0 = 1_764_690_000
MARKERS = ("<<<<<<<", ">>>>>>>", "|||||||")


def base_record(**changes) -> Record:
    record = Record.new(
        kind="preference",
        content="Ana prefers short answers.",
        scope="user:ana",
        priority=50,
        source_refs=("session:1",),
        now=T0,
    )
    return replace(record, **changes).validated() if changes else record


def side(base: Record, **changes) -> str:
    """A side's file text: the base rewritten with minimal line changes, as lantern writes."""
    return replace(base, **changes).validated().rewrite(base.to_markdown())


def merge(base: Record | None, ours: str | None, theirs: str | None):
    path = record_path(base_record().id)
    return merge_records(base.to_markdown() if base else None, ours, theirs, path)


def parsed(text: str) -> Record:
    return Record.from_markdown(text)


# ---------------------------------------------------------------------------- field rules


def test_one_sided_changes_take_that_side_and_report_nothing():
    base = base_record()
    ours = side(base, priority=80, updated_at=T0 + 5)
    theirs = side(base, status="archived", updated_at=T0 + 3)
    result = merge(base, ours, theirs)
    merged = parsed(result.text)
    assert (merged.priority, merged.status, merged.updated_at) == (80, "archived", T0 + 5)
    assert result.conflicts == ()


def test_identical_changes_merge_silently():
    base = base_record()
    ours = side(base, urgency=40, updated_at=T0 + 2)
    theirs = side(base, urgency=40, updated_at=T0 + 2)
    result = merge(base, ours, theirs)
    assert result.text == ours
    assert result.conflicts == ()


def test_two_sided_number_takes_the_later_side():
    base = base_record()
    ours = side(base, priority=90, updated_at=T0 + 10)
    theirs = side(base, priority=10, updated_at=T0 + 20)
    result = merge(base, ours, theirs)
    assert parsed(result.text).priority == 10
    assert result.fields == ("priority",)
    conflict = result.conflicts[0]
    assert (conflict.base, conflict.ours, conflict.theirs, conflict.merged) == (50, 90, 10, 10)


def test_two_sided_tie_takes_the_larger_value():
    base = base_record()
    ours = side(base, priority=90, confidence=0.2, updated_at=T0 + 10)
    theirs = side(base, priority=10, confidence=0.7, updated_at=T0 + 10)
    merged = parsed(merge(base, ours, theirs).text)
    assert (merged.priority, merged.confidence) == (90, 0.7)


@pytest.mark.parametrize(
    ("start", "a", "b", "expected"),
    [
        ("active", "archived", "superseded", "superseded"),
        ("superseded", "active", "archived", "archived"),
        ("archived", "active", "superseded", "superseded"),
    ],
)
def test_status_precedence_superseded_over_archived_over_active(start, a, b, expected):
    base = base_record(status=start)
    # The later side would win under the general rule; status ignores time.
    ours = side(base, status=a, updated_at=T0 + 50)
    theirs = side(base, status=b, updated_at=T0 + 1)
    assert parsed(merge(base, ours, theirs).text).status == expected
    assert parsed(merge(base, theirs, ours).text).status == expected


def test_content_later_wins_then_larger_text():
    base = base_record()
    ours = side(base, content="Ana prefers long answers.", updated_at=T0 + 1)
    theirs = side(base, content="Ana prefers bullet points.", updated_at=T0 + 1)
    assert parsed(merge(base, ours, theirs).text).content == "Ana prefers long answers."
    theirs = side(base, content="Ana prefers bullet points.", updated_at=T0 + 2)
    assert parsed(merge(base, ours, theirs).text).content == "Ana prefers bullet points."


def test_created_at_earlier_updated_at_later():
    base = base_record()
    ours = side(base, created_at=T0 - 100, updated_at=T0 + 3)
    theirs = side(base, created_at=T0 - 50, updated_at=T0 + 9)
    merged = parsed(merge(base, ours, theirs).text)
    assert (merged.created_at, merged.updated_at) == (T0 - 100, T0 + 9)


def test_source_refs_unite_base_order_then_sorted():
    base = base_record(source_refs=("b-ref", "a-ref"))
    ours = side(base, source_refs=("b-ref", "a-ref", "zeta"), updated_at=T0 + 1)
    theirs = side(base, source_refs=("a-ref", "alpha"), updated_at=T0 + 2)
    result = merge(base, ours, theirs)
    assert parsed(result.text).source_refs == ("b-ref", "a-ref", "alpha", "zeta")
    assert [c.field for c in result.conflicts] == ["source_refs"]


def test_optional_field_cleared_on_one_side_and_changed_on_the_other():
    base = base_record(expires_at=T0 + 1000)
    ours = side(base, expires_at=None, updated_at=T0 + 5)
    theirs = side(base, expires_at=T0 + 2000, updated_at=T0 + 4)
    assert parsed(merge(base, ours, theirs).text).expires_at is None
    theirs = side(base, expires_at=T0 + 2000, updated_at=T0 + 5)
    assert parsed(merge(base, ours, theirs).text).expires_at == T0 + 2000


def test_unknown_keys_merge_like_fields_and_keep_a_stable_order():
    base = base_record(extra={"reviewed": "no"})
    ours = side(base, extra={"reviewed": "yes", "zz-tag": 1}, updated_at=T0 + 1)
    theirs = side(base, extra={"reviewed": "later", "aa-note": "hi"}, updated_at=T0 + 2)
    result = merge(base, ours, theirs)
    merged = parsed(result.text)
    assert merged.extra == {"reviewed": "later", "aa-note": "hi", "zz-tag": 1}
    assert list(merged.extra) == ["reviewed", "aa-note", "zz-tag"]
    assert [c.field for c in result.conflicts] == ["reviewed"]
    assert merge(base, theirs, ours).text == result.text


def test_added_on_both_sides_merges_against_an_empty_base():
    record = base_record()
    ours = replace(record, priority=70, created_at=T0 + 5, updated_at=T0 + 5).to_markdown()
    theirs = replace(record, priority=30, source_refs=("x",), updated_at=T0 + 9).to_markdown()
    for empty_base in (None, ""):
        result = merge_records(empty_base, ours, theirs, record_path(record.id))
        merged = parsed(result.text)
        assert (merged.priority, merged.created_at, merged.updated_at) == (30, T0, T0 + 9)
        assert merged.source_refs == ("session:1", "x")
        assert {c.field for c in result.conflicts} == {"priority", "created_at", "source_refs"}


def test_a_two_sided_merge_rewrites_only_the_lines_that_changed():
    base = base_record()
    ours = side(base, priority=80, updated_at=T0 + 5)
    theirs = side(base, urgency=30, updated_at=T0 + 7)
    text = merge(base, ours, theirs).text
    old_lines = base.to_markdown().splitlines()
    new_lines = text.splitlines()
    assert len(old_lines) == len(new_lines)
    changed = [n for o, n in zip(old_lines, new_lines) if o != n]
    assert changed == ["priority: 80", "urgency: 30", f"updated_at: {T0 + 7}"]


def test_a_side_keeps_its_own_formatting_when_the_merge_equals_it():
    base = base_record()
    # Both sides made the same change, one with a hand-written comment: the merge equals
    # both records, and the texts decide by code point, the same on every host.
    theirs = side(base, priority=60, updated_at=T0 + 4)
    ours = theirs.replace("priority: 60", "priority: 60  # bumped by hand")
    result = merge(base, ours, theirs)
    assert result.text == max(ours, theirs)


def test_a_two_sided_merge_keeps_the_base_file_s_own_formatting():
    base = base_record()
    # A comment written by hand into the base: neither side's text equals the merge, so the
    # base's text is rewritten line by line and the comment stays.
    base_text = base.to_markdown().replace("priority: 50\n", "priority: 50  # set by hand\n")
    ours = replace(base, urgency=30, updated_at=T0 + 5).validated().rewrite(base_text)
    theirs = replace(base, confidence=0.5, updated_at=T0 + 7).validated().rewrite(base_text)
    text = merge_records(base_text, ours, theirs, record_path(base.id)).text
    assert text == base_text.replace("urgency: 0\n", "urgency: 30\n").replace(
        "confidence: 1.0\n", "confidence: 0.5\n"
    ).replace(f"updated_at: {T0}\n", f"updated_at: {T0 + 7}\n")


def test_a_ref_both_sides_removed_is_gone_from_the_union():
    base = base_record(source_refs=("gone", "kept"))
    ours = side(base, source_refs=("kept", "ours"), updated_at=T0 + 1)
    theirs = side(base, source_refs=("kept", "theirs"), updated_at=T0 + 2)
    result = merge(base, ours, theirs)
    assert parsed(result.text).source_refs == ("kept", "ours", "theirs")


def test_the_united_source_refs_keep_the_first_200():
    base = base_record(source_refs=("base-ref",))
    ours_refs = [f"a-{n:03}" for n in range(120)]
    theirs_refs = [f"b-{n:03}" for n in range(120)]
    ours = side(base, source_refs=("base-ref", *ours_refs), updated_at=T0 + 1)
    theirs = side(base, source_refs=("base-ref", *theirs_refs), updated_at=T0 + 2)
    merged = parsed(merge(base, ours, theirs).text)
    # The base's ref first, then the others sorted, cut at 200 (docs/sync.md).
    assert merged.source_refs == ("base-ref", *ours_refs, *theirs_refs[:79])


def test_the_united_entities_keep_the_first_100():
    base = base_record(entities=("person:ana",))
    ours_keys = [f"person:a{n:02}" for n in range(60)]
    theirs_keys = [f"project:b{n:02}" for n in range(60)]
    ours = side(base, entities=("person:ana", *ours_keys), updated_at=T0 + 1)
    theirs = side(base, entities=("person:ana", *theirs_keys), updated_at=T0 + 2)
    result = merge(base, ours, theirs)
    assert parsed(result.text).entities == ("person:ana", *ours_keys, *theirs_keys[:39])
    assert result.fields == ("entities",)


@pytest.mark.parametrize(
    ("ours", "theirs", "expected"),
    [
        # absent < numbers < text, whichever side holds which
        (None, -1, -1),
        (-1, None, -1),
        (5, "a", "a"),
        ("a", 5, "a"),
        (0, "a", "a"),
        (0.5, "a", "a"),
        (2.5, 10, 10),
    ],
)
def test_a_tie_on_an_unknown_key_ranks_absent_then_numbers_then_text(ours, theirs, expected):
    base = base_record(extra={"x": 1})
    sides = [
        side(base, extra={} if value is None else {"x": value}, updated_at=T0 + 4)
        for value in (ours, theirs)
    ]
    result = merge(base, *sides)
    assert parsed(result.text).extra.get("x") == expected
    assert result.fields == ("x",)


def test_a_map_written_in_another_key_order_is_the_same_value():
    base = base_record(extra={"x": {"a": 0}})
    ours = side(base, extra={"x": {"a": 1, "b": 2}}, priority=60, updated_at=T0 + 4)
    theirs = side(base, extra={"x": {"b": 2, "a": 1}}, urgency=30, updated_at=T0 + 4)
    result = merge(base, ours, theirs)
    assert result.conflicts == ()
    assert parsed(result.text).extra == {"x": {"a": 1, "b": 2}}


@pytest.mark.parametrize(
    ("ours", "theirs", "expected"),
    [
        # text < anything else (a list, a map), whichever side holds which
        (["a"], "z", ["a"]),
        ("z", {"a": 1}, {"a": 1}),
        # lists by their YAML text, by code point ("é" after "z")
        (["b"], ["a", "z"], ["b"]),
        (["z"], ["é"], ["é"]),
        # ... each on one line, however long: wrapped, the first would break at its space and
        # sort before the second, whose two spaces YAML does not break
        (["a" * 90 + " b"], ["a" * 90 + "  c"], ["a" * 90 + " b"]),
        (["a" * 90 + "  c"], ["a" * 90 + " b"], ["a" * 90 + " b"]),
    ],
)
def test_a_tie_between_lists_or_maps_ranks_them_above_text(ours, theirs, expected):
    base = base_record(extra={"x": 1})
    sides = [side(base, extra={"x": value}, updated_at=T0 + 4) for value in (ours, theirs)]
    result = merge(base, *sides)
    assert parsed(result.text).extra["x"] == expected
    assert result.fields == ("x",)


def test_a_tie_between_nan_and_a_number_is_decided_the_same_either_way():
    base = base_record(extra={"x": 1})
    nan = side(base, extra={"x": float("nan")}, updated_at=T0 + 4)
    five = side(base, extra={"x": 5}, updated_at=T0 + 4)
    assert merge(base, nan, five).text == merge(base, five, nan).text


def test_a_tie_with_an_integer_too_large_for_a_float_orders_it_as_a_number():
    # 10**400 has no float (math.isnan refuses it); it still ranks as a number: above a
    # smaller one, below text, either way round.
    huge = 10**400
    base = base_record(extra={"x": 1})
    for other, expected in ((5, huge), ("a", "a")):
        sides = [side(base, extra={"x": value}, updated_at=T0 + 4) for value in (huge, other)]
        assert parsed(merge(base, *sides).text).extra["x"] == expected
        assert parsed(merge(base, *reversed(sides)).text).extra["x"] == expected


def test_a_merge_and_its_conflicts_are_values_that_cannot_be_changed():
    base = base_record()
    ours = side(base, priority=90, updated_at=T0 + 1)
    theirs = side(base, priority=10, updated_at=T0 + 2)
    result = merge(base, ours, theirs)
    with pytest.raises(FrozenInstanceError):
        result.conflicts[0].merged = 90  # type: ignore[misc]
    with pytest.raises(FrozenInstanceError):
        result.text = ours  # type: ignore[misc]


def test_a_conflict_over_a_map_reads_as_json_maps():
    base = base_record(extra={"x": {"a": 0}})
    ours = side(base, extra={"x": {"a": 1}}, updated_at=T0 + 1)
    theirs = side(base, extra={"x": {"a": 2}}, updated_at=T0 + 2)
    (conflict,) = merge(base, ours, theirs).conflicts
    assert conflict.to_dict() == {
        "field": "x",
        "base": {"a": 0},
        "ours": {"a": 1},
        "theirs": {"a": 2},
        "merged": {"a": 2},
    }


def test_a_conflict_reads_as_json_with_each_side_named():
    record = base_record()
    ours = replace(record, priority=70, updated_at=T0 + 5).to_markdown()
    theirs = replace(record, priority=30, source_refs=("x",), updated_at=T0 + 9).to_markdown()
    result = merge_records(None, ours, theirs, record_path(record.id))
    assert [c.to_dict("local", "remote") for c in result.conflicts] == [
        # Against no base, what it held is null; a list of refs is a JSON list.
        {"field": "priority", "base": None, "local": 70, "remote": 30, "merged": 30},
        {
            "field": "source_refs",
            "base": None,
            "local": ["session:1"],
            "remote": ["x"],
            "merged": ["session:1", "x"],
        },
    ]


# ---------------------------------------------------------------------------- invalid sides


def test_an_invalid_side_is_replaced_by_the_valid_one():
    base = base_record()
    valid = side(base, priority=70, updated_at=T0 + 1)
    broken = "---\nid: [unclosed\n---\nbody\n"
    for ours, theirs, invalid in ((broken, valid, "ours"), (valid, broken, "theirs")):
        result = merge(base, ours, theirs)
        assert result.text == valid
        assert result.invalid_side == invalid


def test_a_side_whose_id_does_not_match_the_path_is_invalid():
    base = base_record()
    other = Record.new(kind="fact", content="something else", now=T0)
    result = merge(base, other.to_markdown(), side(base, priority=1, updated_at=T0 + 1))
    assert result.invalid_side == "ours"
    assert parsed(result.text).priority == 1


def test_sides_that_hold_different_ids_do_not_merge_without_a_path():
    one = base_record().to_markdown()
    other = Record.new(kind="fact", content="something else", now=T0).to_markdown()
    for ours, theirs in ((one, other), (other, one)):
        with pytest.raises(MergeError, match="the two sides hold different record ids"):
            merge_records(None, ours, theirs)
    # The same id on both sides merges, path or no path.
    assert merge_records(None, one, one).text == one


def test_no_valid_side_raises():
    with pytest.raises(MergeError, match="neither side is a valid record") as caught:
        merge(base_record(), "garbage\n", b"\xff\xfe not utf-8")
    # A store failure (exit 1), not invalid input: the files are as git left them.
    assert (caught.value.code, caught.value.exit_code) == ("merge_failed", 1)
    # The file is named first; without a path, the message starts with what happened.
    assert caught.value.message.startswith(f"{record_path(base_record().id)}: cannot merge: ")
    with pytest.raises(MergeError) as caught:
        merge_records(None, "garbage\n", "junk\n")
    assert caught.value.message.startswith("cannot merge: neither side is a valid record")


@pytest.mark.parametrize("above", [False, True])
def test_a_base_of_another_record_counts_as_empty_without_a_path(above):
    record = base_record()
    # A foreign record whose id sorts above (or below) the merged one's.
    foreign = next(
        other
        for n in range(100)
        if (
            (other := Record.new(kind="fact", content=f"another {n}", priority=90, now=T0)).id
            > record.id
        )
        == above
    )
    ours = side(record, priority=90, updated_at=T0 + 1)
    theirs = side(record, urgency=20, updated_at=T0 + 1)
    result = merge_records(foreign.to_markdown(), ours, theirs)
    merged = parsed(result.text)
    # Against no base, priority is two-sided (the larger on a tie); the foreign base's 90
    # would have made it one-sided, theirs.
    assert (merged.id, merged.priority, merged.urgency) == (record.id, 90, 20)
    assert set(result.fields) == {"priority", "urgency"}


def test_an_invalid_base_counts_as_empty():
    base_text = "---\nnot: [valid\n"
    record = base_record()
    ours = side(record, priority=10, updated_at=T0 + 1)
    theirs = side(record, urgency=10, updated_at=T0 + 1)
    result = merge_records(base_text, ours, theirs, record_path(record.id))
    merged = parsed(result.text)
    # Against an empty base both sides "changed" priority and urgency: the larger value wins.
    assert (merged.priority, merged.urgency) == (50, 10)
    assert {c.field for c in result.conflicts} == {"priority", "urgency"}


def test_expected_id_only_for_record_paths():
    record_id = base_record().id
    assert expected_id(record_path(record_id)) == record_id
    assert expected_id("memory/README.md") is None
    assert expected_id(f"memory/zz/{record_id}.md") is None
    assert expected_id(f"notes/{record_id[:2]}/{record_id}.md") is None
    assert expected_id(None) is None


# ---------------------------------------------------------------------------- symmetry


def _ids():
    return st.text(alphabet="0123456789abcdef", min_size=16, max_size=16)


@st.composite
def edits(draw, base: Record) -> str:
    """One host's version of ``base``: a random handful of field changes, as file text."""
    changes: dict = {}
    if draw(st.booleans()):
        changes["priority"] = draw(st.integers(0, 100))
    if draw(st.booleans()):
        changes["urgency"] = draw(st.sampled_from([0, 10, 99]))
    if draw(st.booleans()):
        changes["confidence"] = draw(st.sampled_from([0.0, 0.25, 0.5, 1.0]))
    if draw(st.booleans()):
        changes["status"] = draw(st.sampled_from(["active", "archived", "superseded"]))
    if draw(st.booleans()):
        changes["expires_at"] = draw(st.one_of(st.none(), st.integers(T0, T0 + 99)))
    if draw(st.booleans()):
        changes["supersedes_id"] = draw(st.one_of(st.none(), _ids().filter(lambda i: i != base.id)))
    if draw(st.booleans()):
        pool = ["s:1", "s:2", "chunk:9", "commit:abc", "z"]
        changes["source_refs"] = tuple(draw(st.lists(st.sampled_from(pool), unique=True)))
    if draw(st.booleans()):
        changes["content"] = draw(
            st.sampled_from(["one", "two words", "Ana prefers short answers."])
        )
    if draw(st.booleans()):
        changes["scope"] = draw(st.sampled_from(["global", "user:ana", "project:x"]))
    if draw(st.booleans()):
        changes["kind"] = draw(st.sampled_from(["fact", "preference", "goal"]))
    if draw(st.booleans()):
        changes["created_at"] = draw(st.integers(T0 - 5, T0))
    if draw(st.booleans()):
        extra = dict(base.extra)
        for key in draw(st.lists(st.sampled_from(["note", "tag", "x-order"]), unique=True)):
            value = draw(st.one_of(st.none(), st.integers(0, 3), st.sampled_from(["a", "b"])))
            if value is None:
                extra.pop(key, None)
            else:
                extra[key] = value
        changes["extra"] = extra
    changes["updated_at"] = base.updated_at + draw(st.integers(0, 3))
    record = replace(base, **changes).validated()
    if draw(st.booleans()):
        return record.to_markdown()
    return record.rewrite(base.to_markdown())


@st.composite
def scenarios(draw):
    base = base_record(
        extra=draw(st.sampled_from([{}, {"note": 1}, {"tag": "a", "note": "b"}])),
        expires_at=draw(st.sampled_from([None, T0 + 50])),
    )
    base_text = draw(st.sampled_from([base.to_markdown(), None, "", "---\nbroken: [\n"]))
    return base, base_text, draw(edits(base)), draw(edits(base))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scenarios())
def test_merge_is_symmetric_valid_and_marker_free(scenario):
    base, base_text, x, y = scenario
    path = record_path(base.id)
    one = merge_records(base_text, x, y, path)
    other = merge_records(base_text, y, x, path)
    assert one.text == other.text
    assert [(c.field, c.ours, c.theirs, c.merged) for c in one.conflicts] == [
        (c.field, c.theirs, c.ours, c.merged) for c in other.conflicts
    ]
    merged = Record.from_markdown(one.text, path)
    assert merged.id == base.id
    assert not any(marker in one.text for marker in MARKERS)
    assert merged.updated_at == max(parsed(x).updated_at, parsed(y).updated_at)


@settings(max_examples=150, deadline=None)
@given(scenarios())
def test_merge_with_an_unchanged_side_is_the_other_side(scenario):
    base, _, x, _ = scenario
    path = record_path(base.id)
    base_text = base.to_markdown()
    assert merge_records(base_text, base_text, x, path).text == x
    assert merge_records(base_text, x, base_text, path).text == x
    assert merge_records(base_text, x, x, path).text == x


# ---------------------------------------------------------------------------- the git driver


def _driver(tmp_path, base: str, ours: str, theirs: str, path: str):
    files = []
    for name, text in (("O", base), ("A", ours), ("B", theirs)):
        target = tmp_path / name
        target.write_text(text)
        files.append(str(target))
    result = lantern("merge-file", *files, path, cwd=tmp_path)
    return result, (tmp_path / "A").read_text()


def test_driver_writes_the_merge_into_ours(tmp_path):
    base = base_record()
    ours = side(base, priority=90, updated_at=T0 + 1)
    theirs = side(base, priority=20, updated_at=T0 + 2)
    result, written = _driver(tmp_path, base.to_markdown(), ours, theirs, record_path(base.id))
    assert result.returncode == 0, result.stderr
    assert written == merge(base, ours, theirs).text
    assert parsed(written).priority == 20


def test_driver_reports_a_conflict_without_markers_when_no_side_is_valid(tmp_path):
    base = base_record()
    result, written = _driver(
        tmp_path, base.to_markdown(), "junk A\n", "junk B\n", record_path(base.id)
    )
    assert result.returncode == 1
    assert "neither side is a valid record" in result.stderr
    assert written == "junk A\n"


def test_driver_line_merges_files_that_are_not_records(tmp_path):
    result, written = _driver(tmp_path, "a\nb\nc\n", "A\nb\nc\n", "a\nb\nC\n", "memory/README.md")
    assert result.returncode == 0
    assert written == "A\nb\nC\n"
    result, written = _driver(tmp_path, "a\n", "x\n", "y\n", "memory/README.md")
    assert result.returncode == 1
    assert "<<<<<<<" in written
