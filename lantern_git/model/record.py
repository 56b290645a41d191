"""The memory record: validation, deterministic ids, and the markdown file format.

A record file is YAML front matter between ``---`` fences, then the content as the body.
Known keys are written in a fixed order; keys lantern does not know are kept as they are.
YAML is only ever read with the C safe loader, with aliases and duplicate keys refused.
"""

from __future__ import annotations

import functools
import hashlib
import math
import re
import time
import unicodedata
from collections.abc import Hashable
from dataclasses import dataclass, field, replace
from typing import Any, Protocol, cast

import yaml
from yaml.nodes import MappingNode, ScalarNode, SequenceNode
from yaml.resolver import Resolver

from ..core.fields import (  # noqa: F401 - re-exported for library users
    DEFAULT_CONFIDENCE,
    DEFAULT_PRIORITY,
    DEFAULT_SCOPE,
    DEFAULT_URGENCY,
    FIELD_ORDER,
    KINDS,
    MAX_CONTENT_BYTES,
    MAX_FILE_BYTES,
    MAX_SCOPE_CHARS,
    MAX_SOURCE_REF_CHARS,
    MAX_SOURCE_REFS,
    MAX_TIMESTAMP,
    OPTIONAL_FIELDS,
    RECORD_KEYS,
    SCOPE_PATTERN,
    STATUSES,
)
from ..errors import InvalidInput, ValidationError
from .entity_keys import MAX_RECORD_ENTITIES, check_key

ID_RE = re.compile(r"[0-9a-f]{16}")
SCOPE_RE = re.compile(SCOPE_PATTERN)
_CONTROL_RE = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")
# Lone surrogates: what undecodable bytes in argv or a file name become; not encodable as UTF-8.
_SURROGATE_RE = re.compile(r"[\ud800-\udfff]")
_WHITESPACE_RUN = re.compile(r"\s+")
_PLAIN_SAFE = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.:/@+\-]*")


class _ResolvesTags(Protocol):
    """PyYAML's resolver as used here (types-PyYAML leaves ``resolve`` unannotated)."""

    def resolve(self, kind: type[ScalarNode], value: str, implicit: tuple[bool, bool]) -> str: ...


_RESOLVER = cast(_ResolvesTags, Resolver())

FENCE = "---"
_STR_TAG = "tag:yaml.org,2002:str"


def check_id_prefix(ref: Any) -> str:
    """An id or id prefix as typed, normalized (lowercase, trimmed), or InvalidInput naming
    what is wrong: 4 to 16 hex digits."""
    if not isinstance(ref, str):
        raise InvalidInput(f"id: expected a string, got {type(ref).__name__}", code="invalid_id")
    prefix = ref.strip().lower()
    if not prefix or any(c not in "0123456789abcdef" for c in prefix) or len(prefix) > 16:
        raise InvalidInput(
            f"id: {ref!r} is not a record id (16 hex digits, or a prefix of 4 or more)",
            code="invalid_id",
        )
    if len(prefix) < 4:
        raise InvalidInput(
            f"id: prefix {ref!r} is too short; give at least 4 hex digits", code="invalid_id"
        )
    return prefix


def normalize_content(content: str) -> str:
    """The text the id is computed over: NFC, whitespace runs collapsed, trimmed."""
    return _WHITESPACE_RUN.sub(" ", unicodedata.normalize("NFC", content)).strip()


def compute_id(kind: str, scope: str, content: str) -> str:
    payload = "\0".join((kind, scope, normalize_content(content))).encode("utf-8")
    return hashlib.sha256(payload).hexdigest()[:16]


def one_line(text: str, width: int = 60) -> str:
    """``text`` on one line, whitespace collapsed, cut to ``width`` (commit summaries)."""
    line = " ".join(text.split())
    return line if len(line) <= width else line[: width - 3] + "..."


# ---------------------------------------------------------------------------- validation


def _fail(field_name: str, message: str, lines: dict[str, int] | None = None) -> ValidationError:
    return ValidationError(
        f"{field_name}: {message}", field=field_name, line=(lines or {}).get(field_name)
    )


