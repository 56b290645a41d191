"""The search index: a Whoosh index over the record files, derived state only.

Everything here can be deleted and rebuilt from the files. Before answering, the index brings
itself up to date with the working tree. Any change to a file or a folder, by an editor, a
``git pull``, a ``git checkout`` or a ``touch``, sets its inode change time (ctime), which no
program can set back; so the record files and shard folders changed since the last check are
exactly those whose ctime is newer than a stamp kept with the index. One ``find`` (C speed; a
Python sweep where ``find`` is missing) lists them, then only those are re-read, and a file
whose content hash equals the indexed one is left alone. A missing, older-schema or unreadable
index is rebuilt transparently. A long-running process that watches the store (``watch.py``)
checks only the files its notifications name, and keeps its searcher between calls.
"""

from __future__ import annotations

import builtins
import contextlib
import heapq
import itertools
import json
import marshal
import os
import struct
import subprocess
import sys
import time
from array import array
from bisect import bisect_right
from collections.abc import Callable, Iterable, Iterator
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from itertools import chain, compress, filterfalse, groupby, repeat
from typing import TYPE_CHECKING, Any, Protocol

from whoosh import query as Q
from whoosh.columns import NumericColumn
from whoosh.fields import COLUMN, ID, KEYWORD, NUMERIC, STORED, Schema

from ..core.fields import STATUSES
from ..errors import StoreError
from ..model.entity_keys import mention_terms
from ..model.query import Hit, RecordQuery, cited_sources, order_key, order_minimums
from ..model.record import Record
from ..model.record_file import MEMORY_DIR, RECORD_SUFFIX, read_record_file, record_files
from . import bm25, clock, journal, whoosh_compat
from .analysis import text_query, word_forms
from .derived import (
    COARSE_MARGIN_NS,
    FINE_MARGIN_NS,
    DerivedIndex,
    Layout,
    debug,
    fine,
    settled,
    write_atomically,
    writing,
)

if TYPE_CHECKING:
    from .watch import Watcher

# 3: words as written and their Porter2 stems (see analysis.py).
# 4: a column of each file digest's first 64 bits, read whole by ``digests``.
# 5: the source ids each record cites, as terms: ``cites`` is one term's postings (a source
# page read every record to find its citations: 5.3 s at 100k records).
# 6: what each record names or links (its entities and [[link]] targets): --entity's filter.
# 7: no priority and urgency terms (the minimums read the order column; no query asked for
# them) and an expiry's terms only for a record that expires: 8 of ~47 postings per record
# that a rebuild sorted and wrote for nothing; no id terms (ids are read from the id column),
# half of the terms a rebuild wrote, each with its own term info.
SCHEMA_VERSION = 7
INDEX_NAME = f"records_v{SCHEMA_VERSION}"
MANIFEST = f"state_v{SCHEMA_VERSION}.marshal"
# Each record file's lstat signature as it was just before the index took in its content; kept
# apart from the manifest so that a check finding nothing changed never loads it.
SEEN = f"seen_v{SCHEMA_VERSION}.marshal"
# Its mtime is the stamp: files whose ctime is newer may differ from the index.
STAMP = "checked"
# The stamp is set this far before the check started, wider than any filesystem's timestamp
# granularity (FAT: 2 s) and the kernel's coarse clock, so no change can fall between two checks;
# files changed within the margin are merely hashed once more.
STAMP_MARGIN_NS = COARSE_MARGIN_NS
SWEEP_IN_PYTHON_BELOW = 600
# Two finds over half the shard folders each halve the wall time wherever a second core is
# free (10k records: 31 -> 18 ms; 1k: 6.3 -> 3.9 ms, below the Python sweep's 5.4 ms).
TWO_FINDS_FROM = 1000 if (os.cpu_count() or 1) > 1 else 2**62
PARALLEL_FROM = 5000
# Processes that build a large index at once, one segment each.
BUILDERS = min(os.cpu_count() or 1, 8)
# Records in one builder's segment at most: what a builder holds in memory until it writes its
# segment grows with its share (~1 GB for 500k records), so a million records make ten
# segments, built two at a time on two cores, rather than two of half a million each.
SHARE_MAX = 100_000
TICK_EVERY = 500
# Changed files to check, from which the remembered signatures are loaded to skip reading them
SEEN_FROM = 64
# Shard folders to compare with the index, past which one walk over every indexed path is cheaper
WALK_ALL_FROM = 16
# Records to read from the index by id, from which one pass over all stored documents is cheaper
LOOKUPS_BELOW = 500
# When this many files changed at once (a checkout of another branch), one rebuild is cheaper.
REBUILD_ABOVE = 20_000


def _schema() -> Schema:
    return Schema(
        path=ID(stored=True, unique=True),
        id=whoosh_compat.IdColumn(stored=True, sortable=True),
        kind=ID,
        scope=ID,
        status=ID,
        # Only a record that expires has terms here (a coarse shift step: fewer terms per
        # value, and every term costs at index time); the mask asks for those expired.
        expires_at=NUMERIC(int, bits=64, shift_step=16),
        # The list order, priority and urgency in it: sorted on and read for the minimums,
        # never searched, so a column without terms.
        order=COLUMN(NumericColumn("Q")),
        content=word_forms(),
        # What the record names or links (entity_keys.mention_terms): --entity's filter.
        mentions=KEYWORD(commas=True),
        # Never scored: a filter only, its terms the cited source ids as written.
        cites=KEYWORD(lowercase=False, scorable=False),
        doc=STORED,
        digest=STORED,
        # The digest's first 64 bits as a column: every record's, read in one piece, tell the
        # vectors which records changed (their stored fields one by one: ~1 s at 100k).
        digest_key=COLUMN(NumericColumn("Q")),
    )


@dataclass
class RefreshReport:
    scanned: int = 0
    reread: int = 0
    updated: int = 0
    removed: int = 0
    rebuilt: bool = False
    broken: dict[str, str] = field(default_factory=dict)
    # No record file or folder changed since the last check: the index, as it was when the
    # check began, answers for the files.
    unchanged: bool = False
    # Under a watch: "notified" (only the paths events named were checked) or "swept"
    how: str = ""
    # Under a watch: the check waited for the watcher's barrier (something had changed in the
    # record folders since the last check, or it could not tell).
    waited: bool = False


