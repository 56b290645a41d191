"""The evidence tools over MCP: a real ``lantern mcp`` subprocess and the SDK's own client."""

from __future__ import annotations

import json

from support.cli import lantern
from support.mcp import fail, ok, run, schema_checked_calls
from support.stores import git, snapshot

from lantern_git.core.fields import HIT_FIELDS

TRANSCRIPT = (
    "User: we should deploy on Fridays only after the freeze review.\n"
    "Assistant: understood.\n"
    "User: also, my favourite editor is helix.\n"
    "Assistant: noted.\n"
)


def test_an_agent_ingests_searches_cites_and_verifies(store_path):
    async def body(client):
        source = await ok(
            client,
            "lantern_source_add",
            text=TRANSCRIPT,
            uri="session:2026-12-03",
            kind="transcript",
            title="planning chat",
            meta={"agent": "planner"},
        )
        again = await ok(client, "lantern_source_add", text=TRANSCRIPT, uri="session:2026-12-03")
        page = await ok(client, "lantern_source_search", query="favourite editor")
        hit = page["hits"][0]
        record = await ok(
            client,
            "lantern_memory_add",
            content="Prefers the helix editor",
            kind="preference",
            source_refs=[hit["ref"]],
        )
        verified = await ok(client, "lantern_verify")
        await ok(client, "lantern_source_append", id=source["id"], text="User: bye\n")
        shown = await ok(client, "lantern_source_show", ref=record["source_refs"][0])
        listed = await ok(client, "lantern_source_list", kind=["transcript"])
        return source, again, hit, record, verified, shown, listed

    source, again, hit, record, verified, shown, listed = run(body)(store_path)
    assert list(source)[:3] == ["id", "kind", "uri"] and source["meta"] == {"agent": "planner"}
    assert again == source  # the same text again: nothing new
    assert hit["source_id"] == source["id"] and hit["lines"][0] <= 3 <= hit["lines"][1]
    assert set(hit) == {*HIT_FIELDS, "mode"}
    assert hit["mode"] == "keyword"  # support.env's LANTERN_EMBEDDER=none
    assert "helix" in hit["text"]
    assert record["source_refs"][0].startswith(f"source:{source['id']}@")
    assert verified == {"ok": True, "checked": 1, "problems": []}
    assert "helix" in shown["text"] and shown["lines"] == hit["lines"]
    assert [s["lines"] for s in listed["sources"]] == [5]
    assert listed["next_offset"] is None
    messages = git(store_path, "log", "--format=%B")
    assert "Lantern-Op: ingest" in messages and "Lantern-Op: append" in messages
    assert "Lantern-Actor: mcp" in messages


def test_verify_over_mcp_matches_the_cli_after_a_hand_edit(store_path):
    async def setup(client):
        source = await ok(client, "lantern_source_add", text=TRANSCRIPT, uri="chat:1")
        await ok(
            client,
            "lantern_memory_add",
            content="Deploys wait for the freeze review",
            kind="constraint",
            source_refs=[f"source:{source['id']}#L1"],
        )
        return source

    source = run(setup)(store_path)
    body = store_path / "sources" / source["id"][:2] / f"{source['id']}.txt"
    body.write_text("User: a new first line\n" + TRANSCRIPT)
    assert lantern("--store", str(store_path), "commit").returncode == 0

    async def check(client):
        return await ok(client, "lantern_verify")

    report = run(check)(store_path)
    cli = lantern("--store", str(store_path), "verify", "--json")
    assert cli.returncode == 4 and json.loads(cli.stdout) == report
    assert report["problems"][0]["problem"] == "drifted"
    assert report["problems"][0]["moved_to"] == [2, 2]


