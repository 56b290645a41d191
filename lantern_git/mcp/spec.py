"""What a tool is to the MCP server: its name, schemas, hints and the library call it makes.

Kept apart from the server so each family of tools (records, evidence) can be declared in its
own module without importing the server.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..fields import DEFAULT_LIMIT, NO_LIMIT, SEARCH_MODES
from ..paging import Page

if TYPE_CHECKING:
    from ..store import Store
    from ..written import Written

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
        "hybrid: 0.1 x BM25 over the best BM25 + 0.9 x cosine, cosines under the similarity "
        "floor left out. Default: hybrid when the "
        "server has the semantic extra, keyword otherwise; semantic and hybrid fail with "
        "semantic_unavailable without it."
    ),
}
HIT_MODE_SCHEMA = {"type": "string", "enum": list(SEARCH_MODES)}
# ``explain`` for both search tools, and the object it adds to each hit.
EXPLAIN_SCHEMA = {
    "type": "boolean",
    "default": False,
    "description": (
        "Add to each hit an `explain` object saying what made its score: mode, bm25, the "
        "query words matched, cosine, the weights and the similarity floor."
    ),
}
_NUMBER_OR_NULL = {"type": ["number", "null"]}
HIT_EXPLAIN_SCHEMA = {
    "type": "object",
    "properties": {
        "mode": HIT_MODE_SCHEMA,
        "bm25": {"type": "number", "description": "The BM25 score (0: no query word)."},
        "matched": {
            "type": "array",
            "items": {"type": "string"},
            "description": "The query's words, as typed, that the hit holds.",
        },
        "cosine": {**_NUMBER_OR_NULL, "description": "Null in keyword mode."},
        "weights": {
            "type": "object",
            "properties": {"keyword": {"type": "number"}, "semantic": {"type": "number"}},
        },
        "floor": {**_NUMBER_OR_NULL, "description": "The cosine a semantic candidate needs."},
        "bm25_best": {**_NUMBER_OR_NULL, "description": "Hybrid: the best BM25 score."},
    },
    "required": ["mode", "bm25", "matched", "cosine", "weights", "floor"],
}
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
    call: Callable[[Store, dict], Written[dict]]


def object_schema(properties: dict, required: tuple[str, ...] = ()) -> dict:
    """A JSON Schema object of ``properties``, nothing else allowed."""
    return {
        "type": "object",
        "properties": properties,
        "required": list(required),
        "additionalProperties": False,
    }


def page_properties(what: str) -> dict[str, dict]:
    """The ``limit`` and ``offset`` every listing tool takes, paging ``what`` (records,
    sources, hits...) as the CLI's ``--limit`` and ``--offset`` do."""
    return {
        "limit": {
            "type": "integer",
            "minimum": NO_LIMIT,
            "maximum": MAX_LIMIT,
            "default": DEFAULT_LIMIT,
            "description": (
                f"At most this many {what} (1-{MAX_LIMIT}); {NO_LIMIT} means no limit: every "
                "match in one page, as the CLI's --limit 0."
            ),
        },
        "offset": {
            "type": "integer",
            "minimum": 0,
            "default": 0,
            "description": f"Skip this many {what} first; use next_offset from a page.",
        },
    }


def page_schema(key: str, items: dict, extra: dict | None = None) -> dict:
    """The object a listing tool returns: ``items`` under ``key``, the page's ``offset`` and
    ``limit``, and ``next_offset``; ``extra`` properties (required too) beside them."""
    extra = extra or {}
    return object_schema(
        {
            **extra,
            key: {"type": "array", "items": items},
            "offset": {"type": "integer", "minimum": 0},
            "limit": {"type": "integer", "minimum": NO_LIMIT},
            "next_offset": {
                "type": ["integer", "null"],
                "description": "The offset of the next page, or null when this is the last.",
            },
        },
        (*extra, key, "offset", "limit", "next_offset"),
    )


def page_of(args: dict) -> Page:
    """The page a listing tool's ``limit`` and ``offset`` ask for, checked by the one paging
    rule (:mod:`lantern_git.paging`); at most MAX_LIMIT per page."""
    return Page.of(args.get("limit", DEFAULT_LIMIT), args.get("offset", 0), maximum=MAX_LIMIT)
