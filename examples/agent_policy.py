"""An agent-side memory selection policy, on top of lantern's MCP tools.

Lantern stores records and lists them in one documented order; it does not decide which of
them belong in the next prompt. That decision is the agent's, and this script shows where it
lives: it starts ``lantern mcp``, pages through the active records of some scopes with
``lantern_memory_list`` (asking only for the fields it needs), and applies its own policy:

    weight = confidence * (PRIORITY_SHARE * priority + URGENCY_SHARE * urgency) * freshness

where freshness halves every ``--half-life-days`` since the record was last updated. Records
below ``--min-confidence`` are dropped, and the heaviest ``--top`` records are chosen that fit
in ``--budget`` characters. Change the numbers, or the formula: lantern does not care.

    python examples/agent_policy.py --store ~/memory --scope user:ana --top 5

It only reads; it never writes to the store.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

PRIORITY_SHARE = 0.4
URGENCY_SHARE = 0.6
FIELDS = ["id", "kind", "scope", "priority", "urgency", "confidence", "updated_at", "content"]
PAGE = 200


async def active_records(session: ClientSession, scopes: list[str]) -> list[dict]:
    """Every active, unexpired record of ``scopes``, one page at a time."""
    records: list[dict] = []
    offset: int | None = 0
    while offset is not None:
        result = await session.call_tool(
            "lantern_memory_list",
            {
                "scope": scopes,
                "status": "active",
                "limit": PAGE,
                "offset": offset,
                "fields": FIELDS,
            },
        )
        if result.is_error:
            raise SystemExit(f"lantern: {result.content[0].text}")
        page = result.structured_content
        records.extend(page["records"])
        offset = page["next_offset"]
    return records


def weigh(record: dict, now: float, half_life_days: float) -> float:
    importance = PRIORITY_SHARE * record["priority"] + URGENCY_SHARE * record["urgency"]
    age_days = max(0.0, now - record["updated_at"]) / 86400
    freshness = 0.5 ** (age_days / half_life_days)
    return round(record["confidence"] * importance * freshness, 3)


def select(records: list[dict], args: argparse.Namespace) -> list[dict]:
    now = time.time()
    candidates = [
        {**record, "weight": weigh(record, now, args.half_life_days)}
        for record in records
        if record["confidence"] >= args.min_confidence
    ]
    candidates.sort(key=lambda r: (-r["weight"], r["id"]))
    chosen, used = [], 0
    for record in candidates:
        if len(chosen) == args.top:
            break
        if used + len(record["content"]) > args.budget:
            continue
        chosen.append(record)
        used += len(record["content"])
    return chosen


async def main(args: argparse.Namespace) -> None:
    command = [sys.executable, "-m", "lantern_git", "mcp"]
    if args.store:
        command += ["--store", args.store]
    server = StdioServerParameters(command=command[0], args=command[1:])
    async with stdio_client(server) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        records = await active_records(session, args.scope)
    chosen = select(records, args)
    if args.json:
        print(json.dumps(chosen, ensure_ascii=False))
        return
    for record in chosen:
        print(f"{record['weight']:7.2f}  {record['id'][:7]}  {record['content']}")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--store", help="the lantern store (default: lantern's usual lookup)")
    parser.add_argument(
        "--scope", action="append", required=True, help="a scope to read (repeatable; user:*)"
    )
    parser.add_argument("--top", type=int, default=10, help="at most this many records")
    parser.add_argument("--budget", type=int, default=4000, help="at most this many characters")
    parser.add_argument("--min-confidence", type=float, default=0.5)
    parser.add_argument("--half-life-days", type=float, default=90.0)
    parser.add_argument("--json", action="store_true", help="print the choice as JSON")
    return parser.parse_args(argv)


if __name__ == "__main__":
    asyncio.run(main(parse_args()))
