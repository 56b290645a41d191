"""Lantern's BM25 (``index/bm25.py``) asked directly, over small Whoosh indexes in memory built
with the store's own text field: every path (one word, words joined by OR, phrases, Whoosh's
search for anything else), scopes, exclusions, deleted documents and a page's cut.

Expected scores are computed here from the documented formula (docs/search.md, "How ranking
works"): Lucene's idf ``ln(1 + (N - df + 0.5) / (df + 0.5))``, ``K1 = 1.2``, ``B = 0.75``,
``N``, ``df`` and the average length over the documents searched, a word's form as written at
a tenth of its stem's weight. Fast (no store, no process), so the mutation run of bm25.py
(benchmarks/mutation.py) asks these first.
"""

from __future__ import annotations

import math
from collections.abc import Iterator

import pytest
from whoosh import query as Q
from whoosh.fields import ID, Schema
from whoosh.lang.porter2 import stem

from lantern_git.index import bm25, whoosh_compat
from lantern_git.index.analysis import text_query, word_forms

K1, B = 1.2, 0.75

# Two segments (documents 0-3, then 4-7). No word here but "mangoes" differs from its stem.
SEGMENTS = [
    ["mango pear plum", "mango mango kiwi lime melon fig", "pear kiwi", "pear plum mango"],
    ["plum fig date", "lime", "kiwi mango pear", "mangoes lime lime"],
]
DOCS = [text for segment in SEGMENTS for text in segment]


def terms(text: str) -> list[str]:
    """A document's index terms: each word as written, and its stem where that differs."""
    found = []
    for word in text.split():
        found.append(word)
        if stem(word) != word:
            found.append(stem(word))
    return found


def by_hand(query: list[tuple[str, float]], doc: int, counted: list[int]) -> float:
    """The documented formula for ``doc``, statistics over the documents ``counted``."""
    n = len(counted)
    avg = sum(len(DOCS[d].split()) for d in counted) / n
    length = len(DOCS[doc].split())
    score = 0.0
    for term, weight in query:
        tf = terms(DOCS[doc]).count(term)
        if not tf:
            continue
        df = sum(1 for d in counted if term in terms(DOCS[d]))
        idf = math.log(1 + (n - df + 0.5) / (df + 0.5))
        score += weight * idf * tf * (K1 + 1) / (tf + K1 * (1 - B + B * length / avg))
    return score


def expected(
    query: list[tuple[str, float]], counted: list[int], shown: list[int] | None = None
) -> dict[int, float]:
    scores = {d: by_hand(query, d, counted) for d in (counted if shown is None else shown)}
    return {d: s for d, s in scores.items() if s > 0}


def index_of(segments: list[list[str]], deleted: tuple[int, ...] = ()) -> object:
    ix = whoosh_compat.memory_index(Schema(name=ID(stored=True), content=word_forms()))
    for segment in segments:
        writer = ix.writer()
        for text in segment:
            writer.add_document(name=text, content=text)
        writer.commit(merge=False)
    if deleted:
        writer = ix.writer()
        for docnum in deleted:
            writer.delete_document(docnum)
        writer.commit(merge=False)
    return ix


@pytest.fixture(scope="module")
def searcher() -> Iterator[object]:
    ix = index_of(SEGMENTS)
    with ix.searcher() as found:
        assert [base for _, base in found.reader().leaf_readers()] == [0, 4]
        yield found


def scores(found: list[tuple[float, int]]) -> dict[int, float]:
    assert len({doc for _, doc in found}) == len(found), "each document once"
    return {doc: score for score, doc in found}


def test_idf_is_lucene_s_and_never_counts_more_holders_than_documents():
    assert bm25.idf(1, 5) == pytest.approx(math.log(1 + 4.5 / 1.5), abs=1e-12)
    assert bm25.idf(5, 5) == pytest.approx(math.log(1 + 0.5 / 5.5), abs=1e-12)
    # Deleted documents still counted by Whoosh's document frequency: never above N.
    assert bm25.idf(7, 5) == bm25.idf(5, 5)
    assert bm25.idf(0, 0) == pytest.approx(math.log(2), abs=1e-12)


