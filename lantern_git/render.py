"""Everything lantern prints, in one module: a JSON document, or text for people.

A command's result is a library object with a ``to_dict`` (a record, a hit, a history, a
report): ``--json`` writes that dict, and the MCP server returns the same dict without coming
here. The text for people is made by the functions below, one per kind of result, so the CLI's
commands only parse, call the library and hand the result over.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from collections.abc import Callable, Iterable
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

from .errors import LanternError

if TYPE_CHECKING:
    from .checker import CheckReport, HandCommit
    from .history import OperationLog, RecordHistory
    from .index.search import RefreshReport
    from .query import Hit
    from .record import Record
    from .store import InitResult
    from .transfer import ImportResult


def to_jsonable(value: Any) -> Any:
    """Results become their ``to_dict``; lists and dicts of them, lists and dicts of those."""
    if hasattr(value, "to_dict"):
        return value.to_dict()
    if isinstance(value, (list, tuple)):
        return [to_jsonable(v) for v in value]
    if isinstance(value, dict):
        return {k: to_jsonable(v) for k, v in value.items()}
    return value


def dumps(value: Any) -> str:
    """One JSON document on one line, non-ASCII kept as it is."""
    return json.dumps(to_jsonable(value), ensure_ascii=False)


def emit(value: Any, as_json: bool, text: Callable[[Any], Iterable[str]]) -> None:
    """Write the result of a command to stdout: exactly one JSON document, or text lines."""
    if as_json:
        sys.stdout.write(dumps(value) + "\n")
        return
    for line in text(value):
        sys.stdout.write(line + "\n")


def error(err: LanternError | Exception, as_json: bool, code: str | None = None) -> None:
    """An error on stderr: ``Error: ...``, or the contract's JSON error object."""
    if isinstance(err, LanternError):
        code, message = err.code, err.message
    else:
        message = str(err)
    if as_json:
        payload = {"error": {"code": code or "error", "message": message}}
        sys.stderr.write(json.dumps(payload, ensure_ascii=False) + "\n")
    else:
        sys.stderr.write(f"Error: {message}\n")


# ---------------------------------------------------------------------------- text


def terminal_width() -> int:
    """The terminal's columns; 120 when writing to a pipe, so scripts see stable lines."""
    if "COLUMNS" in os.environ or sys.stdout.isatty():
        return max(40, shutil.get_terminal_size((100, 24)).columns)
    return 120


def when(stamp: int | None) -> str:
    """Unix seconds as ``YYYY-MM-DD HH:MM`` in UTC, or ``-``."""
    if stamp is None:
        return "-"
    return datetime.fromtimestamp(stamp, timezone.utc).strftime("%Y-%m-%d %H:%M")


def truncate(text: str, width: int) -> str:
    """``text`` on one line, whitespace collapsed, cut to ``width`` characters with an ellipsis.

    The one shortener for every text output (table cells, history values, sync fields).
    """
    flat = " ".join(text.split())
    if len(flat) <= width:
        return flat
    return flat[: max(0, width - 1)] + "…"


def value_text(value: Any, width: int = 60, absent: str = "(none)") -> str:
    """A field's value on one line: a list as ``[a, b]``, a missing value as ``absent``."""
    if value is None:
        return absent
    if isinstance(value, list):
        value = "[" + ", ".join(str(v) for v in value) + "]"
    return truncate(str(value), width)


class ShortIds:
    """Shortest unambiguous id prefixes (at least 7), like git's abbreviated hashes."""

    def __init__(self, root: str | None, minimum: int = 7) -> None:
        self.root = root
        self.minimum = minimum
        self._shards: dict[str, dict[str, int]] = {}

    def __call__(self, record_id: str) -> str:
        shard = record_id[:2]
        lengths = self._shards.get(shard)
        if lengths is None:
            lengths = self._shards[shard] = self._lengths(shard)
        return record_id[: max(self.minimum, lengths.get(record_id, self.minimum))]

    def _lengths(self, shard: str) -> dict[str, int]:
        from .recordfile import MEMORY_DIR, RECORD_SUFFIX

        try:
            names = os.listdir(os.path.join(self.root or "", MEMORY_DIR, shard))
        except OSError:
            return {}
        stems = (n.removesuffix(RECORD_SUFFIX) for n in names if n.endswith(RECORD_SUFFIX))
        ids = sorted(stem for stem in stems if len(stem) == 16)
        lengths: dict[str, int] = {}
        for i, current in enumerate(ids):
            need = 1
            for j in (i - 1, i + 1):
                if 0 <= j < len(ids):
                    need = max(need, _common_prefix(current, ids[j]) + 1)
            lengths[current] = min(16, need)
        return lengths


def _common_prefix(a: str, b: str) -> int:
    n = 0
    for x, y in zip(a, b):
        if x != y:
            break
        n += 1
    return n


# ---------------------------------------------------------------------------- records


