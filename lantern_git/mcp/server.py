"""The MCP server: lantern's tools over stdio, each a thin call into :class:`Store`.

The tools hold no policy. They add, show, list, search and change records exactly as the CLI
does (same library calls, same record objects, same error codes and messages); deciding what
becomes memory and what to put in a context window stays with the agent that calls them. The
tools themselves are declared by family, the record tools in :mod:`lantern_git.mcp.records`
and the evidence tools in :mod:`lantern_git.mcp.evidence`; this module joins them into one
table and runs the calls, each call's arguments checked first by its tool's model
(:mod:`lantern_git.mcp.schemas`).

The server keeps one store open for its whole life, watching the working tree
(``Store(watch=True)``, see :mod:`lantern_git.index.watch`): a read with nothing changed answers
from the searcher it kept, and a CLI write, a hand edit or a ``git pull`` is seen by the next
call, from its notifications or, where they cannot be trusted, from the full freshness sweep.
Its repository handle is kept too: libgit2 checks the files behind its refs and its index for
changes before it uses them. Calls run one at a time: the store is not thread-safe, and the
writer lock serializes the server against other processes. A page read from the store once it
is open (show, list, search: ``ToolSpec.quick``) runs on the event loop itself: it takes a
millisecond or two, and a worker thread's two hand-offs added 0.4-0.6 ms to each (measured
inside the server at 10k records). Every other call, and the first, which opens the store and
may build its index, runs in a worker thread, so that the server goes on reading its pipe
(pings, cancellations) meanwhile. A quick read that has more to do (catching up with a
``git pull``, embedding records for the first semantic search) holds the loop while it does.

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

from ..errors import LanternError
from .entities import ENTITY_TOOLS
from .evidence import EVIDENCE_TOOLS
from .records import RECORD_TOOLS
from .spec import ToolSpec

if TYPE_CHECKING:
    from mcp.server.lowlevel import Server

    from ..store import Store
    from ..workspace.workspace import BackgroundEmbedding

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
ALL_TOOLS: tuple[ToolSpec[Any], ...] = RECORD_TOOLS + EVIDENCE_TOOLS + ENTITY_TOOLS
TOOLS_BY_NAME = {tool.name: tool for tool in ALL_TOOLS}

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
        from ..core.progress import lines
        from ..store import Store

        store = Store(
            self.path,
            actor="mcp",
            author=self.author,
            create_on_write=self.create_on_write,
            warn=warn,
            watch=watch,
            review=self.review,
        )
        # A call that needs the index built (a fresh clone) waits for the whole index, never
        # answers from part of it, and says how far the build is on stderr, the client's log.
        store.progress = lines
        return store


@dataclass
class Outcome:
    """One tool call's answer: a JSON object, whether it is an error, the commit it made, and
    the store's warnings (such as a hand-broken file that was skipped)."""

    value: dict[str, Any]
    is_error: bool = False
    commit: str | None = None
    warnings: list[str] = field(default_factory=list)
    # The commit went to a review branch: its record awaits a person (docs/review.md).
    pending: bool = False

    def meta(self) -> dict[str, Any] | None:
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
        self._embedding: BackgroundEmbedding | None = None

    def _open(self) -> Store:
        store = self._store
        if store is None or not store.exists:
            # Until the store exists (a default store, created by its first write), each call
            # opens it afresh; from then on the one kept store watches it.
            if store is not None:
                store.close()
            store = self.target.open(lambda message: self._warn(message), watch=True)
            self._store = store
        if store.exists:
            self._embed_behind(store)
        return store

    def _embed_behind(self, store: Store) -> None:
        """Embed the store's new texts in a thread of their own, once per server, so that the
        first semantic search of a large store does not wait minutes for it: searches answer
        by keyword until the vectors are ready, and their ``explain`` says so
        (``Workspace.keyword_for_now``). The thread opens the store again: its index and
        vectors are its own, and the writer lock (held only to keep each batch) keeps them in
        step with the calls' store."""
        if self._embedding is None:
            if not store.workspace.semantic_available:
                return
            from ..workspace.workspace import BackgroundEmbedding

            state = self._embedding = BackgroundEmbedding()

            def embed() -> None:
                behind = self.target.open(_stderr)
                try:
                    behind.workspace.embed_ahead(state)
                finally:
                    behind.close()

            threading.Thread(target=embed, name="lantern-embed", daemon=True).start()
        store.workspace.embedding = self._embedding

    def run_at_once(self, name: str, arguments: dict[str, Any] | None) -> Outcome | None:
        """The call answered on the caller's thread if it is a quick read of the store already
        open and no other call is running; None otherwise (give it to :meth:`run` in a worker
        thread): the event loop never waits for another call to finish."""
        store = self._store
        if not (TOOLS_BY_NAME[name].quick and store is not None and store.exists):
            return None
        if not self._lock.acquire(blocking=False):
            return None
        try:
            return self._run(name, arguments)
        finally:
            self._lock.release()

    def close(self) -> None:
        with self._lock:
            store, self._store = self._store, None
            if store is not None:
                store.close()

    def run(self, name: str, arguments: dict[str, Any] | None) -> Outcome:
        with self._lock:
            return self._run(name, arguments)

    def _run(self, name: str, arguments: dict[str, Any] | None) -> Outcome:
        """One call, the runner's lock held."""
        tool = TOOLS_BY_NAME[name]
        warnings: list[str] = []

        def warn(message: str) -> None:
            warnings.append(message)
            print(message, file=sys.stderr)

        self._warn = warn
        try:
            args = tool.check(arguments)
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
        outcome = runner.run_at_once(params.name, params.arguments)
        if outcome is None:
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
