"""The Store: the library API that the CLI and the MCP server are thin layers over.

A store is a git repository holding ``lantern.yaml``, ``memory/<aa>/<id>.md`` record files, and a
local ``.lantern/`` folder of derived state (search index, lock, write journal). The files are
the truth; every write is one git commit carrying provenance trailers.

The Store hands back its three parts, each the real home of its methods: ``store.records``
(:class:`~lantern_git.memory.records.Records`, the memory part), ``store.sources``
(:class:`~lantern_git.evidence.sources.Sources`, the evidence part) and ``store.workspace``
(:class:`~lantern_git.workspace.workspace.Workspace`: the folder, git, the lock, the indexes, the
write path). The parts each take the workspace and never each other: the Store hands the records
the sources' pinning and resolving (as :class:`~lantern_git.workspace.workspace.Citations`), and
the sources' verify the records it checks. The Store itself keeps only what spans the store:
opening, creating and cloning it, closing it, the write transaction, its status, review and
sync. The record methods are also the Store's own (``store.add`` is ``store.records.add``):
the flat API every release has promised (docs/library.md), each a plain call of the record
part, as are the few workspace attributes and methods the surfaces and tests read.
"""

from __future__ import annotations

import builtins
import os
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ParamSpec, TypeVar

from .core.fields import (
    DEFAULT_CONFIDENCE,
    DEFAULT_PRIORITY,
    DEFAULT_SCOPE,
    DEFAULT_URGENCY,
    DUPE_THRESHOLD,
    UNSET,
)
from .errors import InvalidInput, NoStore
from .memory.records import Records
from .model.record_file import count_records
from .workspace.migrations import MARKER
from .workspace.workspace import Workspace, locate_store

if TYPE_CHECKING:
    from .core.fields import Unset
    from .core.written import Written
    from .entities.entities import Entities
    from .evidence.sources import Sources
    from .git.identity import Identity
    from .git.repo import GitRepo
    from .index.chunks import ChunkIndex
    from .index.search import Progress, RefreshReport, SearchIndex
    from .index.vectors import Vectors
    from .memory.checker import CheckReport, HandCommit
    from .memory.editing import EditSession
    from .memory.history import HistoryEntry, LogEntry, RecordHistory
    from .memory.records import Deletion
    from .memory.revert import RevertResult
    from .memory.timetravel import RecordDiff
    from .memory.transfer import ImportResult, RecordExport
    from .model.query import DupePair, Hit, RecordQuery
    from .model.record import Record
    from .review import KeptReviewList, ReviewDecision, ReviewList
    from .sync import SyncReport
    from .workspace.transaction import WriteTransaction
    from .workspace.workspace import InitResult

P = ParamSpec("P")
T = TypeVar("T")


@dataclass
class CloneResult:
    """``lantern clone``: where the clone is, and what was set up in its ``.git/config``."""

    url: str
    path: str
    branch: str | None
    head: str | None
    records: int
    registered_merge_driver: bool
    set_pull_rebase: bool

    def to_dict(self) -> dict[str, Any]:
        return {
            "url": self.url,
            "path": self.path,
            "branch": self.branch,
            "head": self.head,
            "records": self.records,
            "registered_merge_driver": self.registered_merge_driver,
            "set_pull_rebase": self.set_pull_rebase,
        }


