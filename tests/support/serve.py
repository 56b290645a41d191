"""What the tests of ``lantern serve`` share: an app over a real store, a client that has
the token, a real ``lantern serve`` process with a logged-in HTTP client, and a reader of the
markup a page really contains."""

from __future__ import annotations

import http.client
import re
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import urlsplit

from starlette.datastructures import QueryParams
from starlette.testclient import TestClient

from lantern_git.store import Store
from lantern_git.web.app import ServeConfig, close_app, create_app, open_store
from lantern_git.web.params import Params

from .cli import start_lantern
from .processes import first_line, stop

PORT = 8765
# The review branch ``lantern mcp --review`` writes to.
MCP_BRANCH = "refs/heads/lantern/review/mcp"


@contextmanager
def opened(path: Path, **kwargs):
    """The store at ``path`` opened as the CLI opens it (options may differ), closed after."""
    store = Store(str(path), **{"actor": "cli", **kwargs})
    try:
        yield store
    finally:
        store.close()


BASE = f"http://127.0.0.1:{PORT}"


@contextmanager
def served(path: Path, *, read_only: bool = False, author: str | None = None, login: bool = True):
    """A client of the app over the store at ``path``, opened as ``lantern serve`` opens it;
    with ``login``, it has visited the URL with the token (and so holds the cookie)."""
    store = open_store(str(path), author, read_only=read_only)
    signature = store.git.signature(author)
    config = ServeConfig(
        port=PORT, read_only=read_only, reviewer=f"{signature.name} <{signature.email}>"
    )
    app = create_app(store, config)
    client = TestClient(app, base_url=BASE)
    try:
        if login:
            first = client.get(f"/?token={config.token}")
            assert first.status_code == 200, first.text
        yield client, config
    finally:
        client.close()
        close_app(app)
        store.close()


class Markup(HTMLParser):
    """Every element of a page, with its attributes, and its text."""

    def __init__(self, html: str):
        super().__init__(convert_charrefs=True)
        self.elements: list[tuple[str, dict[str, str | None]]] = []
        self.chunks: list[str] = []
        self.feed(html)
        self.close()

    def handle_starttag(self, tag, attrs):
        self.elements.append((tag, dict(attrs)))

    def handle_startendtag(self, tag, attrs):
        self.elements.append((tag, dict(attrs)))

    def handle_data(self, data):
        self.chunks.append(data)

    @property
    def text(self) -> str:
        return "".join(self.chunks)

    def tags(self, name: str) -> list[dict[str, str | None]]:
        return [attrs for tag, attrs in self.elements if tag == name]

    def dangers(self) -> list[str]:
        """Markup no stored text may become: a script, an event handler, a script URL, an
        element of the kinds the hostile texts carry."""
        found = []
        for tag, attrs in self.elements:
            if tag in ("script", "img", "iframe", "svg", "object", "embed"):
                found.append(f"<{tag}>")
            for name, value in attrs.items():
                if name.startswith("on"):
                    found.append(f"{tag} {name}=")
                scripted = re.match(r"\s*(javascript|data|vbscript):", value or "", re.I)
                if name in ("href", "src", "action", "formaction") and scripted:
                    found.append(f"{tag} {name}={value}")
        return found


def forms(html: str) -> list[dict[str, str | None]]:
    return Markup(html).tags("form")


# Bounds of every wait here.
START_TIMEOUT = 60
REQUEST_TIMEOUT = 30


@dataclass
class Server:
    """A running ``lantern serve`` and a browser's cookie for it."""

    host: str
    port: int
    token: str
    cookies: dict[str, str] = field(default_factory=dict)

    def request(
        self,
        method: str,
        target: str,
        *,
        headers: dict[str, str] | None = None,
        body: str | None = None,
    ) -> tuple[int, str]:
        connection = http.client.HTTPConnection(self.host, self.port, timeout=REQUEST_TIMEOUT)
        try:
            sent = {"Host": f"{self.host}:{self.port}", **(headers or {})}
            if self.cookies:
                sent["Cookie"] = "; ".join(f"{k}={v}" for k, v in self.cookies.items())
            if body is not None:
                sent.setdefault("Content-Type", "application/x-www-form-urlencoded")
            connection.request(method, target, body=body, headers=sent)
            response = connection.getresponse()
            return response.status, response.read().decode()
        finally:
            connection.close()

    def login(self) -> None:
        connection = http.client.HTTPConnection(self.host, self.port, timeout=REQUEST_TIMEOUT)
        try:
            connection.request("GET", f"/?token={self.token}")
            response = connection.getresponse()
            response.read()
            assert response.status == 303, response.status
            name, value = response.getheader("set-cookie", "").split(";", 1)[0].split("=", 1)
            self.cookies[name] = value
        finally:
            connection.close()

    def csrf(self) -> str:
        status, page = self.request("GET", "/review")
        assert status == 200
        found = re.search(r'name="csrf" value="([^"]+)"', page)
        assert found, "the review page has no form"
        return found.group(1)


@contextmanager
def serving(path: Path, *args: str) -> Iterator[Server]:
    """``lantern serve`` on a free port, logged in; stopped (and reaped) afterwards."""
    with serve_process(path, *args) as (proc, line):
        assert line.startswith("lantern serve: http://"), (line, proc.poll())
        url = urlsplit(line.removeprefix("lantern serve: "))
        token = url.query.removeprefix("token=")
        server = Server(url.hostname or "", url.port or 0, token)
        server.login()
        yield server


# The one line ``lantern serve`` prints: its address and the token.
LINE = re.compile(r"^lantern serve: (http://([^/]+)/)\?token=([A-Za-z0-9_-]+)$")


@contextmanager
def serve_process(path: Path, *args: str) -> Iterator[tuple[subprocess.Popen, str]]:
    """``lantern serve`` on a free port as a process: (the process, the first line it printed);
    stopped (and reaped) afterwards."""
    proc = start_lantern("serve", "--store", str(path), "--port", "0", *args)
    try:
        yield proc, first_line(proc)
    finally:
        stop(proc)


def params(query: str = "", **path: str) -> Params:
    """A page's parameters as the web app parses them: the query string and the path's parts,
    for calling a view's ``data(store, params)`` without HTTP."""
    return Params(QueryParams(query), path)
