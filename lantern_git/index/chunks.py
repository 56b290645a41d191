"""The chunk index: a Whoosh index over the line ranges of every source, derived state only.

Sources are searched by chunk (docs/evidence.md): each hit names a line range of a source's current
version by a reference that ``--source-ref`` takes unchanged. Everything here lives in
``<state_dir>/chunks/``, is never committed, and is rebuilt from ``sources/`` when missing or
damaged. It is kept apart from the record index because its unit (a chunk, many per file) and
its change pattern (transcripts that grow by appends) differ from a record's.

Keeping in step with the working tree: one ``scandir`` pass lstats every source file; a source
whose files show the signature they had when last indexed (and had it long enough before that
check that a later write must change it) is not read. Any other source is read through
:func:`lantern_git.model.source_file.read_source_file` (never through a link, never blocking on a
FIFO). A body whose sha256 is the indexed one is not re-indexed; a body that starts with the
indexed one (an append) has only its tail re-chunked, from the *resume line* kept for it: the
chunk rule's decisions look only at lines already read, so the chunks before that line are the
same in the longer body.

Searching: chunks are ranked by lantern's BM25 (``bm25.py``, shared with the records), whose
statistics are those of the chunks the filters (kinds, sources) select. Ties are broken by
source id then first line.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import os
import stat
import sys
from collections.abc import Callable, Iterable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from whoosh import query as Q
from whoosh.fields import ID, NUMERIC, STORED, Schema

from ..core.paging import Page
from ..errors import InvalidInput
from ..model.record import has_undecodable
from ..model.record_file import Problem
from ..model.source import (
    SOURCES_DIR,
    SourceRef,
    check_kind,
    check_source_id,
    chunk_ranges,
    parse_source_path,
)
from ..model.source_file import SourceFile, read_source_file
from . import bm25, clock
from .analysis import holds_phrase, phrase_query, phrase_words, text_query, word_forms
from .derived import DerivedIndex, Layout, NeedsRebuild, debug, settled, writing

# 2: words as written and their Porter2 stems (see analysis.py).
SCHEMA_VERSION = 2
INDEX_NAME = f"chunks_v{SCHEMA_VERSION}"
STATE = f"state_v{SCHEMA_VERSION}.marshal"
# A rebuild over this many body bytes runs Whoosh's writer in two processes (Linux only).
PARALLEL_FROM_BYTES = 16 * 1024 * 1024
# A write indexes the chunks it made right away only up to this many bytes of new text:
# Whoosh indexes about 1.3 MB of text a second here, and a 10 MB ingest must not wait 8 s for
# derived state. Past it, the next search (or status) indexes them: the files' signatures
# changed, so the next check reads them. An append indexes only its tail, so it stays under.
NOTE_BUDGET_BYTES = 256 * 1024


# One file as a check sees it: name, ctime and mtime (ns), size, inode, mode. A source's
# signature is the tuple of its files', by name; marshal keeps tuples of ints compactly.
FileState = tuple[str, int, int, int, int, int]
Signature = tuple[FileState, ...]


def _bytes_to_index(known: dict[str, _Indexed], files: dict[str, list[FileState]]) -> int:
    """About how many bytes of text indexing these sources' files reads: a body's size, less
    what an append leaves indexed."""
    total = 0
    for sid, listed in files.items():
        size = max((state[3] for state in listed if not state[0].endswith(".yaml")), default=0)
        old = known.get(sid)
        indexed = old.resume_byte if old is not None and size >= old.nbytes else 0
        total += max(0, size - indexed)
    return total


def _schema() -> Schema:
    return Schema(
        source=ID(stored=True),
        kind=ID,
        # Only ever compared in a range (deleting an appended source's tail): coarse steps.
        a=NUMERIC(int, bits=32, stored=True, shift_step=8),
        b=STORED,
        text=STORED,
        # The record index's analyzer: searches read the same way in both.
        content=word_forms(),
    )


class _Indexed(NamedTuple):
    """What the index holds for one source; marshalled as a plain tuple."""

    signature: Signature | None  # None: re-read at the next check
    nbytes: int
    sha256: str
    resume_line: int  # chunks from this line on are re-made after an append
    resume_byte: int
    blob: str
    kind: str
    uri: str | None
    title: str | None


@dataclass
class ChunkHit:
    """One chunk that matched a search."""

    ref: str
    source_id: str
    lines: tuple[int, int]
    score: float
    text: str
    kind: str
    uri: str | None
    title: str | None
    # keyword, semantic or hybrid: what ranked it (docs/semantic.md)
    mode: str | None = None
    # What made the score, when the search was asked to explain (docs/search.md, "Explain")
    explain: dict[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "ref": self.ref,
            "source_id": self.source_id,
            "lines": [self.lines[0], self.lines[1]],
            "score": self.score,
            "text": self.text,
            "kind": self.kind,
            "uri": self.uri,
            "title": self.title,
        }
        if self.mode is not None:
            data["mode"] = self.mode
        if self.explain is not None:
            data["explain"] = self.explain
        return data


@dataclass
class ChunkRefresh:
    """What a refresh or a rebuild did."""

    indexed: int = 0  # sources (re)chunked, wholly or from their resume line
    removed: int = 0  # sources whose chunks were dropped
    unchanged: bool = False  # no source file changed since the last check
    broken: dict[str, Problem] = field(default_factory=dict)
    rebuilt: bool = False
    chunks_written: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {
            "indexed": self.indexed,
            "removed": self.removed,
            "unchanged": self.unchanged,
            "rebuilt": self.rebuilt,
            "chunks_written": self.chunks_written,
            "broken": {sid: problem.to_dict() for sid, problem in sorted(self.broken.items())},
        }


class ChunkIndex(DerivedIndex[ChunkRefresh]):
    """The Whoosh index of one store's source chunks, kept in ``<state_dir>/chunks/``."""

    LAYOUT = Layout("chunks", INDEX_NAME, STATE, SCHEMA_VERSION, "chunk index", _schema)

    def __init__(
        self,
        root: str,
        state_dir: str,
        locked: Callable[[], AbstractContextManager[Any]],
    ):
        super().__init__(root, state_dir, locked)
        self._state: dict[str, Any] | None = None
        self._state_id: tuple[int, int, int] | None = None

    # -- storage

    def _well_formed(self, state: dict[str, Any]) -> dict[str, Any]:
        """The saved state, checked: one damaged into another valid shape must cause a rebuild."""
        sources, broken = state.get("sources"), state.get("broken")
        if not isinstance(sources, dict) or not isinstance(broken, dict):
            raise ValueError("damaged state")
        entries = {}
        for sid, entry in sources.items():
            if not isinstance(sid, str) or not isinstance(entry, tuple):
                raise ValueError("damaged state")
            if len(entry) != len(_Indexed._fields):
                raise ValueError("damaged state")
            entries[sid] = _Indexed(*entry)
        for sid, entry in broken.items():
            if not isinstance(sid, str) or not isinstance(entry, tuple) or len(entry) != 4:
                raise ValueError("damaged state")
        return {"sources": entries, "broken": broken}

    def _load_state(self) -> dict[str, Any] | None:
        """The state as saved, reloaded only when the file changed (another process wrote)."""
        try:
            st = os.stat(self._state_path())
        except OSError:
            self._forget()
            return None
        ident = (st.st_mtime_ns, st.st_ino, st.st_size)
        if self._state is not None and ident == self._state_id:
            return self._state
        self._forget()
        state = self._read_state()
        if state is not None:
            self._state, self._state_id = state, ident
        return state

    def _save_state(self, state: dict[str, Any], folder: str | None = None) -> None:
        sources = {sid: tuple(entry) for sid, entry in state["sources"].items()}
        self._write_state({"sources": sources, "broken": state["broken"]}, folder)
        st = os.stat(self._state_path(folder))
        self._state, self._state_id = state, (st.st_mtime_ns, st.st_ino, st.st_size)

    def _forget(self) -> None:
        """Drop everything read from the folder: it changed, or is about to."""
        self.close()
        self._state = None
        self._state_id = None

    # -- keeping in step with the files

    def refresh(self) -> ChunkRefresh:
        """Bring the index up to date with ``sources/`` in the working tree."""
        report = self._refresh()
        debug(
            f"chunks: {'rebuilt' if report.rebuilt else 'refreshed'}: {report.indexed} "
            f"sources indexed ({report.chunks_written} chunks), {report.removed} removed"
        )
        return report

    def _refresh(self) -> ChunkRefresh:
        state = self._load_state()
        if state is None or not self._usable():
            return self.rebuild()
        before = clock.now_ns(self.dir)
        files = _scan(self.root)
        if not _changed(state, files):
            return ChunkRefresh(unchanged=True, broken=_problems(state))
        with self._locked():
            state = self._load_state()  # another process may have indexed meanwhile
            if state is None:
                return self.rebuild()
            try:
                return self._update(state, files, before, set(files) | set(state["sources"]))
            except Exception:
                return self._start_over()

    def note_written(self, paths: Iterable[str]) -> None:
        """After a commit wrote or removed ``paths`` (holding the writer lock): index exactly
        the sources they belong to."""
        ids = {parsed[0] for parsed in map(parse_source_path, paths) if parsed is not None}
        if not ids:
            return
        with self._locked():
            state = self._load_state()
            if state is None or not self._usable():
                return  # no index yet, or a damaged one: the next read builds it whole
            before = clock.now_ns(self.dir)
            files = _scan(self.root, ids)
            if _bytes_to_index(state["sources"], files) > NOTE_BUDGET_BYTES:
                debug("chunks: a large write, left to the next read")
                return
            try:
                self._update(state, files, before, ids, force=True)
            except Exception:
                self._start_over()

    def _update(
        self,
        state: dict[str, Any],
        files: dict[str, list[FileState]],
        before: int,
        ids: Iterable[str],
        force: bool = False,
    ) -> ChunkRefresh:
        """Re-read the sources among ``ids`` whose files changed (all of them with ``force``)
        and write what differs in one Whoosh commit. Holds the writer lock."""
        report = ChunkRefresh()
        sources: dict[str, _Indexed] = dict(state["sources"])
        broken: dict[str, tuple[Any, ...]] = dict(state["broken"])
        with self._changing() as writer:
            for sid in sorted(ids):
                listed = files.get(sid)
                old = sources.get(sid)
                signature = _signature(listed, before) if listed else None
                if not listed:
                    broken.pop(sid, None)
                    if old is not None:
                        writer().delete_by_term("source", sid)
                        del sources[sid]
                        report.removed += 1
                    continue
                known = old.signature if old is not None else broken.get(sid, (None,))[0]
                if not force and signature is not None and signature == known:
                    continue
                found, problem = read_source_file(self.root, sid)
                if found is None:
                    if old is not None:
                        writer().delete_by_term("source", sid)
                        del sources[sid]
                        report.removed += 1
                    if problem is None:
                        broken.pop(sid, None)
                    else:
                        broken[sid] = (signature, problem.path, problem.line, problem.message)
                    continue
                broken.pop(sid, None)
                plan = _plan(found, old)
                if plan is None:
                    assert old is not None
                    sources[sid] = old._replace(signature=signature, uri=found.manifest.uri)
                    continue
                entry, written = _write_chunks(writer(), sid, found, plan, signature)
                sources[sid] = entry
                report.indexed += 1
                report.chunks_written += written
        new_state = {"sources": sources, "broken": broken}
        if new_state != {"sources": state["sources"], "broken": state["broken"]}:
            self._save_state(new_state)
        report.broken = _problems(new_state)
        return report

    def _build(self, started: int) -> ChunkRefresh:
        """Every source chunked into a new index, Whoosh's writer in two processes for a large
        one."""
        report = ChunkRefresh(rebuilt=True)
        files = _scan(self.root)
        with self._new_folder() as (fresh, ix):
            total = sum(state[3] for listed in files.values() for state in listed)
            parallel = total >= PARALLEL_FROM_BYTES and sys.platform.startswith("linux")
            options: dict[str, Any] = {"procs": 2, "multisegment": True} if parallel else {}
            sources: dict[str, _Indexed] = {}
            broken: dict[str, tuple[Any, ...]] = {}
            with writing(lambda: ix.writer(limitmb=128 if parallel else 256, **options)) as writer:
                for sid in sorted(files):
                    signature = _signature(files[sid], started)
                    found, problem = read_source_file(self.root, sid)
                    if found is None:
                        if problem is not None:
                            broken[sid] = (signature, problem.path, problem.line, problem.message)
                        continue
                    entry, written = _write_chunks(
                        writer(), sid, found, (1, 0), signature, replace=False
                    )
                    sources[sid] = entry
                    report.indexed += 1
                    report.chunks_written += written
            state = {"sources": sources, "broken": broken}
            self._save_state(state, fresh)
        report.broken = _problems(state)
        return report

    # -- answering

    def search(
        self,
        text: str,
        *,
        kinds: Sequence[str] = (),
        sources: Sequence[str] = (),
        limit: int | None = None,
        offset: int = 0,
        phrases: Sequence[str] = (),
    ) -> list[ChunkHit]:
        """Chunks matching ``text`` by BM25 relevance, best first; ties by source id, then line.
        ``phrases``: only chunks holding one of them as a phrase (an entity's names).

        Answers from the index as it is: call :meth:`refresh` first for the working tree's
        state. A missing or damaged index is rebuilt.
        """
        if not isinstance(text, str) or not text.strip():
            raise InvalidInput("query: must not be empty", code="invalid_query")
        _decodable(text)
        kinds = tuple(check_kind(kind) for kind in kinds)
        sources = tuple(check_source_id(sid, "source") for sid in sources)
        page = Page(limit, offset)  # the one paging rule: 0 is no limit
        limit, offset = page.limit, page.offset
        query = text_query(text)
        phrases = tuple(phrases)
        _filter(kinds, sources, phrases)  # a phrase that cannot be read is refused first

        def read() -> list[ChunkHit]:
            state = self._indexed()
            searcher = self._searcher()
            allowed = _allowed(searcher, kinds, sources, phrases)
            return _ranked(searcher, state, query, allowed, limit, offset)

        return self._answer(read)

    def raw_scored(
        self,
        text: str,
        kinds: Sequence[str] = (),
        sources: Sequence[str] = (),
        phrases: Sequence[str] = (),
        shares: bool = False,
    ) -> tuple[list[str], list[float], float | None, list[float] | None]:
        """Every chunk matching ``text`` among those the filters select, as :meth:`search`
        finds them, as (keys, BM25 scores before rounding) in no order: the keyword side of a
        semantic or hybrid search, ranked in bulk (``ranking.fuse_page``); third, the query's
        full match over those chunks (``bm25.full_match``; None: not plain words); fourth, with
        ``shares``, each match's share of the query words' idf over those chunks
        (``bm25.idf_shares``), else None."""
        query = _parsed(text)
        _filter(tuple(kinds), tuple(sources), tuple(phrases))

        def read() -> tuple[list[str], list[float], float | None, list[float] | None]:
            searcher = self._searcher()
            allowed = _allowed(searcher, kinds, sources, phrases)
            docs, scores, full = bm25.raw_scored(searcher, query, allowed, None)
            keys = [f"{f['source']}:{f['a']}" for f in map(searcher.stored_fields, docs)]
            held = None
            if shares:
                by_doc = bm25.idf_shares(searcher, text, allowed)
                held = [by_doc.get(doc, 0.0) for doc in docs]
            return keys, scores, full, held

        return self._answer(read)

    def _indexed(self) -> dict[str, Any]:
        """The state, for a read that pairs the chunks with their sources' entries."""
        state = self._load_state()
        if state is None:
            raise NeedsRebuild("no state")
        return state

    # -- for the chunk vectors (vectors.py): a chunk's key is "<source id>:<first line>"

    def digests(self) -> dict[str, str]:
        """Every chunk's key -> the hash of its text."""

        def read() -> dict[str, str]:
            return {
                f"{fields['source']}:{fields['a']}": text_hash(fields["text"])
                for fields in self._searcher().reader().all_stored_fields()
            }

        return self._answer(read)

    def texts(self, keys: list[str]) -> dict[str, str]:
        """The text of the chunks with these keys (those that still exist)."""
        wanted = set(keys)
        return {key: hit.text for key, hit in self._stored(wanted).items()}

    def chunk_keys(
        self, kinds: Sequence[str] = (), sources: Sequence[str] = (), phrases: Sequence[str] = ()
    ) -> list[str]:
        """The keys of the chunks these filters select: a semantic ranking's candidates."""

        def read() -> list[str]:
            searcher = self._searcher()
            allowed = _allowed(searcher, kinds, sources, phrases)
            docs = sorted(allowed) if allowed is not None else searcher.docs_for_query(Q.Every())
            keys = []
            for docnum in docs:
                fields = searcher.stored_fields(docnum)
                keys.append(f"{fields['source']}:{fields['a']}")
            return keys

        return self._answer(read)

    def words_held(self, text: str, keys: Sequence[str]) -> tuple[int, dict[str, int]]:
        """(how many words the query ``text`` has as typed; how many of them each chunk of
        ``keys`` holds, in its text or its source's title, for those holding any):
        ``bm25.words_held``."""
        wanted = set(keys)

        def read() -> tuple[int, dict[str, int]]:
            searcher = self._searcher()
            words, held = bm25.words_held(searcher, text)  # live chunks only: one per key
            found = {}
            for docnum, count in held.items():
                fields = searcher.stored_fields(docnum)
                key = f"{fields['source']}:{fields['a']}"
                if key in wanted:
                    found[key] = count
            return words, found

        return self._answer(read) if wanted else (0, {})

    # -- for the entity index (entities.py): which chunks hold an entity's names

    def source_blobs(self) -> dict[str, str]:
        """Each indexed source's id -> the blob of the version its chunks are of: what the
        entity index compares to learn which sources' chunks changed. Answers from the index
        as it is (call :meth:`refresh` first)."""

        def read() -> dict[str, str]:
            return {sid: entry.blob for sid, entry in self._indexed()["sources"].items()}

        return self._answer(read)

    def chunk_texts(self, sources: set[str] | None) -> list[tuple[str, int, int, str, str]]:
        """(source id, first line, last line, text, reference) of every chunk of ``sources``
        (None: of every source), in source and line order."""

        def read() -> list[tuple[str, int, int, str, str]]:
            known: dict[str, _Indexed] = self._indexed()["sources"]
            searcher = self._searcher()
            if sources is None:
                docs: Iterable[Any] = searcher.reader().iter_docs()
            else:
                numbers = (
                    n
                    for sid in sorted(sources)
                    for n in searcher.docs_for_query(Q.Term("source", sid))
                )
                docs = ((n, searcher.stored_fields(n)) for n in numbers)
            found = []
            for _, fields in docs:
                entry = known.get(fields["source"])
                if entry is None:
                    continue
                sid, a, b = fields["source"], fields["a"], fields["b"]
                ref = str(SourceRef(sid, entry.blob, a, b))
                found.append((sid, a, b, fields["text"], ref))
            found.sort(key=lambda chunk: (chunk[0], chunk[1]))
            return found

        return self._answer(read)

    def hits(self, scored: list[tuple[str, float]]) -> list[ChunkHit]:
        """The chunks of these (key, score) pairs as hits with those scores, in that order."""
        found = self._stored({key for key, _ in scored})
        return [
            dataclasses.replace(found[key], score=score) for key, score in scored if key in found
        ]

    @staticmethod
    def key(hit: ChunkHit) -> str:
        return f"{hit.source_id}:{hit.lines[0]}"

    def _stored(self, keys: set[str]) -> dict[str, ChunkHit]:
        def read() -> dict[str, ChunkHit]:
            known: dict[str, _Indexed] = self._indexed()["sources"]
            found = {}
            for _, fields in self._searcher().reader().iter_docs():
                key = f"{fields['source']}:{fields['a']}"
                entry = known.get(fields["source"])
                if key not in keys or entry is None:
                    continue
                a, b = fields["a"], fields["b"]
                found[key] = ChunkHit(
                    ref=str(SourceRef(fields["source"], entry.blob, a, b)),
                    source_id=fields["source"],
                    lines=(a, b),
                    score=0.0,
                    text=fields["text"],
                    kind=entry.kind,
                    uri=entry.uri,
                    title=entry.title,
                )
            return found

        return self._answer(read) if keys else {}

    def counts(self) -> tuple[int, int]:
        """(sources indexed, chunks indexed)."""
        return self._answer(lambda: (len(self._indexed()["sources"]), self._searcher().doc_count()))


