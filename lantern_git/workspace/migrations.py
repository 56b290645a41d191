"""Store formats, and the migrations that bring a store from one to the next.

A store's format is the ``format:`` key of its ``lantern.yaml``. Format 1 is the store of
records and sources; format 2 adds entities (``entities/<type>/<name>.md``, docs/entities.md).
A lantern refuses a store of a format newer than it knows (it could misread or damage it), and
refuses a write that needs a newer format than the store has (``needs_migration``): the user
runs ``lantern migrate`` once, on purpose, as one commit everyone can see.

The migrations are an ordered table of small steps, each bringing the store up one format, in
the shape of sqlite-utils' ``migrations.py`` (registered steps; pending, applied, apply): format
3 is one more ``@MIGRATIONS.step(3, ...)``. A step is pure: it is handed the store's files as
the commit being migrated has them and returns the files it changes. Each step spells out its
own bytes (never a constant the code may change later), so that a store migrated today and one
migrated next year get the same commit. The write itself (one commit, the journal, the lock)
is :meth:`Workspace.migrate <lantern_git.workspace.workspace.Workspace.migrate>`'s.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import yaml

from ..errors import StoreError

MARKER = "lantern.yaml"
ATTRIBUTES = ".gitattributes"

# The committed files of the commit being migrated, by path (None: no such file), as the
# steps before have left them.
Files = Callable[[str], bytes | None]
# A step's change: the files it writes, from the store's files as they are.
Change = Callable[[Files], dict[str, bytes]]

_FORMAT_LINE = re.compile(rb"^format:[^\n]*$", re.MULTILINE)


def read_format(data: bytes, where: str) -> int:
    """The format a ``lantern.yaml`` names; :class:`StoreError` when it names none."""
    try:
        parsed = yaml.load(data, Loader=yaml.CSafeLoader)
    except yaml.YAMLError as err:
        raise StoreError(f"{where}: cannot be read: {err}") from None
    version = parsed.get("format") if isinstance(parsed, dict) else None
    if isinstance(version, bool) or not isinstance(version, int) or version < 1:
        raise StoreError(f"{where}: 'format' must be a positive integer, got {version!r}")
    return version


def parse_marker(data: bytes, where: str) -> tuple[dict[str, Any], int]:
    """``lantern.yaml``'s keys and its format."""
    version = read_format(data, where)
    return yaml.load(data, Loader=yaml.CSafeLoader), version


def with_format(data: bytes | None, version: int) -> bytes:
    """``lantern.yaml`` naming ``version``, every other line (keys, comments) kept as it is."""
    line = b"format: %d" % version
    if data is None:
        return line + b"\n"
    if _FORMAT_LINE.search(data):
        return _FORMAT_LINE.sub(line, data, count=1)
    return line + b"\n" + data


def with_attribute_lines(data: bytes | None, lines: tuple[str, ...]) -> bytes:
    """``.gitattributes`` with ``lines`` added at the end where missing."""
    text = (data or b"").decode("utf-8", "replace")
    have = {existing.strip() for existing in text.splitlines()}
    missing = [line for line in lines if line not in have]
    if not missing:
        return data or b""
    if text and not text.endswith("\n"):
        text += "\n"
    return (text + "".join(line + "\n" for line in missing)).encode("utf-8")


@dataclass(frozen=True)
class Step:
    """One migration: brings a store of format ``version - 1`` to ``version``."""

    version: int
    name: str
    description: str
    change: Change

    def to_dict(self) -> dict[str, Any]:
        return {"format": self.version, "name": self.name, "description": self.description}


@dataclass
class Plan:
    """What bringing a store from ``start`` to ``target`` writes: the steps, and the files (path
    -> bytes) of the one commit that applies them all."""

    start: int
    target: int
    steps: list[Step] = field(default_factory=list)
    files: dict[str, bytes] = field(default_factory=dict)

    @property
    def trailer(self) -> str:
        return f"Lantern-Format: {self.start} -> {self.target}"


class Migrations:
    """The ordered table of steps (see the module's docstring)."""

    def __init__(self) -> None:
        self._steps: list[Step] = []

    def step(self, version: int, name: str, description: str) -> Callable[[Change], Change]:
        """Register the step that brings a store to ``version``: the next one, in order."""

        def register(change: Change) -> Change:
            if version != self.latest + 1:
                raise ValueError(f"migration to format {version} after format {self.latest}")
            self._steps.append(Step(version, name, description, change))
            return change

        return register

    @property
    def latest(self) -> int:
        """The newest format: the one new stores are made at."""
        return self._steps[-1].version if self._steps else 1

    @property
    def steps(self) -> list[Step]:
        return list(self._steps)

    def applied(self, current: int) -> list[Step]:
        return [step for step in self._steps if step.version <= current]

    def pending(self, current: int) -> list[Step]:
        return [step for step in self._steps if step.version > current]

    def plan(self, read: Files, current: int) -> Plan:
        """The one commit that applies every pending step to the files ``read`` gives."""
        plan = Plan(current, current)
        for step in self.pending(current):
            changed = step.change(lambda path: plan.files.get(path, read(path)))
            plan.files.update(changed)
            plan.files[MARKER] = with_format(plan.files.get(MARKER, read(MARKER)), step.version)
            plan.steps.append(step)
            plan.target = step.version
        return plan


MIGRATIONS = Migrations()


@MIGRATIONS.step(
    2,
    "entities",
    "entities: entity files under entities/ merge field by field, and lantern.yaml goes to the "
    "merge driver, which refuses to merge two stores of different formats",
)
def _entities(read: Files) -> dict[str, bytes]:
    lines = ("entities/**/*.md merge=lantern", "lantern.yaml merge=lantern")
    before = read(ATTRIBUTES)
    after = with_attribute_lines(before, lines)
    return {} if after == before else {ATTRIBUTES: after}


# The newest format this lantern knows, and makes new stores at.
FORMAT = MIGRATIONS.latest


def attribute_lines(version: int) -> tuple[str, ...]:
    """The ``.gitattributes`` lines a store of ``version`` has (``lantern init`` writes them)."""
    lines: tuple[str, ...] = ("memory/**/*.md merge=lantern", "sources/** merge=lantern")
    for step in MIGRATIONS.applied(version):
        lines += tuple(
            line
            for line in step.change(lambda path: None).get(ATTRIBUTES, b"").decode().splitlines()
            if line
        )
    return lines
