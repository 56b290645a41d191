"""What each MCP tool takes, as typed models: their JSON Schemas are generated from them, and a
call's arguments are checked by them.

A tool's arguments are a pydantic model: the Python type of each argument, whether it is required,
its default. The record fields' limits, patterns, enums and descriptions come from the field table
in :mod:`lantern_git.core.fields` (:class:`Table`), where they are written once; a tool's own
arguments carry theirs beside their type (:class:`Shown`).

Those keywords are *shown*, not checked here: a client reads them to refuse a bad call before
sending it, and the server leaves the values to the library, which checks them for every surface
with the codes and messages the CLI gives (``priority: must be between 0 and 100``). The model
checks what only a wire format can get wrong: an argument that is not the tool's, one left out,
a value of the wrong JSON type. Those are refused as ``usage_error`` (unknown or missing) and
``invalid_field`` (wrong type), naming the argument.

JSON has one number type: ``3.0`` is the integer 3, as a JSON Schema validator takes it; and a
lone string where a list of strings is expected is a list of one, as an agent writing
``{"scope": "user:ana"}`` means.
"""

from __future__ import annotations

from functools import cache
from typing import Annotated, Any, TypeVar

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, TypeAdapter, ValidationError
from pydantic.json_schema import GenerateJsonSchema, JsonSchemaValue, NoDefault

from ..core.fields import (
    DEFAULT_LIMIT,
    DEFAULT_STATUS,
    DUPE_THRESHOLD,
    FIELDS,
    NO_LIMIT,
    RECORD_KEYS,
    SEARCH_MODES,
    choose_fields,
)
from ..errors import InvalidInput
from ..model.source import MANIFEST_SCHEMA, SOURCE_KINDS

# The largest page a list or search tool returns; 0 (NO_LIMIT) asks for every match.
MAX_LIMIT = 500

T = TypeVar("T")

# ---------------------------------------------------------------------------- the mechanism


class Shown:
    """JSON Schema keywords a client is shown beside the type pydantic generates: limits,
    patterns, enums, a description. The library checks the values they describe."""

    def __init__(self, **keywords: Any):
        self.keywords = keywords

    def __get_pydantic_json_schema__(self, core_schema: Any, handler: Any) -> JsonSchemaValue:
        schema = dict(handler(core_schema))
        schema.update(self.keywords)
        return schema


class Table(Shown):
    """A field's keywords from a table written elsewhere, with ``changes``: a record field's
    from ``fields.FIELDS`` (as a caller sends it, or as it is stored: ``stored=True``), or any
    other table's (``keywords``, such as the library's source manifest schema).

    The table also names the field's JSON type; the Python type written beside this must
    generate the same one, or building the schema fails (a test builds every schema)."""

    def __init__(
        self,
        name: str,
        *,
        stored: bool = False,
        keywords: dict[str, Any] | None = None,
        **changes: Any,
    ):
        self.name = name
        if keywords is None:
            field = FIELDS[name]
            keywords = field.value_schema() if stored else field.input_schema()
        self.table = keywords
        super().__init__(**changes)

    def __get_pydantic_json_schema__(self, core_schema: Any, handler: Any) -> JsonSchemaValue:
        generated = _tidy(handler(core_schema))
        shown = {**self.table, **self.keywords}
        if generated.get("type") != shown["type"]:
            raise TypeError(f"{self.name}: typed {generated.get('type')}, shown {shown['type']}")
        return {**generated, **shown}


def _integral(value: Any) -> Any:
    # JSON has one number type; 50.0 is the integer 50 to a JSON Schema validator.
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def _lone(value: Any) -> Any:
    return [value] if isinstance(value, str) else value


Integer = Annotated[int, BeforeValidator(_integral)]
# A list, or one string standing for a list of one.
Many = Annotated[list[T], BeforeValidator(_lone)]


