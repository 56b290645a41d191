"""Record-aware three-way merge: (base, ours, theirs) record texts -> one valid record text.

The rule, field by field (docs/sync.md, "How records merge"):

- A field only one side changed takes that side's value; identical changes merge silently.
- A field both sides changed to different values (a *two-sided change*) is decided by a rule
  that looks only at the values, never at which side is "ours", so the merge is symmetric:

  ``status``      superseded > archived > active: a record replaced or retired on either host
                  stays so (restore it again to undo).
  ``created_at``  the earlier.
  ``source_refs`` and ``entities`` the union: the base's in base order, then the others sorted.
  anything else   (kind, scope, priority, urgency, confidence, expires_at, supersedes_id,
                  content and unknown keys) the value of the side whose ``updated_at`` is later;
                  on a tie, the larger value (absent < numbers < text < anything else; text by
                  code point).

- ``updated_at`` is always the later of the two sides (it is bookkeeping every write bumps, so
  it is not reported as a two-sided change).
- A side that is not a valid record is replaced by the other side; when neither side is valid,
  :class:`MergeError` is raised and nothing is written. A missing or invalid base counts as
  empty: every field both sides hold differently is then a two-sided change.

The output is always a valid record without conflict markers, and merge(b, x, y) == merge(b, y, x)
byte for byte. Only PyYAML (through record.py) is imported, so the git merge driver starts fast.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from ..core.fields import FIELD_ORDER, MAX_SOURCE_REFS
from ..errors import LanternError, ValidationError
from .entity_keys import MAX_RECORD_ENTITIES
from .record import Record
from .record_file import expected_id, parse

# A two-sided status change keeps the later of these (a record replaced or retired stays so).
STATUS_PRECEDENCE = ("active", "archived", "superseded")


class _Missing:
    def __repr__(self) -> str:
        return "MISSING"


MISSING: Any = _Missing()


class MergeError(LanternError):
    """Neither side is a valid record: there is nothing sound to write."""

    code = "merge_failed"
    exit_code = 1


@dataclass(frozen=True)
class FieldConflict:
    """A field both sides changed to different values, and what the merge chose."""

    field: str
    base: Any
    ours: Any
    theirs: Any
    merged: Any

    def to_dict(self, ours: str = "ours", theirs: str = "theirs") -> dict[str, Any]:
        return {
            "field": self.field,
            "base": _jsonable(self.base),
            ours: _jsonable(self.ours),
            theirs: _jsonable(self.theirs),
            "merged": _jsonable(self.merged),
        }


@dataclass(frozen=True)
class RecordMerge:
    text: str
    record: Record
    conflicts: tuple[FieldConflict, ...] = ()
    # Set when one side was not a valid record and the other was kept: "ours" or "theirs".
    invalid_side: str | None = None

    @property
    def fields(self) -> tuple[str, ...]:
        return tuple(c.field for c in self.conflicts)


def parse_side(data: bytes | str | None, path: str | None) -> Record | None:
    """A side's record, or None when it is absent, empty or not a valid record (for ``path``,
    when given: the record file's place pins its id)."""
    if data is None:
        return None
    raw = data.encode("utf-8", "surrogatepass") if isinstance(data, str) else data
    if not raw.strip():
        return None
    return parse(path or "", raw, check_layout=path is not None)[0]


def merge_records(
    base: bytes | str | None,
    ours: bytes | str | None,
    theirs: bytes | str | None,
    path: str | None = None,
) -> RecordMerge:
    """Merge two versions of one record file against their common ancestor.

    ``path`` (``memory/<aa>/<id>.md``) pins the id every side must carry; without it the sides
    must agree on the id. Raises :class:`MergeError` when neither side is a valid record.
    """
    record_path = path if expected_id(path) is not None else None
    ours_text, theirs_text = _text(ours), _text(theirs)
    ours_rec, theirs_rec = parse_side(ours, record_path), parse_side(theirs, record_path)
    where = f"{path}: " if path else ""
    if ours_rec is None:
        if theirs_rec is None:
            raise MergeError(
                f"{where}cannot merge: neither side is a valid record; fix the file by hand "
                "(lantern check shows what is wrong)"
            )
        return RecordMerge(theirs_text, theirs_rec, invalid_side="ours")
    if theirs_rec is None:
        return RecordMerge(ours_text, ours_rec, invalid_side="theirs")
    if ours_rec.id != theirs_rec.id:
        raise MergeError(f"{where}cannot merge: the two sides hold different record ids")
    base_rec = parse_side(base, record_path)
    if base_rec is not None and base_rec.id != ours_rec.id:
        base_rec = None
    merged, conflicts = _merge_fields(base_rec, ours_rec, theirs_rec)
    return RecordMerge(
        _render(merged, base, base_rec, ours_text, theirs_text, ours_rec, theirs_rec),
        merged,
        tuple(conflicts),
    )


# ---------------------------------------------------------------------------- fields


def _fields(record: Record | None) -> dict[str, Any]:
    """Every key of a record as a flat mapping; absent optional fields are left out."""
    if record is None:
        return {}
    known = {key: getattr(record, key) for key in FIELD_ORDER}
    present = {key: value for key, value in known.items() if value not in (None, ())}
    return {**present, "content": record.content, **record.extra}


def _same(a: Any, b: Any) -> bool:
    return _canonical(a) == _canonical(b)


