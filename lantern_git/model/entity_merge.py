"""The three-way merge of an entity file, field by field: what ``lantern sync`` and the git merge
driver do when two hosts changed the same entity.

- ``aliases``: a set, the union of both sides (the base's order, then ours, then theirs): one
  host's new alias never drops the other's. An alias one side removed and the other kept stays.
  Past 100 (the most a file holds), the base's and ours are kept first.
- ``created_at``: the earlier; ``updated_at``: the later.
- ``name``, ``description``, the notes and any key lantern does not know: the side that changed
  it from the base; both changed it differently: the side whose ``updated_at`` is later (the
  larger value on a tie, so both hosts get the same answer).
- ``key``: the same on both sides (it is the file's path); a file neither side can read is not
  merged (:class:`~lantern_git.model.record_merge.MergeError`).

Pure and symmetric, like :mod:`.record_merge`.
"""

from __future__ import annotations

from typing import Any

from ..errors import ValidationError
from .entity import MAX_ALIASES, Entity
from .record_merge import MergeError

_MISSING = object()


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
    later = mine if (mine.updated_at, mine.to_markdown()) >= (
        other.updated_at, other.to_markdown()
    ) else other  # fmt: skip

    def pick(name: str, get: Any) -> Any:
        b = get(old) if old is not None else _MISSING
        o, t = get(mine), get(other)
        if o == t:
            return o
        if b is not _MISSING and o == b:
            return t
        if b is not _MISSING and t == b:
            return o
        return get(later)

    aliases = dict.fromkeys(
        [*(old.aliases if old is not None else ()), *mine.aliases, *other.aliases]
    )
    extra_keys = dict.fromkeys([*mine.extra, *other.extra])
    extra = {}
    for key in extra_keys:
        value = pick(key, lambda e, k=key: e.extra.get(k, _MISSING) if e is not None else None)
        if value is not _MISSING:
            extra[key] = value
    merged = Entity(
        key=mine.key,
        name=pick("name", lambda e: e.name),
        aliases=tuple(aliases),
        description=pick("description", lambda e: e.description),
        created_at=min(mine.created_at, other.created_at),
        updated_at=max(mine.updated_at, other.updated_at),
        notes=pick("notes", lambda e: e.notes),
        extra=extra,
    )
    # Aliases equal but for case are one alias: keep the first spelling.
    seen: dict[str, str] = {}
    for alias in merged.aliases:
        seen.setdefault(alias.lower(), alias)
    # At most MAX_ALIASES, or the merged file would not read: the base's and ours come first.
    merged = merged.evolve(aliases=tuple(seen.values())[:MAX_ALIASES])
    return merged.to_markdown().encode("utf-8")
