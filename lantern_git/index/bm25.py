"""Lantern's BM25: one scorer for records and source chunks, with its statistics stated.

Whoosh's own BM25F ranked below a textbook BM25 (rank-bm25's ``BM25Okapi``) on the same texts
(``benchmarks/retrieval.py``). Three causes, measured there, and what lantern does instead:

- **Its idf**, ``log(N / (df + 1)) + 1``, never falls below 1: a word in half the records (a
  speaker's name, "what", "did") still weighs a seventh of a rare one and adds up over a
  question's many common words. Lantern uses Lucene's BM25 idf, ``ln(1 + (N - df + 0.5) /
  (df + 0.5))``: near 0 for a word in most records, positive always.
- **Its statistics are the whole index's** while a search looks at one scope: a name that is
  in every turn of its own conversation is rare in the index and so counted as telling. Lantern
  takes ``N``, ``df`` and the average length over the documents the search's filters select
  (scopes, kinds, statuses asked for, priorities; for chunks, kinds and sources); without
  filters, over the whole index.
- **A question mark** made the word before it a wildcard in Whoosh's query syntax ("called?"
  matches "callers", never "called"): ``analysis.text_query`` reads a ``?`` that ends a word as
  punctuation.

The score of a document ``d`` for query words ``t`` (each a term with weight ``w_t``: 1 for a
stem, ``AS_WRITTEN_WEIGHT`` for a form as written, see ``analysis``)::

    score(d) = sum over t in d of
        w_t * idf(t) * tf * (K1 + 1) / (tf + K1 * (1 - B + B * len(d) / avglen))

with ``tf`` the term's count in ``d``, ``len(d)`` its length in words (as Whoosh stores it:
exact to 16 words, within 10% beyond) and ``K1 = 1.2``, ``B = 0.75``. A phrase scores the sum
of its words' scores where they stand in a row.

Queries of words and phrases joined by OR (what people type) are scored here from postings,
positions and field lengths read in bulk (``whoosh_compat``): Whoosh's matchers cost ~6 us a
matching document. Any other query (prefixes, fields, AND/NOT) goes through Whoosh's search,
with :class:`LanternBM25` as its weighting model, which gives the same numbers.

A page of such a query of words (the best ``end`` and their ties, :func:`scored`) scores only
the documents that can land on it (:func:`_pruned`): a word's score grows with its weight in a
document and falls with the document's length, so its heaviest postings and the segment's
shortest length bound what the others can score. A common word's postings are mostly of its
lowest weight (once in a record): at 100,000 records, a page of two words each in 40 % of
them scores ~1,200 documents of the 65,000 matching. The answer is the one every posting
scored gives, to the bit (``tests/library/test_bm25_pruned_page.py``); hybrid search, which
ranks every match, and a page with no limit still score every posting.
"""

from __future__ import annotations

import contextlib
import heapq
import math
import threading
from array import array
from bisect import bisect_left
from collections import Counter
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from itertools import compress, repeat
from operator import add, le, mul, neg, truediv
from typing import Any

from cachetools import LRUCache
from whoosh import query as Q
from whoosh.scoring import WeightingModel, WeightLengthScorer

from . import whoosh_compat
from .analysis import typed_words, word_terms

K1 = 1.2
B = 0.75
FIELD = "content"


def idf(df: int, docs: int) -> float:
    """Lucene's BM25 idf of a word in ``df`` of ``docs`` documents. (Whoosh's document
    frequencies count deleted documents until their segment is merged: never above ``docs``.)"""
    df = min(df, docs)
    return math.log(1.0 + (docs - df + 0.5) / (df + 0.5))


@dataclass
class Statistics:
    """What BM25 counts over: the documents a search looks at (``allowed``, None for all)."""

    docs: int
    avg_length: float
    allowed: set[int] | None

    def df(self, searcher: Any, text: str) -> int:
        if self.allowed is None:
            return int(searcher.doc_frequency(FIELD, text))
        count = 0
        for reader, base in searcher.reader().leaf_readers():
            if (FIELD, text) in reader:
                ids, _ = whoosh_compat.term_postings(reader, FIELD, text)
                count += sum(1 for docnum in ids if base + docnum in self.allowed)
        return count