class Store:
    """A lantern store. Open one with :meth:`open`, :meth:`discover` or :meth:`init`."""

    def __init__(
        self,
        root: str,
        *,
        actor: str = "api",
        author: str | None = None,
        create_on_write: bool = False,
        warn: Callable[[str], None] | None = None,
        watch: bool = False,
        review: bool | None = None,
        review_name: str | None = None,
        read_only: bool = False,
    ):
        self.workspace = Workspace(
            root,
            actor=actor,
            author=author,
            create_on_write=create_on_write,
            warn=warn,
            watch=watch,
            review=review,
            review_name=review_name,
            read_only=read_only,
        )
        self.records = Records(self.workspace, lambda: self.sources, self._pending_versions)
        self._sources: Sources | None = None
        self._entities: Entities | None = None
        # The review list kept for the commits it was read from (made on first use: review
        # imports pygit2, which a CLI command that never reviews does not load).
        self._reviewed: KeptReviewList | None = None
        # Set by :meth:`clone`: what the clone set up.
        self.cloned: CloneResult | None = None

    # ------------------------------------------------------------------ opening

    @classmethod
    def open(cls, root: str, **kwargs: Any) -> Store:
        return cls(root, **kwargs)

    @classmethod
    def discover(cls, explicit: str | None = None, **kwargs: Any) -> Store:
        path, is_default = locate_store(explicit)
        return cls(path, create_on_write=is_default, **kwargs)

    @classmethod
    def init(cls, root: str, **kwargs: Any) -> Store:
        store = cls(root, create_on_write=True, **kwargs)
        store.initialize()
        return store

    @classmethod
    def clone(cls, url: str, path: str | None = None, **kwargs: Any) -> Store:
        """``git clone URL PATH``, then the record merge driver and a pull strategy registered
        in the clone's ``.git/config`` (git config is not cloned); ``store.cloned`` says what
        was done. PATH defaults to the folder ``git clone URL`` makes.

        A PATH that exists and is not an empty folder is refused (``destination_exists``); a
        repository that is not a lantern store is removed again and refused (``no_store``).
        """
        import shutil

        from .git.config import ensure_merge_driver, ensure_pull_strategy
        from .git.remote import clone, clone_name

        if not isinstance(url, str) or not url.strip():
            raise InvalidInput("url: must not be empty", code="invalid_url")
        target = os.path.abspath(os.path.expanduser(path or clone_name(url.strip())))
        existed = os.path.lexists(target)
        if existed and (not os.path.isdir(target) or os.listdir(target)):
            raise InvalidInput(
                f"path: {target} already exists and is not an empty folder; "
                "give another PATH (lantern clone URL PATH)",
                code="destination_exists",
            )
        clone(url.strip(), target)
        if not os.path.isfile(os.path.join(target, MARKER)):
            # What we cloned is not a store: leave the folder as it was before.
            if existed:
                for name in os.listdir(target):
                    full = os.path.join(target, name)
                    if os.path.isdir(full) and not os.path.islink(full):
                        shutil.rmtree(full)
                    else:
                        os.unlink(full)
            else:
                shutil.rmtree(target)
            raise NoStore(
                f"{url} is not a lantern store (no {MARKER} on its default branch"
                " — an empty repository?); nothing was kept. Push a store to it first "
                "(lantern sync on the host that has one), or clone it with git and run lantern init"
            )
        from .git.repo import GitRepo

        git = GitRepo(target)
        registered = ensure_merge_driver(git.repo, kwargs.get("warn"))
        pull = ensure_pull_strategy(git.repo, kwargs.get("warn"))
        store = cls(target, **kwargs)
        info = store.git.branch_info()
        store.cloned = CloneResult(
            url=url.strip(),
            path=target,
            branch=info["branch"],
            head=info["head"],
            records=count_records(store.git),
            registered_merge_driver=registered,
            set_pull_rebase=pull,
        )
        return store

    @property
    def sources(self) -> Sources:
        """The store's evidence: ingest, append, show, search, remove sources; pin and verify
        the references records make to them (:class:`~lantern_git.evidence.sources.Sources`)."""
        if self._sources is None:
            from .evidence.sources import Sources

            self._sources = Sources(self.workspace, _EveryRecord(self.records))
        return self._sources

    @property
    def entities(self) -> Entities:
        """The store's entities: add, update, rename, list, show
        (:class:`~lantern_git.entities.entities.Entities`); a rename rewrites the records that
        name the old key through :class:`~lantern_git.memory.mentions.RecordMentions`."""
        if self._entities is None:
            from .entities.entities import Entities
            from .memory.mentions import RecordMentions

            self._entities = Entities(self.workspace, RecordMentions())
        return self._entities

    def entity_list(self, type: str | None = None) -> builtins.list[dict[str, Any]]:
        """Every entity key, files and mentions alike (a key records name in ``entities`` or
        link as ``[[TYPE:NAME]]`` without a file), by key: its name, whether it has a file,
        and how many active records and source chunks ``entity_show`` would answer."""

        from .errors import ValidationError
        from .model.entity_keys import check_key, label_term
        from .model.query import RecordQuery

        index = self.entities.index()
        files = {e.key: e for e in index.entities(type and type.lower())} if index else {}
        chunk_counts = index.chunk_counts() if index is not None else {}
        keys = set(files)
        # Each term records name or link -> the active records holding it, read at once.
        mentions: dict[str, frozenset[int]] = {}
        if self.workspace.exists:
            self.workspace.refresh()
            mentions = self.workspace.index.mention_docs(RecordQuery())
            for term in self.workspace.index.mentioned():
                try:
                    key = check_key(term)
                except ValidationError:
                    continue  # a link by name or alias, not a key
                if type is None or key.split(":", 1)[0] == type.lower():
                    keys.add(key)
        out = []
        for key in sorted(keys):
            entity = files.get(key)
            labels = entity.labels if entity is not None else (key,)
            records = frozenset().union(*(mentions.get(label_term(n), ()) for n in labels))
            chunks = chunk_counts.get(key, 0) if entity else len(self.sources.holding(labels))
            out.append(
                {
                    "key": key,
                    "name": entity.name if entity is not None else key.split(":", 1)[1],
                    "file": entity is not None,
                    "record_count": len(records),
                    "chunk_count": chunks,
                }
            )
        return out

    def entity_show(self, key: str, query: RecordQuery | None = None) -> dict[str, Any]:
        """One entity, the records that name or ``[[link]]`` it (by key, name or alias), in the
        list order, ``query``'s filters and page applied, with their count (all pages), and the
        references of the source chunks that hold its key, name or an alias as a phrase.
        ``entity`` is None for a key no file holds (a mention); a key that neither a file nor
        a record names is :class:`~lantern_git.errors.NotFound`. The names and the chunks come
        from the entity index, the records from the record index's mentions."""
        import dataclasses

        from .errors import NotFound
        from .model.entity_keys import check_key, label_term
        from .model.query import RecordQuery

        key = check_key(key)
        index = self.entities.index()
        entity = index.entity(key) if index is not None else None
        labels = entity.labels if entity is not None else (key,)
        query = dataclasses.replace(
            query or RecordQuery(), mentions=tuple(label_term(label) for label in labels)
        )
        count = self.records.count(dataclasses.replace(query, limit=None, offset=0))
        if entity is not None and index is not None:
            chunks = index.chunks_holding(key)
        else:  # a mention: the chunks holding its key, asked of the chunk index
            chunks = [hit.ref for hit in self.sources.holding(labels)]
        if entity is None and count == 0 and not chunks:
            raise NotFound(f"no entity file, record or source names {key}")
        return {
            "key": key,
            "entity": entity.to_dict() if entity is not None else None,
            "records": self.records.list(query),
            "record_count": count,
            "chunks": chunks,
            "chunk_count": len(chunks),
        }

    def _pending_versions(self) -> Mapping[str, Record | None]:
        """What the records read with ``include_pending``: every record a review branch
        changes, as it would be once accepted (None: removed there)."""
        from .review import pending_versions

        return pending_versions(self.review_list())

    # ------------------------------------------------------------------ the store as a whole

    def close(self) -> None:
        """Stop watching the files and close the indexes (the store can be opened again)."""
        self.workspace.close()

    def initialize(self) -> InitResult:
        """Create the store in its folder (``lantern init``): see :meth:`Workspace.initialize
        <lantern_git.workspace.workspace.Workspace.initialize>`."""
        return self.workspace.initialize()

    def transaction(
        self, *, require_head: bool = True, review: bool = True, branch: str | None = None
    ) -> AbstractContextManager[WriteTransaction]:
        """The one write path (:meth:`Workspace.transaction
        <lantern_git.workspace.workspace.Workspace.transaction>`)."""
        return self.workspace.transaction(require_head=require_head, review=review, branch=branch)

    def written(self, write: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs) -> Written[T]:
        """One write and what it did (:meth:`Workspace.written
        <lantern_git.workspace.workspace.Workspace.written>`)."""
        return self.workspace.written(write, *args, **kwargs)

    def status(self) -> dict[str, Any]:
        """``lantern status``: see :meth:`Workspace.status
        <lantern_git.workspace.workspace.Workspace.status>`."""
        return self.workspace.status()

    # What the surfaces and the tests read of the workspace, under the Store's name for it:
    # read-only, but for ``warn`` and ``progress``, which a caller may replace.

    def __setattr__(self, name: str, value: Any) -> None:
        shown = getattr(type(self), name, None)
        if isinstance(shown, property) and shown.fset is None:
            raise AttributeError(f"the store's {name} cannot be set")
        super().__setattr__(name, value)

    @property
    def root(self) -> str:
        return self.workspace.root

    @property
    def exists(self) -> bool:
        return self.workspace.exists

    @property
    def read_only(self) -> bool:
        """Whether nothing may be written: asked for (``read_only=True``), or the store's folder
        or repository cannot be written by this process."""
        return self.workspace.read_only

    @property
    def recovery_pending(self) -> bool:
        """Whether a cut-off write waits for a process that can write to repair it (only a
        read-only store leaves one; every other read repairs it first)."""
        return self.workspace.recovery_pending

    @property
    def state_dir(self) -> str:
        return self.workspace.state_dir

    @property
    def derived_dir(self) -> str:
        """Where the indexes live: ``.lantern/``, or a temporary folder for a read-only store."""
        return self.workspace.derived_dir

    @property
    def git(self) -> GitRepo:
        """The store's repository (opened on first use: pygit2 is imported then)."""
        return self.workspace.git

    @property
    def index(self) -> SearchIndex:
        """The search index (opened on first use: Whoosh is imported then)."""
        return self.workspace.index

    @property
    def chunks(self) -> ChunkIndex:
        """The index of source chunks (opened on first use, like ``index``)."""
        return self.workspace.chunks

    @property
    def review_ref(self) -> str | None:
        """The review branch this store's writes go to, or None when review is off."""
        return self.workspace.review_ref

    @property
    def warn(self) -> Callable[[str], None]:
        """Where warnings go (stderr unless ``warn=`` says otherwise); it may be replaced."""
        return self.workspace.warn

    @warn.setter
    def warn(self, value: Callable[[str], None]) -> None:
        self.workspace.warn = value

    @property
    def progress(self) -> Callable[[int, str], Progress] | None:
        """Given (total, what), a progress display for a long index job (set it before the
        first read: the index takes it when it opens)."""
        return self.workspace.progress

    @progress.setter
    def progress(self, value: Callable[[int, str], Progress] | None) -> None:
        self.workspace.progress = value

    def identity(self) -> Identity:
        return self.workspace.identity()

    def refresh(self) -> RefreshReport:
        return self.workspace.refresh()

    def rebuild_index(self) -> RefreshReport:
        return self.workspace.rebuild_index()

    def embed(self) -> dict[str, Any]:
        """``lantern index embed``: see :meth:`Workspace.embed
        <lantern_git.workspace.workspace.Workspace.embed>`."""
        return self.workspace.embed()

    def record_vectors(self) -> Vectors:
        return self.workspace.record_vectors()

    def chunk_vectors(self) -> Vectors:
        return self.workspace.chunk_vectors()

    # ------------------------------------------------------------------ the records, flat
    # The promise of docs/library.md: ``store.add(...)`` is ``store.records.add(...)``.

    def resolve_id(self, ref: str) -> str:
        """``store.records.resolve_id`` (:class:`~lantern_git.memory.records.Records`)."""
        return self.records.resolve_id(ref)

    def read(self, record_id: str) -> tuple[str, Record]:
        """``store.records.read`` (:class:`~lantern_git.memory.records.Records`)."""
        return self.records.read(record_id)

    def get(
        self, ref: str, *, at: str | int | None = None, include_pending: bool = False
    ) -> Record:
        """``store.records.get`` (:class:`~lantern_git.memory.records.Records`)."""
        return self.records.get(ref, at=at, include_pending=include_pending)

    def list(
        self,
        query: RecordQuery | None = None,
        *,
        at: str | int | None = None,
        include_pending: bool = False,
        **filters: Any,
    ) -> builtins.list[Record]:
        """``store.records.list`` (:class:`~lantern_git.memory.records.Records`)."""
        return self.records.list(query, at=at, include_pending=include_pending, **filters)

    def count(self, query: RecordQuery | None = None, *, at: str | int | None = None) -> int:
        """``store.records.count`` (:class:`~lantern_git.memory.records.Records`)."""
        return self.records.count(query, at=at)

    def search(
        self,
        text: str,
        query: RecordQuery | None = None,
        *,
        mode: str | None = None,
        include_pending: bool = False,
        explain: bool = False,
        **filters: Any,
    ) -> builtins.list[Hit]:
        """``store.records.search`` (:class:`~lantern_git.memory.records.Records`)."""
        return self.records.search(
            text, query, mode=mode, include_pending=include_pending, explain=explain, **filters
        )

    def similar(
        self, ref: str, *, limit: int | None = 10, offset: int = 0, min_score: float | None = None
    ) -> builtins.list[Hit]:
        """``store.records.similar`` (:class:`~lantern_git.memory.records.Records`)."""
        return self.records.similar(ref, limit=limit, offset=offset, min_score=min_score)

    def dupes(
        self,
        *,
        scopes: Iterable[str] | None = None,
        threshold: float = DUPE_THRESHOLD,
        limit: int | None = None,
        offset: int = 0,
    ) -> builtins.list[DupePair]:
        """``store.records.dupes`` (:class:`~lantern_git.memory.records.Records`)."""
        return self.records.dupes(scopes=scopes, threshold=threshold, limit=limit, offset=offset)

    def add(
        self,
        content: str,
        *,
        kind: str,
        scope: str = DEFAULT_SCOPE,
        priority: int = DEFAULT_PRIORITY,
        urgency: int = DEFAULT_URGENCY,
        confidence: float = DEFAULT_CONFIDENCE,
        expires_at: int | None = None,
        source_refs: Iterable[str] = (),
        entities: Iterable[str] = (),
        reason: str | None = None,
    ) -> Record:
        """``store.records.add`` (:class:`~lantern_git.memory.records.Records`)."""
        return self.records.add(
            content,
            kind=kind,
            scope=scope,
            priority=priority,
            urgency=urgency,
            confidence=confidence,
            expires_at=expires_at,
            source_refs=source_refs,
            entities=entities,
            reason=reason,
        )

    def archive(self, ref: str, *, reason: str | None = None) -> Record:
        """``store.records.archive`` (:class:`~lantern_git.memory.records.Records`)."""
        return self.records.archive(ref, reason=reason)

    def restore(self, ref: str, *, reason: str | None = None) -> Record:
        """``store.records.restore`` (:class:`~lantern_git.memory.records.Records`)."""
        return self.records.restore(ref, reason=reason)

    def update(
        self,
        ref: str,
        *,
        priority: int | None = None,
        urgency: int | None = None,
        confidence: float | None = None,
        expires_at: int | Unset | None = UNSET,
        add_source_refs: Iterable[str] = (),
        add_entities: Iterable[str] = (),
        remove_entities: Iterable[str] = (),
        reason: str | None = None,
    ) -> Record:
        """``store.records.update`` (:class:`~lantern_git.memory.records.Records`)."""
        return self.records.update(
            ref,
            priority=priority,
            urgency=urgency,
            confidence=confidence,
            expires_at=expires_at,
            add_source_refs=add_source_refs,
            add_entities=add_entities,
            remove_entities=remove_entities,
            reason=reason,
        )

    def supersede(
        self,
        old_ref: str,
        content: str,
        *,
        kind: str | None = None,
        scope: str | None = None,
        priority: int | None = None,
        urgency: int | None = None,
        confidence: float | None = None,
        expires_at: int | Unset | None = None,
        source_refs: Iterable[str] = (),
        reason: str | None = None,
    ) -> Record:
        """``store.records.supersede`` (:class:`~lantern_git.memory.records.Records`)."""
        return self.records.supersede(
            old_ref,
            content,
            kind=kind,
            scope=scope,
            priority=priority,
            urgency=urgency,
            confidence=confidence,
            expires_at=expires_at,
            source_refs=source_refs,
            reason=reason,
        )

    def delete(self, ref: str, *, reason: str | None = None) -> Deletion:
        """``store.records.delete`` (:class:`~lantern_git.memory.records.Records`)."""
        return self.records.delete(ref, reason=reason)

    def revert(self, commit: str, *, reason: str | None = None) -> RevertResult:
        """``store.records.revert`` (:class:`~lantern_git.memory.records.Records`)."""
        return self.records.revert(commit, reason=reason)

    def diff(
        self,
        old: str | int | None = None,
        new: str | int | None = None,
        *,
        limit: int | None = None,
    ) -> RecordDiff:
        """``store.records.diff`` (:class:`~lantern_git.memory.records.Records`)."""
        return self.records.diff(old, new, limit=limit)

    def history(self, ref: str) -> builtins.list[HistoryEntry]:
        """``store.records.history`` (:class:`~lantern_git.memory.records.Records`)."""
        return self.records.history(ref)

    def record_history(
        self, ref: str, *, limit: int | None = None, offset: int = 0
    ) -> RecordHistory:
        """``store.records.record_history`` (:class:`~lantern_git.memory.records.Records`)."""
        return self.records.record_history(ref, limit=limit, offset=offset)

    def log(self, limit: int | None = 20, offset: int = 0) -> builtins.list[LogEntry]:
        """``store.records.log`` (:class:`~lantern_git.memory.records.Records`)."""
        return self.records.log(limit, offset)

    def check(self) -> CheckReport:
        """Every record file (``store.records.check``) and every entity file
        (``store.entities.check``): one report, ``ok`` only when both are."""
        report = self.records.check()
        if self.workspace.exists:
            report.extend(len(self.entities.paths()), self.entities.check())
        return report

    def commit_hand_edits(
        self, message: str | None = None, *, reason: str | None = None
    ) -> HandCommit:
        """``store.records.commit_hand_edits`` (:class:`~lantern_git.memory.records.Records`)."""
        return self.records.commit_hand_edits(message, reason=reason)

    def begin_edit(self, ref: str) -> EditSession:
        """``store.records.begin_edit`` (:class:`~lantern_git.memory.records.Records`)."""
        return self.records.begin_edit(ref)

    def apply_edit(
        self, ref: str, original_text: str, text: str, *, reason: str | None = None
    ) -> Record:
        """``store.records.apply_edit`` (:class:`~lantern_git.memory.records.Records`)."""
        return self.records.apply_edit(ref, original_text, text, reason=reason)

    def export_records(self) -> RecordExport:
        """``store.records.export_records`` (:class:`~lantern_git.memory.records.Records`)."""
        return self.records.export_records()

    def import_records(
        self,
        lines: Iterable[str | bytes],
        *,
        reason: str | None = None,
        progress: Callable[[int], None] | None = None,
    ) -> ImportResult:
        """``store.records.import_records`` (:class:`~lantern_git.memory.records.Records`)."""
        return self.records.import_records(lines, reason=reason, progress=progress)

    def import_source(
        self,
        source: str,
        *,
        format: str = "auto",
        kind: str | None = None,
        scope: str | None = None,
        reason: str | None = None,
        progress: Callable[[int, int], None] | None = None,
    ) -> ImportResult:
        """``store.records.import_source`` (:class:`~lantern_git.memory.records.Records`)."""
        return self.records.import_source(
            source, format=format, kind=kind, scope=scope, reason=reason, progress=progress
        )

    # ------------------------------------------------------------------ review

    def review_list(self, *, limit: int | None = None, offset: int = 0) -> ReviewList:
        """Every review branch's pending changes, record by record (docs/review.md): what each
        writer changed since its branch left the store's branch. ``limit`` and ``offset`` page
        the branches, by name (``limit`` 0 or None: all)."""
        from .core.paging import Page
        from .review import KeptReviewList, ReviewList

        page = Page(limit, offset)
        self.workspace.recover()
        if not self.exists:
            return ReviewList()
        if self._reviewed is None:
            self._reviewed = KeptReviewList()
        found = self._reviewed.answer(self.git)
        return ReviewList(page.take(found.branches))

    def review_accept(
        self,
        ids: Iterable[str] | None = None,
        *,
        branch: str | None = None,
        reason: str | None = None,
        expect: str | None = None,
    ) -> ReviewDecision:
        """Bring pending records (``ids``, or None for everything on the branch) of one review
        branch onto the store's branch in one ``Lantern-Op: accept`` commit, this store's
        author as the reviewer; they are no longer pending after. Refuses (``self_approval``)
        a reviewer with the writer's actor and review name. ``expect``: the branch's tip the
        reviewer saw (``lantern review --json``'s ``"tip"``); when it moved since, nothing is
        accepted (``review_changed``). A supersede is accepted whole (its new record and its
        old record's status change), whichever of the two ``ids`` names."""
        from .review import accept, choose

        wanted = None if ids is None else list(ids)
        with self.transaction(review=False) as tx:
            return accept(
                tx,
                choose(self.git, wanted, branch, expect),
                everything=wanted is None,
                reason=reason,
                reviewer=self.workspace.reviewer,
            )

    def review_reject(
        self,
        ids: Iterable[str] | None = None,
        *,
        branch: str | None = None,
        reason: str | None = None,
        expect: str | None = None,
    ) -> ReviewDecision:
        """Drop pending records (``ids``, or None for all) from their review branch with a
        ``Lantern-Op: reject`` commit on it; the store's branch does not change. ``expect``
        and supersedes as :meth:`review_accept`."""
        from .review import REVIEW_PREFIX as REVIEW_BRANCHES
        from .review import choose, reject

        wanted = None if ids is None else list(ids)
        ref = choose(self.git, wanted, branch, expect).branch.ref
        with self.transaction(branch=ref) as tx:
            # Chosen again under the writer lock: the branch may have moved meanwhile.
            chosen = choose(self.git, wanted, ref.removeprefix(REVIEW_BRANCHES), expect)
            return reject(tx, chosen, everything=wanted is None, reason=reason)

    # ------------------------------------------------------------------ sync

    def sync(
        self,
        remote: str | None = None,
        *,
        push: bool = True,
        review_branches: bool | None = None,
    ) -> SyncReport:
        """Fetch, merge records field by field, push; returns a :class:`SyncReport`.

        ``review_branches``: the review branches travel too (fetched, merged record by record,
        pushed); None takes ``sync_review_branches`` from ``lantern.yaml`` (default: no)."""
        from .git.config import ensure_merge_driver
        from .review import sync_review_enabled
        from .sync import sync

        if not self.exists:
            raise NoStore(f"{self.root} is not a lantern store; create one with: lantern init")
        with_reviews = sync_review_enabled(review_branches, self.workspace.settings)
        with self.transaction(require_head=False, review=False) as tx:
            ensure_merge_driver(self.git.repo, self.warn)
            report = sync(tx, remote, push=push, review_branches=with_reviews)
            self.refresh()
        return report


class _EveryRecord:
    """Every record of a store, any status, expired or not, read afresh each time it is
    iterated: the records whose references ``store.sources.verify()`` checks."""

    def __init__(self, records: Records):
        self.records = records

    def __iter__(self) -> Iterator[Record]:
        from .model.query import RecordQuery

        return iter(self.records.list(RecordQuery(status="all", include_expired=True)))
