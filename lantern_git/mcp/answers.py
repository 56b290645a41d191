"""What each MCP tool returns, as typed models: their output schemas are generated from them.

The answers are the library's own dictionaries (``Record.to_dict``, ``Manifest.to_dict``, a
page of them...), the same the CLI prints with ``--json``; these models describe them for a
client (``tests/surfaces/test_mcp.py`` checks answers against them); they are never built at run
time. A record's fields come from the field table in :mod:`lantern_git.core.fields`, a
source's from the library's manifest schema, through :class:`~lantern_git.mcp.schemas.Table`.

An object whose model is :class:`Closed` allows no other property; an :class:`Open` one says
nothing about others. A field with a default of :func:`~lantern_git.mcp.schemas.omitted` may
be absent; every other field is required.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, WithJsonSchema, create_model

from ..core.fields import NO_LIMIT, SEARCH_MODES
from ..model.source import MANIFEST_SCHEMA, VERIFY_STATUSES
from .schemas import Shown, Table, omitted


class Open(BaseModel):
    """An object that may carry properties besides its model's."""


class Closed(BaseModel):
    """An object with its model's properties and no other."""

    model_config = ConfigDict(extra="forbid")


# Any JSON object (the store's status, a review branch: their shapes are the CLI's --json).
AnyObject = Annotated[dict[str, Any], WithJsonSchema({"type": "object"})]

# ---------------------------------------------------------------------------- records


def _stored(name: str) -> Table:
    return Table(name, stored=True)


class Record(Closed):
    """A record object, every field (``Record.to_dict``)."""

    id: Annotated[str, _stored("id")]
    kind: Annotated[str, _stored("kind")]
    scope: Annotated[str, _stored("scope")]
    status: Annotated[str, _stored("status")]
    priority: Annotated[int, _stored("priority")]
    urgency: Annotated[int, _stored("urgency")]
    confidence: Annotated[float, _stored("confidence")]
    created_at: Annotated[int, _stored("created_at")]
    updated_at: Annotated[int, _stored("updated_at")]
    expires_at: Annotated[int | None, _stored("expires_at")]
    supersedes_id: Annotated[str | None, _stored("supersedes_id")]
    source_refs: Annotated[list[str], _stored("source_refs")]
    entities: Annotated[list[str], _stored("entities")]
    content: Annotated[str, _stored("content")]


def _some_of(name: str, **more: Any) -> Any:
    """A record object with only some fields (a list's or a search's ``fields``), and ``more``."""
    annotated: Any = Annotated  # built from each field's type and table, as Record has them
    fields: dict[str, Any] = {
        field: (annotated[tuple([info.annotation, *info.metadata])], omitted())
        for field, info in Record.model_fields.items()
    }
    return create_model(name, __base__=Closed, **fields, **more)


Pending = Annotated[
    Literal[True],
    Shown(description="Present (true) on a record awaiting review, read with include_pending."),
]
Mode = Annotated[str, Shown(enum=list(SEARCH_MODES))]


class Weights(Open):
    keyword: float = omitted()
    semantic: float = omitted()


class Explain(Open):
    """What made a hit's score, for a search with ``explain``."""

    mode: Mode
    bm25: Annotated[float, Shown(description="The BM25 score (0: no query word).")]
    words: Annotated[list[str], Shown(description="The query's words, as typed, stop words aside.")]
    matched: Annotated[
        list[str], Shown(description="The query's words, as typed, that the hit holds.")
    ]
    cosine: Annotated[float | None, Shown(description="Null in keyword mode.")]
    weights: Weights
    floor: Annotated[float | None, Shown(description="The cosine a semantic candidate needs.")]
    calibrated: bool = omitted(
        "Semantic and hybrid: whether the floor is the embedder's calibrated one (false: no "
        "calibration for this embedder, so no floor)."
    )
    bm25_best: float | None = omitted("Hybrid: the best BM25 score.")
    fusion: str = omitted(
        "Hybrid: the embedder's fusion rule, 'words held', 'full match' or 'idf share held first'."
    )
    full_match: float | None = omitted(
        "Hybrid with the full match rule: the BM25 a text of average length holding each "
        "query word once scores, which bm25 is divided by (at most 1); null: not plain words, "
        "bm25_best instead."
    )
    idf_share: float = omitted(
        "Hybrid with the idf share rule: the share of the query words' idf the hit holds."
    )
    first: bool = omitted(
        "Hybrid with the idf share rule: whether that share put the hit first (its score is "
        "1 more)."
    )
    similar_words: dict[str, str | float] = omitted(
        "Semantic and hybrid, e5, a search sharing no word with the records: the nearest hit's "
        "closest word pair (query, record, cosine), which holds it to the floor of a search "
        "sharing a word when its own is higher."
    )
    vectors: str = omitted(
        "Present while the server embeds the store in the background: why this search "
        "answered by keyword."
    )


class ShownRecord(Record):
    """A record as lantern_memory_show returns it: awaiting review, it says so."""

    pending: Pending = omitted()


ListedRecord = _some_of("ListedRecord", pending=(Pending, omitted()))
FoundRecord = _some_of(
    "FoundRecord",
    pending=(Pending, omitted()),
    score=(float, omitted()),
    mode=(Mode, omitted()),
    explain=(Explain, omitted()),
)
SimilarRecord = _some_of("SimilarRecord", score=(float, omitted()), mode=(Mode, omitted()))