def changed_since(
    root: str,
    stamp: str,
    since: int,
    records: int = 0,
    meanwhile: Callable[[], object] | None = None,
) -> list[str]:
    """Paths under ``memory/`` (two levels deep) changed after ``since``, as reported by ctime.

    ``stamp`` is a file whose mtime is ``since``. The stat calls are the whole cost: for a
    large store ``find`` makes them at C speed, in two processes over half the shard folders
    each; for a small one (``records``, roughly) starting a process costs more than the sweep.
    ``meanwhile`` is called once while the finds run (before the sweep where there are none).
    """
    memory = os.path.join(root, MEMORY_DIR)
    if records < SWEEP_IN_PYTHON_BELOW:
        return _sweep(memory, since, meanwhile)
    try:
        top = os.lstat(memory)
        shards = sorted(os.listdir(memory))
    except OSError:
        return _sweep(memory, since, meanwhile)
    changed = [MEMORY_DIR] if max(top.st_ctime_ns, top.st_mtime_ns) > since else []
    # "./" so that no folder name can read as an option to find
    folders = ["./" + name for name in shards]
    split = len(folders) // 2 if records >= TWO_FINDS_FROM else len(folders)
    halves = [folders[:split], folders[split:]]
    test = ("-maxdepth", "1", "-newercm", stamp, "-print0")
    try:
        finds = [
            subprocess.Popen(
                ["find", *half, *test],
                cwd=memory,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
            )
            for half in halves
            if half
        ]
    except OSError:  # no find: the same check in Python
        return _sweep(memory, since, meanwhile)
    if meanwhile is not None:
        try:
            meanwhile()
        except BaseException:
            for find in finds:
                find.kill()
                find.wait()
            raise
    outputs = [(find.communicate()[0], find.returncode) for find in finds]
    if any(code != 0 for _, code in outputs):  # a folder vanished meanwhile, or no GNU find
        return _sweep(memory, since)
    for output, _ in outputs:
        names = output.decode("utf-8", "surrogateescape").split("\0")
        changed.extend(f"{MEMORY_DIR}/{name[2:]}" for name in names if name)
    return changed


def _sweep(memory: str, since: int, meanwhile: Callable[[], object] | None = None) -> list[str]:
    if meanwhile is not None:
        meanwhile()

    def newer(st: os.stat_result) -> bool:
        # Where ctime means creation time (Windows), the mtime of an edit still shows.
        return max(st.st_ctime_ns, st.st_mtime_ns) > since

    try:
        top = os.lstat(memory)
    except FileNotFoundError:
        return []
    changed = [MEMORY_DIR] if newer(top) else []
    for shard in os.scandir(memory):
        prefix = f"{MEMORY_DIR}/{shard.name}"
        if newer(shard.stat(follow_symlinks=False)):
            changed.append(prefix)
        if shard.is_dir(follow_symlinks=False):
            changed.extend(
                f"{prefix}/{entry.name}"
                for entry in os.scandir(shard.path)
                if newer(entry.stat(follow_symlinks=False))
            )
    return changed


# ctime, mtime, size and inode, packed: marshal loads 10k byte strings in a fraction of the
# time it takes for 10k tuples of large ints.
Signature = bytes
# A query's keyword matches in bulk (SearchIndex.raw_scored_docs): every document's id by
# number, the matching documents, their BM25 scores before rounding, the query's full match,
# and when asked each match's share of the query words' idf
RawScored = tuple[list[str], list[int], list[float], float | None, list[float] | None]
_SIGNATURE = struct.Struct("<qqQQ")


def _signature(st: os.stat_result) -> Signature:
    return _SIGNATURE.pack(st.st_ctime_ns, st.st_mtime_ns, st.st_size, st.st_ino)


def _settled(st: os.stat_result, before: int) -> bool:
    """Whether the file this ``lstat`` describes, taken after ``before``, must show another
    signature once written again (``derived.settled``)."""
    return settled(st.st_ctime_ns, st.st_mtime_ns, st.st_mode, before)


def _set_stamp(path: str, ns: int) -> None:
    if not os.path.exists(path):
        with open(path, "wb"):
            pass
    os.utime(path, ns=(ns, ns))