def _check_int(name: str, value: Any, lo: int, hi: int, lines: dict[str, int] | None = None) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise _fail(name, f"must be an integer, got {_describe(value)}", lines)
    if not lo <= value <= hi:
        raise _fail(name, f"must be between {lo} and {hi}, got {value}", lines)
    return value


def _describe(value: Any) -> str:
    if value is None:
        return "null"
    text = repr(value)
    if len(text) > 40:
        text = text[:37] + "..."
    return text if isinstance(value, (str, int, float)) else f"{type(value).__name__} {text}"


def validate_kind(value: Any, lines: dict[str, int] | None = None) -> str:
    if value not in KINDS:
        raise _fail("kind", f"must be one of {', '.join(KINDS)}; got {_describe(value)}", lines)
    return cast(str, value)  # one of KINDS


def validate_status(value: Any, lines: dict[str, int] | None = None) -> str:
    if value not in STATUSES:
        raise _fail(
            "status", f"must be one of {', '.join(STATUSES)}; got {_describe(value)}", lines
        )
    return cast(str, value)  # one of STATUSES


def has_undecodable(text: str) -> bool:
    """True if ``text`` holds lone surrogates: undecodable bytes from argv, not UTF-8 text."""
    return _SURROGATE_RE.search(text) is not None


def validate_scope(value: Any, lines: dict[str, int] | None = None) -> str:
    if not isinstance(value, str):
        raise _fail("scope", f"must be a string, got {_describe(value)}", lines)
    if len(value) > MAX_SCOPE_CHARS:
        raise _fail("scope", f"is longer than {MAX_SCOPE_CHARS} characters", lines)
    if _SURROGATE_RE.search(value):
        raise _fail("scope", "is not valid Unicode text (undecodable bytes?)", lines)
    if _CONTROL_RE.search(value) or not SCOPE_RE.fullmatch(value):
        raise _fail(
            "scope",
            f"must be 'global' or 'namespace:name' without whitespace, control characters "
            f"or '*'; got {value!r}",
            lines,
        )
    return value


def validate_id(name: str, value: Any, lines: dict[str, int] | None = None) -> str:
    if not isinstance(value, str) or not ID_RE.fullmatch(value):
        raise _fail(name, f"must be 16 lowercase hex digits, got {_describe(value)}", lines)
    return value


def validate_priority(
    value: Any, name: str = "priority", lines: dict[str, int] | None = None
) -> int:
    return _check_int(name, value, 0, 100, lines)


def validate_confidence(value: Any, lines: dict[str, int] | None = None) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise _fail("confidence", f"must be a number, got {_describe(value)}", lines)
    number = float(value)
    if math.isnan(number) or not 0.0 <= number <= 1.0:
        raise _fail("confidence", f"must be between 0.0 and 1.0, got {number}", lines)
    return number


def validate_timestamp(name: str, value: Any, lines: dict[str, int] | None = None) -> int:
    return _check_int(name, value, 0, MAX_TIMESTAMP, lines)


def validate_source_refs(value: Any, lines: dict[str, int] | None = None) -> tuple[str, ...]:
    if value is None:
        return ()
    if not isinstance(value, (list, tuple)):
        raise _fail("source_refs", f"must be a list of strings, got {_describe(value)}", lines)
    if len(value) > MAX_SOURCE_REFS:
        raise _fail("source_refs", f"has more than {MAX_SOURCE_REFS} entries", lines)
    for ref in value:
        if not isinstance(ref, str) or not ref.strip():
            raise _fail(
                "source_refs", f"entries must be non-empty strings, got {_describe(ref)}", lines
            )
        if _SURROGATE_RE.search(ref):
            raise _fail("source_refs", "entries must be valid Unicode text", lines)
        if len(ref) > MAX_SOURCE_REF_CHARS or "\0" in ref or "\n" in ref:
            raise _fail(
                "source_refs",
                f"entries must be single lines of at most {MAX_SOURCE_REF_CHARS} characters",
                lines,
            )
    return tuple(value)


