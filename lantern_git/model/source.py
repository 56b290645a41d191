"""Sources, the evidence records cite: ids, manifests, references, chunks (docs/evidence.md).

A source is one UTF-8 text document kept verbatim at ``sources/<aa>/<id>.<ext>`` beside its
manifest ``sources/<aa>/<id>.yaml``. This module is the model only (pure functions and values,
no git, no files): what an id is, what a manifest holds and how it is written, what a body may
contain, what a ``source:`` reference says, and where chunks begin and end. Reading and writing
sources is :mod:`lantern_git.evidence.sources`.
"""

from __future__ import annotations

import builtins
import hashlib
import re
from dataclasses import dataclass, field, replace
from itertools import accumulate
from typing import Any

import yaml

from ..core.fields import MANIFEST_FIELDS
from ..errors import ValidationError
from .record import ID_RE

SOURCES_DIR = "sources"
MANIFEST_SUFFIX = ".yaml"
SOURCE_KINDS = ("transcript", "note", "file", "tool_output", "log", "document", "other")
# Limits (docs/evidence.md, "Limits"): one body, and everything one ingest writes. A body of
# 32 MiB is ~500k transcript lines; past that, split the source.
MAX_SOURCE_BYTES = 32 * 1024 * 1024
MAX_INGEST_BYTES = 256 * 1024 * 1024
MAX_MANIFEST_BYTES = 64 * 1024
MAX_META_ENTRIES = 64
MAX_TEXT_FIELD = 1000
# Short pins: lantern writes 12 hex digits of the blob id, and accepts 7 or more.
PIN_DIGITS = 12
MIN_PIN_DIGITS = 7
REF_PREFIX = "source:"
_REF_RE = re.compile(
    rf"source:([0-9a-f]{{16}})(?:@([0-9a-f]{{{MIN_PIN_DIGITS},40}}))?"
    r"(?:#L(\d{1,12})(?:-L(\d{1,12}))?)?"
)
# The statuses of ``lantern verify`` (docs/evidence.md), in the order a report lists them.
VERIFY_STATUSES = (
    "ok",
    "unknown_source",
    "unknown_version",
    "out_of_range",
    "drifted",
    "removed",
)
_EXT_RE = re.compile(r"[a-z0-9]{1,16}")
_META_KEY_RE = re.compile(r"[A-Za-z0-9_.-]{1,64}")


# Each manifest field's JSON Schema and meaning, written once: the MCP tools' input and
# output schemas are built from this table.
MANIFEST_SCHEMA: dict[str, dict[str, Any]] = {
    "id": {
        "type": "string",
        "pattern": "^[0-9a-f]{16}$",
        "description": "The source's id: from its uri when it has one, else from its text.",
    },
    "kind": {
        "type": "string",
        "enum": list(SOURCE_KINDS),
        "description": "What the source is.",
    },
    "uri": {
        "type": ["string", "null"],
        "maxLength": 4096,
        "description": "Where it came from (file:///..., https://..., session:2026-12-03). "
        "Ingesting the same uri again makes a new version of the same source.",
    },
    "title": {
        "type": ["string", "null"],
        "maxLength": MAX_TEXT_FIELD,
        "description": "A title for people.",
    },
    "media_type": {
        "type": "string",
        "description": "text/markdown, text/plain, application/jsonl, ... (from the extension).",
    },
    "captured_at": {"type": "integer", "description": "Unix seconds of the first ingest."},
    "updated_at": {"type": "integer", "description": "Unix seconds of the latest version."},
    "lines": {"type": "integer", "description": "Lines in the current version."},
    "bytes": {"type": "integer", "description": "Bytes in the current version."},
    "sha256": {"type": "string", "description": "SHA-256 of the current version."},
    "meta": {
        "type": "object",
        "additionalProperties": {"type": "string"},
        "description": f"The caller's own key/values (at most {MAX_META_ENTRIES}).",
    },
}

