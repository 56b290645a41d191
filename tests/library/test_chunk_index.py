"""The chunk index over real source files in temporary folders, with real Whoosh."""

from __future__ import annotations

import math
import os
import shutil
import time
from pathlib import Path

import pygit2
import pytest

from lantern_git.errors import InvalidInput
from lantern_git.index.chunks import INDEX_NAME, ChunkIndex
from lantern_git.index.derived import FINE_MARGIN_NS
from lantern_git.model.source import (
    SourceManifest,
    SourceRef,
    body_path,
    chunk_ranges,
    compute_source_id,
    lines_of,
    manifest_path,
    media_type_for,
)
from lantern_git.model.source_file import describe
from lantern_git.workspace.lock import WriterLock

NOW = 1764690000


def write_source(
    root: Path,
    body: bytes,
    *,
    kind: str = "transcript",
    title: str | None = None,
    uri: str | None = None,
    ext: str = "txt",
) -> str:
    """A source as lantern lays it out: the body and a manifest that describes it."""
    sid = compute_source_id(uri, body)
    manifest = SourceManifest(
        id=sid,
        kind=kind,
        media_type=media_type_for(ext),
        captured_at=NOW,
        updated_at=NOW,
        uri=uri,
        title=title,
        **describe(body),  # type: ignore[arg-type]
    )
    (root / body_path(sid, ext)).parent.mkdir(parents=True, exist_ok=True)
    (root / body_path(sid, ext)).write_bytes(body)
    (root / manifest_path(sid)).write_bytes(manifest.to_yaml())
    return sid


def transcript(turns: int, word: str = "lantern", start: int = 0) -> bytes:
    """Speaker turns of a few lines each, every turn with its own numbered marker word."""
    out = []
    for n in range(start, start + turns):
        speaker = "User" if n % 2 else "Assistant"
        out.append(f"{speaker}: turn {n} talks about {word} number{n}\n")
        out.append(f"more words for turn {n}, a second line\n")
        out.append(f"and a third line closing turn {n}\n")
    return "".join(out).encode()


@pytest.fixture
def root(tmp_path: Path) -> Path:
    path = tmp_path / "store"
    path.mkdir()
    return path


@pytest.fixture
def index(root: Path, tmp_path: Path):
    lock = WriterLock(str(tmp_path / "state" / "lock"))
    ix = ChunkIndex(str(root), str(tmp_path / "state"), lambda: lock)
    yield ix
    ix.close()


def other_index(root: Path, tmp_path: Path, name: str) -> ChunkIndex:
    lock = WriterLock(str(tmp_path / name / "lock"))
    return ChunkIndex(str(root), str(tmp_path / name), lambda: lock)


def settle(*paths: Path) -> None:
    """Wait until the files' timestamps lie far enough back for the index to trust them."""
    coarse = any(os.stat(p).st_ctime_ns % 1_000_000 == 0 for p in paths)
    time.sleep(3.2 if coarse else FINE_MARGIN_NS / 1e9 + 0.05)


def blob12(body: bytes) -> str:
    return str(pygit2.hash(body))[:12]


def test_search_finds_a_phrase_and_names_its_chunk_by_a_pasteable_reference(root, index):
    body = transcript(60) + b"User: the violet lighthouse keeper waves\nok\n" + transcript(5)
    sid = write_source(root, body, title="Harbour talk", uri="session:2026-12-03")
    index.refresh()

    hits = index.search('"violet lighthouse"')

    assert len(hits) == 1
    hit = hits[0]
    a, b = hit.lines
    assert hit.source_id == sid
    assert hit.ref == f"source:{sid}@{blob12(body)}#L{a}-L{b}"
    assert SourceRef.parse(hit.ref) == SourceRef(sid, blob12(body), a, b)
    assert hit.text == lines_of(body, a, b).decode()
    assert "the violet lighthouse keeper" in hit.text
    assert (hit.kind, hit.uri, hit.title) == ("transcript", "session:2026-12-03", "Harbour talk")
    assert hit.score > 0
    assert list(hit.to_dict()) == [
        "ref",
        "source_id",
        "lines",
        "score",
        "text",
        "kind",
        "uri",
        "title",
    ]
    assert hit.to_dict()["lines"] == [a, b]


