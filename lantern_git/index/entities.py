"""The entity index: what each entity file calls its entity, and which source chunks hold it.

Derived state, on the life cycle the record and chunk indexes share (``derived.py``): a Whoosh
index and a state file in ``.lantern/entities/``, never committed, rebuilt from the files when
missing, of an older schema or damaged, a rebuild swapped in whole. It holds what the other two
cannot answer cheaply:

- each entity file's key, its entity and its labels (the key, the name, each alias), so that
  ``entity show`` and ``entity list`` read and parse no entity file (1k files read and parsed:
  ~365 ms on a loaded two-core machine);
- each source chunk that holds an entity's name or alias as a phrase (every word of it, in
  order: :func:`~.analysis.holds_phrase`), with the keys it holds, judged once when the chunk
  or a label changes. Asked at each ``entity show``, the chunk index took a phrase query per
  label and the text of every candidate (20k records, 40 sources, under cProfile: 40 ms of a
  100 ms show); here it is one term's postings.

The records that name or link an entity stay the record index's: its ``mentions`` terms, which
the list filters and the list order are applied with. ``--entity`` reads the one entity file's
names (0.1 ms) rather than this index, whose check of every entity file and source costs more
than the read it would save (16 ms of an 18 ms filtered list at 100k records, 1k entities).

Keeping in step, at each read: the entity files' signatures (one listing and an lstat a file)
and the chunk index's sources (each one's blob) are compared with what the index was made from.
A changed entity file is read again; when any file's labels changed, every chunk is judged
again (an entity write: rare); a changed source has its own chunks judged again. The files are
the truth: nothing here is ever written back, and a deleted ``.lantern/`` is rebuilt.
"""

from __future__ import annotations

import builtins
import hashlib
import json
import os
from collections.abc import Callable, Iterable
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from whoosh import query as Q
from whoosh.fields import ID, KEYWORD, STORED, Schema

from ..errors import ValidationError
from ..model.entity import Entity, entity_file_paths, parse_entity_file
from ..model.entity_keys import key_of_path, label_term
from ..model.record_file import read_bytes
from . import clock
from .analysis import phrase_words
from .derived import DerivedIndex, Layout, debug, settled

if TYPE_CHECKING:
    from .chunks import ChunkIndex

SCHEMA_VERSION = 1
INDEX_NAME = f"entities_v{SCHEMA_VERSION}"
STATE = f"state_v{SCHEMA_VERSION}.marshal"
# A chunk document's path: its source and first line, apart from any entity file's path.
CHUNK_PREFIX = "chunk:"

# (ctime, mtime, size, inode) of an entity file, or None: read it again at the next check.
Signature = tuple[int, int, int, int] | None
# What the state keeps of each entity file: (signature, key, labels, digest).
FileEntry = tuple[Signature, str, tuple[str, ...], str]


def _schema() -> Schema:
    return Schema(
        # An entity file's path, or "chunk:<source id>:<first line>".
        path=ID(stored=True, unique=True),
        # An entity file's key; a chunk's keys (those it holds), as terms.
        key=ID(stored=True),
        keys=KEYWORD(commas=True, stored=True),
        # A chunk's source: its chunks are judged again together.
        source=ID(stored=True),
        # An entity file's entity (Entity.to_dict with notes and extra keys); a chunk's reference.
        entity=STORED,
        ref=STORED,
        line=STORED,
    )


@dataclass
class EntityRefresh:
    """What a check of the entity index did."""

    files_read: int = 0
    sources_judged: int = 0
    rebuilt: bool = False
    unchanged: bool = False
    # Entity files that cannot be read as entities (``lantern check`` says why)
    broken: dict[str, str] = field(default_factory=dict)


