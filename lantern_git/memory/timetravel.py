"""Reading the past: ``memory list --at`` and ``memory show --at`` (the records as they were, read
from git's tree at that point), and ``lantern diff`` (what changed between two points, record by
record and field by field).

The answers come from commits' trees (and the working files for a diff), not the search index, so
they need no Whoosh: the filters and the order are the same code the index path uses
(:mod:`lantern_git.model.query`), and a field change is
:func:`lantern_git.memory.history.diff_records`'s.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from typing import Any

import pygit2

from ..errors import AmbiguousId, InvalidInput, NotFound, StoreError
from ..git.repo import LINK_MODE, GitRepo, resolve_point
from ..model.query import RecordQuery, sort_key
from ..model.record import Record
from ..model.record_file import MEMORY_DIR, RECORD_SUFFIX, Problem, expected_id, parse, read_bytes
from .history import Change, diff_records


def records_in_tree(
    repo: pygit2.Repository, tree: pygit2.Tree, warn: Callable[[str], None] | None = None
) -> list[Record]:
    """Every record file of a tree, parsed; files that do not parse are skipped with a warning."""
    try:
        memory = repo[tree[MEMORY_DIR].id]
    except KeyError:
        return []
    if not isinstance(memory, pygit2.Tree):
        return []
    records = []
    for shard in memory:
        sub = repo[shard.id]
        if not isinstance(sub, pygit2.Tree):
            continue
        for entry in sub:
            path = f"{MEMORY_DIR}/{shard.name}/{entry.name}"
            if expected_id(path) is None:
                continue
            blob = repo[entry.id]
            if not isinstance(blob, pygit2.Blob) or entry.filemode == LINK_MODE:
                problem: object = f"{path}: is not a regular file in this commit"
                record = None
            else:
                record, problem = parse(path, blob.data)
            if record is not None:
                records.append(record)
            elif warn:
                warn(f"warning: skipped {problem}")
    return records


def list_at(
    git: GitRepo,
    at: str | int,
    query: RecordQuery | None = None,
    warn: Callable[[str], None] | None = None,
) -> list[Record]:
    """The records ``memory list`` would have shown at ``at``, in the same order."""
    query = query or RecordQuery()
    if query.text:
        raise InvalidInput(
            "query: --query cannot be combined with --at (keyword search uses the index of "
            "the working tree)",
            code="invalid_query",
        )
    commit, moment = resolve_point(git, at)
    if commit is None:
        return []
    query = replace(query, now=moment if query.now is None else query.now)
    records = [r for r in records_in_tree(git.repo, commit.tree, warn) if query.matches(r)]
    records.sort(key=sort_key)
    return query.page.take(records)


def record_at(git: GitRepo, prefix: str, at: str | int) -> Record:
    """The record whose id starts with ``prefix`` (checked: 4-16 hex digits) as git's tree held
    it at ``at``; the prefix is resolved in that tree, so a record deleted since is found."""
    commit, _ = resolve_point(git, at)
    if commit is None:
        raise NotFound(f"no record with id {prefix} at {at}: the store had no commit then")
    where = f"at {at} (commit {str(commit.id)[:10]})"
    candidates: list[tuple[str, pygit2.Object]] = []
    try:
        folder = git.repo[commit.tree[f"{MEMORY_DIR}/{prefix[:2]}"].id]
    except KeyError:
        folder = None
    if isinstance(folder, pygit2.Tree):
        for entry in folder:
            stem = (entry.name or "").removesuffix(RECORD_SUFFIX)
            path = f"{MEMORY_DIR}/{prefix[:2]}/{entry.name}"
            if stem.startswith(prefix) and expected_id(path) == stem:
                candidates.append((path, entry))
    if not candidates:
        raise NotFound(f"no record with id {'prefix ' if len(prefix) < 16 else ''}{prefix} {where}")
    if len(candidates) > 1:
        raise AmbiguousId(prefix, [expected_id(path) or path for path, _ in candidates])
    path, entry = candidates[0]
    blob = git.repo[entry.id]
    if not isinstance(blob, pygit2.Blob) or entry.filemode == LINK_MODE:
        raise StoreError(f"{path}: is not a regular file {where}", code="invalid_record")
    record, problem = parse(path, blob.data)
    if record is None:
        raise StoreError(f"{problem} {where}", code="invalid_record")
    return record


# ---------------------------------------------------------------------------- lantern diff


@dataclass
class RecordChange:
    """A record both points hold, with the fields that differ (``updated_at`` included)."""

    id: str
    content: str
    changes: list[Change]

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "content": self.content,
            "changes": [c.to_dict() for c in self.changes],
        }


@dataclass
class RecordDiff:
    """``lantern diff``: records added, removed and changed from one point to another.

    ``from_commit``/``to_commit`` are None for the empty store before the first commit, and
    ``to_commit`` for the working tree too (``to_worktree``).
    """

    from_commit: str | None
    to_commit: str | None
    to_worktree: bool
    added: list[Record] = field(default_factory=list)
    removed: list[Record] = field(default_factory=list)
    changed: list[RecordChange] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)
    # Asked for the first few changed record files only: more changed than were read.
    more: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {
            "from": self.from_commit,
            "to": None if self.to_worktree else self.to_commit,
            "worktree": self.to_worktree,
            "added": [r.to_dict() for r in self.added],
            "removed": [r.to_dict() for r in self.removed],
            "changed": [c.to_dict() for c in self.changed],
            "problems": [p.to_dict() for p in self.problems],
        }


def _point(git: GitRepo, rev: str | int | None) -> tuple[pygit2.Commit | None, pygit2.Tree | None]:
    if rev is None:
        head = git.head_oid()
        commit = git.repo[head].peel(pygit2.Commit) if head is not None else None
    else:
        commit, _ = resolve_point(git, rev)
    return commit, (commit.tree if commit is not None else None)


def record_diff(
    git: GitRepo,
    old: str | int | None = None,
    new: str | int | None = None,
    *,
    limit: int | None = None,
) -> RecordDiff:
    """What changed, record by record, from ``old`` (default HEAD) to ``new`` (default: the
    working tree, so hand edits can be reviewed before ``lantern commit``).

    Revisions are anything git resolves, or times as ``--at`` takes them. Only record files
    count; a file that does not parse on a side is listed in ``problems`` instead.

    ``limit``: only the first ``limit`` changed record files, in path order, are read (the
    Changes page, showing an import of 100,000 records, reads a hundred between two commits);
    ``more`` says whether any was left out.
    """
    from .checker import changed_memory_paths

    old_commit, old_tree = _point(git, old)
    ordered: Iterable[str]
    if new is None:
        head_tree = git.head_tree()
        paths = {p for p, _ in git.iter_tree_changes(old_tree, head_tree, MEMORY_DIR)}
        paths.update(changed_memory_paths(git))
        new_commit, new_tree = None, None
        ordered = sorted(paths)
    else:
        new_commit, new_tree = _point(git, new)
        # In path order, as the walk finds them: the page's first few cost a few folders.
        ordered = (p for p, _ in git.iter_tree_changes(old_tree, new_tree, MEMORY_DIR))
    diff = RecordDiff(
        str(old_commit.id) if old_commit is not None else None,
        str(new_commit.id) if new_commit is not None else None,
        to_worktree=new is None,
    )
    records = (p for p in ordered if expected_id(p) is not None)
    chosen = list(records if limit is None else itertools.islice(records, limit + 1))
    if limit is not None and len(chosen) > limit:
        diff.more = True
        del chosen[limit:]
    for path in chosen:
        before = git.blob_at(old_tree, path)
        unreadable = None
        if new is None:
            after, unreadable = read_bytes(git.root, path)
        else:
            after = git.blob_at(new_tree, path)
        if before == after and unreadable is None:
            continue
        old_record, old_problem = parse(path, before) if before is not None else (None, None)
        new_record, new_problem = parse(path, after) if after is not None else (None, unreadable)
        if old_problem is not None or new_problem is not None:
            diff.problems.extend(p for p in (old_problem, new_problem) if p is not None)
        elif old_record is None and new_record is not None:
            diff.added.append(new_record)
        elif new_record is None and old_record is not None:
            diff.removed.append(old_record)
        elif old_record is not None and new_record is not None:
            changes = diff_records(old_record, new_record)
            if changes:  # a file only reformatted changes no field
                diff.changed.append(RecordChange(new_record.id, new_record.content, changes))
    return diff
