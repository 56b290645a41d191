"""Record vectors for semantic recall: derived state in ``.lantern/vectors/``, like the index.

One unit vector per record content, made by the store's embedder, kept as

    .lantern/vectors/records/meta.json     format, embedder fingerprint, count, dim, CRC-32 of
                                           the vectors, the index generation they match, and
                                           per row: record id, file digest, text hash
    .lantern/vectors/records/vectors.npy   float32 (count, dim), opened with mmap

Never committed (``.lantern/`` is git-ignored) and safe to delete. The search index is the
source: when its generation differs from the one the vectors were made against (a hand edit,
a pull, a checkout, a lantern write), its id -> file digest map is compared with the rows';
a record whose file changed is re-embedded only if its text did (the row is keyed by the hash
of the text), and rows of records gone are dropped. A vector set made by another embedder
(name or dim) is not used: everything is embedded again. The new set is written into a fresh
folder and swapped in (the index's swap, ``whoosh_compat.swap_in``), so a crash leaves the old
set or the new one; a set whose meta does not parse, whose array has another shape or dtype,
or whose CRC differs is rebuilt, never trusted.

Only this module and ``embedders.py`` import numpy, and only semantic paths import them.
"""

from __future__ import annotations

import builtins
import hashlib
import json
import os
import shutil
import zlib
from collections.abc import Callable, Iterable
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from ..embedders import Embedder
from . import whoosh_compat
from .search import SearchIndex

FORMAT = 1
# Hybrid search scores a record KEYWORD_WEIGHT x its BM25 score over the best BM25 score
# among the candidates, plus (1 - KEYWORD_WEIGHT) x its cosine (0 when negative): a convex
# combination, which Bruch, Gai & Ingber ("An Analysis of Fusion Functions for Hybrid
# Retrieval", 2023) found to beat reciprocal rank fusion. On the labelled set
# (benchmarks/recall.py; recall@1 / recall@5 by query type) reciprocal rank fusion (k = 60)
# gave paraphrases 0.10 / 0.38, keyword queries 0.96 / 1.00, word forms 0.89 / 0.98; this
# weight gave 0.20 / 0.44, 0.98 / 0.99 and 0.93 / 0.98 (0.1 gave paraphrases more and word
# forms less; 0.3 the reverse). RRF lets a record that only the keyword ranking places high
# (a shared name) tie with one only the semantic ranking does; a convex sum keeps the
# cosine's margin. The weight was chosen on that set: its hybrid figures are optimistic.
KEYWORD_WEIGHT = 0.2
# Rows per block of a dupes matrix product: 1024 x 10k float32 scores is 40 MB at most.
BLOCK = 1024
EMBED_BATCH = 4096


def text_hash(text: str) -> str:
    return hashlib.sha1(text.encode("utf-8")).hexdigest()


@dataclass
class VectorSet:
    """One embedder's vectors for the indexed records, as of one index generation."""

    fingerprint: str
    generation: str
    ids: builtins.list[str]
    digests: builtins.list[str]
    texts: builtins.list[str]
    matrix: np.ndarray

    def __post_init__(self) -> None:
        self.row = {record_id: number for number, record_id in enumerate(self.ids)}

    def scores(self, vector: np.ndarray) -> np.ndarray:
        """Cosine of every row with ``vector`` (a unit vector): one pass over the map."""
        if not len(self.ids):
            return np.zeros(0, dtype=np.float32)
        return np.asarray(self.matrix @ vector, dtype=np.float32)


def fingerprint(embedder: Embedder) -> str:
    return f"{embedder.name}/{embedder.dim}"


def unit_rows(matrix: np.ndarray, dim: int) -> np.ndarray:
    """``matrix`` as float32 (n, dim) unit rows; an embedder's output is checked, not trusted."""
    matrix = np.asarray(matrix, dtype=np.float32)
    if matrix.ndim != 2 or matrix.shape[1] != dim:
        from ..errors import StoreError

        raise StoreError(f"the embedder returned an array of shape {matrix.shape}, not (n, {dim})")
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return np.ascontiguousarray(matrix / norms, dtype=np.float32)


class Texts(Protocol):
    """Where the texts to embed come from: the record index, or the chunk index."""

    def generation(self) -> str:
        """A token that changes whenever the texts may have."""
        ...

    def digests(self) -> dict[str, str]:
        """Every key -> a digest that changes when its text may have."""
        ...

    def texts(self, keys: builtins.list[str]) -> dict[str, str]:
        """The texts of these keys (those that still exist)."""
        ...


class RecordTexts:
    """The record index as :class:`Texts`: record id -> content, file digests as digests."""

    def __init__(self, index: SearchIndex):
        self.index = index

    def generation(self) -> str:
        return self.index.generation()

    def digests(self) -> dict[str, str]:
        return self.index.digests()

    def texts(self, keys: builtins.list[str]) -> dict[str, str]:
        return {key: record.content for key, record in self.index.records(keys).items()}


