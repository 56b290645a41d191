"""Answers a newcomer found silent or unhelpful (issue 36, item 4): a command named at the
wrong level, an empty store's empty list, and the default store answering unannounced.

Every test drives the real CLI in a subprocess with a fresh HOME (support.env's isolated_env)."""

from __future__ import annotations

import json
import os
from pathlib import Path

from support.cli import lantern, stderr_on_a_terminal
from support.stores import init_repo

from lantern_git.store import Store


def default_store() -> Path:
    return Path(os.environ["XDG_DATA_HOME"]) / "lantern" / "store"


def test_a_command_one_level_down_is_pointed_to_where_it_lives(tmp_path):
    result = lantern("search", "foo", cwd=tmp_path)
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr == (
        "Error: No such command 'search'. "
        "Did you mean 'lantern memory search' or 'lantern source search'?\n"
    )
    as_json = lantern("search", "foo", "--json", cwd=tmp_path)
    error = json.loads(as_json.stderr)["error"]
    assert as_json.returncode == 2 and error["code"] == "usage_error"
    assert "'lantern memory search' or 'lantern source search'" in error["message"]
    assert "'lantern memory history'?" in lantern("history", "x", cwd=tmp_path).stderr
    # click's own suggestion for a near miss stays, and an unknown word gets no guess.
    assert lantern("stauts", cwd=tmp_path).stderr == (
        "Error: No such command 'stauts'. Did you mean 'status'?\n"
    )
    assert lantern("bogus", cwd=tmp_path).stderr == "Error: No such command 'bogus'.\n"
    assert not default_store().exists()


def test_an_empty_store_s_list_says_so_on_stderr_in_text_mode(tmp_path):
    text = lantern("memory", "list", cwd=tmp_path)
    assert text.returncode == 0 and text.stdout == ""
    assert text.stderr == (
        f"lantern: {default_store()} has no records yet; lantern memory add writes the first\n"
    )
    for options in (["--json"], ["--jsonl"], ["--csv"], ["--count"]):
        quiet = lantern("memory", "list", *options, cwd=tmp_path)
        assert quiet.returncode == 0 and quiet.stderr == "", options
    assert not default_store().exists()
    store = tmp_path / "store"
    init_repo(store)
    Store.init(str(store)).close()
    assert "has no records yet" in lantern("--store", str(store), "memory", "list").stderr
    added = lantern("--store", str(store), "memory", "add", "kept", "--kind", "fact")
    assert added.returncode == 0, added.stderr
    # A filter that matches nothing in a store that has records is an answer, not news.
    none = lantern("--store", str(store), "memory", "list", "--kind", "goal")
    assert none.returncode == 0 and none.stdout == "" and none.stderr == ""
    archived = lantern("--store", str(store), "memory", "list", "--status", "archived")
    assert archived.stderr == ""


def on_a_terminal(cwd: Path, *args: str) -> tuple[int, str, str]:
    """(exit status, stdout, what reached the terminal on stderr) of one CLI run."""
    code, out, seen = stderr_on_a_terminal(*args, cwd=cwd)
    return code, out.decode(), seen.decode().replace("\r\n", "\n")


def test_on_a_terminal_the_default_store_says_when_it_answers(tmp_path):
    plain = tmp_path / "plain"
    plain.mkdir()
    code, out, err = on_a_terminal(plain, "memory", "add", "first", "--kind", "fact")
    assert code == 0 and out.startswith("added ")
    assert err == (
        f"lantern: no store here; using the default store {default_store()}, which the first "
        "write creates (lantern init makes a store in this folder)\n"
    )
    # Now it exists, and outside any repository it answers without a word.
    code, out, err = on_a_terminal(plain, "memory", "list")
    assert code == 0 and "first" in out and err == ""
    # Inside a plain git repository a person may think they are in a store: say which answered.
    repository = tmp_path / "project"
    init_repo(repository)
    (repository / "src").mkdir()
    code, out, err = on_a_terminal(repository / "src", "memory", "list")
    assert code == 0 and "first" in out
    assert err == (
        f"lantern: {repository} is a git repository but not a lantern store; answering from "
        f"the default store {default_store()} (lantern init {repository} makes it one)\n"
    )
    # Named stores, JSON and a pipe are left alone.
    assert on_a_terminal(repository, "memory", "list", "--json")[2] == ""
    assert on_a_terminal(repository, "--store", str(default_store()), "memory", "list")[2] == ""
    piped = lantern("memory", "list", cwd=repository)
    assert piped.returncode == 0 and piped.stderr == ""
    store = tmp_path / "store"
    init_repo(store)
    Store.init(str(store)).close()
    assert on_a_terminal(store, "memory", "list")[2] == (
        f"lantern: {store} has no records yet; lantern memory add writes the first\n"
    )


def test_check_s_closing_line_names_the_kind_of_file_that_is_wrong(tmp_path):
    store = tmp_path / "store"
    init_repo(store)
    Store.init(str(store)).close()
    added = lantern("--store", str(store), "source", "add", "-", "--uri", "session:s",
                    input="one\ntwo\n")  # fmt: skip
    assert added.returncode == 0, added.stderr
    [body] = (store / "sources").rglob("*.txt")
    body.write_text("one\nchanged by hand\n")
    check = lantern("--store", str(store), "check")
    assert check.returncode == 4
    assert check.stderr.splitlines()[-1] == "Error: 1 problem in source files"
    record = lantern("--store", str(store), "memory", "add", "r", "--kind", "fact", "--json")
    assert record.returncode == 0, record.stderr
    [file] = (store / "memory").rglob("*.md")
    file.write_text(file.read_text().replace("priority: 50", "priority: 500"))
    both = lantern("--store", str(store), "check")
    assert both.stderr.splitlines()[-1] == "Error: 2 problems in record and source files"
    commit = lantern("--store", str(store), "commit")
    assert commit.returncode == 4
    # A source body edited by hand is a new version to commit; the broken record is not.
    assert "refusing to commit: 1 problem in record files" in commit.stderr
    body.write_text("one\ntwo\n")
    alone = lantern("--store", str(store), "check")
    assert alone.stderr.splitlines()[-1] == "Error: 1 problem in record files"
