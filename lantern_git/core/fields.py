"""The record schema in one place: names, limits, defaults, and a table of the fields as JSON
sees them, from which the MCP tools' schemas take their keywords (``lantern_git.mcp``).

No heavy imports, so the CLI can use it for help and defaults without slowing ``lantern --help``.
"""

from __future__ import annotations

from typing import Any, NamedTuple

KINDS = ("fact", "preference", "goal", "constraint", "task_state", "observation", "hypothesis")
STATUSES = ("active", "archived", "superseded")
FIELD_ORDER = (
    "id",
    "kind",
    "scope",
    "status",
    "priority",
    "urgency",
    "confidence",
    "created_at",
    "updated_at",
    "expires_at",
    "supersedes_id",
    "source_refs",
    "entities",
)
OPTIONAL_FIELDS = ("expires_at", "supersedes_id", "source_refs", "entities")
# Public record object keys (JSON, export, MCP), in the contract's order.
RECORD_KEYS = (*FIELD_ORDER, "content")

MAX_CONTENT_BYTES = 64 * 1024
MAX_FILE_BYTES = 256 * 1024
MAX_SCOPE_CHARS = 200
MAX_SOURCE_REFS = 200
MAX_SOURCE_REF_CHARS = 1000
# Unix seconds beyond this are almost certainly milliseconds or garbage (year 2286).
MAX_TIMESTAMP = 9_999_999_999

# The suffix of the temporary file an atomic write renames into place: readers skip these.
TMP_SUFFIX = ".lantern-tmp"
# The write journal in .lantern/: there only while a write is under way (or was cut off).
JOURNAL = "journal.json"

# The patterns a whole value must match (Python's fullmatch; JSON Schema gets them anchored).
ID_PATTERN = r"[0-9a-f]{16}"
SCOPE_PATTERN = r"global|[A-Za-z0-9_.\-]+:[^\s:*][^\s*]*"

# Defaults: a new record's, and what a list shows unless told otherwise.
DEFAULT_SCOPE = "global"
DEFAULT_PRIORITY = 50
DEFAULT_URGENCY = 0
DEFAULT_CONFIDENCE = 1.0
DEFAULT_STATUS = "active"
# Records in one MCP list or search page unless the caller asks for more (the CLI lists all).
DEFAULT_LIMIT = 50
# A list or search limit of 0 means no limit, in the CLI, over MCP and in the library's query.
NO_LIMIT = 0


def choose_fields(names: object, allowed: tuple[str, ...]) -> tuple[str, ...]:
    """The fields a caller asked for (``--fields``, MCP's ``fields``), each checked against
    ``allowed``; an unknown one is refused with the list to choose from."""
    from ..errors import InvalidInput

    chosen: list[str] = []
    for name in names if isinstance(names, (list, tuple)) else ():
        if name not in allowed:
            raise InvalidInput(
                f"fields: {name!r} is not a field; choose from {', '.join(allowed)}",
                code="invalid_field",
            )
        if name not in chosen:
            chosen.append(name)
    if not chosen:
        raise InvalidInput(
            f"fields: give at least one of {', '.join(allowed)}", code="invalid_field"
        )
    return tuple(chosen)


