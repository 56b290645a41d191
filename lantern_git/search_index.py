"""The search index: a Whoosh index over the record files, derived state only.

Everything here can be deleted and rebuilt from the files. Before answering, the index brings
itself up to date with the working tree: it compares each record file's (mtime, size, inode)
with what it saw last time, re-reads only the files that differ, and skips those whose content
hash has not changed. A missing, older-schema or unreadable index is rebuilt transparently.
"""

from __future__ import annotations

import json
import marshal
import os
import shutil
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from stat import S_ISREG

from whoosh import index as whoosh_index
from whoosh import query as Q
from whoosh import sorting
from whoosh.analysis import StemmingAnalyzer
from whoosh.fields import ID, NUMERIC, STORED, TEXT, Schema

from .errors import StoreError, ValidationError
from .query import RecordQuery, _scope_matches, order_key, sort_key  # noqa: F401 - re-exported
from .record import ID_RE, MAX_FILE_BYTES, Record

SCHEMA_VERSION = 1
INDEX_NAME = f"records_v{SCHEMA_VERSION}"
MANIFEST = f"files_v{SCHEMA_VERSION}.marshal"
NO_EXPIRY = 2**62
# Files modified this recently may change again within the filesystem's timestamp granularity
# without their stat changing ("racy git"); their content hash is checked again next time.
RACY_WINDOW_NS = 3_000_000_000


def _schema() -> Schema:
    return Schema(
        path=ID(stored=True, unique=True),
        id=ID(stored=True, sortable=True),
        kind=ID,
        scope=ID,
        status=ID,
        priority=NUMERIC(int, bits=32),
        urgency=NUMERIC(int, bits=32),
        expires_at=NUMERIC(int, bits=64),
        order=NUMERIC(int, bits=64, sortable=True),
        content=TEXT(analyzer=StemmingAnalyzer()),
        doc=STORED,
    )


@dataclass
class Hit:
    record: Record
    score: float | None = None


@dataclass
class RefreshReport:
    scanned: int = 0
    reread: int = 0
    updated: int = 0
    removed: int = 0
    rebuilt: bool = False
    broken: dict[str, str] = field(default_factory=dict)


def scan_record_files(root: str) -> dict[str, tuple[int, int, int]]:
    """Every ``memory/<aa>/*.md`` file with its (mtime_ns, size, inode)."""
    found: dict[str, tuple[int, int, int]] = {}
    memory = os.path.join(root, "memory")
    if os.path.islink(memory):
        raise StoreError(f"{memory} is a symbolic link; lantern keeps records inside the store")
    try:
        shards = list(os.scandir(memory))
    except FileNotFoundError:
        return found
    for shard in shards:
        if not shard.is_dir(follow_symlinks=False):
            continue
        prefix = "memory/" + shard.name + "/"
        for entry in os.scandir(shard.path):
            name = entry.name
            if name.endswith(".md") and not name.startswith("."):
                st = entry.stat(follow_symlinks=False)
                found[prefix + name] = (st.st_mtime_ns, st.st_size, st.st_ino)
    return found


