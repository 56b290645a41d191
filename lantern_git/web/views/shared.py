"""What more than one page shows: a record's evidence as verify finds it, a listed record as a
row, a parsed ``source:`` reference, and the revision the pages read at when the working tree
cannot be trusted."""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from ...errors import LanternError
from ...model.source import SourceRef, is_source_ref
from ...review import PendingVersion

if TYPE_CHECKING:
    from ...evidence.sources import RefCheck
    from ...model.record import Record
    from ...store import Store

T = TypeVar("T")
PAGE_SIZE = 50


class Kept:
    """One answer kept for the state it was computed from: asked again with the same state,
    the kept answer; with another, computed afresh. For a page's costly reads whose answer
    only a commit or a changed file can change (their state is read in microseconds: a tree
    id, the refs, the index's generation)."""

    def __init__(self) -> None:
        self._kept: tuple[object, Any] | None = None
        self._lock = threading.Lock()

    def answer(self, state: object, compute: Callable[[], T]) -> T:
        with self._lock:
            kept = self._kept
        if kept is not None and kept[0] == state:
            answer: T = kept[1]
            return answer
        made = compute()
        with self._lock:
            self._kept = (state, made)
        return made


def tree_of(store: Store, commit: str | None) -> str:
    """The tree id of ``commit`` (empty for none). Kept by commit id, which names the same
    commit in every repository: reading a commit inflates its whole message, and an import's
    names every record it made (3.3 MB at 100,000 records, ~70 ms a read)."""
    import pygit2

    if not commit:
        return ""
    with _TREES_LOCK:
        tree = _TREES.get(commit)
    if tree is None:
        tree = str(store.git.repo[commit].peel(pygit2.Commit).tree_id)
        with _TREES_LOCK:
            if len(_TREES) >= _TREES_KEPT:
                _TREES.clear()
            _TREES[commit] = tree
    return tree


_TREES: dict[str, str] = {}
_TREES_LOCK = threading.Lock()
_TREES_KEPT = 1024


def committed_state(store: Store) -> str | None:
    """The revision the records are read at when the working tree cannot be trusted: a
    read-only server with a cut-off write left unrepaired shows the last commit, not the
    half-written files."""
    return "HEAD" if store.read_only and store.recovery_pending else None


@dataclass
class Row:
    """A listed or found record, as one row of the records page."""

    record: Record
    score: float | None
    pending: bool

    @classmethod
    def of(cls, record: Record, score: float | None = None) -> Row:
        return cls(record, score, isinstance(record, PendingVersion))


@dataclass
class Evidence:
    """One reference of a record, as the record and review pages show it."""

    ref: str
    source_id: str | None
    blob: str | None
    problem: str | None
    detail: str
    lines: tuple[int, int] | None
    text: str | None
    moved_to: tuple[int, int] | None

    @classmethod
    def of(cls, ref: str, check: RefCheck | None) -> Evidence:
        if check is None:
            return cls(ref, None, None, None, "", None, None, None)
        parsed = parsed_ref(ref)
        return cls(
            ref,
            parsed.source_id if parsed else None,
            parsed.blob if parsed else None,
            check.problem,
            check.detail,
            check.lines,
            check.text,
            check.moved_to,
        )


def evidence_of(store: Store, record: Record) -> list[Evidence]:
    """Every reference of ``record``, with verify's finding."""
    return [Evidence.of(ref, check) for ref, check in store.sources.check_refs(record)]


def parsed_ref(ref: str) -> SourceRef | None:
    """A ``source:`` reference parsed, None for an opaque one or one that does not parse (a
    hand edit; verify reports it)."""
    if not is_source_ref(ref):
        return None
    try:
        return SourceRef.parse(ref)
    except LanternError:
        return None
