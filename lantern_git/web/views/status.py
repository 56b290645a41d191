"""The status page (``/status``): the store's status, the files the indexes could not read,
verify's report and the review list."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .shared import Kept, tree_of

if TYPE_CHECKING:
    from ...review import ReviewList
    from ...store import Store
    from ..params import Params

TEMPLATE = "status.html"


@dataclass
class StatusMemo:
    """What a server keeps between loads of the page. Verify reads every citing record and
    source (136 ms a load at 5,100 records), the review list diffs every review branch (140 ms
    at 10,000 records and 20 pending): kept for the commit tree and the refs they were read
    from. Uncommitted hand edits show in verify once committed."""

    verified: Kept = field(default_factory=Kept)
    reviewed: Kept = field(default_factory=Kept)
    # The store's status: its counts read every posting of the status and kind terms (1.5 s
    # at 100,000 records): kept for the indexes' generations, HEAD and the broken files, with
    # the branch (HEAD, upstream, ahead and behind) read afresh on every load.
    counted: Kept = field(default_factory=Kept)


@dataclass
class StatusContext:
    info: dict[str, Any]
    # Every record and source file the indexes could not read: ``path:line: what is wrong``.
    broken: list[str]
    report: Any
    review: ReviewList
    # A read-only server with a cut-off write left unrepaired.
    recovery: bool


def data(store: Store, params: Params, memo: StatusMemo | None = None) -> StatusContext:
    """The page's context; with ``memo`` (the server's), the costly parts as kept."""
    memo = memo or StatusMemo()
    broken = _broken_files(store)  # the indexes brought in step first: their state is read
    head = store.git.head_oid()
    state = (str(head), store.index.generation(), store.chunks.generation(), tuple(broken))
    info = {**memo.counted.answer(state, store.status), **store.git.branch_info()}
    return StatusContext(
        info=info,
        broken=broken,
        report=memo.verified.answer(tree_of(store, info["head"]), store.sources.verify),
        review=memo.reviewed.answer(_refs_of(store), store.review_list),
        recovery=store.read_only and store.recovery_pending,
    )


def _refs_of(store: Store) -> tuple[tuple[str, str], ...]:
    """Every branch and its commit: what the review list depends on."""
    repo = store.git.repo
    found = []
    for name in repo.references:
        target = repo.references[name].resolve().target
        found.append((name, str(target)))
    return tuple(sorted(found))


def _broken_files(store: Store) -> list[str]:
    records = store.refresh().broken.values()
    sources = (str(problem) for problem in store.chunks.refresh().broken.values())
    return sorted([*records, *sources])
