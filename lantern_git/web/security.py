"""The guard in front of every page: the server holds a person's memory, so a request that
does not come from that person's browser, through the address the server was bound to, gets
nothing.

- The access token (printed once with the URL, as Jupyter does) is taken from ``?token=`` and
  kept in an HttpOnly, SameSite=Strict cookie; the visit is redirected to the same page without
  it, so the token does not stay in the address bar or the history. Every other request needs
  the cookie. Tokens are compared in constant time.
- A ``Host`` header other than the bound ``host:port`` (and ``localhost:port`` beside
  ``127.0.0.1``) is refused: a DNS-rebinding page, whose name resolves to 127.0.0.1, sends its
  own name there and never reaches the store.
- A request that changes something (any method but GET and HEAD) from a page of another
  origin is refused (403) before its cookie or CSRF token is looked at: a browser names the
  page that sent it in ``Origin`` and says ``Sec-Fetch-Site: cross-site`` (or ``same-site``).
  The cookie is SameSite=Strict and the form carries a CSRF token, but either can fail on its
  own (an old browser, a token leaked into a log); the browser's own word on where a request
  came from is a third, independent wall. ``same-site`` is refused too, because another port
  of the same host (any local web app) is the same *site*. The pages' ``no-referrer`` policy
  makes a browser send ``Origin: null`` for their own forms, so ``null`` passes only beside
  ``Sec-Fetch-Site: same-origin``. A request that names no origin (curl, a script holding the
  token) is judged by its token and CSRF token alone.
- Every response says: no script runs (the pages have none), nothing is sniffed, no referrer
  leaves, no frame embeds it.

The CSRF token each form carries is checked by the POST handlers (:func:`csrf_ok`), before they
call the library.
"""

from __future__ import annotations

import hmac
from collections.abc import Iterable
from urllib.parse import urlencode

from starlette.datastructures import Headers, QueryParams
from starlette.responses import PlainTextResponse, RedirectResponse, Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

# No script at all; styles and images from the server itself; forms post only to it.
CONTENT_SECURITY_POLICY = (
    "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; "
    "frame-ancestors 'none'; base-uri 'none'"
)
SECURITY_HEADERS = [
    (b"content-security-policy", CONTENT_SECURITY_POLICY.encode()),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
    (b"x-frame-options", b"DENY"),
    (b"cache-control", b"no-store"),
]


def same(given: str | None, expected: str) -> bool:
    """Whether a token given by a request is the expected one, in constant time."""
    if not given:
        return False
    return hmac.compare_digest(given.encode("utf-8", "surrogatepass"), expected.encode())


def cookie_name(port: int) -> str:
    # Cookies are not kept apart by port: two servers on one host need two names.
    return f"lantern_token_{port}"


WILDCARDS = ("0.0.0.0", "::")
# Methods that only read: every other method may change the store.
SAFE_METHODS = ("GET", "HEAD")
# What ``Sec-Fetch-Site`` says of a request sent from another page than this server's.
FOREIGN_FETCH = ("cross-site", "same-site")


def allowed_hosts(host: str, port: int) -> set[str]:
    """The ``Host`` headers that name the bound address."""
    shown = f"[{host}]" if ":" in host else host
    hosts = {f"{shown}:{port}".lower()}
    if host in ("127.0.0.1", "::1", *WILDCARDS):
        hosts.add(f"localhost:{port}")
    return hosts


def names_an_address(header: str, port: int) -> bool:
    """Whether a ``Host`` header is an IP address (not a name) with the bound port: what a
    browser sends to a server bound to every address (``0.0.0.0``) when it is reached by one of
    them. DNS rebinding needs a name, so an address cannot be it."""
    import ipaddress

    address, sep, given = header.rpartition(":")
    if not sep or given != str(port):
        return False
    if address.startswith("[") and address.endswith("]"):
        address = address[1:-1]
    try:
        ipaddress.ip_address(address)
    except ValueError:
        return False
    return True


