"""The evidence input checks asked directly (lantern_git.model.source): what a source id, a
source path, a body, a manifest, a text field and a reference may be, each at its bounds.

The surfaces' tests (test_evidence.py, test_evidence_edges.py) prove that a refusal reaches
the caller with its exit code and writes nothing; these hold the rule itself, one bound at a
time, where a check that moved by one or lost a clause would otherwise pass through (the
mutation run, benchmarks/mutation.py, found those).
"""

from __future__ import annotations

from typing import Any

import pytest

from lantern_git.errors import ValidationError
from lantern_git.model.source import (
    MAX_META_ENTRIES,
    MAX_SOURCE_BYTES,
    MAX_TEXT_FIELD,
    SOURCE_KINDS,
    SourceManifest,
    SourceRef,
    check_body,
    check_kind,
    check_meta,
    check_size,
    check_source_id,
    check_text_field,
    encode_body,
    is_source_ref,
    parse_source_path,
)

SOURCE_ID = "0123456789abcdef"


def refused(call: Any, *args: Any, **kwargs: Any) -> ValidationError:
    with pytest.raises(ValidationError) as caught:
        call(*args, **kwargs)
    return caught.value


# ---------------------------------------------------------------------------- ids and paths


def test_a_source_id_is_sixteen_lowercase_hex_digits_and_nothing_else():
    assert check_source_id(SOURCE_ID) == SOURCE_ID
    for bad in (SOURCE_ID[:-1], SOURCE_ID + "0", SOURCE_ID.upper(), "../" + SOURCE_ID[3:], 7):
        error = refused(check_source_id, bad, "source")
        assert error.field == "source"
        assert f"source: invalid source id {bad!r}" in str(error)


def test_a_source_path_is_named_by_its_folder_its_id_and_its_extension():
    assert parse_source_path(f"sources/01/{SOURCE_ID}.yaml") == (SOURCE_ID, "manifest")
    assert parse_source_path(f"sources/01/{SOURCE_ID}.md") == (SOURCE_ID, "body")
    assert parse_source_path(f"sources/01/{SOURCE_ID}.{'a' * 16}") == (SOURCE_ID, "body")
    # Only "yaml" is a manifest: "yml" (a body's name for YAML) and "zip" sort after it.
    for ext in ("yml", "zip", "txt"):
        assert parse_source_path(f"sources/01/{SOURCE_ID}.{ext}") == (SOURCE_ID, "body")


@pytest.mark.parametrize(
    "path",
    [
        f"sources/{SOURCE_ID}.md",  # no folder
        f"sources/01/x/{SOURCE_ID}.md",  # one folder too many
        f"sources/01/{SOURCE_ID}.md/x",  # (below the file's name too)
        f"records/01/{SOURCE_ID}.md",  # not under sources/
        f"sourcez/01/{SOURCE_ID}.md",  # (a name that sorts after it too)
        f"sources/02/{SOURCE_ID}.md",  # the folder is not the id's first two digits
        f"sources/00/{SOURCE_ID}.md",  # (before them or after)
        f"sources/01/{SOURCE_ID}",  # no extension
        f"sources/01/{SOURCE_ID}.",  # an empty one
        f"sources/01/{SOURCE_ID}.MD",  # not lowercase
        f"sources/01/{SOURCE_ID}.{'a' * 17}",  # too long
        f"sources/01/{SOURCE_ID}.tar.gz",  # two dots
        "sources/01/0123456789abcdeg.md",  # not an id
    ],
)
def test_a_path_that_is_not_exactly_a_source_file_is_no_source(path):
    assert parse_source_path(path) is None


# ---------------------------------------------------------------------------- bodies


def test_a_body_of_exactly_the_largest_size_is_accepted_and_one_byte_more_is_refused():
    check_size(b"a" * MAX_SOURCE_BYTES)
    error = refused(check_size, b"a" * (MAX_SOURCE_BYTES + 1), "file.txt")
    assert error.code == "too_large"
    assert f"file.txt: is {MAX_SOURCE_BYTES + 1} bytes" in str(error)
    assert refused(check_body, b"a" * (MAX_SOURCE_BYTES + 1)).code == "too_large"
    assert refused(encode_body, "a" * (MAX_SOURCE_BYTES + 1)).code == "too_large"