# ---------------------------------------------------------------- files


@functools.lru_cache(maxsize=1 << 16)
def _source_of(shard: str, name: str) -> str | None:
    """The source id a file ``sources/<shard>/<name>`` belongs to, if it is a source file.
    Cached: the same names come back on every check, and the parse is most of a check's cost
    (1000 sources: 23 -> 9 ms)."""
    parsed = parse_source_path(f"{SOURCES_DIR}/{shard}/{name}")
    return None if parsed is None else parsed[0]


def _scan(root: str, only: set[str] | None = None) -> dict[str, list[FileState]]:
    """Source id -> the state of each of its files, from one pass over ``sources/``.

    A ``sources/`` or shard folder that is a link is not entered: nothing is read through it.
    """
    top = os.path.join(root, SOURCES_DIR)
    try:
        if not stat.S_ISDIR(os.lstat(top).st_mode):
            return {}
        shards = list(os.scandir(top))
    except OSError:
        return {}
    wanted = None if only is None else {sid[:2] for sid in only}
    files: dict[str, list[FileState]] = {}
    for shard in shards:
        folder = shard.name
        if wanted is not None and folder not in wanted:
            continue
        if not shard.is_dir(follow_symlinks=False):
            continue
        try:
            entries = list(os.scandir(shard.path))
        except OSError:
            continue
        for entry in entries:
            name = entry.name
            sid = _source_of(folder, name)
            if sid is None or (only is not None and sid not in only):
                continue
            try:
                st = entry.stat(follow_symlinks=False)
            except OSError:
                continue
            state = (name, st.st_ctime_ns, st.st_mtime_ns, st.st_size, st.st_ino, st.st_mode)
            if sid in files:
                files[sid].append(state)
            else:
                files[sid] = [state]
    return files


