"""``lantern serve``'s guard (lantern_git/web/security.py) as the pure decision it is: each rule
asked directly, request by request, with the answers its docstring promises. The same rules
through the app, over a real store, are in tests/surfaces/test_serve.py; these are quick enough
to run against every mutant of the module (benchmarks/mutation.py)."""

from __future__ import annotations

import anyio
import pytest
from starlette.responses import PlainTextResponse

from lantern_git.web.security import (
    CONTENT_SECURITY_POLICY,
    Guard,
    allowed_hosts,
    cookie_name,
    csrf_ok,
    names_an_address,
    same,
)

PORT = 8765
TOKEN = "t0ken-of-the-server_" + "x" * 23


def scope(
    host: str | None = f"127.0.0.1:{PORT}",
    *,
    path: str = "/records",
    query: str = "",
    cookie: str | None = None,
    method: str = "GET",
    more: dict[str, str] | None = None,
) -> dict:
    headers = []
    if host is not None:
        headers.append((b"host", host.encode("latin-1")))
    if cookie is not None:
        headers.append((b"cookie", cookie.encode("latin-1")))
    for name, value in (more or {}).items():
        headers.append((name.lower().encode("latin-1"), value.encode("latin-1")))
    return {
        "type": "http",
        "method": method,
        "path": path,
        "query_string": query.encode("latin-1"),
        "headers": headers,
    }


def guard(host: str = "127.0.0.1", read_only: bool = False, **more) -> Guard:
    return Guard(
        app=lambda *_: None,  # type: ignore[arg-type]
        token=TOKEN,
        hosts=allowed_hosts(host, PORT),
        port=PORT,
        read_only=read_only,
        **more,
    )


def status(response) -> int | None:
    return None if response is None else response.status_code


LOGGED_IN = f"lantern_token_{PORT}={TOKEN}"


# ---------------------------------------------------------------------------- the Host rule


def test_the_bound_address_and_localhost_beside_a_loopback_one_are_the_only_hosts():
    assert allowed_hosts("127.0.0.1", PORT) == {f"127.0.0.1:{PORT}", f"localhost:{PORT}"}
    assert allowed_hosts("::1", PORT) == {f"[::1]:{PORT}", f"localhost:{PORT}"}
    assert allowed_hosts("0.0.0.0", PORT) == {f"0.0.0.0:{PORT}", f"localhost:{PORT}"}
    assert allowed_hosts("::", PORT) == {f"[::]:{PORT}", f"localhost:{PORT}"}
    # A name or another address the server was bound to: that one only, lower-cased.
    assert allowed_hosts("My-Box.lan", PORT) == {f"my-box.lan:{PORT}"}
    assert allowed_hosts("192.168.1.20", PORT) == {f"192.168.1.20:{PORT}"}


def test_an_address_with_the_port_is_an_address_and_a_name_is_not():
    for header in (
        f"192.168.1.20:{PORT}",
        f"[fe80::1]:{PORT}",
        f"[2001:db8::a:b]:{PORT}",
        f"[::1]:{PORT}",
    ):
        assert names_an_address(header, PORT), header
    for header in (
        f"evil.example:{PORT}",
        f"192.168.1.20:{PORT + 1}",
        f"192.168.1.20:{PORT - 1}",
        "192.168.1.20",
        f"[fe80::1]:{PORT}0",
        f"[fe80::1:{PORT}",  # a bracket not closed
        f"fe80::1]:{PORT}",
        f"192.168.1.256:{PORT}",
        f":{PORT}",
        "",
    ):
        assert not names_an_address(header, PORT), header


@pytest.mark.parametrize(
    "host",
    [
        f"192.168.1.20:{PORT}",
        f"[::1]:{PORT}",
        f"evil.example:{PORT}",
        f"127.0.0.1:{PORT + 1}",
        "127.0.0.1",
        "",
        None,
    ],
)
def test_a_loopback_bind_refuses_every_other_host_even_with_the_token(host):
    for request in (scope(host, cookie=LOGGED_IN), scope(host, query=f"token={TOKEN}")):
        refused = guard().refusal(request)
        assert status(refused) == 400, host
        assert b"Bad Host header" in refused.body
    # A guard made without saying it is bound to every address is not.
    assert status(guard().refusal(scope(f"10.0.0.1:{PORT}", cookie=LOGGED_IN))) == 400


