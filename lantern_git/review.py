"""Review before memory (CONTRACT §12): writes wait on a branch until a person accepts them.

With review on, the write transaction commits to ``refs/heads/lantern/review/<name>`` instead
of the store's branch (:meth:`~lantern_git.git.repo.GitRepo.commit_to_branch`): one branch per
writer name, based on the store's branch, whose ref, working tree and ``.git/index`` stay as
they are. This module names those branches and decides when review is on; the transaction
does the writing, so every writer takes the same path with review on or off.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import pygit2

from .errors import InvalidInput
from .recordfile import record_path

if TYPE_CHECKING:
    from .git.repo import GitRepo
    from .history import Change, LogEntry
    from .record import Record
    from .recordfile import Problem

REVIEW_PREFIX = "refs/heads/lantern/review/"
# Strict on purpose: whatever passes is a valid ref name component on every platform (no dots,
# so no "..", ".lock" or trailing "."; no slashes, so no nesting under another writer's branch).
_NAME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,63}")
_TRUE = ("1", "true", "yes", "on")
_FALSE = ("", "0", "false", "no", "off")


def check_review_name(name: object) -> str:
    """A writer name for a review branch, or InvalidInput (exit 2) saying what is allowed."""
    if not isinstance(name, str) or not _NAME_RE.fullmatch(name):
        raise InvalidInput(
            f"review name: {name!r} is not a valid name; use 1 to 64 letters, digits, '-' or "
            "'_', starting with a letter or digit",
            code="invalid_review_name",
        )
    return name


def review_ref(name: str) -> str:
    """The review branch of writer ``name``: ``refs/heads/lantern/review/<name>``."""
    return REVIEW_PREFIX + check_review_name(name)


def review_enabled(explicit: bool | None, configured: object) -> bool:
    """Whether writes go to a review branch: the caller's choice (``Store(review=...)``, ``lantern
    mcp --review``), else ``LANTERN_REVIEW``, else the store's ``lantern.yaml`` ``review`` key."""
    if explicit is not None:
        return explicit
    env = os.environ.get("LANTERN_REVIEW")
    if env is not None:
        value = env.strip().lower()
        if value in _TRUE:
            return True
        if value in _FALSE:
            return False
        raise InvalidInput(
            f"LANTERN_REVIEW: {env!r} is not 1 or 0 (or true/false)", code="invalid_review"
        )
    if configured is None:
        return False
    if not isinstance(configured, bool):
        raise InvalidInput(
            f"lantern.yaml: 'review' must be true or false, got {configured!r}",
            code="invalid_review",
        )
    return configured


def review_name(explicit: str | None, actor: str) -> str:
    """The writer name: the caller's, else ``LANTERN_REVIEW_NAME``, else the actor."""
    return check_review_name(explicit or os.environ.get("LANTERN_REVIEW_NAME") or actor)


# ---------------------------------------------------------------------------- lantern review


@dataclass
class PendingRecord:
    """One record a review branch changed: how (``added``, ``changed``, ``removed``), the
    record as the branch has it, its fields old -> new against where the branch left the store's
    branch, and who wrote it there."""

    id: str
    change: str
    record: Record | None
    before: Record | None
    changes: list[Change]
    # The store's branch changed this record too since the review branch left it: accepting
    # it is then a record-aware three-way merge.
    moved: bool
    commits: list[str] = field(default_factory=list)
    actors: list[str] = field(default_factory=list)
    authors: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "change": self.change,
            "record": self.record.to_dict() if self.record is not None else None,
            "changes": [c.to_dict() for c in self.changes],
            "moved": self.moved,
            "commits": list(self.commits),
            "actors": list(self.actors),
            "authors": list(self.authors),
        }


@dataclass
class ReviewBranch:
    """One writer's review branch: where it left the store's branch, its commits (newest
    first), and the records they change, in id order."""

    name: str
    ref: str
    tip: str
    base: str | None
    commits: list[LogEntry]
    records: list[PendingRecord]
    problems: list[Problem]

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "ref": self.ref,
            "tip": self.tip,
            "base": self.base,
            "commits": [c.to_dict() for c in self.commits],
            "records": [r.to_dict() for r in self.records],
            "problems": [p.to_dict() for p in self.problems],
        }


@dataclass
class ReviewList:
    """``lantern review``: every review branch with pending changes, by name."""

    branches: list[ReviewBranch] = field(default_factory=list)

    @property
    def records(self) -> list[PendingRecord]:
        return [r for b in self.branches for r in b.records]

    def to_dict(self) -> dict[str, Any]:
        return {"branches": [b.to_dict() for b in self.branches]}


def review_branches(git: GitRepo) -> list[tuple[str, str]]:
    """(name, ref) of every review branch, by name."""
    refs = (r for r in git.repo.references if r.startswith(REVIEW_PREFIX))
    return sorted((ref.removeprefix(REVIEW_PREFIX), ref) for ref in refs)


def review_list(git: GitRepo) -> ReviewList:
    """Each review branch's pending changes, record by record, against the point where it
    left the store's branch (their merge base; the store's branch itself for a branch with no
    common history): what the writer changed, which accepting it would bring. A branch the store's
    branch already contains is left out."""
    from .history import branch_log
    from .timetravel import record_at, record_diff

    answer = ReviewList()
    head = git.head_oid()
    head_tree = git.head_tree()
    for name, ref in review_branches(git):
        tip = git.branch_tip(ref)
        if tip is None or head is None:
            continue
        base = git.repo.merge_base(tip, head)
        if base == tip:
            continue
        since = base if base is not None else head
        diff = record_diff(git, str(since), str(tip))
        commits = branch_log(git, tip, base)
        touched = _touched_by(git, tip, base)
        since_tree = git.repo[since].peel(pygit2.Tree)
        records: list[PendingRecord] = []
        entries: list[tuple[str, str, Record | None, Record | None, list[Change]]] = [
            *(("added", r.id, r, None, []) for r in diff.added),
            *(("removed", r.id, None, r, []) for r in diff.removed),
            *(
                (
                    "changed",
                    c.id,
                    record_at(git, c.id, str(tip)),
                    record_at(git, c.id, str(since)),
                    c.changes,
                )
                for c in diff.changed
            ),
        ]
        for change, record_id, record, before, changes in entries:
            path = record_path(record_id)
            who = [c for c in commits if c.commit in touched.get(path, ())]
            records.append(
                PendingRecord(
                    record_id,
                    change,
                    record,
                    before,
                    changes,
                    moved=git.entry_at(head_tree, path) != git.entry_at(since_tree, path),
                    commits=[c.commit for c in who],
                    actors=sorted({c.actor for c in who if c.actor}),
                    authors=sorted({c.author for c in who}),
                )
            )
        records.sort(key=lambda r: r.id)
        answer.branches.append(
            ReviewBranch(
                name,
                ref,
                str(tip),
                str(base) if base is not None else None,
                commits,
                records,
                diff.problems,
            )
        )
    return answer


def _touched_by(git: GitRepo, tip: pygit2.Oid, base: pygit2.Oid | None) -> dict[str, set[str]]:
    """path -> the commits between ``base`` and ``tip`` that changed it."""
    walker = git.repo.walk(tip)
    if base is not None:
        walker.hide(base)
    touched: dict[str, set[str]] = {}
    for commit in walker:
        parent = commit.parents[0].tree if commit.parents else None
        for path in git.tree_changes(parent, commit.tree):
            touched.setdefault(path, set()).add(str(commit.id))
    return touched
