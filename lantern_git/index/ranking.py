"""How semantic and hybrid search rank: the hybrid formula's weights and the similarity floor,
one place for records and source chunks; the hybrid fusion itself (:func:`fuse`, :func:`fuse_page`),
which ``retrieval.search`` applies to every corpus, and the cosine ranking (``vectors.rank``).

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
alone. That is the rule of an embedder without one of its own (:data:`FUSIONS`): wordllama
puts the hits holding a quarter of the query words' idf first (:func:`fuse_first`), e5 fuses
by the BM25 over a full match (:func:`fuse_full_match`), each chosen by the folds with real
dialogue among them (docs/search.md, "Fusion per embedder").

Why the weight is the record's and not one constant: on questions in their answers' words, a
constant weight small enough for paraphrases to gain (0.1, the best by cross-validation) let
short records holding only a common word of the question, a name, outrank the answer on their
cosine ("What was Priya promoted to?": "Priya: I love that for you!", cosine 0.84, above
"Priya: I got promoted to senior designer", 0.62), and one large enough to keep those questions
level (0.4) gave up most of the gain. The weight by words held has no parameter to choose; on
``benchmarks/retrieval.py``'s two sets it keeps both sets' lexical questions at keyword's
recall and stays above keyword and the peers' BM25 by 8 to 19 points of recall@5
(docs/search.md, "Other fusion rules"; ``--cv`` prints it beside every rule tried).

The floor depends on the query and on the embedder, whose cosines live on a scale of their own
(wordllama's unrelated texts score near 0, e5's near 0.8): a query sharing at least one word
with the records searched has the embedder's ``floor``; one sharing none (a word in no record,
"quokka") has a floor of its own, the lower of two, each above the cosine such words reach:

- ``alone``, fixed: just above the best cosine any of 28 probe words in no record (:data:`PROBES`)
  reaches with a record of the folds below (wordllama: 0.393, kept at 0.40; e5: 0.833, 0.84);
- a level plus ``noise``. A text's cosines with unrelated texts have a level of their own (some
  queries sit higher on everything, and under e5 short records do), and the probes measure it:
  a record must stand above what the two texts reach with words they have nothing to do with.
  The shipped embedders are ``centred`` (:func:`record_floors`): each record's floor is
  ``noise`` above the mean of the query's level and the record's (CSLS, Conneau et al. 2018),
  e5's levels a soft best of the texts' cosines with the probes (``vectors.probe_level``,
  beta 50), wordllama's their best, the query's over probe sentences. Uncentred (a
  calibration of one's own), the level is the query's best cosine with the probe words alone
  (:func:`floor`). ``noise`` is the margin that keeps each probe word, searched itself, under
  the level the other 27 give it, in every store of the folds below (whole folds, 5- and
  20-record stores drawn from them, and the tuning pairs' stores).

Under e5, one more way past that floor (``words``, :func:`closest_words`): the candidate
nearest the query by cosine (:data:`WORD_NEAREST`), when it holds a word whose e5
vector (each word embedded alone, as a query) lies within ``words`` of a word of the query's
(``brief`` and ``short``: 0.921) is held to ``floor``, the floor of a search that shares a
word, when that is lower than its own; ``--explain`` names the pair (``similar_words``). The
probe words' own word pairs set ``words`` as they set the margins (tornado and storm, 0.912).

Without a lexical anchor only the cosine speaks for a record, so such a query gets no hits
unless a record stands out. Each shipped embedder's floors were calibrated by the same
procedure (docs/search.md): ``floor`` by leave-one-out cross-validation over the conversations
of the conversational set and the recall set as one more fold (``benchmarks/retrieval.py
--cv``: in each fold the highest floor that keeps the other folds' recall@10 within half a point
of no floor); the rule without a lexical anchor, ``alone`` and ``noise`` by
``benchmarks/floor_rules.py``, whose folds add the tuning paraphrase pairs. An embedder with no
calibration here (model2vec, one of a user's own) has no floor at all rather than another
model's: ``--explain`` and ``lantern status`` say so.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np

    from .vectors import VectorSet


@dataclass(frozen=True)
class Floors:
    """An embedder's similarity floors: with a lexical anchor (``floor``), and without one: the
    lower of ``alone`` and the query's level over the :data:`PROBES` plus ``noise`` (None:
    ``alone`` only). ``centred``: the level is the mean of both texts' levels, the query's
    over the probes (embedded as records, each worded by ``probe_text``) and the record's over
    the probe words searched as queries (:func:`record_floors`), each text's level read from
    its cosines with them by ``beta`` (``vectors.probe_level``: 0 their mean, ``math.inf``
    their best, between a soft best); else the query's best cosine with the probes alone
    (:func:`floor`). ``words``: with a centred floor, the cosine of a word pair (one word of
    the query's, one of the record's) that holds one of the :data:`WORD_NEAREST` records nearest
    the query to ``floor`` instead of its own, when lower (None: no word pairs;
    :func:`closest_words`)."""

    floor: float
    alone: float
    noise: float | None = None
    centred: bool = False
    beta: float = 0.0
    probe_text: str = "{}"
    words: float | None = None


# Calibrated by the embedder's name (its LANTERN_EMBEDDER / lantern.yaml name): ``floor`` with
# benchmarks/retrieval.py --cv, the rest (a search sharing no word with the records) with
# benchmarks/floor_rules.py, by the same criterion for each embedder, tuning pairs included
# (docs/search.md, "A record's own level"). An embedder not listed has no floor (NO_FLOORS).
# Both are centred on both texts' levels: e5's by a soft best of their cosines with the probe
# words (beta 50), wordllama's by their best, the query's over probe sentences ("The quokka is
# here."). e5's word pairs too (docs/search.md, "Word pairs").
FLOORS = {
    "wordllama": Floors(
        0.15, 0.40, 0.144, centred=True, beta=math.inf, probe_text="The {} is here."
    ),
    "e5": Floors(0.80, 0.84, 0.033, centred=True, beta=50.0, words=0.913),
}
# How many of the candidates nearest the query by cosine a word pair can hold to the floor of a
# search sharing a word (``Floors.words``): the nearest alone. The folds kept as many tuning
# pairs with 1, 3, 5 and 10 (each the same 38 of 59), and each record compared costs its
# words' embedding on first sight (~4 ms a word under e5), so the fewest.
WORD_NEAREST = 1
NO_FLOORS = Floors(0.0, 0.0)

# Words in no record of either benchmark set: what a query with no lexical anchor looks like.
# They calibrate the floors without one, and a query's cosines with them (embedded as records
# are) are its noise level (see the module's docstring). Changing them changes every floor.
PROBES = (
    "quokka", "zebra", "xylophone", "asdfgh", "blorptang", "tractor", "volcano", "submarine",
    "kangaroo", "origami", "penguin", "trombone", "glacier", "harpoon", "tornado", "walrus",
    "cactus", "saxophone", "igloo", "helicopter", "octopus", "pyramid", "avalanche", "mosquito",
    "dinosaur", "accordion", "canoe", "yacht",
)  # fmt: skip


def floors(embedder: str) -> Floors:
    """The embedder's calibrated floors, or :data:`NO_FLOORS` (see :func:`calibrated`)."""
    return FLOORS.get(embedder, NO_FLOORS)


