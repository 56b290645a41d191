"""Search where agents call it: the library and the MCP server, warm, before and after.

    python benchmarks/search_speed.py                        # 10,000 records, this checkout
    python benchmarks/search_speed.py --before ~/lantern-old # and an older checkout, same run
    python benchmarks/search_speed.py --sizes 10000,100000 --server-only-from 100000

A store of N records from the shared corpus generator (as ``run.py``), embedded once. Then, for
each checkout (``--before`` first, this one after, then both again, so that a machine's load
falls on both alike), a fresh process opens the store as a long-running caller does
(``Store.open(watch=True)``, the MCP server's way), warms each mode, and times ``search`` in
keyword and hybrid mode over the corpus's query words (median, p95); then a real MCP client
over stdio times ``lantern_memory_search`` round trips against ``lantern mcp``. Targets (issue
22): 10k records, keyword <= 5 ms and hybrid <= 15 ms medians; 100k in the server, hybrid <=
100 ms.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SHARED = os.environ.get("LANTERN_BENCH_SHARED") or os.path.join(REPO, "..", "shared", "bench")
QUERIES = 40

LIBRARY = r"""
import json, statistics, sys, time
from lantern_git.store import Store
root, words = sys.argv[1], json.loads(sys.argv[2])
store = Store.open(root, watch=True)
out = {}
for mode in ("keyword", "hybrid"):
    for w in words[:3]:
        store.search(w, mode=mode, limit=10)
    times = []
    for i, w in enumerate(words):
        text = w if i % 2 else f"{w} {words[(i * 7) % len(words)]}"
        start = time.perf_counter()
        store.search(text, mode=mode, limit=10)
        times.append(time.perf_counter() - start)
    times.sort()
    out[mode] = [statistics.median(times) * 1000, times[int(0.95 * (len(times) - 1))] * 1000]
print(json.dumps(out))
"""

SERVER = r"""
import json, os, statistics, sys, time
import anyio
from mcp import Client, StdioServerParameters
root, words = sys.argv[1], json.loads(sys.argv[2])
params = StdioServerParameters(
    command=sys.executable, args=["-m", "lantern_git", "mcp", "--store", root],
    env={k: v for k, v in os.environ.items()
         if k.startswith(("GIT_", "LANTERN_", "XDG_", "PYTHON")) or k in ("HOME", "PATH")},
)
async def main():
    out = {}
    async with Client(params) as client:
        for mode in ("keyword", "hybrid"):
            for w in words[:3]:
                await client.call_tool("lantern_memory_search", {"query": w, "mode": mode})
            times = []
            for i, w in enumerate(words):
                text = w if i % 2 else f"{w} {words[(i * 7) % len(words)]}"
                start = time.perf_counter()
                result = await client.call_tool(
                    "lantern_memory_search", {"query": text, "mode": mode, "limit": 10}
                )
                times.append(time.perf_counter() - start)
                assert not result.is_error, result.content[0].text
            times.sort()
            p95 = times[int(0.95 * (len(times) - 1))]
            out[mode] = [statistics.median(times) * 1000, p95 * 1000]
    print(json.dumps(out))
anyio.run(main)
"""


def build(root: str, n: int) -> list[str]:
    sys.path.insert(0, os.path.abspath(SHARED))
    sys.path.insert(0, REPO)
    import corpus

    from lantern_git.store import Store

    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from run import jsonl

    start = time.perf_counter()
    store = Store.init(root, author="Bench <bench@example.com>")
    store.import_records(jsonl(corpus.iter_corpus(n)))
    store.search("warm", mode="hybrid")  # embeds every record once
    store.close()
    print(f"{n} records imported and embedded in {time.perf_counter() - start:.0f} s", flush=True)
    return list(corpus.query_words(QUERIES))


def measure(checkout: str, script: str, root: str, words: list[str]) -> dict:
    env = dict(os.environ, PYTHONPATH=checkout, LANTERN_AUTHOR="Bench <bench@example.com>")
    env.pop("LANTERN_EMBEDDER", None)
    done = subprocess.run(
        [sys.executable, "-c", script, root, json.dumps(words)],
        env=env,
        capture_output=True,
        text=True,
        cwd=tempfile.gettempdir(),
    )
    if done.returncode:
        raise SystemExit(f"{checkout}: {done.stderr[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="10000")
    parser.add_argument("--before", help="an older checkout of lantern, measured in the same run")
    parser.add_argument(
        "--server-only-from", type=int, default=100_000, help="sizes measured in the server only"
    )
    args = parser.parse_args(argv)
    checkouts = [("after", REPO)]
    if args.before:
        checkouts.insert(0, ("before", os.path.abspath(os.path.expanduser(args.before))))
    print("| records | where | checkout | keyword median / p95 ms | hybrid median / p95 ms |")
    print("|---|---|---|---|---|")
    rows = []
    for n in [int(s) for s in args.sizes.split(",") if s]:
        work = tempfile.mkdtemp(prefix="lantern-speed-")
        try:
            root = os.path.join(work, "store")
            words = build(root, n)
            places = [("server", SERVER)]
            if n < args.server_only_from:
                places.insert(0, ("library", LIBRARY))
            for where, script in places:
                found: dict[str, list[dict]] = {name: [] for name, _ in checkouts}
                for _ in range(2):  # before, after, before, after: the load falls on both
                    for name, path in checkouts:
                        found[name].append(measure(path, script, root, words))
                for name, _ in checkouts:
                    runs = found[name]
                    cells = []
                    for mode in ("keyword", "hybrid"):
                        med = statistics.median(r[mode][0] for r in runs)
                        p95 = statistics.median(r[mode][1] for r in runs)
                        cells.append(f"{med:.1f} / {p95:.1f}")
                    row = f"| {n:,} | {where} | {name} | {cells[0]} | {cells[1]} |"
                    rows.append(row)
                    print(row, flush=True)
        finally:
            shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
