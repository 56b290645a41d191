"""Waits on processes and threads, each with a bound: a server that never prints, a process
that never exits or a thread that never ends fails its test instead of holding the run."""

from __future__ import annotations

import os
import select
import signal
import subprocess
import threading
import time


def first_line(proc: subprocess.Popen, timeout: float = 60) -> str:
    """The first line ``proc`` prints, waited for ``timeout`` seconds at most: a server that
    never prints its address fails the test, where a bare ``readline()`` would wait forever."""
    assert proc.stdout is not None
    readable, _, _ = select.select([proc.stdout], [], [], timeout)
    if not readable:
        raise AssertionError(f"{proc.args!r} printed no line in {timeout:.0f} s")
    return proc.stdout.readline().rstrip("\n")


def stop(proc: subprocess.Popen, timeout: float = 20) -> None:
    """Ends ``proc``: SIGTERM, then SIGKILL if it is still running after ``timeout`` seconds;
    every wait bounded."""
    proc.terminate()
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=timeout)


def kill_after(proc: subprocess.Popen, delay: float) -> bool:
    """SIGKILL ``proc`` after ``delay`` seconds unless it finished; True if it was killed."""
    try:
        proc.wait(timeout=delay)
        return False
    except subprocess.TimeoutExpired:
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
        return True


def join(thread: threading.Thread, timeout: float = 240) -> None:
    """``thread.join()`` with a bound: a thread still running after ``timeout`` seconds fails
    the test rather than holding the run."""
    thread.join(timeout)
    assert not thread.is_alive(), f"{thread.name} still running after {timeout:.0f} s"


def wait_until(predicate, timeout: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.01)
    return False


def as_plain_user() -> None:
    """A ``preexec_fn``: if we are root, the child gives up the capabilities that bypass file
    permissions, so a store made read-only with chmod is read-only for it, as for any user."""
    if os.geteuid() != 0:
        return
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    pr_capbset_drop = 24
    for capability in (1, 2, 3):  # CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH, CAP_FOWNER
        if libc.prctl(pr_capbset_drop, capability, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "prctl(PR_CAPBSET_DROP)")
