"""The record tools of the MCP server: thin calls into :class:`Store`'s memory part, and the
store-wide reads and undo (history, diff, revert, status, the review queue).

Each tool adds, shows, lists, searches or changes records exactly as the CLI does (same library
calls, same record objects, same error codes and messages). The evidence tools are laid out the
same way in :mod:`lantern_git.mcp.evidence`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

from ..core.fields import DEFAULT_LIMIT, UNSET, Unset
from ..core.paging import Page
from ..core.timespec import parse_expiry
from ..core.written import Written
from ..errors import InvalidInput
from ..model.query import RecordQuery
from .answers import (
    AnyObject,
    Deletion,
    Diff,
    FoundRecord,
    HistoryEntry,
    ListedRecord,
    Pair,
    Reverted,
    ShownRecord,
    SimilarRecord,
    StoredId,
    listing,
)
from .answers import Record as RecordObject
from .schemas import (
    AddArguments,
    ChangeArguments,
    DiffArguments,
    DupesArguments,
    HistoryArguments,
    ListArguments,
    NoArguments,
    RecordFilters,
    RevertArguments,
    ReviewListArguments,
    SearchArguments,
    ShowArguments,
    SimilarArguments,
    SupersedeArguments,
    UpdateArguments,
)
from .spec import Tools, page_of

if TYPE_CHECKING:
    from ..model.record import Record
    from ..store import Store


# ---------------------------------------------------------------------------- the tools

TOOLS = Tools()

_WRITE_NOTE = (
    " Each change is one git commit with the trailer Lantern-Actor: mcp, and "
    "`lantern_memory_history` shows every change."
)


def _record_result(written: Written[Record]) -> Written[dict[str, Any]]:
    return written.map(lambda record: record.to_dict())


class _Reported(Protocol):
    def to_dict(self) -> dict[str, Any]: ...


def _to_dict(value: _Reported) -> dict[str, Any]:
    return value.to_dict()


def _query(store: Store, args: RecordFilters, page: Page) -> RecordQuery:
    """The list or search filters (declared once, :class:`RecordFilters`) as a query; one more
    than asked tells whether another page follows, without counting them all. ``entity``
    becomes the entity's names, as the store has them now."""
    mentions = store.entities.labels(args.entity) if args.entity else ()
    return RecordQuery.from_options(**args.filters(), page=page.one_more(), mentions=mentions)


def _page(items: list[dict[str, Any]], fields: list[str] | None, page: Page) -> dict[str, Any]:
    if fields:
        wanted = set(fields)
        # The pending mark is kept whatever the fields: it says what the record is.
        items = [{k: v for k, v in item.items() if k in wanted or k == "pending"} for item in items]
    return page.document("records", items)


@TOOLS.tool(
    "lantern_memory_add",
    title="Add a memory record",
    description=(
        "Store one memory record and return it. The id is derived from kind, scope and "
        "content, so adding the same kind+scope+content again returns the existing record "
        "unchanged and commits nothing (safe to retry). This tool does not judge whether "
        "something is worth remembering, merge near-duplicates or resolve contradictions "
        "with other records: to replace a record, use lantern_memory_supersede." + _WRITE_NOTE
    ),
    answer=RecordObject,
    read_only=False,
    destructive=False,
    idempotent=True,
)
def _add(store: Store, args: AddArguments) -> Written[dict[str, Any]]:
    # Arguments not given pass the library's defaults on, the same ones the CLI shows.
    expires_at = parse_expiry(args.expires_at)
    assert not isinstance(expires_at, Unset)  # only UNSET parses to UNSET
    record = store.written(
        store.add,
        args.content,
        kind=args.kind,
        scope=args.scope,
        priority=args.priority,
        urgency=args.urgency,
        confidence=args.confidence,
        expires_at=expires_at,
        source_refs=args.source_refs or (),
        entities=args.entities or (),
        reason=args.reason,
    )
    return _record_result(record)


