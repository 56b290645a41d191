"""The evidence session of docs/evidence.md, run as written: every ``$`` command of the section's
console blocks in a real shell on a fresh store, its output compared with the page's.

The one step the page describes in prose (tidying the transcript in an editor) is done here
the same way, by rewriting the body file.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

import pytest
from support.sessions import (
    PAGE,
    console_blocks,
    normalise,
    run_steps,
    session_env,
)


def test_the_evidence_session_runs_as_written(tmp_path):
    env = session_env(tmp_path)
    # The default store (the isolated HOME's data folder), as a new user has it.
    first, second = console_blocks()
    run_steps(first, tmp_path, env)
    status = subprocess.run(
        ["lantern", "status", "--json"], env=env, capture_output=True, text=True, check=True
    )
    store = Path(json.loads(status.stdout)["path"])
    # The tidy, as the page states it (a reader must be able to make the same edit).
    page = " ".join(PAGE.read_text().split())
    tidy = re.search(
        r"tidies the transcript in an editor \(the body is `([^`]+)` in the store `lantern "
        r"status` names\): under the heading go a blank line and the line `([^`]+)`, and the "
        r"reply `([^`]+)` becomes `([^`]+)`\.",
        page,
    )
    assert tidy, "docs/evidence.md states the tidy edit"
    where, attendees, reply, shorter = tidy.groups()
    body = store / where
    text = body.read_text()
    text = text.replace(
        "# Planning call, 3 December\n", f"# Planning call, 3 December\n\n{attendees}\n"
    ).replace(reply, shorter)
    body.write_text(text)
    run_steps(second, tmp_path, env)


def test_a_step_that_fails_or_crashes_fails_the_session_even_when_its_output_matches(tmp_path):
    env = dict(os.environ)
    run_steps([("echo fine", ["fine"])], tmp_path, env)
    with pytest.raises(AssertionError):
        run_steps([("echo fine; exit 3", ["fine"])], tmp_path, env)
    with pytest.raises(AssertionError):
        crash = "echo fine; echo 'Traceback (most recent call last):' >&2"
        run_steps([(crash, ["fine"])], tmp_path, env)


def test_printed_dates_and_times_are_masked_and_nothing_else_is():
    readme = " 0.46  61f4c33  preference  active  2026-12-03  Ana prefers short answers."
    later = " 0.46  61f4c33  preference  active  2027-12-04  Ana prefers short answers."
    assert normalise(readme) == normalise(later)
    assert normalise("commit 4a7b207492  2026-12-03 02:29 UTC  Ana") == normalise(
        "commit 4a7b207492  2031-01-09 23:59 UTC  Ana"
    )
    assert normalise("committed 1 source (d312e8f5e5) as 7fdd26de5a") == normalise(
        "committed 1 source (d312e8f5e5) as 0123456789"
    )
    # Scores, ids and text around a date are still compared.
    assert normalise(readme) != normalise(readme.replace("0.46", "0.47"))
    assert normalise(readme) != normalise(readme.replace("61f4c33", "61f4c34"))
    assert normalise("Standup moved to 10:00.") != normalise("Standup moved to 11:00.")