def test_a_body_is_text_or_a_refusal_naming_the_first_byte_that_is_not():
    assert check_body("héllo\n".encode()) == "héllo\n"
    assert check_body(b"") == ""
    nul_first = refused(check_body, b"\0abc", "in.txt")
    assert (nul_first.code, nul_first.field) == ("not_text", "body")
    assert "in.txt: holds a NUL byte at byte offset 0" in str(nul_first)
    assert "byte offset 3" in str(refused(check_body, b"abc\0def"))
    # Bad UTF-8 before a NUL is named as bad UTF-8, at its own offset; after it, the NUL is.
    bad_first = refused(check_body, b"ab\xff\0", "in.txt")
    assert bad_first.code == "not_text"
    assert "in.txt: is not valid UTF-8 text (byte offset 2)" in str(bad_first)
    assert "holds a NUL byte at byte offset 1" in str(refused(check_body, b"a\0\xff"))
    assert "not valid UTF-8 text (byte offset 0)" in str(refused(check_body, b"\xc3"))


def test_a_body_given_as_text_is_refused_as_a_file_is():
    assert encode_body("héllo") == "héllo".encode()
    nul = refused(encode_body, "ab\0", "text")
    assert nul.code == "not_text"
    assert "text: holds a NUL byte at byte offset 2" in str(nul)
    surrogate = refused(encode_body, "ab\ud800", "text")
    assert surrogate.field == "body"
    assert "text: is not valid Unicode text (character 2)" in str(surrogate)


# ---------------------------------------------------------------------------- manifests


def manifest_fields(**changes: Any) -> dict[str, Any]:
    fields: dict[str, Any] = {
        "id": SOURCE_ID,
        "kind": "transcript",
        "media_type": "text/plain",
        "captured_at": 0,
        "updated_at": 1,
        "lines": 0,
        "bytes": 0,
        "sha256": "a" * 64,
    }
    return {k: v for k, v in (fields | changes).items() if v is not Ellipsis}


def test_a_manifest_of_valid_fields_is_read_with_its_unknown_keys_kept():
    manifest = SourceManifest.from_dict(
        manifest_fields(uri="u" * 4096, title="t", meta={"k": "v"}, later={"x": 1})
    )
    assert (manifest.id, manifest.kind, manifest.captured_at, manifest.lines) == (
        SOURCE_ID,
        "transcript",
        0,
        0,
    )
    assert (manifest.uri, manifest.title, manifest.meta) == ("u" * 4096, "t", {"k": "v"})
    assert manifest.extra == {"later": {"x": 1}}
    assert SourceManifest.from_dict(manifest_fields(meta=None)).meta == {}


@pytest.mark.parametrize(
    ("changes", "field"),
    [
        ({"id": ...}, "id"),
        ({"kind": ""}, "kind"),
        ({"media_type": 3}, "media_type"),
        ({"sha256": ...}, "sha256"),
        ({"kind": "diary"}, "kind"),
        ({"sha256": "a" * 63}, "sha256"),
        ({"sha256": "A" * 64}, "sha256"),
        ({"captured_at": -1}, "captured_at"),
        ({"updated_at": True}, "updated_at"),
        ({"lines": "3"}, "lines"),
        ({"bytes": ...}, "bytes"),
        ({"uri": "u" * 4097}, "uri"),
        ({"title": 5}, "title"),
    ],
)
def test_a_manifest_field_that_is_missing_or_wrong_is_refused_naming_it(changes, field):
    error = refused(SourceManifest.from_dict, manifest_fields(**changes), "sources/01/x.yaml")
    assert (error.field, error.path, error.code) == (field, "sources/01/x.yaml", "invalid_manifest")


def test_a_manifest_whose_id_is_no_source_id_is_refused():
    assert refused(SourceManifest.from_dict, manifest_fields(id="../../etc")).field == "id"


