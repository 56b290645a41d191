"""The record-aware three-way merge of two trees, shared by ``lantern sync`` and ``review accept``.

Paths only one side changed take that side; record files both sides changed go through
:func:`lantern_git.model.record_merge.merge_records` (the function the git merge driver runs, so a
plain ``git pull`` merges records alike), the two files of a source both sides changed through
:func:`lantern_git.model.source_merge.merge_source`, entity files field by field
(:func:`lantern_git.model.entity_merge.merge_entity_files`), and any other file through git's
line merge.
The result is a tree object and a report of what merged; moving a branch to it is the caller's
business (a sync's merge commit, an accept's commit), through the write transaction.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, cast

import pygit2
from pygit2.enums import FileMode

from ..errors import GitError
from ..git.repo import BLOB_MODE, EXECUTABLE_MODE, Entry, GitRepo
from .entity_keys import key_of_path
from .entity_merge import merge_entity_files
from .record_file import expected_id
from .record_merge import MergeError, RecordMerge, merge_records
from .source import PIN_DIGITS, SourceRef, body_path, manifest_path, parse_source_path, source_dir
from .source_merge import SourceMerge, SourceVersion, merge_source


@dataclass
class RecordReport:
    """A record both sides changed, merged field by field."""

    id: str
    merge: RecordMerge | None = None
    # Why the record needed care beyond a field merge (deleted on one side, an invalid side).
    note: str | None = None

    def trailer(self) -> str:
        parts = list(self.merge.fields) if self.merge is not None else []
        if self.note:
            parts.append(self.note)
        return f"{self.id} ({', '.join(parts)})" if parts else self.id

    def to_dict(self, ours: str = "local", theirs: str = "remote") -> dict[str, Any]:
        conflicts = self.merge.conflicts if self.merge is not None else ()
        return {
            "id": self.id,
            "fields": [c.to_dict(ours, theirs) for c in conflicts],
            "note": self.note,
        }


@dataclass
class SourceReport:
    """A source both sides changed, merged as a pair of files (sourcemerge.py's rules)."""

    id: str
    merge: SourceMerge
    # The blob id of the version a re-ingest left behind: reachable in the other parent.
    other_blob: str | None = None

    def notes(self) -> list[str]:
        merge = self.merge
        parts = list(merge.conflicts)
        if merge.body_merge.how == "appended":
            parts.append("appended on both sides")
        elif merge.body_merge.how == "reingested" and self.other_blob:
            # A pinned reference: lantern source show reads the other version from history.
            parts.append(f"re-ingested on both sides; other version {self.other_ref}")
        if merge.kept is not None:
            parts.append(f"removed {'remote' if merge.kept == 'ours' else 'local'}; kept")
        parts.extend(
            f"invalid {'local' if side == 'ours' else 'remote'} manifest replaced"
            for side in merge.invalid
        )
        return parts

    @property
    def other_ref(self) -> str | None:
        return str(SourceRef(self.id, self.other_blob)) if self.other_blob else None

    def trailer(self) -> str:
        parts = self.notes()
        return f"{self.id} ({', '.join(parts)})" if parts else self.id

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "how": self.merge.body_merge.how,
            "fields": list(self.merge.conflicts),
            "other": self.other_ref,
            "notes": self.notes(),
        }


@dataclass
class TreeMerge:
    """The merged tree (written, not referenced yet) and what merged on both sides."""

    tree: pygit2.Oid
    records: list[RecordReport] = field(default_factory=list)
    sources: list[SourceReport] = field(default_factory=list)


def _blob(repo: pygit2.Repository, entry: Entry | None) -> bytes | None:
    return repo[entry[0]].peel(pygit2.Blob).data if entry is not None else None


class Unmergeable(GitError):
    """Both sides changed files that no lantern merge covers (not records, not sources)."""

    def __init__(self, paths: list[str]):
        self.paths = paths
        self.shown = ", ".join(paths[:5]) + (" ..." if len(paths) > 5 else "")
        super().__init__(
            f"both sides changed {self.shown} in ways lantern cannot merge; nothing was "
            "changed. Merge with git (git pull --no-rebase), resolve, commit, then run "
            "lantern sync again",
            code="merge_conflict",
        )