def test_one_word_scores_the_formula_over_every_document(searcher):
    found = scores(bm25.scored(searcher, text_query("kiwi"), None))
    assert found == pytest.approx(expected([("kiwi", 1.0)], list(range(8))), abs=1e-6)
    assert set(found) == {1, 2, 6}


def test_words_joined_by_or_sum_their_scores(searcher):
    query = [("mango", 1.0), ("kiwi", 1.0), ("fig", 1.0)]
    found = scores(bm25.scored(searcher, text_query("mango kiwi fig"), None))
    assert found == pytest.approx(expected(query, list(range(8))), abs=1e-6)
    assert set(found) == {0, 1, 2, 3, 4, 6, 7}


def test_a_form_as_written_weighs_a_tenth_of_its_stem(searcher):
    # "mangoes" asks for the form as written (weight 0.1) and its stem "mango" (weight 1).
    query = [("mangoes", 0.1), ("mango", 1.0)]
    found = scores(bm25.scored(searcher, text_query("mangoes"), None))
    assert found == pytest.approx(expected(query, list(range(8))), abs=1e-6)
    assert found[7] > found[0]


@pytest.mark.parametrize("text", ["mango kiwi fig", "mango AND kiwi", "mang*"])
def test_the_statistics_are_those_of_the_documents_searched(searcher, text):
    # Document 6 without 2 (its number within its segment): counted by where it stands.
    allowed = [0, 1, 5, 6]
    query = {
        "mango kiwi fig": [("mango", 1.0), ("kiwi", 1.0), ("fig", 1.0)],
        "mango AND kiwi": [("mango", 1.0), ("kiwi", 1.0)],
        # A prefix asks for each term it covers, every one at weight 1.
        "mang*": [("mango", 1.0), ("mangoes", 1.0)],
    }[text]
    want = expected(query, allowed)
    if text == "mango AND kiwi":
        want = {d: s for d, s in want.items() if {"mango", "kiwi"} <= set(terms(DOCS[d]))}
    found = scores(bm25.scored(searcher, text_query(text), set(allowed)))
    assert found == pytest.approx(want, abs=1e-6)
    # Over the whole index the same words weigh otherwise: the statistics are the scope's.
    everything = scores(bm25.scored(searcher, text_query(text), None))
    assert any(everything[d] != pytest.approx(found[d], abs=1e-6) for d in found)


@pytest.mark.parametrize("allowed", [None, {0, 1, 2, 3, 4, 5, 6}])
@pytest.mark.parametrize("text", ["mango kiwi", "mango", '"mango pear"', "mango AND pear"])
def test_excluded_documents_are_left_out_and_change_no_other_score(searcher, text, allowed):
    query = text_query(text)
    whole = scores(bm25.scored(searcher, query, allowed))
    assert 0 in whole
    left = scores(bm25.scored(searcher, query, allowed, {0}))
    assert left == {d: s for d, s in whole.items() if d != 0}
    raw_docs, raw, _ = bm25.raw_scored(searcher, query, allowed, {0})
    assert dict(zip(raw_docs, (round(s, 6) for s in raw))) == left


def test_a_phrase_scores_its_words_where_they_stand_in_a_row(searcher):
    found = scores(bm25.scored(searcher, text_query('"mango pear"'), None))
    # "pear plum mango" and "mango mango kiwi..." hold both words, never in a row.
    query = [("mango", 1.0), ("pear", 1.0)]
    assert found == pytest.approx(expected(query, list(range(8)), [0, 6]), abs=1e-6)
    # A segment holding only some of a phrase's words ("fig", not "date") has none of it.
    date = scores(bm25.scored(searcher, text_query('"fig date"'), None))
    want = expected([("fig", 1.0), ("date", 1.0)], list(range(8)), [4])
    assert date == pytest.approx(want, abs=1e-6)
    # A phrase beside a word: the phrase's documents get both.
    both = scores(bm25.scored(searcher, text_query('"mango pear" lime'), None))
    lime = expected([("lime", 1.0)], list(range(8)))
    want = {d: found.get(d, 0.0) + lime.get(d, 0.0) for d in {*found, *lime}}
    assert both == pytest.approx(want, abs=1e-6)