def _signature(listed: list[FileState] | None, before: int) -> Signature | None:
    """The source's files' states, or None when one of them was written too recently (after
    ``before`` less the margin) for its signature to prove it unchanged at a later check."""
    if not listed:
        return None
    for _, ctime, mtime, _, _, mode in listed:
        if not settled(ctime, mtime, mode, before):
            return None
    return _raw_signature(listed)


def _raw_signature(listed: list[FileState]) -> Signature:
    return tuple(sorted(listed)) if len(listed) > 1 else (listed[0],)


def _changed(state: dict[str, Any], files: dict[str, list[FileState]]) -> bool:
    """Whether any source may differ from what the index holds. One whose signature is not
    yet trusted (None) always counts as changed."""
    known: dict[str, _Indexed] = state["sources"]
    broken: dict[str, tuple[Any, ...]] = state["broken"]
    if len(files) != len(known) + len(broken):
        return True
    for sid, listed in files.items():
        entry = known.get(sid)
        if entry is not None:
            signature = entry.signature
        elif sid in broken:
            signature = broken[sid][0]
        else:
            return True
        if signature is None or signature != _raw_signature(listed):
            return True
    return False


# ---------------------------------------------------------------- chunks


def _lines(text: str) -> list[str]:
    """Lines as the rest of lantern numbers them (``count_lines``, ``lines_of``): split at
    ``\\n`` only. ``str.splitlines`` also splits at ``\\r``, ``\\x0c``, U+2028 and others, which
    would number lines differently from the references that cite them."""
    parts = text.split("\n")
    lines = [part + "\n" for part in parts[:-1]]
    if parts[-1]:
        lines.append(parts[-1])
    return lines


