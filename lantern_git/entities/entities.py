"""``store.entities``: every read and write of entity files.

Entities stand on the workspace alone, as the records and the evidence do, and import neither:
what an entity write needs of the records (a rename rewrites the records that name the old
key) is handed to it by the Store as :class:`Mentions`. Every write goes through the one write
transaction, so it is one commit (``Lantern-Op: entity-add|entity-update|entity-rename``,
``Lantern-Entity: KEY``), journaled, recovered after a kill, and sent to a review branch in
review mode; each one first asks the workspace for store format 2 (``needs_migration``).
"""

from __future__ import annotations

import builtins
import time
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Protocol

from ..errors import InvalidInput, NotFound, ValidationError
from ..model.entity import (
    Entity,
    check_aliases,
    entity_file_paths,
    iter_entity_files,
    parse_entity_file,
)
from ..model.entity_keys import ENTITY_FORMAT, check_key, entity_path
from ..model.record_file import Problem, read_bytes
from ..workspace.transaction import refuse_uncommitted

if TYPE_CHECKING:
    from ..index.entities import EntityIndex
    from ..workspace.transaction import WriteTransaction
    from ..workspace.workspace import Workspace


class Mentions(Protocol):
    """What an entity rename needs of the records (handed by the Store, so that this part
    imports no other): the record files to rewrite so that they name ``new`` where they named
    ``old`` (their ``entities`` field, and ``[[old]]`` links), read through ``tx``."""

    def renamed(
        self, tx: WriteTransaction, old: str, new: str
    ) -> tuple[dict[str, bytes], builtins.list[str]]:
        """(path -> new bytes, the ids of the records changed)."""
        ...


