"""Typed exceptions. The CLI and the MCP server map them to exit codes and JSON in one place."""

from __future__ import annotations

from typing import Any


class LanternError(Exception):
    """Base class: every error lantern raises on purpose carries a code and an exit status."""

    code = "store_error"
    exit_code = 1

    def __init__(self, message: str, *, code: str | None = None):
        super().__init__(message)
        self.message = message
        if code is not None:
            self.code = code

    def to_dict(self) -> dict[str, Any]:
        return {"error": {"code": self.code, "message": self.message}}


class StoreError(LanternError):
    """The store or git failed (I/O, lock, repository state). Exit 1."""

    code = "store_error"
    exit_code = 1


class GitError(StoreError):
    code = "git_error"


class LockTimeout(StoreError):
    code = "lock_timeout"


class NoStore(StoreError):
    code = "no_store"


class UnsupportedFormat(StoreError):
    code = "unsupported_format"


class UncommittedChanges(StoreError):
    code = "uncommitted_changes"


class ReadOnlyStore(StoreError):
    """A write to a store this process cannot write (a mounted backup, another user's store).
    Reads still work: they answer from an index built in a temporary folder."""

    code = "read_only"


class SemanticUnavailable(StoreError):
    """A semantic or hybrid search, ``similar`` or ``dupes`` without an embedder: the extra is
    not installed, or ``embedder: none`` chose keyword search only. Exit 1; the message names
    the install command."""

    code = "semantic_unavailable"


class ReviewChanged(StoreError):
    """``review accept|reject --expect TIP`` (library ``expect=``, a form of ``lantern serve``)
    when the review branch's tip is no longer TIP: something arrived on it after the person
    looked, so nothing was decided. ``arrived`` names the commits since TIP, newest first.
    Exit 1 (HTTP 409 on ``lantern serve``): look again, then decide."""

    code = "review_changed"

    def __init__(self, message: str, *, tip: str | None = None, arrived: list[str] | None = None):
        super().__init__(message)
        self.tip = tip
        self.arrived = list(arrived or [])


class InvalidInput(LanternError):
    """The caller gave a bad value. Exit 2."""

    code = "invalid_input"
    exit_code = 2


class ValidationError(InvalidInput):
    """A record field or file is invalid; names the field, and the file and line when known."""

    code = "invalid_field"

    def __init__(
        self,
        message: str,
        *,
        field: str | None = None,
        path: str | None = None,
        line: int | None = None,
        code: str | None = None,
    ):
        self.field = field
        self.path = path
        self.line = line
        self.reason = message
        super().__init__(self._compose(message), code=code)

    def _compose(self, message: str) -> str:
        where = ""
        if self.path:
            where = self.path + (f":{self.line}" if self.line else "") + ": "
        elif self.line:
            where = f"line {self.line}: "
        return where + message

    def located(self, path: str, line_offset: int = 0) -> ValidationError:
        """The same error, placed in a file."""
        line = self.line + line_offset if self.line is not None else None
        return ValidationError(self.reason, field=self.field, path=path, line=line, code=self.code)


class NeedsMigration(InvalidInput):
    """A write (or a sync) that needs a newer store format than the store has: the message
    names ``lantern migrate``. Exit 2; nothing was written."""

    code = "needs_migration"


class CannotRevert(InvalidInput):
    """``lantern revert`` cannot undo this commit as asked (a merge commit, a commit lantern did
    not make, a later change to a field it changed); nothing was written. Exit 2."""

    code = "cannot_revert"


class SelfApproval(InvalidInput):
    """``review accept`` by the writer of the changes (its actor and review name): a writer
    never accepts its own changes (docs/review.md). Nothing was written. Exit 2."""

    code = "self_approval"


class NotFound(LanternError):
    code = "not_found"
    exit_code = 3


class AmbiguousId(LanternError):
    code = "ambiguous_id"
    exit_code = 3

    def __init__(self, prefix: str, candidates: list[str]):
        self.candidates = sorted(candidates)
        shown = ", ".join(self.candidates[:10]) + (" ..." if len(self.candidates) > 10 else "")
        super().__init__(f"id prefix {prefix!r} is ambiguous: {shown}")


class CheckFailed(LanternError):
    code = "check_failed"
    exit_code = 4
