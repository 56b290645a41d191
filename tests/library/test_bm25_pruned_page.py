"""A keyword page scored only where it can land (``bm25._pruned``) holds exactly the documents
and scores that scoring every posting gives: the best ``end`` and their ties, the same floats.

Real Whoosh indexes in memory, of random documents over a few words (so that words repeat
within a document and across many), in several segments, with deleted documents, filters and
weighted words; the reference is every posting scored (``bm25.raw_scored``, which never
prunes) and cut by the page rule the test states itself.
"""

from __future__ import annotations

import contextlib
import heapq
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from whoosh import query as Q
from whoosh.analysis import SpaceSeparatedTokenizer
from whoosh.fields import TEXT, Schema

from lantern_git.index import bm25, whoosh_compat
from lantern_git.index.whoosh_compat import memory_index

WORDS = ["alpha", "beta", "gamma", "delta"]


def build(segments: list[list[list[str]]], deleted: set[int]) -> Any:
    """An index of these documents, one commit (a segment) per list, then ``deleted`` (by
    the documents' order) deleted. Whoosh names a segment from the global ``random``, which
    Hypothesis seeds alike for each example: the postings and layers kept by segment name are
    dropped first, or one example's would answer for another's."""
    whoosh_compat._postings.clear()
    bm25._layers.clear()
    ix = memory_index(Schema(content=TEXT(analyzer=SpaceSeparatedTokenizer())))
    for docs in segments:
        writer = ix.writer()
        for words in docs:
            writer.add_document(content=" ".join(words))
        writer.commit(merge=False)
    if deleted:
        writer = ix.writer()
        for docnum in deleted:
            writer.delete_document(docnum)
        writer.commit(merge=False)
    return ix


def query_of(terms: list[tuple[str, float]]) -> Any:
    words = [Q.Term(bm25.FIELD, word, boost=boost) for word, boost in terms]
    return words[0] if len(words) == 1 else Q.Or(words)


def page_of_every_posting(
    searcher: Any, query: Any, allowed: set[int] | None, excluded: set[int] | None, end: int
) -> list[tuple[float, int]]:
    """The page as stated: every matching document scored, then the best ``end`` by score
    rounded to 6 places, with every document whose rounded score ties the last."""
    docs, scores, _ = bm25.raw_scored(searcher, query, allowed, excluded)
    found = [(round(score, 6), doc) for doc, score in zip(docs, scores)]
    if len(found) > end:
        last = round(heapq.nlargest(end, scores)[-1], 6)
        found = [item for item in found if item[0] >= last]
    return sorted(found)


def padded(segments: list[list[list[str]]], length: int | None) -> list[list[list[str]]]:
    """The documents cut or padded to ``length`` words (None: as they are)."""
    if length is None:
        return segments
    return [[(doc + ["pad"] * length)[:length] for doc in docs] for docs in segments]


