"""memory list --at REV|DATE: records as they were, answered from git's tree."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from support.cli import lantern
from support.stores import git

from lantern_git.errors import InvalidInput
from lantern_git.model.record import Record
from lantern_git.model.record_file import record_path
from lantern_git.store import Store


def commit_at(store_path, stamp: int, record: Record, message: str) -> str:
    """Write a record file and commit it with plain git, dated ``stamp``."""
    path = store_path / record_path(record.id)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(record.to_markdown())
    env = dict(os.environ, GIT_COMMITTER_DATE=f"{stamp} +0000", GIT_AUTHOR_DATE=f"{stamp} +0000")
    subprocess.run(["git", "add", "-A", "memory"], cwd=store_path, check=True)
    subprocess.run(["git", "commit", "-qm", message], cwd=store_path, env=env, check=True)
    return record.id


def ids(records) -> list[str]:
    return [r.id if hasattr(r, "id") else r["id"] for r in records]


def test_list_at_a_revision(store, store_path):
    a = store.add("Ana drinks tea", kind="preference", priority=60)
    b = store.add("Bo drinks coffee", kind="preference", priority=70)
    store.archive(a.id)
    store.update(b.id, priority=10)
    store.add("Cy drinks water", kind="fact")
    then = store.list(at="HEAD~3")
    assert ids(then) == [b.id, a.id]
    assert then[0].priority == 70
    archived_then = store.list(at="HEAD~2", status="archived")
    assert ids(archived_then) == [a.id]
    assert ids(store.list(at="HEAD~5")) == []  # the init commit
    head = git(store_path, "rev-parse", "HEAD~3").strip()
    assert ids(store.list(at=head[:10])) == [b.id, a.id]
    assert ids(store.list(at="HEAD", status="all")) == ids(store.list(status="all"))


def test_list_at_uses_the_same_filters_and_order_as_list(store):
    store.add("one", kind="fact", scope="user:ana", priority=10)
    store.add("two", kind="goal", scope="user:bo", priority=90, urgency=5)
    store.add("three", kind="goal", scope="user:ana", priority=90, urgency=50)
    store.add("four", kind="fact", scope="project:x", priority=90, urgency=50)
    gone = store.add("five", kind="fact", scope="user:ana", priority=95)
    store.archive(gone.id)
    cases = [
        {},
        {"status": "all"},
        {"scopes": ("user:*",)},
        {"kinds": ("goal",)},
        {"min_priority": 50},
        {"min_urgency": 10},
        {"status": "all", "limit": 2},
        {"status": "archived"},
    ]
    for filters in cases:
        assert ids(store.list(at="HEAD", **filters)) == ids(store.list(**filters)), filters


def test_list_at_a_date_uses_commit_times(store_path):
    tea = Record.new(kind="fact", content="Tea", now=1_700_000_000)
    first = commit_at(store_path, 1_700_000_000, tea, "add tea")
    coffee = Record.new(kind="fact", content="Coffee", now=1_700_100_000)
    second = commit_at(store_path, 1_700_100_000, coffee, "add coffee")
    archived = tea.evolve(status="archived", updated_at=1_700_200_000)
    commit_at(store_path, 1_700_200_000, archived, "archive tea")

    def listed(at: str, *extra: str) -> list[str]:
        result = lantern("memory", "list", "--at", at, *extra, "--json", cwd=store_path)
        assert result.returncode == 0, result.stderr
        return ids(json.loads(result.stdout))

    assert listed("1700050000") == [first]
    assert listed("2023-11-15T00:00:00Z") == [first]  # 1700006400
    assert listed("2023-11-16T03:00:00Z") == [second, first]  # newer updated_at first
    assert listed("1700150000") == listed("HEAD~1")
    assert listed("1700250000") == [second]
    assert listed("1700250000", "--status", "archived") == [first]
    assert listed("2001-01-01") == []
    assert listed("+1d") == listed("HEAD")


def test_list_at_judges_expiry_at_that_moment(store_path):
    temporary = Record.new(
        kind="task_state", content="Temporary", expires_at=1_700_050_000, now=1_700_000_000
    )
    record = commit_at(store_path, 1_700_000_000, temporary, "add temporary")
    at_then = lantern("memory", "list", "--at", "1700040000", "--json", cwd=store_path)
    assert ids(json.loads(at_then.stdout)) == [record]
    after = lantern("memory", "list", "--at", "1700060000", "--json", cwd=store_path)
    assert json.loads(after.stdout) == []
    shown = lantern(
        "memory", "list", "--at", "1700060000", "--include-expired", "--json", cwd=store_path
    )
    assert ids(json.loads(shown.stdout)) == [record]


def test_list_at_skips_a_file_that_was_broken_then_with_a_warning(store, store_path):
    a = store.add("Ana drinks tea", kind="preference")
    b = store.add("Bo drinks coffee", kind="preference")
    path = store_path / record_path(b.id)
    path.write_text(path.read_text().replace("priority: 50", "priority: x"))
    git(store_path, "commit", "-qam", "broken by hand")
    warnings: list[str] = []
    reopened = Store.open(str(store_path), warn=warnings.append)
    assert ids(reopened.list(at="HEAD")) == [a.id]
    assert warnings and record_path(b.id) in warnings[0]
    reopened.close()


def test_list_at_bad_values(store, store_path):
    store.add("Ana drinks tea", kind="preference")
    with pytest.raises(InvalidInput, match="neither a git revision nor a time"):
        store.list(at="no-such-branch")
    with pytest.raises(InvalidInput, match="--query cannot be combined"):
        store.list(at="HEAD", text="tea")
    result = lantern("memory", "list", "--at", "nope~~", "--json", cwd=store_path)
    assert result.returncode == 2 and json.loads(result.stderr)["error"]["code"] == "invalid_at"


def test_list_at_does_not_import_whoosh(store_path):
    Store.open(str(store_path)).add("Ana drinks tea", kind="preference")
    code = (
        "import sys\n"
        "from lantern_git.store import Store\n"
        f"records = Store.open({str(store_path)!r}).list(at='HEAD', status='all')\n"
        "assert len(records) == 1, records\n"
        "assert not any(m.split('.')[0] == 'whoosh' for m in sys.modules), 'whoosh imported'\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert os.path.isdir(store_path / ".git")
