"""Every console session in README.md and docs/ runs as a test, or its page says why it cannot.

A session is a fenced ``console`` block: ``$`` commands and the output a terminal shows (stderr
included). Each block is claimed by a runner in ``RUNNERS`` (a page, the section that holds the
blocks, and the test that runs them as written), or marked on its page, on the line right
before it, with ``<!-- not run: WHY -->`` for a session no test can run (an ssh remote, an
editor, a mounted backup). ``test_every_console_session_is_run_or_marked`` fails when a page
gains a block that nothing runs; ``NOT_YET_RUN`` pins the pages whose sessions are still to be
turned into tests (issue 36), block count and all, so that list can only shrink.

The runner here (``run_session``) is the README tour's (``test_readme_evidence.run_steps``)
grown for whole pages: one shell state carried from command to command (the working folder),
stderr beside stdout as a terminal shows it, a failing command allowed only where the page
shows its error, and the same masks for what a run cannot reproduce (commit ids, dates, and
epoch seconds in JSON)."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

from test_readme_evidence import CLOCK, ROOT, session_env

PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
NOT_RUN = re.compile(r"<!-- not run: [^>]+ -->")

# (page, section heading or None for the whole page) -> the test that runs its sessions.
RUNNERS = {
    (
        "README.md",
        "## A five-minute tour",
    ): "test_readme_tour.py::test_the_readme_tour_runs_as_written",
    ("docs/evidence.md", "# Evidence: sources, chunks and pinned references"): (
        "test_readme_evidence.py::test_the_evidence_session_runs_as_written"
    ),
    ("docs/semantic.md", "# Semantic recall"): (
        "test_readme_semantic.py::test_the_semantic_session_runs_as_written"
    ),
    ("docs/serve.md", "## Reviewing an agent's writes"): (
        "test_serve_docs.py::test_the_review_session_of_docs_serve_runs_as_written"
    ),
    ("docs/usage.md", None): "test_docs_sessions.py::test_the_usage_page_runs_as_written",
    ("docs/sync.md", None): "test_docs_sessions.py::test_the_sync_page_runs_as_written",
}
# Pages whose console sessions no test runs yet, with how many blocks each has: to be turned
# into runners (issue 36). A block added to one of them, or a page added here, fails the check.
NOT_YET_RUN = {
    "docs/editing.md": 3,
    "docs/evidence-inputs.md": 6,
    "docs/format.md": 6,
    "docs/history.md": 6,
    "docs/identity.md": 1,
    "docs/paging.md": 1,
    "docs/search.md": 1,
    "docs/transfer.md": 2,
}


def blocks(page: Path) -> list[tuple[int, tuple[str, ...], bool, str]]:
    """Each console block of ``page``: (its line, the headings it lies under, outermost
    first, whether it is marked not run, its body). Fenced code is not read for headings."""
    found = []
    headings: list[str] = []
    lines = page.read_text().splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        if re.match(r"#{1,6} ", line):
            level = len(line) - len(line.lstrip("#"))
            headings = [h for h in headings if len(h) - len(h.lstrip("#")) < level] + [line]
        if line.startswith("```"):
            end = next(j for j in range(i + 1, len(lines)) if lines[j].startswith("```"))
            if line.strip() == "```console":
                marked = i > 0 and NOT_RUN.fullmatch(lines[i - 1].strip()) is not None
                body = "".join(f"{text}\n" for text in lines[i + 1 : end])
                found.append((i + 1, tuple(headings), marked, body))
            i = end
        i += 1
    return found


def unclaimed(pages: list[Path], root: Path = ROOT) -> list[str]:
    """``page:line`` of each console block that no runner claims and no marker excuses."""
    missing = []
    for page in pages:
        name = page.relative_to(root).as_posix()
        if name in NOT_YET_RUN:
            continue
        for line, headings, marked, _ in blocks(page):
            claimed = any(
                runner_page == name and (section is None or section in headings)
                for runner_page, section in RUNNERS
            )
            if not (claimed or marked):
                missing.append(f"{name}:{line}")
    return missing


def test_every_console_session_is_run_or_marked():
    assert unclaimed(PAGES) == []
    counts = {
        page.relative_to(ROOT).as_posix(): len(blocks(page))
        for page in PAGES
        if page.relative_to(ROOT).as_posix() in NOT_YET_RUN
    }
    assert counts == NOT_YET_RUN


def test_each_runner_names_a_test_that_exists():
    for runner in RUNNERS.values():
        file, _, name = runner.partition("::")
        assert f"def {name}(" in (ROOT / "tests" / file).read_text(), runner


def test_the_check_finds_a_new_block_that_nothing_runs(tmp_path):
    (tmp_path / "docs").mkdir()
    page = tmp_path / "docs" / "usage.md"
    page.write_text(
        "# Using\n\n```console\n$ lantern status\n```\n\n"
        "<!-- not run: needs an editor -->\n```console\n$ lantern memory edit x\n```\n"
    )
    assert unclaimed([page], root=tmp_path) == []
    other = tmp_path / "docs" / "other.md"
    other.write_text("# Other\n\n```sh\nnot a session\n```\n\n```console\n$ lantern status\n```\n")
    assert unclaimed([other], root=tmp_path) == ["docs/other.md:7"]


# ---------------------------------------------------------------------------- the runner


def steps(body: str) -> list[tuple[str, list[str]]]:
    """(command, expected output lines) of one block; a command may continue over lines
    ending in ``\\``."""
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


EPOCH = re.compile(r'("(?:created_at|updated_at|captured_at|time)": )\d{10}')


def normalise(line: str, home: str) -> str:
    """What a run cannot reproduce, masked: the home folder, commit ids, dates and times,
    epoch seconds in JSON. Record and source ids, scores and widths are compared."""
    line = line.rstrip().replace(home, "~")
    line = re.sub(r" as [0-9a-f]{10}$", " as <commit>", line)
    line = EPOCH.sub(r"\1<epoch>", line)
    return CLOCK.sub(lambda m: "<time>".ljust(len(m.group())), line)


def run_session(body: str, cwd: Path, env: dict, home: str) -> Path:
    """Runs one block's commands in order as a terminal would (stderr beside stdout), from
    ``cwd``; returns the working folder the last command left."""
    state = cwd.parent / ".session-cwd"
    for command, expected in steps(body):
        script = 'cd "$0" && { eval "$1"; } 2>&1; status=$?; pwd > "$2"; exit $status'
        result = subprocess.run(
            ["bash", "-c", script, str(cwd), command, str(state)],
            env=env, capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        got = [normalise(line, home) for line in result.stdout.splitlines()]
        want = [normalise(line, home) for line in expected]
        assert got == want, (command, result.stderr)
        shows_failure = any(line.startswith(("Error: ", "exit ")) for line in expected) or (
            expected[:1] == ["{"] or any('{"error": ' in line for line in expected)
        )
        assert result.returncode == 0 or shows_failure, (command, result.returncode)
        assert "Traceback" not in result.stdout, command
        cwd = Path(state.read_text().strip())
    return cwd


def page_env(tmp_path: Path) -> dict:
    """A fresh HOME (its git with no default branch set: git's own, ``master``, as on a
    reader's machine), a ``lantern`` on PATH, and stdout a pipe (120 columns), as the pages
    were written with."""
    home = tmp_path / "home"
    home.mkdir()
    env = session_env(tmp_path)
    env.update(HOME=str(home), XDG_DATA_HOME=str(home / ".local/share"))
    for name in [n for n in env if n.startswith("LANTERN_")] + ["COLUMNS"]:
        del env[name]
    return env


def test_the_usage_page_runs_as_written(tmp_path):
    page = ROOT / "docs" / "usage.md"
    env = page_env(tmp_path)
    # The page's setup sentence: a store of its own, and who writes.
    setup = re.search(
        r"order against a fresh store: `([^`]+)`", page.read_text().replace("\n", " ")
    )
    assert setup, "docs/usage.md names its setup"
    assert setup.group(1).endswith("; cd $LANTERN_STORE"), "the sessions run in the store"
    store = tmp_path / "store-home"
    store.mkdir()
    env["LANTERN_STORE"] = str(store / "s")
    env["LANTERN_AUTHOR"] = "Ana <ana@example.com>"
    made = subprocess.run(
        ["bash", "-c", 'lantern init "$LANTERN_STORE" > /dev/null && cd "$LANTERN_STORE"'],
        env=env, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert made.returncode == 0, made.stderr
    cwd = store / "s"
    for _, _, marked, body in blocks(page):
        if not marked:
            cwd = run_session(body, cwd, env, env["HOME"])


def test_the_sync_page_runs_as_written(tmp_path):
    """Two stores in the home folder stand for the two hosts, as the page says; its config
    line is the one git shows."""
    env = page_env(tmp_path)
    home = Path(env["HOME"])
    cwd = home
    for _, _, marked, body in blocks(ROOT / "docs" / "sync.md"):
        if not marked:
            cwd = run_session(body, cwd, env, env["HOME"])
    name = subprocess.run(
        ["git", "-C", str(home / "laptop"), "config", "merge.lantern.name"],
        capture_output=True, text=True, env=env, timeout=60,
    ).stdout.strip()  # fmt: skip
    assert f"merge.lantern.name={name}\n" in (ROOT / "docs" / "sync.md").read_text()
