"""Record filters and the contract's list order, with no index behind them.

The search index answers queries through Whoosh; answers built from git trees (``list --at``)
use the same :class:`RecordQuery` and :func:`sort_key` here, without importing Whoosh.
"""

from __future__ import annotations

from dataclasses import dataclass

from .fields import MAX_TIMESTAMP
from .record import Record


def order_key(record: Record) -> int:
    """The contract's list order packed in one ascending integer; ``id`` breaks ties."""
    rank = 0 if record.status == "active" else 1
    return (
        (rank << 48)
        | ((100 - record.priority) << 41)
        | ((100 - record.urgency) << 34)
        | (MAX_TIMESTAMP - record.updated_at)
    )


def sort_key(record: Record) -> tuple:
    """The same order as :func:`order_key`, for lists built outside the index."""
    return (order_key(record), record.id)


@dataclass
class RecordQuery:
    """Filters shared by list and search."""

    scopes: tuple[str, ...] = ()
    kinds: tuple[str, ...] = ()
    status: str = "active"
    min_priority: int | None = None
    min_urgency: int | None = None
    text: str | None = None
    include_expired: bool = False
    limit: int | None = None
    offset: int = 0
    now: int | None = None

    def matches(self, record: Record) -> bool:
        """The same filters applied to one record (for answers that do not use the index)."""
        if self.status != "all" and record.status != self.status:
            return False
        if self.kinds and record.kind not in self.kinds:
            return False
        if self.scopes and not any(_scope_matches(p, record.scope) for p in self.scopes):
            return False
        if self.min_priority is not None and record.priority < self.min_priority:
            return False
        if self.min_urgency is not None and record.urgency < self.min_urgency:
            return False
        return self.include_expired or not record.is_expired(self.now)


def _scope_matches(pattern: str, scope: str) -> bool:
    if pattern.endswith("*"):
        return scope.startswith(pattern[:-1])
    return scope == pattern