class Guard:
    """ASGI middleware: Host check, origin check of writes, token check, security headers,
    read-only POST refusal."""

    def __init__(
        self,
        app: ASGIApp,
        *,
        token: str,
        hosts: Iterable[str],
        port: int,
        read_only: bool,
        any_address: bool = False,
    ):
        self.app = app
        self.token = token
        self.hosts = {h.lower() for h in hosts}
        self.port = port
        self.cookie = cookie_name(port)
        self.read_only = read_only
        # Bound to every address (0.0.0.0): reached by any of them, each an IP literal.
        self.any_address = any_address

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                message.setdefault("headers", [])
                message["headers"] = [*message["headers"], *SECURITY_HEADERS]
            await send(message)

        response = self.refusal(scope)
        if response is not None:
            await response(scope, receive, send_with_headers)
            return
        await self.app(scope, receive, send_with_headers)

    def refusal(self, scope: Scope) -> Response | None:
        """The response that refuses this request, or None to let it through: a foreign Host
        (400), a write sent from another origin (403), a wrong token (403) or none (401), a
        write to a read-only server (403); in that order, so no refusal depends on a later
        check (the module's docstring says what each one stops)."""
        headers = Headers(scope=scope)
        host = headers.get("host", "").lower()
        known = host in self.hosts or (self.any_address and names_an_address(host, self.port))
        if not known:
            return PlainTextResponse(
                "Bad Host header: this server answers only at the address it printed.\n", 400
            )
        if scope.get("method") not in SAFE_METHODS and from_another_origin(headers, host):
            return PlainTextResponse(
                "Refused: this request was sent from a page of another site, not from "
                "lantern serve's own pages (nothing was changed).\n",
                403,
            )
        query = QueryParams(scope.get("query_string", b"").decode("latin-1"))
        if "token" in query:
            if not same(query.get("token"), self.token):
                return PlainTextResponse("Wrong token.\n", 403)
            rest = urlencode([(k, v) for k, v in query.multi_items() if k != "token"])
            # One leading slash: "//host/..." would send the browser to another server.
            target = "/" + scope.get("path", "/").lstrip("/") + (f"?{rest}" if rest else "")
            redirect = RedirectResponse(target, status_code=303)
            redirect.set_cookie(self.cookie, self.token, httponly=True, samesite="strict", path="/")
            return redirect
        cookies = _cookies(headers)
        if not same(cookies.get(self.cookie), self.token):
            return PlainTextResponse(
                "This page needs the access token: open the URL that lantern serve printed.\n",
                401,
            )
        if self.read_only and scope.get("method") not in SAFE_METHODS:
            return PlainTextResponse("This server is read-only (lantern serve --read-only).\n", 403)
        return None


def from_another_origin(headers: Headers, host: str) -> bool:
    """Whether the browser says the request came from a page outside this server: an
    ``Origin`` other than ``http://`` + the (already checked) ``Host`` it was sent to (``null``,
    an opaque origin, included), or ``Sec-Fetch-Site`` of another site or a sibling port."""
    site = headers.get("sec-fetch-site", "").strip().lower()
    if site in FOREIGN_FETCH:
        return True
    origin = headers.get("origin")
    if origin is None:
        return False
    origin = origin.strip().lower()
    if origin == "null" and site == "same-origin":
        # What a browser sends for a form on these very pages: their Referrer-Policy
        # (no-referrer) makes it hide the origin, and Sec-Fetch-Site vouches instead.
        return False
    return origin != f"http://{host}"


def _cookies(headers: Headers) -> dict[str, str]:
    from starlette.requests import cookie_parser

    found: dict[str, str] = {}
    for value in headers.getlist("cookie"):
        found.update(cookie_parser(value))
    return found


def csrf_ok(form_value: object, expected: str) -> bool:
    """Whether a form's ``csrf`` field is the server's CSRF token."""
    return isinstance(form_value, str) and same(form_value, expected)
