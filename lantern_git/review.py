"""Review before memory (docs/review.md): writes wait on a branch until a person accepts them.

With review on, the write transaction commits to ``refs/heads/lantern/review/<name>`` instead
of the store's branch (:meth:`~lantern_git.git.repo.GitRepo.commit_to_branch`): one branch per
writer name, based on the store's branch, whose ref, working tree and ``.git/index`` stay as
they are. This module lists, accepts and rejects what waits there
(:mod:`lantern_git.model.review_refs` names the branches and decides when review is on); the
transaction does the writing, so every writer takes the same path with review on or off.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import pygit2

from .core.config import value
from .errors import (
    AmbiguousId,
    InvalidInput,
    LanternError,
    NotFound,
    ReviewChanged,
    SelfApproval,
)
from .model.entity import Entity, parse_entity_file
from .model.entity_keys import key_of_path
from .model.record import Record
from .model.record_file import record_path
from .model.review_refs import REVIEW_PREFIX, check_review_name, review_branches, review_ref
from .model.source import SourceRef, is_source_ref, parse_source_path

__all__ = ["REVIEW_PREFIX", "check_review_name", "review_branches", "review_ref"]

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from .core.config import StoreSettings
    from .git.repo import GitRepo
    from .memory.history import Change, LogEntry
    from .model.record_file import Problem
    from .model.source import SourceManifest
    from .model.tree_merge import RecordReport
    from .workspace.transaction import WriteTransaction


def sync_review_enabled(explicit: bool | None, configured: StoreSettings | None) -> bool:
    """Whether ``lantern sync`` carries the review branches: the caller's choice (``lantern
    sync --review-branches``, ``Store.sync(review_branches=...)``), else the store's
    ``lantern.yaml`` ``sync_review_branches`` key, else no."""
    if explicit is not None:
        return explicit
    return bool(configured is not None and value(configured.sync_review_branches))


# ---------------------------------------------------------------------------- lantern review


@dataclass
class PendingRecord:
    """One record a review branch changed: how (``added``, ``changed``, ``removed``), the
    record as the branch has it, its fields old -> new against where the branch left the store's
    branch, and who wrote it there."""

    id: str
    change: str
    record: Record | None
    before: Record | None
    changes: list[Change]
    # The store's branch changed this record too since the review branch left it: accepting
    # it is then a record-aware three-way merge.
    moved: bool
    commits: list[str] = field(default_factory=list)
    actors: list[str] = field(default_factory=list)
    authors: list[str] = field(default_factory=list)
    # The writers' reasons (``--reason`` of the writes, from their ``Lantern-Reason``
    # trailers), oldest first.
    reasons: list[str] = field(default_factory=list)
    # The other pending records decided with this one, as one unit (a supersede's new record
    # and its old record's status change): an accept or reject of one takes them all.
    decided_with: list[str] = field(default_factory=list)

    @property
    def supersedes(self) -> str | None:
        """The record this pending version supersedes, if it says so."""
        return self.record.supersedes_id if self.record is not None else None

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "change": self.change,
            "record": self.record.to_dict() if self.record is not None else None,
            "changes": [c.to_dict() for c in self.changes],
            "moved": self.moved,
            "decided_with": list(self.decided_with),
            "reasons": list(self.reasons),
            **_written_by(self),
        }


@dataclass
class PendingSource:
    """One source a review branch changed (``added``, ``changed``, ``removed``): its manifest
    as the branch has it (as it was, for a removal), and who wrote it there. Accepting a
    record that cites it brings it along."""

    id: str
    change: str
    manifest: SourceManifest | None
    moved: bool
    paths: list[str]
    commits: list[str] = field(default_factory=list)
    actors: list[str] = field(default_factory=list)
    authors: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "change": self.change,
            "manifest": self.manifest.to_dict() if self.manifest is not None else None,
            "moved": self.moved,
            **_written_by(self),
        }


@dataclass
class PendingEntity:
    """One entity file a review branch changed (``added``, ``changed``, ``removed``): the
    entity as the branch has it (as it was, for a removal; None where the file there is not a
    valid entity file), and who wrote it there."""

    key: str
    change: str
    entity: Entity | None
    moved: bool
    path: str
    commits: list[str] = field(default_factory=list)
    actors: list[str] = field(default_factory=list)
    authors: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "key": self.key,
            "change": self.change,
            "entity": self.entity.to_dict() if self.entity is not None else None,
            "moved": self.moved,
            "path": self.path,
            **_written_by(self),
        }


def _written_by(pending: PendingRecord | PendingSource | PendingEntity) -> dict[str, list[str]]:
    """Who wrote a pending change: its review commits, their actors and authors."""
    return {
        "commits": list(pending.commits),
        "actors": list(pending.actors),
        "authors": list(pending.authors),
    }


@dataclass
class ReviewBranch:
    """One writer's review branch: where it left the store's branch, its commits (newest
    first), and the records they change, in id order."""

    name: str
    ref: str
    tip: str
    base: str | None
    commits: list[LogEntry]
    records: list[PendingRecord]
    problems: list[Problem]
    sources: list[PendingSource] = field(default_factory=list)
    entities: list[PendingEntity] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "ref": self.ref,
            "tip": self.tip,
            "base": self.base,
            "commits": [c.to_dict() for c in self.commits],
            "records": [r.to_dict() for r in self.records],
            "sources": [s.to_dict() for s in self.sources],
            "entities": [e.to_dict() for e in self.entities],
            "problems": [p.to_dict() for p in self.problems],
        }

    def citing(self, source_id: str) -> list[PendingRecord]:
        """The pending records that a reject of the pending source ``source_id`` rejects too."""
        return citing_records(self, source_id)

    def units(self) -> list[list[PendingRecord]]:
        """The pending records as the reviewer decides them: one list per unit (a record with
        the records decided with it), the one that supersedes first, units in id order."""
        by_id = {r.id: r for r in self.records}
        units: list[list[PendingRecord]] = []
        seen: set[str] = set()
        for pending in self.records:
            if pending.id in seen:
                continue
            members = [pending, *(by_id[i] for i in pending.decided_with if i in by_id)]
            seen.update(m.id for m in members)
            # The newest link of a chain first: the record nothing in the unit supersedes.
            superseded = {m.supersedes for m in members}
            members.sort(key=lambda m: (m.id in superseded, m.id))
            units.append(members)
        return units


@dataclass
class ReviewList:
    """``lantern review``: every review branch with pending changes, by name."""

    branches: list[ReviewBranch] = field(default_factory=list)

    @property
    def records(self) -> list[PendingRecord]:
        return [r for b in self.branches for r in b.records]

    def to_dict(self) -> dict[str, Any]:
        return {"branches": [b.to_dict() for b in self.branches]}


def review_list(git: GitRepo) -> ReviewList:
    """Each review branch's pending changes, record by record, against the point where it
    left the store's branch (their merge base; the store's branch itself for a branch with no
    common history): what the writer changed, which accepting it would bring. A branch the store's
    branch already contains is left out."""
    from .memory.history import branch_log
    from .memory.timetravel import record_at, record_diff

    answer = ReviewList()
    head = git.head_oid()
    head_tree = git.head_tree()
    for name, ref in review_branches(git):
        tip = git.branch_tip(ref)
        if tip is None or head is None:
            continue
        base = git.repo.merge_base(tip, head)
        if base == tip:
            continue
        since = base if base is not None else head
        since_tree = git.repo[since].peel(pygit2.Tree)
        if not git.tree_changes(since_tree, git.repo[tip].peel(pygit2.Tree)):
            continue  # everything on it was accepted or rejected
        diff = record_diff(git, str(since), str(tip))
        commits = branch_log(git, tip, base)
        touched = _touched_by(git, tip, base)
        records: list[PendingRecord] = []
        entries: list[tuple[str, str, Record | None, Record | None, list[Change]]] = [
            *(("added", r.id, r, None, []) for r in diff.added),
            *(("removed", r.id, None, r, []) for r in diff.removed),
            *(
                (
                    "changed",
                    c.id,
                    record_at(git, c.id, str(tip)),
                    record_at(git, c.id, str(since)),
                    c.changes,
                )
                for c in diff.changed
            ),
        ]
        for change, record_id, record, before, changes in entries:
            path = record_path(record_id)
            who = [c for c in commits if c.commit in touched.get(path, ())]
            records.append(
                PendingRecord(
                    record_id,
                    change,
                    record,
                    before,
                    changes,
                    moved=git.entry_at(head_tree, path) != git.entry_at(since_tree, path),
                    commits=[c.commit for c in who],
                    actors=sorted({c.actor for c in who if c.actor}),
                    authors=sorted({c.author for c in who}),
                    reasons=list(dict.fromkeys(c.reason for c in reversed(who) if c.reason)),
                )
            )
        records.sort(key=lambda r: r.id)
        _link_units(records)
        tip_tree = git.repo[tip].peel(pygit2.Tree)
        sources = _pending_sources(git, since_tree, tip_tree, head_tree, commits, touched)
        entities = _pending_entities(git, since_tree, tip_tree, head_tree, commits, touched)
        answer.branches.append(
            ReviewBranch(
                name,
                ref,
                str(tip),
                str(base) if base is not None else None,
                commits,
                records,
                diff.problems,
                sources,
                entities,
            )
        )
    return answer


class KeptReviewList:
    """:func:`review_list`'s answer kept for the commits it was read from: the store's
    branch and every review branch's tip. Those commits and everything they reach never
    change, so the same commits give the same answer, and reading them (a few refs) costs
    microseconds where the list costs a tree diff per pending commit (~40 ms with 20 pending
    at 10,000 records, ~300 at 100,000). A long-running process's pages (review, status,
    ``?pending=1``) then pay for it once per write, not once per load."""

    def __init__(self) -> None:
        self._kept: tuple[object, ReviewList] | None = None

    def answer(self, git: GitRepo) -> ReviewList:
        state = _review_state(git)
        kept = self._kept
        if kept is not None and kept[0] == state:
            return kept[1]
        found = review_list(git)
        # Kept only when nothing moved while it was read: a branch that moved meanwhile may
        # be in the answer at its new tip, which a state read before cannot vouch for.
        if _review_state(git) == state:
            self._kept = (state, found)
        return found


def _review_state(git: GitRepo) -> tuple[str | None, tuple[tuple[str, str | None], ...]]:
    """The store's branch's commit and each review branch's: what :func:`review_list` reads."""
    head = git.head_oid()
    tips = tuple((ref, _hex(git.branch_tip(ref))) for _, ref in review_branches(git))
    return _hex(head), tips


