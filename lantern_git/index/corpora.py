"""The corpora the one search pipeline (``retrieval.search``) runs over: the records, the records
as the review branches would make them (keyword only), and the source chunks.

Each is a thin adapter of its index to :class:`~lantern_git.index.retrieval.Corpus`: what is
its own (its filters, its keys, its keyword page, loading its hits), never a step of the
ranking. What the layers above them hand in is handed in once, when the corpus is made: the
workspace's refresh (recovery, the index in step, warnings of broken files), the vectors and
the embedder's name (semantic and hybrid mode only), and the records' citation filter already
resolved to a full source id.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..model.query import Hit, RecordQuery
from ..model.record import Record
from .chunks import ChunkHit, ChunkIndex, indexed_text
from .retrieval import Matches, SearchRequest
from .search import RefreshReport, SearchIndex, search_records

if TYPE_CHECKING:
    import numpy as np

    from .vectors import Vectors, VectorSet

RecordRequest = SearchRequest[RecordQuery]


class RecordCorpus:
    """The store's indexed records. A request's filters are a :class:`RecordQuery` (its text
    and page aside: the request's), ``cites`` a full source id or None: a term of the index,
    like the other filters."""

    def __init__(
        self,
        index: SearchIndex,
        refresh: Callable[[Callable[[], object] | None], RefreshReport],
        vectors: Vectors | None = None,
        embedder: str = "",
    ):
        self.index = index
        self._refresh = refresh
        self._vectors = vectors
        self.embedder = embedder
        # The documents the filters select, as (ids by document number, documents): read once,
        # as a corpus is made for one search
        self._selected: tuple[list[str], list[int]] | None = None

    @staticmethod
    def _query(request: RecordRequest) -> RecordQuery:
        """The index's query: the filters with the request's text, every match."""
        return dataclasses.replace(request.filters, text=request.text, limit=None, offset=0)

    def refresh(self) -> None:
        self._refresh(None)

    def keyword_page(self, request: RecordRequest) -> list[Hit]:
        page = request.page
        query = dataclasses.replace(
            request.filters, text=request.text, limit=page.limit, offset=page.offset
        )
        return self.index.fresh(query, True, self._refresh)

    def _select(self, request: RecordRequest) -> tuple[list[str], list[int]]:
        if self._selected is None:
            self._selected = self.index.matching_docs(self._query(request))
        return self._selected

    def candidates(self, request: RecordRequest, vectors: VectorSet, ordered: bool) -> np.ndarray:
        ids_by_docnum, docs = self._select(request)
        return vectors.rows_of_docs(ids_by_docnum, docs, ordered=ordered)

    def matches(self, request: RecordRequest, shares: bool = False) -> Matches:
        # The keyword ranking as documents and BM25 scores not yet rounded: a page ranks them
        # in bulk (fuse_page), so a common word's thousands of matches are never each rounded,
        # sorted or looked up by id.
        id_of, docs, scores, full, held = self.index.raw_scored_docs(self._query(request), shares)
        return Matches(id_of, docs, scores, full, held)

    def words_held(self, request: RecordRequest, matches: Matches) -> tuple[int, list[int]]:
        return self.index.words_held(request.text, matches.numbers)

    def vectors(self) -> Vectors:
        assert self._vectors is not None, "semantic and hybrid searches are given the vectors"
        return self._vectors

    def load(self, ranked: list[tuple[str, float]]) -> list[Hit]:
        records = self.index.records(record_id for record_id, _ in ranked)
        return [Hit(records[i], score) for i, score in ranked if i in records]

    def key(self, hit: Hit) -> str:
        return hit.record.id

    def content(self, hit: Hit) -> str:
        return hit.record.content


class PendingRecordCorpus(RecordCorpus):
    """The records as they would be once the review branches are accepted, searched by keyword
    in an index built in memory for the one answer (``search_records``), each scored as the
    store's index would score it; a hit is the record given (a ``PendingVersion`` for one a
    branch changed). ``records`` are already the ones the filters' citation selects."""

    def __init__(self, index: SearchIndex, records: Iterable[Record]):
        super().__init__(index, index.refresh)
        self.records = list(records)

    def keyword_page(self, request: RecordRequest) -> list[Hit]:
        page = request.page
        query = dataclasses.replace(
            request.filters, text=request.text, limit=page.limit, offset=page.offset
        )
        by_id = {r.id: r for r in self.records}
        return [Hit(by_id[h.record.id], h.score) for h in search_records(self.records, query)]


@dataclass(frozen=True)
class ChunkFilters:
    """The chunks a search chooses among: of sources of these ``kinds`` and these ``sources``
    (full ids; empty: any)."""

    kinds: tuple[str, ...] = ()
    sources: tuple[str, ...] = ()
    # An entity's names (key, name, aliases): only chunks holding one as a phrase.
    phrases: tuple[str, ...] = ()


ChunkRequest = SearchRequest[ChunkFilters]


class ChunkCorpus:
    """The sources' chunks; a chunk's key is ``<source id>:<first line>``."""

    def __init__(
        self,
        index: ChunkIndex,
        refresh: Callable[[], object],
        vectors: Vectors | None = None,
        embedder: str = "",
    ):
        self.index = index
        self._refresh = refresh
        self._vectors = vectors
        self.embedder = embedder

    def refresh(self) -> None:
        self._refresh()

    def keyword_page(self, request: ChunkRequest) -> list[ChunkHit]:
        self._refresh()
        page, filters = request.page, request.filters
        return self.index.search(
            request.text,
            kinds=filters.kinds,
            sources=filters.sources,
            limit=page.limit,
            offset=page.offset,
            phrases=filters.phrases,
        )

    def candidates(self, request: ChunkRequest, vectors: VectorSet, ordered: bool) -> np.ndarray:
        filters = request.filters
        keys = self.index.chunk_keys(filters.kinds, filters.sources, filters.phrases)
        return vectors.rows_of(keys)

    def matches(self, request: ChunkRequest, shares: bool = False) -> Matches:
        filters = request.filters
        keys, scores, full, held = self.index.raw_scored(
            request.text, filters.kinds, filters.sources, filters.phrases, shares
        )
        return Matches(keys, list(range(len(keys))), scores, full, held)

    def words_held(self, request: ChunkRequest, matches: Matches) -> tuple[int, list[int]]:
        keys = [matches.keys[n] for n in matches.numbers]
        words, held = self.index.words_held(request.text, keys)
        return words, [held.get(key, 0) for key in keys]

    def vectors(self) -> Vectors:
        assert self._vectors is not None, "semantic and hybrid searches are given the vectors"
        return self._vectors

    def load(self, ranked: list[tuple[str, float]]) -> list[ChunkHit]:
        return self.index.hits(ranked)

    def key(self, hit: ChunkHit) -> str:
        return self.index.key(hit)

    def content(self, hit: ChunkHit) -> str:
        return indexed_text(hit.text, hit.title)
