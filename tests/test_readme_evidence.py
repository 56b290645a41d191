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


def normalise(line: str) -> str:
    # A commit id depends on the time it was made; everything else in the session does not.
    return re.sub(r" as [0-9a-f]{10}$", " as <commit>", line.rstrip())


def run_steps(steps, cwd: Path, env: dict) -> None:
    for command, expected in steps:
        if command.startswith("cat chat.md"):
            (cwd / "chat.md").write_text("\n".join(expected) + "\n")
            continue
        result = subprocess.run(
            ["bash", "-c", command], cwd=cwd, env=env, capture_output=True, text=True, timeout=60
        )
        got = [normalise(line) for line in result.stdout.splitlines()]
        assert got == [normalise(line) for line in expected], (command, result.stderr)


def test_the_evidence_session_runs_as_written(tmp_path):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    launcher = bin_dir / "lantern"
    launcher.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m lantern_git "$@"\n')
    launcher.chmod(0o755)
    env = dict(
        os.environ,
        PATH=f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
        COLUMNS="200",
    )
    # The default store (the isolated HOME's data folder), as a new user has it.
    first, second = console_blocks()
    run_steps(first, tmp_path, env)
    status = subprocess.run(
        ["lantern", "status", "--json"], env=env, capture_output=True, text=True, check=True
    )
    store = Path(json.loads(status.stdout)["path"])
    body = store / "sources" / "d3" / "d312e8f5e55324ec.md"
    text = body.read_text()
    text = text.replace(
        "# Planning call, 3 December\n",
        "# Planning call, 3 December\n\nAttendees: Ana, the assistant.\n",
    ).replace(
        "Assistant: understood, Friday deploys wait for the freeze review.",
        "Assistant: understood.",
    )
    body.write_text(text)
    run_steps(second, tmp_path, env)
