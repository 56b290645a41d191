"""How semantic and hybrid search rank: the hybrid formula's weight and the similarity floor,
one place for records and source chunks (``vectors.fuse`` and ``vectors.rank`` apply them).

Hybrid scores each candidate::

    hybrid = KEYWORD_WEIGHT * bm25 / best bm25 + (1 - KEYWORD_WEIGHT) * cosine

where ``bm25`` is the record's keyword score (0 when no query word is in it), ``best bm25``
the highest among the candidates, and ``cosine`` the similarity of its embedding with the
query's, counted only when it reaches the floor (else 0). The candidates are the keyword
matches and the records whose cosine reaches the floor; semantic search ranks the latter by
cosine alone.

The floor depends on the query: a query sharing at least one word with the records searched
has the embedder's ``floor``; one sharing none (a word in no record, "quokka") has the higher
``alone`` floor, above the cosine such words reach with any record, so it gets no hits.
Without a lexical anchor only the cosine speaks for a record, and wordllama gives unrelated
single words cosines up to 0.352 with some record (``benchmarks/retrieval.py --calibrate``:
ten probe words in no record of the two sets); the floor without an anchor lies above them.

Both numbers were chosen by leave-one-out cross-validation over the conversations of the
conversational set and the recall set as one more fold (``benchmarks/retrieval.py --cv``): in
each fold, the weight with the best recall@5 on the other folds, then the highest floor that
keeps their recall@10 within half a point of no floor. All eleven folds chose 0.1 as the
weight, ten of eleven 0.15 as the floor. This weight leaves hybrid below keyword on some
lexical questions. Other rules, tried by the same folds under the condition that the other
folds' lexical questions keep keyword's recall: none that sees only a hit's BM25 and cosine
keeps them level and the gain; reciprocal rank fusion, BM25 over the query's most and a
weight by the query's coverage keep them level for part of the gain; a weight per hit by the
share of the query's words it holds keeps both on these sets (its gain hanging on where its
edge lies), but the fusion is not given that share (docs/search.md, "Other fusion rules").
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

KEYWORD_WEIGHT = 0.1


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


def weights() -> dict[str, float]:
    """The hybrid formula's weights, as ``--explain`` shows them."""
    return {"keyword": KEYWORD_WEIGHT, "semantic": round(1.0 - KEYWORD_WEIGHT, 6)}


def explained(
    mode: str,
    text: str,
    content: str,
    bm25: float | None,
    best: float | None,
    cosine: float | None,
    floor: float | None,
) -> dict[str, Any]:
    """One hit's ``explain`` object, for records and chunks alike: the ``mode``; ``bm25``, its
    keyword score (0 when no query word is in it; in semantic mode it only decides which
    floor applies); ``matched``, the query's words as typed that it holds (as written or by
    stem); ``cosine`` (None in keyword mode); the ``weights`` of the two parts; the ``floor``
    the cosine had to reach (None in keyword mode); in hybrid mode ``bm25_best``, the best
    BM25 score among the candidates, which ``bm25`` is divided by. In hybrid mode the score is
    ``weights.keyword * bm25 / bm25_best + weights.semantic * cosine`` (the cosine counted when
    at least ``floor``)."""
    from .analysis import matched_words

    if mode == "keyword":
        parts = {"keyword": 1.0, "semantic": 0.0}
    elif mode == "semantic":
        parts = {"keyword": 0.0, "semantic": 1.0}
    else:
        parts = weights()
    out: dict[str, Any] = {
        "mode": mode,
        "bm25": 0.0 if bm25 is None else bm25,
        "matched": matched_words(text, content),
        "cosine": cosine,
        "weights": parts,
        "floor": floor,
    }
    if mode == "hybrid":
        out["bm25_best"] = best
    return out
