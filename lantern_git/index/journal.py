"""The watch's journal: what a watching process (``lantern mcp``, ``lantern serve``) saw change,
for the one-shot commands that run beside it, as git's fsmonitor tells ``git status``.

A command that finds no watching process checks every record file's ctime (``find``, 0.1-0.5 s
at 100k records, the most of a ``lantern memory list`` there). While one runs, it already
learns of every change from file-system notifications; this module lets it say so on disk:

- The watching process holds an exclusive ``flock`` on ``.lantern/watch.live`` for as long as it
  publishes (the kernel drops it when the process dies, however it dies), and appends to
  ``.lantern/watch.journal`` one line per changed record path or shard folder (``P``), a line
  whenever its notifications were lost (``L``: a queue overflow), and a line for each barrier
  file it saw made (``B``). The journal's first line carries a token of its own, new whenever
  the journal is started again.
- A reader that finds the lock held places a barrier: it makes (and removes) a file of its own
  in ``.lantern/`` and waits until the journal names it. The kernel delivers one watch's
  events in order, so by then every change that finished before the reader began is in the
  journal. The paths between the position the reader's index last caught up to and its
  barrier are exactly what may have changed. It sweeps instead wherever that cannot be
  trusted: no live publisher, the barrier not seen within ``BARRIER_TIMEOUT``, another
  journal than the one its position speaks of, an ``L`` line, ``memory/`` itself named, or
  more than ``MANY`` paths. A ``git pull`` or ``checkout`` writes the record files like any
  other program, so its changes are in the journal too; one too large for the kernel's queue
  shows as an ``L`` line. (The watching process itself also sweeps whenever ``.git/HEAD`` or
  ``.git/index`` change; a reader cannot: every ``lantern memory add`` commits, and its next
  command would sweep.)
- The position (the journal's token and the offset after the barrier line) is saved in the
  index's folder once the index is in step with the files up to it, and never before; a
  rebuilt index starts without one (its first read sweeps).

No ``watchdog`` here: a one-shot command reads the journal with plain file calls.
"""

from __future__ import annotations

import contextlib
import fcntl
import itertools
import json
import marshal
import os
import threading
import time
import uuid
from dataclasses import dataclass

from ..model.record_file import MEMORY_DIR

LIVE = "watch.live"
JOURNAL = "watch.journal"
BARRIER_PREFIX = "watch-barrier-"
# The publisher writes a barrier's line within a millisecond; a loaded machine, more.
BARRIER_TIMEOUT = 2.0
# More changed paths than this at once (a checkout): the sweep is cheaper than the paths.
MANY = 5000
# Past this size the publisher starts a new journal (its readers sweep once).
ROTATE_AT = 8 << 20
# The reader's position, kept in the index's folder beside its state.
POSITION = "journal.marshal"


@dataclass(frozen=True)
class Position:
    """How far into a journal the index is in step: its token and the offset after a
    barrier's line."""

    token: str
    offset: int


@dataclass(frozen=True)
class Taken:
    """What a reader learned: the changed paths (None: sweep) and the position to save once
    the index is in step with them (None: keep the old one)."""

    paths: set[str] | None
    position: Position | None


# ---------------------------------------------------------------- the watching process


class Publisher:
    """The journal of one watching process: opened by :meth:`start`, written by its watcher's
    thread and by whoever notes lost events, closed (and the lock dropped) by :meth:`close`."""

    def __init__(self, state_dir: str, live: int):
        self._state_dir = state_dir
        self._live = live
        self._lock = threading.Lock()
        self._fd = -1
        self._size = 0

    @classmethod
    def start(cls, state_dir: str) -> Publisher | None:
        """The journal, begun anew; None where another process publishes already, or the
        state folder cannot be written (a read-only store)."""
        try:
            live = os.open(os.path.join(state_dir, LIVE), os.O_RDWR | os.O_CREAT, 0o644)
        except OSError:
            return None
        try:
            fcntl.flock(live, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(live)
            return None
        publisher = cls(state_dir, live)
        try:
            publisher._begin()
        except OSError:
            publisher.close()
            return None
        return publisher

    def _begin(self) -> None:
        """A new journal, its token line written before it takes the name (renamed over the
        old one), so a reader finds a whole first line or the old journal."""
        path = os.path.join(self._state_dir, JOURNAL)
        tmp = f"{path}.{os.getpid()}.tmp"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_APPEND, 0o644)
        head = f"J {uuid.uuid4().hex}\n".encode()
        os.write(fd, head)
        os.replace(tmp, path)
        old, self._fd = self._fd, fd
        self._size = len(head)
        if old >= 0:
            os.close(old)

    def _write(self, lines: list[str]) -> None:
        data = "".join(line + "\n" for line in lines).encode("utf-8", "surrogateescape")
        with self._lock:
            if self._fd < 0:
                return
            try:
                if self._size + len(data) > ROTATE_AT:
                    self._begin()
                os.write(self._fd, data)  # O_APPEND: one write, whole lines
                self._size += len(data)
            except OSError:  # a full disk: readers must not trust what is missing
                self._lost_for_good()

    def _lost_for_good(self) -> None:
        """The journal cannot be kept: stop publishing, so that readers sweep."""
        fd, self._fd = self._fd, -1
        if fd >= 0:
            os.close(fd)
        with contextlib.suppress(OSError):
            os.unlink(os.path.join(self._state_dir, JOURNAL))
        live, self._live = self._live, -1
        if live >= 0:
            os.close(live)

    @property
    def live(self) -> bool:
        """Whether it still holds the lock and writes the journal (a full disk ends that)."""
        return self._live >= 0

    def changed(self, path: str) -> None:
        self._write(["P " + json.dumps(path)])

    def lost(self) -> None:
        self._write(["L"])

    def barrier(self, name: str) -> None:
        self._write(["B " + name])

    def close(self) -> None:
        with self._lock:
            fd, self._fd = self._fd, -1
            live, self._live = self._live, -1
        if fd >= 0:
            os.close(fd)
        if live >= 0:
            os.close(live)  # drops the lock: readers sweep from now on