def _hex(oid: pygit2.Oid | None) -> str | None:
    return str(oid) if oid is not None else None


def _link_units(records: list[PendingRecord]) -> None:
    """Fill each pending record's ``decided_with``: a record that supersedes another record
    pending on the same branch is decided with it (and with the whole chain, when a
    supersede was superseded again). Accepting the new record alone would leave the old one
    active beside it; accepting the old one's status change alone, a record superseded by
    nothing."""
    ids = {r.id for r in records}
    links: dict[str, set[str]] = {r.id: set() for r in records}
    for pending in records:
        old = pending.supersedes
        if old is not None and old != pending.id and old in ids:
            links[pending.id].add(old)
            links[old].add(pending.id)
    for pending in records:
        unit, todo = {pending.id}, [pending.id]
        while todo:
            for other in links[todo.pop()] - unit:
                unit.add(other)
                todo.append(other)
        pending.decided_with = sorted(unit - {pending.id})


def _pending_sources(
    git: GitRepo,
    since_tree: pygit2.Tree,
    tip_tree: pygit2.Tree,
    head_tree: pygit2.Tree | None,
    commits: list[LogEntry],
    touched: dict[str, set[str]],
) -> list[PendingSource]:
    """The sources a review branch changed between ``since_tree`` and ``tip_tree``, by id."""
    from .model.source_file import source_in_tree

    paths: dict[str, list[str]] = {}
    for path in git.tree_changes(since_tree, tip_tree):
        parsed = parse_source_path(path)
        if parsed is not None:
            paths.setdefault(parsed[0], []).append(path)
    found: list[PendingSource] = []
    for source_id, changed in sorted(paths.items()):
        after = source_in_tree(git, tip_tree, source_id)[0]
        before = source_in_tree(git, since_tree, source_id)[0]
        change = "added" if before is None else "removed" if after is None else "changed"
        shown = after or before
        who = [c for c in commits if any(c.commit in touched.get(p, ()) for p in changed)]
        found.append(
            PendingSource(
                source_id,
                change,
                shown.manifest if shown is not None else None,
                moved=any(
                    git.entry_at(head_tree, p) != git.entry_at(since_tree, p) for p in changed
                ),
                paths=sorted(changed),
                commits=[c.commit for c in who],
                actors=sorted({c.actor for c in who if c.actor}),
                authors=sorted({c.author for c in who}),
            )
        )
    return found