class Vectors:
    """The vectors of one kind of text (records, or source chunks) under one embedder, kept in
    ``<state_dir>/vectors/<name>/`` (see the module docstring)."""

    def __init__(
        self,
        state_dir: str,
        name: str,
        index: Texts,
        embedder: Embedder,
        locker: Callable[[], AbstractContextManager[object]],
    ):
        self.dir = os.path.join(state_dir, "vectors", name)
        self.index = index
        self.embedder = embedder
        self.fingerprint = fingerprint(embedder)
        self._locker = locker
        self._loaded: VectorSet | None = None
        # Texts embedded by the last ``current`` (what a test or a benchmark looks at).
        self.embedded = 0

    def current(self) -> VectorSet:
        """The vectors in step with the index (call after the index's refresh)."""
        generation = self.index.generation()
        loaded = self._loaded or self._load()
        self.embedded = 0
        if loaded is not None and loaded.generation == generation:
            self._loaded = loaded
            return loaded
        with self._locker():
            loaded = self._load()  # another process may have brought them in step meanwhile
            if loaded is not None and loaded.generation == generation:
                self._loaded = loaded
                return loaded
            self._loaded = self._catch_up(loaded, generation)
        return self._loaded

    def rebuild(self) -> VectorSet:
        """Embed every text again, from nothing (``lantern index rebuild``)."""
        with self._locker():
            shutil.rmtree(self.dir, ignore_errors=True)
            self._loaded = None
            self._loaded = self._catch_up(None, self.index.generation())
        return self._loaded

    def embed_query(self, text: str) -> np.ndarray:
        return unit_rows(self.embedder.embed([text]), self.embedder.dim)[0]

    # -- keeping in step

    def _catch_up(self, old: VectorSet | None, generation: str) -> VectorSet:
        digests = self.index.digests()
        ids = sorted(digests)
        old_row = old.row if old is not None else {}
        changed = [
            i
            for i in ids
            if i not in old_row or old is None or old.digests[old_row[i]] != digests[i]
        ]
        contents = self.index.texts(changed)
        texts: dict[str, str] = {}
        if old is not None:
            texts = {i: old.texts[old_row[i]] for i in ids if i in old_row}
        # Rows whose text is new: by the hash of the text, which a status edit leaves alone.
        by_hash = {} if old is None else {t: n for n, t in enumerate(old.texts)}
        fresh_rows: dict[str, int] = {}
        to_embed: list[str] = []
        for key in changed:
            content = contents.get(key)
            if content is None:  # gone since the digests were read: the next call sees it
                digests.pop(key)
                continue
            texts[key] = text_hash(content)
            if texts[key] not in by_hash:
                by_hash[texts[key]] = -1  # one embedding per distinct new text
                fresh_rows[texts[key]] = len(to_embed)
                to_embed.append(content)
        ids = [i for i in ids if i in digests]
        dim = self.embedder.dim
        embedded = np.zeros((0, dim), dtype=np.float32)
        if to_embed:
            parts = [
                unit_rows(self.embedder.embed(to_embed[start : start + EMBED_BATCH]), dim)
                for start in range(0, len(to_embed), EMBED_BATCH)
            ]
            embedded = np.concatenate(parts)
        self.embedded = len(to_embed)
        # Each row from the old set (its row there) or from the fresh embeddings (-1).
        source = np.fromiter((by_hash[texts[key]] for key in ids), dtype=np.int64, count=len(ids))
        matrix = np.empty((len(ids), dim), dtype=np.float32)
        reused = source >= 0
        if old is not None and reused.any():
            matrix[reused] = old.matrix[source[reused]]
        if not reused.all():
            new_rows = [fresh_rows[texts[key]] for key, row in zip(ids, source) if row < 0]
            matrix[~reused] = embedded[new_rows]
        made = VectorSet(
            self.fingerprint,
            generation,
            ids,
            [digests[i] for i in ids],
            [texts[i] for i in ids],
            matrix,
        )
        self._save(made)
        return made

    # -- storage

    def _save(self, made: VectorSet) -> None:
        """Write into a fresh folder, then swap it in; a read-only store keeps it in memory."""
        fresh = self.dir + ".new"
        shutil.rmtree(fresh, ignore_errors=True)
        try:
            os.makedirs(fresh)
            with open(os.path.join(fresh, "vectors.npy"), "wb") as handle:
                np.save(handle, made.matrix)
                handle.flush()
                os.fsync(handle.fileno())
            meta = {
                "format": FORMAT,
                "embedder": made.fingerprint,
                "generation": made.generation,
                "count": len(made.ids),
                "dim": int(made.matrix.shape[1]),
                "crc32": _crc(made.matrix),
                "ids": made.ids,
                "digests": made.digests,
                "texts": made.texts,
            }
            with open(os.path.join(fresh, "meta.json"), "w", encoding="utf-8") as handle:
                json.dump(meta, handle)
                handle.flush()
                os.fsync(handle.fileno())
            whoosh_compat.swap_in(fresh, self.dir)
        except OSError:
            shutil.rmtree(fresh, ignore_errors=True)

    def _load(self) -> VectorSet | None:
        """The vector set on disk if it is whole and this embedder's; None otherwise."""
        try:
            with open(os.path.join(self.dir, "meta.json"), encoding="utf-8") as handle:
                meta = json.load(handle)
            count, dim = meta["count"], meta["dim"]
            ok = (
                meta["format"] == FORMAT
                and meta["embedder"] == self.fingerprint
                and dim == self.embedder.dim
                and len(meta["ids"]) == len(meta["digests"]) == len(meta["texts"]) == count
            )
            if not ok:
                return None
            if count:
                matrix = np.load(os.path.join(self.dir, "vectors.npy"), mmap_mode="r")
            else:
                matrix = np.zeros((0, dim), dtype=np.float32)
            if matrix.dtype != np.float32 or matrix.shape != (count, dim):
                return None
            if count and _crc(matrix) != meta["crc32"]:
                return None
            return VectorSet(
                meta["embedder"],
                meta["generation"],
                meta["ids"],
                meta["digests"],
                meta["texts"],
                matrix,
            )
        except (OSError, ValueError, KeyError, TypeError):
            return None


