"""The record file format: round trips, deterministic ids, key order, rewrites, safe YAML."""

from __future__ import annotations

import difflib
import hashlib
import re
import unicodedata

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lantern_git.core.fields import FIELD_ORDER, KINDS, OPTIONAL_FIELDS, STATUSES
from lantern_git.errors import ValidationError
from lantern_git.model.record import Record, compute_id
from lantern_git.model.record_file import record_path

# ---------------------------------------------------------------------------- strategies

HEX = "0123456789abcdef"
ids = st.text(alphabet=HEX, min_size=16, max_size=16)
timestamps = st.integers(min_value=0, max_value=9_999_999_999)
# Any Unicode text except surrogates (not encodable) and NUL (refused on purpose).
unicode_text = st.text(alphabet=st.characters(exclude_categories=("Cs",), exclude_characters="\0"))
contents = unicode_text.map(str.strip).filter(bool)
scope_names = st.text(
    alphabet=st.characters(exclude_categories=("Cs", "Cc", "Zs", "Zl", "Zp")),
    min_size=1,
    max_size=30,
).filter(lambda s: not re.search(r"[\s*\u2028\u2029\x85]", s) and not s.startswith(":"))
scopes = st.one_of(
    st.just("global"),
    st.builds(
        lambda ns, name: f"{ns}:{name}",
        st.text(alphabet="abcdefghijklmnopqrstuvwxyzABC0123456789_.-", min_size=1, max_size=12),
        scope_names,
    ),
)
source_refs = st.lists(
    st.text(
        alphabet=st.characters(exclude_categories=("Cs",), exclude_characters="\0\n"), max_size=40
    ).filter(lambda s: s.strip()),
    max_size=4,
).map(tuple)
extra_keys = st.text(alphabet="abcdefghijklmnopqrstuvwxyz_-0123456789", min_size=1, max_size=12)
extra_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(10**12), max_value=10**12),
    st.text(
        alphabet=st.characters(exclude_categories=("Cs",), exclude_characters="\0"), max_size=30
    ),
)
extra_values = st.one_of(
    extra_scalars,
    st.lists(extra_scalars, max_size=3),
    st.dictionaries(extra_keys, extra_scalars, max_size=3),
)
extras = st.dictionaries(
    extra_keys.filter(lambda k: k not in FIELD_ORDER and k != "content"), extra_values, max_size=3
)


@st.composite
def records(draw) -> Record:
    record_id = draw(ids)
    supersedes = draw(st.one_of(st.none(), ids.filter(lambda other: other != record_id)))
    return Record(
        id=record_id,
        kind=draw(st.sampled_from(KINDS)),
        content=draw(contents),
        scope=draw(scopes),
        status=draw(st.sampled_from(STATUSES)),
        priority=draw(st.integers(0, 100)),
        urgency=draw(st.integers(0, 100)),
        confidence=draw(st.floats(0.0, 1.0, allow_nan=False)),
        created_at=draw(timestamps),
        updated_at=draw(timestamps),
        expires_at=draw(st.one_of(st.none(), timestamps)),
        supersedes_id=supersedes,
        source_refs=draw(source_refs),
        extra=draw(extras),
    )


PROPERTY = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


# ---------------------------------------------------------------------------- round trips


@PROPERTY
@given(records())
def test_markdown_round_trip(record):
    assert Record.from_markdown(record.to_markdown()) == record


@PROPERTY
@given(records(), records())
def test_rewrite_gives_the_new_record(old, new):
    """rewrite() of any change of any field parses back to exactly the new record."""
    new = Record(**{**new.__dict__, "id": old.id, "extra": old.extra})
    if new.supersedes_id == old.id:
        new = Record(**{**new.__dict__, "supersedes_id": None})
    rewritten = new.rewrite(old.to_markdown())
    assert Record.from_markdown(rewritten) == new


@PROPERTY
@given(records(), st.sampled_from(STATUSES), timestamps)
def test_status_change_rewrites_only_status_and_updated_at(record, status, updated_at):
    old_text = record.to_markdown()
    changed = Record(**{**record.__dict__, "status": status, "updated_at": updated_at})
    new_text = changed.rewrite(old_text)
    assert Record.from_markdown(new_text) == changed
    touched = _changed_lines(old_text, new_text)
    allowed = {f"status: {record.status}", f"status: {status}"}
    allowed |= {f"updated_at: {record.updated_at}", f"updated_at: {updated_at}"}
    assert touched <= allowed


