"""Lantern: a local-first memory store for agent runtimes, as markdown records in git.

The library is the API; the CLI and the MCP server are thin layers over it::

    from lantern_git import Store

    store = Store.init("/tmp/memory")
    record = store.add("Ana prefers short answers.", kind="preference", scope="user:ana")
    store.list(scopes=("user:ana",))

Heavy modules (pygit2, whoosh) are imported when first used, so importing this is cheap.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

__all__ = [
    "AmbiguousId",
    "CheckFailed",
    "InvalidInput",
    "LanternError",
    "NotFound",
    "Record",
    "RecordQuery",
    "Store",
    "StoreError",
    "ValidationError",
    "__version__",
]

from .errors import (
    AmbiguousId,
    CheckFailed,
    InvalidInput,
    LanternError,
    NotFound,
    StoreError,
    ValidationError,
)

if TYPE_CHECKING:
    from .index.search import RecordQuery
    from .record import Record
    from .store import Store


def __getattr__(name: str) -> Any:
    if name == "Store":
        from .store import Store

        return Store
    if name == "Record":
        from .record import Record

        return Record
    if name == "RecordQuery":
        from .index.search import RecordQuery

        return RecordQuery
    raise AttributeError(name)
