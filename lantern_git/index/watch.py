"""File-system notifications for a long-running process (``lantern mcp``, a library user with
``Store(..., watch=True)``), so that a read with nothing changed costs no sweep of the files.

Without notifications every read asks ``find`` which record files changed since the last check
(~0.1-0.4 s at 100k records). With them, the rule is:

1. The watch (one recursive inotify watch on the store, through ``watchdog``) is set up first;
   then one full sweep brings the index in step. Every later change to the working tree queues
   an event in the kernel at the moment of the write, before the writer's system call returns.
2. Each read first asks whether anything changed at all, from a second inotify descriptor
   of its own (:class:`Quiet`): it watches only the folders that hold records (the store's
   root, ``memory/`` and each shard folder) and is read without blocking, in the reader's own
   thread. The kernel queues an event before the writer's system call returns, so an empty
   descriptor proves that no record file changed since the last read; the read goes on at once.
   At 10k records that check takes 0.02 ms where the barrier below takes 0.45 ms in process
   and 1.2-1.4 ms of an MCP round trip (``benchmarks/search_speed.py``): the hand-offs between
   watchdog's four threads.
3. Otherwise the read places a *barrier*: it creates a file of its own in ``.lantern/`` and
   waits until the watcher's thread has handled that file's event. The kernel delivers one
   watch's events in order, so every change that finished before the read began has been
   handled by then: a write by another process followed at once by a read here is never
   missed, however late its event would otherwise have arrived.
4. The events name the record files and shard folders that changed; the read checks exactly
   those (a file whose content hash is the indexed one is left alone). With none, it answers
   from the searcher it kept open, reopened only when the index on disk changed.
5. Whenever the events cannot be trusted, the read falls back to the full sweep: watchdog or
   inotify missing, the barrier not seen within ``BARRIER_TIMEOUT`` (a stuck or dead watcher
   thread), the kernel's queue overflowing (watchdog logs it), the store's ``memory/`` folder
   itself replaced, a large change (more than ``MANY`` paths), and whenever ``.git/HEAD`` or
   ``.git/index`` show a new signature, which every ``git pull``, ``checkout`` and ``commit``
   gives them: the sweep does not depend on any event.

Watchdog is imported only here, and this module only when a watch is asked for: the one-shot
CLI never pays for it.
"""

from __future__ import annotations

import itertools
import logging
import os
import threading
import warnings
from collections.abc import Iterable
from typing import Any

from ..model.record_file import MEMORY_DIR
from . import journal

# The watcher thread handles a barrier's event in well under a millisecond; a move whose other
# half lies outside the store holds watchdog's queue for 0.5 s. Past this, sweep instead.
BARRIER_TIMEOUT = 2.0
# More changed paths than this at once (a checkout): the sweep is cheaper than the events.
MANY = 5000
# The journal's readers place barriers of the same name (journal.py).
BARRIER_PREFIX = journal.BARRIER_PREFIX
_WATCHDOG_LOGGER = "watchdog.observers.inotify"


class Changes:
    """What changed since the last :meth:`Watcher.take`: record paths and shard folders
    relative to the store (``memory/ab/<id>.md``, ``memory/ab``, ``memory``), or ``None``
    when only a full sweep can tell."""

    def __init__(self, paths: set[str] | None, waited: bool):
        self.paths = paths
        # Whether the take waited for its barrier: False when nothing changed in the record
        # folders since the take before.
        self.waited = waited

    @property
    def unknown(self) -> bool:
        return self.paths is None


