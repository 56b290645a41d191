"""``lantern import`` from where users come from: lantern's own JSON Lines, the MCP reference
memory server's ``memory.json``, and a folder of markdown notes.

Each reader turns its input into ``(where, record)`` pairs (``where`` names the line or the file
for an error) and validates everything before the store is touched; :mod:`transfer` then writes
the new records in one commit. Ids are computed as ``add`` computes them, so importing the same
input again finds every record present and changes nothing.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from ..core.fields import DEFAULT_SCOPE, MAX_FILE_BYTES
from ..errors import InvalidInput, ValidationError
from ..model.record import Record
from .transfer import SourceImport, json_lines, parse_lines, read_import_source

if TYPE_CHECKING:
    from ..model.entity import Entity

FORMATS = ("jsonl", "mcp-memory", "markdown")
# The MCP memory server's line types.
MCP_TYPES = ("entity", "relation")
# The kind a markdown note becomes unless --kind says otherwise.
DEFAULT_NOTE_KIND = "observation"
NOTE_SUFFIXES = (".md", ".markdown")

Progress = Callable[[int], None]
# (items done since the last call, items in all): what a progress bar needs.
Counter = Callable[[int, int], None]


def detect_format(source: str, lines: list[bytes] | None) -> str:
    """A folder is markdown notes; a file (or stdin) whose first JSON line has ``"type":
    "entity"`` or ``"relation"`` is the MCP memory server's; anything else is JSON Lines."""
    if lines is None:
        return "markdown"
    for raw in lines:
        if not raw.strip():
            continue
        try:
            first = json.loads(raw)
        except ValueError:
            return "jsonl"  # parse_lines reports the line
        if isinstance(first, dict) and first.get("type") in MCP_TYPES:
            return "mcp-memory"
        return "jsonl"
    return "jsonl"


def read_source(
    source: str,
    *,
    format: str = "auto",
    kind: str | None = None,
    scope: str | None = None,
    progress: Counter | None = None,
    sources: list[SourceImport] | None = None,
    entities: list[Entity] | None = None,
) -> list[tuple[str, Record]]:
    """Every record ``source`` holds (a file, ``-`` for stdin, or a folder), validated.
    ``progress(step, total)`` is called as lines or notes are read."""
    if format not in ("auto", *FORMATS):
        raise InvalidInput(
            f"format: must be auto or one of {', '.join(FORMATS)}; got {format!r}",
            code="invalid_field",
        )
    folder = source != "-" and os.path.isdir(source)
    if format == "markdown" and not folder:
        raise InvalidInput(
            f"file: {source} is not a folder; --format markdown reads a folder of notes",
            code="invalid_file",
        )
    lines = None if folder else read_import_source(source)
    chosen = detect_format(source, lines) if format == "auto" else format
    if chosen != "markdown" and (kind is not None or scope is not None):
        raise InvalidInput(
            "--kind and --scope apply to markdown notes only; the other formats name them "
            "per record",
            code="usage_error",
        )
    if lines is None:
        if chosen != "markdown":
            raise InvalidInput(
                f"file: {source} is a folder; only --format markdown reads a folder",
                code="invalid_file",
            )
        notes = note_files(source)
        return read_notes(
            source,
            kind or DEFAULT_NOTE_KIND,
            scope or DEFAULT_SCOPE,
            _of(progress, len(notes)),
            notes,
        )
    if chosen == "mcp-memory":
        return read_mcp_memory(lines, _of(progress, len(lines)))
    parsed = parse_lines(lines, _of(progress, len(lines)), sources, entities)
    return [(f"line {n}", record) for n, record in parsed]


def _of(progress: Counter | None, total: int) -> Progress | None:
    return None if progress is None else (lambda step: progress(step, total))


# ---------------------------------------------------------------------------- MCP memory


def entity_scope(name: str) -> str:
    """``entity:<name>``, the name's whitespace runs turned into ``_`` (a scope has none), and
    a ``*`` or a leading ``:`` likewise (a scope pattern would read them)."""
    slug = "_".join(name.split()).replace("*", "_")
    if slug.startswith(":"):
        slug = "_" + slug[1:]
    return f"entity:{slug}"