def statistics(searcher: Any, allowed: set[int] | None) -> Statistics:
    """BM25's statistics over ``allowed`` (document numbers), or the whole index for None."""
    if allowed is None:
        docs = int(searcher.doc_count())
        total = float(searcher.field_length(FIELD) or 0)
        return Statistics(docs, (total / docs if docs else 0.0) or 1.0, None)
    total = 0
    for reader, base in searcher.reader().leaf_readers():
        count = reader.doc_count_all()
        if not count:
            continue
        codes, table = whoosh_compat.field_length_codes(reader, FIELD)
        total += sum(table[codes[doc - base]] for doc in allowed if base <= doc < base + count)
    docs = len(allowed)
    return Statistics(docs, (total / docs if docs else 0.0) or 1.0, allowed)


class LanternBM25(WeightingModel):
    """Whoosh's weighting model for lantern's BM25 (above), over given statistics."""

    def __init__(self, stats: Statistics):
        self.stats = stats

    def supports_block_quality(self) -> bool:
        return True

    def scorer(self, searcher: Any, fieldname: str, text: Any, qf: float = 1) -> Any:
        return _Scorer(searcher, fieldname, text, self.stats)


class _Scorer(WeightLengthScorer):
    def __init__(self, searcher: Any, fieldname: str, text: Any, stats: Statistics):
        parent = searcher.get_parent()
        word = text.decode("utf-8") if isinstance(text, bytes) else text
        self.idf = idf(stats.df(parent, word), stats.docs)
        self.norm = K1 * (1 - B)
        self.slope = K1 * B / stats.avg_length
        self.setup(searcher, fieldname, text)

    def _score(self, weight: float, length: float) -> float:
        return self.idf * (weight * (K1 + 1)) / (weight + self.norm + self.slope * length)


Parts = list[tuple[tuple[str, ...], float]]


def word_holders(searcher: Any, words: Sequence[str]) -> list[set[int]]:
    """For each of ``words`` (as typed), the live documents holding it as written or by stem,
    read from the postings (a segment's postings keep its deleted documents: older versions
    of a text)."""
    leaves = [(r, base) for r, base in searcher.reader().leaf_readers() if r.doc_count_all()]
    found = []
    for word in words:
        holders: set[int] = set()
        for reader, base in leaves:
            for term in word_terms(word):
                if (FIELD, term) in reader:
                    ids, _ = whoosh_compat.term_postings(reader, FIELD, term)
                    if reader.has_deletions():
                        ids = [i for i in ids if not reader.is_deleted(i)]
                    holders.update(map(base.__add__, ids))
        found.append(holders)
    return found


def words_held(searcher: Any, text: str) -> tuple[int, dict[int, int]]:
    """(the number of words of the query ``text`` as typed, ``analysis.typed_words``; for each
    document holding at least one of them, how many it holds, as written or by stem): what
    ``analysis.matched_words`` counts in a document's text, read from the postings instead
    (hybrid search weighs each keyword hit by it, see ``ranking``)."""
    words = typed_words(text)
    held: Counter[int] = Counter()
    for holders in word_holders(searcher, words):
        held.update(holders)
    return len(words), dict(held)


def idf_shares(searcher: Any, text: str, allowed: set[int] | None) -> dict[int, float]:
    """For each document among ``allowed`` (None: every live one) that holds a word of the
    query ``text`` as typed (``analysis.typed_words``), as written or by stem: the share of the
    words' idf it holds, the sum of its words' idfs over the sum of all the query's. A word's
    idf is BM25's (:func:`idf`) over the documents :func:`statistics` counts, its df the
    documents there holding it in either form (:func:`word_holders`); a word none holds counts
    in the sum (hybrid search under wordllama puts the hits holding a quarter first, see
    ``ranking``)."""
    docs = int(searcher.doc_count()) if allowed is None else len(allowed)
    held: Counter[int] = Counter()
    total = 0.0
    for holders in word_holders(searcher, typed_words(text)):
        if allowed is not None:
            holders &= allowed
        weight = idf(len(holders), docs)
        total += weight
        held.update(dict.fromkeys(holders, weight))
    return {doc: mass / total for doc, mass in held.items()} if total else {}


def plain_parts(query: Any) -> Parts | None:
    """The parts of a query made of words and phrases joined by OR, each as its words and its
    weight (a word's form as written weighs less than its stem, see ``analysis``); None for
    anything else (prefixes, fields, AND, NOT, sloppy or weighted phrases)."""
    parts = query.subqueries if type(query) is Q.Or else [query]
    if type(query) is Q.Or and (query.boost != 1.0 or getattr(query, "scale", None)):
        return None
    found: Parts = []
    for part in parts:
        if getattr(part, "fieldname", None) != FIELD:
            return None
        if type(part) is Q.Term and isinstance(part.text, str) and part.boost > 0:
            found.append(((part.text,), float(part.boost)))
        elif type(part) is Q.Phrase and part.slop == 1 and part.words and part.boost == 1.0:
            if not all(isinstance(word, str) for word in part.words):
                return None
            found.append((tuple(part.words), 1.0))
        else:
            return None
    return found


