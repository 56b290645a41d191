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

import os
import shlex
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import pygit2

from .errors import GitError, InvalidInput, StoreError, UncommittedChanges
from .git.repo import JOURNAL, TMP_SUFFIX, Provenance, atomic_write, format_message
from .merge import MergeError, RecordMerge, expected_id, merge_records

DRIVER_NAME = "lantern record merge (field by field; see lantern's README)"
MAX_PUSH_ATTEMPTS = 5
_BLOB = 0o100644
_EXECUTABLE = 0o100755
_LINK = 0o120000
_TREE = 0o040000
_EMPTY_OID = "0" * 40
# Push refusals that mean "the remote moved since we fetched": fetch, merge and try again.
_MOVED_REASONS = (
    "fetch first",
    "non-fast-forward",
    "stale info",
    "cannot lock ref",
    "failed to update ref",
    "failed to lock",
)


def merge_driver_command() -> str:
    """The driver line for git config: this Python, so it works without PATH set up."""
    return f"{shlex.quote(sys.executable)} -m lantern_git merge-file %O %A %B %P"


def ensure_merge_driver(repo: pygit2.Repository, warn=None) -> bool:
    """Register the record merge driver in the repository's own config; True if it changed.

    Git config is not cloned, so ``init`` and every ``sync`` make sure it is there. A config
    that cannot be written (locked by a running git, read-only) only costs plain ``git pull``
    its record merge, so it is a warning, not a failure.
    """
    changed = False
    try:
        config = repo.config
        for key, value in (
            ("merge.lantern.name", DRIVER_NAME),
            ("merge.lantern.driver", merge_driver_command()),
        ):
            try:
                current = config[key]
            except KeyError:
                current = None
            if current != value:
                config[key] = value
                changed = True
    except (pygit2.GitError, OSError) as err:
        if warn is not None:
            warn(
                f"lantern: could not register the record merge driver in .git/config ({err}); "
                "plain git pull will merge record files line by line until it is"
            )
    return changed


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

    def to_dict(self) -> dict[str, Any]:
        conflicts = self.merge.conflicts if self.merge is not None else ()
        return {
            "id": self.id,
            "fields": [c.to_dict("local", "remote") for c in conflicts],
            "note": self.note,
        }


@dataclass
class TreeMerge:
    tree: pygit2.Oid
    records: list[RecordReport] = field(default_factory=list)


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
    pushed: bool = False
    pushed_commits: int = 0
    set_upstream: bool = False
    attempts: int = 0

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
            "pushed": self.pushed,
            "pushed_commits": self.pushed_commits,
            "set_upstream": self.set_upstream,
            "attempts": self.attempts,
        }


# ---------------------------------------------------------------------------- git CLI


def git_env(repo_root: str) -> dict[str, str]:
    """The environment for network git: no prompts, ssh in batch mode, C locale messages."""
    env = dict(os.environ)
    env["GIT_TERMINAL_PROMPT"] = "0"
    env["GCM_INTERACTIVE"] = "never"
    env["LC_ALL"] = "C"
    env.pop("LANGUAGE", None)
    if "GIT_SSH" not in env:
        ssh = env.get("GIT_SSH_COMMAND") or _config_value(repo_root, "core.sshCommand") or "ssh"
        if "BatchMode" not in ssh:
            ssh += " -o BatchMode=yes"
        if "ConnectTimeout" not in ssh:
            ssh += " -o ConnectTimeout=30"
        env["GIT_SSH_COMMAND"] = ssh
    return env


def _config_value(root: str, key: str) -> str | None:
    try:
        return pygit2.Repository(root).config[key]
    except (KeyError, pygit2.GitError):
        return None


def run_git(
    root: str, *args: str, env: Mapping[str, str] | None = None
) -> subprocess.CompletedProcess:
    try:
        return subprocess.run(
            ["git", *args],
            cwd=root,
            env=dict(env) if env is not None else git_env(root),
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            check=False,
        )
    except FileNotFoundError:
        raise GitError("git is not installed (or not on PATH); lantern sync needs it") from None


