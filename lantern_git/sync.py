"""``lantern sync``: fetch, record-aware merge, push. Never a force-push, never a rewrite.

The network goes through the git CLI (so ssh agents, ``~/.ssh/config`` and credential helpers
work as they do for ``git pull``), with prompts turned off: a missing credential fails at once
with git's message instead of waiting for a password nobody will type.

The merge runs in-process over trees (:func:`lantern_git.model.tree_merge.merge_trees`, which
``review accept`` uses too): record files both sides changed merge field by field, with the
function the git merge driver runs, so ``lantern sync`` and a plain ``git pull`` merge records
alike. The result reaches the working tree and ``.git/index`` through the same journal as every
lantern write, so a crash half-way is completed or rolled back by the next command.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import pygit2

from .errors import GitError, InvalidInput, NeedsMigration, UnsupportedFormat
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
from .model.entity_keys import ENTITIES_DIR
from .model.record_file import MEMORY_DIR, expected_id
from .model.review_refs import REVIEW_PREFIX, check_review_name, review_branches
from .model.source import SOURCES_DIR
from .model.tree_merge import RecordReport, SourceReport, TreeMerge, Unmergeable, merge_trees
from .workspace.migrations import FORMAT, MARKER, read_format
from .workspace.transaction import refuse_uncommitted

if TYPE_CHECKING:
    import subprocess

    from .workspace.transaction import WriteTransaction

MAX_PUSH_ATTEMPTS = 5


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
                    commit, merged = self._merge(
                        ours,
                        theirs,
                        label,
                        "That review branch was left as it was; the store's branch is synced "
                        "here but not pushed",
                    )
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

    def _push_reviews(self, remote: dict[str, str]) -> subprocess.CompletedProcess[str] | None:
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
        self,
        ours: pygit2.Oid,
        theirs: pygit2.Oid,
        summary: str,
        unchanged: str = "Nothing was changed here or there",
    ) -> tuple[pygit2.Oid, TreeMerge]:
        """The record-aware merge commit of ``ours`` and ``theirs`` (not referenced yet), its
        ``summary`` followed by what changed on both sides; the store's branch and the review
        branches are merged by this one function."""
        repo = self.repo
        theirs_tree = repo[theirs].peel(pygit2.Tree)
        self._refuse_other_format(repo[ours].peel(pygit2.Tree), theirs_tree, summary, unchanged)
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

    def _format_of(self, tree: pygit2.Tree) -> int | None:
        """The store format of a commit's tree; None: not a store (refused elsewhere)."""
        data = self.git.blob_at(tree, MARKER)
        return read_format(data, f"{MARKER} on {self.target.label}") if data is not None else None

    def _refuse_unknown_format(self, theirs: pygit2.Tree) -> None:
        """A fast-forward may bring a migration this lantern knows (format 1 -> 2), never a
        format it does not."""
        found = self._format_of(theirs)
        if found is not None and found > FORMAT:
            raise UnsupportedFormat(
                f"{self.target.label} is store format {found}, and this lantern knows formats "
                f"up to {FORMAT}: upgrade lantern-git, then sync again; nothing was changed"
            )

    def _refuse_other_format(
        self, ours: pygit2.Tree, theirs: pygit2.Tree, what: str, unchanged: str
    ) -> None:
        """Two histories of different store formats are never merged: the result would hold
        files of one format under the other's ``lantern.yaml``. The older side migrates
        first, then the merge is of like with like, and nothing is lost meanwhile: both
        sides' commits stay where they are."""
        mine, other = self._format_of(ours), self._format_of(theirs)
        if mine is None or other is None or mine == other:
            return
        self._refuse_unknown_format(theirs)
        if mine < other:
            advice = f"run lantern migrate here (format {mine} -> {other}), then lantern sync again"
        else:
            advice = (
                f"run lantern migrate on the host that wrote {self.target.label}'s new "
                f"commits and sync it first (or migrate a clone of it), then lantern sync "
                "again here"
            )
        raise NeedsMigration(
            f"cannot {what}: this store is format {mine} and {self.target.label} is format "
            f"{other}; lantern merges only stores of the same format: {advice}. {unchanged}"
        )

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
        """Sync merges commits only: any uncommitted change stops it. An untracked file counts
        when it is lantern data a merge could write over (a record, a source)."""
        refuse_uncommitted(
            self.git,
            counts_untracked=lambda path: (
                path.startswith((MEMORY_DIR + "/", SOURCES_DIR + "/", ENTITIES_DIR + "/"))
                or path == "lantern.yaml"
            ),
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
            self._refuse_unknown_format(theirs_tree)
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