def scored(
    searcher: Any,
    query: Any,
    allowed: set[int] | None,
    excluded: set[int] | None = None,
    end: int | None = None,
) -> list[tuple[float, int]]:
    """(score rounded to 6 places, document) of every document matching ``query`` among
    ``allowed`` (None: all) and not ``excluded``, cut to the best ``end`` and their ties;
    statistics over ``allowed``. In no order. With ``end``, a query of words alone scores only
    the documents that can reach the page (:func:`_pruned`), with the same answer."""
    stats = statistics(searcher, allowed)
    parts = plain_parts(query)
    if parts is None:
        return _by_whoosh(searcher, query, stats, excluded, end)
    keep = allowed
    if excluded:
        keep = None if allowed is None else allowed - excluded
    outside = excluded if allowed is None else None
    segments = _read(searcher, parts)
    idfs = _idfs(searcher, parts, stats, segments)
    found = None
    if end is not None and end > 0 and worth_pruning(parts, segments):
        found = _pruned(segments, parts, idfs, stats, _wanted(keep, outside), end)
    if found is None:
        found = _bulk(segments, parts, idfs, stats, keep, outside, end)
    docs, scores = found
    if end is not None and len(scores) > end:
        cutoff = round(heapq.nlargest(end, scores)[-1], 6)
        floor = cutoff - 1e-6
        return [
            (rounded, doc)
            for doc, score in zip(docs, scores)
            if score >= floor and (rounded := round(score, 6)) >= cutoff
        ]
    return [(round(score, 6), doc) for doc, score in zip(docs, scores)]


def raw_scored(
    searcher: Any, query: Any, allowed: set[int] | None, excluded: set[int] | None = None
) -> tuple[list[int], list[float], float | None]:
    """Every document matching ``query`` (as :func:`scored` with no ``end``) and its score
    before rounding, as two lists in no order: for a caller that ranks them in bulk (hybrid
    search) and rounds only the few it shows. ``round(score, 6)`` is :func:`scored`'s. Third,
    the query's full match (:func:`full_match`) from the same statistics; None for a query
    that is not words and phrases joined by OR."""
    stats = statistics(searcher, allowed)
    parts = plain_parts(query)
    if parts is None:
        found = _by_whoosh(searcher, query, stats, excluded, None)
        return [doc for _, doc in found], [score for score, _ in found], None
    keep = allowed
    if excluded:
        keep = None if allowed is None else allowed - excluded
    segments = _read(searcher, parts)
    idfs = _idfs(searcher, parts, stats, segments)
    docs, scores = _bulk(
        segments, parts, idfs, stats, keep, excluded if allowed is None else None, None
    )
    return docs, scores, full_match(parts, idfs)


def full_match(parts: Parts, idfs: dict[str, float]) -> float:
    """What a document of average length holding each word and phrase of the query once
    scores, given its ``parts`` and their words' ``idfs``: the sum of each part's weight times
    its words' idfs (such a document's length norm is 1, so a word held once scores ``idf *
    (K1 + 1) / (1 + K1)``, its idf). A scale for a match's BM25 that does not depend on the
    other matches (hybrid search under e5, ``ranking.fuse_full_match``)."""
    return sum(weight * sum(idfs[word] for word in words) for words, weight in parts)


def _cut(found: list[tuple[float, int]], end: int | None) -> list[tuple[float, int]]:
    if end is not None and len(found) > end:
        cutoff = heapq.nlargest(end, (score for score, _ in found))[-1]
        found = [item for item in found if item[0] >= cutoff]
    return found


def _by_whoosh(
    searcher: Any, query: Any, stats: Statistics, excluded: set[int] | None, end: int | None
) -> list[tuple[float, int]]:
    from whoosh.searching import Searcher

    ours = Searcher(searcher.reader(), weighting=LanternBM25(stats), closereader=False)
    # Whoosh takes a set of document numbers as a filter.
    results = ours.search(query, filter=stats.allowed, limit=None)
    found = [
        (round(float(score), 6), docnum)
        for score, docnum in results.top_n
        if not excluded or docnum not in excluded
    ]
    return _cut(found, end)