def test_a_bad_reference_or_binary_text_is_refused_and_nothing_written(store_path):
    before = snapshot(store_path)

    async def body(client):
        bad_ref = await fail(
            client,
            "lantern_memory_add",
            content="x",
            kind="fact",
            source_refs=["source:../../etc/passwd#L1"],
        )
        missing = await fail(
            client,
            "lantern_memory_add",
            content="x",
            kind="fact",
            source_refs=["source:0123456789abcdef#L1"],
        )
        nul = await fail(client, "lantern_source_add", text="a\u0000b")
        unknown = await fail(client, "lantern_source_add", text="x", path="/etc/passwd")
        return bad_ref, missing, nul, unknown

    bad_ref, missing, nul, unknown = run(body)(store_path)
    assert bad_ref["code"] == "invalid_field" and "not a source reference" in bad_ref["message"]
    assert missing["code"] == "invalid_field" and "no such source" in missing["message"]
    assert "NUL" in nul["message"] and "byte offset 1" in nul["message"]
    # There is no way to name a file on the server's host: the argument does not exist.
    assert unknown["code"] == "usage_error" and "path: unknown argument" in unknown["message"]
    assert snapshot(store_path) == before


def test_source_list_and_search_page_like_the_record_tools(store_path):
    async def body(client):
        for i in range(3):
            await ok(client, "lantern_source_add", text=f"note {i} about gardening\n", uri=f"n:{i}")
        first = await ok(client, "lantern_source_list", limit=2)
        second = await ok(client, "lantern_source_list", limit=2, offset=first["next_offset"])
        hits = await ok(client, "lantern_source_search", query="gardening", limit=2)
        rest = await ok(client, "lantern_source_search", query="gardening", limit=2, offset=2)
        every = await ok(client, "lantern_source_list", limit=0)
        source_id = first["sources"][0]["id"]
        await ok(
            client,
            "lantern_memory_add",
            content="gardening notes exist",
            kind="fact",
            source_refs=[f"source:{source_id}#L1"],
        )
        await ok(client, "lantern_memory_add", content="unrelated", kind="fact")
        cited = await ok(client, "lantern_memory_list", cites=source_id[:8])
        return first, second, hits, rest, every, cited

    first, second, hits, rest, every, cited = run(body)(store_path)
    assert len(every["sources"]) == 3 and every["next_offset"] is None
    assert [r["content"] for r in cited["records"]] == ["gardening notes exist"]
    assert len(first["sources"]) == 2 and first["next_offset"] == 2
    assert len(second["sources"]) == 1 and second["next_offset"] is None
    ids = {s["id"] for s in first["sources"] + second["sources"]}
    assert len(ids) == 3
    assert len(hits["hits"]) == 2 and hits["next_offset"] == 2
    assert len(rest["hits"]) == 1 and rest["next_offset"] is None
    assert {h["source_id"] for h in hits["hits"] + rest["hits"]} == ids


def test_every_evidence_answer_matches_its_output_schema(store_path):
    """The answers the client checks against each tool's declared output schema, a problem of
    every kind verify reports included (a drifted reference carries ``moved_to``)."""
    call = schema_checked_calls(store_path)

    source = call("lantern_source_add", text=TRANSCRIPT, uri="session:1", meta={"n": "1"})
    call("lantern_source_append", id=source["id"], text="User: bye")
    call("lantern_source_list")
    call("lantern_source_show", ref=source["id"])
    hits = call("lantern_source_search", query="favourite editor", explain=True)
    ref = hits["hits"][0]["ref"]
    assert call("lantern_source_show", ref=ref)["text"]
    call("lantern_memory_add", content="Uses helix", kind="fact", source_refs=[ref])
    # The cited line moves down: the reference drifts, and verify says where the text went.
    body = next((store_path / "sources").rglob("*.txt"))
    body.write_text("User: hello\n" + body.read_text())
    git(store_path, "commit", "-qam", "a line above")
    verified = call("lantern_verify")
    assert [p["problem"] for p in verified["problems"]] == ["drifted"]
    assert verified["problems"][0]["moved_to"]