class EntityIndex(DerivedIndex[EntityRefresh]):
    """The entity index of one store, kept in ``<state_dir>/entities/`` (see the module's
    docstring); ``chunks`` gives the store's chunk index, whose chunks it judges."""

    LAYOUT = Layout("entities", INDEX_NAME, STATE, SCHEMA_VERSION, "entity index", _schema)

    def __init__(
        self,
        root: str,
        state_dir: str,
        locked: Callable[[], AbstractContextManager[object]],
        chunks: Callable[[], ChunkIndex],
    ):
        super().__init__(root, state_dir, locked)
        self._chunks = chunks
        # (the state file's identity, the state read from it): see ``_state``
        self._kept_state: tuple[tuple[int, int, int], dict[str, Any]] | None = None

    # -- the state: files {path: (signature, key, labels, digest)}, broken, sources {sid: blob}

    def _well_formed(self, state: dict[str, Any]) -> dict[str, Any]:
        files, broken, sources = state.get("files"), state.get("broken"), state.get("sources")
        if not (isinstance(files, dict) and isinstance(broken, dict)):
            raise ValueError("damaged state")
        if not isinstance(sources, dict):
            raise ValueError("damaged state")
        for path, entry in files.items():
            if not (isinstance(path, str) and isinstance(entry, tuple) and len(entry) == 4):
                raise ValueError("damaged state")
        return state

    def _save(self, state: dict[str, Any], folder: str | None = None) -> None:
        self._write_state({k: state[k] for k in ("files", "broken", "sources")}, folder)
        self._kept_state = None

    def _forget(self) -> None:
        """Drop what was read from the folder: it is damaged, or about to be rebuilt."""
        super()._forget()
        self._kept_state = None

    def _state(self) -> dict[str, Any] | None:
        """The state as saved, read again only when its file changed (another process, or
        this one, saved it): a check that finds nothing changed loads nothing."""
        try:
            st = os.stat(self._state_path())
        except OSError:
            return None
        identity = (st.st_mtime_ns, st.st_ino, st.st_size)
        kept = self._kept_state
        if kept is not None and kept[0] == identity:
            return kept[1]
        state = self._read_state()
        self._kept_state = None if state is None else (identity, state)
        return state

    # -- keeping in step

    def refresh(self) -> EntityRefresh:
        """Bring the index in step with the entity files and the chunk index (refreshed
        first): see the module's docstring."""
        chunks = self._chunks()
        chunks.refresh()
        state = self._state()
        if state is None or not self._usable():
            return self.rebuild()
        before = clock.now_ns(self.dir)
        on_disk = _scan(self.root)
        changed = _changed_files(state["files"], on_disk)
        blobs = chunks.source_blobs()
        if not changed and blobs == state["sources"]:
            return EntityRefresh(unchanged=True, broken=dict(state["broken"]))
        with self._locked():
            state = self._state()  # another process may have brought it in step meanwhile
            if state is None:
                return self.rebuild()
            changed = _changed_files(state["files"], on_disk)
            try:
                return self._update(state, on_disk, changed, blobs, before)
            except Exception:
                return self._start_over()

    def _update(
        self,
        state: dict[str, Any],
        on_disk: dict[str, os.stat_result],
        changed: set[str],
        blobs: dict[str, str],
        before: int,
    ) -> EntityRefresh:
        report = EntityRefresh()
        files: dict[str, FileEntry] = dict(state["files"])
        broken: dict[str, str] = dict(state["broken"])
        old_labels = _label_table(files)
        with self._changing() as writer:
            for path in sorted(changed):
                report.files_read += 1
                read = _read_entity(self.root, path, on_disk.get(path), before)
                kept = files.pop(path, None)
                broken.pop(path, None)
                if read is None:
                    writer().delete_by_term("path", path)
                    continue
                signature, entity, problem = read
                if entity is None:
                    broken[path] = problem or f"{path}: cannot be read"
                    writer().delete_by_term("path", path)
                    continue
                labels = tuple(label_term(label) for label in entity.labels)
                files[path] = (signature, entity.key, labels, _entity_digest(entity))
                # The same content (a file read again only because its times were too recent
                # to trust): no Whoosh commit.
                if kept is None or kept[3] != files[path][3]:
                    writer().update_document(**_entity_document(path, entity))
            table = _label_table(files)
            if table != old_labels:
                judge: set[str] | None = None  # every source: a label came or went
            else:
                judge = {
                    sid
                    for sid in set(blobs) | set(state["sources"])
                    if blobs.get(sid) != state["sources"].get(sid)
                }
            report.sources_judged = len(blobs) if judge is None else len(judge)
            if judge is None:
                writer().delete_by_query(Q.Prefix("path", CHUNK_PREFIX))
            else:
                for sid in judge:
                    writer().delete_by_term("source", sid)
            wanted = judge if judge is None else {sid for sid in judge if sid in blobs}
            if wanted is None or wanted:
                for document in _chunk_documents(self._chunks(), wanted, table):
                    writer().add_document(**document)
        state = {"files": files, "broken": broken, "sources": blobs}
        self._save(state)
        report.broken = broken
        debug(f"entities: read {report.files_read} files, judged {report.sources_judged} sources")
        return report

    def _build(self, started: int) -> EntityRefresh:
        report = EntityRefresh(rebuilt=True)
        chunks = self._chunks()
        chunks.refresh()
        on_disk = _scan(self.root)
        files: dict[str, FileEntry] = {}
        broken: dict[str, str] = {}
        with self._new_folder() as (fresh, ix):
            writer = ix.writer()
            try:
                for path in sorted(on_disk):
                    report.files_read += 1
                    read = _read_entity(self.root, path, on_disk[path], started)
                    if read is None:
                        continue
                    signature, entity, problem = read
                    if entity is None:
                        broken[path] = problem or f"{path}: cannot be read"
                        continue
                    labels = tuple(label_term(label) for label in entity.labels)
                    files[path] = (signature, entity.key, labels, _entity_digest(entity))
                    writer.add_document(**_entity_document(path, entity))
                blobs = chunks.source_blobs()
                report.sources_judged = len(blobs)
                for document in _chunk_documents(chunks, None, _label_table(files)):
                    writer.add_document(**document)
                writer.commit()
            except BaseException:
                writer.cancel()
                raise
            self._save({"files": files, "broken": broken, "sources": blobs}, fresh)
        report.broken = broken
        return report

    # -- answering (from the index as it is: call refresh first)

    def entities(self, kind: str | None = None) -> builtins.list[Entity]:
        """Every entity a readable file holds (of type ``kind``), by key."""

        def read() -> builtins.list[Entity]:
            searcher = self._searcher()
            found = []
            for docnum in searcher.docs_for_query(Q.Every("key")):
                fields = searcher.stored_fields(docnum)
                if kind is not None and not fields["key"].startswith(f"{kind}:"):
                    continue
                found.append(_entity(fields["entity"]))
            return sorted(found, key=lambda entity: entity.key)

        return self._answer(read)

    def entity(self, key: str) -> Entity | None:
        """The entity of ``key``'s file, as indexed; None when no readable file holds it."""

        def read() -> Entity | None:
            fields = self._searcher().document(key=key)
            return None if fields is None else _entity(fields["entity"])

        return self._answer(read)

    def chunks_holding(self, key: str) -> builtins.list[str]:
        """The references of the chunks that hold ``key``'s name or an alias as a phrase, in
        source id and line order (the key's entity file's labels; a key without a file is
        judged by the chunk index when asked)."""

        def read() -> builtins.list[str]:
            searcher = self._searcher()
            found = [
                (fields["source"], fields["line"], fields["ref"])
                for fields in searcher.documents(keys=key)
            ]
            return [ref for _, _, ref in sorted(found)]

        return self._answer(read)

    def chunk_counts(self) -> dict[str, int]:
        """How many chunks hold each key's entity (keys holding none left out)."""

        def read() -> dict[str, int]:
            searcher = self._searcher()
            counts: dict[str, int] = {}
            for term in searcher.lexicon("keys"):
                key = term.decode() if isinstance(term, bytes) else term
                count = sum(1 for _ in searcher.docs_for_query(Q.Term("keys", key)))
                if count:
                    counts[key] = count
            return counts

        return self._answer(read)