@dataclass
class _Segment:
    """One segment's part of a plain query: its reader, its first document's number in the
    index, and each query word's postings in it (words it lacks left out)."""

    reader: Any
    base: int
    read: dict[str, tuple[Sequence[int], Sequence[float]]]


def _read(searcher: Any, parts: Parts) -> list[_Segment]:
    """Each segment's postings of each word of ``parts``, read once: for the filtered df and
    the scores."""
    segments = []
    for reader, base in searcher.reader().leaf_readers():
        if not reader.doc_count_all():
            continue
        read = {
            word: whoosh_compat.term_postings(reader, FIELD, word)
            for words, _ in parts
            for word in words
            if (FIELD, word) in reader
        }
        segments.append(_Segment(reader, base, read))
    return segments


# Fewer postings than this in a query are scored every one: ~1 ms, less than the bounds cost.
PRUNE_FROM = 5_000


def worth_pruning(parts: Parts, segments: list[_Segment]) -> bool:
    """Whether a page of ``parts`` is scored pruned (:func:`_pruned`): a query of words alone
    (a phrase's words must stand in a row) with at least ``PRUNE_FROM`` postings."""
    if not all(len(words) == 1 for words, _ in parts):
        return False
    return (
        sum(len(s.read[w][0]) for s in segments for (w,), _ in parts if w in s.read) >= PRUNE_FROM
    )


def _idfs(
    searcher: Any, parts: Parts, stats: Statistics, segments: list[_Segment]
) -> dict[str, float]:
    """Each word's idf over the statistics' documents."""
    if stats.allowed is None:
        dfs = {w: int(searcher.doc_frequency(FIELD, w)) for words, _ in parts for w in words}
    else:
        dfs = {w: 0 for words, _ in parts for w in words}
        inside = stats.allowed.__contains__
        for segment in segments:
            for word, (ids, _) in segment.read.items():
                dfs[word] += sum(map(inside, map(segment.base.__add__, ids)))
    return {word: idf(df, stats.docs) for word, df in dfs.items()}


def length_norms(table: Sequence[int], avg_length: float) -> list[float]:
    """BM25's length norm, ``K1 * (1 - B + B * len / avglen)``, of each length code's length."""
    return [K1 * ((1 - B) + B * length / avg_length) for length in table]


def shortest_norm(codes: Sequence[int], norms: Sequence[float]) -> float:
    """The least length norm of the documents whose length codes are ``codes`` (``norms``: by
    code): the smallest code's, where norms never fall as codes rise (Whoosh's codes grow with
    the length), else looked up code by code."""
    if all(map(le, norms, norms[1:])):
        return norms[min(codes)]
    return min(map(norms.__getitem__, set(codes)))


