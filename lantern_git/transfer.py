"""``lantern export`` and ``lantern import``: every record as JSON Lines, and back.

Import validates the whole batch before it writes anything, then writes every new record in
one commit, so a bad line at the end of a large file leaves the store exactly as it was.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

from .errors import InvalidInput, ValidationError
from .record import ID_RE, Record, record_path

# Above this many new records (and more than a quarter of the store), one index rebuild is
# cheaper than updating the index record by record.
REBUILD_THRESHOLD = 1000


def export_records(root: str, warn: Callable[[str], None] | None = None) -> Iterator[Record]:
    """Every record file of the working tree, any status, in id order.

    A file that does not parse is skipped with a warning naming it; ``lantern check`` says why.
    """
    from .checker import read_file, validate_file

    memory = os.path.join(root, "memory")
    try:
        shards = sorted(
            name
            for name in os.listdir(memory)
            if len(name) == 2 and os.path.isdir(os.path.join(memory, name))
        )
    except FileNotFoundError:
        return
    for shard in shards:
        names = sorted(
            n
            for n in os.listdir(os.path.join(memory, shard))
            if n.endswith(".md") and ID_RE.fullmatch(n[:-3]) and n.startswith(shard)
        )
        for name in names:
            path = f"memory/{shard}/{name}"
            data, problem = read_file(root, path)
            record, problems = validate_file(path, data) if problem is None else (None, [problem])
            if record is not None and not problems:
                yield record
            elif warn:
                warn(f"warning: skipped {problems[0]}")


@dataclass
class ImportResult:
    imported: int
    skipped: int
    commit: str | None
    ids: list[str]

    def to_dict(self) -> dict:
        return {"imported": self.imported, "skipped": self.skipped, "commit": self.commit}


def parse_lines(
    lines: Iterable[str | bytes], progress: Callable[[int], None] | None = None
) -> list[tuple[int, Record]]:
    """(line number, record) for each non-blank line; the first bad line raises, located."""
    parsed = []
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
            data = json.loads(raw)
        except ValueError as err:
            raise _bad(number, f"is not valid JSON: {err.msg} (column {err.colno})") from None
        try:
            record = Record.from_dict(data)
        except ValidationError as err:
            raise _bad(number, err.reason, err.field, err.code) from None
        # No check that id == compute_id(kind, scope, content): a record keeps its id when its
        # content is edited later, and such records must move between stores unchanged.
        parsed.append((number, record))
    return parsed


def _bad(number: int, message: str, field: str | None = None, code: str | None = None):
    return ValidationError(f"line {number}: {message}", field=field, code=code)


def import_records(
    store,
    lines: Iterable[str | bytes],
    *,
    reason: str | None = None,
    progress: Callable[[int], None] | None = None,
) -> ImportResult:
    """Add every record of a JSON Lines batch whose id is new, in one commit.

    Records whose id already exists (in the store, or earlier in the batch) are skipped, so
    importing the same file twice is a no-op. Any bad line refuses the whole batch.
    """
    parsed = parse_lines(lines, progress)
    with store._writing():
        files: dict[str, bytes] = {}
        ids: list[str] = []
        skipped = 0
        for _, record in parsed:
            path = record_path(record.id)
            if path in files or os.path.lexists(os.path.join(store.root, path)):
                skipped += 1
                continue
            files[path] = record.to_markdown().encode("utf-8")
            ids.append(record.id)
        if not files:
            return ImportResult(0, skipped, None, [])
        count = len(ids)
        summary = f"import {count} record{'s' if count != 1 else ''}"
        existing = _count_records(store.root)
        rebuild = count > REBUILD_THRESHOLD and count * 4 > existing
        commit = store._commit(files, summary, "import", ids, reason=reason, rebuild_index=rebuild)
    return ImportResult(count, skipped, commit, ids)


def _count_records(root: str) -> int:
    memory = os.path.join(root, "memory")
    try:
        shards = os.listdir(memory)
    except FileNotFoundError:
        return 0
    total = 0
    for shard in shards:
        try:
            total += len(os.listdir(os.path.join(memory, shard)))
        except OSError:
            pass
    return total


def read_import_source(source: str) -> list[bytes]:
    """The lines of FILE, or of stdin for ``-``."""
    import sys

    if source == "-":
        return sys.stdin.buffer.read().splitlines()
    try:
        with open(source, "rb") as handle:
            return handle.read().splitlines()
    except OSError as err:
        raise InvalidInput(
            f"file: cannot read {source}: {err.strerror}", code="invalid_file"
        ) from None
