"""Store formats and ``lantern migrate``, on real format-1 stores the old lantern made."""

from __future__ import annotations

import json

import pytest
from support.cli import lantern
from support.cli import lantern_json as run
from support.format1 import unpack_format1
from support.stores import git, snapshot


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


# ---------------------------------------------------------------------------- helpers


def store_format(path) -> int:
    return int((path / "lantern.yaml").read_text().split(":")[1])


def contents(store) -> set[str]:
    result, items = run(store, "memory", "list", "--limit", "0")
    assert result.returncode == 0, result.stderr
    return {item["content"] for item in items}


# ---------------------------------------------------------------------------- migrate


def test_dry_run_changes_nothing_and_migrate_is_one_commit_with_its_trailers(tmp_path):
    alpha = unpack_format1(tmp_path).alpha
    before = snapshot(alpha)
    records = contents(alpha)
    result, plan = run(alpha, "migrate", "--dry-run")
    assert result.returncode == 0, result.stderr
    assert (plan["from"], plan["to"], plan["dry_run"], plan["commit"]) == (1, 2, True, None)
    assert plan["files"] == [".gitattributes", "lantern.yaml"]
    assert snapshot(alpha) == before

    result, done = run(alpha, "migrate")
    assert result.returncode == 0, result.stderr
    assert done["commit"] == git(alpha, "rev-parse", "HEAD").strip()
    assert git(alpha, "rev-parse", "HEAD~1").strip() == before["head"]
    message = git(alpha, "log", "-1", "--format=%B")
    assert "Lantern-Op: migrate\n" in message and "Lantern-Format: 1 -> 2\n" in message
    changed = git(alpha, "diff", "--name-only", before["head"], "HEAD").split()
    assert changed == [".gitattributes", "lantern.yaml"]
    assert store_format(alpha) == 2
    attributes = (alpha / ".gitattributes").read_text().splitlines()
    assert "entities/**/*.md merge=lantern" in attributes
    assert "memory/**/*.md merge=lantern" in attributes
    assert git(alpha, "status", "--porcelain") == ""
    # Every record, the hand-edited ones included, reads as before.
    assert contents(alpha) == records
    assert "reviewed_by: raphael" in git(alpha, "grep", "-h", "reviewed_by", "HEAD", "--", "memory")


def test_migrate_again_changes_nothing(tmp_path):
    alpha = unpack_format1(tmp_path).alpha
    assert run(alpha, "migrate")[0].returncode == 0
    head = git(alpha, "rev-parse", "HEAD")
    result, again = run(alpha, "migrate")
    assert result.returncode == 0, result.stderr
    assert again["up_to_date"] is True and again["commit"] is None
    assert git(alpha, "rev-parse", "HEAD") == head
    assert git(alpha, "log", "--format=%s", "--grep=^Lantern-Op: migrate").count("\n") == 1


def test_migrate_refuses_uncommitted_changes_and_writes_nothing(tmp_path):
    alpha = unpack_format1(tmp_path).alpha
    record = sorted((alpha / "memory").rglob("*.md"))[0]
    record.write_text(record.read_text().replace("priority:", "priority: 1\nold_priority:", 1))
    before = snapshot(alpha)
    result, answer = run(alpha, "migrate")
    assert result.returncode == 1
    assert answer["error"]["code"] == "uncommitted_changes"
    assert snapshot(alpha) == before
    assert store_format(alpha) == 1


def test_a_format1_store_works_as_before(tmp_path):
    alpha = unpack_format1(tmp_path).alpha
    result, _added = run(alpha, "memory", "add", "Format 1 still takes writes.", "--kind", "fact")
    assert result.returncode == 0, result.stderr
    assert store_format(alpha) == 1
    assert git(alpha, "show", "HEAD:lantern.yaml") == "format: 1\n"
    result, status = run(alpha, "status")
    assert status["format"] == 1 and status["records"] == 9


def test_a_store_of_a_newer_format_is_refused_and_nothing_is_written(tmp_path):
    alpha = unpack_format1(tmp_path).alpha
    (alpha / "lantern.yaml").write_text("format: 3\n")
    git(alpha, "commit", "-qam", "a format from the future")
    before = snapshot(alpha)
    for args in (
        ("memory", "add", "refused", "--kind", "fact"),
        ("migrate",),
        ("memory", "list"),
    ):
        result, answer = run(alpha, *args)
        assert result.returncode == 1, args
        assert answer["error"]["code"] == "unsupported_format"
        assert "format 3" in answer["error"]["message"]
        assert "upgrade lantern-git" in answer["error"]["message"]
    assert snapshot(alpha) == before


BEFORE_REF = ["after-objects", "after-journal", "after-first-file", "after-files"]
AFTER_REF = ["after-ref", "after-index", "after-search-index"]


