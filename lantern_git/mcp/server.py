"""The MCP server: lantern's tools over stdio, each a thin call into :class:`Store`.

The tools hold no policy. They add, show, list, search and change records exactly as the CLI
does (same library calls, same record objects, same error codes and messages); deciding what
becomes memory and what to put in a context window stays with the agent that calls them.

The server keeps one store open for its whole life, watching the working tree
(``Store(watch=True)``, see :mod:`lantern_git.index.watch`): a read with nothing changed answers
from the searcher it kept, and a CLI write, a hand edit or a ``git pull`` is seen by the next
call, from its notifications or, where they cannot be trusted, from the full freshness sweep.
Its repository handle is kept too: libgit2 checks the files behind its refs and its index for
changes before it uses them. Calls run one at a time in a worker thread: the store is not
thread-safe, and the writer lock serializes the server against other processes.

The SDK is imported only by :func:`build_server` and :func:`serve`, which only ``lantern mcp``
calls, so the rest of lantern never pays for it.
"""

from __future__ import annotations

import json
import sys
import threading
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..errors import InvalidInput, LanternError
from ..fields import (
    DEFAULT_LIMIT,
    DEFAULT_STATUS,
    DUPE_THRESHOLD,
    FIELDS,
    RECORD_KEYS,
    UNSET,
    choose_fields,
)
from ..paging import Page
from ..query import RecordQuery
from ..timespec import parse_expiry
from ..written import Written
from .evidence_tools import EVIDENCE_TOOLS
from .spec import (
    EXPLAIN_SCHEMA,
    HIT_EXPLAIN_SCHEMA,
    HIT_MODE_SCHEMA,
    MODE_SCHEMA,
    REASON_SCHEMA,
    ToolSpec,
    at_schema,
    object_schema,
    page_of,
    page_properties,
    page_schema,
)

if TYPE_CHECKING:
    from mcp.server.lowlevel import Server

    from ..record import Record
    from ..store import Store

SERVER_NAME = "lantern"

INSTRUCTIONS = (
    "Lantern stores an agent's memory records (facts, preferences, goals, constraints, task "
    "state, observations, hypotheses) as markdown files in a git repository; every write is a "
    "commit. These tools store and retrieve records. They do not decide what is worth "
    "remembering, resolve contradictions or rank by hidden salience: list returns records in "
    "one documented order (active first, then priority desc, urgency desc, updated_at desc, id "
    "asc) and search by relevance (keyword, or with the semantic extra by meaning too: "
    "lantern_memory_similar and lantern_memory_dupes find records that say the same "
    "thing). Choosing which records to use is up to you. List "
    "and search return at most `limit` records per call; page with `offset` and "
    "`next_offset`, and ask only for the `fields` you need. The evidence a memory comes from "
    "(a transcript, a note, a tool output) can be stored verbatim with lantern_source_add and "
    "found with lantern_source_search; pass a hit's `ref` in `source_refs` to cite those lines, "
    "and lantern_verify later says whether each citation still holds."
)

# ---------------------------------------------------------------------------- schemas
# Built from the field table in fields.py, where each record field's type, range, pattern,
# default and description is written once; only the tools' own arguments are spelled out here.

_ID_PREFIX = {
    "type": "string",
    "pattern": "^[0-9a-fA-F]{4,16}$",
    "description": "A record id (16 hex digits) or a unique prefix of at least 4.",
}

_RECORD_PROPERTIES: dict[str, dict] = {name: spec.value_schema() for name, spec in FIELDS.items()}

RECORD_SCHEMA = {
    "type": "object",
    "properties": _RECORD_PROPERTIES,
    "required": list(RECORD_KEYS),
    "additionalProperties": False,
}

_INCLUDE_PENDING = {
    "type": "boolean",
    "default": False,
    "description": (
        "Also see the changes awaiting review, as if accepted: a record a "
        "review branch added or changed is returned as that branch has it, marked "
        '"pending": true; one it removed is left out.'
    ),
}
# The mark a record read with include_pending carries when a review branch changed it.
_PENDING_PROPERTY = {
    "pending": {
        "type": "boolean",
        "const": True,
        "description": "Present (true) on a record awaiting review, read with include_pending.",
    }
}
SHOWN_SCHEMA = {**RECORD_SCHEMA, "properties": {**_RECORD_PROPERTIES, **_PENDING_PROPERTY}}


def _page_schema(item_properties: dict) -> dict:
    item = {"type": "object", "properties": item_properties, "additionalProperties": False}
    return page_schema("records", item)


