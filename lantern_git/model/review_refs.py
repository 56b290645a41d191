"""The names of review branches (docs/review.md): which refs they are, which writer names make
valid ones, and whether a store's writes go to one. Apart from :mod:`lantern_git.review` so
that sync, which carries review branches between hosts, and review, which accepts with sync's
merge, share them without importing each other, and so that the workspace, whose transaction
sends writes there, need not know review's operations."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from ..core.config import environment, value
from ..errors import InvalidInput

if TYPE_CHECKING:
    from ..core.config import StoreSettings
    from ..git.repo import GitRepo

REVIEW_PREFIX = "refs/heads/lantern/review/"
# Strict on purpose: whatever passes is a valid ref name component on every platform (no dots,
# so no "..", ".lock" or trailing "."; no slashes, so no nesting under another writer's branch).
_NAME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,63}")


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


def review_branches(git: GitRepo) -> list[tuple[str, str]]:
    """(name, ref) of every review branch, by name."""
    refs = (r for r in git.repo.references if r.startswith(REVIEW_PREFIX))
    return sorted((ref.removeprefix(REVIEW_PREFIX), ref) for ref in refs)


def review_enabled(explicit: bool | None, configured: StoreSettings | None) -> bool:
    """Whether writes go to a review branch: the caller's choice (``Store(review=...)``, ``lantern
    mcp --review``), else ``LANTERN_REVIEW``, else the store's ``lantern.yaml`` ``review`` key."""
    if explicit is not None:
        return explicit
    env = value(environment().review)
    if env is not None:
        return env
    return bool(configured is not None and value(configured.review))


def review_name(explicit: str | None, actor: str) -> str:
    """The writer name: the caller's, else ``LANTERN_REVIEW_NAME``, else the actor."""
    return check_review_name(explicit or environment().review_name or actor)
