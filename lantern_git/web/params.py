"""Every query parameter of every page, read in one place: a bad value is refused here with an
:class:`~lantern_git.errors.InvalidInput` naming the parameter (a 400), before the library is
called, so no value a person or a script types reaches the library in a shape it does not take
(a limit past what ``islice`` takes was once a 500, and ``/sources?limit=-1`` a page with a link
to ``offset=-1``).

The values the library checks itself (a status, a kind, a revision, an id) are passed on as
text: its message is the CLI's, and its refusal is mapped to a status once (``http_status``).
Paging follows the one paging rule (:class:`~lantern_git.core.paging.Page`): ``limit`` 0 is no
limit on every listing.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from starlette.datastructures import QueryParams
from starlette.requests import Request

from ..core.paging import Page
from ..errors import InvalidInput

# How a checkbox or a link says yes.
YES = "1"


class Params:
    """A request's query parameters (and its path's, such as a record id), each read through
    the accessor of its type. A page's ``data`` takes one; a test builds it without HTTP:
    ``Params(QueryParams("limit=5"), {"record_id": "..."})``."""

    def __init__(self, query: QueryParams, path: Mapping[str, str] | None = None):
        self.query = query
        self.path_params = dict(path or {})

    @classmethod
    def of(cls, request: Request) -> Params:
        return cls(request.query_params, request.path_params)

    def path(self, name: str) -> str:
        """A part of the page's path (``/records/{record_id}``)."""
        return self.path_params[name]

    def text(self, name: str, default: str = "") -> str:
        return self.query.get(name, default)

    def optional(self, name: str) -> str | None:
        """The value, or None when it is missing or empty."""
        return self.query.get(name) or None

    def texts(self, name: str) -> list[str]:
        return self.query.getlist(name)

    def words(self, name: str) -> list[str]:
        """Every whitespace-separated word of every value (scopes hold no whitespace, so one
        field may give several)."""
        return [word for value in self.texts(name) for word in value.split()]

    def flag(self, name: str) -> bool:
        return self.query.get(name) == YES

    def number(self, name: str, default: int | None = None) -> int | None:
        """A whole number, or ``default`` when it is missing or empty; the library checks its
        range."""
        value = self.query.get(name)
        if value is None or value.strip() == "":
            return default
        try:
            return int(value)
        except ValueError:  # not a number, or more digits than Python converts
            shown = value if len(value) <= 40 else value[:40] + "…"
            raise InvalidInput(
                f"{name}: expected a whole number, got {shown!r}", code="usage_error"
            ) from None

    def page(self, default_limit: int) -> Page:
        """``limit`` (0: no limit) and ``offset``, under the one paging rule."""
        return Page(self.number("limit", default_limit), self.number("offset", 0) or 0)

    def choice(self, name: str, allowed: Sequence[str], default: str = "") -> str:
        """One of ``allowed`` (or ``default`` when missing or empty)."""
        value = self.query.get(name) or default
        if value != default and value not in allowed:
            raise InvalidInput(
                f"{name}: must be one of {', '.join(allowed)}; got {value!r}", code="usage_error"
            )
        return value
