"""``lantern review``: what writers left on review branches, record by record
(docs/review.md)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import click

from . import render, support
from .support import common, page_options, reason_option, writer

if TYPE_CHECKING:
    from ..core.paging import Page


def register(cli: click.Group, memory: click.Group) -> None:
    cli.add_command(review_command)


@click.group("review", invoke_without_command=True)
@page_options
@common
@click.pass_context
def review_command(ctx: click.Context, page: Page, as_json: bool, store_path: str | None) -> None:
    """Pending changes on review branches, record by record: fields old -> new.

    --limit and --offset page the review branches, by name."""
    if ctx.invoked_subcommand is not None:
        return
    store = support.open_store(store_path)
    review = store.review_list(limit=page.limit, offset=page.offset)
    evidence = (
        {}
        if as_json
        else {
            pending.id: store.sources.check_refs(pending.record)
            for pending in review.records
            if pending.record is not None and pending.record.source_refs
        }
    )
    render.emit_review(review, as_json, store.root, evidence)


def _decision_options(func: Callable[..., Any]) -> Callable[..., Any]:
    func = click.argument("ids", nargs=-1, metavar="ID...")(func)
    func = click.option(
        "--all", "everything", is_flag=True, help="Every pending change of the branch."
    )(func)
    func = click.option(
        "--branch", default=None, metavar="NAME", help="The review branch (lantern/review/NAME)."
    )(func)
    func = click.option(
        "--expect",
        default=None,
        metavar="TIP",
        help="The branch's tip you reviewed (lantern review --json, 7+ hex digits): when "
        "anything arrived on it since, nothing is decided (review_changed, exit 1).",
    )(func)
    return writer(reason_option(func))


def _decide(
    op: str,
    ids: tuple[str, ...],
    everything: bool,
    branch: str | None,
    expect: str | None,
    reason: str | None,
    as_json: bool,
    store_path: str | None,
    author: str | None,
) -> None:
    if bool(ids) == everything:
        raise click.UsageError("give record ids, or --all (not both)")
    store = support.open_store(store_path, author)
    call = store.review_accept if op == "accept" else store.review_reject
    wanted = None if everything else list(ids)
    decision = call(wanted, branch=branch, reason=reason, expect=expect)
    render.emit(decision, as_json, render.decision_lines)


@review_command.command("accept")
@_decision_options
def accept_command(
    ids: tuple[str, ...],
    everything: bool,
    branch: str | None,
    expect: str | None,
    reason: str | None,
    as_json: bool,
    store_path: str | None,
    author: str | None,
) -> None:
    """Bring pending records onto the store's branch in one commit, you as its author.

    A supersede is accepted whole: its new record and its old record's status change."""
    _decide("accept", ids, everything, branch, expect, reason, as_json, store_path, author)


@review_command.command("reject")
@_decision_options
def reject_command(
    ids: tuple[str, ...],
    everything: bool,
    branch: str | None,
    expect: str | None,
    reason: str | None,
    as_json: bool,
    store_path: str | None,
    author: str | None,
) -> None:
    """Drop pending records from their review branch, with a commit recording why.

    A supersede is rejected whole, as it is accepted."""
    _decide("reject", ids, everything, branch, expect, reason, as_json, store_path, author)
