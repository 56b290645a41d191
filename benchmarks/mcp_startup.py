"""How long ``lantern mcp`` takes from its start to its first tool answer, side by side.

    python benchmarks/mcp_startup.py                     # median of 15 starts
    python benchmarks/mcp_startup.py --runs 31
    python benchmarks/mcp_startup.py --also OLD_CHECKOUT  # the same starts with another copy of
                                                          # lantern_git (e.g. `git worktree add`)

An agent's client starts the server, initializes, lists the tools and calls one: each of those
waits on Python's start, the imports (the MCP SDK, pydantic, the tools' schemas) and the store's
first open. The script speaks the protocol itself (newline-delimited JSON-RPC on the pipes), so
no client library's start is timed. The store holds 200 records, its index built before timing.
The starts of each copy alternate, so a busy machine slows them alike; the figures are
wall-clock medians: the tool list answered, and the first ``lantern_memory_list`` answered.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def start(code: str, store: str) -> tuple[float, float]:
    """Seconds from spawning the server to its tool list, and to its first tool answer."""
    env = dict(os.environ, PYTHONPATH=code)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    began = time.perf_counter()
    server = subprocess.Popen(
        [sys.executable, "-m", "lantern_git", "mcp", "--store", store],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=env,
        text=True,
    )
    assert server.stdin is not None and server.stdout is not None

    def send(message: dict) -> None:
        assert server.stdin is not None
        server.stdin.write(json.dumps(message) + "\n")
        server.stdin.flush()

    def answer(request_id: int) -> dict:
        assert server.stdout is not None
        while True:
            message = json.loads(server.stdout.readline())
            if message.get("id") == request_id:
                assert "error" not in message, message
                return message["result"]

    send(
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "mcp_startup", "version": "0"},
            },
        }
    )
    answer(1)
    send({"jsonrpc": "2.0", "method": "notifications/initialized"})
    send({"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
    tools = answer(2)
    listed = time.perf_counter() - began
    assert len(tools["tools"]) > 20
    arguments = {"limit": 10}
    send(
        {
            "jsonrpc": "2.0",
            "id": 3,
            "method": "tools/call",
            "params": {"name": "lantern_memory_list", "arguments": arguments},
        }
    )
    result = answer(3)
    answered = time.perf_counter() - began
    assert not result.get("isError"), result
    server.stdin.close()
    server.wait(timeout=30)
    return listed, answered


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--also", action="append", default=[], metavar="CHECKOUT")
    options = parser.parse_args()
    copies = [REPO, *options.also]
    with tempfile.TemporaryDirectory() as tmp:
        store = os.path.join(tmp, "store")
        records = "".join(
            json.dumps({"content": f"Record number {i} about lanterns.", "kind": "fact"}) + "\n"
            for i in range(200)
        )
        env = dict(os.environ, PYTHONPATH=REPO)
        subprocess.run(
            [sys.executable, "-m", "lantern_git", "init", store],
            check=True,
            capture_output=True,
            env=env,
        )
        subprocess.run(
            [sys.executable, "-m", "lantern_git", "import", "-", "--store", store],
            input=records,
            text=True,
            check=True,
            capture_output=True,
            env=env,
        )
        for code in copies:  # warm-up: bytecode written, index built
            start(code, store)
        figures: dict[str, list[tuple[float, float]]] = {code: [] for code in copies}
        for _ in range(options.runs):
            for code in copies:
                figures[code].append(start(code, store))
    print(f"lantern mcp, start to answer (median of {options.runs}, seconds)")
    print(f"{'copy':<40} {'tools/list':>11} {'first call':>11}")
    for code, runs in figures.items():
        listed = statistics.median(r[0] for r in runs)
        answered = statistics.median(r[1] for r in runs)
        print(f"{code[-40:]:<40} {listed:>11.3f} {answered:>11.3f}")


if __name__ == "__main__":
    main()