def test_round_trip_of_a_record_with_every_optional_field_and_unicode():
    record = Record(
        id="3f9a1c0e2b7d4a61",
        kind="constraint",
        content="Ünïcödé — 日本語\nsecond line: with: colons\n---\nnot a fence in the body",
        scope="project:naïve-café",
        status="superseded",
        priority=0,
        urgency=100,
        confidence=0.25,
        created_at=1,
        updated_at=2,
        expires_at=3,
        supersedes_id="0000000000000000",
        source_refs=("session:42", "file: a b.md", "- dash", "#hash", "'quoted'"),
        extra={"reviewed_by": "ana", "tags": ["x", "y"], "weight": 3, "flag": True, "none": None},
    )
    assert Record.from_markdown(record.to_markdown()) == record


def _changed_lines(old_text: str, new_text: str) -> set[str]:
    return {
        line[1:]
        for line in difflib.unified_diff(old_text.splitlines(), new_text.splitlines(), n=0)
        if line[:1] in "+-" and not line.startswith(("+++", "---"))
    }


# ---------------------------------------------------------------------------- deterministic id


def _independent_id(kind: str, scope: str, content: str) -> str:
    normalized = " ".join(unicodedata.normalize("NFC", content).split())
    return hashlib.sha256(f"{kind}\0{scope}\0{normalized}".encode()).hexdigest()[:16]


@settings(max_examples=500, deadline=None)
@given(st.sampled_from(KINDS), scopes, contents)
def test_id_matches_an_independent_computation(kind, scope, content):
    assert compute_id(kind, scope, content) == _independent_id(kind, scope, content)
    record = Record.new(kind=kind, scope=scope, content=content, now=1)
    assert record.id == _independent_id(kind, scope, content)


def test_id_of_the_contract_example():
    content = "Raphael prefers separate branches on his repos."
    expected = hashlib.sha256(
        b"preference\0user:raphael\0Raphael prefers separate branches on his repos."
    ).hexdigest()[:16]
    assert compute_id("preference", "user:raphael", content) == expected
    assert re.fullmatch(r"[0-9a-f]{16}", expected)


def test_id_ignores_normalization_and_whitespace_but_not_kind_scope_or_words():
    nfc = "caf\u00e9 crème"
    nfd = unicodedata.normalize("NFD", nfc)
    assert nfc != nfd
    base = compute_id("fact", "global", nfc)
    assert compute_id("fact", "global", nfd) == base
    assert compute_id("fact", "global", f"  \n\t{nfc}\n") == base
    assert compute_id("fact", "global", "café \t\n  crème") == base
    assert compute_id("fact", "global", "cafécrème") != base
    assert compute_id("goal", "global", nfc) != base
    assert compute_id("fact", "user:ana", nfc) != base
    # NUL separators: moving text between scope and content changes the id.
    assert compute_id("fact", "a:b", "c d") != compute_id("fact", "a:b c", "d")


def test_id_survives_edits():
    record = Record.new(kind="fact", content="The sky is blue.", now=100)
    edited = record.evolve(status="archived", priority=10, updated_at=200)
    assert edited.id == record.id
    text = edited.rewrite(record.to_markdown())
    assert Record.from_markdown(text).id == record.id


def test_record_path_shards_by_the_first_two_characters_and_refuses_traversal():
    assert record_path("3f9a1c0e2b7d4a61") == "memory/3f/3f9a1c0e2b7d4a61.md"
    for bad in ("../../etc/passwd", "3F9A1C0E2B7D4A61", "3f9a", "3f9a1c0e2b7d4a61/"):
        with pytest.raises(ValidationError, match="id"):
            record_path(bad)


# ---------------------------------------------------------------------------- the file layout


def _front_keys(text: str) -> list[str]:
    front = text.split("---\n")[1]
    return [line.split(":", 1)[0] for line in front.splitlines() if line[:1] not in (" ", "-")]


def test_keys_are_written_in_the_contract_order_then_extras():
    record = Record(
        id="3f9a1c0e2b7d4a61",
        kind="fact",
        content="x",
        expires_at=5,
        supersedes_id="1111111111111111",
        source_refs=("a",),
        entities=("person:ana",),
        extra={"zeta": 1, "alpha": 2},
        created_at=1,
        updated_at=1,
    )
    assert _front_keys(record.to_markdown()) == [*FIELD_ORDER, "zeta", "alpha"]


def test_contract_example_is_written_byte_for_byte():
    record = Record(
        id="3f9a1c0e2b7d4a61",
        kind="preference",
        content="Raphael prefers separate branches on his repos.",
        scope="user:raphael",
        priority=90,
        created_at=1764690000,
        updated_at=1764690000,
    )
    assert record.to_markdown() == (
        "---\n"
        "id: 3f9a1c0e2b7d4a61\n"
        "kind: preference\n"
        "scope: user:raphael\n"
        "status: active\n"
        "priority: 90\n"
        "urgency: 0\n"
        "confidence: 1.0\n"
        "created_at: 1764690000\n"
        "updated_at: 1764690000\n"
        "---\n"
        "Raphael prefers separate branches on his repos.\n"
    )


