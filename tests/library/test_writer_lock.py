"""The writer lock asked directly (lantern_git.workspace.lock): one writer at a time per store,
across processes (an flock the kernel drops when its holder exits) and between threads, and
re-entrant for the thread that holds it.

The concurrency tests (test_reliability.py) prove that writers racing through the CLI and MCP
lose nothing; these hold the lock's own rules, where a lost release, a depth miscounted or a
deadline moved would otherwise pass (the mutation run's ``lock`` module found those). Every
wait here has a bound: the lock's own timeout, a fraction of a second.
"""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from lantern_git.errors import LockTimeout, StoreError
from lantern_git.workspace.lock import WriterLock

SHORT = 0.2  # seconds a refused acquire waits before it gives up

HOLD = """
import fcntl, os, sys, time
fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o644)
fcntl.flock(fd, fcntl.LOCK_EX)
print("held", flush=True)
sys.stdin.read()  # until the test closes our stdin
"""


def acquired_in_a_thread(lock: WriterLock) -> BaseException | None:
    """What ``lock.acquire()`` raised in another thread (None: it acquired, then released)."""
    outcome: list[BaseException | None] = []

    def run() -> None:
        try:
            lock.acquire()
        except BaseException as err:  # handed to the test
            outcome.append(err)
            return
        lock.release()
        outcome.append(None)

    thread = threading.Thread(target=run)
    thread.start()
    thread.join(timeout=10 * SHORT + 5)
    assert not thread.is_alive()
    return outcome[0]


def test_the_holding_thread_may_take_the_lock_again_and_holds_it_until_the_last_release(
    tmp_path: Path,
) -> None:
    lock = WriterLock(str(tmp_path / "state" / "lock"), timeout=SHORT)
    with lock:
        with lock:
            pass
        # Released once of twice: still held, so another thread is refused.
        assert isinstance(acquired_in_a_thread(lock), LockTimeout)
    assert acquired_in_a_thread(lock) is None
    assert (tmp_path / "state" / "lock").exists()  # its folder made on first use


def test_another_thread_is_refused_after_the_timeout_naming_it(tmp_path: Path) -> None:
    lock = WriterLock(str(tmp_path / "lock"), timeout=SHORT)
    with lock:
        started = time.monotonic()
        refused = acquired_in_a_thread(lock)
        waited = time.monotonic() - started
    assert isinstance(refused, LockTimeout)
    assert str(refused) == (
        f"another lantern process has held the store lock for 0.2s ({tmp_path / 'lock'}); "
        "try again, or raise LANTERN_LOCK_TIMEOUT"
    )
    assert waited >= SHORT


def test_a_release_by_a_thread_that_does_not_hold_it_changes_nothing(tmp_path: Path) -> None:
    lock = WriterLock(str(tmp_path / "lock"), timeout=SHORT)
    lock.release()  # held by no one
    with lock:
        other = threading.Thread(target=lock.release)
        other.start()
        other.join(timeout=5)
        assert isinstance(acquired_in_a_thread(lock), LockTimeout)
    assert acquired_in_a_thread(lock) is None


def test_the_lock_is_released_when_the_block_raises(tmp_path: Path) -> None:
    lock = WriterLock(str(tmp_path / "lock"), timeout=SHORT)
    with pytest.raises(RuntimeError), lock:
        raise RuntimeError("a failed write")
    assert acquired_in_a_thread(lock) is None


def test_another_process_holding_it_makes_an_acquire_wait_then_time_out(tmp_path: Path) -> None:
    path = tmp_path / "lock"
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        lock = WriterLock(str(path), timeout=SHORT)
        started = time.monotonic()
        with pytest.raises(LockTimeout):
            lock.acquire()
        assert time.monotonic() - started >= SHORT
        # The refused acquire left nothing held in this process: a later one can succeed.
        assert holder.stdin is not None
        holder.stdin.close()
        holder.wait(timeout=10)  # the kernel drops its flock as it exits
        with lock:
            # A second open of the file is another holder, even in this process.
            other = WriterLock(str(path), timeout=SHORT)
            assert isinstance(acquired_in_a_thread(other), LockTimeout)
    finally:
        if holder.poll() is None:
            holder.kill()
            holder.wait(timeout=10)


def test_a_lock_whose_folder_cannot_be_made_says_so(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("not a folder\n")
    lock = WriterLock(str(tmp_path / "file" / "lock"), timeout=SHORT)
    with pytest.raises(StoreError, match="cannot open the store lock"):
        lock.acquire()
    # The failed acquire held nothing: another thread gets as far as the same error, not a
    # timeout on a thread lock left held.
    assert isinstance(acquired_in_a_thread(lock), StoreError)


@pytest.mark.parametrize("timeout", [0, -1])
def test_a_timeout_of_zero_or_less_tries_once_and_never_waits_for_a_release(
    tmp_path: Path, timeout: float
) -> None:
    lock = WriterLock(str(tmp_path / "lock"), timeout=timeout)
    outcome: list[BaseException | None] = []

    def attempt() -> None:
        try:
            lock.acquire()
        except LockTimeout as err:
            outcome.append(err)
            return
        lock.release()
        outcome.append(None)

    with lock:
        trying = threading.Thread(target=attempt)
        trying.start()
        # Released a moment after the other thread tried: one that waited would get it.
        trying.join(timeout=SHORT)
    trying.join(timeout=10)
    assert not trying.is_alive() and isinstance(outcome[0], LockTimeout)


def test_no_thread_but_the_holder_can_release_it(tmp_path: Path) -> None:
    lock = WriterLock(str(tmp_path / "lock"), timeout=SHORT)
    held, done = threading.Event(), threading.Event()

    def hold() -> None:
        with lock:
            held.set()
            done.wait(timeout=30)

    holder = threading.Thread(target=hold)
    holder.start()
    try:
        assert held.wait(timeout=10)
        # From this thread and from others (their idents lie either side of the holder's)
        lock.release()
        for _ in range(3):
            other = threading.Thread(target=lock.release)
            other.start()
            other.join(timeout=5)
        assert isinstance(acquired_in_a_thread(lock), LockTimeout)
    finally:
        done.set()
        holder.join(timeout=10)
    assert acquired_in_a_thread(lock) is None


def test_the_lock_file_is_readable_by_all_and_its_descriptor_not_inherited(
    tmp_path: Path,
) -> None:
    path = tmp_path / "lock"
    umask = os.umask(0o022)
    os.umask(umask)
    with WriterLock(str(path), timeout=SHORT):
        assert stat.S_IMODE(os.stat(path).st_mode) == 0o644 & ~umask
        # Closed on exec: a program lantern starts (an editor, git) never holds the lock on
        held = [fd for fd in os.listdir("/proc/self/fd") if _names(fd) == str(path)]
        assert len(held) == 1
        info = Path(f"/proc/self/fdinfo/{held[0]}").read_text()
        flags = int(info.split("flags:")[1].split()[0], 8)
        assert flags & os.O_CLOEXEC and flags & os.O_ACCMODE == os.O_RDWR


def _names(fd: str) -> str | None:
    """What this process's descriptor ``fd`` is open on (None: closed meanwhile, as the one
    that listed the folder is)."""
    try:
        return os.readlink(f"/proc/self/fd/{fd}")
    except FileNotFoundError:
        return None
