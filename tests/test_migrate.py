"""Store formats and ``lantern migrate``, on real format-1 stores the old lantern made."""

from __future__ import annotations

import json

from conftest import git, lantern
from format1_support import unpack_format1


def test_the_format1_fixture_is_what_the_migration_tests_assume(tmp_path):
    stores = unpack_format1(tmp_path)
    for host in (stores.alpha, stores.beta):
        assert (host / "lantern.yaml").read_text() == "format: 1\n"
        assert git(host, "status", "--porcelain") == ""
    # A hand-edited record and one written by hand, committed with plain git.
    assert git(stores.alpha, "grep", "-l", "reviewed_by: raphael", "main", "--", "memory")
    assert "Hand Editor" in git(stores.alpha, "log", "--format=%an", "-1", "--", "memory/ab")
    # A pending review branch with two writes.
    log = git(stores.alpha, "log", "--format=%s", "main..lantern/review/agent").splitlines()
    assert len(log) == 2
    # Beta and the hub have diverged: each has a commit the other lacks.
    git(stores.beta, "fetch", "-q", "origin")
    assert git(stores.beta, "rev-list", "--count", "origin/main..main").strip() == "2"
    assert git(stores.beta, "rev-list", "--count", "main..origin/main").strip() != "0"
    listed = lantern("--store", str(stores.alpha), "memory", "list", "--json")
    assert listed.returncode == 0, listed.stderr
    assert len(json.loads(listed.stdout)) == 8
