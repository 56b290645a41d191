"""``lantern entity``: the people, projects and hosts records name (docs/entities.md).

Each command parses, calls ``store.entities``, renders; the rules are the library's."""

from __future__ import annotations

from typing import Any

import click

from . import render, support
from .support import common, filter_options, reason_option, writer


def register(cli: click.Group, memory: click.Group) -> None:
    cli.add_command(entity_group)


@click.group("entity")
def entity_group() -> None:
    """Entities: the named things records and sources talk about (person:ana)."""


_name = click.option("--name", default=None, metavar="NAME", help="How text names it.")
_alias = click.option(
    "--alias", "aliases", multiple=True, metavar="TEXT", help="Another name (repeatable)."
)
_description = click.option("--description", default=None, metavar="TEXT", help="One line.")


@entity_group.command("add")
@click.argument("key", metavar="KEY")
@_name
@_alias
@_description
@reason_option
@writer
def entity_add(
    key: str,
    name: str | None,
    aliases: tuple[str, ...],
    description: str | None,
    reason: str | None,
    as_json: bool,
    store_path: str | None,
    author: str | None,
) -> None:
    """Add an entity file, entities/<type>/<name>.md, in one commit.

    KEY is TYPE:NAME, spelled as a scope is (person:ana); NAME defaults to the key's name.
    """
    store = support.open_store(store_path, author)
    written = store.written(
        store.entities.add,
        key,
        name=name,
        aliases=aliases,
        description=description,
        reason=reason,
    )
    render.emit_write(
        written.value.to_dict(), as_json, render.entity_written("added"), pending=written.pending
    )


@entity_group.command("update")
@click.argument("key", metavar="KEY")
@_name
@_alias
@click.option("--remove-alias", "remove_aliases", multiple=True, metavar="TEXT", help="Repeatable.")
@_description
@reason_option
@writer
def entity_update(
    key: str,
    name: str | None,
    aliases: tuple[str, ...],
    remove_aliases: tuple[str, ...],
    description: str | None,
    reason: str | None,
    as_json: bool,
    store_path: str | None,
    author: str | None,
) -> None:
    """Change an entity's name or description, add or remove aliases, in one commit."""
    store = support.open_store(store_path, author)
    written = store.written(
        store.entities.update,
        key,
        name=name,
        aliases=aliases,
        remove_aliases=remove_aliases,
        description=description,
        reason=reason,
    )
    verb = "updated" if written.commit else "unchanged"
    render.emit_write(
        written.value.to_dict(), as_json, render.entity_written(verb), pending=written.pending
    )


@entity_group.command("rename")
@click.argument("old", metavar="OLD")
@click.argument("new", metavar="NEW")
@reason_option
@writer
def entity_rename(
    old: str,
    new: str,
    reason: str | None,
    as_json: bool,
    store_path: str | None,
    author: str | None,
) -> None:
    """Give an entity a new key in one commit: its file moves, every record naming or linking
    OLD is rewritten, and OLD's name stays as an alias."""
    store = support.open_store(store_path, author)
    written = store.written(store.entities.rename, old, new, reason=reason)
    render.emit_write(
        written.value.to_dict(), as_json, render.entity_written("renamed"), pending=written.pending
    )


@entity_group.command("list")
@click.option("--type", "type_", default=None, metavar="TYPE", help="Only this type (person).")
@common
def entity_list(type_: str | None, as_json: bool, store_path: str | None) -> None:
    """Every entity key, files and keys records name alike, with its name and counts."""
    listed = support.open_store(store_path).entity_list(type_)
    render.emit(listed, as_json, render.entity_list_lines)


@entity_group.command("show")
@click.argument("key", metavar="KEY")
@filter_options
@common
def entity_show(key: str, as_json: bool, store_path: str | None, **filters: Any) -> None:
    """An entity, and the records that name or [[link]] it, in list order (the list filters
    apply), with their count."""
    from ..model.query import RecordQuery

    store = support.open_store(store_path)
    query = RecordQuery.from_options(**filters)
    shown = store.entity_show(key, query)
    shown["records"] = [record.to_dict() for record in shown["records"]]
    render.emit(shown, as_json, render.entity_show_lines)