def _bulk(
    segments: list[_Segment],
    parts: Parts,
    idfs: dict[str, float],
    stats: Statistics,
    allowed: set[int] | None,
    excluded: set[int] | None,
    end: int | None,
) -> tuple[list[int], list[float]]:
    """The plain query's documents and scores (not rounded) from postings read in bulk (see
    the module's docstring); ``end`` only cuts short the check of a lone phrase's positions."""
    k1_plus = K1 + 1
    totals: dict[int, float] = {}
    flat_docs: list[int] = []
    flat_scores: list[float] = []
    phrases: list[tuple[float, int, Any, int, tuple[str, ...]]] = []
    for segment in segments:
        reader, base, read = segment.reader, segment.base, segment.read
        codes, table = whoosh_compat.field_length_codes(reader, FIELD)
        norms = length_norms(table, stats.avg_length)
        deleted = whoosh_compat.deleted_docs(reader) if reader.has_deletions() else ()
        for words, weight in parts:
            if not all(word in read for word in words):
                continue
            postings = [read[word] for word in words]
            if len(words) == 1:
                ids, weights = postings[0]
                factor = idfs[words[0]] * weight
                # factor * ((tf * k1_plus) / (tf + norm)), in that order (the same floats), a
                # posting at a time in C: a third of the time of a comprehension.
                norm_of = map(norms.__getitem__, map(codes.__getitem__, ids))
                saturated = map(add, weights, norm_of)
                scaled = map(truediv, map(mul, weights, repeat(k1_plus)), saturated)
                scores = list(map(mul, repeat(factor), scaled))
                if deleted:
                    kept = [docnum not in deleted for docnum in ids]
                    ids, scores = list(compress(ids, kept)), list(compress(scores, kept))
                if len(parts) == 1:  # one word: each document scored once, no sums to keep
                    flat_docs.extend(map(base.__add__, ids))
                    flat_scores.extend(scores)
                    continue
                docs = list(map(base.__add__, ids))
                # totals[doc] = totals.get(doc, 0.0) + score for each, in C (a word's postings
                # name each document once, so no sum reads one this update has written).
                totals.update(zip(docs, map(add, map(totals.get, docs, repeat(0.0)), scores)))
                continue
            freqs = [dict(zip(ids, weights)) for ids, weights in postings]
            common = set(freqs[0]).intersection(*freqs[1:]).difference(deleted)
            for docnum in common:
                norm = norms[codes[docnum]]
                score = 0.0
                for word, counts in zip(words, freqs):
                    tf = counts[docnum]
                    score += idfs[word] * ((tf * k1_plus) / (tf + norm))
                phrases.append((score, base + docnum, reader, base, words))

    wanted = _wanted(allowed, excluded)
    if allowed is not None or excluded:
        totals = {doc: score for doc, score in totals.items() if wanted(doc)}
        phrases = [item for item in phrases if wanted(item[1])]
        kept = [wanted(doc) for doc in flat_docs]
        flat_docs = list(compress(flat_docs, kept))
        flat_scores = list(compress(flat_scores, kept))
    if phrases:
        # One phrase alone: its candidates are checked best first, only until the page and
        # its ties are settled (a phrase of two common words has thousands of candidates).
        alone = len(parts) == 1 and end is not None
        for score, doc in _in_a_row(phrases, end if alone else None):
            totals[doc] = totals.get(doc, 0.0) + score
    if totals:
        flat_docs.extend(totals)
        flat_scores.extend(totals.values())
    return flat_docs, flat_scores


def _wanted(allowed: set[int] | None, excluded: set[int] | None) -> Callable[[int], bool]:
    """Whether a document is among ``allowed`` (None: all) and not ``excluded``."""

    def wanted(doc: int) -> bool:
        return (allowed is None or doc in allowed) and not (excluded and doc in excluded)

    return wanted


# The share of a query's postings past which :func:`_pruned` gives up (the postings it raised
# and the words of the documents it scored, counted each time, above this part of every
# posting): each costs it about twice what scoring every posting costs a posting.
PRUNED_SHARE = 2

# The fewest documents :func:`_pruned` scores at a time (twice the page's end, if more): a
# batch is scored in bulk, and its documents best bound first settle the page's last score.
BATCH_AT_LEAST = 64

# How far below a page's last rounded score a bound must stay for the documents under it to be
# left unscored: a score rounds up by at most 5e-7, and a bound summed in another order than
# the score may differ from it in the last bits (1e-13 for scores of 1,000).
BOUND_MARGIN = 2e-6


def score_bound(factor: float, weight: float, norm: float) -> float:
    """The most a word of ``factor`` (its idf times the query's weight of it) adds to a
    document holding it at most ``weight`` times, of length norm at least ``norm``: BM25 grows
    with the weight and falls with the length, and so does each floating-point step of it
    (each is rounded correctly, so none turns a larger input into a smaller result)."""
    return factor * ((weight * (K1 + 1)) / (weight + norm))


def document_scores(
    terms: Sequence[tuple[float, Sequence[int], Sequence[float]]],
    docs: Sequence[int],
    norms: Sequence[float],
) -> list[float]:
    """Documents' scores, as :func:`_bulk` sums them: each query word a document holds, in the
    query's order, ``factor * ((tf * (K1 + 1)) / (tf + norm))`` (the same floats; a word it
    lacks adds ``0.0``, which changes no sum). ``terms`` are each word's factor and postings in
    the documents' segment (ascending document numbers), ``docs`` the documents (numbers in
    the segment) and ``norms`` their length norms."""
    k1_plus = K1 + 1
    totals = [0.0] * len(docs)
    for factor, ids, weights in terms:
        count = len(ids)
        places = map(bisect_left, repeat(ids), docs)
        tfs = [
            weights[at] if at < count and ids[at] == doc else 0.0 for at, doc in zip(places, docs)
        ]
        scaled = map(truediv, map(mul, tfs, repeat(k1_plus)), map(add, tfs, norms))
        totals = list(map(add, totals, map(mul, repeat(factor), scaled)))
    return totals