_HISTORY_ENTRY = {
    "type": "object",
    "properties": {
        "commit": {"type": "string"},
        "time": {"type": "integer"},
        "author": {"type": "string"},
        "op": {"type": ["string", "null"]},
        "actor": {"type": ["string", "null"]},
        "records": {"type": "array", "items": {"type": "string"}},
        "reason": {"type": ["string", "null"]},
        "summary": {"type": "string"},
        "changes": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {"field": {"type": "string"}, "old": {}, "new": {}},
            },
        },
        "problem": {"type": ["string", "null"]},
    },
}

HISTORY_SCHEMA = page_schema(
    "history", _HISTORY_ENTRY, {"id": {"type": "string", "pattern": "^[0-9a-f]{16}$"}}
)


_SCORED = {"score": {"type": "number"}, "mode": HIT_MODE_SCHEMA}
_EXPLAINED = {**_SCORED, "explain": HIT_EXPLAIN_SCHEMA}
_DUPES_PAGE = page_schema(
    "pairs",
    object_schema(
        {"a": RECORD_SCHEMA, "b": RECORD_SCHEMA, "score": {"type": "number"}}, ("a", "b", "score")
    ),
)


def _field(name: str, *, default: bool = True, **changes: Any) -> dict:
    """A record field's input schema from the table, with ``changes`` (a description, a type)."""
    return {**FIELDS[name].input_schema(default=default), **changes}


def _filter_properties(search: bool) -> dict[str, dict]:
    fields = [*RECORD_KEYS, "score", "mode", "explain"] if search else list(RECORD_KEYS)
    scope, status = FIELDS["scope"], FIELDS["status"]
    properties: dict[str, dict] = {}
    if search:
        properties["query"] = {
            "type": "string",
            "minLength": 1,
            "description": (
                "What to look for: keywords (stemmed; any word may match), or in semantic and "
                "hybrid mode a question or phrase in plain words."
            ),
        }
        properties["mode"] = MODE_SCHEMA
        properties["explain"] = EXPLAIN_SCHEMA
    properties.update(
        {
            "scope": {
                "type": "array",
                # Not the scope pattern: a trailing * matches a prefix.
                "items": {
                    "type": "string",
                    "minLength": scope.min_length,
                    "maxLength": scope.max_length,
                },
                "description": (
                    "Only records in one of these scopes; a trailing * matches a prefix "
                    "('user:*'). Default: every scope."
                ),
            },
            "kind": {
                "type": "array",
                "items": FIELDS["kind"].value_schema(),
                "description": "Only records of one of these kinds. Default: every kind.",
            },
            "status": {
                **status.value_schema(),
                "enum": [*(status.enum or ()), "all"],
                "default": DEFAULT_STATUS,
                "description": "Only records with this status, or 'all'.",
            },
            "min_priority": {
                **FIELDS["priority"].value_schema(),
                "description": "Only records with priority >= this.",
            },
            "min_urgency": {
                **FIELDS["urgency"].value_schema(),
                "description": "Only records with urgency >= this.",
            },
        }
    )
    if not search:
        properties["cites"] = {
            "type": "string",
            "pattern": "^[0-9a-fA-F]{4,16}$",
            "description": "Only records with a source: reference to this source id (or prefix).",
        }
        properties["query"] = {
            "type": "string",
            "description": "Only records whose content matches these keywords; order unchanged.",
        }
    properties.update(
        {
            "include_expired": {
                "type": "boolean",
                "default": False,
                "description": "Also return records whose expires_at has passed.",
            },
            "include_pending": _INCLUDE_PENDING,
            **page_properties("records"),
            "fields": {
                "type": "array",
                "items": {"type": "string", "enum": fields},
                "minItems": 1,
                "uniqueItems": True,
                "description": (
                    "Return only these fields of each record (in the schema's order). "
                    "Default: every field."
                ),
            },
        }
    )
    return properties


_object = object_schema


def _add_properties(defaults: bool) -> dict[str, dict]:
    """What add takes (with the library's defaults), or supersede (the old record's values)."""

    def inherited(name: str) -> dict:
        described = f"{FIELDS[name].description} Default: the old record's {name}."
        return _field(name, default=False, description=described.strip())

    properties = {
        name: _field(name) if defaults else inherited(name)
        for name in ("kind", "scope", "priority", "urgency", "confidence")
    }
    properties.update(
        {
            "expires_at": _field("expires_at"),
            "source_refs": _field("source_refs"),
            "reason": REASON_SCHEMA,
        }
    )
    return properties


