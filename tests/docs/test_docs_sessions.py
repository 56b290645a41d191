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

import getpass
import hashlib
import json
import os
import re
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from support.sessions import CLOCK, ROOT, session_env, steps

PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
NOT_RUN = re.compile(r"<!-- not run: [^>]+ -->")

# (page, section heading or None for the whole page) -> the test that runs its sessions (its
# path under tests/).
RUNNERS = {
    (
        "README.md",
        "## A five-minute tour",
    ): "docs/test_readme_tour.py::test_the_readme_tour_runs_as_written",
    ("docs/evidence.md", "# Evidence: sources, chunks and pinned references"): (
        "docs/test_readme_evidence.py::test_the_evidence_session_runs_as_written"
    ),
    ("docs/semantic.md", "# Semantic recall"): (
        "docs/test_readme_semantic.py::test_the_semantic_session_runs_as_written"
    ),
    ("docs/serve.md", "## Reviewing an agent's writes"): (
        "docs/test_serve_docs.py::test_the_review_session_of_docs_serve_runs_as_written"
    ),
    ("docs/usage.md", None): "docs/test_docs_sessions.py::test_the_usage_page_runs_as_written",
    ("docs/sync.md", None): "docs/test_docs_sessions.py::test_the_sync_page_runs_as_written",
    (
        "docs/identity.md",
        None,
    ): "docs/test_docs_sessions.py::test_the_identity_page_runs_as_written",
    ("docs/paging.md", None): "docs/test_docs_sessions.py::test_the_paging_page_runs_as_written",
    ("docs/search.md", None): "docs/test_docs_sessions.py::test_the_search_page_runs_as_written",
    (
        "docs/transfer.md",
        None,
    ): "docs/test_docs_sessions.py::test_the_transfer_page_runs_as_written",
    ("docs/editing.md", None): "docs/test_docs_sessions.py::test_the_editing_page_runs_as_written",
    ("docs/history.md", None): "docs/test_docs_sessions.py::test_the_history_page_runs_as_written",
    ("docs/format.md", None): "docs/test_docs_sessions.py::test_the_format_page_runs_as_written",
    ("docs/evidence-inputs.md", None): (
        "docs/test_docs_sessions.py::test_the_evidence_inputs_page_runs_as_written"
    ),
    ("docs/entities.md", "## A session"): (
        "docs/test_entities_docs.py::test_the_entities_session_runs_as_written"
    ),
}
# Pages whose console sessions no test runs yet, with how many blocks each has: to be turned
# into runners (issue 36). A block added to one of them, or a page added here, fails the check.
NOT_YET_RUN = {}


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


EPOCH = re.compile(r'("(?:created_at|updated_at|captured_at|time)": )\d{10}')
# The same seconds in a record file (and in git's diff of one).
FILE_EPOCH = re.compile(r"((?:created_at|updated_at): )\d{10}")
# What git prints of a commit whose id and date a run cannot reproduce: its full id, its date,
# and the blob ids in its diff (a record file holds its times).
GIT_COMMIT = re.compile(r"^commit [0-9a-f]{40}$")
GIT_DATE = re.compile(r"^Date: {3}\S.*$")
GIT_BLOBS = re.compile(r"^index [0-9a-f]{7}\.\.[0-9a-f]{7}( \d{6})?$")
# Lantern's own commit ids: ten digits in history, log and revert lines, forty in JSON.
LANTERN_COMMIT = re.compile(
    r"^(commit |reverted )?[0-9a-f]{10}(?=  | \()"
    r"|(?<= as )[0-9a-f]{10}(?=:)|(?<=after )[0-9a-f]{10}"
)
JSON_COMMIT = re.compile(r'("(?:from|to|reverted|commit)": ")[0-9a-f]{40}"')
# Seconds beside the time they spell, in a record shown as text.
SHOWN_EPOCH = re.compile(r"(?<=\+00:00 )\(\d{10}\)$")