@dataclass(frozen=True)
class Layers:
    """A word's postings in a segment above its lowest weight, heaviest first (``ids``, and
    ``negated``, their weights negated: ascending, for ``bisect``), and that lowest weight
    (``lowest``, 0.0 for no postings). Most postings of a common word are at its lowest
    weight (once in a record): those are never looked at one by one."""

    ids: Sequence[int]
    negated: Sequence[float]
    lowest: float
    # The weights above the lowest, each once, heaviest first.
    heavier: tuple[float, ...] = ()

    def heavier_than(self, level: float) -> int:
        """How many of the postings kept weigh more than ``level`` (they come first)."""
        return bisect_left(self.negated, -level)


def weight_layers(ids: Sequence[int], weights: Sequence[float]) -> Layers:
    """``Layers`` of a word's postings in a segment (document numbers and weights)."""
    lowest = min(weights, default=0.0)
    above = list(map(lowest.__lt__, weights))
    pairs = sorted(zip(map(neg, compress(weights, above)), compress(ids, above)))
    negated = array("d", (weight for weight, _ in pairs))
    heavier = tuple(sorted({-weight for weight in negated}, reverse=True))
    # Arrays: 16 bytes a posting kept, not 60 in lists of Python numbers.
    return Layers(array("Q", (doc for _, doc in pairs)), negated, lowest, heavier)


# Each segment's layers of the words searched last, by the postings they come from (a
# segment's postings never change), up to this many postings in all (16 bytes each: 8 MB; a
# fifth of a common word's postings are above its lowest weight).
LAYERS_KEPT = 500_000
_layers: LRUCache[tuple[Any, ...], Layers] = LRUCache(
    LAYERS_KEPT, getsizeof=lambda found: len(found.ids) + 1
)
_layers_lock = threading.Lock()


def _kept_layers(
    reader: Any, words: tuple[str, ...], postings: tuple[Sequence[int], Sequence[float]]
) -> Layers:
    if not postings[0]:
        return weight_layers((), ())
    key = whoosh_compat.postings_key(reader, FIELD, words[0])
    if key is not None:
        with _layers_lock:
            found = _layers.get(key)
        if found is not None:
            return found
    made = weight_layers(*postings)
    if key is not None:
        with _layers_lock, contextlib.suppress(ValueError):  # above the whole budget
            _layers[key] = made
    return made


def level_floor(
    terms: Sequence[tuple[float, Layers]], levels: Sequence[float], min_norm: float
) -> float:
    """The most a document of a segment scores whose every word weighs at most its ``level``
    (``terms``: each query word's factor and layers in the segment; ``min_norm``: the
    segment's shortest length norm). A word the segment lacks adds nothing."""
    floor = 0.0
    for (factor, layers), level in zip(terms, levels):
        if layers.lowest:
            floor += score_bound(factor, level, min_norm)
    return floor


def raised_bounds(
    terms: Sequence[tuple[float, Layers]], levels: Sequence[float], min_norm: float
) -> dict[int, float]:
    """For each document of a segment with a word above its ``level``, the most it scores:
    the :func:`level_floor`, raised for each such word by what its weight adds above its
    level's. Only the postings above the levels are looked at."""
    floor = level_floor(terms, levels, min_norm)
    raised: dict[int, float] = {}
    for (factor, layers), level in zip(terms, levels):
        count = layers.heavier_than(level)
        if not count:
            continue
        docs = layers.ids[:count]
        weights = layers.negated[:count]
        low = score_bound(factor, level, min_norm)
        extra = {w: score_bound(factor, -w, min_norm) - low for w in set(weights)}
        # raised[doc] += extra[weight] for each, in C (each document once per word).
        added = map(extra.__getitem__, weights)
        raised.update(zip(docs, map(add, map(raised.get, docs, repeat(0.0)), added)))
    return {doc: floor + extra for doc, extra in raised.items()}


def page_cutoff(scores: Collection[float], end: int) -> float | None:
    """The ``end``-th best of ``scores``, rounded as a page rounds it (None with fewer): the
    page is the documents whose rounded score reaches it."""
    if len(scores) < end:
        return None
    return round(heapq.nlargest(end, scores)[-1], 6)


def lower_level(
    levels: list[float], steps: Sequence[Sequence[float]], bounds: Sequence[float]
) -> bool:
    """Lower the level of the word whose bound (``bounds``, by word) is the largest and that
    has a lower level left (``steps``: each word's levels, heaviest first) to its next one;
    False when none has."""
    best = -1
    for place, step in enumerate(steps):
        if step and step[-1] < levels[place] and (best < 0 or bounds[place] > bounds[best]):
            best = place
    if best < 0:
        return False
    levels[best] = max(w for w in steps[best] if w < levels[best])
    return True


