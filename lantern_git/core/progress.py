"""How far a long index job is, said in lines on stderr where no progress bar is drawn.

A terminal gets the CLI's bar (``cli/support.py``). Everywhere else, a piped command, ``--json``,
``lantern mcp`` (whose stderr is the client's log) and ``lantern serve``, a job that is over
in a moment says nothing, and one that runs past ``AFTER_S`` (a fresh clone's first command
builds the index of every record file: ~20 s at 100k records) says what it is doing, how far it
is every ``EVERY_S``, and when it is done, so that whoever waits knows the process works and
how long it has left. A server never answers from half an index: the read that needs it waits
for the whole one, and these lines are what it says meanwhile.
"""

from __future__ import annotations

import sys
import time
from typing import TextIO

# A job over before this says nothing; one past it says how far it is this often.
AFTER_S = 2.0
EVERY_S = 5.0


class Lines:
    """One job over ``total`` files, reported (see the module's docstring) on ``stream``
    (stderr when None), each line prefixed with ``lantern: ``. ``after`` and ``every`` are
    the seconds before the first line and between lines."""

    def __init__(
        self,
        total: int,
        what: str,
        stream: TextIO | None = None,
        after: float = AFTER_S,
        every: float = EVERY_S,
    ):
        self._total = total
        self._what = what
        self._stream = stream
        self._after = after
        self._every = every
        self._done = 0
        self._started = time.monotonic()
        self._said_at: float | None = None

    def _say(self, line: str) -> None:
        stream = self._stream if self._stream is not None else sys.stderr
        try:
            print(f"lantern: {line}", file=stream, flush=True)
        except (OSError, ValueError):  # stderr closed: the job goes on without it
            pass

    def update(self, count: int) -> None:
        self._done += count
        now = time.monotonic()
        if now - self._started < self._after:
            return
        if self._said_at is not None and now - self._said_at < self._every:
            return
        self._said_at = now
        share = 100 * self._done // self._total if self._total else 100
        self._say(f"{self._what}: {self._done:,} of {self._total:,} ({share}%)")

    def finish(self) -> None:
        if self._said_at is None and time.monotonic() - self._started < self._after:
            return  # over in a moment: nothing was said, nothing to close
        took = time.monotonic() - self._started
        self._say(f"{self._what}: done, {self._total:,} in {took:.1f} s")


def lines(total: int, what: str) -> Lines:
    """The progress of a job over ``total`` files, in lines on stderr (a store's ``progress``).
    ``LANTERN_PROGRESS=always`` says them for a job of any length (so that a test sees them),
    ``never`` never."""
    from .config import environment

    wanted = environment().progress
    if wanted == "never":
        return Lines(total, what, after=float("inf"))
    if wanted == "always":
        return Lines(total, what, after=0.0)
    return Lines(total, what)