# ---------------------------------------------------------------- helpers


def _scan(root: str) -> dict[str, os.stat_result]:
    """Every entity file's path -> its lstat (one listing of each type's folder)."""
    found = {}
    for path in entity_file_paths(root):
        try:
            found[path] = os.lstat(os.path.join(root, path))
        except OSError:
            continue
    return found


def _signature(st: os.stat_result) -> tuple[int, int, int, int]:
    return (st.st_ctime_ns, st.st_mtime_ns, st.st_size, st.st_ino)


def _changed_files(files: dict[str, FileEntry], on_disk: dict[str, os.stat_result]) -> set[str]:
    """The entity files to read again: new, gone, or not showing the signature the index
    trusts (a file read within the filesystem's time granularity is never trusted)."""
    changed = set(files) ^ set(on_disk)
    for path, st in on_disk.items():
        entry = files.get(path)
        if entry is not None and (entry[0] is None or entry[0] != _signature(st)):
            changed.add(path)
    return changed


def _read_entity(
    root: str, path: str, st: os.stat_result | None, before: int
) -> tuple[Signature, Entity | None, str | None] | None:
    """(the signature to trust or None, the entity or None, what is wrong or None); None when
    the file is gone. ``before``: a moment taken before ``st``, which was taken before the read."""
    if st is None or key_of_path(path) is None:
        return None if st is None else (None, None, f"{path}: is not entities/<type>/<name>.md")
    data, problem = read_bytes(root, path, what="entity files")
    if problem is not None:
        return None, None, str(problem)
    if data is None:
        return None
    trusted = (
        _signature(st) if settled(st.st_ctime_ns, st.st_mtime_ns, st.st_mode, before) else None
    )
    try:
        return trusted, parse_entity_file(path, data), None
    except ValidationError as err:
        return trusted, None, f"{path}: {err.reason}"


