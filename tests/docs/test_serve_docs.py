"""docs/serve.md's review session, run as written: its ``$`` commands in a real shell, its
``agent.py`` with the real MCP client over stdio, ``lantern serve`` as a real process, and the
person's clicks (open the URL, read each pending record beside its evidence, accept one and
reject the other with the reasons the page gives) as the browser sends them: HTTP requests
carrying the token's cookie and the form's CSRF token. The browser itself is tested in
test_serve_browser.py."""

from __future__ import annotations

import http.cookiejar
import os
import re
import subprocess
import sys
import urllib.parse
import urllib.request
from pathlib import Path

from support.processes import first_line, stop
from support.serve import Markup

DOC = Path(__file__).resolve().parents[2] / "docs" / "serve.md"
SECTION = "## Reviewing an agent's writes"


def section() -> str:
    text = DOC.read_text()
    start = text.index(SECTION)
    end = text.find("\n## ", start + len(SECTION))
    return text[start : end if end != -1 else len(text)]


def console_blocks(text: str) -> list[list[tuple[str, list[str]]]]:
    """Each console block as (command, expected output lines)."""
    blocks = []
    for block in re.findall(r"```console\n(.*?)```", text, re.DOTALL):
        steps: list[tuple[str, list[str]]] = []
        for line in block.splitlines():
            if line.startswith("$ "):
                steps.append((line[2:], []))
            else:
                steps[-1][1].append(line)
        blocks.append(steps)
    return blocks


def decisions(text: str) -> list[tuple[str, str, str]]:
    """The person's decisions, as the page states them: (accept|reject, id, reason)."""
    found = re.findall(r"^- (Accept|Reject) `([0-9a-f]{16})` with the reason `([^`]+)`", text, re.M)
    return [(op.lower(), record_id, reason) for op, record_id, reason in found]


def normalise(line: str, home: Path) -> str:
    line = line.rstrip().replace(str(home), "~")
    line = re.sub(r"127\.0\.0\.1:\d+", "127.0.0.1:8765", line)
    return re.sub(r"\?token=[A-Za-z0-9_-]+$", "?token=…", line)


class Shell:
    def __init__(self, cwd: Path, env: dict, home: Path):
        self.cwd, self.env, self.home = cwd, env, home
        self.server: subprocess.Popen | None = None
        self.url = ""

    def run(self, steps: list[tuple[str, list[str]]]) -> None:
        for command, expected in steps:
            want = [normalise(line, self.home) for line in expected]
            if command == "cat chat.md":  # the file the session shows, as it shows it
                (self.cwd / "chat.md").write_text("\n".join(expected) + "\n")
                continue
            if " serve " in command:
                # As written, on any free port (8765 may be taken where the tests run).
                self.server = subprocess.Popen(
                    ["bash", "-c", "exec " + command + " --port 0"],
                    cwd=self.cwd,
                    env=self.env,
                    stdout=subprocess.PIPE,
                    text=True,
                )
                line = first_line(self.server)
                assert [normalise(line, self.home)] == want, line
                self.url = line.removeprefix("lantern serve: ")
                continue
            result = subprocess.run(
                ["bash", "-c", command],
                cwd=self.cwd,
                env=self.env,
                capture_output=True,
                text=True,
                timeout=120,
            )
            got = [normalise(line, self.home) for line in result.stdout.splitlines()]
            assert got == want, (command, result.stderr)

    def stop(self) -> None:
        if self.server is not None:
            stop(self.server)


def test_the_review_session_of_docs_serve_runs_as_written(tmp_path, isolated_env):
    text = section()
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name, target in (("lantern", f'"{sys.executable}" -m lantern_git'), ("python", "")):
        launcher = bin_dir / name
        launcher.write_text(
            f'#!/bin/sh\nexec {target or chr(34) + sys.executable + chr(34)} "$@"\n'
        )
        launcher.chmod(0o755)
    work = tmp_path / "work"
    work.mkdir()
    env = dict(os.environ, PATH=f"{bin_dir}{os.pathsep}{os.environ['PATH']}", COLUMNS="200")
    # git's own default branch (master), as on a reader's machine: the page names no branch.
    (isolated_env / ".gitconfig").write_text(
        "[user]\n\tname = Test Author\n\temail = author@example.com\n"
    )
    env["PYTHONPATH"] = str(Path(__file__).resolve().parents[2])
    # The agent's script, as the page shows it.
    (script,) = re.findall(r"```python\n(# agent\.py\n.*?)```", text, re.DOTALL)
    (work / "agent.py").write_text(script)
    setup, serving, after = console_blocks(text)
    shell = Shell(work, env, isolated_env)
    try:
        shell.run(setup)
        shell.run(serving)
        browse(shell.url, decisions(text), work / "chat.md")
    finally:
        shell.stop()
    shell.run(after)


def browse(url: str, wanted: list[tuple[str, str, str]], transcript: Path) -> None:
    """What the person does in the browser, as the browser sends it."""
    browser = urllib.request.build_opener(
        urllib.request.HTTPCookieProcessor(http.cookiejar.CookieJar())
    )
    base = url.split("/?", 1)[0]

    def get(path: str) -> str:
        with browser.open(base + path, timeout=60) as response:
            assert response.status == 200
            return response.read().decode()

    get(url.removeprefix(base))  # the printed URL: the token becomes a cookie
    review = get("/review")
    assert [op for op, _, _ in wanted] == ["accept", "reject"]
    lines = transcript.read_text().splitlines()
    cited = {wanted[0][1]: lines[3:5], wanted[1][1]: lines[5:6]}
    for _, record_id, _ in wanted:
        assert f'id="pending-{record_id}"' in review
        # The record beside its evidence: the cited lines, verbatim, verified.
        page = get(f"/records/{record_id}?pending=1")
        evidence = Markup(page.split('id="evidence"', 1)[1].split("</section>", 1)[0]).text
        assert all(line in evidence for line in cited[record_id]) and "ok" in evidence
    for op, record_id, reason in wanted:
        review = get("/review")
        form = review.split(f'id="pending-{record_id}"', 1)[1].split("</form>", 1)[0]
        fields = {
            attrs["name"]: attrs["value"]
            for attrs in Markup(form).tags("input")
            if attrs.get("type") == "hidden"
        }
        assert fields["id"] == record_id and fields["csrf"]
        data = urllib.parse.urlencode({**fields, "reason": reason}).encode()
        with browser.open(f"{base}/review/{op}", data=data, timeout=60) as response:
            assert response.status == 200
            done = Markup(response.read().decode()).text
        assert f"{op}ed {record_id}" in done
