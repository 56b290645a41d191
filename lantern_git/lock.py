"""The writer lock: one writer at a time per store, across processes.

An ``flock`` on ``.lantern/lock``: the kernel drops it when the holder exits, however it exits,
so a killed process never leaves a stale lock behind.
"""

from __future__ import annotations

import fcntl
import os
import time

from .errors import LockTimeout, StoreError

DEFAULT_TIMEOUT = 10.0


def lock_timeout() -> float:
    try:
        return float(os.environ.get("LANTERN_LOCK_TIMEOUT", DEFAULT_TIMEOUT))
    except ValueError:
        return DEFAULT_TIMEOUT


class WriterLock:
    def __init__(self, path: str, timeout: float | None = None):
        self.path = path
        self.timeout = lock_timeout() if timeout is None else timeout
        self._fd: int | None = None
        self._depth = 0

    def acquire(self) -> None:
        if self._depth:
            self._depth += 1
            return
        try:
            os.makedirs(os.path.dirname(self.path), exist_ok=True)
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as err:
            raise StoreError(f"cannot open the store lock {self.path}: {err.strerror}") from None
        deadline = time.monotonic() + self.timeout
        delay = 0.002
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    os.close(fd)
                    raise LockTimeout(
                        f"another lantern process has held the store lock for {self.timeout:g}s "
                        f"({self.path}); try again, or raise LANTERN_LOCK_TIMEOUT"
                    ) from None
                time.sleep(delay)
                delay = min(delay * 2, 0.05)
        self._fd = fd
        self._depth = 1

    def release(self) -> None:
        if not self._depth:
            return
        self._depth -= 1
        if self._depth == 0 and self._fd is not None:
            fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = None

    def __enter__(self) -> WriterLock:
        self.acquire()
        return self

    def __exit__(self, *exc) -> None:
        self.release()
