"""A record's page (``/records/{record_id}``): the record, its history, the records that
replaced it, its evidence, and, when it waits for review, the branches it waits on."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from ...errors import NotFound
from ...review import PendingVersion
from .shared import Evidence, committed_state, evidence_of

if TYPE_CHECKING:
    from ...memory.history import HistoryEntry
    from ...model.record import Record
    from ...review import ReviewBranch, ReviewList
    from ...store import Store
    from ..params import Params

TEMPLATE = "record.html"


@dataclass
class RecordContext:
    record: Record
    # The revision it was read at (None: the working tree), and whether pending was asked.
    at: str | None
    pending: bool
    is_pending: bool
    history: list[HistoryEntry]
    replaced_by: list[str]
    evidence: list[Evidence]
    # Where it waits, to accept or reject it here, beside its evidence: each review branch
    # with the ids decided with it.
    waiting: list[tuple[ReviewBranch, list[str]]]


def data(store: Store, params: Params) -> RecordContext:
    at = params.optional("at") or committed_state(store)
    pending = params.flag("pending")
    found = store.get(params.path("record_id"), at=at, include_pending=pending)
    try:
        history = store.record_history(found.id)
    except NotFound:
        if not pending:
            raise
        history = None  # added on a review branch: its commits are the review page's
    is_pending = isinstance(found, PendingVersion)
    return RecordContext(
        record=found,
        at=at,
        pending=pending,
        is_pending=is_pending,
        history=history.entries if history else [],
        replaced_by=history.replaced_by() if history else [],
        evidence=evidence_of(store, found),
        waiting=waiting(store.review_list(), found.id) if is_pending else [],
    )


def waiting(listing: ReviewList, record_id: str) -> list[tuple[ReviewBranch, list[str]]]:
    """The review branches a record is pending on, each with the ids decided with it."""
    return [
        (branch, [pending.id, *pending.decided_with])
        for branch in listing.branches
        for pending in branch.records
        if pending.id == record_id
    ]