def _update_properties() -> dict[str, dict]:
    expires_at = FIELDS["expires_at"]
    return {
        "id": _ID_PREFIX,
        "priority": _field("priority", default=False),
        "urgency": _field("urgency", default=False),
        "confidence": _field("confidence", default=False),
        "expires_at": _field(
            "expires_at",
            type=[expires_at.type, *expires_at.accepts, "null"],
            description=f"{expires_at.description} null clears the expiry.",
        ),
        "add_source_refs": _field(
            "source_refs", description="Source refs to append (duplicates are skipped)."
        ),
        "reason": REASON_SCHEMA,
    }


# ---------------------------------------------------------------------------- tools


def _record_result(written: Written[Record]) -> Written[dict]:
    return written.map(lambda record: record.to_dict())


def _add(store: Store, args: dict) -> Written[dict]:
    # Options not given are left to the library's defaults, the same ones the CLI shows.
    options = {k: v for k, v in args.items() if k != "content"}
    if "expires_at" in options:
        options["expires_at"] = parse_expiry(options["expires_at"])
    return _record_result(store.written(store.add, args["content"], **options))


def _show(store: Store, args: dict) -> Written[dict]:
    record = store.get(
        args["id"], at=args.get("at"), include_pending=args.get("include_pending", False)
    )
    return Written(record.to_dict())


def _archive(store: Store, args: dict) -> Written[dict]:
    return _record_result(store.written(store.archive, args["id"], reason=args.get("reason")))


def _restore(store: Store, args: dict) -> Written[dict]:
    return _record_result(store.written(store.restore, args["id"], reason=args.get("reason")))


def _supersede(store: Store, args: dict) -> Written[dict]:
    record = store.written(
        store.supersede,
        args["id"],
        args["content"],
        kind=args.get("kind"),
        scope=args.get("scope"),
        priority=args.get("priority"),
        urgency=args.get("urgency"),
        confidence=args.get("confidence"),
        expires_at=parse_expiry(args.get("expires_at")),
        source_refs=args.get("source_refs", ()),
        reason=args.get("reason"),
    )
    return _record_result(record)


def _update(store: Store, args: dict) -> Written[dict]:
    record = store.written(
        store.update,
        args["id"],
        priority=args.get("priority"),
        urgency=args.get("urgency"),
        confidence=args.get("confidence"),
        # Left out keeps the expiry; null (or "none") clears it.
        expires_at=parse_expiry(args.get("expires_at", UNSET)),
        add_source_refs=args.get("add_source_refs", ()),
        reason=args.get("reason"),
    )
    return _record_result(record)


def _query(args: dict, page: Page, *, search: bool) -> RecordQuery:
    """The list or search filters in ``args``; a search's ``query`` is its text, not a filter."""
    options = {
        k: v
        for k, v in args.items()
        if k not in ("fields", "limit", "offset", "include_pending", "mode", "explain")
        and not (search and k == "query")
    }
    # One more than asked tells whether another page follows, without counting them all.
    return RecordQuery.from_options(**options, page=page.one_more())


def _page(items: list[dict], args: dict, page: Page) -> dict:
    fields = args.get("fields")
    if fields:
        wanted = set(fields)
        # The pending mark is kept whatever the fields: it says what the record is.
        items = [{k: v for k, v in item.items() if k in wanted or k == "pending"} for item in items]
    return page.document("records", items)


def _list(store: Store, args: dict) -> Written[dict]:
    page = page_of(args)
    records = store.list(
        _query(args, page, search=False), include_pending=args.get("include_pending", False)
    )
    return Written(_page([r.to_dict() for r in records], args, page))


def _search(store: Store, args: dict) -> Written[dict]:
    page = page_of(args)
    hits = store.search(
        args["query"],
        _query(args, page, search=True),
        mode=args.get("mode"),
        include_pending=args.get("include_pending", False),
        explain=args.get("explain", False),
    )
    return Written(_page([hit.to_dict() for hit in hits], args, page))


def _similar(store: Store, args: dict) -> Written[dict]:
    page = page_of(args)
    more = page.one_more()
    hits = store.similar(
        args["id"], limit=more.limit, offset=more.offset, min_score=args.get("min_score")
    )
    return Written(page.document("records", [hit.to_dict() for hit in hits]))


def _dupes(store: Store, args: dict) -> Written[dict]:
    page = page_of(args)
    more = page.one_more()
    pairs = store.dupes(
        scopes=args.get("scope", ()),
        threshold=args.get("threshold", DUPE_THRESHOLD),
        limit=more.limit,
        offset=more.offset,
    )
    return Written(page.document("pairs", [pair.to_dict() for pair in pairs]))


def _history(store: Store, args: dict) -> Written[dict]:
    page = page_of(args)
    more = page.one_more()
    history = store.record_history(args["id"], limit=more.limit, offset=more.offset)
    entries = [entry.to_dict() for entry in history.entries]
    return Written({"id": history.id, **page.document("history", entries)})


