"""Long index jobs draw a progress bar on a terminal's stderr, and nowhere else."""

from __future__ import annotations

import json

from support.cli import lantern, on_a_terminal

from lantern_git.model.record_file import record_path


def test_a_rebuild_on_a_terminal_draws_a_bar_to_the_end(store, store_path):
    for n in range(3):
        store.add(f"Record {n}.", kind="fact")
    _, terminal = on_a_terminal(store_path, "index", "rebuild")
    assert "indexing record files" in terminal
    assert "100%" in terminal


def test_no_bar_with_json_or_when_stderr_is_not_a_terminal(store, store_path):
    store.add("One record.", kind="fact")
    stdout, terminal = on_a_terminal(store_path, "index", "rebuild", "--json")
    assert "indexing record files" not in terminal
    assert isinstance(json.loads(stdout), dict)
    piped = lantern(
        "index", "rebuild", env={"LANTERN_STORE": str(store_path), "LANTERN_PROGRESS": "always"}
    )
    assert piped.returncode == 0
    assert "indexing" not in piped.stderr


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
    assert "checking changed record files" not in terminal  # --json: never a bar
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
