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
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PAGE = ROOT / "docs" / "evidence.md"
SECTION = "# Evidence: sources, chunks and pinned references"


def console_blocks(section: str = SECTION, page: Path = PAGE) -> list[list[tuple[str, list[str]]]]:
    """Each console block of ``page``'s ``section`` (up to its first ``##`` heading) as
    (command, expected output lines)."""
    text = page.read_text()
    start = text.index(section)
    end = text.index("\n## ", start + len(section))
    blocks = re.findall(r"```console\n(.*?)```", text[start:end], re.DOTALL)
    parsed = []
    for block in blocks:
        steps: list[tuple[str, list[str]]] = []
        lines = block.splitlines()
        i = 0
        while i < len(lines):
            line = lines[i]
            assert line.startswith("$ "), line
            command = line[2:]
            while command.endswith("\\"):
                i += 1
                command = command[:-1] + lines[i].strip()
            i += 1
            output = []
            while i < len(lines) and not lines[i].startswith("$ "):
                output.append(lines[i])
                i += 1
            steps.append((command, output))
        parsed.append(steps)
    return parsed


# A date, optionally with a time of day (``2026-12-03``, ``2026-12-03 02:29 UTC``,
# ``2026-12-03T02:29:53Z``): the README shows the day it was written, a run shows its own.
CLOCK = re.compile(r"\b\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2})?(?:Z| UTC)?)?\b")


def normalise(line: str) -> str:
    # A commit id depends on the time it was made, and a printed date or time on the day the
    # command ran; everything else in the session does not. Each is masked to a placeholder of
    # its own kind, so the rest of the line (and the table's column widths) is still compared.
    line = re.sub(r" as [0-9a-f]{10}$", " as <commit>", line.rstrip())
    return CLOCK.sub(lambda m: "<time>".ljust(len(m.group())), line)


def run_steps(steps, cwd: Path, env: dict) -> None:
    for command, expected in steps:
        if command.startswith("cat chat.md"):
            (cwd / "chat.md").write_text("\n".join(expected) + "\n")
            continue
        result = subprocess.run(
            ["bash", "-c", command], cwd=cwd, env=env, capture_output=True, text=True, timeout=60
        )
        # A step whose output matches but that failed, or crashed after printing, is a failure:
        # the README's commands all succeed (a step that shows a failing exit code runs
        # ``; echo "exit $?"`` and prints it).
        assert result.returncode == 0, (command, result.returncode, result.stderr)
        assert "Traceback" not in result.stderr, (command, result.stderr)
        got = [normalise(line) for line in result.stdout.splitlines()]
        assert got == [normalise(line) for line in expected], (command, result.stderr)


def session_env(tmp_path: Path) -> dict:
    """The environment a docs session runs in: a ``lantern`` on PATH that runs this checkout
    with this interpreter, and a wide terminal, as the pages were written with."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    launcher = bin_dir / "lantern"
    launcher.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m lantern_git "$@"\n')
    launcher.chmod(0o755)
    return dict(os.environ, PATH=f"{bin_dir}{os.pathsep}{os.environ['PATH']}", COLUMNS="200")


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