def query_probes(embedder: str) -> tuple[str, ...]:
    """The texts a query's level is read over under this embedder: the :data:`PROBES`, each
    worded by its ``probe_text`` (embedded as records are)."""
    wording = floors(embedder).probe_text
    return tuple(wording.format(probe) for probe in PROBES)


def calibrated(embedder: str) -> bool:
    """Whether lantern has calibrated floors for this embedder; one without has none."""
    return embedder in FLOORS


def floor(embedder: str, anchored: bool, noise: float | None = None) -> float:
    """The cosine a semantic candidate must reach: see the module's docstring (0: no floor,
    only a cosine above 0). ``noise``: the query's best cosine with the :data:`PROBES`, which
    lowers the floor of a query with no word in common to that plus the embedder's ``noise``
    margin when that is lower than ``alone`` (None: not measured, ``alone``)."""
    found = floors(embedder)
    if anchored:
        return found.floor
    if noise is None or found.noise is None:
        return found.alone
    return round(min(found.alone, noise + found.noise), 6)


def record_floors(embedder: str, level: float, levels: np.ndarray) -> np.ndarray:
    """Each record's own floor under a centred embedder (:class:`Floors`), for a query sharing
    no word with the records searched: the lower of ``alone`` and ``noise`` above the mean of
    the query's ``level`` (over the :func:`query_probes`) and the record's (``levels``: each
    record's over the probe words searched as queries), each read by the embedder's ``beta``,
    rounded to 6 places. A record that sits high
    on everything (a short one, under e5) must reach higher, and a query that sits high on
    everything (a single word) is not held to the level of a probe word that happens to lie
    close to it."""
    import numpy as np

    found = floors(embedder)
    assert found.noise is not None and found.centred, embedder
    own = np.round(found.noise + (level + levels) / 2.0, 6)
    return np.minimum(own, found.alone)


