"""Who lantern's commits name, in git's own order (docs/identity.md): ``--author``, then
``LANTERN_AUTHOR``, then git's identity (``GIT_AUTHOR_*``/``GIT_COMMITTER_*`` from the
environment before ``user.name``/``user.email`` from git config), then ``login@hostname`` with a
warning. Each step is proved in a real subprocess with a clean environment: a HOME of its own,
no system git config, and no GIT_* or LANTERN_* variable unless the test sets it."""

from __future__ import annotations

import getpass
import os
import socket
import subprocess

import pygit2
import pytest
from support.cli import lantern
from support.stores import git

WARNING = "no git identity is configured"
CONFIG = ("Config User", "config@example.com")


@pytest.fixture
def clean(tmp_path):
    """A store made with pygit2 (no identity needed) and a run(...) in a bare environment."""
    home = tmp_path / "home"
    home.mkdir()
    path = tmp_path / "store"
    pygit2.init_repository(str(path), initial_head="main")
    base = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("GIT_", "LANTERN_", "XDG_", "EMAIL"))
    }
    base.update(HOME=str(home), XDG_CONFIG_HOME=str(home / "config"), GIT_CONFIG_NOSYSTEM="1")

    def run(*args: str, input: str | None = None, **env: str) -> subprocess.CompletedProcess:
        return lantern(*args, store=path, env={**base, **env}, inherit_env=False, input=input)

    def configure(name: str, email: str) -> None:
        (home / ".gitconfig").write_text(f"[user]\n\tname = {name}\n\temail = {email}\n")

    done = run("init", str(path), LANTERN_AUTHOR="Setup <setup@example.com>")
    assert done.returncode == 0, done.stderr
    return run, configure, path


def _add(run, content: str, *args: str, **env: str) -> subprocess.CompletedProcess:
    result = run("memory", "add", content, "--kind", "fact", *args, **env)
    assert result.returncode == 0, result.stderr
    return result


def _last(path) -> tuple[str, str]:
    """The last commit's author and committer, as git prints them."""
    author, committer = git(path, "log", "-1", "--format=%an <%ae>%n%cn <%ce>").splitlines()
    return author, committer


def test_with_nothing_configured_lantern_commits_as_login_at_host_and_warns(clean):
    run, _, path = clean
    result = _add(run, "nothing configured")
    user = getpass.getuser()
    fallback = f"{user} <{user}@{socket.gethostname()}>"
    assert WARNING in result.stderr and fallback in result.stderr
    assert _last(path) == (fallback, fallback)


def test_git_config_is_used_without_a_warning(clean):
    run, configure, path = clean
    configure(*CONFIG)
    result = _add(run, "from git config")
    assert WARNING not in result.stderr
    assert _last(path) == ("Config User <config@example.com>",) * 2


def test_git_author_variables_alone_are_an_identity_as_in_ci(clean):
    run, _, path = clean
    result = _add(run, "in ci", GIT_AUTHOR_NAME="CI Bot", GIT_AUTHOR_EMAIL="ci@example.com")
    assert result.stderr == ""
    # The committer is the author when only the author is known.
    assert _last(path) == ("CI Bot <ci@example.com>",) * 2


def test_git_variables_come_before_git_config_for_each_role(clean):
    run, configure, path = clean
    configure(*CONFIG)
    _add(run, "author from env", GIT_AUTHOR_NAME="Env Author", GIT_AUTHOR_EMAIL="a@example.com")
    assert _last(path) == ("Env Author <a@example.com>", "Config User <config@example.com>")
    _add(
        run,
        "both from env",
        GIT_AUTHOR_NAME="Env Author",
        GIT_AUTHOR_EMAIL="a@example.com",
        GIT_COMMITTER_NAME="Env Committer",
        GIT_COMMITTER_EMAIL="c@example.com",
    )
    assert _last(path) == ("Env Author <a@example.com>", "Env Committer <c@example.com>")
    # One part from the environment, the other from config, as git reads them.
    _add(run, "name from env", GIT_AUTHOR_NAME="Only Name")
    assert _last(path)[0] == "Only Name <config@example.com>"


def test_lantern_author_comes_before_git_and_author_before_it(clean):
    run, configure, path = clean
    configure(*CONFIG)
    env = {
        "GIT_AUTHOR_NAME": "Env Author",
        "GIT_AUTHOR_EMAIL": "a@example.com",
        "LANTERN_AUTHOR": "Lantern Env <lantern@example.com>",
    }
    _add(run, "lantern author", **env)
    assert _last(path) == ("Lantern Env <lantern@example.com>",) * 2
    _add(run, "option", "--author", "Option <option@example.com>", **env)
    assert _last(path) == ("Option <option@example.com>",) * 2


def test_mcp_names_the_identity_it_will_commit_as(clean):
    run, configure, path = clean
    ci = {"GIT_AUTHOR_NAME": "CI Bot", "GIT_AUTHOR_EMAIL": "ci@example.com"}
    served = run("mcp", input="", **ci)
    assert served.returncode == 0, served.stderr
    assert served.stderr.splitlines() == [f"lantern mcp: serving {path} as CI Bot <ci@example.com>"]
    configure(*CONFIG)
    served = run("mcp", input="")
    assert f"lantern mcp: serving {path} as Config User <config@example.com>" in served.stderr
    served = run("mcp", "--author", "Ana <ana@example.com>", input="", **ci)
    assert f"lantern mcp: serving {path} as Ana <ana@example.com>" in served.stderr
