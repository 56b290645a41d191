"""The entity tools of the MCP server: thin calls into ``store.entities`` and the Store's
entity views, returning the dictionaries ``lantern entity ... --json`` prints (docs/entities.md).
Laid out as :mod:`lantern_git.mcp.records` is."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..core.written import Written
from ..model.query import RecordQuery
from .answers import Entity, EntityListing, ShownEntity
from .schemas import (
    EntityAddArguments,
    EntityListArguments,
    EntityShowArguments,
    EntityUpdateArguments,
)
from .spec import Tools, page_of

if TYPE_CHECKING:
    from ..store import Store

TOOLS = Tools()

_WRITE_NOTE = (
    " One git commit (Lantern-Op: entity-add or entity-update, Lantern-Entity: KEY); in review "
    "mode it waits on a review branch. Needs store format 2: a format-1 store answers "
    "needs_migration (a person runs lantern migrate)."
)


@TOOLS.tool(
    "lantern_entity_list",
    title="List entities",
    description=(
        "Every entity key, by key: those with an entity file and those records only name "
        "(`file` false), each with its name and how many active records and source chunks "
        "lantern_entity_show would return. Read-only."
    ),
    answer=EntityListing,
    read_only=True,
    destructive=False,
    idempotent=True,
)
def _list(store: Store, args: EntityListArguments) -> Written[dict[str, Any]]:
    return Written({"entities": store.entity_list(args.type)})


@TOOLS.tool(
    "lantern_entity_show",
    title="Show what the store knows about one entity",
    description=(
        "One entity (null for a key only records name), one page of the active records that "
        "name it in `entities` or [[link]] it by key, name or alias, in the list order, with "
        "`record_count` (every page), and the references of the source chunks holding its key, "
        "name or an alias as a phrase (`chunks`, citable as source_refs). Read-only. At most "
        "`limit` records per call; pass `next_offset` back as `offset` for the next page."
    ),
    answer=ShownEntity,
    read_only=True,
    destructive=False,
    idempotent=True,
)
def _show(store: Store, args: EntityShowArguments) -> Written[dict[str, Any]]:
    page = page_of(args)
    more = page.one_more()
    shown = store.entity_show(args.key, RecordQuery(limit=more.limit, offset=more.offset))
    records = [record.to_dict() for record in shown.pop("records")]
    return Written({**shown, **page.document("records", records)})


@TOOLS.tool(
    "lantern_entity_add",
    title="Add an entity",
    description=(
        "Create the file of an entity (entities/<type>/<name>.md) with a name, aliases and a "
        "description, and return it; a key that has a file is refused (entity_exists)."
        + _WRITE_NOTE
    ),
    answer=Entity,
    read_only=False,
    destructive=False,
    idempotent=False,
)
def _add(store: Store, args: EntityAddArguments) -> Written[dict[str, Any]]:
    written = store.written(
        store.entities.add,
        args.key,
        name=args.name,
        aliases=args.aliases or (),
        description=args.description,
        reason=args.reason,
    )
    return written.map(lambda entity: entity.to_dict())


@TOOLS.tool(
    "lantern_entity_update",
    title="Update an entity",
    description=(
        "Change an entity's name or description, add `aliases` or remove `remove_aliases`; "
        "returns it. Nothing changed: no commit." + _WRITE_NOTE
    ),
    answer=Entity,
    read_only=False,
    destructive=False,
    idempotent=True,
)
def _update(store: Store, args: EntityUpdateArguments) -> Written[dict[str, Any]]:
    written = store.written(
        store.entities.update,
        args.key,
        name=args.name,
        aliases=args.aliases or (),
        remove_aliases=args.remove_aliases or (),
        description=args.description,
        reason=args.reason,
    )
    return written.map(lambda entity: entity.to_dict())


ENTITY_TOOLS = TOOLS.specs
