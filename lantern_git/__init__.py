"""Lantern: a local-first memory store for agent runtimes, as markdown records in git.

The library is the API; the CLI and the MCP server are thin layers over it::

    from lantern_git import Store

    store = Store.init("/tmp/memory")
    record = store.add("Ana prefers short answers.", kind="preference", scope="user:ana")
    store.list(scopes=("user:ana",))

Heavy modules (pygit2, whoosh) are imported when first used, so importing this is cheap.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

__all__ = [
    "AmbiguousId",
    "CheckFailed",
    "CheckReport",
    "HistoryEntry",
    "Hit",
    "InvalidInput",
    "LanternError",
    "LogEntry",
    "NotFound",
    "OperationLog",
    "Record",
    "RecordHistory",
    "RecordQuery",
    "ReviewChanged",
    "Store",
    "StoreError",
    "SyncReport",
    "ValidationError",
    "__version__",
]

from .errors import (
    AmbiguousId,
    CheckFailed,
    InvalidInput,
    LanternError,
    NotFound,
    ReviewChanged,
    StoreError,
    ValidationError,
)

if TYPE_CHECKING:
    from .memory.checker import CheckReport
    from .memory.history import HistoryEntry, LogEntry, OperationLog, RecordHistory
    from .model.query import Hit, RecordQuery
    from .model.record import Record
    from .store import Store
    from .sync import SyncReport

# The public classes and the module that defines each, imported on first use.
_LAZY = {
    "Store": ".store",
    "Record": ".model.record",
    "RecordQuery": ".model.query",
    "Hit": ".model.query",
    "HistoryEntry": ".memory.history",
    "LogEntry": ".memory.history",
    "RecordHistory": ".memory.history",
    "OperationLog": ".memory.history",
    "SyncReport": ".sync",
    "CheckReport": ".memory.checker",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(import_module(module, __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY})