def _pending_entities(
    git: GitRepo,
    since_tree: pygit2.Tree,
    tip_tree: pygit2.Tree,
    head_tree: pygit2.Tree | None,
    commits: list[LogEntry],
    touched: dict[str, set[str]],
) -> list[PendingEntity]:
    """The entity files a review branch changed between ``since_tree`` and ``tip_tree``, by
    key (a rename is the old key removed and the new one added, as its commit has it)."""
    found: list[PendingEntity] = []
    for path in sorted(git.tree_changes(since_tree, tip_tree)):
        key = key_of_path(path)
        if key is None:
            continue
        after, before = git.blob_at(tip_tree, path), git.blob_at(since_tree, path)
        change = "added" if before is None else "removed" if after is None else "changed"
        who = [c for c in commits if c.commit in touched.get(path, ())]
        found.append(
            PendingEntity(
                key,
                change,
                _entity_or_none(path, after if after is not None else before),
                moved=git.entry_at(head_tree, path) != git.entry_at(since_tree, path),
                path=path,
                commits=[c.commit for c in who],
                actors=sorted({c.actor for c in who if c.actor}),
                authors=sorted({c.author for c in who}),
            )
        )
    found.sort(key=lambda pending: pending.key)
    return found


def _entity_or_none(path: str, data: bytes | None) -> Entity | None:
    """The entity a file's bytes hold, or None where they hold none (lantern check says why)."""
    if data is None:
        return None
    try:
        return parse_entity_file(path, data)
    except LanternError:
        return None