def closest_words(
    query: Sequence[str], record: Sequence[str], vectors: Mapping[str, np.ndarray]
) -> tuple[str, str, float] | None:
    """The closest pair of a word of the ``query``'s and a word of the ``record``'s
    (``analysis.content_words``) by the cosine of their ``vectors`` (unit vectors, each word
    embedded alone), rounded to 6 places, as (query word, record word, cosine); two words of
    one stem are not a pair (keyword search already finds them); None: no pair. The first
    query word, then the first record word, wins a tie."""
    from .analysis import word_stem

    best: tuple[str, str, float] | None = None
    for asked in query:
        stem = word_stem(asked)
        for held in record:
            if word_stem(held) == stem:
                continue
            cosine = round(float(vectors[asked] @ vectors[held]), 6)
            if best is None or cosine > best[2]:
                best = (asked, held, cosine)
    return best


def centred(embedder: str, anchored: bool) -> bool:
    """Whether a search's floor is each record's own (:func:`record_floors`)."""
    return not anchored and floors(embedder).centred


def needs_noise(embedder: str, anchored: bool) -> bool:
    """Whether :func:`floor` reads the query's noise level (its cosines with the probes)."""
    return not anchored and floors(embedder).noise is not None


@dataclass(frozen=True)
class Fusion:
    """How hybrid search fuses the two rankings for an embedder: ``words held`` (the module's
    formula, which sets each hit's weight itself) or ``full match``, ``weight * min(bm25 /
    full match, 1) + (1 - weight) * cosine``, where the full match is the BM25 a record of
    average length holding each of the query's words once scores (``bm25.full_match``): a
    keyword hit's share of what the query could score, not of the best hit's score, so a hit
    holding only a common word of the question stays small (:func:`fuse_full_match`). The
    rules measured and left out (reciprocal rank fusion, e5's before, among them) are in
    docs/search.md, "Fusion per embedder"."""

    rule: str
    weight: float
    # ``idf share held first``: the share of the query words' idf from which a hit goes first
    first: float = 0.0


WORDS_HELD = Fusion("words held", 0.0)  # each hit's weight is its own (no rule weight)
FULL_MATCH = "full match"
IDF_SHARE_FIRST = "idf share held first"
# Chosen by the folds of benchmarks/retrieval.py --cv, per embedder, among the rules that keep
# every fold's lexical questions at keyword's recall (docs/search.md, "Fusion per embedder"):
# with e5's cosines, crowded into 0.75-0.9, the weight by words held lost a keyword query of the
# recall set that keyword search finds. With the ten conversations of REALTALK (real dialogue
# nobody here wrote) as ten more folds, the BM25 over a full match keeps every question type of
# the three sets at keyword's or above, its two forms with the best held-out totals, at 0.1 in
# most folds; reciprocal rank fusion (0.3, 5), chosen on the two sets alone before, gained less
# than half as much on real dialogue.
#
# Wordllama's, by the same folds and criterion (docs/search.md, "Wordllama's fusion"): the hits
# holding at least a quarter of the query words' idf first, each scored ``0.1 * bm25 / best +
# 0.9 * cosine`` (:func:`fuse_first`); the weight by words held, its rule before, fell under
# keyword on REALTALK's multi-hop questions.
FUSIONS = {"e5": Fusion(FULL_MATCH, 0.1), "wordllama": Fusion(IDF_SHARE_FIRST, 0.1, 0.25)}