def _to_dict(value: Any) -> dict:
    return value.to_dict()


def _delete(store: Store, args: dict) -> Written[dict]:
    return store.written(store.delete, args["id"], reason=args.get("reason")).map(_to_dict)


def _diff(store: Store, args: dict) -> Written[dict]:
    if "to" in args and "from" not in args:
        raise InvalidInput("from: is required when to is given", code="usage_error")
    return Written(store.diff(args.get("from"), args.get("to")).to_dict())


def _revert(store: Store, args: dict) -> Written[dict]:
    return store.written(store.revert, args["commit"], reason=args.get("reason")).map(_to_dict)


def _status(store: Store, args: dict) -> Written[dict]:
    return Written(store.status())


def _review_list(store: Store, args: dict) -> Written[dict]:
    page = page_of(args)
    more = page.one_more()
    review = store.review_list(limit=more.limit, offset=more.offset)
    return Written(page.document("branches", [b.to_dict() for b in review.branches]))


_WRITE_NOTE = (
    " Each change is one git commit with the trailer Lantern-Actor: mcp, and "
    "`lantern_memory_history` shows every change."
)


_CHANGES = {
    "type": "array",
    "items": {
        "type": "object",
        "properties": {"field": {"type": "string"}, "old": {}, "new": {}},
        "required": ["field", "old", "new"],
    },
}

DIFF_SCHEMA = {
    "type": "object",
    "properties": {
        "from": {"type": ["string", "null"]},
        "to": {"type": ["string", "null"]},
        "worktree": {"type": "boolean"},
        "added": {"type": "array", "items": RECORD_SCHEMA},
        "removed": {"type": "array", "items": RECORD_SCHEMA},
        "changed": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "id": {"type": "string"},
                    "content": {"type": "string"},
                    "changes": _CHANGES,
                },
                "required": ["id", "content", "changes"],
            },
        },
        "problems": {"type": "array", "items": {"type": "object"}},
    },
    "required": ["from", "to", "worktree", "added", "removed", "changed", "problems"],
    "additionalProperties": False,
}

REVERT_SCHEMA = {
    "type": "object",
    "properties": {
        "reverted": {"type": "string"},
        "commit": {"type": ["string", "null"]},
        "records": {"type": "array", "items": {"type": "string"}},
        "summary": {"type": "string"},
    },
    "required": ["reverted", "commit", "records", "summary"],
    "additionalProperties": False,
}

DELETION_SCHEMA = {
    "type": "object",
    "properties": {
        "id": {"type": "string", "pattern": "^[0-9a-f]{16}$"},
        "commit": {"type": ["string", "null"]},
        "record": RECORD_SCHEMA,
    },
    "required": ["id", "commit", "record"],
    "additionalProperties": False,
}