def record_lines(record: Record) -> list[str]:
    """``memory show``: every field that has a value, then the content."""
    data = record.to_dict()
    content = data.pop("content")
    lines = []
    for key, value in data.items():
        if value is None or value == []:
            continue
        if key in ("created_at", "updated_at", "expires_at"):
            value = f"{value} ({when(value)} UTC)"
        elif key == "source_refs":
            value = ", ".join(value)
        lines.append(f"{key + ':':<15}{value}")
    lines.append("")
    lines.extend(content.splitlines())
    return lines


def write_line(verb: str, record: Record, short: ShortIds) -> list[str]:
    """What a write did, in one line: ``added 61f4c33  Ana prefers short answers.``"""
    return [f"{verb} {short(record.id)}  {truncate(record.content, terminal_width() - 20)}"]


def emit_record(
    record: Record,
    as_json: bool,
    root: str | None,
    verb: str | Callable[[ShortIds], str] | None = None,
) -> None:
    """A record a command wrote or showed: its object, else a :func:`write_line` for ``verb``
    (which may need the id shortener, as supersede's does), or every field without one."""
    short = ShortIds(root)
    if callable(verb):
        verb = verb(short)
    if verb is None:
        emit(record, as_json, record_lines)
    else:
        emit(record, as_json, lambda r: write_line(verb, r, short))


def emit_records(records: list[Record], as_json: bool, root: str | None) -> None:
    """``memory list``: an array of record objects, or a :func:`table`."""
    short = ShortIds(root)
    emit(records, as_json, lambda rs: table(rs, short))


def emit_hits(hits: list[Hit], as_json: bool, root: str | None) -> None:
    """``memory search``: record objects with ``"score"``, or a table with a score column."""
    short = ShortIds(root)
    emit(hits, as_json, lambda hs: table([h.record for h in hs], short, [h.score for h in hs]))


def table(records: list[Record], short: ShortIds, scores: list[float] | None = None) -> list[str]:
    """Aligned columns; the content fills what is left of the terminal's width."""
    if not records:
        return []
    rows = []
    for i, record in enumerate(records):
        row = [
            short(record.id),
            record.kind,
            record.scope,
            record.status,
            str(record.priority),
            str(record.urgency),
            when(record.updated_at)[:10],
        ]
        if scores is not None:
            row.insert(0, f"{scores[i]:.2f}")
        rows.append(row)
    header = ["ID", "KIND", "SCOPE", "STATUS", "PRI", "URG", "UPDATED"]
    if scores is not None:
        header.insert(0, "SCORE")
    widths = [max(len(r[c]) for r in [header, *rows]) for c in range(len(header))]
    numeric = {header.index("PRI"), header.index("URG")}
    if scores is not None:
        numeric.add(0)

    def fmt(row: list[str]) -> str:
        cells = [
            cell.rjust(widths[c]) if c in numeric else cell.ljust(widths[c])
            for c, cell in enumerate(row)
        ]
        return "  ".join(cells)

    used = sum(widths) + 2 * len(widths)
    room = max(20, terminal_width() - used)
    out = [fmt(header) + "  CONTENT"]
    for row, record in zip(rows, records):
        out.append(fmt(row) + "  " + truncate(record.content, room))
    return out


# ---------------------------------------------------------------------------- the store


def init_document(result: InitResult) -> dict[str, Any]:
    """``lantern init --json``."""
    return {
        "path": result.path,
        "created_repository": result.created_repo,
        "committed": result.committed,
        "commit": result.commit,
        "registered_merge_driver": result.registered_merge_driver,
    }


def init_lines(value: dict[str, Any]) -> list[str]:
    if not value["committed"]:
        if value["registered_merge_driver"]:
            # A fresh clone: its files are a store already, but git config is not cloned.
            return [f"{value['path']} is a lantern store; registered its record merge driver"]
        return [f"{value['path']} is already a lantern store"]
    return [f"Initialized lantern store in {value['path']}"]


def status_lines(info: dict[str, Any]) -> list[str]:
    """``lantern status``: from the dict ``Store.status()`` returns."""
    if not info["exists"]:
        return [f"store:    {info['path']} (not created yet; the first write creates it)"]
    lines = [
        f"store:    {info['path']}",
        f"format:   {info['format']}",
        f"records:  {info['records']}",
    ]
    if info["by_status"]:
        lines.append("  " + ", ".join(f"{k} {n}" for k, n in info["by_status"].items()))
    if info["by_kind"]:
        lines.append("  " + ", ".join(f"{k} {n}" for k, n in info["by_kind"].items()))
    if info["broken_files"]:
        lines.append(f"broken:   {info['broken_files']} file(s); run lantern check")
    lines.append(f"index:    {info['index']}")
    branch = info["branch"] or "(detached HEAD)"
    if info["upstream"]:
        branch += f" -> {info['upstream']} (ahead {info['ahead']}, behind {info['behind']})"
    lines.append(f"branch:   {branch}")
    return lines