def _pruned(
    segments: list[_Segment],
    parts: Parts,
    idfs: dict[str, float],
    stats: Statistics,
    wanted: Callable[[int], bool],
    end: int,
) -> tuple[list[int], list[float]] | None:
    """A plain query of words' documents that can be among its best ``end`` or tie with the
    last, with their scores (as :func:`_bulk`'s); None where this would not save work.

    Each word has a level (at first its heaviest weight): a document whose every word weighs
    at most its level scores at most the segment's floor (:func:`level_floor`), one with a
    word above it at most its raised bound (:func:`raised_bounds`). A batch of the raised
    documents with the best bounds is scored; while the ``end``-th best score does not stand
    above every floor, the word with the largest bound comes down a level (or as many as
    halve the floor's distance to that score: it only rises) and another batch is scored.
    Then the raised documents whose bound reaches that score are scored, best bound first
    (:func:`_score_best_first`). A common word's postings are mostly at its lowest weight,
    never raised: only a few documents are scored. Past ``PRUNED_SHARE``'s part of the
    postings' worth of work it gives up (None), and every posting is scored."""
    factors = [idfs[w] * weight for (w,), weight in parts]
    empty: tuple[Sequence[int], Sequence[float]] = ((), ())
    layouts: list[_Layout] = []
    for segment in segments:
        codes, table = whoosh_compat.field_length_codes(segment.reader, FIELD)
        norms = length_norms(table, stats.avg_length)
        postings = [segment.read.get(w, empty) for (w,), _ in parts]
        layouts.append(
            _Layout(
                segment.base,
                [
                    (f, _kept_layers(segment.reader, (w,), p))
                    for f, ((w,), _), p in zip(factors, parts, postings)
                ],
                [(f, *p) for f, p in zip(factors, postings)],
                codes,
                norms,
                whoosh_compat.deleted_docs(segment.reader)
                if segment.reader.has_deletions()
                else set(),
                shortest_norm(codes, norms),
            )
        )
    steps = [
        word_levels([layout.layers[place][1] for layout in layouts]) for place in range(len(parts))
    ]
    levels = [step[0] if step else 0.0 for step in steps]
    total = sum(len(ids) for layout in layouts for _, ids, _ in layout.postings)
    found: dict[int, float] = {}
    tried: set[int] = set()
    cutoff: float | None = None

    def lower() -> bool:
        bounds = [
            max((score_bound(f, level, layout.min_norm) for layout in layouts), default=0.0)
            for f, level in zip(factors, levels)
        ]
        return lower_level(levels, steps, bounds)

    work = 0  # postings raised (each time) and words of documents scored
    while True:
        raised = sum(layout.raised_count(levels) for layout in layouts)
        work += raised
        if PRUNED_SHARE * work > total:
            return None  # scoring every posting costs less than going on
        bounded: list[tuple[float, int, int]] = []
        for place, layout in enumerate(layouts):
            bounds = raised_bounds(layout.layers, levels, layout.min_norm)
            bounded.extend(zip(bounds.values(), map(layout.base.__add__, bounds), repeat(place)))
        untried = [item for item in bounded if item[1] not in tried]
        batch = heapq.nlargest(max(2 * end, BATCH_AT_LEAST), untried)
        work += len(batch) * len(parts)
        _score_into(found, tried, batch, layouts, wanted)
        cutoff = page_cutoff(found.values(), end)
        floor = max(layout.floor(levels) for layout in layouts)
        if cutoff is not None and floor + BOUND_MARGIN < cutoff:
            rest = [item for item in untried if item[0] + BOUND_MARGIN >= cutoff]
            _score_best_first(found, tried, rest, layouts, wanted, end, cutoff)
            return list(found), list(found.values())
        # Lower a level, or as many as halve the floor's distance to the page's last score
        # (the score only rises: a lower level raises more documents to score).
        target = floor if cutoff is None else (floor + cutoff) / 2
        while True:
            if not lower():
                return None
            floor = max(layout.floor(levels) for layout in layouts)
            if floor <= target:
                break


