"""The one paging rule, on every surface: ``limit`` 0 is no limit, ``offset`` skips, and a
negative limit or offset is ``usage_error`` (exit 2) with the same message everywhere, for
records, sources, the log and a record's history (docs/paging.md)."""

from __future__ import annotations

import dataclasses
import json
import sys

import pytest
from support.cli import lantern
from support.mcp import fail, ok, run
from support.stores import snapshot

from lantern_git import Store
from lantern_git.core.paging import Page
from lantern_git.errors import InvalidInput
from lantern_git.evidence.sources import SourceInput
from lantern_git.model.query import RecordQuery

LIMIT_MESSAGE = "limit: must be 0 or more (0: no limit); got -1"
OFFSET_MESSAGE = "offset: must be 0 or more; got -1"
# More than the MCP tools' default page (50) and the log's (20), so "all" is told from them.
COUNT = 55
REVIEWERS = ("ann", "bob", "cy")


@pytest.fixture
def filled(store_path):
    """COUNT records and three sources that all say "gardening", and one record whose history
    has three commits."""
    store = Store.open(str(store_path), actor="api")
    for i in range(COUNT):
        store.add(f"gardening note {i:02}", kind="fact")
    for i in range(3):
        store.sources.add([SourceInput(f"gardening source {i}\n".encode(), uri=f"n:{i}")])
    record = store.add("the tomatoes need water", kind="fact")
    store.update(record.id, priority=70)
    store.update(record.id, priority=80)
    store.close()
    # Three writers' review branches: what `lantern review` lists, by name.
    for name in REVIEWERS:
        writer = Store.open(str(store_path), actor="api", review=True, review_name=name)
        writer.add(f"proposed by {name}", kind="fact")
        writer.close()
    return store_path, record.id


# ---------------------------------------------------------------------------- the rule


def test_a_page_is_checked_once_and_zero_is_no_limit():
    assert Page(0) == Page(None) and Page(0).end is None
    assert Page(3, 2).take(list(range(10))) == [2, 3, 4]
    assert Page(0, 8).take(list(range(10))) == [8, 9]
    assert Page(2, 1).one_more() == Page(3, 1) and Page(0).one_more() == Page(None)
    for limit, offset, message in (
        (-1, 0, LIMIT_MESSAGE),
        (5, -1, OFFSET_MESSAGE),
        (True, 0, "limit: must be a whole number; got True"),
        ("5", 0, "limit: must be a whole number; got the string '5'"),
        (5, 1.5, "offset: must be a whole number; got 1.5"),
    ):
        with pytest.raises(InvalidInput) as raised:
            Page(limit, offset)
        assert (raised.value.code, raised.value.exit_code) == ("usage_error", 2)
        assert raised.value.message == message
    with pytest.raises(InvalidInput) as raised:
        Page.of(501, maximum=500)
    assert raised.value.code == "usage_error"


def test_a_page_takes_slices_and_tells_whether_another_follows():
    items = list(range(10))
    assert Page().take(items) == items and Page(None, 0).end is None
    assert (Page(3).end, Page(3, 4).end, Page(0, 4).end) == (3, 7, None)
    assert Page(3, 9).take(items) == [9] and Page(1, 10).take(items) == []
    assert Page(0).one_more() is not None and Page(0).one_more().limit is None
    assert Page(0, 3).one_more() == Page(None, 3)
    assert Page(3).one_more() == Page(4) and Page(4, 2).one_more() == Page(5, 2)
    # A page is a value: checked once when made, never changed after.
    with pytest.raises(dataclasses.FrozenInstanceError):
        Page(3).limit = -1  # type: ignore[misc]
    # The MCP page document: fetched with one_more, so one item too many says "more".
    assert Page(3, 2).document("records", [2, 3, 4, 5]) == {
        "records": [2, 3, 4],
        "offset": 2,
        "limit": 3,
        "next_offset": 5,
    }
    assert Page(3, 2).document("records", [2, 3, 4]) == {
        "records": [2, 3, 4],
        "offset": 2,
        "limit": 3,
        "next_offset": None,
    }
    # A last page shorter than the limit: nothing follows it.
    assert Page(3, 8).document("records", [8, 9]) == {
        "records": [8, 9],
        "offset": 8,
        "limit": 3,
        "next_offset": None,
    }
    assert Page(0, 1).document("hits", [1, 2]) == {
        "hits": [1, 2],
        "offset": 1,
        "limit": 0,
        "next_offset": None,
    }