def normalise(line: str, home: str) -> str:
    """What a run cannot reproduce, masked: the home folder, commit ids, dates and times,
    epoch seconds in JSON and record files, git's commit headers and blob ids. Record and
    source ids, scores and widths are compared."""
    # The pages are written on Ana's machine: her home and a run's both read as ~.
    line = line.rstrip().replace(home, "~").replace("/home/ana", "~")
    line = re.sub(r" as [0-9a-f]{10}$", " as <commit>", line)
    line = EPOCH.sub(r"\1<epoch>", line)
    line = FILE_EPOCH.sub(r"\1<epoch>", line)
    line = GIT_COMMIT.sub("commit <commit>", line)
    line = GIT_DATE.sub("Date:   <date>", line)
    line = GIT_BLOBS.sub(r"index <blob>..<blob>\1", line)
    line = LANTERN_COMMIT.sub(lambda m: f"{m.group(1) or ''}<commit>", line)
    line = JSON_COMMIT.sub(r'\1<commit>"', line)
    line = SHOWN_EPOCH.sub("(<epoch>)", line)
    return CLOCK.sub(lambda m: "<time>".ljust(len(m.group())), line)


def run_session(
    body: str,
    cwd: Path,
    env: dict,
    home: str,
    aliases: dict[str, str] | None = None,
    *,
    a_second_apart: bool = False,
) -> Path:
    """Runs one block's commands in order as a terminal would (stderr beside stdout), from
    ``cwd``; returns the working folder the last command left. ``aliases`` maps what a run
    prints to what the page shows for it where that follows from where the run happens (an id
    made from a path in Ana's home), as the test computes it. ``a_second_apart``: each command
    starts in a second of its own, as a person types them, for pages that show a record's
    ``updated_at`` moving (two writes in one second leave it where it was)."""
    state = cwd.parent / ".session-cwd"
    for command, expected in steps(body):
        if a_second_apart:
            time.sleep(1 - time.time() % 1)  # at most a second: to the next one
        script = 'cd "$0" && { eval "$1"; } 2>&1; status=$?; pwd > "$2"; exit $status'
        result = subprocess.run(
            ["bash", "-c", script, str(cwd), command, str(state)],
            env=env, capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL,
        )  # fmt: skip
        printed = result.stdout
        for run_value, page_value in (aliases or {}).items():
            printed = printed.replace(run_value, page_value)
        got = [normalise(line, home) for line in printed.splitlines()]
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
    # LANTERN_EMBEDDER stays as support.env set it: none but in the semantic tests, whose pages
    # show search by meaning.
    stale = [n for n in env if n.startswith("LANTERN_") and n != "LANTERN_EMBEDDER"]
    for name in [*stale, "COLUMNS"]:
        del env[name]
    return env


def usage_store(tmp_path: Path, sessions: int | None = None) -> tuple[dict, Path]:
    """The store of docs/usage.md, made as its setup sentence says, after its first
    ``sessions`` sessions (all when None) ran as written; the pages that build on its
    records start from here."""
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
    sessions_run = [body for _, _, marked, body in blocks(page) if not marked][:sessions]
    for body in sessions_run:
        cwd = run_session(body, cwd, env, env["HOME"])
    return env, cwd


def test_the_usage_page_runs_as_written(tmp_path):
    usage_store(tmp_path)


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


def test_the_identity_page_runs_as_written(tmp_path):
    """``lantern mcp`` says whom it serves as, then serves stdin until it ends (here at once)."""
    env = page_env(tmp_path)
    home = Path(env["HOME"])
    made = subprocess.run(["bash", "-c", "git init -q ~/store && lantern init ~/store"],
                          env=env, capture_output=True, text=True, timeout=60)  # fmt: skip
    assert made.returncode == 0, made.stderr
    [(_, _, marked, body)] = blocks(ROOT / "docs" / "identity.md")
    assert not marked
    run_session(body, home, env, env["HOME"])


def test_the_paging_page_runs_as_written(tmp_path):
    """A negative page is refused before any store is read (here: none exists)."""
    env = page_env(tmp_path)
    [(_, _, marked, body)] = blocks(ROOT / "docs" / "paging.md")
    assert not marked
    run_session(body, Path(env["HOME"]), env, env["HOME"])


