"""The sources page (``/sources``): the stored evidence sources, by kind, paged."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .shared import PAGE_SIZE

if TYPE_CHECKING:
    from ...store import Store
    from ..params import Params

TEMPLATE = "sources.html"


@dataclass
class SourcesContext:
    manifests: list[Any]
    # Whether a next page follows.
    more: bool
    offset: int
    limit: int
    kinds: list[str]


def data(store: Store, params: Params) -> SourcesContext:
    kinds = params.texts("kind")
    shown = params.page(PAGE_SIZE)
    asked = shown.one_more()  # one more than shown: whether a next page follows
    manifests = store.sources.list(kinds=kinds, limit=asked.limit, offset=asked.offset)
    return SourcesContext(
        manifests=list(manifests[: shown.limit]),
        more=shown.limit is not None and len(manifests) > shown.limit,
        offset=shown.offset,
        limit=shown.limit or 0,
        kinds=kinds,
    )
