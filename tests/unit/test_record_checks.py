"""The record checks asked directly (lantern_git.model.record): what an id prefix, each field, a
front matter and a rewrite may be, each at its bounds, with the limits docs/format.md states.

The surfaces' tests (test_bad_input.py, test_hostile_input.py) prove that a refusal reaches the
caller with its exit code and writes nothing; these hold each rule itself, where a check moved by
one or a lost clause would otherwise pass (the mutation run, benchmarks/mutation.py's
``record_checks``, found those).
"""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from lantern_git.errors import InvalidInput, ValidationError
from lantern_git.model.record import (
    Record,
    check_id_prefix,
    has_undecodable,
    one_line,
    validate_confidence,
    validate_content,
    validate_entities,
    validate_priority,
    validate_scope,
    validate_source_refs,
    validate_timestamp,
)

# docs/format.md's limits, written out here rather than read from the code they check.
MAX_SOURCE_REFS = 200
MAX_SOURCE_REF_CHARS = 1000
MAX_ENTITIES = 100
MAX_SCOPE_CHARS = 200
MAX_CONTENT_BYTES = 65_536
MAX_TIMESTAMP = 9_999_999_999

RECORD_ID = "0123456789abcdef"
HEADER = f"---\nid: '{RECORD_ID}'\nkind: fact\ncreated_at: 1\nupdated_at: 1\n"  # lines 1-5
# An id of letters needs no quotes: a file of only such lines is read without YAML.
PLAIN_HEADER = HEADER.replace(f"'{RECORD_ID}'", "abcdefabcdefabcd")


def refused(call: Any, *args: Any) -> ValidationError:
    with pytest.raises(ValidationError) as caught:
        call(*args)
    return caught.value


# ---------------------------------------------------------------------------- ids and summaries


def test_an_id_prefix_is_4_to_16_hex_digits_trimmed_and_lower_cased() -> None:
    assert check_id_prefix(" ABCD ") == "abcd"
    assert check_id_prefix("0123456789ABCDEF") == RECORD_ID
    for bad, says in [
        ("0123456789abcdef0", "is not a record id"),  # 17 digits
        ("abc", "too short"),
        ("abcg", "is not a record id"),
        ("", "is not a record id"),
        (5, "expected a string"),
    ]:
        with pytest.raises(InvalidInput, match=says) as caught:
            check_id_prefix(bad)
        assert caught.value.code == "invalid_id"


def test_one_line_collapses_whitespace_and_cuts_at_the_width_with_an_ellipsis() -> None:
    assert one_line("Ana  prefers\n short\tanswers.") == "Ana prefers short answers."
    assert one_line("x" * 60) == "x" * 60
    assert one_line("x" * 61) == "x" * 57 + "..."
    assert one_line("abcdefghij", width=10) == "abcdefghij"
    assert one_line("abcdefghijk", width=10) == "abcdefg..."


# ---------------------------------------------------------------------------- each field


def test_source_refs_are_at_most_200_each_one_line_of_at_most_1000_characters() -> None:
    assert validate_source_refs(None) == ()
    most = [f"ref-{n}" for n in range(MAX_SOURCE_REFS)]
    assert validate_source_refs(most) == tuple(most)
    assert "more than 200" in refused(validate_source_refs, [*most, "one-more"]).reason
    longest = "r" * MAX_SOURCE_REF_CHARS
    assert validate_source_refs([longest]) == (longest,)
    for bad in (["r" * (MAX_SOURCE_REF_CHARS + 1)], ["two\nlines"], ["nul\0"]):
        assert "single lines of at most 1000" in refused(validate_source_refs, bad).reason
    for bad in ([""], ["  "], [3]):
        assert "non-empty strings" in refused(validate_source_refs, bad).reason
    assert "must be a list" in refused(validate_source_refs, "session:1").reason


def test_a_record_names_at_most_100_entities_lower_cased_each_once() -> None:
    most = [f"person:p{n}" for n in range(MAX_ENTITIES)]
    assert validate_entities(most) == tuple(most)
    assert "more than 100" in refused(validate_entities, [*most, "person:one-more"]).reason
    assert validate_entities(["Person:Ana", "person:ana", "topic:Lisbon"]) == (
        "person:ana",
        "topic:lisbon",
    )
    assert validate_entities(None) == ()


