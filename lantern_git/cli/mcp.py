"""``lantern mcp``: serve the store's tools to an MCP client over stdio."""

from __future__ import annotations

import os

import click

from .support import author_option, store_option


@click.command("mcp")
@store_option
@author_option
@click.pass_context
def mcp_command(ctx: click.Context, store_path: str | None, author: str | None) -> None:
    """Serve lantern's memory tools over MCP on stdin/stdout.

    Register it with an MCP client as the command `lantern mcp --store PATH`. Commits made
    through it carry `Lantern-Actor: mcp`. It runs until the client closes stdin.
    """
    from ..mcp.server import StoreTarget, serve
    from ..store import Store, locate_store

    root_store = (ctx.find_root().obj or {}).get("store_path")
    path, is_default = locate_store(store_path or root_store)
    # A store that cannot be opened is reported now, by exit code, rather than on every call.
    Store(path, create_on_write=is_default, actor="mcp", author=author).close()
    # One line, so whoever reads the client's server log knows which store this one writes to.
    who = author or os.environ.get("LANTERN_AUTHOR") or "git identity"
    click.echo(f"lantern mcp: serving {path} as {who}", err=True)
    serve(StoreTarget(path, create_on_write=is_default, author=author))


def register(cli: click.Group, memory: click.Group) -> None:
    cli.add_command(mcp_command)
