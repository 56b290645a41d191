"""The MCP server: lantern's tools over stdio, each a thin call into :class:`Store`.

The tools hold no policy. They add, show, list, search and change records exactly as the CLI
does (same library calls, same record objects, same error codes and messages); deciding what
becomes memory and what to put in a context window stays with the agent that calls them. The
tools themselves are declared by family, the record tools in :mod:`lantern_git.mcp.records`
and the evidence tools in :mod:`lantern_git.mcp.evidence`; this module joins them into one
table and runs the calls.

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
from ..fields import choose_fields
from .evidence import EVIDENCE_TOOLS
from .records import RECORD_TOOLS
from .spec import ToolSpec

if TYPE_CHECKING:
    from mcp.server.lowlevel import Server

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

# Every tool, in the order tools/list gives them: the record tools, then the evidence tools.
ALL_TOOLS: tuple[ToolSpec, ...] = RECORD_TOOLS + EVIDENCE_TOOLS
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