def _shares(
    files: list[tuple[str, Signature | None]],
) -> list[list[tuple[str, Signature | None]]]:
    """The record files split for one process each, where parallel building pays: each
    process reads, parses and indexes its share into a segment of its own (100k records on 2
    cores: 61 s in one process feeding Whoosh's ``MpWriter``, ~N s this way)."""
    processes = BUILDERS
    if (
        len(files) < PARALLEL_FROM
        or processes < 2
        or not sys.platform.startswith("linux")
        or not whoosh_compat.usable("segments")
    ):
        return [files]
    count = -(-len(files) // SHARE_MAX)  # shares of at most SHARE_MAX records,
    count = -(-count // processes) * processes  # as many for each builder process
    size = -(-len(files) // count)
    return [files[start : start + size] for start in range(0, len(files), size)]


class Progress(Protocol):
    """Where a long index job reports how far it is (a progress bar on a terminal)."""

    def update(self, count: int) -> None: ...

    def finish(self) -> None: ...


@contextlib.contextmanager
def _finishing(bar: Progress) -> Iterator[Progress]:
    try:
        yield bar
    finally:
        bar.finish()


class _Silent:
    def update(self, count: int) -> None:
        pass

    def finish(self) -> None:
        pass


def _index_share(
    writer: Any, share: tuple[Any, ...], tick: Callable[[int], None]
) -> tuple[Any, ...]:
    """Read, parse and add to ``writer`` one share of a rebuild's record files: (broken files,
    signatures of the files read, files read, records indexed). Runs in a builder process."""
    root, files = share
    broken: dict[str, str] = {}
    seen: dict[str, Signature] = {}
    reread = updated = done = 0
    for path, signature in files:
        data, record, problem = read_record_file(root, path)
        reread += 1
        done += 1
        if done == TICK_EVERY:
            tick(done)
            done = 0
        if data is None and problem is None:
            continue
        if problem is not None or data is None or record is None:
            broken[path] = str(problem)
            continue
        writer.add_document(**_document(path, record, _content_hash(data)))
        updated += 1
        if signature is not None:
            seen[path] = signature
    if done:
        tick(done)
    return broken, seen, reread, updated


def _content_hash(data: bytes) -> str:
    import hashlib

    return hashlib.sha1(data).hexdigest()


class SearchIndex(DerivedIndex[RefreshReport]):
    """The Whoosh index of one store's record files, kept in ``<state_dir>/index/``."""

    LAYOUT = Layout("index", INDEX_NAME, MANIFEST, SCHEMA_VERSION, "search index", _schema)

    def __init__(
        self, root: str, state_dir: str, locker: Callable[[], AbstractContextManager[object]]
    ):
        super().__init__(root, state_dir, locker)
        # (searcher, ids by document number) for the semantic paths: see ``_ids_by_docnum``
        self._ids: tuple[Any, builtins.list[str]] | None = None
        # (searcher, live document number by id): see ``_live_docs``
        self._mask: tuple[tuple[Any, str], set[int] | None] | None = None
        # (searcher, order by document number): see ``_orders``
        self._order: tuple[Any, array[int]] | None = None
        # ((searcher, the filters), the documents they select): see ``_selected``
        self._chosen: tuple[tuple[Any, str], builtins.list[int]] | None = None
        self._doc_of: tuple[Any, dict[str, int]] | None = None
        # (index folder, segment id, column) -> that segment's column: see ``_per_segment``
        self._columns: dict[tuple[Any, str, str], Any] = {}
        self._watcher: Watcher | None = None
        self._manifest: dict[str, Any] | None = None
        # path -> the signature its file had when the index's content for it was read
        self._seen: dict[str, Signature] | None = None
        self._seen_dirty = False
        # Signatures of the files the last ``_pending`` read, until the index holds their content
        self._verified: dict[str, Signature] = {}
        # Where the watch's journal stood when this refresh began: saved once it is done.
        self._journal_taken: journal.Position | None = None
        # Given (total, what), a Progress for a job over that many files; set by a front end
        # that shows progress (the CLI on a terminal).
        self.progress: Callable[[int, str], Progress] | None = None

    def _progress(self, total: int, what: str) -> Progress:
        if self.progress is None or not total:
            return _Silent()
        return self.progress(total, what)

    # -- storage

    def _well_formed(self, state: dict[str, Any]) -> dict[str, Any]:
        """A manifest damaged into another valid shape must cause a rebuild, not a crash."""
        broken = state.get("broken")
        if not isinstance(broken, dict):
            raise ValueError("damaged manifest")
        if not all(isinstance(k, str) and isinstance(v, str) for k, v in broken.items()):
            raise ValueError("damaged manifest")
        return state

    def _load_manifest(self) -> dict[str, Any] | None:
        """The manifest, with the stamp's time as ``since``: as saved, or as this process
        last saved it (read again once ``_manifest`` is dropped)."""
        if self._manifest is None:
            manifest = self._read_state()
            if manifest is not None:
                try:
                    manifest["since"] = os.stat(os.path.join(self.dir, STAMP)).st_mtime_ns
                except OSError:
                    manifest = None
            self._manifest = manifest
        return self._manifest

    def _save_manifest(self, manifest: dict[str, Any], folder: str | None = None) -> None:
        """Save ``manifest`` (the one ``_load_manifest`` gave, or a rebuild's for ``folder``)."""
        self._write_state({"broken": manifest["broken"]}, folder)
        _set_stamp(os.path.join(folder or self.dir, STAMP), manifest["since"])

    def _load_seen(self) -> dict[str, Signature]:
        """Signatures of files whose indexed content is known to be theirs (empty if unknown).

        Sound however stale: the index's content for a path changes only after its file was
        read again, which happens only once the file changed, and then its signature did too.
        """
        if self._seen is None:
            seen: dict[str, Signature] = {}
            try:
                with open(os.path.join(self.dir, SEEN), "rb") as handle:
                    loaded = marshal.load(handle)
                if isinstance(loaded, dict):
                    seen = loaded
            except (OSError, ValueError, EOFError, TypeError):
                pass
            self._seen = seen
            self._seen_dirty = False
        return self._seen

    def _remember(self) -> None:
        """The files the last ``_pending`` read are now in the index as read."""
        if self._verified and self._seen is not None:
            # Not loaded for a few files: they are read again while they stay newer than the
            # stamp, which costs less than loading and saving every signature.
            self._seen.update(self._verified)
            self._seen_dirty = True
        self._verified = {}

    def _save_seen(self, seen: dict[str, Signature], folder: str | None = None) -> None:
        try:
            write_atomically(os.path.join(folder or self.dir, SEEN), seen)
        except OSError:  # a read-only store: the files are re-read, as without it
            pass
        self._seen_dirty = False

    # -- watching

    def watch(self) -> bool:
        """Learn of changes from file-system notifications from now on (see
        :mod:`lantern_git.index.watch`); False where they are unavailable (every read sweeps)."""
        if self._watcher is None:
            from .watch import Watcher

            watcher = Watcher(self.root, os.path.dirname(self.dir))
            if not watcher.start():
                return False
            self._watcher = watcher
        return True

    @property
    def publishing(self) -> bool:
        """Whether this process's watch keeps the journal that one-shot commands beside it read
        (:mod:`lantern_git.index.journal`): False where it does not watch, or another process
        (``lantern mcp``, ``lantern serve``, ``lantern index watch``) keeps the journal."""
        return self._watcher is not None and self._watcher.publishing

    def stop_watching(self) -> None:
        watcher, self._watcher = self._watcher, None
        if watcher is not None:
            watcher.stop()

    # -- keeping in step with the files

    def refresh(self, meanwhile: Callable[[], object] | None = None) -> RefreshReport:
        """Bring the index up to date with the working tree's record files.

        ``meanwhile``, if given, is called while the file check runs (a query that is used
        only if ``unchanged`` comes back true), unless the index has to be rebuilt first.
        With ``LANTERN_DEBUG_INDEX=1``, says on stderr what the check did.
        """
        self._journal_taken = None
        try:
            report = self._refresh(meanwhile)
            if self._journal_taken is not None:
                # In step with the files up to the barrier: the next read starts there.
                journal.save_position(self.dir, self._journal_taken)
        finally:
            self._journal_taken = None
        done = (
            f"rebuilt from {report.scanned} files"
            if report.rebuilt
            else f"rebuilt 0 / re-read {report.reread} of {report.scanned} changed files"
        )
        debug(f"index: {done}{f' ({report.how})' if report.how else ''}")
        return report

    def _refresh(self, meanwhile: Callable[[], object] | None) -> RefreshReport:
        report = RefreshReport()
        started = clock.now_ns(self.dir)
        changes = self._watcher.take() if self._watcher is not None else None
        report.waited = changes is not None and changes.waited
        notified = changes.paths if changes is not None else None
        if changes is None or changes.unknown:
            # The stamp and the manifest on disk are the other processes' word too.
            self._manifest = None
        if self._watcher is None:
            # A watching process beside this one may say what changed (journal.py).
            taken = journal.take(os.path.dirname(self.dir), journal.load_position(self.dir))
            if taken is not None:
                self._journal_taken = taken.position
                notified = taken.paths
                report.how = "journal" if notified is not None else "swept"
        manifest = self._load_manifest()
        if manifest is None or not self._usable():
            return self.rebuild()
        memory = os.path.join(self.root, MEMORY_DIR)
        if os.path.islink(memory) or not os.path.isdir(memory):
            # No record folder: fine while the index is empty too; otherwise start over.
            if os.path.islink(memory) or manifest["broken"] or not self._empty():
                return self.rebuild()
            return report
        if notified is not None:
            # Notified of exactly these paths: check them, and leave the stamp where it is,
            # for it speaks of every file.
            report.how = report.how or "notified"
            changed = sorted(notified)
            report.scanned = len(changed)
            if not changed:
                report.broken = manifest["broken"]
                report.unchanged = True
                return report
            return self._catch_up(changed, manifest, started, report, sweep=False)
        if changes is not None:
            report.how = "swept"
        stamp = os.path.join(self.dir, STAMP)
        try:
            # From the table of contents: opening every segment only to count costs ~3 ms.
            count = whoosh_compat.doc_count_all(self._open())
        except Exception:  # a damaged segment shows first here
            return self._start_over()
        changed = changed_since(self.root, stamp, manifest["since"], count, meanwhile)
        report.scanned = len(changed)
        if not changed:
            report.broken = manifest["broken"]
            report.unchanged = True
            return report
        return self._catch_up(changed, manifest, started, report, sweep=True)

    def _catch_up(
        self,
        changed: list[str],
        manifest: dict[str, Any],
        started: int,
        report: RefreshReport,
        sweep: bool,
    ) -> RefreshReport:
        """Bring the index in step for the ``changed`` paths; after a ``sweep`` (which saw every
        file), the stamp moves to ``started``."""
        # Many files: rebuild, unless the index read most of them as they are now (a fresh
        # clone's second command: every file is newer than the first build's stamp, and all but
        # those written during that build show the signature it remembered).
        if len(changed) > REBUILD_ABOVE and self._unseen_above(changed, REBUILD_ABOVE):
            return self.rebuild()
        try:
            paths = self._affected(changed, manifest)
            updates, broken = self._pending(manifest, paths, report)
        except Exception:  # whoosh raises many kinds on a damaged index
            return self._start_over()
        if not updates and broken == manifest["broken"]:
            # Touched but unchanged (often lantern's own writes): no lock needed, and a
            # read-only store still lists. Writes under the lock only ever index fresher
            # content, so moving the stamp past what was just verified is safe.
            if sweep:
                try:
                    _set_stamp(os.path.join(self.dir, STAMP), started - STAMP_MARGIN_NS)
                except OSError:
                    pass
            self._remember()
            if self._seen_dirty and self._seen is not None:
                self._save_seen(self._seen)
            report.broken = manifest["broken"]
            return report
        with self._locked():
            self._manifest = None
            reloaded = self._load_manifest()
            if reloaded is None:
                return self.rebuild()
            manifest = reloaded
            try:
                self._apply(manifest, paths, report)
                if sweep:
                    manifest["since"] = started - STAMP_MARGIN_NS
                self._save_manifest(manifest)
                if self._seen_dirty and self._seen is not None:
                    self._save_seen(self._seen)
            except Exception:
                return self._start_over()
        report.broken = manifest["broken"]
        return report

    def _unseen_above(self, changed: builtins.list[str], limit: int) -> bool:
        """Whether more than ``limit`` of the ``changed`` paths do not show the signature the
        index remembers for them (one lstat each, ~0.3 s at 100k; a rebuild takes ~40 s)."""
        seen = self._load_seen()
        unseen = 0
        for path in changed:
            if path.count("/") != 2:
                continue  # a folder: its listing is compared with the index, which is cheap
            known = seen.get(path)
            if known is not None:
                try:
                    if _signature(os.lstat(os.path.join(self.root, path))) == known:
                        continue
                except OSError:
                    pass
            unseen += 1
            if unseen > limit:
                return True
        return False

    def _empty(self) -> bool:
        try:
            count: int = self._open().doc_count()
        except Exception:
            return False
        return count == 0

    def _affected(self, changed: list[str], manifest: dict[str, Any]) -> set[str]:
        """Record paths to look at again, from the changed files and folders."""
        paths: set[str] = set()
        folders: set[str] = set()
        for path in changed:
            parts = path.split("/")
            if len(parts) == 3:
                if parts[2].endswith(RECORD_SUFFIX) and not parts[2].startswith("."):
                    paths.add(path)
            elif len(parts) == 2:
                folders.add(parts[1])
            else:  # memory/ itself: shard folders may have come or gone
                try:
                    folders.update(os.listdir(os.path.join(self.root, MEMORY_DIR)))
                except FileNotFoundError:
                    pass
                folders.update(f"{n:02x}" for n in range(256))
        if not folders:
            return paths
        # A folder changed when an entry was created, removed or renamed: compare its listing
        # with what the index holds there.
        with contextlib.nullcontext(self._searcher()) as searcher:
            reader = searcher.reader()
            whole: dict[str, set[str]] | None = None
            if len(folders) > WALK_ALL_FROM:
                # Seeking each folder's prefix in the path terms costs more than one walk over
                # all of them (256 folders of 1k records: 29 ms against 3 ms).
                whole = {}
                for term in reader.expand_prefix("path", f"{MEMORY_DIR}/"):
                    text = term.decode() if isinstance(term, bytes) else term
                    whole.setdefault(text.split("/", 2)[1], set()).add(text)
            for shard in folders:
                prefix = f"{MEMORY_DIR}/{shard}/"
                try:
                    names = os.listdir(os.path.join(self.root, MEMORY_DIR, shard))
                except (FileNotFoundError, NotADirectoryError):
                    names = []
                on_disk = {
                    prefix + n for n in names if n.endswith(RECORD_SUFFIX) and not n.startswith(".")
                }
                if whole is not None:
                    indexed = whole.get(shard, set())
                else:
                    indexed = {
                        t.decode() if isinstance(t, bytes) else t
                        for t in reader.expand_prefix("path", prefix)
                    }
                indexed.update(p for p in manifest["broken"] if p.startswith(prefix))
                paths.update(on_disk ^ indexed)
        return paths

    def _apply(self, manifest: dict[str, Any], paths: Iterable[str], report: RefreshReport) -> None:
        """Re-read ``paths``; index those whose content differs from what the index holds."""
        updates, manifest["broken"] = self._pending(manifest, paths, report)
        if not updates:
            self._remember()
            return
        with self._changing() as changes:
            writer = changes()
            for path, record, digest, indexed in updates:
                if record is None:
                    writer.delete_by_term("path", path)
                    report.removed += 1
                elif indexed:
                    writer.update_document(**_document(path, record, digest or ""))
                    report.updated += 1
                else:
                    # Not in the index (checked under the writer lock, which every index
                    # writer holds): no delete, which would open a reader on every segment.
                    writer.add_document(**_document(path, record, digest or ""))
                    report.updated += 1
        self._remember()

    def _pending(
        self, manifest: dict[str, Any], paths: Iterable[str], report: RefreshReport
    ) -> tuple[builtins.list[tuple[str, Record | None, str | None, bool]], dict[str, str]]:
        """(index updates, new broken-file map) that bring ``paths`` in step with the files."""
        broken = dict(manifest["broken"])
        updates: list[tuple[str, Record | None, str | None, bool]] = []
        ordered = sorted(paths)
        # Reading a few files costs less than loading every file's signature (100k: ~15 ms),
        # which pays only when many files are to be checked (a fresh clone's second command).
        seen = self._load_seen() if len(ordered) >= SEEN_FROM or self._seen is not None else {}
        self._verified = {}
        shards: dict[str, bool] = {}

        def linked_shard(folder: str) -> bool:
            # A shard folder swapped for a link to itself keeps its files' signatures, but
            # its files are no longer read (they lie outside the store).
            if folder not in shards:
                shards[folder] = os.path.islink(os.path.join(self.root, folder))
            return shards[folder]

        bar = self._progress(len(ordered), "checking changed record files")
        skew = clock.offset_ns(self.dir)
        with contextlib.nullcontext(self._searcher()) as searcher, _finishing(bar):
            for number, path in enumerate(ordered, 1):
                if number % TICK_EVERY == 0:
                    bar.update(TICK_EVERY)
                # Taken before the lstat, which is taken before the read.
                before = time.time_ns() + skew
                try:
                    st: os.stat_result | None = os.lstat(os.path.join(self.root, path))
                except OSError:
                    st = None
                known = seen.pop(path, None)
                if (
                    st is not None
                    and known is not None
                    and known == _signature(st)
                    and not linked_shard(path.rpartition("/")[0])
                ):
                    # Not written since the index took in this very content (a fresh clone's
                    # files, all newer than the stamp of the build that read them).
                    seen[path] = known
                    continue
                if known is not None:
                    self._seen_dirty = True
                doc = searcher.document(path=path)
                if st is None and not os.path.lexists(os.path.join(self.root, path)):
                    if doc is not None or path in broken:
                        broken.pop(path, None)
                        updates.append((path, None, None, True))
                    continue
                data, record, found = read_record_file(self.root, path)
                report.reread += 1
                if found is not None or data is None or record is None:
                    problem = str(found or f"{path}: cannot be read")
                    if broken.get(path) != problem or doc is not None:
                        broken[path] = problem
                        updates.append((path, None, None, True))
                    continue
                digest = _content_hash(data)
                if st is not None and _settled(st, before):
                    # True once the index holds this content: ``_remember`` records it then.
                    self._verified[path] = _signature(st)
                if doc is not None and path not in broken and doc.get("digest") == digest:
                    continue
                broken.pop(path, None)
                updates.append((path, record, digest, doc is not None))
        return updates, broken

    def note_written(self, paths: Iterable[str]) -> None:
        """After lantern wrote ``paths`` (holding the writer lock): index exactly those files."""
        if self._watcher is not None:
            self._watcher.settle_git()
            if self._watcher.running:
                # Indexed by the next read, with whatever else changed by then, in one Whoosh
                # commit (~20 ms each): a write's own events name these paths to that read
                # anyway, and a process that stops first leaves them to the next one's sweep.
                self._watcher.note(paths)
                return
        manifest = self._load_manifest()
        if manifest is None or not self._usable():
            self.rebuild()
            return
        try:
            broken = dict(manifest["broken"])
            self._apply(manifest, paths, RefreshReport())
            if manifest["broken"] != broken:
                self._save_manifest(manifest)
        except Exception:
            self._start_over()

    def _build(self, started: int) -> RefreshReport:
        """Every record file read into a new index, in several processes for a large store."""
        report = RefreshReport(rebuilt=True)
        memory = os.path.join(self.root, MEMORY_DIR)
        if os.path.islink(memory):
            raise StoreError(f"{memory} is a symbolic link; lantern keeps records inside the store")
        scan = dict(record_files(self.root))
        report.scanned = len(scan)
        with self._new_folder() as (fresh, ix):
            # The lstat of each file was taken after ``started`` and before its read.
            files = [
                (path, _signature(st) if _settled(st, started) else None)
                for path, st in sorted(scan.items())
            ]
            shares = [(self.root, part) for part in _shares(files)]
            with _finishing(self._progress(len(files), "indexing record files")) as bar:
                if len(shares) > 1:
                    results = whoosh_compat.build_segments(
                        ix,
                        _index_share,
                        shares,
                        limitmb=1024,
                        progress=bar.update,
                        at_once=BUILDERS,
                    )
                else:
                    with (
                        whoosh_compat.no_collection(),
                        writing(lambda: whoosh_compat.building_writer(ix, limitmb=256)) as writer,
                    ):
                        results = [_index_share(writer(), shares[0], bar.update)]
            broken: dict[str, Any] = {}
            seen: dict[str, Signature] = {}
            for part_broken, part_seen, reread, updated in results:
                broken.update(part_broken)
                seen.update(part_seen)
                report.reread += reread
                report.updated += updated
            # Every file was read after ``started``; a write after it shows a ctime past
            # ``started`` less the filesystem's granularity. Where the record files' times carry
            # sub-millisecond digits that is the kernel's coarse clock tick, so only files written
            # in the last 0.1 s before the build look changed to the next check, not the last 3 s
            # (a fresh clone of 100k: 47k files re-checked by the second command, 1.3 s).
            fine_times = any(
                fine(st.st_ctime_ns, st.st_mtime_ns) for st in itertools.islice(scan.values(), 16)
            )
            margin = FINE_MARGIN_NS if fine_times else STAMP_MARGIN_NS
            manifest = {"v": SCHEMA_VERSION, "broken": broken, "since": started - margin}
            self._save_manifest(manifest, fresh)
            self._save_seen(seen, fresh)
        self._manifest = manifest
        self._seen = seen
        report.broken = broken
        return report

    # -- answering

    def list(self, query: RecordQuery) -> builtins.list[Hit]:
        return self._run(query, scored=False)

    def search(self, query: RecordQuery) -> builtins.list[Hit]:
        return self._run(query, scored=True)

    def fresh(
        self,
        query: RecordQuery,
        scored: bool,
        refresh: Callable[[Callable[[], object] | None], RefreshReport],
    ) -> builtins.list[Hit]:
        """``search`` (``scored``) or ``list`` of ``query`` once ``refresh`` (the workspace's:
        recovery, then :meth:`refresh`, warning of broken files) brought the index in step.

        The query runs while the freshness check's finds do (on two cores their time is
        hidden), and its answer is kept when no record file changed since the last check.
        """
        early: builtins.list[builtins.list[Hit]] = []

        def meanwhile() -> None:
            try:
                early.append(self.run_once(query, scored))
            except Exception:  # a damaged index: the normal path below rebuilds it
                pass

        report = refresh(meanwhile)
        if report.unchanged and early:
            return early[0]
        return self.search(query) if scored else self.list(query)

    def run_once(self, query: RecordQuery, scored: bool) -> builtins.list[Hit]:
        """``list`` or ``search`` without the rebuild on a damaged index: raises instead."""
        if query.limit == 0:
            return []
        return self._read_once(self._query(query, scored))

    def _run(self, query: RecordQuery, scored: bool) -> builtins.list[Hit]:
        if query.limit == 0:
            # Whoosh refuses limit=0, and its error would be taken for a damaged index.
            return []
        return self._answer(self._query(query, scored))

    def _query(self, query: RecordQuery, scored: bool) -> Callable[[], builtins.list[Hit]]:
        """The read that answers ``query``, its text parsed first (a text that cannot be read
        as a search is the caller's error, and no reason to look at the index)."""
        words = text_query(query.text) if query.text else None
        end = query.page.end

        def read() -> builtins.list[Hit]:
            searcher = self._searcher()
            expired = self._masked(searcher, _mask_query(query))
            if scored:
                if words is None:
                    return []
                allowed = self._allowed(searcher, query)
                return _best_scored(searcher, words, allowed, expired, query.offset, end)
            if words is None:
                chosen = self._selected(searcher, query)
            else:
                chosen = _selected(searcher, query, expired, self._orders, words)
            docs = _first_in_order(chosen, self._orders(searcher), end, _id_columns(searcher))
            return [
                Hit(_record(searcher.stored_fields(docnum)["doc"]))
                for docnum in docs[query.offset : end]
            ]

        return read

    # -- for derived state kept beside the index (vectors.py)

    def digests(self) -> dict[str, str]:
        """Every indexed record's id -> the first 64 bits of its file's content hash as
        indexed (16 hex digits): from the id and digest columns, not the stored records."""

        def read() -> dict[str, str]:
            searcher = self._searcher()
            id_of = self._ids_by_docnum(searcher)
            found: dict[str, str] = {}
            for reader, offset in searcher.reader().leaf_readers():
                count = reader.doc_count_all()
                if not count:
                    continue
                keys = self._per_segment(reader, "digest", _digest_keys)
                ids = id_of[offset : offset + count]
                pairs: Iterable[tuple[str, str]]
                if reader.has_deletions():
                    deleted = whoosh_compat.deleted_docs(reader)
                    pairs = ((ids[n], key) for n, key in enumerate(keys) if n not in deleted)
                else:
                    pairs = zip(ids, keys)
                found.update(pairs)
            return found

        return self._answer(read)

    def records(self, ids: Iterable[str]) -> dict[str, Record]:
        """The indexed records with these ids (those the index holds), by id."""

        wanted = builtins.list(ids)

        def read() -> dict[str, Record]:
            searcher = self._searcher()
            found = {}
            if len(wanted) > LOOKUPS_BELOW:
                # One pass over every stored document costs less than this many lookups.
                chosen = set(wanted)
                for fields in searcher.reader().all_stored_fields():
                    if fields["id"] in chosen:
                        found[fields["id"]] = _record(fields["doc"])
                return found
            doc_of = self._live_docs(searcher)
            for record_id in wanted:
                docnum = doc_of.get(record_id)
                if docnum is not None:
                    found[record_id] = _record(searcher.stored_fields(docnum)["doc"])
            return found

        return self._answer(read)

    def matching_docs(self, query: RecordQuery) -> tuple[builtins.list[str], builtins.list[int]]:
        """(every document's id by document number, kept while the index is unchanged; the
        documents ``query``'s filters select): :meth:`matching_ids` without building the
        list of ids, for a caller that maps documents itself."""

        def read() -> tuple[builtins.list[str], builtins.list[int]]:
            searcher = self._searcher()
            return self._ids_by_docnum(searcher), builtins.list(self._selected(searcher, query))

        return self._answer(read)

    def matching_ids(self, query: RecordQuery) -> builtins.list[str]:
        """The ids of the records ``query``'s filters select (its text, order and page
        aside): the candidates a semantic ranking chooses among."""

        def read() -> builtins.list[str]:
            searcher = self._searcher()
            id_of = self._ids_by_docnum(searcher)
            return [id_of[docnum] for docnum in self._selected(searcher, query)]

        return self._answer(read)

    def count(self, query: RecordQuery) -> int:
        """How many records ``query``'s filters select (its text, order and page aside):
        ``len(matching_ids(query))`` without mapping the documents to ids."""
        return self._answer(lambda: len(self._selected(self._searcher(), query)))

    def scored_ids(self, query: RecordQuery) -> builtins.list[tuple[str, float]]:
        """Every record matching ``query`` (text and filters) as (id, BM25 score), best first,
        ties by id: the keyword half of a hybrid ranking, without loading the records."""

        def read() -> builtins.list[tuple[str, float]]:
            if not query.text:
                return []
            searcher = self._searcher()
            expired = self._masked(searcher, _mask_query(query))
            allowed = self._allowed(searcher, query)
            found = bm25.scored(searcher, text_query(query.text), allowed, expired)
            id_of = self._ids_by_docnum(searcher)
            scored = [(id_of[docnum], score) for score, docnum in found]
            scored.sort(key=lambda item: (-item[1], item[0]))
            return scored

        return self._answer(read)

    def raw_scored_docs(self, query: RecordQuery, shares: bool = False) -> RawScored:
        """(every document's id by document number, as :meth:`matching_docs` gives it; the
        documents matching ``query``, text and filters; their BM25 scores before rounding;
        the query's full match, ``bm25.full_match``, None without text; with ``shares``, each
        match's share of the query words' idf over the documents the filters select,
        ``bm25.idf_shares``, else None): :meth:`scored_ids` without rounding, sorting or
        mapping every match to its id, for hybrid search, which ranks them in bulk and rounds
        only its page's."""

        def read() -> RawScored:
            searcher = self._searcher()
            id_of = self._ids_by_docnum(searcher)
            if not query.text:
                return id_of, [], [], None, [] if shares else None
            expired = self._masked(searcher, _mask_query(query))
            allowed = self._allowed(searcher, query)
            parsed = text_query(query.text)
            docs, scores, full = bm25.raw_scored(searcher, parsed, allowed, expired)
            held = None
            if shares:
                by_doc = bm25.idf_shares(searcher, query.text, allowed)
                held = list(map(by_doc.get, docs, repeat(0.0)))
            return id_of, docs, scores, full, held

        return self._answer(read)

    def words_held(self, text: str, docs: builtins.list[int]) -> tuple[int, builtins.list[int]]:
        """(how many words the query ``text`` has as typed; how many of them each of ``docs``,
        document numbers as :meth:`raw_scored_docs` gives them, holds): ``bm25.words_held``."""

        def read() -> tuple[int, builtins.list[int]]:
            words, held = bm25.words_held(self._searcher(), text)
            return words, list(map(held.get, docs, repeat(0)))

        return self._answer(read)

    def _masked(self, searcher: Any, mask: Any) -> set[int] | None:
        """``_mask_docs``, kept for the last searcher and mask asked about: a hybrid search
        asks twice (candidates, then keyword scores) within the same second."""
        key = (searcher, repr(mask))
        kept = self._mask
        if kept is not None and kept[0] == key:
            return kept[1]
        found = _mask_docs(searcher, mask)
        self._mask = (key, found)
        return found

    def _selected(self, searcher: Any, query: RecordQuery) -> builtins.list[int]:
        """The documents ``query``'s filters select, less the expired and the statuses it
        leaves out (the module's ``_selected``), kept for the last searcher and filters asked
        about: a records page lists, then counts, the same documents."""
        mask = _mask_query(query)
        key = (searcher, repr((_filter_query(query), mask, query.min_priority, query.min_urgency)))
        kept = self._chosen
        if kept is not None and kept[0] == key:
            return kept[1]
        found = _selected(searcher, query, self._masked(searcher, mask), self._orders)
        self._chosen = (key, found)
        return found

    def _allowed(self, searcher: Any, query: RecordQuery) -> set[int] | None:
        """The documents ``query``'s filters select, as a set, the expired and the statuses
        left out included (a search's statistics are over them); None for no filter."""
        if _unfiltered(query):
            return None
        return set(_selected(searcher, query, None, self._orders))

    def _orders(self, searcher: Any) -> array[int]:
        """Every document's ``order`` by document number, read from the column segment by
        segment (see ``_per_segment``), kept while the searcher is."""
        if self._order is not None and self._order[0] is searcher:
            return self._order[1]
        self._keep_columns_of(searcher)
        orders = array("Q")
        for reader in _leaves(searcher):
            orders.extend(self._per_segment(reader, "order", _order_column))
        self._order = (searcher, orders)
        return orders

    def _live_docs(self, searcher: Any) -> dict[str, int]:
        """Each live record's document number by id, kept while the searcher is (a lookup
        of the id term costs ~2 ms a record; this dictionary, built once, nothing)."""
        if self._doc_of is not None and self._doc_of[0] is searcher:
            return self._doc_of[1]
        id_of = self._ids_by_docnum(searcher)
        doc_of = {id_of[docnum]: docnum for docnum in _matching(searcher, Q.Every())}
        self._doc_of = (searcher, doc_of)
        return doc_of

    def _ids_by_docnum(self, searcher: Any) -> builtins.list[str]:
        """Every document's id by document number, read from the id column (10k: 6 ms; their
        stored fields one by one: 170 ms), kept while the searcher is."""
        if self._ids is not None and self._ids[0] is searcher:
            return self._ids[1]
        self._keep_columns_of(searcher)
        ids: builtins.list[str] = []
        for reader, offset in searcher.reader().leaf_readers():
            if not reader.doc_count_all():
                continue
            if offset != len(ids):
                raise ValueError("segment document numbers are not contiguous")
            ids.extend(self._per_segment(reader, "id", lambda r: list(r.column_reader("id"))))
        self._ids = (searcher, ids)
        return ids

    def _per_segment(self, reader: Any, what: str, read: Callable[[Any], Any]) -> Any:
        """``read(reader)``, kept by segment: a segment's columns never change (a delete only
        marks documents), so after a write only the new segment is read (the id column at 100k:
        ~100 ms). Kept for the segments of the last searcher asked about (and the index folder,
        which a rebuild replaces)."""
        segment = reader.segment()
        if segment is None:
            return read(reader)
        key = (self._folder, segment.segment_id(), what)
        found = self._columns.get(key)
        if found is None:
            found = self._columns[key] = read(reader)
        return found

    def _keep_columns_of(self, searcher: Any) -> None:
        """Forget the kept columns of segments no longer in the index (merged or rebuilt)."""
        live = set()
        for reader, _ in searcher.reader().leaf_readers():
            segment = reader.segment()
            if segment is not None:
                live.add((self._folder, segment.segment_id()))
        self._columns = {k: v for k, v in self._columns.items() if k[:2] in live}

    def mentioned(self) -> builtins.list[str]:
        """Every term a record names or links (its ``entities`` keys, its ``[[link]]``
        targets), from the index's lexicon: no record is read. Answers from the index as it is
        (call :meth:`refresh` first)."""

        def read() -> builtins.list[str]:
            terms = self._searcher().lexicon("mentions")
            return [t.decode() if isinstance(t, bytes) else t for t in terms]

        return self._answer(read)

    def mention_docs(self, query: RecordQuery) -> dict[str, frozenset[int]]:
        """Each term records name or link (:meth:`mentioned`) -> the documents holding it among
        those ``query``'s filters select, for counting many entities' records at once (``entity
        list``: 1k count queries took ~100 s at 100k records). Document numbers are good for
        comparing within one answer only."""

        def read() -> dict[str, frozenset[int]]:
            searcher = self._searcher()
            chosen = set(self._selected(searcher, query))
            found: dict[str, frozenset[int]] = {}
            for term in searcher.lexicon("mentions"):
                text = term.decode() if isinstance(term, bytes) else term
                docs = chosen.intersection(searcher.docs_for_query(Q.Term("mentions", text)))
                if docs:
                    found[text] = frozenset(docs)
            return found

        return self._answer(read)

    def counts(self) -> dict[str, dict[str, int]]:
        """Record counts by status and by kind."""
        return self._answer(self._count)

    def _count(self) -> dict[str, dict[str, int]]:
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


def _document(path: str, record: Record, digest: str) -> dict[str, Any]:
    return {
        "path": path,
        "id": record.id,
        "kind": record.kind,
        "scope": record.scope,
        "status": record.status,
        # None: no field at all (Whoosh leaves it out), so no terms for a record that never
        # expires, which no range of past times could match anyway.
        "expires_at": record.expires_at,
        "order": order_key(record),
        "content": record.content,
        "mentions": ",".join(mention_terms(record.entities, record.content)),
        "cites": " ".join(sorted(cited_sources(record))),
        "doc": json.dumps(record.to_dict(), ensure_ascii=False),
        "digest": digest,
        "digest_key": _digest_key(digest),
    }


def _digest_keys(reader: Any) -> builtins.list[str]:
    """A segment's digest keys as 16 hex digits each, by document number."""
    return [f"{key:016x}" for key in whoosh_compat.numeric_column(reader, "digest_key")]


def _digest_key(digest: str) -> int:
    """A digest's first 64 bits (0 for none): a changed file keeps them by a 2**-64 chance."""
    try:
        return int(digest[:16], 16)
    except ValueError:
        return 0


def _record(doc: str) -> Record:
    data = json.loads(doc)
    data["source_refs"] = tuple(data["source_refs"])
    data["entities"] = tuple(data.get("entities", ()))
    return Record(**data)


def search_records(records: Iterable[Record], query: RecordQuery) -> builtins.list[Hit]:
    """``query`` (with its text) answered over ``records`` alone, as the store's index would
    answer it were they its records: the same analyzer, filters, BM25F scores and order. The
    records go into an index in memory built for this one answer (``--include-pending``)."""
    if query.limit == 0 or not query.text:
        return []
    ix = whoosh_compat.memory_index(_schema())
    writer = ix.writer()
    for record in records:
        # The stored object is the plain record's (a PendingVersion adds "pending"); the caller
        # maps each hit back to the record it gave.
        document = _document(record.id, record, "")
        document["doc"] = json.dumps(Record.to_dict(record), ensure_ascii=False)
        writer.add_document(**document)
    writer.commit()
    end = query.page.end
    with ix.searcher() as searcher:
        expired = _mask_docs(searcher, _mask_query(query))
        words = text_query(query.text)

        def orders(searcher: Any) -> array[int]:
            return array("Q", chain.from_iterable(map(_order_column, _leaves(searcher))))

        allowed = None if _unfiltered(query) else set(_selected(searcher, query, None, orders))
        return _best_scored(searcher, words, allowed, expired, query.offset, end)


def _order_column(reader: Any) -> array[int]:
    return whoosh_compat.numeric_column(reader, "order")


def _leaves(searcher: Any) -> list[Any]:
    """The searcher's segment readers that hold documents, their numbers contiguous."""
    found = []
    count = 0
    for reader, offset in searcher.reader().leaf_readers():
        if not reader.doc_count_all():
            continue  # an empty index's reader has no columns at all
        if offset != count:
            raise ValueError("segment document numbers are not contiguous")
        count += reader.doc_count_all()
        found.append(reader)
    return found


def _unfiltered(query: RecordQuery) -> bool:
    """Whether ``query`` selects every document (before the statuses and expired it leaves
    out, which a search's statistics count)."""
    return isinstance(_filter_query(query), Q.Every) and (
        order_minimums(query.min_priority, query.min_urgency) is None
    )


def _selected(
    searcher: Any,
    query: RecordQuery,
    mask: set[int] | None,
    orders: Callable[[Any], array[int]],
    words: Any = None,
) -> list[int]:
    """The documents ``query``'s filters select (and ``words``, when given, match), less those
    in ``mask``, ascending. Status, kind and scope are terms; the minimum priority and urgency
    are read from the ``order`` column (``orders(searcher)``), which holds both."""
    filters = _filter_query(query)
    docs = _matching(searcher, filters if words is None else Q.And([filters, words]))
    if mask:
        docs = filterfalse(mask.__contains__, docs)
    meets = order_minimums(query.min_priority, query.min_urgency)
    if meets is None:
        return list(docs)
    order_of = orders(searcher).__getitem__
    return [docnum for docnum in docs if meets(order_of(docnum))]


def _filter_query(query: RecordQuery) -> Any:
    """The filters held as terms: status, kind, scope and the source cited (``_selected`` adds
    the minimums)."""
    parts = []
    if query.status != "all" and query.status != "active":
        parts.append(Q.Term("status", query.status))
    if query.kinds:
        parts.append(Q.Or([Q.Term("kind", kind) for kind in query.kinds]))
    if query.scopes:
        options = [
            Q.Prefix("scope", s[:-1]) if s.endswith("*") else Q.Term("scope", s)
            for s in query.scopes
        ]
        parts.append(Q.Or(options) if len(options) > 1 else options[0])
    if query.mentions:
        terms = [Q.Term("mentions", term) for term in query.mentions]
        parts.append(Q.Or(terms) if len(terms) > 1 else terms[0])
    if query.cites is not None:
        parts.append(Q.Term("cites", query.cites))
    if not parts:
        return Q.Every()
    return Q.And(parts) if len(parts) > 1 else parts[0]


def _mask_query(query: RecordQuery) -> Any:
    """The records to leave out, as a mask: those that expired, and for the usual "active"
    listing those archived or superseded. Both are few next to the rest, so excluding them is
    far cheaper than intersecting with a term that nearly every record has (the whole posting
    list of status:active was walked on every list). (Whoosh's AndNot misses some of them, so
    it is not used.)"""
    parts: list[Any] = []
    if query.status == "active":
        parts.extend(Q.Term("status", other) for other in STATUSES if other != "active")
    if not query.include_expired:
        now = int(time.time()) if query.now is None else query.now
        parts.append(Q.NumericRange("expires_at", None, now))
    if not parts:
        return None
    return Q.Or(parts) if len(parts) > 1 else parts[0]


def _mask_docs(searcher: Any, mask: Any) -> set[int] | None:
    """The documents ``mask`` matches, as a set. Given the query, Whoosh would find them with
    a union matcher that walks an array the size of the whole index in Python, every time;
    the same documents come straight from the postings of the terms the query covers."""
    if mask is None:
        return None
    docs: set[int] = set()
    for leaf in mask.simplify(searcher.reader()).leaves():
        docs.update(searcher.docs_for_query(leaf))
    return docs


def _id_columns(searcher: Any) -> list[tuple[int, Any]]:
    """(first document number, the segment's id column) of each segment holding documents."""
    return [
        (offset, reader.column_reader("id", translate=False))
        for reader, offset in searcher.reader().leaf_readers()
        if reader.doc_count_all()
    ]


def _id_key(id_columns: list[tuple[int, Any]]) -> Callable[[int], bytes]:
    """A document's id as its column sorts it (the id's bytes: ids are ASCII, so they sort as
    the ids do), by document number, from ``_id_columns``."""
    starts = [offset for offset, _ in id_columns]

    def id_of(docnum: int) -> bytes:
        offset, column = id_columns[bisect_right(starts, docnum) - 1]
        key: bytes = column.sort_key(docnum - offset)
        return key

    return id_of


def _first_in_order(
    docs: list[int], orders: array[int], end: int | None, id_columns: list[tuple[int, Any]]
) -> list[int]:
    """The first ``end`` of ``docs`` (ascending document numbers; all if None) in list order:
    by ``order`` (``orders``, by document number), then ``id`` (``id_columns``, as
    ``_id_columns`` gives them), then document number, as Whoosh sorts with
    ``sortedby=MultiFacet([FieldFacet("order"), FieldFacet("id")])``. Whoosh computes that key
    in Python for every match, 100k of them on a store's default list (1.0 of its 1.4 s); here
    the ``order`` column is read whole as an array, the ``end``-th smallest value bounds the
    candidates, and ``id`` is read only to break ties among equal ``order`` values."""
    if end == 0:
        return []
    order_of = orders.__getitem__
    if end is not None and end < len(docs):
        # Every document ranked within the first ``end`` has an order value at most the
        # ``end``-th smallest; ties at that value are all kept for the id tie-break below.
        keys = list(map(order_of, docs))
        bound = heapq.nsmallest(end, keys)[-1]
        docs = list(compress(docs, map(bound.__ge__, keys)))
    else:
        docs = list(docs)  # ascending document numbers: stable sorts keep the last tie-break
    docs.sort(key=order_of)
    id_of = _id_key(id_columns)
    ranked: list[int] = []
    for _, group in groupby(docs, key=order_of):
        run = list(group)
        if len(run) > 1:
            run.sort(key=id_of)
        ranked.extend(run)
    return ranked[:end]


# Up to this many hits past a keyword page's end (ties at its last score) have their records
# loaded to be put in order by id; more, and the id columns are opened instead (~0.3 ms).
TIES_LOADED = 16


def _best_scored(
    searcher: Any,
    text_query: Any,
    allowed: set[int] | None,
    mask: set[int] | None,
    offset: int,
    end: int | None,
) -> list[Hit]:
    """Hits ``offset:end`` by score (lantern's BM25, ``bm25.py``) among ``allowed`` (None:
    all), then id: only the page's records are loaded where more than ``TIES_LOADED`` tie at
    its last score (put in order by the id column: a common word's page ties dozens), else the
    page's and the ties'."""
    scored = bm25.scored(searcher, text_query, allowed, mask, end)
    if end is not None and len(scored) > end + TIES_LOADED:
        id_of = _id_key(_id_columns(searcher))
        scored.sort(key=lambda item: (-item[0], id_of(item[1])))
        return [
            Hit(_record(searcher.stored_fields(docnum)["doc"]), score)
            for score, docnum in scored[offset:end]
        ]
    hits = [Hit(_record(searcher.stored_fields(docnum)["doc"]), score) for score, docnum in scored]
    hits.sort(key=lambda h: (-(h.score or 0.0), h.record.id))
    return hits[offset:end]


def _matching(searcher: Any, query: Any) -> Iterable[int]:
    """The documents ``query`` matches. For ``Every()`` (a list with no filter), all those not
    deleted, from each segment's set of deleted documents; Whoosh asks ``is_deleted`` of each
    document in a Python generator (35 ms at 100k)."""
    if not (isinstance(query, Q.Every) and query.fieldname is None):
        matched: Iterable[int] = searcher.docs_for_query(query)
        return matched
    parts: list[Iterable[int]] = []
    for reader, offset in searcher.reader().leaf_readers():
        docs: Iterable[int] = range(offset, offset + reader.doc_count_all())
        if reader.has_deletions():
            deleted = {offset + docnum for docnum in whoosh_compat.deleted_docs(reader)}
            docs = filterfalse(deleted.__contains__, docs)
        parts.append(docs)
    return chain.from_iterable(parts)