def test_optional_fields_are_omitted_when_absent():
    text = Record.new(kind="fact", content="plain", now=7).to_markdown()
    keys = _front_keys(text)
    for name in OPTIONAL_FIELDS:
        assert name not in keys
    assert "null" not in text


def test_optional_fields_written_as_null_or_empty_parse_as_absent():
    text = (
        "---\nid: 3f9a1c0e2b7d4a61\nkind: fact\ncreated_at: 1\nupdated_at: 1\n"
        "expires_at: null\nsupersedes_id:\nsource_refs: []\n---\nbody\n"
    )
    record = Record.from_markdown(text)
    assert (record.expires_at, record.supersedes_id, record.source_refs) == (None, None, ())
    assert (record.scope, record.status, record.priority, record.urgency) == (
        "global",
        "active",
        50,
        0,
    )


def test_all_digit_ids_stay_strings():
    record = Record(
        id="1234567890123456", kind="fact", content="x", supersedes_id="0000000000000001"
    )
    assert Record.from_markdown(record.to_markdown()) == record


# ---------------------------------------------------------------------------- minimal rewrites

HAND_WRITTEN = """\
---
id: 3f9a1c0e2b7d4a61
kind: preference
# a comment a person added
scope: user:raphael
reviewed_by: ana   # kept as typed
status: active
priority: 90
urgency: 0
confidence: 1.0
created_at: 1764690000
updated_at: 1764690000
tags:
  - branches
  - git
---
Raphael prefers separate branches on his repos.
"""


def test_unknown_keys_survive_rewrite():
    old = Record.from_markdown(HAND_WRITTEN)
    assert old.extra == {"reviewed_by": "ana", "tags": ["branches", "git"]}
    for changed in (
        old.evolve(status="archived", updated_at=1764690100),
        old.evolve(priority=10, expires_at=1800000000, source_refs=("s:1",)),
        old.evolve(supersedes_id="0123456789abcdef", confidence=0.5),
    ):
        text = changed.rewrite(HAND_WRITTEN)
        parsed = Record.from_markdown(text)
        assert parsed == changed
        assert parsed.extra == old.extra
        assert "reviewed_by: ana   # kept as typed" in text
        assert "# a comment a person added" in text


def test_status_change_diff_is_exactly_two_lines():
    old = Record.from_markdown(HAND_WRITTEN)
    new_text = old.evolve(status="archived", updated_at=1764690100).rewrite(HAND_WRITTEN)
    diff = [
        line
        for line in difflib.unified_diff(HAND_WRITTEN.splitlines(), new_text.splitlines(), n=0)
        if line[:1] in "+-" and not line.startswith(("+++", "---"))
    ]
    assert sorted(diff) == sorted(
        [
            "-status: active",
            "+status: archived",
            "-updated_at: 1764690000",
            "+updated_at: 1764690100",
        ]
    )


def test_added_optional_field_lands_in_schema_position():
    old = Record.from_markdown(HAND_WRITTEN)
    text = old.evolve(expires_at=1800000000).rewrite(HAND_WRITTEN)
    lines = text.splitlines()
    assert lines[lines.index("updated_at: 1764690000") + 1] == "expires_at: 1800000000"
    assert len(lines) == len(HAND_WRITTEN.splitlines()) + 1


def test_removing_an_optional_field_removes_only_its_line():
    with_expiry = HAND_WRITTEN.replace(
        "updated_at: 1764690000\n", "updated_at: 1764690000\nexpires_at: 1800000000\n"
    )
    old = Record.from_markdown(with_expiry)
    text = old.evolve(expires_at=None).rewrite(with_expiry)
    assert text == HAND_WRITTEN


def test_rewrite_of_an_unchanged_record_is_byte_identical():
    old = Record.from_markdown(HAND_WRITTEN)
    assert old.rewrite(HAND_WRITTEN) == HAND_WRITTEN


# ---------------------------------------------------------------------------- validation messages

GOOD_LINES = [
    "---",
    "id: 3f9a1c0e2b7d4a61",
    "kind: fact",
    "scope: global",
    "status: active",
    "priority: 50",
    "urgency: 0",
    "confidence: 1.0",
    "created_at: 1764690000",
    "updated_at: 1764690000",
    "---",
    "Some content.",
]
PATH = "memory/3f/3f9a1c0e2b7d4a61.md"


