"""Concurrency and crash scenarios, repeated with random timing.

Marked ``reliability``, but nothing deselects the marker: the default ``pytest`` run includes
these tests (20 to 30 s); ``-m reliability`` runs them alone, ``-m "not reliability"`` skips
them. The long run is the soak:
``python -m tests.robustness.soak --minutes 10`` (see tests/robustness/soak.py), which repeats
the same scenarios.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import textwrap
import threading

import pytest
from support.cli import cli_env, lantern
from support.processes import first_line, join
from support.reliability import (
    Tally,
    add_args,
    audit,
    concurrent_round,
    library_writer,
    random_kill_round,
    recover_now,
    write_duration,
)
from support.stores import make_store

from lantern_git.errors import LockTimeout
from lantern_git.store import Store
from lantern_git.workspace.lock import WriterLock

pytestmark = pytest.mark.reliability
# Fixed, so a failure replays: LANTERN_TEST_SEED=<n> picks another (the soak picks its own).
SEED = int(os.environ.get("LANTERN_TEST_SEED", "1717"))


@pytest.fixture
def rng() -> random.Random:
    # Shown with a failure's captured output; timing still varies from run to run.
    print(f"LANTERN_TEST_SEED={SEED}")
    return random.Random(SEED)


def test_concurrent_writers_cli_library_threads_and_mcp_lose_nothing(tmp_path, rng):
    path = make_store(tmp_path / "store")
    tally = Tally()
    commits_before = audit(path)["commits"]
    reads = concurrent_round(path, rng, tally, "round", with_mcp=True)
    figures = audit(path, tally.acked_ids)
    assert tally.acknowledged == tally.attempted, "a 20 s lock wait is never exceeded here"
    # Each distinct record is exactly one commit; the twins made one commit between them.
    assert figures["commits"] - commits_before == len(tally.acked_ids)
    assert reads > 0
    messages = subprocess.run(
        ["git", "log", "--format=%(trailers:key=Lantern-Actor,valueonly)"],
        cwd=path,
        capture_output=True,
        text=True,
    ).stdout.split()
    assert {"cli", "api", "mcp"} <= set(messages)


def test_one_shared_store_object_serializes_its_threads(tmp_path):
    path = make_store(tmp_path / "store")
    shared = Store.open(str(path))
    tallies = [Tally() for _ in range(6)]
    threads = [
        threading.Thread(
            target=library_writer, args=(path, [f"t{n} {i}" for i in range(5)], tallies[n], shared)
        )
        for n in range(6)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        join(thread)
    shared.close()
    acked = set().union(*(t.acked_ids for t in tallies))
    assert len(acked) == 30
    audit(path, acked)


HOLDER = textwrap.dedent(
    """
    import sys, time
    from lantern_git.workspace.lock import WriterLock
    lock = WriterLock(sys.argv[1], timeout=5)
    lock.acquire()
    print("held", flush=True)
    time.sleep(120)
    """
)


def test_a_waiting_writer_gives_up_after_the_timeout_and_a_killed_holder_never_blocks(tmp_path):
    path = make_store(tmp_path / "store")
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(path / ".lantern" / "lock")],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert first_line(holder) == "held"
        waited = lantern(*add_args("blocked"), env=cli_env(LANTERN_LOCK_TIMEOUT="0.3"), store=path)
        assert waited.returncode == 1
        error = json.loads(waited.stderr)["error"]
        assert error["code"] == "lock_timeout"
        assert "held the store lock for 0.3s" in error["message"]
        assert "LANTERN_LOCK_TIMEOUT" in error["message"]
        with pytest.raises(LockTimeout):
            WriterLock(str(path / ".lantern" / "lock"), timeout=0.1).acquire()
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait(timeout=30)
    # The kernel dropped the killed holder's flock: the next writer goes straight through.
    done = lantern(
        *add_args("after the holder died"), env=cli_env(LANTERN_LOCK_TIMEOUT="0.3"), store=path
    )
    assert done.returncode == 0, done.stderr
    audit(path, {json.loads(done.stdout)["id"]})


def test_the_writer_lock_is_reentrant_in_a_thread_and_exclusive_between_threads(tmp_path):
    lock = WriterLock(str(tmp_path / "lock"), timeout=0.2)
    lock.acquire()
    lock.acquire()
    outcome = []

    def other():
        try:
            lock.acquire()
            outcome.append("acquired")
            lock.release()
        except LockTimeout:
            outcome.append("timed out")

    thread = threading.Thread(target=other)
    thread.start()
    join(thread)
    assert outcome == ["timed out"]
    lock.release()
    lock.release()
    thread = threading.Thread(target=other)
    thread.start()
    join(thread)
    assert outcome == ["timed out", "acquired"]


def test_cli_writers_killed_at_random_moments_lose_no_acknowledged_write(tmp_path, rng):
    path = make_store(tmp_path / "store")
    tally = Tally()
    rounds = 20
    # Kill anywhere from before start-up to well after a lone write would have ended.
    span = 2.5 * write_duration(path)
    errors: list[BaseException] = []

    def writer(own_rng: random.Random, each: Tally, tag: str) -> None:
        try:
            random_kill_round(path, own_rng, each, tag, span)
        except BaseException as err:  # re-raised in the test's thread below
            errors.append(err)

    for n in range(rounds):
        # Two writers race; each is killed at its own random moment if it is still running,
        # so both, one or neither may be killed. Each has its own generator, seeded here, so
        # the seed replays the same choices whichever thread runs first.
        tallies = [Tally(), Tally()]
        threads = [
            threading.Thread(
                target=writer, args=(random.Random(rng.getrandbits(64)), t, f"kill{n}")
            )
            for t in tallies
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            join(thread)
        if errors:
            raise errors[0]
        for t in tallies:
            tally.merge(t)
        if n % 6 == 5:
            recover_now(path, tally)
            audit(path, tally.acked_ids)
    recover_now(path, tally)
    audit(path, tally.acked_ids)
    print(
        f"attempted={tally.attempted} acknowledged={tally.acknowledged} kills={tally.kills} "
        f"recoveries={tally.recoveries}"
    )
    assert tally.kills > 0 and tally.acknowledged > 0