def fusion(embedder: str) -> Fusion:
    """The embedder's fusion rule: its own if the folds chose one, else the weight by words
    held (wordllama's, and any other embedder's)."""
    return FUSIONS.get(embedder, WORDS_HELD)


def fuse_full_match(
    keyword: list[tuple[str, float]],
    semantic: list[tuple[str, float]],
    rule: Fusion,
    full: float | None,
) -> list[tuple[str, float]]:
    """The keyword (BM25, best first) and semantic (cosine, best first, those under the floor
    left out) rankings fused by the BM25 over a full match: each id scores ``rule.weight *
    min(bm25 / full, 1) + (1 - rule.weight) * cosine``, with 0 for the part of a ranking it
    is not in, rounded to 6 places; ``full`` is ``bm25.full_match`` (None or 0: the best BM25,
    as a query that is not plain words has no full match). Best first, ties by the semantic
    ranking's order, then id."""
    scale = full or (keyword[0][1] if keyword and keyword[0][1] else 1.0)
    weight, keep = rule.weight, semantic_weight(rule.weight)
    # The cosine's part, then the keyword's added (a sum's order changes no float); vectors.rank
    # keeps no cosine of 0 or below, whatever the floor
    fused = {key: keep * cosine for key, cosine in semantic}
    for key, bm25 in keyword:
        fused[key] = fused.get(key, 0.0) + weight * min(bm25 / scale, 1.0)
    ordered = [(key, round(score, 6)) for key, score in fused.items()]
    places = {key: place for place, (key, _) in enumerate(semantic)}
    unplaced = len(semantic)
    ordered.sort(key=lambda item: (-item[1], places.get(item[0], unplaced), item[0]))
    return ordered


def held_first(share: float, rule: Fusion) -> bool:
    """Whether a keyword hit holding ``share`` of the query words' idf (``bm25.idf_shares``,
    rounded to 6 places as ``--explain`` shows it) goes first under ``rule``."""
    return rule.rule == IDF_SHARE_FIRST and round(share, 6) >= rule.first


def fuse_first(
    keyword: list[tuple[str, float]],
    semantic: list[tuple[str, float]],
    rule: Fusion,
    shares: Mapping[str, float],
) -> list[tuple[str, float]]:
    """The keyword (BM25, best first) and semantic (cosine, best first, those under the floor
    left out) rankings fused with the hits holding ``rule.first`` of the query words' idf or
    more first: each id scores ``rule.weight * bm25 / best bm25 + (1 - rule.weight) *
    cosine``, with 0 for the part of a ranking it is not in, and 1 more when it goes first
    (:func:`held_first`; ``shares`` by id, 0 for one not there), so a hit held first scores
    above 1 and every other at most 1; rounded to 6 places. Best first, ties by the semantic
    ranking's order, then id."""
    best = keyword[0][1] if keyword and keyword[0][1] else 1.0
    matched, cosines = dict(keyword), dict(semantic)
    ordered = [
        (key, _first(rule, False, 0.0, cosine)) for key, cosine in semantic if key not in matched
    ]
    for key, bm25 in keyword:
        lifted = held_first(shares.get(key, 0.0), rule)
        ordered.append((key, _first(rule, lifted, bm25 / best, cosines.get(key))))
    places = {key: place for place, (key, _) in enumerate(semantic)}
    unplaced = len(semantic)
    ordered.sort(key=lambda item: (-item[1], places.get(item[0], unplaced), item[0]))
    return ordered


def _first(rule: Fusion, lifted: bool, share: float, cosine: float | None) -> float:
    """One candidate's score under the idf share held first (:func:`fuse_first`), rounded to 6
    places: ``share`` its BM25 over the best (0: no keyword hit), ``cosine`` None when it is
    not a semantic candidate, ``lifted`` whether it goes first."""
    counted = 0.0 if cosine is None else semantic_weight(rule.weight) * cosine
    return round((1.0 if lifted else 0.0) + counted + rule.weight * share, 6)


