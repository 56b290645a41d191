"""CLI commands for evidence: ``lantern source ...`` and ``lantern verify``. Each parses, calls
the library (``store.sources``), renders."""

from __future__ import annotations

import os
import stat
import sys
from typing import TYPE_CHECKING, Any

import click

from .. import render
from ..errors import InvalidInput
from ..fields import HIT_FIELDS, MANIFEST_FIELDS
from . import support
from .support import (
    common,
    meta_pairs,
    mode_option,
    output_options,
    page_options,
    reason_option,
    writer,
)

if TYPE_CHECKING:
    from ..evidence import SourceInput

# A progress bar is worth its line from this many documents on.
PROGRESS_FROM = 20


def read_document(path: str) -> bytes:
    """A file to ingest, read whole; refused unless it is a regular file (never blocks on a
    FIFO) and within the largest source body."""
    from ..source import MAX_SOURCE_BYTES

    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as err:
        raise InvalidInput(f"{path}: cannot be read: {err.strerror}", code="invalid_path") from None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise InvalidInput(
            f"{path}: is not a regular file; give files, or - for stdin", code="invalid_path"
        )
    with open(fd, "rb") as handle:
        return handle.read(MAX_SOURCE_BYTES + 1)


def read_stdin() -> bytes:
    from ..source import MAX_SOURCE_BYTES

    return sys.stdin.buffer.read(MAX_SOURCE_BYTES + 1)


def register(cli: click.Group, memory: click.Group) -> None:
    @cli.group("source")
    def source() -> None:
        """Evidence: ingest, append, list, show, search and remove sources."""

    @source.command("add")
    @click.argument("paths", nargs=-1, required=True, metavar="PATH...|-")
    @click.option("--kind", default=None, metavar="K", help="transcript, note, file, ...")
    @click.option("--uri", default=None, metavar="U", help="Where it came from (one document).")
    @click.option("--title", default=None, metavar="T", help="A title (one document).")
    @click.option("--meta", "meta", multiple=True, metavar="KEY=VALUE", help="Repeatable.")
    @reason_option
    @writer
    def source_add(
        paths: tuple[str, ...],
        kind: str | None,
        uri: str | None,
        title: str | None,
        meta: tuple[str, ...],
        reason: str | None,
        as_json: bool,
        store_path: str | None,
        author: str | None,
    ) -> None:
        """Ingest files (or stdin, as -) as sources, in one commit.

        Ingesting the same uri again makes a new version; the same text again, nothing.
        """
        from pathlib import Path

        from ..evidence import SourceInput

        if (uri or title) and len(paths) > 1:
            raise InvalidInput("--uri and --title name one document; give one path with them")
        if paths.count("-") > 1:
            raise InvalidInput("stdin (-) can be ingested once per command")
        pairs = meta_pairs(meta)
        inputs: list[SourceInput] = []
        for path in paths:
            if path == "-":
                inputs.append(SourceInput(read_stdin(), None, kind, uri, title, pairs))
            else:
                data = read_document(path)
                inputs.append(
                    SourceInput(
                        data,
                        os.path.basename(path),
                        kind,
                        uri or Path(path).resolve().as_uri(),
                        title,
                        pairs,
                    )
                )
        store = support.open_store(store_path, author)
        bar = support.progress_bar(len(inputs), "ingesting", PROGRESS_FROM, as_json=as_json)
        done = [0]

        def advance(count: int) -> None:
            bar.update(count - done[0])
            done[0] = count

        try:
            results = store.sources.add(inputs, reason=reason, progress=advance)
        finally:
            bar.finish()
        render.emit_write(results, as_json, render.source_write_lines, pending=store.last_pending)

    @source.command("append")
    @click.argument("source_id", metavar="ID")
    @click.argument("stdin", metavar="-", type=click.Choice(["-"]))
    @reason_option
    @writer
    def source_append(
        source_id: str,
        stdin: str,
        reason: str | None,
        as_json: bool,
        store_path: str | None,
        author: str | None,
    ) -> None:
        """Add the text on stdin at the end of a source, on a new line."""
        from ..source import check_body

        text = check_body(read_stdin(), "stdin")
        store = support.open_store(store_path, author)
        result = store.sources.append(source_id, text, reason=reason)
        render.emit_write(
            result, as_json, lambda r: render.source_write_lines([r]), pending=store.last_pending
        )

    @source.command("list")
    @click.option("--kind", "kinds", multiple=True, metavar="K", help="Repeatable.")
    @click.option("--uri-prefix", default=None, metavar="P")
    @page_options
    @output_options(MANIFEST_FIELDS)
    @common
    def source_list(
        kinds: tuple[str, ...],
        uri_prefix: str | None,
        limit: int | None,
        offset: int,
        output: Any,
        as_json: bool,
        store_path: str | None,
    ) -> None:
        """Sources, the most recently updated first."""
        store = support.open_store(store_path)
        manifests = store.sources.list(
            kinds=kinds, uri_prefix=uri_prefix, limit=limit, offset=offset
        )
        render.emit_listing(manifests, output, store.root, render.source_table)

    @source.command("show")
    @click.argument("ref", metavar="REF")
    @click.option("--at", default=None, metavar="REV|DATE", help="As at a revision or a time.")
    @common
    def source_show(ref: str, at: str | None, as_json: bool, store_path: str | None) -> None:
        """A source's manifest, or the exact lines a reference names (source:ID@BLOB#La-Lb)."""
        view = support.open_store(store_path).sources.show(ref, at=at)
        render.emit(view, as_json, render.source_view_lines)

    @source.command("search")
    @click.argument("query")
    @click.option("--kind", "kinds", multiple=True, metavar="K", help="Repeatable.")
    @click.option("--source", "sources", multiple=True, metavar="ID", help="Repeatable.")
    @mode_option
    @support.explain_option
    @page_options
    @output_options((*HIT_FIELDS, "mode", "explain"))
    @common
    def source_search(
        query: str,
        kinds: tuple[str, ...],
        sources: tuple[str, ...],
        mode: str | None,
        explain: bool,
        limit: int | None,
        offset: int,
        output: Any,
        as_json: bool,
        store_path: str | None,
    ) -> None:
        """Chunks of sources matching QUERY; each hit's reference can be given to --source-ref."""
        store = support.open_store(store_path)
        hits = store.sources.search(
            query,
            kinds=kinds,
            sources=sources,
            limit=limit,
            offset=offset,
            mode=mode,
            explain=explain,
        )
        render.emit_listing(
            hits, output, store.root, lambda found: render.chunk_hit_lines(found, query)
        )

    @source.command("remove")
    @click.argument("source_id", metavar="ID")
    @reason_option
    @writer
    def source_remove(
        source_id: str,
        reason: str | None,
        as_json: bool,
        store_path: str | None,
        author: str | None,
    ) -> None:
        """Delete a source's files in one commit (history keeps them; pins still resolve)."""
        store = support.open_store(store_path, author)
        manifest = store.sources.remove(source_id, reason=reason)
        render.emit_write(
            manifest,
            as_json,
            lambda m: [f"removed {m.id}  {m.title or m.uri or ''}"],
            pending=store.last_pending,
        )

    @cli.command("verify")
    @common
    @click.pass_context
    def verify(ctx: click.Context, as_json: bool, store_path: str | None) -> None:
        """Check every record's source: references; exit 4 if any does not hold."""
        report = support.open_store(store_path).sources.verify()
        render.emit(report, as_json, render.verify_lines)
        if not report.ok:
            ctx.exit(4)