def validate_entities(value: Any, lines: dict[str, int] | None = None) -> tuple[str, ...]:
    """A record's ``entities``: keys (:func:`~.entity_keys.check_key`), lower-cased, each once,
    in their order."""
    if value is None:
        return ()
    if not isinstance(value, (list, tuple)):
        raise _fail("entities", f"must be a list of keys TYPE:NAME, got {_describe(value)}", lines)
    if len(value) > MAX_RECORD_ENTITIES:
        raise _fail("entities", f"has more than {MAX_RECORD_ENTITIES} entries", lines)
    keys: dict[str, None] = {}
    for item in value:
        try:
            keys.setdefault(check_key(item), None)
        except ValidationError as err:
            raise _fail("entities", err.reason, lines) from None
    return tuple(keys)


def validate_content(value: Any, line: int | None = None) -> str:
    if not isinstance(value, str):
        raise ValidationError(f"content: must be text, got {_describe(value)}", field="content")
    content = value.strip()
    if not content:
        raise ValidationError("content: must not be empty", field="content", line=line)
    if "\0" in content:
        raise ValidationError("content: must not contain NUL bytes", field="content", line=line)
    if len(content.encode("utf-8", "surrogatepass")) > MAX_CONTENT_BYTES:
        raise ValidationError(
            f"content: is larger than the maximum record size ({MAX_CONTENT_BYTES} bytes)",
            field="content",
            line=line,
        )
    try:
        content.encode("utf-8")
    except UnicodeEncodeError:
        raise ValidationError(
            "content: is not valid Unicode text", field="content", line=line
        ) from None
    return content


# ---------------------------------------------------------------------------- the record


