"""Hand edits: ``lantern check`` validates record files, ``lantern commit`` commits them.

People edit record files with any editor and git; these are the gates that keep such edits
inside the schema before they become history. A problem is reported as ``path:line: message``.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from ..core.fields import MAX_FILE_BYTES
from ..errors import CheckFailed, InvalidInput
from ..model.entity_keys import ENTITIES_DIR
from ..model.record import Record
from ..model.record_file import (
    MEMORY_DIR,
    Problem,
    expected_id,
    layout_problem,
    parse,
    read_bytes,
    record_path,
    walk,
)
from ..model.source import SOURCES_DIR

SOURCE_LAYOUT = "sources/<aa>/<id>.<ext> beside sources/<aa>/<id>.yaml"


def _kind_of(path: str) -> str:
    """What a problem's file is, by its folder: a record, a source or an entity file."""
    if path.startswith(SOURCES_DIR + "/"):
        return "source"
    return "entity" if path.startswith(ENTITIES_DIR + "/") else "record"


if TYPE_CHECKING:
    from ..git.repo import GitRepo
    from ..workspace.transaction import WriteTransaction


@dataclass
class CheckReport:
    checked: int = 0
    problems: list[Problem] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems

    @property
    def summary(self) -> str:
        """``N problem(s) in record files`` (or ``source files``, ``entity files``, or two or
        three of them joined): what the problems are in, by their paths."""
        count = len(self.problems)
        kinds = {_kind_of(p.path) for p in self.problems}
        named = [kind for kind in ("record", "source", "entity") if kind in kinds]
        where = " and ".join([", ".join(named[:-1]), named[-1]] if len(named) > 1 else named)
        return f"{count} problem{'s' if count != 1 else ''} in {where or 'record'} files"

    def extend(self, checked: int, problems: Iterable[Problem]) -> None:
        """Add what another check (the entity files') found: ``checked`` files, ``problems``."""
        self.checked += checked
        self.problems.extend(problems)

    def to_dict(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "checked": self.checked,
            "problems": [p.to_dict() for p in self.problems],
        }


def check_files(root: str, paths: Iterable[str] | None = None) -> CheckReport:
    """Validate ``paths`` (default: every entry under memory/), including duplicate ids."""
    report = CheckReport()
    owners: dict[str, list[str]] = {}
    for path in walk(root) if paths is None else sorted(paths):
        report.checked += 1
        data, problem = read_bytes(root, path)
        if data is None:
            report.problems.extend([problem] if problem else [])
            continue
        # A misplaced file is reported as such, and its text is still checked.
        misplaced = layout_problem(path)
        if misplaced:
            report.problems.append(Problem(path, None, misplaced))
        record, problem = parse(path, data, check_layout=not misplaced)
        if problem is not None:
            report.problems.append(problem)
        if record is not None:
            owners.setdefault(record.id, []).append(path)
    for record_id, paths_with_id in owners.items():
        if len(paths_with_id) > 1:
            for path in paths_with_id:
                others = ", ".join(p for p in paths_with_id if p != path)
                report.problems.append(
                    Problem(path, 2, f"id: duplicate id {record_id}, also in {others}")
                )
    if paths is None:
        check_sources(root, report)
    report.problems.sort(key=lambda p: (p.path, p.line or 0))
    return report


def check_sources(root: str, report: CheckReport, ids: Iterable[str] | None = None) -> None:
    """Every source (or those of ``ids``): readable, a manifest that parses and describes its
    body; and nothing under sources/ that is not where a source file lives."""
    from ..model.source_file import source_ids, source_problems, stray_paths

    if ids is None:
        for path in stray_paths(root):
            report.checked += 1
            report.problems.append(
                Problem(path, None, f"is not a source file; sources live at {SOURCE_LAYOUT}")
            )
    for source_id in source_ids(root) if ids is None else ids:
        report.checked += 1
        report.problems.extend(source_problems(root, source_id))


