"""The git layer: "these files changed, this is the op" becomes one commit with trailers.

A write goes: blobs, tree and commit objects first (unreferenced, harmless), then a journal in
``.lantern/``, then the working files (atomic renames), then the branch ref, then ``.git/index``
entries for just those paths. A crash anywhere is repaired by :func:`recover`: the journal says
whether the ref moved, so the write is either completed or rolled back, never left half-way.

The tree is built from HEAD's tree with TreeBuilders, never by rewriting the whole index, so a
commit costs the same at 1,000 and 100,000 records.
"""

from __future__ import annotations

import json
import os
import re
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import pygit2

from ..errors import GitError

JOURNAL = "journal.json"
TMP_SUFFIX = ".lantern-tmp"
# Test hook, not a feature: LANTERN_FAULT=<point> makes a write SIGKILL its own process at that
# step (after-objects, after-journal, after-first-file, after-files, after-ref, after-index,
# after-search-index; during-recovery: inside recover(), after it put back one file), so tests
# can check that recover() repairs a write cut off there.
# Read once at import; unset, each point costs one comparison.
FAULT = os.environ.get("LANTERN_FAULT") or None
# Lock files git and libgit2 leave behind when killed half-way through updating what they guard.
_GIT_LOCKS = ("index.lock", "HEAD.lock", "packed-refs.lock", "logs/HEAD.lock")
_fsync_enabled = False
# From this many files on, a write is flushed with one sync() rather than an fsync per file.
BULK_FILES = 64
_AUTHOR_RE = re.compile(r"\s*(?P<name>[^<>]*?)\s*<(?P<email>[^<>\s]*)>\s*")

try:
    from pygit2.enums import FileMode, RepositoryState

    _BLOB_MODE = FileMode.BLOB
    _TREE_MODE = FileMode.TREE
    _STATE_NONE = RepositoryState.NONE
except ImportError:  # pragma: no cover - older pygit2
    _BLOB_MODE = pygit2.GIT_FILEMODE_BLOB
    _TREE_MODE = pygit2.GIT_FILEMODE_TREE
    _STATE_NONE = pygit2.GIT_REPOSITORY_STATE_NONE


@dataclass(frozen=True)
class Provenance:
    """Who and why: becomes the commit's author and trailers."""

    op: str
    records: tuple[str, ...] = ()
    actor: str = "api"
    reason: str | None = None
    author: str | None = None

    def __post_init__(self) -> None:
        # Undecodable bytes from argv arrive as lone surrogates, which git cannot store.
        for name in ("reason", "author"):
            value = getattr(self, name)
            if value is not None and not _encodable(value):
                from ..errors import InvalidInput

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
    """Make libgit2 fsync objects, refs and the index, so a write survives a power cut."""
    global _fsync_enabled
    if _fsync_enabled:
        return
    _fsync_enabled = True
    try:
        from pygit2.enums import Option

        pygit2.option(Option.ENABLE_FSYNC_GITDIR, 1)
    except (ImportError, AttributeError, ValueError, pygit2.GitError):  # pragma: no cover
        try:
            pygit2.settings.enable_fsync_gitdir = True
        except AttributeError:
            pass


def _libgit2_fsync(on: bool) -> None:
    try:
        from pygit2.enums import Option

        pygit2.option(Option.ENABLE_FSYNC_GITDIR, 1 if on else 0)
    except (ImportError, AttributeError, ValueError, pygit2.GitError):  # pragma: no cover
        pass


