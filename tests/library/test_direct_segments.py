"""A rebuild's segments written without Whoosh's posting pool are Whoosh's segments.

``whoosh_compat``'s direct writer groups each builder's postings by term as they come and
hands them to Whoosh's field writer a block at a time (docs/speed.md). What it writes must be
what Whoosh's own ``SegmentWriter`` writes for the same documents, to the byte, and answer every
search the same: these tests write both ways through the index's real schema and documents.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from whoosh import query as Q
from whoosh.writing import SegmentWriter

from lantern_git.index import search, whoosh_compat
from lantern_git.model.record import Record

WORDS = ["deploy", "deploying", "window", "the", "a", "São", "runs", "ran", "3.5", "ünïcode", "x"]
TEXTS = st.lists(
    st.one_of(st.sampled_from(WORDS), st.text(alphabet="abcdeirsu XYZé0 9.,-*", max_size=8)),
    min_size=1,
    max_size=30,
).map(" ".join)
RECORDS = st.lists(
    st.tuples(
        TEXTS.filter(lambda text: text.strip() != ""),
        st.sampled_from(["fact", "preference", "goal"]),
        st.sampled_from(["global", "team:core", "project:lantern"]),
        st.sampled_from(["active", "superseded", "archived"]),
        st.one_of(st.none(), st.integers(0, 9_999_999_999)),
        st.lists(st.sampled_from(["src:a", "src:b", "src:c"]), max_size=2, unique=True),
    ),
    min_size=1,
    max_size=140,  # past one block of postings (128) for the commonest terms
)


def documents(drawn) -> list[dict]:
    out = []
    for number, (content, kind, scope, status, expires, refs) in enumerate(drawn):
        record = Record.new(
            kind=kind,
            content=content,
            scope=scope,
            priority=number % 101,
            expires_at=expires,
            source_refs=refs,
            now=1_700_000_000 + number,
        )
        record = Record(**{**record.__dict__, "status": status})
        path = f"memory/{record.id[:2]}/{record.id}-{number}.md"
        out.append(search._document(path, record, f"{number:040x}"))
    return out


def written(docs: list[dict], direct: bool) -> tuple[dict, list]:
    """The segment's files (by name without its id) and what a few queries answer."""
    # Its writers' temporary files in a folder of its own: stock RamStorage shares one per
    # index name across processes, and a writer that finishes removes it.
    ix = whoosh_compat.memory_index(search._schema())
    storage = ix.storage
    writer = whoosh_compat._direct_writer()(ix) if direct else SegmentWriter(ix)
    for doc in docs:
        writer.add_document(**doc)
    writer.commit(merge=False)
    (segment,) = ix._segments()
    files = whoosh_compat._segment_files(storage, segment)
    queries = [
        Q.Term("content", "deploy"),
        Q.Phrase("content", ["deploy", "window"]),
        Q.Term("scope", "team:core"),
        Q.Term("cites", "src:b"),
        Q.NumericRange("expires_at", 0, 2_000_000_000),
    ]
    with ix.searcher() as searcher:
        answers = [
            [(hit["path"], hit.score) for hit in searcher.search(query, limit=None)]
            for query in queries
        ]
        answers.append(sorted(searcher.reader().all_terms()))
    return files, answers


def test_the_direct_writer_is_taken_with_the_tested_whoosh(monkeypatch):
    monkeypatch.setattr(whoosh_compat, "_usable", {})
    assert whoosh_compat.usable("direct segments")
    ix = whoosh_compat.memory_index(search._schema())
    writer = whoosh_compat.building_writer(ix)
    try:
        assert isinstance(writer, whoosh_compat._direct_writer())
    finally:
        writer.cancel()


@settings(max_examples=60, deadline=None)
@given(RECORDS)
def test_a_segment_written_directly_is_whoosh_s_to_the_byte(drawn):
    docs = documents(drawn)
    files, answers = written(docs, direct=True)
    expected_files, expected_answers = written(docs, direct=False)
    assert files == expected_files
    assert answers == expected_answers
    assert answers[-1]  # every record has terms (its path at least)


