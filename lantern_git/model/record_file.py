"""Record files: where a record lives, the one safe way to read one, and what is wrong with it.

Every reader (index refresh and rebuild, show, status, check, commit, export, merge, history,
``--at``) goes through this module, so a record file is judged the same way everywhere: a FIFO,
a socket, a folder or a symbolic link where a record file should be is reported with its path
and reason by every command, and no command can hang on one (files are opened without
blocking, and only regular files are read).
"""

from __future__ import annotations

import errno
import os
import re
import stat
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, NamedTuple

from ..core.fields import MAX_FILE_BYTES, TMP_SUFFIX
from ..errors import NotFound, StoreError, ValidationError
from .record import ID_RE, Record, check_id_prefix

if TYPE_CHECKING:
    import pygit2

    from ..git.repo import GitRepo

MEMORY_DIR = "memory"
RECORD_SUFFIX = ".md"
LAYOUT = "memory/<aa>/<id>.md"
# The record files, as a .gitattributes pattern: the store sends them to the merge driver.
MERGE_PATTERN = f"{MEMORY_DIR}/**/*{RECORD_SUFFIX}"
# The three markers git writes into a file it could not merge, each at the start of a line.
_CONFLICT = re.compile(r"^<{7}(?: |$).*?^={7}$.*?^>{7}(?: |$)", re.MULTILINE | re.DOTALL)


def conflict_line(text: str) -> int | None:
    """The line where git's merge conflict markers begin in ``text`` (a ``<<<<<<<``, a
    ``=======`` and a ``>>>>>>>`` line, in that order), or None: what a line-by-line merge
    that went around lantern's merge drivers leaves in a file."""
    conflict = _CONFLICT.search(text)
    return None if conflict is None else text[: conflict.start()].count("\n") + 1


def record_path(record_id: str) -> str:
    """Where a record lives, relative to the store root. The id is checked so it never escapes."""
    if not isinstance(record_id, str) or not ID_RE.fullmatch(record_id):
        raise ValidationError(
            f"invalid id {record_id!r}: expected 16 lowercase hex digits", field="id"
        )
    return f"{MEMORY_DIR}/{record_id[:2]}/{record_id}{RECORD_SUFFIX}"


def expected_id(path: str | None) -> str | None:
    """The id a record file at ``path`` must hold, or None if ``path`` is not a record path."""
    if not path:
        return None
    parts = path.split("/")
    if len(parts) != 3 or parts[0] != MEMORY_DIR or not parts[2].endswith(RECORD_SUFFIX):
        return None
    stem = parts[2][: -len(RECORD_SUFFIX)]
    if not ID_RE.fullmatch(stem) or parts[1] != stem[:2]:
        return None
    return stem


def layout_problem(path: str) -> str | None:
    """Why ``path`` (relative, posix) is not a place a record can live, or None."""
    parts = path.split("/")
    if len(parts) != 3 or parts[0] != MEMORY_DIR:
        return f"is outside the store layout; records live at {LAYOUT}"
    stem, ext = os.path.splitext(parts[2])
    if ext != RECORD_SUFFIX or not ID_RE.fullmatch(stem):
        return f"is not named <16 hex digit id>.md; records live at {LAYOUT}"
    if parts[1] != stem[:2]:
        return f"is in the wrong folder; record {stem} belongs at {record_path(stem)}"
    return None


@dataclass(frozen=True)
class Problem:
    """What is wrong with one file, located: ``path:line: message``."""

    path: str
    line: int | None
    message: str

    def __str__(self) -> str:
        where = self.path + (f":{self.line}" if self.line else "")
        return f"{where}: {self.message}"

    def to_dict(self) -> dict[str, str | int | None]:
        return {"path": self.path, "line": self.line, "message": self.message}


class RecordFile(NamedTuple):
    """One record file as read: its bytes (None when unreadable), its record, or its problem."""

    data: bytes | None
    record: Record | None
    problem: Problem | None


