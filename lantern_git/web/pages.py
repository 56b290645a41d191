"""How a page becomes a response: its data computed by the library runner, rendered with the
Jinja environment, and a refused request (a :class:`~lantern_git.errors.LanternError`) mapped to
its HTTP status and the error page in one place (:meth:`Pages.show`).

A page's own module (``views/``) says only what the page shows (its ``data``); this module is
the one wrapper every page goes through.
"""

from __future__ import annotations

import dataclasses
import difflib
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, TypeVar
from urllib.parse import urlencode

from jinja2 import Environment, PackageLoader, StrictUndefined
from markupsafe import Markup
from starlette.requests import Request
from starlette.responses import HTMLResponse, Response

from ..core.hidden import display_lines, hidden_in, reveal
from ..core.timespec import field_time, human_time
from ..errors import LanternError, SemanticUnavailable
from .params import Params

if TYPE_CHECKING:
    from ..store import Store
    from .config import ServeConfig
    from .runner import Library

C = TypeVar("C")

# A lantern error's exit code (the CLI's) as an HTTP status, mapped once (see http_status); an
# error code that needs its own status, by code.
HTTP_STATUS = {2: 400, 3: 404, 4: 422}
HTTP_STATUS_BY_CODE = {"review_changed": 409}

Endpoint = Callable[[Request], Awaitable[Response]]


def http_status(err: LanternError) -> int:
    """The HTTP status of a refused request. A search mode the store cannot run (no embedder)
    is exit 1 on the CLI, a store's failure; on a page it is the asker's choice of mode, which
    the message tells how to make possible: 400. A stale review form is 409."""
    if isinstance(err, SemanticUnavailable):
        return 400
    return HTTP_STATUS_BY_CODE.get(err.code) or HTTP_STATUS.get(err.exit_code, 500)


class Pages:
    """What every page needs beyond its data: the server's store and config, the library
    runner, the templates."""

    def __init__(self, store: Store, config: ServeConfig, library: Library):
        self.store = store
        self.config = config
        self.library = library
        self.env = environment()

    def render(
        self, request: Request, template: str, context: dict[str, Any], status: int = 200
    ) -> Response:
        html = self.env.get_template(template).render(
            config=self.config,
            path=request.url.path,
            store_root=self.store.root,
            recovery_pending=self.store.read_only and self.store.recovery_pending,
            **context,
        )
        return HTMLResponse(html, status_code=status)

    def failure(self, request: Request, err: LanternError, status: int | None = None) -> Response:
        """The error page of a refused request: nothing was changed."""
        return self.render(request, "error.html", {"error": err}, status or http_status(err))

    async def show(
        self,
        request: Request,
        template: str,
        data: Callable[[Store, Params], Any],
        refused: LanternError | None = None,
    ) -> Response:
        """The page ``template`` shows ``data``'s context, computed as a read; a refused read
        is the error page. With ``refused`` (a write the page's form asked for and the library
        refused), the page as it is now with that error, at the error's status."""
        params = Params.of(request)
        try:
            context = await self.library.read(lambda store: data(store, params))
        except LanternError as err:
            return self.failure(request, err)
        fields = context_fields(context)
        if refused is None:
            return self.render(request, template, fields)
        return self.render(request, template, fields | {"error": refused}, http_status(refused))

    def view(self, template: str, data: Callable[[Store, Params], Any]) -> Endpoint:
        """The endpoint of a page that only reads: :meth:`show` of ``data``."""

        async def endpoint(request: Request) -> Response:
            return await self.show(request, template, data)

        return endpoint


def context_fields(context: Any) -> dict[str, Any]:
    """A page's context (a dataclass) as the template's names, one level deep: the values
    stay the objects they are (a record keeps its methods)."""
    return {f.name: getattr(context, f.name) for f in dataclasses.fields(context)}


def environment() -> Environment:
    env = Environment(
        loader=PackageLoader("lantern_git.web", "templates"),
        autoescape=True,
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        # Every value a page prints shows its hidden characters (core/hidden.py): a stored
        # right-to-left override must not make the browser show the opposite of the text.
        finalize=_shown,
    )
    env.filters["when"] = lambda value: human_time(value) if value is not None else ""
    env.globals["field_time"] = field_time
    env.globals["hidden_in"] = hidden_in
    env.globals["display_lines"] = display_lines
    env.tests["hidden"] = lambda value: bool(hidden_in(value))
    env.filters["short"] = lambda value: (value or "")[:12]
    env.globals["query"] = _query_string
    env.globals["content_diff"] = _content_diff
    return env


def _shown(value: Any) -> Any:
    """What ``{{ value }}`` prints: its hidden characters as ``<U+XXXX>``, and a list (a
    record's ``source_refs``, a field's old and new value on the Changes page) as its items,
    not as Python writes a list. Markup (a macro's output) was shown through here already."""
    if isinstance(value, Markup) or value is None:
        return value
    if isinstance(value, (list, tuple)):
        return ", ".join(reveal(str(item)) for item in value)
    return reveal(value if isinstance(value, str) else str(value))


def _query_string(params: dict[str, Any], **changes: Any) -> str:
    """``?a=1&b=2`` of ``params`` with ``changes`` applied (None removes a key)."""
    merged = {**params, **changes}
    pairs: list[tuple[str, str]] = []
    for key, value in merged.items():
        if value is None or value == "" or value is False:
            continue
        for one in value if isinstance(value, (list, tuple)) else [value]:
            pairs.append((key, str(one)))
    return "?" + urlencode(pairs) if pairs else "?"


def _content_diff(old: object, new: object) -> list[str]:
    """A line diff of two contents (either may be absent), as ``+``/``-``/`` `` lines."""
    before = display_lines(old) if isinstance(old, str) else []
    after = display_lines(new) if isinstance(new, str) else []
    return [line for line in difflib.ndiff(before, after) if not line.startswith("?")]
