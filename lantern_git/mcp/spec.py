"""What a tool is to the MCP server: its name, schemas, hints and the library call it makes.

Kept apart from the server so each family of tools (records, evidence) can be declared in its
own module without importing the server.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..errors import InvalidInput
from ..fields import DEFAULT_LIMIT, NO_LIMIT, SEARCH_MODES

if TYPE_CHECKING:
    from ..store import Store

# The largest page a list or search tool returns; 0 (NO_LIMIT) asks for every match.
MAX_LIMIT = 500
# The ``reason`` every writing tool takes.
REASON_SCHEMA = {
    "type": "string",
    "description": "Why this change is made; recorded in the commit as Lantern-Reason.",
}


# The ``mode`` both search tools take (docs/semantic.md), and a hit's ``mode``.
MODE_SCHEMA = {
    "type": "string",
    "enum": list(SEARCH_MODES),
    "description": (
        "keyword: BM25 over the words. semantic: cosine of text embeddings (finds paraphrases). "
        "hybrid: 0.2 x BM25 over the best BM25 + 0.8 x cosine. Default: hybrid when the "
        "server has the semantic extra, keyword otherwise; semantic and hybrid fail with "
        "semantic_unavailable without it."
    ),
}
HIT_MODE_SCHEMA = {"type": "string", "enum": list(SEARCH_MODES)}
_POINT = (
    "a git revision (a commit hash, HEAD~3, a tag) or a time (unix seconds, 2026-12-31, "
    "2026-12-31T08:00:00Z, -7d: the newest commit at or before it)."
)


def at_schema(what: str) -> dict:
    """An ``at`` argument: a point in the store's history, read as ``--at`` is."""
    return {"type": "string", "minLength": 1, "description": f"{what}: {_POINT}"}


@dataclass(frozen=True)
class ToolSpec:
    name: str
    title: str
    description: str
    input_schema: dict
    output_schema: dict
    read_only: bool
    destructive: bool
    idempotent: bool
    call: Callable[[Store, dict], tuple[dict, str | None]]


def object_schema(properties: dict, required: tuple[str, ...] = ()) -> dict:
    """A JSON Schema object of ``properties``, nothing else allowed."""
    return {
        "type": "object",
        "properties": properties,
        "required": list(required),
        "additionalProperties": False,
    }


def page_limit(args: dict) -> int:
    """A list or search tool's ``limit``: 1 to MAX_LIMIT, or NO_LIMIT for every match."""
    limit = args.get("limit", DEFAULT_LIMIT)
    if not NO_LIMIT <= limit <= MAX_LIMIT:
        raise InvalidInput(
            f"limit: must be between 1 and {MAX_LIMIT}, or {NO_LIMIT} for no limit; got {limit}",
            code="invalid_field",
        )
    return limit


def one_more(limit: int) -> int:
    """What to ask the library for: one more than the page tells whether another follows,
    without counting every match."""
    return NO_LIMIT if limit == NO_LIMIT else limit + 1


def page(key: str, items: list[dict[str, Any]], offset: int, limit: int) -> dict:
    """One page of ``items`` (fetched with :func:`one_more`), with the offset of the next."""
    more = limit != NO_LIMIT and len(items) > limit
    return {
        key: items[:limit] if more else items,
        "offset": offset,
        "limit": limit,
        "next_offset": offset + limit if more else None,
    }
