"""MCP as the tests drive it: a real ``lantern mcp`` subprocess through the SDK's own client
(``server_params``, ``connect``, ``run``, and ``ok``/``fail`` for a tool's answer), and the
tools run in process with each answer checked against the tool's declared schema."""

from __future__ import annotations

import contextlib
import json
import os
import sys

import anyio
from mcp import Client, ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client


def schema_checked_calls(store_path):
    """``call(tool, **arguments)``: the MCP tool run in process (``ToolRunner.run``, what the
    server runs), its answer required not to be an error and to match the tool's declared
    output schema, then returned."""
    import jsonschema

    from lantern_git.mcp.server import TOOLS_BY_NAME, StoreTarget, ToolRunner

    runner = ToolRunner(StoreTarget(str(store_path)))

    def call(name: str, **arguments) -> dict:
        outcome = runner.run(name, arguments)
        assert not outcome.is_error, outcome.value
        jsonschema.validate(outcome.value, TOOLS_BY_NAME[name].output_schema)
        return outcome.value

    return call


def server_params(store_path, *extra: str) -> StdioServerParameters:
    # The SDK passes only a safe subset of the environment; the test's identity and isolated
    # HOME must reach the server too.
    env = {
        k: v
        for k, v in os.environ.items()
        if k.startswith(("GIT_", "LANTERN_", "XDG_")) or k in ("HOME", "PATH")
    }
    return StdioServerParameters(
        command=sys.executable,
        args=["-m", "lantern_git", "mcp", "--store", str(store_path), *extra],
        env=env,
    )


@contextlib.asynccontextmanager
async def connect(store_path, legacy: bool = False):
    """A connected client: the default (newest protocol) Client, or a legacy-handshake session."""
    params = server_params(store_path)
    if legacy:
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            yield session
    else:
        async with Client(params) as client:
            yield client


def run(body):
    """Run ``body(client)`` against a fresh server on ``store_path``; returns its result."""

    def runner(store_path, legacy=False):
        async def main():
            async with connect(store_path, legacy) as client:
                return await body(client)

        return anyio.run(main)

    return runner


async def ok(client, tool: str, **arguments) -> dict:
    result = await client.call_tool(tool, arguments)
    assert not result.is_error, result.content[0].text
    # Clients that read only text get the same document as those that read structured content.
    assert json.loads(result.content[0].text) == result.structured_content
    return result.structured_content


async def fail(client, tool: str, **arguments) -> dict:
    result = await client.call_tool(tool, arguments)
    assert result.is_error
    assert json.loads(result.content[0].text) == result.structured_content
    assert set(result.structured_content) == {"error"}
    assert set(result.structured_content["error"]) == {"code", "message"}
    return result.structured_content["error"]