@pytest.mark.semantic
def test_the_search_page_runs_as_written(tmp_path):
    """``--explain`` in hybrid mode, the default with the semantic extra, on a fresh store."""
    env = page_env(tmp_path)
    env["LANTERN_STORE"] = str(tmp_path / "store")
    made = subprocess.run(["lantern", "init", env["LANTERN_STORE"]], env=env,
                          capture_output=True, text=True, timeout=60)  # fmt: skip
    assert made.returncode == 0, made.stderr
    [(_, _, marked, body)] = blocks(ROOT / "docs" / "search.md")
    assert not marked
    run_session(body, tmp_path, env, env["HOME"])


def test_the_transfer_page_runs_as_written(tmp_path):
    """Export and import on the usage page's store; the files the page imports from elsewhere
    (a line-2-broken dump, the MCP memory server's file, two notes) are made as it describes
    them."""
    env, cwd = usage_store(tmp_path)
    first, second = [body for _, _, marked, body in blocks(ROOT / "docs" / "transfer.md")]
    # bad.jsonl is the dump with line 2's id broken, made once the dump exists.
    before, broken_import = first.split("$ lantern --store t import bad.jsonl")
    cwd = run_session(before, cwd, env, env["HOME"])
    dump = (cwd / "dump.jsonl").read_text().splitlines()
    broken = json.loads(dump[1]) | {"id": "zz"}
    (cwd / "bad.jsonl").write_text("\n".join([dump[0], json.dumps(broken), *dump[2:]]) + "\n")
    home = env["HOME"]
    cwd = run_session(f"$ lantern --store t import bad.jsonl{broken_import}", cwd, env, home)
    mcp_lines = [
        {"type": "entity", "name": "Ana Lopez", "entityType": "person",
         "observations": ["Works in UTC+1", "Prefers short answers"]},
        {"type": "entity", "name": "Acme", "entityType": "organization", "observations": []},
        {"type": "relation", "from": "Ana Lopez", "to": "Acme", "relationType": "works_at"},
    ]  # fmt: skip
    (cwd / "memory.json").write_text("".join(json.dumps(line) + "\n" for line in mcp_lines))
    (cwd / "notes").mkdir()
    (cwd / "notes" / "beta.md").write_text("---\ntags: [beta]\n---\nThe beta ships Friday.\n")
    (cwd / "notes" / "ci.md").write_text("The CI runner is shared with the web team.\n")
    run_session(second, cwd, env, env["HOME"])


def test_the_editing_page_runs_as_written(tmp_path):
    """Hand edits on the usage page's records: ``EDITOR`` is a ``sed`` that edits the file, as
    the page shows, and the pre-commit session has the page's local hook installed."""
    env, cwd = usage_store(tmp_path)
    # pre-commit, installed beside this interpreter, runs the hook.
    env["PATH"] = f"{env['PATH']}{os.pathsep}{Path(sys.executable).parent}"
    page = ROOT / "docs" / "editing.md"
    *sessions, hooked = [body for _, _, marked, body in blocks(page)]
    for body in sessions:
        cwd = run_session(body, cwd, env, env["HOME"])
    local_hook = re.findall(r"```yaml\n(repos:\n  - repo: local\n.*?)```", page.read_text(), re.S)
    assert len(local_hook) == 1, "the page shows one local hook"
    (cwd / ".pre-commit-config.yaml").write_text(local_hook[0])
    setup = (
        "git add .pre-commit-config.yaml && git commit -qm hook && pre-commit install > /dev/null"
        " && sed -i 's/^kind: goal/kind: wish/' memory/4f/4f66f7698d066a4a.md"
    )
    made = subprocess.run(["bash", "-c", setup], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=120)  # fmt: skip
    assert made.returncode == 0, made.stdout + made.stderr
    run_session(hooked, cwd, env, env["HOME"])


