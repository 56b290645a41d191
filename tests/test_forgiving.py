"""Forgiving where it costs nothing: hints for near misses (issue 14)."""

from __future__ import annotations

import json

from conftest import lantern, snapshot


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