def _plan(found: SourceFile, old: _Indexed | None) -> tuple[int, int] | None:
    """Where to start chunking ``found`` again: (line, byte offset); None if the index holds
    it already. An append resumes at the old body's resume line, anything else at the top."""
    body, manifest = found.body, found.manifest
    same_fields = old is not None and (old.kind, old.title) == (manifest.kind, manifest.title)
    if old is None or not same_fields:
        return (1, 0)
    if len(body) == old.nbytes and hashlib.sha256(body).hexdigest() == old.sha256:
        return None
    if len(body) > old.nbytes and hashlib.sha256(body[: old.nbytes]).hexdigest() == old.sha256:
        return (old.resume_line, old.resume_byte)
    return (1, 0)


def indexed_text(text: str, title: str | None) -> str:
    """What the index reads a chunk's words from: its text, and its source's title."""
    return f"{text}\n{title}" if title else text


def _write_chunks(
    writer: Any,
    sid: str,
    found: SourceFile,
    start: tuple[int, int],
    signature: Signature | None,
    replace: bool = True,
) -> tuple[_Indexed, int]:
    """Replace the chunks of ``sid`` from line ``start[0]`` on; the source's new entry and the
    number of chunks written."""
    import pygit2  # only a source being indexed needs it

    body, manifest = found.body, found.manifest
    first, offset = start
    if first > 1:
        writer.delete_by_query(Q.And([Q.Term("source", sid), Q.NumericRange("a", first, None)]))
    elif replace:
        # Also when the state lists no chunks of ``sid``: a crash between the index's commit
        # and the state's save may have left some.
        writer.delete_by_term("source", sid)
    lines = _lines(body[offset:].decode("utf-8"))
    ranges = chunk_ranges(lines, first)
    title = manifest.title or ""
    for a, b in ranges:
        text = "".join(lines[a - first : b - first + 1])
        writer.add_document(
            source=sid,
            kind=manifest.kind,
            a=a,
            b=b,
            text=text,
            content=indexed_text(text, title),
        )
    # The resume line: the first chunk whose making looked at a line an append can change.
    # A complete last line never changes, so only the last chunk is redone; a last line
    # without its newline may grow, and every chunk whose end was decided at it is redone.
    total = first - 1 + len(lines)
    settled_to = total if body.endswith(b"\n") else total - 1
    resume = next((a for a, b in ranges if b >= settled_to), None)
    if resume is None:  # an empty body, or nothing after the resume line
        resume = first
    resume_byte = offset + len("".join(lines[: resume - first]).encode("utf-8"))
    entry = _Indexed(
        signature=signature,
        nbytes=len(body),
        sha256=hashlib.sha256(body).hexdigest(),
        resume_line=resume,
        resume_byte=resume_byte,
        blob=str(pygit2.hash(body))[:12],
        kind=manifest.kind,
        uri=manifest.uri,
        title=manifest.title,
    )
    return entry, len(ranges)


