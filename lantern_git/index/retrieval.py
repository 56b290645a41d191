"""One search path for every corpus: records, source chunks (and, next, entities).

A search is a :class:`SearchRequest` (the text, the mode, the corpus's filters, the page, whether
to explain) run over a :class:`Corpus` by :func:`search`, which owns what every corpus shares:
the mode's dispatch, the similarity floor, the hybrid fusion (``ranking.py``), the page (the one
paging rule, ``core/paging.py``; its end computed once, by :class:`~lantern_git.core.paging.Page`)
and the :class:`Trace` that ``explain`` reads, each stage's figures recorded once (the cosine of a
hit among them). A corpus says only what is its own: its keyword page, its keyword matches as
keys and BM25 scores, the rows of the vectors its filters select, how many of the query's words
each match holds, its vectors, and how to load a page of (key, score) as hits.

Every corpus names its texts by one key type, a string (a record's id; a chunk's
``<source id>:<first line>``), and gives its keyword matches as numbers into a table of keys
(:class:`Matches`): the record index's table is its document numbers' ids, kept while the index
is unchanged, so that the thousands of matches a common word has are never each looked up by id
(``ranking.fuse_page``). The corpora themselves are in ``corpora.py``.

Before this module, records and chunks each had their own orchestration of the same steps, and
they had drifted: the chunks fused whole rankings where the records fused a page, and four call
sites each recomputed a hit's cosine for ``explain``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeVar

from ..core.fields import SEARCH_MODES
from ..core.paging import Page
from ..errors import InvalidInput
from . import ranking

if TYPE_CHECKING:
    import numpy as np

    from .vectors import Vectors, VectorSet


class Ranked(Protocol):
    """What the pipeline needs of a hit: its score, and room for its mode and explanation."""

    @property
    def score(self) -> float | None: ...

    mode: str | None
    explain: dict[str, Any] | None


H = TypeVar("H", bound=Ranked)
F = TypeVar("F")


def check(text: Any, mode: Any) -> None:
    """Refuse a mode that is not one of the search modes (None: the store's default) and an
    empty search text: for every corpus, before anything is read."""
    if mode is not None and mode not in SEARCH_MODES:
        raise InvalidInput(
            f"mode: must be keyword, semantic or hybrid; got {mode!r}", code="invalid_field"
        )
    if not isinstance(text, str) or not text.strip():
        raise InvalidInput("query: must not be empty", code="invalid_query")


@dataclass(frozen=True)
class SearchRequest(Generic[F]):
    """One search: ``text`` (checked by :func:`check`), ``mode`` as the store resolved it
    (keyword, semantic or hybrid), the corpus's ``filters``, the ``page`` and whether to
    ``explain`` each hit."""

    text: str
    mode: str
    filters: F
    page: Page
    explain: bool = False


@dataclass(frozen=True)
class Matches:
    """A corpus's keyword matches: ``numbers`` into ``keys`` (a table of keys by number) and
    their BM25 ``scores`` before rounding, in the same order (any order); ``full_match``, what
    a text of average length holding each of the query's words once scores over the documents
    the filters select (``bm25.full_match``; None: the query is not plain words); ``shares``,
    when asked, each match's share of the query words' idf over those documents, in the same
    order (``bm25.idf_shares``)."""

    keys: Sequence[str]
    numbers: list[int]
    scores: list[float]
    full_match: float | None = None
    shares: list[float] | None = None


class Corpus(Protocol[H, F]):
    """What a corpus gives the pipeline (see the module's docstring). ``embedder``: the name of
    the embedder its vectors were made by (it decides the floor)."""

    embedder: str

    def refresh(self) -> None:
        """Bring the index in step with the files before a semantic or hybrid ranking."""

    def keyword_page(self, request: SearchRequest[F]) -> list[H]:
        """Keyword mode: the request's page of hits with their BM25 scores (the corpus brings
        its index in step first), best first."""
        ...

    def matches(self, request: SearchRequest[F], shares: bool = False) -> Matches:
        """Every keyword match of the request's text among the documents its filters select,
        with ``shares`` each one's share of the query words' idf too (read with them)."""
        ...

    def candidates(
        self, request: SearchRequest[F], vectors: VectorSet, ordered: bool
    ) -> np.ndarray:
        """The rows of ``vectors`` of the texts the filters select: the semantic candidates,
        sorted and each once when ``ordered``, else in any order."""
        ...

    def words_held(self, request: SearchRequest[F], matches: Matches) -> tuple[int, list[int]]:
        """(how many words the query has as typed; how many of them each match holds, in the
        order of ``matches.numbers``)."""
        ...

    def vectors(self) -> Vectors:
        """The corpus's vectors (asked for in semantic and hybrid mode only)."""
        ...

    def load(self, ranked: list[tuple[str, float]]) -> list[H]:
        """These (key, score) as hits with those scores, in that order (a key no longer
        indexed left out)."""
        ...

    def key(self, hit: H) -> str: ...

    def content(self, hit: H) -> str:
        """The text the index holds for a hit: what ``explain`` matches the words in."""
        ...


@dataclass
class Trace:
    """What each stage of one search did, as ``explain`` reports it (``ranking.explained``):
    the keyword stage's BM25 scores of the shown hits and the best among the candidates, the
    floor the cosines had to reach, the fusion's keyword weights, and each shown hit's cosine,
    computed once, here."""

    mode: str
    text: str
    floor: float | None = None
    calibrated: bool = True
    best: float | None = None
    bm25: dict[str, float] = field(default_factory=dict)
    weights: dict[str, float] = field(default_factory=dict)
    cosines: dict[str, float] = field(default_factory=dict)
    rule: ranking.Fusion = ranking.WORDS_HELD
    # A centred embedder's search sharing no word with the records: each hit's own floor, and
    # the nearest hit's closest word pair at the threshold (query word, record word, cosine),
    # which lowered its floor unless its own let it in
    floors: dict[str, float] = field(default_factory=dict)
    similar: dict[str, tuple[str, str, float]] = field(default_factory=dict)
    # The BM25 over a full match: what a text of average length holding each word once scores
    full: float | None = None
    # The idf share held first: each keyword hit's share of the query words' idf
    shares: dict[str, float] = field(default_factory=dict)

    def explained(self, key: str, content: str) -> dict[str, Any]:
        """One shown hit's ``explain`` object."""
        return ranking.explained(
            self.mode,
            self.text,
            content,
            self.bm25.get(key),
            self.best,
            self.cosines.get(key),
            self.floors.get(key, self.floor),
            self.weights.get(key, 0.0),
            self.calibrated,
            self.rule,
            self.similar.get(key),
            self.full,
            self.shares.get(key, 0.0),
        )


def search(corpus: Corpus[H, F], request: SearchRequest[F]) -> list[H]:
    """The request's page of hits over ``corpus``, best first, each with its ``mode`` and, when
    asked, its ``explain`` (see the module's docstring and ``ranking.py``)."""
    if request.mode == "keyword":
        hits = corpus.keyword_page(request)
        trace = Trace(request.mode, request.text)
        if request.explain:
            trace.bm25 = {corpus.key(hit): hit.score or 0.0 for hit in hits}
    else:
        hits, trace = _by_vectors(corpus, request)
    for hit in hits:
        hit.mode = request.mode
        if request.explain:
            hit.explain = trace.explained(corpus.key(hit), corpus.content(hit))
    return hits


def _by_vectors(corpus: Corpus[H, F], request: SearchRequest[F]) -> tuple[list[H], Trace]:
    """Semantic and hybrid: the candidates ranked by cosine, and in hybrid mode fused with the
    keyword ranking (``ranking.py``), then the page."""
    from .vectors import rank

    corpus.refresh()
    vectors = corpus.vectors()
    current = vectors.current()
    hybrid = request.mode == "hybrid"
    rule = ranking.fusion(corpus.embedder)
    end = request.page.end
    # fuse_page: the rows in any order (the weight by words held and the idf share held
    # first; the full match's rule ranks every candidate)
    by_words_held = hybrid and rule == ranking.WORDS_HELD
    by_idf_share = hybrid and rule.rule == ranking.IDF_SHARE_FIRST
    paged = end is not None and (by_words_held or by_idf_share)
    candidates = corpus.candidates(request, current, ordered=not paged)
    wanted = vectors.embed_query(request.text)
    matches = corpus.matches(request, by_idf_share)
    # A query sharing no word with the texts searched has a floor of its own: the lower of the
    # embedder's fixed one and its noise level (its cosines with the probe words) plus a margin
    anchored = bool(matches.numbers)
    noise = None
    own: dict[str, float] = {}
    pairs: dict[str, tuple[str, str, float]] = {}
    if ranking.centred(corpus.embedder, anchored):
        # Each record's own floor: the candidates under theirs are left out here, so the
        # rankings below need none (and no keyword match can bring one back: there is none)
        import numpy as np

        beta = ranking.floors(corpus.embedder).beta
        level = vectors.noise(wanted, ranking.query_probes(corpus.embedder), beta)
        levels = vectors.levels(current, candidates, ranking.PROBES, beta)
        floors = ranking.record_floors(corpus.embedder, level, levels)
        cosines = np.round(current.scores(wanted)[candidates].astype(np.float64), 6)
        kept = cosines >= floors
        similar = _word_pairs(
            corpus, vectors, request, current, candidates, cosines, kept, request.explain
        )
        # A word pair holds a record to the floor of a search sharing a word, where lower
        for at in similar:
            if not kept[at]:
                kept[at] = True
                floors[at] = min(floors[at], ranking.floors(corpus.embedder).floor)
        if request.explain:
            pairs = {current.ids[candidates[at]]: pair for at, pair in similar.items()}
        candidates = candidates[kept]
        if request.explain:
            own = dict(zip((current.ids[r] for r in candidates.tolist()), floors[kept].tolist()))
        floor = 0.0
    else:
        if ranking.needs_noise(corpus.embedder, anchored):
            noise = vectors.noise(wanted, ranking.query_probes(corpus.embedder))
        floor = ranking.floor(corpus.embedder, anchored, noise)
    trace = Trace(
        request.mode, request.text, floor=floor, calibrated=ranking.calibrated(corpus.embedder)
    )
    trace.floors = own
    trace.similar = pairs
    trace.rule = rule
    # Each keyword match's weight in hybrid mode: the share of the query's words it holds, or
    # the rule's, each match then going first or not by its share of the words' idf
    shares: list[float] = []
    lifted: list[bool] = []
    keys = matches.keys
    if by_words_held:
        words, held = corpus.words_held(request, matches)
        # One weight per count (0 to the query's words): a common word has 10k hits at 100k
        by_count = [ranking.keyword_weight(count, words) for count in range(words + 1)]
        shares = list(map(by_count.__getitem__, held))
    elif by_idf_share:
        assert matches.shares is not None  # asked for with the matches
        idf = matches.shares
        lifted = [ranking.held_first(share, rule) for share in idf]
        shares = [rule.weight] * len(idf)
        if request.explain or not paged:
            trace.shares = dict(zip((keys[n] for n in matches.numbers), idf))
    if paged:
        assert end is not None
        fused = ranking.fuse_page(
            current, wanted, candidates, keys, matches.numbers, matches.scores, shares, end,
            floor, rule, lifted,
        )  # fmt: skip
        ranked, trace.bm25, trace.best, trace.weights = (
            fused.ranked,
            fused.bm25,
            fused.best,
            fused.weights,
        )
    else:
        if by_words_held:
            trace.weights = dict(zip((keys[n] for n in matches.numbers), shares))
        keyword: list[tuple[str, float]] = []
        if hybrid or request.explain:
            # The keyword ranking as the keyword mode rounds it: a page ranks the raw scores
            # in bulk (fuse_page), so a common word's matches are never each rounded or sorted.
            keyword = sorted(
                ((keys[n], round(s, 6)) for n, s in zip(matches.numbers, matches.scores)),
                key=lambda item: (-item[1], item[0]),
            )
            trace.bm25, trace.best = dict(keyword), (keyword[0][1] if keyword else None)
        if hybrid and rule.rule == ranking.FULL_MATCH:  # every candidate, whole rankings
            trace.full = matches.full_match
            semantic = rank(current, wanted, candidates, floor=floor)
            ranked = ranking.fuse_full_match(keyword, semantic, rule, trace.full)
        elif by_idf_share:  # every candidate, whole rankings (no page: --limit 0)
            semantic = rank(current, wanted, candidates, floor=floor)
            ranked = ranking.fuse_first(keyword, semantic, rule, trace.shares)
        elif hybrid:  # every candidate: whole rankings fused
            ranked = ranking.fuse(
                keyword, rank(current, wanted, candidates, floor=floor), trace.weights
            )
        else:  # semantic needs only the page
            ranked = rank(current, wanted, candidates, end, floor)
    hits = corpus.load(request.page.take(ranked))
    if request.explain:
        for key in map(corpus.key, hits):
            trace.cosines[key] = round(float(current.vector(key) @ wanted), 6)
    return hits, trace


def _word_pairs(
    corpus: Corpus[H, F],
    vectors: Vectors,
    request: SearchRequest[F],
    current: VectorSet,
    candidates: np.ndarray,
    cosines: np.ndarray,
    kept: np.ndarray,
    explain: bool,
) -> dict[int, tuple[str, str, float]]:
    """Word-level expansion (``ranking.closest_words``): among the ``ranking.WORD_NEAREST``
    candidates nearest the query by cosine, those that reach the floor of a search sharing a
    word and hold a word close enough to one of the query's, by place in ``candidates``, with
    their closest pair: those under their own floor (not ``kept``), and with ``explain`` the
    kept ones too (so that ``--explain`` names a kept hit's pair). Only their words, and the
    query's, are embedded (each once per store: ``Vectors.word_vectors``)."""
    import numpy as np

    from .analysis import content_words

    found = ranking.floors(corpus.embedder)
    if found.words is None:
        return {}
    # The nearest by cosine, ties by place: the rows at or above the k-th (a partition, not a
    # sort of every candidate), then sorted
    nearest = np.arange(len(cosines))
    if len(cosines) > ranking.WORD_NEAREST:
        kth = -np.partition(-cosines, ranking.WORD_NEAREST - 1)[ranking.WORD_NEAREST - 1]
        nearest = np.flatnonzero(cosines >= kth)
    nearest = nearest[np.argsort(-cosines[nearest], kind="stable")][: ranking.WORD_NEAREST]
    unsure = [
        at for at in nearest.tolist() if (explain or not kept[at]) and cosines[at] >= found.floor
    ]
    asked = content_words(request.text)
    if not unsure or not asked:
        return {}
    keys = [current.ids[candidates[at]] for at in unsure]
    texts = vectors.index.texts(keys)
    held = {key: content_words(texts.get(key, "")) for key in keys}
    known = vectors.word_vectors([*asked, *(w for words in held.values() for w in words)])
    pairs = {}
    for at, key in zip(unsure, keys):
        pair = ranking.closest_words(asked, held[key], known)
        if pair is not None and pair[2] >= found.words:
            pairs[at] = pair
    return pairs
