"""The changes page (``/changes``): a diff (from, to: HEAD and the working tree unless given)
or one commit's change (commit), and the log, each of whose commits links to its change.
Opened plain, it shows what is uncommitted, or, with nothing uncommitted, the last commit's
change rather than an empty diff."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ...errors import LanternError

if TYPE_CHECKING:
    from ...memory.history import LogEntry
    from ...store import Store
    from ..params import Params

TEMPLATE = "changes.html"
LOG_SIZE = 50


@dataclass
class ChangesContext:
    diff: Any
    log: list[LogEntry]
    # As asked ("" when not): the diff's ends, the commit whose change is shown.
    old: str
    new: str
    commit: str
    # Nothing uncommitted: the change shown is the last commit's.
    clean: bool
    limit: int


def data(store: Store, params: Params) -> ChangesContext:
    old = params.optional("from")
    new = params.optional("to")
    commit = params.optional("commit")
    shown = params.page(LOG_SIZE)
    log = store.log(shown.limit or 0, shown.offset)
    diff = None if commit is not None else store.diff(old, new)
    clean = commit is None and old is new is None and not _any_change(diff)
    if clean and log:
        commit = log[0].commit
    if commit is not None:
        diff = commit_diff(store, commit)
    return ChangesContext(
        diff=diff,
        log=log,
        old=old or "",
        new=new or "",
        commit=commit or "",
        clean=clean,
        limit=shown.limit or 0,
    )


def commit_diff(store: Store, commit: str) -> Any:
    """The records ``commit`` changed: from its parent to it (a first commit, which has no
    parent, from itself: lantern's first commit holds no record)."""
    try:
        return store.diff(f"{commit}^", commit)
    except LanternError:
        return store.diff(commit, commit)


def _any_change(diff: Any) -> bool:
    return bool(diff.added or diff.removed or diff.changed or diff.problems)