@dataclass(frozen=True)
class Record:
    id: str
    kind: str
    content: str
    scope: str = DEFAULT_SCOPE
    status: str = "active"
    priority: int = DEFAULT_PRIORITY
    urgency: int = DEFAULT_URGENCY
    confidence: float = DEFAULT_CONFIDENCE
    created_at: int = 0
    updated_at: int = 0
    expires_at: int | None = None
    supersedes_id: str | None = None
    source_refs: tuple[str, ...] = ()
    entities: tuple[str, ...] = ()
    # Front-matter keys lantern does not know, kept in their order.
    extra: dict[str, Any] = field(default_factory=dict, compare=True)

    # -- construction

    @classmethod
    def new(
        cls,
        *,
        kind: str,
        content: str,
        scope: str = DEFAULT_SCOPE,
        priority: int = DEFAULT_PRIORITY,
        urgency: int = DEFAULT_URGENCY,
        confidence: float = DEFAULT_CONFIDENCE,
        expires_at: int | None = None,
        supersedes_id: str | None = None,
        source_refs: tuple[str, ...] | list[str] = (),
        now: int | None = None,
    ) -> Record:
        """A fresh, validated record with its deterministic id."""
        kind = validate_kind(kind)
        scope = validate_scope(scope)
        content = validate_content(content)
        stamp = int(time.time()) if now is None else now
        record = cls(
            id=compute_id(kind, scope, content),
            kind=kind,
            content=content,
            scope=scope,
            priority=priority,
            urgency=urgency,
            confidence=confidence,
            created_at=stamp,
            updated_at=stamp,
            expires_at=expires_at,
            supersedes_id=supersedes_id,
            source_refs=tuple(source_refs or ()),
        )
        return record.validated()

    def validated(self, lines: dict[str, int] | None = None) -> Record:
        """Check every field; returns the record with numbers in their canonical types."""
        validate_id("id", self.id, lines)
        validate_kind(self.kind, lines)
        validate_scope(self.scope, lines)
        validate_status(self.status, lines)
        validate_priority(self.priority, "priority", lines)
        validate_priority(self.urgency, "urgency", lines)
        confidence = validate_confidence(self.confidence, lines)
        validate_timestamp("created_at", self.created_at, lines)
        validate_timestamp("updated_at", self.updated_at, lines)
        if self.expires_at is not None:
            validate_timestamp("expires_at", self.expires_at, lines)
        if self.supersedes_id is not None:
            validate_id("supersedes_id", self.supersedes_id, lines)
            if self.supersedes_id == self.id:
                raise _fail("supersedes_id", "a record cannot supersede itself", lines)
        refs = validate_source_refs(self.source_refs, lines)
        entities = validate_entities(self.entities, lines)
        content = validate_content(self.content, (lines or {}).get("content"))
        if (
            # An int confidence (1 from a caller) becomes the float it is written as; a float
            # is its own canonical value.
            type(self.confidence) is not float
            or refs != self.source_refs
            or entities != self.entities
            or content != self.content
        ):
            return replace(
                self, confidence=confidence, source_refs=refs, entities=entities, content=content
            )
        return self

    def evolve(self, **changes: Any) -> Record:
        """A copy with some fields changed, validated."""
        return replace(self, **changes).validated()

    def differences(self, **given: Any) -> list[tuple[str, Any, Any]]:
        """``(field, given, stored)`` for each given value this record does not have: what an
        add of existing content asked for that the stored record lacks (``update`` can give
        it). For ``source_refs``, ``given`` is the refs the record lacks."""
        found = []
        for name, value in given.items():
            stored = getattr(self, name)
            if name == "source_refs":
                missing = tuple(ref for ref in value if ref not in stored)
                if missing:
                    found.append((name, missing, stored))
            elif value != stored:
                found.append((name, value, stored))
        return found

    # -- views

    def is_expired(self, now: int | None = None) -> bool:
        if self.expires_at is None:
            return False
        return self.expires_at <= (int(time.time()) if now is None else now)

    def to_dict(self) -> dict[str, Any]:
        """The public record object: exactly the schema's fields, in the contract's order."""
        return {
            "id": self.id,
            "kind": self.kind,
            "scope": self.scope,
            "status": self.status,
            "priority": self.priority,
            "urgency": self.urgency,
            "confidence": self.confidence,
            "created_at": self.created_at,
            "updated_at": self.updated_at,
            "expires_at": self.expires_at,
            "supersedes_id": self.supersedes_id,
            "source_refs": list(self.source_refs),
            "entities": list(self.entities),
            "content": self.content,
        }

    @classmethod
    def from_dict(cls, data: Any) -> Record:
        """A record from a public record object (import, MCP). Unknown keys are refused."""
        if not isinstance(data, dict):
            raise ValidationError(f"a record must be an object, got {_describe(data)}")
        unknown = [k for k in data if k not in RECORD_KEYS]
        if unknown:
            raise ValidationError(
                f"unknown field {unknown[0]!r}", field=str(unknown[0]), code="unknown_field"
            )
        for required in ("id", "kind", "content"):
            if required not in data:
                raise ValidationError(f"{required}: is required", field=required)
        # Null is absent; each value is checked by ``validated`` below, lists made tuples.
        values = {k: data[k] for k in FIELD_ORDER if k in data and data[k] is not None}
        now = int(time.time())
        values.setdefault("created_at", now)
        values.setdefault("updated_at", values["created_at"])
        return cls(content=data["content"], **values).validated()

    # -- the file format

    def to_markdown(self) -> str:
        lines = [FENCE]
        for key in FIELD_ORDER:
            lines.extend(_render_field(key, getattr(self, key)))
        for key, value in self.extra.items():
            lines.extend(_render_extra(key, value))
        lines.append(FENCE)
        return "\n".join(lines) + "\n" + self.content + "\n"

    @classmethod
    def from_markdown(cls, text: str, path: str | None = None) -> Record:
        """Parse a record file. Errors name the field, and the file and line."""
        try:
            return _parse(text)
        except ValidationError as err:
            raise err.located(path) if path else err from None

    def rewrite(self, old_text: str) -> str:
        """This record as file text, touching only the lines of ``old_text`` that changed."""
        try:
            old = _parse(old_text)
        except ValidationError:
            return self.to_markdown()
        patched = _patch(old_text, old, self)
        if patched is not None:
            try:
                if _parse(patched) == self:
                    return patched
            except ValidationError:
                pass
        return self.to_markdown()


# ---------------------------------------------------------------------------- rendering


def _yaml_scalar(value: Any) -> str:
    """A known field's value as YAML. Only what validation lets through reaches here (no
    null, which ``_render_field`` leaves out, and no bool, which no field takes)."""
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        text = repr(value)
        if "e" in text and "." not in text:
            mantissa, exponent = text.split("e")
            text = f"{mantissa}.0e{exponent}"
        return text
    if isinstance(value, str):
        if (
            _PLAIN_SAFE.fullmatch(value)
            and not value.endswith(":")
            and _RESOLVER.resolve(ScalarNode, value, (True, False)) == _STR_TAG
        ):
            return value
        return yaml.dump(
            value, Dumper=yaml.CSafeDumper, allow_unicode=True, width=1 << 30, default_style='"'
        ).rstrip("\n")
    raise TypeError(f"cannot render {type(value).__name__}")