def _touched_by(git: GitRepo, tip: pygit2.Oid, base: pygit2.Oid | None) -> dict[str, set[str]]:
    """path -> the commits between ``base`` and ``tip`` that changed it."""
    walker = git.repo.walk(tip)
    if base is not None:
        walker.hide(base)
    touched: dict[str, set[str]] = {}
    for commit in walker:
        if len(commit.parents) > 1:
            continue  # an accept's carry-forward merge: the changes are the writer's commits'
        parent = commit.parents[0].tree if commit.parents else None
        for path in git.tree_changes(parent, commit.tree):
            touched.setdefault(path, set()).add(str(commit.id))
    return touched


# ---------------------------------------------------------------------------- accept, reject


@dataclass
class ReviewDecision:
    """What ``review accept`` or ``review reject`` did: the records, the commit that recorded
    it (on the store's branch for accept, on the review branch for reject), and the review
    branch's new tip."""

    op: str
    branch: str
    records: list[str]
    commit: str | None
    review_tip: str | None
    # Accept: the records the store's branch changed too since the review branch left it,
    # merged field by field; the fields both changed, with the store's value, the pending
    # one and the result (docs/sync.md, "How records merge").
    merged: list[RecordReport] = field(default_factory=list)
    sources: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "op": self.op,
            "branch": self.branch,
            "records": list(self.records),
            "sources": list(self.sources),
            "commit": self.commit,
            "review_tip": self.review_tip,
            "merged": [r.to_dict("store", "pending") for r in self.merged],
        }