TOOLS: tuple[ToolSpec, ...] = (
    ToolSpec(
        name="lantern_memory_add",
        title="Add a memory record",
        description=(
            "Store one memory record and return it. The id is derived from kind, scope and "
            "content, so adding the same kind+scope+content again returns the existing record "
            "unchanged and commits nothing (safe to retry). This tool does not judge whether "
            "something is worth remembering, merge near-duplicates or resolve contradictions "
            "with other records: to replace a record, use lantern_memory_supersede." + _WRITE_NOTE
        ),
        input_schema=_object(
            {"content": _field("content"), **_add_properties(defaults=True)}, ("content", "kind")
        ),
        output_schema=RECORD_SCHEMA,
        read_only=False,
        destructive=False,
        idempotent=True,
        call=_add,
    ),
    ToolSpec(
        name="lantern_memory_show",
        title="Show one memory record",
        description=(
            "Return one record, every field, by id or unique id prefix (4+ hex digits). "
            "Read-only. Archived and superseded records are returned too; check `status`. "
            "With `at`, the record as it was at that commit or time (read from git), even if "
            "it was deleted since."
        ),
        input_schema=_object(
            {
                "id": _ID_PREFIX,
                "at": at_schema("Read the record as it was at"),
                "include_pending": _INCLUDE_PENDING,
            },
            ("id",),
        ),
        output_schema=SHOWN_SCHEMA,
        read_only=True,
        destructive=False,
        idempotent=True,
        call=_show,
    ),
    ToolSpec(
        name="lantern_memory_list",
        title="List memory records",
        description=(
            "Return one page of records matching the filters (default: active, unexpired, "
            "every scope and kind), in a fixed documented order: active first, then priority "
            "desc, urgency desc, updated_at desc, id asc. No other ranking is applied: weigh "
            "priority, urgency, confidence and recency yourself. Read-only. At most `limit` "
            f"records (default {DEFAULT_LIMIT}) per call; pass `next_offset` back as `offset` "
            "for the next page, and `fields` to receive only the fields you need."
        ),
        input_schema=_object(_filter_properties(search=False)),
        output_schema=_page_schema({**_RECORD_PROPERTIES, **_PENDING_PROPERTY}),
        read_only=True,
        destructive=False,
        idempotent=True,
        call=_list,
    ),
    ToolSpec(
        name="lantern_memory_search",
        title="Search memory records",
        description=(
            "Return one page of records matching the query, most relevant first (ties by id), "
            "each with its `score` and the `mode` that ranked it: keyword (BM25), semantic "
            "(cosine of text embeddings: finds paraphrases) or hybrid (a weighted sum of "
            "the two). Relevance only: no priority or recency weighting. The filters "
            "select the candidates before ranking. Takes the same filters, paging and "
            "`fields` as lantern_memory_list. Read-only."
        ),
        input_schema=_object(_filter_properties(search=True), ("query",)),
        output_schema=_page_schema({**_RECORD_PROPERTIES, **_PENDING_PROPERTY, **_EXPLAINED}),
        read_only=True,
        destructive=False,
        idempotent=True,
        call=_search,
    ),
    ToolSpec(
        name="lantern_memory_similar",
        title="Find records similar in meaning to one record",
        description=(
            "Return one page of active, unexpired records whose content is nearest in meaning "
            "to this record's (cosine of text embeddings, best first, ties by id; the record "
            "itself left out), each with its `score`. Needs the semantic extra on the server "
            "(semantic_unavailable otherwise). Read-only: it changes nothing."
        ),
        input_schema=_object(
            {
                "id": _ID_PREFIX,
                "min_score": {
                    "type": "number",
                    "minimum": -1,
                    "maximum": 1,
                    "description": "Only records with a cosine of at least this.",
                },
                **page_properties("records"),
            },
            ("id",),
        ),
        output_schema=_page_schema({**_RECORD_PROPERTIES, **_SCORED}),
        read_only=True,
        destructive=False,
        idempotent=True,
        call=_similar,
    ),
    ToolSpec(
        name="lantern_memory_dupes",
        title="Find pairs of near-duplicate records",
        description=(
            "Return one page of pairs of active, unexpired records whose contents say nearly "
            "the same thing: {a, b, score} with a's id < b's, by cosine desc then ids. Only a "
            "report: lantern never merges or archives on its own; to keep one of a pair, use "
            "lantern_memory_supersede or lantern_memory_archive. Needs the semantic extra on "
            "the server. Read-only."
        ),
        input_schema=_object(
            {
                "scope": {
                    "type": "array",
                    "items": {"type": "string"},
                    "description": "Only records in these scopes ('user:*' a prefix).",
                },
                "threshold": {
                    "type": "number",
                    "minimum": -1,
                    "maximum": 1,
                    "default": DUPE_THRESHOLD,
                    "description": "Report pairs with a cosine of at least this.",
                },
                **page_properties("records"),
            }
        ),
        output_schema=_DUPES_PAGE,
        read_only=True,
        destructive=False,
        idempotent=True,
        call=_dupes,
    ),
    ToolSpec(
        name="lantern_memory_archive",
        title="Archive a memory record",
        description=(
            "Set an active record's status to archived, so default lists and searches stop "
            "returning it. Nothing is deleted; lantern_memory_restore undoes it. Archiving an "
            "archived record changes nothing. A superseded record cannot be archived." + _WRITE_NOTE
        ),
        input_schema=_object({"id": _ID_PREFIX, "reason": REASON_SCHEMA}, ("id",)),
        output_schema=RECORD_SCHEMA,
        read_only=False,
        destructive=True,
        idempotent=True,
        call=_archive,
    ),
    ToolSpec(
        name="lantern_memory_restore",
        title="Restore a memory record",
        description=(
            "Make an archived or superseded record active again. Restoring an active record "
            "changes nothing. It does not touch the record that superseded it." + _WRITE_NOTE
        ),
        input_schema=_object({"id": _ID_PREFIX, "reason": REASON_SCHEMA}, ("id",)),
        output_schema=RECORD_SCHEMA,
        read_only=False,
        destructive=True,
        idempotent=True,
        call=_restore,
    ),
    ToolSpec(
        name="lantern_memory_supersede",
        title="Replace a memory record",
        description=(
            "Replace an active record with new content: writes a new record whose "
            "supersedes_id names the old one and marks the old one superseded, in one commit. "
            "Returns the new record. Kind, scope, priority, urgency and confidence default to "
            "the old record's. Not idempotent: once the old record is superseded, calling "
            "again fails with invalid_state and changes nothing." + _WRITE_NOTE
        ),
        input_schema=_object(
            {"id": _ID_PREFIX, "content": _field("content"), **_add_properties(defaults=False)},
            ("id", "content"),
        ),
        output_schema=RECORD_SCHEMA,
        read_only=False,
        destructive=True,
        idempotent=False,
        call=_supersede,
    ),
    ToolSpec(
        name="lantern_memory_update",
        title="Update a record's importance fields",
        description=(
            "Change a record's priority, urgency, confidence or expiry, or add source refs; "
            "give at least one. The content, kind and scope never change (use "
            "lantern_memory_supersede). `expires_at: null` clears the expiry. Setting values "
            "a record already has changes nothing." + _WRITE_NOTE
        ),
        input_schema=_object(
            _update_properties(),
            ("id",),
        ),
        output_schema=RECORD_SCHEMA,
        read_only=False,
        destructive=True,
        idempotent=True,
        call=_update,
    ),
    ToolSpec(
        name="lantern_memory_delete",
        title="Delete a memory record",
        description=(
            "Remove a record's file, in one commit with Lantern-Op: delete, for data that must "
            "not be kept (stored by mistake: a secret, something private). For a record that is "
            "merely outdated or wrong, use lantern_memory_archive or lantern_memory_supersede "
            "instead: they keep it. Git history still holds the text until a person purges it "
            "with git's own tools. Returns {id, commit, record}, the record as it was. Not "
            "idempotent: calling again fails with not_found." + _WRITE_NOTE
        ),
        input_schema=_object({"id": _ID_PREFIX, "reason": REASON_SCHEMA}, ("id",)),
        output_schema=DELETION_SCHEMA,
        read_only=False,
        destructive=True,
        idempotent=False,
        call=_delete,
    ),
    ToolSpec(
        name="lantern_memory_history",
        title="History of a memory record",
        description=(
            "Return one page of the commits that changed a record, newest first: when, who, "
            "which operation and actor (cli, mcp, api, sync), the reason given, and each "
            "field's old and new value; page with `limit` and `offset` as the list tools do. "
            "Read from git; read-only."
        ),
        input_schema=_object({"id": _ID_PREFIX, **page_properties("commits")}, ("id",)),
        output_schema=HISTORY_SCHEMA,
        read_only=True,
        destructive=False,
        idempotent=True,
        call=_history,
    ),
    ToolSpec(
        name="lantern_diff",
        title="What changed in memory between two points",
        description=(
            "Return the records added, removed and changed, field by field (old and new "
            "values), from `from` (default: the last commit) to `to` (default: the working "
            "files, so uncommitted hand edits show). The same object as `lantern diff --json`. "
            "Read from git; read-only."
        ),
        input_schema=_object(
            {
                "from": at_schema("The earlier point (default HEAD)"),
                "to": at_schema("The later point (default: the working files)"),
            }
        ),
        output_schema=DIFF_SCHEMA,
        read_only=True,
        destructive=False,
        idempotent=True,
        call=_diff,
    ),
    ToolSpec(
        name="lantern_revert",
        title="Undo one lantern commit",
        description=(
            "Undo one commit lantern made (its hash from lantern_memory_history), as a new "
            "commit with Lantern-Op: revert. Record by record: what that commit changed goes "
            "back; later changes to other fields of the same records stay. Refused, changing "
            "nothing, for a merge commit (merge_commit), a commit lantern did not make "
            "(not_lantern_commit), or when a field it changed was changed again since "
            "(revert_conflict). Reverting an already undone commit changes nothing." + _WRITE_NOTE
        ),
        input_schema=_object(
            {
                "commit": {
                    "type": "string",
                    "minLength": 1,
                    "description": "The commit to undo: a hash (7+ hex digits), HEAD~2, a tag.",
                },
                "reason": REASON_SCHEMA,
            },
            ("commit",),
        ),
        output_schema=REVERT_SCHEMA,
        read_only=False,
        destructive=True,
        idempotent=True,
        call=_revert,
    ),
    ToolSpec(
        name="lantern_status",
        title="Status of the memory store",
        description=(
            "Return the store this server serves: its path, format, record counts by status and "
            "kind, broken record files, index state, embedder and default search mode, branch, "
            "head and how far it is ahead of or "
            "behind its upstream. The same object as `lantern status --json`. Read-only."
        ),
        input_schema=_object({}),
        output_schema={"type": "object"},
        read_only=True,
        destructive=False,
        idempotent=True,
        call=_status,
    ),
    # Review is read-only over MCP on purpose: an agent never accepts its own writes
    # (docs/review.md, no self-approval); accept and reject are for a person, on the CLI.
    ToolSpec(
        name="lantern_review_list",
        title="Memory writes awaiting review",
        description=(
            "Return the changes writers left on review branches (lantern/review/<name>) that no "
            "person has accepted yet, record by record: added records whole, changed fields "
            "old -> new, removed records, with the commits, actors and authors that made them. "
            "The same branches as `lantern review --json`, one page of them by name (`limit`, "
            "`offset`, `next_offset` as the list tools). Read-only: accepting and rejecting "
            "are for a person."
        ),
        input_schema=_object(page_properties("review branches")),
        output_schema=page_schema("branches", {"type": "object"}),
        read_only=True,
        destructive=False,
        idempotent=True,
        call=_review_list,
    ),
)

