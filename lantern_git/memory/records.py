"""The memory part: every read and write of a store's records.

:class:`Records` is what ``store.add``, ``store.list``, ``store.search`` and the other record
methods of :class:`~lantern_git.store.Store` run. It stands on a
:class:`~lantern_git.workspace.workspace.Workspace` (the files, git, the indexes, the write path)
and knows nothing of the evidence part or of review: pinning the ``source:`` references a record
cites and resolving a source id prefix are asked of the
:class:`~lantern_git.workspace.workspace.Citations` the Store hands it, and the records as the
review branches would make them (``include_pending``) of a reader the Store hands it too.
"""

from __future__ import annotations

import builtins
import dataclasses
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..core.fields import (
    DEFAULT_CONFIDENCE,
    DEFAULT_PRIORITY,
    DEFAULT_SCOPE,
    DEFAULT_URGENCY,
    DUPE_THRESHOLD,
    UNSET,
    Unset,
)
from ..errors import AmbiguousId, InvalidInput, NoStore, NotFound, ValidationError
from ..model.entity_keys import ENTITY_FORMAT
from ..model.record import (
    ID_RE,
    Record,
    check_id_prefix,
    compute_id,
    validate_confidence,
    validate_entities,
    validate_priority,
    validate_source_refs,
    validate_timestamp,
)
from ..model.record_file import load, record_candidates, record_path

if TYPE_CHECKING:
    from ..model.entity import Entity
    from ..model.query import DupePair, Hit, RecordQuery
    from ..workspace.transaction import WriteTransaction
    from ..workspace.workspace import Citations, Workspace
    from .checker import CheckReport, HandCommit
    from .editing import EditSession
    from .history import HistoryEntry, LogEntry, RecordHistory
    from .revert import RevertResult
    from .timetravel import RecordDiff
    from .transfer import ImportResult, RecordExport, SourceImport


@dataclass
class Deletion:
    """``memory delete``: the record as it was, and the commit that removed its file."""

    record: Record
    commit: str | None

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.record.id, "commit": self.commit, "record": self.record.to_dict()}