def test_a_scope_is_at_most_200_characters() -> None:
    longest = "user:" + "a" * (MAX_SCOPE_CHARS - len("user:"))
    assert validate_scope(longest) == longest
    assert "longer than 200" in refused(validate_scope, longest + "a").reason


def test_numbers_are_checked_at_both_ends_and_a_bool_is_no_number() -> None:
    assert [validate_priority(n) for n in (0, 100)] == [0, 100]
    for bad in (-1, 101):
        assert "between 0 and 100" in refused(validate_priority, bad).reason
    assert "must be an integer, got True" in refused(validate_priority, True).reason
    assert validate_timestamp("updated_at", MAX_TIMESTAMP) == MAX_TIMESTAMP
    assert "between 0 and 9999999999" in refused(validate_timestamp, "x", MAX_TIMESTAMP + 1).reason
    assert [validate_confidence(c) for c in (0, 1, 0.5)] == [0.0, 1.0, 0.5]
    assert type(validate_confidence(1)) is float
    for bad in (-0.01, 1.01, float("nan")):
        assert "between 0.0 and 1.0" in refused(validate_confidence, bad).reason
    for bad in (True, "0.5", None):
        assert "must be a number" in refused(validate_confidence, bad).reason


def test_a_refused_value_is_described_and_cut_at_40_characters() -> None:
    assert refused(validate_priority, None).reason == "priority: must be an integer, got null"
    # repr("p" * 50) is 52 characters: its first 37, then "..."
    assert refused(validate_priority, "p" * 50).reason == (
        "priority: must be an integer, got '" + "p" * 36 + "..."
    )
    assert refused(validate_priority, [1]).reason == "priority: must be an integer, got list [1]"
    shown_whole = "p" * 38  # its repr is 40 characters
    assert refused(validate_priority, shown_whole).reason.endswith(f"got {shown_whole!r}")
    cut = "p" * 39  # 41
    assert refused(validate_priority, cut).reason.endswith("got '" + "p" * 36 + "...")


def test_text_holding_undecodable_bytes_is_told_apart() -> None:
    assert has_undecodable("caf\udce9") is True
    assert has_undecodable("café") is False


def test_a_bad_entity_key_is_refused_as_the_records_entities() -> None:
    err = refused(validate_entities, ["person:ana", "no type"])
    assert err.field == "entities" and err.reason.startswith("entities: ")