def test_the_title_is_searched_too(root, index):
    sid = write_source(root, b"nothing special here\n", kind="note", title="Quarterly zeppelin")
    index.refresh()
    assert [h.source_id for h in index.search("zeppelin")] == [sid]


def test_kind_and_source_filters(root, index):
    note = write_source(root, b"the walrus sings\n", kind="note")
    log = write_source(root, b"the walrus sleeps\n", kind="log")
    other_log = write_source(root, b"a walrus again\n", kind="log")
    index.refresh()

    assert {h.source_id for h in index.search("walrus")} == {note, log, other_log}
    assert {h.source_id for h in index.search("walrus", kinds=["log"])} == {log, other_log}
    assert {h.source_id for h in index.search("walrus", kinds=["note", "log"])} == {
        note,
        log,
        other_log,
    }
    assert [h.source_id for h in index.search("walrus", sources=[log])] == [log]
    assert index.search("walrus", kinds=["note"], sources=[log]) == []
    assert index.search("walrus", kinds=["document"]) == []


def test_paging_follows_score_then_source_then_line_on_ties(root, index):
    # Identical texts score alike: their order is the tie-break, source id then first line.
    ids = sorted(
        write_source(root, f"the same otter line\n# copy {n}\n".encode()) for n in range(7)
    )
    index.refresh()

    everything = index.search("otter")
    assert [h.source_id for h in everything] == ids
    assert len({h.score for h in everything}) == 1

    assert [h.source_id for h in index.search("otter", limit=3)] == ids[:3]
    assert [h.source_id for h in index.search("otter", limit=3, offset=3)] == ids[3:6]
    assert [h.source_id for h in index.search("otter", limit=3, offset=6)] == ids[6:]
    # The one paging rule: limit 0 is no limit.
    assert [h.source_id for h in index.search("otter", limit=0)] == ids
    assert index.search("otter", offset=10) == []


def test_paging_ranks_better_scores_first(root, index):
    weak = write_source(root, b"heron\n" + b"filler words without the bird\n" * 30)
    strong = write_source(root, b"heron heron heron\n")
    index.refresh()
    assert [h.source_id for h in index.search("heron", limit=1)] == [strong]
    assert [h.source_id for h in index.search("heron", limit=1, offset=1)] == [weak]


def test_a_hand_edit_of_a_body_is_seen_by_the_next_refresh(root, index):
    body = b"the parrot said hello\n"
    sid = write_source(root, body)
    index.refresh()
    settle(root / body_path(sid, "txt"))
    index.refresh()  # trusts the settled signatures from here on
    assert index.refresh().unchanged

    edited = b"the falcon said hello\n"  # same size: only the ctime tells
    path = root / body_path(sid, "txt")
    st = path.stat()
    path.write_bytes(edited)
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    report = index.refresh()

    assert not report.unchanged
    assert report.indexed == 1
    assert index.search("parrot") == []
    [hit] = index.search("falcon")
    assert hit.ref == f"source:{sid}@{blob12(edited)}#L1"


def test_an_unchanged_store_is_not_read_again(root, index):
    sid = write_source(root, transcript(10))
    assert index.refresh().indexed == 1
    settle(root / body_path(sid, "txt"))
    index.refresh()  # trusts the settled signatures from here on
    report = index.refresh()
    assert report.unchanged
    assert (report.indexed, report.removed, report.chunks_written) == (0, 0, 0)


def test_a_long_lived_index_never_answers_with_a_replaced_chunk(root, index):
    """One index kept open across commits (the MCP server's, a library caller's): the searcher
    it keeps is renewed after a commit without keeping a segment's documents as they were
    before the commit deleted some of them."""
    write_source(root, b"the walrus line one\n", uri="session:a")
    # A second source keeps the first segment alive once the first source's chunk is deleted.
    write_source(root, b"an otter elsewhere\n", uri="session:b")
    index.refresh()
    assert [h.text for h in index.search("walrus")] == ["the walrus line one\n"]

    write_source(root, b"a rewritten walrus story\n", uri="session:a")
    index.refresh()

    assert [h.text for h in index.search("walrus")] == ["a rewritten walrus story\n"]
    assert index.counts() == (2, 2)


