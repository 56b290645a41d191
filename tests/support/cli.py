"""The two ways the tests run the CLI: in this process through click's ``CliRunner``
(``invoke``, and the ``run`` fixture on the test's store), where the exit code and the output
are the behaviour; and as a real ``python -m lantern_git`` subprocess (``lantern``,
``start_lantern``), where the process boundary matters: a kill, another process's view of the
store, the environment a process starts with, what it imports."""

from __future__ import annotations

import json
import os
import pty
import subprocess
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from .processes import as_plain_user

PYTHON = sys.executable


def invoke(
    *args: str,
    store: Path | str | None = None,
    input: str | bytes | None = None,
    catch_exceptions: bool = False,
):
    """``lantern ARGS`` in this process (``--store STORE`` first when given); click's
    ``Result``. Exceptions propagate unless ``catch_exceptions``."""
    from click.testing import CliRunner

    from lantern_git.cli import cli

    argv = [*(("--store", str(store)) if store is not None else ()), *args]
    return CliRunner().invoke(cli, argv, input=input, catch_exceptions=catch_exceptions)


@pytest.fixture
def run(store_path, monkeypatch):
    """``run(*args, input=None)``: ``lantern ARGS`` in this process on the test's store (named
    through ``LANTERN_STORE``, as a user's environment would)."""
    monkeypatch.setenv("LANTERN_STORE", str(store_path))
    return invoke


def cli_env(**extra: str) -> dict[str, str]:
    """This process's environment with ``extra`` on top: what a subprocess starts with."""
    env = dict(os.environ)
    env.update(extra)
    return env


def _argv(args: tuple[str, ...], store: Path | str | None) -> list[str]:
    return [
        PYTHON,
        "-m",
        "lantern_git",
        *(("--store", str(store)) if store is not None else ()),
        *args,
    ]


def lantern(
    *args: str,
    store: Path | str | None = None,
    cwd: Path | str | None = None,
    env: Mapping[str, str] | None = None,
    input: str | bytes | None = None,
    timeout: float = 60,
    inherit_env: bool = True,
    **popen: Any,
) -> subprocess.CompletedProcess:
    """The real ``lantern`` CLI in a subprocess (``--store STORE`` first when given), waited for
    ``timeout`` seconds at most. ``env`` is added to this process's environment (with
    ``inherit_env=False`` it is the whole environment: a test that takes variables away);
    output is text unless ``input`` is bytes; ``popen`` goes to ``subprocess.run``."""
    return subprocess.run(
        _argv(args, store),
        cwd=cwd,
        env=cli_env(**(env or {})) if inherit_env else dict(env or {}),
        input=input,
        capture_output=True,
        text=isinstance(input, str) or input is None,
        timeout=timeout,
        check=False,
        **popen,
    )


def as_reader(*args: str, env: Mapping[str, str] | None = None) -> subprocess.CompletedProcess:
    """``lantern`` run by a process that cannot write the store (as root, without the
    capabilities that bypass file permissions)."""
    return lantern(*args, env=env, timeout=120, preexec_fn=as_plain_user)


def lantern_json(
    store: Path | str,
    *args: str,
    env: Mapping[str, str] | None = None,
    input: str | bytes | None = None,
) -> tuple[subprocess.CompletedProcess, Any]:
    """``lantern --store STORE ARGS --json`` in a subprocess: (the result, the JSON document
    it wrote, from stdout, else stderr; None when it wrote none or not JSON)."""
    result = lantern(*args, "--json", store=store, env=env, input=input)
    try:
        out = result.stdout if result.stdout.strip() else result.stderr
        parsed = json.loads(out) if out.strip() else None
    except json.JSONDecodeError:
        parsed = None
    return result, parsed


def start_lantern(
    *args: str,
    store: Path | str | None = None,
    env: Mapping[str, str] | None = None,
    **popen: Any,
) -> subprocess.Popen:
    """The real ``lantern`` CLI started in a subprocess and left running (to be killed, or
    read from), its stdout and stderr piped as text; the caller bounds every wait on it."""
    return subprocess.Popen(
        _argv(args, store),
        env=cli_env(**(env or {})),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        **popen,
    )


def stderr_on_a_terminal(
    *args: str,
    cwd: Path | str | None = None,
    env: Mapping[str, str] | None = None,
    timeout: float = 60,
) -> tuple[int, bytes, bytes]:
    """``lantern ARGS`` in a subprocess whose stderr is a pseudo-terminal (stdin empty), as a
    person's shell runs it: (exit status, stdout, what reached the terminal). ``env`` is added
    to this process's environment; every wait is bounded by ``timeout``."""
    leader, follower = pty.openpty()
    proc = subprocess.Popen(
        _argv(args, None),
        cwd=cwd,
        env=cli_env(**(env or {})),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=follower,
    )
    os.close(follower)
    seen = b""
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            try:
                chunk = os.read(leader, 4096)
            except OSError:  # the terminal closed with the process
                break
            if not chunk:
                break
            seen += chunk
        out, _ = proc.communicate(timeout=timeout)
    finally:
        os.close(leader)
    return proc.returncode, out, seen


def on_a_terminal(store_path, *args: str, progress: str = "always") -> tuple[str, str]:
    """(stdout, what reached the terminal on stderr) of one CLI run whose stderr is a pty."""
    env = {"LANTERN_STORE": str(store_path), "LANTERN_PROGRESS": progress}
    code, stdout, seen = stderr_on_a_terminal(*args, env=env)
    assert code == 0, seen.decode(errors="replace")
    return stdout.decode(), seen.decode(errors="replace")