@TOOLS.tool(
    "lantern_memory_show",
    title="Show one memory record",
    description=(
        "Return one record, every field, by id or unique id prefix (4+ hex digits). "
        "Read-only. Archived and superseded records are returned too; check `status`. "
        "With `at`, the record as it was at that commit or time (read from git), even if "
        "it was deleted since."
    ),
    answer=ShownRecord,
    read_only=True,
    destructive=False,
    idempotent=True,
    quick=True,
)
def _show(store: Store, args: ShowArguments) -> Written[dict[str, Any]]:
    record = store.get(args.id, at=args.at, include_pending=args.include_pending)
    return Written(record.to_dict())


@TOOLS.tool(
    "lantern_memory_list",
    title="List memory records",
    description=(
        "Return one page of records matching the filters (default: active, unexpired, "
        "every scope and kind), in a fixed documented order: active first, then priority "
        "desc, urgency desc, updated_at desc, id asc. No other ranking is applied: weigh "
        "priority, urgency, confidence and recency yourself. Read-only. At most `limit` "
        f"records (default {DEFAULT_LIMIT}) per call; pass `next_offset` back as `offset` "
        "for the next page, and `fields` to receive only the fields you need."
    ),
    answer=listing("records", ListedRecord),
    read_only=True,
    destructive=False,
    idempotent=True,
    quick=True,
)
def _list(store: Store, args: ListArguments) -> Written[dict[str, Any]]:
    page = page_of(args)
    records = store.list(_query(store, args, page), include_pending=args.include_pending)
    return Written(_page([r.to_dict() for r in records], args.fields, page))


@TOOLS.tool(
    "lantern_memory_search",
    title="Search memory records",
    description=(
        "Return one page of records matching the query, most relevant first (ties by id), "
        "each with its `score` and the `mode` that ranked it: keyword (BM25), semantic "
        "(cosine of text embeddings: finds paraphrases) or hybrid (the two fused by the "
        "embedder's rule, which `explain` shows). Relevance only: no priority or recency "
        "weighting. The filters select the candidates before ranking. Takes the same "
        "filters, paging and `fields` as lantern_memory_list. Read-only."
    ),
    answer=listing("records", FoundRecord),
    read_only=True,
    destructive=False,
    idempotent=True,
    quick=True,
)
def _search(store: Store, args: SearchArguments) -> Written[dict[str, Any]]:
    page = page_of(args)
    # While the server embeds a large store in the background: keyword, and explain says so
    waiting = store.workspace.keyword_for_now(args.mode)
    hits = store.search(
        args.query,
        _query(store, args, page),
        mode="keyword" if waiting else args.mode,
        include_pending=args.include_pending,
        explain=args.explain,
    )
    found = [hit.to_dict() for hit in hits]
    for hit in found if waiting else ():
        if hit.get("explain") is not None:
            hit["explain"]["vectors"] = waiting
    return Written(_page(found, args.fields, page))


@TOOLS.tool(
    "lantern_memory_similar",
    title="Find records similar in meaning to one record",
    description=(
        "Return one page of active, unexpired records whose content is nearest in meaning "
        "to this record's (cosine of text embeddings, best first, ties by id; the record "
        "itself left out), each with its `score`. Needs the semantic extra on the server "
        "(semantic_unavailable otherwise). Read-only: it changes nothing."
    ),
    answer=listing("records", SimilarRecord),
    read_only=True,
    destructive=False,
    idempotent=True,
)
def _similar(store: Store, args: SimilarArguments) -> Written[dict[str, Any]]:
    page = page_of(args)
    more = page.one_more()
    hits = store.similar(args.id, limit=more.limit, offset=more.offset, min_score=args.min_score)
    return Written(page.document("records", [hit.to_dict() for hit in hits]))


@TOOLS.tool(
    "lantern_memory_dupes",
    title="Find pairs of near-duplicate records",
    description=(
        "Return one page of pairs of active, unexpired records whose contents say nearly "
        "the same thing: {a, b, score} with a's id < b's, by cosine desc then ids. Only a "
        "report: lantern never merges or archives on its own; to keep one of a pair, use "
        "lantern_memory_supersede or lantern_memory_archive. Needs the semantic extra on "
        "the server. Read-only."
    ),
    answer=listing("pairs", Pair),
    read_only=True,
    destructive=False,
    idempotent=True,
)
def _dupes(store: Store, args: DupesArguments) -> Written[dict[str, Any]]:
    page = page_of(args)
    more = page.one_more()
    pairs = store.dupes(
        scopes=args.scope or (), threshold=args.threshold, limit=more.limit, offset=more.offset
    )
    return Written(page.document("pairs", [pair.to_dict() for pair in pairs]))


