"""The writer lock: one writer at a time per store, across processes and threads.

An ``flock`` on ``.lantern/lock``: the kernel drops it when the holder exits, however it exits,
so a killed process never leaves a stale lock behind. Within a process the lock is re-entrant
for the thread that holds it and exclusive between threads (an MCP server may serve calls from
worker threads with one Store).
"""

from __future__ import annotations

import fcntl
import os
import threading
import time

from ..core.config import DEFAULT_LOCK_TIMEOUT, environment
from ..errors import LockTimeout, StoreError

DEFAULT_TIMEOUT = DEFAULT_LOCK_TIMEOUT


def lock_timeout() -> float:
    """``LANTERN_LOCK_TIMEOUT`` seconds, else the default (see config.py)."""
    return environment().lock_timeout


class WriterLock:
    def __init__(self, path: str, timeout: float | None = None):
        self.path = path
        self.timeout = lock_timeout() if timeout is None else timeout
        self._fd: int | None = None
        self._depth = 0
        self._owner: int | None = None
        self._threads = threading.Lock()

    def acquire(self) -> None:
        me = threading.get_ident()
        if self._owner == me:
            self._depth += 1
            return
        deadline = time.monotonic() + self.timeout
        # threading refuses a wait longer than TIMEOUT_MAX (LANTERN_LOCK_TIMEOUT=inf, 1e300).
        wait = min(max(self.timeout, 0), threading.TIMEOUT_MAX)
        if not self._threads.acquire(timeout=wait):
            raise self._timed_out()
        try:
            self._fd = self._flock(deadline)
        except BaseException:
            self._threads.release()
            raise
        self._owner = me
        self._depth = 1

    def _flock(self, deadline: float) -> int:
        try:
            os.makedirs(os.path.dirname(self.path), exist_ok=True)
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        except OSError as err:
            raise StoreError(f"cannot open the store lock {self.path}: {err.strerror}") from None
        delay = 0.002
        try:
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    return fd
                except BlockingIOError:
                    if time.monotonic() >= deadline:
                        raise self._timed_out() from None
                    time.sleep(delay)
                    delay = min(delay * 2, 0.05)
        except BaseException:
            os.close(fd)
            raise

    def _timed_out(self) -> LockTimeout:
        return LockTimeout(
            f"another lantern process has held the store lock for {self.timeout:g}s "
            f"({self.path}); try again, or raise LANTERN_LOCK_TIMEOUT"
        )

    def release(self) -> None:
        if not self._depth or self._owner != threading.get_ident():
            return
        self._depth -= 1
        if self._depth == 0:
            fd, self._fd, self._owner = self._fd, None, None
            if fd is not None:
                fcntl.flock(fd, fcntl.LOCK_UN)
                os.close(fd)
            self._threads.release()

    def __enter__(self) -> WriterLock:
        self.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()
