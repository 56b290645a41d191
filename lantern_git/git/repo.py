"""The git layer: "these files changed, this is the op" becomes one commit with trailers.

A write goes: blobs, tree and commit objects first (unreferenced, harmless), then a journal in
``.lantern/``, then the working files (atomic renames), then the branch ref, then ``.git/index``
entries for just those paths. A crash anywhere is repaired by :func:`recover`: the journal says
whether the ref moved, so the write is either completed or rolled back, never left half-way.
A write to a branch that is not checked out (a review branch, :meth:`GitRepo.commit_to_branch`)
is the same without the working files and the index: objects, journal, one ref.

The tree is built from HEAD's tree with TreeBuilders, never by rewriting the whole index, so a
commit costs the same at 1,000 and 100,000 records.
"""

from __future__ import annotations

import errno
import json
import os
import re
import stat
import time
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import pygit2
from pygit2.enums import FileMode, Option, RepositoryState

from ..core.config import environment
from ..core.fields import JOURNAL, TMP_SUFFIX
from ..errors import GitError, InvalidInput, StoreError

# Test hook, not a feature: LANTERN_FAULT=<point> makes a write SIGKILL its own process at that
# step (after-objects, after-journal, after-first-file, after-files, after-ref, after-index,
# after-search-index; during-recovery: inside recover(), after it put back one file), so tests
# can check that recover() repairs a write cut off there. A review branch's write
# (commit_to_branch) has after-objects, after-journal, after-ref and after-search-index.
# Read once at import; unset, each point costs one comparison. It stays here, not in config.py:
# a test switch, not a setting.
FAULT = os.environ.get("LANTERN_FAULT") or None
# Lock files git and libgit2 leave behind when killed half-way through updating what they guard.
_GIT_LOCKS = ("index.lock", "HEAD.lock", "packed-refs.lock", "logs/HEAD.lock")
_fsync_enabled = False
# From this many files on, a write is flushed with one sync() rather than an fsync per file.
BULK_FILES = 64
_AUTHOR_RE = re.compile(r"\s*(?P<name>[^<>]*?)\s*<(?P<email>[^<>\s]*)>\s*")

BLOB_MODE = 0o100644
EXECUTABLE_MODE = 0o100755
LINK_MODE = 0o120000
TREE_MODE = 0o040000
# A path's entry in a tree: (blob id in hex, file mode); None where the tree lacks the path.
Entry = tuple[str, int]


@dataclass(frozen=True)
class Provenance:
    """Who and why: becomes the commit's author and trailers."""

    op: str
    records: tuple[str, ...] = ()
    actor: str = "api"
    reason: str | None = None
    author: str | None = None
    sources: tuple[str, ...] = ()
    # None: the author commits too.
    committer: str | None = None

    def __post_init__(self) -> None:
        # Undecodable bytes from argv arrive as lone surrogates, which git cannot store.
        for name in ("reason", "author", "committer"):
            value = getattr(self, name)
            if value is not None and not _encodable(value):
                raise InvalidInput(f"{name}: is not valid Unicode text", code="invalid_" + name)


def _encodable(text: str) -> bool:
    try:
        text.encode("utf-8")
        return True
    except UnicodeEncodeError:
        return False


def format_message(summary: str, prov: Provenance, extra_trailers: Iterable[str] = ()) -> str:
    lines = [summary.strip().splitlines()[0] if summary.strip() else prov.op, ""]
    lines.append(f"Lantern-Op: {prov.op}")
    lines.extend(f"Lantern-Record: {record_id}" for record_id in prov.records)
    lines.extend(f"Lantern-Source: {source_id}" for source_id in prov.sources)
    lines.append(f"Lantern-Actor: {prov.actor}")
    if prov.reason:
        lines.append(f"Lantern-Reason: {' '.join(prov.reason.split())}")
    lines.extend(extra_trailers)
    return "\n".join(lines) + "\n"


def parse_trailers(message: str) -> dict[str, list[str]]:
    """Lantern trailers of a commit message, by key."""
    trailers: dict[str, list[str]] = {}
    for line in message.splitlines():
        if line.startswith("Lantern-") and ": " in line:
            key, value = line.split(": ", 1)
            trailers.setdefault(key, []).append(value.strip())
    return trailers


def fault(point: str) -> None:
    """The LANTERN_FAULT test hook: die here, as a power cut or ``kill -9`` would."""
    if point == FAULT:
        import signal

        os.kill(os.getpid(), signal.SIGKILL)


def _enable_fsync() -> None:
    """Make libgit2 fsync objects and refs, so a write survives a power cut (libgit2 never
    fsyncs .git/index; a lost index entry is repaired from HEAD by the next command)."""
    global _fsync_enabled
    if _fsync_enabled:
        return
    _fsync_enabled = True
    pygit2.option(Option.ENABLE_FSYNC_GITDIR, 1)


def _libgit2_fsync(on: bool) -> None:
    try:
        from pygit2.enums import Option

        pygit2.option(Option.ENABLE_FSYNC_GITDIR, 1 if on else 0)
    except (ImportError, AttributeError, ValueError, pygit2.GitError):  # pragma: no cover
        pass