def _render_field(key: str, value: Any) -> list[str]:
    if key in OPTIONAL_FIELDS and (value is None or value == ()):
        return []
    if key in ("source_refs", "entities"):
        return [f"{key}:"] + [f"- {_yaml_scalar(ref)}" for ref in value]
    return [f"{key}: {_yaml_scalar(value)}"]


def _render_extra(key: str, value: Any) -> list[str]:
    text = yaml.dump(
        {key: value},
        Dumper=yaml.CSafeDumper,
        allow_unicode=True,
        width=1 << 30,
        default_flow_style=False,
        sort_keys=False,
    )
    return text.rstrip("\n").split("\n")


# ---------------------------------------------------------------------------- parsing


class _StrictLoader(yaml.CSafeLoader):
    """The C safe loader, refusing duplicate keys (PyYAML silently keeps the last one)."""

    def construct_mapping(self, node: MappingNode, deep: bool = False) -> dict[Hashable, Any]:
        seen: set[object] = set()
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=deep)
            try:
                hash(key)
            except TypeError:
                raise yaml.constructor.ConstructorError(
                    None,
                    None,
                    f"a key must be a plain value, got {type(key).__name__}",
                    key_node.start_mark,
                ) from None
            if key in seen:
                raise yaml.constructor.ConstructorError(
                    None, None, f"duplicate key {key!r}", key_node.start_mark
                )
            seen.add(key)
        return super().construct_mapping(node, deep=deep)


def split_front_matter(text: str) -> tuple[str, str, int]:
    """(front matter, body, line number of the body's first line)."""
    if not text.startswith(FENCE + "\n") and text.rstrip("\r\n") != FENCE:
        if text.startswith(FENCE + "\r\n"):
            text = text.replace("\r\n", "\n")
        else:
            raise ValidationError("file must start with a '---' front matter fence", line=1)
    end = text.find("\n" + FENCE + "\n", len(FENCE))
    if end == -1:
        if text.endswith("\n" + FENCE):
            end = len(text) - len(FENCE) - 1
        else:
            raise ValidationError("front matter has no closing '---' fence", line=1)
    front = text[len(FENCE) + 1 : end + 1]
    body = text[end + len(FENCE) + 2 :]
    body_line = front.count("\n") + 3
    return front, body, body_line


def _check_no_aliases(node: yaml.Node, seen: set[int]) -> None:
    # An alias makes the same node appear twice; refusing them rules out "billion laughs".
    stack = [node]
    while stack:
        current = stack.pop()
        if id(current) in seen:
            raise ValidationError(
                "YAML anchors and aliases are not allowed in front matter",
                line=current.start_mark.line + 2,
            )
        seen.add(id(current))
        if isinstance(current, MappingNode):
            for key_node, value_node in current.value:
                stack.append(key_node)
                stack.append(value_node)
        elif isinstance(current, SequenceNode):
            stack.extend(current.value)


# The shapes lantern itself writes a front matter line in (``Record.to_markdown``): a known key,
# then a decimal integer, a decimal fraction, a plain string (``_yaml_scalar``'s), nothing (a
# list follows, or null) or, under a list's key, "- " and a plain string.
_PLAIN_LINE = re.compile(r"([a-z_]+):(?: (.*))?")
_PLAIN_INT = re.compile(r"-?(?:0|[1-9][0-9]*)")
_PLAIN_FLOAT = re.compile(r"-?(?:0|[1-9][0-9]*)\.[0-9]+")
_PLAIN_KEYS = frozenset(FIELD_ORDER)


@functools.lru_cache(maxsize=4096)
def _plain_string(text: str) -> bool:
    """Whether YAML reads ``text``, unquoted, as that very string (as ``_yaml_scalar`` asks
    before writing a string plain)."""
    return (
        _PLAIN_SAFE.fullmatch(text) is not None
        and not text.endswith(":")
        and _RESOLVER.resolve(ScalarNode, text, (True, False)) == _STR_TAG
    )


