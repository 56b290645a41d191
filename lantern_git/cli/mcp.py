"""``lantern mcp``: serve the store's tools to an MCP client over stdio."""

from __future__ import annotations

import click

from .support import author_option, store_option


@click.command("mcp")
@store_option
@author_option
@click.option(
    "--review",
    is_flag=True,
    default=None,
    help="Commit every write to the review branch lantern/review/mcp, for a person to accept.",
)
@click.pass_context
def mcp_command(
    ctx: click.Context, store_path: str | None, author: str | None, review: bool | None
) -> None:
    """Serve lantern's memory tools over MCP on stdin/stdout.

    Register it with an MCP client as the command `lantern mcp --store PATH`. Commits made
    through it carry `Lantern-Actor: mcp`. It runs until the client closes stdin.
    """
    from ..mcp.server import StoreTarget, serve
    from ..store import Store
    from ..workspace.workspace import locate_store

    root_store = (ctx.find_root().obj or {}).get("store_path")
    path, is_default = locate_store(store_path or root_store)
    # A store that cannot be opened is reported now, by exit code, rather than on every call.
    opened = Store(path, create_on_write=is_default, actor="mcp", author=author, review=review)
    # A bad review setting (LANTERN_REVIEW, LANTERN_REVIEW_NAME, lantern.yaml) fails now too.
    branch = opened.review_ref
    # One line, so whoever reads the client's server log knows which store this one writes to
    # and whom its commits name.
    who = opened.identity().author
    opened.close()
    pending = f", writes to {branch.removeprefix('refs/heads/')} for review" if branch else ""
    click.echo(f"lantern mcp: serving {path} as {who}{pending}", err=True)
    serve(StoreTarget(path, create_on_write=is_default, author=author, review=review))


def register(cli: click.Group, memory: click.Group) -> None:
    cli.add_command(mcp_command)