def test_the_largest_page_is_accepted_and_one_more_is_refused():
    # The limit as a caller's own object, not the test's constant 500.
    assert Page.of(int("500"), maximum=500) == Page(500)
    assert Page.of(0, maximum=500) == Page(None)
    assert Page.of(1, 3, maximum=1) == Page(1, 3)
    with pytest.raises(InvalidInput) as raised:
        Page.of(501, 2, maximum=500)
    assert raised.value.message == ("limit: must be between 1 and 500, or 0 for no limit; got 501")
    # Without a maximum any count is a page; a bad value is refused as Page refuses it.
    assert Page.of(10**6) == Page(10**6)
    for bad in ("501", True, 2.0, None):
        if bad is None:
            assert Page.of(None, maximum=500) == Page()
            continue
        with pytest.raises(InvalidInput) as raised:
            Page.of(bad, maximum=500)
        assert raised.value.code == "usage_error"
    with pytest.raises(InvalidInput) as raised:
        Page(False)
    assert raised.value.message == "limit: must be a whole number; got False"
    with pytest.raises(InvalidInput) as raised:
        Page(1, True)
    assert raised.value.message == "offset: must be a whole number; got True"
    assert Page(0, 0) == Page(None, 0) and Page(1, 0).offset == 0
    # The largest count a slice takes is a page's largest limit and offset; one more is
    # refused, naming the bound (a web parameter of 99999999999999999999 was a 500 before).
    largest = sys.maxsize
    assert Page(largest, largest) == Page(largest, largest)
    assert Page(largest, largest).end == largest
    for field in ("limit", "offset"):
        with pytest.raises(InvalidInput) as raised:
            Page(**{"limit": 1, "offset": 0, field: largest + 1})
        assert raised.value.message == f"{field}: must be at most {largest}; got {largest + 1}"


# ---------------------------------------------------------------------------- library


def test_the_library_pages_every_listing_alike(filled):
    store_path, record_id = filled
    store = Store.open(str(store_path))
    try:
        every = store.list(RecordQuery(status="all"))
        assert len(every) == COUNT + 1
        assert store.list(RecordQuery(limit=0, offset=COUNT)) == every[COUNT:]
        hits = store.search("gardening", RecordQuery(limit=0))
        assert len(hits) == COUNT
        assert store.sources.list(limit=0, offset=1) == store.sources.list()[1:]
        assert len(store.sources.list(limit=0)) == 3
        found = store.sources.search("gardening", limit=0)
        assert len(found) == 3
        assert store.sources.search("gardening", limit=0, offset=2) == found[2:]
        # init, COUNT + 3 adds of records and sources, and the two updates.
        log = store.log(limit=0)
        assert len(log) == 1 + COUNT + 3 + 1 + 2
        assert store.log(limit=2, offset=1) == log[1:3]
        history = store.record_history(record_id, limit=0).entries
        assert [e.op for e in history] == ["update", "update", "add"]
        assert store.record_history(record_id, limit=1, offset=1).entries == history[1:2]
        branches = store.review_list(limit=0).branches
        assert [b.name for b in branches] == list(REVIEWERS)
        assert store.review_list(limit=1, offset=1).branches == branches[1:2]
    finally:
        store.close()


