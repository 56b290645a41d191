"""Record vectors for semantic recall: derived state in ``.lantern/vectors/``, like the index.

One unit vector per record content, made by the store's embedder, kept as

    .lantern/vectors/records/meta.json     format, embedder fingerprint, count, dim, CRC-32 of
                                           the vectors and of rows.json, the index generation
                                           they match, a random base token, the record ids
    .lantern/vectors/records/vectors.npy   float32 (count, dim), opened with mmap
    .lantern/vectors/records/rows.json     per row: file digest, text hash (read only to
                                           catch up: a search of a set in step never does)
    .lantern/vectors/records/journal.bin   changes since: entries appended after writes

Never committed (``.lantern/`` is git-ignored) and safe to delete. The search index is the
source: when its generation differs from the one the vectors were made against (a hand edit,
a pull, a checkout, a lantern write), its id -> file digest map (two columns) is compared with
the rows'; a record whose file changed is re-embedded only if its text did (the row is keyed by
the hash of the text), and rows of records gone are dropped.

A few changes are appended to the journal as one entry: the new generation, the ids dropped,
and the changed ids with their digests, text hashes and vectors, under a CRC-32 of the whole
entry and tied to the base by its token. Loading takes in the entries up to the first that is
torn, fails its CRC or names another base (a kill mid-append): the entries before it are a
consistent, older set, which catches up from there, and the next append cuts the tail off.
Past ``COMPACT_FROM`` + 1/``COMPACT_SHARE`` of the records in journal rows, unused rows and
entries, or with no usable set, the whole set is written into a fresh folder and swapped in
(the index's swap, ``whoosh_compat.swap_in``), so a crash leaves the old set or the new one.
A vector set made by another embedder (name or dim) is not used: everything is embedded again.
A set whose meta does not parse, whose array has another shape or dtype, or whose CRCs differ
is rebuilt, never trusted.

Only this module, ``embedders.py`` and the hybrid fusion in ``ranking.py`` import numpy, and only
semantic paths import them.
"""

from __future__ import annotations

import bisect
import builtins
import functools
import json
import math
import os
import shutil
import struct
import time
import zlib
from collections.abc import Callable, Iterable, Sequence
from contextlib import AbstractContextManager
from typing import Any, Protocol

import numpy as np

from . import whoosh_compat
from .embedders import Embedder
from .search import Progress, SearchIndex

# 2: file digests as the index's 64-bit digest keys, rows.json, a base token, the journal
FORMAT = 2
# The base rows' file digests and text hashes, read only to catch up (not by a search)
ROWS = "rows.json"
# Changes since the base file was written, appended (see ``Vectors._append``)
JOURNAL = "journal.bin"
MAGIC = b"LVJ1"
# magic, JSON length, rows, CRC-32 of the JSON and the rows (float32, little-endian)
HEAD = struct.Struct("<4sIII")
# Rows written to the journal, rows left unused and entries, past which the whole set is
# written again: COMPACT_FROM plus one per COMPACT_SHARE records. At 100k, ~7k (7 MB of rows).
COMPACT_FROM = 1024
COMPACT_SHARE = 16
# Rows per block of a dupes matrix product: 1024 x 10k float32 scores is 40 MB at most.
BLOCK = 1024
EMBED_BATCH = 4096
# Rows per product when each row's level over the probe words is not their mean: a block's
# cosines with the 28 probes (float32, 7 MB) instead of the whole set's (at 1M rows, 112 MB)
LEVEL_BLOCK = 65536
# Past this many new texts a catch-up embeds in batches of it, each appended to the journal as
# it is made: a kill loses one batch at most, and the next catch-up embeds only what is left
# (e5 embeds 20-100 texts a second: a batch is seconds; wordllama's, milliseconds).
RESUMABLE_BATCH = 256
# A batch embedded in less than this many seconds doubles the next one, up to LARGEST_BATCH.
QUICK_BATCH = 0.25
LARGEST_BATCH = 8192
# The probe words' vectors (ranking.PROBES) by embedder fingerprint and words, made once per
# process and kept beside the vector sets (``probes-<digest>.npy``): a search sharing no word
# with the store reads its noise level from them (ranking.floor) without embedding 28 words
# each time.
_PROBE_VECTORS: dict[str, np.ndarray] = {}
# Single words embedded alone, as searches, for word pairs (``ranking.closest_words``), by
# file: made once per process and kept beside the vector sets (``words-<digest>.bin``, appended
# to), so a word is embedded once per store however often it is compared.
_WORD_VECTORS: dict[str, dict[str, np.ndarray]] = {}
# Past this many words the file starts again (75 MB of 384-dimension vectors at most)
WORDS_KEPT = 50_000
# One kept word, a fixed size: its UTF-8 bytes padded with NULs (a word is at most
# analysis.LONGEST_WORD letters, each at most 4 bytes), then its vector (little-endian float32).
# A kill mid-append leaves a part of one at the end, which the next read drops.
WORD_BYTES = 160