def atomic_write(path: str, data: bytes, sync: bool = True, mode: int = 0o644) -> None:
    """Write via a temporary file in the same folder, fsync, rename: never a half-written file.

    ``sync=False`` leaves the flush to the caller (a bulk write ends with one ``os.sync()``).
    """
    folder = os.path.dirname(path)
    os.makedirs(folder, exist_ok=True)
    tmp = os.path.join(folder, "." + os.path.basename(path) + TMP_SUFFIX)
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    try:
        if mode & 0o111:
            os.fchmod(fd, mode)
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            if sync:
                os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
    if sync:
        _fsync_dir(folder)


def _fsync_dir(folder: str) -> None:
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


class GitRepo:
    """A store's repository, opened with pygit2."""

    def __init__(self, root: str):
        self.root = root
        _enable_fsync()
        try:
            self.repo = pygit2.Repository(root)
        except pygit2.GitError as err:
            raise GitError(f"cannot open git repository at {root}: {err}") from None
        if self.repo.is_bare:
            raise GitError(f"{root} is a bare repository; a store needs a working tree")

    # -- reading

    def branch_ref(self) -> str:
        """The ref HEAD points to (which may not exist yet on an unborn branch)."""
        head = self.repo.references.get("HEAD")
        if head is None:
            raise GitError("the repository has no HEAD")
        target = head.target
        if not isinstance(target, str):
            raise GitError(
                "HEAD is detached; check out a branch (git switch <branch>) before writing"
            )
        return target

    def head_oid(self) -> pygit2.Oid | None:
        try:
            target = self.repo.head.target
        except (pygit2.GitError, KeyError):
            return None
        return target if isinstance(target, pygit2.Oid) else None

    def head_tree(self) -> pygit2.Tree | None:
        oid = self.head_oid()
        return self.repo[oid].peel(pygit2.Tree) if oid is not None else None

    def blob_at(self, tree: pygit2.Tree | None, path: str) -> bytes | None:
        """The bytes of the file at ``path`` in ``tree``; None where there is no file."""
        entry = self.entry_at(tree, path)
        if entry is None or entry[1] not in (BLOB_MODE, EXECUTABLE_MODE, LINK_MODE):
            return None
        return self.blob_data(entry[0])

    def blob_data(self, oid: str | pygit2.Oid) -> bytes:
        """The bytes of a blob (KeyError when the object is missing)."""
        return self.repo[oid].peel(pygit2.Blob).data

    @staticmethod
    def blob_id(data: bytes) -> str:
        """Git's id for a blob of ``data``, nothing written."""
        return str(pygit2.hash(data))

    def paths_under(self, folder: str, tree: pygit2.Tree | None = None) -> Iterator[str]:
        """The path of every file below ``folder`` in ``tree`` (default: HEAD's), from the
        trees' listings alone: no file is read."""
        tree = self.head_tree() if tree is None else tree
        try:
            top = self.repo[tree[folder].id] if tree is not None else None
        except KeyError:
            return
        todo = [(folder, top)]
        while todo:
            prefix, node = todo.pop()
            if not isinstance(node, pygit2.Tree):
                continue
            for entry in node:
                path = f"{prefix}/{entry.name}"
                if entry.filemode == TREE_MODE:
                    todo.append((path, self.repo[entry.id]))
                else:
                    yield path

    def check_writable(self) -> None:
        """Refuse to write into a repository that git itself is in the middle of changing."""
        # The state first: a stopped rebase also detaches HEAD, and "detached" would mislead.
        if self.repo.state() != RepositoryState.NONE:
            raise GitError(
                "the repository has an unfinished git operation (merge, rebase, cherry-pick...); "
                "finish or abort it with git before writing"
            )
        self.branch_ref()

    def signature(self, author: str | None) -> pygit2.Signature:
        author = author or environment().author
        if author:
            match = _AUTHOR_RE.fullmatch(author)
            if not match or not match.group("name"):
                raise InvalidInput(
                    f'author: {author!r} is not in the form "Name <email>"', code="invalid_author"
                )
            return pygit2.Signature(match.group("name"), match.group("email"))
        try:
            return self.repo.default_signature
        except (KeyError, pygit2.GitError):
            raise GitError(
                "no git identity: set user.name and user.email (git config), "
                'or pass --author "Name <email>" or set LANTERN_AUTHOR'
            ) from None

    def branch_info(self) -> dict[str, Any]:
        """Branch, HEAD, upstream and how far ahead/behind it, for ``lantern status``."""
        repo = self.repo
        info: dict[str, Any] = {
            "branch": None,
            "head": None,
            "upstream": None,
            "ahead": None,
            "behind": None,
        }
        head_ref = repo.references.get("HEAD")
        target = head_ref.target if head_ref is not None else None
        if isinstance(target, str):
            info["branch"] = target.removeprefix("refs/heads/")
        head = self.head_oid()
        info["head"] = str(head) if head is not None else None
        if info["branch"] and head is not None:
            branch = repo.branches.local.get(info["branch"])
            upstream = branch.upstream if branch is not None else None
            if upstream is not None:
                info["upstream"] = upstream.shorthand
                info["ahead"], info["behind"] = repo.ahead_behind(head, upstream.target)
        return info

    # -- writing

    def entry_at(self, tree: pygit2.Tree | None, path: str) -> Entry | None:
        """The (blob id, mode) of ``path`` in ``tree``; None where the tree lacks it."""
        if tree is None:
            return None
        try:
            entry = tree[path]
        except KeyError:
            return None
        return str(entry.id), int(entry.filemode)

    def tree_changes(
        self, old: pygit2.Tree | None, new: pygit2.Tree | None
    ) -> dict[str, Entry | None]:
        """path -> its entry in ``new``, or None where ``new`` lacks it, for every path that
        differs between the two trees."""
        # Walked in Python, into the subtrees whose ids differ only: one write touches one
        # shard folder, and libgit2's diff walks every entry of both trees (7 ms a diff at 10k
        # records, 70 at 100k; this walk: under 1 ms). No object is written, not even the
        # empty tree, so a read (a read-only server's) writes nothing.
        return dict(_diff_trees(old, new, ""))

    def iter_tree_changes(
        self, old: pygit2.Tree | None, new: pygit2.Tree | None, under: str
    ) -> Iterator[tuple[str, Entry | None]]:
        """:meth:`tree_changes` below the folder ``under``, one path at a time, each folder's
        names in order: a caller that wants the first few of an import's 100,000 reads three
        folders, not every one."""
        return _diff_trees(_folder(old, under), _folder(new, under), under + "/")

    def build_tree(
        self, base: pygit2.Tree | None, changes: Mapping[str, Entry | None]
    ) -> pygit2.Oid:
        """A new tree: ``base`` with each path set to an entry, or removed when None.

        Built with TreeBuilders from ``base`` down the changed paths only, never by rewriting
        the whole index, so a commit costs the same at 1,000 and 100,000 records.
        """
        nested: dict[str, dict[str, Any] | Entry | None] = {}
        for path, entry in changes.items():
            node = nested
            parts = path.split("/")
            for part in parts[:-1]:
                node = node.setdefault(part + "/", {})  # type: ignore[assignment]
            node[parts[-1]] = entry
        oid = self._write_tree(base, nested)
        return oid if oid is not None else self.repo.TreeBuilder().write()

    def _write_tree(self, base: pygit2.Tree | None, nested: dict[str, Any]) -> pygit2.Oid | None:
        builder = self.repo.TreeBuilder(base) if base is not None else self.repo.TreeBuilder()
        for name, value in nested.items():
            if name.endswith("/"):
                name = name[:-1]
                sub_base = None
                if base is not None and name in base:
                    candidate = self.repo[base[name].id]
                    if isinstance(candidate, pygit2.Tree):
                        sub_base = candidate
                sub_oid = self._write_tree(sub_base, value)
                if sub_oid is None:
                    if builder.get(name) is not None:
                        builder.remove(name)
                else:
                    builder.insert(name, sub_oid, TREE_MODE)
            elif value is None:
                if builder.get(name) is not None:
                    builder.remove(name)
            else:
                builder.insert(name, pygit2.Oid(hex=value[0]), value[1])
        if len(builder) == 0:
            return None
        return builder.write()

    def create_commit(
        self,
        tree: pygit2.Oid,
        parents: list[pygit2.Oid],
        summary: str,
        prov: Provenance,
        extra_trailers: Iterable[str] = (),
    ) -> pygit2.Oid:
        """An unreferenced commit object with lantern's message and trailers; nothing moves
        yet (:meth:`apply` moves the branch to it)."""
        signature = self.signature(prov.author)
        committer = self.signature(prov.committer) if prov.committer else signature
        message = format_message(summary, prov, extra_trailers)
        try:
            return self.repo.create_commit(None, signature, committer, message, tree, parents)
        except (pygit2.GitError, OSError) as err:
            raise GitError(
                f"cannot write to the git repository: {_os_error_text(err)}; nothing changed"
            ) from None

    def commit_files(
        self,
        files: Mapping[str, bytes | None],
        summary: str,
        prov: Provenance,
        *,
        journal_dir: str,
        extra_trailers: Iterable[str] = (),
        worktree: Mapping[str, bytes] | None = None,
    ) -> pygit2.Oid:
        """Write ``files`` (path -> bytes, or None to delete) and commit them as one commit.

        ``worktree`` gives, for some paths, what to leave in the working tree instead of the
        committed content (a user's uncommitted edits that must stay theirs, uncommitted).
        """
        self.check_writable()
        for path in files:
            self.check_inside(path)
        head = self.head_oid()
        commit, changes, kept = self._objects(head, files, worktree, summary, prov, extra_trailers)
        fault("after-objects")
        self.apply(
            prov.op,
            head,
            commit,
            changes,
            summary,
            journal_dir=journal_dir,
            kept=kept,
            contents={p: d for p, d in files.items() if d is not None and p not in kept},
        )
        return commit

    def _objects(
        self,
        parent: pygit2.Oid | None,
        files: Mapping[str, bytes | None],
        worktree: Mapping[str, bytes] | None,
        summary: str,
        prov: Provenance,
        extra_trailers: Iterable[str],
    ) -> tuple[pygit2.Oid, dict[str, Entry | None], dict[str, str]]:
        """Blobs, tree and commit of a write on top of ``parent``: (commit, changed entries,
        kept working-file blobs). Nothing references them yet."""
        # A bulk write (import) flushes everything with one sync() per phase instead of an
        # fsync per object and per file: the same guarantee (nothing is referenced before it
        # is on disk) at a fraction of the cost.
        bulk = len(files) >= BULK_FILES
        if bulk:
            _libgit2_fsync(False)
        try:
            base_tree = self.repo[parent].peel(pygit2.Tree) if parent is not None else None
            changes: dict[str, Entry | None] = {
                path: (str(self.repo.create_blob(data)), BLOB_MODE) if data is not None else None
                for path, data in files.items()
            }
            kept = {
                path: str(self.repo.create_blob(data)) for path, data in (worktree or {}).items()
            }
            tree = self.build_tree(base_tree, changes)
            parents = [parent] if parent is not None else []
            commit = self.create_commit(tree, parents, summary, prov, extra_trailers)
        except (pygit2.GitError, OSError) as err:
            raise GitError(
                f"cannot write to the git repository: {_os_error_text(err)}; nothing changed"
            ) from None
        finally:
            if bulk:
                _libgit2_fsync(_fsync_enabled)
        if bulk:
            os.sync()
        return commit, changes, kept

    def branch_tip(self, ref_name: str) -> pygit2.Oid | None:
        """Where a branch ref points, or None when there is no such branch."""
        ref = self.repo.references.get(ref_name)
        target = ref.resolve().target if ref is not None else None
        return target if isinstance(target, pygit2.Oid) else None

    def branch_changes(self, ref_name: str) -> dict[str, Entry | None]:
        """What ``ref_name`` changed since it left HEAD's line: path -> its entry at the
        branch's tip (None: removed there), against their merge base. Empty when the branch
        does not exist."""
        tip = self.branch_tip(ref_name)
        if tip is None:
            return {}
        head = self.head_oid()
        base = self.repo.merge_base(tip, head) if head is not None else None
        base_tree = self.repo[base].peel(pygit2.Tree) if base is not None else None
        return self.tree_changes(base_tree, self.repo[tip].peel(pygit2.Tree))

    def commit_to_branch(
        self,
        ref_name: str,
        files: Mapping[str, bytes | None],
        summary: str,
        prov: Provenance,
        *,
        journal_dir: str,
        extra_trailers: Iterable[str] = (),
    ) -> pygit2.Oid:
        """Commit ``files`` onto ``ref_name``, a branch that is not checked out (a review
        branch), on top of its tip; on top of HEAD's commit when it does not exist yet, or when
        HEAD's branch already contains it (everything on it was accepted), so it starts fresh.

        Only that ref moves (:meth:`move_branch`): HEAD's branch, the working tree and
        ``.git/index`` are left alone.
        """
        self.check_writable()
        self.check_side_branch(ref_name)
        for path in files:
            self.check_inside(path)
        tip = self.branch_tip(ref_name)
        head = self.head_oid()
        parent = tip
        if tip is None or (head is not None and self.repo.merge_base(tip, head) == tip):
            parent = head
        commit, _, _ = self._objects(parent, files, None, summary, prov, extra_trailers)
        fault("after-objects")
        self.move_branch(ref_name, tip, commit, prov.op, summary, journal_dir=journal_dir)
        return commit

    def check_side_branch(self, ref_name: str) -> None:
        """Refuse a ref that is HEAD's branch or not a valid branch name."""
        if not ref_name.startswith("refs/heads/") or ref_name == self.branch_ref():
            raise GitError(f"{ref_name} is not a branch other than the checked-out one")
        if not pygit2.reference_is_valid_name(ref_name):
            raise GitError(f"{ref_name} is not a valid ref name")

    def move_branch(
        self,
        ref_name: str,
        old: pygit2.Oid | None,
        new: pygit2.Oid,
        op: str,
        summary: str,
        *,
        journal_dir: str,
    ) -> None:
        """Move a branch that is not checked out from ``old`` (None: create it) to the
        existing commit ``new``, and nothing else.

        The journal first, then one compare-and-swap of the ref, which git does by writing
        ``<ref>.lock`` and renaming it over the ref: a kill at any step leaves the old ref or
        the new one, and :func:`recover` drops the journal and clears a ``.lock`` the killed
        writer left. The ref having moved meanwhile fails the write, changing nothing.
        """
        self.check_side_branch(ref_name)
        self._write_journal(
            journal_dir,
            {
                "op": op,
                "ref": ref_name,
                "head_before": str(old) if old is not None else None,
                "commit": str(new),
                "files": {},
                "worktree": False,
            },
        )
        fault("after-journal")
        with self._undone_on_failure(journal_dir):
            self._move_ref(ref_name, old, new, summary)
        fault("after-ref")

    def _write_journal(self, journal_dir: str, journal: dict[str, Any]) -> None:
        journal_path = os.path.join(journal_dir, JOURNAL)
        try:
            os.makedirs(journal_dir, exist_ok=True)
            atomic_write(journal_path, json.dumps(journal).encode())
        except OSError as err:
            raise GitError(
                f"cannot write the write journal {journal_path}: {_os_error_text(err)}; "
                "nothing changed"
            ) from None

    def apply(
        self,
        op: str,
        head: pygit2.Oid | None,
        commit: pygit2.Oid,
        changes: Mapping[str, Entry | None],
        summary: str,
        *,
        journal_dir: str,
        kept: Mapping[str, str] | None = None,
        contents: Mapping[str, bytes] | None = None,
    ) -> None:
        """Move the branch from ``head`` to ``commit`` and the working tree and ``.git/index``
        with it, for the paths in ``changes`` (their entries in ``commit``'s tree).

        The one journaled path every write takes (a lantern commit, a sync's fast-forward or
        merge): journal, working files, branch ref, index entries. A failure before the branch
        moves puts the working files back before raising; a crash anywhere is repaired by
        :func:`recover` on the next command. ``kept``: paths whose working file keeps the given
        blob instead of the committed one (the index still stages the committed one).
        ``contents``: the bytes of some new blobs, when the caller has them, so a large file
        is not read back out of the object database to be written.
        """
        kept = kept or {}
        contents = contents or {}
        ref_name = self.branch_ref()
        base_tree = self.repo[head].peel(pygit2.Tree) if head is not None else None
        bulk = len(changes) >= BULK_FILES
        files: dict[str, dict[str, str | int | None]] = {}
        try:
            for path, entry in changes.items():
                old = self.entry_at(base_tree, path)
                # What the working tree held before, kept as a blob: a rollback puts back
                # exactly that, even a file git does not track yet (init adopting a repository).
                before = self._worktree_blob(path, old[0] if old else None)
                files[path] = {
                    "old": old[0] if old else None,
                    "old_mode": old[1] if old else None,
                    "new": entry[0] if entry else None,
                    "mode": entry[1] if entry else None,
                    "before": before[0] if before else None,
                    "before_mode": before[1] if before else None,
                    **({"after": kept[path]} if path in kept else {}),
                }
        except (pygit2.GitError, OSError) as err:
            raise GitError(
                f"cannot write to the git repository: {_os_error_text(err)}; nothing changed"
            ) from None
        journal = {
            "op": op,
            "ref": ref_name,
            "head_before": str(head) if head is not None else None,
            "commit": str(commit),
            "files": files,
        }
        self._write_journal(journal_dir, journal)
        fault("after-journal")
        with self._undone_on_failure(journal_dir):
            for number, (path, change) in enumerate(files.items()):
                blob = change.get("after", change["new"])
                mode = BLOB_MODE if "after" in change else change["mode"]
                self.write_worktree(
                    path,
                    blob,  # type: ignore[arg-type]
                    mode,  # type: ignore[arg-type]
                    sync=not bulk,
                    data=contents.get(path) if "after" not in change else None,
                )
                if number == 0:
                    fault("after-first-file")
            if bulk:
                os.sync()
            fault("after-files")
            self._move_ref(ref_name, head, commit, summary)
        fault("after-ref")
        try:
            self.sync_index(files, staged={path: changes[path] for path in kept})
        except (OSError, pygit2.GitError) as err:
            raise GitError(
                f"committed {str(commit)[:7]}, but .git/index could not be updated "
                f"({_os_error_text(err)}); the next lantern command finishes it"
            ) from None
        fault("after-index")

    def _worktree_blob(self, path: str, committed: str | None) -> Entry | None:
        """The working file at ``path`` as an entry (a blob made for it if git lacks one), or
        None where there is none. Never read through a symlink: what lies outside the store is
        not ours to copy; a link is kept as a link."""
        found = _read_worktree_file(os.path.join(self.root, path))
        if found is None:
            return None
        data, mode = found
        oid = str(pygit2.hash(data))
        return (oid if oid == committed else str(self.repo.create_blob(data))), mode

    def worktree_entry(self, path: str) -> Entry | None:
        """The working file at ``path`` as a tree would hold it (blob id, mode), nothing written
        to git; None where nothing is there, and an entry no tree holds (an empty blob id)
        where something else is (a folder, a FIFO). Read as :meth:`_worktree_blob` reads."""
        full = os.path.join(self.root, path)
        found = _read_worktree_file(full)
        if found is not None:
            return str(pygit2.hash(found[0])), found[1]
        return ("", 0) if os.path.lexists(full) else None

    @contextmanager
    def _undone_on_failure(self, journal_dir: str) -> Iterator[None]:
        """Around the steps after the journal and before the branch has moved: a failure puts
        back what the journal names, then says so (a git or I/O error as a GitError)."""
        try:
            yield
        except BaseException as err:
            undone = self._undo(journal_dir)
            if isinstance(err, (OSError, pygit2.GitError)):
                raise GitError(f"the write failed ({_os_error_text(err)}); {undone}") from None
            raise

    def _undo(self, journal_dir: str) -> str:
        """Roll back a write that failed before its branch moved; the journal is the guide."""
        try:
            # A lock file here belongs to a live git process, never to us: leave it.
            outcome = recover(self, journal_dir, clear_locks=False) or ""
            return outcome.removeprefix("lantern: ")
        except Exception:
            return "the next lantern command will roll it back"

    def check_inside(self, path: str) -> None:
        """Refuse to write through a symbolic link: a write never leaves the store."""
        parts = path.split("/")
        if not path or path.startswith("/") or ".." in parts or "\\" in path:
            raise GitError(f"refusing to write {path!r}: not a plain path inside the store")
        current = self.root
        for part in parts[:-1]:
            current = os.path.join(current, part)
            if os.path.islink(current):
                raise GitError(
                    f"refusing to write {path}: {os.path.relpath(current, self.root)} is a "
                    "symbolic link, and lantern never writes outside the store"
                )

    def finish(self, journal_dir: str) -> None:
        """The write is complete, the search index included: drop its journal."""
        try:
            os.unlink(os.path.join(journal_dir, JOURNAL))
        except FileNotFoundError:
            pass

    def write_worktree(
        self,
        path: str,
        blob: str | None,
        mode: int | None = BLOB_MODE,
        sync: bool = True,
        data: bytes | None = None,
    ) -> None:
        """Make the working file at ``path`` hold ``blob`` (whose bytes are ``data`` when the
        caller has them), or remove it for None."""
        full = os.path.join(self.root, path)
        if blob is None:
            try:
                os.unlink(full)
            except FileNotFoundError:
                pass
            _prune_empty_dirs(self.root, os.path.dirname(full))
            return
        if mode == LINK_MODE:
            if os.path.lexists(full):
                os.unlink(full)
            os.makedirs(os.path.dirname(full), exist_ok=True)
            os.symlink(self.blob_data(blob), full)
            return
        if mode not in (BLOB_MODE, EXECUTABLE_MODE):
            return  # submodules are git's business
        if os.path.isdir(full) and not os.path.islink(full):
            raise StoreError(
                f"{path} is a folder here but a file in the commit; move it away",
                code="uncommitted_changes",
            )
        if data is None:
            data = self.blob_data(blob)
        atomic_write(full, data, sync, 0o755 if mode == EXECUTABLE_MODE else 0o644)

    def _move_ref(
        self, ref_name: str, old: pygit2.Oid | None, new: pygit2.Oid, summary: str
    ) -> None:
        log_message = f"lantern: {summary.splitlines()[0] if summary else ''}"[:200]
        existing = self.repo.references.get(ref_name)
        if existing is None:
            if old is not None:
                raise GitError(f"{ref_name} disappeared during the write")
            # Not forced: a ref that appeared meanwhile makes this fail, never overwritten.
            self.repo.create_reference_direct(ref_name, new, False, message=log_message)
            return
        if existing.target != old:
            raise GitError(f"{ref_name} moved during the write; nothing was committed")
        existing.set_target(new, log_message)

    def sync_index(
        self, paths: Iterable[str], staged: Mapping[str, Entry | str | None] | None = None
    ) -> None:
        """Bring ``.git/index`` entries for ``paths`` in step with HEAD and the working tree.

        ``staged``: paths whose entry is given (an entry or blob id, or None for no entry)
        rather than taken from the working file, which differs on purpose.
        """
        index = self.repo.index
        index.read(False)
        staged = staged or {}
        for path in paths:
            given = staged.get(path)
            if given is not None:
                blob, mode = given if isinstance(given, tuple) else (given, BLOB_MODE)
                index.add(pygit2.IndexEntry(path, pygit2.Oid(hex=blob), FileMode(mode)))
            elif path not in staged and os.path.lexists(os.path.join(self.root, path)):
                index.add(path)
                if _written_this_second(os.path.join(self.root, path)):
                    # Git compares whole seconds: a same-size edit later in this second would
                    # match the stat recorded now, and once .git/index is written in a later
                    # second git would trust it. Recorded without a stat, the entry makes git
                    # read the file (and git's own status records the stat once it is safe).
                    added = index[path]
                    index.add(pygit2.IndexEntry(path, added.id, added.mode))
            else:
                try:
                    index.remove(path)
                except (OSError, pygit2.GitError, KeyError):
                    pass
        index.write()