def test_content_is_trimmed_non_empty_and_at_most_65536_bytes() -> None:
    assert validate_content("  Ana prefers short answers.\n") == "Ana prefers short answers."
    largest = "é" * (MAX_CONTENT_BYTES // 2)  # two bytes each in UTF-8
    assert validate_content(largest) == largest
    assert "larger than the maximum" in refused(validate_content, largest + "a").reason
    assert "must not be empty" in refused(validate_content, " \n ").reason
    assert "NUL" in refused(validate_content, "a\0b").reason
    assert "must be text" in refused(validate_content, 5).reason


# ---------------------------------------------------------------------------- the record


def test_validated_is_the_record_itself_when_every_field_is_already_canonical() -> None:
    record = Record.new(kind="fact", content="Ana lives in Lisbon.", source_refs=["a"], now=7)
    assert record.validated() is record
    assert record.evolve(entities=("person:ana",)).validated().entities == ("person:ana",)


def test_validated_gives_each_field_its_canonical_form() -> None:
    given = Record(
        id=RECORD_ID,
        kind="fact",
        content="  Ana lives in Lisbon.\n",
        confidence=1,
        source_refs=["session:1"],  # type: ignore[arg-type]
        entities=("Person:Ana", "person:ana"),
        created_at=1,
        updated_at=1,
    ).validated()
    assert type(given.confidence) is float and given.confidence == 1.0
    assert given.source_refs == ("session:1",)
    assert given.entities == ("person:ana",)
    assert given.content == "Ana lives in Lisbon."
    # Each alone is enough for the canonical form, the others being canonical already.
    canonical = Record(id=RECORD_ID, kind="fact", content="x", created_at=1, updated_at=1)
    assert type(canonical.evolve(confidence=1).confidence) is float
    assert canonical.evolve(entities=("Person:Ana",)).entities == ("person:ana",)
    assert canonical.evolve(source_refs=["a"]).source_refs == ("a",)


def test_an_added_record_with_an_int_confidence_is_written_and_shown_as_a_float() -> None:
    record = Record.new(kind="fact", content="Ana lives in Lisbon.", confidence=1, now=7)
    assert "\nconfidence: 1.0\n" in record.to_markdown()
    shown = record.to_dict()["confidence"]
    assert type(shown) is float and shown == 1.0


def test_differences_name_each_field_given_that_the_record_lacks() -> None:
    record = Record.new(kind="fact", content="Ana lives in Lisbon.", source_refs=["a"], now=7)
    assert record.differences(
        status="archived", urgency=5, priority=record.priority, source_refs=["a", "b"]
    ) == [("status", "archived", "active"), ("urgency", 5, 0), ("source_refs", ("b",), ("a",))]
    assert record.differences(source_refs=["a"], status="active") == []
    assert record.differences(priority=10) == [("priority", 10, 50)]


def test_a_record_is_expired_from_its_expires_at_second_on() -> None:
    record = Record.new(kind="fact", content="The standup moved.", expires_at=100, now=7)
    assert [record.is_expired(now) for now in (99, 100, 101)] == [False, True, True]
    assert Record.new(kind="fact", content="Forever.", now=7).is_expired(10**10) is False


# ---------------------------------------------------------------------------- the file


def test_a_key_yaml_reads_as_no_string_is_refused_naming_its_line() -> None:
    for key_line, says in [
        ("1: x", "got 1"),
        ("true: x", "got true"),
        ("~: x", "got ~"),
        ("2024-01-01: x", "got 2024-01-01"),
        ("<<: {status: archived}", "got <<"),
        ("? [1, 2]\n: x", "got a list"),
    ]:
        text = HEADER + "priority: 5\nurgency: 1\nstatus: active\n" + key_line + "\n---\nbody\n"
        err = refused(Record.from_markdown, text)
        assert "front matter keys must be strings" in str(err) and says in str(err)
        assert err.line == 9  # the header's five lines, then three more


def test_a_quoted_value_is_written_on_one_line_however_long() -> None:
    ref = "note: " + "word " * 40  # a colon and a space: YAML needs it quoted
    record = Record.new(kind="fact", content="x", source_refs=[ref.strip()], now=7)
    record = record.evolve(extra={"note": "said: " + ("more " * 40).strip()})
    text = record.to_markdown()
    assert f'- "{ref.strip()}"' in text.split("\n")
    assert any(line.startswith("note: ") and line.endswith("more'") for line in text.split("\n"))
    assert Record.from_markdown(text) == record


def test_a_file_ending_at_its_closing_fence_has_an_empty_body() -> None:
    # Read by YAML (the quoted id) and by the plain reader.
    for header in (HEADER, PLAIN_HEADER):
        err = refused(Record.from_markdown, header + "---")
        assert err.field == "content" and "must not be empty" in str(err)
        assert err.line == 7  # the line after the fence
        assert Record.from_markdown(header + "---\nbody").content == "body"


def test_a_null_optional_field_leaves_the_fields_after_it_read() -> None:
    text = HEADER + "expires_at:\nsupersedes_id: null\nsource_refs:\n- session:1\n---\nbody\n"
    record = Record.from_markdown(text)
    assert (record.expires_at, record.supersedes_id) == (None, None)
    assert record.source_refs == ("session:1",)


def test_a_rewrite_keeps_the_comment_lines_before_the_first_key() -> None:
    old = "---\n# kept by hand\n" + HEADER.removeprefix("---\n") + "priority: 5\n---\nbody\n"
    record = Record.from_markdown(old)
    assert record.evolve(priority=7).rewrite(old) == old.replace("priority: 5", "priority: 7")


def test_an_alias_in_front_matter_is_refused_and_a_lone_anchor_is_read() -> None:
    text = HEADER + "priority: 5\nurgency: 1\nnote: &shared x\nother: *shared\n---\nbody\n"
    err = refused(Record.from_markdown, text)
    assert "aliases are not allowed" in str(err)
    assert err.line == 8  # the anchored value's line: the node the alias repeats
    assert Record.from_markdown(HEADER + "note: &shared x\n---\nbody\n").extra == {"note": "x"}


def test_content_that_is_no_valid_unicode_is_refused() -> None:
    assert "not valid Unicode" in refused(validate_content, "caf\udce9").reason


def test_a_new_record_is_stamped_with_the_time_given() -> None:
    record = Record.new(kind="fact", content="Ana lives in Lisbon.", now=7)
    assert (record.created_at, record.updated_at) == (7, 7)


def test_validated_is_the_record_itself_when_it_names_entities_already_canonical() -> None:
    record = Record.new(kind="fact", content="Ana lives in Lisbon.", now=7)
    named = record.evolve(entities=("person:ana",))
    assert named.validated() is named
    assert record.evolve(entities=("person:ana", "person:ana")).entities == ("person:ana",)
    assert record.evolve(entities=["person:ana"]).entities == ("person:ana",)


def test_a_record_object_is_read_with_its_unknown_or_missing_fields_named() -> None:
    given = {"id": RECORD_ID, "kind": "fact", "content": "Ana lives in Lisbon.", "created_at": 5}
    record = Record.from_dict(
        {**given, "expires_at": None, "source_refs": ["a"], "entities": ["Person:Ana"]}
    )
    assert (record.created_at, record.updated_at, record.expires_at) == (5, 5, None)
    assert (record.source_refs, record.entities) == (("a",), ("person:ana",))
    err = refused(Record.from_dict, {**given, "colour": "red", "size": 3})
    assert (str(err), err.field, err.code) == ("unknown field 'colour'", "colour", "unknown_field")
    for required in ("id", "kind", "content"):
        without = {k: v for k, v in given.items() if k != required}
        err = refused(Record.from_dict, without)
        assert (str(err), err.field) == (f"{required}: is required", required)
    assert "must be an object, got list" in str(refused(Record.from_dict, [given]))


def test_quoted_values_keep_their_characters_and_extra_mappings_their_order() -> None:
    record = Record.new(kind="fact", content="x", source_refs=["café: Lisboa"], now=7)
    record = record.evolve(extra={"meta": {"zeta": 1, "alpha": 2}})
    lines = record.to_markdown().split("\n")
    assert '- "café: Lisboa"' in lines
    assert lines.index("  zeta: 1") < lines.index("  alpha: 2")


def test_a_file_that_does_not_open_with_a_fence_is_refused_as_such() -> None:
    for text in ("", "Ana", "id: x\n---\nbody\n"):
        assert "must start with a '---'" in str(refused(Record.from_markdown, text))
    assert "no closing '---' fence" in str(refused(Record.from_markdown, "---"))
    crlf = HEADER.replace("\n", "\r\n") + "---\r\nbody\r\n"
    assert Record.from_markdown(crlf).content == "body"


def test_an_unquoted_id_of_16_digits_is_refused_with_the_quotes_it_needs() -> None:
    text = HEADER.replace(f"'{RECORD_ID}'", "1234567890123456") + "---\nbody\n"
    err = refused(Record.from_markdown, text)
    assert err.field == "id" and err.line == 2
    assert "YAML read 1234567890123456 as a number, so write id: '1234567890123456'" in str(err)
    # With a leading zero YAML reads no number: the id is the string it looks like.
    leading_zero = HEADER.replace(f"'{RECORD_ID}'", "0123456789012345") + "---\nbody\n"
    assert Record.from_markdown(leading_zero).id == "0123456789012345"


def test_a_rewrite_keeps_the_notes_after_a_field_it_writes_anew() -> None:
    old = HEADER + "priority: 5\n# why 5: see the standup\n\nurgency: 1\n---\nbody\n"
    record = Record.from_markdown(old)
    assert record.evolve(priority=7).rewrite(old) == old.replace("priority: 5", "priority: 7")
    with_refs = HEADER + "source_refs:\n- a\n# the call\n---\nbody\n"
    changed = Record.from_markdown(with_refs).evolve(source_refs=("a", "b"))
    assert changed.rewrite(with_refs) == with_refs.replace("- a\n", "- a\n- b\n")


def test_a_rewrite_leaves_nested_keys_of_an_extra_field_to_that_field() -> None:
    old = HEADER + "priority: 5\nmeta:\n  priority: 3\n# hand note\n---\nbody\n"
    record = Record.from_markdown(old)
    assert record.extra == {"meta": {"priority": 3}}
    assert record.evolve(priority=7).rewrite(old) == old.replace("priority: 5", "priority: 7")


def test_a_record_cannot_be_changed_in_place() -> None:
    record = Record.new(kind="fact", content="Ana lives in Lisbon.", now=7)
    with pytest.raises(dataclasses.FrozenInstanceError):
        record.priority = 90  # type: ignore[misc]
    assert record.evolve(priority=90).priority == 90 and record.priority == 50


def test_records_differing_only_in_a_hand_added_key_are_not_equal() -> None:
    record = Record.new(kind="fact", content="Ana lives in Lisbon.", now=7)
    assert record.evolve(extra={"reviewed_by": "raphael"}) != record


def test_a_file_gets_the_documented_defaults_and_names_each_missing_required_key() -> None:
    record = Record.from_markdown(HEADER + "---\nbody\n")
    assert (record.scope, record.status, record.priority, record.urgency) == (
        "global",
        "active",
        50,
        0,
    )
    assert record.confidence == 1.0 and record.expires_at is None
    for key in ("kind", "created_at", "updated_at"):
        text = "".join(line for line in HEADER.splitlines(True) if not line.startswith(key))
        err = refused(Record.from_markdown, text + "---\nbody\n")
        assert (err.field, err.line, err.reason) == (key, 2, f"{key}: is required")


def test_invalid_yaml_is_named_by_its_problem_and_line() -> None:
    err = refused(Record.from_markdown, HEADER + "note: [unclosed\n---\nbody\n")
    assert str(err).startswith("line 7: invalid YAML: ")
    assert "<unicode string>" not in str(err)  # the problem, not YAML's whole report


def test_a_rewrite_keeps_the_body_as_written_when_the_content_is_the_same() -> None:
    old = HEADER + "priority: 5\n---\n\nbody\n\n\n"
    record = Record.from_markdown(old)
    assert record.content == "body"
    assert record.evolve(priority=7).rewrite(old) == old.replace("priority: 5", "priority: 7")


def test_a_nested_key_that_is_a_list_is_refused_as_invalid_yaml() -> None:
    err = refused(Record.from_markdown, HEADER + "meta:\n  ? [1, 2]\n  : x\n---\nbody\n")
    assert "invalid YAML: a key must be a plain value, got list" in str(err)


def test_a_bare_date_is_read_as_yaml_reads_it_and_written_quoted() -> None:
    # YAML reads 2024-01-01 unquoted as a date, no string: the plain reader (which reads a
    # file whose every line is in lantern's own shapes, the id unquoted here) must agree.
    for header in (HEADER, PLAIN_HEADER):
        err = refused(Record.from_markdown, header + "source_refs:\n- 2024-01-01\n---\nbody\n")
        assert err.field == "source_refs" and "non-empty strings" in err.reason
    record = Record.new(kind="fact", content="x", source_refs=["2024-01-01"], now=7)
    assert '- "2024-01-01"' in record.to_markdown().split("\n")
    assert Record.from_markdown(record.to_markdown()) == record


def test_a_content_change_rewrites_the_body_alone() -> None:
    old = HEADER + "# kept by hand\n---\nalpha\n"
    record = Record.from_markdown(old)
    assert record.evolve(content="beta").rewrite(old) == old.replace("alpha", "beta")
    assert record.evolve(content="Aa").rewrite(old) == old.replace("alpha", "Aa")