@dataclass
class Choice:
    """What one accept or reject is about: one review branch, and its pending records and
    sources that the ids named (all of them for ``--all``)."""

    branch: ReviewBranch
    records: list[PendingRecord]
    sources: list[PendingSource]


def choose(
    git: GitRepo, ids: Sequence[str] | None, branch: str | None, expect: str | None = None
) -> Choice:
    """The review branch and its pending records and sources that ``ids`` (record or source
    ids or prefixes; None: all of the branch's) name, with the records decided with them. One
    decision is about one branch: ``branch`` names it when the ids, or ``--all``, would
    otherwise span several. ``expect`` (the tip the person saw, a commit id or a prefix of 7
    or more) names the branch too, and refuses (``review_changed``) when it moved since."""
    from .model.record import check_id_prefix

    if branch is not None:
        check_review_name(branch)
    if expect is not None:
        branch = expected_branch(git, expect, branch)
    branches = review_list(git).branches
    if branch is not None:
        branches = [b for b in branches if b.name == branch]
        if not branches:
            raise NotFound(f"nothing awaits review on lantern/review/{branch}")
    if not branches:
        raise NotFound("nothing awaits review")
    if ids is None:
        if len(branches) > 1:
            raise InvalidInput(
                "several review branches have pending changes ("
                + ", ".join(b.name for b in branches)
                + "); name one with --branch NAME",
                code="ambiguous_branch",
            )
        return Choice(branches[0], list(branches[0].records), list(branches[0].sources))
    if isinstance(ids, str) or not ids:
        raise InvalidInput("give record ids, or --all", code="usage_error")
    found: dict[str, tuple[ReviewBranch, PendingRecord | PendingSource]] = {}
    for ref in ids:
        prefix = check_id_prefix(ref)
        matches: list[tuple[ReviewBranch, PendingRecord | PendingSource]] = [
            (b, r) for b in branches for r in b.records if r.id.startswith(prefix)
        ]
        matches += [(b, s) for b in branches for s in b.sources if s.id.startswith(prefix)]
        if not matches:
            raise NotFound(f"no pending record or source with id {prefix}")
        if len({r.id for _, r in matches}) > 1:
            raise AmbiguousId(prefix, [r.id for _, r in matches])
        if len(matches) > 1:
            raise InvalidInput(
                f"record {matches[0][1].id} is pending on several review branches ("
                + ", ".join(b.name for b, _ in matches)
                + "); name one with --branch NAME",
                code="ambiguous_branch",
            )
        found[matches[0][1].id] = matches[0]
    chosen = {b.name for b, _ in found.values()}
    if len(chosen) > 1:
        raise InvalidInput(
            "the records are pending on different review branches ("
            + ", ".join(sorted(chosen))
            + "); decide on one branch at a time (--branch NAME)",
            code="ambiguous_branch",
        )
    first = next(iter(found.values()))[0]
    chosen_items = [item for _, item in sorted(found.values(), key=lambda pair: pair[1].id)]
    named = {r.id for r in chosen_items if isinstance(r, PendingRecord)}
    with_units = named | {
        i for r in chosen_items if isinstance(r, PendingRecord) for i in r.decided_with
    }
    return Choice(
        first,
        [r for r in first.records if r.id in with_units],
        [r for r in chosen_items if isinstance(r, PendingSource)],
    )


_TIP = re.compile(r"[0-9a-f]{7,40}")


