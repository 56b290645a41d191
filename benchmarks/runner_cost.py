"""What a quick read costs through each of the two library runners: the MCP server's
(``ToolRunner.run_at_once``: on the event loop, on the one store it keeps) and the web app's
(``Library.read``: a worker thread, the read lock and a pooled reader store), beside the same
list called directly on the loop and a bare thread hop. ARCHITECTURE.md cites it for why the two
runners stay two.

    python benchmarks/runner_cost.py [records]   # default 300
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import anyio
import anyio.to_thread
import pygit2

from lantern_git.core.paging import Page
from lantern_git.mcp.server import StoreTarget, ToolRunner
from lantern_git.model.query import RecordQuery
from lantern_git.store import Store
from lantern_git.web.app import open_store
from lantern_git.web.runner import Library

ROUNDS = 300


def make_store(root: Path, records: int) -> str:
    repo = pygit2.init_repository(str(root), initial_head="main")
    repo.config["user.name"] = "bench"
    repo.config["user.email"] = "bench@lantern.invalid"
    Store.init(str(root)).close()
    store = Store(str(root), actor="cli")
    try:
        for n in range(records):
            store.add(f"record number {n} about topic {n % 17}", kind="fact")
    finally:
        store.close()
    return str(root)


def page() -> RecordQuery:
    return RecordQuery.from_options(page=Page(20, 0))


async def median_ms(call: Callable[[], object]) -> float:
    times = []
    for _ in range(ROUNDS):
        start = time.perf_counter()
        result = call()
        if hasattr(result, "__await__"):
            await result
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


def main() -> None:
    records = int(sys.argv[1]) if len(sys.argv) > 1 else 300
    with tempfile.TemporaryDirectory() as tmp:
        path = make_store(Path(tmp) / "store", records)
        runner = ToolRunner(StoreTarget(path))
        runner.run("lantern_memory_list", {"limit": 20})  # opens and keeps its store
        server = open_store(path, None)
        library = Library(server, lambda: open_store(path, None))

        async def measure() -> dict[str, float]:
            async def via_library() -> object:
                return await library.read(lambda store: store.list(page()))

            for _ in range(20):  # open the readers
                await via_library()
            return {
                "MCP run_at_once (list tool, limit 20)": await median_ms(
                    lambda: runner.run_at_once("lantern_memory_list", {"limit": 20})
                ),
                "web Library.read (store.list, limit 20)": await median_ms(via_library),
                "store.list on the loop (limit 20)": await median_ms(lambda: server.list(page())),
                "a bare thread hop": await median_ms(
                    lambda: anyio.to_thread.run_sync(lambda: None)
                ),
            }

        try:
            figures = anyio.run(measure)
        finally:
            library.close()
            server.close()
            runner.close()
    print(f"{records} records, median of {ROUNDS}:")
    for name, ms in figures.items():
        print(f"  {name}: {ms:.3f} ms")


if __name__ == "__main__":
    main()
