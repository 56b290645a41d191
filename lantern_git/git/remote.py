"""Network git through the git CLI: fetch, push, merge bases, and where to sync with.

The git CLI (not libgit2) talks to remotes so that ssh agents, ``~/.ssh/config`` and credential
helpers work as they do for ``git pull``, with prompts turned off: a missing credential fails at
once with git's message instead of waiting for a password nobody will type.
"""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass

import pygit2

from ..errors import GitError, InvalidInput, StoreError

# Push refusals that mean "the remote moved since we fetched": fetch, merge and try again.
_MOVED_REASONS = (
    "fetch first",
    "non-fast-forward",
    "stale info",
    "cannot lock ref",
    "failed to update ref",
    "failed to lock",
)


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
) -> subprocess.CompletedProcess[str]:
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


def failure(what: str, result: subprocess.CompletedProcess[str]) -> GitError:
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
    names = [name for name in repo.remotes.names() if name is not None]
    config = repo.config
    upstream_remote = _get(config, f"branch.{branch}.remote")
    upstream_merge = _get(config, f"branch.{branch}.merge")
    if remote is None:
        remote = _default_remote(names, upstream_remote)
    if remote in names:
        has_upstream = upstream_remote == remote and bool(upstream_merge)
        remote_branch = (
            upstream_merge.removeprefix("refs/heads/")
            if has_upstream and upstream_merge
            else branch
        )
        return Target(remote, remote_branch, True, upstream_remote is None)
    if remote.startswith(("/", "./", "../", "~")) and not os.path.exists(
        os.path.expanduser(remote)
    ):
        raise InvalidInput(f"remote: {remote} does not exist", code="unknown_remote")
    if "://" in remote or os.path.exists(os.path.expanduser(remote)) or _scp_like(remote):
        return Target(remote, branch, False, False)
    raise InvalidInput(
        f"remote: {remote!r} is neither a configured remote ({', '.join(names) or 'none'}) "
        "nor a URL or path",
        code="unknown_remote",
    )


