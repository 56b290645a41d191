"""Hostile and broken input: every case gets a clear error or the documented handling.

None may crash with a traceback, execute anything, touch anything outside the store, or
change the store when it is refused.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pygit2
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.cli import invoke as support_invoke
from support.cli import lantern
from support.reliability import add_args, record_id
from support.stores import git, make_store, snapshot

from lantern_git.core.fields import KINDS, MAX_CONTENT_BYTES, MAX_FILE_BYTES
from lantern_git.model.record import Record
from lantern_git.model.record_file import read_record_file
from lantern_git.store import Store

FUZZ = settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
VALID_ID = "0123456789abcdef"
VALID_PATH = f"memory/01/{VALID_ID}.md"
ADD_STDIN = ("memory", "add", "-", "--kind", "fact")
HEADER = f"---\nid: {VALID_ID}\nkind: fact\ncreated_at: 1764690000\nupdated_at: 1764690000\n"


def state(path: Path) -> tuple:
    """A cheap, in-process "store unchanged" fingerprint for fuzz loops."""
    repo = pygit2.Repository(str(path))
    files = {
        p.relative_to(path).as_posix(): p.read_bytes()
        for p in sorted(path.rglob("*"))
        if p.is_file()
        and not p.is_symlink()
        and ".git" not in p.parts
        and ".lantern" not in p.parts
    }
    return str(repo.head.target), files


def invoke(store: Path, *args: str, input: bytes | str | None = None):
    result = support_invoke(*args, store=store, input=input, catch_exceptions=True)
    output = result.output + (result.stderr if result.stderr_bytes is not None else "")
    assert result.exception is None or isinstance(result.exception, SystemExit), output
    assert "Traceback" not in output and "internal error" not in output, output
    return result


def beside_store(store: Path) -> dict[str, bytes | None]:
    """Everything beside the store, folders (None) and files (their bytes), by relative path."""
    return {
        p.relative_to(store.parent).as_posix(): None if p.is_dir() else p.read_bytes()
        for p in sorted(store.parent.rglob("*"))
        if p != store and store not in p.parents
    }


@pytest.fixture(scope="module")
def fuzz_store(tmp_path_factory) -> Path:
    path = make_store(tmp_path_factory.mktemp("fuzz") / "store")
    Store.open(str(path)).add("a record to aim at", kind="fact", scope="user:ana")
    # A sentinel beside the store: what escapes the store through a path-like id lands here.
    sentinel = path.parent / "outside" / "memory" / "01"
    sentinel.mkdir(parents=True)
    (sentinel / f"{VALID_ID}.md").write_text(HEADER + "---\nnot the store's\n")
    return path


# ---------------------------------------------------------------------------- CLI options

_texts = st.one_of(
    st.text(max_size=60),
    # Undecodable argv bytes reach Python as lone surrogates.
    st.text(
        st.sampled_from(["a", ":", "*", " ", "\n", "\x00", "\udcff", "\u2028", "é"]), max_size=20
    ),
    st.sampled_from(
        [
            "../../etc/passwd",
            "/etc/passwd",
            "..\\..\\windows",
            "memory/01/../../x",
            "user:../../x",
            "global\n",
            "a\0b",
            "-1",
            "1e309",
            "nan",
            "+9999999999999d",
            "2026-02-30",
            "user:" + "x" * 5000,
            "*",
            "user:*",
            "0123",
            "0123456789abcdef0",
        ]
    ),
)


@FUZZ
@given(
    content=_texts,
    kind=_texts,
    scope=_texts,
    priority=_texts,
    expires=_texts,
    ref=_texts,
)
def test_random_add_options_never_crash_and_refusals_change_nothing(
    fuzz_store, content, kind, scope, priority, expires, ref
):
    before = state(fuzz_store)
    result = invoke(
        fuzz_store,
        "memory",
        "add",
        content,
        "--kind",
        kind,
        "--scope",
        scope,
        "--priority",
        priority,
        "--expires-at",
        expires,
        "--source-ref",
        ref,
        "--json",
    )
    assert result.exit_code in (0, 2), result.stderr
    if result.exit_code == 2:
        error = json.loads(result.stderr)["error"]
        assert error["code"] and error["message"]
        assert state(fuzz_store) == before


@FUZZ
@given(
    verb=st.sampled_from(["show", "archive", "restore", "update", "history"]),
    ref=_texts,
)
def test_random_ids_never_crash_or_escape(fuzz_store, verb, ref):
    before, beside = state(fuzz_store), beside_store(fuzz_store)
    assert beside, "the sentinel folder beside the store"
    extra = ["--priority", "5"] if verb == "update" else []
    result = invoke(fuzz_store, "memory", verb, ref, *extra, "--json")
    assert result.exit_code in (0, 2, 3), result.stderr
    if result.exit_code:
        assert state(fuzz_store) == before
    assert beside_store(fuzz_store) == beside, "nothing outside the store is created or changed"


def listed_by_the_rules(store: Path, scopes, kinds, status, limit) -> list[str]:
    """The records a list with these filters shows, by the documented rules (docs/usage.md),
    read from the record files: filter, sort by the five keys, then limit (0: no limit)."""

    def scope_ok(scope: str) -> bool:
        return not scopes or any(
            scope.startswith(p[:-1]) if p.endswith("*") else scope == p for p in scopes
        )

    now = time.time()
    records = [
        read_record_file(str(store), p.relative_to(store).as_posix()).record
        for p in sorted((store / "memory").rglob("*.md"))
    ]
    chosen = [
        r
        for r in records
        if r is not None
        and (status == "all" or r.status == status)
        and (not kinds or r.kind in kinds)
        and scope_ok(r.scope)
        and (r.expires_at is None or r.expires_at > now)
    ]
    chosen.sort(key=lambda r: (r.status != "active", -r.priority, -r.urgency, -r.updated_at, r.id))
    return [r.id for r in (chosen[:limit] if limit else chosen)]


@pytest.fixture(scope="module")
def list_store(tmp_path_factory) -> Path:
    """Records that the filters tell apart: kinds, scopes, priorities, statuses."""
    path = make_store(tmp_path_factory.mktemp("lists") / "store")
    store = Store.open(str(path))
    try:
        store.add("a record to aim at", kind="fact", scope="user:ana")
        store.add("a goal to aim at", kind="goal", scope="user:bob", priority=90)
        store.add("a constraint of the project", kind="constraint", scope="project:x")
        kept = store.add("an old record", kind="fact", scope="user:ana", priority=70)
        store.add("a global note", kind="observation", scope="global", urgency=40)
        gone = store.add("a record archived", kind="fact", scope="user:anabel")
        store.archive(gone.id)
        store.supersede(kept.id, "a record superseding the old one", kind="fact")
    finally:
        store.close()
    return path


def _mostly(valid: list[str]) -> st.SearchStrategy[str]:
    # Valid values three times as often as random ones, so that answers, not only refusals,
    # are checked.
    return st.one_of(st.sampled_from(valid), st.sampled_from(valid), st.sampled_from(valid), _texts)


@FUZZ
@given(
    scopes=st.lists(_mostly(["user:ana", "user:*", "user:bob", "global", "us*", "*"]), max_size=3),
    kinds=st.lists(_mostly(list(KINDS)), max_size=2),
    status=_mostly(["active", "archived", "superseded", "all"]),
    query=_mostly(["", "record", "aim", "nothing"]),
    limit=_mostly(["-1", "0", "1", "2", "3"]),
)
def test_random_list_filters_never_crash(list_store, scopes, kinds, status, query, limit):
    args = [a for s in scopes for a in ("--scope", s)] + [a for k in kinds for a in ("--kind", k)]
    before = state(list_store)
    result = invoke(
        list_store,
        "memory", "list", *args, "--status", status, "--query", query, "--limit", limit, "--json",
    )  # fmt: skip
    assert result.exit_code in (0, 2), result.stderr
    assert state(list_store) == before
    try:  # what click reads as a whole number: int() itself ("²" is a digit, not a number)
        int(limit)
        whole = True
    except ValueError:
        whole = False
    bad = [
        name
        for name, wrong in (
            ("status", status not in ("active", "archived", "superseded", "all")),
            ("kind", any(k not in KINDS for k in kinds)),
            ("limit", not whole or int(limit) < 0),
        )
        if wrong
    ]
    if result.exit_code == 2:
        error = json.loads(result.stderr)["error"]
        assert error["code"] in ("invalid_field", "invalid_query", "usage_error"), error
        named = ("status", "kind", "scope", "query", "limit", "--limit", "'--limit'")
        assert any(error["message"].startswith(n) or f"{n}:" in error["message"] for n in named)
        return
    assert not bad, f"{bad} accepted: {result.stdout}"
    shown = [r["id"] for r in json.loads(result.stdout)]
    whole_list = listed_by_the_rules(list_store, scopes, kinds, status, 0)
    if query == "":  # no keyword filter: the answer is the rules' exactly
        assert shown == listed_by_the_rules(list_store, scopes, kinds, status, int(limit))
    else:  # a keyword filter keeps the rules' order and the page size
        assert [i for i in whole_list if i in shown] == shown, shown
        assert not int(limit) or len(shown) <= int(limit)
        if query in ("record", "aim") and not int(limit):
            # A word of the one record made for this: found whenever the filters select it.
            target = [i for i in whole_list if _content(list_store, i) == "a record to aim at"]
            assert set(target) <= set(shown), (shown, target)


def _content(store: Path, record_id: str) -> str:
    from lantern_git.model.record_file import record_path

    found = read_record_file(str(store), record_path(record_id)).record
    return found.content if found else ""


def test_invalid_utf8_in_arguments_and_stdin_is_refused_clearly(tmp_path):
    path = make_store(tmp_path / "store")
    before = snapshot(path)
    base = [sys.executable, "-m", "lantern_git", "--store", str(path)]
    cases = [
        ([*base, "memory", "add", b"caf\xe9 \xff", "--kind", "fact"], b"content: "),
        ([*base, "memory", "add", "fine", "--kind", "fact", "--scope", b"user:\xff"], b"scope: "),
        ([*base, "memory", "list", "--query", b"\xfe\xff"], b"query: "),
        # A wildcard makes Whoosh encode the term, which failed as if the index were damaged.
        ([*base, "memory", "search", b"\xff*"], b"query: "),
        ([*base, "memory", "list", "--query", b"a\xff*", "--json"], b'"invalid_query"'),
    ]
    for argv, named in cases:
        result = subprocess.run(argv, capture_output=True)
        assert result.returncode == 2, result.stderr
        assert named in result.stderr
        assert b"not valid" in result.stderr
        assert b"Traceback" not in result.stderr
    piped = subprocess.run(
        [*base, "memory", "add", "-", "--kind", "fact"],
        input=b"bad \xff\xfe utf-8",
        capture_output=True,
    )
    assert piped.returncode == 2
    assert b"content: stdin is not valid UTF-8" in piped.stderr
    assert snapshot(path) == before


def test_oversized_content_is_refused_with_the_limit_named(tmp_path):
    path = make_store(tmp_path / "store")
    before = snapshot(path)
    just_over = "x" * (MAX_CONTENT_BYTES + 1)
    result = lantern("memory", "add", "-", "--kind", "fact", input=just_over, store=path)
    assert result.returncode == 2
    assert f"content: is larger than the maximum record size ({MAX_CONTENT_BYTES} bytes)" in (
        result.stderr
    )
    huge = subprocess.run(
        [sys.executable, "-m", "lantern_git", "--store", str(path), *ADD_STDIN],
        input=b"y" * (8 * MAX_FILE_BYTES),
        capture_output=True,
    )
    assert huge.returncode == 2 and b"maximum record size" in huge.stderr
    assert snapshot(path) == before
    at_limit = lantern(
        "memory", "add", "-", "--kind", "fact", input="z" * MAX_CONTENT_BYTES, store=path
    )
    assert at_limit.returncode == 0, at_limit.stderr


def test_content_with_fences_and_yaml_looking_lines_round_trips(tmp_path):
    path = make_store(tmp_path / "store")
    content = "before\n---\nid: ffffffffffffffff\nkind: goal\n---\n!!python/object:os.system\nafter"
    added = lantern("memory", "add", "-", "--kind", "fact", "--json", input=content, store=path)
    assert added.returncode == 0, added.stderr
    shown = lantern("memory", "show", json.loads(added.stdout)["id"], "--json", store=path)
    assert json.loads(shown.stdout)["content"] == content
    assert json.loads(shown.stdout)["kind"] == "fact"
    assert lantern("check", store=path).returncode == 0


# ---------------------------------------------------------------------------- record files

PWNED = Path(tempfile.gettempdir()) / "lantern-pwned-marker"

HOSTILE_FILES = {
    "billion laughs": HEADER
    + 'a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]\n'
    + "b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]\nc: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]\n"
    + "d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]\ne: [*d,*d,*d,*d,*d,*d,*d,*d,*d]\n---\nbody\n",
    "python tag": HEADER + f'x: !!python/object/apply:os.system ["touch {PWNED}"]\n---\nbody\n',
    "python name": HEADER + "x: !!python/name:os.system\n---\nbody\n",
    "duplicate key": HEADER + "kind: goal\n---\nbody\n",
    "no closing fence": HEADER + "body with no fence\n",
    "no front matter": "just some text\n",
    "NUL byte": HEADER + "---\nbody\0with a NUL\n",
    "invalid UTF-8": (HEADER + "---\n").encode() + b"caf\xe9\n",
    "deep nesting": HEADER + "x: " + "[" * 50000 + "\n---\nbody\n",
    "huge": HEADER + "---\n" + "w" * (MAX_FILE_BYTES + 10) + "\n",
    "empty": "",
    "only fences": "---\n---\n",
    "a list": "---\n- 1\n- 2\n---\nbody\n",
    "wrong id": HEADER.replace(VALID_ID, "ffffffffffffffff") + "---\nbody\n",
    "content key": HEADER + "content: sneaky\n---\nbody\n",
    "non-string key": HEADER + "? [1, 2]\n: x\n---\nbody\n",
}


@pytest.mark.parametrize("name", sorted(HOSTILE_FILES))
def test_a_hostile_record_file_is_skipped_reported_and_never_rewritten(tmp_path, name):
    path = make_store(tmp_path / "store")
    Store.open(str(path)).add("a good record", kind="fact")
    data = HOSTILE_FILES[name]
    target = path / VALID_PATH
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(data if isinstance(data, bytes) else data.encode())
    git(path, "add", VALID_PATH)
    git(path, "commit", "-qm", "a hand-made file")
    before = snapshot(path)

    listing = lantern("memory", "list", "--json", store=path)
    assert listing.returncode == 0, listing.stderr
    assert [r["content"] for r in json.loads(listing.stdout)] == ["a good record"]
    assert f"warning: skipped {VALID_PATH}" in listing.stderr
    check = lantern("check", store=path)
    assert check.returncode == 4 and VALID_PATH in check.stdout + check.stderr
    for args in (["memory", "show", VALID_ID], ["memory", "archive", VALID_ID]):
        refused = lantern(*args, store=path)
        assert refused.returncode == 1, refused.stderr
        assert VALID_PATH in refused.stderr and "Traceback" not in refused.stderr
    assert snapshot(path) == before
    assert not PWNED.exists()


_front_lines = st.sampled_from(
    [
        f"id: {VALID_ID}",
        "kind: fact",
        "kind: [fact]",
        "created_at: 1764690000",
        "updated_at: -5",
        "priority: 101",
        "priority: true",
        "confidence: .nan",
        "scope: user:ana",
        "scope: ''",
        "status: deleted",
        "expires_at: 2026-12-31",
        "source_refs: [a, 1, null]",
        "source_refs:\n- ok",
        "supersedes_id: 0123456789abcdef",
        "&x a: *x",
        "x: !!binary aGVsbG8=",
        "x: !!set {a, b}",
        "? complex\n: key",
        "---",
        "...",
        "%YAML 1.1",
        "\t- tab",
        "custom: kept",
    ]
)


@FUZZ
@given(
    lines=st.lists(_front_lines, max_size=12),
    body=st.text(max_size=200),
    raw=st.binary(max_size=300),
    use_raw=st.booleans(),
)
def test_random_record_files_parse_or_fail_with_a_located_error(lines, body, raw, use_raw):
    data = (
        raw
        if use_raw
        else ("---\n" + "\n".join(lines) + "\n---\n" + body).encode("utf-8", "surrogatepass")
    )
    with tempfile.TemporaryDirectory() as root:
        target = Path(root, VALID_PATH)
        target.parent.mkdir(parents=True)
        target.write_bytes(data)
        got, record, problem = read_record_file(root, VALID_PATH)
    assert got == data
    if record is None:
        assert str(problem).startswith(VALID_PATH), problem
    else:
        assert problem is None
        # Whatever parses must survive lantern's own rewrite unchanged in meaning.
        assert Record.from_markdown(record.rewrite(data.decode())) == record


# ---------------------------------------------------------------------------- symlinks and pipes


@pytest.fixture
def outside(tmp_path) -> Path:
    folder = tmp_path / "outside"
    folder.mkdir()
    secret = Record.new(kind="fact", content="a secret outside the store", now=1764690000)
    (folder / f"{secret.id}.md").write_text(secret.to_markdown())
    return folder


def test_a_symlinked_record_file_is_neither_read_nor_written(tmp_path, outside):
    path = make_store(tmp_path / "store")
    secret = next(outside.iterdir())
    link = path / "memory" / secret.stem[:2] / secret.name
    link.parent.mkdir(parents=True)
    link.symlink_to(secret)
    original = secret.read_bytes()
    listing = lantern("memory", "list", "--json", store=path)
    assert json.loads(listing.stdout) == []
    assert "is a symbolic link" in listing.stderr
    for args in (["memory", "show", secret.stem], ["memory", "archive", secret.stem]):
        refused = lantern(*args, store=path)
        assert refused.returncode == 1 and "symbolic link" in refused.stderr
    assert secret.read_bytes() == original and link.is_symlink()


def test_a_symlinked_shard_folder_is_neither_read_nor_written(tmp_path, outside):
    path = make_store(tmp_path / "store")
    secret = next(outside.iterdir())
    (path / "memory").mkdir(exist_ok=True)
    (path / "memory" / secret.stem[:2]).symlink_to(outside, target_is_directory=True)
    original = secret.read_bytes()
    assert json.loads(lantern("memory", "list", "--json", store=path).stdout) == []
    for args in (["memory", "show", secret.stem], ["memory", "archive", secret.stem]):
        refused = lantern(*args, store=path)
        assert refused.returncode == 1 and "symbolic link" in refused.stderr
    # A new record whose shard is that link must not be written through it either.
    fresh = Record.new(kind="fact", content="x", now=1)
    store = Store.open(str(path))
    from lantern_git.errors import GitError

    with pytest.raises(GitError, match="symbolic link"):
        store.git.commit_files(
            {f"memory/{secret.stem[:2]}/{fresh.id}.md": b"x"},
            "sneak",
            __import__("lantern_git.git.repo", fromlist=["Provenance"]).Provenance(op="add"),
            journal_dir=store.state_dir,
        )
    assert sorted(p.name for p in outside.iterdir()) == [secret.name]
    assert secret.read_bytes() == original


def test_a_symlinked_memory_folder_is_refused_clearly(tmp_path, outside):
    path = make_store(tmp_path / "store")
    (path / "memory").symlink_to(outside, target_is_directory=True)
    result = lantern("memory", "list", store=path)
    assert result.returncode == 1
    assert "symbolic link" in result.stderr and "Traceback" not in result.stderr
    added = lantern(*add_args("through the link"), store=path)
    assert added.returncode == 1 and "symbolic link" in added.stderr
    assert len(list(outside.iterdir())) == 1


def test_a_fifo_planted_as_a_record_file_does_not_hang(tmp_path):
    path = make_store(tmp_path / "store")
    fifo = path / VALID_PATH
    fifo.parent.mkdir(parents=True)
    os.mkfifo(fifo)
    result = lantern("memory", "list", timeout=30, store=path)
    assert result.returncode == 0
    assert "is not a regular file" in result.stderr
    assert lantern("memory", "show", VALID_ID, timeout=30, store=path).returncode == 1


def test_scopes_that_look_like_paths_stay_fields(tmp_path):
    path = make_store(tmp_path / "store")
    for scope in ("project:../../etc", "project:/etc/passwd", "project:a\\b"):
        added = lantern(*add_args("path-like scope", scope), store=path)
        assert added.returncode == 0, added.stderr
        rid = record_id("path-like scope", scope)
        assert (path / "memory" / rid[:2] / f"{rid}.md").is_file()
    for scope in ("../x", "/etc", "a\\b", "user: x"):
        refused = lantern(*add_args("bad scope", scope), store=path)
        assert refused.returncode == 2 and "scope" in refused.stderr
    assert {p.name for p in path.iterdir()} == {
        ".git",
        ".gitattributes",
        ".gitignore",
        ".lantern",
        "lantern.yaml",
        "memory",
    }


# ---------------------------------------------------------------------------- the catch-all


# ``python -m lantern_git`` with a bug planted deep in a write (the writer lock held, the store
# open): an exception that is neither a LanternError nor an OSError, as a real bug would raise.
PLANTED_BUG = """
import runpy
from lantern_git.git.repo import GitRepo

