"""A source's page (``/sources/{source_id}``): a version of its text, its versions, and the
records that cite it, each citation marked on the lines it covers in the version shown."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ...core.hidden import display_lines
from ...errors import NotFound
from ...model.query import RecordQuery
from .shared import PAGE_SIZE, parsed_ref

if TYPE_CHECKING:
    from ...evidence.sources import RefCheck
    from ...model.record import Record
    from ...store import Store
    from ..params import Params

TEMPLATE = "source.html"


@dataclass
class Citation:
    """One reference of a record to the source shown: its lines, and where they are in the
    version shown (None when they are not in it)."""

    record: Record
    ref: str
    blob: str | None
    start: int | None
    end: int | None
    shown: tuple[int, int] | None

    @classmethod
    def of(cls, record: Record, ref: str, check: RefCheck, blob: str, current: bool) -> Citation:
        parsed = parsed_ref(ref)
        start, end = (parsed.start, parsed.last) if parsed else (None, None)
        shown: tuple[int, int] | None = None
        if current:
            # Verify's finding: the pinned text still at its lines, or where it moved to.
            if check.problem == "ok" and start is not None:
                shown = check.lines
            elif check.problem == "drifted":
                shown = check.moved_to
        elif parsed is not None and parsed.blob and blob.startswith(parsed.blob):
            shown = (start, end) if start is not None and end is not None else None
        return cls(record, ref, parsed.blob if parsed else None, start, end, shown)


@dataclass
class SourceContext:
    view: Any
    source_id: str
    # The blob of the version shown ("" when its reference names none).
    blob: str
    versions: dict[str, str]
    # One page of the records citing the source (a source can be cited by thousands), in
    # list order: their citations, whether a next page follows, the page.
    citations: list[Citation]
    more: bool
    offset: int
    limit: int
    # The text shown, line by line, and the records of this page citing each line number.
    lines: list[str]
    cited: dict[int, list[str]]
    version: str = ""


def data(store: Store, params: Params) -> SourceContext:
    version = params.optional("version")
    source_id = store.sources.resolve(params.path("source_id"))
    wanted = f"source:{source_id}@{version}" if version else source_id
    view = store.sources.body(wanted)
    shown = parsed_ref(view.ref or "")
    blob = shown.blob or "" if shown is not None else ""
    current = version is None or _is_current(store, source_id, view.ref)
    page = params.page(PAGE_SIZE)
    asked = page.one_more()  # one more than shown: whether a next page follows
    found = store.list(
        RecordQuery(
            status="all",
            include_expired=True,
            cites=source_id,
            limit=asked.limit,
            offset=asked.offset,
        )
    )
    citing = found[: page.limit]
    citations = [
        Citation.of(record, ref, check, blob, current)
        for record, checks in zip(citing, store.sources.check_refs_of(citing), strict=True)
        for ref, check in checks
        if check is not None and _cites(ref, source_id)
    ]
    return SourceContext(
        view=view,
        source_id=source_id,
        blob=blob,
        versions=store.sources.versions(source_id),
        citations=citations,
        more=page.limit is not None and len(found) > page.limit,
        offset=page.offset,
        limit=page.limit or 0,
        lines=display_lines(view.text) if view.text else [],
        cited=cited_lines(citations),
        version=version or "",
    )


def cited_lines(citations: list[Citation]) -> dict[int, list[str]]:
    """Each line number of the version shown that a citation covers, with the citing records."""
    cited: dict[int, list[str]] = {}
    for citation in citations:
        if citation.shown is not None:
            for number in range(citation.shown[0], citation.shown[1] + 1):
                cited.setdefault(number, []).append(citation.record.id)
    return cited


def _is_current(store: Store, source_id: str, ref: str | None) -> bool:
    try:
        return store.sources.body(source_id).ref == ref
    except NotFound:  # removed: only pinned versions are left
        return False


def _cites(ref: str, source_id: str) -> bool:
    parsed = parsed_ref(ref)
    return parsed is not None and parsed.source_id == source_id