class VectorSet:
    """One embedder's vectors for the indexed records, as of one index generation: the rows of
    the base file (``matrix``, ids in order), then those the journal added (``extra``). A
    record's live row is ``row[id]``; rows replaced or dropped since stay, unused, until the
    next full write."""

    def __init__(
        self,
        fingerprint: str,
        generation: str,
        ids: builtins.list[str],
        digests: builtins.list[str] | None,
        texts: builtins.list[str] | None,
        matrix: np.ndarray,
        base: str = "",
        rows: Callable[[], tuple[builtins.list[str], builtins.list[str]]] | None = None,
    ):
        """``digests`` and ``texts`` are the base rows'; None: ``rows()`` reads them when
        first needed (a search of a set in step never does)."""
        self.fingerprint = fingerprint
        self.generation = generation
        self.ids = ids
        self._base_rows = None if digests is None or texts is None else (digests, texts)
        self._read_rows = rows
        # The journal rows' digests and text hashes
        self._more: tuple[builtins.list[str], builtins.list[str]] = ([], [])
        self.matrix = matrix
        self.base = base
        self.extra = np.zeros((0, matrix.shape[1]), dtype=np.float32)
        self.row = {record_id: number for number, record_id in enumerate(ids)}
        # Bytes of the journal taken in, and meta.json's identity (None: not the one on disk)
        self.journal_end = 0
        self.entries = 0  # journal entries taken in
        self.identity: tuple[int, ...] | None = None
        self._keys: np.ndarray | None = None
        self._by_hash: dict[str, int] | None = None
        # (the index's ids by document number, each document's row or -1): see ``rows_of_docs``
        self._doc_rows: tuple[Sequence[str], np.ndarray] | None = None
        # Each row's mean cosine with the probe words as searches (``levels``), by the probes'
        # key; computed once per set and rows taken in
        self._levels: tuple[str, np.ndarray] | None = None

    def scores(self, vector: np.ndarray) -> np.ndarray:
        """Cosine of every row with ``vector`` (a unit vector): one pass over the map, on one
        BLAS thread (see :func:`_one_blas_thread`)."""
        if not len(self.ids):
            return np.zeros(0, dtype=np.float32)
        with _one_blas_thread():
            scores = np.asarray(self.matrix @ vector, dtype=np.float32)
            if len(self.extra):
                more = np.asarray(self.extra @ vector, dtype=np.float32)
                scores = np.concatenate([scores, more])
        return scores

    def levels(self, probes: np.ndarray, key: str, beta: float = 0.0) -> np.ndarray:
        """Every row's level over ``probes`` (unit rows; ``key`` names them): its
        :func:`probe_level` with ``beta`` (0: its mean cosine with them), kept until rows are
        added, so a long-running process pays it once. The mean is one matrix-vector product,
        as a search's own (the mean of the cosines is the cosine with the mean); any other
        level one product with all the probes, a block of rows at a time."""
        kept = self._levels
        count = len(self.ids)
        key += f"\n{beta!r}"
        if kept is None or kept[0] != key or len(kept[1]) != count:
            if beta == 0.0:
                mean = probes.mean(axis=0)
                found = np.asarray(self.scores(mean.astype(np.float32)), dtype=np.float64)
            else:
                found = np.zeros(count)
                start = 0
                with _one_blas_thread():
                    for part in (self.matrix, self.extra):
                        for block in range(0, len(part), LEVEL_BLOCK):
                            rows = np.asarray(part[block : block + LEVEL_BLOCK])
                            cosines = rows @ probes.T.astype(np.float32)
                            found[start : start + len(rows)] = probe_level(cosines, beta)
                            start += len(rows)
            kept = self._levels = (key, found)
        return kept[1]

    def rows_of_docs(
        self, ids_by_docnum: Sequence[str], docs: Iterable[int], ordered: bool = True
    ) -> np.ndarray:
        """The rows of the index documents ``docs`` (numbers into ``ids_by_docnum``, the
        index's ids by document number, kept while the index is unchanged), sorted, each once:
        each document's row is looked up once per index and vector set, not per search (10k
        candidates: ~10 ms of dictionary lookups). ``ordered=False``: in the documents' order
        (each live document has its own row), for a caller that needs no order (the sort
        costs 4 ms at 100k)."""
        rows = self.doc_rows(ids_by_docnum)[np.fromiter(docs, dtype=np.int64)]
        rows = rows[rows >= 0]
        return _unique_sorted(rows) if ordered else rows

    def rows_of(self, keys: Iterable[str]) -> np.ndarray:
        """The rows of these keys (those that have one), sorted, each once."""
        return _rows_of(self, keys)

    def doc_rows(self, ids_by_docnum: Sequence[str]) -> np.ndarray:
        """Each index document's row (-1 for none), by document number: built once per index
        and vector set."""
        kept = self._doc_rows
        if kept is None or kept[0] is not ids_by_docnum:
            row = self.row
            table = np.fromiter(
                (row.get(i, -1) for i in ids_by_docnum), dtype=np.int64, count=len(ids_by_docnum)
            )
            kept = self._doc_rows = (ids_by_docnum, table)
        return kept[1]

    def take(self, rows: np.ndarray) -> np.ndarray:
        """These rows' vectors, from the base file or the journal's."""
        base = len(self.matrix)
        out = np.empty((len(rows), self.matrix.shape[1]), dtype=np.float32)
        low = rows < base
        if low.any():
            out[low] = self.matrix[rows[low]]
        if not low.all():
            out[~low] = self.extra[rows[~low] - base]
        return out

    def vector(self, key: str) -> np.ndarray:
        row: np.ndarray = self.take(np.asarray([self.row[key]], dtype=np.int64))[0]
        return row

    def order_keys(self) -> np.ndarray:
        """Each row's place in id order, for ties (a row no longer live: any): base rows are in
        id order; a journal row takes the place of its id among them (by bisection)."""
        if self._keys is None:
            base = len(self.matrix)
            keys = np.arange(len(self.ids), dtype=np.float64)
            gaps: dict[int, builtins.list[str]] = {}
            base_ids = self.ids[:base]
            for number in range(base, len(self.ids)):
                key = self.ids[number]
                if self.row.get(key) != number:
                    continue
                place = bisect.bisect_left(base_ids, key)
                if place < base and base_ids[place] == key:
                    keys[number] = place
                else:
                    gaps.setdefault(place, []).append(key)
            for place, members in gaps.items():
                members.sort()
                for j, key in enumerate(members):
                    keys[self.row[key]] = place - 1 + (j + 1) / (len(members) + 1)
            self._keys = keys
        return self._keys

    def _rows(self) -> tuple[builtins.list[str], builtins.list[str]]:
        if self._base_rows is None:
            if self._read_rows is None:
                raise ValueError("the rows' digests are not known")
            digests, texts = self._read_rows()
            if not len(digests) == len(texts) == len(self.matrix):
                raise ValueError("the rows' digests do not match the vectors")
            self._base_rows = (digests, texts)
        return self._base_rows

    def digest(self, row: int) -> str:
        """The digest of the text whose vector is row ``row``: raises ValueError (or OSError)
        if the base rows' digests are damaged."""
        base = len(self.matrix)
        return self._rows()[0][row] if row < base else self._more[0][row - base]

    def text(self, row: int) -> str:
        """The hash of the text whose vector is row ``row``."""
        base = len(self.matrix)
        return self._rows()[1][row] if row < base else self._more[1][row - base]

    @property
    def digests(self) -> builtins.list[str]:
        return self._rows()[0] + self._more[0]

    @property
    def texts(self) -> builtins.list[str]:
        return self._rows()[1] + self._more[1]

    def by_hash(self) -> dict[str, int]:
        """Text hash -> a row holding that text's vector (live or not: the vector is right)."""
        if self._by_hash is None:
            self._by_hash = {t: n for n, t in enumerate(self.texts)}
        return self._by_hash

    def apply(self, entry: dict[str, Any], rows: np.ndarray) -> None:
        """Take in one journal entry: drop its ``drop`` ids, add its rows, move generation."""
        self._doc_rows = None
        for key in entry["drop"]:
            self.row.pop(key, None)
        start = len(self.ids)
        self.ids.extend(entry["ids"])
        self._more[0].extend(entry["digests"])
        self._more[1].extend(entry["texts"])
        for number, key in enumerate(entry["ids"], start):
            self.row[key] = number
        if self._by_hash is not None:
            for number, text in enumerate(entry["texts"], start):
                self._by_hash.setdefault(text, number)
        if len(rows):
            self.extra = np.concatenate([self.extra, rows])
        self.generation = entry["generation"]
        self.entries += 1
        self._keys = None


