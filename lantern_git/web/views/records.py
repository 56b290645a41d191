"""The records page (``/``): the store's records, filtered and paged, or found by a search."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ...core.fields import KINDS, SEARCH_MODES
from ...model.query import RecordQuery
from .shared import PAGE_SIZE, Row, committed_state

if TYPE_CHECKING:
    from ...store import Store
    from ..params import Params

TEMPLATE = "records.html"
STATUSES = ("active", "archived", "superseded", "all")
# The records page's modes beside the search modes: a filtered list in list order.
LIST_MODE = "list"


@dataclass
class RecordsContext:
    hits: list[Row]
    # The records the filters match, all pages (None for a search or a list with pending).
    total: int | None
    # Files the list cannot show: named, so that a missing record is no mystery.
    broken: list[str]
    # The form as asked, to show it filled in; params: the same, as the links' query.
    form: dict[str, Any]
    params: dict[str, Any]
    offset: int
    limit: int
    searching: bool
    modes: tuple[str, ...]
    kinds: tuple[str, ...] = KINDS
    statuses: tuple[str, ...] = STATUSES


def data(store: Store, params: Params) -> RecordsContext:
    form: dict[str, Any] = {
        "scope": params.words("scope"),
        "kind": params.texts("kind"),
        "status": params.text("status", "active"),
        "min_priority": params.text("min_priority"),
        "min_urgency": params.text("min_urgency"),
        "include_expired": params.flag("include_expired"),
        "at": params.text("at"),
        "q": params.text("q"),
        "mode": params.choice("mode", (*SEARCH_MODES, LIST_MODE)),
        "pending": params.flag("pending"),
    }
    shown = params.page(PAGE_SIZE)
    query = RecordQuery.from_options(
        scope=form["scope"],
        kind=form["kind"],
        status=form["status"],
        min_priority=params.number("min_priority"),
        min_urgency=params.number("min_urgency"),
        include_expired=form["include_expired"],
        query=form["q"] if form["mode"] == LIST_MODE else None,
        page=shown,
    )
    searching = bool(form["q"].strip()) and form["mode"] != LIST_MODE
    at = form["at"] or committed_state(store)
    broken = [] if at else sorted(store.refresh().broken.values())
    total: int | None = None
    if searching:
        found = store.search(
            form["q"], query, mode=form["mode"] or None, include_pending=form["pending"]
        )
        hits = [Row.of(hit.record, hit.score) for hit in found]
    else:
        hits = [Row.of(r) for r in store.list(query, at=at, include_pending=form["pending"])]
        total = None if form["pending"] else store.count(query, at=at)
    limit = shown.limit or 0
    return RecordsContext(
        hits=hits,
        total=total,
        broken=broken,
        form=form,
        params=form | {"limit": limit if limit != PAGE_SIZE else None},
        offset=shown.offset,
        limit=limit,
        searching=searching,
        modes=offered_modes(store),
    )


def offered_modes(store: Store) -> tuple[str, ...]:
    """The search modes the Mode menu offers: semantic and hybrid only where they can run."""
    if store.workspace.semantic_available:
        return SEARCH_MODES
    return tuple(m for m in SEARCH_MODES if m == "keyword")
