"""The evidence tools of the MCP server (docs/evidence.md): thin calls into ``store.sources``.

A source reaches the server as text in the call, never as a path: no tool can make the server
read a file of its host. Lists and searches page as the record tools do.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..core.written import Written
from ..model.source import encode_body
from .answers import Hit, Manifest, Verification, View, listing
from .schemas import (
    NoArguments,
    SourceAddArguments,
    SourceAppendArguments,
    SourceListArguments,
    SourceSearchArguments,
    SourceShowArguments,
)
from .spec import Tools, page_of

if TYPE_CHECKING:
    from ..store import Store


# ---------------------------------------------------------------------------- the tools

TOOLS = Tools()

_NOTE = (
    " One git commit (Lantern-Op: {op}, Lantern-Actor: mcp, a Lantern-Source trailer); history "
    "keeps every version, and references pinned to a version keep resolving."
)


@TOOLS.tool(
    "lantern_source_add",
    title="Store a source (evidence)",
    description=(
        "Store a document the agent observed (a transcript, a note, a tool output, a log) "
        "verbatim as a source, and return its manifest. With a `uri`, ingesting the same "
        "uri again makes a new version of the same source (an append when the old text is "
        "a prefix of the new); without one, the id comes from the text, so the same text "
        "twice is one source. The same text again commits nothing (safe to retry). Text "
        "only: the server never reads a file for you." + _NOTE.format(op="ingest")
    ),
    answer=Manifest,
    read_only=False,
    destructive=False,
    idempotent=True,
)
def _add(store: Store, args: SourceAddArguments) -> Written[dict[str, Any]]:
    from ..evidence.sources import SourceInput

    item = SourceInput(
        encode_body(args.text),
        kind=args.kind,
        uri=args.uri,
        title=args.title,
        meta=args.meta or {},
    )
    added = store.written(store.sources.add, [item], reason=args.reason)
    return added.map(lambda results: results[0].to_dict())


@TOOLS.tool(
    "lantern_source_append",
    title="Append to a source",
    description=(
        "Add text at the end of a source, on a new line, and return its manifest. Every "
        "earlier line keeps its number, so references to them still hold. Text of nothing "
        "but whitespace is refused. Not idempotent: each call appends." + _NOTE.format(op="append")
    ),
    answer=Manifest,
    read_only=False,
    destructive=False,
    idempotent=False,
)
def _append(store: Store, args: SourceAppendArguments) -> Written[dict[str, Any]]:
    appended = store.written(store.sources.append, args.id, args.text, reason=args.reason)
    return appended.map(lambda result: result.to_dict())


@TOOLS.tool(
    "lantern_source_list",
    title="List sources",
    description=(
        "Return one page of source manifests (id, kind, uri, title, lines, versions' "
        "times), the most recently updated first; page with `offset` and `next_offset`. "
        "Read-only."
    ),
    answer=listing("sources", Manifest),
    read_only=True,
    destructive=False,
    idempotent=True,
    quick=True,
)
def _list(store: Store, args: SourceListArguments) -> Written[dict[str, Any]]:
    page = page_of(args)
    manifests = store.sources.list(
        kinds=args.kind or (),
        uri_prefix=args.uri_prefix,
        limit=page.one_more().limit,
        offset=page.offset,
    )
    return Written(page.document("sources", [m.to_dict() for m in manifests]))


@TOOLS.tool(
    "lantern_source_show",
    title="Show a source or the lines a reference names",
    description=(
        "Return a source's manifest; for a reference with lines (source:<id>@<blob>#L3-L7) "
        "also `ref`, `lines` and the exact `text`, read from git's objects, so a pinned "
        "reference resolves after later versions and after the source was removed. `at` "
        "reads the source as it was at a git revision or a time. Read-only."
    ),
    answer=View,
    read_only=True,
    destructive=False,
    idempotent=True,
    quick=True,
)
def _show(store: Store, args: SourceShowArguments) -> Written[dict[str, Any]]:
    return Written(store.sources.show(args.ref, at=args.at).to_dict())


@TOOLS.tool(
    "lantern_source_search",
    title="Search sources",
    description=(
        "Return one page of source chunks (line ranges) matching the query, most "
        "relevant first, each with the text, its `score`, the `mode` that ranked it "
        "(keyword: BM25; semantic: cosine of text embeddings; hybrid: the two fused by the "
        "embedder's rule) and a `ref` to cite in a record's source_refs unchanged. "
        "Read-only."
    ),
    answer=listing("hits", Hit),
    read_only=True,
    destructive=False,
    idempotent=True,
    quick=True,
)
def _search(store: Store, args: SourceSearchArguments) -> Written[dict[str, Any]]:
    page = page_of(args)
    # While the server embeds a large store in the background: keyword, and explain says so
    waiting = store.workspace.keyword_for_now(args.mode)
    hits = store.sources.search(
        args.query,
        kinds=args.kind or (),
        sources=args.source or (),
        limit=page.one_more().limit,
        offset=page.offset,
        mode="keyword" if waiting else args.mode,
        explain=args.explain,
        phrases=store.entities.labels(args.entity) if args.entity else (),
    )
    found = [h.to_dict() for h in hits]
    for hit in found if waiting else ():
        if hit.get("explain") is not None:
            hit["explain"]["vectors"] = waiting
    return Written(page.document("hits", found))


@TOOLS.tool(
    "lantern_verify",
    title="Verify records' source references",
    description=(
        "Check every record's source: references against the sources and their history: "
        "`ok` is true when every reference still holds; each problem names the record, the "
        "reference and what is wrong (unknown_source, unknown_version, out_of_range, "
        "drifted with `moved_to` when the text is found elsewhere, removed). Lantern "
        "reports; deciding what to do about a drifted memory is yours. Read-only."
    ),
    answer=Verification,
    read_only=True,
    destructive=False,
    idempotent=True,
)
def _verify(store: Store, args: NoArguments) -> Written[dict[str, Any]]:
    return Written(store.sources.verify().to_dict())


EVIDENCE_TOOLS = TOOLS.specs
