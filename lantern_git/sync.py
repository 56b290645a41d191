"""``lantern sync``: fetch, record-aware merge, push. Never a force-push, never a rewrite.

The network goes through the git CLI (so ssh agents, ``~/.ssh/config`` and credential helpers
work as they do for ``git pull``), with prompts turned off: a missing credential fails at once
with git's message instead of waiting for a password nobody will type.

The merge runs in-process over trees: paths only one side changed take that side; record files
both sides changed go through :func:`lantern_git.merge.merge_records`, the same function the git
merge driver runs, so ``lantern sync`` and a plain ``git pull`` merge records alike. The result
reaches the working tree and ``.git/index`` through the same journal as every lantern write, so a
crash half-way is completed or rolled back by the next command.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import pygit2

from .errors import GitError, InvalidInput, UncommittedChanges
from .git.remote import (
    Target,
    failure,
    fetch,
    fetch_prefixed,
    git_env,
    merge_bases,
    push_branch,
    push_refs,
    resolve_target,
    run_git,
)
from .git.repo import BLOB_MODE, EXECUTABLE_MODE, Entry, GitRepo
from .merge import MergeError, RecordMerge, merge_records
from .recordfile import MEMORY_DIR, expected_id
from .reviewref import REVIEW_PREFIX, check_review_name, review_branches
from .source import (
    PIN_DIGITS,
    SOURCES_DIR,
    SourceRef,
    body_path,
    manifest_path,
    parse_source_path,
    source_dir,
)
from .sourcemerge import SourceMerge, SourceVersion, merge_source

if TYPE_CHECKING:
    import subprocess

    from .transaction import WriteTransaction

MAX_PUSH_ATTEMPTS = 5


# ---------------------------------------------------------------------------- reports


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
    tree: pygit2.Oid
    records: list[RecordReport] = field(default_factory=list)
    sources: list[SourceReport] = field(default_factory=list)


@dataclass
class ReviewBranchSync:
    """What sync did to one review branch (``--review-branches``): ``created`` (it was on the
    remote only), ``fast-forward``, ``merged`` (both hosts added commits: merged record by
    record, as the store's branch is), ``ahead`` (only this host has new commits) or
    ``up to date``; and whether it was pushed."""

    name: str
    how: str = "up to date"
    merge_commit: str | None = None
    merged: list[RecordReport] = field(default_factory=list)
    merged_sources: list[SourceReport] = field(default_factory=list)
    pushed: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "how": self.how,
            "merge_commit": self.merge_commit,
            "merged": [r.to_dict() for r in sorted(self.merged, key=lambda r: r.id)],
            "merged_sources": [
                s.to_dict() for s in sorted(self.merged_sources, key=lambda s: s.id)
            ],
            "pushed": self.pushed,
        }


@dataclass
class SyncReport:
    remote: str
    branch: str
    remote_branch: str
    head_before: str | None = None
    head_after: str | None = None
    remote_head: str | None = None
    incoming_commits: int = 0
    fast_forward: bool = False
    merge_commits: list[str] = field(default_factory=list)
    added: list[str] = field(default_factory=list)
    changed: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    merged: list[RecordReport] = field(default_factory=list)
    merged_sources: list[SourceReport] = field(default_factory=list)
    pushed: bool = False
    pushed_commits: int = 0
    set_upstream: bool = False
    attempts: int = 0
    # Set with --review-branches: each review branch here or on the remote, by name.
    review_branches: list[ReviewBranchSync] | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "remote": self.remote,
            "branch": self.branch,
            "remote_branch": self.remote_branch,
            "head_before": self.head_before,
            "head_after": self.head_after,
            "remote_head": self.remote_head,
            "incoming_commits": self.incoming_commits,
            "fast_forward": self.fast_forward,
            "merge_commits": list(self.merge_commits),
            "records": {
                "added": sorted(set(self.added)),
                "changed": sorted(set(self.changed)),
                "removed": sorted(set(self.removed)),
            },
            "merged": [r.to_dict() for r in sorted(self.merged, key=lambda r: r.id)],
            "merged_sources": [
                s.to_dict() for s in sorted(self.merged_sources, key=lambda s: s.id)
            ],
            "pushed": self.pushed,
            "pushed_commits": self.pushed_commits,
            "set_upstream": self.set_upstream,
            "attempts": self.attempts,
            "review_branches": (
                None
                if self.review_branches is None
                else [b.to_dict() for b in sorted(self.review_branches, key=lambda b: b.name)]
            ),
        }


# ---------------------------------------------------------------------------- tree merge


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

    ``strict`` is off for virtual merge bases, where an unmergeable file keeps ours rather
    than stopping the sync.
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
                continue
            entry, report = outcome
            reports.append(report)
            if entry != ours_entry:
                result[path] = entry
            continue
        merged = _merge_other(repo, path, base_entry, ours_entry, theirs_entry)
        if merged is None:
            if strict:
                unmerged.append(path)
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
    return SourceVersion(manifest, _blob(repo, files[bodies[0]]), bodies[0].rsplit(".", 1)[-1])


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
    for path in list(entries):
        if entries[path] is not None and entries[path] == files[1].get(path):
            del entries[path]  # unchanged from ours: no entry to write
    return entries, SourceReport(source_id, merged, other_blob)


def _is_file(entry: tuple[str, int] | None) -> bool:
    return entry is None or entry[1] in (BLOB_MODE, EXECUTABLE_MODE)


def _merge_record(repo, path, record_id, base_entry, ours_entry, theirs_entry):
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


def _merge_other(repo, path, base_entry, ours_entry, theirs_entry):
    """A non-record file both sides changed: git's line merge, or None on a conflict."""
    if (
        ours_entry is None
        or theirs_entry is None
        or not (_is_file(ours_entry) and _is_file(theirs_entry) and _is_file(base_entry))
    ):
        return None
    if ours_entry[1] != theirs_entry[1]:
        return None

    def entry(e):
        return pygit2.IndexEntry(path, pygit2.Oid(hex=e[0]), e[1]) if e is not None else None

    try:
        outcome = repo.merge_file_from_index(
            entry(base_entry), entry(ours_entry), entry(theirs_entry)
        )
    except (pygit2.GitError, ValueError):
        return None
    if not getattr(outcome, "automergeable", False):
        return None
    contents = outcome.contents
    data = contents.encode("utf-8") if isinstance(contents, str) else contents
    return str(repo.create_blob(data)), ours_entry[1]


# ---------------------------------------------------------------------------- sync


class _Sync:
    def __init__(
        self, tx: WriteTransaction, remote: str | None, push_after: bool, review_branches: bool
    ):
        self.tx = tx
        self.review_branches = review_branches
        self.git = tx.git
        self.repo: pygit2.Repository = self.git.repo
        self.root = tx.root
        self.push_after = push_after
        self.ref_name = self.git.branch_ref()
        self.branch = self.ref_name.removeprefix("refs/heads/")
        self.target: Target = resolve_target(self.repo, remote, self.branch)
        self.env = git_env(self.root)
        self.report = SyncReport(self.target.remote, self.branch, self.target.remote_branch)

    def run(self) -> SyncReport:
        head = self.git.head_oid()
        self.report.head_before = str(head) if head is not None else None
        self._refuse_uncommitted()
        refused = None
        seen: tuple[str | None, dict[str, str]] | None = None
        for attempt in range(1, MAX_PUSH_ATTEMPTS + 1):
            self.report.attempts = attempt
            remote_head = fetch(self.root, self.target, self.env)
            reviews = (
                fetch_prefixed(self.root, self.target, REVIEW_PREFIX, self.env)
                if self.review_branches
                else {}
            )
            if refused is not None and (remote_head, reviews) == seen:
                # The push was refused, yet the remote has not moved: retrying cannot help.
                raise failure(f"git push {self.target.remote}", refused)
            seen = (remote_head, reviews)
            self.report.remote_head = remote_head
            self._integrate(remote_head)
            if self.review_branches:
                self._integrate_reviews(reviews)
                if self.push_after:
                    # Before the store's branch, as accept moves them: a push cut off between
                    # the two never shows an accepted change as still pending elsewhere.
                    refused = self._push_reviews(reviews)
                    if refused is not None:
                        continue
            head = self.git.head_oid()
            if remote_head is not None and str(head) == remote_head:
                self._note_upstream()
                break
            if not self.push_after or head is None:
                break
            ahead = self._ahead(head, remote_head)
            refused = push_branch(self.root, self.target, self.branch, self.env)
            if refused is None:
                self.report.pushed = True
                self.report.pushed_commits = ahead
                self.report.set_upstream = self.target.wants_upstream
                break
        else:
            raise GitError(
                f"{self.target.label} kept moving while syncing ({MAX_PUSH_ATTEMPTS} attempts); "
                "the merged result is committed locally: run lantern sync again to push it",
                code="push_rejected",
            )
        head = self.git.head_oid()
        self.report.head_after = str(head) if head is not None else None
        return self.report

    def _integrate_reviews(self, remote: dict[str, str]) -> None:
        """Bring each review branch in step with the remote's: create, fast-forward, or merge
        record by record (:func:`merge_trees`, as for the store's branch), each move journaled
        by the write transaction. A branch only this host has is left for the push."""
        local = {ref for _, ref in review_branches(self.git)}
        items: dict[str, ReviewBranchSync] = {}
        for ref in sorted(set(local) | set(remote)):
            name = ref.removeprefix(REVIEW_PREFIX)
            try:
                check_review_name(name)
            except InvalidInput:
                self.tx.warn(f"warning: skipped {ref} on {self.target.remote}: not a review name")
                continue
            item = items[name] = ReviewBranchSync(name)
            ours = self.git.branch_tip(ref)
            if ref not in remote:
                item.how = "ahead"
                continue
            theirs = pygit2.Oid(hex=remote[ref])
            summary = f"sync: lantern/review/{name} from {self.target.remote}"
            if ours == theirs:
                continue
            if ours is not None and self.repo.descendant_of(ours, theirs):
                item.how = "ahead"
            elif ours is None or self.repo.descendant_of(theirs, ours):
                self.tx.move_branch(ref, ours, theirs, summary, "sync")
                item.how = "created" if ours is None else "fast-forward"
            else:
                label = f"merge lantern/review/{name} of {self.target.remote}"
                try:
                    commit, merged = self._merge(ours, theirs, label)
                except Unmergeable as err:
                    # The store's branch is merged by now: "nothing was changed" would be false.
                    raise GitError(
                        f"lantern/review/{name} here and on {self.target.remote}: both changed "
                        f"{err.shown} in ways lantern cannot merge. That review branch was left "
                        "as it was; the store's branch is synced here but not pushed. Merge "
                        "the review branch with git, then run lantern sync --review-branches "
                        "again",
                        code="merge_conflict",
                    ) from None
                self.tx.move_branch(ref, ours, commit, summary, "sync")
                item.how, item.merge_commit = "merged", str(commit)
                item.merged, item.merged_sources = merged.records, merged.sources
        self.report.review_branches = list(items.values())

    def _push_reviews(self, remote: dict[str, str]) -> subprocess.CompletedProcess | None:
        """Push every review branch the remote lacks or is behind on; git's answer when the
        remote moved meanwhile, else None."""
        refs = [
            ref
            for _, ref in review_branches(self.git)
            if str(self.git.branch_tip(ref)) != remote.get(ref)
        ]
        refused = push_refs(self.root, self.target, refs, self.env)
        if refused is None:
            pushed = {ref.removeprefix(REVIEW_PREFIX) for ref in refs}
            for item in self.report.review_branches or ():
                item.pushed = item.name in pushed
        return refused

    def _merge(
        self, ours: pygit2.Oid, theirs: pygit2.Oid, summary: str
    ) -> tuple[pygit2.Oid, TreeMerge]:
        """The record-aware merge commit of ``ours`` and ``theirs`` (not referenced yet), its
        ``summary`` followed by what changed on both sides; the store's branch and the review
        branches are merged by this one function."""
        repo = self.repo
        theirs_tree = repo[theirs].peel(pygit2.Tree)
        base_tree = self._base_tree(str(ours), str(theirs), theirs_tree)
        merged = merge_trees(self.git, base_tree, repo[ours].peel(pygit2.Tree), theirs_tree)
        records = sorted(merged.records, key=lambda r: r.id)
        sources = sorted(merged.sources, key=lambda s: s.id)
        counts = [
            f"{len(items)} {noun}{'s' if len(items) != 1 else ''}"
            for items, noun in ((records, "record"), (sources, "source"))
            if items
        ]
        if counts:
            summary += f": {' and '.join(counts)} changed on both sides"
        prov = self.tx.provenance(
            "merge",
            (r.trailer() for r in records),
            actor="sync",
            sources=(s.trailer() for s in sources),
        )
        commit = self.git.create_commit(merged.tree, [ours, theirs], summary, prov)
        merged.records, merged.sources = records, sources
        return commit, merged

    def _ahead(self, head: pygit2.Oid, remote_head: str | None) -> int:
        if remote_head is None:
            return sum(1 for _ in self.repo.walk(head))
        return self.repo.ahead_behind(head, pygit2.Oid(hex=remote_head))[0]

    def _note_upstream(self) -> None:
        if self.target.wants_upstream:
            result = run_git(
                self.root, "branch", f"--set-upstream-to={self.target.label}", self.branch
            )
            if result.returncode == 0:
                self.target.wants_upstream = False
                self.report.set_upstream = True

    def _refuse_uncommitted(self) -> None:
        flags = pygit2.enums.FileStatus
        dirty = []
        for path, status in sorted(self.repo.status(untracked_files="all").items()):
            # An untracked record or source file is lantern data a merge could write over.
            if status == flags.WT_NEW and not (
                path.startswith((MEMORY_DIR + "/", SOURCES_DIR + "/")) or path == "lantern.yaml"
            ):
                continue
            if status & flags.IGNORED:
                continue
            dirty.append(path)
        if dirty:
            shown = ", ".join(dirty[:5]) + (f" and {len(dirty) - 5} more" if len(dirty) > 5 else "")
            raise UncommittedChanges(
                f"uncommitted changes in {shown}; sync merges commits only, so commit them "
                "first with: lantern commit (or git commit for other files)"
            )

    def _integrate(self, remote_head: str | None) -> None:
        if remote_head is None:
            return
        repo = self.repo
        head = self.git.head_oid()
        theirs = pygit2.Oid(hex=remote_head)
        if head is not None and (head == theirs or repo.descendant_of(head, theirs)):
            return
        if head is not None:
            self.report.incoming_commits += repo.ahead_behind(head, theirs)[1]
        else:
            self.report.incoming_commits += sum(1 for _ in repo.walk(theirs))
        head_tree = repo[head].peel(pygit2.Tree) if head is not None else None
        theirs_tree = repo[theirs].peel(pygit2.Tree)
        if head is None or repo.descendant_of(theirs, head):
            self._advance(
                head, theirs, head_tree, theirs_tree, f"sync: fast-forward to {self.target.label}"
            )
            self.report.fast_forward = True
            return
        commit, merged = self._merge(head, theirs, f"merge {self.target.label}")
        summary = repo[commit].peel(pygit2.Commit).message.splitlines()[0]
        self._advance(head, commit, head_tree, repo[merged.tree].peel(pygit2.Tree), summary)
        self.report.merge_commits.append(str(commit))
        self.report.merged.extend(merged.records)
        self.report.merged_sources.extend(merged.sources)

    def _base_tree(self, ours: str, theirs: str, theirs_tree: pygit2.Tree) -> pygit2.Tree | None:
        bases = merge_bases(self.root, ours, theirs)
        if not bases:
            # Two stores started apart: join them only if the other side is a lantern store too.
            if "lantern.yaml" not in theirs_tree:
                raise GitError(
                    f"{self.target.label} shares no history with this store and is not a lantern "
                    "store; refusing to merge unrelated repositories",
                    code="unrelated_histories",
                )
            return None
        return self._virtual_base(bases)

    def _virtual_base(self, bases: list[str], depth: int = 0) -> pygit2.Tree:
        """One base tree for a criss-cross history, merging the bases as git's ort does."""
        repo = self.repo
        current = bases[0]
        if len(bases) == 1 or depth > 8:
            return repo[current].peel(pygit2.Tree)
        signature = pygit2.Signature("lantern", "lantern@localhost", 0, 0)
        for other in bases[1:]:
            inner = merge_bases(self.root, current, other)
            inner_tree = self._virtual_base(inner, depth + 1) if inner else None
            merged = merge_trees(
                self.git,
                inner_tree,
                repo[current].peel(pygit2.Tree),
                repo[other].peel(pygit2.Tree),
                strict=False,
            )
            current = str(
                repo.create_commit(
                    None, signature, signature, "virtual merge base", merged.tree,
                    [pygit2.Oid(hex=current), pygit2.Oid(hex=other)],
                )
            )  # fmt: skip
        return repo[current].peel(pygit2.Tree)

    def _advance(
        self,
        head: pygit2.Oid | None,
        new_commit: pygit2.Oid,
        old_tree: pygit2.Tree | None,
        new_tree: pygit2.Tree,
        summary: str,
    ) -> None:
        """Move the branch to ``new_commit``, and the working tree and index with it, through
        the write transaction's one journaled path."""
        changes = self.git.tree_changes(old_tree, new_tree)
        self.tx.advance(head, new_commit, changes, summary, "sync")
        self._tally(changes, old_tree)

    def _tally(self, changes: Mapping[str, Any], old_tree: pygit2.Tree | None) -> None:
        for path, entry in changes.items():
            record_id = expected_id(path)
            if record_id is None:
                continue
            if entry is None:
                self.report.removed.append(record_id)
            elif self.git.entry_at(old_tree, path) is None:
                self.report.added.append(record_id)
            else:
                self.report.changed.append(record_id)


def sync(
    tx: WriteTransaction,
    remote: str | None = None,
    *,
    push: bool = True,
    review_branches: bool = False,
) -> SyncReport:
    """Fetch, merge (record-aware) and push, inside the caller's write transaction (which holds
    the writer lock throughout). ``review_branches``: the review branches
    (``refs/heads/lantern/review/*``) travel too, each merged as the store's branch is."""
    return _Sync(tx, remote, push, review_branches).run()