# ---------------------------------------------------------------- searching


def _filter(kinds: tuple[str, ...], sources: tuple[str, ...], phrases: tuple[str, ...] = ()) -> Any:
    """The filters as a Whoosh query (None: every chunk); ``phrases`` only as candidates,
    which :func:`_allowed` judges by every word."""
    parts = []
    if kinds:
        parts.append(Q.Or([Q.Term("kind", kind) for kind in kinds]))
    if sources:
        parts.append(Q.Or([Q.Term("source", sid) for sid in sources]))
    if phrases:
        # Chunks that hold one of an entity's names as a phrase ([[links]] hold it too).
        held = [q for q in map(phrase_query, phrases) if q is not None]
        parts.append(Q.Or(held) if held else Q.NullQuery)
    if not parts:
        return None
    return Q.And(parts) if len(parts) > 1 else parts[0]


def _allowed(
    searcher: Any, kinds: Sequence[str], sources: Sequence[str], phrases: Sequence[str]
) -> set[int] | None:
    """The chunks (document numbers) the filters select; None for no filter. A chunk holds a
    phrase only when its text has every word of it in order (:func:`holds_phrase`): the
    index's phrase, without stop words and initials, only finds the candidates."""
    restrict = _filter(tuple(kinds), tuple(sources), tuple(phrases))
    if restrict is None:
        return None
    docs = set(searcher.docs_for_query(restrict))
    if phrases:
        wanted = tuple(phrase_words(phrase) for phrase in phrases)
        docs = {n for n in docs if holds_phrase(searcher.stored_fields(n)["text"], wanted)}
    return docs


