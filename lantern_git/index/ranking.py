"""How semantic and hybrid search rank: the hybrid formula's weights and the similarity floor,
one place for records and source chunks (``vectors.fuse`` and ``vectors.rank`` apply them).

Hybrid scores each candidate::

    hybrid = max(cosine, w * bm25 / best bm25 + (1 - w) * cosine),   w = words held / words

where ``bm25`` is the record's keyword score (0 when no query word is in it), ``best bm25``
the highest among the candidates, ``cosine`` the similarity of its embedding with the query's,
counted only when it reaches the floor (else 0), and ``w``, the keyword weight, is the share of
the query's words (as typed, stop words aside: ``analysis.typed_words``) that the record holds,
as written or by stem (``--explain``'s ``matched``). A record holding every word of the query
scores the larger of its BM25 share and its cosine; one holding none, its cosine: a word held
can raise a record above its cosine, never lower it. The candidates are the keyword matches
and the records whose cosine reaches the floor; semantic search ranks the latter by cosine
alone.

Why the weight is the record's and not one constant: on questions in their answers' words, a
constant weight small enough for paraphrases to gain (0.1, the best by cross-validation) let
short records holding only a common word of the question, a name, outrank the answer on their
cosine ("What was Priya promoted to?": "Priya: I love that for you!", cosine 0.84, above
"Priya: I got promoted to senior designer", 0.62), and one large enough to keep those questions
level (0.4) gave up most of the gain. The weight by words held has no parameter to choose; on
``benchmarks/retrieval.py``'s two sets it keeps both sets' lexical questions at keyword's
recall and stays above keyword and the peers' BM25 by 8 to 19 points of recall@5
(docs/search.md, "Other fusion rules"; ``--cv`` prints it beside every rule tried).

The floor depends on the query: a query sharing at least one word with the records searched
has the embedder's ``floor``; one sharing none (a word in no record, "quokka") has the higher
``alone`` floor, above the cosine such words reach with any record, so it gets no hits.
Without a lexical anchor only the cosine speaks for a record, and wordllama gives unrelated
single words cosines up to 0.352 with some record (``benchmarks/retrieval.py --calibrate``:
ten probe words in no record of the two sets); the floor without an anchor lies above them.
The floor with an anchor, 0.15, was chosen by leave-one-out cross-validation over the
conversations of the conversational set and the recall set as one more fold, with the
constant weight that hybrid had then: in each fold the highest floor that keeps the other
folds' recall@10 within half a point of no floor (ten of eleven folds chose 0.15).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Floors:
    """An embedder's similarity floors: with a lexical anchor, and without one."""

    floor: float
    alone: float


# Calibrated with benchmarks/retrieval.py (--cv, --calibrate). An embedder not listed gets
# DEFAULT_FLOORS, wordllama's.
FLOORS = {"wordllama": Floors(0.15, 0.36)}
DEFAULT_FLOORS = FLOORS["wordllama"]


def floors(embedder: str) -> Floors:
    return FLOORS.get(embedder, DEFAULT_FLOORS)


def floor(embedder: str, anchored: bool) -> float:
    """The cosine a semantic candidate must reach: see the module's docstring."""
    found = floors(embedder)
    return found.floor if anchored else found.alone


def keyword_weight(held: int, words: int) -> float:
    """A hybrid hit's keyword weight: the share of the query's ``words`` (as typed) that it
    holds, ``held`` of them; rounded to 6 places, as the formula and ``--explain`` use it."""
    return round(held / words, 6) if words > 0 else 0.0


def semantic_weight(keyword: float) -> float:
    """The cosine's weight beside a keyword weight (see :func:`keyword_weight`)."""
    return round(1.0 - keyword, 6)


def explained(
    mode: str,
    text: str,
    content: str,
    bm25: float | None,
    best: float | None,
    cosine: float | None,
    floor: float | None,
    weight: float = 0.0,
) -> dict[str, Any]:
    """One hit's ``explain`` object, for records and chunks alike (``content``: the text the
    index holds for it): the ``mode``; ``bm25``, its keyword score (0 when no query word is in
    it; in semantic mode it only decides which floor applies); ``words``, the query's words as
    typed (stop words aside); ``matched``, those it holds (as written or by stem); ``cosine``
    (None in keyword mode); the ``weights`` of the two parts (in hybrid mode ``weight``, the
    keyword weight the ranking gave it: ``len(matched) / len(words)``); the ``floor`` the
    cosine had to reach (None in keyword mode); in hybrid mode ``bm25_best``, the best BM25
    score among the candidates, which ``bm25`` is divided by. In hybrid mode the score is
    ``max(cosine, weights.keyword * bm25 / bm25_best + weights.semantic * cosine)`` (the
    cosine counted when at least ``floor``, else 0)."""
    from .analysis import matched_words, typed_words

    if mode == "keyword":
        parts = {"keyword": 1.0, "semantic": 0.0}
    elif mode == "semantic":
        parts = {"keyword": 0.0, "semantic": 1.0}
    else:
        parts = {"keyword": weight, "semantic": semantic_weight(weight)}
    out: dict[str, Any] = {
        "mode": mode,
        "bm25": 0.0 if bm25 is None else bm25,
        "words": typed_words(text),
        "matched": matched_words(text, content),
        "cosine": cosine,
        "weights": parts,
        "floor": floor,
    }
    if mode == "hybrid":
        out["bm25_best"] = best
    return out