def all_chunks(index: ChunkIndex, sid: str) -> list[tuple[str, tuple[int, int], str]]:
    return sorted((h.ref, h.lines, h.text) for h in index.search("turn", sources=[sid], limit=None))


@pytest.mark.parametrize("newline_at_end", [True, False])
def test_an_append_rechunks_only_the_tail(root, index, tmp_path, newline_at_end):
    old = transcript(300)
    if not newline_at_end:
        old = old.rstrip(b"\n")
    sid = write_source(root, old, uri="session:long")
    first = index.refresh()
    total_before = first.chunks_written
    assert total_before > 50

    new = old + (b"" if newline_at_end else b" and then") + b"\n" + transcript(4, start=300)
    new = new.replace(b"\n\n", b"\n")
    assert new.startswith(old)
    write_source(root, new, uri="session:long")
    report = index.refresh()

    assert report.indexed == 1
    # The old last chunk (and, with an open last line, the one before) plus the new turns.
    assert 1 <= report.chunks_written <= 4
    assert [h.source_id for h in index.search("number302")] == [sid]
    # The same chunks as a build from scratch, with refs naming the new version.
    fresh = other_index(root, tmp_path, "fresh")
    try:
        fresh.rebuild()
        assert all_chunks(index, sid) == all_chunks(fresh, sid)
        assert index.counts() == fresh.counts()
    finally:
        fresh.close()
    lines = new.decode().split("\n")[:-1] if new.endswith(b"\n") else new.decode().split("\n")
    expected = chunk_ranges([line + "\n" for line in lines])
    assert sorted(h[1] for h in all_chunks(index, sid)) == sorted(expected)
    assert all(h[0].startswith(f"source:{sid}@{blob12(new)}#") for h in all_chunks(index, sid))


def test_a_rewrite_that_is_not_an_append_rechunks_everything(root, index):
    old = transcript(100)
    sid = write_source(root, old, uri="session:x")
    total = index.refresh().chunks_written
    write_source(root, b"Preface: new first line\n" + old, uri="session:x")
    report = index.refresh()
    assert report.chunks_written >= total
    assert [h.source_id for h in index.search("preface")] == [sid]


def test_removal_drops_the_chunks(root, index):
    keep = write_source(root, b"the badger stays\n")
    gone = write_source(root, b"the badger leaves\n")
    index.refresh()
    assert index.counts() == (2, 2)

    (root / body_path(gone, "txt")).unlink()
    (root / manifest_path(gone)).unlink()
    report = index.refresh()

    assert report.removed == 1
    assert [h.source_id for h in index.search("badger")] == [keep]
    assert index.counts() == (1, 1)


def test_counts_are_sources_and_chunks(root, index):
    write_source(root, transcript(100))
    write_source(root, b"one line\n")
    write_source(root, b"")
    report = index.refresh()
    sources, chunks = index.counts()
    assert sources == 3
    assert chunks == report.chunks_written
    assert chunks > 2


def test_note_written_indexes_exactly_the_written_sources(root, index):
    index.refresh()
    sid = write_source(root, b"the marmot arrives\n")
    index.note_written([manifest_path(sid), body_path(sid, "txt")])
    assert [h.source_id for h in index.search("marmot")] == [sid]
    (root / body_path(sid, "txt")).unlink()
    (root / manifest_path(sid)).unlink()
    index.note_written([manifest_path(sid), body_path(sid, "txt")])
    assert index.search("marmot") == []
    assert index.counts() == (0, 0)


def test_a_corrupt_index_is_rebuilt(root, index, tmp_path):
    sid = write_source(root, b"the lynx hides\n")
    index.refresh()
    index.close()
    folder = tmp_path / "state" / "chunks"
    for name in os.listdir(folder):
        if name.endswith((".toc", ".seg")):
            (folder / name).write_bytes(b"not an index")

    again = other_index(root, tmp_path, "state")
    try:
        assert again.refresh().rebuilt
        assert [h.source_id for h in again.search("lynx")] == [sid]
    finally:
        again.close()