_MEDIA_TYPES = {
    "md": "text/markdown",
    "markdown": "text/markdown",
    "txt": "text/plain",
    "text": "text/plain",
    "log": "text/plain",
    "jsonl": "application/jsonl",
    "ndjson": "application/jsonl",
    "json": "application/json",
    "yml": "application/yaml",
    "csv": "text/csv",
    "tsv": "text/tab-separated-values",
    "html": "text/html",
    "htm": "text/html",
    "xml": "application/xml",
    "py": "text/x-python",
    "rs": "text/x-rust",
    "js": "text/javascript",
    "ts": "text/x-typescript",
    "sh": "text/x-shellscript",
    "toml": "application/toml",
    "rst": "text/x-rst",
}


def compute_source_id(uri: str | None, body: bytes) -> str:
    """The contract's id: from the uri when there is one (so new versions keep it), else the
    body (so the same text ingested twice is one source)."""
    if uri:
        digest = hashlib.sha256(b"uri\0" + uri.encode("utf-8"))
    else:
        digest = hashlib.sha256(b"body\0" + body)
    return digest.hexdigest()[:16]


def check_source_id(source_id: Any, name: str = "id") -> str:
    """A source id, checked so that it can never become a path outside ``sources/``."""
    if not isinstance(source_id, str) or not ID_RE.fullmatch(source_id):
        raise ValidationError(
            f"{name}: invalid source id {source_id!r}: expected 16 lowercase hex digits",
            field=name,
        )
    return source_id


def extension_for(name: str | None) -> str:
    """The body's file extension: the ingested name's, lowercased; ``txt`` for stdin or a name
    without a usable one. ``yaml`` becomes ``yml`` so a body never takes its manifest's name."""
    if not name or "." not in name.rsplit("/", 1)[-1]:
        return "txt"
    ext = name.rsplit(".", 1)[-1].lower()
    if not _EXT_RE.fullmatch(ext):
        return "txt"
    return "yml" if ext == "yaml" else ext


def media_type_for(ext: str) -> str:
    return _MEDIA_TYPES.get(ext, "text/plain")


def source_dir(source_id: str) -> str:
    return f"{SOURCES_DIR}/{check_source_id(source_id)[:2]}"


def manifest_path(source_id: str) -> str:
    return f"{source_dir(source_id)}/{source_id}{MANIFEST_SUFFIX}"


def body_path(source_id: str, ext: str) -> str:
    if not _EXT_RE.fullmatch(ext) or ext == "yaml":
        raise ValidationError(f"invalid source file extension {ext!r}", field="ext")
    return f"{source_dir(source_id)}/{source_id}.{ext}"


def parse_source_path(path: str) -> tuple[str, str] | None:
    """``(id, "manifest"|"body")`` for a path where a source file lives, else None."""
    parts = path.split("/")
    if len(parts) != 3 or parts[0] != SOURCES_DIR:
        return None
    stem, dot, ext = parts[2].partition(".")
    if not dot or not ID_RE.fullmatch(stem) or parts[1] != stem[:2]:
        return None
    if ext == MANIFEST_SUFFIX[1:]:
        return stem, "manifest"
    if _EXT_RE.fullmatch(ext):
        return stem, "body"
    return None


def too_large(name: str, size: int | None = None) -> ValidationError:
    """The refusal of a body over the largest a source may hold, naming its real size when it
    is known (bytes in memory, a file's from ``stat``), else only that it is larger (stdin or
    a file read up to the limit and one byte more, never to its end)."""
    if size is None:
        what = f"is larger than the largest source body, {MAX_SOURCE_BYTES} bytes"
    else:
        what = f"is {size} bytes; the largest source body is {MAX_SOURCE_BYTES} bytes"
    return ValidationError(
        f"{name}: {what} (split it into several sources)",
        field="body",
        code="too_large",
    )


def check_size(data: bytes, name: str = "body") -> None:
    """Refuse a body over the largest a source may hold; ``data`` is the whole body."""
    if len(data) > MAX_SOURCE_BYTES:
        raise too_large(name, len(data))