def _plain_front(front: str) -> tuple[dict[str, Any], dict[str, int], dict[str, Any]] | None:
    """What :func:`_load_front` gives for front matter written only in the shapes lantern
    writes (a rebuild reads 100k such files; the C loader's Python-side construction is most of
    a record's parse), or None for anything else, which YAML then reads. The values are the ones
    YAML's own rules give each shape (``tests/unit/test_plain_front.py`` holds the two to
    each other)."""
    data: dict[str, Any] = {}
    lines: dict[str, int] = {}
    raw: dict[str, Any] = {}
    items: list[str] | None = None
    for number, line in enumerate(front.split("\n")[:-1], start=2):
        if items is not None and line.startswith("- "):
            item = line[2:]
            if not _plain_string(item):
                return None
            items.append(item)
            continue
        items = None
        match = _PLAIN_LINE.fullmatch(line)
        if match is None:
            return None
        key, text = match.groups()
        if key in data or key not in _PLAIN_KEYS:
            return None
        lines[key] = number
        if text is None:
            # A list of plain strings follows, or nothing (null).
            items = []
            data[key] = items
            raw[key] = ""
            continue
        raw[key] = text
        if _PLAIN_INT.fullmatch(text):
            data[key] = int(text)
        elif _PLAIN_FLOAT.fullmatch(text):
            data[key] = float(text)
        elif _plain_string(text):
            data[key] = text
        else:
            return None
    if not data:
        return None
    for key, value in data.items():
        if isinstance(value, list):
            if value:
                del raw[key]  # a sequence, not a scalar
            else:
                data[key] = None
    return data, lines, raw


def _load_front(front: str) -> tuple[dict[str, Any], dict[str, int], dict[str, Any]]:
    """The mapping, the line of each key (file numbering) and raw scalar text of each key."""
    plain = _plain_front(front)
    return plain if plain is not None else _yaml_front(front)


def _yaml_front(front: str) -> tuple[dict[str, Any], dict[str, int], dict[str, Any]]:
    """:func:`_load_front` by YAML's C loader."""
    loader = _StrictLoader(front)
    try:
        node = loader.get_single_node()
        if node is None:
            raise ValidationError("front matter is empty", line=2)
        if not isinstance(node, MappingNode):
            raise ValidationError("front matter must be a mapping of keys to values", line=2)
        if "*" in front:  # no alias is written without one
            _check_no_aliases(node, set())
        for key_node, _ in node.value:
            if key_node.tag != _STR_TAG:  # a number, a date, null, a merge key, a list...
                raise ValidationError(
                    f"front matter keys must be strings, got {_key_text(key_node)}",
                    line=key_node.start_mark.line + 2,
                )
        data = loader.construct_document(node)
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None) or getattr(err, "context_mark", None)
        line = mark.line + 2 if mark is not None else 2
        problem = getattr(err, "problem", None) or str(err)
        raise ValidationError(f"invalid YAML: {problem}", line=line) from None
    finally:
        loader.dispose()
    lines: dict[str, int] = {}
    raw: dict[str, Any] = {}
    for key_node, value_node in node.value:
        lines[key_node.value] = key_node.start_mark.line + 2
        # A plain (unquoted) scalar: the pure-Python loader marks it None, the C loader "".
        if isinstance(value_node, ScalarNode) and not value_node.style:
            raw[key_node.value] = value_node.value
    return data, lines, raw


def _key_text(node: yaml.Node) -> str:
    """A key that YAML reads as no string, as the file has it (``1``, ``~``, ``<<``)."""
    if isinstance(node, ScalarNode):
        return node.value or "an empty key"
    return "a list" if isinstance(node, SequenceNode) else "a mapping"


def _refuse_unquoted_id(key: str, text: str | None, lines: dict[str, int]) -> None:
    """An id written as 16 digits unquoted is a YAML number (``0000000000000000`` is 0): say
    to quote it, rather than report the number YAML made of it."""
    if text is not None and ID_RE.fullmatch(text):
        raise _fail(
            key,
            f"must be 16 lowercase hex digits in quotes; YAML read {text} as a number, "
            f"so write {key}: '{text}'",
            lines,
        )