def keyword_weight(held: int, words: int) -> float:
    """A hybrid hit's keyword weight: the share of the query's ``words`` (as typed) that it
    holds, ``held`` of them; rounded to 6 places, as the formula and ``--explain`` use it."""
    return round(held / words, 6) if words else 0.0


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
    calibrated: bool = True,
    rule: Fusion = WORDS_HELD,
    similar: tuple[str, str, float] | None = None,
    full: float | None = None,
    share: float = 0.0,
) -> dict[str, Any]:
    """One hit's ``explain`` object, for records and chunks alike (``content``: the text the
    index holds for it): the ``mode``; ``bm25``, its keyword score (0 when no query word is in
    it; in semantic mode it only decides which floor applies); ``words``, the query's words as
    typed (stop words aside); ``matched``, those it holds (as written or by stem); ``cosine``
    (None in keyword mode); the ``weights`` of the two parts (in hybrid mode ``weight``, the
    keyword weight the ranking gave it: ``len(matched) / len(words)``); the ``floor`` the
    cosine had to reach (None in keyword mode); in semantic and hybrid mode ``calibrated``,
    whether that floor is the embedder's own (False: lantern has no calibration for it, so no
    floor, 0); in hybrid mode ``bm25_best``, the best BM25
    score among the candidates, which ``bm25`` is divided by. In hybrid mode the score is
    ``max(cosine, weights.keyword * bm25 / bm25_best + weights.semantic * cosine)`` (the
    cosine counted when at least ``floor``, else 0), and ``fusion`` is ``"words held"``; for
    an embedder whose fusion is the BM25 over a full match (:data:`FUSIONS`), ``fusion`` is
    ``"full match"``, ``weights`` are the rule's and ``full_match`` is what a record of
    average length holding each query word once scores (``bm25.full_match``; null: the query
    is not plain words, and ``bm25_best`` is the scale): the score is ``weights.keyword *
    min(bm25 / full_match, 1) + weights.semantic * cosine``. ``similar_words``, for the
    nearest hit of a search sharing no word whose closest word pair reaches ``Floors.words``
    (``similar``, :func:`closest_words`): ``{"query": ..., "record": ..., "cosine": ...}``;
    the pair held it to ``floor`` unless its own floor, lower, let it in. For an embedder whose
    fusion puts the hits holding a share of the query words' idf first (``"idf share held
    first"``), ``weights`` are the rule's, ``idf_share`` is the hit's share (``share``,
    ``bm25.idf_shares``, 0 when it holds none) and ``first`` whether it reaches the rule's
    (:func:`held_first`): the score is ``weights.keyword * bm25 / bm25_best +
    weights.semantic * cosine``, plus 1 when ``first``."""
    from .analysis import matched_words, typed_words

    # Keyword and semantic mode weigh one part each; any other mode is hybrid
    one_part = {"keyword": (1.0, 0.0), "semantic": (0.0, 1.0)}
    hybrid = mode not in one_part
    if not hybrid:
        keyword_part, semantic_part = one_part[mode]
    elif rule == WORDS_HELD:
        keyword_part, semantic_part = weight, semantic_weight(weight)
    else:
        keyword_part, semantic_part = rule.weight, semantic_weight(rule.weight)
    parts = {"keyword": keyword_part, "semantic": semantic_part}
    out: dict[str, Any] = {
        "mode": mode,
        "bm25": 0.0 if bm25 is None else bm25,
        "words": typed_words(text),
        "matched": matched_words(text, content),
        "cosine": cosine,
        "weights": parts,
        "floor": floor,
    }
    if mode != "keyword":
        out["calibrated"] = calibrated
    if similar is not None:
        asked, held, cosine = similar
        out["similar_words"] = {"query": asked, "record": held, "cosine": cosine}
    if hybrid:
        out["bm25_best"] = best
        out["fusion"] = rule.rule
        if rule.rule == FULL_MATCH:
            out["full_match"] = full
        elif rule.rule == IDF_SHARE_FIRST:
            out["idf_share"] = round(share, 6)
            out["first"] = held_first(share, rule)
    return out


@dataclass
class Fused:
    """A page of a hybrid ranking (:func:`fuse_page`): its (id, score) best first, and what
    ``--explain`` shows of it: the page's keyword hits' BM25 scores (rounded as the keyword
    ranking's) and keyword weights, and the best BM25 among the candidates (None: no keyword
    hit)."""

    ranked: list[tuple[str, float]]
    bm25: dict[str, float]
    best: float | None
    weights: dict[str, float]