# ---------------------------------------------------------------------------- lantern commit


@dataclass
class HandCommit:
    commit: str | None
    records: list[str]
    updated: list[str]
    sources: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "commit": self.commit,
            "records": self.records,
            "updated_at_set": self.updated,
            "sources": self.sources,
        }


def changed_memory_paths(git: GitRepo, top: str = MEMORY_DIR) -> list[str]:
    """Paths under memory/ (or ``top``) whose working-tree state differs from HEAD (new,
    changed, deleted)."""
    import pygit2

    from ..model.source import MAX_SOURCE_BYTES

    limit = MAX_SOURCE_BYTES if top == SOURCES_DIR else MAX_FILE_BYTES
    statuses = git.repo.status(untracked_files="all", ignored=False)
    head_tree = git.head_tree()
    changed = []
    for path, flags in statuses.items():
        if not path.startswith(top + "/") or flags == pygit2.GIT_STATUS_CURRENT:
            continue
        full = os.path.join(git.root, path)
        current = read_bytes(git.root, path, limit)[0] if os.path.lexists(full) else None
        if git.blob_at(head_tree, path) != current or os.path.islink(full):
            changed.append(path)
    return sorted(changed)


def commit_hand_edits(
    tx: WriteTransaction, message: str | None = None, *, reason: str | None = None
) -> tuple[HandCommit, CheckReport]:
    """Validate the record files changed since HEAD and commit them as one ``edit``.

    Records whose fields or content changed get a new ``updated_at`` (only that line is
    rewritten). Invalid or deleted files are refused with :class:`CheckFailed`, writing nothing.
    """
    git = tx.git
    paths = changed_memory_paths(git)
    # git's status lists no FIFO, socket or folder; check reports one at a record path, and
    # commit must refuse it as check does rather than find nothing to commit.
    special = [p for p in _special_entries(tx.root) if p not in paths]
    report = check_files(tx.root, [p for p in paths if _exists(tx.root, p)] + special)
    head_tree = git.head_tree()
    for path in paths:
        if not _exists(tx.root, path):
            report.checked += 1
            report.problems.append(
                Problem(
                    path,
                    None,
                    "was deleted by hand; lantern commit never deletes records (bring the "
                    f"file back with: git checkout HEAD -- {path}; then archive the record, or "
                    f"remove it with: lantern memory delete {expected_id(path) or 'ID'})",
                )
            )
    source_files, source_ids = _source_edits(tx, report)
    if not report.ok:
        report.problems.sort(key=lambda p: (p.path, p.line or 0))
        raise HandEditsInvalid(report)
    if not paths and not source_ids:
        return HandCommit(None, [], []), report
    now = int(time.time())
    files: dict[str, bytes | None] = dict(source_files)
    ids: list[str] = []
    updated: list[str] = []
    for path in paths:
        text, record = tx.read(expected_id(path) or "")
        old = _parse_quietly(path, git.blob_at(head_tree, record_path(record.id)))
        if old is not None and _differs(old, record) and record.updated_at == old.updated_at:
            record = record.evolve(updated_at=max(now, old.updated_at))
            text = record.rewrite(text)
            updated.append(record.id)
        files[path] = text.encode("utf-8")
        ids.append(record.id)
    summary = message.strip() if message and message.strip() else _default_summary(ids, source_ids)
    if "\n" in summary or "\r" in summary:
        raise InvalidInput("message: must be a single line", code="invalid_message")
    commit = tx.commit(files, summary, "edit", ids, reason=reason, sources=source_ids)
    return HandCommit(commit, ids, updated, source_ids), report


