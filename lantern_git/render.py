"""One rendering path for every command: a JSON document, or text for people."""

from __future__ import annotations

import json
import os
import shutil
import sys
from collections.abc import Callable, Iterable
from datetime import datetime, timezone
from typing import Any

from .errors import LanternError


def to_jsonable(value: Any) -> Any:
    """Records become record objects, hits become record objects with a score."""
    if hasattr(value, "to_dict"):
        return value.to_dict()
    if hasattr(value, "record") and hasattr(value, "score"):
        data = value.record.to_dict()
        data["score"] = value.score
        return data
    if isinstance(value, (list, tuple)):
        return [to_jsonable(v) for v in value]
    if isinstance(value, dict):
        return {k: to_jsonable(v) for k, v in value.items()}
    return value


def history_document(record_id: str, entries) -> dict:
    """``memory history --json`` and the MCP history tool: the full id and its commits."""
    return {"id": record_id, "history": to_jsonable(entries)}


def log_document(entries) -> dict:
    """``lantern log --json``: an object, as for every command but list and search."""
    return {"log": to_jsonable(entries)}


def dumps(value: Any) -> str:
    return json.dumps(to_jsonable(value), ensure_ascii=False)


def emit(value: Any, as_json: bool, text: Callable[[Any], Iterable[str]]) -> None:
    """Write the result of a command to stdout: exactly one JSON document, or text lines."""
    if as_json:
        sys.stdout.write(dumps(value) + "\n")
        return
    for line in text(value):
        sys.stdout.write(line + "\n")


def error(err: LanternError | Exception, as_json: bool, code: str | None = None) -> None:
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
    if "COLUMNS" in os.environ or sys.stdout.isatty():
        return max(40, shutil.get_terminal_size((100, 24)).columns)
    return 120


def when(stamp: int | None) -> str:
    if stamp is None:
        return "-"
    return datetime.fromtimestamp(stamp, timezone.utc).strftime("%Y-%m-%d %H:%M")


def truncate(text: str, width: int) -> str:
    flat = " ".join(text.split())
    if len(flat) <= width:
        return flat
    return flat[: max(0, width - 1)] + "…"


class ShortIds:
    """Shortest unambiguous id prefixes (at least 7), like git's abbreviated hashes."""

    def __init__(self, root: str | None, minimum: int = 7):
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
        try:
            names = os.listdir(os.path.join(self.root or "", "memory", shard))
        except OSError:
            return {}
        ids = sorted(n[:-3] for n in names if n.endswith(".md") and len(n) == 19)
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


def record_lines(record) -> list[str]:
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


def write_line(verb: str, record, short: ShortIds) -> list[str]:
    return [f"{verb} {short(record.id)}  {truncate(record.content, terminal_width() - 20)}"]


def table(records: list, short: ShortIds, scores: list[float] | None = None) -> list[str]:
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
