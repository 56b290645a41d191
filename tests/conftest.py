"""Shared fixtures: real git repositories in temporary folders, never mocks."""

from __future__ import annotations

import os
import select
import subprocess
import sys
from pathlib import Path

import pygit2
import pytest

from lantern_git.store import Store

IDENTITY = {
    "GIT_AUTHOR_NAME": "Test Author",
    "GIT_AUTHOR_EMAIL": "author@example.com",
    "GIT_COMMITTER_NAME": "Test Author",
    "GIT_COMMITTER_EMAIL": "author@example.com",
}


@pytest.fixture(autouse=True)
def isolated_env(tmp_path_factory, monkeypatch):
    """Each test gets its own HOME and data dir, and no LANTERN_* variables (nor a terminal
    size) from outside."""
    home = tmp_path_factory.mktemp("home")
    (home / ".gitconfig").write_text(
        "[user]\n\tname = Test Author\n\temail = author@example.com\n"
        "[init]\n\tdefaultBranch = main\n"
    )
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_DATA_HOME", str(home / "data"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / "config"))
    for name in list(os.environ):
        if name.startswith("LANTERN_"):
            monkeypatch.delenv(name)
    # The terminal's size is the runner's, not the test's: pytest-xdist's workers get
    # COLUMNS=80 and LINES=24, a plain run none; a test that wants a width sets one.
    monkeypatch.delenv("COLUMNS", raising=False)
    monkeypatch.delenv("LINES", raising=False)
    for name, value in IDENTITY.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("LANTERN_LOCK_TIMEOUT", "20")
    return home


@pytest.fixture(autouse=True)
def embedder_choice(request, monkeypatch, isolated_env):
    """Tests marked ``semantic`` need the extra and fail (never skip) without it, so a CI job
    that installed it cannot pass by skipping them. Every other test runs with
    ``LANTERN_EMBEDDER=none``: keyword search, scores and imports as without the extra, whether
    or not it is installed."""
    if request.node.get_closest_marker("semantic") is None:
        monkeypatch.setenv("LANTERN_EMBEDDER", "none")
        return
    try:
        import numpy  # noqa: F401
        import wordllama  # noqa: F401
    except ImportError as err:
        pytest.fail(
            f"this test needs the semantic extra ({err.name} is missing): "
            "pip install -e '.[semantic]', or deselect it with -m 'not semantic'",
            pytrace=False,
        )


def init_repo(path: Path) -> pygit2.Repository:
    """A plain git repository with a local identity, as a user would have."""
    repo = pygit2.init_repository(str(path), initial_head="main")
    repo.config["user.name"] = "Test Author"
    repo.config["user.email"] = "author@example.com"
    return repo


@pytest.fixture
def store_path(tmp_path) -> Path:
    path = tmp_path / "store"
    init_repo(path)
    Store.init(str(path))
    return path


@pytest.fixture
def store(store_path) -> Store:
    s = Store.open(str(store_path), actor="api")
    yield s
    s.close()


def git(path, *args, check=True) -> str:
    """Run the real git CLI in ``path``; returns stdout."""
    result = subprocess.run(["git", *args], cwd=path, capture_output=True, text=True, check=False)
    if check and result.returncode != 0:
        raise AssertionError(f"git {' '.join(args)} failed: {result.stderr}")
    return result.stdout


def lantern(*args, cwd=None, env=None, input=None, timeout=60):
    """Run the real ``lantern`` CLI in a subprocess."""
    full_env = dict(os.environ)
    if env:
        full_env.update(env)
    return subprocess.run(
        [sys.executable, "-m", "lantern_git", *args],
        cwd=cwd,
        env=full_env,
        input=input,
        capture_output=True,
        text=isinstance(input, str) or input is None,
        timeout=timeout,
    )


def first_line(proc: subprocess.Popen, timeout: float = 60) -> str:
    """The first line ``proc`` prints, waited for ``timeout`` seconds at most: a server that
    never prints its address fails the test, where a bare ``readline()`` would wait forever."""
    assert proc.stdout is not None
    readable, _, _ = select.select([proc.stdout], [], [], timeout)
    if not readable:
        raise AssertionError(f"{proc.args!r} printed no line in {timeout:.0f} s")
    return proc.stdout.readline().rstrip("\n")


def stop(proc: subprocess.Popen, timeout: float = 20) -> None:
    """Ends ``proc``: SIGTERM, then SIGKILL if it is still running after ``timeout`` seconds;
    every wait bounded."""
    proc.terminate()
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=timeout)


def snapshot(path) -> dict:
    """Everything that must not change after a refused write: HEAD, the files, git status."""
    files = {}
    root = Path(path)
    for p in sorted(root.rglob("*")):
        rel = p.relative_to(root).as_posix()
        if rel.startswith(".git/") or rel == ".git" or rel.startswith(".lantern"):
            continue
        if p.is_file():
            files[rel] = p.read_bytes()
    return {
        "head": git(path, "rev-parse", "HEAD").strip(),
        "files": files,
        "status": git(path, "status", "--porcelain"),
    }


def as_plain_user() -> None:
    """A ``preexec_fn``: if we are root, the child gives up the capabilities that bypass file
    permissions, so a store made read-only with chmod is read-only for it, as for any user."""
    if os.geteuid() != 0:
        return
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    pr_capbset_drop = 24
    for capability in (1, 2, 3):  # CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH, CAP_FOWNER
        if libc.prctl(pr_capbset_drop, capability, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "prctl(PR_CAPBSET_DROP)")


def schema_checked_calls(store_path):
    """``call(tool, **arguments)``: the MCP tool run in process (``ToolRunner.run``, what the
    server runs), its answer required not to be an error and to match the tool's declared
    output schema, then returned."""
    import jsonschema

    from lantern_git.mcp.server import TOOLS_BY_NAME, StoreTarget, ToolRunner

    runner = ToolRunner(StoreTarget(str(store_path)))

    def call(name: str, **arguments) -> dict:
        outcome = runner.run(name, arguments)
        assert not outcome.is_error, outcome.value
        jsonschema.validate(outcome.value, TOOLS_BY_NAME[name].output_schema)
        return outcome.value

    return call