class Records:
    """The records of one store (see the module's docstring).

    ``citations``: the evidence part's pinning and resolving, asked for when first needed (so
    that a store that never cites a source never loads the evidence part). ``pending``: every
    record the review branches change, as it would be once accepted (None: removed there), read
    when a read includes pending records.
    """

    def __init__(
        self,
        workspace: Workspace,
        citations: Callable[[], Citations],
        pending: Callable[[], Mapping[str, Record | None]],
    ):
        self.workspace = workspace
        self._citations = citations
        self._pending = pending

    # ------------------------------------------------------------------ reading records

    def resolve_id(self, ref: str) -> str:
        """The full id for an id or a unique prefix of 4 or more hex digits."""
        prefix = check_id_prefix(ref)
        if not self.workspace.exists:
            raise NotFound(f"no record with id {prefix}")
        candidates = record_candidates(self.workspace.root, prefix)
        if not candidates and len(prefix) == 16:
            raise NotFound(f"no record with id {prefix}")
        if not candidates:
            raise NotFound(f"no record with id prefix {prefix}")
        if len(candidates) > 1:
            raise AmbiguousId(prefix, candidates)
        return candidates[0]

    def read(self, record_id: str) -> tuple[str, Record]:
        """A record file's text and record, as the working tree has it."""
        return load(self.workspace.root, record_id)

    def get(
        self, ref: str, *, at: str | int | None = None, include_pending: bool = False
    ) -> Record:
        """One record, by id or unique id prefix.

        ``at`` (a git revision or a time, as ``list``'s) reads it from git's tree at that point
        instead, where the prefix is resolved too: a record deleted since is found.
        ``include_pending``: as it would be once the review branches are accepted (a
        :class:`~lantern_git.review.PendingVersion` where one changed it).
        """
        self.workspace.recover()
        if include_pending:
            if at is not None:
                raise InvalidInput(
                    "at: cannot be combined with --include-pending", code="usage_error"
                )
            return self._get_pending(ref)
        if at is not None:
            from .timetravel import record_at

            prefix = check_id_prefix(ref)
            if not self.workspace.exists:
                raise NotFound(f"no record with id {prefix}")
            return record_at(self.workspace.git, prefix, at)
        return self.read(self.resolve_id(ref))[1]

    def _get_pending(self, ref: str) -> Record:
        prefix = check_id_prefix(ref)
        versions = self._pending()
        found = (
            set(record_candidates(self.workspace.root, prefix)) if self.workspace.exists else set()
        )
        for record_id, version in versions.items():
            if record_id.startswith(prefix):
                (found.add if version is not None else found.discard)(record_id)
        if not found:
            raise NotFound(f"no record with id {'prefix ' if len(prefix) < 16 else ''}{prefix}")
        if len(found) > 1:
            raise AmbiguousId(prefix, sorted(found))
        record_id = found.pop()
        return versions.get(record_id) or self.read(record_id)[1]

    # ------------------------------------------------------------------ listing

    def list(
        self,
        query: RecordQuery | None = None,
        *,
        at: str | int | None = None,
        include_pending: bool = False,
        **filters: Any,
    ) -> builtins.list[Record]:
        """Records in the contract's order: active first, priority, urgency, newest, id.

        ``at`` (a git revision or a time) answers from git's tree at that point instead.
        ``include_pending``: as the list would be once the review branches are accepted; a
        record a review branch added or changed is its
        :class:`~lantern_git.review.PendingVersion`, one it removed is left out.
        """
        from ..model.query import RecordQuery

        query = query or RecordQuery(**filters)
        _check_query(query)
        if not self.workspace.exists:
            return []
        if include_pending:
            return self._list_pending(query, at)
        # ``cites`` is a filter like the others: a term of the index (``at``: checked on each
        # record of that tree, by the same rule).
        query = self._resolved(query)
        if at is not None:
            from .timetravel import list_at

            return list_at(self.workspace.git, at, query, warn=self.workspace.warn)
        index = self.workspace.index
        return [hit.record for hit in index.fresh(query, False, self.workspace.refresh)]

    def count(self, query: RecordQuery | None = None, *, at: str | int | None = None) -> int:
        """How many records :meth:`list` would return for ``query`` without its page: from the
        index's id column when only filters are given (100k records: no record is read)."""
        from ..model.query import RecordQuery

        query = dataclasses.replace(query or RecordQuery(), limit=None, offset=0)
        _check_query(query)
        if not self.workspace.exists:
            return 0
        if at is not None or query.text:
            return len(self.list(query, at=at))
        query = self._resolved(query)
        self.workspace.refresh()
        return self.workspace.index.count(query)

    def _list_pending(self, query: RecordQuery, at: str | int | None) -> builtins.list[Record]:
        from ..model.query import sort_key

        if at is not None or query.text:
            raise InvalidInput(
                "--include-pending cannot be combined with --at or --query (pending records "
                "are read from their review branches, not the index)",
                code="usage_error",
            )
        versions = self._pending()
        # A page needs no more of the store's list than its end plus one record for each
        # pending version (each can take the place of at most one): a pending write no longer
        # reads all 100,000 records for a page of 50 (562 ms a page at 10,000).
        end = query.page.end
        window = dataclasses.replace(
            query, limit=None if end is None else end + len(versions), offset=0
        )
        records: builtins.list[Record] = [r for r in self.list(window) if r.id not in versions]
        query = self._resolved(query)
        records.extend(v for v in versions.values() if v is not None and query.matches(v))
        records.sort(key=sort_key)
        return query.page.take(records)

    def _resolved(self, query: RecordQuery) -> RecordQuery:
        """``query`` with its ``cites`` a full source id: the one place a prefix is resolved
        (asked of the evidence part), for every list and search."""
        if query.cites is not None and len(query.cites) < 16:
            return dataclasses.replace(query, cites=self._citations().resolve(query.cites))
        return query

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
        """Records matching ``text``, most relevant first, as hits with a ``score`` and the
        ``mode`` that ranked them (docs/search.md):

        - ``keyword``: lantern's BM25 over the words (stems and forms as written, see
          :mod:`~lantern_git.index.bm25`); ``score`` is the BM25 score.
        - ``semantic``: cosine of the embeddings of ``text`` and each record's content, among
          the records the filters select; records under the similarity floor are left out
          (:mod:`~lantern_git.index.ranking`); ``score`` is the cosine.
        - ``hybrid``: ``max(cosine, w * bm25 / best bm25 + (1 - w) * cosine)``, ``w`` the
          share of the query's words the record holds (:mod:`~lantern_git.index.ranking`,
          where the rule is chosen), the cosine counted only at or above the floor, over the
          keyword matches and the records at or above the floor; ``score`` is between 0 and 1.

        ``explain``: each hit's ``explain`` says what made its score (mode, bm25, the query
        words matched, cosine, weights, floor).

        ``mode=None`` is hybrid when an embedder is available (the ``semantic`` extra, and no
        ``embedder: none``), keyword otherwise. Every filter applies before ranking; priority,
        urgency and status never enter a score. Semantic and hybrid raise
        :class:`~lantern_git.errors.SemanticUnavailable` without an embedder.

        ``include_pending``: searches the records as they would be once the review branches
        are accepted (as ``list``'s), each scored as the index would score it in that store; a
        pending record's hit is its :class:`~lantern_git.review.PendingVersion`. Keyword only:
        with ``mode`` semantic or hybrid it is refused (``usage_error``).

        The search itself is the one pipeline every corpus shares
        (:func:`~lantern_git.index.retrieval.search`); the records are its corpus.
        """
        from ..index import retrieval
        from ..index.corpora import PendingRecordCorpus, RecordCorpus
        from ..model.query import RecordQuery

        retrieval.check(text, mode)
        query = dataclasses.replace(query or RecordQuery(**filters), text=text)
        _check_query(query)
        if include_pending:
            if mode not in (None, "keyword"):
                raise InvalidInput(
                    f"mode: {mode} cannot include pending records, which have no vectors; "
                    "search them by keyword (--mode keyword, mode=keyword)",
                    code="usage_error",
                )
            mode = "keyword"
        mode = self.workspace.search_mode(mode, "records")
        if not self.workspace.exists:
            return []
        page = query.page
        query = self._resolved(query)
        corpus: RecordCorpus
        if include_pending:
            corpus = PendingRecordCorpus(self.workspace.index, self._pending_records(query))
        elif mode == "keyword":
            corpus = RecordCorpus(self.workspace.index, self.workspace.refresh)
        else:
            vectors, embedder = self.workspace.record_vectors(), self.workspace.embedder_name
            corpus = RecordCorpus(self.workspace.index, self.workspace.refresh, vectors, embedder)
        chosen = dataclasses.replace(query, text=None, limit=None, offset=0)
        request = retrieval.SearchRequest(text, mode, chosen, page, explain)
        return retrieval.search(corpus, request)

    def _pending_records(self, query: RecordQuery) -> builtins.list[Record]:
        """Every record as the review branches would make them, those ``query`` cites only."""
        from ..model.query import RecordQuery

        self.workspace.recover()
        versions = self._pending()
        every = RecordQuery(status="all", include_expired=True)
        records: builtins.list[Record] = [r for r in self.list(every) if r.id not in versions]
        records.extend(v for v in versions.values() if v is not None)
        query = self._resolved(query)
        if query.cites is not None:
            records = [r for r in records if query.matches_cites(r)]
        return records

    def similar(
        self,
        ref: str,
        *,
        limit: int | None = 10,
        offset: int = 0,
        min_score: float | None = None,
    ) -> builtins.list[Hit]:
        """The records whose content embeds nearest to this record's, best first (cosine,
        ties by id), the record itself left out: among active, unexpired records, as the
        default list. ``min_score`` drops those below that cosine; ``limit`` 0 or None: all."""
        from ..core.paging import Page
        from ..model.query import Hit, RecordQuery

        page = Page(limit, offset)  # a bad page is the caller's error, with or without embedder
        vectors = self.workspace.record_vectors()  # refused without an embedder, before numpy
        from ..index.vectors import rank

        if min_score is not None and (
            isinstance(min_score, bool) or not -1.0 <= float(min_score) <= 1.0
        ):
            raise InvalidInput("min_score: must be between -1 and 1", code="invalid_field")
        self.workspace.recover()
        record_id = self.resolve_id(ref)
        self.workspace.refresh()
        current = vectors.current()
        if record_id not in current.row:
            raise NotFound(f"record {record_id} is not indexed (a broken file? see lantern check)")
        candidates = [i for i in self.workspace.index.matching_ids(RecordQuery()) if i != record_id]
        ranked = rank(current, current.vector(record_id), candidates)
        if min_score is not None:
            ranked = [item for item in ranked if item[1] >= min_score]
        ranked = page.take(ranked)
        records = self.workspace.index.records(i for i, _ in ranked)
        return [Hit(records[i], score, "semantic") for i, score in ranked if i in records]

    def dupes(
        self,
        *,
        scopes: Iterable[str] | None = None,
        threshold: float = DUPE_THRESHOLD,
        limit: int | None = None,
        offset: int = 0,
    ) -> builtins.list[DupePair]:
        """Pairs of active, unexpired records (in ``scopes``, if given; a trailing ``*``
        matches a prefix) whose contents have a cosine of at least ``threshold``, by score
        desc then ids; ``limit`` and ``offset`` page them (``limit`` 0 or None: all). Lantern
        only reports them: it never merges or archives on its own."""
        from ..core.paging import Page
        from ..model.query import DupePair, RecordQuery

        page = Page(limit, offset)  # a bad page is the caller's error, with or without embedder
        vectors = self.workspace.record_vectors()  # refused without an embedder, before numpy
        from ..index.vectors import pairs_above

        if isinstance(threshold, bool) or not -1.0 <= float(threshold) <= 1.0:
            raise InvalidInput("threshold: must be between -1 and 1", code="invalid_field")
        query = RecordQuery(scopes=_ref_list(scopes or (), "scopes"))
        _check_query(query)
        if not self.workspace.exists:
            return []
        self.workspace.refresh()
        current = vectors.current()
        pairs = pairs_above(current, self.workspace.index.matching_ids(query), float(threshold))
        pairs = page.take(pairs)
        records = self.workspace.index.records({i for a, b, _ in pairs for i in (a, b)})
        return [
            DupePair(records[a], records[b], score)
            for a, b, score in pairs
            if a in records and b in records
        ]

    # ------------------------------------------------------------------ writing records

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
        """Add a record; adding the same kind+scope+content again returns it, with no commit.
        ``entities``: the keys it is about (store format 2, docs/entities.md)."""
        named = validate_entities(_ref_list(entities, "entities"))
        if named:
            self.workspace.require_format(ENTITY_FORMAT, "a record naming entities")
        record = Record.new(
            kind=kind,
            content=content,
            scope=scope,
            priority=priority,
            urgency=urgency,
            confidence=confidence,
            expires_at=expires_at,
            source_refs=_ref_list(source_refs),
        ).evolve(entities=named)
        with self.workspace.transaction() as tx:
            if record.source_refs:
                record = record.evolve(source_refs=self._citations().pin(record.source_refs, tx))
            path = record_path(record.id)
            if tx.exists(record.id):
                return tx.read(record.id)[1]
            text = record.to_markdown()
            tx.commit(
                {path: text.encode("utf-8")},
                _summary("add", record),
                "add",
                (record.id,),
                reason=reason,
            )
        return record

    def archive(self, ref: str, *, reason: str | None = None) -> Record:
        """Mark a record archived. It stays in the store and in history."""

        def change(record: Record, tx: WriteTransaction) -> Record:
            if record.status == "superseded":
                raise InvalidInput(
                    f"record {record.id} is superseded; restore it before archiving",
                    code="invalid_state",
                )
            return record.evolve(status="archived")

        return self._mutate(ref, "archive", change, reason)

    def restore(self, ref: str, *, reason: str | None = None) -> Record:
        """Make an archived or superseded record active again."""
        return self._mutate(ref, "restore", lambda r, tx: r.evolve(status="active"), reason)

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
        """Change importance fields; ``expires_at=None`` clears the expiry; name entities the
        record is about, or stop naming them (store format 2)."""
        changes: dict[str, Any] = {}
        if priority is not None:
            changes["priority"] = validate_priority(priority)
        if urgency is not None:
            changes["urgency"] = validate_priority(urgency, "urgency")
        if confidence is not None:
            changes["confidence"] = validate_confidence(confidence)
        if expires_at is not UNSET:
            changes["expires_at"] = (
                None if expires_at is None else validate_timestamp("expires_at", expires_at)
            )
        new_refs = validate_source_refs(_ref_list(add_source_refs, "add_source_refs"))
        named = validate_entities(_ref_list(add_entities, "add_entities"))
        unnamed = validate_entities(_ref_list(remove_entities, "remove_entities"))
        if not changes and not new_refs and not named and not unnamed:
            raise InvalidInput(
                "nothing to update: give --priority, --urgency, --confidence, --expires-at, "
                "--add-source-ref, --entity or --remove-entity",
                code="nothing_to_update",
            )
        if named or unnamed:
            self.workspace.require_format(ENTITY_FORMAT, "a record naming entities")

        def change(record: Record, tx: WriteTransaction) -> Record:
            pinned = self._citations().pin(new_refs, tx)
            refs = record.source_refs + tuple(r for r in pinned if r not in record.source_refs)
            kept = [key for key in record.entities if key not in unnamed]
            entities = tuple(dict.fromkeys([*kept, *named]))
            return record.evolve(**changes, source_refs=refs, entities=entities)

        return self._mutate(ref, "update", change, reason)

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
        """Replace a record: the new one carries ``supersedes_id``; both change in one commit.

        Kind, scope, priority, urgency and confidence default to the old record's.
        """
        if isinstance(expires_at, Unset):
            expires_at = None
        with self.workspace.transaction() as tx:
            old_id = tx.resolve_id(old_ref)
            old_text, old = tx.read(old_id)
            tx.ensure_committed(old_id, old_text)
            if old.status != "active":
                raise InvalidInput(
                    f"record {old_id} is {old.status}; only an active record can be superseded",
                    code="invalid_state",
                )
            new_kind, new_scope = kind or old.kind, scope or old.scope
            if compute_id(new_kind, new_scope, content) == old_id:
                raise InvalidInput(
                    "the new content is the same as the old record's; nothing to supersede",
                    code="identical_content",
                )
            new = Record.new(
                kind=new_kind,
                content=content,
                scope=new_scope,
                priority=old.priority if priority is None else priority,
                urgency=old.urgency if urgency is None else urgency,
                confidence=old.confidence if confidence is None else confidence,
                expires_at=expires_at,
                supersedes_id=old_id,
                source_refs=self._citations().pin(_ref_list(source_refs), tx),
            )
            new_path = record_path(new.id)
            if tx.exists(new.id):
                raise InvalidInput(
                    f"a record with this content already exists ({new.id}); "
                    "restore or update it instead",
                    code="already_exists",
                )
            old_new = old.evolve(
                status="superseded", updated_at=max(new.updated_at, old.updated_at)
            )
            tx.commit(
                {
                    new_path: new.to_markdown().encode("utf-8"),
                    record_path(old_id): old_new.rewrite(old_text).encode("utf-8"),
                },
                f"supersede {old_id} -> {new.id}: {_first_line(new.content)}",
                "supersede",
                (old_id, new.id),
                reason=reason,
            )
        return new

    def delete(self, ref: str, *, reason: str | None = None) -> Deletion:
        """Remove a record's file in one commit (``Lantern-Op: delete``): the one way lantern
        removes a record, for data that must not stay (stored by mistake). Git history keeps
        the text until it is purged with git's own tools (docs/usage.md, "Deleting a record").

        The commit's summary names only the id, never the content: a purge of the file from
        history must not leave a copy in a commit message.
        """
        with self.workspace.transaction() as tx:
            record_id = tx.resolve_id(ref)
            text, record = tx.read(record_id)
            tx.ensure_committed(record_id, text)
            commit = tx.commit(
                {record_path(record_id): None},
                f"delete {record_id}",
                "delete",
                (record_id,),
                reason=reason,
            )
        return Deletion(record, commit)

    def revert(self, commit: str, *, reason: str | None = None) -> RevertResult:
        """Undo one lantern commit in a new commit (``Lantern-Op: revert``), record-aware: a
        later change to another field of the same record is kept. Refuses (CannotRevert) a
        merge commit, a commit lantern did not make and a later change to the same field."""
        from .revert import revert

        with self.workspace.transaction() as tx:
            return revert(tx, commit, reason=reason)

    def diff(
        self,
        old: str | int | None = None,
        new: str | int | None = None,
        *,
        limit: int | None = None,
    ) -> RecordDiff:
        """Records added, removed and changed from ``old`` (default HEAD) to ``new`` (default:
        the working tree, hand edits included). ``limit``: read only the first ``limit``
        changed record files, by path (the diff's ``more`` says whether any was left out); 0
        or None: every one."""
        from ..core.paging import Page
        from .timetravel import record_diff

        page = Page(limit)
        self.workspace.recover()
        if not self.workspace.exists:
            raise NoStore(f"{self.workspace.root} is not a lantern store")
        return record_diff(self.workspace.git, old, new, limit=page.limit)

    def _mutate(
        self,
        ref: str,
        op: str,
        change: Callable[[Record, WriteTransaction], Record],
        reason: str | None,
    ) -> Record:
        with self.workspace.transaction() as tx:
            record_id = tx.resolve_id(ref)
            text, record = tx.read(record_id)
            tx.ensure_committed(record_id, text)
            changed = change(record, tx)
            if changed == record:
                return record
            changed = changed.evolve(updated_at=max(int(time.time()), record.updated_at))
            tx.commit(
                {record_path(record_id): changed.rewrite(text).encode("utf-8")},
                _summary(op, changed),
                op,
                (record_id,),
                reason=reason,
            )
        return changed

    def ensure_committed(self, record_id: str, text: str) -> None:
        """Refuse (UncommittedChanges) when ``text`` is not what HEAD holds for the record."""
        from ..workspace.transaction import refuse_uncommitted

        path = record_path(record_id)
        refuse_uncommitted(self.workspace.git, [path], read={path: text.encode("utf-8")})

    # ------------------------------------------------------------ history, hand edits, transfer

    def history(self, ref: str) -> builtins.list[HistoryEntry]:
        """The commits that changed a record, newest first, with the fields they changed."""
        return self.record_history(ref).entries

    def record_history(
        self, ref: str, *, limit: int | None = None, offset: int = 0
    ) -> RecordHistory:
        """``memory history``'s answer: the record's full id and one page of :meth:`history`
        (``limit`` 0 or None: every commit).

        A deleted record has no file to resolve a prefix against; its full id still finds
        its history.
        """
        from ..core.paging import Page
        from .history import RecordHistory, record_history

        page = Page(limit, offset)
        self.workspace.recover()
        try:
            record_id = self.resolve_id(ref)
        except NotFound:
            if not (isinstance(ref, str) and ID_RE.fullmatch(ref.strip().lower())):
                raise
            record_id = ref.strip().lower()
        return RecordHistory(record_id, page.take(record_history(self.workspace.git, record_id)))

    def log(self, limit: int | None = 20, offset: int = 0) -> builtins.list[LogEntry]:
        """The store's recent operations, newest first, read from the commit trailers;
        ``limit`` 0 or None: all."""
        from ..core.paging import Page
        from .history import store_log

        page = Page(limit, offset)
        if not self.workspace.exists:
            return []
        self.workspace.recover()
        return store_log(self.workspace.git, page)

    def check(self) -> CheckReport:
        """Validate every file under memory/; a report of ``path:line: message`` problems."""
        from .checker import CheckReport, check_files

        self.workspace.recover()
        return check_files(self.workspace.root) if self.workspace.exists else CheckReport()

    def commit_hand_edits(
        self, message: str | None = None, *, reason: str | None = None
    ) -> HandCommit:
        """Validate and commit record files edited by hand (raises CheckFailed if invalid).

        Refused in review mode: hand edits are made in the store's working tree, on top of the
        store's branch, so committing them to a review branch could undo a change pending
        there without anyone seeing it; commit them without review, or edit the pending record
        with memory edit, which reads it from the review branch."""
        if self.workspace.review_ref is not None:
            raise InvalidInput(
                "lantern commit is not available in review mode: hand edits are made on the "
                "store's branch and could undo a change that awaits review; commit them "
                "without review (LANTERN_REVIEW=0), or use lantern memory edit, which edits "
                "a pending record as its review branch has it",
                code="review_mode",
            )
        from .checker import commit_hand_edits

        with self.workspace.transaction() as tx:
            return commit_hand_edits(tx, message, reason=reason)[0]

    def begin_edit(self, ref: str) -> EditSession:
        """An :class:`~lantern_git.memory.editing.EditSession`: a temporary copy for an editor. In
        review mode the copy is of the record as the review branch has it, when it changed
        it, and the edit is committed there."""
        from .editing import EditSession

        # Read as the writer sees it (refusing a read-only store before the editor opens); the
        # writer lock is not held while the editor is open: apply_edit checks nothing changed.
        if not self.workspace.exists:
            raise NotFound(f"no record with id {check_id_prefix(ref)}")
        with self.workspace.transaction() as tx:
            record_id = tx.resolve_id(ref)
            text, _ = tx.read(record_id)
            tx.ensure_committed(record_id, text)
        return EditSession(
            record_id,
            text,
            lambda ref, original, edited, reason: self.apply_edit(
                ref, original, edited, reason=reason
            ),
        )

    def apply_edit(
        self, ref: str, original_text: str, text: str, *, reason: str | None = None
    ) -> Record:
        """Commit ``text`` as the record's new file if it validates (Lantern-Op: edit)."""
        from .editing import apply_edit

        with self.workspace.transaction() as tx:
            return apply_edit(tx, tx.resolve_id(ref), original_text, text, reason)

    def export_records(self) -> RecordExport:
        """Every record, any status, in id order, read from the files; the files it had to
        skip are in the export's ``skipped`` once it has been iterated."""
        from .transfer import RecordExport

        self.workspace.recover()
        return RecordExport(
            self.workspace.root if self.workspace.exists else None, self.workspace.warn
        )

    def import_records(
        self,
        lines: Iterable[str | bytes],
        *,
        reason: str | None = None,
        progress: Callable[[int], None] | None = None,
    ) -> ImportResult:
        """Add the new records of a JSON Lines batch in one commit; existing ids are skipped."""
        from .transfer import import_records, parse_lines

        sources: builtins.list[SourceImport] = []
        entities: builtins.list[Entity] = []
        parsed = parse_lines(lines, progress, sources, entities)
        if entities:
            self.workspace.require_format(ENTITY_FORMAT, "importing entities")
        with self.workspace.transaction() as tx:
            return import_records(
                tx,
                (record for _, record in parsed),
                reason=reason,
                sources=sources,
                entities=entities,
            )

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
        """Import a file (``-``: stdin) or a folder: lantern's JSON Lines, the MCP memory
        server's ``memory.json`` or markdown notes (see :mod:`lantern_git.memory.importers`), in one
        commit; records already present are skipped."""
        from .importers import read_source
        from .transfer import import_records

        self.workspace.refuse_if_read_only()
        sources: builtins.list[SourceImport] = []
        entities: builtins.list[Entity] = []
        found = read_source(
            source,
            format=format,
            kind=kind,
            scope=scope,
            progress=progress,
            sources=sources,
            entities=entities,
        )
        if entities:
            self.workspace.require_format(ENTITY_FORMAT, "importing entities")
        with self.workspace.transaction() as tx:
            return import_records(
                tx,
                (record for _, record in found),
                reason=reason,
                sources=sources,
                entities=entities,
            )


