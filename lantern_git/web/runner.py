"""How the pages call the store: reads side by side, each on a store of its own, writes one at
a time (:class:`Library`).

Kept apart from the MCP server's ``ToolRunner`` on purpose (ARCHITECTURE.md says why): the two
runners answer different callers, a browser's pages that may load side by side and an agent's
calls that arrive one at a time on a pipe.
"""

from __future__ import annotations

import contextlib
import queue
import threading
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, TypeVar

import anyio
import anyio.to_thread

if TYPE_CHECKING:
    from ..store import Store

T = TypeVar("T")

# How many reads run at once, each on a store of its own (see Library). Python runs one thread
# at a time; more than a few only add stores to keep fresh.
READERS = 4
# How long a read waits for the one running before it to finish, in seconds, before it runs
# beside it (see Library): longer than a quick page takes on a loaded machine at 100,000
# records (the records page: 40-65 ms), so quick pages take turns; 50 ms let them overlap
# there, and 20 clients got 0.9-1.0x one client's pages a second instead of 1.35-1.45x.
TURN_WAIT = 0.2


class Library:
    """The store, as the pages call it: reads side by side, writes one at a time.

    A write (an accept or a reject) runs alone on the Store the server opened, with no read
    running; the store's writer lock also serializes it with
    other processes. Reads run together, each on a Store of its own, one of at most
    :data:`READERS` opened on the same folder and kept: a Store's kept Whoosh searcher, its
    repository handle and its watch are not shared between threads, and a Store is the unit
    the library makes safe beside others, as a CLI process beside the server is. So a slow
    page (a long log, a diff) no longer holds up every other; and since no read runs while
    the server writes, a page's calls (a list and its count) see the server's writes all
    before or all after, as with one lock. (A write from another process can still fall
    between two calls of one page, as before.)

    Reads take turns while each is quick: a read waits up to :data:`TURN_WAIT` for the one
    before it, then runs beside it. Python's lock lets one thread run at a time, and threads
    that share it run slower than in turn: each time one of them waits for the disk, it waits
    again for the lock (up to 5 ms) to go on. Twenty clients loading the records page got
    fewer pages a second from four reads side by side than one client in a loop did, and
    twice as many in turn. A slow page (a first review list after a write, ~0.5 s at 100,000
    records) still holds up no other for longer than the wait.
    """

    def __init__(self, store: Store, open_reader: Callable[[], Store] | None = None):
        self.store = store
        self._lock = threading.Lock()
        self._turns = ReadWriteLock()
        # Held by the read whose turn it is (see TURN_WAIT).
        self._turn = threading.Lock()
        self._open_reader = open_reader
        self._idle: queue.SimpleQueue[Store] = queue.SimpleQueue()
        self._opened: list[Store] = []
        # At most READERS reads at once, so at most READERS stores are ever opened.
        self._readers = anyio.CapacityLimiter(READERS)

    async def call(self, func: Callable[[Store], T]) -> T:
        """Run ``func`` (a write) alone, on the server's store."""

        def alone() -> T:
            with self._turns.writing():
                return func(self.store)

        return await anyio.to_thread.run_sync(alone)

    async def read(self, func: Callable[[Store], T]) -> T:
        """Run ``func``, which only reads, beside other reads, on a store of its own."""
        if self._open_reader is None:
            return await self.call(func)

        def run() -> T:
            with self._turns.reading():
                turn = self._turn.acquire(timeout=TURN_WAIT)
                try:
                    reader = self._take()
                    try:
                        return func(reader)
                    finally:
                        self._idle.put(reader)
                finally:
                    if turn:
                        self._turn.release()

        return await anyio.to_thread.run_sync(run, limiter=self._readers)

    def _take(self) -> Store:
        try:
            return self._idle.get_nowait()
        except queue.Empty:
            assert self._open_reader is not None
            reader = self._open_reader()
            with self._lock:
                self._opened.append(reader)
            return reader

    def close(self) -> None:
        """Close the readers (the server's own store is its opener's to close)."""
        with self._lock:
            opened, self._opened = self._opened, []
        for reader in opened:
            reader.close()


class ReadWriteLock:
    """Many readers or one writer; a waiting writer goes before readers that come after it,
    so a stream of page loads cannot keep an accept waiting."""

    def __init__(self) -> None:
        self._changed = threading.Condition()
        self._reading = 0
        self._writing = False
        self._writers_waiting = 0

    @contextlib.contextmanager
    def reading(self) -> Iterator[None]:
        with self._changed:
            while self._writing or self._writers_waiting:
                self._changed.wait()
            self._reading += 1
        try:
            yield
        finally:
            with self._changed:
                self._reading -= 1
                if not self._reading:
                    self._changed.notify_all()

    @contextlib.contextmanager
    def writing(self) -> Iterator[None]:
        with self._changed:
            self._writers_waiting += 1
            try:
                while self._writing or self._reading:
                    self._changed.wait()
            finally:
                self._writers_waiting -= 1
            self._writing = True
        try:
            yield
        finally:
            with self._changed:
                self._writing = False
                self._changed.notify_all()