def merge_trees(
    git: GitRepo,
    base: pygit2.Tree | None,
    ours: pygit2.Tree | None,
    theirs: pygit2.Tree,
    *,
    strict: bool = True,
) -> TreeMerge:
    """Three-way merge of trees: record files field by field, other files as git would.

    ``strict`` is off for virtual merge bases (the merge of a criss-cross's bases), where an
    unmergeable file is left out of the base rather than stopping the sync: git's virtual base
    holds such a file with conflict markers, which neither side of the merge that follows
    equals, and a base without the file is the same to that merge (two different versions are
    refused, one version on both sides is taken; a record's merge reads a base with markers
    as empty too). Keeping one side instead would let the other side's version through as the
    only change.
    """
    repo = git.repo
    ours_changes = git.tree_changes(base, ours)
    theirs_changes = git.tree_changes(base, theirs)
    result: dict[str, Entry | None] = {}
    reports: list[RecordReport] = []
    unmerged: list[str] = []
    # A source is two files that change together: when both sides touched either file of a
    # source, the pair merges as one (sourcemerge.py); otherwise each path takes its one side.
    both = _source_ids(ours_changes) & _source_ids(theirs_changes)
    source_reports: list[SourceReport] = []
    for source_id in sorted(both):
        merged_source = _merge_source(repo, source_id, base, ours, theirs)
        if merged_source is None:
            if strict:
                unmerged.append(manifest_path(source_id))
            else:
                result.update(dict.fromkeys(_source_files(repo, ours, source_id)))
            continue
        entries, source_report = merged_source
        result.update(entries)
        source_reports.append(source_report)
    for path, theirs_entry in sorted(theirs_changes.items()):
        parsed = parse_source_path(path)
        if parsed is not None and parsed[0] in both:
            continue
        if path not in ours_changes:
            result[path] = theirs_entry
            continue
        ours_entry = ours_changes[path]
        if ours_entry == theirs_entry:
            continue
        base_entry = git.entry_at(base, path)
        record_id = expected_id(path)
        if record_id is not None and _is_file(ours_entry) and _is_file(theirs_entry):
            outcome = _merge_record(repo, path, record_id, base_entry, ours_entry, theirs_entry)
            if outcome is None:
                if strict:
                    unmerged.append(path)
                else:
                    result[path] = None
                continue
            entry, report = outcome
            reports.append(report)
            if entry != ours_entry:
                result[path] = entry
            continue
        if key_of_path(path) is not None:
            merged = _merge_entity(repo, path, base_entry, ours_entry, theirs_entry)
        else:
            merged = _merge_other(repo, path, base_entry, ours_entry, theirs_entry)
        if merged is None:
            if strict:
                unmerged.append(path)
            else:
                result[path] = None
        elif merged != ours_entry:
            result[path] = merged
    if unmerged:
        raise Unmergeable(unmerged)
    return TreeMerge(git.build_tree(ours, result), reports, source_reports)


def _source_ids(changes: Mapping[str, Entry | None]) -> set[str]:
    return {parsed[0] for path in changes if (parsed := parse_source_path(path)) is not None}


def _source_files(
    repo: pygit2.Repository, tree: pygit2.Tree | None, source_id: str
) -> dict[str, Entry]:
    """path -> entry of every file of ``source_id`` in ``tree`` (its manifest and bodies)."""
    if tree is None:
        return {}
    folder = source_dir(source_id)
    try:
        shard = repo[tree[folder].id]
    except KeyError:
        return {}
    if not isinstance(shard, pygit2.Tree):
        return {}
    files: dict[str, Entry] = {}
    for item in shard:
        path = f"{folder}/{item.name}"
        parsed = parse_source_path(path)
        if (
            parsed is not None
            and parsed[0] == source_id
            and _is_file((str(item.id), item.filemode))
        ):
            files[path] = (str(item.id), int(item.filemode))
    return files


def _version(repo: pygit2.Repository, files: dict[str, Entry], source_id: str) -> SourceVersion:
    manifest = _blob(repo, files.get(manifest_path(source_id)))
    bodies = sorted(p for p in files if p != manifest_path(source_id))
    if not bodies:
        return SourceVersion(manifest)
    # Two bodies for one source is a broken tree (lantern check says so); the first by name
    # stands for the source, so the choice is the same on every host.
    # sources/<ab>/<id>.<ext>: the folder and the id hold no dot
    return SourceVersion(manifest, _blob(repo, files[bodies[0]]), bodies[0].partition(".")[2])