# The generation of a set whose embedding is under way: no index has it, so the next look
# catches up from there.
PARTIAL = "embedding"


class _Quiet:
    def update(self, count: int) -> None:
        pass

    def finish(self) -> None:
        pass


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
        # Given (total, what), where a long embedding reports how far it is (a progress bar on
        # a terminal); set by a front end that shows progress (the workspace hands it on).
        self.progress: Callable[[int, str], Progress] | None = None
        self.name = name

    def current(self) -> VectorSet:
        """The vectors in step with the index (call after the index's refresh)."""
        generation = self.index.generation()
        loaded = self._loaded or self._load()
        self.embedded = 0
        if loaded is not None and loaded.generation == generation:
            self._loaded = loaded
            return loaded
        with self._locker():
            # Another process may have brought them in step meanwhile: its journal entries.
            loaded = self._reload()
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
        """A search's text as a unit vector: by the embedder's ``embed_query`` when it has one
        (a model trained with a query prefix, as E5 is), else as any text."""
        embed = getattr(self.embedder, "embed_query", None) or self.embedder.embed
        row: np.ndarray = unit_rows(embed([text]), self.embedder.dim)[0]
        return row

    def noise(self, query: np.ndarray, probes: Sequence[str], beta: float = math.inf) -> float:
        """The query's noise level: its :func:`probe_level` over the ``probes`` (texts in no
        record, ``ranking.query_probes``, embedded as records are; ``beta``: inf, its best
        cosine with them), which sets the floor of a search sharing no word with the texts
        searched (``ranking.floor``, ``ranking.record_floors``)."""
        cosines = (self._probes(probes) @ query).astype(np.float64)
        return round(float(probe_level(cosines[None, :], beta)[0]), 6)

    def levels(
        self, vectors: VectorSet, rows: np.ndarray, probes: Sequence[str], beta: float = 0.0
    ) -> np.ndarray:
        """Each of these rows' :func:`probe_level` over the ``probes`` embedded as searches
        are (``beta`` 0: the mean cosine): how close the text sits to searches it has nothing
        to do with (``ranking.record_floors``)."""
        made = self._probes(probes, query=True)
        key = self.fingerprint + "\n".join(probes)
        found: np.ndarray = vectors.levels(made, key, beta)[rows]
        return found

    def word_vectors(self, words: Iterable[str]) -> dict[str, np.ndarray]:
        """Each of these words' unit vector, the word embedded alone as a search is (e5: ``query:
        brief``), for word pairs (``ranking.closest_words``): those not met before in this
        process or store are embedded, in one batch, and appended to ``words-<digest>.bin``
        beside the vector sets (a store that cannot be written keeps them in memory)."""
        import hashlib

        key = hashlib.sha1(f"words\n{self.fingerprint}".encode()).hexdigest()[:16]
        path = os.path.join(os.path.dirname(self.dir), f"words-{key}.bin")
        dim = self.embedder.dim
        known = _WORD_VECTORS.get(path)
        if known is None:
            known = _WORD_VECTORS[path] = _read_words(path, dim)
        wanted = list(dict.fromkeys(words))
        missing = [word for word in wanted if word not in known]
        if missing:
            embed = getattr(self.embedder, "embed_query", None) or self.embedder.embed
            made = dict(zip(missing, unit_rows(embed(missing), dim)))
            again = len(known) + len(missing) > WORDS_KEPT
            if again:
                known.clear()
            known.update(made)
            _keep_words(path, made, again)
        return {word: known[word] for word in wanted}

    def _probes(self, probes: Sequence[str], query: bool = False) -> np.ndarray:
        import hashlib

        parts = (self.fingerprint, *(("query",) if query else ()), *probes)
        key = hashlib.sha1("\n".join(parts).encode("utf-8")).hexdigest()
        made = _PROBE_VECTORS.get(key)
        if made is not None:
            return made
        path = os.path.join(os.path.dirname(self.dir), f"probes-{key[:16]}.npy")
        shape = (len(probes), self.embedder.dim)
        try:
            found = np.load(path)
            made = found if found.shape == shape and found.dtype == np.float32 else None
        except (OSError, ValueError):  # none yet, or torn: made again
            made = None
        if made is None:
            embed = self.embedder.embed
            if query:
                embed = getattr(self.embedder, "embed_query", None) or embed
            made = unit_rows(embed(list(probes)), self.embedder.dim)
            try:
                os.makedirs(os.path.dirname(path), exist_ok=True)
                with open(path + ".tmp", "wb") as handle:
                    np.save(handle, made)
                os.replace(path + ".tmp", path)
            except OSError:  # a read-only store: kept in memory only
                pass
        _PROBE_VECTORS[key] = made
        return made

    # -- keeping in step

    def _catch_up(self, old: VectorSet | None, generation: str) -> VectorSet:
        """The vectors as of ``generation``: only the texts whose digest changed are looked at
        (and embedded, if their text is new); a few changes are appended to the journal, many
        (or no usable set) write the whole set again."""
        old, digests, keys, hashes, to_embed, fresh_rows = self._changes(old)
        old_row = old.row if old is not None else {}
        dropped = [key for key in old_row if key not in digests]
        dim = self.embedder.dim
        if len(to_embed) > RESUMABLE_BATCH:
            new_hashes = sorted(fresh_rows, key=fresh_rows.__getitem__)  # to_embed's order
            resumed = self._embed_in_batches(old, keys, hashes, digests, to_embed, new_hashes)
            if resumed is not None:
                # Every new text is in the journal now: this catch-up embeds nothing, and
                # writes the whole set (the journal is past its compaction bound).
                made = self._catch_up(resumed, generation)
                self.embedded = len(to_embed)
                return made
        embedded = np.zeros((0, dim), dtype=np.float32)
        if to_embed:
            parts = [
                unit_rows(self.embedder.embed(to_embed[start : start + EMBED_BATCH]), dim)
                for start in range(0, len(to_embed), EMBED_BATCH)
            ]
            embedded = np.concatenate(parts)
        self.embedded = len(to_embed)
        # Each changed key's vector: a row of the old set (reused), or a fresh embedding (new).
        by_hash = {} if old is None else old.by_hash()
        reused = np.fromiter((by_hash.get(h, -1) for h in hashes), dtype=np.int64, count=len(keys))
        new = np.fromiter((fresh_rows.get(h, -1) for h in hashes), dtype=np.int64, count=len(keys))
        if old is not None and old.identity is not None:
            # Journal rows, rows no longer used and entries (each parsed by every new process)
            unused = len(old.ids) - len(old.row)
            waste = len(old.extra) + unused + old.entries + len(keys) + len(dropped) + 1
            if waste <= COMPACT_FROM + len(digests) // COMPACT_SHARE:
                rows = _gather(old, reused, embedded, new)
                entry = {
                    "base": old.base,
                    "generation": generation,
                    "drop": dropped,
                    "ids": keys,
                    "digests": [digests[key] for key in keys],
                    "texts": hashes,
                }
                self._append(old, entry, rows)
                old.apply(entry, rows)
                return old
        # The whole set, in id order, gathered straight from the old set and the embeddings.
        ids = sorted(digests)
        at = {key: number for number, key in enumerate(keys)}
        texts = dict(zip(keys, hashes))
        if old is not None:
            for key in ids:
                if key not in texts:
                    texts[key] = old.text(old_row[key])
        from_old = np.fromiter(
            (reused[at[key]] if key in at else old_row[key] for key in ids),
            dtype=np.int64,
            count=len(ids),
        )
        from_new = np.fromiter(
            (new[at[key]] if key in at else -1 for key in ids), dtype=np.int64, count=len(ids)
        )
        matrix = _gather(old, from_old, embedded, from_new)
        made = VectorSet(
            self.fingerprint,
            generation,
            ids,
            [digests[i] for i in ids],
            [texts[i] for i in ids],
            matrix,
            base=os.urandom(8).hex(),
        )
        self._save(made)
        return made

    def _changes(
        self, old: VectorSet | None
    ) -> tuple[
        VectorSet | None,
        dict[str, str],
        builtins.list[str],
        builtins.list[str],
        builtins.list[str],
        dict[str, int],
    ]:
        """What a catch-up from ``old`` must do: ``old`` (None if its rows are damaged), every
        key's digest, the changed keys and their text hashes, the distinct new texts to embed,
        and each new text's hash -> its place among them."""
        digests = self.index.digests()
        if old is not None:
            try:
                if len(old.matrix):
                    old.digest(0)  # the base rows' digests, read now
            except (OSError, ValueError):
                old = None  # damaged: embedded again, never trusted
        old_row = old.row if old is not None else {}
        changed = [
            key
            for key, digest in digests.items()
            if old is None or (row := old_row.get(key)) is None or old.digest(row) != digest
        ]
        contents = self.index.texts(changed)
        # Here, not at the top: a search of a set in step never needs it, and chunks.py (with
        # Whoosh's query modules) is a tenth of a CLI search's time to import.
        from .chunks import text_hash

        # Rows whose text is new: by the hash of the text, which a status edit leaves alone.
        by_hash = {} if old is None else old.by_hash()
        fresh_rows: dict[str, int] = {}
        to_embed: list[str] = []
        keys: list[str] = []
        hashes: list[str] = []
        for key in changed:
            content = contents.get(key)
            if content is None:  # gone since the digests were read: the next call sees it
                digests.pop(key)
                continue
            hashed = text_hash(content)
            keys.append(key)
            hashes.append(hashed)
            if hashed not in by_hash and hashed not in fresh_rows:
                fresh_rows[hashed] = len(to_embed)  # one embedding per distinct new text
                to_embed.append(content)
        return old, digests, keys, hashes, to_embed, fresh_rows

    def pending(self) -> int:
        """How many new texts the next catch-up would embed (0: in step), read without the
        writer lock."""
        loaded = self._loaded or self._load()
        if loaded is not None and loaded.generation == self.index.generation():
            return 0
        return len(self._changes(loaded)[4])

    def embed_ahead(self) -> int:
        """Embed what the next catch-up would, holding the writer lock only to append each
        batch (so writes go on meanwhile: e5 takes minutes at 10k), then catch up: what a long
        running process (``lantern mcp``) does in the background. Returns the texts embedded."""
        with self._locker():
            old = self._reload()
            if old is not None and old.generation == self.index.generation():
                self._loaded = old
                return 0
            old, digests, keys, hashes, to_embed, fresh_rows = self._changes(old)
            if len(to_embed) > RESUMABLE_BATCH and (old is None or old.identity is None):
                old = self._empty_base()
            self._loaded = old
        done = 0
        if len(to_embed) > RESUMABLE_BATCH and old is not None and old.identity is not None:
            new_hashes = sorted(fresh_rows, key=fresh_rows.__getitem__)
            self._embed_in_batches(old, keys, hashes, digests, to_embed, new_hashes, ahead=True)
            done = len(to_embed)
        self.current()
        return done + self.embedded

    def _empty_base(self) -> VectorSet:
        """An empty set written to disk (identity None: it could not be), for batches to be
        appended to."""
        made = VectorSet(
            self.fingerprint,
            PARTIAL,
            [],
            [],
            [],
            np.zeros((0, self.embedder.dim), dtype=np.float32),
            base=os.urandom(8).hex(),
        )
        self._save(made)
        return made

    def _embed_in_batches(
        self,
        old: VectorSet | None,
        keys: builtins.list[str],
        hashes: builtins.list[str],
        digests: dict[str, str],
        to_embed: builtins.list[str],
        new_hashes: builtins.list[str],
        ahead: bool = False,
    ) -> VectorSet | None:
        """Embed ``to_embed`` (the new texts, whose hashes are ``new_hashes``) in batches of
        ``RESUMABLE_BATCH``, each appended to the journal of ``old`` (or of an empty set
        written first) as soon as it is made, under a generation that no index has: a kill
        keeps every batch appended, and the next catch-up finds those keys in step and embeds
        only the rest. Reports progress per batch. None: no set can be written (a read-only
        store), so the caller embeds in memory at once."""
        dim = self.embedder.dim
        if old is None or old.identity is None:
            old = self._empty_base()
            if old.identity is None:
                return None
        holders: dict[str, builtins.list[str]] = {}
        for key, hashed in zip(keys, hashes):
            holders.setdefault(hashed, []).append(key)
        bar = self._progress(len(to_embed), f"embedding {self.name}")
        size, start = RESUMABLE_BATCH, 0
        try:
            while start < len(to_embed):
                batch = to_embed[start : start + size]
                began = time.monotonic()
                made = unit_rows(self.embedder.embed(batch), dim)
                # A fast embedder (wordllama: 256 texts in ~20 ms) takes larger batches, so
                # that the journal's writes do not cost more than the embedding; a kill still
                # loses a fraction of a second's work at most.
                if time.monotonic() - began < QUICK_BATCH and size < LARGEST_BATCH:
                    size *= 2
                ids: builtins.list[str] = []
                texts: builtins.list[str] = []
                take: builtins.list[int] = []
                for number, hashed in enumerate(new_hashes[start : start + len(batch)]):
                    for key in holders[hashed]:
                        ids.append(key)
                        texts.append(hashed)
                        take.append(number)
                rows = made[np.asarray(take, dtype=np.int64)]
                entry = {
                    "base": old.base,
                    "generation": PARTIAL,
                    "drop": [],
                    "ids": ids,
                    "digests": [digests[key] for key in ids],
                    "texts": texts,
                }
                if ahead:
                    # Embedded without the lock: appended under it, to the set on disk now
                    with self._locker():
                        current = self._reload()
                        if current is None or current.base != old.base:
                            return None  # rewritten meanwhile: the caller's catch-up goes on
                        old = self._loaded = current
                        self._append(old, entry, rows)
                        old.apply(entry, rows)
                else:
                    # Not on disk (identity None): kept in memory, written whole at the end.
                    if old.identity is not None:
                        self._append(old, entry, rows)
                    old.apply(entry, rows)
                bar.update(len(batch))
                start += len(batch)
        finally:
            bar.finish()
        return old

    def _progress(self, total: int, what: str) -> Progress:
        if self.progress is None:
            return _Quiet()
        return self.progress(total, what)

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
            rows = json.dumps({"digests": made.digests, "texts": made.texts}).encode("utf-8")
            with open(os.path.join(fresh, ROWS), "wb") as handle:
                handle.write(rows)
                handle.flush()
                os.fsync(handle.fileno())
            meta = {
                "format": FORMAT,
                "embedder": made.fingerprint,
                "generation": made.generation,
                "base": made.base,
                "count": len(made.ids),
                "dim": int(made.matrix.shape[1]),
                "crc32": _crc(made.matrix),
                "rows_crc32": zlib.crc32(rows),
                "ids": made.ids,
            }
            with open(os.path.join(fresh, "meta.json"), "w", encoding="utf-8") as handle:
                json.dump(meta, handle)
                handle.flush()
                os.fsync(handle.fileno())
                made.identity = _identity(os.fstat(handle.fileno()))
            whoosh_compat.swap_in(fresh, self.dir)
        except OSError:
            made.identity = None
            shutil.rmtree(fresh, ignore_errors=True)

    def _append(self, old: VectorSet, entry: dict[str, Any], rows: np.ndarray) -> None:
        """Append one entry to the journal of the set ``old`` was loaded from (under the lock),
        first cutting off whatever follows the entries ``old`` took in: a torn tail that a
        killed writer left. A read-only store keeps the entry in memory."""
        body = json.dumps(entry).encode("utf-8")
        data = body + np.ascontiguousarray(rows, dtype="<f4").tobytes()
        head = HEAD.pack(MAGIC, len(body), len(rows), zlib.crc32(data))
        try:
            handle = os.open(os.path.join(self.dir, JOURNAL), os.O_RDWR | os.O_CREAT, 0o644)
        except OSError:
            old.identity = None  # not on disk: the next check loads what is
            return
        try:
            if os.fstat(handle).st_size < old.journal_end:
                # Not the journal ``old`` read (removed by hand): its entries stay in memory,
                # and the next check loads what is on disk.
                old.identity = None
                return
            os.ftruncate(handle, old.journal_end)
            os.lseek(handle, old.journal_end, os.SEEK_SET)
            view = memoryview(head + data)
            while view:
                view = view[os.write(handle, view) :]
            os.fsync(handle)
            old.journal_end += len(head) + len(data)
        except OSError:
            old.identity = None
        finally:
            os.close(handle)

    def _reload(self) -> VectorSet | None:
        """The set on disk: the one in memory plus the journal entries written since, while
        the base file is the same one; else loaded whole."""
        loaded = self._loaded
        if loaded is not None and loaded.identity is not None:
            try:
                same = _identity(os.stat(os.path.join(self.dir, "meta.json"))) == loaded.identity
            except OSError:
                same = False
            if same:
                _replay(loaded, self.dir, self.embedder.dim)
                return loaded
        return self._load()

    def _load(self) -> VectorSet | None:
        """The vector set on disk if it is whole and this embedder's; None otherwise."""
        try:
            with open(os.path.join(self.dir, "meta.json"), encoding="utf-8") as handle:
                identity = _identity(os.fstat(handle.fileno()))
                meta = json.load(handle)
            count, dim = meta["count"], meta["dim"]
            ok = (
                meta["format"] == FORMAT
                and meta["embedder"] == self.fingerprint
                and dim == self.embedder.dim
                and isinstance(meta["base"], str)
                and isinstance(meta["rows_crc32"], int)
                and len(meta["ids"]) == count
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
            made = VectorSet(
                meta["embedder"],
                meta["generation"],
                meta["ids"],
                None,
                None,
                matrix,
                base=meta["base"],
                rows=functools.partial(_read_rows, self.dir, meta["rows_crc32"]),
            )
            made.identity = identity
            _replay(made, self.dir, dim)
            return made
        except (OSError, ValueError, KeyError, TypeError):
            return None


def _word_layout(dim: int) -> np.dtype:
    """One entry of a words file (:data:`WORD_BYTES`)."""
    return np.dtype([("word", f"S{WORD_BYTES}"), ("vector", "<f4", (dim,))])


def _word_entries(made: dict[str, np.ndarray]) -> bytes:
    """These words and vectors as entries of a words file."""
    dim = len(next(iter(made.values())))
    entries = np.zeros(len(made), dtype=_word_layout(dim))
    entries["word"] = [word.encode("utf-8") for word in made]
    entries["vector"] = np.asarray(list(made.values()), dtype=np.float32)
    return entries.tobytes()


def _read_words(path: str, dim: int) -> dict[str, np.ndarray]:
    """The words kept by :meth:`Vectors.word_vectors`. A part of an entry at the end (a kill
    mid-append) is dropped and the file written again without it, so that what is appended
    next can be read."""
    try:
        with open(path, "rb") as handle:
            data = handle.read()
    except OSError:  # none yet
        return {}
    layout = _word_layout(dim)
    whole = len(data) - len(data) % layout.itemsize
    entries = np.frombuffer(data[:whole], dtype=layout)
    try:
        words = [word.decode("utf-8") for word in entries["word"].tolist()]
    except UnicodeDecodeError:  # not a words file: started again, its words embedded again
        words, entries = [], entries[:0]
    found = dict(zip(words, np.array(entries["vector"], dtype=np.float32)))
    # a part of an entry, what is not a words file, or a word twice (appended by two processes)
    if whole != len(data) or len(found) != len(data) // layout.itemsize:
        _keep_words(path, found, again=True)
    return found


def _keep_words(path: str, made: dict[str, np.ndarray], again: bool) -> None:
    """Append these words to ``path`` in one write, or with ``again`` write the file anew with
    them alone (whole or not at all); a store that cannot be written keeps them in memory."""
    entries = _word_entries(made) if made else b""
    try:
        if again:
            part = f"{path}.{os.getpid()}.tmp"  # another process may write its own meanwhile
            with open(part, "wb") as handle:
                handle.write(entries)
            os.replace(part, path)
        else:
            with open(path, "ab") as handle:
                handle.write(entries)
    except OSError:
        pass


def _read_rows(folder: str, crc: int) -> tuple[builtins.list[str], builtins.list[str]]:
    """The base rows' digests and text hashes, from ``rows.json`` if its CRC-32 is ``crc``."""
    with open(os.path.join(folder, ROWS), "rb") as handle:
        data = handle.read()
    if zlib.crc32(data) != crc:
        raise ValueError("rows.json does not match meta.json")
    rows = json.loads(data)
    digests, texts = rows["digests"], rows["texts"]
    if not (isinstance(digests, list) and isinstance(texts, list)):
        raise ValueError("rows.json is damaged")
    return digests, texts


def _gather(
    old: VectorSet | None, from_old: np.ndarray, embedded: np.ndarray, from_new: np.ndarray
) -> np.ndarray:
    """Row i: row ``from_old[i]`` of ``old`` if not -1, else ``embedded[from_new[i]]``."""
    out = np.empty((len(from_old), embedded.shape[1]), dtype=np.float32)
    mask = from_old >= 0
    if old is not None and mask.any():
        out[mask] = old.take(from_old[mask])
    if not mask.all():
        out[~mask] = embedded[from_new[~mask]]
    return out


def _identity(st: os.stat_result) -> tuple[int, ...]:
    """A file's identity: a base file is never rewritten in place, only replaced."""
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)


