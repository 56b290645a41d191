"""The ``lantern`` command: each command parses, calls the library, renders."""

from __future__ import annotations

import click

from .. import __version__
from .support import (
    LanternGroup,
    add_options,
    common,
    filter_options,
    open_store,
    parse_time_option,
    read_content,
    reason_option,
    record_query,
    store_option,
    writer,
)


@click.group(cls=LanternGroup, context_settings={"help_option_names": ["-h", "--help"]})
@store_option
@click.version_option(__version__, prog_name="lantern")
@click.pass_context
def cli(ctx: click.Context, store_path: str | None) -> None:
    """Lantern: memory records for agents, as markdown files in git.

    Every write is a git commit; `git log -p` shows how memory changed.
    """
    ctx.obj = {"store_path": store_path}


@cli.command()
@click.argument("path", required=False)
@writer
def init(path: str | None, as_json: bool, store_path: str | None, author: str | None) -> None:
    """Create a store in PATH, or adopt the git repository there (default: current folder)."""
    import os

    from .. import render
    from ..store import Store

    target = path or store_path or os.getcwd()
    store = Store(target, create_on_write=True, actor="cli", author=author)
    result = store.initialize()
    value = {
        "path": result.path,
        "created_repository": result.created_repo,
        "committed": result.committed,
        "commit": result.commit,
        "registered_merge_driver": result.registered_merge_driver,
    }

    def text(v):
        if not v["committed"]:
            if v["registered_merge_driver"]:
                # A fresh clone: its files are a store already, but git config is not cloned.
                return [f"{v['path']} is a lantern store; registered its record merge driver"]
            return [f"{v['path']} is already a lantern store"]
        return [f"Initialized lantern store in {v['path']}"]

    render.emit(value, as_json, text)


@cli.command()
@common
def status(as_json: bool, store_path: str | None) -> None:
    """Store path, format, record counts, index state, branch and upstream."""
    from .. import render

    info = open_store(store_path).status()

    def text(v):
        if not v["exists"]:
            return [f"store:    {v['path']} (not created yet; the first write creates it)"]
        lines = [
            f"store:    {v['path']}",
            f"format:   {v['format']}",
            f"records:  {v['records']}",
        ]
        if v["by_status"]:
            lines.append("  " + ", ".join(f"{k} {n}" for k, n in v["by_status"].items()))
        if v["by_kind"]:
            lines.append("  " + ", ".join(f"{k} {n}" for k, n in v["by_kind"].items()))
        if v["broken_files"]:
            lines.append(f"broken:   {v['broken_files']} file(s); run lantern check")
        lines.append(f"index:    {v['index']}")
        branch = v["branch"] or "(detached HEAD)"
        if v["upstream"]:
            branch += f" -> {v['upstream']} (ahead {v['ahead']}, behind {v['behind']})"
        lines.append(f"branch:   {branch}")
        return lines

    render.emit(info, as_json, text)


@cli.group()
def memory() -> None:
    """Add, list, search and change memory records."""


def _emit_record(store, record, as_json: bool, verb) -> None:
    """``verb`` is a word, a function of the id shortener giving one, or None for the record."""
    from .. import render

    short = render.ShortIds(store.root)
    if callable(verb):
        verb = verb(short)
    if verb is None:
        render.emit(record, as_json, render.record_lines)
    else:
        render.emit(record, as_json, lambda r: render.write_line(verb, r, short))


@memory.command("add")
@click.argument("content")
@add_options()
@reason_option
@click.option("--quiet", "-q", is_flag=True, help="Print only the record's id (for scripts).")
@writer
def memory_add(
    content,
    kind,
    scope,
    priority,
    urgency,
    confidence,
    expires_at,
    source_refs,
    reason,
    quiet,
    as_json,
    store_path,
    author,
) -> None:
    """Add a record. CONTENT is the text, or - to read it from stdin.

    Adding the same kind, scope and content again returns the existing record.
    """
    store = open_store(store_path, author)
    record = store.add(
        read_content(content),
        kind=kind,
        scope=scope,
        priority=priority,
        urgency=urgency,
        confidence=confidence,
        expires_at=parse_time_option(expires_at, "expires_at"),
        source_refs=source_refs,
        reason=reason,
    )
    if quiet and not as_json:
        click.echo(record.id)
        return
    _emit_record(store, record, as_json, "added" if store.last_commit else "exists")


@memory.command("list")
@filter_options
@click.option("--query", default=None, metavar="TEXT", help="Only records matching these words.")
@click.option(
    "--at", default=None, metavar="REV|DATE", help="As at a git revision or a time (from git)."
)
@common
def memory_list(as_json, store_path, at, **filters) -> None:
    """Records in order: active first, then priority, urgency, newest, id."""
    from .. import render

    store = open_store(store_path)
    records = store.list(record_query(**filters), at=at)
    short = render.ShortIds(store.root)
    render.emit(records, as_json, lambda rs: render.table(rs, short))


