"""What a write did, as one value: what it returned, the commit it made, whether that awaits
review.

Every surface needs the same three facts after a write: the CLI says "added" or "unchanged"
and marks a pending record, the MCP server puts the commit and the pending mark in a result's
``_meta``. They get them from :meth:`Store.written <lantern_git.store.Store.written>`, which
runs one write and returns a :class:`Written`, rather than from fields the store left behind.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Generic, TypeVar

T = TypeVar("T")
U = TypeVar("U")


@dataclass(frozen=True)
class Written(Generic[T]):
    """``value``: what the write returned (a record, a deletion, a revert...). ``commit``: the
    last commit it made, None when it changed nothing. ``pending``: its commits went to a
    review branch, so what it wrote awaits a person's accept."""

    value: T
    commit: str | None = None
    pending: bool = False

    def map(self, convert: Callable[[T], U]) -> Written[U]:
        """The same write with its value converted (to a JSON document, say)."""
        return Written(convert(self.value), self.commit, self.pending)
