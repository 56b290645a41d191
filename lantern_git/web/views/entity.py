"""The entity page (``/entities/KEY``): one entity, or a key records only mention, with the
records that name or link it and the source chunks that hold its key, name or an alias."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ...store import Store
    from ..params import Params

TEMPLATE = "entity.html"


@dataclass
class EntityContext:
    key: str
    # The entity file's fields, or None for a key that records only mention.
    entity: dict[str, Any] | None
    records: list[Any]
    record_count: int
    chunks: list[str]
    chunk_count: int


def data(store: Store, params: Params) -> EntityContext:
    from ...model.query import RecordQuery

    # Every record that names it, whatever its status: the page is about the entity.
    shown = store.entity_show(params.path("key"), RecordQuery(status="all", include_expired=True))
    return EntityContext(**shown)
