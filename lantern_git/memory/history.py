"""History read from git: the commits that touched a record, and the store's recent operations.

Nothing here is stored by lantern besides the commits themselves: the op, actor, reason and
records come from the trailers, the field changes from comparing the record file's blobs.

What is read of a commit never changes (its id is the hash of its content), so a long-running
process (``lantern serve``, ``lantern mcp``) keeps it: an import's commit names every record it
wrote (100,000 records: a 3.3 MB message, tens of milliseconds to inflate from git and a
hundred to parse), and each of those records' histories reads it.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from itertools import islice
from typing import Any, NamedTuple, TypeVar

import pygit2
from cachetools import LRUCache
from pygit2.enums import SortMode

from ..core.fields import RECORD_KEYS
from ..core.paging import Page
from ..errors import NotFound
from ..git.repo import GitRepo, parse_trailers
from ..model.record import Record
from ..model.record_file import parse, record_path

_TOPO_TIME = SortMode.TOPOLOGICAL | SortMode.TIME


@dataclass
class Change:
    field: str
    old: Any
    new: Any

    def to_dict(self) -> dict[str, Any]:
        return {"field": self.field, "old": self.old, "new": self.new}


@dataclass
class LogEntry:
    """One commit, as lantern's provenance trailers describe it."""

    commit: str
    time: int
    author: str
    op: str | None
    actor: str | None
    reason: str | None
    summary: str
    records: list[str] = field(default_factory=list)
    sources: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "commit": self.commit,
            "time": self.time,
            "author": self.author,
            "op": self.op,
            "actor": self.actor,
            "records": self.records,
            "reason": self.reason,
            "summary": self.summary,
            "sources": self.sources,
        }


@dataclass
class HistoryEntry(LogEntry):
    """One commit that changed a record file, with the fields it changed."""

    changes: list[Change] = field(default_factory=list)
    problem: str | None = None

    def to_dict(self) -> dict[str, Any]:
        data = super().to_dict()
        del data["sources"]  # a record's history: the sources a commit touched are the log's
        data["changes"] = [c.to_dict() for c in self.changes]
        data["problem"] = self.problem
        return data


@dataclass
class RecordHistory:
    """``memory history``'s answer: a record's full id and the commits that changed it."""

    id: str
    entries: list[HistoryEntry]

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "history": [entry.to_dict() for entry in self.entries]}

    def replaced_by(self) -> list[str]:
        """The records that superseded this one: the others a supersede commit named when it
        set this record's status to superseded (sorted, each once)."""
        return sorted(
            {
                other
                for entry in self.entries
                if entry.op == "supersede"
                for other in entry.records
                if other != self.id
                and any(c.field == "status" and c.new == "superseded" for c in entry.changes)
            }
        )


@dataclass
class OperationLog:
    """``lantern log``'s answer: the store's recent operations, newest first."""

    entries: list[LogEntry]

    def to_dict(self) -> dict[str, Any]:
        return {"log": [entry.to_dict() for entry in self.entries]}


class _Read(NamedTuple):
    """What a log entry shows of one commit."""

    time: int
    author: str
    summary: str
    trailers: dict[str, tuple[str, ...]]


# Commits as read, by commit id, up to 16 million characters of their messages (an import of
# 100,000 records: 3.3 million, kept as ~7 MB of trailer values).
_READ: LRUCache[pygit2.Oid, tuple[_Read, int]] = LRUCache(16_000_000, getsizeof=lambda v: v[1])
# The commits reachable from a branch's tip, in walk order, by (git folder, tip), up to
# 200,000 commits in all (~50 MB): a store's branch moves with each write, the last walks stay.
_WALKS: LRUCache[tuple[str, pygit2.Oid], list[_Step]] = LRUCache(200_000, getsizeof=len)
_KEPT = threading.Lock()  # LRUCache reorders itself on every read
_K = TypeVar("_K")
_V = TypeVar("_V")


def _kept(cache: LRUCache[_K, _V], key: _K) -> _V | None:
    with _KEPT:
        return cache.get(key)


def _keep(cache: LRUCache[_K, _V], key: _K, value: _V) -> None:
    with _KEPT, contextlib.suppress(ValueError):  # one item above the whole budget: not kept
        cache[key] = value


def _read(repo: pygit2.Repository, oid: pygit2.Oid, commit: pygit2.Commit | None = None) -> _Read:
    found = _kept(_READ, oid)
    if found is not None:
        return found[0]
    if commit is None:
        commit = repo[oid].peel(pygit2.Commit)
    message = commit.message
    trailers = {key: tuple(values) for key, values in parse_trailers(message).items()}
    author = commit.author
    read = _Read(
        time=int(commit.commit_time),
        author=f"{author.name} <{author.email}>",
        summary=message[: message.find("\n")] if "\n" in message else message,
        trailers=trailers,
    )
    _keep(_READ, oid, (read, 200 + len(message)))
    return read