class Arguments(BaseModel):
    """A tool's arguments: each of the wire's JSON types exactly (no "5" for 5), nothing else.

    An argument left out with no default shown is None here, and the handler passes the
    library's own default on (the one the schema shows, where it shows one)."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)


A = TypeVar("A", bound=Arguments)


def omitted(description: str | None = None, *, alias: str | None = None) -> Any:
    """The default of an argument a caller may leave out, with no default shown: the library
    applies its own (the tool's description says which, where it matters)."""
    return Field(None, description=description, alias=alias)


class _Generator(GenerateJsonSchema):
    """Schemas as a client reads them: no generated titles, no ``default: null`` for an
    argument that was simply not given; a model's name and docstring are for readers of this
    code, not for clients."""

    def field_title_should_be_set(self, schema: Any) -> bool:
        return False

    def model_schema(self, schema: Any) -> JsonSchemaValue:
        json_schema = super().model_schema(schema)
        json_schema.pop("title", None)
        json_schema.pop("description", None)
        return json_schema

    def get_default_value(self, schema: Any) -> Any:
        default = super().get_default_value(schema)
        return NoDefault if default is None else default


def _tidy(schema: Any) -> Any:
    """``anyOf`` of plain types as one ``type`` list (``["integer", "string"]``; ``["array",
    "null"]`` keeping the array's ``items``), recursively."""
    if not isinstance(schema, dict):
        return schema
    schema = dict(schema)
    choices = schema.get("anyOf")
    if choices and all(isinstance(c, dict) and isinstance(c.get("type"), str) for c in choices):
        detailed = [c for c in choices if set(c) != {"type"}]
        if len(detailed) <= 1:
            del schema["anyOf"]
            schema = {**(detailed[0] if detailed else {}), **schema}
            schema["type"] = [c["type"] for c in choices]
    if "properties" in schema:
        schema["properties"] = {k: _tidy(v) for k, v in schema["properties"].items()}
    for key in ("items", "additionalProperties"):
        if key in schema:
            schema[key] = _tidy(schema[key])
    return schema


def input_schema(model: type[Arguments]) -> dict[str, Any]:
    """The JSON Schema of a tool's arguments, as tools/list gives it."""
    schema = json_schema(model)
    return schema if "required" in schema else {**schema, "required": []}


@cache  # several tools share a model (a record, a manifest): one schema each
def json_schema(kind: Any) -> dict[str, Any]:
    """The JSON Schema of a model or type, every part of it in place (no ``$ref``), as the
    schemas of MCP tools are written to be read."""
    schema = TypeAdapter(kind).json_schema(schema_generator=_Generator)
    definitions = schema.pop("$defs", {})

    def inline(value: Any) -> Any:
        if isinstance(value, list):
            return [inline(v) for v in value]
        if not isinstance(value, dict):
            return value
        if "$ref" in value:
            named = definitions[value["$ref"].rsplit("/", 1)[-1]]
            value = {**named, **{k: v for k, v in value.items() if k != "$ref"}}
        return {k: inline(v) for k, v in value.items()}

    tidied: dict[str, Any] = _tidy(inline(schema))
    return tidied


def check_arguments(tool: str, model: type[A], schema: dict[str, Any], arguments: object) -> A:
    """The arguments a caller sent to ``tool``, checked by its model, as that model (an argument
    left out has the model's default); ``schema`` is the model's, for naming the expected
    types."""
    if arguments is None:
        arguments = {}
    if not isinstance(arguments, dict):
        raise InvalidInput("arguments: must be an object", code="usage_error")
    try:
        checked = model.model_validate(arguments)
    except ValidationError as err:
        raise _refusal(tool, schema, err) from None
    fields = getattr(checked, "fields", None)
    if fields:  # the CLI's --fields check, word for word
        choose_fields(fields, tuple(schema["properties"]["fields"]["items"]["enum"]))
    return checked


def _refusal(tool: str, schema: dict[str, Any], err: ValidationError) -> InvalidInput:
    """The one error a refused call gets: an unknown argument first, then a missing one, then
    the first of the wrong type."""
    errors = err.errors()
    properties = schema["properties"]
    for error in errors:
        if error["type"] == "extra_forbidden":
            name = error["loc"][0]
            return InvalidInput(
                f"{name}: unknown argument for {tool}; it takes: {', '.join(properties)}",
                code="usage_error",
            )
    for error in errors:
        if error["type"] == "missing":
            return InvalidInput(f"{error['loc'][0]}: is required", code="usage_error")
    error = errors[0]
    name, *rest = error["loc"]
    where, expected = str(name), properties[name]
    for step in rest:  # a list's item; a union's branch names no place of its own
        if isinstance(step, int):
            where, expected = f"{where}[{step}]", expected.get("items", {})
    types = expected.get("type", [])
    types = [types] if isinstance(types, str) else types
    words = " or ".join(_TYPE_WORDS.get(t, t) for t in types)
    return InvalidInput(
        f"{where}: must be {words}, got {_json_type(error['input'])}", code="invalid_field"
    )


_TYPE_WORDS = {
    "integer": "an integer",
    "number": "a number",
    "string": "a string",
    "boolean": "true or false",
    "array": "a list",
    "object": "an object",
    "null": "null",
}


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return f"the number {value}"
    if isinstance(value, str):
        shown = value if len(value) <= 40 else value[:37] + "..."
        return f"the string {shown!r}"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__


# ---------------------------------------------------------------------------- shared arguments

_ID_PREFIX = "^[0-9a-fA-F]{4,16}$"
RecordId = Annotated[
    str,
    Shown(
        pattern=_ID_PREFIX,
        description="A record id (16 hex digits) or a unique prefix of at least 4.",
    ),
]
SourceId = Annotated[
    str,
    Shown(
        pattern=_ID_PREFIX,
        description="A source id (16 hex digits) or a unique prefix of at least 4.",
    ),
]
# The ``reason`` every writing tool takes.
Reason = Annotated[
    str,
    Shown(description="Why this change is made; recorded in the commit as Lantern-Reason."),
]
Limit = Annotated[Integer, Shown(minimum=NO_LIMIT, maximum=MAX_LIMIT)]
Offset = Annotated[Integer, Shown(minimum=0)]


def page_limit(what: str) -> Any:
    """The ``limit`` every listing tool takes, paging ``what`` as the CLI's ``--limit`` does."""
    return Field(
        DEFAULT_LIMIT,
        description=(
            f"At most this many {what} (1-{MAX_LIMIT}); {NO_LIMIT} means no limit: every "
            "match in one page, as the CLI's --limit 0."
        ),
    )


def page_offset(what: str) -> Any:
    """The ``offset`` every listing tool takes."""
    return Field(0, description=f"Skip this many {what} first; use next_offset from a page.")


# The ``mode`` both search tools take (docs/semantic.md).
SearchMode = Annotated[
    str,
    Shown(
        enum=list(SEARCH_MODES),
        description=(
            "keyword: BM25 over the words. semantic: cosine of text embeddings (finds "
            "paraphrases). hybrid: w x BM25 over the best BM25 + (1 - w) x cosine, never below "
            "the cosine, w the share of the query's words the hit holds (with the e5 "
            "embedder: 0.1 x min(BM25 / the BM25 of a full match, 1) + 0.9 x cosine), cosines "
            "under the embedder's similarity floor left out. "
            "Default: hybrid when the server has the semantic "
            "extra, keyword otherwise; semantic and hybrid fail with semantic_unavailable "
            "without it."
        ),
    ),
]
# ``explain`` for both search tools.
ExplainFlag = Annotated[
    bool,
    Shown(
        description=(
            "Add to each hit an `explain` object saying what made its score: mode, bm25, the "
            "query's words and those matched, cosine, the weights and the similarity floor."
        )
    ),
]

_POINT = (
    "a git revision (a commit hash, HEAD~3, a tag) or a time (unix seconds, 2026-12-31, "
    "2026-12-31T08:00:00Z, -7d: the newest commit at or before it)."
)


def point_at(what: str) -> Any:
    """An ``at`` argument: a point in the store's history, read as ``--at`` is."""
    return omitted(f"{what}: {_POINT}")


Point = Annotated[str, Shown(minLength=1)]

# ---------------------------------------------------------------------------- record tools

Content = Annotated[str, Table("content")]
Kind = Annotated[str, Table("kind")]
Scope = Annotated[str, Table("scope")]
Priority = Annotated[Integer, Table("priority")]
Urgency = Annotated[Integer, Table("urgency")]
Confidence = Annotated[float, Table("confidence")]
ExpiresAt = Annotated[Integer | str, Table("expires_at")]
SourceRefs = Annotated[Many[str], Table("source_refs")]

IncludePending = Annotated[
    bool,
    Shown(
        description=(
            "Also see the changes awaiting review, as if accepted: a record a "
            "review branch added or changed is returned as that branch has it, marked "
            '"pending": true; one it removed is left out.'
        )
    ),
]


def _inherited(name: str) -> str:
    return f"{FIELDS[name].description} Default: the old record's {name}."


# An entity key (docs/entities.md): TYPE:NAME, spelled as a scope is; the library checks it.
EntityKey = Annotated[
    str,
    Shown(
        minLength=3,
        maxLength=200,
        description="An entity key TYPE:NAME (person:ana), spelled as a scope is; any case.",
    ),
]
EntityKeys = Annotated[
    Many[EntityKey],
    Shown(
        maxItems=100,
        description=(
            "Entities the record is about, keys TYPE:NAME (person:ana); a key with no entity "
            "file is allowed. Needs store format 2 (lantern migrate)."
        ),
    ),
]
EntityFilter = Annotated[
    str,
    Shown(
        minLength=3,
        maxLength=200,
        description=(
            "Only records that name this entity key in `entities` or [[link]] it by key, name "
            "or alias."
        ),
    ),
]


class AddArguments(Arguments):
    content: Content
    kind: Kind
    scope: Scope = FIELDS["scope"].default
    priority: Priority = FIELDS["priority"].default
    urgency: Urgency = FIELDS["urgency"].default
    confidence: Confidence = FIELDS["confidence"].default
    expires_at: ExpiresAt = omitted()
    source_refs: SourceRefs = omitted()
    entities: EntityKeys = omitted()
    reason: Reason = omitted()


class ShowArguments(Arguments):
    id: RecordId
    at: Point = point_at("Read the record as it was at")
    include_pending: IncludePending = False


class Filter:
    """Marks an argument as a record filter: :meth:`RecordFilters.filters` passes it on to
    ``RecordQuery.from_options``, under its name."""


FILTER = Filter()

# The filters list and search share (a search's ``query`` is its text, not a filter).
ScopeFilter = Annotated[
    # Not the scope pattern: a trailing * matches a prefix.
    Many[
        Annotated[
            str,
            Shown(minLength=FIELDS["scope"].min_length, maxLength=FIELDS["scope"].max_length),
        ]
    ],
    Shown(
        description=(
            "Only records in one of these scopes; a trailing * matches a prefix ('user:*'). "
            "Default: every scope."
        ),
    ),
    FILTER,
]
KindFilter = Annotated[
    Many[Annotated[str, Shown(**FIELDS["kind"].value_schema())]],
    Shown(description="Only records of one of these kinds. Default: every kind."),
    FILTER,
]
StatusFilter = Annotated[
    str,
    Shown(
        enum=[*(FIELDS["status"].enum or ()), "all"],
        description="Only records with this status, or 'all'.",
    ),
    FILTER,
]
MinPriority = Annotated[
    Integer, Table("priority", description="Only records with priority >= this."), FILTER
]
MinUrgency = Annotated[
    Integer, Table("urgency", description="Only records with urgency >= this."), FILTER
]
IncludeExpired = Annotated[
    bool, Shown(description="Also return records whose expires_at has passed."), FILTER
]


_FIELDS_SHOWN = Shown(
    minItems=1,
    uniqueItems=True,
    description=(
        "Return only these fields of each record (in the schema's order). Default: every field."
    ),
)
RecordFields = Annotated[Many[Annotated[str, Shown(enum=list(RECORD_KEYS))]], _FIELDS_SHOWN]
HitFields = Annotated[
    Many[Annotated[str, Shown(enum=[*RECORD_KEYS, "score", "mode", "explain"])]], _FIELDS_SHOWN
]


class RecordFilters(Arguments):
    """The record filters list and search share, declared once; a tool's own filters (the
    list's ``cites`` and ``query``) are marked :data:`FILTER` beside their type."""

    scope: ScopeFilter = omitted()
    kind: KindFilter = omitted()
    status: StatusFilter = DEFAULT_STATUS
    min_priority: MinPriority = omitted()
    min_urgency: MinUrgency = omitted()
    include_expired: IncludeExpired = False
    # Not a FILTER: the handler asks the store for the entity's names first.
    entity: EntityFilter = omitted()

    def filters(self) -> dict[str, Any]:
        """Every filter argument by name (those left out as None or their default, which
        ``RecordQuery.from_options`` reads as not given)."""
        return {
            name: getattr(self, name)
            for name, field in type(self).model_fields.items()
            if FILTER in field.metadata
        }


class ListArguments(RecordFilters):
    cites: Annotated[
        str,
        Shown(
            pattern=_ID_PREFIX,
            description="Only records with a source: reference to this source id (or prefix).",
        ),
        FILTER,
    ] = omitted()
    query: Annotated[
        str,
        Shown(description="Only records whose content matches these keywords; order unchanged."),
        FILTER,
    ] = omitted()
    include_pending: IncludePending = False
    limit: Limit = page_limit("records")
    offset: Offset = page_offset("records")
    fields: RecordFields = omitted()


class SearchText(Arguments):
    """What a record search looks for and how it ranks (first in its schema)."""

    query: Annotated[
        str,
        Shown(
            minLength=1,
            description=(
                "What to look for: keywords (stemmed; any word may match), or in semantic and "
                "hybrid mode a question or phrase in plain words."
            ),
        ),
    ]
    mode: SearchMode = omitted()
    explain: ExplainFlag = False


class SearchArguments(RecordFilters, SearchText):
    include_pending: IncludePending = False
    limit: Limit = page_limit("records")
    offset: Offset = page_offset("records")
    fields: HitFields = omitted()


Cosine = Annotated[float, Shown(minimum=-1, maximum=1)]


class SimilarArguments(Arguments):
    id: RecordId
    min_score: Cosine = omitted("Only records with a cosine of at least this.")
    limit: Limit = page_limit("records")
    offset: Offset = page_offset("records")


class DupesArguments(Arguments):
    scope: Many[str] = omitted("Only records in these scopes ('user:*' a prefix).")
    threshold: Cosine = Field(
        DUPE_THRESHOLD, description="Report pairs with a cosine of at least this."
    )
    limit: Limit = page_limit("records")
    offset: Offset = page_offset("records")


class ChangeArguments(Arguments):
    """archive, restore and delete: a record and why."""

    id: RecordId
    reason: Reason = omitted()


class SupersedeArguments(Arguments):
    id: RecordId
    content: Content
    kind: Annotated[str, Table("kind", description=_inherited("kind"))] = omitted()
    scope: Annotated[str, Table("scope", description=_inherited("scope"))] = omitted()
    priority: Annotated[Integer, Table("priority", description=_inherited("priority"))] = omitted()
    urgency: Annotated[Integer, Table("urgency", description=_inherited("urgency"))] = omitted()
    confidence: Annotated[float, Table("confidence", description=_inherited("confidence"))] = (
        omitted()
    )
    expires_at: ExpiresAt = omitted()
    source_refs: SourceRefs = omitted()
    reason: Reason = omitted()


class UpdateArguments(Arguments):
    id: RecordId
    priority: Priority = omitted()
    urgency: Urgency = omitted()
    confidence: Confidence = omitted()
    # Left out keeps the expiry; null clears it.
    expires_at: Annotated[
        Integer | str | None,
        Table(
            "expires_at",
            type=["integer", "string", "null"],
            description=f"{FIELDS['expires_at'].description} null clears the expiry.",
        ),
    ] = omitted()
    add_source_refs: Annotated[
        Many[str],
        Table("source_refs", description="Source refs to append (duplicates are skipped)."),
    ] = omitted()
    entities: EntityKeys = omitted()
    remove_entities: Annotated[
        Many[EntityKey], Shown(description="Entity keys the record no longer names.")
    ] = omitted()
    reason: Reason = omitted()


class HistoryArguments(Arguments):
    id: RecordId
    limit: Limit = page_limit("commits")
    offset: Offset = page_offset("commits")


class DiffArguments(Arguments):
    from_: Point = omitted(alias="from", description=f"The earlier point (default HEAD): {_POINT}")
    to: Point = omitted(f"The later point (default: the working files): {_POINT}")


class RevertArguments(Arguments):
    commit: Annotated[
        str,
        Shown(
            minLength=1,
            description="The commit to undo: a hash (7+ hex digits), HEAD~2, a tag.",
        ),
    ]
    reason: Reason = omitted()


class NoArguments(Arguments):
    """status and verify take nothing."""


class ReviewListArguments(Arguments):
    limit: Limit = page_limit("review branches")
    offset: Offset = page_offset("review branches")


# ---------------------------------------------------------------------------- evidence tools

# A source's fields as the library's manifest schema describes them (source.MANIFEST_SCHEMA).
_URI = {k: v for k, v in MANIFEST_SCHEMA["uri"].items() if k != "type"}
_TITLE = {k: v for k, v in MANIFEST_SCHEMA["title"].items() if k != "type"}
SourceKinds = Annotated[
    Many[Annotated[str, Shown(enum=list(SOURCE_KINDS))]],
    Shown(description="Only sources of one of these kinds. Default: every kind."),
]
SourceText = Annotated[
    str,
    Shown(minLength=1, description="The document's text, verbatim (UTF-8; no NUL characters)."),
]


class SourceAddArguments(Arguments):
    text: SourceText
    uri: Annotated[str, Shown(**_URI)] = omitted()
    kind: Annotated[str, Shown(enum=list(SOURCE_KINDS), description="Default: other.")] = omitted()
    title: Annotated[str, Shown(**_TITLE)] = omitted()
    meta: Annotated[
        dict[str, Any],
        Shown(
            additionalProperties=MANIFEST_SCHEMA["meta"]["additionalProperties"],
            description=MANIFEST_SCHEMA["meta"]["description"],
        ),
    ] = omitted()
    reason: Reason = omitted()


class SourceAppendArguments(Arguments):
    id: SourceId
    text: SourceText
    reason: Reason = omitted()


class SourceListArguments(Arguments):
    kind: SourceKinds = omitted()
    uri_prefix: Annotated[str, Shown(description="Only sources whose uri starts with this.")] = (
        omitted()
    )
    limit: Limit = page_limit("sources")
    offset: Offset = page_offset("sources")


class SourceShowArguments(Arguments):
    ref: Annotated[
        str,
        Shown(
            minLength=1,
            description=(
                "A source id, or a reference source:<id>[@<blob>][#L<a>[-L<b>]] as a search "
                "hit's `ref` or a record's source_refs give it."
            ),
        ),
    ]
    at: Point = point_at("The source as it was at")


class SourceSearchArguments(Arguments):
    query: Annotated[
        str,
        Shown(minLength=1, description="Keywords to look for (stemmed; any word may match)."),
    ]
    mode: SearchMode = omitted()
    explain: ExplainFlag = False
    kind: SourceKinds = omitted()
    source: Many[SourceId] = omitted("Only chunks of these sources.")
    entity: Annotated[
        str,
        Shown(
            minLength=3,
            maxLength=200,
            description="Only chunks holding this entity's key, name or an alias as a phrase.",
        ),
    ] = omitted()
    limit: Limit = page_limit("hits")
    offset: Offset = page_offset("hits")


# ---------------------------------------------------------------------------- entity tools


class EntityListArguments(Arguments):
    type: Annotated[
        str, Shown(minLength=1, maxLength=100, description="Only keys of this type (person).")
    ] = omitted()


class EntityShowArguments(Arguments):
    key: EntityKey
    limit: Limit = page_limit("records")
    offset: Offset = page_offset("records")


class EntityAddArguments(Arguments):
    key: EntityKey
    name: Annotated[
        str,
        Shown(
            minLength=1, maxLength=200, description="How text names it; default: the key's name."
        ),
    ] = omitted()
    aliases: Annotated[
        Many[Annotated[str, Shown(minLength=1, maxLength=200)]],
        Shown(maxItems=100, description="Other names text uses for it."),
    ] = omitted()
    description: Annotated[str, Shown(maxLength=2000, description="One line.")] = omitted()
    reason: Reason = omitted()


class EntityUpdateArguments(EntityAddArguments):
    remove_aliases: Annotated[
        Many[Annotated[str, Shown(minLength=1, maxLength=200)]],
        Shown(description="Aliases to remove (any case)."),
    ] = omitted()