def _check_query(query: RecordQuery) -> None:
    from ..core.fields import KINDS
    from ..model.record import has_undecodable, validate_scope

    if query.status not in ("active", "archived", "superseded", "all"):
        raise InvalidInput(
            f"status: must be active, archived, superseded or all; got {query.status!r}",
            code="invalid_field",
        )
    for kind in query.kinds:
        if kind not in KINDS:
            raise InvalidInput(
                f"kind: must be one of {', '.join(KINDS)}; got {kind!r}", code="invalid_field"
            )
    for scope in query.scopes:
        if scope.endswith("*"):
            if len(scope) > 200 or not scope.isprintable() or any(c.isspace() for c in scope):
                raise InvalidInput(f"scope: invalid scope pattern {scope!r}", code="invalid_field")
        else:
            try:
                validate_scope(scope)
            except ValidationError as err:
                message = err.message
                if scope.isascii() and all(c.isalnum() or c in "_.-" for c in scope):
                    # A bare namespace ('user') is what someone means by every user's records.
                    message += f"; did you mean --scope '{scope}:*'?"
                raise InvalidInput(message, code="invalid_field") from None
    for name in ("min_priority", "min_urgency"):
        value = getattr(query, name)
        if value is not None:
            validate_priority(value, name)
    if query.text is not None and has_undecodable(query.text):
        # Whoosh would fail encoding the terms, deep in a search, as if the index were damaged.
        raise InvalidInput(
            "query: is not valid Unicode text (undecodable bytes?)", code="invalid_query"
        )
    if query.cites is not None:
        from ..model.source import check_source_id

        if len(query.cites) == 16:
            check_source_id(query.cites, "cites")


def _ref_list(refs: Iterable[str], name: str = "source_refs") -> tuple[str, ...]:
    # tuple("session:1") would silently store one reference per character.
    if isinstance(refs, (str, bytes)):
        raise InvalidInput(
            f"{name}: must be a list of strings, not a single string", code="invalid_field"
        )
    return tuple(refs)


def _first_line(content: str, width: int = 60) -> str:
    line = " ".join(content.split())
    return line if len(line) <= width else line[: width - 3] + "..."


def _summary(op: str, record: Record) -> str:
    return f"{op} {record.id}: {_first_line(record.content)}"