# ---------------------------------------------------------------- a one-shot reader


_counter = itertools.count()


def publishing(state_dir: str) -> bool:
    """Whether a watching process publishes its journal now (its lock is held)."""
    try:
        live = os.open(os.path.join(state_dir, LIVE), os.O_RDONLY)
    except OSError:
        return False
    try:
        fcntl.flock(live, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except OSError:
        return True
    finally:
        os.close(live)
    return False


def take(state_dir: str, since: Position | None) -> Taken | None:
    """What changed since ``since`` by the live journal; None where no process publishes one
    (the caller sweeps, as without it)."""
    if not publishing(state_dir):
        return None
    name = f"{BARRIER_PREFIX}{os.getpid()}-{time.time_ns()}-{next(_counter)}"
    try:
        with open(os.path.join(state_dir, name), "wb"):
            pass
        os.unlink(os.path.join(state_dir, name))
    except OSError:  # a read-only store: no barrier, so no trust in the journal
        return Taken(None, None)
    found = _wait_for(state_dir, name, since)
    if found is None:
        return Taken(None, None)
    token, offset, lines = found
    position = Position(token, offset)
    if since is None or since.token != token:
        return Taken(None, position)
    paths: set[str] = set()
    for line in lines:
        if line.startswith("P "):
            paths.add(json.loads(line[2:]))
        elif line == "L":
            return Taken(None, position)
    if MEMORY_DIR in paths or len(paths) > MANY:
        return Taken(None, position)
    return Taken(paths, position)


def _wait_for(
    state_dir: str, barrier: str, since: Position | None
) -> tuple[str, int, list[str]] | None:
    """(the journal's token, the offset after ``barrier``'s line, the lines from ``since``'s
    offset up to it) once the journal holds the line; None when it does not in time."""
    path = os.path.join(state_dir, JOURNAL)
    wanted = "B " + barrier
    deadline = time.monotonic() + BARRIER_TIMEOUT
    pause = 0.0002
    while True:
        try:
            with open(path, "rb") as handle:
                head = handle.readline()
                if head.startswith(b"J ") and head.endswith(b"\n"):
                    token = head[2:-1].decode()
                    start = since.offset if since is not None and since.token == token else 0
                    handle.seek(max(start, len(head)))
                    data = handle.read()
                    at = handle.tell() - len(data)
                    text = data.decode("utf-8", "surrogateescape")
                    lines: list[str] = []
                    for line in text.split("\n")[:-1]:  # whole lines only
                        at += len(line.encode("utf-8", "surrogateescape")) + 1
                        if line == wanted:
                            return token, at, lines
                        lines.append(line)
        except OSError:
            pass
        if time.monotonic() > deadline or not publishing(state_dir):
            return None
        time.sleep(pause)
        pause = min(pause * 2, 0.02)


def load_position(folder: str) -> Position | None:
    try:
        with open(os.path.join(folder, POSITION), "rb") as handle:
            token, offset = marshal.load(handle)
        return Position(str(token), int(offset))
    except (OSError, ValueError, EOFError, TypeError):
        return None


def save_position(folder: str, position: Position) -> None:
    """Saved whole or not at all; a store that cannot be written sweeps next time."""
    from .derived import write_atomically

    with contextlib.suppress(OSError):
        write_atomically(os.path.join(folder, POSITION), (position.token, position.offset))
