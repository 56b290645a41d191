"""History read from git: the commits that touched a record, and the store's recent operations.

Nothing here is stored by lantern besides the commits themselves: the op, actor, reason and
records come from the trailers, the field changes from comparing the record file's blobs.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from itertools import islice
from typing import Any

import pygit2
from pygit2.enums import SortMode

from .errors import NotFound
from .fields import RECORD_KEYS
from .git.repo import GitRepo, parse_trailers
from .paging import Page
from .record import Record
from .recordfile import parse, record_path

_TOPO_TIME = SortMode.TOPOLOGICAL | SortMode.TIME


@dataclass
class Change:
    field: str
    old: Any
    new: Any

    def to_dict(self) -> dict:
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

    def to_dict(self) -> dict:
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

    def to_dict(self) -> dict:
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


@dataclass
class OperationLog:
    """``lantern log``'s answer: the store's recent operations, newest first."""

    entries: list[LogEntry]

    def to_dict(self) -> dict[str, Any]:
        return {"log": [entry.to_dict() for entry in self.entries]}


def _entry(commit: pygit2.Commit, cls: type[LogEntry] = LogEntry, **extra: Any) -> Any:
    trailers = parse_trailers(commit.message)
    author = commit.author
    return cls(
        commit=str(commit.id),
        time=int(commit.commit_time),
        author=f"{author.name} <{author.email}>",
        op=_first(trailers, "Lantern-Op"),
        actor=_first(trailers, "Lantern-Actor"),
        reason=_first(trailers, "Lantern-Reason"),
        summary=commit.message.split("\n", 1)[0],
        records=trailers.get("Lantern-Record", []),
        sources=trailers.get("Lantern-Source", []),
        **extra,
    )


def _first(trailers: dict[str, list[str]], key: str) -> str | None:
    values = trailers.get(key)
    return values[0] if values else None


def _walk(repo: pygit2.Repository, head: pygit2.Oid | None) -> Iterator[pygit2.Commit]:
    if head is None:
        return iter(())
    return repo.walk(head, _TOPO_TIME)


def store_log(git: GitRepo, page: Page) -> list[LogEntry]:
    """One page of the store branch's commits, newest first; only the page's are read."""
    commits = islice(_walk(git.repo, git.head_oid()), page.offset, page.end)
    return [_entry(commit) for commit in commits]


def branch_log(git: GitRepo, tip: pygit2.Oid, since: pygit2.Oid | None) -> list[LogEntry]:
    """The commits reachable from ``tip`` and not from ``since`` (``git log since..tip``),
    newest first."""
    walker = git.repo.walk(tip, _TOPO_TIME)
    if since is not None:
        walker.hide(since)
    return [_entry(commit) for commit in walker]


def _blob_id(tree: pygit2.Tree, path: str) -> pygit2.Oid | None:
    try:
        return tree[path].id
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
    for commit in _walk(repo, git.head_oid()):
        here = _blob_id(commit.tree, path)
        parents = [_blob_id(p.tree, path) for p in commit.parents]
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
        entries.append(_entry(commit, HistoryEntry, changes=changes, problem=problem))
    if not entries:
        raise NotFound(f"no history for record {record_id}")
    return entries
