"""Entities: the named things records and evidence talk about (a person, a project, a host).

An entity's key is ``TYPE:NAME``, spelled as a record's scope is (``person:ana``), stored
lower-cased; its file is ``entities/<type>/<name>.md``: YAML front matter (``key``, ``name``,
``aliases``, ``description``, ``created_at``, ``updated_at``, and any key a person adds, kept)
and a body of free notes. Names and aliases are how text finds an entity: ``[[Ana García]]``
or a chunk holding "A. García" ties it to ``person:ana``. Nothing here is guessed by a model:
people and agents name entities, and the files say so.

A key becomes a path only through :func:`entity_path`, after :func:`parse_key` (a scope's
rules, plus what makes a safe file name: no ``/``, no leading dot, a bounded length), so a
hostile key can never name a file outside ``entities/``.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from typing import Any

import yaml

from ..errors import ValidationError
from .entity_keys import (  # noqa: F401 - the keys' rules, re-exported beside the entity's
    ENTITIES_DIR,
    ENTITY_FORMAT,
    ENTITY_SUFFIX,
    MERGE_PATTERN,
    check_key,
    entity_path,
    key_of_path,
    links_in,
    parse_key,
)
from .record import FENCE, split_front_matter
from .record_file import Problem, read_bytes

MAX_NAME_CHARS = 200
MAX_ALIASES = 100
MAX_DESCRIPTION_CHARS = 2000
MAX_NOTES_BYTES = 65536
FIELDS = ("key", "name", "aliases", "description", "created_at", "updated_at")
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")


def _fail(name: str, message: str, line: int | None = None) -> ValidationError:
    return ValidationError(
        f"entity {name}: {message}", field=name, line=line, code="invalid_entity"
    )


def check_label(name: str, value: Any) -> str:
    """A name or an alias: one line of text, trimmed, not empty, bounded."""
    if not isinstance(value, str):
        raise _fail(name, f"must be text, got {type(value).__name__}")
    text = " ".join(value.split())
    if not text:
        raise _fail(name, "must not be empty")
    if _CONTROL.search(value.replace("\n", "").replace("\t", "")) or "[[" in text or "]]" in text:
        raise _fail(name, "must not hold control characters or '[[' ']]'")
    if len(text) > MAX_NAME_CHARS:
        raise _fail(name, f"is longer than {MAX_NAME_CHARS} characters")
    return text


def check_aliases(values: Any) -> tuple[str, ...]:
    if values is None:
        return ()
    if not isinstance(values, (list, tuple)):
        raise _fail("aliases", "must be a list of names")
    if len(values) > MAX_ALIASES:
        raise _fail("aliases", f"at most {MAX_ALIASES} aliases, got {len(values)}")
    seen: dict[str, str] = {}
    for value in values:
        alias = check_label("aliases", value)
        seen.setdefault(alias.lower(), alias)
    return tuple(seen.values())


def check_description(value: Any) -> str:
    if value is None:
        return ""
    if not isinstance(value, str):
        raise _fail("description", "must be text")
    text = value.strip()
    if "\0" in text or len(text) > MAX_DESCRIPTION_CHARS:
        raise _fail("description", f"must be at most {MAX_DESCRIPTION_CHARS} characters, no NUL")
    return text


def _check_time(name: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= 9_999_999_999:
        raise _fail(name, f"must be unix seconds, got {value!r}")
    return value


@dataclass(frozen=True)
class Entity:
    """One entity file's content (see the module's docstring)."""

    key: str
    name: str
    aliases: tuple[str, ...] = ()
    description: str = ""
    created_at: int = 0
    updated_at: int = 0
    notes: str = ""
    # Front-matter keys lantern does not know, kept in their order.
    extra: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def new(
        cls,
        key: str,
        *,
        name: str | None = None,
        aliases: Any = (),
        description: str | None = None,
        notes: str = "",
        now: int,
    ) -> Entity:
        key = check_key(key)
        return cls(
            key=key,
            name=check_label("name", name if name is not None else key.split(":", 1)[1]),
            aliases=check_aliases(list(aliases)),
            description=check_description(description),
            created_at=now,
            updated_at=now,
            notes=_check_notes(notes),
        )

    def evolve(self, **changes: Any) -> Entity:
        return replace(self, **changes)

    @property
    def labels(self) -> tuple[str, ...]:
        """What text may call it, lower-cased: the key, the name, each alias."""
        seen = dict.fromkeys([self.key, self.name.lower(), *(a.lower() for a in self.aliases)])
        return tuple(seen)

    def to_dict(self) -> dict[str, Any]:
        return {
            "key": self.key,
            "type": self.key.split(":", 1)[0],
            "name": self.name,
            "aliases": list(self.aliases),
            "description": self.description,
            "created_at": self.created_at,
            "updated_at": self.updated_at,
            "notes": self.notes,
        }

    def to_markdown(self) -> str:
        front: dict[str, Any] = {
            "key": self.key,
            "name": self.name,
            "aliases": list(self.aliases),
            "description": self.description,
            "created_at": self.created_at,
            "updated_at": self.updated_at,
        }
        if not self.description:
            del front["description"]
        if not self.aliases:
            del front["aliases"]
        front.update(self.extra)
        dumped = yaml.safe_dump(front, sort_keys=False, allow_unicode=True, width=1000)
        body = self.notes.strip()
        return f"{FENCE}\n{dumped}{FENCE}\n" + (body + "\n" if body else "")

    def to_line(self) -> dict[str, Any]:
        """An export line: ``{"entity": {...}}`` (the ``--json`` object but its ``type``)."""
        data = self.to_dict()
        del data["type"]
        return {"entity": data}

    @classmethod
    def from_dict(cls, data: Any) -> Entity:
        """An entity from an export line's object; unknown keys are refused."""
        if not isinstance(data, dict):
            raise _fail("entity", "must be an object")
        known = {"key", "name", "aliases", "description", "created_at", "updated_at", "notes"}
        unknown = sorted(set(data) - known)
        if unknown:
            raise _fail(unknown[0], "is not an entity field")
        if "key" not in data:
            raise _fail("key", "is missing")
        return cls._checked(check_key(data["key"]), data, data.get("notes", ""), {})

    @classmethod
    def from_markdown(cls, text: str, path: str | None = None) -> Entity:
        """Parse an entity file; ``path``, when given, must be the key's own path."""
        try:
            front, body, _ = split_front_matter(text)
            data = yaml.load(front, Loader=yaml.CSafeLoader)
        except yaml.YAMLError as err:
            raise _fail("front matter", f"is not valid YAML: {err}", 1) from None
        if not isinstance(data, dict):
            raise _fail("front matter", "must be a mapping of keys", 1)
        if "key" not in data:
            raise _fail("key", "is missing")
        key = check_key(data["key"])
        if path is not None and entity_path(key) != path:
            raise _fail("key", f"{key} belongs in {entity_path(key)}, not {path}")
        return cls._checked(key, data, body, {k: v for k, v in data.items() if k not in FIELDS})

    @classmethod
    def _checked(cls, key: str, data: dict[str, Any], notes: Any, extra: dict[str, Any]) -> Entity:
        """The entity whose checked ``key`` and fields ``data`` give: the one check of an
        export line's object and of a file's front matter alike."""
        for needed in ("created_at", "updated_at"):
            if needed not in data:
                raise _fail(needed, "is missing")
        return cls(
            key=key,
            name=check_label("name", data.get("name", key.split(":", 1)[1])),
            aliases=check_aliases(data.get("aliases")),
            description=check_description(data.get("description")),
            created_at=_check_time("created_at", data["created_at"]),
            updated_at=_check_time("updated_at", data["updated_at"]),
            notes=_check_notes(notes),
            extra=extra,
        )