def _refuse_nul(name: str, nul: int) -> None:
    if nul != -1:
        raise ValidationError(
            f"{name}: holds a NUL byte at byte offset {nul}; only text can be a source",
            field="body",
            code="not_text",
        )


def check_body(data: bytes, name: str = "body") -> str:
    """The body as text, or a refusal naming the first byte that makes it not text."""
    check_size(data, name)
    nul = data.find(b"\0")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as err:
        if nul == -1 or err.start < nul:
            raise ValidationError(
                f"{name}: is not valid UTF-8 text (byte offset {err.start}); only text can be "
                "a source",
                field="body",
                code="not_text",
            ) from None
    _refuse_nul(name, nul)
    return text


def encode_body(text: str, name: str = "text") -> bytes:
    """A body given as text (an MCP call, an append, an export line) as the bytes a source
    stores, refused as :func:`check_body` refuses a file (encoding it proves the UTF-8)."""
    try:
        data = text.encode("utf-8")
    except UnicodeEncodeError as err:
        raise ValidationError(
            f"{name}: is not valid Unicode text (character {err.start})", field="body"
        ) from None
    check_size(data, name)
    _refuse_nul(name, data.find(b"\0"))
    return data


def count_lines(data: bytes) -> int:
    """Lines as an editor numbers them: a last line without a newline still counts."""
    if not data:
        return 0
    return data.count(b"\n") + (0 if data.endswith(b"\n") else 1)


def line_spans(data: bytes) -> list[int]:
    """Byte offset where each line starts, plus the end: line ``n`` (1-based) is
    ``data[spans[n-1]:spans[n]]``."""
    if not data:
        return [0]
    # Running sums of the lines' lengths, newline included, in C loops: a Python loop of
    # ``find`` cost 0.2 s for a 20 MB body of 200,000 lines.
    spans = list(accumulate(map((1).__add__, map(len, data.split(b"\n"))), initial=0))
    if data.endswith(b"\n"):
        spans.pop()  # the empty "line" after the final newline
    else:
        spans[-1] = len(data)  # the last line has no newline to count
    return spans


def lines_of(data: bytes, start: int, end: int) -> bytes:
    """Lines ``start``..``end`` (1-based, inclusive) of ``data``, newlines kept."""
    spans = line_spans(data)
    return data[spans[start - 1] : spans[end]]


# ---------------------------------------------------------------------------- manifests