@pytest.mark.parametrize(
    "text", ["mango", "mango kiwi", "mango AND pear", "mango AND kiwi", "m*", "l* OR p*"]
)
def test_a_page_keeps_the_best_and_every_tie_with_the_last(searcher, text):
    query = text_query(text)
    whole = scores(bm25.scored(searcher, query, None))
    ranked = sorted(whole.values(), reverse=True)
    if text.endswith("*"):  # Whoosh's own search: pages above a third score, and a tie
        assert len(set(ranked)) >= 3 and len(set(ranked)) < len(ranked)
    for end in range(1, len(ranked) + 2):
        page = scores(bm25.scored(searcher, query, None, end=end))
        last = ranked[min(end, len(ranked)) - 1]
        assert page == {d: s for d, s in whole.items() if s >= last}, end


def test_raw_scores_are_the_scores_before_rounding(searcher):
    for text in ("mango kiwi fig", "kiwi", '"mango pear"', "mango AND kiwi"):
        query = text_query(text)
        docs, raw, _ = bm25.raw_scored(searcher, query, None)
        assert {d: round(s, 6) for d, s in zip(docs, raw)} == scores(
            bm25.scored(searcher, query, None)
        )
    docs, raw, _ = bm25.raw_scored(searcher, text_query("kiwi"), None)
    want = expected([("kiwi", 1.0)], list(range(8)))
    assert dict(zip(docs, raw)) == pytest.approx(want, abs=1e-12)


def test_words_held_counts_the_typed_words_each_document_holds(searcher):
    # "the" is a stop word; "mangoes" is held as written or by its stem "mango".
    assert bm25.words_held(searcher, "Mangoes kiwi the kiwi lime") == (
        3,
        {0: 1, 1: 3, 2: 1, 3: 1, 5: 1, 6: 2, 7: 2},
    )
    assert bm25.words_held(searcher, "absent") == (1, {})


def idf_shares_by_hand(words: list[str], counted: list[int]) -> dict[int, float]:
    """Each document of ``counted`` holding any of ``words`` (as written or by stem): the
    share of the words' idfs, over ``counted``, that it holds."""

    def holds(doc: int, word: str) -> bool:
        return bool({word, stem(word)} & set(terms(DOCS[doc])))

    n = len(counted)
    idfs = {}
    for word in words:
        df = sum(holds(d, word) for d in counted)
        idfs[word] = math.log(1 + (n - df + 0.5) / (df + 0.5))
    total = sum(idfs.values())
    found = {d: sum(idfs[w] for w in words if holds(d, w)) / total for d in counted}
    return {d: share for d, share in found.items() if share > 0}


def test_an_idf_share_is_the_idf_of_the_typed_words_held_over_all_of_theirs(searcher):
    # "the" is a stop word; "mangoes" is held as written or by its stem "mango"; "absent" is
    # in no document and still counts in the sum.
    text = "Mangoes kiwi the absent"
    words = ["mangoes", "kiwi", "absent"]
    assert bm25.idf_shares(searcher, text, None) == pytest.approx(
        idf_shares_by_hand(words, list(range(8))), abs=1e-12
    )
    scope = {1, 2, 4, 6, 7}
    assert bm25.idf_shares(searcher, text, scope) == pytest.approx(
        idf_shares_by_hand(words, sorted(scope)), abs=1e-12
    )
    assert bm25.idf_shares(searcher, "the", None) == {}


