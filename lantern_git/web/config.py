"""What ``lantern serve`` was started with (:class:`ServeConfig`): read by the app, the pages and
the guard, so it sits below all three."""

from __future__ import annotations

import secrets
from dataclasses import dataclass, field


@dataclass
class ServeConfig:
    """What a server was started with: where it answers, its tokens, who reviews."""

    host: str = "127.0.0.1"
    port: int = 8765
    token: str = field(default_factory=lambda: secrets.token_urlsafe(32))
    csrf: str = field(default_factory=lambda: secrets.token_urlsafe(32))
    read_only: bool = False
    reviewer: str = ""

    @property
    def url(self) -> str:
        shown = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{shown}:{self.port}/?token={self.token}"
