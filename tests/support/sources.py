"""Sources as tests build them: a manifest as the merge tests build it (a transcript whose
derived fields describe the body given), git's id of a body, and pairs of names or bodies that
share a prefix (for the refusals of ambiguous prefixes)."""

from __future__ import annotations

import hashlib
import itertools
from collections.abc import Callable
from typing import Any, TypeVar

from lantern_git.model.source import SourceManifest, compute_source_id, media_type_for
from lantern_git.model.source_file import describe

T0 = 1_764_690_000
URI = "session:2026-12-06"
SID = compute_source_id(URI, b"")


def transcript(body: bytes, *, updated_at: int = T0, **fields: Any) -> SourceManifest:
    """SID's manifest for ``body`` (lines, bytes, sha256 its own), captured at T0; ``fields``
    override the rest (``id``, ``title``, ``meta``, ``extra``, the times)."""
    values: dict[str, Any] = dict(
        id=SID,
        kind="transcript",
        media_type=media_type_for("txt"),
        captured_at=T0,
        updated_at=updated_at,
        uri=URI,
        title=None,
    )
    values.update(fields)
    return SourceManifest(**values, **describe(body))


Item = TypeVar("Item")


def blob_id(body: bytes) -> str:
    """git's id of a blob holding ``body``."""
    return hashlib.sha1(b"blob %d\0" % len(body) + body).hexdigest()


def sharing_a_prefix(
    make: Callable[[int], Item], key: Callable[[Item], str], digits: int
) -> tuple[Item, Item]:
    """The first two of ``make(0)``, ``make(1)``, ... whose ``key`` begins with the same
    ``digits`` characters (a birthday search: about 16,000 tries for seven hex digits)."""
    seen: dict[str, Item] = {}
    for number in itertools.count():
        item = make(number)
        prefix = key(item)[:digits]
        if prefix in seen:
            return seen[prefix], item
        seen[prefix] = item
    raise AssertionError("unreachable")
