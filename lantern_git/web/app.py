"""The web app of ``lantern serve``: the routes, the guard and the store, wired.

Each page is a module of :mod:`lantern_git.web.views` (what it shows, computed apart from any
request); :class:`~lantern_git.web.pages.Pages` runs it, renders it and maps a refusal to a
status, once for every page. The store is opened once, with the watch the MCP server uses
(``Store(watch=True)``), so a page with nothing changed answers from the index it kept, and a
CLI write, a hand edit or a ``git pull`` shows on the next load. Library calls run in worker
threads: reads side by side, each on a store of its own, writes one at a time (see
:class:`~lantern_git.web.runner.Library`); the writer lock serializes the server against other
processes.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from importlib import resources
from typing import TYPE_CHECKING

from starlette.applications import Starlette
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from .config import ServeConfig
from .pages import Pages
from .runner import Library
from .security import WILDCARDS, Guard, allowed_hosts
from .views import changes, entity, record, records, review, source, sources, status

if TYPE_CHECKING:
    from ..store import Store

__all__ = ["ServeConfig", "close_app", "create_app", "open_store"]


def open_store(
    path: str | None,
    author: str | None,
    *,
    read_only: bool = False,
    warn: Callable[[str], None] | None = None,
) -> Store:
    """The store as ``lantern serve`` keeps it: watched, and with the CLI's actor, so that the
    library's self-approval rule treats a person at the browser as at the terminal (a change
    written from the CLI in review mode under the same review name is not theirs to accept).
    ``read_only`` (``--read-only``) opens it so that nothing writes it, not even the repair of
    a cut-off write: the pages say that repair is pending instead."""
    from ..core.progress import lines
    from ..store import Store

    store = Store.discover(
        path, actor="cli", author=author, watch=True, read_only=read_only, warn=warn or _warn_once()
    )
    # A page that needs the index built (a fresh clone) waits for the whole index, never shows
    # part of it, and the server's log says how far the build is.
    store.progress = lines
    return store


def _warn_once() -> Callable[[str], None]:
    """A warning printer that prints each warning once: a read-only server is told of a
    pending repair by every read, and its log should say so once."""
    import sys

    seen: set[str] = set()

    def warn(message: str) -> None:
        if message not in seen:
            seen.add(message)
            print(message, file=sys.stderr)

    return warn


def close_app(app: Starlette) -> None:
    """Close what :func:`create_app` opened (its readers' stores)."""
    app.state.library.close()


def create_app(store: Store, config: ServeConfig) -> Starlette:
    """The app over ``store``: every route behind :class:`~.security.Guard`. Its reads run on
    stores opened like ``store``; :func:`close_app` closes them."""

    def open_reader() -> Store:
        return open_store(
            store.root, store.workspace.author, read_only=config.read_only, warn=store.warn
        )

    library = Library(store, open_reader)
    pages = Pages(store, config, library)
    static = resources.files("lantern_git.web") / "static"
    routes = [
        Route("/", pages.view(records.TEMPLATE, records.data)),
        Route("/records/{record_id}", pages.view(record.TEMPLATE, record.data)),
        Route("/entities/{key}", pages.view(entity.TEMPLATE, entity.data)),
        Route("/sources", pages.view(sources.TEMPLATE, sources.data)),
        Route("/sources/{source_id}", pages.view(source.TEMPLATE, source.data)),
        Route("/review", pages.view(review.TEMPLATE, review.data)),
        Route("/review/accept", review.decide(pages, "accept"), methods=["POST"]),
        Route("/review/reject", review.decide(pages, "reject"), methods=["POST"]),
        # The server keeps the changes and status pages' costly answers between loads.
        Route(
            "/changes",
            pages.view(changes.TEMPLATE, partial(changes.data, memo=changes.ChangesMemo())),
        ),
        Route(
            "/status", pages.view(status.TEMPLATE, partial(status.data, memo=status.StatusMemo()))
        ),
        Mount("/static", StaticFiles(directory=str(static)), name="static"),
    ]
    app = Starlette(routes=routes)
    app.state.library = library
    app.add_middleware(
        Guard,
        token=config.token,
        hosts=allowed_hosts(config.host, config.port),
        port=config.port,
        read_only=config.read_only,
        any_address=config.host in WILDCARDS,
    )
    return app
