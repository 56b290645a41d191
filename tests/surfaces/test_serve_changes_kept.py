"""The Changes page under a running server (issue 32, speed): it keeps the working tree's
diff between loads and reads at most a page of a large commit's change. What it keeps must
never hide a change: every kind of hand edit git's status saw (a file edited, edited again,
deleted, added untracked, broken, broken differently, restored) shows on the next load, and
a commit made meanwhile moves the page on; a commit of more records than a page names the
first ones and says how to see the rest."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from support.serve import Markup, served
from support.stores import git, make_store

from lantern_git.store import Store


@pytest.fixture
def path(tmp_path) -> Path:
    return make_store(tmp_path / "store")


def section(html: str, name: str) -> str:
    return html.split(f'id="{name}"', 1)[1].split("</section>", 1)[0]


def diff_text(client) -> str:
    page = client.get("/changes")
    assert page.status_code == 200, page.text
    return Markup(section(page.text, "diff")).text


def record_file(path: Path, record_id: str) -> Path:
    [file] = (path / "memory").rglob(f"{record_id}.md")
    return file


def test_every_hand_edit_shows_on_the_next_load_after_the_diff_was_kept(path, tmp_path):
    store = Store(str(path), actor="cli")
    edited = store.add("edited by hand", kind="fact", priority=50).id
    deleted = store.add("deleted by hand", kind="fact").id
    broken = store.add("broken by hand", kind="fact").id
    head = store.log(1)[0].commit
    store.close()
    # A record file that no commit holds: made in another store, copied in by hand.
    elsewhere = make_store(tmp_path / "elsewhere")
    other = Store(str(elsewhere), actor="cli")
    untracked = other.add("copied in by hand", kind="fact").id
    other.close()
    with served(path) as (client, _):
        assert "Nothing uncommitted" in Markup(client.get("/changes").text).text
        diff_text(client)  # kept clean, twice
        file = record_file(path, edited)
        file.write_text(file.read_text().replace("priority: 50", "priority: 70"))
        assert "50 → 70" in diff_text(client)
        # The same file edited again: the kept diff of the first edit is not shown.
        file.write_text(file.read_text().replace("priority: 70", "priority: 80"))
        shown = diff_text(client)
        assert "50 → 80" in shown and "50 → 70" not in shown
        record_file(path, deleted).unlink()
        assert f"removed {deleted}" in diff_text(client)
        copied = path / record_file(elsewhere, untracked).relative_to(elsewhere)
        copied.parent.mkdir(exist_ok=True)
        shutil.copy(record_file(elsewhere, untracked), copied)
        shown = diff_text(client)
        assert f"added {untracked}" in shown and f"removed {deleted}" in shown
        # Broken, then broken another way: each problem shows as it is now.
        bad = record_file(path, broken)
        bad.write_text("---\nkind: [unclosed\n---\n")
        first_problem = diff_text(client)
        assert bad.name in first_problem and f"changed {broken}" not in first_problem
        bad.write_text("not front matter at all\n")
        second_problem = diff_text(client)
        assert bad.name in second_problem and second_problem != first_problem
        # Everything restored: the page is back on the last commit's change.
        git(path, "checkout", "--", ".")
        copied.unlink()
        page = Markup(client.get("/changes").text).text
        assert "Nothing uncommitted" in page and f"Commit {head[:12]}" in page


def test_a_commit_made_beside_the_server_moves_the_kept_diff_and_log_on(path):
    store = Store(str(path), actor="cli")
    record = store.add("committed from the side", kind="fact", priority=50).id
    store.close()
    with served(path) as (client, _):
        file = record_file(path, record)
        file.write_text(file.read_text().replace("priority: 50", "priority: 60"))
        assert "50 → 60" in diff_text(client)
        # The same working file, committed by another process: nothing is uncommitted now.
        side = Store(str(path), actor="cli")
        commit = side.commit_hand_edits("priority by hand").commit
        side.close()
        html = client.get("/changes").text
        page = Markup(html).text
        assert "Nothing uncommitted" in page and f"Commit {commit[:12]}" in page
        # The kept log moved on too: the new commit heads it.
        assert section(html, "log").index(commit) < section(html, "log").index("/records/")


def imported(path: Path, count: int) -> list[str]:
    """``count`` records imported in one commit; their ids in path order."""
    store = Store(str(path), actor="cli")
    lines = [json.dumps({"kind": "fact", "content": f"imported {i}"}) for i in range(count)]
    store.import_records(lines)
    ids = sorted(r.id for r in store.list(limit=0))
    store.close()
    return ids


def test_a_large_commit_shows_its_first_page_of_records_and_says_there_are_more(path):
    ids = imported(path, 60)
    with served(path) as (client, _):
        page = client.get("/changes").text
        diff = Markup(section(page, "diff")).text
        shown = [i for i in ids if f"added {i}" in diff]
        assert shown == ids[:50]
        assert "More records changed than the first 50 shown here" in diff
        assert "lantern diff" in diff
        # The log names the import's first 20 records and counts the rest.
        log = section(page, "log")
        assert log.count('href="/records/') == 20
        assert "and 40 more" in Markup(log).text


def test_a_commit_of_a_page_or_less_says_nothing_of_more(path):
    imported(path, 50)
    with served(path) as (client, _):
        diff = Markup(section(client.get("/changes").text, "diff")).text
        assert diff.count("added ") == 50 and "More records changed" not in diff


def test_the_library_diff_reads_the_first_records_by_path_when_limited(path):
    ids = imported(path, 7)
    store = Store(str(path), actor="cli")
    try:
        whole = store.diff("HEAD~1", "HEAD")
        assert sorted(r.id for r in whole.added) == ids and not whole.more
        first = store.diff("HEAD~1", "HEAD", limit=3)
        assert [r.id for r in first.added] == ids[:3] and first.more
        exact = store.diff("HEAD~1", "HEAD", limit=7)
        assert len(exact.added) == 7 and not exact.more
        # limit 0 is no limit, as everywhere; a negative one is refused.
        assert len(store.diff("HEAD~1", "HEAD", limit=0).added) == 7
        with pytest.raises(Exception, match="limit"):
            store.diff("HEAD~1", "HEAD", limit=-1)
        # Against the working tree too: two files edited, the first by path read.
        for record_id in ids[-2:]:
            file = record_file(path, record_id)
            file.write_text(file.read_text().replace("imported", "edited"))
        worktree = store.diff(limit=1)
        assert [c.id for c in worktree.changed] == [ids[-2]] and worktree.more
    finally:
        store.close()