class Watcher:
    """One recursive watch on a store's working tree, feeding a set of changed paths."""

    def __init__(self, root: str, state_dir: str):
        self.root = os.path.abspath(root)
        self.state_dir = state_dir
        self._lock = threading.Lock()
        self._paths: set[str] = set()
        self._lost = True  # nothing is known until the first take after start
        self._barriers: dict[str, threading.Event] = {}
        self._counter = itertools.count()
        self._observer: Any = None
        self._git_marks: tuple[Any, ...] | None = None
        self._log_hook: logging.Handler | None = None
        self._quiet: Quiet | None = None
        # What this watch publishes for the one-shot commands beside it (journal.py); None
        # where another process publishes already.
        self._journal: journal.Publisher | None = None

    # -- life cycle

    def start(self) -> bool:
        """Start watching; False (and every read sweeps) where notifications are unavailable."""
        try:
            from watchdog.events import (
                DirCreatedEvent,
                DirDeletedEvent,
                DirMovedEvent,
                FileClosedEvent,
                FileCreatedEvent,
                FileDeletedEvent,
                FileModifiedEvent,
                FileMovedEvent,
                FileSystemEventHandler,
            )
            from watchdog.observers import Observer
        except ImportError:
            return False
        watcher = self

        class Handler(FileSystemEventHandler):
            def on_any_event(self, event: Any) -> None:
                watcher._handle(event)

        # Watchdog's inotify observer warns, with a page of its internal state, when a folder
        # created under a recursive watch is added twice (once for the folder's own event, once
        # by the walk of its parent); nothing is lost. Only that message, only from that module.
        warnings.filterwarnings(
            "ignore",
            message="Callback with id",
            category=RuntimeWarning,
            module=r"watchdog\.observers\.inotify",
        )
        try:
            os.makedirs(self.state_dir, exist_ok=True)
            observer = Observer()
            observer.schedule(
                Handler(),
                self.root,
                recursive=True,
                event_filter=[
                    FileCreatedEvent,
                    FileDeletedEvent,
                    FileModifiedEvent,
                    FileMovedEvent,
                    FileClosedEvent,
                    DirCreatedEvent,
                    DirDeletedEvent,
                    DirMovedEvent,
                ],
            )
            observer.daemon = True
            observer.start()
        except Exception:  # no inotify, too many watches, a folder that vanished meanwhile
            return False
        self._observer = observer
        self._quiet = Quiet.start(self.root)
        # Begun once the observer runs: every change it reports from now on is journaled.
        self._journal = journal.Publisher.start(self.state_dir)
        # Watchdog recovers from a kernel queue overflow by itself, saying so only in its log.
        hook = _OverflowHook(self)
        logging.getLogger(_WATCHDOG_LOGGER).addHandler(hook)
        self._log_hook = hook
        return True

    def stop(self) -> None:
        if self._log_hook is not None:
            logging.getLogger(_WATCHDOG_LOGGER).removeHandler(self._log_hook)
            self._log_hook = None
        observer, self._observer = self._observer, None
        if observer is not None:
            observer.stop()
            observer.join(timeout=5)
        quiet, self._quiet = self._quiet, None
        if quiet is not None:
            quiet.close()
        published, self._journal = self._journal, None
        if published is not None:
            published.close()

    @property
    def running(self) -> bool:
        return self._observer is not None and self._observer.is_alive()

    @property
    def publishing(self) -> bool:
        """Whether this watch keeps the journal the one-shot commands beside it read (False
        where another process keeps it, or it could not be kept)."""
        return self._journal is not None and self._journal.live

    # -- the watcher thread

    def _handle(self, event: Any) -> None:
        if event.event_type == "modified" and event.is_directory:
            # Watchdog adds one for the folder of every file event; that event names the file.
            return
        for path in (event.src_path, getattr(event, "dest_path", "")):
            if not path:
                continue
            if isinstance(path, bytes):
                path = os.fsdecode(path)
            relative = os.path.relpath(path, self.root).replace(os.sep, "/")
            if relative == "memory" or relative.startswith("memory/"):
                with self._lock:
                    self._paths.add(relative)
                if self._journal is not None:
                    self._journal.changed(relative)
            elif relative.startswith(".lantern/" + BARRIER_PREFIX):
                name = relative.rpartition("/")[2]
                if self._journal is not None and event.event_type == "created":
                    self._journal.barrier(name)
                with self._lock:
                    seen = self._barriers.get(name)
                if seen is not None:
                    seen.set()

    def note(self, paths: Iterable[str]) -> None:
        """Paths lantern itself wrote, for the next take (whatever their events do)."""
        with self._lock:
            self._paths.update(paths)

    def lose(self) -> None:
        """Events were dropped: the next take asks for a full sweep."""
        with self._lock:
            self._lost = True
        if self._journal is not None:
            self._journal.lost()

    # -- reading

    def take(self) -> Changes:
        """The changes made before this call that no earlier take returned (see the module's
        rule). A take that returns ``unknown`` still starts a new period: the caller sweeps."""
        if not self.running:
            return Changes(None, waited=False)
        marks = self._marks()
        # Nothing in the record folders since the last take: whatever watchdog has not handled
        # yet happened elsewhere (in .git or .lantern), so there is no barrier to wait for.
        waited = self._quiet is None or not self._quiet.still()
        if waited and not self._barrier():
            self.lose()
        with self._lock:
            paths, self._paths = self._paths, set()
            lost, self._lost = self._lost, False
        if marks != self._git_marks:
            self._git_marks = marks
            lost = True
        if lost or "memory" in paths or len(paths) > MANY:
            return Changes(None, waited)
        return Changes(paths, waited)

    def _barrier(self) -> bool:
        name = f"{BARRIER_PREFIX}{os.getpid()}-{next(self._counter)}"
        seen = threading.Event()
        with self._lock:
            self._barriers[name] = seen
        path = os.path.join(self.state_dir, name)
        try:
            with open(path, "wb"):
                pass
            os.unlink(path)
            return seen.wait(BARRIER_TIMEOUT)
        except OSError:  # a read-only store: no barrier, so no trust in the events
            return False
        finally:
            with self._lock:
                self._barriers.pop(name, None)

    def _marks(self) -> tuple[Any, ...]:
        """Signatures of what every git operation that moves the working tree rewrites."""
        marks: list[tuple[int, int, int] | None] = []
        for name in ("HEAD", "index"):
            try:
                st = os.stat(os.path.join(self.root, ".git", name))
                marks.append((st.st_ino, st.st_mtime_ns, st.st_size))
            except OSError:
                marks.append(None)
        return tuple(marks)

    def settle_git(self) -> None:
        """Lantern itself just committed (holding the writer lock, having indexed the files it
        wrote): take the git files' new signatures as known, so its own writes cost no sweep."""
        self._git_marks = self._marks()


