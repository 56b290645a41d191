"""Forgiving where it costs nothing: hints for near misses, and shell completion (issue 14)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from support.cli import lantern
from support.stores import snapshot


def test_a_bare_scope_word_suggests_the_prefix_pattern(store_path):
    result = lantern("memory", "list", "--scope", "user", "--store", str(store_path))
    assert result.returncode == 2
    assert result.stdout == ""
    assert "did you mean --scope 'user:*'?" in result.stderr
    as_json = lantern(
        "memory", "search", "tea", "--scope", "user", "--json", "--store", str(store_path)
    )
    assert as_json.returncode == 2
    error = json.loads(as_json.stderr.strip().splitlines()[-1])["error"]
    assert error["message"].endswith("did you mean --scope 'user:*'?")
    # Only a bare word gets the hint: it would not help for a scope that is wrong otherwise.
    spaced = lantern("memory", "list", "--scope", "us er", "--store", str(store_path))
    assert spaced.returncode == 2
    assert "did you mean" not in spaced.stderr


def test_sync_with_a_path_that_does_not_exist_says_so(store_path, tmp_path):
    before = snapshot(store_path)
    missing = str(tmp_path / "no" / "such" / "path")
    for target in (missing, "./no-such-dir", "../no-such-dir"):
        result = lantern("sync", target, "--store", str(store_path), cwd=tmp_path)
        assert result.returncode == 2, result.stderr
        assert f"remote: {target} does not exist" in result.stderr
    # A word is still taken for a remote's name.
    result = lantern("sync", "nope", "--store", str(store_path))
    assert result.returncode == 2
    assert "neither a configured remote" in result.stderr
    assert snapshot(store_path) == before


def _complete(words: str, cword: int) -> list[str]:
    env = {"_LANTERN_COMPLETE": "bash_complete", "COMP_WORDS": words, "COMP_CWORD": str(cword)}
    result = lantern(env=env)
    assert result.returncode == 0, result.stderr
    return [line.split(",", 1)[1] for line in result.stdout.splitlines()]


def test_bash_completion_offers_commands_and_memory_subcommands():
    assert "memory" in _complete("lantern mem", 1)
    offered = _complete("lantern memory ", 2)
    assert {"add", "list", "search", "show", "archive", "history"} <= set(offered)
    assert "sync" not in offered


def test_the_bash_completion_script_completes_in_bash(tmp_path):
    """The script docs/usage.md tells users to source, run by bash itself."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    shim = bin_dir / "lantern"
    shim.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m lantern_git "$@"\n')
    shim.chmod(0o755)
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"}
    script = subprocess.run(
        ["lantern"], env={**env, "_LANTERN_COMPLETE": "bash_source"},
        capture_output=True, text=True, timeout=60, check=True,
    ).stdout  # fmt: skip
    completion = Path(tmp_path / "lantern-complete.bash")
    completion.write_text(script)
    body = (
        f'source "{completion}"\n'
        "COMP_WORDS=(lantern memory l); COMP_CWORD=2\n"
        "_lantern_completion lantern\n"
        'printf "%s\\n" "${COMPREPLY[@]}"\n'
    )
    result = subprocess.run(
        ["bash", "--norc", "--noprofile", "-c", body],
        env=env, capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["list"]
