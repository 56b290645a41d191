"""``memory list --at REV|DATE``: the records as they were, read from git's tree at that point.

The answer comes from the commit's tree, not the search index, so it needs no Whoosh: the
filters and the order are the same code the index path uses (:mod:`lantern_git.query`).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import replace

import pygit2

from .errors import InvalidInput
from .git.repo import LINK_MODE, GitRepo
from .query import RecordQuery, sort_key
from .record import Record
from .recordfile import MEMORY_DIR, expected_id, parse

# Text that reads as a moment rather than a revision: ISO dates and durations (+7d, -2h).
_LOOKS_LIKE_TIME = re.compile(r"\d{4}-\d{2}-\d{2}([T ].*)?|[+-]\d+[smhdw]")


def resolve_point(git: GitRepo, at: str | int) -> tuple[pygit2.Commit | None, int]:
    """(commit, moment): the commit the store was at, and the time used to judge expiry.

    ``at`` is any revision git understands (HEAD~3, a hash, a tag, main@{yesterday}) or a
    moment (unix seconds, ISO 8601, a duration): then the newest commit on the first-parent
    line made at or before it. A revision is judged at its commit time.
    """
    from .timespec import parse_time

    repo = git.repo
    text = str(at).strip()
    if not text:
        raise InvalidInput("at: must not be empty", code="invalid_at")
    if not isinstance(at, int) and not _LOOKS_LIKE_TIME.fullmatch(text):
        try:
            commit = repo.revparse_single(text).peel(pygit2.Commit)
            return commit, int(commit.commit_time)
        except (KeyError, ValueError, pygit2.GitError, pygit2.InvalidSpecError):
            if not text.isdigit():
                raise InvalidInput(
                    f"at: {text!r} is neither a git revision nor a time "
                    "(unix seconds, 2026-12-31, 2026-12-31T08:00:00Z, -7d)",
                    code="invalid_at",
                ) from None
    moment = at if isinstance(at, int) else parse_time(text, name="at")
    head = git.head_oid()
    point: pygit2.Commit | None = repo[head].peel(pygit2.Commit) if head is not None else None
    while point is not None and point.commit_time > moment:
        point = point.parents[0] if point.parents else None
    return point, moment


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
    end = None if query.limit is None else query.offset + query.limit
    return records[query.offset : end]
