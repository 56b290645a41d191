"""Sources merge without conflict markers (CONTRACT §10, Sync): the pure rules of
sourcemerge.py, then ``lantern sync`` and a plain ``git pull`` between real clones."""

from __future__ import annotations

import hashlib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lantern_git.merge import MergeError
from lantern_git.source import (
    SourceManifest,
    compute_source_id,
    count_lines,
    lines_of,
    media_type_for,
)
from lantern_git.sourcefile import describe
from lantern_git.sourcemerge import (
    SourceVersion,
    merge_bodies,
    merge_manifest_files,
    merge_source,
)

MARKERS = (b"<<<<<<<", b">>>>>>>", b"=======")
URI = "session:2026-12-03"
SID = compute_source_id(URI, b"")
BASE = b"User: hello\nAssistant: hi, how can I help?\n"


def manifest(body: bytes, *, updated_at: int = 1000, title: str | None = None, **more) -> bytes:
    fields = dict(
        id=SID,
        kind="transcript",
        media_type=media_type_for("txt"),
        captured_at=1000,
        updated_at=updated_at,
        uri=URI,
        title=title,
    )
    fields.update(more)
    return SourceManifest(**fields, **describe(body)).to_yaml()


def version(body: bytes, **fields) -> SourceVersion:
    return SourceVersion(manifest(body, **fields), body, "txt")


# ---------------------------------------------------------------------------- pure rules


def test_two_appends_keep_the_base_and_both_tails_in_an_order_that_ignores_sides():
    ours, theirs = BASE + b"User: from a\n", BASE + b"User: from b\n"
    one, two = merge_bodies(BASE, ours, theirs), merge_bodies(BASE, theirs, ours)
    assert one.body == two.body == BASE + b"User: from a\nUser: from b\n"
    assert one.how == "appended"


def test_a_tail_without_a_final_newline_does_not_glue_onto_the_other():
    merged = merge_bodies(BASE, BASE + b"one", BASE + b"two").body
    assert merged == BASE + b"one\ntwo"
    assert count_lines(merged) == count_lines(BASE) + 2


def test_the_same_appended_text_is_kept_once_and_a_longer_append_wins_whole():
    assert merge_bodies(BASE, BASE + b"x\n", BASE + b"x\ny\n").body == BASE + b"x\ny\n"
    shared = merge_bodies(BASE, BASE + b"x\nfrom a\n", BASE + b"x\nfrom b\n").body
    assert shared == BASE + b"x\nfrom a\nfrom b\n"


def test_two_re_ingests_keep_the_longer_and_report_the_other():
    ours, theirs = b"rewritten on a\n", b"rewritten on b, longer\n"
    merged = merge_bodies(BASE, ours, theirs)
    assert (merged.body, merged.how, merged.other) == (theirs, "reingested", ours)
    same_length = merge_bodies(BASE, b"version a\n", b"version b\n")
    larger = max(b"version a\n", b"version b\n", key=lambda b: hashlib.sha256(b).hexdigest())
    assert same_length.body == larger


def test_removed_on_one_side_and_changed_on_the_other_keeps_the_change():
    changed = version(BASE + b"more\n", updated_at=2000)
    merged = merge_source(version(BASE), SourceVersion(), changed, SID)
    assert (merged.manifest, merged.body, merged.kept) == (changed.manifest, changed.body, "theirs")
    gone = merge_source(version(BASE), SourceVersion(), version(BASE), SID)
    assert (gone.manifest, gone.body) == (None, None)
    both = merge_source(version(BASE), SourceVersion(), SourceVersion(), SID)
    assert (both.manifest, both.body) == (None, None)


def test_the_manifest_describes_the_merged_body_with_the_earliest_and_latest_times():
    ours = version(BASE + b"a\n", updated_at=2000)
    theirs = SourceVersion(
        manifest(BASE + b"b\n", updated_at=3000).replace(b"captured_at: 1000", b"captured_at: 900"),
        BASE + b"b\n",
        "txt",
    )
    merged = merge_source(version(BASE), ours, theirs, SID)
    parsed = SourceManifest.from_yaml(merged.manifest)
    assert merged.body == BASE + b"a\nb\n"
    assert {k: getattr(parsed, k) for k in ("lines", "bytes", "sha256")} == describe(merged.body)
    assert (parsed.captured_at, parsed.updated_at) == (900, 3000)


def test_fields_changed_on_both_sides_follow_the_winning_body_and_are_listed():
    ours = version(b"short\n", updated_at=5000, title="from a", meta={"k": "a", "only_a": "1"})
    theirs = version(b"the longer body\n", updated_at=2000, title="from b", meta={"k": "b"})
    merged = merge_source(version(BASE, title="base"), ours, theirs, SID)
    parsed = SourceManifest.from_yaml(merged.manifest)
    assert merged.body == b"the longer body\n"
    assert parsed.title == "from b"
    assert parsed.meta == {"k": "b", "only_a": "1"}
    assert set(merged.conflicts) == {"title", "meta.k"}


