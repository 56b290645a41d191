"""Listing like sqlite-utils (issue 14): --offset, --count, --fields, --jsonl, --csv, --tsv beside
--json and the table, a table that fits 80 columns, and --limit 0 as "no limit" in the CLI and
over MCP."""

from __future__ import annotations

import csv
import io
import json

import anyio
from mcp import Client
from support.cli import lantern
from support.mcp import ok, server_params
from support.stores import snapshot

TRICKY = 'Commas, "quotes"\tand a tab,\nthen a second line.'


def _fill(store_path, count: int = 5) -> list[dict]:
    for i in range(count):
        result = lantern(
            "memory", "add", f"note {i} about lanterns", "--kind", "fact",
            "--priority", str(10 + i), "--store", str(store_path),
        )  # fmt: skip
        assert result.returncode == 0, result.stderr
    tricky = lantern(
        "memory", "add", TRICKY, "--kind", "observation", "--scope", "user:ana",
        "--source-ref", "session:1", "--store", str(store_path),
    )  # fmt: skip
    assert tricky.returncode == 0, tricky.stderr
    return _json(store_path, "memory", "list")


def _run(store_path, *args, env=None):
    result = lantern(*args, "--store", str(store_path), env=env)
    assert result.returncode == 0, result.stderr
    return result.stdout


def _json(store_path, *args):
    return json.loads(_run(store_path, *args, "--json"))


def test_every_format_writes_the_same_records_as_json(store_path):
    records = _fill(store_path)
    assert len(records) == 6
    jsonl = _run(store_path, "memory", "list", "--jsonl")
    assert [json.loads(line) for line in jsonl.splitlines()] == records
    for flag, delimiter in (("--csv", ","), ("--tsv", "\t")):
        text = _run(store_path, "memory", "list", flag)
        rows = list(csv.reader(io.StringIO(text), delimiter=delimiter))
        assert rows[0] == list(records[0])
        assert [row[0] for row in rows[1:]] == [r["id"] for r in records]
        by_id = {row[0]: dict(zip(rows[0], row)) for row in rows[1:]}
        tricky = next(r for r in records if r["content"] == TRICKY)
        # Delimiters, quotes and line breaks survive; a list is its JSON text, null is empty.
        assert by_id[tricky["id"]]["content"] == TRICKY
        assert json.loads(by_id[tricky["id"]]["source_refs"]) == ["session:1"]
        assert by_id[tricky["id"]]["expires_at"] == ""


def test_fields_keep_the_order_given_in_every_format(store_path):
    records = _fill(store_path)
    chosen = ["content", "id", "priority"]
    expected = [{name: r[name] for name in chosen} for r in records]
    as_json = _json(store_path, "memory", "list", "--fields", "content,id,priority")
    assert as_json == expected and all(list(r) == chosen for r in as_json)
    jsonl = _run(store_path, "memory", "list", "--jsonl", "--fields", "content,id,priority")
    assert [list(json.loads(line)) for line in jsonl.splitlines()] == [chosen] * len(records)
    text = _run(store_path, "memory", "list", "--csv", "--fields", "id,priority")
    assert text.splitlines()[:2] == ["id,priority", f"{records[0]['id']},{records[0]['priority']}"]
    table = _run(store_path, "memory", "list", "--fields", "priority,id")
    assert table.splitlines()[0].split() == ["PRI", "ID"]
    hits = _json(store_path, "memory", "search", "lanterns", "--fields", "score,id")
    assert hits and all(list(h) == ["score", "id"] and h["score"] > 0 for h in hits)


def test_offset_count_and_limit_zero_page_the_same_order(store_path):
    records = _fill(store_path)
    assert _json(store_path, "memory", "list", "--offset", "2", "--limit", "3") == records[2:5]
    assert _json(store_path, "memory", "list", "--offset", "4") == records[4:]
    assert _json(store_path, "memory", "list", "--limit", "0") == records
    assert _run(store_path, "memory", "list", "--count") == "6\n"
    assert _json(store_path, "memory", "list", "--count") == {"count": 6}
    # --count counts what the listing would show: filters and the page apply.
    assert _run(store_path, "memory", "list", "--count", "--kind", "fact", "--offset", "1") == "4\n"
    assert _run(store_path, "memory", "search", "lanterns", "--count", "--limit", "2") == "2\n"
    hits = _json(store_path, "memory", "search", "lanterns")
    assert _json(store_path, "memory", "search", "lanterns", "--offset", "3") == hits[3:]


