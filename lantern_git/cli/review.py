"""``lantern review``: what writers left on review branches, record by record (README, "Review
before memory")."""

from __future__ import annotations

import click

from .. import render
from . import support
from .support import common


def register(cli: click.Group, memory: click.Group) -> None:
    cli.add_command(review_command)


@click.group("review", invoke_without_command=True)
@common
@click.pass_context
def review_command(ctx: click.Context, as_json: bool, store_path: str | None) -> None:
    """Pending changes on review branches, record by record: fields old -> new."""
    if ctx.invoked_subcommand is not None:
        return
    store = support.open_store(store_path)
    render.emit_review(store.review_list(), as_json, store.root)
