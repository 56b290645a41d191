"""Long index jobs draw a progress bar on a terminal's stderr, and nowhere else."""

from __future__ import annotations

import http.cookiejar
import io
import json
import os
import shutil
import subprocess
import sys
import urllib.request

from support.cli import lantern, on_a_terminal, start_lantern
from support.processes import first_line, stop
from support.serve import LINE

from lantern_git.core.progress import Lines
from lantern_git.model.record_file import record_path


def test_a_rebuild_on_a_terminal_draws_a_bar_to_the_end(store, store_path):
    for n in range(3):
        store.add(f"Record {n}.", kind="fact")
    _, terminal = on_a_terminal(store_path, "index", "rebuild")
    assert "indexing record files" in terminal
    assert "100%" in terminal


def test_no_bar_with_json_or_when_stderr_is_not_a_terminal(store, store_path):
    """Where no bar is drawn, a long job says how far it is in plain lines on stderr
    (``always`` makes any job long enough)."""
    store.add("One record.", kind="fact")
    stdout, terminal = on_a_terminal(store_path, "index", "rebuild", "--json")
    assert "[" not in terminal  # the bar's frame
    assert "lantern: indexing record files: done, 1 in " in terminal
    assert isinstance(json.loads(stdout), dict)
    piped = lantern(
        "index", "rebuild", env={"LANTERN_STORE": str(store_path), "LANTERN_PROGRESS": "always"}
    )
    assert piped.returncode == 0
    assert "[" not in piped.stderr
    assert "lantern: indexing record files: done, 1 in " in piped.stderr


def test_a_short_job_says_nothing_when_piped(store, store_path):
    store.add("One record.", kind="fact")
    piped = lantern("index", "rebuild", env={"LANTERN_STORE": str(store_path)})
    assert piped.returncode == 0
    assert "indexing" not in piped.stderr


def test_lines_say_how_far_a_long_job_is_then_that_it_is_done():
    stream = io.StringIO()
    progress = Lines(1000, "indexing record files", stream=stream, after=0.0, every=0.0)
    progress.update(500)
    progress.update(500)
    progress.finish()
    said = stream.getvalue().splitlines()
    assert said[:2] == [
        "lantern: indexing record files: 500 of 1,000 (50%)",
        "lantern: indexing record files: 1,000 of 1,000 (100%)",
    ]
    assert said[2].startswith("lantern: indexing record files: done, 1,000 in ")
    assert len(said) == 3


def test_lines_say_nothing_of_a_job_over_before_the_first_line_is_due():
    stream = io.StringIO()
    progress = Lines(1000, "indexing record files", stream=stream, after=3600.0)
    progress.update(1000)
    progress.finish()
    assert stream.getvalue() == ""


def test_lines_come_no_more_often_than_asked():
    stream = io.StringIO()
    progress = Lines(1000, "indexing record files", stream=stream, after=0.0, every=3600.0)
    for _ in range(10):
        progress.update(100)
    assert stream.getvalue().splitlines() == ["lantern: indexing record files: 100 of 1,000 (10%)"]


def test_the_mcp_server_says_how_far_the_index_build_is_while_a_call_waits(store, store_path):
    """A fresh clone's first call builds the whole index before it answers (never from part
    of it), and the server's stderr, the client's log, says so."""
    for n in range(3):
        store.add(f"Record {n}.", kind="fact")
    store.close()
    shutil.rmtree(store_path / ".lantern")
    messages = [
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "test", "version": "1"},
            },
        },
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "tools/call",
            "params": {"name": "lantern_memory_list", "arguments": {"limit": 10}},
        },
    ]
    env = dict(os.environ, LANTERN_STORE=str(store_path), LANTERN_PROGRESS="always")
    with subprocess.Popen(
        [sys.executable, "-m", "lantern_git", "mcp"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        text=True,
    ) as server:
        assert server.stdin is not None and server.stdout is not None
        for message in messages:
            server.stdin.write(json.dumps(message) + "\n")
            server.stdin.flush()
        answer = None
        while answer is None:  # bounded by the communicate below and the suite's timeout
            line = server.stdout.readline()
            assert line, "the server closed its output before answering"
            reply = json.loads(line)
            if reply.get("id") == 2:
                answer = reply["result"]["structuredContent"]
        _, stderr = server.communicate(timeout=60)
    assert len(answer["records"]) == 3, answer
    assert "lantern: indexing record files: done, 3 in " in stderr


def test_a_small_job_draws_no_bar_unless_asked(store, store_path):
    store.add("One record.", kind="fact")
    _, terminal = on_a_terminal(store_path, "index", "rebuild", progress="")
    assert "indexing record files" not in terminal


def test_the_first_command_after_many_changed_files_shows_its_check(store, store_path):
    made = [store.add(f"Record {n}.", kind="fact") for n in range(3)]
    for record in made:
        path = store_path / record_path(record.id)
        path.write_text(path.read_text().replace("priority: 50", "priority: 70"))
    stdout, terminal = on_a_terminal(store_path, "memory", "list", "--json")
    assert "[" not in terminal  # --json: never a bar (a line says what the check did)
    for record in made:
        path = store_path / record_path(record.id)
        path.write_text(path.read_text().replace("priority: 70", "priority: 80"))
    _, terminal = on_a_terminal(store_path, "memory", "list")
    assert "checking changed record files" in terminal
    assert [r["priority"] for r in json.loads(stdout)] == [70, 70, 70]


def test_an_ingest_of_many_files_draws_a_bar_and_not_beside_json(store_path, tmp_path):
    docs = []
    for n in range(25):
        doc = tmp_path / f"note-{n}.md"
        doc.write_text(f"note {n}\n")
        docs.append(str(doc))
    _, terminal = on_a_terminal(store_path, "source", "add", *docs[:21], progress="")
    assert "ingesting" in terminal and "100%" in terminal
    stdout, terminal = on_a_terminal(store_path, "source", "add", *docs, "--json", progress="")
    assert "ingesting" not in terminal and len(json.loads(stdout)) == 25
    _, terminal = on_a_terminal(store_path, "source", "add", *docs[:3], progress="")
    assert "ingesting" not in terminal  # three files are done before a bar could be read


def test_the_web_server_says_how_far_the_index_build_is_while_a_page_waits(store, store_path):
    """A fresh clone's first page waits for the whole index (never shows part of it), and
    ``lantern serve``'s stderr, its log, says how far the build went."""
    for n in range(3):
        store.add(f"Served record {n}.", kind="fact")
    store.close()
    shutil.rmtree(store_path / ".lantern")
    server = start_lantern(
        "serve", "--port", "0", store=store_path, env={"LANTERN_PROGRESS": "always"}
    )
    try:
        line = first_line(server)
        assert LINE.match(line), line
        jar = http.cookiejar.CookieJar()
        browser = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(jar))
        with browser.open(line.removeprefix("lantern serve: "), timeout=60) as response:
            page = response.read().decode()
    finally:
        stop(server)
    stderr = server.stderr.read() if server.stderr else ""
    assert [f"Served record {n}." in page for n in range(3)] == [True] * 3
    assert "lantern: indexing record files: done, 3 in " in stderr, stderr