@memory.command("search")
@click.argument("query")
@filter_options
@common
def memory_search(query, as_json, store_path, **filters) -> None:
    """Records matching QUERY, most relevant first, each with its score."""
    from .. import render

    store = open_store(store_path)
    hits = store.search(query, record_query(**filters))
    short = render.ShortIds(store.root)
    render.emit(
        hits,
        as_json,
        lambda hs: render.table([h.record for h in hs], short, [h.score for h in hs]),
    )


@memory.command("show")
@click.argument("record_id", metavar="ID")
@common
def memory_show(record_id, as_json, store_path) -> None:
    """One record, with every field."""
    store = open_store(store_path)
    _emit_record(store, store.get(record_id), as_json, None)


@memory.command("archive")
@click.argument("record_id", metavar="ID")
@reason_option
@writer
def memory_archive(record_id, reason, as_json, store_path, author) -> None:
    """Mark a record archived. Nothing is deleted."""
    store = open_store(store_path, author)
    record = store.archive(record_id, reason=reason)
    _emit_record(store, record, as_json, "archived" if store.last_commit else "unchanged")


@memory.command("restore")
@click.argument("record_id", metavar="ID")
@reason_option
@writer
def memory_restore(record_id, reason, as_json, store_path, author) -> None:
    """Make an archived or superseded record active again."""
    store = open_store(store_path, author)
    record = store.restore(record_id, reason=reason)
    _emit_record(store, record, as_json, "restored" if store.last_commit else "unchanged")


@memory.command("supersede")
@click.argument("old_id", metavar="OLD_ID")
@click.argument("content")
@add_options(defaults=False)
@reason_option
@writer
def memory_supersede(
    old_id,
    content,
    kind,
    scope,
    priority,
    urgency,
    confidence,
    expires_at,
    source_refs,
    reason,
    as_json,
    store_path,
    author,
) -> None:
    """Replace OLD_ID with a new record (CONTENT, or - for stdin), in one commit.

    Kind, scope, priority, urgency and confidence default to the old record's.
    """
    store = open_store(store_path, author)
    record = store.supersede(
        old_id,
        read_content(content),
        kind=kind,
        scope=scope,
        priority=priority,
        urgency=urgency,
        confidence=confidence,
        expires_at=parse_time_option(expires_at, "expires_at"),
        source_refs=source_refs,
        reason=reason,
    )
    old = record.supersedes_id
    _emit_record(store, record, as_json, lambda short: f"superseded {short(old)} by")


@memory.command("update")
@click.argument("record_id", metavar="ID")
@click.option("--priority", type=int, default=None, metavar="N", help="0-100.")
@click.option("--urgency", type=int, default=None, metavar="N", help="0-100.")
@click.option("--confidence", type=float, default=None, metavar="F", help="0.0-1.0.")
@click.option("--expires-at", default=None, metavar="T|none", help="A time, or none to clear.")
@click.option("--add-source-ref", "add_source_refs", multiple=True, metavar="REF")
@reason_option
@writer
def memory_update(
    record_id,
    priority,
    urgency,
    confidence,
    expires_at,
    add_source_refs,
    reason,
    as_json,
    store_path,
    author,
) -> None:
    """Change a record's priority, urgency, confidence, expiry or source refs."""
    from ..store import UNSET

    if expires_at is None:
        expiry = UNSET
    elif expires_at.strip().lower() == "none":
        expiry = None
    else:
        expiry = parse_time_option(expires_at, "expires_at")
    store = open_store(store_path, author)
    record = store.update(
        record_id,
        priority=priority,
        urgency=urgency,
        confidence=confidence,
        expires_at=expiry,
        add_source_refs=add_source_refs,
        reason=reason,
    )
    _emit_record(store, record, as_json, "updated" if store.last_commit else "unchanged")


@cli.group("index")
def index_group() -> None:
    """The search index (derived from the files; safe to delete)."""


@index_group.command("rebuild")
@common
def index_rebuild(as_json, store_path) -> None:
    """Rebuild the search index from the record files."""
    from .. import render

    report = open_store(store_path).rebuild_index()
    value = {"indexed": report.updated, "skipped": len(report.broken)}
    render.emit(
        value,
        as_json,
        lambda v: [
            f"indexed {v['indexed']} records"
            + (f", skipped {v['skipped']}" if v["skipped"] else "")
        ],
    )


from . import lifecycle  # noqa: E402 - commands register onto the groups above

lifecycle.register(cli, memory)

from . import mcp  # noqa: E402

mcp.register(cli, memory)

from . import sync  # noqa: E402

sync.register(cli, memory)


def main() -> None:
    cli.main(prog_name="lantern")


if __name__ == "__main__":
    main()
