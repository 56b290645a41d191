"""Everything lantern prints, in one module: a JSON document, or text for people.

A command's result is a library object with a ``to_dict`` (a record, a hit, a history, a
report): ``--json`` writes that dict, and the MCP server returns the same dict without coming
here. The text for people is made by the functions below, one per kind of result, so the CLI's
commands only parse, call the library and hand the result over.
"""

from __future__ import annotations

import bisect
import os
import sys
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, NamedTuple

from ..core.hidden import display_lines, hidden_in, reveal
from ..core.timespec import field_time, human_time
from ..errors import LanternError

if TYPE_CHECKING:
    from ..evidence.sources import IngestResult, RefCheck, SourceView, VerifyReport
    from ..index.chunks import ChunkHit
    from ..index.search import RefreshReport
    from ..memory.checker import CheckReport, HandCommit
    from ..memory.history import Change, OperationLog, RecordHistory
    from ..memory.records import Deletion
    from ..memory.revert import RevertResult
    from ..memory.timetravel import RecordDiff
    from ..memory.transfer import ImportResult
    from ..model.record import Record
    from ..model.source import SourceManifest
    from ..review import PendingRecord, ReviewDecision, ReviewList
    from ..store import CloneResult
    from ..workspace.workspace import InitResult


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
    import json  # here, not at the top: `lantern --help` never needs it

    return json.dumps(to_jsonable(value), ensure_ascii=False)


def emit(value: Any, as_json: bool, text: Callable[[Any], Iterable[str]]) -> None:
    """Write the result of a command to stdout: exactly one JSON document, or text lines."""
    if as_json:
        sys.stdout.write(dumps(value) + "\n")
        return
    write_lines(text(value))


def write_lines(lines: Iterable[str], out: Any = None) -> None:
    """Text for people, the one way it reaches the terminal: each hidden character (a bidi
    override, ESC, a C1 control: :mod:`lantern_git.core.hidden`) written as ``<U+XXXX>``, so
    that what a person reads is what is stored. JSON, CSV and TSV keep the stored text."""
    out = out or sys.stdout
    for line in lines:
        out.write(reveal(line) + "\n")


def flag(value: Any) -> str:
    """`` [hidden characters: U+202E]`` after a record or change that holds any (shown as
    ``<U+202E>`` in its text), else nothing."""
    found = hidden_in(value)
    return f"  [hidden characters: {', '.join(found)}]" if found else ""


def emit_write(
    value: Any, as_json: bool, text: Callable[[Any], Iterable[str]], *, pending: bool
) -> None:
    """A write's result, as :func:`emit`; ``pending`` (the write went to a review branch,
    docs/review.md): each JSON object gets ``"pending": true`` and the first line says
    ``<verb> (pending review) ...``, as a record write's does."""
    if not pending:
        emit(value, as_json, text)
        return
    if as_json:
        data = to_jsonable(value)
        if isinstance(data, list):
            data = [{**item, "pending": True} for item in data]
        else:
            data = {**data, "pending": True}
        emit(data, True, text)
        return
    lines = list(text(value))
    if lines:
        verb, _, rest = lines[0].partition(" ")
        lines[0] = f"{verb} (pending review) {rest}".rstrip()
    emit(lines, False, lambda shown: shown)


def error(err: LanternError | Exception, as_json: bool, code: str | None = None) -> None:
    """An error on stderr: ``Error: ...``, or the contract's JSON error object."""
    if isinstance(err, LanternError):
        code, message = err.code, err.message
    else:
        message = str(err)
    if as_json:
        payload = {"error": {"code": code or "error", "message": message}}
        sys.stderr.write(dumps(payload) + "\n")
    else:
        sys.stderr.write(f"Error: {reveal(message)}\n")


def note(message: str) -> None:
    """A word to the person at the terminal, on stderr (text mode only: stdout stays the
    answer, and a ``--json`` caller reads its stderr for errors alone)."""
    sys.stderr.write(f"lantern: {message}\n")


# ---------------------------------------------------------------------------- text


def terminal_width() -> int:
    """The terminal's columns; 120 when writing to a pipe, so scripts see stable lines."""
    if "COLUMNS" in os.environ or sys.stdout.isatty():
        return max(40, terminal_columns(100))
    return 120


def terminal_columns(fallback: int) -> int:
    """``shutil.get_terminal_size((fallback, 24)).columns``, without importing ``shutil``
    (with it come ``bz2``, ``lzma`` and ``zlib``: ~2 ms of a 60 ms ``lantern --help``):
    ``$COLUMNS`` when it is a positive number, else the terminal's, else ``fallback``."""
    try:
        columns = int(os.environ.get("COLUMNS", ""))
    except ValueError:
        columns = 0
    if columns > 0:
        return columns
    stdout = sys.__stdout__
    try:
        return (stdout and os.get_terminal_size(stdout.fileno()).columns) or fallback
    except (AttributeError, ValueError, OSError):
        return fallback


def when(stamp: int | None) -> str:
    """Unix seconds as ISO 8601 in local time with its offset (``2026-12-05T09:01:17+01:00``),
    or ``-``: every time a person reads (:func:`~lantern_git.core.timespec.human_time`)."""
    return human_time(stamp)