def fuse_page(
    vectors: VectorSet,
    query: np.ndarray,
    candidates: np.ndarray,
    ids_by_docnum: Sequence[str],
    keyword_docs: list[int],
    keyword_scores: list[float],
    keyword_weights: list[float],
    end: int,
    floor: float,
    rule: Fusion = WORDS_HELD,
    lifted: Sequence[bool] = (),
) -> Fused:
    """The first ``end`` of ``fuse(keyword, vectors.rank(vectors, query, candidates, floor=floor),
    weights)``, same ids, scores and order, where ``candidates`` are rows (``rows_of_docs``, in
    any order) and the keyword ranking is given as index documents (numbers into
    ``ids_by_docnum``) with their BM25 scores before rounding (``SearchIndex.raw_scored_docs``)
    and their keyword weights (:func:`keyword_weight`), in the same order. Under the idf
    share held first (``rule``), the first ``end`` of :func:`fuse_first` instead, ``lifted``
    saying, in the same order, which keyword documents go first (:func:`held_first`; the
    keyword weights are the rule's).

    Every candidate's fused score is computed at once in numpy, the ``end``-th best found by a
    partition, and only the candidates within rounding of it (a few more than ``end``) are
    scored again in Python exactly as :func:`fuse` scores them and put in its order. Scores
    are rounded to 6 places, and numpy's rounding and sums differ from Python's by less than
    the margin kept (2e-6, and the BM25's rounding scaled by ``1 / best``), so no
    candidate further below the ``end``-th can reach the page. A search thus never rounds,
    sorts or looks up the ids of the thousands of matches that a common word has."""
    import math

    import numpy as np

    count = len(vectors.ids)
    first = rule.rule == IDF_SHARE_FIRST
    # A semantic candidate alone scores its cosine, or under the idf share its weighed cosine
    keep_weight = semantic_weight(rule.weight) if first else 1.0
    rows = candidates
    chosen = np.round(vectors.scores(query)[rows].astype(np.float64), 6)
    # At least the floor, and above 0 whatever the floor (a floor of 0 is no floor)
    keep = np.logical_and(chosen >= floor, chosen > 0)
    rows, chosen = rows[keep], chosen[keep]
    # Per row: its rounded cosine if it is a semantic candidate (NaN if not), its BM25 and
    # keyword weight if it matched a word (NaN if not), and its fused score (-inf: not a
    # candidate at all; a semantic candidate with no keyword match: its cosine alone)
    cosine_of = np.full(count, np.nan)
    cosine_of[rows] = chosen
    fused = np.full(count, -np.inf)
    fused[rows] = keep_weight * chosen
    raw = np.asarray(keyword_scores, dtype=np.float64)
    best = round(float(raw.max()), 6) if len(raw) else None
    divisor = best or 1.0  # no keyword hit, or all scored 0
    bm25_of = np.full(count, np.nan)
    weight_of = np.full(count, np.nan)
    lifted_of = np.zeros(count, dtype=bool)
    alone: list[tuple[str, float, float, bool]] = []  # keyword hits with no vector (rare)
    if len(raw):
        docs = np.asarray(keyword_docs, dtype=np.int64)
        weights = np.asarray(keyword_weights, dtype=np.float64)
        lifts = np.asarray(lifted, dtype=bool) if first else np.zeros(len(docs), dtype=bool)
        at = vectors.doc_rows(ids_by_docnum)[docs]
        has = at >= 0
        at, found, weight, lift = at[has], raw[has], weights[has], lifts[has]
        bm25_of[at] = found
        weight_of[at] = weight
        lifted_of[at] = lift
        counted = np.nan_to_num(cosine_of[at], nan=0.0)
        # An estimate: the rounding is left to the exact scores below (the margin covers it)
        if first:
            fused[at] = lift + keep_weight * counted + rule.weight * found / divisor
        else:
            fused[at] = np.maximum(counted, weight * found / divisor + (1.0 - weight) * counted)
        alone = [
            (ids_by_docnum[int(d)], float(s), float(w), bool(f))
            for d, s, w, f in zip(docs[~has], raw[~has], weights[~has], lifts[~has])
        ]
    shortlist = np.flatnonzero(np.isfinite(fused))
    if len(shortlist) > end:
        values = fused[shortlist]
        nth = -np.partition(-values, end - 1)[end - 1]
        # Rounding (numpy's and Python's, of the BM25 and of the sum) moves a score by less
        # (a keyword weight is at most 1).
        margin = 2e-6 + 2e-6 / divisor
        shortlist = shortlist[values >= nth - margin]
    keys = vectors.order_keys() if len(vectors.extra) else None
    ids = vectors.ids
    scored = []
    unplaced = (math.inf,)  # after every semantic candidate's (-cosine, order)
    shown: dict[str, float] = {}
    weighed: dict[str, float] = {}
    for row in shortlist.tolist():
        key = ids[row]
        cosine = float(cosine_of[row])
        placed = not math.isnan(cosine)  # a semantic candidate
        bm25 = float(bm25_of[row])
        if not math.isnan(bm25):
            rounded = round(bm25, 6)
            shown[key], weighed[key] = rounded, float(weight_of[row])
            if first:
                ahead = bool(lifted_of[row])
                total = _first(rule, ahead, rounded / divisor, cosine if placed else None)
            else:
                total = _fused(weighed[key], rounded / divisor, cosine if placed else None)
        elif first:  # a semantic candidate alone: its weighed cosine
            total = _first(rule, False, 0.0, cosine)
        else:  # a semantic candidate alone: its cosine, rounded and above 0 already
            total = cosine
        # fuse's ties: the semantic ranking's order (cosine, then the row's place in id
        # order), those it leaves out after (a cosine is finite), then the id
        tie = (-cosine, row if keys is None else float(keys[row])) if placed else unplaced
        scored.append((-total, tie, key))
    for key, bm25, kept, ahead in alone:
        rounded = round(bm25, 6)
        shown[key], weighed[key] = rounded, kept
        if first:
            total = _first(rule, ahead, rounded / divisor, None)
        else:
            total = _fused(kept, rounded / divisor, None)
        scored.append((-total, unplaced, key))
    scored.sort()
    page = [(key, -score) for score, _, key in scored[:end]]
    on_page = [key for key, _ in page if key in shown]
    return Fused(page, {k: shown[k] for k in on_page}, best, {k: weighed[k] for k in on_page})