def deleted_after_a_read(read) -> object:
    """The index of SEGMENTS with documents 1 and 6 deleted after ``read(searcher)`` read it
    once, as a long-running process has: a segment's postings are kept by the process,
    deleted documents included."""
    ix = index_of(SEGMENTS)
    with ix.searcher() as before:
        assert {1, 6} <= set(read(before))
    writer = ix.writer()
    for docnum in (1, 6):
        writer.delete_document(docnum)
    writer.commit(merge=False)
    return ix


def test_words_held_counts_no_deleted_document():
    ix = deleted_after_a_read(lambda searcher: bm25.words_held(searcher, "kiwi lime")[1])
    with ix.searcher() as found:
        assert bm25.words_held(found, "kiwi lime") == (2, {2: 1, 5: 1, 7: 1})


def test_an_idf_share_counts_no_deleted_document():
    ix = deleted_after_a_read(lambda searcher: bm25.idf_shares(searcher, "kiwi lime", None))
    with ix.searcher() as found:
        assert found.reader().has_deletions()
        live = [d for d in range(8) if d not in (1, 6)]
        assert bm25.idf_shares(found, "kiwi lime", None) == pytest.approx(
            idf_shares_by_hand(["kiwi", "lime"], live), abs=1e-12
        )


@pytest.mark.parametrize(
    ("text", "parts"),
    [
        ("kiwi", [(("kiwi",), 1.0)]),
        ("kiwi fig", [(("kiwi",), 1.0), (("fig",), 1.0)]),
        ("mangoes", [(("mangoes",), 0.1), (("mango",), 1.0)]),
        ('"mango pear" fig', [(("mango", "pear"), 1.0), (("fig",), 1.0)]),
        ("mang*", None),
        ("kiwi AND fig", None),
        ("kiwi NOT fig", None),
        # A word's boost is its weight.
        ("kiwi^2 fig", [(("kiwi",), 2.0), (("fig",), 1.0)]),
        ("(kiwi fig)^2", [(("kiwi",), 2.0), (("fig",), 2.0)]),
        ('"mango pear"~3', None),
        ('"mango pear"^2', None),
    ],
)
def test_only_words_and_phrases_joined_by_or_take_the_bulk_path(text, parts):
    assert bm25.plain_parts(text_query(text)) == parts


@pytest.mark.parametrize(
    "query",
    [
        Q.Or([Q.Term("content", "kiwi"), Q.Term("name", "kiwi")]),
        Q.Term("name", "kiwi"),
        Q.Or([Q.Term("content", "kiwi"), Q.Term("content", "fig")], boost=2.0),
        Q.Or([Q.Term("content", "kiwi"), Q.Term("content", "fig")], boost=0.5),
        Q.Or([Q.Term("content", "kiwi"), Q.Term("content", "fig")], scale=0.5),
        Q.Term("content", "kiwi", boost=0.0),
        Q.Term("content", "kiwi", boost=-1.0),
        Q.Term("content", b"kiwi"),
        Q.Phrase("content", ["mango", b"pear"]),
        Q.Phrase("content", []),
        Q.Phrase("content", ["mango", "pear"], slop=0),
        Q.Phrase("content", ["mango", "pear"], boost=0.5),
        Q.Or([Q.Term("content", "kiwi"), Q.And([Q.Term("content", "fig")])]),
    ],
)
def test_a_query_whoosh_must_score_is_left_to_it(query):
    assert bm25.plain_parts(query) is None


def test_a_scope_s_statistics_find_its_documents_in_a_segment_numbered_from_three():
    # The same documents, the second segment from document 3: a scope's holders of a word
    # are counted where they stand (segment's first number + number within it).
    ix = index_of([DOCS[:3], DOCS[3:]])
    with ix.searcher() as found:
        assert [base for _, base in found.reader().leaf_readers()] == [0, 3]
        scope = bm25.statistics(found, {5, 6, 7})
        assert scope.df(found, "lime") == 2  # documents 5 and 7, not 1
        assert scope.df(found, "mango") == 2  # documents 6 and 7 (its stem)
        query = [("mango", 1.0), ("mangoes", 1.0)]
        got = scores(bm25.scored(found, text_query("mang*"), {5, 6, 7}))
        assert got == pytest.approx(expected(query, [5, 6, 7]), abs=1e-6)