def truncate(text: str, width: int) -> str:
    """``text`` on one line, whitespace collapsed, cut to ``width`` characters with an ellipsis.

    The one shortener for every text output (table cells, history values, sync fields). Hidden
    characters are shown (``<U+202E>``) before it measures, so a cut never splits one.
    """
    flat = " ".join(reveal(text).split())
    if len(flat) <= width:
        return flat
    return flat[: max(0, width - 1)] + "…"


def change_text(change: Change, width: int = 60) -> str:
    """One changed field as ``field: old -> new``; a time field's values as dates."""
    old = value_text(field_time(change.field, change.old), width)
    new = value_text(field_time(change.field, change.new), width)
    return f"{change.field}: {old} -> {new}"


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
        # shard -> its file names, sorted; a record's neighbours there decide its prefix
        self._shards: dict[str, list[str]] = {}

    def __call__(self, record_id: str) -> str:
        from ..model.record_file import RECORD_SUFFIX

        shard = record_id[:2]
        names = self._shards.get(shard)
        if names is None:
            names = self._shards[shard] = self._names(shard)
        need = self.minimum
        name = record_id + RECORD_SUFFIX
        at = bisect.bisect_left(names, name)
        if len(record_id) == ID_LENGTH and at < len(names) and names[at] == name:
            # Record files' names sort as their ids do (one length, one suffix), so the ids
            # beside this one are the nearest record file names on either side; other names
            # in the folder are stepped over. Only these two are looked at, not each of the
            # folder's names in Python (~400 a folder at 100k records).
            for step in (-1, 1):
                j = at + step
                while 0 <= j < len(names) and not _is_record_name(names[j], RECORD_SUFFIX):
                    j += step
                if 0 <= j < len(names):
                    need = max(need, _common_prefix(record_id, names[j]) + 1)
        return record_id[: min(ID_LENGTH, need)]

    def _names(self, shard: str) -> list[str]:
        from ..model.record_file import MEMORY_DIR

        try:
            return sorted(os.listdir(os.path.join(self.root or "", MEMORY_DIR, shard)))
        except OSError:
            return []


ID_LENGTH = 16


def _is_record_name(name: str, suffix: str) -> bool:
    return len(name) == ID_LENGTH + len(suffix) and name.endswith(suffix)


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
            value = f"{when(value)} ({value})"
        elif key in ("source_refs", "entities"):
            value = ", ".join(value)
        elif key == "pending":
            value = "yes: awaits review on a review branch (lantern review)"
        lines.append(f"{key + ':':<15}{value}")
    found = hidden_in(record)
    if found:
        lines.append(f"{'hidden:':<15}{', '.join(found)}: characters shown as <U+XXXX>")
    lines.append("")
    lines.extend(display_lines(content))
    return lines


def write_line(verb: str, record: Record, short: ShortIds) -> list[str]:
    """What a write did, in one line: ``added 61f4c33  Ana prefers short answers.``"""
    return [f"{verb} {short(record.id)}  {truncate(record.content, terminal_width() - 20)}"]


def emit_record(
    record: Record,
    as_json: bool,
    root: str | None,
    verb: str | Callable[[ShortIds], str] | None = None,
    *,
    pending: bool = False,
) -> None:
    """A record a command wrote or showed: its object, else a :func:`write_line` for ``verb``
    (which may need the id shortener, as supersede's does), or every field without one.

    ``pending``: the write went to a review branch (docs/review.md): the object gets
    ``"pending": true`` and the line says it awaits review."""
    short = ShortIds(root)
    if callable(verb):
        verb = verb(short)
    if pending and as_json:
        emit(record.to_dict() | {"pending": True}, as_json, record_lines)
    elif verb is None:
        emit(record, as_json, record_lines)
    else:
        shown = f"{verb} (pending review)" if pending else verb
        emit(record, as_json, lambda r: write_line(shown, r, short))


def emit_deletion(
    deletion: Deletion, as_json: bool, root: str | None, *, pending: bool = False
) -> None:
    """``memory delete``: ``{"id", "commit", "record"}``, or ``deleted 61f4c33  Ana ...``;
    ``pending`` (the removal went to a review branch) adds ``"pending": true``."""
    short = ShortIds(root)
    verb = "deleted (pending review)" if pending else "deleted"
    value = deletion.to_dict() | {"pending": True} if pending else deletion
    emit(value, as_json, lambda _: write_line(verb, deletion.record, short))


def emit_existing(
    record: Record, differences: list[tuple[str, Any, Any]], as_json: bool, root: str | None
) -> None:
    """An add of content that is already stored: the record (JSON), or ``exists (STATUS) ID``
    and, when the options given differ from the stored ones, which, and the command that
    changes them."""
    short = ShortIds(root)

    def lines(record: Record) -> list[str]:
        out = write_line(f"exists ({record.status})", record, short)
        if differences:
            named = "; ".join(_difference(*d) for d in differences)
            out.append(f"  stored record differs: {named}")
            out.append(f"  to change it: {update_command(short(record.id), differences)}")
        if record.status != "active":
            out.append(f"  to make it active again: lantern memory restore {short(record.id)}")
        return out

    emit(record, as_json, lines)


def _difference(name: str, given: Any, stored: Any) -> str:
    if name == "source_refs":
        return "source_refs lacks " + ", ".join(repr(ref) for ref in given)
    return f"{name} is {value_text(stored)} (you gave {value_text(given)})"