def _replay(made: VectorSet, folder: str, dim: int) -> None:
    """Take in the journal entries past ``made.journal_end``: each whole (its CRC-32 holds), of
    this base and well formed, up to the first that is not (a torn tail: the entries before it
    are a consistent set, and the next append cuts it off)."""
    try:
        with open(os.path.join(folder, JOURNAL), "rb") as handle:
            handle.seek(made.journal_end)
            data = handle.read()
    except OSError:
        return
    at = 0
    while at + HEAD.size <= len(data):
        magic, size, count, crc = HEAD.unpack_from(data, at)
        end = at + HEAD.size + size + count * dim * 4
        if magic != MAGIC or end > len(data):
            return
        body = data[at + HEAD.size : end]
        if zlib.crc32(body) != crc:
            return
        try:
            entry = json.loads(body[:size])
            ok = (
                entry["base"] == made.base
                and isinstance(entry["generation"], str)
                and isinstance(entry["drop"], list)
                and len(entry["ids"]) == len(entry["digests"]) == len(entry["texts"]) == count
            )
        except (ValueError, KeyError, TypeError):
            ok = False
        if not ok:
            return
        rows = np.frombuffer(body, dtype="<f4", offset=size).reshape(count, dim)
        made.apply(entry, rows.astype(np.float32))
        at = end
        made.journal_end += HEAD.size + size + count * dim * 4