def commit_files(*args, **kwargs):
    raise RuntimeError("planted bug")

GitRepo.commit_files = commit_files
runpy.run_module("lantern_git", run_name="__main__", alter_sys=True)
"""


def test_an_unexpected_exception_is_an_internal_error_without_traceback(tmp_path):
    path = make_store(tmp_path / "store")
    before = snapshot(path)
    for as_json in (False, True):
        args = add_args("x") if as_json else ["memory", "add", "x", "--kind", "fact"]
        result = subprocess.run(
            [sys.executable, "-c", PLANTED_BUG, "--store", str(path), *args],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert result.returncode == 1, result.stderr
        assert "Traceback" not in result.stderr, result.stderr
        assert result.stdout == ""
        if as_json:
            error = json.loads(result.stderr)["error"]
            assert error == {
                "code": "internal_error",
                "message": "internal error: RuntimeError: planted bug",
            }
        else:
            assert result.stderr == (
                "Error: internal error: RuntimeError: planted bug "
                "(set LANTERN_DEBUG=1 for the traceback)\n"
            )
    # Nothing was written, and the writer lock went with the process.
    assert snapshot(path) == before
    assert lantern(*add_args("after the bug"), store=path).returncode == 0


def test_the_catch_all_maps_a_bug_to_internal_error_and_shows_the_traceback_on_request(monkeypatch):
    from lantern_git.cli import support as cli_support

    def broken(*_args, **_kwargs):
        raise ZeroDivisionError("boom")

    # Both names: the commands call the one lantern_git.cli imported from cli.support.
    monkeypatch.setattr(cli_support, "open_store", broken)
    monkeypatch.setattr("lantern_git.cli.open_store", broken)
    plain = support_invoke("status", catch_exceptions=True)
    assert plain.exit_code == 1
    assert plain.stderr.startswith("Error: internal error: ZeroDivisionError: boom")
    assert "Traceback" not in plain.stderr
    as_json = support_invoke("status", "--json", catch_exceptions=True)
    assert json.loads(as_json.stderr)["error"]["code"] == "internal_error"
    assert as_json.stdout == ""
    monkeypatch.setenv("LANTERN_DEBUG", "1")
    debug = support_invoke("status", catch_exceptions=True)
    assert "Traceback" in debug.stderr and "ZeroDivisionError" in debug.stderr


# ---------------------------------------------------------------------------- MCP arguments


def _hostile_value(rng):
    return rng.choice(
        [
            None,
            True,
            -1,
            10**30,
            1.5,
            float("inf"),
            "",
            "../../etc/passwd",
            "\x00",
            "x" * (MAX_CONTENT_BYTES + 5),
            "user:" + "y" * 400,
            "0123",
            [],
            ["a", 1, None],
            {"nested": {"deep": [1, 2]}},
            "!!python/object/apply:os.system",
            "---\nid: 0123456789abcdef\n---",
        ]
    )


def test_hostile_mcp_arguments_get_typed_errors_and_change_nothing(tmp_path):
    import random

    import anyio
    from mcp import ClientSession
    from mcp.client.stdio import stdio_client
    from support.mcp import server_params

    path = make_store(tmp_path / "store")
    Store.open(str(path)).add("a record to aim at", kind="fact")
    before = state(path)
    params = server_params(path)
    tools = {
        "lantern_memory_add": ["content", "kind", "scope", "priority", "source_refs"],
        "lantern_memory_show": ["id", "at"],
        "lantern_memory_archive": ["id", "reason"],
        "lantern_memory_list": ["scope", "kind", "status", "limit", "offset", "fields"],
        "lantern_memory_search": ["query", "limit"],
        "lantern_memory_update": ["id", "priority", "expires_at"],
        "lantern_memory_supersede": ["id", "content", "kind"],
        "lantern_memory_history": ["id"],
        "lantern_memory_delete": ["id", "reason"],
        "lantern_diff": ["from", "to"],
        "lantern_revert": ["commit", "reason"],
    }
    rng = random.Random(7)
    codes: set[str] = set()

    async def main():
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            for _ in range(120):
                tool = rng.choice(sorted(tools))
                names = tools[tool] + ["unknown_argument"]
                count = rng.randint(0, min(3, len(names)))
                arguments = {n: _hostile_value(rng) for n in rng.sample(names, count)}
                result = await session.call_tool(tool, arguments)
                if result.is_error:
                    text = result.content[0].text
                    try:
                        code = json.loads(text)["error"]["code"]
                    except ValueError:
                        code = "schema:" + text[:40]
                    codes.add(code)
            # Still serving after all of that.
            listed = await session.call_tool("lantern_memory_list", {})
            return json.loads(listed.content[0].text)

    listed = anyio.run(main)
    assert "internal_error" not in codes, codes
    assert {"invalid_field", "invalid_id"} & codes, codes
    assert [r["content"] for r in listed["records"]] == ["a record to aim at"]
    assert state(path) == before