def fuse(
    keyword: list[tuple[str, float]],
    semantic: list[tuple[str, float]],
    weights: Mapping[str, float],
) -> list[tuple[str, float]]:
    """The hybrid ranking of the keyword (BM25, best first) and semantic (cosine, best first,
    those under the floor already left out by :func:`rank`) rankings of the same candidates:
    each id scores ``max(cosine, w * bm25 / best bm25 + (1 - w) * cosine)`` (rounded to 6
    places; ``ranking.py``), ``w`` its keyword weight in ``weights``
    (:func:`keyword_weight`; 0 for an id the keyword ranking does not hold); best first,
    ties by the semantic ranking's order, then id. An id the semantic ranking leaves out has
    a cosine of 0 here: its keyword part."""
    # The best is the first; when it is 0 every score is, and any divisor gives 0
    best = keyword[0][1] if keyword and keyword[0][1] else 1.0
    bm25 = dict(keyword)
    cosines = dict(semantic)
    places = {key: place for place, (key, _) in enumerate(semantic)}
    ordered = []
    for key in bm25.keys() | cosines.keys():
        # An id with no keyword share counts its cosine alone whatever its weight (0 to 1)
        share = bm25[key] / best if key in bm25 else 0.0
        ordered.append((key, _fused(weights.get(key, 0.0), share, cosines.get(key))))
    unplaced = len(semantic)
    ordered.sort(key=lambda item: (-item[1], places.get(item[0], unplaced), item[0]))
    return ordered


def _fused(weight: float, share: float, cosine: float | None) -> float:
    """One candidate's hybrid score (the module's docstring), rounded to 6 places: ``share``
    its BM25 over the best, ``cosine`` None when it is not a semantic candidate (under the
    floor)."""
    counted = 0.0 if cosine is None else max(cosine, 0.0)
    return round(max(counted, weight * share + semantic_weight(weight) * counted), 6)