def rank(
    vectors: VectorSet,
    query: np.ndarray,
    candidates: Iterable[str] | np.ndarray,
    end: int | None = None,
    floor: float = 0.0,
) -> builtins.list[tuple[str, float]]:
    """The ``candidates`` by cosine with ``query`` (rounded to 6 places), best first, ties by
    id; those under ``floor`` (a floor of 0: those of 0 or less, nothing in common) are left
    out; the first ``end`` only, if given. In numpy: base rows are in id order, so a stable
    sort keeps ties by id (100k candidates: ~40 ms, against ~250 ms in Python); with journal
    rows, each row's place in id order is the tie's second key."""
    scores = vectors.scores(query)
    rows = _rows_of(vectors, candidates)  # sorted: id order, for the base rows
    chosen = np.round(scores[rows].astype(np.float64), 6)
    keep = chosen >= floor if floor > 0 else chosen > 0
    rows, chosen = rows[keep], chosen[keep]
    if end is not None and 0 < end < len(rows):
        # A page: only the rows at or above its last cosine (a partition) are sorted.
        nth = -np.partition(-chosen, end - 1)[end - 1]
        top = chosen >= nth
        rows, chosen = rows[top], chosen[top]
    if len(vectors.extra):
        order = np.lexsort((vectors.order_keys()[rows], -chosen))[:end]
    else:
        order = np.argsort(-chosen, kind="stable")[:end]
    ids = vectors.ids
    return [(ids[int(r)], float(c)) for r, c in zip(rows[order], chosen[order])]