def test_a_damaged_state_file_or_a_missing_index_is_rebuilt(root, index, tmp_path):
    sid = write_source(root, b"the ibex climbs\n")
    index.refresh()
    index.close()
    folder = tmp_path / "state" / "chunks"
    state = next(folder.glob("state_*"))
    state.write_bytes(b"\x00garbage")
    again = other_index(root, tmp_path, "state")
    try:
        assert again.refresh().rebuilt
        assert [h.source_id for h in again.search("ibex")] == [sid]
        again.close()
        shutil.rmtree(folder)
        assert [h.source_id for h in again.search("ibex")] == [sid]
        assert again.counts() == (1, 1)
    finally:
        again.close()


def test_broken_sources_are_reported_and_never_read(root, index, tmp_path):
    good = write_source(root, b"the secret heron is fine\n")
    outside = tmp_path / "outside.txt"
    outside.write_bytes(b"the secret heron lives outside\n")

    linked = write_source(root, b"placeholder one\n")
    (root / body_path(linked, "txt")).unlink()
    (root / body_path(linked, "txt")).symlink_to(outside)

    fifo = write_source(root, b"placeholder two\n")
    (root / body_path(fifo, "txt")).unlink()
    os.mkfifo(root / body_path(fifo, "txt"))

    bad_manifest = write_source(root, b"the secret heron, bad manifest\n")
    (root / manifest_path(bad_manifest)).write_bytes(b"id: [unclosed\n")

    binary = write_source(root, b"the secret heron\x00binary\n")

    report = index.refresh()

    assert set(report.broken) == {linked, fifo, bad_manifest, binary}
    assert "symbolic link" in report.broken[linked].message
    assert "FIFO" in report.broken[fifo].message
    assert report.broken[bad_manifest].path == manifest_path(bad_manifest)
    assert "NUL" in report.broken[binary].message
    assert [h.source_id for h in index.search("heron")] == [good]
    assert index.counts() == (1, 1)
    assert "broken" in report.to_dict() and linked in report.to_dict()["broken"]