def test_meta_holds_at_most_its_entries_of_named_keys_and_one_line_text_values():
    full = {f"k{n}": "v" for n in range(MAX_META_ENTRIES)}
    assert check_meta(full) == full
    assert check_meta({"a.b_c-D9": "x" * MAX_TEXT_FIELD}) == {"a.b_c-D9": "x" * MAX_TEXT_FIELD}
    too_many = refused(check_meta, full | {"one": "more"}, "m.yaml")
    assert (too_many.field, too_many.path) == ("meta", "m.yaml")
    assert f"more than {MAX_META_ENTRIES} entries" in str(too_many)
    for bad in (
        ["k", "v"],
        {"": "v"},
        {"k k": "v"},
        {"k" * 65: "v"},
        {1: "v"},
        {"k": 1},
        {"k": "x" * (MAX_TEXT_FIELD + 1)},
        {"k": "a\0b"},
    ):
        error = refused(check_meta, bad, "m.yaml")
        assert (error.field, error.path) == ("meta", "m.yaml")


def test_a_text_field_is_one_nonblank_line_of_at_most_its_limit():
    assert check_text_field("title", None) is None
    assert check_text_field("title", "x" * MAX_TEXT_FIELD) == "x" * MAX_TEXT_FIELD
    assert check_text_field("title", "abc", limit=3) == "abc"
    assert check_text_field("title", " a ") == " a "
    for bad in ("", "  \t", 5):
        assert "title: must be non-empty text" in str(refused(check_text_field, "title", bad))
    for bad, limit in (("x" * (MAX_TEXT_FIELD + 1), MAX_TEXT_FIELD), ("abcd", 3)):
        error = refused(check_text_field, "title", bad, limit=limit)
        assert f"title: must be one line of at most {limit} characters" in str(error)
    for bad in ("a\0b", "a\nb"):
        assert "must be one line" in str(refused(check_text_field, "title", bad))
    surrogate = refused(check_text_field, "title", "a\ud800")
    assert surrogate.field == "title"
    assert "title: is not valid Unicode text" in str(surrogate)


def test_a_kind_is_one_of_the_source_kinds():
    for kind in SOURCE_KINDS:
        assert check_kind(kind) == kind
    error = refused(check_kind, "diary")
    assert error.field == "kind"
    assert "'diary' is not a source kind" in str(error)


# ---------------------------------------------------------------------------- references


def test_a_reference_names_a_source_maybe_a_version_and_lines_from_one():
    assert SourceRef.parse(f"source:{SOURCE_ID}") == SourceRef(SOURCE_ID)
    assert SourceRef.parse(f"source:{SOURCE_ID}@abcdef1#L1") == SourceRef(
        SOURCE_ID, "abcdef1", 1, None
    )
    assert SourceRef.parse(f"source:{SOURCE_ID}#L2-L2") == SourceRef(SOURCE_ID, None, 2, 2)
    assert SourceRef.parse(f"source:{SOURCE_ID}#L2-L9") == SourceRef(SOURCE_ID, None, 2, 9)


def test_a_bad_reference_is_refused_as_a_record_field_or_as_the_argument_that_gave_it():
    zero = refused(SourceRef.parse, f"source:{SOURCE_ID}#L0")
    assert (zero.field, zero.code) == ("source_refs", "invalid_field")
    assert "lines are numbered from 1" in str(zero)
    backwards = refused(SourceRef.parse, f"source:{SOURCE_ID}#L3-L2", "REF")
    assert (backwards.field, backwards.code) == ("REF", "invalid_ref")
    assert "the range ends (L2) before it starts (L3)" in str(backwards)
    for bad in (f"source:{SOURCE_ID}@abc", "source:0123", f"src:{SOURCE_ID}", None):
        assert "is not a source reference" in str(refused(SourceRef.parse, bad))


def test_a_source_reference_is_text_that_starts_with_source():
    assert is_source_ref(f"source:{SOURCE_ID}")
    assert is_source_ref("source:")
    assert not is_source_ref("https://example.invalid/source:x")
    assert not is_source_ref(None)  # type: ignore[arg-type]