ALL_TOOLS: tuple[ToolSpec, ...] = TOOLS + EVIDENCE_TOOLS
TOOLS_BY_NAME = {tool.name: tool for tool in ALL_TOOLS}

# ---------------------------------------------------------------------------- arguments


def check_arguments(tool: ToolSpec, arguments: dict | None) -> dict:
    """The arguments with their JSON types checked; ranges and enums are the library's to check.

    Leaving value checks to the library keeps the codes and messages the same as the CLI's.
    """
    if arguments is None:
        arguments = {}
    if not isinstance(arguments, dict):
        raise InvalidInput("arguments: must be an object", code="usage_error")
    properties = tool.input_schema["properties"]
    for name in arguments:
        if name not in properties:
            raise InvalidInput(
                f"{name}: unknown argument for {tool.name}; it takes: {', '.join(properties)}",
                code="usage_error",
            )
    for name in tool.input_schema["required"]:
        if name not in arguments:
            raise InvalidInput(f"{name}: is required", code="usage_error")
    checked = {}
    for name, value in arguments.items():
        checked[name] = _check_type(name, value, properties[name])
    fields = checked.get("fields")
    if fields:  # the CLI's --fields check, word for word
        choose_fields(fields, tuple(properties["fields"]["items"]["enum"]))
    return checked


