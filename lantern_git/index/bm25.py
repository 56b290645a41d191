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
"""

from __future__ import annotations

import heapq
import math
from collections import Counter
from dataclasses import dataclass
from itertools import compress, repeat
from operator import add, mul, truediv
from typing import Any

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


def words_held(searcher: Any, text: str) -> tuple[int, dict[int, int]]:
    """(the number of words of the query ``text`` as typed, ``analysis.typed_words``; for each
    document holding at least one of them, how many it holds, as written or by stem): what
    ``analysis.matched_words`` counts in a document's text, read from the postings instead
    (hybrid search weighs each keyword hit by it, see ``ranking``). Deleted documents may be
    counted: a caller looks up the documents it found."""
    words = typed_words(text)
    held: Counter[int] = Counter()
    leaves = [(r, base) for r, base in searcher.reader().leaf_readers() if r.doc_count_all()]
    for word in words:
        holders: set[int] = set()
        for reader, base in leaves:
            for term in word_terms(word):
                if (FIELD, term) in reader:
                    ids, _ = whoosh_compat.term_postings(reader, FIELD, term)
                    holders.update(map(base.__add__, ids))
        held.update(holders)
    return len(words), dict(held)


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
    statistics over ``allowed``. In no order."""
    stats = statistics(searcher, allowed)
    parts = plain_parts(query)
    if parts is None:
        return _by_whoosh(searcher, query, stats, excluded, end)
    keep = allowed
    if excluded:
        keep = None if allowed is None else allowed - excluded
    docs, scores = _bulk(searcher, parts, stats, keep, excluded if allowed is None else None, end)
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
) -> tuple[list[int], list[float]]:
    """Every document matching ``query`` (as :func:`scored` with no ``end``) and its score
    before rounding, as two lists in no order: for a caller that ranks them in bulk (hybrid
    search) and rounds only the few it shows. ``round(score, 6)`` is :func:`scored`'s."""
    stats = statistics(searcher, allowed)
    parts = plain_parts(query)
    if parts is None:
        found = _by_whoosh(searcher, query, stats, excluded, None)
        return [doc for _, doc in found], [score for score, _ in found]
    keep = allowed
    if excluded:
        keep = None if allowed is None else allowed - excluded
    return _bulk(searcher, parts, stats, keep, excluded if allowed is None else None, None)


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


def _bulk(
    searcher: Any,
    parts: Parts,
    stats: Statistics,
    allowed: set[int] | None,
    excluded: set[int] | None,
    end: int | None,
) -> tuple[list[int], list[float]]:
    """The plain query's documents and scores (not rounded) from postings read in bulk (see
    the module's docstring); ``end`` only cuts short the check of a lone phrase's positions."""
    k1_plus = K1 + 1
    # Each segment's postings of each word, read once: for the filtered df and the scores.
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
        segments.append((reader, base, read))
    if stats.allowed is None:
        dfs = {w: int(searcher.doc_frequency(FIELD, w)) for words, _ in parts for w in words}
    else:
        dfs = {w: 0 for words, _ in parts for w in words}
        inside = stats.allowed.__contains__
        for _, base, read in segments:
            for word, (ids, _) in read.items():
                dfs[word] += sum(map(inside, map(base.__add__, ids)))
    idfs = {word: idf(df, stats.docs) for word, df in dfs.items()}
    totals: dict[int, float] = {}
    flat_docs: list[int] = []
    flat_scores: list[float] = []
    phrases: list[tuple[float, int, Any, int, tuple[str, ...]]] = []
    for reader, base, read in segments:
        codes, table = whoosh_compat.field_length_codes(reader, FIELD)
        norms = [K1 * ((1 - B) + B * length / stats.avg_length) for length in table]
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

    def wanted(doc: int) -> bool:
        return (allowed is None or doc in allowed) and not (excluded and doc in excluded)

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
