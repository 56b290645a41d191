"""CLI commands for a record's life after it is added: edit, history, check, commit, log,
export and import. Each parses, calls the library, renders."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

import click

from . import render, support
from .support import common, open_store, page_options, reason_option, writer

if TYPE_CHECKING:
    from ..core.paging import Page


def register(cli: click.Group, memory: click.Group) -> None:
    @memory.command("edit")
    @click.argument("record_id", metavar="ID")
    @reason_option
    @writer
    def memory_edit(
        record_id: str,
        reason: str | None,
        as_json: bool,
        store_path: str | None,
        author: str | None,
    ) -> None:
        """Open a record in $VISUAL or $EDITOR; validate and commit what is saved.

        An invalid edit is refused with the field and line; on a terminal you may edit again.
        The id cannot be changed. updated_at is set for you.
        """
        from ..errors import ValidationError

        store = support.open_store(store_path, author)
        with store.begin_edit(record_id) as session:
            while True:
                session.edit()
                try:
                    written = store.written(session.commit, reason=reason)
                    break
                except ValidationError as err:
                    if not sys.stdin.isatty():
                        raise
                    render.error(err, False)
                    if not click.confirm("edit again?", default=True, err=True):
                        raise
        verb = "edited" if written.commit else "unchanged"
        render.emit_record(written.value, as_json, store.root, verb, pending=written.pending)

    @memory.command("history")
    @click.argument("record_id", metavar="ID")
    @page_options
    @common
    def memory_history(record_id: str, page: Page, as_json: bool, store_path: str | None) -> None:
        """The commits that changed a record, newest first, with the fields they changed."""
        history = support.open_store(store_path).record_history(
            record_id, limit=page.limit, offset=page.offset
        )
        render.emit(history, as_json, render.history_lines)

    @cli.command("diff")
    @click.argument("old", metavar="[REV1", required=False)
    @click.argument("new", metavar="[REV2]]", required=False)
    @common
    def diff(old: str | None, new: str | None, as_json: bool, store_path: str | None) -> None:
        """Records added, removed and changed, field by field, from REV1 to REV2.

        Default: HEAD against the working tree (hand edits, before lantern commit); one
        revision: it against the working tree. A revision is anything git resolves, or a time.
        """
        store = support.open_store(store_path)
        render.emit_diff(store.diff(old, new), as_json, store.root)

    @cli.command("revert")
    @click.argument("commit", metavar="COMMIT")
    @reason_option
    @writer
    def revert(
        commit: str,
        reason: str | None,
        as_json: bool,
        store_path: str | None,
        author: str | None,
    ) -> None:
        """Undo one lantern commit as a new commit (Lantern-Op: revert).

        Record by record: a later change to another field of the same record is kept. Refused
        (exit 2) for a merge commit, a commit lantern did not make, or a later change to a field
        the commit changed; refused (exit 1) while a record it touches has uncommitted edits.
        """
        store = support.open_store(store_path, author)
        result = store.written(store.revert, commit, reason=reason)
        render.emit_write(result.value, as_json, render.revert_lines, pending=result.pending)

    @cli.command("log")
    @page_options(default=20)
    @common
    def log(page: Page, as_json: bool, store_path: str | None) -> None:
        """The store's recent operations, from the commits' Lantern trailers."""
        from ..memory.history import OperationLog

        log = OperationLog(support.open_store(store_path).log(page.limit, page.offset))
        render.emit(log, as_json, render.log_lines)

    @cli.command("check")
    @common
    @click.pass_context
    def check(ctx: click.Context, as_json: bool, store_path: str | None) -> None:
        """Validate every record and entity file; exit 4 if any is invalid.

        Problems are printed as path:line: message. Usable as a pre-commit hook.
        """
        store = support.open_store(store_path)
        report = store.check()
        render.emit(report, as_json, render.check_lines)
        if not report.ok:
            if not as_json:
                click.echo(render.check_failure(report), err=True)
            ctx.exit(4)

    @cli.command("commit")
    @click.option("-m", "--message", default=None, metavar="MSG", help="The commit summary.")
    @reason_option
    @writer
    def commit(
        message: str | None,
        reason: str | None,
        as_json: bool,
        store_path: str | None,
        author: str | None,
    ) -> None:
        """Validate record files edited by hand and commit them (Lantern-Op: edit).

        updated_at is set on each record whose fields or content changed. Invalid or deleted
        record files are refused (exit 4) and nothing is written.
        """
        result = support.open_store(store_path, author).commit_hand_edits(message, reason=reason)
        render.emit(result, as_json, render.commit_lines)

    @cli.command("export")
    @common
    def export(as_json: bool, store_path: str | None) -> None:
        """Every record, any status, then every source and entity, as JSON Lines, in id order.

        A record is its object; a source is {"source": manifest, "ext", "body"} (its current
        version). A file that cannot be read is skipped with a warning, and the export then
        exits 4 (as lantern check does) after writing everything else: a partial backup must
        not pass for a whole one.
        """
        import json

        from ..errors import CheckFailed

        out = sys.stdout
        export = open_store(store_path).export_records()
        for record in export:
            out.write(json.dumps(record.to_dict(), ensure_ascii=False) + "\n")
        for source in export.sources():
            out.write(json.dumps(source.to_dict(), ensure_ascii=False) + "\n")
        for entity in export.entities():
            out.write(json.dumps(entity.to_line(), ensure_ascii=False) + "\n")
        if export.skipped:
            sources = sum(1 for p in export.skipped if p.path.startswith("sources/"))
            entities = sum(1 for p in export.skipped if p.path.startswith("entities/"))
            count = len(export.skipped) - sources - entities
            what = f"{count} record file{'s' if count != 1 else ''}" if count else ""
            if sources:
                what += (" and " if what else "") + f"{sources} source{'s' if sources != 1 else ''}"
            if entities:
                what += (" and " if what else "") + (
                    f"{entities} entity file{'s' if entities != 1 else ''}"
                )
            raise CheckFailed(
                f"the export left out {what} that cannot be read (named above; lantern check "
                "says why); everything else was written"
            )

    @cli.command("import")
    @click.argument("source", metavar="FILE|FOLDER|-")
    @click.option(
        "--format",
        "source_format",
        type=click.Choice(["auto", "jsonl", "mcp-memory", "markdown"]),
        default="auto",
        show_default=True,
        help="auto: a folder is markdown notes; a file of entities and relations is mcp-memory.",
    )
    @click.option("--kind", default=None, metavar="KIND", help="Markdown notes: their kind.")
    @click.option("--scope", default=None, metavar="SCOPE", help="Markdown notes: their scope.")
    @reason_option
    @writer
    def import_(
        source: str,
        source_format: str,
        kind: str | None,
        scope: str | None,
        reason: str | None,
        as_json: bool,
        store_path: str | None,
        author: str | None,
    ) -> None:
        """Import records in one commit: lantern's JSON Lines (- for stdin), the MCP memory
        server's memory.json, or a folder of markdown notes (one record per note).

        Everything is validated before anything is written. Records whose id exists are
        skipped, so importing twice is harmless. A record without an id gets the one add
        would give it.
        """
        store = support.open_store(store_path, author)
        options: dict[str, Any] = dict(format=source_format, kind=kind, scope=scope, reason=reason)
        if sys.stderr.isatty() and not as_json:
            with click.progressbar(length=1, label="importing", file=sys.stderr) as bar:

                def advance(step: int, total: int) -> None:
                    bar.length = max(1, total)
                    bar.update(step)

                result = store.written(store.import_source, source, progress=advance, **options)
        else:
            result = store.written(store.import_source, source, **options)
        render.emit_write(result.value, as_json, render.import_lines, pending=result.pending)