class Pair(Closed):
    a: Record
    b: Record
    score: float


# A whole record id, as the store gives it.
StoredId = Annotated[str, Shown(pattern="^[0-9a-f]{16}$")]


class Change(Open):
    field: str = omitted()
    old: Any = omitted()
    new: Any = omitted()


class HistoryEntry(Open):
    commit: str = omitted()
    time: int = omitted()
    author: str = omitted()
    op: str | None = omitted()
    actor: str | None = omitted()
    records: list[str] = omitted()
    reason: str | None = omitted()
    summary: str = omitted()
    changes: list[Change] = omitted()
    problem: str | None = omitted()


class FieldChange(Open):
    field: str
    old: Any
    new: Any


class Changed(Open):
    id: str
    content: str
    changes: list[FieldChange]


class Diff(Closed):
    from_: str | None = Field(alias="from")
    to: str | None
    worktree: bool
    added: list[Record]
    removed: list[Record]
    changed: list[Changed]
    problems: list[AnyObject]


class Reverted(Closed):
    reverted: str
    commit: str | None
    records: list[str]
    summary: str


class Deletion(Closed):
    id: StoredId
    commit: str | None
    record: Record


# ---------------------------------------------------------------------------- sources


def _manifest(name: str, **changes: Any) -> Any:
    return Table(name, keywords=MANIFEST_SCHEMA[name], **changes)


class Manifest(Open):
    """A source's manifest, described by the library's manifest schema."""

    id: Annotated[str, _manifest("id")]
    kind: Annotated[str, _manifest("kind")]
    uri: Annotated[str | None, _manifest("uri")]
    title: Annotated[str | None, _manifest("title")]
    media_type: Annotated[str, _manifest("media_type")]
    captured_at: Annotated[int, _manifest("captured_at")]
    updated_at: Annotated[int, _manifest("updated_at")]
    lines: Annotated[int, _manifest("lines")]
    bytes: Annotated[int, _manifest("bytes")]
    sha256: Annotated[str, _manifest("sha256")]
    meta: Annotated[dict[str, str], _manifest("meta")]


LineRange = Annotated[list[int], Shown(minItems=2, maxItems=2)]


class View(Manifest):
    """A source, or the lines a reference names."""

    ref: str = omitted("The reference, pinned to the version read.")
    # A whole source keeps the manifest's line count; a reference with lines names its range.
    lines: Annotated[  # type: ignore[assignment]
        int | LineRange,
        Shown(
            description="The source's number of lines; for a reference with lines, the first "
            "and last line it names."
        ),
    ]
    text: str = omitted("The lines, newlines kept.")


class Hit(Open):
    ref: str = omitted("Pass it to source_refs to cite this chunk.")
    source_id: Annotated[str, _manifest("id")] = omitted()
    lines: LineRange = omitted()
    score: float = omitted()
    text: str = omitted()
    kind: Annotated[str, _manifest("kind")] = omitted()
    uri: Annotated[str | None, _manifest("uri")] = omitted()
    title: Annotated[str | None, _manifest("title")] = omitted()
    mode: Mode = omitted()
    explain: Explain = omitted()


class Problem(Open):
    record_id: str = omitted()
    ref: str = omitted()
    problem: Annotated[str, Shown(enum=[s for s in VERIFY_STATUSES if s != "ok"])] = omitted()
    detail: str = omitted()
    moved_to: list[int] | None = omitted()


class Verification(Open):
    ok: bool
    checked: int
    problems: list[Problem]


# ---------------------------------------------------------------------------- pages


_PAGED: dict[str, Any] = {
    "offset": (Annotated[int, Shown(minimum=0)], ...),
    "limit": (Annotated[int, Shown(minimum=NO_LIMIT)], ...),
    "next_offset": (
        Annotated[
            int | None,
            Shown(description="The offset of the next page, or null when this is the last."),
        ],
        ...,
    ),
}


def listing(key: str, item: Any, /, **extra: Any) -> Any:
    """The object a listing tool returns: items under ``key``, the page's ``offset`` and
    ``limit``, and ``next_offset``; ``extra`` fields (required too) before them."""
    fields: dict[str, Any] = {**extra, key: (list[item], ...), **_PAGED}
    return create_model(f"Page_{key}", __base__=Closed, **fields)


# ---------------------------------------------------------------------------- entities


class Entity(Closed):
    """An entity file's content (``Entity.to_dict``)."""

    key: str
    type: str
    name: str
    aliases: list[str]
    description: str
    created_at: int
    updated_at: int
    notes: str


class ListedEntity(Closed):
    """One key of ``lantern_entity_list``: a file's, or a key records name (``file`` false)."""

    key: str
    name: str
    file: bool
    record_count: int
    chunk_count: int


class EntityListing(Closed):
    entities: list[ListedEntity]


# An entity with one page of the records that name it (``Store.entity_show``): a page document
# as every listing tool answers (``records``, ``offset``, ``limit``, ``next_offset``), the
# entity, the count of every page's records and the chunks beside it.
ShownEntity = listing(
    "records",
    Record,
    key=(str, ...),
    entity=(Entity | None, ...),
    record_count=(Annotated[int, Shown(minimum=0)], ...),
    chunks=(list[str], ...),
    chunk_count=(Annotated[int, Shown(minimum=0)], ...),
)