def update_command(short_id: str, differences: list[tuple[str, Any, Any]]) -> str:
    """The ``lantern memory update`` line that gives a record the values it lacks."""
    import shlex

    words = ["lantern", "memory", "update", short_id]
    for name, given, _ in differences:
        if name == "source_refs":
            for ref in given:
                words += ["--add-source-ref", ref]
        else:
            words += ["--" + name.replace("_", "-"), "none" if given is None else str(given)]
    return shlex.join(words)


# ---------------------------------------------------------------------------- listings

# The output formats of every listing command, as sqlite-utils' output_options gives them.
FORMATS = ("table", "json", "jsonl", "csv", "tsv")
# Content keeps at least this many columns of the table; other columns give way first.
MIN_CONTENT = 40
# A text cell other than content is cut to this width unless --wide is given.
MAX_CELL = 24


# The table's columns for records unless --fields chooses; search adds SCORE in front.
TABLE_FIELDS = ("id", "kind", "scope", "status", "priority", "urgency", "updated_at", "content")


class Output(NamedTuple):
    """How a listing is written: its format, the fields (None: every field, or ``table`` for
    the table), ``--count`` (just the number), ``--wide`` (cells whole, no column left out).
    A named tuple, not a dataclass: ``lantern --help`` then never imports ``dataclasses``."""

    format: str = "table"
    fields: tuple[str, ...] | None = None
    count_only: bool = False
    wide: bool = False
    table: tuple[str, ...] = TABLE_FIELDS

    @property
    def as_json(self) -> bool:
        return self.format == "json"


# The table's columns: header, how a value is shown, right-aligned or not.
_COLUMNS: dict[str, tuple[str, Callable[[Any, ShortIds], str], bool]] = {
    "score": ("SCORE", lambda v, _: "-" if v is None else f"{v:.2f}", True),
    # --include-pending: "*" marks a record as a review branch has it, not accepted yet.
    "pending": ("P", lambda v, _: "*" if v else "", False),
    "id": ("ID", lambda v, short: short(v), False),
    "supersedes_id": ("SUPERSEDES", lambda v, short: short(v) if v else "-", False),
    "priority": ("PRI", lambda v, _: str(v), True),
    "urgency": ("URG", lambda v, _: str(v), True),
    "confidence": ("CONF", lambda v, _: str(v), True),
    "created_at": ("CREATED", lambda v, _: when(v)[:10], False),
    "updated_at": ("UPDATED", lambda v, _: when(v)[:10], False),
    "expires_at": ("EXPIRES", lambda v, _: when(v)[:10], False),
}
# Left out, in this order, while content has less than MIN_CONTENT columns (default columns only).
_GIVE_WAY = ("updated_at", "urgency")


def emit_listing(
    items: Iterable[Any],
    output: Output,
    root: str | None,
    default_table: Callable[[list[Any]], Iterable[str]] | None = None,
) -> None:
    """``memory list`` and ``memory search``, ``source list`` and ``source search``: the one
    rendering path.

    ``items`` have a ``to_dict`` (records, hits, manifests); each becomes one JSON object, JSON
    Lines line, CSV or TSV row, or table row, keeping ``output.fields`` in the order given. A
    listing whose rows are not records gives its own ``default_table`` for the plain table.
    """
    items = list(items)
    plain = output.format == "table" and output.fields is None and not output.count_only
    if default_table is not None and plain:
        write_lines(default_table(items))
        return
    rows = [to_jsonable(item) for item in items]
    if output.count_only:
        emit({"count": len(rows)}, output.as_json, lambda value: [str(value["count"])])
        return
    pending = [bool(row.get("pending")) for row in rows]
    if output.fields is not None:
        rows = [{name: row.get(name) for name in output.fields} for row in rows]
    if any(pending) and output.format not in ("json", "jsonl"):
        # --include-pending found some: every row of a table, CSV or TSV says whether it is
        # pending (JSON keeps "pending": true on the pending objects alone, docs/review.md).
        rows = [{**row, "pending": mark} for row, mark in zip(rows, pending, strict=True)]
    elif any(pending) and output.fields is not None:
        rows = [
            {**row, "pending": True} if mark else row
            for row, mark in zip(rows, pending, strict=True)
        ]
    out = sys.stdout
    explains = [row.pop("explain", None) for row in rows] if plain else []
    if any(explains):
        # A table: each hit's row, then one indented line of what made its score.
        lines = table(rows, ShortIds(root), output)
        if len(lines) == len(rows) + 1:
            lines = [lines[0]] + [
                line
                for row_line, why in zip(lines[1:], explains, strict=True)
                for line in (row_line, "    " + explain_text(why))
            ]
        write_lines(lines, out)
        return
    if output.format == "json":
        out.write(dumps(rows) + "\n")
    elif output.format == "jsonl":
        for row in rows:
            out.write(dumps(row) + "\n")
    elif output.format in ("csv", "tsv"):
        _write_delimited(rows, output, out)
    else:
        write_lines(table(rows, ShortIds(root), output), out)