def test_a_bind_to_every_address_takes_any_address_with_the_port_and_no_name():
    everywhere = guard("0.0.0.0", any_address=True)
    for host in (f"192.168.1.20:{PORT}", f"[2001:db8::a:b]:{PORT}", f"LOCALHOST:{PORT}"):
        assert everywhere.refusal(scope(host, cookie=LOGGED_IN)) is None, host
    for host in (f"evil.example:{PORT}", f"192.168.1.20:{PORT + 1}", "192.168.1.20"):
        assert status(everywhere.refusal(scope(host, cookie=LOGGED_IN))) == 400, host


# ---------------------------------------------------------------------------- the token


def test_the_token_in_the_url_becomes_a_strict_httponly_cookie_and_leaves_the_address():
    asked = f"status=all&token={TOKEN}&kind=fact&view=wide&a=1"
    first = guard().refusal(scope(path="/records", query=asked))
    assert status(first) == 303
    assert first.headers["location"] == "/records?status=all&kind=fact&view=wide&a=1"
    cookie = first.headers["set-cookie"]
    assert cookie.startswith(f"lantern_token_{PORT}={TOKEN};")
    for attribute in ("HttpOnly", "SameSite=strict", "Path=/"):
        assert attribute.lower() in cookie.lower(), cookie
    alone = guard().refusal(scope(path="/", query=f"token={TOKEN}"))
    assert alone.headers["location"] == "/"
    # "//evil.example/x" would leave the server: one leading slash only.
    away = guard().refusal(scope(path="//evil.example/x", query=f"token={TOKEN}"))
    assert away.headers["location"] == "/evil.example/x"


@pytest.mark.parametrize("given", ["", "wrong", TOKEN[:-1], TOKEN + "x", TOKEN.upper(), "é"])
def test_a_wrong_token_in_the_url_is_refused_and_sets_no_cookie(given):
    refused = guard().refusal(scope(query=f"token={given}", cookie=LOGGED_IN))
    assert status(refused) == 403 and "set-cookie" not in refused.headers


@pytest.mark.parametrize(
    "cookie",
    [
        None,
        "",
        f"lantern_token_{PORT}=",
        f"lantern_token_{PORT}={TOKEN[:-1]}",
        f"lantern_token_{PORT + 1}={TOKEN}",  # another server's cookie
        f"lantern_token={TOKEN}",
    ],
)
def test_without_the_cookie_every_request_is_401(cookie):
    refused = guard().refusal(scope(cookie=cookie))
    assert status(refused) == 401
    assert b"needs the access token" in refused.body


def test_the_cookie_is_found_among_others_and_lets_the_request_through():
    assert guard().refusal(scope(cookie=f"a=1; {LOGGED_IN}; b=2")) is None
    assert guard().refusal(scope(host=f"localhost:{PORT}", cookie=LOGGED_IN)) is None
    assert cookie_name(PORT) != cookie_name(PORT + 1)


def test_read_only_refuses_every_write_method_and_lets_reads_through():
    reader = guard(read_only=True)
    for method in ("GET", "HEAD"):
        assert reader.refusal(scope(cookie=LOGGED_IN, method=method)) is None
    for method in ("POST", "PUT", "DELETE", "PATCH"):
        refused = reader.refusal(scope(cookie=LOGGED_IN, method=method))
        assert status(refused) == 403 and b"read-only" in refused.body
    assert guard().refusal(scope(cookie=LOGGED_IN, method="POST")) is None


OWN = f"http://127.0.0.1:{PORT}"


@pytest.mark.parametrize(
    "headers",
    [
        {"Origin": "http://evil.com"},
        {"Origin": "http://evil.com", "Sec-Fetch-Site": "cross-site"},
        {"Sec-Fetch-Site": "cross-site"},
        {"Sec-Fetch-Site": "same-site"},
        {"Sec-Fetch-Site": " Same-Site "},
        {"Origin": f"http://127.0.0.1:{PORT + 1}", "Sec-Fetch-Site": "same-site"},
        {"Origin": "null"},
        {"Origin": "null", "Sec-Fetch-Site": "cross-site"},
        {"Origin": f"https://127.0.0.1:{PORT}"},
        {"Origin": OWN, "Sec-Fetch-Site": "cross-site"},
        {"Origin": OWN + "/"},
        # Only null is vouched for by same-origin, and every other origin is compared whole
        # (these sort before and after the server's own and null).
        {"Origin": "http://evil.com", "Sec-Fetch-Site": "same-origin"},
        {"Origin": "ws://evil.com", "Sec-Fetch-Site": "same-origin"},
        {"Origin": f"http://0.0.0.0:{PORT}"},
        {"Origin": "ftp://evil.com"},
    ],
)
def test_a_write_from_another_origin_is_refused_before_its_token_counts(headers):
    for cookie in (LOGGED_IN, None):
        refused = guard().refusal(scope(cookie=cookie, method="POST", more=headers))
        assert status(refused) == 403 and b"another site" in refused.body, (headers, cookie)