def _entity_digest(entity: Entity) -> str:
    return hashlib.sha1(_entity_json(entity).encode("utf-8")).hexdigest()


def _entity_json(entity: Entity) -> str:
    return json.dumps({**entity.to_dict(), "extra": entity.extra}, ensure_ascii=False, default=str)


def _entity(text: str) -> Entity:
    data = json.loads(text)
    return Entity(
        key=data["key"],
        name=data["name"],
        aliases=tuple(data["aliases"]),
        description=data["description"],
        created_at=data["created_at"],
        updated_at=data["updated_at"],
        notes=data["notes"],
        extra=data["extra"],
    )


def _entity_document(path: str, entity: Entity) -> dict[str, Any]:
    return {
        "path": path,
        "key": entity.key,
        "entity": _entity_json(entity),
    }


LabelTable = dict[str, builtins.list[tuple[tuple[str, ...], str]]]


def _label_table(files: dict[str, FileEntry]) -> LabelTable:
    """Each label's first word -> (the label's words, the key), for every entity file: what a
    chunk's words are judged against (the same pairs in the same order for the same files)."""
    table: LabelTable = {}
    for _, key, labels, _ in sorted(files.values(), key=lambda entry: entry[1]):
        for label in labels:
            words = phrase_words(label)
            if words:
                table.setdefault(words[0], []).append((words, key))
    for pairs in table.values():
        pairs.sort()
    return table


def held_keys(text: str, table: LabelTable) -> builtins.list[str]:
    """The keys whose name or alias ``text`` holds as a phrase (every word, in order), sorted:
    one pass over its words, each looked up by the labels' first words."""
    words = phrase_words(text)
    held: set[str] = set()
    for start, word in enumerate(words):
        for phrase, key in table.get(word, ()):
            if key not in held and words[start : start + len(phrase)] == phrase:
                held.add(key)
    return sorted(held)


def _chunk_documents(
    chunks: ChunkIndex, sources: set[str] | None, table: LabelTable
) -> Iterable[dict[str, Any]]:
    """A document for each chunk of ``sources`` (None: every source) holding an entity."""
    if not table:
        return
    for sid, a, _, text, ref in chunks.chunk_texts(sources):
        keys = held_keys(text, table)
        if keys:
            yield {
                "path": f"{CHUNK_PREFIX}{sid}:{a}",
                "source": sid,
                "keys": ",".join(keys),
                "ref": ref,
                "line": a,
            }
