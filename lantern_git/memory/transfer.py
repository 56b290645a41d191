"""``lantern export`` and ``lantern import``: every record as JSON Lines, and back.

Import validates the whole batch before it writes anything, then writes every new record in
one commit, so a bad line at the end of a large file leaves the store exactly as it was.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..core.fields import DEFAULT_SCOPE
from ..errors import InvalidInput, ValidationError
from ..model.entity_keys import entity_path
from ..model.record import Record, compute_id
from ..model.record_file import Problem, read_record_file, record_files, record_path
from ..model.source import SourceManifest

if TYPE_CHECKING:
    from ..model.entity import Entity
    from ..workspace.transaction import WriteTransaction

# Above this many new records (and more than a quarter of the store), one index rebuild is
# cheaper than updating the index record by record.
REBUILD_THRESHOLD = 1000


def rebuilds_index(new: int, existing: Callable[[], int]) -> bool:
    """Whether an import of ``new`` records into a store of ``existing()`` ones rebuilds the
    search index once rather than telling it each file. Either way the index is the same;
    only the time differs, so the rule is asked here, at its bounds. The store is counted
    (a walk of every record file) only past the threshold: a small import never walks it."""
    return new > REBUILD_THRESHOLD and new * 4 > existing()


@dataclass(frozen=True)
class SourceImport:
    """A source as an export line carries it: ``{"source": <manifest>, "ext", "body"}``."""

    manifest: SourceManifest
    ext: str
    body: bytes

    def to_dict(self) -> dict[str, Any]:
        return {
            "source": self.manifest.to_dict(),
            "ext": self.ext,
            "body": self.body.decode("utf-8"),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> SourceImport:
        from ..model.source import body_path, encode_body
        from ..model.source_file import describe

        unknown = sorted(set(data) - {"source", "ext", "body"})
        if unknown:
            raise ValidationError(f"a source line has unknown keys: {', '.join(unknown)}")
        if not isinstance(data.get("source"), dict):
            raise ValidationError("source: must be the source's manifest object", field="source")
        ext, body = data.get("ext"), data.get("body")
        if not isinstance(body, str):
            raise ValidationError("body: must be the source's text", field="body")
        if not isinstance(ext, str):
            raise ValidationError("ext: must be the body file's extension", field="ext")
        data_bytes = encode_body(body, "body")
        manifest = SourceManifest.from_dict(data["source"])
        body_path(manifest.id, ext)  # the extension is checked where it names a file
        # lines, bytes and sha256 describe the body: taken from it, never from the line.
        return cls(manifest.evolve(**describe(data_bytes)), ext, data_bytes)


class RecordExport:
    """Every record file of the working tree, any status, in id order, as records.

    A file that does not parse is skipped with a warning naming it, and kept in ``skipped``:
    a backup that left records out must not pass for a whole one (``lantern export`` exits
    non-zero then); ``lantern check`` says what is wrong with each.
    """

    def __init__(self, root: str | None, warn: Callable[[str], None] | None = None):
        self.root = root
        self.warn = warn
        self.skipped: list[Problem] = []

    def __iter__(self) -> Iterator[Record]:
        if self.root is None:
            return
        for path in sorted(p for p, _ in record_files(self.root)):
            _, record, problem = read_record_file(self.root, path)
            if record is not None:
                yield record
            elif problem is not None:
                self.skipped.append(problem)
                if self.warn:
                    self.warn(f"warning: skipped {problem}")

    def entities(self) -> Iterator[Entity]:
        """Every entity file of the working tree, in path order; one that cannot be read is
        skipped and kept in ``skipped``, as a record file is."""
        from ..model.entity import iter_entity_files

        if self.root is None:
            return
        for _, entity, problem in iter_entity_files(self.root):
            if entity is not None:
                yield entity
            elif problem is not None:
                self.skipped.append(problem)
                if self.warn:
                    self.warn(f"warning: skipped {problem}")

    def sources(self) -> Iterator[SourceImport]:
        """Every source of the working tree, current version, in id order; one that cannot be
        read is skipped and kept in ``skipped``, as a record file is."""
        from ..model.source_file import iter_sources

        if self.root is None:
            return
        for _, found, problem in iter_sources(self.root):
            if found is not None:
                yield SourceImport(found.manifest, found.ext, found.body)
            elif problem is not None:
                self.skipped.append(problem)
                if self.warn:
                    self.warn(f"warning: skipped {problem}")


@dataclass
class ImportResult:
    imported: int
    skipped: int
    commit: str | None
    ids: list[str]
    sources: list[str] = field(default_factory=list)
    entities: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "imported": self.imported,
            "skipped": self.skipped,
            "commit": self.commit,
            "sources": self.sources,
            "entities": self.entities,
        }


def parse_lines(
    lines: Iterable[str | bytes],
    progress: Callable[[int], None] | None = None,
    sources: list[SourceImport] | None = None,
    entities: list[Entity] | None = None,
) -> list[tuple[int, Record]]:
    """(line number, record) for each non-blank line; the first bad line raises, located.

    A source line (an export's ``{"source": ...}``) goes to ``sources``, an entity line
    (``{"entity": ...}``) to ``entities``."""
    parsed = []
    for number, data in json_lines(lines, progress):
        if isinstance(data, dict) and "entity" in data and entities is not None:
            from ..model.entity import Entity

            try:
                if set(data) != {"entity"}:
                    raise ValidationError("an entity line has one key, entity", field="entity")
                entities.append(Entity.from_dict(data["entity"]))
            except ValidationError as err:
                raise _bad(number, err.reason, err.field, err.code) from None
            continue
        if isinstance(data, dict) and "source" in data and sources is not None:
            try:
                sources.append(SourceImport.from_dict(data))
            except ValidationError as err:
                raise _bad(number, err.reason, err.field, err.code) from None
            continue
        try:
            if isinstance(data, dict) and "id" not in data:
                data = with_computed_id(data)
            record = Record.from_dict(data)
        except ValidationError as err:
            raise _bad(number, err.reason, err.field, err.code) from None
        # No check that a given id == compute_id(kind, scope, content): a record keeps its id
        # when its content is edited later, and such records must move between stores unchanged.
        parsed.append((number, record))
    return parsed


def json_lines(
    lines: Iterable[str | bytes], progress: Callable[[int], None] | None = None
) -> Iterator[tuple[int, Any]]:
    """(line number, parsed JSON) for each non-blank line of a JSON Lines file; the first line
    that is not UTF-8 or not JSON raises, naming its number."""
    for number, raw in enumerate(lines, start=1):
        if progress:
            progress(1)
        if isinstance(raw, bytes):
            try:
                raw = raw.decode("utf-8")
            except UnicodeDecodeError:
                raise _bad(number, "is not valid UTF-8") from None
        if not raw.strip():
            continue
        try:
            yield number, json.loads(raw)
        except json.JSONDecodeError as err:
            raise _bad(number, f"is not valid JSON: {err.msg} (column {err.colno})") from None
        except ValueError as err:  # a number too long to convert, say
            raise _bad(number, f"is not valid JSON: {err}") from None


def with_computed_id(data: dict[str, Any]) -> dict[str, Any]:
    """A record object without an ``id`` gets the one ``add`` would give it (from kind, scope
    and content), so records written by hand or by another tool import as they would be added."""
    for name in ("kind", "content"):
        if name not in data:
            raise ValidationError(f"{name}: is required", field=name)
    kind, content = data["kind"], data["content"]
    scope = data.get("scope") or DEFAULT_SCOPE
    if not all(isinstance(value, str) for value in (kind, content, scope)):
        return data  # from_dict names the field of the wrong type
    return {**data, "id": compute_id(kind, scope, content)}


def _bad(
    number: int, message: str, field: str | None = None, code: str | None = None
) -> ValidationError:
    return ValidationError(f"line {number}: {message}", field=field, code=code)


def import_records(
    tx: WriteTransaction,
    records: Iterable[Record],
    *,
    reason: str | None = None,
    sources: Iterable[SourceImport] = (),
    entities: Iterable[Entity] = (),
) -> ImportResult:
    """Add every parsed record whose id is new, and every source the store lacks, in one
    commit.

    Records whose id already exists (in the store, or earlier in the batch) are skipped, so
    importing the same file twice is a no-op; so are sources already present.
    """
    from ..model.source import body_path, manifest_path
    from ..model.source_file import source_ids

    files: dict[str, bytes | None] = {}
    present = set(source_ids(tx.root))
    for source_id in tx.pending_sources():
        # Review mode: as the review branch has them (added there, or removed there).
        if tx.read_pending_source(source_id) is None:
            present.discard(source_id)
        else:
            present.add(source_id)
    new_entities: list[str] = []
    for entity in entities:
        path = entity_path(entity.key)
        seen = tx.committed_blob(path) if path in tx.pending() else None
        if path in files or seen is not None or os.path.lexists(os.path.join(tx.root, path)):
            continue
        files[path] = entity.to_markdown().encode("utf-8")
        new_entities.append(entity.key)
    new_sources: list[str] = []
    for item in sources:
        source_id = item.manifest.id
        if source_id in present or source_id in new_sources:
            continue
        files[body_path(source_id, item.ext)] = item.body
        files[manifest_path(source_id)] = item.manifest.to_yaml()
        new_sources.append(source_id)
    ids: list[str] = []
    skipped = 0
    for record in records:
        path = record_path(record.id)
        if path in files or tx.exists(record.id):
            skipped += 1
            continue
        files[path] = record.to_markdown().encode("utf-8")
        ids.append(record.id)
    if not files:
        return ImportResult(0, skipped, None, [])
    count = len(ids)
    summary = f"import {count} record{'s' if count != 1 else ''}"
    if new_sources:
        summary += f" and {len(new_sources)} source{'s' if len(new_sources) != 1 else ''}"
    if new_entities:
        summary += f" and {len(new_entities)} entit{'ies' if len(new_entities) != 1 else 'y'}"
    rebuild = rebuilds_index(count, lambda: sum(1 for _ in record_files(tx.root)))
    commit = tx.commit(
        files,
        summary,
        "import",
        ids,
        reason=reason,
        rebuild_index=rebuild,
        sources=new_sources,
        extra_trailers=[f"Lantern-Entity: {key}" for key in new_entities],
    )
    return ImportResult(count, skipped, commit, ids, new_sources, new_entities)


def read_import_source(source: str) -> list[bytes]:
    """The lines of FILE, or of stdin for ``-``."""
    if source == "-":
        return sys.stdin.buffer.read().splitlines()
    try:
        with open(source, "rb") as handle:
            return handle.read().splitlines()
    except OSError as err:
        raise InvalidInput(
            f"file: cannot read {source}: {err.strerror}", code="invalid_file"
        ) from None
