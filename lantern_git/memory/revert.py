"""``lantern revert COMMIT``: undo one lantern commit as a new commit, record by record.

Each record file the commit changed is merged three ways, with the commit's version as the base:
``merge(base=the commit's, ours=HEAD's, theirs=its parent's)`` through
:func:`lantern_git.model.record_merge.merge_records`, the merge sync and the git driver use. So what
the commit changed goes back, and what later commits changed in other fields of the same record
stays. A later change to a field the commit changed is a conflict: the revert is refused
(:class:`~lantern_git.errors.CannotRevert`, exit 2) rather than decided by the merge's rule, since
undoing would then overwrite a newer value. Nothing is written unless every record reverts cleanly.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from enum import Enum
from typing import TYPE_CHECKING, Any, Final

import pygit2

from ..errors import CannotRevert, InvalidInput
from ..git.repo import parse_trailers
from ..model.record import Record
from ..model.record_file import expected_id, parse
from ..model.record_merge import merge_records
from ..workspace.transaction import refuse_uncommitted

if TYPE_CHECKING:
    from ..workspace.transaction import WriteTransaction

# Ops whose commits create or reshape the store rather than change records.
_NOT_REVERTIBLE = ("init", "migrate")


@dataclass
class RevertResult:
    """The commit undone, the commit that undid it (None when nothing was left to undo), and
    the records it changed."""

    reverted: str
    commit: str | None
    records: list[str] = field(default_factory=list)
    summary: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {
            "reverted": self.reverted,
            "commit": self.commit,
            "records": self.records,
            "summary": self.summary,
        }


def resolve_commit(repo: pygit2.Repository, rev: str) -> pygit2.Commit:
    if not isinstance(rev, str) or not rev.strip():
        raise InvalidInput("commit: must not be empty", code="invalid_revision")
    try:
        return repo.revparse_single(rev.strip()).peel(pygit2.Commit)
    except (KeyError, ValueError, pygit2.GitError, pygit2.InvalidSpecError):
        raise InvalidInput(
            f"commit: {rev!r} is not a commit of this store (give a hash, HEAD~2, a tag)",
            code="invalid_revision",
        ) from None


def _refuse(message: str, code: str) -> CannotRevert:
    return CannotRevert(message + "; nothing was written", code=code)


def revert(tx: WriteTransaction, rev: str, *, reason: str | None = None) -> RevertResult:
    """Undo ``rev`` (one lantern commit on the store's branch) in one new commit with
    ``Lantern-Op: revert`` and ``Lantern-Reverts: <commit>``."""
    git = tx.git
    repo = git.repo
    commit = resolve_commit(repo, rev)
    sha, short = str(commit.id), str(commit.id)[:10]
    summary = commit.message.split("\n", 1)[0]
    head = git.head_oid()
    if head is None or (head != commit.id and not repo.descendant_of(head, commit.id)):
        raise _refuse(f"commit {short} is not on this store's branch", "not_in_history")
    if len(commit.parents) > 1:
        raise _refuse(
            f"commit {short} is a merge commit; revert the commits it merged, one at a time",
            "merge_commit",
        )
    ops = parse_trailers(commit.message).get("Lantern-Op")
    if not ops:
        raise _refuse(
            f"commit {short} was not made by lantern (it has no Lantern-Op trailer); undo it "
            "with git revert, or edit the records and lantern commit",
            "not_lantern_commit",
        )
    if ops[0] in _NOT_REVERTIBLE or not commit.parents:
        raise _refuse(
            f"commit {short} is a store's {ops[0]}, not a change of records", "not_records"
        )
    parent = commit.parents[0]
    changed = git.tree_changes(parent.tree, commit.tree)
    others = sorted(p for p in changed if expected_id(p) is None)
    if others:
        raise _refuse(
            f"commit {short} changed files that are not records ({', '.join(others[:3])}); "
            "undo it with git revert",
            "not_records",
        )
    now = int(time.time())
    files: dict[str, bytes | None] = {}
    for path in sorted(changed):
        record_id = expected_id(path) or ""
        before = git.blob_at(parent.tree, path)
        after = git.blob_at(commit.tree, path)
        # In review mode, a record the review branch changed is reverted from its version there.
        current = tx.committed_blob(path)
        if path not in tx.pending():
            refuse_uncommitted(git, [path])  # a hand edit is never swept into the revert
        result = _revert_file(path, record_id, short, before, after, current)
        if result is _UNCHANGED:
            continue
        files[path] = _bumped(path, result, current, now) if isinstance(result, bytes) else None
    if not files:
        return RevertResult(sha, None, [], summary)
    ids = [expected_id(p) or p for p in files]
    new = tx.commit(
        files,
        f"revert {short}: {summary}",
        "revert",
        ids,
        reason=reason,
        extra_trailers=[f"Lantern-Reverts: {sha}"],
    )
    return RevertResult(sha, new, ids, summary)


class _Unchanged(Enum):
    """The one value that says a file is already as the revert would leave it."""

    UNCHANGED = "unchanged"


_UNCHANGED: Final = _Unchanged.UNCHANGED


def _revert_file(
    path: str,
    record_id: str,
    short: str,
    before: bytes | None,
    after: bytes | None,
    current: bytes | None,
) -> bytes | _Unchanged | None:
    """What the file becomes (bytes, None to remove it), or _UNCHANGED: already undone."""
    if current == before:
        return _UNCHANGED
    if current == after:
        return before
    if before is None:
        raise _refuse(
            f"record {record_id} was added by {short} and changed since; undoing the add would "
            f"lose those changes (archive it, or remove it with lantern memory delete)",
            "revert_conflict",
        )
    if current is None:
        raise _refuse(
            f"record {record_id} was deleted after {short}; there is nothing to undo the change "
            "on (bring it back with lantern revert of that delete first)",
            "revert_conflict",
        )
    if after is None:
        raise _refuse(
            f"record {record_id} was deleted by {short} and written again since; keeping that "
            "newer version",
            "revert_conflict",
        )
    merged = merge_records(after, current, before, path)
    if merged.invalid_side is not None:
        raise _refuse(f"{path} does not hold a valid record at {short} or now", "revert_conflict")
    if merged.conflicts:
        fields = ", ".join(c.field for c in merged.conflicts)
        raise _refuse(
            f"record {record_id}: {fields} changed again after {short}; undoing it would "
            "overwrite the newer value (change it with lantern memory update or edit instead)",
            "revert_conflict",
        )
    current_record = parse(path, current)[0]
    if current_record is not None and merged.record == current_record:
        return _UNCHANGED
    return merged.text.encode("utf-8")


def _bumped(path: str, data: bytes, current: bytes | None, now: int) -> bytes:
    """The reverted record with ``updated_at`` set to now, as every write sets it (so a sync
    merge sees the revert as the newer change)."""
    record, _ = parse(path, data)
    if record is None:
        return data
    latest = record.updated_at
    current_record = parse(path, current)[0] if current is not None else None
    if current_record is not None:
        latest = max(latest, current_record.updated_at)
    text = data.decode("utf-8")
    bumped: Record = record.evolve(updated_at=max(now, latest))
    return bumped.rewrite(text).encode("utf-8")
