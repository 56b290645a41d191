"""``lantern serve``: the store in a browser, to read records beside their evidence and to
accept or reject what agents wrote (docs/serve.md)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from .support import author_option, json_option, store_option

if TYPE_CHECKING:
    import socket

    from starlette.applications import Starlette

LOOPBACK = ("127.0.0.1", "::1", "localhost")


@click.command("serve")
@store_option
@click.option("--host", default="127.0.0.1", show_default=True, help="The address to bind.")
@click.option(
    "--port", type=int, default=8765, show_default=True, help="The port (0: any free one)."
)
@click.option("--read-only", is_flag=True, help="Show review, but change nothing.")
@author_option
@json_option
@click.pass_context
def serve_command(
    ctx: click.Context,
    store_path: str | None,
    host: str,
    port: int,
    read_only: bool,
    author: str | None,
    as_json: bool,
) -> None:
    """Serve the store as a local web app: records, sources, review, changes, status.

    Prints one line with the URL and its access token (--json: one JSON object with the url,
    host, port and read_only), and serves until interrupted. Every
    request needs the token; the reviewer of an accept is the serving identity (--author,
    else $LANTERN_AUTHOR, else the repository's git identity).
    """
    import socket

    from ..errors import InvalidInput, NoStore
    from ..web.app import ServeConfig, close_app, create_app, open_store

    root_store = (ctx.find_root().obj or {}).get("store_path")
    if not 0 <= port <= 65535:
        raise InvalidInput(f"--port: {port} is not a port (0-65535)", code="usage_error")
    store = open_store(store_path or root_store, author, read_only=read_only)
    if not store.exists:
        raise NoStore(f"{store.root} is not a lantern store; create one with: lantern init")
    # Who reviews is known now, so a bad --author fails here rather than at the first accept.
    signature = store.git.signature(author)
    host = "127.0.0.1" if host == "localhost" else host
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # IPPROTO_TCP named: asyncio turns Nagle off (TCP_NODELAY) only on sockets whose proto
    # says TCP, and without that every answer waited ~40 ms for the headers' ACK.
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as err:
        raise InvalidInput(
            f"cannot listen on {host}:{port}: {err.strerror}", code="usage_error"
        ) from None
    sock.listen(128)
    config = ServeConfig(
        host=host,
        port=sock.getsockname()[1],
        read_only=read_only,
        reviewer=f"{signature.name} <{signature.email}>",
    )
    app = create_app(store, config)
    if host not in LOOPBACK:
        click.echo(
            f"lantern serve: warning: listening on {host}, not loopback: anyone who can reach "
            "this address and has the token can read this store"
            + ("" if read_only else " and accept or reject its pending changes"),
            err=True,
        )
    if as_json:
        import json

        document = {
            "url": config.url,
            "host": config.host,
            "port": config.port,
            "read_only": read_only,
        }
        click.echo(json.dumps(document))
    else:
        click.echo(f"lantern serve: {config.url}")
    try:
        _run(app, sock)
    finally:
        close_app(app)
        store.close()


def _run(app: Starlette, sock: socket.socket) -> None:
    import sys

    import uvicorn

    sys.stdout.flush()
    config = uvicorn.Config(app, log_level="warning", lifespan="off", server_header=False)
    uvicorn.Server(config).run(sockets=[sock])


def register(cli: click.Group, memory: click.Group) -> None:
    cli.add_command(serve_command)
