"""The clock that file timestamps are compared with.

The indexes decide what changed by comparing a file's ctime and mtime with a moment taken before
the file was read, and they set their stamp file to such a moment for the next check's
``find -newercm``. The kernel stamps files from the file system's clock, and a process's clock
can disagree with it: a network file system whose server keeps other time, a container or a
test that fakes the time (``faketime``), a clock stepped since. Taken from the process's clock
alone, a moment a year ahead makes every file look settled and sets the stamp a year ahead,
so later edits stay invisible until then; a moment behind only makes checks slower.

So a moment is the process's clock plus its offset from the file system's, measured by creating
a file in the index's folder and reading the time the file system gave it. An offset under
:data:`IGNORED_BELOW_NS` is taken as none: the file system's coarse clock lags by a tick, and the
margins the freshness checks keep already allow for that. The offset is measured again after
:data:`REMEASURE_AFTER_S` seconds, for long-running processes (``lantern mcp``, ``lantern serve``).
"""

from __future__ import annotations

import os
import tempfile
import time

IGNORED_BELOW_NS = 1_000_000_000
REMEASURE_AFTER_S = 60.0

# folder -> (offset in ns, time.monotonic() when measured)
_measured: dict[str, tuple[int, float]] = {}


def now_ns(folder: str) -> int:
    """Now, on the clock of the file system that holds ``folder`` (its nearest existing
    ancestor), in nanoseconds since the epoch."""
    return time.time_ns() + offset_ns(folder)


def offset_ns(folder: str) -> int:
    """How far the file system's clock is ahead of this process's (negative: behind); 0 where
    they agree within :data:`IGNORED_BELOW_NS` or no file can be created to tell."""
    known = _measured.get(folder)
    if known is not None and time.monotonic() - known[1] < REMEASURE_AFTER_S:
        return known[0]
    offset = _measure(folder)
    if offset is None:
        return 0
    _measured[folder] = (offset, time.monotonic())
    return offset


def _measure(folder: str) -> int | None:
    where = folder
    while not os.path.isdir(where):
        parent = os.path.dirname(where)
        if parent == where:
            return None
        where = parent
    before = time.time_ns()
    try:
        handle, path = tempfile.mkstemp(prefix=".clock-", dir=where)
    except OSError:  # a store this process cannot write: nothing to set a stamp in either
        return None
    try:
        stamped = os.fstat(handle).st_mtime_ns
    finally:
        os.close(handle)
        os.unlink(path)
    after = time.time_ns()
    if before - IGNORED_BELOW_NS <= stamped <= after + IGNORED_BELOW_NS:
        return 0
    return stamped - (before + after) // 2