def test_the_statistics_of_no_documents_and_of_some(searcher):
    everything = bm25.statistics(searcher, None)
    lengths = [len(text.split()) for text in DOCS]
    assert (everything.docs, everything.allowed) == (8, None)
    assert everything.avg_length == pytest.approx(sum(lengths) / 8)
    some = bm25.statistics(searcher, {1, 5, 6})
    assert (some.docs, some.avg_length) == (3, pytest.approx((6 + 1 + 3) / 3))
    assert some.df(searcher, "lime") == 2
    assert everything.df(searcher, "lime") == 3
    # No documents: an average length of 1 rather than a division by zero.
    assert (bm25.statistics(searcher, set()).docs, bm25.statistics(searcher, set()).avg_length) == (
        0,
        1.0,
    )


@pytest.mark.parametrize("text", ["kiwi", "kiwi lime", '"mango pear"', "kiwi AND pear"])
def test_a_deleted_document_is_never_scored(text):
    ix = index_of(SEGMENTS)
    # Read once before the deletion, as a long-running process (the MCP server, the web app)
    # has: a segment's postings are kept by the process, deleted documents included.
    with ix.searcher() as before:
        assert {1, 6} & set(scores(bm25.scored(before, text_query(text), None)))
    writer = ix.writer()
    for docnum in (1, 6):
        writer.delete_document(docnum)
    writer.commit(merge=False)
    with ix.searcher() as found:
        assert found.reader().has_deletions()
        for allowed in (None, {0, 2, 3, 4, 5, 7}):
            docs = scores(bm25.scored(found, text_query(text), allowed))
            assert docs and not {1, 6} & set(docs), (allowed, docs)


def test_a_phrase_page_in_a_segment_with_deletions_finds_every_match():
    # With a deletion, a segment's positions are read one document at a time, in order: the
    # better match (shorter) comes later in the segment than the other.
    ix = index_of([["mango pear plum plum plum", "kiwi", "mango pear"]], deleted=(1,))
    with ix.searcher() as found:
        query = text_query('"mango pear"')
        whole = scores(bm25.scored(found, query, None))
        assert set(whole) == {0, 2} and whole[2] > whole[0]
        assert scores(bm25.scored(found, query, None, end=2)) == whole
        assert scores(bm25.scored(found, query, None, end=1)) == {2: whole[2]}


def test_a_lone_phrase_s_page_is_the_best_of_all_its_matches():
    # 150 candidates holding both words, most not in a row: a page checks them best first in
    # batches and stops once the page and its ties are settled.
    texts = []
    for n in range(150):
        filler = " ".join(["plum"] * (n % 7))
        pair = "mango pear" if n % 3 == 0 else "pear kiwi mango"
        texts.append(f"{pair} {filler}".strip())
    ix = index_of([texts[:80], texts[80:]])
    with ix.searcher() as found:
        query = text_query('"mango pear"')
        whole = scores(bm25.scored(found, query, None))
        assert set(whole) == {n for n in range(150) if n % 3 == 0}
        ranked = sorted(whole.values(), reverse=True)
        for end in (1, 5, 17, 49, 50, 60):
            page = scores(bm25.scored(found, query, None, end=end))
            last = ranked[min(end, len(ranked)) - 1]
            assert page == {d: s for d, s in whole.items() if s >= last}, end
        # Beside a word, the phrase's every match counts, wherever its part of the score ranks.
        query = text_query('"mango pear" plum')
        whole = scores(bm25.scored(found, query, None))
        ranked = sorted(whole.values(), reverse=True)
        for end in (1, 3, 10):
            page = scores(bm25.scored(found, query, None, end=end))
            last = ranked[end - 1]
            assert page == {d: s for d, s in whole.items() if s >= last}, end