def _parse(text: str) -> Record:
    if "\0" in text:
        raise ValidationError(
            "file contains NUL bytes", line=text[: text.index("\0")].count("\n") + 1
        )
    front, body, body_line = split_front_matter(text)
    data, lines, raw = _load_front(front)
    content_key_line = lines.get("content")
    lines["content"] = body_line
    for required in ("id", "kind"):
        if required not in data:
            raise ValidationError(f"{required}: is required", field=required, line=2)
    values: dict[str, Any] = {}
    for key in FIELD_ORDER:
        if key not in data:
            continue
        value = data[key]
        if key in ("id", "supersedes_id") and not isinstance(value, str):
            _refuse_unquoted_id(key, raw.get(key), lines)
        if key in OPTIONAL_FIELDS and value is None:
            continue
        values[key] = value  # each checked by ``validated`` below, lists made tuples
    for key in ("created_at", "updated_at"):
        if key not in values:
            raise ValidationError(f"{key}: is required", field=key, line=2)
    values.setdefault("scope", "global")
    values.setdefault("status", "active")
    values.setdefault("priority", 50)
    values.setdefault("urgency", 0)
    values.setdefault("confidence", 1.0)
    extra = {k: v for k, v in data.items() if k not in FIELD_ORDER}
    if "content" in extra:
        raise ValidationError(
            "content: belongs in the body after the front matter, not in it",
            field="content",
            line=content_key_line,
        )
    record = Record(content=body, extra=extra, **values)
    return record.validated(lines)


# ---------------------------------------------------------------------------- minimal rewrites


def _key_blocks(front_lines: list[str]) -> list[tuple[str | None, int, int]]:
    """Top-level key blocks of front matter as (key, first line, end line) index ranges."""
    blocks: list[tuple[str | None, int, int]] = []
    current_key: str | None = None
    start = 0
    for i, line in enumerate(front_lines):
        starts_key = line[:1] not in ("", " ", "\t", "-", "#") and ":" in line
        if starts_key:
            if i > start:  # a key's block, or the comment lines before the first key
                blocks.append((current_key, start, i))
            current_key = line.split(":", 1)[0].strip().strip("'\"")
            start = i
    blocks.append((current_key, start, len(front_lines)))
    return blocks


def _trailing_notes(block: list[str]) -> list[str]:
    """The comment and blank lines that end a key's block: a person's notes after a field,
    kept when the field's value is written anew."""
    kept = len(block)
    while kept > 1 and (not block[kept - 1].strip() or block[kept - 1].lstrip().startswith("#")):
        kept -= 1
    return block[kept:]


def _patch(old_text: str, old: Record, new: Record) -> str | None:
    if old.extra != new.extra:
        return None
    front, body, _ = split_front_matter(old_text)
    front_lines = front.split("\n")[:-1]
    blocks = _key_blocks(front_lines)
    keys = [key for key, _, _ in blocks]
    if len(set(k for k in keys if k)) != len([k for k in keys if k]):
        return None
    rendered: dict[int, list[str]] = {}
    insert_after: dict[int, list[str]] = {}
    prepend: list[str] = []
    for key in FIELD_ORDER:
        old_value, new_value = getattr(old, key), getattr(new, key)
        if old_value == new_value and type(old_value) is type(new_value):
            continue
        lines = _render_field(key, new_value)
        if key in keys:
            rendered[keys.index(key)] = lines
            continue
        # Place a new key after the nearest present key that precedes it in the schema order.
        anchor = None
        for earlier in reversed(FIELD_ORDER[: FIELD_ORDER.index(key)]):
            if earlier in keys:
                anchor = keys.index(earlier)
                break
        if anchor is None:
            prepend.extend(lines)
        else:
            insert_after.setdefault(anchor, []).extend(lines)
    out: list[str] = list(prepend)
    for index, (_, start, end) in enumerate(blocks):
        block = front_lines[start:end]
        if index in rendered:
            out.extend(rendered[index])
            out.extend(_trailing_notes(block))
        else:
            out.extend(block)
        out.extend(insert_after.get(index, []))
    new_body = body if old.content == new.content else new.content + "\n"
    return FENCE + "\n" + "".join(line + "\n" for line in out) + FENCE + "\n" + new_body
