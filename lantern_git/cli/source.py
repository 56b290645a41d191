"""CLI commands for evidence: ``lantern source ...`` and ``lantern verify``. Each parses, calls
the library (``store.sources``), renders."""

from __future__ import annotations

import errno
import os
import stat
import sys
from typing import TYPE_CHECKING, Any, NamedTuple

import click

from ..core.fields import HIT_FIELDS, MANIFEST_FIELDS
from ..errors import InvalidInput
from . import render, support
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
    from ..core.paging import Page
    from ..evidence.sources import SourceInput

# A progress bar is worth its line from this many documents on.
PROGRESS_FROM = 20


class Document(NamedTuple):
    """A file to ingest: its bytes, and the absolute path they were read from (a followed
    link's target)."""

    data: bytes
    path: str
    linked: bool = False


def read_document(path: str, *, follow_symlinks: bool = False) -> Document:
    """A file to ingest, read whole; refused unless it is a regular file (never blocks on a
    FIFO) within the largest source body. A path that is itself a symbolic link is refused
    unless ``follow_symlinks``: as ``git add`` stores a link and not its target, lantern never
    ingests what a link points to behind the caller's back (a ``link.md`` to ``/etc/passwd``
    was stored as ``file:///etc/passwd``). Folders on the way are resolved as usual."""
    from ..model.source import MAX_SOURCE_BYTES, too_large

    def refuse(why: str) -> InvalidInput:
        return InvalidInput(f"{path}: {why}", code="invalid_path")

    def link_refusal() -> InvalidInput:
        try:
            target = f" to {os.readlink(path)}"
        except OSError:
            target = ""
        return refuse(
            f"is a symbolic link{target}; lantern ingests files, not what a link points to: "
            "give the target's path, or --follow-symlinks to read it"
        )

    try:
        linked = stat.S_ISLNK(os.lstat(path).st_mode)
    except OSError as err:
        raise refuse(f"cannot be read: {err.strerror}") from None
    if linked and not follow_symlinks:
        raise link_refusal()
    if linked:
        real = os.path.realpath(path)
    else:
        absolute = os.path.abspath(path)
        real = os.path.join(os.path.realpath(os.path.dirname(absolute)), os.path.basename(path))
    try:
        # O_NOFOLLOW: a path swapped for a link after the check above is refused, not read.
        fd = os.open(
            real if linked else path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
        )
    except OSError as err:
        if err.errno == errno.ELOOP:
            raise link_refusal() from None
        raise refuse(f"cannot be read: {err.strerror}") from None
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode) or info.st_size > MAX_SOURCE_BYTES:
        os.close(fd)
        if not stat.S_ISREG(info.st_mode):
            raise refuse("is not a regular file; give files, or - for stdin")
        raise too_large(path, info.st_size)  # refused before a byte is read
    with open(fd, "rb") as handle:
        data = handle.read(MAX_SOURCE_BYTES + 1)
    if len(data) > MAX_SOURCE_BYTES:
        raise too_large(path)  # it grew while being read: its size is not known
    return Document(data, real, linked)


def read_stdin() -> bytes:
    """Stdin, read up to the largest source body; more than that is refused here, where all
    that is known is that it is larger."""
    from ..model.source import MAX_SOURCE_BYTES, too_large

    data = sys.stdin.buffer.read(MAX_SOURCE_BYTES + 1)
    if len(data) > MAX_SOURCE_BYTES:
        raise too_large("stdin")
    return data


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
    @click.option(
        "--follow-symlinks",
        is_flag=True,
        help="Read what a PATH that is a symbolic link points to (refused without it).",
    )
    @reason_option
    @writer
    def source_add(
        paths: tuple[str, ...],
        kind: str | None,
        uri: str | None,
        title: str | None,
        meta: tuple[str, ...],
        follow_symlinks: bool,
        reason: str | None,
        as_json: bool,
        store_path: str | None,
        author: str | None,
    ) -> None:
        """Ingest files (or stdin, as -) as sources, in one commit.

        Ingesting the same uri again makes a new version; the same text again, nothing. A
        PATH that is a symbolic link is refused unless --follow-symlinks is given; then its
        target is read, and the uri names the target.
        """
        from pathlib import Path

        from ..evidence.sources import SourceInput

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
                document = read_document(path, follow_symlinks=follow_symlinks)
                if document.linked:
                    click.echo(f"followed {path} -> {document.path}", err=True)
                inputs.append(
                    SourceInput(
                        document.data,
                        os.path.basename(document.path),
                        kind,
                        uri or Path(document.path).as_uri(),
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
            results = store.written(store.sources.add, inputs, reason=reason, progress=advance)
        finally:
            bar.finish()
        render.emit_write(
            results.value, as_json, render.source_write_lines, pending=results.pending
        )

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
        from ..model.source import check_body

        text = check_body(read_stdin(), "stdin")
        store = support.open_store(store_path, author)
        result = store.written(store.sources.append, source_id, text, reason=reason)
        render.emit_write(
            result.value, as_json, lambda r: render.source_write_lines([r]), pending=result.pending
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
        page: Page,
        output: Any,
        as_json: bool,
        store_path: str | None,
    ) -> None:
        """Sources, the most recently updated first."""
        store = support.open_store(store_path)
        manifests = store.sources.list(
            kinds=kinds, uri_prefix=uri_prefix, limit=page.limit, offset=page.offset
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
    @click.option(
        "--entity",
        default=None,
        metavar="KEY",
        help="Only chunks holding this entity's key, name or an alias as a phrase.",
    )
    @mode_option
    @support.explain_option
    @page_options
    @output_options((*HIT_FIELDS, "mode", "explain"))
    @common
    def source_search(
        query: str,
        kinds: tuple[str, ...],
        sources: tuple[str, ...],
        entity: str | None,
        mode: str | None,
        page: Page,
        explain: bool,
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
            limit=page.limit,
            offset=page.offset,
            mode=mode,
            explain=explain,
            phrases=store.entities.labels(entity) if entity else (),
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
        removed = store.written(store.sources.remove, source_id, reason=reason)
        render.emit_write(
            removed.value,
            as_json,
            lambda m: [f"removed {m.id}  {m.title or m.uri or ''}"],
            pending=removed.pending,
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