_KINDS_OF_FILE = (
    (stat.S_ISDIR, "a folder"),
    (stat.S_ISFIFO, "a named pipe (FIFO)"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
)


def _not_regular(path: str, mode: int, what: str) -> Problem:
    kind = next((f" but {name}" for test, name in _KINDS_OF_FILE if test(mode)), "")
    return Problem(path, None, f"is not a regular file{kind}; {what} must be regular files")


def _linked_parent(root: str, path: str) -> str | None:
    current = root
    for part in path.split("/")[:-1]:
        current = os.path.join(current, part)
        if os.path.islink(current):
            return os.path.relpath(current, root)
    return None


def read_bytes(
    root: str, path: str, limit: int = MAX_FILE_BYTES, what: str = "record files"
) -> tuple[bytes | None, Problem | None]:
    """A file's bytes (at most ``limit + 1``), read only if it is a regular file inside the store.

    Never follows a symbolic link (the file's or a folder's above it) and never blocks: a FIFO
    is opened with ``O_NONBLOCK`` and refused by its type before anything is read.
    """
    linked = _linked_parent(root, path)
    if linked is not None:
        return None, Problem(
            path, None, f"lies under {linked}, a symbolic link; lantern reads only inside the store"
        )
    full = os.path.join(root, path)
    try:
        fd = os.open(full, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as err:
        if err.errno == errno.ENOENT:
            return None, None
        try:
            mode = os.lstat(full).st_mode
        except OSError:
            mode = stat.S_IFREG
        if err.errno == errno.ELOOP or stat.S_ISLNK(mode):
            return None, Problem(path, None, f"is a symbolic link; {what} must be regular files")
        if not stat.S_ISREG(mode):  # a socket cannot even be opened
            return None, _not_regular(path, mode, what)
        return None, Problem(path, None, f"cannot be read: {err.strerror}")
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):
        os.close(fd)
        return None, _not_regular(path, mode, what)
    with open(fd, "rb") as handle:
        try:
            return handle.read(limit + 1), None
        except OSError as err:
            return None, Problem(path, None, f"cannot be read: {err.strerror}")


def parse(
    path: str, data: bytes, *, check_layout: bool = True
) -> tuple[Record | None, Problem | None]:
    """The record in ``data`` (a file's bytes, or a blob's), or the first problem with it."""
    if check_layout:
        misplaced = layout_problem(path)
        if misplaced:
            return None, Problem(path, None, misplaced)
    if len(data) > MAX_FILE_BYTES:
        return None, Problem(path, None, f"is larger than {MAX_FILE_BYTES} bytes")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as err:
        return None, Problem(path, data[: err.start].count(b"\n") + 1, "is not valid UTF-8")
    conflict = conflict_line(text)
    if conflict is not None:
        return None, Problem(
            path,
            conflict,
            "holds git merge conflict markers: git merged it line by line, without lantern's "
            "record merge driver. Undo that merge with git merge --abort and merge with "
            "lantern sync (field by field), or keep one version (git checkout --ours or "
            f"--theirs -- {path}) and run lantern commit",
        )
    try:
        record = Record.from_markdown(text)
    except ValidationError as err:
        return None, Problem(path, err.line, err.reason)
    except RecursionError:
        return None, Problem(path, None, "front matter is nested too deeply")
    stem = expected_id(path)
    if check_layout and stem is not None and record.id != stem:
        return None, Problem(path, 2, f"id: {record.id} does not match the file name {stem}")
    return record, None


def read_record_file(root: str, path: str) -> RecordFile:
    """One record file of the working tree; a file that cannot be used gives a problem."""
    data, problem = read_bytes(root, path)
    if data is None:
        return RecordFile(None, None, problem)
    record, problem = parse(path, data)
    return RecordFile(data, record, problem)


def walk(root: str) -> Iterator[str]:
    """Every entry under ``memory/`` that should be a record file, in path order.

    Folders are entered at the first level only (the shards); anything else, whatever its type
    (a folder, FIFO, socket or symbolic link where a record file should be), is listed, so that
    reading it reports it. Lantern's own temporary files are left out.
    """
    top = os.path.join(root, MEMORY_DIR)
    try:
        entries = sorted(os.scandir(top), key=lambda e: e.name)
    except (FileNotFoundError, NotADirectoryError):
        return
    for entry in entries:
        path = f"{MEMORY_DIR}/{entry.name}"
        if not entry.is_dir(follow_symlinks=False):
            yield path
            continue
        try:
            names = sorted(os.listdir(entry.path))
        except OSError:
            yield path
            continue
        for name in names:
            if not (name.startswith(".") and name.endswith(TMP_SUFFIX)):
                yield f"{path}/{name}"


def record_files(root: str) -> Iterator[tuple[str, os.stat_result]]:
    """Each ``memory/<aa>/*.md`` entry of the working tree with its ``lstat``: what the index
    holds, broken files included (they are reported, not indexed)."""
    top = os.path.join(root, MEMORY_DIR)
    if os.path.islink(top):
        return
    try:
        shards = list(os.scandir(top))
    except (FileNotFoundError, NotADirectoryError):
        return
    for shard in shards:
        if not shard.is_dir(follow_symlinks=False):
            continue
        prefix = f"{MEMORY_DIR}/{shard.name}/"
        for entry in os.scandir(shard.path):
            name = entry.name
            if name.endswith(RECORD_SUFFIX) and not name.startswith("."):
                yield prefix + name, entry.stat(follow_symlinks=False)


def record_candidates(root: str, prefix: str) -> list[str]:
    """The ids of the record files in the working tree that start with ``prefix`` (a checked
    prefix, 4 to 16 hex digits): one listing of its shard folder, no file read."""
    if len(prefix) == 16:
        return [prefix] if os.path.lexists(os.path.join(root, record_path(prefix))) else []
    try:
        names = os.listdir(os.path.join(root, MEMORY_DIR, prefix[:2]))
    except (FileNotFoundError, NotADirectoryError):
        names = []
    stems = (n.removesuffix(RECORD_SUFFIX) for n in names if n.endswith(RECORD_SUFFIX))
    return [n for n in stems if n.startswith(prefix) and ID_RE.fullmatch(n)]


def load(root: str, record_id: str) -> tuple[str, Record]:
    """The record of ``record_id`` as the working tree has it, with its text.

    Raises :class:`NotFound` when there is no such file, and a :class:`StoreError` naming the
    file and its problem when the file cannot be used.
    """
    path = record_path(record_id)
    data, record, problem = read_record_file(root, path)
    if record is None or data is None:
        if problem is None:
            raise NotFound(f"no record with id {record_id}")
        raise StoreError(f"{problem}; fix the file (see lantern check)", code="invalid_record")
    return data.decode("utf-8"), record


def count_records(git: GitRepo, tree: pygit2.Tree | None = None) -> int:
    """How many record paths (``memory/<aa>/<id>.md``) ``tree`` (default: HEAD's) holds,
    counted from the tree's listing without reading a file."""
    return sum(1 for path in git.paths_under(MEMORY_DIR, tree) if expected_id(path) is not None)


class RecordFiles:
    """Record files as the write transaction reads them: it knows no layout and parses no
    file itself, the store hands it :data:`RECORD_FILES`."""

    def owner(self, path: str) -> str | None:
        """The id of the record whose file ``path`` is; None for any other path."""
        return expected_id(path)

    def path(self, record_id: str) -> str:
        return record_path(record_id)

    def load(self, root: str, record_id: str) -> tuple[str, Record]:
        return load(root, record_id)

    def parse(self, path: str, data: bytes) -> tuple[Record | None, Problem | None]:
        return parse(path, data)

    def matching(self, root: str, ref: str) -> tuple[str, list[str]]:
        """``ref`` checked as an id or a prefix of one, and the ids of the working tree's
        record files that start with it."""
        prefix = check_id_prefix(ref)
        return prefix, record_candidates(root, prefix)


RECORD_FILES = RecordFiles()