MAX_ENTITY_FILE_BYTES = 262_144


def parse_entity_file(path: str, data: bytes) -> Entity:
    """The entity an entity file's bytes hold; :class:`ValidationError` located in the file."""
    if len(data) > MAX_ENTITY_FILE_BYTES:
        raise ValidationError(
            f"is larger than {MAX_ENTITY_FILE_BYTES} bytes", path=path, code="invalid_entity"
        )
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise ValidationError("is not UTF-8 text", path=path, code="invalid_entity") from None
    try:
        return Entity.from_markdown(text, path)
    except ValidationError as err:
        raise err.located(path) from None


def entity_file_paths(root: str, folder: str | None = None) -> list[str]:
    """The ``entities/<type>/<name>.md`` paths of the working tree (``folder``: that type's),
    in order; folders that are symbolic links are not entered."""
    top = os.path.join(root, ENTITIES_DIR)
    try:
        folders = [folder] if folder is not None else sorted(os.listdir(top))
    except OSError:
        return []
    paths = []
    for name in folders:
        full = os.path.join(top, name)
        if os.path.islink(full) or not os.path.isdir(full):
            continue
        paths += [
            f"{ENTITIES_DIR}/{name}/{file}"
            for file in sorted(os.listdir(full))
            if file.endswith(ENTITY_SUFFIX)
        ]
    return paths


def iter_entity_files(
    root: str, folder: str | None = None
) -> Iterator[tuple[str, Entity | None, Problem | None]]:
    """(path, entity or None, what is wrong or None) for each entity file, in path order."""
    for path in entity_file_paths(root, folder):
        data, problem = read_bytes(root, path, what="entity files")
        if problem is not None or data is None:
            yield path, None, problem
            continue
        if key_of_path(path) is None:
            yield path, None, Problem(path, None, "is not entities/<type>/<name>.md of a key")
            continue
        try:
            yield path, parse_entity_file(path, data), None
        except ValidationError as err:
            yield path, None, Problem(path, err.line, err.reason)


def _check_notes(text: Any) -> str:
    if not isinstance(text, str):
        raise _fail("notes", "must be text")
    notes = text.strip()
    if "\0" in notes or len(notes.encode("utf-8")) > MAX_NOTES_BYTES:
        raise _fail("notes", f"must be at most {MAX_NOTES_BYTES} bytes, no NUL")
    return notes
