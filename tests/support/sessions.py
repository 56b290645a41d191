"""The docs' console sessions run as written: a page section's ``console`` blocks read as
(command, expected output) steps, run in a real shell with a ``lantern`` on PATH, and the
output compared with the page's, dates, times and commit ids masked. Shared by the runners in
tests/docs/ (the README tour, the evidence, semantic and entities sessions, every page)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]  # the repository, from tests/support/


PAGE = ROOT / "docs" / "evidence.md"


SECTION = "# Evidence: sources, chunks and pinned references"


def console_blocks(section: str = SECTION, page: Path = PAGE) -> list[list[tuple[str, list[str]]]]:
    """Each console block of ``page``'s ``section`` (up to its first ``##`` heading) as
    (command, expected output lines)."""
    text = page.read_text()
    start = text.index(section)
    end = text.index("\n## ", start + len(section))
    blocks = re.findall(r"```console\n(.*?)```", text[start:end], re.DOTALL)
    return [steps(block) for block in blocks]


def steps(body: str) -> list[tuple[str, list[str]]]:
    """(command, expected output lines) of one block's body (its lines, each ending in a
    newline); a command may continue over lines ending in ``\\``."""
    found: list[tuple[str, list[str]]] = []
    lines = body.split("\n")[:-1]  # a blank last line is output too (git log's)
    i = 0
    while i < len(lines):
        assert lines[i].startswith("$ "), lines[i]
        command = lines[i][2:]
        while command.endswith("\\"):
            i += 1
            command = command[:-1] + lines[i].strip()
        i += 1
        output = []
        while i < len(lines) and not lines[i].startswith("$ "):
            output.append(lines[i])
            i += 1
        found.append((command, output))
    return found


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