def atomic_write(path: str, data: bytes, sync: bool = True) -> None:
    """Write via a temporary file in the same folder, fsync, rename: never a half-written file.

    ``sync=False`` leaves the flush to the caller (a bulk write ends with one ``os.sync()``).
    """
    folder = os.path.dirname(path)
    os.makedirs(folder, exist_ok=True)
    tmp = os.path.join(folder, "." + os.path.basename(path) + TMP_SUFFIX)
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
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
            return self.repo.head.target
        except (pygit2.GitError, KeyError):
            return None

    def head_tree(self) -> pygit2.Tree | None:
        oid = self.head_oid()
        return self.repo[oid].peel(pygit2.Tree) if oid is not None else None

    def blob_at(self, tree: pygit2.Tree | None, path: str) -> bytes | None:
        if tree is None:
            return None
        try:
            entry = tree[path]
        except KeyError:
            return None
        obj = self.repo[entry.id]
        return obj.data if isinstance(obj, pygit2.Blob) else None

    def oid_at(self, tree: pygit2.Tree | None, path: str) -> pygit2.Oid | None:
        if tree is None:
            return None
        try:
            return tree[path].id
        except KeyError:
            return None

    def check_writable(self) -> None:
        """Refuse to write into a repository that git itself is in the middle of changing."""
        # The state first: a stopped rebase also detaches HEAD, and "detached" would mislead.
        if self.repo.state() != _STATE_NONE:
            raise GitError(
                "the repository has an unfinished git operation (merge, rebase, cherry-pick...); "
                "finish or abort it with git before writing"
            )
        self.branch_ref()

    def signature(self, author: str | None) -> pygit2.Signature:
        author = author or os.environ.get("LANTERN_AUTHOR")
        if author:
            match = _AUTHOR_RE.fullmatch(author)
            if not match or not match.group("name"):
                from ..errors import InvalidInput

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

    def branch_info(self) -> dict:
        """Branch, HEAD, upstream and how far ahead/behind it, for ``lantern status``."""
        repo = self.repo
        info: dict = {"branch": None, "head": None, "upstream": None, "ahead": None, "behind": None}
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

    def build_tree(self, base: pygit2.Tree | None, changes: Mapping[str, pygit2.Oid | None]):
        """A new tree: ``base`` with each path set to a blob, or removed when None."""
        nested: dict[str, dict] = {}
        for path, oid in changes.items():
            node = nested
            parts = path.split("/")
            for part in parts[:-1]:
                node = node.setdefault(part + "/", {})
            node[parts[-1]] = oid
        return self._write_tree(base, nested)

    def _write_tree(self, base: pygit2.Tree | None, nested: dict) -> pygit2.Oid | None:
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
                    builder.insert(name, sub_oid, _TREE_MODE)
            elif value is None:
                if builder.get(name) is not None:
                    builder.remove(name)
            else:
                builder.insert(name, value, _BLOB_MODE)
        if len(builder) == 0:
            return None
        return builder.write()

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

        A failure before the branch moves rolls the working files back before raising; a crash
        anywhere is repaired by :func:`recover` on the next command.
        """
        self.check_writable()
        ref_name = self.branch_ref()
        signature = self.signature(prov.author)
        head = self.head_oid()
        for path in files:
            self._check_inside(path)
        # A bulk write (import) flushes everything with one sync() per phase instead of an
        # fsync per object and per file: the same guarantee (nothing is referenced before it
        # is on disk) at a fraction of the cost.
        bulk = len(files) >= BULK_FILES
        if bulk:
            _libgit2_fsync(False)
        try:
            base_tree = self.repo[head].peel(pygit2.Tree) if head is not None else None
            blobs = {
                path: (self.repo.create_blob(data) if data is not None else None)
                for path, data in files.items()
            }
            worktree = worktree or {}
            after = {path: self.repo.create_blob(data) for path, data in worktree.items()}
            # What the working tree held before, kept as a blob: a rollback puts back exactly
            # that, even a file git does not track yet (init adopting a repository).
            before = {
                path: self._worktree_blob(path, self.oid_at(base_tree, path)) for path in files
            }
            tree_oid = self.build_tree(base_tree, blobs)
            if tree_oid is None:
                tree_oid = self.repo.TreeBuilder().write()
            message = format_message(summary, prov, extra_trailers)
            parents = [head] if head is not None else []
            commit_oid = self.repo.create_commit(
                None, signature, signature, message, tree_oid, parents
            )
        except (pygit2.GitError, OSError) as err:
            raise GitError(f"cannot write to the git repository: {err}; nothing changed") from None
        finally:
            if bulk:
                _libgit2_fsync(_fsync_enabled)
        if bulk:
            os.sync()
        fault("after-objects")
        journal = {
            "op": prov.op,
            "ref": ref_name,
            "head_before": str(head) if head is not None else None,
            "commit": str(commit_oid),
            "files": {
                path: {
                    "old": _hex(self.oid_at(base_tree, path)),
                    "new": _hex(blobs[path]),
                    "before": _hex(before[path]),
                    **({"after": str(after[path])} if path in after else {}),
                }
                for path in files
            },
        }
        journal_path = os.path.join(journal_dir, JOURNAL)
        try:
            os.makedirs(journal_dir, exist_ok=True)
            atomic_write(journal_path, json.dumps(journal).encode())
        except OSError as err:
            raise GitError(
                f"cannot write the write journal {journal_path}: {err.strerror}; nothing changed"
            ) from None
        fault("after-journal")
        try:
            for number, (path, data) in enumerate(files.items()):
                self._write_worktree(path, worktree.get(path, data), sync=not bulk)
                if number == 0:
                    fault("after-first-file")
            if bulk:
                os.sync()
            fault("after-files")
            self._move_ref(ref_name, head, commit_oid, summary)
        except BaseException as err:
            undone = self._undo(journal_dir)
            if isinstance(err, (OSError, pygit2.GitError)):
                raise GitError(f"the write failed ({err}); {undone}") from None
            raise
        fault("after-ref")
        try:
            self.sync_index(files, staged={path: blobs[path] for path in after})
        except (OSError, pygit2.GitError) as err:
            raise GitError(
                f"committed {str(commit_oid)[:7]}, but .git/index could not be updated ({err}); "
                "the next lantern command finishes it"
            ) from None
        fault("after-index")
        return commit_oid

    def _worktree_blob(self, path: str, committed: pygit2.Oid | None) -> pygit2.Oid | None:
        full = os.path.join(self.root, path)
        try:
            # Never through a symlink: what lies outside the store is not ours to copy.
            with open(os.open(full, os.O_RDONLY | os.O_NOFOLLOW), "rb") as handle:
                data = handle.read()
        except OSError:
            return None
        oid = pygit2.hash(data)
        return oid if oid == committed else self.repo.create_blob(data)

    def _undo(self, journal_dir: str) -> str:
        """Roll back a write that failed before its branch moved; the journal is the guide."""
        try:
            # A lock file here belongs to a live git process, never to us: leave it.
            outcome = recover(self, journal_dir, clear_locks=False) or ""
            return outcome.removeprefix("lantern: ")
        except Exception:
            return "the next lantern command will roll it back"

    def _check_inside(self, path: str) -> None:
        """Refuse to write through a symbolic link: a record write never leaves the store."""
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

    def _write_worktree(self, path: str, data: bytes | None, sync: bool = True) -> None:
        full = os.path.join(self.root, path)
        if data is None:
            try:
                os.unlink(full)
            except FileNotFoundError:
                pass
        else:
            atomic_write(full, data, sync)

    def _move_ref(self, ref_name: str, old: pygit2.Oid | None, new: pygit2.Oid, summary: str):
        log_message = f"lantern: {summary.splitlines()[0] if summary else ''}"[:200]
        existing = self.repo.references.get(ref_name)
        if existing is None:
            if old is not None:
                raise GitError(f"{ref_name} disappeared during the write")
            self.repo.references.create(ref_name, new)
            return
        if existing.target != old:
            raise GitError(f"{ref_name} moved during the write; nothing was committed")
        existing.set_target(new, log_message)

    def sync_index(self, paths: Iterable[str], staged: Mapping[str, object] | None = None) -> None:
        """Bring ``.git/index`` entries for ``paths`` in step with HEAD and the working tree.

        ``staged``: paths whose entry is given (a blob, or None for no entry) rather than taken
        from the working file, which differs on purpose.
        """
        index = self.repo.index
        index.read(False)
        staged = staged or {}
        for path in paths:
            if staged.get(path) is not None:
                oid = staged[path]
                oid = oid if isinstance(oid, pygit2.Oid) else pygit2.Oid(hex=oid)
                index.add(pygit2.IndexEntry(path, oid, _BLOB_MODE))
            elif path not in staged and os.path.lexists(os.path.join(self.root, path)):
                index.add(path)
            else:
                try:
                    index.remove(path)
                except (OSError, pygit2.GitError, KeyError):
                    pass
        index.write()


def _hex(oid) -> str | None:
    return str(oid) if oid is not None else None


def recover(git: GitRepo, journal_dir: str, *, clear_locks: bool = True) -> str | None:
    """Complete or roll back a write that was interrupted; returns what was done, for stderr.

    The caller holds the writer lock. The branch ref decides: if it points at the journal's
    commit the write happened and the working files and ``.git/index`` are brought forward;
    if it still points where it did before, the working files are put back. Running this
    again after a crash half-way through it gives the same result.
    """
    journal_path = os.path.join(journal_dir, JOURNAL)
    try:
        with open(journal_path, "rb") as handle:
            journal_mtime = os.fstat(handle.fileno()).st_mtime
            journal = json.loads(handle.read())
        files: dict = journal["files"]
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
    ref = repo.references.get(ref_name)
    head = str(ref.target) if ref is not None else None
    head_ref = repo.references.get("HEAD")
    on_branch = head_ref is not None and head_ref.target == ref_name
    try:
        if on_branch and head == commit:
            for path, change in files.items():
                _restore_file(git, path, change.get("after", change["new"]))
                fault("during-recovery")
            git.sync_index(files, staged={p: c["new"] for p, c in files.items() if "after" in c})
            outcome = f"completed an interrupted {op} (commit {commit[:7]})"
        elif on_branch and head == head_before:
            for path, change in files.items():
                written = {change["new"], change.get("after", change["new"])}
                if _worktree_oid(git, path) in written:
                    _restore_file(git, path, change.get("before", change["old"]))
                    fault("during-recovery")
            # The entries go back to HEAD's, as before the write; an uncommitted edit put back
            # in the working tree stays unstaged.
            git.sync_index(files, staged={p: c["old"] for p, c in files.items()})
            outcome = f"rolled back an interrupted {op}; nothing of it was committed"
        else:
            outcome = f"found an interrupted {op} whose branch has since moved; left as is"
    except KeyError as err:
        outcome = f"could not repair an interrupted {op}: git object {err} is missing; left as is"
    except (OSError, pygit2.GitError) as err:
        locks = _existing_locks(git, ref_name)
        remedy = f"remove {', '.join(locks)} and " if locks else ""
        raise GitError(
            f"cannot finish repairing an interrupted {op} ({err}); if no git command is "
            f"running, {remedy}run lantern again"
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
        with open(full, "rb") as handle:
            return str(pygit2.hash(handle.read()))
    except FileNotFoundError:
        return None


def _restore_file(git: GitRepo, path: str, blob_hex: str | None) -> None:
    if _worktree_oid(git, path) == blob_hex:
        return
    data = git.repo[blob_hex].data if blob_hex is not None else None
    git._write_worktree(path, data)


def _remove_temporaries(root: str, files: Iterable[str]) -> None:
    for path in files:
        full = os.path.join(root, path)
        tmp = os.path.join(os.path.dirname(full), "." + os.path.basename(full) + TMP_SUFFIX)
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass


def warn(message: str) -> None:
    print(message, file=sys.stderr)
