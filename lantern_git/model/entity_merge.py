"""The three-way merge of an entity file, field by field: what ``lantern sync``, a review accept
and the git merge driver do when two hosts changed the same entity (docs/sync.md, "How entity
files merge").

- A field only one side changed takes that side's value: ``name``, ``aliases``,
  ``description``, the notes and any key lantern does not know (a key one side removed is gone).
- A field both sides changed differently:

  - ``aliases``: the union, as a record's ``entities``: the base's aliases either side still
    holds, in base order, then the others sorted; two spellings of one alias (equal but for
    case) are one, the first kept; at most 100 (the most a file holds).
  - anything else: the value of the side whose ``updated_at`` is later; on a tie, the side
    whose file is the larger text, so both hosts get the same answer.

- ``created_at``: the earlier; ``updated_at``: the later.
- ``key``: the same on both sides (it is the file's path). When both sides added the file,
  every field they hold differently is a two-sided change. A side (or base) that does not
  read is not merged (:class:`~lantern_git.model.record_merge.MergeError`).

Pure and symmetric, like :mod:`.record_merge`: merge(b, x, y) == merge(b, y, x) byte for byte.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..errors import ValidationError
from .entity import MAX_ALIASES, Entity
from .record_merge import MISSING, MergeError, union


def merge_entity_files(
    base: bytes | None, ours: bytes | None, theirs: bytes | None, path: str | None = None
) -> bytes:
    """The merged file of ``ours`` and ``theirs`` (``base``: None when both added it)."""
    try:
        parsed = [
            Entity.from_markdown(data.decode("utf-8"), path) if data else None
            for data in (base, ours, theirs)
        ]
    except (ValidationError, UnicodeDecodeError) as err:
        raise MergeError(f"{path}: an entity file that does not read: {err}") from None
    old, mine, other = parsed
    if mine is None or other is None:
        raise MergeError(f"{path}: an empty entity file")
    later = mine if (mine.updated_at, mine.to_markdown()) > (
        other.updated_at, other.to_markdown()
    ) else other  # fmt: skip

    def pick(
        get: Callable[[Entity], Any], both: Callable[[Any, Any, Any], Any] | None = None
    ) -> Any:
        """The field ``get`` reads, merged: one side's change, or ``both`` (else the later
        side's value) when both sides changed it differently."""
        b = get(old) if old is not None else MISSING
        o, t = get(mine), get(other)
        if o == t:
            return o
        if o == b:
            return t
        if t == b:
            return o
        return both(b, o, t) if both is not None else get(later)

    def aliases(b: Any, o: tuple[str, ...], t: tuple[str, ...]) -> tuple[str, ...]:
        return tuple(union(() if b is MISSING else b, o, t))

    def extra_of(key: str) -> Callable[[Entity], Any]:
        return lambda e: e.extra.get(key, MISSING)

    extra = {}
    for key in union(old.extra if old is not None else (), mine.extra, other.extra):
        value = pick(extra_of(key))
        if value is not MISSING:
            extra[key] = value
    merged = Entity(
        key=mine.key,
        name=pick(lambda e: e.name),
        aliases=pick(lambda e: e.aliases, aliases),
        description=pick(lambda e: e.description),
        created_at=min(mine.created_at, other.created_at),
        updated_at=max(mine.updated_at, other.updated_at),
        notes=pick(lambda e: e.notes),
        extra=extra,
    )
    # Aliases equal but for case are one alias: keep the first spelling.
    seen: dict[str, str] = {}
    for alias in merged.aliases:
        seen.setdefault(alias.lower(), alias)
    # At most MAX_ALIASES, or the merged file would not read: the base's come first.
    merged = merged.evolve(aliases=tuple(seen.values())[:MAX_ALIASES])
    return merged.to_markdown().encode("utf-8")