def _entry(
    repo: pygit2.Repository,
    oid: pygit2.Oid,
    cls: type[LogEntry] = LogEntry,
    commit: pygit2.Commit | None = None,
    **extra: Any,
) -> Any:
    read = _read(repo, oid, commit)
    trailers = read.trailers
    return cls(
        commit=str(oid),
        time=read.time,
        author=read.author,
        op=_first(trailers, "Lantern-Op"),
        actor=_first(trailers, "Lantern-Actor"),
        reason=_first(trailers, "Lantern-Reason"),
        summary=read.summary,
        # The entry's own lists: a caller may change them, the kept trailers must not.
        records=list(trailers.get("Lantern-Record", ())),
        sources=list(trailers.get("Lantern-Source", ())),
        **extra,
    )


def _first(trailers: dict[str, tuple[str, ...]], key: str) -> str | None:
    values = trailers.get(key)
    return values[0] if values else None


def _walk(repo: pygit2.Repository, head: pygit2.Oid | None) -> Iterator[pygit2.Commit]:
    if head is None:
        return iter(())
    return repo.walk(head, _TOPO_TIME)


def store_log(git: GitRepo, page: Page) -> list[LogEntry]:
    """One page of the store branch's commits, newest first; only the page's are read."""
    repo = git.repo
    commits = islice(_walk(repo, git.head_oid()), page.offset, page.end)
    return [_entry(repo, commit.id, commit=commit) for commit in commits]


def branch_log(git: GitRepo, tip: pygit2.Oid, since: pygit2.Oid | None) -> list[LogEntry]:
    """The commits reachable from ``tip`` and not from ``since`` (``git log since..tip``),
    newest first."""
    walker = git.repo.walk(tip, _TOPO_TIME)
    if since is not None:
        walker.hide(since)
    return [_entry(git.repo, commit.id, commit=commit) for commit in walker]


class _Step(NamedTuple):
    """One commit of a walk: its id, its tree's and its parents' trees'."""

    commit: pygit2.Oid
    tree: pygit2.Oid
    parent_trees: tuple[pygit2.Oid, ...]


def _steps(repo: pygit2.Repository, head: pygit2.Oid | None) -> list[_Step]:
    """The commits reachable from ``head``, in ``_walk``'s order, with their trees. Kept by
    tip: git's walk reads every commit whole (an import's, megabytes, inflated each time).
    Not kept where git rewrites parents (a shallow clone, grafts): they can change under a
    tip that does not."""
    if head is None:
        return []
    rewritten = repo.is_shallow or os.path.exists(os.path.join(repo.path, "info", "grafts"))
    key = (os.path.realpath(repo.path), head)
    if not rewritten:
        found = _kept(_WALKS, key)
        if found is not None:
            return found
    commits = [(c.id, c.tree_id, c.parent_ids) for c in _walk(repo, head)]
    tree_of = {oid: tree for oid, tree, _ in commits}
    steps = [
        _Step(
            oid,
            tree,
            tuple(
                tree_of[p] if p in tree_of else repo[p].peel(pygit2.Commit).tree_id for p in parents
            ),
        )
        for oid, tree, parents in commits
    ]
    if not rewritten:
        _keep(_WALKS, key, steps)
    return steps


def _blob_id(repo: pygit2.Repository, tree: pygit2.Oid, path: str) -> pygit2.Oid | None:
    folder = repo[tree].peel(pygit2.Tree)
    try:
        return folder[path].id
    except KeyError:
        return None


def _parse_blob(
    repo: pygit2.Repository, path: str, oid: pygit2.Oid | None
) -> tuple[Record | None, str | None]:
    if oid is None:
        return None, None
    record, problem = parse(path, repo[oid].peel(pygit2.Blob).data)
    if problem is not None:
        return None, f"the record file was invalid in this commit: {problem}"
    return record, None


def diff_records(old: Record | None, new: Record | None) -> list[Change]:
    """Field by field, in the contract's order; a missing side reads as null."""
    before = old.to_dict() if old is not None else {}
    after = new.to_dict() if new is not None else {}
    changes = []
    for key in RECORD_KEYS:
        a, b = before.get(key), after.get(key)
        if a != b:
            changes.append(Change(key, a, b))
    return changes


def record_history(git: GitRepo, record_id: str) -> list[HistoryEntry]:
    """Commits reachable from HEAD that changed ``memory/<aa>/<id>.md``, newest first.

    A merge is listed only when the file differs from every parent's (the merge itself
    changed it); otherwise the change is listed where it was made, as ``git log`` does.
    """
    repo = git.repo
    path = record_path(record_id)
    entries: list[HistoryEntry] = []
    for step in _steps(repo, git.head_oid()):
        here = _blob_id(repo, step.tree, path)
        parents = [_blob_id(repo, tree, path) for tree in step.parent_trees]
        if parents and any(here == before for before in parents):
            continue
        if not parents and here is None:
            continue
        before = parents[0] if parents else None
        old, _ = _parse_blob(repo, path, before)
        new, problem = _parse_blob(repo, path, here)
        changes = diff_records(old, new) if problem is None else []
        if here is None:
            problem = "the record file was deleted in this commit"
        entries.append(_entry(repo, step.commit, HistoryEntry, changes=changes, problem=problem))
    if not entries:
        raise NotFound(f"no history for record {record_id}")
    return entries