class Unset:
    """The type of :data:`UNSET`: an argument that was not given, where ``None`` means "clear"
    (``Store.update(expires_at=None)`` removes the expiry; leaving it out keeps it)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "UNSET"


UNSET: Any = Unset()


class Field(NamedTuple):
    """One field of a record object as JSON sees it.

    ``type``, ``enum``, ``minimum``, ``maximum`` and ``pattern`` hold for every stored value (the
    output schema); the lengths, ``default`` and ``description`` are for callers writing one (the
    input schema). The library's validators enforce the same limits.
    """

    type: str
    description: str = ""
    enum: tuple[str, ...] | None = None
    minimum: float | None = None
    maximum: float | None = None
    pattern: str | None = None
    min_length: int | None = None
    max_length: int | None = None
    items: Field | None = None
    max_items: int | None = None
    default: Any = UNSET
    # Absent reads as null (expires_at, supersedes_id).
    optional: bool = False
    # Further JSON types a caller may send: expires_at also takes a time as text.
    accepts: tuple[str, ...] = ()

    def value_schema(self) -> dict[str, Any]:
        """The JSON Schema every stored value satisfies (a record object's property)."""
        schema: dict[str, Any] = {"type": [self.type, "null"] if self.optional else self.type}
        if self.enum is not None:
            schema["enum"] = list(self.enum)
        if self.minimum is not None:
            schema["minimum"] = self.minimum
        if self.maximum is not None:
            schema["maximum"] = self.maximum
        if self.pattern is not None:
            alternatives = "|" in self.pattern
            schema["pattern"] = f"^({self.pattern})$" if alternatives else f"^{self.pattern}$"
        if self.items is not None:
            schema["items"] = self.items.value_schema()
        return schema

    def input_schema(self) -> dict[str, Any]:
        """The JSON Schema of a value a caller may send for this field (its default is shown by
        the MCP tool whose argument model takes it, ``lantern_git.mcp.schemas``)."""
        schema = self.value_schema()
        types = [self.type, *self.accepts]
        schema["type"] = types[0] if len(types) == 1 else types
        for key, value in (
            ("minLength", self.min_length),
            ("maxLength", self.max_length),
            ("maxItems", self.max_items),
        ):
            if value is not None:
                schema[key] = value
        if self.items is not None:
            schema["items"] = self.items.input_schema()
        if self.description:
            schema["description"] = self.description
        return schema


TIME_DESCRIPTION = (
    "unix seconds, an ISO 8601 date or time ('2026-12-31', '2026-12-31T08:00:00Z', UTC when no "
    "offset is given) or a duration from now ('+2h', '+7d')"
)

# Every field of a record object, in the contract's order (RECORD_KEYS).
FIELDS: dict[str, Field] = {
    "id": Field(
        "string",
        "16 hex digits, derived from kind, scope and content.",
        pattern=ID_PATTERN,
    ),
    "kind": Field("string", "What sort of memory this is.", enum=KINDS),
    "scope": Field(
        "string",
        "'global', or 'namespace:name' such as 'user:ana' or 'project:lantern'.",
        pattern=SCOPE_PATTERN,
        min_length=1,
        max_length=MAX_SCOPE_CHARS,
        default=DEFAULT_SCOPE,
    ),
    "status": Field(
        "string",
        "active; archived (kept, hidden by default); superseded (replaced by a newer record).",
        enum=STATUSES,
        default=DEFAULT_STATUS,
    ),
    "priority": Field(
        "integer", "0-100, higher first.", minimum=0, maximum=100, default=DEFAULT_PRIORITY
    ),
    "urgency": Field(
        "integer", "0-100, higher first.", minimum=0, maximum=100, default=DEFAULT_URGENCY
    ),
    "confidence": Field(
        "number",
        "0.0-1.0: how sure the caller is.",
        minimum=0.0,
        maximum=1.0,
        default=DEFAULT_CONFIDENCE,
    ),
    "created_at": Field("integer", "Unix seconds: when the record was first written."),
    "updated_at": Field("integer", "Unix seconds: the record's latest change."),
    "expires_at": Field(
        "integer",
        f"When the record stops being current: {TIME_DESCRIPTION}.",
        minimum=0,
        maximum=MAX_TIMESTAMP,
        optional=True,
        accepts=("string",),
    ),
    "supersedes_id": Field(
        "string", "The id of the record this one replaced.", pattern=ID_PATTERN, optional=True
    ),
    "source_refs": Field(
        "array",
        "References to evidence: a source, chunk, session or commit; one line each.",
        items=Field("string", min_length=1, max_length=MAX_SOURCE_REF_CHARS),
        max_items=MAX_SOURCE_REFS,
    ),
    "entities": Field(
        "array",
        "The entities this record is about: keys TYPE:NAME (person:ana), stored lower-cased; "
        "a key with no entity file is allowed (a mention). Always present, [] when none.",
        items=Field("string", min_length=3, max_length=MAX_SCOPE_CHARS),
        max_items=100,
    ),
    "content": Field(
        "string",
        f"The memory itself, as text (markdown is fine); at most {MAX_CONTENT_BYTES} bytes of "
        "UTF-8. Whitespace at either end is trimmed.",
        min_length=1,
        max_length=MAX_CONTENT_BYTES,
    ),
}


# Evidence (docs/evidence.md): a source manifest's fields and a chunk search hit's, in the
# contract's order. Here, beside the record's, so the CLI can name them without loading the
# evidence modules.
MANIFEST_FIELDS = (
    "id",
    "kind",
    "uri",
    "title",
    "media_type",
    "captured_at",
    "updated_at",
    "lines",
    "bytes",
    "sha256",
    "meta",
)
HIT_FIELDS = ("ref", "source_id", "lines", "score", "text", "kind", "uri", "title")

# How a search ranks (docs/semantic.md): BM25 over the words, cosine of embeddings,
# or a weighted sum of the two (index.vectors.fuse).
SEARCH_MODES = ("keyword", "semantic", "hybrid")

# memory dupes' default cosine, measured on wordllama (docs/semantic.md): ten pairs
# written to say the same thing scored 0.50-0.94 (nine of them 0.56 or more), eight pairs about
# the same person or project saying different things 0.09-0.45, unrelated pairs -0.06-0.32.
# 0.48 lies in the gap between the last two groups' top and the first's bottom.
DUPE_THRESHOLD = 0.48