def read_record_file(root: str, path: str) -> tuple[bytes | None, Record | None, str | None]:
    """(raw bytes, record, problem): a file that cannot be used gives a problem, never raises."""
    full = os.path.join(root, path)
    name = os.path.basename(path)
    try:
        if os.path.islink(full):
            return None, None, f"{path}: is a symbolic link; record files must be regular files"
        # O_NONBLOCK: a FIFO planted as a record file must not hang every command.
        fd = os.open(full, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        with open(fd, "rb") as handle:
            if not S_ISREG(os.fstat(fd).st_mode):
                return None, None, f"{path}: is not a regular file"
            data = handle.read(MAX_FILE_BYTES + 1)
    except OSError as err:
        return None, None, f"{path}: cannot be read: {err.strerror}"
    if len(data) > MAX_FILE_BYTES:
        return data, None, f"{path}: is larger than {MAX_FILE_BYTES} bytes"
    stem = name[:-3]
    if not ID_RE.fullmatch(stem) or path != f"memory/{stem[:2]}/{name}":
        return data, None, f"{path}: is not named memory/<aa>/<16 hex digit id>.md"
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as err:
        line = data[: err.start].count(b"\n") + 1
        return data, None, f"{path}:{line}: is not valid UTF-8"
    try:
        record = Record.from_markdown(text, path)
    except ValidationError as err:
        return data, None, err.message
    if record.id != stem:
        return data, None, f"{path}:2: id {record.id} does not match the file name"
    return data, record, None


def _content_hash(data: bytes) -> str:
    import hashlib

    return hashlib.sha1(data).hexdigest()


class SearchIndex:
    """The Whoosh index of one store, kept in ``<store>/.lantern/``."""

    def __init__(self, root: str, state_dir: str, locker: Callable[[], object]):
        self.root = root
        self.dir = os.path.join(state_dir, "index")
        self._locker = locker
        self._ix = None
        self._manifest: dict | None = None

    # -- storage

    def _manifest_path(self) -> str:
        return os.path.join(self.dir, MANIFEST)

    def _load_manifest(self) -> dict:
        if self._manifest is None:
            try:
                with open(self._manifest_path(), "rb") as handle:
                    manifest = marshal.load(handle)
                if not isinstance(manifest, dict) or manifest.get("v") != SCHEMA_VERSION:
                    raise ValueError("old manifest")
            except (OSError, ValueError, EOFError, TypeError):
                manifest = None
            self._manifest = manifest
        return self._manifest

    def _save_manifest(self, manifest: dict) -> None:
        tmp = self._manifest_path() + ".tmp"
        with open(tmp, "wb") as handle:
            marshal.dump(manifest, handle)
        os.replace(tmp, self._manifest_path())
        self._manifest = manifest

    def _open(self):
        if self._ix is None:
            if not whoosh_index.exists_in(self.dir, indexname=INDEX_NAME):
                raise _NeedsRebuild("missing")
            try:
                self._ix = whoosh_index.open_dir(self.dir, indexname=INDEX_NAME)
            except Exception as err:  # whoosh raises many kinds on a damaged index
                raise _NeedsRebuild(f"unreadable ({type(err).__name__})") from None
        return self._ix

    def close(self) -> None:
        if self._ix is not None:
            self._ix.close()
            self._ix = None

    # -- keeping in step with the files

    def refresh(self) -> RefreshReport:
        """Bring the index up to date with the working tree's record files."""
        report = RefreshReport()
        scan = scan_record_files(self.root)
        report.scanned = len(scan)
        manifest = self._load_manifest()
        if manifest is None or not self._usable():
            return self.rebuild(scan)
        files = manifest["files"]
        changed = [p for p, st in scan.items() if files.get(p, (None,))[:3] != st]
        removed = [p for p in files if p not in scan]
        if not changed and not removed:
            report.broken = manifest["broken"]
            return report
        with self._locker():
            self._manifest = None
            manifest = self._load_manifest()
            if manifest is None:
                return self.rebuild(scan)
            try:
                self._apply(manifest, scan, changed, removed, report)
            except _NeedsRebuild:
                return self.rebuild(scan)
        report.broken = manifest["broken"]
        return report

    def _usable(self) -> bool:
        try:
            self._open()
            return True
        except _NeedsRebuild:
            return False

    def _apply(self, manifest, scan, changed, removed, report) -> None:
        files, broken = manifest["files"], manifest["broken"]
        now_ns = time.time_ns()
        updates: list[tuple[str, Record | None]] = []
        for path in changed:
            data, record, problem = read_record_file(self.root, path)
            report.reread += 1
            if data is None and problem is None:
                continue
            digest = _content_hash(data) if data is not None else None
            stat = scan[path]
            if now_ns - stat[0] < RACY_WINDOW_NS:
                stat = (None, None, None)
            previous = files.get(path)
            files[path] = (*stat, digest)
            if previous is not None and previous[3] == digest and path not in broken:
                continue
            if problem:
                broken[path] = problem
            else:
                broken.pop(path, None)
            updates.append((path, record))
        for path in removed:
            files.pop(path, None)
            broken.pop(path, None)
            updates.append((path, None))
        if updates:
            ix = self._open()
            writer = ix.writer(timeout=30.0)
            try:
                for path, record in updates:
                    if record is None:
                        writer.delete_by_term("path", path)
                        report.removed += 1
                    else:
                        writer.update_document(**_document(path, record))
                        report.updated += 1
                writer.commit()
            except BaseException:
                writer.cancel()
                raise
            self.close()
        self._save_manifest(manifest)

    def note_written(self, paths: Iterable[str]) -> None:
        """After lantern wrote ``paths`` (holding the writer lock): index exactly those files."""
        manifest = self._load_manifest()
        if manifest is None or not self._usable():
            self.rebuild()
            return
        paths = list(paths)
        scan = {}
        for path in paths:
            try:
                st = os.lstat(os.path.join(self.root, path))
                scan[path] = (st.st_mtime_ns, st.st_size, st.st_ino)
            except FileNotFoundError:
                pass
        changed = [p for p in paths if p in scan]
        removed = [p for p in paths if p not in scan and p in manifest["files"]]
        try:
            self._apply(manifest, scan, changed, removed, RefreshReport())
        except _NeedsRebuild:
            self.rebuild()

    def rebuild(self, scan: dict | None = None) -> RefreshReport:
        """Build the index from scratch in a new folder, then swap it in."""
        report = RefreshReport(rebuilt=True)
        with self._locker():
            self.close()
            scan = scan_record_files(self.root) if scan is None else scan
            report.scanned = len(scan)
            parent = os.path.dirname(self.dir)
            fresh = self.dir + ".new"
            shutil.rmtree(fresh, ignore_errors=True)
            try:
                os.makedirs(fresh)
            except OSError as err:
                raise StoreError(
                    f"cannot write the search index in {parent}: {err.strerror}"
                ) from None
            ix = whoosh_index.create_in(fresh, _schema(), indexname=INDEX_NAME)
            files: dict = {}
            broken: dict = {}
            now_ns = time.time_ns()
            writer = ix.writer(limitmb=256)
            try:
                for path in sorted(scan):
                    data, record, problem = read_record_file(self.root, path)
                    report.reread += 1
                    if data is None and problem is None:
                        continue
                    stat = scan[path]
                    if now_ns - stat[0] < RACY_WINDOW_NS:
                        stat = (None, None, None)
                    files[path] = (*stat, _content_hash(data) if data is not None else None)
                    if problem:
                        broken[path] = problem
                        continue
                    writer.add_document(**_document(path, record))
                    report.updated += 1
                writer.commit()
            except BaseException:
                writer.cancel()
                raise
            ix.close()
            manifest = {"v": SCHEMA_VERSION, "files": files, "broken": broken}
            with open(os.path.join(fresh, MANIFEST), "wb") as handle:
                marshal.dump(manifest, handle)
            old = self.dir + ".old"
            shutil.rmtree(old, ignore_errors=True)
            if os.path.exists(self.dir):
                os.replace(self.dir, old)
            os.replace(fresh, self.dir)
            shutil.rmtree(old, ignore_errors=True)
            self._manifest = manifest
        report.broken = broken
        return report

    # -- answering

    def list(self, query: RecordQuery) -> list[Hit]:
        return self._run(query, scored=False)

    def search(self, query: RecordQuery) -> list[Hit]:
        return self._run(query, scored=True)

    def _run(self, query: RecordQuery, scored: bool) -> list[Hit]:
        if query.limit == 0:
            # Whoosh refuses limit=0, and its error would be taken for a damaged index.
            return []
        try:
            return self._run_once(query, scored)
        except _NeedsRebuild:
            self.rebuild()
            return self._run_once(query, scored)

    def _run_once(self, query: RecordQuery, scored: bool) -> list[Hit]:
        ix = self._open()
        filters = _filter_query(query)
        text_query = _text_query(ix.schema, query.text) if query.text else None
        end = None if query.limit is None else query.offset + query.limit
        try:
            with ix.searcher() as searcher:
                if scored:
                    if text_query is None:
                        return []
                    results = searcher.search(text_query, filter=filters, limit=None)
                    hits = [Hit(_record(hit["doc"]), round(float(hit.score), 6)) for hit in results]
                    hits.sort(key=lambda h: (-h.score, h.record.id))
                    return hits[query.offset : end]
                combined = filters if text_query is None else Q.And([filters, text_query])
                facet = sorting.MultiFacet([sorting.FieldFacet("order"), sorting.FieldFacet("id")])
                results = searcher.search(combined, sortedby=facet, limit=end)
                return [Hit(_record(hit["doc"])) for hit in results[query.offset : end]]
        except _NeedsRebuild:
            raise
        except Exception as err:
            self.close()
            raise _NeedsRebuild(f"unreadable ({type(err).__name__})") from err

    def counts(self) -> dict[str, dict[str, int]]:
        """Record counts by status and by kind."""
        ix = self._open()
        out: dict[str, dict[str, int]] = {"status": {}, "kind": {}}
        with ix.searcher() as searcher:
            for name in ("status", "kind"):
                for term in searcher.lexicon(name):
                    value = term.decode() if isinstance(term, bytes) else term
                    count = sum(1 for _ in searcher.docs_for_query(Q.Term(name, value)))
                    if count:
                        out[name][value] = count
        return out


class _NeedsRebuild(Exception):
    pass


def _document(path: str, record: Record) -> dict:
    return {
        "path": path,
        "id": record.id,
        "kind": record.kind,
        "scope": record.scope,
        "status": record.status,
        "priority": record.priority,
        "urgency": record.urgency,
        "expires_at": record.expires_at if record.expires_at is not None else NO_EXPIRY,
        "order": order_key(record),
        "content": record.content,
        "doc": json.dumps(record.to_dict(), ensure_ascii=False),
    }


def _record(doc: str) -> Record:
    data = json.loads(doc)
    data["source_refs"] = tuple(data["source_refs"])
    return Record(**data)


def _filter_query(query: RecordQuery):
    parts = []
    if query.status != "all":
        parts.append(Q.Term("status", query.status))
    if query.kinds:
        parts.append(Q.Or([Q.Term("kind", kind) for kind in query.kinds]))
    if query.scopes:
        options = [
            Q.Prefix("scope", s[:-1]) if s.endswith("*") else Q.Term("scope", s)
            for s in query.scopes
        ]
        parts.append(Q.Or(options) if len(options) > 1 else options[0])
    if query.min_priority is not None:
        parts.append(Q.NumericRange("priority", query.min_priority, None))
    if query.min_urgency is not None:
        parts.append(Q.NumericRange("urgency", query.min_urgency, None))
    if not query.include_expired:
        now = int(time.time()) if query.now is None else query.now
        parts.append(Q.NumericRange("expires_at", now, None, startexcl=True))
    if not parts:
        return Q.Every()
    return Q.And(parts) if len(parts) > 1 else parts[0]


def _text_query(schema, text: str):
    from whoosh.qparser import OrGroup, QueryParser

    parser = QueryParser("content", schema, group=OrGroup.factory(0.9))
    return parser.parse(text)