def test_the_library_refuses_a_negative_page_with_one_code(filled):
    store_path, record_id = filled
    before = snapshot(store_path)
    store = Store.open(str(store_path))
    try:
        calls = {
            "list": lambda **p: store.list(RecordQuery(**p)),
            "search": lambda **p: store.search("gardening", RecordQuery(**p)),
            "similar": lambda **p: store.similar(record_id, **p),
            "dupes": lambda **p: store.dupes(**p),
            "source list": lambda **p: store.sources.list(**p),
            "source search": lambda **p: store.sources.search("gardening", **p),
            "log": lambda **p: store.log(**p),
            "history": lambda **p: store.record_history(record_id, **p),
            "review": lambda **p: store.review_list(**p),
        }
        for name, call in calls.items():
            for page, message in (({"limit": -1}, LIMIT_MESSAGE), ({"offset": -1}, OFFSET_MESSAGE)):
                with pytest.raises(InvalidInput) as raised:
                    call(**page)
                assert (raised.value.code, raised.value.message) == ("usage_error", message), name
    finally:
        store.close()
    assert snapshot(store_path) == before


# ---------------------------------------------------------------------------- CLI


def _json(store_path, *args):
    result = lantern(*args, "--json", "--store", str(store_path))
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def test_source_search_limit_zero_is_every_hit_on_the_cli(filled):
    store_path, _ = filled
    every = _json(store_path, "source", "search", "gardening", "--limit", "0")
    assert len(every) == 3
    assert (
        _json(store_path, "source", "search", "gardening", "--limit", "0", "--offset", "1")
        == (every[1:])
    )
    assert len(_json(store_path, "source", "list", "--limit", "0")) == 3
    assert len(_json(store_path, "log", "--limit", "0")["log"]) == 1 + COUNT + 3 + 1 + 2
    assert len(_json(store_path, "log")["log"]) == 20  # log's default page
    names = [b["name"] for b in _json(store_path, "review", "--limit", "0")["branches"]]
    assert names == list(REVIEWERS)
    second = _json(store_path, "review", "--limit", "1", "--offset", "1")["branches"]
    assert [b["name"] for b in second] == ["bob"]


CLI_LISTINGS = [
    ["memory", "list"],
    ["memory", "search", "gardening"],
    ["memory", "similar", "{id}"],
    ["memory", "dupes"],
    ["memory", "history", "{id}"],
    ["source", "list"],
    ["source", "search", "gardening"],
    ["log"],
    ["review"],
]


@pytest.mark.parametrize("command", CLI_LISTINGS, ids=" ".join)
def test_the_cli_refuses_a_negative_page_with_exit_2_and_one_code(filled, command):
    store_path, record_id = filled
    before = snapshot(store_path)
    args = [a.replace("{id}", record_id) for a in command]
    for option, message in (("--limit", LIMIT_MESSAGE), ("--offset", OFFSET_MESSAGE)):
        result = lantern(*args, option, "-1", "--json", "--store", str(store_path))
        assert result.returncode == 2, result.stderr
        assert result.stdout == ""
        assert json.loads(result.stderr) == {"error": {"code": "usage_error", "message": message}}
    assert snapshot(store_path) == before


# ---------------------------------------------------------------------------- MCP

MCP_LISTINGS = {
    "lantern_memory_list": {},
    "lantern_memory_search": {"query": "gardening"},
    "lantern_memory_similar": {"id": "{id}"},
    "lantern_memory_dupes": {},
    "lantern_memory_history": {"id": "{id}"},
    "lantern_source_list": {},
    "lantern_source_search": {"query": "gardening"},
    "lantern_review_list": {},
}


def test_every_mcp_listing_tool_takes_the_same_page_schema(filled):
    store_path, _ = filled

    async def body(client):
        return {tool.name: tool for tool in (await client.list_tools()).tools}

    tools = run(body)(store_path)
    limits = {name: tools[name].input_schema["properties"]["limit"] for name in MCP_LISTINGS}
    offsets = {name: tools[name].input_schema["properties"]["offset"] for name in MCP_LISTINGS}
    for name in MCP_LISTINGS:
        assert {k: v for k, v in limits[name].items() if k != "description"} == {
            "type": "integer",
            "minimum": 0,
            "maximum": 500,
            "default": 50,
        }, name
        assert offsets[name]["minimum"] == 0 and offsets[name]["default"] == 0, name
        output = tools[name].output_schema
        assert {"offset", "limit", "next_offset"} <= set(output["required"]), name