_TYPE_WORDS = {
    "integer": "an integer",
    "number": "a number",
    "string": "a string",
    "boolean": "true or false",
    "array": "a list",
    "null": "null",
}


def _check_type(name: str, value: Any, schema: dict) -> Any:
    types = schema.get("type")
    types = [types] if isinstance(types, str) else list(types or [])
    if not types and "enum" in schema:
        types = ["string"]
    for kind in types:
        ok, converted = _is(kind, value)
        if ok:
            if kind == "array":
                items = schema.get("items", {})
                return [_check_type(f"{name}[{i}]", v, items) for i, v in enumerate(converted)]
            return converted
    # A lone string where a list of strings is expected is taken as a list of one, as an agent
    # writing {"scope": "user:ana"} means.
    if types == ["array"] and isinstance(value, str):
        return [_check_type(f"{name}[0]", value, schema.get("items", {}))]
    expected = " or ".join(_TYPE_WORDS[t] for t in types)
    raise InvalidInput(f"{name}: must be {expected}, got {_json_type(value)}", code="invalid_field")


def _is(kind: str, value: Any) -> tuple[bool, Any]:
    if kind == "integer":
        if isinstance(value, bool):
            return False, value
        if isinstance(value, int):
            return True, value
        # JSON has one number type; 50.0 is the integer 50 to a JSON Schema validator.
        if isinstance(value, float) and value.is_integer():
            return True, int(value)
        return False, value
    if kind == "number":
        return isinstance(value, (int, float)) and not isinstance(value, bool), value
    if kind == "string":
        return isinstance(value, str), value
    if kind == "boolean":
        return isinstance(value, bool), value
    if kind == "array":
        return isinstance(value, list), value
    if kind == "null":
        return value is None, value
    return True, value


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return f"the number {value}"
    if isinstance(value, str):
        shown = value if len(value) <= 40 else value[:37] + "..."
        return f"the string {shown!r}"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__


# ---------------------------------------------------------------------------- running calls


@dataclass
class StoreTarget:
    """Where the server's store is, and how to open it for each call."""

    path: str
    create_on_write: bool = False
    author: str | None = None
    # ``lantern mcp --review``: True; None leaves it to LANTERN_REVIEW and lantern.yaml.
    review: bool | None = None

    def open(self, warn: Callable[[str], None], watch: bool = False) -> Store:
        from ..store import Store

        return Store(
            self.path,
            actor="mcp",
            author=self.author,
            create_on_write=self.create_on_write,
            warn=warn,
            watch=watch,
            review=self.review,
        )


