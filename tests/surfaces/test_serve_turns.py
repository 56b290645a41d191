"""How the server's reads share Python's one lock (issue 32, speed and concurrency): quick
reads take turns, so twenty clients are not slowed by threads fighting over the lock, and a
slow read still holds up no other read for longer than the turn's wait: the other runs beside
it. Real stores on a real repository; the reads are the test's own functions."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import anyio
from support.stores import make_store

from lantern_git.store import Store
from lantern_git.web import runner
from lantern_git.web.runner import TURN_WAIT, Library

# Far longer than the turn's wait: a read held up by the slow one would still be waiting.
SLOW_BOUND = 20.0


def test_a_slow_read_lets_another_read_run_beside_it_after_the_turns_wait(tmp_path: Path):
    path = make_store(tmp_path / "store")
    store = Store(str(path), actor="cli")
    library = Library(store, lambda: Store(str(path), actor="cli"))
    started, release = threading.Event(), threading.Event()
    finished: list[str] = []

    def slow(_: Store) -> str:
        started.set()
        release.wait(timeout=SLOW_BOUND)
        finished.append("slow")
        return "slow"

    def quick(_: Store) -> str:
        finished.append("quick")
        return "quick"

    async def main() -> float:
        async with anyio.create_task_group() as group:
            group.start_soon(library.read, slow)
            with anyio.fail_after(SLOW_BOUND):
                while not started.is_set():
                    await anyio.sleep(0.01)
            begun = time.monotonic()
            assert await library.read(quick) == "quick"
            waited = time.monotonic() - begun
            release.set()
        return waited

    try:
        waited = anyio.run(main)
    finally:
        library.close()
        store.close()
    # The quick read finished while the slow one still held its turn.
    assert finished == ["quick", "slow"]
    assert waited < SLOW_BOUND / 2
    assert TURN_WAIT < SLOW_BOUND / 2


def test_quick_reads_take_turns_one_at_a_time(tmp_path: Path, monkeypatch):
    # A wait no read here comes near, however loaded the machine: each read is quick.
    monkeypatch.setattr(runner, "TURN_WAIT", SLOW_BOUND)
    path = make_store(tmp_path / "store")
    store = Store(str(path), actor="cli")
    library = Library(store, lambda: Store(str(path), actor="cli"))
    running, most = 0, 0
    count = threading.Lock()

    def read(_: Store) -> None:
        nonlocal running, most
        with count:
            running += 1
            most = max(most, running)
        time.sleep(0.005)
        with count:
            running -= 1

    async def main() -> None:
        with anyio.fail_after(SLOW_BOUND):
            async with anyio.create_task_group() as group:
                for _ in range(20):
                    group.start_soon(library.read, read)

    try:
        anyio.run(main)
    finally:
        library.close()
        store.close()
    assert most == 1