def test_the_table_fits_80_columns_and_wide_shows_content_whole(store_path):
    long = "A long memory about how the lantern project ships its beta, " * 3
    _run(store_path, "memory", "add", long, "--kind", "observation", "--scope", "project:beta")
    _fill(store_path, 2)
    narrow = _run(store_path, "memory", "list", env={"COLUMNS": "80"}).splitlines()
    assert all(len(line) <= 80 for line in narrow), narrow
    header = narrow[0].split()
    assert header[0] == "ID" and header[-1] == "CONTENT" and "KIND" in header
    start = narrow[0].index("CONTENT")
    # Content gets the room: UPDATED, URG and the all-"active" STATUS give way to it.
    assert not {"UPDATED", "URG", "STATUS"} & set(header)
    row = next(line for line in narrow if "A long memory" in line)
    assert len(row[start:]) >= 35 and row.endswith("…")
    wide = _run(store_path, "memory", "list", "--wide", env={"COLUMNS": "80"})
    assert " ".join(long.split()) in wide
    assert "UPDATED" in wide.splitlines()[0]
    same = _run(store_path, "memory", "list", "--no-trunc", env={"COLUMNS": "80"})
    assert same == wide
    # With statuses that differ, STATUS stays: it is no longer what the filter already said.
    _run(store_path, "memory", "archive", narrow[1].split()[0])
    mixed = _run(store_path, "memory", "list", "--status", "all", env={"COLUMNS": "80"})
    assert "STATUS" in mixed.splitlines()[0].split()
    assert all(len(line) <= 80 for line in mixed.splitlines())
    # A wider terminal keeps every default column.
    full = _run(store_path, "memory", "list", env={"COLUMNS": "160"}).splitlines()[0].split()
    assert full == ["ID", "KIND", "SCOPE", "STATUS", "PRI", "URG", "UPDATED", "CONTENT"]


def test_bad_output_options_are_usage_errors_that_change_nothing(store_path):
    _fill(store_path, 1)
    before = snapshot(store_path)
    two = lantern("memory", "list", "--csv", "--tsv", "--store", str(store_path))
    assert two.returncode == 2 and two.stdout == ""
    assert "choose one output format: --csv and --tsv were given" in two.stderr
    unknown = lantern(
        "memory", "list", "--fields", "id,colour", "--json", "--store", str(store_path)
    )
    assert unknown.returncode == 2 and unknown.stdout == ""
    error = json.loads(unknown.stderr)["error"]
    assert error["code"] == "invalid_field"
    assert error["message"].startswith("fields: 'colour' is not a field; choose from id, kind")
    score = lantern("memory", "list", "--fields", "score", "--store", str(store_path))
    assert score.returncode == 2 and "'score' is not a field" in score.stderr
    negative = lantern("memory", "list", "--offset", "-1", "--store", str(store_path))
    assert negative.returncode == 2 and "offset: must be 0 or more" in negative.stderr
    assert snapshot(store_path) == before


def test_limit_zero_means_no_limit_over_mcp_as_in_the_cli(store_path):
    records = _fill(store_path)

    async def main():
        async with Client(server_params(store_path)) as client:
            everything = await ok(client, "lantern_memory_list", limit=0)
            rest = await ok(client, "lantern_memory_list", limit=0, offset=2, fields=["id"])
            found = await ok(client, "lantern_memory_search", query="lanterns", limit=0)
            return everything, rest, found

    everything, rest, found = anyio.run(main)
    assert everything["records"] == records
    assert (everything["limit"], everything["next_offset"]) == (0, None)
    assert rest["records"] == [{"id": r["id"]} for r in records[2:]]
    assert rest["next_offset"] is None
    assert found["records"] == _json(store_path, "memory", "search", "lanterns", "--limit", "0")
