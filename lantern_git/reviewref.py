"""The names of review branches (docs/review.md): which refs they are and
which writer names make valid ones. Apart from :mod:`lantern_git.review` so that sync, which
carries review branches between hosts, and review, which accepts with sync's merge, share them
without importing each other."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from .errors import InvalidInput

if TYPE_CHECKING:
    from .git.repo import GitRepo

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
