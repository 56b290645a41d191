"""Entity keys: ``TYPE:NAME``, spelled as a record's scope is, and the one way a key becomes a
path. Apart from :mod:`.entity` so that a record (its ``entities`` field) can check keys
without importing the entity file's format, which imports the record's front-matter reader.

A key becomes a path only through :func:`entity_path`, after :func:`parse_key` (a scope's
rules, plus what makes a safe file name: no ``/``, no leading dot, a bounded length), so a
hostile key can never name a file outside ``entities/``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from ..core.fields import MAX_SCOPE_CHARS, SCOPE_PATTERN
from ..errors import ValidationError

# The store format entity data needs (workspace/migrations.py).
ENTITY_FORMAT = 2
ENTITIES_DIR = "entities"
ENTITY_SUFFIX = ".md"
MERGE_PATTERN = f"{ENTITIES_DIR}/**/*{ENTITY_SUFFIX}"
# A file name's part of a key: most file systems allow 255 bytes per name, with ".md".
MAX_NAME_BYTES = 240
# At most this many keys in one record's ``entities`` field.
MAX_RECORD_ENTITIES = 100
_SCOPE = re.compile(SCOPE_PATTERN)
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029\ud800-\udfff]")
_LINK = re.compile(r"\[\[([^\[\]\n]{1,200})\]\]")


def _fail(message: str) -> ValidationError:
    return ValidationError(f"entity key: {message}", field="key", code="invalid_entity")


def parse_key(value: Any) -> tuple[str, str]:
    """(type, name) of an entity key, lower-cased; :class:`ValidationError` (``invalid_entity``)
    for anything that is not a safe ``TYPE:NAME``."""
    if not isinstance(value, str):
        raise _fail(f"must be a string TYPE:NAME, got {type(value).__name__}")
    key = value.strip().lower()
    if len(key) > MAX_SCOPE_CHARS or _CONTROL.search(key) or not _SCOPE.fullmatch(key):
        raise _fail(
            "must be TYPE:NAME (person:ana, project:beta) without whitespace, control "
            f"characters or '*', at most {MAX_SCOPE_CHARS} characters; got {value[:80]!r}"
        )
    if key == "global":
        raise _fail("must be TYPE:NAME (person:ana); 'global' names no entity")
    kind, name = key.split(":", 1)
    for part in (kind, name):
        if "/" in part or "\\" in part or part.startswith(".") or ":" in part:
            raise _fail(
                "a key's type and name become a folder and a file name: no '/', '\\', ':' "
                f"in them and no leading '.'; got {value[:80]!r}",
            )
    if len(name.encode("utf-8")) > MAX_NAME_BYTES:
        raise _fail(f"the name part is longer than {MAX_NAME_BYTES} bytes of UTF-8")
    return kind, name


def check_key(value: Any) -> str:
    """The key, validated and lower-cased."""
    kind, name = parse_key(value)
    return f"{kind}:{name}"


def entity_path(key: str) -> str:
    """``entities/<type>/<name>.md``: the one place a key becomes a path."""
    kind, name = parse_key(key)
    return f"{ENTITIES_DIR}/{kind}/{name}{ENTITY_SUFFIX}"


def key_of_path(path: str) -> str | None:
    """The key a path under ``entities/`` holds, or None when it is not an entity file's."""
    parts = path.split("/")
    if len(parts) != 3 or parts[0] != ENTITIES_DIR or not parts[2].endswith(ENTITY_SUFFIX):
        return None
    try:
        key = check_key(f"{parts[1]}:{parts[2][: -len(ENTITY_SUFFIX)]}")
    except ValidationError:
        return None
    return key if entity_path(key) == path else None


def links_in(text: str) -> list[str]:
    """The targets of ``[[...]]`` links in ``text``, lower-cased, in order, each once."""
    seen: dict[str, None] = {}
    for match in _LINK.finditer(text):
        seen.setdefault(" ".join(match.group(1).split()).lower(), None)
    return [target for target in seen if target]


def label_term(text: str) -> str:
    """How a key, a name, an alias or a link's target is compared: lower-cased, whitespace runs
    made one space, commas made spaces (the index keeps a record's mentions comma-separated)."""
    return " ".join(text.replace(",", " ").split()).lower()


def mention_terms(entities: Iterable[str], content: str) -> list[str]:
    """What a record names or links, as :func:`label_term`s: its ``entities`` keys, then the
    targets of its ``[[links]]``, each once."""
    terms = dict.fromkeys(label_term(key) for key in entities)
    terms.update(dict.fromkeys(label_term(target) for target in links_in(content)))
    return [term for term in terms if term]
