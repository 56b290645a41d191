"""``lantern index embed``: embedding in batches, with progress, resumable after a kill.

Real stores, the real CLI in subprocesses, a real SIGKILL. The embedder is a hashed bag of
words that takes a moment per batch and logs how many texts each call embedded, so a test can
kill the process between batches and count what the next run embeds again.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from support.cli import lantern, on_a_terminal
from support.semantic import SlowHashEmbedder

from lantern_git.model.record import Record
from lantern_git.store import Store

ROOT = Path(__file__).resolve().parents[2]
SLOW = "support.semantic:SlowHashEmbedder"
NOW = 1_764_720_000


def filled(path: Path, count: int) -> list[str]:
    """A store of ``count`` records with distinct contents, in one import; their contents."""
    contents = [f"record {n} about topic {n % 13} and thing {n * 7 % 101}" for n in range(count)]
    store = Store.init(str(path), author="Test <test@example.com>")
    store.import_records(
        json.dumps(Record.new(kind="fact", content=text, now=NOW).to_dict()) for text in contents
    )
    store.close()
    return contents


def environment(log: Path, pause: float = 0.0) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "LANTERN_PROGRESS"}
    env["LANTERN_EMBEDDER"] = SLOW
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "tests"), str(ROOT)])
    env["LANTERN_TEST_EMBED_LOG"] = str(log)
    env["LANTERN_TEST_EMBED_PAUSE"] = str(pause)
    return env


def embedded(log: Path) -> int:
    if not log.exists():
        return 0
    return sum(int(line) for line in log.read_text().split())


@pytest.mark.semantic
def test_a_killed_embedding_resumes_where_it_stopped(tmp_path, monkeypatch):
    path = tmp_path / "store"
    contents = filled(path, 1300)  # six batches of 256
    first, second = tmp_path / "first.log", tmp_path / "second.log"
    command = [sys.executable, "-m", "lantern_git", "--store", str(path), "index", "embed"]
    with subprocess.Popen(
        command, env=environment(first, pause=0.4), stdout=subprocess.PIPE, stderr=subprocess.PIPE
    ) as proc:
        deadline = time.monotonic() + 120
        while embedded(first) < 2 * 256 and time.monotonic() < deadline:
            assert proc.poll() is None, proc.communicate()
            time.sleep(0.02)
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    before = embedded(first)
    assert 2 * 256 <= before < len(contents)  # killed mid-way
    done = subprocess.run(
        [*command, "--json"], env=environment(second), capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    again = embedded(second)
    # Every batch embedded before the kill was kept, but for the one it may have been writing
    assert again == json.loads(done.stdout)["records"]
    assert len(contents) - before <= again <= len(contents) - before + 256
    # The vectors are whole and right: every record's is its text's embedding
    monkeypatch.setenv("LANTERN_EMBEDDER", SLOW)
    monkeypatch.setenv("PYTHONPATH", environment(second)["PYTHONPATH"])
    monkeypatch.syspath_prepend(str(ROOT / "tests"))
    store = Store.open(str(path))
    vectors = store.record_vectors()
    current = vectors.current()
    assert vectors.embedded == 0
    assert len(current.row) == len(contents)
    by_content = {r.id: r.content for r in store.list(limit=None)}
    for key in list(by_content)[::97]:
        [expected] = SlowHashEmbedder().embed([by_content[key]])
        assert current.vector(key).tolist() == pytest.approx(expected.tolist(), abs=1e-6)
    store.close()


@pytest.mark.semantic
def test_index_embed_draws_a_bar_on_a_terminal_and_lines_in_a_pipe(tmp_path, monkeypatch):
    path = tmp_path / "store"
    filled(path, 300)
    log = tmp_path / "embed.log"
    for name, value in environment(log).items():
        monkeypatch.setenv(name, value)
    _, terminal = on_a_terminal(path, "index", "embed", progress="")
    assert "embedding records" in terminal and "100%" in terminal
    assert embedded(log) == 300
    # Embedded once: a second run embeds nothing and says so
    piped = lantern("--store", str(path), "index", "embed")
    assert piped.returncode == 0, piped.stderr
    assert "embedded 0 record and 0 chunk texts" in piped.stdout
    # A pipe gets the index jobs' lines on stderr, never beside --json
    (path / ".lantern" / "vectors").rename(tmp_path / "old-vectors")
    piped = lantern("--store", str(path), "index", "embed")
    assert piped.returncode == 0, piped.stderr
    assert piped.stderr.splitlines()[0] == "lantern: embedding records: 256 of 300 (85%)"
    assert piped.stderr.splitlines()[-1].startswith("lantern: embedding records: done, 300 in ")
    assert "embedded 300 record and 0 chunk texts" in piped.stdout
    (path / ".lantern" / "vectors").rename(tmp_path / "older-vectors")
    quiet = lantern("--store", str(path), "index", "embed", "--json")
    assert quiet.returncode == 0 and "embedding" not in quiet.stderr
    assert json.loads(quiet.stdout) == {"embedder": SLOW, "records": 300, "chunks": 0}


def test_index_embed_without_an_embedder_is_refused(store, store_path):
    done = lantern(
        "--store", str(store_path), "index", "embed", env={**os.environ, "LANTERN_EMBEDDER": "none"}
    )
    assert done.returncode == 1
    assert "semantic recall is off" in done.stderr


@pytest.mark.semantic
def test_the_mcp_server_embeds_in_the_background_and_answers_keyword_meanwhile(
    tmp_path, monkeypatch
):
    """A server over a store with 1,300 texts to embed (six batches, a pause each): its first
    searches answer by keyword at once, and explain says why; once the vectors are in, the
    same search is hybrid, and a write made meanwhile is in."""
    import anyio
    from mcp import Client
    from support.mcp import ok, server_params

    path = tmp_path / "store"
    filled(path, 1300)
    log = tmp_path / "embed.log"
    for name, value in environment(log, pause=0.5).items():
        monkeypatch.setenv(name, value)

    async def main() -> tuple[list[dict], dict, list[dict], int]:
        params = server_params(path)
        # The embedder is this module: the server must find it
        params.env = {**(params.env or {}), "PYTHONPATH": environment(log)["PYTHONPATH"]}
        async with Client(params) as client:
            started = time.monotonic()
            first = await ok(client, "lantern_memory_search", query="topic 3", explain=True)
            answered = time.monotonic() - started
            added = await ok(client, "lantern_memory_add", content="topic 3 again", kind="fact")
            deadline = time.monotonic() + 120
            while True:
                later = await ok(client, "lantern_memory_search", query="topic 3", explain=True)
                if later["records"][0]["mode"] == "hybrid" or time.monotonic() > deadline:
                    break
                await anyio.sleep(0.2)
            return first["records"], added, later["records"], answered

    first, added, later, answered = anyio.run(main)
    assert answered < 2.0  # not the ~3 s of embedding
    assert first and all(hit["mode"] == "keyword" for hit in first)
    note = first[0]["explain"]["vectors"]
    assert "embedded in the background" in note and "of 1300 texts" in note
    assert later[0]["mode"] == "hybrid" and "vectors" not in later[0]["explain"]
    assert added["id"] in {hit["id"] for hit in later}
    assert 1300 <= embedded(log) <= 1300 + 1 + 2  # each text once (and the search's queries)


@pytest.mark.semantic
def test_the_first_semantic_search_of_a_large_store_draws_its_embedding(tmp_path, monkeypatch):
    path = tmp_path / "store"
    filled(path, 300)
    log = tmp_path / "embed.log"
    for name, value in environment(log).items():
        monkeypatch.setenv(name, value)
    stdout, terminal = on_a_terminal(path, "memory", "search", "topic 3", "--mode", "semantic")
    assert "embedding records" in terminal and "100%" in terminal
    assert "topic 3" in stdout
    assert embedded(log) == 300 + 1  # every record once, and the query
    _, again = on_a_terminal(path, "memory", "search", "topic 3", "--mode", "semantic")
    assert "embedding records" not in again  # in step: nothing to embed