class Quiet:
    """A non-blocking inotify descriptor on the folders that hold record files: the store's
    root (for ``memory/`` itself coming and going), ``memory/`` and each shard folder in it.

    :meth:`still` reads it in the caller's thread: True when no event was queued since the last
    call, so no record file changed in between (the kernel queues an event before the writer's
    system call returns). Otherwise it drains the descriptor, watches any shard folder made
    since, and says False; the caller then waits for watchdog, which knows what changed.
    Folders are watched before the caller's barrier is placed, so a file written in a new
    folder before its watch began is the barrier's to report, and one written after is this
    descriptor's."""

    def __init__(self, root: str, descriptor: int, mask: int, add_watch: Any):
        self.root = root
        self._fd = descriptor
        self._mask = mask
        self._add_watch = add_watch

    @classmethod
    def start(cls, root: str) -> Quiet | None:
        """Watching ``root``'s record folders; None where inotify is unavailable or a folder
        cannot be watched (every read then waits for its barrier)."""
        try:
            from watchdog.observers.inotify_c import (
                InotifyConstants,
                inotify_add_watch,
                inotify_init,
            )
        except Exception:  # not Linux, or a libc without inotify: watchdog raises its own
            return None
        c = InotifyConstants
        mask = (
            c.IN_MODIFY
            | c.IN_ATTRIB
            | c.IN_CLOSE_WRITE
            | c.IN_CREATE
            | c.IN_DELETE
            | c.IN_MOVED_FROM
            | c.IN_MOVED_TO
            | c.IN_DELETE_SELF
            | c.IN_MOVE_SELF
            | c.IN_ONLYDIR
        )
        descriptor = inotify_init()
        if descriptor < 0:
            return None
        os.set_blocking(descriptor, False)
        os.set_inheritable(descriptor, False)
        quiet = cls(root, descriptor, mask, inotify_add_watch)
        if not quiet._watch_folders():
            quiet.close()
            return None
        return quiet

    def still(self) -> bool:
        if self._fd < 0:
            return False
        changed = False
        while True:  # drained, so that the next call speaks only of what comes after this one
            try:
                os.read(self._fd, 65536)
            except BlockingIOError:
                break
            except OSError:
                self.close()
                return False
            changed = True
        if changed and not self._watch_folders():
            self.close()
        return not changed

    def _watch_folders(self) -> bool:
        """Watch the root, ``memory/`` and every folder in it (a folder already watched keeps
        its watch). False when one that exists cannot be watched (the kernel's limit)."""
        records = os.path.join(self.root, MEMORY_DIR)
        folders = [self.root, records]
        try:
            folders.extend(entry.path for entry in os.scandir(records) if entry.is_dir())
        except OSError:  # no memory/ yet: the root's watch sees it made
            pass
        for folder in folders:
            if self._add_watch(self._fd, os.fsencode(folder), self._mask) < 0 and os.path.isdir(
                folder
            ):
                return False
        return True

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1


class _OverflowHook(logging.Handler):
    def __init__(self, watcher: Watcher):
        super().__init__(logging.WARNING)
        self._watcher = watcher

    def emit(self, record: logging.LogRecord) -> None:
        if "overflow" in record.getMessage().lower():
            self._watcher.lose()
