"""The write transaction: the one way anything changes a store.

Every writer (records through :class:`~lantern_git.memory.records.Records`, sources through
:class:`~lantern_git.evidence.sources.Sources`, hand-edit commits, ``memory edit``, import, sync and
its merges) goes through a :class:`WriteTransaction`::

    with store.transaction() as tx:
        text, record = tx.read(record_id)
        tx.commit({path: data}, summary, "archive", [record_id], reason=reason)

Entering takes the writer lock, completes or rolls back an interrupted write, and refuses a
repository that git is in the middle of changing. Each :meth:`~WriteTransaction.commit` (or
:meth:`~WriteTransaction.advance` for a commit made elsewhere, as sync's) is one journaled
write through the git layer: objects, journal, working files, branch, ``.git/index``; then the
search index learns of the record files it touched, and the journal is dropped.

With ``review_ref`` set (review mode, :mod:`lantern_git.review`) the same commits go to that
branch instead, and the transaction's reads (:meth:`~WriteTransaction.read`,
:meth:`~WriteTransaction.exists`, :meth:`~WriteTransaction.resolve_id`,
:meth:`~WriteTransaction.committed_blob`, and for sources
:meth:`~WriteTransaction.read_pending_source`) see each record and source as the review branch
has it when the branch changed it, else as the working tree has it: the writers themselves do
not know which branch they write to. A branch that is not checked out moves, journaled, with
:meth:`~WriteTransaction.move_branch` (an accept, a sync of review branches).

The transaction knows no file layout and parses no file: where a record or a source lives and how
its file reads, the halves say (:class:`RecordFiles`, :class:`SourceFiles`, which
:meth:`Workspace.transaction <lantern_git.workspace.workspace.Workspace.transaction>` hands it).
Before a write touches a file a person may have edited, every writer asks
:func:`refuse_uncommitted`.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from typing import TYPE_CHECKING, Protocol

from ..core.fields import JOURNAL, TMP_SUFFIX
from ..errors import AmbiguousId, GitError, NotFound, StoreError, UncommittedChanges

if TYPE_CHECKING:
    import pygit2

    from ..git.repo import Entry, GitRepo, Provenance
    from ..model.record import Record
    from ..model.source_file import SourceFile
    from .lock import WriterLock

Warn = Callable[[str], None]


class RecordFiles(Protocol):
    """Where records live and how their files read, as the record half says
    (:data:`lantern_git.model.record_file.RECORD_FILES`): the transaction knows no file layout and
    parses no file itself."""

    def owner(self, path: str) -> str | None: ...

    def path(self, record_id: str) -> str: ...

    def load(self, root: str, record_id: str) -> tuple[str, Record]: ...

    def parse(self, path: str, data: bytes) -> tuple[Record | None, object]: ...

    def matching(self, root: str, ref: str) -> tuple[str, list[str]]: ...


class SourceFiles(Protocol):
    """Where sources live and how a commit's tree holds one, as the evidence half says
    (:data:`lantern_git.model.source_file.SOURCE_FILES`)."""

    def owner(self, path: str) -> str | None: ...

    def in_tree(
        self, git: GitRepo, tree: pygit2.Tree, source_id: str
    ) -> tuple[SourceFile | None, object]: ...


class IndexNotes(Protocol):
    """What a write tells the search index: exactly these record files changed, or rebuild."""

    def note_written(self, paths: Iterable[str]) -> None: ...

    def rebuild(self) -> object: ...


def interrupted(state_dir: str) -> bool:
    """Whether a write was cut off (its journal, or the journal's temporary file, is there):
    two stat calls, no git, so every read can afford to ask."""
    journal = os.path.join(state_dir, JOURNAL)
    return os.path.exists(journal) or os.path.exists(
        os.path.join(state_dir, "." + JOURNAL + TMP_SUFFIX)
    )


def recover(git: GitRepo, state_dir: str, lock: WriterLock, warn: Warn) -> None:
    """Complete or roll back an interrupted write, if there is one."""
    from ..git.repo import recover as recover_write

    if not interrupted(state_dir):
        return
    with lock:
        message = recover_write(git, state_dir)
    if message:
        warn(message)


def refuse_uncommitted(
    git: GitRepo,
    paths: Iterable[str] | None = None,
    *,
    read: Mapping[str, bytes] | None = None,
    counts_untracked: Callable[[str], bool] | None = None,
) -> None:
    """Refuse (:class:`UncommittedChanges`) to write over what a person changed and did not
    commit: the one check every writer makes, so a hand edit is never swept into a lantern
    commit, overwritten by a merge, or lost.

    ``paths``: the files a write is about to change, each compared with HEAD's: the bytes the
    caller already ``read`` of it (what it is about to rewrite), else the working file, its
    content and mode (a file HEAD lacks counts when anything is there). None: every file, as
    ``git status`` sees it (a sync, which merges commits only), where an untracked file
    counts only when ``counts_untracked(path)`` says so.
    """
    read = read or {}
    if paths is None:
        import pygit2

        flags = pygit2.enums.FileStatus
        counts = counts_untracked or (lambda path: True)
        # Ignored files are not listed (status leaves them out unless asked for them)
        dirty = [
            path
            for path, status in sorted(git.repo.status(untracked_files="all").items())
            if status != flags.WT_NEW or counts(path)
        ]
    else:
        head = git.head_tree()
        dirty = []
        for path in paths:
            committed = git.entry_at(head, path)
            if path in read:
                clean = committed is not None and committed[0] == git.blob_id(read[path])
            else:
                clean = git.worktree_entry(path) == committed
            if not clean:
                dirty.append(path)
    if dirty:
        shown = ", ".join(dirty[:5]) + (f" and {len(dirty) - 5} more" if len(dirty) > 5 else "")
        raise UncommittedChanges(
            f"{shown} {'has' if len(dirty) == 1 else 'have'} uncommitted changes; commit them "
            "first with: lantern commit (git commit for other files)"
        )


class WriteTransaction:
    """One writer holding the store: reads what it changes, then commits it with provenance."""

    def __init__(
        self,
        root: str,
        state_dir: str,
        git: GitRepo,
        index: Callable[[], IndexNotes],
        *,
        records: RecordFiles,
        sources: SourceFiles,
        actor: str,
        author: str | None,
        warn: Warn,
        chunks: Callable[[], IndexNotes] | None = None,
        review_ref: str | None = None,
    ):
        self.root = root
        self.records = records
        self.sources = sources
        # Set: every commit goes to this branch, never to the store's (review mode).
        self.review_ref = review_ref
        self._pending: dict[str, Entry | None] | None = None
        self.state_dir = state_dir
        self.git = git
        self._index = index
        self._chunks = chunks
        self.actor = actor
        self.author = author
        self.warn = warn
        self.commits: list[str] = []

    @property
    def last_commit(self) -> str | None:
        return self.commits[-1] if self.commits else None

    @property
    def pending_review(self) -> bool:
        """Whether this transaction's commits await review (they went to a review branch)."""
        return self.review_ref is not None and bool(self.commits)

    # -- reading what is about to change

    def pending(self) -> Mapping[str, Entry | None]:
        """What the review branch changed since it left the store's branch (path -> entry,
        None where it removed the path); empty outside review mode."""
        if self._pending is None:
            self._pending = (
                {} if self.review_ref is None else self.git.branch_changes(self.review_ref)
            )
        return self._pending

    def read(self, record_id: str) -> tuple[str, Record]:
        """The record of ``record_id`` as this writer sees it, with its text: the review
        branch's version when the branch changed it, else the working tree's."""
        path = self.records.path(record_id)
        pending = self.pending()
        if path not in pending:
            return self.records.load(self.root, record_id)
        entry = pending[path]
        if entry is None:
            raise NotFound(f"no record with id {record_id} (its removal awaits review)")
        data = self.git.blob_data(entry[0])
        record, problem = self.records.parse(path, data)
        if record is None:
            raise StoreError(f"{problem} on {self.review_ref}", code="invalid_record")
        return data.decode("utf-8"), record

    def exists(self, record_id: str) -> bool:
        """Whether this writer sees a file for ``record_id`` (as :meth:`read` would)."""
        path = self.records.path(record_id)
        pending = self.pending()
        if path in pending:
            return pending[path] is not None
        return os.path.lexists(os.path.join(self.root, path))

    def resolve_id(self, ref: str) -> str:
        """The full id for an id or unique prefix, among the records this writer sees."""
        prefix, candidates = self.records.matching(self.root, ref)
        found = set(candidates)
        for path, entry in self.pending().items():
            record_id = self.records.owner(path)
            if record_id is not None and record_id.startswith(prefix):
                if entry is None:
                    found.discard(record_id)
                else:
                    found.add(record_id)
        if not found:
            what = "id" if len(prefix) == 16 else "id prefix"
            raise NotFound(f"no record with {what} {prefix}")
        if len(found) > 1:
            raise AmbiguousId(prefix, sorted(found))
        return found.pop()

    def committed_blob(self, path: str) -> bytes | None:
        """The bytes of ``path`` in the commit this writer builds on: the review branch's when
        the branch changed the path, else HEAD's (None: no file there)."""
        pending = self.pending()
        if path in pending:
            entry = pending[path]
            return self.git.blob_data(entry[0]) if entry is not None else None
        return self.git.blob_at(self.git.head_tree(), path)

    def pending_sources(self) -> set[str]:
        """The ids of the sources the review branch changed (empty outside review mode)."""
        return {i for p in self.pending() if (i := self.sources.owner(p)) is not None}

    def read_pending_source(self, source_id: str) -> SourceFile | None:
        """A source the review branch changed, as its tip has it (None: removed there)."""
        tip = self.git.branch_tip(self.review_ref) if self.review_ref is not None else None
        if tip is None:
            return None
        found, problem = self.sources.in_tree(self.git, self.git.repo[tip].tree, source_id)
        if problem is not None:
            raise StoreError(f"{problem} on {self.review_ref}", code="invalid_source")
        return found

    def ensure_committed(self, record_id: str, text: str) -> None:
        """Refuse when ``text``, the record as :meth:`read` gave it, is a hand edit that is not
        committed yet."""
        path = self.records.path(record_id)
        if path in self.pending():
            return  # read from the review branch: a commit, not a hand edit
        refuse_uncommitted(self.git, [path], read={path: text.encode("utf-8")})

    # -- writing

    def provenance(
        self,
        op: str,
        records: Iterable[str] = (),
        *,
        reason: str | None = None,
        actor: str | None = None,
        sources: Iterable[str] = (),
    ) -> Provenance:
        """Who and why, for a commit of this transaction (see git/identity.py for who)."""
        from ..git.identity import resolve_identity
        from ..git.repo import Provenance

        who = resolve_identity(self.git.repo, self.author, self.warn)
        return Provenance(
            op=op,
            records=tuple(records),
            actor=actor or self.actor,
            reason=reason,
            author=who.author,
            sources=tuple(sources),
            committer=who.committer,
        )

    def commit(
        self,
        files: Mapping[str, bytes | None],
        summary: str,
        op: str,
        record_ids: Iterable[str],
        *,
        reason: str | None = None,
        extra_trailers: Iterable[str] = (),
        rebuild_index: bool = False,
        worktree: Mapping[str, bytes] | None = None,
        sources: Iterable[str] = (),
    ) -> str:
        """Commit ``files`` (path -> bytes, or None to delete) as one write; its commit id.

        ``worktree``: for some paths, what to leave in the working tree instead of the
        committed content (a user's uncommitted edits that stay theirs, uncommitted).
        """
        prov = self.provenance(op, record_ids, reason=reason, sources=sources)
        if self.review_ref is not None:
            if worktree:
                raise GitError(f"a {op} that keeps working files cannot go to a review branch")
            oid = self.git.commit_to_branch(
                self.review_ref,
                files,
                summary,
                prov,
                journal_dir=self.state_dir,
                extra_trailers=extra_trailers,
            )
            self._pending = None
            # The working tree did not change: nothing for the search index to learn.
            return self._finish(oid, [], rebuild_index=False)
        oid = self.git.commit_files(
            files,
            summary,
            prov,
            journal_dir=self.state_dir,
            extra_trailers=extra_trailers,
            worktree=worktree,
        )
        return self._finish(oid, list(files), rebuild_index)

    def advance(
        self,
        head: pygit2.Oid | None,
        commit: pygit2.Oid,
        changes: Mapping[str, Entry | None],
        summary: str,
        op: str,
    ) -> str:
        """Move the branch from ``head`` to an existing ``commit`` (a fast-forward, or a merge
        made with ``GitRepo.create_commit``) and the working tree with it, journaled like a
        commit.

        ``changes`` are the paths that differ between the two commits' trees. A path the new
        commit adds that is here already but not committed is refused, never overwritten.
        """
        if self.review_ref is not None:
            raise GitError(f"a {op} moves the store's branch and cannot go to a review branch")
        old_tree = self.git.head_tree()
        for path in changes:
            self.git.check_inside(path)
        # The caller checked the files HEAD has; a file it lacks, that the new commit brings,
        # must not be here already.
        refuse_uncommitted(self.git, [p for p in changes if self.git.entry_at(old_tree, p) is None])
        self.git.apply(op, head, commit, changes, summary, journal_dir=self.state_dir)
        return self._finish(commit, list(changes), rebuild_index=False)

    def move_branch(
        self, ref_name: str, old: pygit2.Oid | None, new: pygit2.Oid, summary: str, op: str
    ) -> str:
        """Move a branch that is not checked out (a review branch) from ``old`` (None: create
        it) to an existing commit, journaled: a kill leaves the old ref or the new one, and
        the next command drops the journal. The working tree is not involved."""
        self.git.move_branch(ref_name, old, new, op, summary, journal_dir=self.state_dir)
        self.git.finish(self.state_dir)
        return str(new)

    def _finish(self, commit: pygit2.Oid, paths: list[str], rebuild_index: bool) -> str:
        from ..git.repo import fault

        record_files = [p for p in paths if self.records.owner(p) is not None]
        source_files = [p for p in paths if self.sources.owner(p) is not None]
        try:
            if record_files and rebuild_index:
                self._index().rebuild()
            elif record_files:
                self._index().note_written(record_files)
            if source_files and self._chunks is not None:
                self._chunks().note_written(source_files)
        except Exception as err:  # derived state must never fail a write that is committed
            self.warn(f"warning: the search index was not updated ({err}); the next read does it")
        fault("after-search-index")
        self.git.finish(self.state_dir)
        self.commits.append(str(commit))
        return str(commit)


@contextmanager
def write_transaction(
    root: str,
    state_dir: str,
    git: GitRepo,
    lock: WriterLock,
    index: Callable[[], IndexNotes],
    *,
    records: RecordFiles,
    sources: SourceFiles,
    actor: str,
    author: str | None,
    warn: Warn,
    require_head: bool = True,
    chunks: Callable[[], IndexNotes] | None = None,
    review_ref: str | None = None,
) -> Iterator[WriteTransaction]:
    """Hold the writer lock, repair an interrupted write, check the repository, then yield."""
    from ..git.repo import recover as recover_write

    with lock:
        message = recover_write(git, state_dir)
        if message:
            warn(message)
        git.check_writable()
        if require_head and git.head_oid() is None:
            raise GitError(
                f"branch {git.branch_ref().removeprefix('refs/heads/')} has no commits yet; "
                f"commit the store files first with: lantern init {root}"
            )
        yield WriteTransaction(
            root,
            state_dir,
            git,
            index,
            records=records,
            sources=sources,
            actor=actor,
            author=author,
            warn=warn,
            chunks=chunks,
            review_ref=review_ref,
        )