@TOOLS.tool(
    "lantern_memory_archive",
    title="Archive a memory record",
    description=(
        "Set an active record's status to archived, so default lists and searches stop "
        "returning it. Nothing is deleted; lantern_memory_restore undoes it. Archiving an "
        "archived record changes nothing. A superseded record cannot be archived." + _WRITE_NOTE
    ),
    answer=RecordObject,
    read_only=False,
    destructive=True,
    idempotent=True,
)
def _archive(store: Store, args: ChangeArguments) -> Written[dict[str, Any]]:
    return _record_result(store.written(store.archive, args.id, reason=args.reason))


@TOOLS.tool(
    "lantern_memory_restore",
    title="Restore a memory record",
    description=(
        "Make an archived or superseded record active again. Restoring an active record "
        "changes nothing. It does not touch the record that superseded it." + _WRITE_NOTE
    ),
    answer=RecordObject,
    read_only=False,
    destructive=True,
    idempotent=True,
)
def _restore(store: Store, args: ChangeArguments) -> Written[dict[str, Any]]:
    return _record_result(store.written(store.restore, args.id, reason=args.reason))


@TOOLS.tool(
    "lantern_memory_supersede",
    title="Replace a memory record",
    description=(
        "Replace an active record with new content: writes a new record whose "
        "supersedes_id names the old one and marks the old one superseded, in one commit. "
        "Returns the new record. Kind, scope, priority, urgency and confidence default to "
        "the old record's. Not idempotent: once the old record is superseded, calling "
        "again fails with invalid_state and changes nothing." + _WRITE_NOTE
    ),
    answer=RecordObject,
    read_only=False,
    destructive=True,
    idempotent=False,
)
def _supersede(store: Store, args: SupersedeArguments) -> Written[dict[str, Any]]:
    record = store.written(
        store.supersede,
        args.id,
        args.content,
        kind=args.kind,
        scope=args.scope,
        priority=args.priority,
        urgency=args.urgency,
        confidence=args.confidence,
        expires_at=parse_expiry(args.expires_at),
        source_refs=args.source_refs or (),
        reason=args.reason,
    )
    return _record_result(record)


@TOOLS.tool(
    "lantern_memory_update",
    title="Update a record's importance fields",
    description=(
        "Change a record's priority, urgency, confidence or expiry, or add source refs; "
        "give at least one. The content, kind and scope never change (use "
        "lantern_memory_supersede). `expires_at: null` clears the expiry. Setting values "
        "a record already has changes nothing." + _WRITE_NOTE
    ),
    answer=RecordObject,
    read_only=False,
    destructive=True,
    idempotent=True,
)
def _update(store: Store, args: UpdateArguments) -> Written[dict[str, Any]]:
    # Left out keeps the expiry; null (or "none") clears it.
    given = "expires_at" in args.model_fields_set
    record = store.written(
        store.update,
        args.id,
        priority=args.priority,
        urgency=args.urgency,
        confidence=args.confidence,
        expires_at=parse_expiry(args.expires_at if given else UNSET),
        add_source_refs=args.add_source_refs or (),
        add_entities=args.entities or (),
        remove_entities=args.remove_entities or (),
        reason=args.reason,
    )
    return _record_result(record)


@TOOLS.tool(
    "lantern_memory_delete",
    title="Delete a memory record",
    description=(
        "Remove a record's file, in one commit with Lantern-Op: delete, for data that must "
        "not be kept (stored by mistake: a secret, something private). For a record that is "
        "merely outdated or wrong, use lantern_memory_archive or lantern_memory_supersede "
        "instead: they keep it. Git history still holds the text until a person purges it "
        "with git's own tools. Returns {id, commit, record}, the record as it was. Not "
        "idempotent: calling again fails with not_found." + _WRITE_NOTE
    ),
    answer=Deletion,
    read_only=False,
    destructive=True,
    idempotent=False,
)
def _delete(store: Store, args: ChangeArguments) -> Written[dict[str, Any]]:
    return store.written(store.delete, args.id, reason=args.reason).map(_to_dict)


