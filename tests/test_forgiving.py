"""Forgiving where it costs nothing: hints for near misses (issue 14)."""

from __future__ import annotations

import json

from conftest import lantern


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