class Entities:
    """The entity files of one store (see the module's docstring)."""

    def __init__(self, workspace: Workspace, mentions: Mentions | None = None):
        self.workspace = workspace
        self.mentions = mentions

    # ------------------------------------------------------------------ reads

    def get(self, key: str) -> Entity:
        """The entity of ``key`` (:class:`NotFound` when it has no file)."""
        key = check_key(key)
        path = entity_path(key)
        data, problem = read_bytes(self.workspace.root, path, what="entity files")
        if problem is not None:
            raise ValidationError(str(problem), code="invalid_entity")
        if data is None:
            raise NotFound(f"no entity file for {key} ({path}); add one with lantern entity add")
        return parse_entity_file(path, data)

    def list(self, type: str | None = None) -> builtins.list[Entity]:
        """Every readable entity file's entity, by key, from the entity index (broken files are
        ``lantern check``'s)."""
        folder = check_key(f"{type}:x").split(":", 1)[0] if type is not None else None
        index = self.index()
        return index.entities(folder) if index is not None else []

    def labels(self, key: str) -> builtins.list[str]:
        """What text may call ``key``'s entity: the key, and from its file (when it has one)
        its name and aliases. ``--entity KEY`` filters by these (a key without a file is a
        mention: the key alone). Read from the one file: at 100k records and 1k entities that
        costs ~0.1 ms, where bringing the entity index in step first (every entity file's
        lstat, the chunk index's check) cost 16 ms of an 18 ms filtered list."""
        key = check_key(key)
        try:
            return builtins.list(self.get(key).labels)
        except NotFound:
            return [key]

    def index(self) -> EntityIndex | None:
        """The entity index, in step with the entity files and the sources' chunks (None
        before the store exists): the entities' names, and the chunks holding each."""
        if not self.workspace.exists:
            return None
        self.workspace.recover()
        index = self.workspace.entity_index
        index.refresh()
        return index

    def paths(self) -> builtins.list[str]:
        """The entity files' paths in the working tree."""
        return entity_file_paths(self.workspace.root)

    def check(self) -> builtins.list[Problem]:
        """What is wrong with each entity file: unreadable, invalid, or in the wrong place."""
        return [p for _, _, p in iter_entity_files(self.workspace.root) if p is not None]

    # ------------------------------------------------------------------ writes

    def add(
        self,
        key: str,
        *,
        name: str | None = None,
        aliases: Iterable[str] = (),
        description: str | None = None,
        notes: str = "",
        reason: str | None = None,
    ) -> Entity:
        """A new entity file, in one commit (``entity_exists`` when it has one)."""
        self.workspace.require_format(ENTITY_FORMAT, "entity add")
        entity = Entity.new(
            key, name=name, aliases=builtins.list(aliases), description=description,
            notes=notes, now=int(time.time()),
        )  # fmt: skip
        path = entity_path(entity.key)
        with self.workspace.transaction() as tx:
            if _read_in(tx, path) is not None:
                raise InvalidInput(
                    f"entity {entity.key} exists ({path}); change it with lantern entity update",
                    code="entity_exists",
                )
            _refuse_hand_edit(tx, [path])
            self._commit(tx, {path: entity}, "entity-add", entity.key, reason)
        return entity

    def update(
        self,
        key: str,
        *,
        name: str | None = None,
        aliases: Iterable[str] = (),
        remove_aliases: Iterable[str] = (),
        description: str | None = None,
        notes: str | None = None,
        reason: str | None = None,
    ) -> Entity:
        """Change an entity's name, description or notes, add or remove aliases; one commit,
        none when nothing changes."""
        self.workspace.require_format(ENTITY_FORMAT, "entity update")
        key = check_key(key)
        added = check_aliases(builtins.list(aliases))
        removed = {alias.lower() for alias in check_aliases(builtins.list(remove_aliases))}
        path = entity_path(key)
        with self.workspace.transaction() as tx:
            current = self._load_in(tx, key)
            kept = [alias for alias in current.aliases if alias.lower() not in removed]
            changed = Entity.new(
                key,
                name=name if name is not None else current.name,
                aliases=[*kept, *added],
                description=description if description is not None else current.description,
                notes=notes if notes is not None else current.notes,
                now=current.created_at,
            ).evolve(extra=current.extra)
            if changed == current:
                return current
            changed = changed.evolve(updated_at=max(int(time.time()), current.updated_at))
            _refuse_hand_edit(tx, [path])
            self._commit(tx, {path: changed}, "entity-update", key, reason)
        return changed

    def rename(self, old: str, new: str, *, reason: str | None = None) -> Entity:
        """Move ``old``'s file to ``new``'s key, keep ``old``'s name as an alias, and rewrite
        every record that names or links ``old``: one commit, so history follows the file
        (``git log --follow``) and no record is left naming a key that moved."""
        self.workspace.require_format(ENTITY_FORMAT, "entity rename")
        old, new = check_key(old), check_key(new)
        if old == new:
            raise InvalidInput(f"entity rename: {old} is already its key", code="usage_error")
        old_path, new_path = entity_path(old), entity_path(new)
        with self.workspace.transaction() as tx:
            current = self._load_in(tx, old)
            if _read_in(tx, new_path) is not None:
                raise InvalidInput(
                    f"entity {new} exists ({new_path}); rename to a free key",
                    code="entity_exists",
                )
            # The name stays (it is how text calls the entity; entity update changes it), and
            # the old key becomes an alias, so [[OLD]] links elsewhere still find it.
            moved = current.evolve(
                key=new,
                aliases=check_aliases([*current.aliases, old]),
                # updated_at stays: the commit dates the move, and every line left as it was
                # helps git see a rename (git log --follow needs the file half unchanged).
            )
            records: dict[str, bytes] = {}
            record_ids: builtins.list[str] = []
            if self.mentions is not None:
                records, record_ids = self.mentions.renamed(tx, old, new)
            _refuse_hand_edit(tx, [old_path, new_path])
            files: dict[str, bytes | None] = {old_path: None, **records}
            files[new_path] = moved.to_markdown().encode("utf-8")
            tx.commit(
                files,
                f"entity-rename {old} -> {new}",
                "entity-rename",
                record_ids,
                reason=reason,
                extra_trailers=[f"Lantern-Entity: {old}", f"Lantern-Entity: {new}"],
            )
        return moved

    # ------------------------------------------------------------------ helpers

    def _load_in(self, tx: WriteTransaction, key: str) -> Entity:
        path = entity_path(key)
        data = _read_in(tx, path)
        if data is None:
            raise NotFound(f"no entity file for {key} ({path}); add one with lantern entity add")
        return parse_entity_file(path, data)

    def _commit(
        self,
        tx: WriteTransaction,
        entities: Mapping[str, Entity],
        op: str,
        key: str,
        reason: str | None,
    ) -> str:
        (entity,) = entities.values()
        return tx.commit(
            {path: e.to_markdown().encode("utf-8") for path, e in entities.items()},
            f"{op} {key}: {entity.name}"[:120],
            op,
            (),
            reason=reason,
            extra_trailers=[f"Lantern-Entity: {key}"],
        )


def _read_in(tx: WriteTransaction, path: str) -> bytes | None:
    """``path`` as this writer sees it: the review branch's version when the branch changed it,
    else the working tree's."""
    if path in tx.pending():
        return tx.committed_blob(path)
    data, problem = read_bytes(tx.root, path, what="entity files")
    if problem is not None:
        raise ValidationError(str(problem), code="invalid_entity")
    return data


def _refuse_hand_edit(tx: WriteTransaction, paths: builtins.list[str]) -> None:
    """A hand edit of an entity file that is not committed is never written over."""
    outside = [path for path in paths if path not in tx.pending()]
    if outside:
        refuse_uncommitted(tx.git, outside)
