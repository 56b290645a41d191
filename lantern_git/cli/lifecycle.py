"""CLI commands for a record's life after it is added: edit, history, check, commit, log,
export and import. Each parses, calls the library, renders."""

from __future__ import annotations

import sys

import click

from .support import common, open_store, reason_option, writer


def _value_text(value) -> str:
    if value is None:
        return "(none)"
    if isinstance(value, list):
        return "[" + ", ".join(value) + "]"
    text = " ".join(str(value).split())
    return text if len(text) <= 60 else text[:57] + "..."


def _history_lines(entries) -> list[str]:
    from ..render import when

    lines: list[str] = []
    for entry in entries:
        op = entry.op or "(not a lantern commit)"
        actor = f" by {entry.actor}" if entry.actor else ""
        lines.append(f"commit {entry.commit[:10]}  {when(entry.time)} UTC  {entry.author}")
        lines.append(f"    {op}{actor}: {entry.summary}")
        if entry.reason:
            lines.append(f"    reason: {entry.reason}")
        if entry.problem:
            lines.append(f"    ({entry.problem})")
        if entry.changes and all(c.old is None for c in entry.changes):
            lines.append("    (created)")
        else:
            lines.extend(
                f"    {c.field}: {_value_text(c.old)} -> {_value_text(c.new)}"
                for c in entry.changes
            )
        lines.append("")
    return lines[:-1]


def _log_lines(entries) -> list[str]:
    from ..render import when

    lines = []
    for entry in entries:
        records = ", ".join(r[:10] for r in entry.records[:3])
        if len(entry.records) > 3:
            records += f" (+{len(entry.records) - 3})"
        op = entry.op or "-"
        lines.append(
            f"{entry.commit[:10]}  {when(entry.time)}  {op:<9} {entry.actor or '-':<5} "
            f"{entry.summary}" + (f"  [{records}]" if records and op != "import" else "")
        )
        if entry.reason:
            lines.append(f"{'':12}reason: {entry.reason}")
    return lines


def register(cli: click.Group, memory: click.Group) -> None:
    @memory.command("edit")
    @click.argument("record_id", metavar="ID")
    @reason_option
    @writer
    def memory_edit(record_id, reason, as_json, store_path, author) -> None:
        """Open a record in $VISUAL or $EDITOR; validate and commit what is saved.

        An invalid edit is refused with the field and line; on a terminal you may edit again.
        The id cannot be changed. updated_at is set for you.
        """
        from .. import render
        from ..errors import ValidationError

        store = open_store(store_path, author)
        with store.begin_edit(record_id) as session:
            while True:
                session.edit()
                try:
                    record = session.commit(reason=reason)
                    break
                except ValidationError as err:
                    if not sys.stdin.isatty():
                        raise
                    click.echo(f"Error: {err.message}", err=True)
                    if not click.confirm("edit again?", default=True, err=True):
                        raise
        short = render.ShortIds(store.root)
        verb = "edited" if store.last_commit else "unchanged"
        render.emit(record, as_json, lambda r: render.write_line(verb, r, short))

    @memory.command("history")
    @click.argument("record_id", metavar="ID")
    @common
    def memory_history(record_id, as_json, store_path) -> None:
        """The commits that changed a record, newest first, with the fields they changed."""
        from .. import render

        store = open_store(store_path)
        full_id = store.resolve_id(record_id)
        entries = store.history(full_id)
        document = render.history_document(full_id, entries)
        render.emit(document, as_json, lambda _: _history_lines(entries))

    @cli.command("log")
    @click.option("--limit", type=int, default=20, show_default=True, metavar="N")
    @common
    def log(limit, as_json, store_path) -> None:
        """The store's recent operations, from the commits' Lantern trailers."""
        from .. import render

        entries = open_store(store_path).log(limit)
        render.emit(render.log_document(entries), as_json, lambda _: _log_lines(entries))

    @cli.command("check")
    @common
    @click.pass_context
    def check(ctx, as_json, store_path) -> None:
        """Validate every record file; exit 4 if any is invalid.

        Problems are printed as path:line: message. Usable as a pre-commit hook.
        """
        from .. import render

        report = open_store(store_path).check()
        render.emit(report.to_dict(), as_json, lambda _: [str(p) for p in report.problems])
        if not report.ok:
            if not as_json:
                count = len(report.problems)
                click.echo(
                    f"Error: {count} problem{'s' if count != 1 else ''} in record files", err=True
                )
            ctx.exit(4)

    @cli.command("commit")
    @click.option("-m", "--message", default=None, metavar="MSG", help="The commit summary.")
    @reason_option
    @writer
    def commit(message, reason, as_json, store_path, author) -> None:
        """Validate record files edited by hand and commit them (Lantern-Op: edit).

        updated_at is set on each record whose fields or content changed. Invalid or deleted
        record files are refused (exit 4) and nothing is written.
        """
        from .. import render

        result = open_store(store_path, author).commit_hand_edits(message, reason=reason)

        def text(_):
            if result.commit is None:
                return ["nothing to commit: no record file differs from HEAD"]
            count = len(result.records)
            return [
                f"committed {count} record{'s' if count != 1 else ''} "
                f"as {result.commit[:10]}: " + ", ".join(r[:10] for r in result.records)
            ]

        render.emit(result.to_dict(), as_json, text)

    @cli.command("export")
    @common
    def export(as_json, store_path) -> None:
        """Every record, any status, as JSON Lines (one record object per line), in id order.

        A record file that cannot be read is skipped with a warning, and the export then exits
        4 (as lantern check does) after writing every other record: a partial backup must not
        pass for a whole one.
        """
        import json

        from ..errors import CheckFailed

        out = sys.stdout
        export = open_store(store_path).export_records()
        for record in export:
            out.write(json.dumps(record.to_dict(), ensure_ascii=False) + "\n")
        if export.skipped:
            count = len(export.skipped)
            raise CheckFailed(
                f"the export left out {count} record file{'s' if count != 1 else ''} that "
                "cannot be read (named above; lantern check says why); every other record "
                "was written"
            )

    @cli.command("import")
    @click.argument("source", metavar="FILE|-")
    @reason_option
    @writer
    def import_(source, reason, as_json, store_path, author) -> None:
        """Add the records of a JSON Lines file (- for stdin) in one commit.

        Everything is validated before anything is written. Records whose id exists are
        skipped, so importing twice is harmless. Ids must be the deterministic ones.
        """
        from .. import render
        from ..transfer import read_import_source

        lines = read_import_source(source)
        store = open_store(store_path, author)
        if sys.stderr.isatty() and len(lines) >= 500:
            with click.progressbar(length=len(lines), label="validating", file=sys.stderr) as bar:
                result = store.import_records(lines, reason=reason, progress=bar.update)
        else:
            result = store.import_records(lines, reason=reason)
        render.emit(
            result.to_dict(),
            as_json,
            lambda v: [f"imported {v['imported']}, skipped {v['skipped']} (already present)"],
        )