def _with_line(number: int, text: str) -> str:
    lines = list(GOOD_LINES)
    lines[number - 1] = text
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize(
    ("line", "text", "field"),
    [
        (6, "priority: 500", "priority"),
        (6, "priority: high", "priority"),
        (6, "priority: true", "priority"),
        (7, "urgency: -1", "urgency"),
        (8, "confidence: 1.5", "confidence"),
        (8, "confidence: .nan", "confidence"),
        (3, "kind: opinion", "kind"),
        (4, "scope: has space", "scope"),
        (4, "scope: user:*", "scope"),
        (5, "status: deleted", "status"),
        (2, "id: XYZ", "id"),
        (9, "created_at: yesterday", "created_at"),
        (10, "updated_at: 99999999999999", "updated_at"),
        (10, "updated_at: 1.5", "updated_at"),
    ],
)
def test_validation_error_names_the_field_and_the_line(line, text, field):
    with pytest.raises(ValidationError) as caught:
        Record.from_markdown(_with_line(line, text), PATH)
    assert caught.value.field == field
    assert str(caught.value).startswith(f"{PATH}:{line}: {field}: ")


def test_bad_priority_on_line_6_message():
    with pytest.raises(ValidationError, match=re.escape(f"{PATH}:6: priority: ")):
        Record.from_markdown(_with_line(6, "priority: 101"), PATH)


@pytest.mark.parametrize(
    ("text", "pattern"),
    [
        ("no front matter\n", r":1: .*'---'"),
        ("---\nid: 3f9a1c0e2b7d4a61\nkind: fact\n", r":1: .*closing"),
        ("---\n---\nbody\n", r":2: front matter is empty"),
        ("---\n- a list\n---\nbody\n", r":2: .*mapping"),
        (_with_line(12, ""), r":12: content: must not be empty"),
        (_with_line(12, "   \n\n"), r":12: content: must not be empty"),
        (_with_line(12, "bad\0byte"), r":12: .*NUL"),
        (_with_line(3, "kind: [unclosed"), r":\d+: invalid YAML"),
        (_with_line(9, "createdat: 1"), r"created_at: is required"),
        (_with_line(8, "content: in the front matter"), r":8: content: belongs in the body"),
        (
            _with_line(2, "id: 3f9a1c0e2b7d4a61\nsupersedes_id: 3f9a1c0e2b7d4a61"),
            "supersede itself",
        ),
        (_with_line(2, "id: 3f9a1c0e2b7d4a61\nsource_refs: [1, 2]"), r":3: source_refs: "),
    ],
)
def test_malformed_files_are_refused_with_file_and_line(text, pattern):
    with pytest.raises(
        ValidationError,
        match=f"^{re.escape(PATH)}{pattern}" if pattern.startswith(":") else pattern,
    ):
        Record.from_markdown(text, PATH)


# ---------------------------------------------------------------------------- YAML safety


def test_python_object_tags_are_refused():
    marker = []
    text = _with_line(4, "scope: !!python/object/apply:os.system ['echo pwned']")
    with pytest.raises(ValidationError, match=r":4: invalid YAML"):
        Record.from_markdown(text, PATH)
    text = _with_line(3, "kind: !!python/object:builtins.list {}")
    with pytest.raises(ValidationError, match=r"invalid YAML"):
        Record.from_markdown(text, PATH)
    text = _with_line(2, 'id: !!python/name:builtins.print ""')
    with pytest.raises(ValidationError, match=r"invalid YAML"):
        Record.from_markdown(text, PATH)
    assert marker == []


def test_anchors_and_aliases_are_refused():
    text = _with_line(10, "updated_at: &t 1764690000\nextra_time: *t")
    with pytest.raises(ValidationError, match=r":10: YAML anchors and aliases are not allowed"):
        Record.from_markdown(text, PATH)
    laughs = _with_line(
        10,
        "updated_at: 1764690000\n"
        "a: &a [x, x, x, x, x, x, x, x, x]\n"
        "b: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]\n"
        "c: [*b, *b, *b, *b, *b, *b, *b, *b, *b]",
    )
    with pytest.raises(ValidationError, match="aliases are not allowed"):
        Record.from_markdown(laughs, PATH)


def test_an_ampersand_or_star_in_a_value_is_not_an_alias():
    text = _with_line(10, "updated_at: 1764690000\nnote: 'Tom & Jerry * 2'")
    assert Record.from_markdown(text, PATH).extra == {"note": "Tom & Jerry * 2"}


def test_duplicate_keys_are_refused():
    text = _with_line(6, "priority: 50\npriority: 90")
    with pytest.raises(ValidationError, match=r":7: invalid YAML: duplicate key 'priority'"):
        Record.from_markdown(text, PATH)
    nested = _with_line(10, "updated_at: 1764690000\nmeta: {a: 1, a: 2}")
    with pytest.raises(ValidationError, match="duplicate key 'a'"):
        Record.from_markdown(nested, PATH)


def test_rewrite_of_unparseable_old_text_writes_the_record_fresh():
    """A record whose old text is broken is written fresh; the result always parses."""
    record = Record.new(kind="fact", content="x", now=1)
    broken = "---\nid: [\n---\nx\n"
    assert Record.from_markdown(record.rewrite(broken)) == record