def expected_branch(git: GitRepo, expect: str, name: str | None) -> str:
    """The review branch whose tip is ``expect`` (a commit id, or a prefix of 7 or more hex
    digits), among the one ``name`` names when given: the tip the person saw when they chose.
    When no branch's tip is it any more, ``review_changed``, naming what arrived since on the
    branch that moved on from it; nothing is decided."""
    from .memory.history import branch_log

    wanted = expect.strip().lower()
    if not _TIP.fullmatch(wanted):
        raise InvalidInput(
            f"--expect: expected a review branch's tip (a commit id, or a prefix of 7 or more "
            f"hex digits, as lantern review --json gives it), got {expect!r}",
            code="usage_error",
        )
    tips = {
        branch: git.branch_tip(ref)
        for branch, ref in review_branches(git)
        if name in (None, branch)
    }
    same = sorted(b for b, t in tips.items() if t is not None and str(t).startswith(wanted))
    if len(same) == 1:
        return same[0]
    if same:
        raise InvalidInput(
            f"the tip {wanted} is the tip of several review branches ({', '.join(same)}); "
            "name one with --branch NAME",
            code="ambiguous_branch",
        )
    seen = _commit(git, wanted)
    for branch, now in sorted(tips.items()):
        if now is None or seen is None or not git.repo.descendant_of(now, seen):
            continue
        arrived = branch_log(git, now, seen)
        listed = "; ".join(
            f"{e.commit[:10]} {e.op or '-'} by {e.actor or e.author}: {e.summary}"
            + (f" [{', '.join(e.records + e.sources)}]" if e.records or e.sources else "")
            for e in arrived
        )
        count = len(arrived)
        raise ReviewChanged(
            f"lantern/review/{branch} changed since {wanted} (the tip you saw): its tip is now "
            f"{str(now)[:10]}, {count} commit{'s' if count != 1 else ''} arrived since: {listed}. "
            "Nothing was decided; look at the review again (lantern review) and decide",
            tip=str(now),
            arrived=[e.commit for e in arrived],
        )
    where = f"lantern/review/{name}" if name is not None else "no review branch"
    now_tip = tips.get(name) if name is not None else None
    raise ReviewChanged(
        (
            f"{where}'s tip is {str(now_tip)[:10] if now_tip else 'gone'}, not {wanted} (the tip "
            "you saw), and it did not come from there"
            if name is not None
            else f"no review branch's tip is {wanted} (the tip you saw), or comes from it"
        )
        + ". Nothing was decided; look at the review again (lantern review) and decide",
        tip=str(now_tip) if now_tip else None,
    )


def _commit(git: GitRepo, prefix: str) -> pygit2.Oid | None:
    """The commit a hex prefix names, None when it names none or several."""
    try:
        return git.repo.revparse_single(prefix).peel(pygit2.Commit).id
    except (KeyError, ValueError, pygit2.GitError, pygit2.InvalidSpecError):
        return None