def _score_best_first(
    found: dict[int, float],
    tried: set[int],
    rest: list[tuple[float, int, int]],
    layouts: Sequence[_Layout],
    wanted: Callable[[int], bool],
    end: int,
    cutoff: float,
) -> None:
    """Score ``rest`` (bound, document, its segment's place) best bound first, in growing
    batches, until the next bound stays below the page's last score (``cutoff``, as it rises
    with each batch): the documents holding several words come first and settle the page."""
    rest.sort(reverse=True)
    batch = max(2 * end, BATCH_AT_LEAST)
    at = 0
    while at < len(rest) and rest[at][0] + BOUND_MARGIN >= cutoff:
        _score_into(found, tried, rest[at : at + batch], layouts, wanted)
        at += batch
        batch *= 2
        cutoff = page_cutoff(found.values(), end) or cutoff


def _score_into(
    found: dict[int, float],
    tried: set[int],
    chosen: Sequence[tuple[float, int, int]],
    layouts: Sequence[_Layout],
    wanted: Callable[[int], bool],
) -> None:
    """Score the ``chosen`` (bound, document, its segment's place) not ``tried`` yet into
    ``found``, those wanted and not deleted."""
    by_place: dict[int, list[int]] = {}
    for _, doc, place in chosen:
        if doc not in tried:
            tried.add(doc)
            by_place.setdefault(place, []).append(doc)
    for place, docs in by_place.items():
        layout = layouts[place]
        docs = [doc for doc in docs if doc - layout.base not in layout.deleted and wanted(doc)]
        docs.sort()
        local = [doc - layout.base for doc in docs]
        norms = [layout.norms[layout.codes[doc]] for doc in local]
        found.update(zip(docs, document_scores(layout.postings, local, norms)))


def word_levels(layers: Sequence[Layers]) -> list[float]:
    """A word's levels (see :func:`_pruned`), heaviest first, from its layers in each segment:
    every weight it has above a segment's lowest, down to the heaviest of its segments' lowest
    weights (below it, a segment's postings at its lowest weight would be neither raised nor
    bound); none for a word in no segment."""
    held = [found for found in layers if found.lowest]
    if not held:
        return []
    bottom = max(found.lowest for found in held)
    weights = {w for found in held for w in found.heavier if w > bottom}
    return sorted(weights | {bottom}, reverse=True)


@dataclass
class _Layout:
    """What :func:`_pruned` reads of one segment: each word's factor with its layers and with
    its postings, the length codes and their norms, the deleted documents and the shortest
    length's norm."""

    base: int
    layers: list[tuple[float, Layers]]
    postings: list[tuple[float, Sequence[int], Sequence[float]]]
    codes: Any
    norms: list[float]
    deleted: Collection[int]
    min_norm: float

    def floor(self, levels: Sequence[float]) -> float:
        return level_floor(self.layers, levels, self.min_norm)

    def raised_count(self, levels: Sequence[float]) -> int:
        return sum(layers.heavier_than(level) for (_, layers), level in zip(self.layers, levels))


def _in_a_row(
    candidates: list[tuple[float, int, Any, int, tuple[str, ...]]], end: int | None
) -> list[tuple[float, int]]:
    """(score, document) of the candidates whose phrase stands in a row, read from the words'
    positions. With ``end``, the candidates are taken best first in batches, and checking stops
    once ``end`` were found and the next can only score below the ``end``-th."""
    if end is not None:
        candidates = sorted(candidates, key=lambda item: -item[0])
    found: list[tuple[float, int]] = []
    batch = len(candidates) if end is None else max(4 * end, 64)
    at = 0
    while at < len(candidates):
        if (
            end is not None
            and len(found) >= end
            and round(candidates[at][0], 6) < round(found[end - 1][0], 6)
        ):
            break
        chunk = candidates[at : at + batch]
        at += batch
        groups: dict[tuple[int, tuple[str, ...]], tuple[Any, list[int]]] = {}
        for _, doc, reader, base, words in chunk:
            groups.setdefault((base, words), (reader, []))[1].append(doc - base)
        matched: set[int] = set()
        for (base, words), (reader, docnums) in groups.items():
            docnums.sort()
            positions = [
                whoosh_compat.term_positions(reader, FIELD, word, docnums) for word in words
            ]
            for docnum in docnums:
                starts = set(positions[0].get(docnum, ()))
                for k in range(1, len(words)):
                    starts.intersection_update(p - k for p in positions[k].get(docnum, ()))
                if starts:
                    matched.add(base + docnum)
        found.extend((score, doc) for score, doc, *_ in chunk if doc in matched)
        batch *= 2
    return found