def _failure(what: str, result: subprocess.CompletedProcess) -> GitError:
    output = result.stderr or result.stdout or ""
    lines = [line.strip() for line in output.splitlines() if line.strip()]
    detail = " ".join(lines[-4:])
    hint = ""
    lowered = output.lower()
    if "permission denied" in lowered or "host key verification failed" in lowered:
        hint = (
            " (ssh runs without prompts: load a key into your ssh agent with ssh-add, "
            "and connect once with plain ssh to accept the host key)"
        )
    elif "could not read username" in lowered or "authentication failed" in lowered:
        hint = " (no credentials: git runs without prompts; configure a credential helper)"
    return GitError(f"{what} failed: {detail or f'git exited with {result.returncode}'}{hint}")


# ---------------------------------------------------------------------------- the remote


@dataclass
class Target:
    """Where to sync with: a named remote (with a tracking ref) or a bare URL/path."""

    remote: str
    remote_branch: str
    named: bool
    # The branch has no upstream at all: the first push (or sync) sets this remote as it.
    wants_upstream: bool

    @property
    def tracking_ref(self) -> str | None:
        return f"refs/remotes/{self.remote}/{self.remote_branch}" if self.named else None

    @property
    def label(self) -> str:
        return f"{self.remote}/{self.remote_branch}" if self.named else self.remote


def resolve_target(repo: pygit2.Repository, remote: str | None, branch: str) -> Target:
    names = list(repo.remotes.names())
    config = repo.config
    upstream_remote = _get(config, f"branch.{branch}.remote")
    upstream_merge = _get(config, f"branch.{branch}.merge")
    if remote is None:
        if upstream_remote and upstream_remote in names:
            remote = upstream_remote
        elif "origin" in names:
            remote = "origin"
        elif len(names) == 1:
            remote = names[0]
        else:
            raise StoreError(
                "no remote to sync with: add one with git remote add origin URL, "
                "or name it: lantern sync REMOTE"
                if not names
                else f"several remotes ({', '.join(names)}) and no upstream: name one, "
                "lantern sync REMOTE",
                code="no_remote",
            )
    if remote in names:
        has_upstream = upstream_remote == remote and bool(upstream_merge)
        remote_branch = (
            upstream_merge.removeprefix("refs/heads/")
            if has_upstream and upstream_merge
            else branch
        )
        return Target(remote, remote_branch, True, upstream_remote is None)
    if "://" in remote or os.path.exists(os.path.expanduser(remote)) or _scp_like(remote):
        return Target(remote, branch, False, False)
    raise InvalidInput(
        f"remote: {remote!r} is neither a configured remote ({', '.join(names) or 'none'}) "
        "nor a URL or path",
        code="unknown_remote",
    )


def _scp_like(text: str) -> bool:
    # user@host:path, as git accepts for ssh.
    head, sep, _ = text.partition(":")
    return bool(sep) and "/" not in head and bool(head)


def _get(config: pygit2.Config, key: str) -> str | None:
    try:
        return config[key]
    except KeyError:
        return None


def fetch(root: str, target: Target, env: Mapping[str, str]) -> str | None:
    """Fetch the remote branch; its tip, or None when the remote has no such branch yet."""
    if target.named:
        result = run_git(root, "fetch", "--quiet", "--no-tags", target.remote, env=env)
        if result.returncode != 0:
            raise _failure(f"git fetch {target.remote}", result)
        repo = pygit2.Repository(root)
        ref = repo.references.get(target.tracking_ref)
        return str(ref.target) if ref is not None else None
    result = run_git(
        root, "fetch", "--quiet", "--no-tags", target.remote,
        f"refs/heads/{target.remote_branch}", env=env,
    )  # fmt: skip
    if result.returncode != 0:
        if "couldn't find remote ref" in (result.stderr or ""):
            return None
        raise _failure(f"git fetch {target.remote}", result)
    with open(os.path.join(root, ".git", "FETCH_HEAD"), encoding="utf-8") as handle:
        first = handle.readline()
    return first.split()[0] if first.strip() else None