@pytest.mark.parametrize(
    "headers",
    [
        {},
        {"Origin": OWN},
        {"Origin": f" {OWN.upper()} "},
        {"Origin": OWN, "Sec-Fetch-Site": "same-origin"},
        {"Origin": "null", "Sec-Fetch-Site": "same-origin"},
        {"Origin": "null", "Sec-Fetch-Site": " SAME-ORIGIN "},
        {"Sec-Fetch-Site": "same-origin"},
        {"Sec-Fetch-Site": "none"},
    ],
)
def test_a_write_from_the_servers_own_pages_or_no_page_goes_on_to_its_token(headers):
    assert guard().refusal(scope(cookie=LOGGED_IN, method="POST", more=headers)) is None
    # Its token still decides: the origin rule let it through to that check.
    assert status(guard().refusal(scope(method="POST", more=headers))) == 401


def test_reads_are_not_judged_by_their_origin():
    for method in ("GET", "HEAD"):
        foreign = {"Origin": "http://evil.com", "Sec-Fetch-Site": "cross-site"}
        assert guard().refusal(scope(cookie=LOGGED_IN, method=method, more=foreign)) is None
    for method in ("PUT", "DELETE", "PATCH"):
        refused = guard().refusal(scope(cookie=LOGGED_IN, method=method, more=foreign))
        assert status(refused) == 403, method


def test_tokens_are_compared_whole():
    assert same(TOKEN, TOKEN)
    for given in (None, "", TOKEN[:1], TOKEN[:-1], TOKEN + "x", TOKEN[1:], "\udcff"):
        assert not same(given, TOKEN), given
    assert csrf_ok(TOKEN, TOKEN)
    for given in (None, 1, b"token", [TOKEN], "", TOKEN[:1], TOKEN[:-1], TOKEN + "="):
        assert not csrf_ok(given, TOKEN), given


# ---------------------------------------------------------------------------- every response


def test_every_response_through_the_guard_carries_the_security_headers():
    async def app(scope, receive, send):
        await PlainTextResponse("through")(scope, receive, send)

    async def call(request: dict) -> tuple[int, dict[bytes, bytes]]:
        sent: list[dict] = []

        async def receive():
            return {"type": "http.request", "body": b"", "more_body": False}

        async def send(message):
            sent.append(message)

        wrapped = Guard(app, token=TOKEN, hosts=allowed_hosts("127.0.0.1", PORT), port=PORT,
                        read_only=False)  # fmt: skip
        await wrapped(request, receive, send)
        start, *rest = sent
        # The headers go on the response's start, and nothing is added to its body.
        assert start["type"] == "http.response.start"
        assert all(m["type"] == "http.response.body" and "headers" not in m for m in rest), rest
        return start["status"], dict(start["headers"])

    for request, expected in ((scope(cookie=LOGGED_IN), 200), (scope("evil"), 400)):
        code, headers = anyio.run(call, request)
        assert code == expected
        assert headers[b"content-security-policy"] == CONTENT_SECURITY_POLICY.encode()
        assert headers[b"x-content-type-options"] == b"nosniff"
        assert headers[b"referrer-policy"] == b"no-referrer"
        assert headers[b"x-frame-options"] == b"DENY"
        assert headers[b"cache-control"] == b"no-store"
    assert "default-src 'none'" in CONTENT_SECURITY_POLICY
    assert "script-src" not in CONTENT_SECURITY_POLICY


def test_what_is_not_an_http_request_goes_to_the_app_untouched():
    """Lifespan events (and websockets, which the app has none of) carry no Host or cookie:
    the guard passes them on as they are."""
    seen: list[str] = []

    async def app(scope, receive, send):
        seen.append(scope["type"])

    async def nothing():
        return {}

    async def unsent(message):
        raise AssertionError(f"the guard answered {message}")

    wrapped = Guard(app, token=TOKEN, hosts=allowed_hosts("127.0.0.1", PORT), port=PORT,
                    read_only=True)  # fmt: skip
    for kind in ("lifespan", "websocket"):
        anyio.run(wrapped, {"type": kind}, nothing, unsent)
    assert seen == ["lifespan", "websocket"]
