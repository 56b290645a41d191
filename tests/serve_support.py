"""What the tests of ``lantern serve`` share: an app over a real store, a client that has
the token, and a reader of the markup a page really contains."""

from __future__ import annotations

import re
from contextlib import contextmanager
from html.parser import HTMLParser
from pathlib import Path

from starlette.testclient import TestClient

from lantern_git.web.app import ServeConfig, create_app, open_store

PORT = 8765
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
    client = TestClient(create_app(store, config), base_url=BASE)
    try:
        if login:
            first = client.get(f"/?token={config.token}")
            assert first.status_code == 200, first.text
        yield client, config
    finally:
        client.close()
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