def push_branch(
    root: str, target: Target, branch: str, env: Mapping[str, str]
) -> subprocess.CompletedProcess | None:
    """None when pushed; git's answer when the remote moved meanwhile (fetch, merge, retry).

    Never forced: the remote takes nothing but a fast-forward.
    """
    args = ["push", "--porcelain"]
    set_upstream = target.wants_upstream
    if set_upstream:
        args.append("--set-upstream")
    args += [target.remote, f"refs/heads/{branch}:refs/heads/{target.remote_branch}"]
    result = run_git(root, *args, env=env)
    if result.returncode == 0:
        return None
    refused = [line for line in result.stdout.splitlines() if line.startswith("!")]
    if refused and all(any(r in line for r in _MOVED_REASONS) for line in refused):
        return result
    raise _failure(f"git push {target.remote}", result)


def merge_bases(root: str, a: str, b: str) -> list[str]:
    result = run_git(root, "merge-base", "--all", a, b)
    if result.returncode not in (0, 1):
        raise _failure("git merge-base", result)
    return result.stdout.split()


# ---------------------------------------------------------------------------- tree merge


def _tree_changes(repo: pygit2.Repository, old, new) -> dict[str, tuple[str, int] | None]:
    """path -> (blob hex, mode) as in ``new``, or None where ``new`` lacks it."""
    old = old if old is not None else repo[repo.TreeBuilder().write()]
    new = new if new is not None else repo[repo.TreeBuilder().write()]
    changes: dict[str, tuple[str, int] | None] = {}
    for delta in repo.diff(old, new).deltas:
        if delta.status == pygit2.enums.DeltaStatus.DELETED:
            changes.setdefault(delta.old_file.path, None)
        else:
            changes[delta.new_file.path] = (str(delta.new_file.id), int(delta.new_file.mode))
    return changes


def _entry(repo: pygit2.Repository, tree, path: str) -> tuple[str, int] | None:
    if tree is None:
        return None
    try:
        entry = tree[path]
    except KeyError:
        return None
    return str(entry.id), int(entry.filemode)


def _blob(repo: pygit2.Repository, entry: tuple[str, int] | None) -> bytes | None:
    return repo[entry[0]].data if entry is not None else None


def merge_trees(repo: pygit2.Repository, base, ours, theirs, *, strict: bool = True) -> TreeMerge:
    """Three-way merge of trees: record files field by field, other files as git would.

    ``strict`` is off for virtual merge bases, where an unmergeable file keeps ours rather
    than stopping the sync.
    """
    ours_changes = _tree_changes(repo, base, ours)
    theirs_changes = _tree_changes(repo, base, theirs)
    result: dict[str, tuple[str, int] | None] = {}
    reports: list[RecordReport] = []
    unmerged: list[str] = []
    for path, theirs_entry in sorted(theirs_changes.items()):
        if path not in ours_changes:
            result[path] = theirs_entry
            continue
        ours_entry = ours_changes[path]
        if ours_entry == theirs_entry:
            continue
        base_entry = _entry(repo, base, path)
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
        shown = ", ".join(unmerged[:5]) + (" ..." if len(unmerged) > 5 else "")
        raise GitError(
            f"both sides changed {shown} in ways lantern cannot merge; nothing was changed. "
            "Merge with git (git pull --no-rebase), resolve, commit, then run lantern sync again",
            code="merge_conflict",
        )
    return TreeMerge(_build_tree(repo, ours, result), reports)


def _is_file(entry: tuple[str, int] | None) -> bool:
    return entry is None or entry[1] in (_BLOB, _EXECUTABLE)


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
    return (oid, _BLOB), RecordReport(record_id, merge=merged, note=note)


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


def _build_tree(repo: pygit2.Repository, base, changes: Mapping[str, tuple[str, int] | None]):
    nested: dict[str, Any] = {}
    for path, entry in changes.items():
        node = nested
        parts = path.split("/")
        for part in parts[:-1]:
            node = node.setdefault(part + "/", {})
        node[parts[-1]] = entry
    oid = _write_tree(repo, base, nested)
    return oid if oid is not None else repo.TreeBuilder().write()