@functools.lru_cache(maxsize=1)
def _blas() -> Any:
    from threadpoolctl import ThreadpoolController

    return ThreadpoolController().select(user_api="blas")


def probe_level(cosines: np.ndarray, beta: float) -> np.ndarray:
    """Each row's level over its cosines with the probes (one row per text, one column per
    probe): with ``beta`` 0 their mean, with ``math.inf`` their best, in between the soft best
    ``(1 / beta) log mean exp(beta * cosine)``, which leans toward the nearest probes the more
    the larger ``beta`` is (the normaliser of the inverted softmax, Smith et al. 2017)."""
    x = np.asarray(cosines, dtype=np.float64)
    if beta == 0.0:
        level: np.ndarray = x.mean(axis=1)
        return level
    top: np.ndarray = x.max(axis=1)
    if math.isinf(beta):
        return top
    # shifted by the best so that exp never overflows
    soft: np.ndarray = top + np.log(np.exp(beta * (x - top[:, None])).mean(axis=1)) / beta
    return soft


def _one_blas_thread() -> AbstractContextManager[None]:
    """The BLAS library (OpenBLAS in numpy's wheels) held to one thread for a query's product:
    a matrix-vector product of 10k x 256 takes ~0.1 ms on one thread, but on a machine whose
    cores are busy a second thread waits for one to be free, and the product took 5-8 ms
    (median; p90 16 ms) instead of 0.2-1 ms (``benchmarks/search_speed.py``). Each score is
    one row's dot product on one thread either way, so the numbers are the same. The limit is
    the process's while it lasts (microseconds), as any BLAS thread setting is."""
    limited: AbstractContextManager[None] = _blas().limit(limits=1)
    return limited