def test_the_evidence_inputs_page_runs_as_written(tmp_path):
    """Each refusal and the followed link, in a folder of the home beside a fresh store: the
    links, the 412-line log and the oversized files are made as the page describes them (the
    two large ones sparse). A source id comes from its ``file://`` uri, so the log's id is the
    one its path in Ana's home gives."""
    env = page_env(tmp_path)
    home = Path(env["HOME"])
    env["LANTERN_STORE"] = str(tmp_path / "store")
    env["LANTERN_AUTHOR"] = "Ana <ana@example.com>"
    # The run's home is a longer path than Ana's: wide enough that its uri is not cut (the
    # page's lines are all under the 120 columns a pipe gets).
    env["COLUMNS"] = "300"
    work = home / "work"
    (home / "logs").mkdir()
    log = home / "logs" / "2026-12-03.log"
    log.write_text("".join(f"line {n}\n" for n in range(1, 413)))
    work.mkdir()
    (work / "link.md").symlink_to("/etc/passwd")
    (work / "latest.log").symlink_to(log)
    for name, size in [("huge.txt", 200_000_000), ("big.log", 40_000_000)]:
        with (work / name).open("wb") as sparse:
            sparse.truncate(size)
    made = subprocess.run(["lantern", "init", env["LANTERN_STORE"]], env=env,
                          capture_output=True, text=True, timeout=60)  # fmt: skip
    assert made.returncode == 0, made.stderr

    def uri_id(uri: str) -> str:
        return hashlib.sha256(b"uri\0" + uri.encode()).hexdigest()[:16]

    aliases = {uri_id(log.as_uri()): uri_id("file:///home/ana/logs/2026-12-03.log")}
    for _, _, marked, body in blocks(ROOT / "docs" / "evidence-inputs.md"):
        assert not marked
        run_session(body, work, env, env["HOME"], aliases)


def test_the_format_page_runs_as_written(tmp_path):
    """The default store's path, then ``notes`` (a git repository with a committed README.md
    and an untracked todo.txt, as the page says) made a store and given the records of
    usage.md's first session and its archive; the last session has no git identity at all,
    so the fallback is this machine's login and host, shown as Ana's."""
    env = page_env(tmp_path)
    for name in [n for n in env if n.startswith(("GIT_AUTHOR_", "GIT_COMMITTER_"))]:
        del env[name]
    env["LANTERN_AUTHOR"] = "Ana <ana@example.com>"
    home = Path(env["HOME"])
    notes = home / "notes"
    notes.mkdir()
    (notes / "README.md").write_text("# Notes\n")
    made = subprocess.run(
        ["bash", "-c", "git init -q && git add README.md && git -c user.name=Ana"
         " -c user.email=ana@example.com commit -qm notes && echo milk > todo.txt"],
        cwd=notes, env=env, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert made.returncode == 0, made.stderr
    first, init, status, record, provenance, anonymous = [
        body for _, _, marked, body in blocks(ROOT / "docs" / "format.md") if not marked
    ]
    cwd = run_session(first, home, env, env["HOME"])
    cwd = run_session(init, cwd, env, env["HOME"])
    assert cwd == notes
    usage = [body for _, _, marked, body in blocks(ROOT / "docs" / "usage.md") if not marked]
    run_session(usage[0], notes, env, env["HOME"])
    for body in (status, record):
        run_session(body, notes, env, env["HOME"])
    archive = ["lantern", "memory", "archive", "ade2", "--reason", "moved to a monorepo"]
    archived = subprocess.run(archive, cwd=notes, env=env, capture_output=True, text=True,
                              timeout=60)  # fmt: skip
    assert archived.returncode == 0, archived.stderr
    run_session(provenance, notes, env, env["HOME"])
    user, host = getpass.getuser() or "lantern", socket.gethostname() or "localhost"
    run_session(anonymous, notes, env, env["HOME"], {f"{user} <{user}@{host}>": "root <root@vm>"})


def test_the_history_page_runs_as_written(tmp_path):
    """On usage.md's store after editing.md's first two sessions, as the page says."""
    env, cwd = usage_store(tmp_path)
    for body in [body for _, _, marked, body in blocks(ROOT / "docs" / "editing.md")][:2]:
        cwd = run_session(body, cwd, env, env["HOME"], a_second_apart=True)
    for _, _, marked, body in blocks(ROOT / "docs" / "history.md"):
        assert not marked
        cwd = run_session(body, cwd, env, env["HOME"], a_second_apart=True)
