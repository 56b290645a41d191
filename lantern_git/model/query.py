"""Record filters, the contract's list order and a found record, with no index behind them.

The search index answers queries through Whoosh; answers built from git trees (``list --at``)
use the same :class:`RecordQuery` and :func:`sort_key` here, without importing Whoosh. The CLI's
flags and the MCP tools' arguments become a query through one function,
:meth:`RecordQuery.from_options`, so the two front ends cannot drift apart.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..core.fields import DEFAULT_STATUS, MAX_TIMESTAMP
from ..core.paging import Page
from .entity_keys import label_term, mention_terms

if TYPE_CHECKING:
    from .record import Record


# Where order_key keeps each part: 100 minus priority and 100 minus urgency, 7 bits each.
_RANK_AT = 48
_PRIORITY_AT = 41
_URGENCY_AT = 34
_LEVEL = 0x7F


def order_key(record: Record) -> int:
    """The contract's list order packed in one ascending integer; ``id`` breaks ties."""
    rank = 0 if record.status == "active" else 1
    return (
        (rank << _RANK_AT)
        | ((100 - record.priority) << _PRIORITY_AT)
        | ((100 - record.urgency) << _URGENCY_AT)
        | (MAX_TIMESTAMP - record.updated_at)
    )


def order_minimums(
    min_priority: int | None, min_urgency: int | None
) -> Callable[[int], bool] | None:
    """A test of an :func:`order_key` value that holds exactly when its record's priority and
    urgency are at least these (None: any; None for no minimum at all). The index keeps every
    record's order in one column, read whole; testing it costs far less than Whoosh's numeric
    range, a union of ~100 term postings merged in Python (100k records: over a second)."""
    if min_priority is None and min_urgency is None:
        return None
    # priority >= p  <=>  100 - priority <= 100 - p; a minimum past 100 leaves a negative top
    # that no stored part reaches, one below 0 a top past every stored part.
    top_p = 100 - (min_priority if min_priority is not None else 0)
    top_u = 100 - (min_urgency if min_urgency is not None else 0)
    if min_urgency is None:
        return lambda order: (order >> _PRIORITY_AT) & _LEVEL <= top_p
    if min_priority is None:
        return lambda order: (order >> _URGENCY_AT) & _LEVEL <= top_u
    return lambda order: (
        (order >> _PRIORITY_AT) & _LEVEL <= top_p and (order >> _URGENCY_AT) & _LEVEL <= top_u
    )


def sort_key(record: Record) -> tuple[int, str]:
    """The same order as :func:`order_key`, for lists built outside the index."""
    return (order_key(record), record.id)


def cited_sources(record: Record) -> set[str]:
    """The source ids ``record`` cites: of each ``source:`` reference, what comes before its
    ``@`` or ``#``, as written (the record index keeps them as terms, so that ``cites`` is one
    term's postings; ``RecordQuery.matches_cites`` asks the same of one record). An id with
    whitespace in it is no source id, and is left out."""
    found = set()
    for ref in record.source_refs:
        if ref.startswith("source:"):
            cited = ref[len("source:") :].split("@", 1)[0].split("#", 1)[0]
            if cited and not any(c.isspace() for c in cited):
                found.add(cited)
    return found


@dataclass
class RecordQuery:
    """Filters shared by list and search."""

    scopes: tuple[str, ...] = ()
    kinds: tuple[str, ...] = ()
    status: str = DEFAULT_STATUS
    min_priority: int | None = None
    min_urgency: int | None = None
    text: str | None = None
    include_expired: bool = False
    limit: int | None = None
    offset: int = 0
    now: int | None = None
    cites: str | None = None  # a source id: only records with a source: reference to it
    # Only records that name or link one entity: its key, name and aliases as label terms
    # (entity_keys.label_term); the Store turns --entity KEY into them (docs/entities.md).
    mentions: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        # The one paging rule (paging.py): checked here, and 0 is "no limit".
        self.limit = self.page.limit

    @property
    def page(self) -> Page:
        return Page(self.limit, self.offset)

    @classmethod
    def from_options(
        cls,
        *,
        scope: Iterable[str] | str | None = (),
        kind: Iterable[str] | str | None = (),
        status: str | None = DEFAULT_STATUS,
        min_priority: int | None = None,
        min_urgency: int | None = None,
        query: str | None = None,
        include_expired: bool = False,
        page: Page | None = None,
        cites: str | None = None,
        mentions: Iterable[str] = (),
    ) -> RecordQuery:
        """The query a front end's options describe, under the names both use: the CLI's
        ``--scope``/``--kind`` (repeatable), ``--status``, ``--min-priority``, ``--query``, ...
        and the MCP list and search tools' arguments of the same names; ``page`` is what their
        ``limit`` and ``offset`` make.

        Values are checked by the store when the query runs, so both front ends give the same
        errors. ``query`` filters a list by keywords; a search takes its text separately.
        """
        return cls(
            scopes=_strings(scope),
            kinds=_strings(kind),
            status=DEFAULT_STATUS if status is None else status,
            min_priority=min_priority,
            min_urgency=min_urgency,
            text=query or None,
            include_expired=bool(include_expired),
            limit=page.limit if page else None,
            offset=page.offset if page else 0,
            cites=cites or None,
            mentions=tuple(label_term(label) for label in mentions),
        )

    def matches_cites(self, record: Record) -> bool:
        return self.cites is not None and self.cites in cited_sources(record)

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
        if self.cites is not None and not self.matches_cites(record):
            return False
        if self.mentions and not set(self.mentions) & set(
            mention_terms(record.entities, record.content)
        ):
            return False
        return self.include_expired or not record.is_expired(self.now)


@dataclass
class Hit:
    """A record that list or search found; search gives each its relevance ``score``, and the
    ``mode`` that ranked it (keyword, semantic or hybrid)."""

    record: Record
    score: float | None = None
    mode: str | None = None
    # What made the score, when the search was asked to explain (docs/search.md, "Explain")
    explain: dict[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        """The record object with ``"score"`` added, ``"mode"`` for a search's hit and
        ``"explain"`` when asked for."""
        data = self.record.to_dict()
        data["score"] = self.score
        if self.mode is not None:
            data["mode"] = self.mode
        if self.explain is not None:
            data["explain"] = self.explain
        return data


@dataclass
class DupePair:
    """Two records whose contents embed close together (``memory dupes``): a, b by id, and
    their cosine. Lantern only reports them; what to do is the caller's choice."""

    a: Record
    b: Record
    score: float

    def to_dict(self) -> dict[str, Any]:
        return {"a": self.a.to_dict(), "b": self.b.to_dict(), "score": self.score}


def _strings(value: Iterable[str] | str | None) -> tuple[str, ...]:
    # tuple("user:ana") would filter by each character: one string is one value.
    if value is None:
        return ()
    if isinstance(value, str):
        return (value,)
    return tuple(value)


def _scope_matches(pattern: str, scope: str) -> bool:
    if pattern.endswith("*"):
        return scope.startswith(pattern[:-1])
    return scope == pattern