def test_an_unparsable_manifest_is_replaced_by_the_other_side_never_marked():
    good = version(BASE + b"a\n", title="kept")
    broken = SourceVersion(b"id: [not: valid\n", BASE + b"b\n", "txt")
    for ours, theirs in ((good, broken), (broken, good)):
        merged = merge_source(version(BASE), ours, theirs, SID)
        parsed = SourceManifest.from_yaml(merged.manifest)
        assert parsed.title == "kept" and merged.body == BASE + b"a\nb\n"
        assert parsed.sha256 == describe(merged.body)["sha256"]
        assert not any(m in merged.manifest for m in MARKERS)
    with pytest.raises(MergeError):
        merge_source(version(BASE), broken, SourceVersion(b"junk\n", b"x\n", "txt"), SID)


def test_different_extensions_are_picked_the_same_way_from_either_side():
    ours = SourceVersion(manifest(b"a\n"), b"a\n", "md")
    theirs = SourceVersion(manifest(b"b\n"), b"b\n", "txt")
    one, two = (
        merge_source(SourceVersion(), ours, theirs, SID),
        merge_source(SourceVersion(), theirs, ours, SID),
    )
    assert (one.ext, one.body, one.manifest) == (two.ext, two.body, two.manifest)


def test_the_manifest_driver_path_gives_the_same_manifest_as_sync():
    base, ours, theirs = (
        version(BASE),
        version(BASE + b"a\n", updated_at=2000),
        version(BASE + b"b\n", updated_at=3000, title="t"),
    )
    bodies = {hashlib.sha256(v.body).hexdigest(): v.body for v in (base, ours, theirs)}
    by_sync = merge_source(base, ours, theirs, SID).manifest
    by_driver = merge_manifest_files(
        base.manifest, ours.manifest, theirs.manifest, SID, lambda m: bodies.get(m.sha256)
    )
    assert by_driver == by_sync
    with pytest.raises(MergeError):
        merge_manifest_files(base.manifest, ours.manifest, theirs.manifest, SID, lambda m: None)


# ---------------------------------------------------------------------------- properties

line = st.text(alphabet="ab: \u00e9", max_size=6).map(lambda s: s.encode())
text_body = st.lists(line, max_size=6).map(lambda ls: b"\n".join(ls))
maybe_body = st.one_of(st.none(), text_body)


@settings(max_examples=300, deadline=None)
@given(maybe_body, maybe_body, maybe_body)
def test_merging_bodies_is_symmetric(base, ours, theirs):
    try:
        one = merge_bodies(base, ours, theirs).body
    except MergeError:
        with pytest.raises(MergeError):
            merge_bodies(base, theirs, ours)
        return
    assert one == merge_bodies(base, theirs, ours).body


@settings(max_examples=200, deadline=None)
@given(maybe_body, text_body, st.integers(0, 4000), st.one_of(st.none(), st.sampled_from("xy")))
def test_merging_a_version_with_itself_gives_it_back(base, body, at, title):
    same = version(body, updated_at=at, title=title)
    old = version(base) if base is not None else SourceVersion()
    merged = merge_source(old, same, same, SID)
    assert (merged.manifest, merged.body, merged.ext) == (same.manifest, same.body, same.ext)
    assert merge_bodies(base, body, body).body == body


@settings(max_examples=300, deadline=None)
@given(text_body, text_body, text_body)
def test_two_appends_keep_every_base_line_and_both_tails(base, tail_a, tail_b):
    base += b"\n"
    merged = merge_bodies(base, base + tail_a, base + tail_b)
    body = merged.body
    assert body is not None and body.startswith(base)
    assert merge_bodies(base, base + tail_b, base + tail_a).body == body
    n = count_lines(base)
    assert lines_of(body, 1, n) == lines_of(base, 1, n)
    rest = body[len(base) :]
    if tail_a.startswith(tail_b) or tail_b.startswith(tail_a):
        assert rest == max(tail_a, tail_b, key=len)  # nothing appended twice
        return
    # Each tail's lines are all there, in their order; lines both begin with appear once.
    for tail in (tail_a, tail_b):
        assert _subsequence(_lines(tail), _lines(rest))
    assert count_lines(rest) <= count_lines(tail_a) + count_lines(tail_b)


def _lines(data: bytes) -> list[bytes]:
    lines = data.split(b"\n")
    return lines[:-1] if data.endswith(b"\n") else lines


def _subsequence(small: list[bytes], big: list[bytes]) -> bool:
    items = iter(big)
    return all(any(x == y for y in items) for x in small)


@settings(max_examples=200, deadline=None)
@given(
    text_body,
    text_body,
    text_body,
    st.integers(0, 3),
    st.integers(0, 3),
    st.one_of(st.none(), st.sampled_from(["p", "q"])),
    st.one_of(st.none(), st.sampled_from(["p", "r"])),
)
def test_merging_sources_is_symmetric_byte_for_byte(base, a, b, at_a, at_b, title_a, title_b):
    ours = version(a, updated_at=at_a, title=title_a)
    theirs = version(b, updated_at=at_b, title=title_b)
    one = merge_source(version(base), ours, theirs, SID)
    two = merge_source(version(base), theirs, ours, SID)
    assert (one.manifest, one.body, one.ext) == (two.manifest, two.body, two.ext)
    parsed = SourceManifest.from_yaml(one.manifest)
    assert parsed.sha256 == describe(one.body)["sha256"]