@pytest.mark.parametrize("point", BEFORE_REF + AFTER_REF)
def test_migrate_killed_at_each_kill_point_leaves_format_1_or_2_never_between(tmp_path, point):
    alpha = unpack_format1(tmp_path).alpha
    head = git(alpha, "rev-parse", "HEAD").strip()
    killed, _ = run(alpha, "migrate", env={"LANTERN_FAULT": point})
    assert killed.returncode == -9, killed.stderr
    # The next command repairs the write: the store is wholly at one format or the other.
    result, status = run(alpha, "status")
    assert result.returncode == 0, result.stderr
    expected = 1 if point in BEFORE_REF else 2
    assert status["format"] == expected
    assert store_format(alpha) == expected
    assert git(alpha, "show", "HEAD:lantern.yaml") == f"format: {expected}\n"
    assert git(alpha, "status", "--porcelain") == ""
    committed = git(alpha, "show", "HEAD:.gitattributes")
    assert ("entities/**/*.md merge=lantern" in committed) == (expected == 2)
    if expected == 1:
        assert git(alpha, "rev-parse", "HEAD").strip() == head
    # Then migrate finishes the job (or finds it done), with one migrate commit in all.
    result, _done = run(alpha, "migrate")
    assert result.returncode == 0, result.stderr
    assert store_format(alpha) == 2
    assert len(git(alpha, "log", "--format=%h", "--grep=^Lantern-Op: migrate").split()) == 1


# ---------------------------------------------------------------------------- two hosts


def test_two_hosts_one_migrated_sync_says_what_to_do_and_loses_nothing(tmp_path):
    stores = unpack_format1(tmp_path)
    alpha, beta = stores.alpha, stores.beta
    alpha_records, beta_records = contents(alpha), contents(beta)
    assert run(alpha, "migrate")[0].returncode == 0
    result, pushed = run(alpha, "sync")
    assert result.returncode == 0, result.stderr
    assert pushed["pushed"] is True

    before = snapshot(beta)
    result, refused = run(beta, "sync")
    assert result.returncode == 2
    assert refused["error"]["code"] == "needs_migration"
    message = refused["error"]["message"]
    assert "format 1" in message and "format 2" in message
    assert "run lantern migrate here" in message
    assert snapshot(beta) == before
    assert git(stores.hub, "show", "main:lantern.yaml") == "format: 2\n"

    assert run(beta, "migrate")[0].returncode == 0
    result, _merged = run(beta, "sync")
    assert result.returncode == 0, result.stderr
    assert run(alpha, "sync")[0].returncode == 0
    everything = alpha_records | beta_records
    assert contents(beta) == everything == contents(alpha)
    for host in (alpha, beta):
        assert store_format(host) == 2
        assert git(host, "status", "--porcelain") == ""
    # The record both hosts changed kept both changes, field by field.
    _, deploy = run(beta, "memory", "search", "zettabyte deploy host", "--mode", "keyword")
    hit = next(item for item in deploy if item["content"] == "The deploy host is zettabyte.")
    assert (hit["priority"], hit["urgency"]) == (90, 40)


def test_a_migrated_host_does_not_merge_an_unmigrated_remote_either(tmp_path):
    stores = unpack_format1(tmp_path)
    # Beta migrates and syncs while the hub holds alpha's format-1 commits beta lacks.
    assert run(stores.beta, "migrate")[0].returncode == 0
    before = snapshot(stores.beta)
    result, refused = run(stores.beta, "sync")
    assert result.returncode == 2
    assert refused["error"]["code"] == "needs_migration"
    assert "run lantern migrate on the host that wrote" in refused["error"]["message"]
    assert snapshot(stores.beta) == before


def test_the_review_branch_stays_reviewable_after_migrate(tmp_path):
    alpha = unpack_format1(tmp_path).alpha
    assert run(alpha, "migrate")[0].returncode == 0
    result, pending = run(alpha, "review")
    assert result.returncode == 0, result.stderr
    assert "agent" in json.dumps(pending)
    result, _accepted = run(alpha, "review", "accept", "--branch", "agent", "--all")
    assert result.returncode == 0, result.stderr
    assert store_format(alpha) == 2
    assert "Ana asked for a weekly summary." in contents(alpha)
    assert git(alpha, "status", "--porcelain") == ""


def test_the_merge_driver_refuses_lantern_yaml_of_two_formats(tmp_path):
    base, ours, theirs = (tmp_path / name for name in ("base", "ours", "theirs"))
    base.write_text("format: 1\n")
    ours.write_text("format: 1\nreview: true\n")
    theirs.write_text("format: 2\n")
    result = lantern("merge-file", str(base), str(ours), str(theirs), "lantern.yaml")
    assert result.returncode == 1
    assert "lantern migrate" in result.stderr
    assert ours.read_text() == "format: 1\nreview: true\n"
    # The same format: git's line merge.
    base.write_text("format: 1\nreview: false\n# both hosts\nembedder: none\n")
    ours.write_text("format: 1\nreview: true\n# both hosts\nembedder: none\n")
    theirs.write_text("format: 1\nreview: false\n# both hosts\nembedder: wordllama\n")
    result = lantern("merge-file", str(base), str(ours), str(theirs), "lantern.yaml")
    assert result.returncode == 0, result.stderr
    assert ours.read_text() == "format: 1\nreview: true\n# both hosts\nembedder: wordllama\n"
