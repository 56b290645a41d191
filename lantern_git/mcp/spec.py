"""What a tool is to the MCP server: its name, the models of its arguments and its answer (from
which its schemas are generated), its hints and the library call it makes.

A tool is declared once, by a decorator on its handler (:meth:`Tools.tool`): the handler takes
the store and its arguments as their checked, typed model (the model named by the handler's
annotation, from which the input schema is generated), and the decorator beside it says the
rest. Kept apart from the server so each family of tools (records, evidence) can be declared in
its own module without importing the server.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeVar

from ..core.paging import Page
from .schemas import MAX_LIMIT, Arguments, check_arguments, input_schema, json_schema

if TYPE_CHECKING:
    from ..core.written import Written
    from ..store import Store

A = TypeVar("A", bound=Arguments)
Handler = Callable[["Store", A], "Written[dict[str, Any]]"]


@dataclass(frozen=True)
class ToolSpec(Generic[A]):
    """One tool: its name and description, the model of its arguments (from which its input
    schema is generated), the schema of its answer, its hints, and the library call it makes
    with the arguments a caller gave."""

    name: str
    title: str
    description: str
    arguments: type[A]
    # The model (or type) of what the tool returns, from which its output schema is generated.
    answer: Any
    read_only: bool
    destructive: bool
    idempotent: bool
    call: Callable[[Store, A], Written[dict[str, Any]]]
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

    def check(self, arguments: object) -> A:
        """A caller's arguments checked by the tool's model, as that model."""
        return check_arguments(self.name, self.arguments, self.input_schema, arguments)


class Tools:
    """One family's tools, in the order they are declared: ``@TOOLS.tool(...)`` on a handler
    declares it (its arguments model read from the handler's ``args`` annotation)."""

    def __init__(self) -> None:
        self.declared: list[ToolSpec[Any]] = []

    def tool(
        self,
        name: str,
        *,
        title: str,
        description: str,
        answer: Any,
        read_only: bool,
        destructive: bool,
        idempotent: bool,
        quick: bool = False,
    ) -> Callable[[Handler[A]], Handler[A]]:
        def declare(handler: Handler[A]) -> Handler[A]:
            # Under postponed annotations the annotation is a string: the model of that name
            # in the handler's module.
            named = handler.__annotations__["args"]
            arguments = handler.__globals__[named] if isinstance(named, str) else named
            spec = ToolSpec(
                name=name,
                title=title,
                description=description,
                arguments=arguments,
                answer=answer,
                read_only=read_only,
                destructive=destructive,
                idempotent=idempotent,
                call=handler,
                quick=quick,
            )
            self.declared.append(spec)
            return handler

        return declare

    @property
    def specs(self) -> tuple[ToolSpec[Any], ...]:
        return tuple(self.declared)


class Paged(Protocol):
    """A listing tool's arguments: its page."""

    @property
    def limit(self) -> int: ...

    @property
    def offset(self) -> int: ...


def page_of(args: Paged) -> Page:
    """The page a listing tool's ``limit`` and ``offset`` ask for, checked by the one paging
    rule (:mod:`lantern_git.core.paging`); at most MAX_LIMIT per page."""
    return Page.of(args.limit, args.offset, maximum=MAX_LIMIT)
