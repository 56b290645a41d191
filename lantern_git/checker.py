"""Hand edits: ``lantern check`` validates record files, ``lantern commit`` commits them.

People edit record files with any editor and git; these are the gates that keep such edits
inside the schema before they become history. A problem is reported as ``path:line: message``.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterable
from dataclasses import dataclass, field

from .errors import CheckFailed, InvalidInput, ValidationError
from .fields import MAX_FILE_BYTES
from .record import ID_RE, Record

MEMORY_DIR = "memory"


@dataclass(frozen=True)
class Problem:
    path: str
    line: int | None
    message: str

    def __str__(self) -> str:
        where = self.path + (f":{self.line}" if self.line else "")
        return f"{where}: {self.message}"

    def to_dict(self) -> dict:
        return {"path": self.path, "line": self.line, "message": self.message}


@dataclass
class CheckReport:
    checked: int = 0
    problems: list[Problem] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems

    def to_dict(self) -> dict:
        return {
            "ok": self.ok,
            "checked": self.checked,
            "problems": [p.to_dict() for p in self.problems],
        }


def layout_problem(path: str) -> str | None:
    """Why ``path`` (relative, posix) is not a place a record can live, or None."""
    parts = path.split("/")
    if len(parts) != 3 or parts[0] != MEMORY_DIR:
        return "is outside the store layout; records live at memory/<aa>/<id>.md"
    stem, ext = os.path.splitext(parts[2])
    if ext != ".md" or not ID_RE.fullmatch(stem):
        return "is not named <16 hex digit id>.md; records live at memory/<aa>/<id>.md"
    if parts[1] != stem[:2]:
        return f"is in the wrong folder; record {stem} belongs at memory/{stem[:2]}/{stem}.md"
    return None


def parse_record_bytes(path: str, data: bytes) -> tuple[Record | None, Problem | None]:
    """A record from file bytes, or the first problem with them, located in ``path``."""
    if len(data) > MAX_FILE_BYTES:
        return None, Problem(path, None, f"is larger than {MAX_FILE_BYTES} bytes")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as err:
        return None, Problem(path, data[: err.start].count(b"\n") + 1, "is not valid UTF-8")
    try:
        record = Record.from_markdown(text)
    except ValidationError as err:
        return None, Problem(path, err.line, err.reason)
    return record, None


def validate_file(path: str, data: bytes) -> tuple[Record | None, list[Problem]]:
    """Every problem of one record file: its place in the layout, its text, its id."""
    problems: list[Problem] = []
    misplaced = layout_problem(path)
    if misplaced:
        problems.append(Problem(path, None, misplaced))
    record, problem = parse_record_bytes(path, data)
    if problem:
        problems.append(problem)
        return None, problems
    stem = os.path.splitext(os.path.basename(path))[0]
    if not misplaced and record.id != stem:
        problems.append(Problem(path, 2, f"id: {record.id} does not match the file name {stem}"))
    return record, problems


def walk_memory_files(root: str) -> list[str]:
    """Every file under ``memory/`` in the working tree (lantern's own temporaries aside)."""
    from .git.repo import TMP_SUFFIX

    found = []
    top = os.path.join(root, MEMORY_DIR)
    for folder, dirs, files in os.walk(top):
        dirs.sort()
        for name in files:
            if name.startswith(".") and name.endswith(TMP_SUFFIX):
                continue
            full = os.path.join(folder, name)
            found.append(os.path.relpath(full, root).replace(os.sep, "/"))
    return sorted(found)


def read_file(root: str, path: str) -> tuple[bytes | None, Problem | None]:
    full = os.path.join(root, path)
    if os.path.islink(full):
        return None, Problem(path, None, "is a symbolic link; record files must be regular files")
    try:
        with open(full, "rb") as handle:
            return handle.read(MAX_FILE_BYTES + 1), None
    except OSError as err:
        return None, Problem(path, None, f"cannot be read: {err.strerror}")


def check_files(root: str, paths: Iterable[str] | None = None) -> CheckReport:
    """Validate ``paths`` (default: every file under memory/), including duplicate ids."""
    report = CheckReport()
    owners: dict[str, list[str]] = {}
    for path in walk_memory_files(root) if paths is None else sorted(paths):
        report.checked += 1
        data, problem = read_file(root, path)
        if problem:
            report.problems.append(problem)
            continue
        record, problems = validate_file(path, data)
        report.problems.extend(problems)
        if record is not None:
            owners.setdefault(record.id, []).append(path)
    for record_id, paths_with_id in owners.items():
        if len(paths_with_id) > 1:
            for path in paths_with_id:
                others = ", ".join(p for p in paths_with_id if p != path)
                report.problems.append(
                    Problem(path, 2, f"id: duplicate id {record_id}, also in {others}")
                )
    report.problems.sort(key=lambda p: (p.path, p.line or 0))
    return report


# ---------------------------------------------------------------------------- lantern commit


@dataclass
class HandCommit:
    commit: str | None
    records: list[str]
    updated: list[str]

    def to_dict(self) -> dict:
        return {"commit": self.commit, "records": self.records, "updated_at_set": self.updated}


def changed_memory_paths(git) -> list[str]:
    """Paths under memory/ whose working-tree state differs from HEAD (new, changed, deleted)."""
    import pygit2

    repo = git.repo
    try:
        statuses = repo.status(untracked_files="all", ignored=False)
    except TypeError:  # pragma: no cover - older pygit2
        statuses = repo.status()
    head_tree = git.head_tree()
    changed = []
    for path, flags in statuses.items():
        if not path.startswith(MEMORY_DIR + "/") or flags == pygit2.GIT_STATUS_CURRENT:
            continue
        if flags & pygit2.GIT_STATUS_IGNORED:
            continue
        full = os.path.join(git.root, path)
        current = read_file(git.root, path)[0] if os.path.lexists(full) else None
        if git.blob_at(head_tree, path) != current or os.path.islink(full):
            changed.append(path)
    return sorted(changed)


def commit_hand_edits(
    store, message: str | None = None, *, reason: str | None = None
) -> tuple[HandCommit, CheckReport]:
    """Validate the record files changed since HEAD and commit them as one ``edit``.

    Records whose fields or content changed get a new ``updated_at`` (only that line is
    rewritten). Invalid or deleted files are refused with :class:`CheckFailed`, writing nothing.
    """
    from .record import record_path

    with store._writing():
        git = store.git
        paths = changed_memory_paths(git)
        report = check_files(store.root, [p for p in paths if _exists(store.root, p)])
        head_tree = git.head_tree()
        for path in paths:
            if not _exists(store.root, path):
                report.checked += 1
                report.problems.append(
                    Problem(
                        path,
                        None,
                        "was deleted; lantern never deletes records (archive it instead; "
                        f"bring the file back with: git checkout HEAD -- {path})",
                    )
                )
        if not report.ok:
            report.problems.sort(key=lambda p: (p.path, p.line or 0))
            raise HandEditsInvalid(report)
        if not paths:
            return HandCommit(None, [], []), report
        now = int(time.time())
        files: dict[str, bytes] = {}
        ids: list[str] = []
        updated: list[str] = []
        for path in paths:
            data, _ = read_file(store.root, path)
            text = data.decode("utf-8")
            record = Record.from_markdown(text)
            old_data = git.blob_at(head_tree, record_path(record.id))
            old = _parse_quietly(old_data)
            if old is not None and _differs(old, record) and record.updated_at == old.updated_at:
                record = record.evolve(updated_at=max(now, old.updated_at))
                text = record.rewrite(text)
                updated.append(record.id)
            files[path] = text.encode("utf-8")
            ids.append(record.id)
        summary = message.strip() if message and message.strip() else _default_summary(ids)
        if "\n" in summary or "\r" in summary:
            raise InvalidInput("message: must be a single line", code="invalid_message")
        commit = store._commit(files, summary, "edit", ids, reason=reason)
    return HandCommit(commit, ids, updated), report


class HandEditsInvalid(CheckFailed):
    """``lantern commit`` found invalid or deleted record files; nothing was written."""

    def __init__(self, report: CheckReport):
        self.report = report
        lines = "\n".join(str(p) for p in report.problems)
        count = len(report.problems)
        super().__init__(
            f"refusing to commit: {count} problem{'s' if count != 1 else ''} in record files "
            f"(nothing was written)\n{lines}"
        )


def _exists(root: str, path: str) -> bool:
    return os.path.lexists(os.path.join(root, path))


def _parse_quietly(data: bytes | None) -> Record | None:
    if data is None:
        return None
    try:
        return Record.from_markdown(data.decode("utf-8"))
    except (UnicodeDecodeError, ValidationError):
        return None


def _differs(old: Record, new: Record) -> bool:
    """Whether anything but ``updated_at`` changed (a reformatted file is not a change)."""
    from dataclasses import replace

    return replace(old, updated_at=new.updated_at) != new


def _default_summary(ids: list[str]) -> str:
    if len(ids) == 1:
        return f"edit {ids[0]} by hand"
    return f"edit {len(ids)} records by hand"
