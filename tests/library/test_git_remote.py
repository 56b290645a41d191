"""Network git, asked directly on real repositories and bare remotes in temp folders: the
environment git runs in (no prompts, ssh in batch mode), which remote a sync goes to, what a
failure says, and fetch, push, merge bases and clone through the real git CLI.

``lantern sync``'s tests (test_sync.py, test_sync_ssh.py) go through all of this; here each
rule is held on its own, so the mutation run's ``remote`` module (benchmarks/mutation.py) can
ask every line of it.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pygit2
import pytest
from support.stores import init_repo

from lantern_git.errors import GitError, InvalidInput, StoreError
from lantern_git.git.remote import (
    Target,
    clone,
    clone_name,
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

SIGNATURE = pygit2.Signature("Test Author", "author@example.com", 1_764_000_000, 0)
REVIEW = "refs/heads/lantern/review/"


def commit_on(repo: pygit2.Repository, ref: str, text: str, parents=None) -> str:
    """A commit of one file on ``ref`` (created or moved), on ``parents`` (default: the ref's
    tip, if any)."""
    if parents is None:
        existing = repo.references.get(ref)
        parents = [existing.target] if existing is not None else []
    tree = repo.TreeBuilder()
    tree.insert("file.md", repo.create_blob(text.encode()), pygit2.GIT_FILEMODE_BLOB)
    oid = repo.create_commit(None, SIGNATURE, SIGNATURE, text, tree.write(), parents)
    if ref in repo.references:
        repo.references[ref].set_target(oid)
    else:
        repo.references.create(ref, oid)
    return str(oid)


@pytest.fixture
def local(tmp_path: Path) -> pygit2.Repository:
    return init_repo(tmp_path / "local")


@pytest.fixture
def bare(tmp_path: Path) -> pygit2.Repository:
    return pygit2.init_repository(str(tmp_path / "remote.git"), bare=True, initial_head="main")


def named(local: pygit2.Repository, bare: pygit2.Repository, name: str = "origin") -> Target:
    local.remotes.create(name, bare.path)
    return Target(name, "main", True, False)


def result(code: int, stdout: str = "", stderr: str = "") -> subprocess.CompletedProcess[str]:
    return subprocess.CompletedProcess(["git"], code, stdout, stderr)


# ---------------------------------------------------------------------- the environment


def test_network_git_runs_without_prompts_in_the_c_locale_and_ssh_in_batch_mode(local, monkeypatch):
    for name in ("GIT_SSH", "GIT_SSH_COMMAND"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("LANGUAGE", "de")
    monkeypatch.setenv("GIT_TERMINAL_PROMPT", "1")
    env = git_env(local.workdir)
    assert env["GIT_TERMINAL_PROMPT"] == "0"
    assert env["GCM_INTERACTIVE"] == "never"
    assert env["LC_ALL"] == "C"
    assert "LANGUAGE" not in env
    assert env["GIT_SSH_COMMAND"] == "ssh -o BatchMode=yes -o ConnectTimeout=30"


def test_the_user_s_ssh_command_is_kept_and_given_batch_mode_and_a_timeout_it_lacks(
    local, monkeypatch
):
    monkeypatch.delenv("GIT_SSH", raising=False)
    monkeypatch.setenv("GIT_SSH_COMMAND", "ssh -i ~/key")
    assert git_env(local.workdir)["GIT_SSH_COMMAND"] == (
        "ssh -i ~/key -o BatchMode=yes -o ConnectTimeout=30"
    )
    monkeypatch.setenv("GIT_SSH_COMMAND", "ssh -o BatchMode=no -o ConnectTimeout=5")
    assert git_env(local.workdir)["GIT_SSH_COMMAND"] == "ssh -o BatchMode=no -o ConnectTimeout=5"


def test_the_repository_s_ssh_command_is_used_unless_the_environment_names_one(local, monkeypatch):
    monkeypatch.delenv("GIT_SSH", raising=False)
    monkeypatch.delenv("GIT_SSH_COMMAND", raising=False)
    local.config["core.sshCommand"] = "ssh -p 2222"
    assert git_env(local.workdir)["GIT_SSH_COMMAND"] == (
        "ssh -p 2222 -o BatchMode=yes -o ConnectTimeout=30"
    )
    monkeypatch.setenv("GIT_SSH_COMMAND", "ssh -p 3333")
    assert git_env(local.workdir)["GIT_SSH_COMMAND"] == (
        "ssh -p 3333 -o BatchMode=yes -o ConnectTimeout=30"
    )


def test_a_git_ssh_program_is_left_to_git_and_a_folder_that_is_no_repository_has_no_config(
    tmp_path, monkeypatch
):
    monkeypatch.setenv("GIT_SSH", "/usr/local/bin/my-ssh")
    monkeypatch.delenv("GIT_SSH_COMMAND", raising=False)
    assert "GIT_SSH_COMMAND" not in git_env(str(tmp_path))
    monkeypatch.delenv("GIT_SSH")
    assert git_env(str(tmp_path))["GIT_SSH_COMMAND"] == (
        "ssh -o BatchMode=yes -o ConnectTimeout=30"
    )


def test_git_missing_from_the_path_is_named(local):
    with pytest.raises(GitError, match="git is not installed \\(or not on PATH\\)"):
        run_git(local.workdir, "status", env={"PATH": "/nonexistent"})


# ------------------------------------------------------------------------------ failures


def test_a_failure_gives_git_s_last_four_lines_and_prefers_stderr():
    err = failure("git fetch origin", result(128, "out\n", "one\n\n  two  \nthree\nfour\nfive\n"))
    assert str(err) == "git fetch origin failed: two three four five"
    assert str(failure("git push x", result(1, "only stdout\n"))) == (
        "git push x failed: only stdout"
    )
    assert str(failure("git push x", result(7))) == "git push x failed: git exited with 7"


@pytest.mark.parametrize(
    "output",
    ["git@host: Permission denied (publickey).", "Host key verification failed."],
)
def test_an_ssh_refusal_says_how_to_load_a_key_and_accept_the_host(output):
    assert str(failure("git fetch origin", result(128, "", output))).endswith(
        " (ssh runs without prompts: load a key into your ssh agent with ssh-add, "
        "and connect once with plain ssh to accept the host key)"
    )


@pytest.mark.parametrize(
    "output",
    [
        "fatal: could not read Username for 'https://example.org': terminal prompts disabled",
        "remote: Authentication failed for 'https://example.org/x.git'",
    ],
)
def test_missing_credentials_say_to_configure_a_credential_helper(output):
    assert str(failure("git fetch origin", result(128, "", output))).endswith(
        " (no credentials: git runs without prompts; configure a credential helper)"
    )


# ------------------------------------------------------------------- which remote, which branch


def test_with_no_remote_sync_says_how_to_add_one(local):
    with pytest.raises(StoreError, match="add one with git remote add origin URL") as raised:
        resolve_target(local, None, "main")
    assert raised.value.code == "no_remote"


def test_with_several_remotes_and_no_upstream_or_origin_sync_asks_which(local, tmp_path):
    local.remotes.create("alpha", str(tmp_path / "a"))
    local.remotes.create("beta", str(tmp_path / "b"))
    with pytest.raises(StoreError) as raised:
        resolve_target(local, None, "main")
    assert str(raised.value) == (
        "several remotes (alpha, beta) and no upstream: name one, lantern sync REMOTE"
    )
    assert raised.value.code == "no_remote"


def test_origin_is_the_default_among_several_and_the_only_remote_is_the_default(local, tmp_path):
    local.remotes.create("backup", str(tmp_path / "b"))
    only = resolve_target(local, None, "main")
    assert only == Target("backup", "main", True, True)
    local.remotes.create("origin", str(tmp_path / "o"))
    chosen = resolve_target(local, None, "main")
    assert chosen == Target("origin", "main", True, True)
    assert chosen.tracking_ref == "refs/remotes/origin/main"
    assert chosen.label == "origin/main"


def test_the_branch_s_upstream_decides_the_remote_and_its_branch(local, tmp_path):
    local.remotes.create("origin", str(tmp_path / "o"))
    local.remotes.create("backup", str(tmp_path / "b"))
    local.config["branch.main.remote"] = "backup"
    local.config["branch.main.merge"] = "refs/heads/trunk"
    assert resolve_target(local, None, "main") == Target("backup", "trunk", True, False)
    # The upstream's remote named on the command line: its branch still.
    assert resolve_target(local, "backup", "main") == Target("backup", "trunk", True, False)
    # Another remote named on the command line: the same branch name there, and the
    # upstream is not changed.
    assert resolve_target(local, "origin", "main") == Target("origin", "main", True, False)


def test_an_upstream_remote_without_a_branch_or_gone_falls_back(local, tmp_path):
    local.remotes.create("origin", str(tmp_path / "o"))
    local.remotes.create("backup", str(tmp_path / "b"))
    local.config["branch.main.remote"] = "backup"
    assert resolve_target(local, None, "main") == Target("backup", "main", True, False)
    local.config["branch.main.remote"] = "removed"
    assert resolve_target(local, None, "main") == Target("origin", "main", True, False)


@pytest.mark.parametrize("path", ["/nonexistent/store.git", "./nope", "../nope", "~/nope-x1"])
def test_a_path_that_does_not_exist_is_refused_naming_it(local, path):
    with pytest.raises(InvalidInput, match=re.escape(f"remote: {path} does not exist")) as raised:
        resolve_target(local, path, "main")
    assert raised.value.code == "unknown_remote"


@pytest.mark.parametrize(
    "remote",
    [
        "https://example.org/ana/memory.git",
        "ssh://git@example.org/memory.git",
        "git@example.org:ana/memory.git",
        "example.org:memory.git",
    ],
)
def test_a_url_or_scp_address_is_a_target_without_tracking(local, remote):
    target = resolve_target(local, remote, "main")
    assert target == Target(remote, "main", False, False)
    assert target.tracking_ref is None
    assert target.label == remote


def test_an_existing_path_is_a_target_without_tracking(local, bare):
    assert resolve_target(local, bare.path, "work") == Target(bare.path, "work", False, False)


@pytest.mark.parametrize("remote", ["nonesuch", "a/b:c", ":path"])
def test_a_name_that_is_no_remote_url_or_path_is_refused_naming_the_remotes(
    local, tmp_path, remote
):
    with pytest.raises(InvalidInput) as raised:
        resolve_target(local, remote, "main")
    assert str(raised.value) == (
        f"remote: {remote!r} is neither a configured remote (none) nor a URL or path"
    )
    assert raised.value.code == "unknown_remote"
    local.remotes.create("origin", str(tmp_path / "o"))
    local.remotes.create("backup", str(tmp_path / "b"))
    with pytest.raises(InvalidInput, match=r"configured remote \(backup, origin\)"):
        resolve_target(local, remote, "main")


# ---------------------------------------------------------------------------------- fetch


def test_a_named_fetch_returns_the_tracking_tip_or_none_for_a_branch_not_there(local, bare):
    target = named(local, bare)
    assert fetch(local.workdir, target, git_env(local.workdir)) is None
    tip = commit_on(bare, "refs/heads/main", "one")
    assert fetch(local.workdir, target, git_env(local.workdir)) == tip
    assert str(local.references["refs/remotes/origin/main"].target) == tip


def test_a_fetch_by_path_returns_the_branch_s_tip_or_none_for_a_branch_not_there(local, bare):
    target = Target(bare.path, "main", False, False)
    assert fetch(local.workdir, target, git_env(local.workdir)) is None
    commit_on(bare, "refs/heads/other", "other")
    tip = commit_on(bare, "refs/heads/main", "one")
    assert fetch(local.workdir, target, git_env(local.workdir)) == tip
    assert fetch(local.workdir, Target(bare.path, "other", False, False), git_env(local.workdir))


def test_a_fetch_that_fails_says_which_remote(local, tmp_path):
    local.remotes.create("origin", str(tmp_path / "gone.git"))
    env = git_env(local.workdir)
    with pytest.raises(GitError, match=r"git fetch origin failed: .*gone\.git"):
        fetch(local.workdir, Target("origin", "main", True, False), env)
    missing = str(tmp_path / "gone.git")
    with pytest.raises(GitError, match=re.escape(f"git fetch {missing} failed")):
        fetch(local.workdir, Target(missing, "main", False, False), env)


def test_a_prefixed_fetch_brings_each_review_branch_and_nothing_else(local, bare):
    a = commit_on(bare, REVIEW + "agent", "a")
    b = commit_on(bare, REVIEW + "other", "b")
    commit_on(bare, "refs/heads/main", "main")
    commit_on(bare, "refs/heads/lantern/reviewer", "not under the prefix")
    commit_on(bare, "refs/heads/x/lantern/review/agent", "ends like one")
    target = Target(bare.path, "main", False, False)
    tips = fetch_prefixed(local.workdir, target, REVIEW, git_env(local.workdir))
    assert tips == {REVIEW + "agent": a, REVIEW + "other": b}
    assert local.references.get(REVIEW + "agent") is None


def test_a_prefixed_fetch_of_nothing_is_empty_and_a_bad_remote_says_so(local, bare, tmp_path):
    commit_on(bare, "refs/heads/main", "main")
    env = git_env(local.workdir)
    assert fetch_prefixed(local.workdir, Target(bare.path, "main", False, False), REVIEW, env) == {}
    gone = str(tmp_path / "gone.git")
    with pytest.raises(GitError, match=re.escape(f"git ls-remote {gone} failed")):
        fetch_prefixed(local.workdir, Target(gone, "main", False, False), REVIEW, env)


def test_a_prefixed_fetch_that_fails_after_listing_says_which_remote(local, bare):
    """A damaged remote: its review branch is listed, but the commit it names is gone."""
    tip = commit_on(bare, REVIEW + "agent", "a")
    Path(bare.path, "objects", tip[:2], tip[2:]).unlink()
    target = Target(bare.path, "main", False, False)
    with pytest.raises(GitError, match=re.escape(f"git fetch {bare.path} failed")):
        fetch_prefixed(local.workdir, target, REVIEW, git_env(local.workdir))


# ----------------------------------------------------------------------------------- push


def test_a_first_push_sets_the_upstream_only_when_asked(local, bare):
    tip = commit_on(local, "refs/heads/main", "one")
    local.remotes.create("origin", bare.path)
    env = git_env(local.workdir)
    assert push_branch(local.workdir, Target("origin", "trunk", True, False), "main", env) is None
    assert str(bare.references["refs/heads/trunk"].target) == tip
    assert "branch.main.remote" not in local.config
    assert push_branch(local.workdir, Target("origin", "main", True, True), "main", env) is None
    assert str(bare.references["refs/heads/main"].target) == tip
    assert local.config["branch.main.remote"] == "origin"
    assert local.config["branch.main.merge"] == "refs/heads/main"


def test_a_push_the_remote_refuses_as_moved_is_answered_not_raised(local, bare):
    base = commit_on(local, "refs/heads/main", "base")
    target = named(local, bare)
    env = git_env(local.workdir)
    push_branch(local.workdir, target, "main", env)
    commit_on(bare, "refs/heads/main", "theirs")
    commit_on(local, "refs/heads/main", "ours", parents=[pygit2.Oid(hex=base)])
    answer = push_branch(local.workdir, target, "main", env)
    assert answer is not None and answer.returncode != 0
    assert any(line.startswith("!") for line in answer.stdout.splitlines())


def test_a_push_refused_for_another_reason_or_that_fails_raises(local, bare, tmp_path):
    commit_on(local, "refs/heads/main", "one")
    env = git_env(local.workdir)
    hook = Path(bare.path, "hooks", "pre-receive")
    hook.write_text("#!/bin/sh\necho no pushes here >&2\nexit 1\n")
    hook.chmod(0o755)
    with pytest.raises(GitError, match=r"git push origin failed: .*no pushes here"):
        push_branch(local.workdir, named(local, bare), "main", env)
    assert bare.references.get("refs/heads/main") is None
    gone = str(tmp_path / "gone.git")
    with pytest.raises(GitError, match=re.escape(f"git push {gone} failed")):
        push_branch(local.workdir, Target(gone, "main", False, False), "main", env)


def test_review_branches_are_pushed_under_their_own_names_in_one_push(local, bare):
    a = commit_on(local, REVIEW + "agent", "a")
    b = commit_on(local, REVIEW + "other", "b")
    target = Target(bare.path, "main", False, False)
    env = git_env(local.workdir)
    assert push_refs(local.workdir, target, [], env) is None
    assert push_refs(local.workdir, target, [REVIEW + "agent", REVIEW + "other"], env) is None
    assert str(bare.references[REVIEW + "agent"].target) == a
    assert str(bare.references[REVIEW + "other"].target) == b
    assert bare.references.get("refs/heads/main") is None


# ----------------------------------------------------------------- merge bases and clone


def test_merge_bases_are_the_common_ancestors_and_none_for_unrelated_lines(local):
    base = commit_on(local, "refs/heads/main", "base")
    ours = commit_on(local, "refs/heads/main", "ours")
    theirs = commit_on(local, "refs/heads/other", "theirs", parents=[pygit2.Oid(hex=base)])
    alone = commit_on(local, "refs/heads/alone", "alone", parents=[])
    assert merge_bases(local.workdir, ours, theirs) == [base]
    assert merge_bases(local.workdir, ours, alone) == []
    with pytest.raises(GitError, match="git merge-base failed"):
        merge_bases(local.workdir, ours, "f" * 40)


# git's own table of clone folders (its t5603-clone-dirname.sh), ssh and scp forms.
GIT_CLONE_URLS = [
    "host:foo", "host:foo.git", "host:foo/.git", "ssh://host/foo", "ssh://host/foo.git",
    "ssh://host/foo/.git", "ssh://host/foo/", "ssh://host/foo///", "ssh://host/foo/.git/",
    "ssh://host/foo.git/", "ssh://host/foo.git///", "ssh://host/foo///.git/",
    "ssh://host/foo/.git///", "host:foo/", "host:foo///", "host:foo.git/", "host:foo/.git/",
    "host:foo.git///", "host:foo///.git/", "host:foo/.git///", "ssh://host/",
    "ssh://host:1234/", "ssh://user@host/", "host:/", "ssh://user:password@host/",
    "ssh://user:password@host:1234/", "ssh://user:passw@rd@host:1234/", "user@host:/",
    "user:password@host:/", "user:passw@rd@host:/", "ssh://host/foo@bar",
    "ssh://host/foo@bar.git", "ssh://user:password@host/foo@bar",
    "ssh://user:passw@rd@host/foo@bar.git", "host:/foo@bar", "host:/foo@bar.git",
    "user:password@host:/foo@bar", "user:passw@rd@host:/foo@bar.git",
    "ssh://user:password@host/test:1234", "ssh://user:password@host/test:1234.git",
    "ssh://host/memory:x", "ssh://git@host:22/team/memory.git", "@host:/", "ssh://x/.git",
    "ssh://host:123/", "ssh://a/b://user@c", "host:my  memory", "host:a\tb", "host: memory ",
    "host:a\x01\x02b", "host:x\x0b",
]  # fmt: skip


def folder_git_names(url: str, cwd: Path) -> str:
    """The folder real git names for ``url``: it says so before it connects, and with ssh as
    ``false`` it connects nowhere."""
    answer = subprocess.run(
        ["git", "clone", url],
        cwd=cwd,
        env={**git_env(str(cwd)), "GIT_SSH_COMMAND": "false"},
        capture_output=True,
        text=True,
        timeout=60,
    )
    found = re.search(r"Cloning into '([^']*)'\.\.\.", answer.stderr)
    assert found is not None, answer.stderr
    return found[1]


@pytest.mark.parametrize("url", GIT_CLONE_URLS)
def test_a_clone_s_folder_is_the_one_git_clone_makes(url, tmp_path):
    assert clone_name(url) == folder_git_names(url, tmp_path)


def test_a_clone_of_a_local_path_gets_the_folder_git_clone_makes(tmp_path):
    """A path's first part holds no user: an ``@`` in a folder's name stays in the name."""
    source = tmp_path / "src" / "foo@bar.git"
    pygit2.init_repository(str(source), bare=True)
    assert clone_name(str(source)) == folder_git_names(str(source), tmp_path) == "foo@bar"


def test_clone_makes_the_folder_and_a_failure_names_the_url(bare, tmp_path):
    tip = commit_on(bare, "refs/heads/main", "one")
    into = tmp_path / "deep" / "copy"
    into.parent.mkdir()
    clone(bare.path, str(into))
    assert str(pygit2.Repository(str(into)).head.target) == tip
    gone = str(tmp_path / "gone.git")
    with pytest.raises(GitError, match=re.escape(f"git clone {gone} failed")):
        clone(gone, str(tmp_path / "second"))
    assert not (tmp_path / "second").exists()
