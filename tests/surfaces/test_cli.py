"""The CLI surface through click's CliRunner: JSON shapes, text columns, errors, exit codes."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import click
import pytest
from support.cli import invoke
from support.stores import colliding_contents, git, snapshot

from lantern_git.cli import cli
from lantern_git.cli.support import LanternGroup
from lantern_git.core.fields import RECORD_KEYS
from lantern_git.model.record import compute_id
from lantern_git.model.record_file import record_path

RECORD_KEY_LIST = list(RECORD_KEYS)
STATUS_KEYS = [
    "path",
    "exists",
    "read_only",
    "format",
    "records",
    "by_status",
    "by_kind",
    "broken_files",
    "sources",
    "chunks",
    "index",
    "embedder",
    "search_mode",
    "floors",
    "branch",
    "head",
    "upstream",
    "ahead",
    "behind",
]


def one_json(result):
    """stdout holds exactly one JSON document (and only a newline after it)."""
    assert result.stdout.endswith("\n")
    value, end = json.JSONDecoder().raw_decode(result.stdout)
    assert result.stdout[end:] == "\n"
    return value


def add(run, content, *options) -> dict:
    result = run("memory", "add", content, "--kind", "fact", *options, "--json")
    assert result.exit_code == 0, result.stderr
    return one_json(result)


def assert_record_object(obj: dict) -> None:
    assert list(obj) == RECORD_KEY_LIST
    assert re.fullmatch(r"[0-9a-f]{16}", obj["id"])
    assert isinstance(obj["priority"], int) and isinstance(obj["urgency"], int)
    assert isinstance(obj["confidence"], float)
    assert isinstance(obj["created_at"], int) and isinstance(obj["updated_at"], int)
    assert obj["expires_at"] is None or isinstance(obj["expires_at"], int)
    assert obj["supersedes_id"] is None or re.fullmatch(r"[0-9a-f]{16}", obj["supersedes_id"])
    assert isinstance(obj["source_refs"], list)
    assert isinstance(obj["content"], str) and not obj["content"].endswith("\n")


# ---------------------------------------------------------------------------- JSON shapes


def test_add_json_is_a_record_object_with_nulls_and_empty_lists(run):
    obj = add(run, "The build uses uv.\n")
    assert_record_object(obj)
    assert obj["id"] == compute_id("fact", "global", "The build uses uv.")
    assert obj["expires_at"] is None
    assert obj["supersedes_id"] is None
    assert obj["source_refs"] == []
    assert obj["content"] == "The build uses uv."
    assert {k: obj[k] for k in ("kind", "scope", "status", "priority", "urgency")} == {
        "kind": "fact",
        "scope": "global",
        "status": "active",
        "priority": 50,
        "urgency": 0,
    }
    assert obj["confidence"] == 1.0


def test_add_json_with_every_option(run):
    obj = add(
        run,
        "Renew the certificate.",
        "--scope",
        "host:zettabyte",
        "--priority",
        "80",
        "--urgency",
        "90",
        "--confidence",
        "0.75",
        "--expires-at",
        "2026-12-31T08:00:00Z",
        "--source-ref",
        "session:1",
        "--source-ref",
        "file:notes.md",
        "--reason",
        "asked by ops",
    )
    assert_record_object(obj)
    assert obj["scope"] == "host:zettabyte"
    assert (obj["priority"], obj["urgency"], obj["confidence"]) == (80, 90, 0.75)
    assert obj["expires_at"] == 1798704000
    assert obj["source_refs"] == ["session:1", "file:notes.md"]


def test_every_record_command_gives_one_record_object(run, store_path):
    first = add(run, "v1")
    assert one_json(run("memory", "show", first["id"][:6], "--json")) == first
    archived = one_json(run("memory", "archive", first["id"], "--json", "--reason", "old"))
    assert_record_object(archived)
    assert archived["status"] == "archived"
    restored = one_json(run("memory", "restore", first["id"], "--json"))
    assert restored["status"] == "active"
    updated = one_json(
        run("memory", "update", first["id"], "--priority", "70", "--expires-at", "+7d", "--json")
    )
    assert_record_object(updated)
    assert updated["priority"] == 70 and isinstance(updated["expires_at"], int)
    cleared = one_json(run("memory", "update", first["id"], "--expires-at", "none", "--json"))
    assert cleared["expires_at"] is None
    new = one_json(run("memory", "supersede", first["id"], "v2", "--json"))
    assert_record_object(new)
    assert new["supersedes_id"] == first["id"]
    assert new["content"] == "v2" and new["priority"] == 70
    assert git(store_path, "status", "--porcelain") == ""


def test_list_json_is_an_array_of_record_objects_in_order(run):
    low = add(run, "low", "--priority", "10")
    high = add(run, "high", "--priority", "90")
    urgent = add(run, "urgent", "--priority", "10", "--urgency", "50")
    run("memory", "archive", low["id"])
    listed = one_json(run("memory", "list", "--json"))
    assert [r["id"] for r in listed] == [high["id"], urgent["id"]]
    for obj in listed:
        assert_record_object(obj)
    everything = one_json(run("memory", "list", "--status", "all", "--json"))
    assert [r["id"] for r in everything] == [high["id"], urgent["id"], low["id"]]
    assert one_json(run("memory", "list", "--limit", "1", "--json"))[0]["id"] == high["id"]


def test_empty_list_and_empty_search_are_empty_arrays(run):
    result = run("memory", "list", "--json")
    assert result.exit_code == 0
    assert result.stdout == "[]\n"
    result = run("memory", "search", "nothing", "--json")
    assert result.exit_code == 0
    assert result.stdout == "[]\n"


def test_search_json_adds_a_score_and_the_mode_after_the_record_fields(run):
    add(run, "The deploy host is zettabyte.")
    target = add(run, "Deploys go through GitHub Actions; deploy on tag.")
    hits = one_json(run("memory", "search", "deploy", "--json"))
    assert len(hits) == 2
    for hit in hits:
        assert list(hit) == [*RECORD_KEY_LIST, "score", "mode"]
        assert isinstance(hit["score"], float) and hit["score"] > 0
        assert hit["mode"] == "keyword"  # support.env's LANTERN_EMBEDDER=none
    assert [h["score"] for h in hits] == sorted((h["score"] for h in hits), reverse=True)
    only = one_json(run("memory", "search", "actions", "--json"))
    assert [h["id"] for h in only] == [target["id"]]


def test_status_json_fields(run, store_path):
    a = add(run, "one")
    add(run, "two", "--kind", "goal")
    run("memory", "archive", a["id"])
    info = one_json(run("status", "--json"))
    assert list(info) == STATUS_KEYS
    assert info["path"] == str(store_path)
    assert info["exists"] is True
    assert info["read_only"] is False
    assert info["format"] == 2
    assert info["records"] == 2
    assert info["by_status"] == {"active": 1, "archived": 1}
    assert info["by_kind"] == {"fact": 1, "goal": 1}
    assert info["broken_files"] == 0
    assert info["index"] in ("up to date", "refreshed", "rebuilt")
    assert info["branch"] == "main"
    assert info["head"] == git(store_path, "rev-parse", "HEAD").strip()
    assert (info["upstream"], info["ahead"], info["behind"]) == (None, None, None)
    # The suite runs without an embedder (LANTERN_EMBEDDER=none): keyword search by default.
    assert (info["embedder"], info["search_mode"]) == (None, "keyword")


def test_status_text(run, store_path):
    add(run, "one")
    out = run("status").stdout
    assert f"store:    {store_path}\n" in out
    assert "format:   2\n" in out
    assert "records:  1\n" in out
    assert "branch:   main" in out
    assert re.search(r"^index:    (up to date|refreshed|rebuilt)$", out, re.M)
    assert "search:   keyword (no embedder: see Semantic recall)\n" in out


def test_init_and_index_rebuild_json(tmp_path, monkeypatch, run):
    add(run, "indexed")
    rebuilt = one_json(run("index", "rebuild", "--json"))
    assert rebuilt == {"indexed": 1, "skipped": 0}
    monkeypatch.delenv("LANTERN_STORE")
    target = tmp_path / "new-store"
    created = one_json(run("init", str(target), "--json"))
    assert list(created) == [
        "path",
        "created_repository",
        "committed",
        "commit",
        "registered_merge_driver",
    ]
    assert created["path"] == str(target)
    assert created["created_repository"] is True and created["committed"] is True
    assert created["commit"] == git(target, "rev-parse", "HEAD").strip()
    again = one_json(run("init", str(target), "--json"))
    assert again == {
        "path": str(target),
        "created_repository": False,
        "committed": False,
        "commit": None,
        "registered_merge_driver": False,
    }


def test_init_in_a_fresh_clone_registers_the_merge_driver_and_says_so(tmp_path, run):
    add(run, "cloned")
    source = Path(os.environ["LANTERN_STORE"])
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(source), str(clone))
    assert git(clone, "config", "--local", "--get", "merge.lantern.driver", check=False) == ""
    result = run("init", str(clone))
    assert result.exit_code == 0
    assert "registered its record merge driver" in result.output
    assert "lantern_git merge-file" in git(clone, "config", "--local", "merge.lantern.driver")
    assert "is already a lantern store" in run("init", str(clone)).output


def _commands(group: click.Group, prefix=()):
    # lantern's own group loads its lazy commands for this.
    every = group.every_command() if isinstance(group, LanternGroup) else group.commands
    for name, command in every.items():
        if isinstance(command, click.Group):
            yield from _commands(command, (*prefix, name))
        else:
            yield (*prefix, name), command


# `mcp` speaks JSON-RPC on stdout already; hidden commands are git plumbing, not for people.
NOT_JSON_COMMANDS = {"mcp"}


def test_every_command_takes_json():
    missing = [
        " ".join(path)
        for path, command in _commands(cli)
        if not command.hidden
        and " ".join(path) not in NOT_JSON_COMMANDS
        and not any("--json" in param.opts for param in command.params)
    ]
    assert missing == []


# ---------------------------------------------------------------------------- text output


def test_list_text_is_aligned_columns_with_short_ids(run):
    records = [
        add(run, "Ana prefers short answers.", "--scope", "user:ana", "--priority", "90"),
        add(run, "A longer scope here", "--scope", "project:lantern-git", "--urgency", "5"),
        add(run, "x", "--priority", "7"),
    ]
    lines = run("memory", "list").stdout.splitlines()
    header = lines[0]
    assert header.split() == ["ID", "KIND", "SCOPE", "STATUS", "PRI", "URG", "UPDATED", "CONTENT"]
    assert len(lines) == 4
    # Every left-aligned column starts at the same offset on every line.
    for name in ("KIND", "SCOPE", "STATUS", "UPDATED", "CONTENT"):
        col = header.index(name)
        for line in lines[1:]:
            assert line[col - 2 : col] == "  " and line[col] != " ", (name, line)
    # Numbers are right-aligned under their header.
    pri_end = header.index("PRI") + len("PRI")
    for line, record in zip(lines[1:], [records[0], records[1], records[2]]):
        assert line[:pri_end].endswith(str(record["priority"]))
    ids = [line.split()[0] for line in lines[1:]]
    assert ids == [r["id"][:7] for r in records]
    assert lines[1].endswith("Ana prefers short answers.")


def test_short_ids_grow_until_unambiguous(run):
    first, second = colliding_contents(7, stem="c")
    a, b = add(run, first), add(run, second)
    common = next(i for i, (x, y) in enumerate(zip(a["id"], b["id"])) if x != y)
    assert common >= 7
    shown = {line.split()[0] for line in run("memory", "list").stdout.splitlines()[1:]}
    assert shown == {a["id"][: common + 1], b["id"][: common + 1]}
    # The shown prefix is accepted back.
    assert one_json(run("memory", "show", a["id"][: common + 1], "--json"))["id"] == a["id"]


def test_short_ids_step_over_other_files_beside_a_record(run, store_path):
    record = add(run, "Only one record here.")
    folder = store_path / os.path.dirname(record_path(record["id"]))
    # Names that sort right beside the record's file and share 12 of its characters, but are no
    # record files: a short id is decided by the record files around it only.
    for name in (record["id"][:12] + "0000.txt", record["id"][:12] + "ffff.md~", ".hidden"):
        (folder / name).write_text("not a record\n")
    (shown,) = [line.split()[0] for line in run("memory", "list").stdout.splitlines()[1:]]
    assert shown == record["id"][:7]


def test_search_text_has_a_score_column(run):
    add(run, "The deploy host is zettabyte.")
    lines = run("memory", "search", "zettabyte").stdout.splitlines()
    assert lines[0].split()[:2] == ["SCORE", "ID"]
    assert re.match(r"\s*\d+\.\d\d  [0-9a-f]{7}  fact", lines[1])


def test_write_commands_say_what_they_did(run):
    result = run("memory", "add", "Hello there", "--kind", "fact")
    record_id = compute_id("fact", "global", "Hello there")
    assert result.stdout == f"added {record_id[:7]}  Hello there\n"
    assert run("memory", "add", "Hello there", "--kind", "fact").stdout.startswith("exists ")
    assert run("memory", "archive", record_id).stdout.startswith(f"archived {record_id[:7]}")
    assert run("memory", "archive", record_id).stdout.startswith("unchanged ")
    assert run("memory", "restore", record_id).stdout.startswith(f"restored {record_id[:7]}")
    quiet = run("memory", "add", "quiet one", "--kind", "fact", "--quiet")
    assert quiet.stdout == compute_id("fact", "global", "quiet one") + "\n"


def test_show_text_lists_present_fields_then_the_content(run):
    obj = add(run, "Line one\nLine two", "--source-ref", "s:1")
    lines = run("memory", "show", obj["id"]).stdout.splitlines()
    assert lines[0] == f"id:            {obj['id']}"
    assert "expires_at" not in "\n".join(lines)
    assert "source_refs:   s:1" in lines
    assert lines[-3:] == ["", "Line one", "Line two"]


def test_group_level_store_option(store_path, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = invoke("memory", "add", "g", "--kind", "fact", store=store_path, catch_exceptions=True)
    assert result.exit_code == 0, result.stderr
    result = invoke("memory", "list", "--store", str(store_path), "--json", catch_exceptions=True)
    assert [r["content"] for r in json.loads(result.stdout)] == ["g"]


# ---------------------------------------------------------------------------- errors and exit codes


def _error_json(result) -> dict:
    assert result.stdout == ""
    payload = json.loads(result.stderr)
    assert list(payload) == ["error"]
    assert list(payload["error"]) == ["code", "message"]
    assert re.fullmatch(r"[a-z]+(_[a-z]+)*", payload["error"]["code"])
    return payload["error"]


@pytest.mark.parametrize(
    ("args", "exit_code", "code", "needle"),
    [
        (["memory", "add", "x", "--kind", "opinion"], 2, "invalid_field", "kind"),
        (["memory", "add", "x", "--kind", "fact", "--bogus"], 2, "usage_error", "--bogus"),
        (["memory", "add", "x"], 2, "usage_error", "--kind"),
        (["memory", "add", "x", "--kind", "fact", "--priority", "x"], 2, "usage_error", "priority"),
        (["memory", "show", "0123456789abcdef"], 3, "not_found", "0123456789abcdef"),
        (["memory", "show", "abc"], 2, "invalid_id", "at least 4"),
        (["memory", "archive", "ffff"], 3, "not_found", "ffff"),
        (["memory", "list", "--status", "deleted"], 2, "invalid_field", "status"),
        (["memory", "search", " "], 2, "invalid_query", "query"),
        (["nosuchcommand"], 2, "usage_error", "nosuchcommand"),
    ],
)
def test_errors_in_json_and_text(run, store_path, args, exit_code, code, needle):
    before = snapshot(store_path)
    result = run(*args, "--json")
    assert result.exit_code == exit_code
    error = _error_json(result)
    assert error["code"] == code
    assert needle in error["message"]
    text = run(*args)
    assert text.exit_code == exit_code
    assert text.stdout == ""
    assert text.stderr.startswith("Error: ")
    assert needle in text.stderr
    assert text.stderr.count("\n") == 1 or "Usage:" in text.stderr
    assert snapshot(store_path) == before


def test_ambiguous_prefix_exits_3_and_lists_candidates(run):
    seen: dict[str, str] = {}
    i = 0
    while True:
        content = f"p{i}"
        prefix = compute_id("fact", "global", content)[:4]
        if prefix in seen:
            break
        seen[prefix] = content
        i += 1
    a, b = add(run, seen[prefix]), add(run, content)
    result = run("memory", "show", prefix, "--json")
    assert result.exit_code == 3
    error = _error_json(result)
    assert error["code"] == "ambiguous_id"
    assert a["id"] in error["message"] and b["id"] in error["message"]


def test_store_failure_exits_1(run, store_path):
    (store_path / "lantern.yaml").write_text("format: 99\n")
    git(store_path, "commit", "-qam", "future")
    result = run("memory", "list", "--json")
    assert result.exit_code == 1
    error = _error_json(result)
    assert error["code"] == "unsupported_format"
    assert "format 99" in error["message"]
    text = run("memory", "add", "x", "--kind", "fact")
    assert text.exit_code == 1
    assert text.stderr.startswith("Error: ") and "format 99" in text.stderr


def test_idempotent_add_exits_0(run, store_path):
    add(run, "same")
    head = git(store_path, "rev-parse", "HEAD")
    result = run("memory", "add", "same", "--kind", "fact")
    assert result.exit_code == 0
    assert git(store_path, "rev-parse", "HEAD") == head


def test_help_and_version_exit_0(run):
    assert run("--help").exit_code == 0
    assert run("memory", "add", "--help").exit_code == 0
    version = run("--version")
    assert version.exit_code == 0 and "lantern" in version.stdout


def test_the_file_written_by_the_cli_is_the_record(run, store_path):
    obj = add(run, "On disk")
    text = (store_path / record_path(obj["id"])).read_text()
    assert text.endswith("---\nOn disk\n")
    assert f"id: {obj['id']}\n" in text


def test_author_option_and_environment(run, store_path, monkeypatch):
    def author() -> str:
        return git(store_path, "log", "-1", "--format=%an <%ae>").strip()

    assert run("memory", "add", "a", "--kind", "fact", "--author", "Ana <ana@x.org>").exit_code == 0
    assert author() == "Ana <ana@x.org>"
    actor = git(store_path, "log", "-1", "--format=%(trailers:key=Lantern-Actor,valueonly)")
    assert actor.strip() == "cli"
    monkeypatch.setenv("LANTERN_AUTHOR", "Env Bot <bot@x.org>")
    assert run("memory", "add", "b", "--kind", "fact").exit_code == 0
    assert author() == "Env Bot <bot@x.org>"
    assert run("memory", "add", "c", "--kind", "fact", "--author", "Ana <ana@x.org>").exit_code == 0
    assert author() == "Ana <ana@x.org>"


def test_expires_at_none_means_no_expiry_for_every_write(run):
    added = one_json(run("memory", "add", "Ships Friday.", "--kind", "fact", "--json"))
    dated = one_json(run("memory", "update", added["id"], "--expires-at", "+2h", "--json"))
    assert isinstance(dated["expires_at"], int)
    # Leaving --expires-at out keeps it; "none" in any case clears it.
    kept = one_json(run("memory", "update", added["id"], "--priority", "60", "--json"))
    assert kept["expires_at"] == dated["expires_at"]
    cleared = one_json(run("memory", "update", added["id"], "--expires-at", "NONE", "--json"))
    assert cleared["expires_at"] is None
    new = one_json(
        run("memory", "supersede", added["id"], "Ships Monday.", "--expires-at", "none", "--json")
    )
    assert new["expires_at"] is None
    bad = run("memory", "update", new["id"], "--expires-at", "soon", "--json")
    assert bad.exit_code == 2 and _error_json(bad)["code"] == "invalid_time"


def test_list_filters_are_the_same_query_as_mcps(run):
    from lantern_git.model.query import RecordQuery

    run("memory", "add", "Ana likes tea.", "--kind", "preference", "--scope", "user:ana")
    run("memory", "add", "Bo likes coffee.", "--kind", "fact", "--scope", "user:bo")
    listed = one_json(run("memory", "list", "--scope", "user:*", "--kind", "preference", "--json"))
    assert [r["content"] for r in listed] == ["Ana likes tea."]
    # One string is one scope, not one per character.
    assert RecordQuery.from_options(scope="user:ana").scopes == ("user:ana",)
    assert RecordQuery.from_options(query="", status=None) == RecordQuery()


def test_a_lantern_process_starts_blas_on_one_thread_unless_the_user_chose(tmp_path):
    import subprocess
    import sys

    # The process as the `lantern` script runs it; what OpenBLAS would read as numpy loads.
    probe = (
        "import os, sys\n"
        "sys.argv = ['lantern', '--version']\n"
        "from lantern_git.cli import main\n"
        "try:\n"
        "    main()\n"
        "except SystemExit:\n"
        "    pass\n"
        "print(os.environ.get('OPENBLAS_NUM_THREADS'))\n"
    )
    chosen = ("OPENBLAS_NUM_THREADS", "GOTO_NUM_THREADS", "OMP_NUM_THREADS")
    base = {k: v for k, v in os.environ.items() if k not in chosen}

    def threads(**env: str) -> str:
        done = subprocess.run(
            [sys.executable, "-c", probe],
            env={**base, **env},
            capture_output=True,
            text=True,
            check=True,
            cwd=tmp_path,
        )
        return done.stdout.split()[-1]

    assert threads() == "1"
    assert threads(OMP_NUM_THREADS="3") == "None"  # the user's choice stands
    assert threads(OPENBLAS_NUM_THREADS="2") == "2"
