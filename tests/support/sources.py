"""A source's manifest as the merge tests build it: a transcript whose derived fields describe
the body given."""

from __future__ import annotations

from typing import Any

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