documents = st.lists(st.sampled_from(WORDS), min_size=0, max_size=24)
segments = st.lists(st.lists(documents, min_size=1, max_size=60), min_size=1, max_size=3)
terms = st.lists(
    st.tuples(st.sampled_from(WORDS), st.sampled_from([1.0, 0.1, 0.5, 2.0])),
    min_size=1,
    max_size=4,
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    segments=segments,
    terms=terms,
    end=st.integers(min_value=1, max_value=25),
    data=st.data(),
)
def test_a_pruned_page_is_the_page_of_every_posting_scored(segments, terms, end, data):
    # Documents all of one length (padded with a word no query asks for), most of the time:
    # then a bound is some document's very score, and a bound a hair too low, or a margin
    # too thin, leaves out a document of the page.
    segments = padded(segments, data.draw(st.sampled_from([None, 6, 12, 24, 24])))
    count = sum(map(len, segments))
    every = list(range(count))
    deleted = set(data.draw(st.lists(st.sampled_from(every), max_size=count // 4)))
    allowed = data.draw(st.none() | st.sets(st.sampled_from(every)))
    excluded = data.draw(st.none() | st.sets(st.sampled_from(every)))
    query = query_of(terms)
    with build(segments, deleted).searcher() as searcher, every_page_pruned():
        expected = page_of_every_posting(searcher, query, allowed, excluded, end)
        assert sorted(bm25.scored(searcher, query, allowed, excluded, end)) == expected
        # The pruned scorer itself, where it answers: each of its scores the same float as
        # every posting scored gives, and the page cut from them the same.
        raw = dict(zip(*bm25.raw_scored(searcher, query, allowed, excluded)[:2]))
        stats = bm25.statistics(searcher, allowed)
        parts = bm25.plain_parts(query)
        read = bm25._read(searcher, parts)
        keep = allowed if not excluded or allowed is None else allowed - excluded
        wanted = bm25._wanted(keep, excluded if allowed is None else None)
        idfs = bm25._idfs(searcher, parts, stats, read)
        pruned = bm25._pruned(read, parts, idfs, stats, wanted, end)
        if pruned is not None:
            docs, scores = pruned
            assert all(raw[doc] == score for doc, score in zip(docs, scores))
            cut = [(round(score, 6), doc) for doc, score in zip(docs, scores)]
            if len(cut) > end:
                last = round(heapq.nlargest(end, scores)[-1], 6)
                cut = [item for item in cut if item[0] >= last]
            assert sorted(cut) == expected


@contextlib.contextmanager
def every_page_pruned() -> Iterator[None]:
    """The pruned scorer used for pages of any size (``PRUNE_FROM`` 0), never giving up for
    its cost (``PRUNED_SHARE`` 0), and scoring one document at a time at least
    (``BATCH_AT_LEAST``): on indexes this small it is not used or gives up on
    most pages, as scoring every posting costs less there, and its first batch would hold
    every candidate; the property would hold only of the fallback and the first batch.
    Neither changes an answer."""
    kept = bm25.PRUNED_SHARE, bm25.BATCH_AT_LEAST, bm25.PRUNE_FROM
    bm25.PRUNED_SHARE, bm25.BATCH_AT_LEAST, bm25.PRUNE_FROM = 0, 1, 0
    try:
        yield
    finally:
        bm25.PRUNED_SHARE, bm25.BATCH_AT_LEAST, bm25.PRUNE_FROM = kept


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    segments=segments,
    terms=terms,
    end=st.integers(min_value=1, max_value=25),
    length=st.sampled_from([None, 12]),
)
def test_a_page_is_the_same_whether_pruning_gives_up_or_not(segments, terms, end, length):
    segments = padded(segments, length)
    query = query_of(terms)
    with build(segments, set()).searcher() as searcher:
        expected = page_of_every_posting(searcher, query, None, None, end)
        assert sorted(bm25.scored(searcher, query, None, None, end)) == expected


def common_word_index() -> Any:
    """600 documents in two segments, each holding ``alpha`` once, and one in twenty holding it
    more often: most of the word's postings at its lowest weight."""
    docs = [["alpha", "beta"] + ["alpha"] * (n % 7 if n % 20 == 0 else 0) for n in range(600)]
    return build([docs[:300], docs[300:]], set())


def test_a_page_of_a_common_word_scores_a_few_documents_and_matches_every_posting_scored(
    monkeypatch,
):
    scored_docs: list[int] = []
    real = bm25.document_scores

    def counting(terms, docs, norms):
        scored_docs.extend(docs)
        return real(terms, docs, norms)

    monkeypatch.setattr(bm25, "document_scores", counting)
    monkeypatch.setattr(bm25, "PRUNE_FROM", 1200)  # the query's 1,200 postings are pruned
    query = query_of([("alpha", 1.0), ("beta", 0.1)])
    with common_word_index().searcher() as searcher:
        page = sorted(bm25.scored(searcher, query, None, None, 10))
        assert page == page_of_every_posting(searcher, query, None, None, 10)
    # 600 match; the page is among the 30 holding alpha more than once.
    assert 10 <= len(page) < 30
    assert 0 < len(scored_docs) <= 30
    # A page of one is pruned too.
    scored_docs.clear()
    with common_word_index().searcher() as searcher:
        page = sorted(bm25.scored(searcher, query, None, None, 1))
        assert page == page_of_every_posting(searcher, query, None, None, 1)
    assert 0 < len(scored_docs) <= 30


def test_a_pruned_page_never_scores_a_document_deleted_after_its_segment_was_read():
    # Two segments (the second's documents numbered from 5); the word's heaviest posting is in
    # the second. A long-running process read the postings before the deletion and keeps
    # them, deleted document included: the page must still leave it out.
    once = ["alpha", "pad", "pad", "pad", "pad"]
    ix = build([[once] * 5, [once] * 3 + [["alpha"] * 5, ["alpha"] * 3 + ["pad"] * 2]], set())
    query = query_of([("alpha", 1.0)])
    with ix.searcher() as searcher, every_page_pruned():
        assert [doc for _, doc in bm25.scored(searcher, query, None, None, 1)] == [8]
    writer = ix.writer()
    writer.delete_document(8)
    writer.commit(merge=False)
    with ix.searcher() as searcher, every_page_pruned():
        assert searcher.reader().has_deletions()
        page = bm25.scored(searcher, query, None, None, 1)
        assert [doc for _, doc in page] == [9]
        assert sorted(page) == page_of_every_posting(searcher, query, None, None, 1)


def pruned(searcher: Any, query: Any, end: int) -> tuple[list[int], list[float]] | None:
    """The pruned scorer's answer for a page of ``query`` over the whole index (None: it gave
    up)."""
    parts = bm25.plain_parts(query)
    read = bm25._read(searcher, parts)
    stats = bm25.statistics(searcher, None)
    idfs = bm25._idfs(searcher, parts, stats, read)
    return bm25._pruned(read, parts, idfs, stats, bm25._wanted(None, None), end)


def test_pruning_gives_up_where_its_bounds_are_loose_and_the_page_is_still_exact():
    # 600 records of one length, holding the word 1 to 40 times: a bound at a weight is that
    # weight's very score, and the first batch settles the page.
    records = [["alpha"] * (n % 40 + 1) + ["pad"] * (39 - n % 40) for n in range(600)]
    shares = [records[at : at + 200] for at in range(0, 600, 200)]
    query = query_of([("alpha", 1.0)])
    with build(shares, set()).searcher() as searcher:
        assert pruned(searcher, query, 10) is not None
    # One record of the word alone makes each segment's shortest length norm tiny, so every
    # bound is far above the others' scores: the levels must come down nearly to the bottom,
    # raising most postings again and again, more work than scoring each posting once.
    with build([[["alpha"]] + shares[0], *shares[1:]], set()).searcher() as searcher:
        assert pruned(searcher, query, 10) is None
        page = sorted(bm25.scored(searcher, query, None, None, 10))
        assert page == page_of_every_posting(searcher, query, None, None, 10)


def test_pruning_scores_its_first_batch_of_twice_the_page_best_bound_first(monkeypatch):
    # 40 records hold the word five times, 200 once (tying, of one length, at their weight):
    # a page of 3 is the 40, and it scores the raised records
    # in batches of twice the page (6 here, with the least batch lowered to 1), the first
    # before the page's last score is known, then the rest whose bound reaches it.
    batches: list[int] = []
    real = bm25.document_scores

    def counting(terms, docs, norms):
        batches.append(len(docs))
        return real(terms, docs, norms)

    monkeypatch.setattr(bm25, "document_scores", counting)
    monkeypatch.setattr(bm25, "BATCH_AT_LEAST", 1)
    # 2,000 records without the word make it rare: scores above 1, where a bound's scale shows.
    records = [["alpha"] * 5] * 40 + [["alpha"] * 1 + ["pad"] * 4] * 200 + [["pad"] * 5] * 2000
    query = query_of([("alpha", 1.0)])
    with build([records], set()).searcher() as searcher:
        found = pruned(searcher, query, 3)
        assert found is not None and len(found[0]) == 40
        # 6; then the rest best bound first from the top, in doubling batches: 6 (the first
        # batch's again, scored already, so not scored twice), 12 and the 22 left.
        assert batches == [6, 12, 22]
        assert sorted(bm25.scored(searcher, query, None, None, 3)) == page_of_every_posting(
            searcher, query, None, None, 3
        )


def test_levels_come_down_until_the_floor_halves_its_distance_to_the_page_s_last_score(
    monkeypatch,
):
    # Records of ten words holding the word 1 to 9 times (one each, and 100 once), and one
    # record of the word alone: its length norm (K1 * (1 - B + B * 1 / avg), ~0.39) bounds
    # every level, while the others' is ~1.21. A page of one:
    # - level 9: nothing above it; down one level, to 8.
    # - level 8: the record holding it 9 times scores 19.8 / 10.21 = 1.940 (times the idf),
    #   below the floor at 8 (17.6 / 8.39 = 2.097): down to halfway, 2.019, which takes
    #   levels 7 (2.084), 6 (2.066), 5 (2.041) and 4 (2.004).
    # - level 4: the floor 2.004 still above 1.940: halfway is 1.972; level 3 (1.947).
    # - level 3: halfway 1.944: level 2 (1.841), below the page's last score: done.
    visited: list[list[float]] = []
    real = bm25.raised_bounds

    def recording(terms, levels, min_norm):
        visited.append(list(levels))
        return real(terms, levels, min_norm)

    monkeypatch.setattr(bm25, "raised_bounds", recording)
    padded_to_ten = [["alpha"] * n + ["pad"] * (10 - n) for n in range(1, 10)]
    records = [*padded_to_ten, *[["alpha"] + ["pad"] * 9] * 100, ["alpha"]]
    query = query_of([("alpha", 1.0)])
    with build([records], set()).searcher() as searcher:
        found = pruned(searcher, query, 1)
        assert found is not None
        assert visited == [[9.0], [8.0], [4.0], [3.0], [2.0]]
        assert sorted(bm25.scored(searcher, query, None, None, 1)) == page_of_every_posting(
            searcher, query, None, None, 1
        )


@pytest.mark.parametrize("once", [64, 69])
def test_pruning_gives_up_once_twice_its_work_passes_every_posting(once):
    # Records of 20 words: 10 hold the word 3 times, 20 twice, ``once`` once; and one of 6
    # words holding it once (the shortest length norm). A page of one, by levels:
    # - 3: nothing above it; down to 2.
    # - 2: the 10 above it raised (work 10) and scored as a batch (work 20); the floor at 2
    #   still stands above their score, so down to 1.
    # - 1: the 30 above it raised: work 50, against 95 postings (``once`` 64) or 100 (69).
    # Past half of every posting it gives up (None) and the page scores them all.
    records = [["alpha"] * 3 + ["pad"] * 17] * 10 + [["alpha"] * 2 + ["pad"] * 18] * 20
    records += [["alpha"] + ["pad"] * 19] * once + [["alpha"] + ["pad"] * 5]
    query = query_of([("alpha", 1.0)])
    with build([records], set()).searcher() as searcher:
        found = pruned(searcher, query, 1)
        assert (found is None) == (len(records) < 2 * 50)
        assert sorted(bm25.scored(searcher, query, None, None, 1)) == page_of_every_posting(
            searcher, query, None, None, 1
        )
