"""Review before memory (docs/review.md): with review on, writes go to a review branch and the
store's branch, working tree and ``.git/index`` stay exactly as they were."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pygit2
import pytest
from support.cli import cli_env, lantern
from support.reliability import add_args
from support.stores import git, make_store, opened, snapshot

from lantern_git.errors import GitError, InvalidInput, NotFound
from lantern_git.evidence.sources import SourceInput
from lantern_git.git.repo import parse_trailers
from lantern_git.model.record_file import record_path

CLI_BRANCH = "refs/heads/lantern/review/cli"
API_BRANCH = "refs/heads/lantern/review/api"


def untouched(path: Path) -> dict:
    """What review mode must leave alone: the branch, the files, git status, ``.git/index``."""
    return {**snapshot(path), "index": (path / ".git" / "index").read_bytes()}


def tip(path: Path, ref: str) -> pygit2.Commit | None:
    repo = pygit2.Repository(str(path))
    found = repo.references.get(ref)
    return repo[found.target].peel(pygit2.Commit) if found is not None else None


def text_on(path: Path, ref: str, record_id: str) -> str | None:
    commit = tip(path, ref)
    assert commit is not None
    try:
        entry = commit.tree[record_path(record_id)]
    except KeyError:
        return None
    return pygit2.Repository(str(path))[entry.id].peel(pygit2.Blob).data.decode()


@pytest.fixture
def seeded(tmp_path) -> tuple[Path, str]:
    """A store with one record committed on its branch the ordinary way."""
    path = make_store(tmp_path / "store")
    with opened(path) as store:
        seed = store.add("the seed record", kind="fact").id
    return path, seed


def test_a_review_write_commits_to_the_review_branch_with_trailers_and_leaves_the_store_alone(
    seeded,
):
    path, _ = seeded
    before = untouched(path)
    head = git(path, "rev-parse", "HEAD").strip()
    with opened(path, review=True) as store:
        written = store.written(
            store.add, "agents propose, people accept", kind="fact", reason="learned"
        )
        record = written.value
        assert written.pending is True
        assert written.commit is not None
    assert untouched(path) == before
    commit = tip(path, API_BRANCH)
    assert commit is not None and str(commit.id) == written.commit
    assert [str(p) for p in commit.parent_ids] == [head]
    trailers = parse_trailers(commit.message)
    assert trailers["Lantern-Op"] == ["add"]
    assert trailers["Lantern-Record"] == [record.id]
    assert trailers["Lantern-Actor"] == ["api"]
    assert trailers["Lantern-Reason"] == ["learned"]
    assert commit.author.email == "author@example.com"
    assert "agents propose" in (text_on(path, API_BRANCH, record.id) or "")
    reflog = git(path, "reflog", "show", "--format=%gs", "lantern/review/api")
    assert reflog.splitlines()[0].startswith("lantern: add ")
    # Nothing pending shows in the store's own listing, and no journal is left behind.
    with opened(path) as store:
        assert [r.content for r in store.list()] == ["the seed record"]
    assert not (path / ".lantern" / "journal.json").exists()


def test_every_writer_goes_to_the_review_branch_and_reads_what_it_wrote_there(seeded):
    path, seed = seeded
    before = untouched(path)
    with opened(path, review=True) as store:
        new = store.add("a fact only the review branch has", kind="fact")
        # A prefix of a record that exists only on the review branch resolves, and the
        # writers read it from there.
        updated = store.update(new.id[:6], priority=80)
        assert updated.priority == 80
        assert store.archive(new.id).status == "archived"
        # Read back from the branch: already archived, so nothing to commit.
        again = store.written(store.archive, new.id)
        assert again.value.status == "archived"
        assert again.commit is None and again.pending is False
        assert store.restore(new.id).status == "active"
        replacement = store.supersede(seed, "the seed record, corrected")
        deleted = store.delete(new.id)
        assert deleted.record.id == new.id
        with pytest.raises(NotFound):
            store.archive(new.id)  # its removal awaits review: gone for this writer
        store.sources.add([SourceInput(b"line one\nline two\n", uri="session:review")])
        # An add of what the branch already has is idempotent there too.
        same = store.written(store.add, "the seed record, corrected", kind="fact")
        assert same.value.id == replacement.id
        assert same.commit is None
    assert untouched(path) == before
    repo = pygit2.Repository(str(path))
    ops = []
    for commit in repo.walk(tip(path, API_BRANCH).id):
        if str(commit.id) == before["head"]:
            break
        ops.append(parse_trailers(commit.message)["Lantern-Op"][0])
    assert ops == ["ingest", "delete", "supersede", "restore", "archive", "update", "add"]
    assert text_on(path, API_BRANCH, new.id) is None
    assert "status: superseded" in (text_on(path, API_BRANCH, seed) or "")
    assert "supersedes_id: " + seed in (text_on(path, API_BRANCH, replacement.id) or "")


def test_a_record_the_review_branch_did_not_touch_is_read_from_the_working_tree(seeded):
    path, seed = seeded
    with opened(path, review=True) as store:
        store.add("something else entirely", kind="fact")
    # The store's branch moves on after the review branch left it: a person adds a record.
    with opened(path) as store:
        later = store.add("a person's later record", kind="fact")
    with opened(path, review=True) as store:
        assert store.archive(later.id[:8]).status == "archived"
        assert store.archive(seed).status == "archived"
    assert "status: archived" in (text_on(path, API_BRANCH, later.id) or "")
    assert "status: archived" in (text_on(path, API_BRANCH, seed) or "")
    assert "status: active" in (path / record_path(seed)).read_text()


def test_review_mode_from_the_environment_names_the_branch_after_the_actor(seeded):
    path, _ = seeded
    before = untouched(path)
    result = lantern(*add_args("pending from the cli"), env=cli_env(LANTERN_REVIEW="1"), store=path)
    assert result.returncode == 0, result.stderr
    document = json.loads(result.stdout)
    assert document["pending"] is True
    assert document["content"] == "pending from the cli"
    assert tip(path, CLI_BRANCH) is not None
    named = lantern(
        *add_args("pending from a named writer"),
        env=cli_env(LANTERN_REVIEW="1", LANTERN_REVIEW_NAME="nightly-bot"),
        store=path,
    )
    assert named.returncode == 0, named.stderr
    assert tip(path, "refs/heads/lantern/review/nightly-bot") is not None
    text = lantern("memory", "archive", document["id"], env=cli_env(LANTERN_REVIEW="1"), store=path)
    assert text.returncode == 0, text.stderr
    assert text.stdout.startswith("archived (pending review) ")
    deleted = lantern(
        "memory", "delete", document["id"], "--json", env=cli_env(LANTERN_REVIEW="1"), store=path
    )
    assert deleted.returncode == 0, deleted.stderr
    assert json.loads(deleted.stdout)["pending"] is True
    assert untouched(path) == before
    # Off by default: the same command without the variable writes to the store's branch.
    plain = lantern(*add_args("an ordinary write"), store=path)
    assert "pending" not in json.loads(plain.stdout)
    assert git(path, "rev-parse", "HEAD").strip() != before["head"]


def test_review_mode_from_lantern_yaml(seeded):
    path, _ = seeded
    with open(path / "lantern.yaml", "a") as handle:
        handle.write("review: true\n")
    git(path, "commit", "-qam", "turn review on")
    before = untouched(path)
    with opened(path) as store:
        written = store.written(store.add, "written while the store asks for review", kind="fact")
        assert written.pending
    assert untouched(path) == before
    assert tip(path, API_BRANCH) is not None
    # The process may still turn it off for itself.
    with opened(path, review=False) as store:
        written = store.written(store.add, "written with review turned off", kind="fact")
        assert not written.pending
    assert git(path, "rev-parse", "HEAD").strip() != before["head"]


@pytest.mark.parametrize(
    "name", ["../main", "a..b", "x.lock", "with space", "a/b", "-dash", "", "é", "x" * 65]
)
def test_a_bad_review_name_is_refused_with_exit_2_and_nothing_written(seeded, name):
    path, _ = seeded
    before = untouched(path)
    result = lantern(
        *add_args("never written"),
        env=cli_env(LANTERN_REVIEW="1", LANTERN_REVIEW_NAME=name, LANTERN_AUTHOR="A <a@b>"),
        store=path,
    )
    if name == "":  # an empty name means "not given": the actor names the branch
        assert result.returncode == 0, result.stderr
        return
    assert result.returncode == 2, result.stderr
    assert json.loads(result.stderr)["error"]["code"] == "invalid_review_name"
    assert untouched(path) == before
    assert git(path, "for-each-ref", "refs/heads/lantern") == ""


def test_a_bad_lantern_review_value_is_refused(seeded):
    path, _ = seeded
    result = lantern(*add_args("never written"), env=cli_env(LANTERN_REVIEW="maybe"), store=path)
    assert result.returncode == 2
    assert json.loads(result.stderr)["error"]["code"] == "invalid_review"
    with pytest.raises(InvalidInput):
        os.environ["LANTERN_REVIEW"] = "maybe"
        try:
            with opened(path) as store:
                store.add("never written either", kind="fact")
        finally:
            del os.environ["LANTERN_REVIEW"]
    assert git(path, "for-each-ref", "refs/heads/lantern") == ""


# -- crash safety: a review write killed at each of its steps


@pytest.mark.parametrize("existing", [False, True])
@pytest.mark.parametrize("point", ["after-objects", "after-journal"])
def test_a_review_write_killed_before_its_ref_moves_leaves_the_old_ref(seeded, point, existing):
    path, _ = seeded
    env = cli_env(LANTERN_REVIEW="1")
    if existing:
        assert lantern(*add_args("already pending"), env=env, store=path).returncode == 0
    old = tip(path, CLI_BRANCH)
    before = untouched(path)
    killed = lantern(
        *add_args("cut off"), env=cli_env(LANTERN_REVIEW="1", LANTERN_FAULT=point), store=path
    )
    assert killed.returncode == -9
    after = lantern("memory", "list", "--json", store=path)
    assert after.returncode == 0, after.stderr
    if point == "after-journal":
        assert "rolled back an interrupted add on lantern/review/cli" in after.stderr
    now = tip(path, CLI_BRANCH)
    assert (now.id if now else None) == (old.id if old else None)
    assert untouched(path) == before
    assert not (path / ".lantern" / "journal.json").exists()
    again = lantern(*add_args("cut off"), env=env, store=path)
    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout)["pending"] is True


@pytest.mark.parametrize("point", ["after-ref", "after-search-index"])
def test_a_review_write_killed_after_its_ref_moved_is_complete(seeded, point):
    path, _ = seeded
    before = untouched(path)
    killed = lantern(
        *add_args("made it"), env=cli_env(LANTERN_REVIEW="1", LANTERN_FAULT=point), store=path
    )
    assert killed.returncode == -9
    after = lantern("memory", "list", "--json", store=path)
    assert after.returncode == 0, after.stderr
    assert "completed an interrupted add on lantern/review/cli" in after.stderr
    assert [r["content"] for r in json.loads(after.stdout)] == ["the seed record"]
    commit = tip(path, CLI_BRANCH)
    assert commit is not None and "made it" in commit.message
    assert untouched(path) == before
    assert not (path / ".lantern" / "journal.json").exists()
    assert git(path, "fsck", "--no-progress", check=False) is not None
    assert "error" not in git(path, "fsck", "--no-progress")


def test_a_ref_lock_left_by_a_killed_review_write_is_cleared(seeded):
    path, _ = seeded
    env = cli_env(LANTERN_REVIEW="1")
    assert lantern(*add_args("already pending"), env=env, store=path).returncode == 0
    old = tip(path, CLI_BRANCH)
    killed = lantern(
        *add_args("cut off"),
        env=cli_env(LANTERN_REVIEW="1", LANTERN_FAULT="after-journal"),
        store=path,
    )
    assert killed.returncode == -9
    # What git leaves when killed between taking the ref's lock and renaming it into place.
    lock = path / ".git" / "refs" / "heads" / "lantern" / "review" / "cli.lock"
    lock.write_text("0" * 40 + "\n")
    again = lantern(*add_args("after the crash"), env=env, store=path)
    assert again.returncode == 0, again.stderr
    assert not lock.exists()
    commit = tip(path, CLI_BRANCH)
    assert commit is not None and [p for p in commit.parent_ids] == [old.id]


# -- lantern review: the pending changes, record by record


def test_review_lists_each_branchs_records_with_fields_old_to_new_and_who(seeded):
    path, seed = seeded
    with opened(path, review=True, review_name="agent-a") as store:
        added = store.add("a new fact from agent a", kind="fact", priority=70)
        store.update(seed, priority=90, reason="it matters")
    with opened(path, review=True, review_name="agent-b", author="Bot B <b@example.com>") as store:
        store.delete(seed)
    with opened(path) as store:
        review = store.review_list()
    assert [b.name for b in review.branches] == ["agent-a", "agent-b"]
    a, b = review.branches
    assert len(a.commits) == 2 and a.base == git(path, "rev-parse", "HEAD").strip()
    by_id = {r.id: r for r in a.records}
    assert by_id[added.id].change == "added"
    assert by_id[added.id].record is not None and by_id[added.id].record.priority == 70
    changed = by_id[seed]
    assert changed.change == "changed" and changed.moved is False
    assert [(c.field, c.old, c.new) for c in changed.changes if c.field != "updated_at"] == [
        ("priority", 50, 90)
    ]
    assert changed.actors == ["api"] and changed.authors == ["Test Author <author@example.com>"]
    assert len(changed.commits) == 1
    assert [(r.id, r.change, r.authors) for r in b.records] == [
        (seed, "removed", ["Bot B <b@example.com>"])
    ]


def test_review_is_merge_base_aware_and_flags_records_the_store_changed_meanwhile(seeded):
    path, seed = seeded
    with opened(path, review=True) as store:
        store.update(seed, urgency=40)
    # The store's branch moves on: an unrelated add and a change to the same record.
    with opened(path) as store:
        store.add("a person's own record", kind="fact")
        store.update(seed, priority=10)
        review = store.review_list()
    (branch,) = review.branches
    # Only what the writer changed is pending: not the person's add, not their priority.
    assert [r.id for r in branch.records] == [seed]
    (record,) = branch.records
    assert record.moved is True
    assert {c.field for c in record.changes} - {"updated_at"} == {"urgency"}


def test_lantern_review_cli_text_and_json(seeded):
    path, seed = seeded
    empty = lantern("review", store=path)
    assert empty.returncode == 0 and empty.stdout == "nothing awaits review\n"
    assert json.loads(lantern("review", "--json", store=path).stdout) == {"branches": []}
    env = cli_env(LANTERN_REVIEW="1")
    assert (
        lantern("memory", "update", seed, "--priority", "66", env=env, store=path).returncode == 0
    )
    text = lantern("review", store=path)
    assert text.returncode == 0, text.stderr
    assert text.stdout.splitlines()[0] == "lantern/review/cli: 1 record, 1 commit"
    assert "      priority: 50 -> 66" in text.stdout.splitlines()
    document = json.loads(lantern("review", "--json", store=path).stdout)
    (branch,) = document["branches"]
    assert branch["ref"] == CLI_BRANCH
    (record,) = branch["records"]
    assert record["id"] == seed and record["change"] == "changed"
    assert record["record"]["priority"] == 66 and record["actors"] == ["cli"]
    assert {"field": "priority", "old": 50, "new": 66} in record["changes"]


def test_a_review_branch_the_store_already_contains_is_not_pending(seeded):
    path, _ = seeded
    with opened(path, review=True) as store:
        store.add("accepted by hand with git", kind="fact")
    git(path, "merge", "-q", "--ff-only", "lantern/review/api")
    with opened(path) as store:
        assert store.review_list().branches == []


# -- the agent's side, over MCP


def _server(store_path: Path, *extra: str):
    from mcp import StdioServerParameters

    env = {
        k: v
        for k, v in os.environ.items()
        if k.startswith(("GIT_", "LANTERN_", "XDG_")) or k in ("HOME", "PATH", "PYTHONPATH")
    }
    return StdioServerParameters(
        command=sys.executable,
        args=["-m", "lantern_git", "mcp", "--store", str(store_path), *extra],
        env=env,
        # Run from the source tree so the server is this checkout's code.
        cwd=str(Path(__file__).resolve().parents[2]),
    )


def _mcp(store_path: Path, body, *extra: str):
    import anyio
    from mcp import Client

    async def main():
        async with Client(_server(store_path, *extra)) as client:
            return await body(client)

    return anyio.run(main)


def test_an_mcp_writer_with_review_gets_pending_in_meta_and_can_only_list(seeded):
    path, _ = seeded
    before = untouched(path)

    async def body(client):
        names = {tool.name for tool in (await client.list_tools()).tools}
        added = await client.call_tool(
            "lantern_memory_add", {"content": "an agent's proposal", "kind": "fact"}
        )
        source = await client.call_tool(
            "lantern_source_add", {"text": "User: a transcript\n", "uri": "session:mcp"}
        )
        assert not source.is_error, source.content[0].text
        listed = await client.call_tool("lantern_review_list", {})
        return names, added, listed

    names, added, listed = _mcp(path, body, "--review")
    assert not added.is_error, added.content[0].text
    assert added.meta["pending"] is True
    assert added.structured_content["content"] == "an agent's proposal"
    assert "lantern_review_list" in names
    assert not any("accept" in n or "reject" in n for n in names)
    (branch,) = listed.structured_content["branches"]
    assert listed.structured_content["next_offset"] is None
    assert branch["name"] == "mcp"
    assert [r["change"] for r in branch["records"]] == ["added"]
    assert [(s["change"], s["manifest"]["uri"]) for s in branch["sources"]] == [
        ("added", "session:mcp")
    ]
    assert untouched(path) == before
    commit = tip(path, "refs/heads/lantern/review/mcp")
    assert parse_trailers(commit.message)["Lantern-Actor"] == ["mcp"]

    async def plain(client):
        return await client.call_tool(
            "lantern_memory_add", {"content": "an ordinary write", "kind": "fact"}
        )

    result = _mcp(path, plain)
    assert not result.is_error and "pending" not in (result.meta or {})
    assert git(path, "rev-parse", "HEAD").strip() != before["head"]


# -- accept and reject


def test_accept_all_brings_the_changes_onto_the_store_branch_in_one_commit(seeded):
    path, seed = seeded
    with opened(path, review=True, review_name="bot", author="Bot <bot@example.com>") as store:
        added = store.add("proposed by the bot", kind="fact")
        store.update(seed, priority=91)
        review_commits = {r.id: r.commits for r in store.review_list().records}
    head = git(path, "rev-parse", "HEAD").strip()
    result = lantern(
        "review",
        "accept",
        "--all",
        "--reason",
        "looks right",
        "--json",
        env=cli_env(LANTERN_AUTHOR="Reviewer <rev@example.com>"),
        store=path,
    )
    assert result.returncode == 0, result.stderr
    decision = json.loads(result.stdout)
    assert decision["op"] == "accept" and sorted(decision["records"]) == sorted([added.id, seed])
    repo = pygit2.Repository(str(path))
    commit = repo[repo.head.target].peel(pygit2.Commit)
    assert str(commit.id) == decision["commit"]
    assert [str(p) for p in commit.parent_ids] == [head]  # one ordinary commit
    assert commit.author.email == "rev@example.com"
    trailers = parse_trailers(commit.message)
    assert trailers["Lantern-Op"] == ["accept"]
    assert sorted(trailers["Lantern-Record"]) == sorted([added.id, seed])
    assert trailers["Lantern-Actor"] == ["cli"]
    assert trailers["Lantern-Reason"] == ["looks right"]
    assert trailers["Lantern-Review-Branch"] == ["lantern/review/bot"]
    assert trailers["Lantern-Review-Actor"] == ["api"]
    assert trailers["Lantern-Review-Author"] == ["Bot <bot@example.com>"]
    assert set(trailers["Lantern-Review-Commit"]) == {
        c for cs in review_commits.values() for c in cs
    }
    # The working tree, .git/index and the listing have it; nothing is pending any more.
    assert git(path, "status", "--porcelain") == ""
    listed = json.loads(lantern("memory", "list", "--json", store=path).stdout)
    assert {r["id"]: r["priority"] for r in listed} == {added.id: 50, seed: 91}
    assert json.loads(lantern("review", "--json", store=path).stdout) == {"branches": []}
    # The bot's own commits stay in the review branch's history.
    assert all(
        repo.descendant_of(pygit2.Oid(hex=decision["review_tip"]), pygit2.Oid(hex=c))
        for cs in review_commits.values()
        for c in cs
    )


def test_accept_some_records_leaves_the_rest_pending_and_merges_a_moved_record(seeded):
    path, seed = seeded
    with opened(path, review=True, review_name="bot") as store:
        kept = store.add("accepted later, or never", kind="fact")
        store.update(seed, urgency=33)
    with opened(path) as store:
        store.update(seed, priority=12)  # a person changes another field meanwhile
    with opened(path, actor="cli") as store:
        decision = store.review_accept([seed[:6]], reason="urgency is right")
    assert decision.records == [seed]
    seed_text = (path / record_path(seed)).read_text()
    assert "priority: 12" in seed_text and "urgency: 33" in seed_text
    assert not (path / record_path(kept.id)).exists()
    with opened(path) as store:
        (branch,) = store.review_list().branches
        assert [(r.id, r.change, r.actors) for r in branch.records] == [(kept.id, "added", ["api"])]
        # The accepted record is no longer pending, and the writer can go on writing.
    with opened(path, review=True, review_name="bot") as store:
        store.update(kept.id, priority=77)
        (branch,) = store.review_list().branches
        assert [r.id for r in branch.records] == [kept.id]
        assert branch.records[0].record.priority == 77
    assert git(path, "status", "--porcelain") == ""


def test_reject_drops_records_from_the_review_branch_with_the_reason(seeded):
    path, seed = seeded
    with opened(path, review=True) as store:
        bad = store.add("a wrong fact", kind="fact")
        store.archive(seed)
    before = untouched(path)
    result = lantern("review", "reject", bad.id[:7], "--reason", "not true", "--json", store=path)
    assert result.returncode == 0, result.stderr
    decision = json.loads(result.stdout)
    assert decision["op"] == "reject" and decision["records"] == [bad.id]
    assert untouched(path) == before  # the store's branch does not change
    commit = tip(path, API_BRANCH)
    assert str(commit.id) == decision["commit"]
    trailers = parse_trailers(commit.message)
    assert trailers["Lantern-Op"] == ["reject"]
    assert trailers["Lantern-Reason"] == ["not true"]
    assert trailers["Lantern-Record"] == [bad.id]
    with opened(path) as store:
        (branch,) = store.review_list().branches
        assert [r.id for r in branch.records] == [seed]
    assert lantern("review", "reject", "--all", store=path).returncode == 0
    assert json.loads(lantern("review", "--json", store=path).stdout) == {"branches": []}


def test_a_writer_cannot_accept_its_own_changes(seeded):
    path, _ = seeded
    env = cli_env(LANTERN_REVIEW="1")
    assert lantern(*add_args("self-serving"), env=env, store=path).returncode == 0
    before = untouched(path)
    branch_before = tip(path, CLI_BRANCH).id
    refused = lantern("review", "accept", "--all", "--json", env=env, store=path)
    assert refused.returncode == 2
    assert json.loads(refused.stderr)["error"]["code"] == "self_approval"
    assert untouched(path) == before and tip(path, CLI_BRANCH).id == branch_before
    # Another writer name is another reviewer: a person accepting as themselves may.
    ok = lantern(
        "review", "accept", "--all", env=cli_env(LANTERN_REVIEW_NAME="raphael"), store=path
    )
    assert ok.returncode == 0, ok.stderr


def test_a_writer_cannot_accept_its_own_changes_by_id_on_the_cli(seeded):
    path, _ = seeded
    env = cli_env(LANTERN_REVIEW="1")
    added = lantern(*add_args("self-serving, by id"), env=env, store=path)
    assert added.returncode == 0, added.stderr
    record = json.loads(added.stdout)["id"]
    before = untouched(path)
    branch_before = tip(path, CLI_BRANCH).id
    for ids in ([record], [record[:6]]):
        refused = lantern("review", "accept", *ids, "--json", env=env, store=path)
        assert refused.returncode == 2, refused.stdout
        assert json.loads(refused.stderr)["error"]["code"] == "self_approval"
        assert untouched(path) == before and tip(path, CLI_BRANCH).id == branch_before
    assert [
        r["id"]
        for r in json.loads(lantern("review", "--json", store=path).stdout)["branches"][0][
            "records"
        ]
    ] == [record]
    # Another reviewer name may accept the same record by id.
    ok = lantern("review", "accept", record, env=cli_env(LANTERN_REVIEW_NAME="raphael"), store=path)
    assert ok.returncode == 0, ok.stderr


def test_a_writer_cannot_accept_its_own_changes_through_the_library(seeded):
    from lantern_git.errors import SelfApproval

    path, _ = seeded
    with opened(path, review=True) as writer:
        record = writer.add("proposed and accepted by the same hand", kind="fact")
        before = untouched(path)
        branch_before = tip(path, API_BRANCH).id
        for ids in ([record.id], None):
            with pytest.raises(SelfApproval, match="a writer never accepts its own changes"):
                writer.review_accept(ids)
            assert untouched(path) == before and tip(path, API_BRANCH).id == branch_before
        (branch,) = writer.review_list().branches
        assert [r.id for r in branch.records] == [record.id]
    with opened(path, review_name="raphael") as person:
        assert person.review_accept([record.id]).records == [record.id]


def test_a_writer_cannot_accept_its_own_pending_source(seeded):
    """A source is written as a record is: the actor that ingested it never accepts it, by
    id or with everything, even with no pending record beside it."""
    from lantern_git.errors import SelfApproval

    path, _ = seeded
    with opened(path, review=True) as writer:
        [pending] = writer.sources.add([SourceInput(b"User: trust me\n", uri="session:self")])
        source_id = pending.manifest.id
        before = untouched(path)
        branch_before = tip(path, API_BRANCH).id
        (branch,) = writer.review_list().branches
        assert ([r.id for r in branch.records], [s.id for s in branch.sources]) == (
            [],
            [source_id],
        )
        for ids in ([source_id], [source_id[:6]], None):
            with pytest.raises(SelfApproval, match="a writer never accepts its own changes"):
                writer.review_accept(ids)
            assert untouched(path) == before and tip(path, API_BRANCH).id == branch_before
    with opened(path, review_name="raphael") as person:
        assert person.review_accept([source_id]).sources == [source_id]


def test_accept_refuses_a_hand_edit_of_a_record_it_would_change_and_changes_nothing(seeded):
    path, seed = seeded
    with opened(path, review=True, review_name="bot") as store:
        store.update(seed, priority=91)
    record_file = path / record_path(seed)
    record_file.write_text(record_file.read_text().replace("the seed record", "edited by hand"))
    bot = "refs/heads/lantern/review/bot"
    before = {**untouched(path), "review": tip(path, bot).id}
    result = lantern("review", "accept", "--all", "--json", store=path)
    assert result.returncode == 1, result.stderr
    error = json.loads(result.stderr.strip().splitlines()[-1])["error"]
    assert error["code"] == "uncommitted_changes"
    assert error["message"].startswith(f"{record_path(seed)} has uncommitted changes")
    assert {**untouched(path), "review": tip(path, bot).id} == before


def test_accept_takes_a_record_whose_file_only_its_group_may_run_as_git_calls_it_clean(seeded):
    """Git counts a file executable by its owner's bit alone: a file its group may run but its
    owner may not is unchanged to git status and to lantern commit, so accept must take it."""
    path, seed = seeded
    with opened(path, review=True, review_name="bot") as store:
        store.update(seed, priority=91)
    (path / record_path(seed)).chmod(0o654)
    assert git(path, "status", "--porcelain") == ""
    with opened(path, review_name="raphael") as person:
        assert person.review_accept([seed]).records == [seed]
    assert "priority: 91" in (path / record_path(seed)).read_text()


def test_accept_refuses_a_fifo_where_a_pending_record_goes_without_waiting_on_it(seeded):
    """Nothing writes to the FIFO: an accept that opened it to compare it would wait forever
    (the CLI's timeout turns that into a failure here)."""
    path, _ = seeded
    with opened(path, review=True, review_name="bot") as store:
        added = store.add("proposed by the bot", kind="fact")
    fifo = path / record_path(added.id)
    fifo.parent.mkdir(parents=True, exist_ok=True)
    os.mkfifo(fifo)
    head = git(path, "rev-parse", "HEAD").strip()
    result = lantern("review", "accept", "--all", "--json", timeout=30, store=path)
    assert result.returncode == 1, result.stderr
    error = json.loads(result.stderr.strip().splitlines()[-1])["error"]
    assert error["code"] == "uncommitted_changes"
    assert record_path(added.id) in error["message"]
    assert git(path, "rev-parse", "HEAD").strip() == head


@pytest.mark.parametrize(
    ("args", "code", "exit_code"),
    [
        (["accept"], "usage_error", 2),
        (["accept", "--all", "0123"], "usage_error", 2),
        (["accept", "ffff"], "not_found", 3),
        (["reject", "xyz!"], "invalid_id", 2),
        (["accept", "--all", "--branch", "no-such"], "not_found", 3),
        (["accept", "--all", "--branch", "../main"], "invalid_review_name", 2),
    ],
)
def test_bad_review_decisions_change_nothing(seeded, args, code, exit_code):
    path, _ = seeded
    with opened(path, review=True) as store:
        store.add("pending", kind="fact")
    before = {**untouched(path), "review": tip(path, API_BRANCH).id}
    result = lantern("review", *args, "--json", store=path)
    assert result.returncode == exit_code, result.stderr
    assert json.loads(result.stderr.strip().splitlines()[-1])["error"]["code"] == code
    assert {**untouched(path), "review": tip(path, API_BRANCH).id} == before


def test_accept_needs_a_branch_when_several_have_changes(seeded):
    path, _ = seeded
    for name in ("one", "two"):
        with opened(path, review=True, review_name=name) as store:
            store.add(f"from {name}", kind="fact")
    result = lantern("review", "accept", "--all", "--json", store=path)
    assert result.returncode == 2
    assert json.loads(result.stderr)["error"]["code"] == "ambiguous_branch"
    assert lantern("review", "accept", "--all", "--branch", "two", store=path).returncode == 0
    with opened(path) as store:
        assert [b.name for b in store.review_list().branches] == ["one"]


@pytest.mark.parametrize(
    "point", ["after-journal", "after-ref", "after-first-file", "after-files", "after-index"]
)
def test_an_accept_killed_at_any_step_leaves_it_all_pending_or_all_accepted(seeded, point):
    path, seed = seeded
    with opened(path, review=True, review_name="bot") as store:
        added = store.add("to be accepted", kind="fact")
        store.update(seed, priority=61)
    head = git(path, "rev-parse", "HEAD").strip()
    killed = lantern("review", "accept", "--all", env=cli_env(LANTERN_FAULT=point), store=path)
    assert killed.returncode == -9
    after = lantern("review", "--json", store=path)
    assert after.returncode == 0, after.stderr
    pending = {r["id"] for b in json.loads(after.stdout)["branches"] for r in b["records"]}
    now = git(path, "rev-parse", "HEAD").strip()
    if now == head:
        # before the store's branch moved: all still pending, the files as they were
        assert pending == {added.id, seed}
        assert not (path / record_path(added.id)).exists()
    else:
        assert pending == set()
        assert (path / record_path(added.id)).exists()
        assert "priority: 61" in (path / record_path(seed)).read_text()
    assert git(path, "status", "--porcelain") == ""
    assert not (path / ".lantern" / "journal.json").exists()
    # Whatever was left, accepting again finishes the job.
    if pending:
        again = lantern("review", "accept", "--all", store=path)
        assert again.returncode == 0, again.stderr
    assert json.loads(lantern("review", "--json", store=path).stdout) == {"branches": []}
    assert "priority: 61" in (path / record_path(seed)).read_text()


# -- --include-pending


def test_list_and_show_include_pending_records_marked_pending(seeded):
    path, seed = seeded
    with opened(path) as store:
        gone = store.add("removed on the review branch", kind="fact")
    with opened(path, review=True) as store:
        added = store.add("a pending fact", kind="fact", priority=99)
        store.update(seed, priority=1)
        store.delete(gone.id)
    plain = json.loads(lantern("memory", "list", "--json", store=path).stdout)
    assert {r["id"] for r in plain} == {seed, gone.id}
    assert all("pending" not in r for r in plain)
    result = lantern("memory", "list", "--include-pending", "--json", store=path)
    assert result.returncode == 0, result.stderr
    listed = json.loads(result.stdout)
    # In the list's order, as if accepted: the pending add first (priority 99), the seed last.
    assert [(r["id"], r.get("pending")) for r in listed] == [(added.id, True), (seed, True)]
    assert listed[1]["priority"] == 1
    limited = json.loads(
        lantern(
            "memory", "list", "--include-pending", "--min-priority", "50", "--json", store=path
        ).stdout
    )
    assert [r["id"] for r in limited] == [added.id]
    shown = json.loads(
        lantern("memory", "show", added.id[:8], "--include-pending", "--json", store=path).stdout
    )
    assert shown["pending"] is True and shown["content"] == "a pending fact"
    assert lantern("memory", "show", added.id, "--json", store=path).returncode == 3
    # A record no review branch touched is shown as it is, without the mark.
    with opened(path) as store:
        other = store.add("untouched by review", kind="fact")
    plain_show = json.loads(
        lantern("memory", "show", other.id, "--include-pending", "--json", store=path).stdout
    )
    assert "pending" not in plain_show
    removed = lantern("memory", "show", gone.id, "--include-pending", "--json", store=path)
    assert removed.returncode == 3
    refused = lantern(
        "memory", "list", "--include-pending", "--query", "fact", "--json", store=path
    )
    assert refused.returncode == 2


def test_an_mcp_server_follows_lantern_review_from_its_environment(seeded, monkeypatch):
    path, _ = seeded
    monkeypatch.setenv("LANTERN_REVIEW", "1")
    monkeypatch.setenv("LANTERN_REVIEW_NAME", "assistant")

    async def body(client):
        return await client.call_tool(
            "lantern_memory_add", {"content": "proposed over mcp", "kind": "fact"}
        )

    result = _mcp(path, body)
    assert not result.is_error, result.content[0].text
    assert result.meta["pending"] is True
    assert tip(path, "refs/heads/lantern/review/assistant") is not None


def test_lantern_commit_is_refused_in_review_mode(seeded):
    """Hand edits are made on the store's branch: committed to a review branch they could undo
    a pending change unseen, so review mode refuses lantern commit and writes nothing."""
    path, seed = seeded
    record_file = path / record_path(seed)
    record_file.write_text(record_file.read_text().replace("priority: 50", "priority: 51"))
    before = untouched(path)
    with opened(path, review=True) as store, pytest.raises(InvalidInput) as err:
        store.commit_hand_edits()
    assert err.value.code == "review_mode"
    assert err.value.message.startswith("lantern commit is not available in review mode")
    assert untouched(path) == before and tip(path, API_BRANCH) is None
    out = lantern("commit", env=cli_env(LANTERN_REVIEW="1"), store=path)
    assert out.returncode == 2 and "review mode" in out.stderr
    assert untouched(path) == before


def _ops(path: Path, ref: str, since: str) -> list[str]:
    repo = pygit2.Repository(str(path))
    ops = []
    for commit in repo.walk(tip(path, ref).id):
        if str(commit.id) == since:
            break
        ops.append(parse_trailers(commit.message)["Lantern-Op"][0])
    return ops


def test_edit_import_revert_and_source_writes_work_in_review_mode_on_the_pending_version(seeded):
    """memory edit, import, revert, source append and source remove read what they change as
    the review branch has it and commit there; the store's branch and files stay untouched."""
    path, seed = seeded
    with opened(path) as store:
        [source] = store.sources.add([SourceInput(b"User: hello\n", uri="session:main")])
        other = store.add("a person's record", kind="fact")
        store.update(other.id, priority=90)  # the commit revert undoes below
    head = git(path, "rev-parse", "HEAD").strip()
    before = untouched(path)
    with opened(path, review=True) as store:
        # memory edit: starts from the pending version, commits to the review branch.
        store.update(seed, priority=70)
        session = store.begin_edit(seed[:6])
        assert "priority: 70" in session.original_text
        edited = store.apply_edit(
            seed,
            session.original_text,
            session.original_text.replace("priority: 70", "priority: 71"),
        )
        session.close()
        assert edited.priority == 71
        # import: a record the review branch added counts as present.
        pending = store.add("proposed before the import", kind="fact")
        lines = [
            json.dumps(pending.to_dict()) + "\n",
            json.dumps({"kind": "fact", "content": "imported in review mode"}) + "\n",
        ]
        imported = store.import_records(lines)
        assert (imported.imported, imported.skipped) == (1, 1)
        # revert: of a commit on the store's branch, on top of the record's pending version.
        store.update(other.id, urgency=20)
        reverted = store.revert(head)
        assert reverted.records == [other.id]
        # source append twice: the second grows the first's pending version.
        store.sources.append(source.manifest.id[:6], "User: one\n")
        appended = store.sources.append(source.manifest.id, "User: two\n")
        assert appended.manifest.lines == 3
        # source remove: of a source only the review branch has, found by its prefix.
        [extra] = store.sources.add([SourceInput(b"scratch\n", uri="session:scratch")])
        store.sources.remove(extra.manifest.id[:6])
    assert untouched(path) == before
    assert _ops(path, API_BRANCH, head) == [
        "remove", "ingest", "append", "append", "revert", "update",
        "import", "add", "edit", "update",
    ]  # fmt: skip
    assert "priority: 71" in (text_on(path, API_BRANCH, seed) or "")
    branch_other = text_on(path, API_BRANCH, other.id) or ""
    assert "priority: 50" in branch_other and "urgency: 20" in branch_other
    repo = pygit2.Repository(str(path))
    body = repo.revparse_single(
        f"lantern/review/api:sources/{source.manifest.id[:2]}/{source.manifest.id}.txt"
    )
    assert body.data == b"User: hello\nUser: one\nUser: two\n"
    with opened(path) as store:
        (branch,) = store.review_list().branches
        assert [(s.id, s.change) for s in branch.sources] == [(source.manifest.id, "changed")]
        assert {r.id for r in branch.records} == {seed, other.id, pending.id, *imported.ids}
    # Accepted, the source's new version and the records reach the store's branch.
    accepted = lantern(
        "review", "accept", "--all", env=cli_env(LANTERN_REVIEW_NAME="ana"), store=path
    )
    assert accepted.returncode == 0, accepted.stderr
    assert (path / "sources" / source.manifest.id[:2] / f"{source.manifest.id}.txt").read_bytes()
    assert git(path, "status", "--porcelain") == ""


def test_search_include_pending_scores_records_as_they_would_be_once_accepted(seeded):
    path, seed = seeded
    with opened(path) as store:
        gone = store.add("a lantern record the review deletes", kind="fact")
        store.add("lantern unrelated words", kind="fact")
    with opened(path, review=True) as store:
        added = store.add("a pending lantern lantern note", kind="fact")
        newer = store.supersede(seed, "the seed record, now about a lantern", kind="fact")
        store.delete(gone.id)

    def search(*extra: str) -> list[dict]:
        result = lantern("memory", "search", "lantern", *extra, "--json", store=path)
        assert result.returncode == 0, result.stderr
        return json.loads(result.stdout)

    plain = search()
    assert gone.id in {r["id"] for r in plain} and added.id not in {r["id"] for r in plain}
    assert all("pending" not in r for r in plain)
    pending = search("--include-pending")
    found = {r["id"]: r for r in pending}
    assert found[added.id]["pending"] is True and found[newer.id]["pending"] is True
    assert gone.id not in found
    # The same hits, scores and order that a plain search gives once everything is accepted
    # (from a freshly built index: deleted documents still weigh in an updated one's BM25).
    accepted = lantern("review", "accept", "--all", store=path)
    assert accepted.returncode == 0, accepted.stderr
    assert lantern("index", "rebuild", store=path).returncode == 0
    after = search()
    assert [(r["id"], r["score"]) for r in pending] == [(r["id"], r["score"]) for r in after]
    assert all("pending" not in r for r in after)


def test_search_include_pending_with_filters_and_bad_input(seeded):
    path, _ = seeded
    with opened(path, review=True) as store:
        added = store.add("a pending fact about lanterns", kind="fact", priority=99)
        store.add("a pending preference about lanterns", kind="preference", priority=10)
    with opened(path) as store:
        hits = store.search("lanterns", include_pending=True, kinds=("fact",), limit=1)
        assert [(h.record.id, h.record.to_dict()["pending"]) for h in hits] == [(added.id, True)]
        assert store.search("lanterns", include_pending=True, min_priority=50, offset=1) == []
        with pytest.raises(InvalidInput) as err:
            store.search("  ", include_pending=True)
        assert err.value.code == "invalid_query"
    bad = lantern("memory", "search", "lanterns", "--include-pending", "--kind", "nope", store=path)
    assert bad.returncode == 2


def test_search_include_pending_pages_are_slices_of_the_whole_ranking(seeded):
    path, _ = seeded
    with opened(path) as store:
        store.add("lantern on the store's branch", kind="fact")
    with opened(path, review=True) as store:
        for text in ("lantern lantern lantern", "lantern lantern here", "one lantern among words"):
            store.add(text, kind="fact")
    with opened(path) as store:
        whole = [(h.record.id, h.score) for h in store.search("lantern", include_pending=True)]
        assert len(whole) == 4 and len({score for _, score in whole}) == 4, whole
        hits = store.search("lantern", include_pending=True)
        assert sum(1 for h in hits if h.record.to_dict().get("pending")) == 3
        for limit in (1, 2, 3):
            for offset in range(0, 6):
                page = store.search("lantern", include_pending=True, limit=limit, offset=offset)
                assert [(h.record.id, h.score) for h in page] == whole[offset : offset + limit], (
                    limit,
                    offset,
                )


def test_mcp_list_search_and_show_take_include_pending_and_mark_pending_records(seeded):
    path, seed = seeded

    async def body(client):
        added = await client.call_tool(
            "lantern_memory_add", {"content": "an agent's lantern note", "kind": "fact"}
        )
        new_id = added.structured_content["id"]
        calls = {
            "list": ("lantern_memory_list", {}),
            "list_pending": ("lantern_memory_list", {"include_pending": True}),
            "list_fields": (
                "lantern_memory_list",
                {"include_pending": True, "fields": ["id", "content"]},
            ),
            "search": ("lantern_memory_search", {"query": "lantern"}),
            "search_pending": (
                "lantern_memory_search",
                {"query": "lantern", "include_pending": True},
            ),
            "show": ("lantern_memory_show", {"id": new_id}),
            "show_pending": ("lantern_memory_show", {"id": new_id[:6], "include_pending": True}),
            "show_seed": ("lantern_memory_show", {"id": seed, "include_pending": True}),
            "bad": ("lantern_memory_list", {"include_pending": "yes"}),
        }
        results = {k: await client.call_tool(name, args) for k, (name, args) in calls.items()}
        return new_id, results

    before = untouched(path)
    new_id, out = _mcp(path, body, "--review")
    assert untouched(path) == before  # the write went to the review branch, the reads wrote none
    for name in ("list", "list_pending", "list_fields", "search", "search_pending", "show_seed"):
        assert not out[name].is_error, (name, out[name].content[0].text)
    assert [r["id"] for r in out["list"].structured_content["records"]] == [seed]
    assert {
        (r["id"], r.get("pending")) for r in out["list_pending"].structured_content["records"]
    } == {(seed, None), (new_id, True)}
    assert {
        (r["id"], r.get("pending")) for r in out["list_fields"].structured_content["records"]
    } == {(seed, None), (new_id, True)}
    assert out["search"].structured_content["records"] == []
    [hit] = out["search_pending"].structured_content["records"]
    assert hit["id"] == new_id and hit["pending"] is True and hit["score"] > 0
    assert out["show"].is_error and out["show"].structured_content["error"]["code"] == "not_found"
    shown = out["show_pending"].structured_content
    assert not out["show_pending"].is_error and shown["pending"] is True
    assert "pending" not in out["show_seed"].structured_content
    assert out["bad"].is_error
    error = out["bad"].structured_content["error"]
    assert error["code"] == "invalid_field" and "include_pending" in error["message"]


def test_an_agent_proposes_over_mcp_and_a_person_accepts_two_and_rejects_one(seeded):
    """The issue's session: an agent writes three memories over MCP with --review; a person
    reviews them with the CLI; history says who wrote and who accepted each."""
    path, seed = seeded
    agent = "Agent <agent@example.org>"
    person = "Ana Reviewer <ana@example.org>"
    contents = ["the build uses uv", "tests run with pytest -q", "the moon is cheese"]

    async def propose(client):
        added = [
            await client.call_tool("lantern_memory_add", {"content": c, "kind": "fact"})
            for c in contents
        ]
        view = await client.call_tool("lantern_memory_list", {"include_pending": True})
        return added, view

    added, view = _mcp(path, propose, "--review", "--author", agent)
    assert all(not a.is_error and a.meta["pending"] is True for a in added)
    ids = [a.structured_content["id"] for a in added]
    # The agent's view before review: its three proposals, marked, beside the seed.
    assert {(r["id"], r.get("pending")) for r in view.structured_content["records"]} == {
        (seed, None),
        *((i, True) for i in ids),
    }
    listed = lantern("review", store=path)
    assert listed.returncode == 0, listed.stderr
    assert "lantern/review/mcp: 3 records" in listed.stdout
    assert all(i[:7] in listed.stdout for i in ids) and agent in listed.stdout

    as_person = cli_env(LANTERN_AUTHOR=person)
    accepted = lantern(
        "review", "accept", ids[0], ids[1], "--reason", "true", env=as_person, store=path
    )
    assert accepted.returncode == 0, accepted.stderr
    rejected = lantern(
        "review", "reject", ids[2], "--reason", "not true", env=as_person, store=path
    )
    assert rejected.returncode == 0, rejected.stderr
    assert json.loads(lantern("review", "--json", store=path).stdout) == {"branches": []}

    # git log of the store's branch: the person accepted both, the agent is named as their writer.
    log = git(path, "log", "-1", "--format=%an <%ae>%n%B")
    assert log.startswith(person)
    trailers = parse_trailers(log)
    assert trailers["Lantern-Op"] == ["accept"]
    assert sorted(trailers["Lantern-Record"]) == sorted(ids[:2])
    assert trailers["Lantern-Review-Actor"] == ["mcp"]
    assert trailers["Lantern-Review-Author"] == [agent]
    # The review branch: the agent's three commits, and the person's reject with its reason.
    branch = "lantern/review/mcp"
    authors = git(path, "log", "--format=%an <%ae>", branch).splitlines()
    reject = git(path, "log", "-1", "--format=%B", branch)
    assert parse_trailers(reject)["Lantern-Op"] == ["reject"]
    assert parse_trailers(reject)["Lantern-Record"] == [ids[2]]
    assert parse_trailers(reject)["Lantern-Reason"] == ["not true"]
    assert authors[0] == person and authors.count(agent) == 3

    async def read(client):
        return await client.call_tool("lantern_memory_list", {})

    after = _mcp(path, read, "--review", "--author", agent)
    # The normal view after: the two accepted, unmarked; the rejected one is not there.
    assert {(r["id"], r.get("pending")) for r in after.structured_content["records"]} == {
        (seed, None),
        (ids[0], None),
        (ids[1], None),
    }


# -- review branches travel with lantern sync --review-branches


def _remote_review_refs(remote: Path) -> list[str]:
    return git(remote, "for-each-ref", "--format=%(refname)", "refs/heads/lantern").split()


def test_review_branches_travel_with_sync_and_a_person_elsewhere_decides(tmp_path):
    """The issue's session across hosts: an agent on host A writes in review mode and syncs
    with --review-branches; a person on host B syncs, reviews, accepts two (one merged with a
    change B made meanwhile, listed), rejects one and syncs back; host A's branches follow,
    and what A proposed meanwhile is merged record by record, not lost."""
    from support.sync import clone_host, first_host, make_remote

    remote = make_remote(tmp_path)
    a = first_host(tmp_path, remote, "a")
    seed = a.add("the seed record").id
    a.sync()
    b = clone_host(tmp_path, remote, "b")
    with opened(a.path, review=True, review_name="agent") as agent:
        keep = agent.add("the build uses uv", kind="fact")
        drop = agent.add("the moon is cheese", kind="fact")
        agent.update(seed, priority=80)
    # Without the flag, review branches stay home.
    a.sync()
    assert _remote_review_refs(remote) == []
    report = a.store.sync(review_branches=True).to_dict()
    assert report["review_branches"] == [
        {
            "name": "agent",
            "how": "ahead",
            "merge_commit": None,
            "merged": [],
            "merged_sources": [],
            "pushed": True,
        }
    ]
    assert _remote_review_refs(remote) == ["refs/heads/lantern/review/agent"]

    # Host B: a person changes the seed's priority, then fetches the agent's proposals.
    b.store.update(seed, priority=12)
    fetched = lantern("sync", "--review-branches", "--json", store=b.path)
    assert fetched.returncode == 0, fetched.stderr
    (branch,) = json.loads(fetched.stdout)["review_branches"]
    assert (branch["name"], branch["how"]) == ("agent", "created")
    listed = lantern("review", "--json", store=b.path)
    (pending,) = json.loads(listed.stdout)["branches"]
    assert {r["id"] for r in pending["records"]} == {keep.id, drop.id, seed}
    as_person = cli_env(LANTERN_AUTHOR="Ana <ana@example.org>")
    accepted = lantern("review", "accept", keep.id, seed, "--json", env=as_person, store=b.path)
    assert accepted.returncode == 0, accepted.stderr
    decision = json.loads(accepted.stdout)
    # The seed's pending priority met the person's: merged field by field, and listed.
    (merged,) = decision["merged"]
    assert merged["id"] == seed
    priority = next(f for f in merged["fields"] if f["field"] == "priority")
    assert (priority["store"], priority["pending"]) == (12, 80)
    text = lantern("review", "--json", store=b.path)
    assert [r["id"] for r in json.loads(text.stdout)["branches"][0]["records"]] == [drop.id]
    rejected = lantern(
        "review", "reject", drop.id, "--reason", "not true", env=as_person, store=b.path
    )
    assert rejected.returncode == 0, rejected.stderr
    accept_commit = git(b.path, "log", "-1", "--format=%B", "HEAD^{/^accept}")
    assert f"Lantern-Review-Merged: {seed} (priority" in accept_commit
    assert lantern("sync", "--review-branches", store=b.path).returncode == 0

    # Host A meanwhile proposed one more record: its review branch and B's merge.
    with opened(a.path, review=True, review_name="agent") as agent:
        later = agent.add("proposed while the person reviewed", kind="fact")
    back = a.store.sync(review_branches=True).to_dict()
    (branch,) = back["review_branches"]
    assert branch["how"] == "merged" and branch["pushed"] is True
    assert back["fast_forward"] is True
    with opened(a.path) as store:
        ids = {r.id for r in store.list()}
        assert ids == {seed, keep.id}
        assert store.get(seed).priority == priority["merged"]
        (left,) = store.review_list().branches
        assert [r.id for r in left.records] == [later.id]
    assert git(a.path, "status", "--porcelain") == ""
    # B gets A's merge of the review branch: both hosts agree on it.
    assert lantern("sync", "--review-branches", store=b.path).returncode == 0
    assert git(a.path, "rev-parse", "lantern/review/agent") == git(
        b.path, "rev-parse", "lantern/review/agent"
    )
    assert git(remote, "rev-parse", "lantern/review/agent") == git(
        a.path, "rev-parse", "lantern/review/agent"
    )


def test_sync_review_branches_from_lantern_yaml_and_a_bad_value(tmp_path):
    from support.sync import first_host, make_remote

    remote = make_remote(tmp_path)
    a = first_host(tmp_path, remote, "a")
    with open(a.path / "lantern.yaml", "a") as handle:
        handle.write("sync_review_branches: true\n")
    git(a.path, "commit", "-qam", "carry review branches")
    with opened(a.path, review=True, review_name="agent") as agent:
        agent.add("pending on host a", kind="fact")
    with opened(a.path) as store:
        store.sync()
    assert _remote_review_refs(remote) == ["refs/heads/lantern/review/agent"]
    # --no-review-branches overrides the store's setting for one run.
    with opened(a.path, review=True, review_name="agent") as agent:
        agent.add("another pending record", kind="fact")
    tip_before = git(remote, "rev-parse", "lantern/review/agent")
    assert lantern("sync", "--no-review-branches", store=a.path).returncode == 0
    assert git(remote, "rev-parse", "lantern/review/agent") == tip_before
    (a.path / "lantern.yaml").write_text("format: 1\nsync_review_branches: sometimes\n")
    git(a.path, "commit", "-qam", "a bad value")
    bad = lantern("sync", "--json", store=a.path)
    assert bad.returncode == 2
    assert json.loads(bad.stderr)["error"]["code"] == "invalid_review"


@pytest.mark.parametrize("point", ["after-journal", "after-ref"])
@pytest.mark.parametrize("diverged", [False, True])
def test_a_review_branch_sync_killed_at_any_step_is_completed_or_rolled_back(
    tmp_path, point, diverged
):
    """A review branch moved by sync (created, or merged when both hosts wrote to it) goes
    through the journal: killed at each step, the ref is the old or the new one, and the next
    sync finishes the job."""
    from support.sync import clone_host, first_host, make_remote

    remote = make_remote(tmp_path)
    a = first_host(tmp_path, remote, "a")
    b = clone_host(tmp_path, remote, "b")
    with opened(a.path, review=True, review_name="agent") as agent:
        first = agent.add("proposed on host a", kind="fact")
    a.store.sync(review_branches=True)
    if diverged:
        b.store.sync(review_branches=True)
        with opened(a.path, review=True, review_name="agent") as agent:
            agent.add("a second proposal on host a", kind="fact")
        a.store.sync(review_branches=True)
        with opened(b.path, review=True, review_name="agent") as agent:
            agent.add("a proposal on host b", kind="fact")
    old = tip(b.path, "refs/heads/lantern/review/agent")
    killed = lantern("sync", "--review-branches", env=cli_env(LANTERN_FAULT=point), store=b.path)
    assert killed.returncode == -9, killed.stderr
    now = tip(b.path, "refs/heads/lantern/review/agent")
    moved = (now.id if now else None) != (old.id if old else None)
    assert moved == (point == "after-ref")
    after = lantern("review", "--json", store=b.path)
    assert after.returncode == 0, after.stderr
    assert "interrupted sync on lantern/review/agent" in after.stderr
    assert not (b.path / ".lantern" / "journal.json").exists()
    again = lantern("sync", "--review-branches", store=b.path)
    assert again.returncode == 0, again.stderr
    pending = {
        r["id"]
        for br in json.loads(lantern("review", "--json", store=b.path).stdout)["branches"]
        for r in br["records"]
    }
    assert first.id in pending and len(pending) == (3 if diverged else 1)
    assert git(b.path, "status", "--porcelain") == ""


# -- pending sources


def test_pending_sources_are_listed_carried_by_an_accept_dropped_by_a_reject_and_verify(seeded):
    """A source ingested in review mode waits on the review branch with the records; a record
    citing it pins the branch's body, an accept of the record carries the source along, and
    verify then says ok."""
    path, _ = seeded
    with opened(path, review=True, review_name="agent") as agent:
        [cited] = agent.sources.add(
            [SourceInput(b"User: we ship on Fridays\nAssistant: noted\n", uri="session:1")]
        )
        [other] = agent.sources.add([SourceInput(b"User: unrelated\n", uri="session:2")])
        source_id = cited.manifest.id
        record = agent.add(
            "we ship on Fridays", kind="fact", source_refs=[f"source:{source_id}#L1"]
        )
        # Re-ingesting what the branch has is seen as unchanged there, not added again.
        [again] = agent.sources.add(
            [SourceInput(b"User: we ship on Fridays\nAssistant: noted\n", uri="session:1")]
        )
        assert again.status == "unchanged"
    pinned = record.source_refs[0]
    assert pinned.startswith(f"source:{source_id}@") and pinned.endswith("#L1")
    assert (path / "sources").exists() is False  # the working tree has no source yet
    listed = lantern("review", "--json", store=path)
    (branch,) = json.loads(listed.stdout)["branches"]
    assert [(s["id"], s["change"]) for s in branch["sources"]] == sorted(
        [(source_id, "added"), (other.manifest.id, "added")]
    )
    assert {s["manifest"]["uri"] for s in branch["sources"]} == {"session:1", "session:2"}
    text = lantern("review", store=path).stdout
    assert "2 sources" in text.splitlines()[0] and f"source {source_id}" in text

    rejected = lantern("review", "reject", other.manifest.id[:8], "--json", store=path)
    assert rejected.returncode == 0, rejected.stderr
    assert json.loads(rejected.stdout)["sources"] == [other.manifest.id]
    accepted = lantern("review", "accept", record.id, "--json", store=path)
    assert accepted.returncode == 0, accepted.stderr
    decision = json.loads(accepted.stdout)
    assert decision["records"] == [record.id] and decision["sources"] == [source_id]
    trailers = parse_trailers(git(path, "log", "-1", "--format=%B"))
    assert trailers["Lantern-Source"] == [source_id]
    verified = lantern("verify", "--json", store=path)
    assert verified.returncode == 0, verified.stdout + verified.stderr
    assert json.loads(verified.stdout)["ok"] is True
    assert json.loads(verified.stdout)["checked"] == 1
    assert json.loads(lantern("review", "--json", store=path).stdout) == {"branches": []}
    assert not (path / "sources" / other.manifest.id[:2]).exists()
    assert git(path, "status", "--porcelain") == ""


def test_text_csv_and_show_output_mark_pending_records(seeded):
    """--include-pending in a table: a first column P holds "*" on each pending row; CSV and
    TSV get a pending column of true/false; show says pending: yes."""
    path, seed = seeded
    with opened(path, review=True) as store:
        added = store.add("a pending seed note", kind="fact")
    table = lantern("memory", "list", "--include-pending", store=path).stdout.splitlines()
    assert table[0].startswith("P  ID")
    assert [line[:1] for line in table[1:]] == ["*", " "]  # the pending add first (newest)
    hits = lantern("memory", "search", "seed", "--include-pending", store=path).stdout.splitlines()
    assert hits[0].startswith("P  SCORE  ID")
    marked = [line for line in hits[1:] if line.startswith("*")]
    assert len(marked) == 1 and added.id[:7] in marked[0]
    assert any(seed[:7] in line and not line.startswith("*") for line in hits[1:])
    fields = lantern("memory", "list", "--include-pending", "--fields", "id,content", store=path)
    assert fields.stdout.splitlines()[0].split() == ["P", "ID", "CONTENT"]
    csv_out = lantern(
        "memory", "list", "--include-pending", "--csv", store=path
    ).stdout.splitlines()
    assert csv_out[0].endswith(",pending")
    assert {line.split(",")[0]: line.rsplit(",", 1)[1] for line in csv_out[1:]} == {
        added.id: "true",
        seed: "false",
    }
    # Without pending records, or without the flag, the output is as before.
    plain = lantern("memory", "list", store=path).stdout.splitlines()
    assert plain[0].startswith("ID") and "P" not in plain[0].split()[:1]
    shown = lantern("memory", "show", added.id, "--include-pending", store=path).stdout
    assert "pending:       yes: awaits review" in shown


@pytest.mark.parametrize("point", ["after-journal", "after-ref"])
@pytest.mark.parametrize("op", ["import", "revert", "append", "remove"])
def test_a_review_mode_write_of_the_converted_writers_killed_is_completed_or_rolled_back(
    seeded, op, point
):
    """import, revert, source append and source remove in review mode take the review
    branch's journaled path: killed before its ref moves nothing is pending, after it the
    write is there; the store's branch and files are untouched either way."""
    path, seed = seeded
    added = lantern("source", "add", "-", "--uri", "crash:seed", input="User: hi\n", store=path)
    assert added.returncode == 0, added.stderr
    source_id = json.loads(lantern("source", "list", "--json", store=path).stdout)[0]["id"]
    assert lantern("memory", "archive", seed, store=path).returncode == 0
    args, stdin = {
        "import": (["import", "-"], json.dumps({"kind": "fact", "content": "imported"}) + "\n"),
        "revert": (["revert", "HEAD"], None),
        "append": (["source", "append", source_id, "-"], "User: more\n"),
        "remove": (["source", "remove", source_id], None),
    }[op]
    before = untouched(path)
    killed = lantern(
        *args, env=cli_env(LANTERN_REVIEW="1", LANTERN_FAULT=point), input=stdin, store=path
    )
    assert killed.returncode == -9, killed.stderr
    after = lantern("review", "--json", store=path)
    assert after.returncode == 0, after.stderr
    done = "completed" if point == "after-ref" else "rolled back"
    assert f"lantern: {done} an interrupted {op} on lantern/review/cli" in after.stderr
    branches = json.loads(after.stdout)["branches"]
    assert bool(branches) == (point == "after-ref")
    assert untouched(path) == before
    assert not (path / ".lantern" / "journal.json").exists()


def test_cli_output_of_source_import_and_revert_writes_in_review_mode_says_pending(seeded):
    path, seed = seeded
    assert lantern("memory", "archive", seed, store=path).returncode == 0
    env = cli_env(LANTERN_REVIEW="1")
    added = lantern("source", "add", "-", "--uri", "s:1", env=env, input="User: hi\n", store=path)
    assert added.returncode == 0, added.stderr
    assert added.stdout.startswith("added (pending review) ")
    [source] = json.loads(
        lantern(
            "source", "add", "-", "--uri", "s:2", "--json", env=env, input="x\n", store=path
        ).stdout
    )
    assert source["pending"] is True
    appended = lantern(
        "source", "append", source["id"], "-", "--json", env=env, input="y\n", store=path
    )
    assert json.loads(appended.stdout)["pending"] is True
    removed = lantern("source", "remove", source["id"], env=env, store=path)
    assert removed.stdout.startswith("removed (pending review) ")
    line = json.dumps({"kind": "fact", "content": "imported"}) + "\n"
    imported = lantern("import", "-", "--json", env=env, input=line, store=path)
    assert json.loads(imported.stdout)["pending"] is True
    reverted = lantern("revert", "HEAD", env=env, store=path)
    assert reverted.stdout.startswith("reverted (pending review) "), reverted.stderr
    # The same writes without review mode say nothing of it.
    plain = lantern("import", "-", "--json", input=line, store=path)
    assert "pending" not in json.loads(plain.stdout)


def _commit_file_on(path: Path, ref: str, name: str, data: bytes) -> None:
    """A plain-git commit of one file on ``ref`` (not a record: no lantern merge covers it)."""
    repo = pygit2.Repository(str(path))
    tip = repo.references[ref].peel(pygit2.Commit)
    builder = repo.TreeBuilder(tip.tree)
    builder.insert(name, repo.create_blob(data), pygit2.GIT_FILEMODE_BLOB)
    who = pygit2.Signature("someone", "someone@example.org")
    repo.create_commit(ref, who, who, f"edit {name}", builder.write(), [tip.id])


def test_a_review_branch_sync_cannot_merge_says_what_it_left_and_what_it_did(tmp_path):
    """Both hosts changed a non-record file on the same review branch: sync stops with
    merge_conflict naming the branch and the file, leaves that branch as it was, and says the
    store's branch was merged here but not pushed (not "nothing was changed")."""
    from support.sync import clone_host, first_host, make_remote

    remote = make_remote(tmp_path)
    a = first_host(tmp_path, remote, "a")
    with opened(a.path, review=True, review_name="agent") as agent:
        agent.add("the build uses uv", kind="fact")
    a.store.sync(review_branches=True)
    b = clone_host(tmp_path, remote, "b")
    b.store.sync(review_branches=True)
    ref = "refs/heads/lantern/review/agent"
    _commit_file_on(a.path, ref, "notes.txt", b"from a\n")
    a.add("a record on a's main branch")
    a.store.sync(review_branches=True)
    _commit_file_on(b.path, ref, "notes.txt", b"from b\n")
    before = git(b.path, "rev-parse", ref).strip()
    with pytest.raises(GitError) as caught:
        b.store.sync(review_branches=True)
    assert caught.value.code == "merge_conflict"
    message = caught.value.message
    assert "lantern/review/agent" in message and "notes.txt" in message
    assert "not pushed" in message and "nothing was changed" not in message
    assert git(b.path, "rev-parse", ref).strip() == before
    # The store's branch did take a's record.
    assert "a record on a's main branch" in [r.content for r in b.store.list()]
