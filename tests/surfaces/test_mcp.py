"""``lantern mcp`` as a real subprocess on a real store, driven by the SDK's own stdio client."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import subprocess
import sys
from pathlib import Path

import anyio
import jsonschema
import pytest
from mcp.shared.exceptions import MCPError
from support.cli import lantern
from support.mcp import fail, ok, run, schema_checked_calls
from support.stores import colliding_contents, git, snapshot

from lantern_git.core.fields import KINDS, RECORD_KEYS, STATUSES

TOOL_NAMES = {
    "lantern_memory_add",
    "lantern_memory_list",
    "lantern_memory_archive",
    "lantern_memory_show",
    "lantern_memory_search",
    "lantern_memory_similar",
    "lantern_memory_dupes",
    "lantern_memory_supersede",
    "lantern_memory_update",
    "lantern_memory_restore",
    "lantern_memory_history",
    "lantern_memory_delete",
    "lantern_diff",
    "lantern_revert",
    "lantern_status",
    "lantern_source_add",
    "lantern_source_append",
    "lantern_source_list",
    "lantern_source_show",
    "lantern_source_search",
    "lantern_verify",
    "lantern_review_list",
    "lantern_entity_list",
    "lantern_entity_show",
    "lantern_entity_add",
    "lantern_entity_update",
}
READ_ONLY = {
    "lantern_memory_show",
    "lantern_memory_list",
    "lantern_memory_search",
    "lantern_memory_similar",
    "lantern_memory_dupes",
    "lantern_memory_history",
    "lantern_diff",
    "lantern_status",
    "lantern_source_list",
    "lantern_source_show",
    "lantern_source_search",
    "lantern_verify",
    "lantern_review_list",
    "lantern_entity_list",
    "lantern_entity_show",
}
CLI = (sys.executable, "-m", "lantern_git")
EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "agent_policy.py"


def cli_json(*args, store_path) -> object:
    result = lantern(*args, "--json", "--store", str(store_path))
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def cli_error(*args, store_path) -> tuple[int, dict]:
    result = lantern(*args, "--json", "--store", str(store_path))
    assert result.stdout == ""
    return result.returncode, json.loads(result.stderr.strip().splitlines()[-1])["error"]


def commit_messages(store_path, count: int) -> list[str]:
    out = git(store_path, "log", f"-{count}", "--format=%B%x00")
    return [m.strip() for m in out.split("\0") if m.strip()]


# ---------------------------------------------------------------------------- tools and schemas


def test_tools_are_listed_with_typed_schemas_and_hints(store_path):
    async def body(client):
        return (await client.list_tools()).tools

    tools = {t.name: t for t in run(body)(store_path)}
    assert set(tools) == TOOL_NAMES
    validator = jsonschema.Draft202012Validator
    for name, tool in tools.items():
        schema = tool.input_schema
        validator.check_schema(schema)
        validator.check_schema(tool.output_schema)
        assert schema["type"] == "object"
        assert schema["additionalProperties"] is False
        for prop, spec in schema["properties"].items():
            assert "type" in spec, f"{name}.{prop} has no type"
        assert len(tool.description) > 80
        hints = tool.annotations
        assert hints.read_only_hint is (name in READ_ONLY)
        assert hints.open_world_hint is False
        if name in READ_ONLY:
            assert hints.destructive_hint is False

    add = tools["lantern_memory_add"].input_schema
    assert set(add["required"]) == {"content", "kind"}
    assert add["properties"]["kind"]["enum"] == list(KINDS)
    priority = add["properties"]["priority"]
    assert (priority["type"], priority["minimum"], priority["maximum"]) == ("integer", 0, 100)
    assert priority["default"] == 50
    assert add["properties"]["confidence"]["maximum"] == 1.0
    listing = tools["lantern_memory_list"].input_schema["properties"]
    assert listing["status"]["enum"] == [*STATUSES, "all"]
    assert listing["limit"]["maximum"] == 500
    assert listing["fields"]["items"]["enum"] == list(RECORD_KEYS)
    search = tools["lantern_memory_search"].input_schema
    assert search["required"] == ["query"]
    assert "score" in search["properties"]["fields"]["items"]["enum"]
    assert (
        "active first, then priority desc, urgency desc" in tools["lantern_memory_list"].description
    )

    # The hints an agent's client uses to decide what needs a confirmation or may be retried.
    add_hints = tools["lantern_memory_add"].annotations
    assert (add_hints.destructive_hint, add_hints.idempotent_hint) == (False, True)
    archive = tools["lantern_memory_archive"].annotations
    assert (archive.destructive_hint, archive.idempotent_hint) == (True, True)
    supersede = tools["lantern_memory_supersede"].annotations
    assert (supersede.destructive_hint, supersede.idempotent_hint) == (True, False)
    delete = tools["lantern_memory_delete"].annotations
    assert (delete.destructive_hint, delete.idempotent_hint) == (True, False)
    assert "must not be kept" in tools["lantern_memory_delete"].description

    # A client can refuse a bad call before sending it.
    good = {"content": "Ana likes tea", "kind": "preference", "scope": "user:ana"}
    validator(add).validate(good)
    for bad in ({**good, "priority": 150}, {**good, "kind": "mood"}, {**good, "colour": 1}):
        assert list(validator(add).iter_errors(bad))


# ---------------------------------------------------------------------------- round trip


def test_add_list_supersede_archive_history_round_trip(store_path):
    head_before = git(store_path, "rev-parse", "HEAD").strip()

    async def body(client):
        seen = {}
        tea = await ok(
            client,
            "lantern_memory_add",
            content="Ana prefers tea in the morning.",
            kind="preference",
            scope="user:ana",
            priority=80,
            source_refs=["session:1"],
            reason="she said so",
        )
        seen["tea"] = tea
        seen["again"] = await client.call_tool(
            "lantern_memory_add",
            {
                "content": "Ana  prefers tea in the morning. ",
                "kind": "preference",
                "scope": "user:ana",
            },
        )
        seen["goal"] = await ok(
            client, "lantern_memory_add", content="Ship lantern 0.1", kind="goal", urgency=70
        )
        seen["list1"] = await ok(client, "lantern_memory_list")
        seen["coffee"] = await ok(
            client,
            "lantern_memory_supersede",
            id=tea["id"][:6],
            content="Ana prefers coffee in the morning now.",
            reason="changed her mind",
        )
        seen["old"] = await ok(client, "lantern_memory_show", id=tea["id"])
        archived = await client.call_tool(
            "lantern_memory_archive", {"id": seen["coffee"]["id"], "reason": "moved away"}
        )
        seen["archived"] = archived
        seen["archived_again"] = await client.call_tool(
            "lantern_memory_archive", {"id": seen["coffee"]["id"]}
        )
        seen["list2"] = await ok(client, "lantern_memory_list", status="all")
        seen["restored"] = await ok(client, "lantern_memory_restore", id=seen["coffee"]["id"])
        seen["updated"] = await ok(
            client,
            "lantern_memory_update",
            id=seen["coffee"]["id"],
            priority=90,
            expires_at="2031-01-01",
            add_source_refs=["session:2"],
        )
        seen["cleared"] = await ok(
            client, "lantern_memory_update", id=seen["coffee"]["id"], expires_at=None
        )
        seen["history"] = await ok(client, "lantern_memory_history", id=seen["coffee"]["id"])
        seen["old_history"] = await ok(client, "lantern_memory_history", id=tea["id"])
        seen["final"] = await ok(client, "lantern_memory_list", status="all")
        return seen

    seen = run(body)(store_path)
    tea, goal, coffee = seen["tea"], seen["goal"], seen["coffee"]
    assert list(tea) == list(RECORD_KEYS)
    assert tea["priority"] == 80 and tea["source_refs"] == ["session:1"]
    # The same kind+scope+content again is the same record, and no commit.
    assert seen["again"].structured_content == tea
    assert seen["again"].meta.get("lantern/commit") is None

    assert [r["id"] for r in seen["list1"]["records"]] == [tea["id"], goal["id"]]
    assert seen["list1"]["next_offset"] is None

    assert coffee["supersedes_id"] == tea["id"]
    assert (coffee["scope"], coffee["kind"], coffee["priority"]) == ("user:ana", "preference", 80)
    assert seen["old"]["status"] == "superseded"
    assert seen["archived"].structured_content["status"] == "archived"
    assert seen["archived"].meta["lantern/commit"] is not None
    assert seen["archived_again"].meta.get("lantern/commit") is None
    statuses = {r["id"]: r["status"] for r in seen["list2"]["records"]}
    assert statuses == {goal["id"]: "active", coffee["id"]: "archived", tea["id"]: "superseded"}
    assert seen["restored"]["status"] == "active"
    assert seen["updated"]["priority"] == 90
    assert seen["updated"]["expires_at"] == 1924992000
    assert seen["updated"]["source_refs"] == ["session:2"]
    assert seen["cleared"]["expires_at"] is None

    history = seen["history"]
    assert history["id"] == coffee["id"]
    entries = history["history"]
    assert [e["op"] for e in entries] == [
        "update",
        "update",
        "restore",
        "archive",
        "supersede",
    ]
    assert {e["actor"] for e in entries} == {"mcp"}
    assert entries[3]["reason"] == "moved away"
    assert entries[4]["reason"] == "changed her mind"
    assert [e["op"] for e in seen["old_history"]["history"]] == ["supersede", "add"]
    # The same entries as the CLI's history of that record.
    # The same entries as the CLI's history of that record, in one page.
    page = {"offset": 0, "limit": 50, "next_offset": None}
    cli = cli_json("memory", "history", coffee["id"], store_path=store_path)
    assert seen["history"] == {**cli, **page}

    # Every write made one commit with the mcp actor; the tree is clean.
    messages = git(store_path, "log", "--format=%B%x00", f"{head_before}..HEAD").split("\0")
    messages = [m.strip() for m in messages if m.strip()]
    assert len(messages) == 7
    assert all("Lantern-Actor: mcp" in m for m in messages)
    assert "Lantern-Reason: she said so" in messages[-1]
    assert git(store_path, "status", "--porcelain") == ""
    # The CLI reads back exactly the record objects the tools returned.
    assert cli_json("memory", "show", goal["id"], store_path=store_path) == goal
    listed = cli_json("memory", "list", "--status", "all", store_path=store_path)
    assert listed == seen["final"]["records"]


def test_legacy_handshake_clients_get_the_same_objects(store_path):
    async def body(client):
        added = await ok(client, "lantern_memory_add", content="A fact", kind="fact")
        listed = await ok(client, "lantern_memory_list", fields=["id", "content"])
        return added, listed

    added, listed = run(body)(store_path, legacy=True)
    assert added == cli_json("memory", "show", added["id"], store_path=store_path)
    assert listed["records"] == [{"id": added["id"], "content": "A fact"}]


# ---------------------------------------------------------------------------- paging


def test_list_and_search_page_with_limit_offset_and_fields(store_path):
    contents = [f"note {i} about lanterns" for i in range(7)]

    async def body(client):
        for i, content in enumerate(contents):
            await ok(client, "lantern_memory_add", content=content, kind="fact", priority=10 + i)
        pages, offset = [], 0
        while offset is not None:
            page = await ok(client, "lantern_memory_list", limit=3, offset=offset)
            pages.append(page)
            offset = page["next_offset"]
        slim = await ok(client, "lantern_memory_list", limit=2, fields=["priority", "id"])
        found, offset = [], 0
        while offset is not None:
            page = await ok(
                client,
                "lantern_memory_search",
                query="lanterns",
                limit=4,
                offset=offset,
                fields=["id", "score"],
            )
            found.extend(page["records"])
            offset = page["next_offset"]
        return pages, slim, found

    pages, slim, found = run(body)(store_path)
    assert [len(p["records"]) for p in pages] == [3, 3, 1]
    assert [(p["offset"], p["next_offset"]) for p in pages] == [(0, 3), (3, 6), (6, None)]
    paged = [r for p in pages for r in p["records"]]
    assert paged == cli_json("memory", "list", store_path=store_path)
    assert [r["priority"] for r in paged] == [16, 15, 14, 13, 12, 11, 10]
    # Only the chosen fields, in the record object's order.
    assert slim["records"] == [{"id": r["id"], "priority": r["priority"]} for r in paged[:2]]
    assert slim["next_offset"] == 2
    assert all(list(r) == ["id", "score"] for r in found)
    full_search = cli_json("memory", "search", "lanterns", store_path=store_path)
    assert [(r["id"], r["score"]) for r in found] == [(r["id"], r["score"]) for r in full_search]


# ---------------------------------------------------------------------------- errors


# (tool, MCP arguments, the same request on the command line, expected code)
ERROR_CASES = [
    (
        "lantern_memory_add",
        {"content": "x", "kind": "fact", "priority": 150},
        ["memory", "add", "x", "--kind", "fact", "--priority", "150"],
        "invalid_field",
    ),
    (
        "lantern_memory_add",
        {"content": "x", "kind": "mood"},
        ["memory", "add", "x", "--kind", "mood"],
        "invalid_field",
    ),
    (
        "lantern_memory_add",
        {"content": "   ", "kind": "fact"},
        ["memory", "add", "   ", "--kind", "fact"],
        "invalid_field",
    ),
    (
        "lantern_memory_add",
        {"content": "x", "kind": "fact", "scope": "user ana"},
        ["memory", "add", "x", "--kind", "fact", "--scope", "user ana"],
        "invalid_field",
    ),
    (
        "lantern_memory_add",
        {"content": "x", "kind": "fact", "confidence": 1.5},
        ["memory", "add", "x", "--kind", "fact", "--confidence", "1.5"],
        "invalid_field",
    ),
    (
        "lantern_memory_add",
        {"content": "x", "kind": "fact", "expires_at": "next tuesday"},
        ["memory", "add", "x", "--kind", "fact", "--expires-at", "next tuesday"],
        "invalid_time",
    ),
    ("lantern_memory_show", {"id": "abcd1234"}, ["memory", "show", "abcd1234"], "not_found"),
    ("lantern_memory_show", {"id": "xyz!"}, ["memory", "show", "xyz!"], "invalid_id"),
    ("lantern_memory_show", {"id": "ab"}, ["memory", "show", "ab"], "invalid_id"),
    ("lantern_memory_history", {"id": "abcd"}, ["memory", "history", "abcd"], "not_found"),
    (
        "lantern_memory_archive",
        {"id": "{superseded}"},
        ["memory", "archive", "{superseded}"],
        "invalid_state",
    ),
    (
        "lantern_memory_supersede",
        {"id": "{active}", "content": "Active record."},
        ["memory", "supersede", "{active}", "Active record."],
        "identical_content",
    ),
    (
        "lantern_memory_supersede",
        {"id": "{superseded}", "content": "Another."},
        ["memory", "supersede", "{superseded}", "Another."],
        "invalid_state",
    ),
    (
        "lantern_memory_update",
        {"id": "{active}"},
        ["memory", "update", "{active}"],
        "nothing_to_update",
    ),
    (
        "lantern_memory_update",
        {"id": "{active}", "urgency": -1},
        ["memory", "update", "{active}", "--urgency", "-1"],
        "invalid_field",
    ),
    (
        "lantern_memory_restore",
        {"id": "{ambiguous}"},
        ["memory", "restore", "{ambiguous}"],
        "ambiguous_id",
    ),
    (
        "lantern_memory_show",
        {"id": "{ambiguous}"},
        ["memory", "show", "{ambiguous}"],
        "ambiguous_id",
    ),
    (
        "lantern_memory_list",
        {"status": "deleted"},
        ["memory", "list", "--status", "deleted"],
        "invalid_field",
    ),
    (
        "lantern_memory_list",
        {"min_priority": 101},
        ["memory", "list", "--min-priority", "101"],
        "invalid_field",
    ),
    (
        "lantern_memory_list",
        {"kind": ["mood"]},
        ["memory", "list", "--kind", "mood"],
        "invalid_field",
    ),
    ("lantern_memory_search", {"query": "  "}, ["memory", "search", "  "], "invalid_query"),
    (
        "lantern_memory_delete",
        {"id": "{ambiguous}"},
        ["memory", "delete", "{ambiguous}"],
        "ambiguous_id",
    ),
    (
        "lantern_memory_show",
        {"id": "{active}", "at": "no-such-rev"},
        ["memory", "show", "{active}", "--at", "no-such-rev"],
        "invalid_at",
    ),
    ("lantern_diff", {"from": "no-such-rev"}, ["diff", "no-such-rev"], "invalid_at"),
    ("lantern_revert", {"commit": "no-such-rev"}, ["revert", "no-such-rev"], "invalid_revision"),
    (
        "lantern_memory_delete",
        {"id": "0123456789abcdef"},
        ["memory", "delete", "0123456789abcdef"],
        "not_found",
    ),
]


@pytest.fixture
def error_store(store_path):
    """A store with an active, a superseded and two records sharing an id prefix."""
    first, second = colliding_contents()
    ids = {}
    for content in (first, second, "Active record.", "Old record."):
        ids[content] = cli_json("memory", "add", content, "--kind", "fact", store_path=store_path)[
            "id"
        ]
    cli_json("memory", "supersede", ids["Old record."], "New record.", store_path=store_path)
    names = {
        "{active}": ids["Active record."],
        "{superseded}": ids["Old record."],
        "{ambiguous}": ids[first][:4],
    }
    return store_path, names


def _fill(value, names):
    if isinstance(value, str):
        return names.get(value, value)
    if isinstance(value, dict):
        return {k: _fill(v, names) for k, v in value.items()}
    if isinstance(value, list):
        return [_fill(v, names) for v in value]
    return value


def test_errors_match_the_cli_and_change_nothing(error_store):
    store_path, names = error_store
    before = snapshot(store_path)

    async def body(client):
        errors = []
        for tool, arguments, _, _ in ERROR_CASES:
            errors.append(await fail(client, tool, **_fill(arguments, names)))
        return errors

    errors = run(body)(store_path)
    assert snapshot(store_path) == before
    for (tool, _, cli_args, code), error in zip(ERROR_CASES, errors):
        exit_code, cli = cli_error(*_fill(cli_args, names), store_path=store_path)
        assert error == cli, tool
        assert error["code"] == code, (tool, error)
        assert exit_code in (2, 3)
    assert snapshot(store_path) == before


def test_malformed_calls_are_tool_errors_that_change_nothing(error_store):
    store_path, names = error_store
    before = snapshot(store_path)

    async def body(client):
        out = {
            "unknown": await fail(client, "lantern_memory_add", content="x", kind="fact", colour=1),
            "missing": await fail(client, "lantern_memory_add", content="x"),
            "type": await fail(
                client, "lantern_memory_add", content="x", kind="fact", priority="high"
            ),
            "bool": await fail(
                client, "lantern_memory_add", content="x", kind="fact", urgency=True
            ),
            "items": await fail(client, "lantern_memory_list", kind=[1]),
            "limit": await fail(client, "lantern_memory_list", limit=501),
            "negative": await fail(client, "lantern_memory_list", limit=-1),
            "offset": await fail(client, "lantern_memory_list", offset=-1),
            "fields": await fail(client, "lantern_memory_list", fields=["id", "colour"]),
            "score": await fail(client, "lantern_memory_list", fields=["score"]),
        }
        with pytest.raises(MCPError) as raised:
            await client.call_tool("lantern_memory_purge", {"id": names["{active}"]})
        out["tool"] = raised.value.message
        # A lone string where a list is expected means a list of one.
        out["lenient"] = await ok(client, "lantern_memory_list", kind="fact", fields=["kind"])
        # 3.0 is the integer 3 in JSON.
        out["integral"] = await ok(client, "lantern_memory_list", limit=3.0)
        return out

    out = run(body)(store_path)
    assert snapshot(store_path) == before
    assert out["unknown"]["code"] == "usage_error" and "colour" in out["unknown"]["message"]
    assert out["missing"] == {"code": "usage_error", "message": "kind: is required"}
    assert out["type"]["message"] == "priority: must be an integer, got the string 'high'"
    assert out["bool"]["message"] == "urgency: must be an integer, got true"
    assert out["items"]["message"].startswith("kind[0]: must be a string")
    assert out["limit"]["message"] == "limit: must be between 1 and 500, or 0 for no limit; got 501"
    assert out["negative"] == {
        "code": "usage_error",
        "message": "limit: must be 0 or more (0: no limit); got -1",
    }
    assert out["offset"] == {"code": "usage_error", "message": "offset: must be 0 or more; got -1"}
    assert "'colour' is not a field" in out["fields"]["message"]
    assert "'score' is not a field" in out["score"]["message"]
    assert "lantern_memory_purge" in out["tool"]
    assert {r["kind"] for r in out["lenient"]["records"]} == {"fact"}
    assert out["integral"]["limit"] == 3


# ---------------------------------------------------------------------------- concurrency


def test_concurrent_tool_calls_lose_nothing(store_path):
    count_before = int(git(store_path, "rev-list", "--count", "HEAD"))

    async def body(client):
        adds = [
            client.call_tool("lantern_memory_add", {"content": f"parallel {i}", "kind": "fact"})
            for i in range(10)
        ]
        # The same record from two calls at once is still one record and one commit.
        twice = {"content": "said twice", "kind": "fact"}
        adds += [client.call_tool("lantern_memory_add", twice) for _ in range(2)]
        reads = [client.call_tool("lantern_memory_list", {"limit": 500}) for _ in range(4)]
        results = await asyncio.gather(*adds, *reads)
        listed = await ok(client, "lantern_memory_list", limit=500)
        return results, listed

    results, listed = run(body)(store_path)
    assert not any(r.is_error for r in results)
    added = results[:12]
    assert added[10].structured_content == added[11].structured_content
    ids = {r.structured_content["id"] for r in added}
    assert len(ids) == 11
    assert {r["id"] for r in listed["records"]} == ids
    assert int(git(store_path, "rev-list", "--count", "HEAD")) == count_before + 11
    assert git(store_path, "rev-list", "--merges", "HEAD") == ""
    assert git(store_path, "status", "--porcelain") == ""
    assert all("Lantern-Actor: mcp" in m for m in commit_messages(store_path, 11))


def test_the_server_answers_pings_and_reads_while_a_write_waits(store_path):
    """Quick reads run on the server's event loop, writes in a worker thread: a write that
    waits (here for the store's lock, held by this test) must not stop the server from
    answering a ping, nor leave a read that arrives meanwhile holding the loop."""
    from lantern_git.workspace.lock import WriterLock

    lock = WriterLock(str(Path(store_path) / ".lantern" / "lock"), timeout=5)

    async def body(client):
        await ok(client, "lantern_memory_add", content="Before the lock was taken.", kind="fact")
        await ok(client, "lantern_memory_list")  # the store is open: reads run on the loop
        done: dict[str, object] = {}

        async def call(name, tool, arguments):
            done[name] = await client.call_tool(tool, arguments)

        with contextlib.ExitStack() as held:
            lock.acquire()
            held.callback(lock.release)
            async with anyio.create_task_group() as group:
                added = {"content": "Written once the lock is free.", "kind": "fact"}
                group.start_soon(call, "add", "lantern_memory_add", added)
                await anyio.sleep(0.5)  # the add is sent first, and waits for the lock
                group.start_soon(call, "list", "lantern_memory_list", {})
                await anyio.sleep(0.2)
                with anyio.fail_after(3):
                    await client.send_ping()
                assert done == {}, "the add waits for the lock, and the list behind the add"
                held.close()
        return done

    # Ping is a legacy-protocol request (the newest protocol dropped it).
    done = run(body)(store_path, legacy=True)
    assert not done["add"].is_error and not done["list"].is_error
    assert "Written once the lock is free." in [
        r["content"] for r in done["list"].structured_content["records"]
    ]


def test_server_and_cli_writing_at_once_lose_nothing(store_path):
    count_before = int(git(store_path, "rev-list", "--count", "HEAD"))

    async def body(client):
        env = dict(os.environ)
        options = ("--kind", "fact", "--json", "--store", str(store_path))
        procs = [
            subprocess.Popen(
                [*CLI, "memory", "add", f"from cli {i}", *options],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                env=env,
            )
            for i in range(4)
        ]
        results = await asyncio.gather(
            *(
                client.call_tool("lantern_memory_add", {"content": f"from mcp {i}", "kind": "fact"})
                for i in range(6)
            )
        )
        codes = [await anyio.to_thread.run_sync(lambda p=p: p.wait(timeout=120)) for p in procs]
        for p in procs:
            p.stdout.close()
            p.stderr.close()
        listed = await ok(client, "lantern_memory_list", fields=["content"])
        return results, codes, listed

    results, codes, listed = run(body)(store_path)
    assert codes == [0, 0, 0, 0]
    assert not any(r.is_error for r in results)
    contents = {r["content"] for r in listed["records"]}
    assert contents == {f"from cli {i}" for i in range(4)} | {f"from mcp {i}" for i in range(6)}
    assert int(git(store_path, "rev-list", "--count", "HEAD")) == count_before + 10
    actors = [m.rsplit("Lantern-Actor: ", 1)[1].split()[0] for m in commit_messages(store_path, 10)]
    assert sorted(actors) == ["cli"] * 4 + ["mcp"] * 6
    assert git(store_path, "status", "--porcelain") == ""


# ---------------------------------------------------------------------------- a long-lived server


def test_long_lived_server_sees_cli_hand_and_pull_changes(store_path, tmp_path):
    clone = tmp_path / "clone"

    async def body(client):
        seen = {}
        seen["empty"] = await ok(client, "lantern_memory_list")
        cli_added = cli_json(
            "memory", "add", "Written by the CLI", "--kind", "fact", store_path=store_path
        )
        seen["after_cli"] = await ok(client, "lantern_memory_list")
        seen["search_cli"] = await ok(client, "lantern_memory_search", query="written")

        mine = await ok(client, "lantern_memory_add", content="Written over MCP", kind="fact")
        seen["cli_sees"] = cli_json("memory", "list", store_path=store_path)

        # A hand edit, committed with git: the next call sees the new priority.
        path = store_path / "memory" / cli_added["id"][:2] / f"{cli_added['id']}.md"
        path.write_text(path.read_text().replace("priority: 50", "priority: 95"))
        git(store_path, "commit", "-qam", "raise priority by hand")
        seen["hand_show"] = await ok(client, "lantern_memory_show", id=cli_added["id"])
        seen["hand_list"] = await ok(client, "lantern_memory_list", fields=["id", "priority"])

        # Another host's record arrives with a plain git pull.
        git(tmp_path, "clone", "-q", str(store_path), str(clone))
        cli_json("memory", "add", "Written on the laptop", "--kind", "fact", store_path=clone)
        git(store_path, "pull", "-q", "--ff-only", str(clone), "main")
        seen["pulled"] = await ok(client, "lantern_memory_search", query="laptop")

        # The derived index can be rebuilt or thrown away under a running server.
        cli_json("index", "rebuild", store_path=store_path)
        seen["rebuilt"] = await ok(client, "lantern_memory_list", fields=["id"])
        import shutil

        shutil.rmtree(store_path / ".lantern" / "index")
        seen["deleted"] = await ok(client, "lantern_memory_list", fields=["id"])
        seen["ids"] = (cli_added["id"], mine["id"])
        return seen

    seen = run(body)(store_path)
    cli_id, mcp_id = seen["ids"]
    assert seen["empty"]["records"] == []
    assert [r["id"] for r in seen["after_cli"]["records"]] == [cli_id]
    assert [r["id"] for r in seen["search_cli"]["records"]] == [cli_id]
    assert {r["id"] for r in seen["cli_sees"]} == {cli_id, mcp_id}
    assert seen["hand_show"]["priority"] == 95
    assert seen["hand_list"]["records"][0] == {"id": cli_id, "priority": 95}
    assert [r["content"] for r in seen["pulled"]["records"]] == ["Written on the laptop"]
    assert len(seen["rebuilt"]["records"]) == 3
    assert seen["deleted"]["records"] == seen["rebuilt"]["records"]
    assert git(store_path, "status", "--porcelain") == ""


def test_a_hand_broken_file_is_skipped_by_list_and_reported_by_show(store_path):
    good = cli_json("memory", "add", "Still fine", "--kind", "fact", store_path=store_path)
    broken = store_path / "memory" / "ab" / "abcdef0123456789.md"
    broken.parent.mkdir(parents=True)
    broken.write_text("---\nid: abcdef0123456789\nkind: mood\n---\nBroken by hand\n")
    before = snapshot(store_path)

    async def body(client):
        result = await client.call_tool("lantern_memory_list", {"fields": ["id"]})
        shown = await fail(client, "lantern_memory_show", id="abcdef01")
        archived = await fail(client, "lantern_memory_archive", id="abcdef01")
        return result, shown, archived

    result, shown, archived = run(body)(store_path)
    assert result.structured_content["records"] == [{"id": good["id"]}]
    # The agent is told what was skipped, as the CLI tells its user on stderr.
    [warning] = result.meta["lantern/warnings"]
    assert warning.startswith("warning: skipped memory/ab/abcdef0123456789.md:")
    assert shown["code"] == "invalid_record" and "abcdef0123456789.md:" in shown["message"]
    assert archived == shown
    assert cli_error("memory", "show", "abcdef01", store_path=store_path) == (1, shown)
    # Lantern never overwrites a file it cannot parse.
    assert snapshot(store_path) == before


# ---------------------------------------------------------------------------- the command


def test_mcp_refuses_a_folder_that_is_not_a_store(tmp_path):
    result = lantern("mcp", "--store", str(tmp_path / "nothing"), input="", timeout=30)
    assert result.returncode == 1
    assert "not a lantern store" in result.stderr
    assert result.stdout == ""


def test_mcp_names_its_store_and_author_on_stderr(store_path):
    result = lantern("mcp", "--store", str(store_path), input="", timeout=30)
    assert result.returncode == 0, result.stderr
    # support.env's identity (GIT_AUTHOR_NAME and GIT_AUTHOR_EMAIL) is named.
    named = f"lantern mcp: serving {store_path} as Test Author <author@example.com>"
    assert named in result.stderr.splitlines()
    result = lantern(
        "mcp", "--store", str(store_path), "--author", "Ana <ana@example.org>", input="", timeout=30
    )
    assert f"lantern mcp: serving {store_path} as Ana <ana@example.org>" in result.stderr
    assert result.stdout == ""


def test_status_tool_answers_what_lantern_status_json_prints(store_path):
    lantern("memory", "add", "Ana likes tea", "--kind", "preference", "--store", str(store_path))
    # A CLI write leaves indexing to the next command, whose status says it built the index:
    # that first status settles it, and the two answers after it are of the same store.
    assert cli_json("status", store_path=store_path)["index"] == "rebuilt"
    expected = cli_json("status", store_path=store_path)

    async def body(client):
        return await ok(client, "lantern_status")

    assert run(body)(store_path) == expected
    assert expected["records"] == 1


def test_a_bare_scope_word_suggests_its_prefix_pattern(store_path):
    async def body(client):
        return await fail(client, "lantern_memory_list", scope=["user"])

    error = run(body)(store_path)
    assert error["code"] == "invalid_field"
    assert error["message"].endswith("did you mean --scope 'user:*'?")
    # The same message the CLI gives.
    assert cli_error("memory", "list", "--scope", "user", store_path=store_path) == (2, error)


def test_other_commands_do_not_import_mcp(store_path):
    code = (
        "import sys\n"
        "from lantern_git.cli import cli\n"
        f"cli.main(['memory', 'list', '--json', '--store', {str(store_path)!r}],"
        " standalone_mode=False)\n"
        "cli.main(['mcp', '--help'], standalone_mode=False)\n"
        "import lantern_git.mcp.server\n"
        "print(sorted(m for m in sys.modules if m == 'mcp' or m.startswith('mcp.')))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().splitlines()[-1] == "[]"


def test_agent_policy_example_runs(store_path):
    for content, priority, urgency, confidence in (
        ("Ana prefers short answers.", 90, 0, 1.0),
        ("Ana's deploy is due Friday.", 60, 95, 1.0),
        ("Ana might like Rust.", 70, 0, 0.3),
        ("Ana uses vim.", 20, 0, 1.0),
    ):
        cli_json(
            "memory",
            "add",
            content,
            "--kind",
            "fact",
            "--scope",
            "user:ana",
            "--priority",
            str(priority),
            "--urgency",
            str(urgency),
            "--confidence",
            str(confidence),
            store_path=store_path,
        )
    cli_json(
        "memory",
        "add",
        "Bo likes jazz.",
        "--kind",
        "fact",
        "--scope",
        "user:bo",
        store_path=store_path,
    )
    before = snapshot(store_path)
    options = ("--store", str(store_path), "--scope", "user:ana", "--top", "2", "--json")
    result = subprocess.run(
        [sys.executable, str(EXAMPLE), *options],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    chosen = json.loads(result.stdout)
    # Urgency outweighs priority in this agent's policy; low confidence is dropped; other
    # scopes never appear.
    assert [c["content"] for c in chosen] == [
        "Ana's deploy is due Friday.",
        "Ana prefers short answers.",
    ]
    assert all("weight" in c for c in chosen)
    assert snapshot(store_path) == before


# ---------------------------------------------------------------------------- one description


def test_schemas_come_from_the_field_table_and_the_librarys_defaults():
    import inspect

    from lantern_git.core.fields import FIELDS
    from lantern_git.mcp.server import TOOLS_BY_NAME
    from lantern_git.model.record import SCOPE_RE
    from lantern_git.store import Store

    add = TOOLS_BY_NAME["lantern_memory_add"].input_schema["properties"]
    library = inspect.signature(Store.add).parameters
    for name in ("scope", "priority", "urgency", "confidence"):
        assert add[name]["default"] == library[name].default == FIELDS[name].default
    # The scope an agent is told to send is the one the library accepts.
    assert add["scope"]["pattern"] == f"^({SCOPE_RE.pattern})$"
    for name in ("lantern_memory_add", "lantern_memory_supersede", "lantern_memory_update"):
        properties = TOOLS_BY_NAME[name].input_schema["properties"]
        for field, spec in properties.items():
            if field in FIELDS and FIELDS[field].minimum is not None:
                assert spec["minimum"] == FIELDS[field].minimum, (name, field)
    record_properties = TOOLS_BY_NAME["lantern_memory_add"].output_schema["properties"]
    assert list(record_properties) == list(RECORD_KEYS)
    # show adds only the mark a record read with include_pending carries (docs/review.md).
    shown = TOOLS_BY_NAME["lantern_memory_show"].output_schema
    assert list(shown["properties"]) == [*RECORD_KEYS, "pending"]
    assert shown["required"] == list(RECORD_KEYS)


def test_every_answer_matches_its_output_schema_and_none_clears_an_expiry(store_path):
    call = schema_checked_calls(store_path)

    old = call(
        "lantern_memory_add",
        content="Ana likes tea.",
        kind="preference",
        scope="user:ana",
        expires_at="+7d",
        source_refs=["session:1"],
    )
    assert isinstance(old["expires_at"], int)
    new = call("lantern_memory_supersede", id=old["id"], content="Ana likes green tea.")
    assert new["supersedes_id"] == old["id"] and new["expires_at"] is None
    assert call("lantern_memory_update", id=new["id"], expires_at="2030-01-01")["expires_at"]
    assert call("lantern_memory_update", id=new["id"], expires_at=" None ")["expires_at"] is None
    call("lantern_memory_update", id=new["id"], expires_at=1900000000)
    assert call("lantern_memory_update", id=new["id"], expires_at=None)["expires_at"] is None
    listed = call("lantern_memory_list", status="all", scope="user:*")
    assert [r["id"] for r in listed["records"]] == [new["id"], old["id"]]
    hits = call("lantern_memory_search", query="tea", status="all", fields=["id", "score"])
    assert {h["id"] for h in hits["records"]} == {old["id"], new["id"]}
    call("lantern_memory_show", id=new["id"][:6])
    call("lantern_memory_archive", id=new["id"])
    call("lantern_memory_restore", id=new["id"])
    history = call("lantern_memory_history", id=old["id"][:6])
    assert history["id"] == old["id"] and history["history"][0]["op"] == "supersede"
    assert call("lantern_memory_show", id=new["id"], at="HEAD~1")["id"] == new["id"]
    assert call("lantern_diff", **{"from": "HEAD~2"})["worktree"] is True
    reverted = call("lantern_revert", commit="HEAD")
    assert reverted["commit"] is not None
    deleted = call("lantern_memory_delete", id=old["id"][:6], reason="stored by mistake")
    assert deleted["record"]["id"] == old["id"]
    assert call("lantern_diff", **{"from": "HEAD~1", "to": "HEAD"})["removed"][0]["id"] == old["id"]


def test_delete_removes_the_file_in_one_commit_and_history_keeps_it(store_path):
    keep = cli_json("memory", "add", "Keep this.", "--kind", "fact", store_path=store_path)
    secret = cli_json(
        "memory", "add", "The door code is 4711.", "--kind", "fact", store_path=store_path
    )
    head_before = git(store_path, "rev-parse", "HEAD").strip()

    async def body(client):
        deleted = await client.call_tool(
            "lantern_memory_delete", {"id": secret["id"][:6], "reason": "stored by mistake"}
        )
        again = await fail(client, "lantern_memory_delete", id=secret["id"])
        listed = await ok(client, "lantern_memory_list", fields=["id"])
        history = await ok(client, "lantern_memory_history", id=secret["id"])
        return deleted, again, listed, history

    deleted, again, listed, history = run(body)(store_path)
    assert not deleted.is_error
    assert deleted.structured_content == {
        "id": secret["id"],
        "commit": git(store_path, "rev-parse", "HEAD").strip(),
        "record": secret,
    }
    assert deleted.meta["lantern/commit"] == deleted.structured_content["commit"]
    assert again == {"code": "not_found", "message": f"no record with id {secret['id']}"}
    assert listed["records"] == [{"id": keep["id"]}]
    assert [e["op"] for e in history["history"]] == ["delete", "add"]
    assert not (store_path / "memory" / secret["id"][:2] / f"{secret['id']}.md").exists()
    [message] = commit_messages(store_path, 1)
    assert message.splitlines()[0] == f"delete {secret['id']}"
    assert "4711" not in message
    assert f"Lantern-Record: {secret['id']}" in message
    assert "Lantern-Op: delete" in message and "Lantern-Actor: mcp" in message
    assert int(git(store_path, "rev-list", "--count", f"{head_before}..HEAD")) == 1
    assert git(store_path, "status", "--porcelain") == ""


def test_show_at_diff_and_revert_answer_what_the_cli_answers(store_path):
    record = cli_json("memory", "add", "Ship Friday.", "--kind", "goal", store_path=store_path)
    cli_json("memory", "update", record["id"], "--priority", "80", store_path=store_path)
    raised = git(store_path, "rev-parse", "HEAD").strip()
    cli_json("memory", "update", record["id"], "--urgency", "40", store_path=store_path)
    cli_json("memory", "update", record["id"], "--urgency", "45", store_path=store_path)
    urgent = git(store_path, "rev-parse", "HEAD~1").strip()

    async def body(client):
        seen = {}
        seen["then"] = await ok(client, "lantern_memory_show", id=record["id"][:6], at="HEAD~3")
        seen["diff"] = await ok(client, "lantern_diff", **{"from": "HEAD~3", "to": "HEAD"})
        seen["conflict"] = await fail(client, "lantern_revert", commit=urgent)
        reverted = await client.call_tool(
            "lantern_revert", {"commit": raised, "reason": "too high"}
        )
        seen["reverted"] = reverted
        seen["again"] = await ok(client, "lantern_revert", commit=raised)
        seen["now"] = await ok(client, "lantern_memory_show", id=record["id"])
        seen["worktree"] = await ok(client, "lantern_diff")
        return seen

    seen = run(body)(store_path)
    assert seen["then"] == record
    assert seen["diff"] == cli_json("diff", "HEAD~4", "HEAD~1", store_path=store_path)
    fields = {c["field"] for c in seen["diff"]["changed"][0]["changes"]}
    assert {"priority", "urgency"} <= fields
    assert seen["conflict"]["code"] == "revert_conflict"
    assert "urgency changed again" in seen["conflict"]["message"]
    reverted = seen["reverted"]
    assert not reverted.is_error
    assert reverted.structured_content["reverted"] == raised
    assert reverted.meta["lantern/commit"] == git(store_path, "rev-parse", "HEAD").strip()
    assert seen["again"]["commit"] is None
    assert (seen["now"]["priority"], seen["now"]["urgency"]) == (50, 45)
    assert seen["worktree"]["worktree"] is True and seen["worktree"]["changed"] == []
    [message] = commit_messages(store_path, 1)
    assert "Lantern-Op: revert" in message and "Lantern-Actor: mcp" in message
    assert f"Lantern-Reverts: {raised}" in message
