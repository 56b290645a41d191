"""One paging rule for every listing and search: records, sources, the log, a record's history.

A page is a ``limit`` and an ``offset``. ``limit`` 0 (or None) is no limit; a negative limit or
offset, one past :data:`LARGEST` (no list is that long; a log walked with ``itertools.islice``
once failed on a larger one with a ``ValueError``, a 500 on the web), or one that is not a
whole number, is refused as ``usage_error`` (exit 2). The rule is
checked here and nowhere else: the library builds a :class:`Page` from its ``limit=`` and
``offset=`` arguments, the CLI's ``--limit``/``--offset`` options build one, and so do the MCP
tools' ``limit``/``offset`` arguments; so a listing cannot drift from the others again (a
second copy once answered ``source search --limit 0`` with nothing).
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from ..errors import InvalidInput
from .fields import NO_LIMIT

T = TypeVar("T")

# The code of every refused page, on every surface (exit 2).
PAGE_ERROR = "usage_error"
# The largest limit or offset: what a slice or ``islice`` takes.
LARGEST = sys.maxsize


@dataclass(frozen=True)
class Page:
    """``offset`` results skipped, then at most ``limit`` (None: every one). Built from a
    caller's values, it is checked and ``limit`` 0 becomes None."""

    limit: int | None = None
    offset: int = 0

    def __post_init__(self) -> None:
        if self.limit is not None:
            _check_count("limit", self.limit, " (0: no limit)")
            if self.limit == NO_LIMIT:
                object.__setattr__(self, "limit", None)
        _check_count("offset", self.offset)

    @classmethod
    def of(cls, limit: Any = None, offset: Any = 0, *, maximum: int | None = None) -> Page:
        """The page ``limit`` and ``offset`` ask for, refused as :class:`Page` refuses; with
        ``maximum`` (an MCP page's largest), a larger limit is refused too, with the same code."""
        if maximum is not None and _is_count(limit) and limit > maximum:
            raise InvalidInput(
                f"limit: must be between 1 and {maximum}, or {NO_LIMIT} for no limit; got {limit}",
                code=PAGE_ERROR,
            )
        return cls(limit, offset)

    @property
    def end(self) -> int | None:
        """The index after the page's last item, or None for every item to the end."""
        # At most LARGEST: a huge offset plus a limit would be past what islice takes.
        return None if self.limit is None else min(self.offset + self.limit, LARGEST)

    def take(self, items: Sequence[T]) -> list[T]:
        """This page of ``items``, every item in order."""
        return list(items[self.offset : self.end])

    def one_more(self) -> Page:
        """The same page with room for one more item: whether it comes tells whether another
        page follows, without counting every match."""
        return self if self.limit is None else Page(min(self.limit + 1, LARGEST), self.offset)

    def document(self, key: str, items: list[Any]) -> dict[str, Any]:
        """One page of ``items`` (fetched with :meth:`one_more`) as the MCP tools return it:
        under ``key``, with ``offset``, ``limit`` (0: no limit) and ``next_offset`` (None on the
        last page)."""
        more = self.limit is not None and len(items) > self.limit
        return {
            key: items[: self.limit] if more else items,
            "offset": self.offset,
            "limit": NO_LIMIT if self.limit is None else self.limit,
            "next_offset": self.end if more else None,
        }


def _is_count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _check_count(name: str, value: Any, note: str = "") -> None:
    if not _is_count(value):
        shown = f"the string {value!r}" if isinstance(value, str) else repr(value)
        raise InvalidInput(f"{name}: must be a whole number; got {shown}", code=PAGE_ERROR)
    if value < 0:
        raise InvalidInput(f"{name}: must be 0 or more{note}; got {value}", code=PAGE_ERROR)
    if value > LARGEST:
        raise InvalidInput(f"{name}: must be at most {LARGEST}; got {value}", code=PAGE_ERROR)