def _written_this_second(path: str) -> bool:
    """Whether the file at ``path`` was last changed in this second or the one before (the
    margin covers a file system clock a little ahead of or behind this process's)."""
    return int(os.lstat(path).st_mtime) >= int(time.time()) - 1


def _folder(tree: pygit2.Tree | None, path: str) -> pygit2.Tree | None:
    """The folder at ``path`` in ``tree``; None where there is none (or a file is there)."""
    if tree is None:
        return None
    try:
        entry = tree[path]
    except KeyError:
        return None
    return entry if type(entry) is pygit2.Tree else None


def _diff_trees(
    old: pygit2.Tree | None, new: pygit2.Tree | None, prefix: str
) -> Iterator[tuple[str, Entry | None]]:
    """Every file path below ``prefix`` that differs between the two trees (either may be
    None: empty), with its entry in ``new`` (None where ``new`` lacks it), as
    ``GitRepo.tree_changes`` answers them: one folder's names in order, each folder's files
    before the file of the same name, lazily."""
    olds = {str(e.name): e for e in old} if old is not None else {}
    news = {str(e.name): e for e in new} if new is not None else {}
    for name in sorted(olds.keys() | news.keys()):
        before, after = olds.get(name), news.get(name)
        same = before is not None and after is not None and before.id == after.id
        if same and (type(before) is pygit2.Tree or before.filemode == after.filemode):  # type: ignore[union-attr]
            continue
        path = prefix + name
        before_tree = before if type(before) is pygit2.Tree else None
        after_tree = after if type(after) is pygit2.Tree else None
        if before_tree is not None or after_tree is not None:
            yield from _diff_trees(before_tree, after_tree, path + "/")
        if after is not None and after_tree is None:
            yield path, (str(after.id), int(after.filemode))
        elif before is not None and before_tree is None:
            yield path, None