@dataclass
class Outcome:
    """One tool call's answer: a JSON object, whether it is an error, the commit it made, and
    the store's warnings (such as a hand-broken file that was skipped)."""

    value: dict
    is_error: bool = False
    commit: str | None = None
    warnings: list[str] = field(default_factory=list)
    # The commit went to a review branch: its record awaits a person (docs/review.md).
    pending: bool = False

    def meta(self) -> dict | None:
        meta: dict[str, Any] = {}
        if self.commit:
            meta["lantern/commit"] = self.commit
        if self.pending:
            meta["pending"] = True
        if self.warnings:
            meta["lantern/warnings"] = self.warnings
        return meta or None


class ToolRunner:
    """Runs tool calls one at a time against the store it keeps open (and watches)."""

    def __init__(self, target: StoreTarget):
        self.target = target
        self._lock = threading.Lock()
        self._store: Store | None = None
        self._warn: Callable[[str], None] = _stderr

    def _open(self) -> Store:
        store = self._store
        if store is None or not store.exists:
            # Until the store exists (a default store, created by its first write), each call
            # opens it afresh; from then on the one kept store watches it.
            if store is not None:
                store.close()
            store = self.target.open(lambda message: self._warn(message), watch=True)
            self._store = store
        return store

    def close(self) -> None:
        with self._lock:
            store, self._store = self._store, None
            if store is not None:
                store.close()

    def run(self, name: str, arguments: dict | None) -> Outcome:
        tool = TOOLS_BY_NAME[name]
        warnings: list[str] = []

        def warn(message: str) -> None:
            warnings.append(message)
            print(message, file=sys.stderr)

        with self._lock:
            self._warn = warn
            try:
                args = check_arguments(tool, arguments)
                store = self._open()
                written = tool.call(store, args)
                return Outcome(
                    written.value,
                    commit=written.commit,
                    warnings=warnings,
                    pending=written.pending,
                )
            except LanternError as err:
                return Outcome(err.to_dict(), is_error=True, warnings=warnings)
            except Exception as err:  # a bug must not take the server down with it
                traceback.print_exc(file=sys.stderr)
                message = f"{name} failed unexpectedly: {type(err).__name__}: {err}"
                error = {"error": {"code": "internal_error", "message": message}}
                return Outcome(error, is_error=True, warnings=warnings)
            finally:
                self._warn = _stderr


def _stderr(message: str) -> None:
    print(message, file=sys.stderr)


def build_server(target: StoreTarget, runner: ToolRunner | None = None) -> Server:
    """The MCP server object, with one handler for listing tools and one for calling them."""
    import anyio.to_thread
    from mcp import types
    from mcp.server.lowlevel import Server
    from mcp.shared.exceptions import MCPError

    from .. import __version__

    runner = runner or ToolRunner(target)
    tools = [
        types.Tool(
            name=spec.name,
            title=spec.title,
            description=spec.description,
            input_schema=spec.input_schema,
            output_schema=spec.output_schema,
            annotations=types.ToolAnnotations(
                title=spec.title,
                read_only_hint=spec.read_only,
                destructive_hint=spec.destructive,
                idempotent_hint=spec.idempotent,
                open_world_hint=False,
            ),
        )
        for spec in ALL_TOOLS
    ]

    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=tools)

    async def call_tool(ctx: Any, params: Any) -> types.CallToolResult:
        if params.name not in TOOLS_BY_NAME:
            raise MCPError(
                code=types.INVALID_PARAMS,
                message=f"unknown tool {params.name!r}; the tools are: " + ", ".join(TOOLS_BY_NAME),
            )
        outcome = await anyio.to_thread.run_sync(runner.run, params.name, params.arguments)
        text = json.dumps(outcome.value, ensure_ascii=False)
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=text)],
            structured_content=outcome.value,
            is_error=outcome.is_error,
            _meta=outcome.meta(),
        )

    return Server(
        SERVER_NAME,
        version=__version__,
        title="Lantern memory",
        instructions=INSTRUCTIONS,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )


def serve(target: StoreTarget) -> None:
    """Serve MCP on stdin/stdout until the client closes stdin."""
    import anyio
    from mcp.server.stdio import stdio_server

    runner = ToolRunner(target)
    server = build_server(target, runner)

    async def main() -> None:
        async with stdio_server() as (read_stream, write_stream):
            await server.run(read_stream, write_stream, server.create_initialization_options())

    try:
        anyio.run(main)
    finally:
        runner.close()
