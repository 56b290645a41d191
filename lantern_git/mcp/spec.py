"""What a tool is to the MCP server: its name, argument model, answer schema, hints and the
library call it makes; and the answer schemas both families share (a page, a hit's explain).

Kept apart from the server so each family of tools (records, evidence) can be declared in its
own module without importing the server.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING, Any

from ..fields import DEFAULT_LIMIT, NO_LIMIT, SEARCH_MODES
from ..paging import Page
from .schemas import MAX_LIMIT, Arguments, check_arguments, input_schema

if TYPE_CHECKING:
    from ..store import Store
    from ..written import Written

# A hit's ``mode`` (docs/semantic.md).
HIT_MODE_SCHEMA = {"type": "string", "enum": list(SEARCH_MODES)}
# The object ``explain`` adds to each hit.
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


@dataclass(frozen=True)
class ToolSpec:
    """One tool: its name and description, the model of its arguments (from which its input
    schema is generated), the schema of its answer, its hints, and the library call it makes
    with the arguments a caller gave."""

    name: str
    title: str
    description: str
    arguments: type[Arguments]
    output_schema: dict
    read_only: bool
    destructive: bool
    idempotent: bool
    call: Callable[[Store, dict], Written[dict]]

    @cached_property
    def input_schema(self) -> dict[str, Any]:
        """The JSON Schema of the tool's arguments, generated from its model once."""
        return input_schema(self.arguments)

    def check(self, arguments: object) -> dict[str, Any]:
        """A caller's arguments checked by the tool's model: those given, by name."""
        return check_arguments(self.name, self.arguments, self.input_schema, arguments)


def object_schema(properties: dict, required: tuple[str, ...] = ()) -> dict:
    """A JSON Schema object of ``properties``, nothing else allowed."""
    return {
        "type": "object",
        "properties": properties,
        "required": list(required),
        "additionalProperties": False,
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