def _merge_source(
    repo: pygit2.Repository,
    source_id: str,
    base: pygit2.Tree | None,
    ours: pygit2.Tree | None,
    theirs: pygit2.Tree,
) -> tuple[dict[str, Entry | None], SourceReport] | None:
    """The merged files of a source both sides changed (path -> entry, None to remove), or
    None when it cannot be merged."""
    files = [_source_files(repo, tree, source_id) for tree in (base, ours, theirs)]
    versions = [_version(repo, f, source_id) for f in files]
    try:
        merged = merge_source(versions[0], versions[1], versions[2], source_id)
    except MergeError:
        return None
    entries: dict[str, Entry | None] = dict.fromkeys(files[1])
    if merged.manifest is not None:
        entries[manifest_path(source_id)] = (str(repo.create_blob(merged.manifest)), BLOB_MODE)
    if merged.body is not None and merged.ext is not None:
        entries[body_path(source_id, merged.ext)] = (str(repo.create_blob(merged.body)), BLOB_MODE)
    other_blob = None
    other = merged.body_merge.other
    if other is not None:
        other_blob = str(repo.create_blob(other))[:PIN_DIGITS]
    return entries, SourceReport(source_id, merged, other_blob)


def _is_file(entry: tuple[str, int] | None) -> bool:
    return entry is None or entry[1] in (BLOB_MODE, EXECUTABLE_MODE)


def _merge_record(
    repo: pygit2.Repository,
    path: str,
    record_id: str,
    base_entry: Entry | None,
    ours_entry: Entry | None,
    theirs_entry: Entry | None,
) -> tuple[Entry | None, RecordReport] | None:
    if ours_entry is None or theirs_entry is None:
        # Deleted by hand on one side, changed on the other: keep the changed record.
        side = "local" if ours_entry is None else "remote"
        return (theirs_entry or ours_entry), RecordReport(record_id, note=f"deleted {side}; kept")
    try:
        merged = merge_records(
            _blob(repo, base_entry), _blob(repo, ours_entry), _blob(repo, theirs_entry), path
        )
    except MergeError:
        return None
    note = None
    if merged.invalid_side is not None:
        side = "local" if merged.invalid_side == "ours" else "remote"
        note = f"invalid {side} version replaced"
    oid = str(repo.create_blob(merged.text.encode("utf-8")))
    return (oid, BLOB_MODE), RecordReport(record_id, merge=merged, note=note)


def _merge_entity(
    repo: pygit2.Repository,
    path: str,
    base_entry: Entry | None,
    ours_entry: Entry | None,
    theirs_entry: Entry | None,
) -> Entry | None:
    """An entity file both sides changed: field by field (entity_merge.py), or None when a
    side removed it (an empty side, to the merge) or neither reads."""
    if not all(_is_file(e) for e in (base_entry, ours_entry, theirs_entry)):
        return None
    try:
        data = merge_entity_files(
            _blob(repo, base_entry), _blob(repo, ours_entry), _blob(repo, theirs_entry), path
        )
    except MergeError:
        return None
    return str(repo.create_blob(data)), BLOB_MODE


def _merge_other(
    repo: pygit2.Repository,
    path: str,
    base_entry: Entry | None,
    ours_entry: Entry | None,
    theirs_entry: Entry | None,
) -> Entry | None:
    """A non-record file both sides changed: git's line merge, or None on a conflict."""
    if (
        ours_entry is None
        or theirs_entry is None
        or not (_is_file(ours_entry) and _is_file(theirs_entry) and _is_file(base_entry))
    ):
        return None
    if ours_entry[1] != theirs_entry[1]:
        return None

    def entry(e: Entry | None) -> pygit2.IndexEntry | None:
        if e is None:
            return None
        # A file's mode as git stores it; pygit2 takes the plain int where it types a FileMode.
        return pygit2.IndexEntry(path, pygit2.Oid(hex=e[0]), cast(FileMode, e[1]))

    try:
        # A MergeFileResult, its contents decoded as UTF-8 (ValueError when the merged file is
        # not: left to git, as a conflict is)
        outcome = repo.merge_file_from_index(
            entry(base_entry), entry(ours_entry), entry(theirs_entry)
        )
    except (pygit2.GitError, ValueError):
        return None
    # pygit2 before 1.19 (the newest on Python 3.10) returns the text alone, markers and all,
    # without saying whether it merged: left to git (docs/sync.md)
    if isinstance(outcome, str) or not outcome.automergeable:
        return None
    return str(repo.create_blob(outcome.contents.encode("utf-8"))), ours_entry[1]