def test_a_lone_phrase_s_page_keeps_ties_found_in_a_later_batch():
    # 100 candidates of one score, every other one in a row: the page's ties lie past the
    # first batch of candidates checked.
    texts = ["mango pear plum" if n % 2 == 0 else "pear mango plum" for n in range(100)]
    # Two more documents make the score 0.0491425...: to 5 places it would read lower than to
    # the 6 places scores are compared at.
    ix = index_of([[*texts, "kiwi lime fig", "kiwi lime fig"]])
    with ix.searcher() as found:
        page = scores(bm25.scored(found, text_query('"mango pear"'), None, end=3))
        assert set(page) == set(range(0, 100, 2))
        assert set(page.values()) == {0.049143}


def test_a_lone_phrase_s_page_settled_by_its_first_batch_stops_there():
    # 100 candidates; the two in a row (the shortest, so the best) are checked in the first
    # batch, which settles a page of two: the rest are never read.
    texts = ["mango pear", "mango pear"] + ["pear kiwi mango plum"] * 98
    ix = index_of([texts])
    with ix.searcher() as found:
        query = text_query('"mango pear"')
        whole = scores(bm25.scored(found, query, None))
        assert set(whole) == {0, 1}
        assert scores(bm25.scored(found, query, None, end=2)) == whole
        assert scores(bm25.scored(found, query, None, end=1)) == whole  # a tie


def test_scores_over_an_average_length_that_is_not_whole():
    # Lengths 2, 4 and 2: an average of 8 / 3, and documents of a length unlike it.
    docs = ["mango pear", "mango pear plum fig", "pear kiwi"]
    ix = index_of([docs])
    with ix.searcher() as found:
        assert bm25.statistics(found, None).avg_length == pytest.approx(8 / 3)
        for text, words in (("mango", ["mango"]), ('"mango pear"', ["mango", "pear"])):
            got = scores(bm25.scored(found, text_query(text), None))
            want = {}
            for doc in (0, 1):
                length, score = len(docs[doc].split()), 0.0
                for word in words:
                    df = sum(1 for d in docs if word in d.split())
                    idf = math.log(1 + (3 - df + 0.5) / (df + 0.5))
                    score += idf * (K1 + 1) / (1 + K1 * (1 - B + B * length / (8 / 3)))
                want[doc] = score
            assert got == pytest.approx(want, abs=1e-6), text


def test_a_lone_phrase_s_page_keeps_the_ties_of_its_last_below_a_better_first():
    # One better match (shorter), then 100 candidates of one score, every other in a row: a
    # page of two is the better one and every tie of the second, past the first batch too.
    texts = ["mango pear"]
    texts += ["mango pear plum" if n % 2 == 0 else "pear mango plum" for n in range(100)]
    ix = index_of([[*texts, "kiwi lime fig", "kiwi lime fig"]])
    with ix.searcher() as found:
        page = scores(bm25.scored(found, text_query('"mango pear"'), None, end=2))
        assert set(page) == {0, *range(1, 101, 2)}
        assert len(set(page.values())) == 2


def test_a_lone_phrase_s_page_checks_each_batch_whole():
    # 300 candidates of one score, every other in a row, a page of 24: its ties run through
    # batches of 96, 192 and more, and every candidate of each is checked.
    texts = ["mango pear plum" if n % 2 == 0 else "pear mango plum" for n in range(300)]
    ix = index_of([[*texts, "kiwi lime fig"]])
    with ix.searcher() as found:
        page = scores(bm25.scored(found, text_query('"mango pear"'), None, end=24))
        assert set(page) == set(range(0, 300, 2))