def rebuild_document(report: RefreshReport) -> dict[str, int]:
    """``lantern index rebuild --json``."""
    return {"indexed": report.updated, "skipped": len(report.broken)}


def rebuild_lines(value: dict[str, int]) -> list[str]:
    skipped = f", skipped {value['skipped']}" if value["skipped"] else ""
    return [f"indexed {value['indexed']} records{skipped}"]


# ---------------------------------------------------------------------------- history


def history_lines(history: RecordHistory) -> list[str]:
    """``memory history``: each commit, then the fields it changed as ``old -> new``."""
    lines: list[str] = []
    for entry in history.entries:
        op = entry.op or "(not a lantern commit)"
        actor = f" by {entry.actor}" if entry.actor else ""
        lines.append(f"commit {entry.commit[:10]}  {when(entry.time)} UTC  {entry.author}")
        lines.append(f"    {op}{actor}: {entry.summary}")
        if entry.reason:
            lines.append(f"    reason: {entry.reason}")
        if entry.problem:
            lines.append(f"    ({entry.problem})")
        if entry.changes and all(c.old is None for c in entry.changes):
            lines.append("    (created)")
        else:
            lines.extend(
                f"    {c.field}: {value_text(c.old)} -> {value_text(c.new)}" for c in entry.changes
            )
        lines.append("")
    return lines[:-1]


def log_lines(log: OperationLog) -> list[str]:
    """``lantern log``: one line per commit, its reason on the next."""
    lines = []
    for entry in log.entries:
        records = ", ".join(r[:10] for r in entry.records[:3])
        if len(entry.records) > 3:
            records += f" (+{len(entry.records) - 3})"
        op = entry.op or "-"
        lines.append(
            f"{entry.commit[:10]}  {when(entry.time)}  {op:<9} {entry.actor or '-':<5} "
            f"{entry.summary}" + (f"  [{records}]" if records and op != "import" else "")
        )
        if entry.reason:
            lines.append(f"{'':12}reason: {entry.reason}")
    return lines


# ---------------------------------------------------------------------------- files


def check_lines(report: CheckReport) -> list[str]:
    """``lantern check``: one ``path:line: message`` per problem, nothing when all is well."""
    return [str(problem) for problem in report.problems]


def check_failure(report: CheckReport) -> str:
    """The closing line on stderr when ``lantern check`` found problems."""
    count = len(report.problems)
    return f"Error: {count} problem{'s' if count != 1 else ''} in record files"


def commit_lines(result: HandCommit) -> list[str]:
    """``lantern commit``: the commit made for hand edits, or that there was nothing to do."""
    if result.commit is None:
        return ["nothing to commit: no record file differs from HEAD"]
    count = len(result.records)
    return [
        f"committed {count} record{'s' if count != 1 else ''} "
        f"as {result.commit[:10]}: " + ", ".join(r[:10] for r in result.records)
    ]


def import_lines(result: ImportResult) -> list[str]:
    return [f"imported {result.imported}, skipped {result.skipped} (already present)"]


# ---------------------------------------------------------------------------- sync


def sync_lines(value: dict[str, Any]) -> list[str]:
    """``lantern sync``, from the report's JSON document (``SyncReport.to_dict()``)."""
    lines: list[str] = []
    where = value["remote"] + ("/" + value["remote_branch"] if "/" not in value["remote"] else "")
    records = value["records"]
    if value["remote_head"] is None:
        lines.append(f"{where} is empty")
    elif value["fast_forward"]:
        lines.append(f"fast-forwarded to {where} ({_commits(value['incoming_commits'])})")
    elif value["merge_commits"]:
        lines.append(
            f"merged {where} ({_commits(value['incoming_commits'])}) "
            f"in {value['merge_commits'][-1][:7]}"
        )
    else:
        lines.append(f"nothing new from {where}")
    moved = [f"{len(records[k])} {k}" for k in ("added", "changed", "removed") if records[k]]
    if moved:
        lines.append("records: " + ", ".join(moved))
    for item in value["merged"]:
        head = f"changed on both sides: {item['id']}"
        if item["note"]:
            head += f" ({item['note']})"
        lines.append(head)
        for change in item["fields"]:
            local, remote, merged = (
                value_text(change[side], 50, absent="(absent)")
                for side in ("local", "remote", "merged")
            )
            lines.append(f"  {change['field']}: local {local}, remote {remote} -> {merged}")
    for item in value.get("merged_sources", ()):
        notes = f" ({', '.join(item['notes'])})" if item["notes"] else ""
        lines.append(f"source changed on both sides: {item['id']}{notes}")
    if value["pushed"]:
        lines.append(
            f"pushed {_commits(value['pushed_commits'])} to {where}"
            + (" (upstream set)" if value["set_upstream"] else "")
        )
    elif value["remote_head"] is not None and value["head_after"] == value["remote_head"]:
        lines.append("up to date")
    return lines


def _commits(count: int) -> str:
    return f"{count} commit" + ("" if count == 1 else "s")