def _merge_fields(
    base: Record | None, ours: Record, theirs: Record
) -> tuple[Record, list[FieldConflict]]:
    b, o, t = _fields(base), _fields(ours), _fields(theirs)
    # updated_at is bookkeeping every write bumps: always the later, never a two-sided change.
    o["updated_at"] = t["updated_at"] = max(ours.updated_at, theirs.updated_at)
    extra_order = _extra_order(b, o, t)
    # Visit keys in an order that does not depend on which side is "ours" (symmetry).
    keys = [*FIELD_ORDER, "content", *extra_order]
    merged: dict[str, Any] = {}
    conflicts: list[FieldConflict] = []
    for key in keys:
        bv, ov, tv = b.get(key, MISSING), o.get(key, MISSING), t.get(key, MISSING)
        if _same(ov, tv):
            value = ov
        elif _same(ov, bv):
            value = tv
        elif _same(tv, bv):
            value = ov
        else:
            value = _two_sided(key, bv, ov, tv, ours.updated_at, theirs.updated_at)
            conflicts.append(FieldConflict(key, _shown(bv), _shown(ov), _shown(tv), _shown(value)))
        if value is not MISSING:
            merged[key] = value
    record = _build(merged, extra_order)
    try:
        return record.validated(), conflicts
    except ValidationError as err:
        # Cannot happen: every value comes from a valid side, and the unions are cut at the
        # validator's own limits. Were it to, nothing sound can be written, and one side
        # chosen whole would drop the other's changes without a word.
        raise MergeError(f"cannot merge: the merged record is not valid ({err.message})") from None


def _two_sided(key: str, base: Any, ours: Any, theirs: Any, ours_at: int, theirs_at: int) -> Any:
    if key in _VALUE_RULES:
        return _VALUE_RULES[key](base, ours, theirs)
    if ours_at > theirs_at:
        return ours
    if theirs_at > ours_at:
        return theirs
    return max(ours, theirs, key=_order)


def _higher_status(base: Any, ours: Any, theirs: Any) -> Any:
    return max(ours, theirs, key=STATUS_PRECEDENCE.index)


def _earlier(base: Any, ours: Any, theirs: Any) -> Any:
    return min(ours, theirs)


def union(base: Iterable[str], ours: Iterable[str], theirs: Iterable[str]) -> list[str]:
    """The entries either side holds: the base's still held, in base order, then the others
    sorted, so the answer does not depend on which side is "ours" (the entity merge's aliases
    and keys follow it too)."""
    present = {*ours, *theirs}
    kept = [entry for entry in dict.fromkeys(base) if entry in present]
    return [*kept, *sorted(present.difference(kept))]


def _union(cap: int) -> Callable[[Any, Any, Any], tuple[str, ...]]:
    """The rule for a list: :func:`union`, the first ``cap`` of it (the validator's limit)."""

    def unite(base: Any, ours: Any, theirs: Any) -> tuple[str, ...]:
        return tuple(union(_entries(base), _entries(ours), _entries(theirs))[:cap])

    return unite


def _entries(value: Any) -> Any:
    return () if value is MISSING else value


# Fields whose two-sided changes follow their own rule rather than "later updated_at wins".
_VALUE_RULES: dict[str, Callable[[Any, Any, Any], Any]] = {
    "status": _higher_status,
    "created_at": _earlier,
    "source_refs": _union(MAX_SOURCE_REFS),
    "entities": _union(MAX_RECORD_ENTITIES),
}


def _order(value: Any) -> tuple[Any, ...]:
    """A total order over field values: absent < numbers < text < anything else."""
    if value in (MISSING, None):
        return ()
    # NaN, equal to nothing (itself included), is no number to order by.
    nan = isinstance(value, float) and math.isnan(value)
    if isinstance(value, (int, float)) and not isinstance(value, bool) and not nan:
        return (0, value, _canonical(value))
    if isinstance(value, str):
        return (1, value)
    return (2, _canonical(value))


def _canonical(value: Any) -> str:
    """A text two values share exactly when they are the same value of the same type."""
    if value is MISSING:
        return "absent"
    if isinstance(value, str):
        return "s:" + value
    if isinstance(value, (int, float)):
        return "n:" + repr(value)
    if isinstance(value, tuple):
        value = list(value)
    import yaml

    return "y:" + yaml.dump(
        value, Dumper=yaml.CSafeDumper, sort_keys=True, allow_unicode=True, width=1 << 30
    )


def _extra_order(b: dict[str, Any], o: dict[str, Any], t: dict[str, Any]) -> list[str]:
    """Unknown keys in the base's order, then any new ones sorted by name."""
    known = {*FIELD_ORDER, "content"}
    base_keys = [k for k in b if k not in known]
    return [*base_keys, *sorted({*o, *t}.difference(known, b))]


def _build(values: dict[str, Any], extra_order: list[str]) -> Record:
    known = {k: values[k] for k in FIELD_ORDER if k in values}
    extra = {k: values[k] for k in extra_order if k in values}
    return Record(content=values["content"], extra=extra, **known)


def _shown(value: Any) -> Any:
    if value is MISSING:
        return None
    return list(value) if isinstance(value, tuple) else value


def _jsonable(value: Any) -> Any:
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    return str(value)


# ---------------------------------------------------------------------------- text


def _text(data: bytes | str | None) -> str:
    if data is None:
        return ""
    if isinstance(data, bytes):
        return data.decode("utf-8", "replace")
    return data


def _render(
    merged: Record,
    base: bytes | str | None,
    base_rec: Record | None,
    ours_text: str,
    theirs_text: str,
    ours: Record,
    theirs: Record,
) -> str:
    """The merged record as text, chosen only from what both sides see alike.

    A side's own text is kept when the merge equals it (its formatting survives); otherwise the
    base's text is rewritten with minimal line changes, or the record rendered canonically.
    """
    candidates = sorted(
        {text for text, rec in ((ours_text, ours), (theirs_text, theirs)) if rec == merged}
    )
    if candidates:
        return candidates[-1]
    if base_rec is not None:
        return merged.rewrite(_text(base))
    return merged.to_markdown()