def read_mcp_memory(
    lines: Iterable[bytes | str], progress: Progress | None = None
) -> list[tuple[str, Record]]:
    """The MCP reference memory server's ``memory.json`` (JSON Lines of entities and relations).

    - ``{"type": "entity", "name", "entityType", "observations": [...]}``: one ``observation``
      record per observation, scoped ``entity:<name>``, and one ``fact`` record
      "<name> is an entity of type <entityType>." in the same scope.
    - ``{"type": "relation", "from", "to", "relationType"}``: one ``fact`` record
      "<from> <relationType> <to>", scoped ``entity:<from>``.
    """
    found: list[tuple[str, Record]] = []
    for number, item in json_lines(lines, progress):
        if not isinstance(item, dict) or item.get("type") not in MCP_TYPES:
            raise _bad(number, "type: must be 'entity' or 'relation'", "type")
        where = f"line {number}"
        if item["type"] == "entity":
            name = _text(item, "name", number)
            scope = entity_scope(name)
            entity_type = _text(item, "entityType", number)
            observations = item.get("observations", [])
            if not isinstance(observations, list):
                raise _bad(number, "observations: must be a list of strings", "observations")
            found.append(
                (where, _new(number, "fact", scope, f"{name} is an entity of type {entity_type}."))
            )
            for i, observation in enumerate(observations):
                if not isinstance(observation, str):
                    raise _bad(number, f"observations[{i}]: must be a string", "observations")
                found.append((where, _new(number, "observation", scope, observation)))
        else:
            source, target = _text(item, "from", number), _text(item, "to", number)
            relation = _text(item, "relationType", number)
            found.append(
                (where, _new(number, "fact", entity_scope(source), f"{source} {relation} {target}"))
            )
    return found


def _text(item: dict[str, Any], key: str, number: int) -> str:
    value = item.get(key)
    if not isinstance(value, str) or not value.strip():
        raise _bad(number, f"{key}: must be a non-empty string", key)
    return value


def _new(number: int, kind: str, scope: str, content: str) -> Record:
    try:
        return Record.new(kind=kind, content=content, scope=scope)
    except ValidationError as err:
        raise _bad(number, err.reason, err.field, err.code) from None


def _bad(
    number: int, message: str, field: str | None = None, code: str | None = None
) -> ValidationError:
    return ValidationError(f"line {number}: {message}", field=field, code=code)


# ---------------------------------------------------------------------------- markdown notes


def note_files(folder: str) -> list[str]:
    """The notes under ``folder``: ``*.md`` and ``*.markdown`` files, relative paths in sorted
    order, skipping hidden files and folders (``.git``, ``.obsidian``) and symlinks."""
    found = []
    for top, dirs, files in os.walk(folder):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        for name in files:
            path = os.path.join(top, name)
            if name.startswith(".") or not name.endswith(NOTE_SUFFIXES) or os.path.islink(path):
                continue
            found.append(os.path.relpath(path, folder).replace(os.sep, "/"))
    return sorted(found)


def note_body(text: str) -> str:
    """A note's text without a leading YAML front matter block (``---`` ... ``---``)."""
    lines = text.splitlines()
    if lines and lines[0].strip() == "---":
        for i in range(1, len(lines)):
            if lines[i].strip() in ("---", "..."):
                return "\n".join(lines[i + 1 :]).strip()
    return text.strip()


def read_notes(
    folder: str,
    kind: str,
    scope: str,
    progress: Progress | None = None,
    notes: list[str] | None = None,
) -> list[tuple[str, Record]]:
    """One record per note: its text (front matter left out) as the content, ``kind`` and
    ``scope`` as given, and ``note:<relative path>`` as its source ref. Empty notes are left
    out; a note that is not UTF-8 or too large for a record is an error naming it."""
    found: list[tuple[str, Record]] = []
    for relative in note_files(folder) if notes is None else notes:
        if progress:
            progress(1)
        path = os.path.join(folder, relative)
        try:
            if os.path.getsize(path) > MAX_FILE_BYTES:
                raise ValidationError(
                    f"{relative}: is larger than a record may be ({MAX_FILE_BYTES} bytes)",
                    field="content",
                )
            with open(path, "rb") as handle:
                data = handle.read()
        except OSError as err:
            raise InvalidInput(
                f"file: cannot read {relative}: {err.strerror}", code="invalid_file"
            ) from None
        try:
            body = note_body(data.decode("utf-8"))
        except UnicodeDecodeError as err:
            raise ValidationError(
                f"{relative}: is not valid UTF-8 (byte {err.start})", field="content"
            ) from None
        if not body:
            continue
        try:
            record = Record.new(
                kind=kind, content=body, scope=scope, source_refs=(f"note:{relative}",)
            )
        except ValidationError as err:
            raise ValidationError(
                f"{relative}: {err.reason}", field=err.field, code=err.code
            ) from None
        found.append((relative, record))
    return found
