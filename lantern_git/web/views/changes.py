"""The changes page (``/changes``): a diff (from, to: HEAD and the working tree unless given)
or one commit's change (commit), and the log, each of whose commits links to its change.
Opened plain, it shows what is uncommitted, or, with nothing uncommitted, the last commit's
change rather than an empty diff."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ...errors import LanternError
from .shared import PAGE_SIZE, Kept, committed_state

if TYPE_CHECKING:
    from ...memory.history import LogEntry
    from ...store import Store
    from ..params import Params

TEMPLATE = "changes.html"
LOG_SIZE = 50
# The most changed record files a diff on the page reads: the last commit can be an import of
# 100,000 records, which no page shows whole (`lantern diff` lists every one).
DIFF_SIZE = PAGE_SIZE
# How many of a log entry's records it links to.
LOG_RECORDS = 20


@dataclass
class ChangesMemo:
    """What a server keeps between loads of the page: the working tree's diff against HEAD.
    git's status looks at every file (300-500 ms at 100,000 records); the diff depends only
    on HEAD and the record files' content, which the record index has read once it is
    refreshed (a changed file changes the index, and so its generation; a file it could not
    read is named in its broken files, whose signatures are read too). So the diff is kept for
    HEAD, the index's generation and the broken files as they are, and computed afresh when
    any of them moves."""

    worktree: Kept = field(default_factory=Kept)
    # The last commit's change, shown when nothing is uncommitted: a commit never changes.
    last_commit: Kept = field(default_factory=Kept)
    # The log's page, for HEAD: git's walk inflates every commit it passes, an import's
    # message (3.3 MB at 100,000 records) included, ~150 ms a load.
    log: Kept = field(default_factory=Kept)


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
    diff_size: int = DIFF_SIZE
    log_records: int = LOG_RECORDS


def data(store: Store, params: Params, memo: ChangesMemo | None = None) -> ChangesContext:
    """The page's context; with ``memo`` (the server's), the working tree's diff as kept."""
    old = params.optional("from")
    new = params.optional("to")
    commit = params.optional("commit")
    shown = params.page(LOG_SIZE)
    head = store.git.head_oid()
    log = _kept(memo).log.answer(
        (str(head), shown.limit, shown.offset), lambda: store.log(shown.limit or 0, shown.offset)
    )
    diff = None
    if commit is None:
        diff = (
            worktree_diff(store, memo)
            if old is new is None
            else store.diff(old, new, limit=DIFF_SIZE)
        )
    clean = commit is None and old is new is None and not _any_change(diff)
    if clean and log:
        commit = log[0].commit
        diff = _kept(memo).last_commit.answer(commit, lambda: commit_diff(store, log[0].commit))
    elif commit is not None:
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


def worktree_diff(store: Store, memo: ChangesMemo | None) -> Any:
    """HEAD against the working tree, as kept in ``memo`` while nothing it reads moved."""
    if memo is None or committed_state(store) is not None:
        return store.diff(limit=DIFF_SIZE)
    return memo.worktree.answer(worktree_state(store), lambda: store.diff(limit=DIFF_SIZE))


def _kept(memo: ChangesMemo | None) -> ChangesMemo:
    """The server's memo, or one for this load only."""
    return memo if memo is not None else ChangesMemo()


def worktree_state(store: Store) -> tuple[object, ...]:
    """What the working tree's diff against HEAD depends on, read after the index is brought
    in step with the files: HEAD, the record index's generation, and each file the index
    could not read with its signature (an unreadable file edited into another unreadable one
    changes no index)."""
    broken = store.refresh().broken
    head = store.git.head_oid()
    signatures = tuple(sorted((path, _signature(store.root, path)) for path in broken))
    return str(head), store.index.generation(), signatures


def _signature(root: str, path: str) -> tuple[int, ...] | None:
    try:
        st = os.lstat(os.path.join(root, path))
    except OSError:
        return None
    return st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_mode


def commit_diff(store: Store, commit: str) -> Any:
    """The records ``commit`` changed: from its parent to it (a first commit, which has no
    parent, from itself: lantern's first commit holds no record)."""
    try:
        return store.diff(f"{commit}^", commit, limit=DIFF_SIZE)
    except LanternError:
        return store.diff(commit, commit, limit=DIFF_SIZE)


def _any_change(diff: Any) -> bool:
    return bool(diff.added or diff.removed or diff.changed or diff.problems)
