"""What a tool is to the MCP server: its name, the models of its arguments and its answer (from
which its schemas are generated), its hints and the library call it makes.

Kept apart from the server so each family of tools (records, evidence) can be declared in its
own module without importing the server.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING, Any

from ..core.fields import DEFAULT_LIMIT
from ..core.paging import Page
from .schemas import MAX_LIMIT, Arguments, check_arguments, input_schema, json_schema

if TYPE_CHECKING:
    from ..core.written import Written
    from ..store import Store


@dataclass(frozen=True)
class ToolSpec:
    """One tool: its name and description, the model of its arguments (from which its input
    schema is generated), the schema of its answer, its hints, and the library call it makes
    with the arguments a caller gave."""

    name: str
    title: str
    description: str
    arguments: type[Arguments]
    # The model (or type) of what the tool returns, from which its output schema is generated.
    answer: Any
    read_only: bool
    destructive: bool
    idempotent: bool
    call: Callable[[Store, dict], Written[dict]]
    # A page read from the open store (show, list, search): quick enough for the server to run
    # on its event loop rather than in a worker thread (lantern_git.mcp.server).
    quick: bool = False

    @cached_property
    def input_schema(self) -> dict[str, Any]:
        """The JSON Schema of the tool's arguments, generated from its model once."""
        return input_schema(self.arguments)

    @cached_property
    def output_schema(self) -> dict[str, Any]:
        """The JSON Schema of the tool's answer, generated from its model once."""
        return json_schema(self.answer)

    def check(self, arguments: object) -> dict[str, Any]:
        """A caller's arguments checked by the tool's model: those given, by name."""
        return check_arguments(self.name, self.arguments, self.input_schema, arguments)


def page_of(args: dict) -> Page:
    """The page a listing tool's ``limit`` and ``offset`` ask for, checked by the one paging
    rule (:mod:`lantern_git.core.paging`); at most MAX_LIMIT per page."""
    return Page.of(args.get("limit", DEFAULT_LIMIT), args.get("offset", 0), maximum=MAX_LIMIT)