def _rows_of(vectors: VectorSet, candidates: Iterable[str] | np.ndarray) -> np.ndarray:
    """The rows of the ``candidates`` (ids, or rows already) that have one, sorted, each once
    (a sort and a compare: ``np.unique`` hashes, 17 ms at 100k against 1 ms)."""
    if isinstance(candidates, np.ndarray):  # rows already (VectorSet.rows_of_docs)
        return candidates
    row = vectors.row
    rows = np.fromiter((row.get(i, -1) for i in candidates), dtype=np.int64)
    return _unique_sorted(rows[rows >= 0])


def _unique_sorted(rows: np.ndarray) -> np.ndarray:
    rows = np.sort(rows)
    if len(rows) > 1:
        rows = rows[np.concatenate(([True], rows[1:] != rows[:-1]))]
    return rows


def pairs_above(
    vectors: VectorSet, candidates: Iterable[str], threshold: float
) -> builtins.list[tuple[str, str, float]]:
    """Every pair of ``candidates`` with a cosine of at least ``threshold`` as (a, b, score)
    with a < b, by score desc then ids: a blockwise product of the candidates' rows, so
    memory stays at one block of scores however many records there are."""
    ids = sorted(i for i in set(candidates) if i in vectors.row)
    if len(ids) < 2:
        return []
    rows = np.asarray([vectors.row[i] for i in ids], dtype=np.int64)
    sub = vectors.take(rows)
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
