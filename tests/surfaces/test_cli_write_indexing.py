"""A CLI write leaves its record files to the next command's freshness check.

A ``lantern`` process ends after its command, and every reading command checks which record
files changed since the index's stamp anyway; indexing the written file in the writing process
cost it Whoosh's import and a commit (docs/speed.md). The library, and a server, index their
own writes as before.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

from support.cli import lantern

from lantern_git.store import Store


def index_files(store_path) -> dict[str, int]:
    folder = os.path.join(store_path, ".lantern", "index")
    return {name: os.stat(os.path.join(folder, name)).st_mtime_ns for name in os.listdir(folder)}


def test_a_cli_add_leaves_the_index_to_the_next_command_which_sees_the_record(store_path):
    first = lantern("--store", str(store_path), "memory", "add", "first fact", "--kind", "fact")
    assert first.returncode == 0, first.stderr
    listed = lantern("--store", str(store_path), "memory", "list", "--json")
    assert [r["content"] for r in json.loads(listed.stdout)] == ["first fact"]
    before = index_files(store_path)

    added = lantern(
        "--store", str(store_path), "memory", "add", "second fact", "--kind", "fact", "--json"
    )
    assert added.returncode == 0, added.stderr
    assert index_files(store_path) == before  # the writing process left the index alone

    env = {"LANTERN_DEBUG_INDEX": "1"}
    listed = lantern("--store", str(store_path), "memory", "search", "second", "--json", env=env)
    assert listed.returncode == 0, listed.stderr
    assert [r["id"] for r in json.loads(listed.stdout)] == [json.loads(added.stdout)["id"]]
    checks = [line for line in listed.stderr.splitlines() if line.startswith("index: ")]
    # Read by the check, as any changed file is (the first one too, written within the stamp's
    # margin of the last check), not by a rebuild.
    assert checks and checks[0].startswith("index: rebuilt 0 / re-read "), listed.stderr


def test_a_cli_write_does_not_import_the_search_index(store_path):
    """What the deferral saves: the written process never loads Whoosh's queries."""
    lantern("--store", str(store_path), "memory", "add", "first fact", "--kind", "fact")
    probe = (
        "import runpy, sys\n"
        "sys.argv = ['lantern', '--store', sys.argv[1], 'memory', 'add', 'more', '--kind',"
        " 'fact']\n"
        "try:\n"
        "    runpy.run_module('lantern_git', run_name='__main__')\n"
        "except SystemExit:\n"
        "    pass\n"
        "print('whoosh.query' in sys.modules, 'lantern_git.index.search' in sys.modules,\n"
        "      file=sys.stderr)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe, str(store_path)], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert done.stderr.strip().splitlines()[-1] == "False False"


def test_the_library_still_indexes_its_own_writes(store_path):
    store = Store.open(str(store_path))
    try:
        before = index_files(store_path) if os.path.isdir(store_path / ".lantern" / "index") else {}
        record = store.add("library fact", kind="fact")
        assert index_files(store_path) != before
        assert [r.id for r in store.list()] == [record.id]
    finally:
        store.close()