def accept(
    tx: WriteTransaction,
    choice: Choice,
    *,
    everything: bool,
    reason: str | None,
    reviewer: tuple[str, str],
) -> ReviewDecision:
    """Bring the chosen records and sources (or, with ``everything``, every change of the
    branch) onto the store's branch; a pending source that an accepted record cites comes
    along, so the record's pin names a body the store's branch holds.

    The store's branch gets one ordinary commit (``Lantern-Op: accept``, the reviewer as its
    author, ``Lantern-Review-*`` trailers naming the branch, its commits and their actors and
    authors), made by the three-way merge ``lantern sync`` uses, so a record the store's branch
    changed meanwhile is merged field by field (and listed). The review branch then gets a
    merge of its tip and that commit whose tree is the commit's plus the changes still pending:
    its merge base with the store's branch becomes the accept commit, so only what was not
    accepted is still pending, and its own commits stay in its history. The review branch moves
    first: a crash between the two leaves every change pending, as before the accept.
    """
    from .model.tree_merge import merge_trees
    from .workspace.transaction import refuse_uncommitted

    git, repo = tx.git, tx.git.repo
    branch, records = choice.branch, choice.records
    sources = _with_cited_sources(choice)
    actor, name = reviewer
    items: list[PendingRecord | PendingSource] = [*records, *sources]
    writers = {a for r in items for a in r.actors}
    if actor in writers and name == branch.name:
        raise SelfApproval(
            f"these changes were written by actor {actor} as lantern/review/{name}, which is "
            "who is accepting them; a writer never accepts its own changes. A person accepts "
            "them from another actor or review name (LANTERN_REVIEW_NAME)"
        )
    tip = pygit2.Oid(hex=branch.tip)
    head = git.head_oid()
    base = pygit2.Oid(hex=branch.base) if branch.base is not None else head
    base_tree = repo[base].peel(pygit2.Tree) if base is not None else None
    head_tree = git.head_tree()
    pending = git.tree_changes(base_tree, repo[tip].peel(pygit2.Tree))
    paths = set(pending) if everything else _paths(choice.records, sources, pending)
    taken = _tree(git, git.build_tree(base_tree, {p: pending[p] for p in paths}))
    merged = merge_trees(git, base_tree, head_tree, taken)
    merged_tree = _tree(git, merged.tree)
    changes = git.tree_changes(head_tree, merged_tree)
    refuse_uncommitted(git, changes)
    ids = [r.id for r in records]
    source_ids = [s.id for s in sources]
    commits = sorted({c for r in items for c in r.commits})
    trailers = [
        f"Lantern-Review-Branch: lantern/review/{branch.name}",
        *(f"Lantern-Review-Commit: {c}" for c in commits),
        *(f"Lantern-Review-Actor: {a}" for a in sorted(writers)),
        *(f"Lantern-Review-Author: {a}" for a in sorted({a for r in items for a in r.authors})),
        *(f"Lantern-Review-Merged: {r.trailer()}" for r in merged.records),
    ]
    summary = f"accept {_counted(ids, source_ids)} from lantern/review/{branch.name}"
    prov = tx.provenance("accept", ids, reason=reason, sources=source_ids)
    commit = git.create_commit(merged.tree, [head] if head else [], summary, prov, trailers)
    rest = {p: e for p, e in pending.items() if p not in paths}
    # Strict: a change still pending that cannot be carried over stops the accept here, before
    # anything moved, rather than being dropped.
    carried = merge_trees(git, base_tree, merged_tree, _tree(git, git.build_tree(base_tree, rest)))
    review_tip = git.create_commit(
        carried.tree, [tip, commit], f"{summary}: the rest stays pending", prov, trailers
    )
    tx.move_branch(branch.ref, tip, review_tip, summary, "accept")
    done = tx.advance(head, commit, changes, summary, "accept")
    merged_records = sorted(merged.records, key=lambda r: r.id)
    return ReviewDecision(
        "accept", branch.name, ids, done, str(review_tip), merged_records, source_ids
    )


def reject(
    tx: WriteTransaction, choice: Choice, *, everything: bool, reason: str | None
) -> ReviewDecision:
    """Drop the chosen records and sources (or every change) from the review branch: one
    ``Lantern-Op: reject`` commit on it puts their files back as they were where the branch left
    the store's branch, so they are no longer pending; the proposal stays in the branch's
    history. A rejected source takes the pending records citing it along
    (:func:`citing_records`)."""
    git, repo, branch = tx.git, tx.git.repo, choice.branch
    records = _with_citing_records(choice)
    base = pygit2.Oid(hex=branch.base) if branch.base is not None else git.head_oid()
    base_tree = repo[base].peel(pygit2.Tree) if base is not None else None
    pending = git.tree_changes(base_tree, repo[pygit2.Oid(hex=branch.tip)].peel(pygit2.Tree))
    paths = set(pending) if everything else _paths(records, choice.sources, pending)
    files: dict[str, bytes | None] = {p: git.blob_at(base_tree, p) for p in sorted(paths)}
    ids = [r.id for r in records]
    source_ids = [s.id for s in choice.sources]
    summary = f"reject {_counted(ids, source_ids)} of lantern/review/{branch.name}"
    commit = tx.commit(files, summary, "reject", ids, reason=reason, sources=source_ids)
    return ReviewDecision("reject", branch.name, ids, commit, commit, sources=source_ids)