def test_every_mcp_listing_tool_refuses_a_negative_page_with_one_code(filled):
    store_path, record_id = filled
    before = snapshot(store_path)

    async def body(client):
        errors = {}
        for tool, arguments in MCP_LISTINGS.items():
            arguments = {k: v.replace("{id}", record_id) for k, v in arguments.items()}
            errors[tool] = (
                await fail(client, tool, **arguments, limit=-1),
                await fail(client, tool, **arguments, offset=-1),
            )
        return errors

    for tool, (limit, offset) in run(body)(store_path).items():
        assert limit == {"code": "usage_error", "message": LIMIT_MESSAGE}, tool
        assert offset == {"code": "usage_error", "message": OFFSET_MESSAGE}, tool
    assert snapshot(store_path) == before


def test_mcp_limit_zero_is_every_match_for_records_sources_and_history(filled):
    store_path, record_id = filled

    async def body(client):
        return {
            "hits": await ok(client, "lantern_source_search", query="gardening", limit=0),
            "rest": await ok(client, "lantern_source_search", query="gardening", limit=0, offset=1),
            "records": await ok(client, "lantern_memory_search", query="gardening", limit=0),
            "default": await ok(client, "lantern_memory_list"),
            "history": await ok(client, "lantern_memory_history", id=record_id, limit=0),
            "paged": await ok(client, "lantern_memory_history", id=record_id, limit=1, offset=1),
            "review": await ok(client, "lantern_review_list", limit=2, offset=1),
        }

    out = run(body)(store_path)
    assert len(out["hits"]["hits"]) == 3
    assert (out["hits"]["limit"], out["hits"]["next_offset"]) == (0, None)
    assert out["rest"]["hits"] == out["hits"]["hits"][1:]
    assert len(out["records"]["records"]) == COUNT and out["records"]["next_offset"] is None
    assert len(out["default"]["records"]) == 50 and out["default"]["next_offset"] == 50
    ops = [e["op"] for e in out["history"]["history"]]
    assert ops == ["update", "update", "add"] and out["history"]["id"] == record_id
    assert out["paged"]["history"] == out["history"]["history"][1:2]
    assert out["paged"]["next_offset"] == 2
    assert [b["name"] for b in out["review"]["branches"]] == ["bob", "cy"]
    assert out["review"]["next_offset"] is None


@pytest.mark.semantic
def test_similar_and_dupes_page_alike_in_the_library_and_over_mcp(store_path):
    store = Store.open(str(store_path), actor="api")
    try:
        target = store.add("The cat sleeps on the warm windowsill", kind="fact")
        for text in (
            "A cat naps on a sunny windowsill",
            "The kitten dozes by the window",
            "Cats like warm places to sleep",
            "The quarterly budget review is on Monday",
        ):
            store.add(text, kind="fact")
        every = store.similar(target.id, limit=0)
        assert len(every) == 4  # every other active record
        assert store.similar(target.id, limit=2, offset=1) == every[1:3]
        pairs = store.dupes(threshold=-1.0)
        assert len(pairs) == 5 * 4 // 2  # every pair at the lowest threshold
        assert store.dupes(threshold=-1.0, limit=3, offset=2) == pairs[2:5]
    finally:
        store.close()

    async def body(client):
        return (
            await ok(client, "lantern_memory_similar", id=target.id, limit=0),
            await ok(client, "lantern_memory_dupes", threshold=-1.0, limit=4, offset=8),
        )

    similar, dupes = run(body)(store_path)
    assert [r["id"] for r in similar["records"]] == [h.record.id for h in every]
    assert [(p["a"]["id"], p["b"]["id"]) for p in dupes["pairs"]] == [
        (p.a.id, p.b.id) for p in pairs[8:]
    ]
    assert dupes["next_offset"] is None