# Text that reads as a moment rather than a revision: ISO dates and durations (+7d, -2h).
_LOOKS_LIKE_TIME = re.compile(r"\d{4}-\d{2}-\d{2}([T ].*)?|[+-]\d+[smhdw]")


def resolve_point(git: GitRepo, at: str | int) -> tuple[pygit2.Commit | None, int]:
    """(commit, moment): the commit the store was at, and the time used to judge expiry.

    ``at`` is any revision git understands (HEAD~3, a hash, a tag, main@{yesterday}) or a
    moment (unix seconds, ISO 8601, a duration): then the newest commit on the first-parent
    line made at or before it. A revision is judged at its commit time.
    """
    from ..core.timespec import parse_time

    repo = git.repo
    text = str(at).strip()
    if not text:
        raise InvalidInput("at: must not be empty", code="invalid_at")
    if not isinstance(at, int) and not _LOOKS_LIKE_TIME.fullmatch(text):
        try:
            commit = repo.revparse_single(text).peel(pygit2.Commit)
            return commit, int(commit.commit_time)
        except (KeyError, ValueError, pygit2.GitError, pygit2.InvalidSpecError):
            if not text.isdigit():
                raise InvalidInput(
                    f"at: {text!r} is neither a git revision nor a time "
                    "(unix seconds, 2026-12-31, 2026-12-31T08:00:00Z, -7d)",
                    code="invalid_at",
                ) from None
    moment = at if isinstance(at, int) else parse_time(text, name="at")
    head = git.head_oid()
    point: pygit2.Commit | None = repo[head].peel(pygit2.Commit) if head is not None else None
    while point is not None and point.commit_time > moment:
        point = point.parents[0] if point.parents else None
    return point, moment


