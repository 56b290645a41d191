"""Lantern's settings in one place: the ``LANTERN_*`` environment variables and the keys of a
store's ``lantern.yaml``, each read and checked here into a typed value.

Two frozen objects hold them: :class:`Environment` (read from ``os.environ`` by
:func:`environment`) and :class:`StoreSettings` (parsed from ``lantern.yaml`` when a store is
opened). A value that does not parse is kept as the :class:`~lantern_git.errors.InvalidInput`
that says so, and raised by :func:`value` where the setting is used: a bad ``review`` key fails
a write, not ``lantern check`` run to find it, as before there was this module.

Left out on purpose: ``LANTERN_FAULT`` (the crash tests' kill points, read once at import by
``git/repo.py`` so that a killed child process stops at the named point; it is a test switch,
not a setting) and ``LANTERN_DEBUG_INDEX`` (read by the index itself, which owns that trace).

Only the standard library and ``errors`` are imported: every command reads these settings.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from ..errors import InvalidInput

T = TypeVar("T")

# The writer lock waits this long (seconds) for another writer, unless LANTERN_LOCK_TIMEOUT.
DEFAULT_LOCK_TIMEOUT = 10.0
# What ``embedder:`` in lantern.yaml and LANTERN_EMBEDDER may name (see embedders.py).
EMBEDDER_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")
EMBEDDER_IMPORT_PATH = re.compile(r"[A-Za-z_][\w.]*:[A-Za-z_][\w.]*")
EMBEDDER_ENTRY_POINTS = "lantern_git.embedders"
NO_EMBEDDER = "none"

_TRUE = ("1", "true", "yes", "on")
_FALSE = ("", "0", "false", "no", "off")


def value(setting: T | InvalidInput) -> T:
    """A setting's value, or the error that says why it is not one."""
    if isinstance(setting, InvalidInput):
        raise setting
    return setting


@dataclass(frozen=True)
class Environment:
    """The ``LANTERN_*`` variables of one environment (None: not set)."""

    store: str | None = None
    author: str | None = None
    review: bool | InvalidInput | None = None
    review_name: str | None = None
    embedder: str | InvalidInput | None = None
    lock_timeout: float = DEFAULT_LOCK_TIMEOUT
    debug: bool = False
    progress: str = ""

    @classmethod
    def read(cls, environ: Mapping[str, str]) -> Environment:
        return cls(
            store=environ.get("LANTERN_STORE") or None,
            author=environ.get("LANTERN_AUTHOR") or None,
            review=_env_flag(environ.get("LANTERN_REVIEW")),
            review_name=environ.get("LANTERN_REVIEW_NAME") or None,
            embedder=_env_embedder(environ.get("LANTERN_EMBEDDER", "").strip()),
            lock_timeout=_lock_timeout(environ.get("LANTERN_LOCK_TIMEOUT")),
            debug=environ.get("LANTERN_DEBUG") == "1",
            progress=environ.get("LANTERN_PROGRESS", ""),
        )


def environment() -> Environment:
    """The settings of this process's environment, as it is now."""
    return Environment.read(os.environ)


@dataclass(frozen=True)
class StoreSettings:
    """The keys of a store's ``lantern.yaml`` (None: absent)."""

    path: str
    format: int
    review: bool | InvalidInput | None = None
    sync_review_branches: bool | InvalidInput | None = None
    embedder: str | InvalidInput | None = None

    @classmethod
    def parse(cls, data: dict[str, Any], path: str, format: int) -> StoreSettings:
        return cls(
            path=path,
            format=format,
            review=_yaml_flag("review", data.get("review")),
            sync_review_branches=_yaml_flag(
                "sync_review_branches", data.get("sync_review_branches")
            ),
            embedder=_yaml_embedder(data.get("embedder"), path),
        )


def _env_flag(text: str | None) -> bool | InvalidInput | None:
    if text is None:
        return None
    word = text.strip().lower()
    if word in _TRUE:
        return True
    if word in _FALSE:
        return False
    return InvalidInput(
        f"LANTERN_REVIEW: {text!r} is not 1 or 0 (or true/false)", code="invalid_review"
    )


def _yaml_flag(key: str, configured: object) -> bool | InvalidInput | None:
    if configured is None or isinstance(configured, bool):
        return configured
    return InvalidInput(
        f"lantern.yaml: {key!r} must be true or false, got {configured!r}", code="invalid_review"
    )


def _env_embedder(text: str) -> str | InvalidInput | None:
    if not text:
        return None
    if text != NO_EMBEDDER and not (
        EMBEDDER_NAME.fullmatch(text) or EMBEDDER_IMPORT_PATH.fullmatch(text)
    ):
        return InvalidInput(
            f"LANTERN_EMBEDDER: {text!r} is not wordllama, none, an entry-point name or a "
            "module:attribute import path",
            code="invalid_embedder",
        )
    return text


def _yaml_embedder(configured: object, path: str) -> str | InvalidInput | None:
    if configured is None:
        return None
    if isinstance(configured, str) and EMBEDDER_NAME.fullmatch(configured.strip()):
        return configured.strip()
    hint = (
        " (an import path is taken only from the LANTERN_EMBEDDER environment variable: "
        "lantern.yaml travels with git sync, and a synced file must not choose code to "
        "import)"
        if isinstance(configured, str) and ":" in configured
        else ""
    )
    return InvalidInput(
        f"{path}: 'embedder' must be wordllama, none or the name of an entry point in the "
        f"{EMBEDDER_ENTRY_POINTS} group, got {configured!r}{hint}",
        code="invalid_embedder",
    )


def _lock_timeout(text: str | None) -> float:
    # A bad value is not worth refusing a write for: the default wait is safe.
    try:
        seconds = float(DEFAULT_LOCK_TIMEOUT if text is None else text)
    except ValueError:
        return DEFAULT_LOCK_TIMEOUT
    return seconds if seconds >= 0 else DEFAULT_LOCK_TIMEOUT
