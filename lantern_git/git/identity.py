"""Who a commit names: the author and the committer lantern writes, in git's own order.

First match wins (docs/identity.md):

1. ``--author "Name <email>"``, then ``LANTERN_AUTHOR``: lantern's own choice, for the author
   and the committer alike.
2. git's identity, read as git reads it: ``GIT_AUTHOR_NAME`` and ``GIT_AUTHOR_EMAIL`` from the
   environment (``GIT_COMMITTER_NAME``/``GIT_COMMITTER_EMAIL`` for the committer), each part
   before ``user.name``/``user.email`` from git's config. CI jobs and containers often set only
   the environment variables; git honours them, so lantern does too.
   When only one role is complete, it serves both (lantern has always committed as its
   author).
3. ``login <login@hostname>`` for any part still missing, with one warning per process. Lantern
   writes no git config.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..core.config import environment

if TYPE_CHECKING:
    import pygit2

Warn = Callable[[str], None]

_warned = False


@dataclass(frozen=True)
class Identity:
    """The author and committer of lantern's next commit, each ``Name <email>``."""

    author: str
    committer: str


def resolve_identity(
    repo: pygit2.Repository | None, author: str | None, warn: Warn | None
) -> Identity:
    """The identity a commit to ``repo`` takes (``repo`` None: a store not created yet, read
    from the user's git config). ``author`` is ``--author``; a malformed one is refused where
    the commit is made."""
    chosen = author or environment().author
    if chosen:
        return Identity(chosen, chosen)
    config = _config_reader(repo)
    parts = {
        role: (
            _env(f"GIT_{role}_NAME") or config("user.name"),
            _env(f"GIT_{role}_EMAIL") or config("user.email"),
        )
        for role in ("AUTHOR", "COMMITTER")
    }
    whole = {role: f"{n} <{e}>" for role, (n, e) in parts.items() if n and e}
    # One whole identity serves both roles, as lantern's own choice does.
    author = whole.get("AUTHOR") or whole.get("COMMITTER")
    if author is None:
        author = _fallback(*parts["AUTHOR"], warn)
    return Identity(author, whole.get("COMMITTER") or author)


def _fallback(name: str | None, email: str | None, warn: Warn | None) -> str:
    """``login <login@hostname>`` for the parts git has not got, saying so once."""
    import getpass
    import socket

    global _warned
    user = getpass.getuser() or "lantern"
    host = socket.gethostname() or "localhost"
    author = f"{name or user} <{email or f'{user}@{host}'}>"
    if not _warned and warn is not None:
        warn(
            f"lantern: no git identity is configured; committing as {author} "
            "(set git config user.name/user.email, GIT_AUTHOR_NAME/GIT_AUTHOR_EMAIL, "
            'or LANTERN_AUTHOR="Name <email>")'
        )
        _warned = True
    return author


def _env(name: str) -> str | None:
    # git refuses an empty name or email; an empty variable is taken as not set.
    return os.environ.get(name, "").strip() or None


def _config_reader(repo: pygit2.Repository | None) -> Callable[[str], str | None]:
    """``user.name`` and such from the repository's config (every level), or without a
    repository from the user's and the system's."""
    import pygit2

    configs: list[pygit2.Config] = []
    try:
        if repo is not None:
            configs.append(repo.config)
        else:
            for opener in (
                pygit2.Config.get_global_config,
                pygit2.Config.get_xdg_config,
                pygit2.Config.get_system_config,
            ):
                try:
                    configs.append(opener())
                except (OSError, pygit2.GitError):
                    continue
    except (OSError, pygit2.GitError):
        pass

    def read(key: str) -> str | None:
        for config in configs:
            try:
                value = config[key]
            except (KeyError, ValueError, pygit2.GitError):
                continue
            if isinstance(value, str) and value.strip():
                return value.strip()
        return None

    return read