def _os_error_text(err: BaseException) -> str:
    """An OSError as a person reads it; a full disk says so first."""
    if isinstance(err, OSError) and err.errno == errno.ENOSPC:
        return "the disk is full (No space left on device)"
    if isinstance(err, OSError) and err.strerror:
        return err.strerror + (f": {err.filename}" if err.filename else "")
    text = str(err)
    if "No space left on device" in text:
        return f"the disk is full ({text})"
    return text


def _read_worktree_file(full: str) -> tuple[bytes, int] | None:
    """The bytes and mode of a regular file or a symbolic link (its target, as git stores it);
    None for anything else. Never follows the link, never blocks on a FIFO: the path is opened
    first, not through a link and not waiting for a writer, and then what was opened is asked
    what it is, so nothing can take its place in between."""
    try:
        fd = os.open(full, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        # A link (O_NOFOLLOW refuses it), or nothing there, or nothing that can be opened.
        try:
            if stat.S_ISLNK(os.lstat(full).st_mode):
                return os.fsencode(os.readlink(full)), LINK_MODE
        except OSError:
            pass
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            return None
        with open(fd, "rb", closefd=False) as handle:
            data = handle.read()
    except OSError:
        return None
    finally:
        os.close(fd)
    # Git's rule: the owner's execute bit alone makes a file executable.
    return data, EXECUTABLE_MODE if st.st_mode & stat.S_IXUSR else BLOB_MODE


def _prune_empty_dirs(root: str, folder: str) -> None:
    root = os.path.abspath(root)
    while os.path.abspath(folder).startswith(root + os.sep):
        try:
            os.rmdir(folder)
        except OSError:
            return
        folder = os.path.dirname(folder)


def recover(git: GitRepo, journal_dir: str, *, clear_locks: bool = True) -> str | None:
    """Complete or roll back a write that was interrupted; returns what was done, for stderr.

    The caller holds the writer lock. The branch ref decides: if it points at the journal's
    commit the write happened and the working files and ``.git/index`` are brought forward;
    if it still points where it did before, the working files are put back. Running this
    again after a crash half-way through it gives the same result.
    """
    journal_path = os.path.join(journal_dir, JOURNAL)
    # A writer killed while writing its journal leaves only the journal's temporary file:
    # nothing of that write reached the working tree, so it is simply dropped.
    _remove_temporaries(journal_dir, [JOURNAL])
    try:
        with open(journal_path, "rb") as handle:
            journal_mtime = os.fstat(handle.fileno()).st_mtime
            journal = json.loads(handle.read())
        files: dict[str, Any] = journal["files"]
        op, ref_name, commit = journal["op"], journal["ref"], journal["commit"]
        head_before = journal["head_before"]
        if not isinstance(files, dict):
            raise TypeError("files")
    except FileNotFoundError:
        return None
    except (OSError, ValueError, KeyError, TypeError):
        os.unlink(journal_path)
        return "lantern: discarded an unreadable write journal"
    if clear_locks:
        _clear_stale_git_locks(git, ref_name, journal_mtime)
    repo = git.repo
    if journal.get("worktree") is False:
        # A side branch's write (commit_to_branch): one ref, no files; the ref says it all.
        tip = git.branch_tip(ref_name)
        where = ref_name.removeprefix("refs/heads/")
        if tip is not None and str(tip) == commit:
            outcome = f"completed an interrupted {op} on {where} (commit {commit[:7]})"
        elif (str(tip) if tip is not None else None) == head_before:
            outcome = f"rolled back an interrupted {op} on {where}; nothing of it was committed"
        else:
            outcome = f"found an interrupted {op} on {where}, which has since moved; left as is"
        os.unlink(journal_path)
        _fsync_dir(journal_dir)
        return "lantern: " + outcome
    ref = repo.references.get(ref_name)
    head = str(ref.target) if ref is not None else None
    head_ref = repo.references.get("HEAD")
    on_branch = head_ref is not None and head_ref.target == ref_name
    try:
        if on_branch and head == commit:
            for path, change in files.items():
                if "after" in change:
                    _restore_file(git, path, change["after"], BLOB_MODE)
                else:
                    _restore_file(git, path, change["new"], change.get("mode"))
                fault("during-recovery")
            git.sync_index(files, staged={p: c["new"] for p, c in files.items() if "after" in c})
            outcome = f"completed an interrupted {op} (commit {commit[:7]})"
        elif on_branch and head == head_before:
            for path, change in files.items():
                written = {change["new"], change.get("after", change["new"])}
                if _worktree_oid(git, path) in written:
                    if "before" in change:
                        _restore_file(git, path, change["before"], change.get("before_mode"))
                    else:
                        _restore_file(git, path, change["old"], change.get("old_mode"))
                    fault("during-recovery")
            # The entries go back to HEAD's, as before the write; an uncommitted edit put back
            # in the working tree stays unstaged.
            git.sync_index(
                files,
                staged={
                    p: (c["old"], c.get("old_mode") or BLOB_MODE) if c["old"] else None
                    for p, c in files.items()
                },
            )
            outcome = f"rolled back an interrupted {op}; nothing of it was committed"
        else:
            outcome = f"found an interrupted {op} whose branch has since moved; left as is"
    except KeyError as err:
        outcome = f"could not repair an interrupted {op}: git object {err} is missing; left as is"
    except (OSError, pygit2.GitError) as err:
        locks = _existing_locks(git, ref_name)
        remedy = f"remove {', '.join(locks)} and " if locks else ""
        raise GitError(
            f"cannot finish repairing an interrupted {op} ({_os_error_text(err)}); if no git "
            f"command is running, {remedy}run lantern again"
        ) from None
    _remove_temporaries(git.root, files)
    os.unlink(journal_path)
    _fsync_dir(journal_dir)
    return "lantern: " + outcome


def _lock_names(ref_name: str) -> tuple[str, ...]:
    return (*_GIT_LOCKS, ref_name + ".lock", "logs/" + ref_name + ".lock")


def _existing_locks(git: GitRepo, ref_name: str) -> list[str]:
    gitdir = git.repo.path
    return [
        os.path.join(gitdir, name)
        for name in _lock_names(ref_name)
        if os.path.exists(os.path.join(gitdir, name))
    ]


def _clear_stale_git_locks(git: GitRepo, ref_name: str, since: float) -> None:
    """Drop git lock files the interrupted write itself left: created after its journal.

    We hold the writer lock, so a git lock file younger than the journal was almost surely
    left by the killed writer; a plain git command running at this very moment is the one
    case this cannot tell apart, and git would refuse to go on with a missing lock anyway.
    """
    gitdir = git.repo.path
    for name in _lock_names(ref_name):
        lock = os.path.join(gitdir, name)
        try:
            if os.stat(lock).st_mtime >= since - 1:
                os.unlink(lock)
        except FileNotFoundError:
            pass


def _worktree_oid(git: GitRepo, path: str) -> str | None:
    full = os.path.join(git.root, path)
    try:
        if os.path.islink(full):
            return str(pygit2.hash(os.fsencode(os.readlink(full))))
        with open(os.open(full, os.O_RDONLY | os.O_NONBLOCK), "rb") as handle:
            return str(pygit2.hash(handle.read()))
    except (FileNotFoundError, IsADirectoryError):
        return None


def _restore_file(git: GitRepo, path: str, blob: str | None, mode: int | None) -> None:
    if _worktree_oid(git, path) == blob:
        return
    git.write_worktree(path, blob, mode or BLOB_MODE)


def _remove_temporaries(root: str, files: Iterable[str]) -> None:
    for path in files:
        full = os.path.join(root, path)
        tmp = os.path.join(os.path.dirname(full), "." + os.path.basename(full) + TMP_SUFFIX)
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