def test_a_linked_shard_folder_is_not_entered(root, index, tmp_path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    sid = write_source(elsewhere, b"the hidden pelican\n")
    (root / "sources").mkdir()
    (root / "sources" / sid[:2]).symlink_to(elsewhere / "sources" / sid[:2])
    index.refresh()
    assert index.search("pelican") == []
    assert index.counts() == (0, 0)


def test_a_source_that_breaks_loses_its_chunks_and_comes_back_when_fixed(root, index):
    sid = write_source(root, b"the gecko waits\n")
    index.refresh()
    good = (root / manifest_path(sid)).read_bytes()
    (root / manifest_path(sid)).write_bytes(b"kind: nonsense\n")
    report = index.refresh()
    assert sid in report.broken
    assert index.search("gecko") == []
    (root / manifest_path(sid)).write_bytes(good)
    report = index.refresh()
    assert report.broken == {}
    assert [h.source_id for h in index.search("gecko")] == [sid]


@pytest.mark.parametrize("text", ["", "   ", "\n", "caf\udcff"])
def test_an_empty_or_unreadable_query_is_invalid(root, index, text):
    write_source(root, b"anything\n")
    index.refresh()
    with pytest.raises(InvalidInput) as caught:
        index.search(text)
    assert caught.value.code == "invalid_query"


def test_bad_filters_and_paging_are_invalid_input(root, index):
    index.refresh()
    with pytest.raises(InvalidInput):
        index.search("x", kinds=["memo"])
    with pytest.raises(InvalidInput):
        index.search("x", sources=["../../etc"])
    with pytest.raises(InvalidInput):
        index.search("x", limit=-1)
    with pytest.raises(InvalidInput):
        index.search("x", offset=-1)


def test_bulk_scores_are_whoosh_scores_under_lanterns_bm25(root, index, tmp_path):
    """Plain word queries are scored from the postings in bulk: the same scores as Whoosh's
    search gives for the same query with lantern's BM25 as its weighting model (words as
    written weighted below their stems)."""
    from whoosh.index import open_dir
    from whoosh.searching import Searcher

    from lantern_git.index import bm25
    from lantern_git.index.analysis import text_query

    for n in range(30):
        write_source(root, transcript(3 + n % 7, word=f"lantern w{n % 4}"), uri=f"s:{n}")
    index.refresh()
    # A second segment and deleted documents: an append and an edit.
    write_source(root, transcript(3, word="lantern w0") + transcript(9, start=3), uri="s:0")
    write_source(root, b"Assistant: lantern w1 rewritten\n", uri="s:1")
    index.refresh()

    ix = open_dir(str(tmp_path / "state" / "chunks"), indexname=INDEX_NAME)
    try:
        with ix.searcher() as plain:
            model = bm25.LanternBM25(bm25.statistics(plain, None))
            searcher = Searcher(plain.reader(), weighting=model, closereader=False)
            for text in [
                "lantern",
                "w1 closing",
                "closing turns lanterns",
                "number4 w2 second",
                '"second line"',
                '"closing turn" lantern',
                '"turn 4"',
            ]:
                query = text_query(text)
                # The bulk path answers these, forms as written included.
                assert bm25.plain_parts(query) is not None, text
                theirs = sorted(round(s, 6) for s, _ in searcher.search(query, limit=None).top_n)
                every = index.search(text)
                assert sorted(hit.score for hit in every) == theirs
                assert len(every) > 3
                # A page is the same slice of the whole order, phrases checked lazily or not.
                for offset, limit in [(0, 1), (0, 3), (2, 2), (1, len(every))]:
                    page = index.search(text, limit=limit, offset=offset)
                    assert page == every[offset : offset + limit]
            # Words that share chunks but never stand in a row: no hit, as in Whoosh.
            query = text_query('"closing third"')
            assert searcher.search(query, limit=None).scored_length() == 0
            assert index.search('"closing third"') == []
            assert index.search('"closing third"', limit=2) == []
    finally:
        ix.close()


@pytest.mark.parametrize(
    ("table", "speedup"),
    [
        ("W3_MATCHER_HAS", "postings"),
        ("W3_MATCHER_VALUES", "positions"),
        ("SEGMENT_READER_PERDOC", "lengths"),
    ],
)
def test_without_the_whoosh_internals_the_public_api_gives_the_same_hits(
    root, index, monkeypatch, table, speedup
):
    from lantern_git.index import whoosh_compat

    for n in range(12):
        write_source(root, transcript(2 + n % 5, word=f"lantern w{n % 3}"), uri=f"s:{n}")
    index.refresh()
    monkeypatch.setattr(whoosh_compat, "_usable", {})
    assert whoosh_compat.usable(speedup)
    query = '"w1 closing" lantern "second line"'
    fast = [hit.to_dict() for hit in index.search(query, limit=7)]

    monkeypatch.setattr(whoosh_compat, table, (*getattr(whoosh_compat, table), "_gone"))
    monkeypatch.setattr(whoosh_compat, "_usable", {})
    assert not whoosh_compat.usable(speedup)
    assert [hit.to_dict() for hit in index.search(query, limit=7)] == fast
    assert len(fast) == 7


def test_a_full_match_counts_the_chunks_the_filters_select(root, index):
    # What a chunk of average length holding each query word once scores (bm25.full_match):
    # each stem's idf, and a tenth of the form as written where it differs ("sings"/"sing"),
    # over the chunks the kinds and sources select.
    note = write_source(root, b"the walrus sings\n", kind="note")
    write_source(root, b"the walrus sleeps\n", kind="log")
    write_source(root, b"a kiwi again\n", kind="log")
    index.refresh()

    def idf(df: int, docs: int) -> float:
        return math.log(1 + (docs - df + 0.5) / (df + 0.5))

    def full(walrus: int, sing: int, docs: int) -> float:
        return idf(walrus, docs) + idf(sing, docs) + 0.1 * idf(sing, docs)

    assert index.raw_scored("walrus sings")[2] == pytest.approx(full(2, 1, 3), abs=1e-9)
    assert index.raw_scored("walrus sings", kinds=["log"])[2] == pytest.approx(full(1, 0, 2))
    assert index.raw_scored("walrus sings", sources=[note])[2] == pytest.approx(full(1, 1, 1))
    assert index.raw_scored("walrus AND sings")[2] is None