@TOOLS.tool(
    "lantern_memory_history",
    title="History of a memory record",
    description=(
        "Return one page of the commits that changed a record, newest first: when, who, "
        "which operation and actor (cli, mcp, api, sync), the reason given, and each "
        "field's old and new value; page with `limit` and `offset` as the list tools do. "
        "Read from git; read-only."
    ),
    answer=listing("history", HistoryEntry, id=(StoredId, ...)),
    read_only=True,
    destructive=False,
    idempotent=True,
)
def _history(store: Store, args: HistoryArguments) -> Written[dict[str, Any]]:
    page = page_of(args)
    more = page.one_more()
    history = store.record_history(args.id, limit=more.limit, offset=more.offset)
    entries = [entry.to_dict() for entry in history.entries]
    return Written({"id": history.id, **page.document("history", entries)})


@TOOLS.tool(
    "lantern_diff",
    title="What changed in memory between two points",
    description=(
        "Return the records added, removed and changed, field by field (old and new "
        "values), from `from` (default: the last commit) to `to` (default: the working "
        "files, so uncommitted hand edits show). The same object as `lantern diff --json`. "
        "Read from git; read-only."
    ),
    answer=Diff,
    read_only=True,
    destructive=False,
    idempotent=True,
)
def _diff(store: Store, args: DiffArguments) -> Written[dict[str, Any]]:
    if args.to is not None and args.from_ is None:
        raise InvalidInput("from: is required when to is given", code="usage_error")
    return Written(store.diff(args.from_, args.to).to_dict())


@TOOLS.tool(
    "lantern_revert",
    title="Undo one lantern commit",
    description=(
        "Undo one commit lantern made (its hash from lantern_memory_history), as a new "
        "commit with Lantern-Op: revert. Record by record: what that commit changed goes "
        "back; later changes to other fields of the same records stay. Refused, changing "
        "nothing, for a merge commit (merge_commit), a commit lantern did not make "
        "(not_lantern_commit), or when a field it changed was changed again since "
        "(revert_conflict). Reverting an already undone commit changes nothing." + _WRITE_NOTE
    ),
    answer=Reverted,
    read_only=False,
    destructive=True,
    idempotent=True,
)
def _revert(store: Store, args: RevertArguments) -> Written[dict[str, Any]]:
    return store.written(store.revert, args.commit, reason=args.reason).map(_to_dict)


@TOOLS.tool(
    "lantern_status",
    title="Status of the memory store",
    description=(
        "Return the store this server serves: its path, format, record counts by status and "
        "kind, broken record files, index state, embedder and default search mode, branch, "
        "head and how far it is ahead of or "
        "behind its upstream. The same object as `lantern status --json`. Read-only."
    ),
    answer=AnyObject,
    read_only=True,
    destructive=False,
    idempotent=True,
)
def _status(store: Store, args: NoArguments) -> Written[dict[str, Any]]:
    return Written(store.status())


# Review is read-only over MCP on purpose: an agent never accepts its own writes
# (docs/review.md, no self-approval); accept and reject are for a person, on the CLI.
@TOOLS.tool(
    "lantern_review_list",
    title="Memory writes awaiting review",
    description=(
        "Return the changes writers left on review branches (lantern/review/<name>) that no "
        "person has accepted yet, record by record: added records whole, changed fields "
        "old -> new, removed records, with the commits, actors, authors and reasons that "
        "made them, and each branch's `tip` (the commit a person's decision is bound to). "
        "The same branches as `lantern review --json`, one page of them by name (`limit`, "
        "`offset`, `next_offset` as the list tools). Read-only: accepting and rejecting "
        "are for a person."
    ),
    answer=listing("branches", AnyObject),
    read_only=True,
    destructive=False,
    idempotent=True,
)
def _review_list(store: Store, args: ReviewListArguments) -> Written[dict[str, Any]]:
    page = page_of(args)
    more = page.one_more()
    review = store.review_list(limit=more.limit, offset=more.offset)
    return Written(page.document("branches", [b.to_dict() for b in review.branches]))


RECORD_TOOLS = TOOLS.specs