def _write_tree(repo: pygit2.Repository, base, nested: dict) -> pygit2.Oid | None:
    builder = repo.TreeBuilder(base) if base is not None else repo.TreeBuilder()
    for name, value in nested.items():
        if name.endswith("/"):
            name = name[:-1]
            sub_base = None
            if base is not None and name in base:
                candidate = repo[base[name].id]
                if isinstance(candidate, pygit2.Tree):
                    sub_base = candidate
            sub = _write_tree(repo, sub_base, value)
            if sub is None:
                if builder.get(name) is not None:
                    builder.remove(name)
            else:
                builder.insert(name, sub, _TREE)
        elif value is None:
            if builder.get(name) is not None:
                builder.remove(name)
        else:
            builder.insert(name, pygit2.Oid(hex=value[0]), value[1])
    if len(builder) == 0:
        return None
    return builder.write()


# ---------------------------------------------------------------------------- sync


class _Sync:
    def __init__(self, store, remote: str | None, push_after: bool):
        self.store = store
        self.git = store.git
        self.repo: pygit2.Repository = self.git.repo
        self.root = store.root
        self.push_after = push_after
        self.ref_name = self.git.branch_ref()
        self.branch = self.ref_name.removeprefix("refs/heads/")
        self.target = resolve_target(self.repo, remote, self.branch)
        self.env = git_env(self.root)
        self.report = SyncReport(self.target.remote, self.branch, self.target.remote_branch)

    def run(self) -> SyncReport:
        head = self.git.head_oid()
        self.report.head_before = str(head) if head is not None else None
        self._refuse_uncommitted()
        refused = None
        for attempt in range(1, MAX_PUSH_ATTEMPTS + 1):
            self.report.attempts = attempt
            remote_head = fetch(self.root, self.target, self.env)
            if refused is not None and remote_head == self.report.remote_head:
                # The push was refused, yet the remote has not moved: retrying cannot help.
                raise _failure(f"git push {self.target.remote}", refused)
            self.report.remote_head = remote_head
            self._integrate(remote_head)
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

    def _ahead(self, head, remote_head: str | None) -> int:
        if remote_head is None:
            walker = self.repo.walk(head)
            return sum(1 for _ in walker)
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
            if status == flags.WT_NEW and not (
                path.startswith("memory/") or path == "lantern.yaml"
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
        base_tree = self._base_tree(str(head), remote_head, theirs_tree)
        merged = merge_trees(repo, base_tree, head_tree, theirs_tree)
        records = sorted(merged.records, key=lambda r: r.id)
        summary = f"merge {self.target.label}"
        if records:
            summary += (
                f": {len(records)} record{'s' if len(records) != 1 else ''} changed on both sides"
            )
        prov = Provenance(
            op="merge",
            records=tuple(r.trailer() for r in records),
            actor="sync",
            author=self.store.author,
        )
        if prov.author is None and not os.environ.get("LANTERN_AUTHOR"):
            from .store import _with_fallback_identity

            prov = _with_fallback_identity(self.git, prov, self.store.warn)
        signature = self.git.signature(prov.author)
        commit = repo.create_commit(
            None, signature, signature, format_message(summary, prov), merged.tree, [head, theirs]
        )
        self._advance(head, commit, head_tree, repo[merged.tree], summary)
        self.report.merge_commits.append(str(commit))
        self.report.merged.extend(records)

    def _base_tree(self, ours: str, theirs: str, theirs_tree):
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

    def _virtual_base(self, bases: list[str], depth: int = 0):
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
                repo,
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

    def _advance(self, head, new_commit, old_tree, new_tree, summary: str) -> None:
        """Move the branch to ``new_commit`` and the working tree and index with it, journaled."""
        repo = self.repo
        changes = _tree_changes(repo, old_tree, new_tree)
        for path in changes:
            if _entry(repo, old_tree, path) is None and os.path.lexists(
                os.path.join(self.root, path)
            ):
                raise UncommittedChanges(
                    f"{path} is not committed here but the remote has it; move it away or "
                    "commit it, then run lantern sync again"
                )
        journal = {
            "op": "sync",
            "ref": self.ref_name,
            "head_before": str(head) if head is not None else None,
            "commit": str(new_commit),
            "files": {
                path: {
                    "old": (_entry(repo, old_tree, path) or (None,))[0],
                    "new": entry[0] if entry is not None else None,
                }
                for path, entry in changes.items()
            },
        }
        state_dir = self.store.state_dir
        os.makedirs(state_dir, exist_ok=True)
        import json

        for path in changes:
            self.git._check_inside(path)
        atomic_write(os.path.join(state_dir, JOURNAL), json.dumps(journal).encode())
        try:
            for path, entry in changes.items():
                _write_worktree(repo, self.root, path, entry)
            if changes:
                # One flush for every file written: a fsync per file would make a large
                # fast-forward crawl, and the journal covers a crash before this point.
                os.sync()
            self.git._move_ref(self.ref_name, head, new_commit, summary)
        except BaseException as err:
            undone = self.git._undo(state_dir)
            if isinstance(err, (OSError, pygit2.GitError)):
                raise GitError(
                    f"sync could not update the working tree ({err}); {undone}"
                ) from None
            raise
        self.git.sync_index(changes)
        record_paths = [p for p in changes if expected_id(p) is not None]
        if record_paths:
            self.store.index.note_written(record_paths)
        self.git.finish(state_dir)
        self._tally(changes, old_tree)

    def _tally(self, changes: Mapping[str, Any], old_tree) -> None:
        for path, entry in changes.items():
            record_id = expected_id(path)
            if record_id is None:
                continue
            if entry is None:
                self.report.removed.append(record_id)
            elif _entry(self.repo, old_tree, path) is None:
                self.report.added.append(record_id)
            else:
                self.report.changed.append(record_id)


def _write_worktree(repo: pygit2.Repository, root: str, path: str, entry) -> None:
    full = os.path.join(root, path)
    if entry is None:
        try:
            os.unlink(full)
        except FileNotFoundError:
            pass
        _prune_empty_dirs(root, os.path.dirname(full))
        return
    oid, mode = entry
    if mode == _LINK:
        if os.path.lexists(full):
            os.unlink(full)
        os.makedirs(os.path.dirname(full), exist_ok=True)
        os.symlink(repo[oid].data, full)
        return
    if mode not in (_BLOB, _EXECUTABLE):
        return  # submodules are git's business
    if os.path.isdir(full) and not os.path.islink(full):
        raise UncommittedChanges(f"{path} is a folder here but a file in the merge; move it away")
    folder = os.path.dirname(full)
    os.makedirs(folder, exist_ok=True)
    tmp = os.path.join(folder, "." + os.path.basename(full) + TMP_SUFFIX)
    with open(tmp, "wb") as handle:
        handle.write(repo[oid].data)
    os.chmod(tmp, 0o755 if mode == _EXECUTABLE else 0o644)
    os.replace(tmp, full)


def _prune_empty_dirs(root: str, folder: str) -> None:
    root = os.path.abspath(root)
    while os.path.abspath(folder).startswith(root + os.sep):
        try:
            os.rmdir(folder)
        except OSError:
            return
        folder = os.path.dirname(folder)


def sync(store, remote: str | None = None, *, push: bool = True) -> SyncReport:
    """Fetch, merge (record-aware) and push, holding the store's writer lock throughout."""
    if not store.exists:
        from .errors import NoStore

        raise NoStore(f"{store.root} is not a lantern store; create one with: lantern init")
    with store.locked():
        from .git.repo import recover

        message = recover(store.git, store.state_dir)
        if message:
            store.warn(message)
        store.git.check_writable()
        ensure_merge_driver(store.git.repo, store.warn)
        report = _Sync(store, remote, push).run()
        store.refresh()
    return report