def _write_delimited(rows: list[dict[str, Any]], output: Output, out: Any) -> None:
    import csv

    if not rows and output.fields is None:
        return
    header = list(output.fields or rows[0])
    if rows and "pending" in rows[0] and "pending" not in header:
        header.append("pending")
    # csv quotes a cell holding the delimiter, a quote or a line break, in CSV and TSV alike.
    writer = csv.writer(out, delimiter="\t" if output.format == "tsv" else ",", lineterminator="\n")
    writer.writerow(header)
    for row in rows:
        writer.writerow([_cell_text(row.get(name)) for name in header])


def _cell_text(value: Any) -> str:
    """A value in a CSV or TSV cell: absent is empty, a list is its JSON text."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (list, dict)):
        return dumps(value)
    return str(value)


def table(rows: list[dict[str, Any]], short: ShortIds, output: Output | None = None) -> list[str]:
    """Aligned columns under a header. Content comes last and gets the room the terminal has
    left: on a narrow terminal (80 columns) the less telling default columns give way and
    long cells are cut, unless ``output.wide``, which shows every cell whole."""
    output = output or Output()
    if not rows:
        return []
    if output.fields is not None:
        names = list(output.fields)
    else:
        names = (["score"] if "score" in rows[0] else []) + list(output.table)
    if "pending" in rows[0] and "pending" not in names:
        names.insert(0, "pending")
    flexible = "content" if "content" in names else None
    fixed = [n for n in names if n != flexible]

    def cell(name: str, value: Any) -> str:
        if name in _COLUMNS:
            return _COLUMNS[name][1](value, short)
        text = value_text(value, 10**6, absent="-")
        return text if output.wide else truncate(text, MAX_CELL)

    cells = {name: [cell(name, row.get(name)) for row in rows] for name in fixed}
    width = terminal_width()

    def room(columns: list[str]) -> int:
        used = sum(max(len(_header(n)), *(len(c) for c in cells[n])) + 2 for n in columns)
        return width - used

    if flexible and not output.wide and output.fields is None:
        for name in _GIVE_WAY:
            if room(fixed) >= MIN_CONTENT:
                break
            if name in fixed:
                fixed.remove(name)
        if room(fixed) < MIN_CONTENT and "status" in cells and len(set(cells["status"])) == 1:
            fixed.remove("status")  # every row says the same: the filter already told
    widths = {n: max(len(_header(n)), *(len(c) for c in cells[n])) for n in fixed}

    def line(values: dict[str, str], last: str | None) -> str:
        parts = [
            values[n].rjust(widths[n]) if _right(n) else values[n].ljust(widths[n]) for n in fixed
        ]
        if last is not None:
            parts.append(last)
        return "  ".join(parts).rstrip()

    out = [line({n: _header(n) for n in fixed}, "CONTENT" if flexible else None)]
    space = max(20, room(fixed))
    for i, row in enumerate(rows):
        content = None
        if flexible:
            # The row's record holds hidden characters (shown as <U+XXXX> where the cell has
            # room): flagged first, where no cut can drop the flag.
            marker = "[hidden] " if hidden_in(row) else ""
            text = marker + str(row.get(flexible) or "")
            content = " ".join(reveal(text).split()) if output.wide else truncate(text, space)
        out.append(line({n: cells[n][i] for n in fixed}, content))
    return out


def _header(name: str) -> str:
    return _COLUMNS[name][0] if name in _COLUMNS else name.upper()


def _right(name: str) -> bool:
    return _COLUMNS[name][2] if name in _COLUMNS else False


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


def entity_lines(value: dict[str, Any]) -> list[str]:
    """``lantern entity show``: the entity, then its notes."""
    lines = [f"{value['key']}  {value['name']}"]
    if value["aliases"]:
        lines.append("aliases: " + ", ".join(value["aliases"]))
    if value["description"]:
        lines.append("description: " + value["description"])
    if value["notes"]:
        lines += ["", value["notes"]]
    return lines


def entity_show_lines(value: dict[str, Any]) -> list[str]:
    """``lantern entity show``: the entity (or that the key is a mention), then its records."""
    if value["entity"] is not None:
        lines = entity_lines(value["entity"])
    else:
        lines = [f"{value['key']}  (no entity file: named by records only)"]
    count = value["record_count"]
    lines += ["", f"records: {count}"]
    lines += [f"  {r['id'][:7]}  {r['kind']:<11} {r['content'].splitlines()[0][:70]}"
              for r in value["records"]]  # fmt: skip
    lines += ["", f"chunks: {value['chunk_count']}"]
    lines += [f"  {ref}" for ref in value["chunks"]]
    return lines


def entity_written(verb: str) -> Callable[[dict[str, Any]], list[str]]:
    """``lantern entity add|update|rename``: one line, ``<verb> KEY  NAME``."""
    return lambda value: [f"{verb} {value['key']}  {value['name']}"]


def entity_list_lines(values: list[dict[str, Any]]) -> list[str]:
    """``lantern entity list``: one line per key: its name (``*``: no file, a mention) and
    its record and chunk counts."""
    return [
        f"{v['key']}  {v['name']}{'' if v['file'] else ' *'}  "
        f"({v['record_count']} records, {v['chunk_count']} chunks)"
        for v in values
    ]


def migrate_lines(value: dict[str, Any]) -> list[str]:
    """``lantern migrate``: what it did, or with --dry-run would do."""
    if value["up_to_date"]:
        return [f"store format {value['to']}: up to date, nothing to migrate"]
    head = "would migrate" if value["dry_run"] else "migrated"
    lines = [f"{head} store format {value['from']} -> {value['to']}"]
    lines += [f"  step {step['format']}: {step['description']}" for step in value["steps"]]
    lines += [f"  changes {path}" for path in value["files"]]
    if value["commit"]:
        lines.append(f"commit {value['commit'][:7]}")
    elif value["dry_run"]:
        lines.append("nothing was changed (run lantern migrate to do it)")
    return lines


def clone_lines(result: CloneResult) -> list[str]:
    """``lantern clone``: where the store went and what its git config got."""
    records = f"{result.records} record" + ("" if result.records == 1 else "s")
    lines = [f"Cloned {result.url} into {result.path} ({records}, branch {result.branch})"]
    if result.registered_merge_driver:
        lines.append("registered the record merge driver: git pull merges records field by field")
    if result.set_pull_rebase:
        lines.append("set pull.rebase=false: a git pull of diverged hosts merges")
    return lines


def status_lines(info: dict[str, Any]) -> list[str]:
    """``lantern status``: from the dict ``Store.status()`` returns."""
    if not info["exists"]:
        return [f"store:    {info['path']} (not created yet; the first write creates it)"]
    lines = [
        f"store:    {info['path']}" + (" (read-only)" if info["read_only"] else ""),
        f"format:   {info['format']}",
        f"records:  {info['records']}",
    ]
    if info["by_status"]:
        lines.append("  " + ", ".join(f"{k} {n}" for k, n in info["by_status"].items()))
    if info["by_kind"]:
        lines.append("  " + ", ".join(f"{k} {n}" for k, n in info["by_kind"].items()))
    if info["broken_files"]:
        lines.append(f"broken:   {info['broken_files']} file(s); run lantern check")
    if info.get("sources"):
        lines.append(f"sources:  {info['sources']} ({info['chunks']} chunks indexed)")
    lines.append(f"index:    {info['index']}")
    if info.get("embedder"):
        lines.append(f"search:   {info['search_mode']} by default (embedder {info['embedder']})")
        if info.get("floors") is None:
            lines.append(
                "floors:   none (lantern has no similarity floors calibrated for this embedder)"
            )
        else:
            floors = info["floors"]
            alone = f"{floors['alone']:g} without"
            if floors.get("centred"):
                alone += (
                    f" (or {floors['noise']:g} above the mean of the query's and each record's"
                    " noise levels, if lower)"
                )
            elif floors.get("noise") is not None:
                alone += f" (or the query's noise level + {floors['noise']:g}, if lower)"
            lines.append(f"floors:   cosine {floors['floor']:g} with a word in common, {alone}")
            if floors.get("words") is not None:
                lines.append(
                    f"          without, the nearest record held to {floors['floor']:g} when one"
                    f" of its words is within {floors['words']:g} of one of the query's"
                )
    else:
        lines.append(f"search:   {info['search_mode']} (no embedder: see Semantic recall)")
    branch = info["branch"] or "(detached HEAD)"
    if info["upstream"]:
        branch += f" -> {info['upstream']} (ahead {info['ahead']}, behind {info['behind']})"
    lines.append(f"branch:   {branch}")
    return lines


def embed_lines(value: dict[str, Any]) -> list[str]:
    """``index embed``: what it embedded."""
    return [
        f"embedded {value['records']} record and {value['chunks']} chunk texts "
        f"(embedder {value['embedder']}); the vectors are in step"
    ]


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
        lines.append(f"commit {entry.commit[:10]}  {when(entry.time)}  {entry.author}")
        held = flag([entry.summary, entry.reason, entry.changes])
        lines.append(f"    {op}{actor}: {entry.summary}{held}")
        if entry.reason:
            lines.append(f"    reason: {entry.reason}")
        if entry.problem:
            lines.append(f"    ({entry.problem})")
        if entry.changes and all(c.old is None for c in entry.changes):
            lines.append("    (created)")
        elif entry.changes and all(c.new is None for c in entry.changes):
            pass  # deleted: the problem line says so
        else:
            lines.extend(f"    {change_text(c)}" for c in entry.changes)
        lines.append("")
    return lines[:-1]


def emit_diff(diff: RecordDiff, as_json: bool, root: str | None) -> None:
    """``lantern diff``: its object, or one line per record and one per changed field."""
    short = ShortIds(root)
    emit(diff, as_json, lambda d: diff_lines(d, short))


def diff_lines(diff: RecordDiff, short: ShortIds) -> list[str]:
    """Added, then removed, then changed records (each in id order), then unreadable files."""
    width = terminal_width() - 20
    lines = [f"added    {short(r.id)}  {truncate(r.content, width)}{flag(r)}" for r in diff.added]
    lines += [
        f"removed  {short(r.id)}  {truncate(r.content, width)}{flag(r)}" for r in diff.removed
    ]
    for change in diff.changed:
        held = flag([change.content, change.changes])
        lines.append(f"changed  {short(change.id)}  {truncate(change.content, width)}{held}")
        lines.extend(f"    {change_text(c)}" for c in change.changes)
    lines.extend(f"problem  {problem}" for problem in diff.problems)
    return lines


Evidence = dict[str, list[tuple[str, "RefCheck | None"]]]


def emit_review(
    review: ReviewList, as_json: bool, root: str | None, evidence: Evidence | None = None
) -> None:
    """``lantern review``: its object, or per branch its pending changes, each as the reviewer
    decides it (``evidence``: each pending record's references with verify's findings)."""
    short = ShortIds(root)
    emit(review, as_json, lambda r: review_lines(r, short, evidence or {}))


def review_lines(
    review: ReviewList, short: ShortIds, evidence: Evidence | None = None
) -> list[str]:
    """A heading per review branch with its tip (what ``--expect`` takes), then each unit a
    decision takes (a supersede's two records together): what changed, the writer's reason,
    the content against the store's version, the evidence cited with its verify status, who
    wrote it, and whether the store's branch changed it meanwhile."""
    if not review.branches:
        return ["nothing awaits review"]
    evidence = evidence or {}
    width = terminal_width() - 20
    lines: list[str] = []
    for branch in review.branches:
        count = len(branch.records)
        sources = len(branch.sources)
        entities = len(branch.entities)
        lines.append(
            f"lantern/review/{branch.name}: {count} record{'s' if count != 1 else ''}, "
            + (f"{sources} source{'s' if sources != 1 else ''}, " if sources else "")
            + (f"{entities} entit{'ies' if entities != 1 else 'y'}, " if entities else "")
            + f"{len(branch.commits)} commit{'s' if len(branch.commits) != 1 else ''}"
        )
        lines.append(f"  tip {branch.tip} (review accept|reject --expect {branch.tip[:12]})")
        for unit in branch.units():
            ids = {p.id for p in unit}
            if len(unit) > 1:
                lines.append(
                    f"  decided as one ({len(unit)} records, accepted or rejected together):"
                )
            for pending in unit:
                lines.extend(_pending_lines(pending, unit, ids, short, width, evidence))
        for source in branch.sources:
            manifest = source.manifest
            name = (manifest.title or manifest.uri or "") if manifest is not None else ""
            note = " (also changed on the store's branch)" if source.moved else ""
            lines.append(
                f"  {source.change:<8} source {source.id}  {truncate(name, width)}{note}"
                f"{flag(manifest)}"
            )
            citing = branch.citing(source.id)
            if citing:
                lines.append(
                    "      cited by pending "
                    + ", ".join(short(r.id) for r in citing)
                    + " (a reject of the source rejects them too)"
                )
            lines.append(f"      by {', '.join(source.actors)}: {', '.join(source.authors)}")
        for changed in branch.entities:
            entity = changed.entity
            name = entity.name if entity is not None else "(not a valid entity file)"
            if entity is not None and entity.aliases:
                name += f" (aliases: {', '.join(entity.aliases)})"
            note = " (also changed on the store's branch)" if changed.moved else ""
            lines.append(
                f"  {changed.change:<8} entity {changed.key}  {truncate(name, width)}{note}"
                f"{flag(entity)}"
            )
            lines.append(f"      by {', '.join(changed.actors)}: {', '.join(changed.authors)}")
        lines.extend(f"  problem  {problem}" for problem in branch.problems)
    return lines


def _pending_lines(
    pending: PendingRecord,
    unit: list[PendingRecord],
    ids: set[str],
    short: ShortIds,
    width: int,
    evidence: Evidence,
) -> list[str]:
    import difflib

    shown = pending.record or pending.before
    content = truncate(shown.content, width) if shown is not None else ""
    note = " (also changed on the store's branch)" if pending.moved else ""
    held = flag([pending.record, pending.before, pending.changes])
    lines = [f"  {pending.change:<8} {short(pending.id)}  {content}{note}{held}"]
    old = (
        next((p for p in unit if p.id == pending.supersedes), None)
        if pending.supersedes in ids
        else None
    )
    for reason in pending.reasons or ["(none given)"]:
        lines.append(f"      reason: {reason}")
    if old is not None and pending.record is not None:
        was = old.before or old.record
        lines.append(f"      supersedes {short(old.id)}; content against it:")
        before = display_lines(was.content) if was is not None else []
        lines.extend(
            f"        {line}"
            for line in difflib.ndiff(before, display_lines(pending.record.content))
            if not line.startswith("?")
        )
    if pending.change == "added" and pending.record is not None:
        fields = {
            k: v
            for k, v in pending.record.to_dict().items()
            if k not in ("id", "content", "pending", "created_at", "updated_at")
            and v not in (None, [])
        }
        lines.append(
            "      " + ", ".join(f"{k} {value_text(field_time(k, v))}" for k, v in fields.items())
        )
    if old is None and pending.change == "added" and pending.record is not None:
        lines.append("      content:")
        lines.extend(f"        {line}" for line in display_lines(pending.record.content))
    for change in pending.changes:
        if change.field == "content":
            lines.append("      content:")
            before = display_lines(change.old) if isinstance(change.old, str) else []
            after = display_lines(change.new) if isinstance(change.new, str) else []
            lines.extend(
                f"        {line}"
                for line in difflib.ndiff(before, after)
                if not line.startswith("?")
            )
        else:
            lines.append(f"      {change_text(change)}")
    for ref, check in evidence.get(pending.id, []):
        status = check.problem if check is not None else "not checked (not a source: reference)"
        lines.append(f"      evidence {ref}: {status}")
        if check is not None and check.detail and check.problem != "ok":
            lines.append(f"        {check.detail}")
        if check is not None and check.text is not None and check.lines is not None:
            lines.extend(
                f"        {check.lines[0] + i:>5}  {line}"
                for i, line in enumerate(display_lines(check.text))
            )
    lines.append(f"      by {', '.join(pending.actors)}: {', '.join(pending.authors)}")
    return lines


def decision_lines(decision: ReviewDecision) -> list[str]:
    """``review accept|reject``: what was decided, and where it is recorded."""
    count = len(decision.records)
    what = f"{count} record{'s' if count != 1 else ''}"
    verb = "accepted" if decision.op == "accept" else "rejected"
    where = "onto the store's branch" if decision.op == "accept" else "on its review branch"
    lines = [
        f"{verb} {what} of lantern/review/{decision.branch} {where} "
        f"({(decision.commit or '')[:10]})"
    ]
    lines.extend(f"  {record_id}" for record_id in decision.records)
    lines.extend(f"  source {source_id}" for source_id in decision.sources)
    if decision.merged:
        lines.append("merged with the store's branch, which changed them too:")
        value = {"merged": [r.to_dict("store", "pending") for r in decision.merged]}
        lines.extend(_merged_lines(value, "  ", ("store", "pending")))
    return lines


def revert_lines(result: RevertResult) -> list[str]:
    """``lantern revert``: the commit made, or that nothing was left to undo."""
    if result.commit is None:
        return [f"nothing to revert: the changes of {result.reverted[:10]} are already undone"]
    count = len(result.records)
    return [
        f"reverted {result.reverted[:10]} ({result.summary}) as {result.commit[:10]}: "
        f"{count} record{'s' if count != 1 else ''} " + ", ".join(r[:10] for r in result.records)
    ]


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
            f"{entry.summary}"
            + (f"  [{records}]" if records and op != "import" else "")
            + flag([entry.summary, entry.reason])
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
    return f"Error: {report.summary}"


def commit_lines(result: HandCommit) -> list[str]:
    """``lantern commit``: the commit made for hand edits, or that there was nothing to do."""
    if result.commit is None:
        return ["nothing to commit: no record or source file differs from HEAD"]
    parts = []
    for noun, ids in (("record", result.records), ("source", result.sources)):
        if ids:
            parts.append(
                f"{len(ids)} {noun}{'s' if len(ids) != 1 else ''} ("
                + ", ".join(i[:10] for i in ids)
                + ")"
            )
    return [f"committed {' and '.join(parts)} as {result.commit[:10]}"]


def import_lines(result: ImportResult) -> list[str]:
    sources = len(result.sources)
    also = f" and {sources} source{'s' if sources != 1 else ''}" if sources else ""
    return [f"imported {result.imported}{also}, skipped {result.skipped} (already present)"]


# ---------------------------------------------------------------------------- sync


def _merged_lines(
    value: dict[str, Any], indent: str = "", sides: tuple[str, str] = ("local", "remote")
) -> list[str]:
    """The records and sources a merge found changed on both sides, field by field, from a
    report's ``merged`` and ``merged_sources``."""
    lines: list[str] = []
    for item in value["merged"]:
        head = f"{indent}changed on both sides: {item['id']}"
        if item["note"]:
            head += f" ({item['note']})"
        lines.append(head)
        for change in item["fields"]:
            ours, theirs, merged = (
                value_text(change[side], 50, absent="(absent)") for side in (*sides, "merged")
            )
            lines.append(
                f"{indent}  {change['field']}: {sides[0]} {ours}, {sides[1]} {theirs} -> {merged}"
            )
    for item in value.get("merged_sources", ()):
        notes = f" ({', '.join(item['notes'])})" if item["notes"] else ""
        lines.append(f"{indent}source changed on both sides: {item['id']}{notes}")
    return lines


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
    lines.extend(_merged_lines(value))
    for branch in value.get("review_branches") or ():
        if branch["how"] == "up to date" and not branch["pushed"]:
            continue
        how = branch["how"] + (", pushed" if branch["pushed"] else "")
        lines.append(f"lantern/review/{branch['name']}: {how}")
        lines.extend(_merged_lines(branch, "  "))
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


# ---------------------------------------------------------------------------- evidence


def source_write_lines(results: list[IngestResult]) -> list[str]:
    """``source add`` / ``append``: one line per source, what happened to it."""
    return [
        f"{r.status} {r.manifest.id}  {r.manifest.kind}  {r.manifest.lines} lines  "
        f"{truncate(r.manifest.title or r.manifest.uri or '', terminal_width() - 50)}"
        for r in results
    ]


def source_table(manifests: list[SourceManifest]) -> list[str]:
    """``source list``: id, kind, lines, updated, and the title or uri in the room left."""
    if not manifests:
        return []
    out = [f"{'ID':<16}  {'KIND':<11}  {'LINES':>7}  {'UPDATED':<10}  TITLE/URI"]
    room = max(20, terminal_width() - 54)
    for m in manifests:
        name = ("[hidden] " if hidden_in([m.title, m.uri]) else "") + (m.title or m.uri or "")
        out.append(
            f"{m.id:<16}  {m.kind:<11}  {m.lines:>7}  {when(m.updated_at)[:10]:<10}  "
            f"{truncate(name, room)}"
        )
    return out


def source_view_lines(view: SourceView) -> list[str]:
    """``source show``: the lines a reference names, or the manifest's fields."""
    if view.text is not None:
        return display_lines(view.text)
    lines = []
    for key, value in view.manifest.to_dict().items():
        if value is None or value == {}:
            continue
        if key in ("captured_at", "updated_at"):
            value = f"{when(value)} ({value})"
        elif key == "meta":
            value = ", ".join(f"{k}={v}" for k, v in value.items())
        lines.append(f"{key + ':':<13}{value}")
    found = hidden_in(view.manifest)
    if found:
        lines.append(f"{'hidden:':<13}{', '.join(found)}: characters shown as <U+XXXX>")
    return lines


def explain_text(explain: dict[str, Any] | None) -> str:
    """A hit's ``explain`` object in one line (``--explain`` in a table)."""
    if not explain:
        return ""
    matched = ", ".join(explain.get("matched") or []) or "none"
    floor = explain.get("floor")
    cosine = explain.get("cosine")
    if cosine is None:
        cos = ""
    elif explain.get("calibrated", True):
        cos = f"cosine {cosine:.3f} (floor {floor:g})"
    else:
        cos = f"cosine {cosine:.3f} (no floor: not calibrated)"
    similar = explain.get("similar_words")
    if similar:  # its closest word pair, which may have held it to a lower floor
        cos += f", {similar['query']}≈{similar['record']} {similar['cosine']:.3f}"
    if explain.get("mode") == "keyword":
        return f"bm25 {explain['bm25']:.3f}; matched: {matched}"
    if explain.get("mode") == "semantic":
        return f"{cos}; matched: {matched}"
    weights = explain["weights"]
    best = explain.get("bm25_best")
    if explain.get("fusion") == "full match":
        scale = explain.get("full_match") or best
        share = f"min(bm25 {explain['bm25']:.3f}/{scale:.3f}, 1)" if scale else "bm25 0"
        mixed = f"{weights['keyword']:.3g} x {share} + {weights['semantic']:.3g} x cosine"
        return f"{mixed}, {cos}; matched: {matched}"
    keyword = f"bm25 {explain['bm25']:.3f}/{best:.3f}" if best else "bm25 0"
    mixed = f"{weights['keyword']:.3g} x {keyword} + {weights['semantic']:.3g} x cosine"
    if explain.get("fusion") == "idf share held first":
        first = explain.get("first")
        share = f"idf share {explain.get('idf_share', 0.0):.2f}{', first' if first else ''}"
        return f"{'1 + ' if first else ''}{mixed}, {cos}; {share}; matched: {matched}"
    held = f"{len(explain.get('matched') or [])} of {len(explain.get('words') or [])} words"
    return f"max(cosine, {mixed}), {cos}; matched {held}: {matched}"


def chunk_hit_lines(hits: list[ChunkHit], query: str = "") -> list[str]:
    """``source search``: each hit's reference and score, then (numbered) the lines of the
    chunk that hold a word of the query, or its first lines."""
    import re

    words = [w for w in re.findall(r"\w+", query.lower()) if len(w) > 2]
    out: list[str] = []
    width = terminal_width()
    for hit in hits:
        name = hit.title or hit.uri or hit.kind
        out.append(f"{hit.ref}  {hit.score:.2f}  {truncate(name, max(10, width - 60))}")
        if hit.explain is not None:
            out.append("  " + explain_text(hit.explain))
        numbered = list(enumerate(display_lines(hit.text), hit.lines[0]))
        shown = [(n, t) for n, t in numbered if any(w[:5] in t.lower() for w in words)]
        for number, line in (shown or [(n, t) for n, t in numbered if t.strip()])[:3]:
            prefix = f"  L{number}  "
            out.append(prefix + truncate(line, max(10, width - len(prefix))))
    return out


def verify_lines(report: VerifyReport) -> list[str]:
    """``lantern verify``: each reference that does not hold, then a count."""
    out = [f"{p.record_id[:12]}  {p.problem:<15} {p.ref}  {p.detail}" for p in report.problems]
    held = report.checked - len(report.problems)
    out.append(f"{held} of {report.checked} source references hold")
    return out


def evidence_lines(record: Record, evidence: list[dict[str, Any]]) -> list[str]:
    """``memory show --evidence``: the record, then each reference with its lines."""
    out = record_lines(record)
    for item in evidence:
        out.append("")
        status = item["problem"] or ("ok" if item["lines"] else "opaque")
        out.append(f"── {item['ref']}  ({status})")
        if item["text"] is not None:
            out.extend("   " + line for line in display_lines(item["text"]))
    return out


def dupes_lines(pairs: list[Any], root: str | None) -> list[str]:
    """``memory dupes``: each pair's cosine, then its two records, one per line."""
    short = ShortIds(root)
    width = max(40, terminal_width() - 16)
    out: list[str] = []
    for pair in pairs:
        for mark, record in ((f"{pair.score:.2f}", pair.a), ("", pair.b)):
            out.append(f"{mark:>5}  {short(record.id)}  {truncate(record.content, width)}")
    return out
