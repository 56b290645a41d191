"""Parsing the times users type: unix seconds, ISO 8601, or a duration from now; and the
one way a time is shown to a person.

The CLI's ``--expires-at`` and the MCP tools' ``expires_at`` both go through
:func:`parse_expiry`, so they accept the same texts and fail with the same message. Every
text a person reads (``memory history``, ``diff``, ``lantern review``, the pages of ``lantern
serve``) shows a time through :func:`human_time`; JSON keeps unix seconds.
"""

from __future__ import annotations

import re
import time
from datetime import datetime, timezone

from ..errors import InvalidInput
from .fields import Unset

# The record fields that hold unix seconds: shown as dates wherever a person reads them.
TIME_FIELDS = frozenset({"created_at", "updated_at", "expires_at"})

_RELATIVE = re.compile(r"([+-])(\d+)([smhdw])")
_UNIT_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}


def parse_time(text: str, *, name: str = "time", now: int | None = None) -> int:
    """Unix seconds from ``1767139200``, ``2026-12-31``, ``2026-12-31T08:00:00Z`` or ``+7d``.

    An ISO time without an offset is taken as UTC, so the same text means the same moment on
    every host that shares the store.
    """
    value = text.strip()
    if value.isdigit():
        return int(value)
    match = _RELATIVE.fullmatch(value)
    if match:
        sign, amount, unit = match.groups()
        base = int(time.time()) if now is None else now
        delta = int(amount) * _UNIT_SECONDS[unit]
        return base + delta if sign == "+" else base - delta
    iso = value[:-1] + "+00:00" if value.endswith(("Z", "z")) else value
    try:
        moment = datetime.fromisoformat(iso)
    except ValueError:
        raise InvalidInput(
            f"{name}: {text!r} is not unix seconds, an ISO 8601 date or time "
            "(2026-12-31, 2026-12-31T08:00:00Z) or a duration (+2h, +7d)",
            code="invalid_time",
        ) from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    return int(moment.timestamp())


def parse_expiry(
    value: int | str | Unset | None, *, name: str = "expires_at", now: int | None = None
) -> int | Unset | None:
    """An expiry as a front end received it, in the form the library takes.

    Text is parsed by :func:`parse_time`, except ``none`` (any case), which means no expiry,
    as ``None`` does (``update`` clears it). Numbers are passed on for the library to check,
    and :data:`~lantern_git.core.fields.UNSET` (the option was not given) stays UNSET.
    """
    if isinstance(value, str):
        if value.strip().lower() == "none":
            return None
        return parse_time(value, name=name, now=now)
    return value


def human_time(stamp: int | None) -> str:
    """Unix seconds as ISO 8601 in the local time zone, to the second, with its offset
    (``2026-12-05T09:01:17+01:00``); ``-`` for no time."""
    if stamp is None:
        return "-"
    return datetime.fromtimestamp(stamp, timezone.utc).astimezone().isoformat(timespec="seconds")


def field_time(name: str, value: object) -> object:
    """A field's value as a person reads it: a time field's unix seconds as :func:`human_time`,
    anything else as it is."""
    if name in TIME_FIELDS and isinstance(value, int) and not isinstance(value, bool):
        return human_time(value)
    return value