def _decodable(text: str) -> None:
    if has_undecodable(text):
        raise InvalidInput(
            "query: is not valid Unicode text (undecodable bytes?)", code="invalid_query"
        )


def _parsed(text: str) -> Any:
    """A search text as a Whoosh query; an undecodable text is refused (``invalid_query``)."""
    _decodable(text)
    return text_query(text)


def _ranked(
    searcher: Any,
    state: dict[str, Any],
    query: Any,
    allowed: set[int] | None,
    limit: int | None,
    offset: int,
) -> list[ChunkHit]:
    """Hits ``offset:offset+limit`` by score among ``allowed`` (None: all), then source id and
    first line."""
    end = Page(limit, offset).end
    scored = bm25.scored(searcher, query, allowed, None, end)
    known: dict[str, _Indexed] = state["sources"]
    ranked = []
    for score, docnum in scored:
        fields = searcher.stored_fields(docnum)
        ranked.append((-score, fields["source"], fields["a"], fields))
    ranked.sort(key=lambda item: item[:3])
    hits = []
    for negated, sid, a, fields in ranked[offset:end]:
        entry = known.get(sid)
        if entry is None:  # the state and the index disagree: rebuild rather than guess
            raise NeedsRebuild("a chunk of a source the index does not list")
        b = fields["b"]
        hits.append(
            ChunkHit(
                ref=str(SourceRef(sid, entry.blob, a, b)),
                source_id=sid,
                lines=(a, b),
                score=-negated,
                text=fields["text"],
                kind=entry.kind,
                uri=entry.uri,
                title=entry.title,
            )
        )
    return hits


# ---------------------------------------------------------------- helpers


def text_hash(text: str) -> str:
    """The key of a text's vector (``vectors``), and a chunk's digest: equal texts, one key."""
    return hashlib.sha1(text.encode("utf-8")).hexdigest()


def _problems(state: dict[str, Any]) -> dict[str, Problem]:
    return {
        sid: Problem(path, line, message)
        for sid, (_, path, line, message) in sorted(state["broken"].items())
    }