def test_terms_of_several_posting_blocks_are_written_as_whoosh_writes_them():
    """Past 128 postings a term's postings go in blocks: 300 records share their kind, scope
    and status, and most of them two words (three blocks each)."""
    docs = documents(
        [
            (
                f"deploy window w{n % 9} {'again ' * (n % 3)}",
                "fact",
                "team:core",
                "active",
                None,
                [],
            )
            for n in range(300)
        ]
    )
    files, answers = written(docs, direct=True)
    assert (files, answers) == written(docs, direct=False)
    assert len(answers[0]) == 300


def test_a_commit_that_merges_older_segments_gives_whoosh_s_answers():
    """Committed into an index that holds small segments, the writer's merge hands their
    postings to Whoosh's pool: its own go there too, and Whoosh sorts them all."""
    docs = documents(
        [(f"deploy window w{n % 4}", "fact", "team:core", "active", None, []) for n in range(40)]
    )
    found = []
    for direct in (False, True):
        ix = whoosh_compat.memory_index(search._schema())
        for start in (0, 10, 20):
            older = ix.writer()
            for doc in docs[start : start + 10]:
                older.add_document(**doc)
            older.commit(merge=False)
        writer = whoosh_compat._direct_writer()(ix) if direct else ix.writer()
        for doc in docs[30:]:
            writer.add_document(**doc)
        writer.commit(optimize=True)  # the three older segments merged in
        assert len(ix._segments()) == 1
        with ix.searcher() as searcher:
            found.append(
                [
                    (hit["path"], hit.score)
                    for hit in searcher.search(Q.Term("content", "w1"), limit=None)
                ]
            )
    assert found[0] == found[1]
    assert len(found[0]) == 10


def test_without_the_internals_it_drives_a_build_takes_whoosh_s_writer(monkeypatch):
    monkeypatch.setattr(
        whoosh_compat, "POSTINGS_WRITER_HAS", (*whoosh_compat.POSTINGS_WRITER_HAS, "_gone")
    )
    monkeypatch.setattr(whoosh_compat, "_usable", {})
    assert not whoosh_compat.usable("direct segments")
    ix = whoosh_compat.memory_index(search._schema())
    writer = whoosh_compat.building_writer(ix)
    try:
        assert type(writer) is SegmentWriter
    finally:
        writer.cancel()


def test_documents_with_whoosh_s_boost_and_stored_keys_are_written_as_whoosh_writes_them():
    """A rebuild's documents name the same fields each time (sorted once, no boosts); one
    that gives Whoosh's per-document keys, between plain ones, still gets its boosts and its
    own stored value."""
    docs = documents(
        [(f"deploy window n{n}", "fact", "global", "active", None, []) for n in range(6)]
    )
    docs[1]["_boost"] = 2.5
    docs[3]["_content_boost"] = 4.0
    docs[4]["_stored_doc"] = '{"stored": "apart"}'
    files, answers = written(docs, direct=True)
    assert (files, answers) == written(docs, direct=False)
    scores = dict(answers[0])
    plain = scores[docs[0]["path"]]
    assert scores[docs[1]["path"]] > plain and scores[docs[3]["path"]] > plain


def test_the_check_keeps_its_temporary_files_to_itself(monkeypatch, tmp_path):
    """Stock Whoosh keeps an index in memory's temporary files in one folder per index name
    for the whole machine, and the writer that finishes deletes it: two processes running
    the check at once (two xdist workers, two lantern commands) failed it. Here that folder's
    name is taken by a file, as another process could have left it: the check must not care."""
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    (tmp_path / "probe.tmp").write_text("another process's")
    monkeypatch.setattr(whoosh_compat, "_usable", {})
    assert whoosh_compat.usable("direct segments")