def _default_remote(names: list[str], upstream_remote: str | None) -> str:
    """The branch's upstream remote, else origin, else the only remote there is."""
    if upstream_remote and upstream_remote in names:
        return upstream_remote
    if "origin" in names:
        return "origin"
    if len(names) == 1:
        return names[0]
    raise StoreError(
        "no remote to sync with: add one with git remote add origin URL, "
        "or name it: lantern sync REMOTE"
        if not names
        else f"several remotes ({', '.join(names)}) and no upstream: name one, lantern sync REMOTE",
        code="no_remote",
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
            raise failure(f"git fetch {target.remote}", result)
        repo = pygit2.Repository(root)
        ref = repo.references.get(target.tracking_ref or "")
        return str(ref.target) if ref is not None else None
    result = run_git(
        root, "fetch", "--quiet", "--no-tags", target.remote,
        f"refs/heads/{target.remote_branch}", env=env,
    )  # fmt: skip
    if result.returncode != 0:
        if "couldn't find remote ref" in (result.stderr or ""):
            return None
        raise failure(f"git fetch {target.remote}", result)
    with open(os.path.join(root, ".git", "FETCH_HEAD"), encoding="utf-8") as handle:
        first = handle.readline()
    return first.split()[0] if first.strip() else None


def fetch_prefixed(
    root: str, target: Target, prefix: str, env: Mapping[str, str]
) -> dict[str, str]:
    """Fetch every branch of the remote under ``prefix`` (``refs/heads/lantern/review/``):
    full ref name -> its tip as fetched. No tracking refs are made: the caller moves its own
    branches, through its journal. Overwrites ``FETCH_HEAD``."""
    listed = run_git(root, "ls-remote", "--heads", target.remote, prefix + "*", env=env)
    if listed.returncode != 0:
        raise failure(f"git ls-remote {target.remote}", listed)
    refs = sorted(
        {line.split("\t", 1)[1].strip() for line in listed.stdout.splitlines() if "\t" in line}
    )
    refs = [r for r in refs if r.startswith(prefix)]
    if not refs:
        return {}
    result = run_git(root, "fetch", "--quiet", "--no-tags", target.remote, *refs, env=env)
    if result.returncode != 0:
        raise failure(f"git fetch {target.remote}", result)
    tips: dict[str, str] = {}
    with open(os.path.join(root, ".git", "FETCH_HEAD"), encoding="utf-8") as handle:
        for line in handle:
            match = _FETCH_HEAD_RE.match(line)
            if match is not None and "refs/heads/" + match["name"] in refs:
                tips["refs/heads/" + match["name"]] = match["oid"]
    return tips


# A line of FETCH_HEAD: "<oid>\t[not-for-merge]\tbranch '<name>' of <url>" (git runs with LC_ALL=C).
_FETCH_HEAD_RE = re.compile(r"(?P<oid>[0-9a-f]{40,64})\t[^\t]*\tbranch '(?P<name>[^']+)' of ")


def push_refs(
    root: str, target: Target, refs: list[str], env: Mapping[str, str]
) -> subprocess.CompletedProcess[str] | None:
    """Push local branches ``refs`` (full names) to the same names on the remote, in one git
    push, never forced; as :func:`push_branch` answers."""
    if not refs:
        return None
    return _push(
        root, target, ["push", "--porcelain", target.remote, *(f"{r}:{r}" for r in refs)], env
    )


def push_branch(
    root: str, target: Target, branch: str, env: Mapping[str, str]
) -> subprocess.CompletedProcess[str] | None:
    """None when pushed; git's answer when the remote moved meanwhile (fetch, merge, retry).

    Never forced: the remote takes nothing but a fast-forward.
    """
    args = ["push", "--porcelain"]
    set_upstream = target.wants_upstream
    if set_upstream:
        args.append("--set-upstream")
    args += [target.remote, f"refs/heads/{branch}:refs/heads/{target.remote_branch}"]
    return _push(root, target, args, env)


def _push(
    root: str, target: Target, args: list[str], env: Mapping[str, str]
) -> subprocess.CompletedProcess[str] | None:
    result = run_git(root, *args, env=env)
    if result.returncode == 0:
        return None
    refused = [line for line in result.stdout.splitlines() if line.startswith("!")]
    if refused and all(any(r in line for r in _MOVED_REASONS) for line in refused):
        return result
    raise failure(f"git push {target.remote}", result)


def merge_bases(root: str, a: str, b: str) -> list[str]:
    result = run_git(root, "merge-base", "--all", a, b)
    if result.returncode not in (0, 1):
        raise failure("git merge-base", result)
    return result.stdout.split()


def clone_name(url: str) -> str:
    """The folder ``git clone URL`` would make, by git's own rule (``git_url_basename``): past
    the scheme and any user and password before the host, without trailing slashes and
    ``/.git``, a lone host's port dropped, the last part after a ``/`` or a ``:`` (git counts
    both as separators), without ``.git``, its spaces and control characters made single
    spaces. Where git would find no name, ``store``."""
    host, slash, path = url.split("://", 1)[-1].partition("/")
    rest = (host.rpartition("@")[2] + slash + path).rstrip("/" + _SPACES)
    if rest.endswith("/.git"):
        rest = rest.removesuffix("/.git").rstrip("/")
    if "/" not in rest:
        head, colon, port = rest.rpartition(":")
        if colon and not port.strip("0123456789"):
            rest = head
    name = re.split("[/:]", rest)[-1].removesuffix(".git")
    # Git's last step: each run of control characters and spaces becomes one space, and none
    # is left at either end.
    return re.sub("[\x00-\x20]+", " ", name).strip(" ") or "store"


# What git's own isspace() counts as space, as it strips it from the end of a URL.
_SPACES = " \t\n\r"


def clone(url: str, path: str) -> None:
    """``git clone URL PATH`` through the git CLI (ssh agents, credential helpers), no prompts."""
    parent = os.path.dirname(os.path.abspath(path)) or "."
    result = run_git(parent, "clone", "--quiet", "--", url, path, env=git_env(parent))
    if result.returncode != 0:
        raise failure(f"git clone {url}", result)