def _source_edits(
    tx: WriteTransaction, report: CheckReport
) -> tuple[dict[str, bytes | None], list[str]]:
    """Sources edited by hand: their files to commit, with each manifest's derived fields
    (lines, bytes, sha256, updated_at) brought in step with its body. Problems go to
    ``report``."""
    from ..model.source import parse_source_path
    from ..model.source_file import describe, read_source_file

    changed = changed_memory_paths(tx.git, SOURCES_DIR)
    ids: set[str] = set()
    for path in changed:
        parsed = parse_source_path(path)
        if parsed is None:
            report.checked += 1
            if _exists(tx.root, path):
                report.problems.append(
                    Problem(path, None, f"is not a source file; sources live at {SOURCE_LAYOUT}")
                )
            continue
        ids.add(parsed[0])
    files: dict[str, bytes | None] = {}
    for source_id in sorted(ids):
        report.checked += 1
        found, problem = read_source_file(tx.root, source_id)
        if problem is not None:
            report.problems.append(problem)
            continue
        if found is None:
            report.problems.append(
                Problem(
                    f"{SOURCES_DIR}/{source_id[:2]}/{source_id}.yaml",
                    None,
                    "was deleted by hand; remove a source with: lantern source remove "
                    f"{source_id} (or bring it back with: git checkout HEAD -- "
                    f"{SOURCES_DIR}/{source_id[:2]}/)",
                )
            )
            continue
        manifest = found.manifest
        facts = describe(found.body)
        if any(getattr(manifest, k) != v for k, v in facts.items()):
            manifest = manifest.evolve(
                updated_at=max(int(time.time()), manifest.updated_at), **facts
            )
        files[found.body_path] = found.body
        path = f"{SOURCES_DIR}/{source_id[:2]}/{source_id}.yaml"
        files[path] = found.manifest_bytes if manifest == found.manifest else manifest.to_yaml()
        for other in changed:
            if (
                other.startswith(f"{SOURCES_DIR}/{source_id[:2]}/{source_id}.")
                and other not in files
            ):
                files[other] = None  # a body renamed by hand: the old name goes
    return files, sorted(ids)


class HandEditsInvalid(CheckFailed):
    """``lantern commit`` found invalid or deleted record files; nothing was written."""

    def __init__(self, report: CheckReport):
        self.report = report
        lines = "\n".join(str(p) for p in report.problems)
        super().__init__(f"refusing to commit: {report.summary} (nothing was written)\n{lines}")


def _special_entries(root: str) -> list[str]:
    """Entries under memory/ that are neither a shard folder nor a regular file or symbolic
    link (those git lists): a FIFO, a socket, a device, or a folder where a record file should
    be. Read from the folders' entry types, without a stat per file."""
    found: list[str] = []
    top = os.path.join(root, MEMORY_DIR)
    if os.path.islink(top) or not os.path.isdir(top):
        return found
    for entry in os.scandir(top):
        path = f"{MEMORY_DIR}/{entry.name}"
        if entry.is_dir(follow_symlinks=False):
            try:
                inner = list(os.scandir(entry.path))
            except OSError:
                found.append(path)
                continue
            found.extend(f"{path}/{e.name}" for e in inner if _special(e))
        elif _special(entry):
            found.append(path)
    return sorted(found)


def _special(entry: os.DirEntry[str]) -> bool:
    return not (entry.is_file(follow_symlinks=False) or entry.is_symlink())


def _exists(root: str, path: str) -> bool:
    return os.path.lexists(os.path.join(root, path))


def _parse_quietly(path: str, data: bytes | None) -> Record | None:
    return parse(path, data)[0] if data is not None else None


def _differs(old: Record, new: Record) -> bool:
    """Whether anything but ``updated_at`` changed (a reformatted file is not a change)."""
    return replace(old, updated_at=new.updated_at) != new


def _default_summary(ids: list[str], source_ids: list[str]) -> str:
    if len(ids) == 1 and not source_ids:
        return f"edit {ids[0]} by hand"
    if len(source_ids) == 1 and not ids:
        return f"edit source {source_ids[0]} by hand"
    if not source_ids:
        return f"edit {len(ids)} records by hand"
    return f"edit {len(ids)} records and {len(source_ids)} sources by hand"