@dataclass(frozen=True)
class SourceManifest:
    """A source's manifest: the YAML file beside its body, fields in the contract's order.

    Keys lantern does not know are kept in ``extra`` and written back after the known ones.
    """

    id: str
    kind: str
    media_type: str
    captured_at: int
    updated_at: int
    lines: int
    bytes: int
    sha256: str
    uri: str | None = None
    title: str | None = None
    meta: dict[str, str] = field(default_factory=dict)
    extra: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in MANIFEST_FIELDS} | {"meta": dict(self.meta)}

    def to_yaml(self) -> builtins.bytes:
        document: dict[str, Any] = {}
        for name in MANIFEST_FIELDS:
            value = getattr(self, name)
            if value is None or (name == "meta" and not value):
                continue
            document[name] = dict(value) if name == "meta" else value
        document.update(self.extra)
        text = yaml.dump(
            document,
            Dumper=getattr(yaml, "CSafeDumper", yaml.SafeDumper),
            sort_keys=False,
            allow_unicode=True,
            default_flow_style=False,
            width=1000,
        )
        return text.encode("utf-8")

    def evolve(self, **changes: Any) -> SourceManifest:
        return replace(self, **changes)

    @classmethod
    def from_yaml(cls, data: builtins.bytes, path: str | None = None) -> SourceManifest:
        """Parse and check a manifest; errors name the file and the field."""

        def fail(message: str, name: str | None = None) -> ValidationError:
            return ValidationError(message, field=name, path=path, code="invalid_manifest")

        if len(data) > MAX_MANIFEST_BYTES:
            raise fail(f"manifest is larger than {MAX_MANIFEST_BYTES} bytes")
        try:
            document = yaml.load(data, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
        except (yaml.YAMLError, UnicodeDecodeError) as err:
            mark = getattr(err, "problem_mark", None)
            line = f" (line {mark.line + 1})" if mark is not None else ""
            raise fail(f"manifest is not valid YAML{line}") from None
        if not isinstance(document, dict):
            raise fail("manifest must be a YAML mapping of the fields of a source")
        return cls.from_dict(document, path)

    @classmethod
    def from_dict(cls, document: dict[str, Any], path: str | None = None) -> SourceManifest:
        """A manifest from its fields (a parsed manifest file, an export line), checked."""

        def fail(message: str, name: str | None = None) -> ValidationError:
            return ValidationError(message, field=name, path=path, code="invalid_manifest")

        values: dict[str, Any] = {}
        for name in ("id", "kind", "media_type", "sha256"):
            value = document.get(name)
            if not isinstance(value, str) or not value:
                raise fail(f"{name}: is required and must be text", name)
            values[name] = value
        check_source_id(values["id"])
        if values["kind"] not in SOURCE_KINDS:
            raise fail(f"kind: must be one of {', '.join(SOURCE_KINDS)}", "kind")
        if not re.fullmatch(r"[0-9a-f]{64}", values["sha256"]):
            raise fail("sha256: must be 64 lowercase hex digits", "sha256")
        for name in ("captured_at", "updated_at", "lines", "bytes"):
            value = document.get(name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise fail(f"{name}: must be a whole number, 0 or more", name)
            values[name] = value
        for name in ("uri", "title"):
            value = document.get(name)
            if value is not None and (not isinstance(value, str) or len(value) > 4096):
                raise fail(f"{name}: must be text of at most 4096 characters", name)
            values[name] = value
        values["meta"] = check_meta(document.get("meta") or {}, path)
        extra = {k: v for k, v in document.items() if k not in MANIFEST_FIELDS}
        return cls(**values, extra=extra)


def check_meta(meta: Any, path: str | None = None) -> dict[str, str]:
    if not isinstance(meta, dict):
        raise ValidationError(
            "meta: must be a mapping of text keys to text values", field="meta", path=path
        )
    if len(meta) > MAX_META_ENTRIES:
        raise ValidationError(
            f"meta: has more than {MAX_META_ENTRIES} entries", field="meta", path=path
        )
    for key, value in meta.items():
        if not isinstance(key, str) or not _META_KEY_RE.fullmatch(key):
            raise ValidationError(
                f"meta: key {key!r} must be 1-64 letters, digits, '_', '.' or '-'",
                field="meta",
                path=path,
            )
        if not isinstance(value, str) or len(value) > MAX_TEXT_FIELD or "\0" in value:
            raise ValidationError(
                f"meta: the value of {key} must be text of at most {MAX_TEXT_FIELD} characters",
                field="meta",
                path=path,
            )
    return dict(meta)


def check_text_field(name: str, value: Any, limit: int = MAX_TEXT_FIELD) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or not value.strip():
        raise ValidationError(f"{name}: must be non-empty text", field=name)
    if len(value) > limit or "\0" in value or "\n" in value:
        raise ValidationError(f"{name}: must be one line of at most {limit} characters", field=name)
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise ValidationError(f"{name}: is not valid Unicode text", field=name) from None
    return value


def check_kind(kind: Any) -> str:
    if kind not in SOURCE_KINDS:
        raise ValidationError(
            f"kind: {kind!r} is not a source kind; use one of {', '.join(SOURCE_KINDS)}",
            field="kind",
        )
    return str(kind)


# ---------------------------------------------------------------------------- references


@dataclass(frozen=True)
class SourceRef:
    """``source:<id>[@<blob>][#L<a>[-L<b>]]``: a source, maybe one version, maybe some lines."""

    source_id: str
    blob: str | None = None
    start: int | None = None
    end: int | None = None

    def __str__(self) -> str:
        text = REF_PREFIX + self.source_id
        if self.blob:
            text += "@" + self.blob
        if self.start is not None:
            text += f"#L{self.start}"
            if self.end is not None and self.end != self.start:
                text += f"-L{self.end}"
        return text

    @property
    def last(self) -> int | None:
        return self.end if self.end is not None else self.start

    def pinned(self, blob: str) -> SourceRef:
        return replace(self, blob=blob[:PIN_DIGITS])

    @classmethod
    def parse(cls, text: str, argument: str | None = None) -> SourceRef:
        """A reference, or a :class:`ValidationError` naming it and what is wrong: as one of a
        record's ``source_refs``, or (``argument``) as the command argument that gave it, with
        the code ``invalid_ref``."""
        name = argument or "source_refs"
        code = "invalid_ref" if argument else None

        def refuse(reason: str) -> ValidationError:
            return ValidationError(f"{name}: {reason}", field=name, code=code)

        match = _REF_RE.fullmatch(text) if isinstance(text, str) else None
        if match is None:
            raise refuse(
                f"{text!r} is not a source reference; expected "
                "source:<16 hex id>[@<blob, 7-40 hex>][#L<a>[-L<b>]]"
            )
        source_id, blob, start, end = match.groups()
        a = int(start) if start is not None else None
        b = int(end) if end is not None else None
        if a is not None and a < 1:
            raise refuse(f"{text}: lines are numbered from 1")
        if a is not None and b is not None and b < a:
            raise refuse(f"{text}: the range ends (L{b}) before it starts (L{a})")
        return cls(source_id, blob, a, b)


def is_source_ref(text: str) -> bool:
    return isinstance(text, str) and text.startswith(REF_PREFIX)


# ---------------------------------------------------------------------------- chunks

# Chunking rule (docs/evidence.md): a chunk is at most CHUNK_LINES lines and CHUNK_CHARS
# characters. It ends early, once it has CHUNK_MIN_LINES lines, before a natural break: a
# markdown heading, a speaker turn ("User:", "assistant:", "[12:04] Ann:") or the line after
# a blank line. A chunk cut by a limit rather than at a break starts the next one
# CHUNK_OVERLAP lines back, so a sentence across the cut is found whole in one of them. Each
# decision looks only at lines already read, so an append changes only the last chunk.
CHUNK_LINES = 40
CHUNK_CHARS = 2000
CHUNK_MIN_LINES = 6
CHUNK_OVERLAP = 2
_HEADING_RE = re.compile(r"#{1,6}\s")
_TURN_RE = re.compile(r"(?:\[[0-9:., -]{3,24}\]\s*)?[A-Za-z][\w .'-]{0,40}:\s")


def _is_break(line: str, previous: str) -> bool:
    if not previous.strip():
        return bool(line.strip())
    return bool(_HEADING_RE.match(line) or _TURN_RE.match(line))


def chunk_ranges(lines: list[str], first: int = 1) -> list[tuple[int, int]]:
    """The chunks of ``lines`` (which are lines ``first``.. of a body) as 1-based inclusive
    line ranges."""
    ranges: list[tuple[int, int]] = []
    n = len(lines)
    start = 0
    while start < n:
        chars = len(lines[start])
        i = start + 1
        overlap = 0
        while i < n:
            line = lines[i]
            if i - start >= CHUNK_MIN_LINES and _is_break(line, lines[i - 1]):
                break
            if i - start >= CHUNK_LINES or chars + len(line) > CHUNK_CHARS:
                overlap = CHUNK_OVERLAP if i - start > 2 * CHUNK_OVERLAP else 0
                break
            chars += len(line)
            i += 1
        ranges.append((first + start, first + i - 1))
        start = i - overlap
    return ranges
