"""Source writes asked directly (docs/evidence.md): what a new ingest of a known source
changes, how a reference is pinned, and the ``.gitattributes`` line the first ingest writes.

test_evidence.py holds the commands; these hold the rules its tests left unasked (the mutation
run of ``source_writes``, benchmarks/mutation.py, found them).
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
from support.sources import blob_id, sharing_a_prefix
from support.stores import git, make_store, opened

from lantern_git.errors import AmbiguousId, InvalidInput, ValidationError
from lantern_git.evidence.sources import SourceInput
from lantern_git.model.source import compute_source_id

URI = "session:2026-12-06"
ROUTE = "sources/** merge=lantern"


def ingest(store, data: bytes, **more):
    more.setdefault("uri", URI)
    [result] = store.sources.add([SourceInput(data, "chat.md", **more)])
    return result


def head(path: Path) -> str:
    return git(path, "rev-parse", "HEAD").strip()


def changed_in_head(path: Path) -> list[str]:
    return git(path, "show", "--name-only", "--format=", "HEAD").split()


@pytest.fixture
def path(tmp_path: Path) -> Path:
    return make_store(tmp_path / "store")


def test_the_same_bytes_title_and_meta_again_are_unchanged_and_commit_nothing(path):
    with opened(path) as store:
        same = {"title": "chat", "meta": {"host": "laptop"}, "kind": "transcript"}
        first = ingest(store, b"User: hi\n", **same)
        before = head(path)
        again = ingest(store, b"User: hi\n", **same)
    assert again.status == "unchanged" and again.manifest == first.manifest
    assert head(path) == before


def test_a_new_title_or_meta_is_taken_whichever_way_it_sorts(path):
    with opened(path) as store:
        ingest(store, b"User: hi\n", title="b chat", meta={"host": "b"})
        retitled = ingest(store, b"User: hi\n", title="a chat")
        assert (retitled.status, retitled.manifest.title) == ("updated", "a chat")
        moved = ingest(store, b"User: hi\n", meta={"host": "a"})
        assert (moved.status, moved.manifest.meta) == ("updated", {"host": "a"})
        assert store.sources.get(retitled.manifest.id).meta == {"host": "a"}


def test_a_new_title_alone_is_an_update_that_leaves_the_body_file_alone(path):
    with opened(path) as store:
        source_id = ingest(store, b"User: hi\n", title="chat").manifest.id
        retitled = ingest(store, b"User: hi\n", title="the chat")
    # Not "appended": the body is the same bytes, not a longer one.
    assert retitled.status == "updated"
    assert changed_in_head(path) == [f"sources/{source_id[:2]}/{source_id}.yaml"]


def test_a_reference_to_a_source_whose_removal_awaits_review_is_refused(path):
    with opened(path) as store:
        source_id = ingest(store, b"User: hi\n").manifest.id
    with opened(path, review=True, review_name="agent") as agent:
        agent.sources.remove(source_id)
        before = head(path)
        with pytest.raises(ValidationError) as refused:
            agent.add("hi was said", kind="fact", source_refs=[f"source:{source_id}#L1"])
    assert "no such source in this store (its removal awaits review)" in str(refused.value)
    assert refused.value.field == "source_refs"
    assert head(path) == before


def two_bodies_sharing_a_pin_prefix() -> tuple[bytes, bytes]:
    """Two bodies whose git blob ids begin with the same seven hex digits."""
    return sharing_a_prefix(lambda n: f"User: line {n}\n".encode(), blob_id, 7)


def test_a_pin_prefix_naming_two_versions_is_refused(path):
    first, second = two_bodies_sharing_a_pin_prefix()
    with opened(path) as store:
        source_id = ingest(store, first).manifest.id
        ingest(store, second)
        ingest(store, b"User: the current version\n")
        prefix = blob_id(first)[:7]
        assert blob_id(second)[:7] == prefix and blob_id(first) != blob_id(second)
        assert {blob_id(first), blob_id(second)} <= set(store.sources.versions(source_id))
        before = head(path)
        with pytest.raises(ValidationError) as refused:
            store.add("a line was said", kind="fact", source_refs=[f"source:{source_id}@{prefix}"])
        assert f"{prefix} names more than one version; give more digits" in str(refused.value)
        assert head(path) == before
        one = blob_id(second)[:12]
        kept = store.add("one line", kind="fact", source_refs=[f"source:{source_id}@{one}"])
        assert kept.source_refs == (f"source:{source_id}@{one}",)


def test_the_first_ingest_writes_the_route_where_no_gitattributes_was_ever_committed(path):
    git(path, "rm", "-q", ".gitattributes")
    git(path, "commit", "-qm", "a store without attributes")
    with opened(path) as store:
        ingest(store, b"User: hi\n")
    assert (path / ".gitattributes").read_text().splitlines() == [ROUTE]
    assert ".gitattributes" in changed_in_head(path)
    assert git(path, "status", "--porcelain") == ""


def test_an_uncommitted_edit_of_gitattributes_is_left_alone_by_an_ingest(path):
    attributes = path / ".gitattributes"
    committed = attributes.read_text()
    without_route = "".join(line + "\n" for line in committed.splitlines() if ROUTE not in line)
    attributes.write_text(without_route + "*.csv text\n")
    git(path, "commit", "-qam", "a store from before sources")
    # The user's edit removes a line: shorter, so it sorts before what is committed.
    edited = without_route.splitlines(keepends=True)[0]
    attributes.write_text(edited)
    with opened(path) as store:
        ingest(store, b"User: hi\n")
    assert attributes.read_text() == edited
    assert ".gitattributes" not in changed_in_head(path)


def test_an_ingest_leaves_a_gitattributes_it_cannot_read_alone(path):
    git(path, "rm", "-q", ".gitattributes")
    git(path, "commit", "-qm", "a store without attributes")
    (path / ".gitattributes").mkdir()
    with opened(path) as store:
        result = ingest(store, b"User: hi\n")
    assert result.status == "added"
    assert (path / ".gitattributes").is_dir()
    assert ".gitattributes" not in changed_in_head(path)


def test_one_ingest_over_the_total_limit_is_refused_before_anything_is_written(path):
    from lantern_git.model.source import MAX_INGEST_BYTES, MAX_SOURCE_BYTES

    # Eight bodies at the largest a source may be make the total limit exactly; one byte more
    # is over it. The same bytes object serves every body (each has its own uri).
    largest = b"a" * MAX_SOURCE_BYTES
    assert 8 * MAX_SOURCE_BYTES == MAX_INGEST_BYTES
    # The byte goes first, so no running total is the limit itself: only "over" refuses.
    inputs = [SourceInput(b"b", "first.txt", uri="note:first")]
    inputs += [SourceInput(largest, f"{n}.txt", uri=f"note:{n}") for n in range(8)]
    before = head(path)
    with opened(path) as store, pytest.raises(ValidationError) as refused:
        store.sources.add(inputs)
    assert refused.value.code == "too_large"
    assert f"one ingest may write at most {MAX_INGEST_BYTES} bytes; split it" in str(refused.value)
    assert head(path) == before and not (path / "sources").exists()


def test_an_ingest_reports_its_progress_one_document_at_a_time(path):
    done: list[int] = []
    with opened(path) as store:
        store.sources.add(
            [
                SourceInput(b"one\n", "a.md", uri="note:a"),
                SourceInput(b"two\n", "b.md", uri="note:b"),
            ],
            progress=done.append,
        )
    assert done == [1, 2]


@pytest.mark.parametrize(
    ("digits", "found"), [(3, False), (4, True), (15, True), (16, True), (17, False)]
)
def test_a_source_is_named_by_its_id_or_a_prefix_of_4_to_15_hex_digits(path, digits, found):
    with opened(path) as store:
        source_id = ingest(store, b"User: hi\n").manifest.id
        ref = (source_id + "0")[:digits]
        if found:
            assert store.sources.get(ref).id == source_id
            return
        with pytest.raises(InvalidInput) as refused:
            store.sources.get(ref)
    assert str(refused.value) == (
        f"invalid source id {ref!r}: expected 16 hex digits or a prefix of 4 or more"
    )
    assert refused.value.code == "invalid_id"


def test_a_uri_of_4096_characters_is_taken_and_one_more_is_refused(path):
    longest = "note:" + "a" * (4096 - len("note:"))
    with opened(path) as store:
        assert ingest(store, b"User: hi\n", uri=longest).manifest.uri == longest
        before = head(path)
        with pytest.raises(ValidationError) as refused:
            ingest(store, b"User: hi\n", uri=longest + "a")
    assert str(refused.value) == "uri: must be one line of at most 4096 characters"
    assert head(path) == before


def two_uris_sharing_an_id_prefix() -> tuple[str, str]:
    """Two uris whose source ids begin with the same four hex digits."""
    return sharing_a_prefix(lambda n: f"note:{n}", lambda uri: compute_source_id(uri, b""), 4)


def test_a_prefix_two_sources_share_is_ambiguous_and_names_both(path):
    first, second = two_uris_sharing_an_id_prefix()
    with opened(path) as store:
        ids = sorted(ingest(store, b"User: hi\n", uri=uri).manifest.id for uri in (first, second))
        with pytest.raises(AmbiguousId) as refused:
            store.sources.get(ids[0][:4])
    assert refused.value.candidates == ids


def test_a_line_range_ending_past_the_last_line_is_refused(path):
    with opened(path) as store:
        source_id = ingest(store, b"one\ntwo\nthree\n").manifest.id
        before = head(path)
        with pytest.raises(ValidationError) as refused:
            store.add("three lines", kind="fact", source_refs=[f"source:{source_id}#L2-L4"])
        assert "lines 2-4 are out of range: the source has 3 lines" in str(refused.value)
        assert head(path) == before
        kept = store.add("two lines", kind="fact", source_refs=[f"source:{source_id}#L2-L3"])
        assert kept.source_refs[0].endswith("#L2-L3")


def test_a_document_without_a_name_takes_its_uri_s_extension(path):
    with opened(path) as store:
        [result] = store.sources.add([SourceInput(b"# notes\n", None, uri="file:///notes/a.md")])
    source_id = result.manifest.id
    assert result.manifest.media_type == "text/markdown"
    assert (path / "sources" / source_id[:2] / f"{source_id}.md").read_bytes() == b"# notes\n"


def test_a_new_version_that_sorts_before_the_old_is_taken_with_its_facts(path):
    with opened(path) as store:
        source_id = ingest(store, b"b later\n").manifest.id
        result = ingest(store, b"a\n")
    assert result.status == "updated"
    assert (result.manifest.bytes, result.manifest.lines) == (2, 1)
    assert result.manifest.sha256 == hashlib.sha256(b"a\n").hexdigest()
    assert (path / "sources" / source_id[:2] / f"{source_id}.md").read_bytes() == b"a\n"


def test_a_prefix_with_a_letter_past_f_is_refused_as_no_id(path):
    with opened(path) as store:
        ingest(store, b"User: hi\n")
        with pytest.raises(InvalidInput) as refused:
            store.sources.get("abcz")
    assert refused.value.code == "invalid_id"


def test_a_reference_to_a_source_whose_manifest_is_broken_is_refused_naming_why(path):
    with opened(path) as store:
        source_id = ingest(store, b"User: hi\n").manifest.id
    (path / "sources" / source_id[:2] / f"{source_id}.yaml").write_text("- a list\n")
    with opened(path) as store:
        before = head(path)
        with pytest.raises(ValidationError) as refused:
            store.add("hi was said", kind="fact", source_refs=[f"source:{source_id}#L1"])
    assert str(refused.value).startswith(
        f"source_refs: source:{source_id}#L1: the source cannot be read ("
    )
    assert head(path) == before


@pytest.mark.parametrize(
    ("title", "uri", "named"),
    [("the chat", "note:a", "the chat"), (None, "note:a", "note:a"), (None, None, "{id}")],
)
def test_an_append_s_commit_names_the_source_by_title_then_uri_then_id(path, title, uri, named):
    with opened(path) as store:
        [added] = store.sources.add([SourceInput(b"User: hi\n", None, uri=uri, title=title)])
        source_id = added.manifest.id
        store.sources.append(source_id, "User: bye")
    subject = git(path, "log", "-1", "--format=%s").strip()
    assert subject == f"append {source_id}: 9 bytes to {named.format(id=source_id)}"


def test_references_after_an_opaque_one_are_kept_and_pinned_in_order(path):
    with opened(path) as store:
        source_id = ingest(store, b"User: hi\n").manifest.id
        refs = ["chat:1", f"source:{source_id}#L1", "ticket:7"]
        record = store.add("hi was said", kind="fact", source_refs=refs)
    pin = blob_id(b"User: hi\n")[:12]
    assert record.source_refs == ("chat:1", f"source:{source_id}@{pin}#L1", "ticket:7")


def test_a_new_kind_is_taken_whichever_way_it_sorts(path):
    with opened(path) as store:
        ingest(store, b"User: hi\n", kind="file")
        later = ingest(store, b"User: hi\n", kind="transcript")
        assert (later.status, later.manifest.kind) == ("updated", "transcript")
        earlier = ingest(store, b"User: hi\n", kind="file")
        assert (earlier.status, earlier.manifest.kind) == ("updated", "file")


@pytest.mark.parametrize(("first", "second"), [("a.md", "b.md"), (None, "b.md")])
def test_one_ingest_naming_one_source_twice_is_refused_naming_both(path, first, second):
    inputs = [SourceInput(b"one\n", first, uri=URI), SourceInput(b"two\n", second, uri=URI)]
    source_id = compute_source_id(URI, b"")
    with opened(path) as store, pytest.raises(InvalidInput) as refused:
        store.sources.add(inputs)
    assert str(refused.value) == (
        f"{second} and {first or 'stdin'} are the same source ({source_id}): one ingest takes "
        "each uri (or, without one, each text) once"
    )
    assert not (path / "sources").exists()


def test_an_empty_source_id_is_refused_as_no_text(path):
    with opened(path) as store, pytest.raises(InvalidInput) as refused:
        store.sources.get("")
    assert (str(refused.value), refused.value.code) == ("source id: must be text", "invalid_id")