def cited_sources(pending: PendingRecord) -> set[str]:
    """The source ids a pending record's ``source:`` references name."""
    found: set[str] = set()
    for ref in pending.record.source_refs if pending.record is not None else ():
        if is_source_ref(ref):
            try:
                found.add(SourceRef.parse(ref).source_id)
            except LanternError:
                continue  # a hand-broken reference: verify reports it
    return found


def citing_records(branch: ReviewBranch, source_id: str) -> list[PendingRecord]:
    """The records pending on ``branch`` that cite ``source_id``, with their units: a reject of
    the source rejects them too, since accepted later they would cite a source the store's
    branch never got."""
    citing = {r.id for r in branch.records if source_id in cited_sources(r)}
    citing |= {i for r in branch.records if r.id in citing for i in r.decided_with}
    return [r for r in branch.records if r.id in citing]


def _with_citing_records(choice: Choice) -> list[PendingRecord]:
    """The chosen records, and the records of the branch that cite a chosen source."""
    wanted = {r.id: r for r in choice.records}
    for source in choice.sources:
        wanted.update((r.id, r) for r in citing_records(choice.branch, source.id))
    return [wanted[i] for i in sorted(wanted)]


def _with_cited_sources(choice: Choice) -> list[PendingSource]:
    """The chosen sources, and the branch's pending sources that a chosen record cites."""
    pending = {s.id: s for s in choice.branch.sources}
    wanted = {s.id: s for s in choice.sources}
    for record in choice.records:
        for source_id in sorted(cited_sources(record) & set(pending)):
            wanted.setdefault(source_id, pending[source_id])
    return [wanted[i] for i in sorted(wanted)]


def _paths(
    records: list[PendingRecord], sources: list[PendingSource], pending: Mapping[str, object]
) -> set[str]:
    """The files a decision on ``records`` and ``sources`` takes or drops; with a source, the
    ``.gitattributes`` line its first ingest added, if the branch has it."""
    paths = {record_path(r.id) for r in records} | {p for s in sources for p in s.paths}
    if sources and ".gitattributes" in pending:
        paths.add(".gitattributes")
    return paths


def _counted(ids: list[str], source_ids: list[str]) -> str:
    parts = [f"{len(ids)} record{'s' if len(ids) != 1 else ''}"] if ids or not source_ids else []
    if source_ids:
        parts.append(f"{len(source_ids)} source{'s' if len(source_ids) != 1 else ''}")
    return " and ".join(parts)


def _tree(git: GitRepo, oid: pygit2.Oid) -> pygit2.Tree:
    return git.repo[oid].peel(pygit2.Tree)


# ---------------------------------------------------------------------------- --include-pending


class PendingVersion(Record):
    """A record as a review branch has it, not accepted yet: its object says ``"pending":
    true`` (docs/review.md); everything else reads it as the record it is."""

    def to_dict(self) -> dict[str, Any]:
        return {**super().to_dict(), "pending": True}

    @classmethod
    def of(cls, record: Record) -> PendingVersion:
        return cls(**{f.name: getattr(record, f.name) for f in dataclasses.fields(Record)})


def pending_versions(review: ReviewList) -> dict[str, PendingVersion | None]:
    """id -> the record as it would be once every review branch is accepted (None: removed
    there). Where two branches change one record, the first by name is shown."""
    versions: dict[str, PendingVersion | None] = {}
    for pending in review.records:
        if pending.id not in versions:
            versions[pending.id] = (
                PendingVersion.of(pending.record) if pending.record is not None else None
            )
    return versions