def rank(
    vectors: VectorSet, query: np.ndarray, candidates: Iterable[str], end: int | None = None
) -> builtins.list[tuple[str, float]]:
    """The ``candidates`` by cosine with ``query`` (rounded to 6 places), best first, ties by
    id; those with a cosine of 0 or less (nothing in common) are left out; the first ``end``
    only, if given. In numpy: the rows are in id order, so a stable sort keeps ties by id
    (100k candidates: ~40 ms, against ~250 ms in Python)."""
    scores = vectors.scores(query)
    row = vectors.row
    rows = np.fromiter((row.get(i, -1) for i in candidates), dtype=np.int64)
    rows = np.unique(rows[rows >= 0])  # sorted: id order
    chosen = np.round(scores[rows].astype(np.float64), 6)
    keep = chosen > 0
    rows, chosen = rows[keep], chosen[keep]
    order = np.argsort(-chosen, kind="stable")[:end]
    ids = vectors.ids
    return [(ids[int(r)], float(c)) for r, c in zip(rows[order], chosen[order])]


def fuse(
    keyword: builtins.list[tuple[str, float]], semantic: builtins.list[tuple[str, float]]
) -> builtins.list[tuple[str, float]]:
    """The hybrid ranking of the keyword (BM25, best first) and semantic (cosine) rankings of
    the same candidates: each id scores ``KEYWORD_WEIGHT * bm25 / best bm25 + (1 -
    KEYWORD_WEIGHT) * max(cosine, 0)`` (rounded to 6 places); best first, ties by the semantic
    ranking's order, then id. An id the semantic ranking leaves out (a cosine of 0 or less)
    keeps its keyword part."""
    best = keyword[0][1] if keyword and keyword[0][1] > 0 else 1.0
    fused = {key: KEYWORD_WEIGHT * score / best for key, score in keyword}
    for key, cosine in semantic:
        fused[key] = fused.get(key, 0.0) + (1.0 - KEYWORD_WEIGHT) * max(cosine, 0.0)
    place = {key: number for number, (key, _) in enumerate(semantic)}
    unplaced = len(place)
    ordered = [(key, round(score, 6)) for key, score in fused.items()]
    ordered.sort(key=lambda item: (-item[1], place.get(item[0], unplaced), item[0]))
    return ordered


def pairs_above(
    vectors: VectorSet, candidates: Iterable[str], threshold: float
) -> builtins.list[tuple[str, str, float]]:
    """Every pair of ``candidates`` with a cosine of at least ``threshold`` as (a, b, score)
    with a < b, by score desc then ids: a blockwise product of the candidates' rows, so
    memory stays at one block of scores however many records there are."""
    ids = sorted(i for i in set(candidates) if i in vectors.row)
    if len(ids) < 2:
        return []
    rows = np.asarray([vectors.row[i] for i in ids])
    sub = np.ascontiguousarray(vectors.matrix[rows])
    found: list[tuple[str, str, float]] = []
    for start in range(0, len(ids), BLOCK):
        block = sub[start : start + BLOCK] @ sub.T
        # Only pairs (i, j) with j > i: the upper triangle of the whole matrix.
        block[np.tril_indices(block.shape[0], k=start, m=block.shape[1])] = -np.inf
        for i, j in zip(*np.nonzero(block >= threshold)):
            found.append((ids[start + int(i)], ids[int(j)], round(float(block[i, j]), 6)))
    found.sort(key=lambda item: (-item[2], item[0], item[1]))
    return found


def _crc(matrix: np.ndarray) -> int:
    """CRC-32 of the array's bytes (~1 GB/s: 10 ms for 10k records' vectors)."""
    if not matrix.size:
        return 0  # an empty buffer cannot be cast to bytes
    return zlib.crc32(np.ascontiguousarray(matrix).data.cast("B"))