def test_a_lone_phrase_s_page_reads_positions_in_doubling_batches_of_four_pages_or_64(
    monkeypatch,
):
    # 200 candidates holding both words, the shorter the better (each one word longer than
    # the one before; Whoosh stores lengths past ~100 in coarser steps, so some tie); those
    # ranked 0-9 and 100-109 hold them in a row (400 others make the words rare enough for
    # scores a word apart to differ in six places). Checking goes best first, a batch at a
    # time (four times the page, at least 64, then twice the batch before), and stops once
    # the page is full and the next candidate scores below its last.
    texts = [
        ("mango pear" if rank % 100 < 10 else "pear mango") + " plum" * rank for rank in range(200)
    ]
    ix = index_of([texts + ["kiwi"] * 400])
    read: list[int] = []
    positions = whoosh_compat.term_positions

    def counted(reader, fieldname, word, docnums):
        if word == "mango":
            read.extend(docnums)
        return positions(reader, fieldname, word, docnums)

    monkeypatch.setattr(whoosh_compat, "term_positions", counted)
    query = text_query('"mango pear"')
    with ix.searcher() as found:
        whole = scores(bm25.scored(found, query, None))
        assert set(whole) == {*range(10), *range(100, 110)}
        ranked = sorted(whole.values(), reverse=True)
        # A page of 10 is full in the first 64; one of 16 needs the second batch (128, up to
        # rank 191); one of 20 reads 80, then the rest.
        for end, reads in ((10, 64), (16, 192), (20, 200)):
            read.clear()
            page = scores(bm25.scored(found, query, None, end=end))
            assert page == {d: s for d, s in whole.items() if s >= ranked[end - 1]}, end
            assert len(read) == reads and len(set(read)) == reads, end


def test_a_lone_phrase_s_page_reads_on_while_the_next_candidate_ties_its_last():
    # A page of 4: documents 0-3 hold the phrase in a row, of lengths 2 to 5 (each better than
    # the next); 4-63 hold both words apart, of length 5; 64 holds the phrase, of length 5 too,
    # so it ties the page's last and comes right after the first batch (64 candidates).
    texts = ["mango pear" + " plum" * n for n in range(4)]
    texts += ["pear mango plum plum plum"] * 60 + ["mango pear plum plum plum"]
    ix = index_of([texts + ["kiwi"] * 100])
    with ix.searcher() as found:
        page = scores(bm25.scored(found, text_query('"mango pear"'), None, end=4))
    assert set(page) == {0, 1, 2, 3, 64}
    assert page[64] == page[3] and len({page[0], page[1], page[2], page[3]}) == 4


def idf_over(term: str, counted: list[int]) -> float:
    n = len(counted)
    df = sum(1 for d in counted if term in terms(DOCS[d]))
    return math.log(1 + (n - df + 0.5) / (df + 0.5))


@pytest.mark.parametrize("allowed", [None, {0, 1, 2, 3}, {3, 4, 7}])
def test_a_full_match_is_each_query_term_s_weight_times_its_idf_over_the_documents_searched(
    searcher, allowed
):
    # What a document of average length holding each word once scores: its length norm is 1,
    # so each term adds weight * idf * (K1 + 1) / (1 + K1), its weight times its idf.
    counted = sorted(allowed) if allowed else list(range(len(DOCS)))
    query = [("mango", 1.0), ("mangoes", 0.1), ("lime", 1.0), ("quokka", 1.0)]
    want = sum(weight * idf_over(term, counted) for term, weight in query)
    # Given with the matches, from the same statistics; excluded documents count in them
    for excluded in (None, {3}):
        found = bm25.raw_scored(searcher, text_query("mangoes lime quokka"), allowed, excluded)
        assert found[2] == pytest.approx(want, abs=1e-9)


def test_a_full_match_counts_a_phrase_s_words_and_is_none_for_any_other_query(searcher):
    counted = list(range(len(DOCS)))
    want = idf_over("mango", counted) + idf_over("pear", counted) + idf_over("fig", counted)
    found = bm25.raw_scored(searcher, text_query('"mango pear" fig'), None)[2]
    assert found == pytest.approx(want, abs=1e-9)
    assert bm25.raw_scored(searcher, text_query("mango AND pear"), None)[2] is None
    assert bm25.raw_scored(searcher, text_query("m*"), None)[2] is None
