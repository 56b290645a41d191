"""Which store a command uses, stdin content, concurrent writers and the lock: real processes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from support.cli import lantern, start_lantern
from support.stores import git, make_store, snapshot

from lantern_git.model.record import compute_id
from lantern_git.model.record_file import record_path
from lantern_git.store import Store
from lantern_git.workspace.lock import WriterLock


def commits(path) -> int:
    return int(git(path, "rev-list", "--count", "HEAD").strip())


def used_store(*args, cwd, env=None) -> str:
    result = lantern("status", "--json", *args, cwd=cwd, env=env)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)["path"]


@pytest.fixture
def three_stores(tmp_path):
    flag = make_store(tmp_path / "flag")
    env = make_store(tmp_path / "env")
    enclosing = make_store(tmp_path / "enclosing")
    deep = enclosing / "sub" / "dir"
    deep.mkdir(parents=True)
    return flag, env, enclosing, deep


def test_store_option_wins_over_everything(three_stores):
    flag, env, _, deep = three_stores
    assert used_store("--store", str(flag), cwd=deep, env={"LANTERN_STORE": str(env)}) == str(flag)
    result = lantern(
        "--store", str(flag), "memory", "add", "via flag", "--kind", "fact",
        cwd=deep, env={"LANTERN_STORE": str(env)},
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert (flag / record_path(compute_id("fact", "global", "via flag"))).exists()
    assert commits(env) == 1


def test_environment_wins_over_the_enclosing_store(three_stores):
    _, env, enclosing, deep = three_stores
    assert used_store(cwd=deep, env={"LANTERN_STORE": str(env)}) == str(env)
    result = lantern(
        "memory", "add", "via env", "--kind", "fact", cwd=deep, env={"LANTERN_STORE": str(env)}
    )
    assert result.returncode == 0, result.stderr
    assert commits(env) == 2
    assert commits(enclosing) == 1


def test_the_enclosing_store_is_found_from_a_subfolder(three_stores):
    _, _, enclosing, deep = three_stores
    assert used_store(cwd=deep) == str(enclosing)
    result = lantern("memory", "add", "via cwd", "--kind", "fact", cwd=deep)
    assert result.returncode == 0, result.stderr
    assert commits(enclosing) == 2
    listed = json.loads(lantern("memory", "list", "--json", cwd=enclosing / "sub").stdout)
    assert [r["content"] for r in listed] == ["via cwd"]
    # The record lands at the store's root, not in the folder the command ran from.
    assert not (deep / "memory").exists()
    assert git(enclosing, "status", "--porcelain") == ""


def test_a_relative_store_path_is_taken_from_the_working_directory(three_stores):
    flag, _, _, _ = three_stores
    assert used_store("--store", "flag", cwd=flag.parent) == str(flag)
    assert used_store(cwd=flag.parent, env={"LANTERN_STORE": "env"}) == str(flag.parent / "env")


def test_the_default_store_is_created_by_the_first_write_only(tmp_path, isolated_env):
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    default = Path(os.environ["XDG_DATA_HOME"]) / "lantern" / "store"
    info = json.loads(lantern("status", "--json", cwd=outside).stdout)
    assert info["path"] == str(default)
    assert info["exists"] is False
    for read in (
        ["memory", "list", "--json"],
        ["memory", "search", "anything", "--json"],
        ["status"],
    ):
        result = lantern(*read, cwd=outside)
        assert result.returncode == 0, result.stderr
        assert not default.exists(), read
    assert lantern("memory", "list", "--json", cwd=outside).stdout == "[]\n"
    shown = lantern("memory", "show", "0123456789abcdef", cwd=outside)
    assert shown.returncode == 3
    assert not default.exists()

    added = lantern("memory", "add", "first memory", "--kind", "fact", "--json", cwd=outside)
    assert added.returncode == 0, added.stderr
    record = json.loads(added.stdout)
    assert (default / "lantern.yaml").read_text() == "format: 2\n"
    assert (default / record_path(record["id"])).exists()
    assert commits(default) == 2
    ops = git(default, "log", "--format=%(trailers:key=Lantern-Op,valueonly)").split()
    assert ops == ["add", "init"]
    assert git(default, "status", "--porcelain") == ""
    listed = json.loads(lantern("memory", "list", "--json", cwd=outside).stdout)
    assert [r["id"] for r in listed] == [record["id"]]


def test_a_missing_explicit_store_is_an_error_not_created(tmp_path):
    missing = tmp_path / "missing"
    result = lantern("--store", str(missing), "memory", "add", "x", "--kind", "fact")
    assert result.returncode == 1
    assert result.stderr.startswith("Error: ") and "lantern init" in result.stderr
    assert not missing.exists()


# ---------------------------------------------------------------------------- stdin


def test_content_from_stdin(store_path):
    env = {"LANTERN_STORE": str(store_path)}
    text = "Line one — ünïcode\n\nline three\n"
    result = lantern(
        "memory", "add", "-", "--kind", "observation", "--json", input=text.encode(), env=env
    )
    assert result.returncode == 0, result.stderr
    record = json.loads(result.stdout)
    assert record["content"] == "Line one — ünïcode\n\nline three"
    assert record["id"] == compute_id("observation", "global", text)
    new = lantern("memory", "supersede", record["id"], "-", "--json", input="replacement", env=env)
    assert new.returncode == 0, new.stderr
    assert json.loads(new.stdout)["content"] == "replacement"


def test_bad_stdin_is_refused(store_path):
    env = {"LANTERN_STORE": str(store_path)}
    before = snapshot(store_path)
    for data, needle in ((b"", "must not be empty"), (b"\xff\xfe bad", "UTF-8")):
        result = lantern("memory", "add", "-", "--kind", "fact", input=data, env=env)
        stderr = result.stderr.decode()
        assert result.returncode == 2
        assert stderr.startswith("Error: content: ")
        assert needle in stderr
    assert snapshot(store_path) == before


# ---------------------------------------------------------------------------- concurrency


def _spawn(store_path, *args) -> subprocess.Popen:
    return start_lantern(*args, env={"LANTERN_STORE": str(store_path)})


def test_concurrent_writers_both_commit_with_linear_history(store_path):
    start = commits(store_path)
    writers = [
        _spawn(store_path, "memory", "add", f"writer {n}", "--kind", "fact", "--json")
        for n in range(4)
    ]
    outputs = [w.communicate(timeout=120) for w in writers]
    for writer, (out, err) in zip(writers, outputs):
        assert writer.returncode == 0, err
        json.loads(out)
    assert commits(store_path) == start + 4
    assert git(store_path, "rev-list", "--merges", "HEAD") == ""
    parents = git(store_path, "log", "--format=%P").splitlines()
    assert all(len(line.split()) <= 1 for line in parents)
    summaries = git(store_path, "log", f"-{4}", "--format=%s").splitlines()
    assert sorted(s.split(": ", 1)[1] for s in summaries) == [f"writer {n}" for n in range(4)]
    assert git(store_path, "status", "--porcelain") == ""
    listed = json.loads(
        lantern("memory", "list", "--json", env={"LANTERN_STORE": str(store_path)}).stdout
    )
    assert sorted(r["content"] for r in listed) == [f"writer {n}" for n in range(4)]


def test_concurrent_archive_and_add_touch_different_records(store_path):
    env = {"LANTERN_STORE": str(store_path)}
    first = json.loads(lantern("memory", "add", "base", "--kind", "fact", "--json", env=env).stdout)
    start = commits(store_path)
    procs = [
        _spawn(store_path, "memory", "archive", first["id"]),
        _spawn(store_path, "memory", "add", "other", "--kind", "goal"),
        _spawn(store_path, "memory", "update", first["id"], "--priority", "77"),
    ]
    for proc in procs:
        _, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err
    assert commits(store_path) == start + 3
    assert git(store_path, "rev-list", "--merges", "HEAD") == ""
    shown = json.loads(lantern("memory", "show", first["id"], "--json", env=env).stdout)
    assert (shown["status"], shown["priority"]) == ("archived", 77)
    assert git(store_path, "status", "--porcelain") == ""


# ---------------------------------------------------------------------------- the lock


def test_a_held_lock_makes_a_writer_fail_with_exit_1(store_path):
    env = {"LANTERN_STORE": str(store_path), "LANTERN_LOCK_TIMEOUT": "0.5"}
    before = snapshot(store_path)
    held = WriterLock(str(store_path / ".lantern" / "lock"), timeout=0)
    held.acquire()
    try:
        result = lantern("memory", "add", "blocked", "--kind", "fact", env=env)
        as_json = lantern("memory", "add", "blocked", "--kind", "fact", "--json", env=env)
    finally:
        held.release()
    assert result.returncode == 1
    assert result.stdout == ""
    assert result.stderr.startswith("Error: another lantern process has held the store lock")
    assert "0.5s" in result.stderr and "LANTERN_LOCK_TIMEOUT" in result.stderr
    assert as_json.returncode == 1
    assert as_json.stdout == ""
    assert json.loads(as_json.stderr)["error"]["code"] == "lock_timeout"
    assert snapshot(store_path) == before
    # Once the lock is free the same write goes through.
    again = lantern("memory", "add", "blocked", "--kind", "fact", env=env)
    assert again.returncode == 0, again.stderr


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (None, 10.0),
        ("", 10.0),
        ("soon", 10.0),
        ("-1", 10.0),
        ("nan", 10.0),
        ("0", 0.0),
        ("2.5", 2.5),
        (" 30 ", 30.0),
    ],
)
def test_lock_timeout_defaults_to_10_seconds_and_ignores_bad_values(
    store_path, monkeypatch, value, expected
):
    """LANTERN_LOCK_TIMEOUT: seconds; unset, not a number or negative means the 10 s default."""
    from lantern_git.workspace.lock import DEFAULT_TIMEOUT, lock_timeout

    assert DEFAULT_TIMEOUT == 10.0
    if value is None:
        monkeypatch.delenv("LANTERN_LOCK_TIMEOUT", raising=False)  # support.env sets 20
    else:
        monkeypatch.setenv("LANTERN_LOCK_TIMEOUT", value)
    assert lock_timeout() == expected
    # The value is read when the store opens: what every write then waits for.
    store = Store.open(str(store_path))
    assert store.workspace.lock.timeout == expected
    store.close()


@pytest.mark.parametrize("value", ["inf", "1e300"])
def test_a_huge_lock_timeout_waits_for_the_lock_rather_than_crashing(store_path, value):
    """A timeout beyond what threading can wait for (TIMEOUT_MAX) waits as long as it can."""
    env = dict(os.environ, LANTERN_STORE=str(store_path), LANTERN_LOCK_TIMEOUT=value)
    held = WriterLock(str(store_path / ".lantern" / "lock"), timeout=0)
    held.acquire()
    try:
        writer = subprocess.Popen(
            [sys.executable, "-m", "lantern_git", "memory", "add", "patient", "--kind", "fact"],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            writer.wait(timeout=1.0)
        except subprocess.TimeoutExpired:
            pass
        assert writer.returncode is None, writer.stderr.read()  # still waiting for the lock
    finally:
        held.release()
    _, stderr = writer.communicate(timeout=60)
    assert writer.returncode == 0, stderr
    assert git(store_path, "log", "-1", "--format=%s").startswith("add ")


# ---------------------------------------------------------------------------- the examples

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def test_the_shell_session_example_runs(tmp_path):
    env = dict(os.environ)
    env["PATH"] = os.path.dirname(sys.executable) + os.pathsep + env.get("PATH", "")
    env["PYTHON"] = sys.executable
    env["TMPDIR"] = str(tmp_path)
    result = subprocess.run(
        ["bash", str(EXAMPLES / "session.sh")],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr
    assert "Error" not in result.stderr
    assert "\nexists " in result.stdout
    assert "Lantern-Op: update" in result.stdout
    # The temporary store is gone, and the user's default store was never created.
    assert list(tmp_path.iterdir()) == []
    assert not (Path(os.environ["XDG_DATA_HOME"]) / "lantern").exists()


def test_the_library_example_runs(tmp_path):
    result = subprocess.run(
        [sys.executable, str(EXAMPLES / "library_api.py")],
        cwd=tmp_path,
        env=dict(os.environ, TMPDIR=str(tmp_path)),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr
    assert "supersede " in result.stdout and "archive " in result.stdout
    assert list(tmp_path.iterdir()) == []


README_INSTALL = (
    "python3 -m venv ~/.venvs/lantern && . ~/.venvs/lantern/bin/activate && pip install . && "
)


def _readme_commands() -> list[str]:
    """The README's ``sh`` blocks, in order."""
    readme = (EXAMPLES.parent / "README.md").read_text()
    return [block.split("\n```", 1)[0] for block in readme.split("```sh\n")[1:]]


def test_the_readmes_first_command_runs_a_session_on_the_default_store(tmp_path):
    """The README's opening command, minus its virtual environment and ``pip install .`` (this
    environment has lantern installed), run twice by bash on a default store that does not
    exist yet; then the README's line that removes the demo records."""
    first, _, identity, remove = _readme_commands()[:4]
    assert first.startswith(README_INSTALL)
    session = first.removeprefix(README_INSTALL)
    assert "pip install" not in session and session.count("lantern memory add") == 2
    env = dict(os.environ)
    env["PATH"] = os.path.dirname(sys.executable) + os.pathsep + env.get("PATH", "")
    default = Path(env["XDG_DATA_HOME"]) / "lantern" / "store"
    assert not default.exists()

    run = [subprocess.run(["bash", "-c", session], cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=300) for _ in range(2)]  # fmt: skip
    for result in run:
        assert result.returncode == 0, result.stderr
    listing, log = (
        run[0].stdout,
        git(default, "log", "--format=%(trailers:key=Lantern-Op,valueonly)"),
    )
    lines = listing.splitlines()
    table = lines[lines.index(next(line for line in lines if line.startswith("ID "))) :][1:3]
    # The documented order: priority 80 before the default 50.
    assert "Ana prefers short answers." in table[0] and "Ship the beta on Friday." in table[1]
    assert any(line.startswith("archived ") and "Ship the beta" in line for line in lines)
    assert log.split() == ["archive", "add", "add", "init"]
    # The second run changes nothing: the adds exist and the record is already archived.
    assert "unchanged " in run[1].stdout
    assert git(default, "rev-list", "--count", "HEAD").strip() == "4"
    assert git(default, "status", "--porcelain") == ""
    # The session ends with the archived record's history, newest first.
    assert run[0].stdout.rstrip().splitlines()[-1].strip() == "(created)"
    assert "archive by cli" in run[0].stdout

    # The two other lines the README gives a new user: a git identity, and the clean-up.
    assert identity.startswith("git config --global user.name ")
    assert " && git config --global user.email " in identity
    cleanup = subprocess.run(["bash", "-c", remove], cwd=tmp_path, env=env, capture_output=True,
                             text=True, timeout=300)  # fmt: skip
    assert cleanup.returncode == 0, cleanup.stderr
    assert not list((default / "memory").rglob("*.md"))
    assert git(default, "status", "--porcelain") == ""
    left = subprocess.run(["bash", "-c", "lantern memory list --status all --count"], env=env,
                          capture_output=True, text=True, timeout=300)  # fmt: skip
    assert left.stdout == "0\n", left.stderr


def test_the_readmes_second_command_makes_a_venv_installs_the_test_tools_and_runs_the_suite():
    """Checked by shape, not run: running the whole suite inside the suite would recurse. CI
    (.ci/run) runs the same steps."""
    second = _readme_commands()[1]
    steps = second.split(" && ")
    assert steps == [
        ".ci/system-deps",
        "python3 -m venv .venv",
        ". .venv/bin/activate",
        "pip install -e '.[dev]'",
        "python -m pytest -q -n 2 --dist loadgroup -m 'not semantic'",
        "pip install -e '.[dev,semantic,e5,model2vec]'",
        "python -m pytest -q -n 2 --dist loadgroup -m semantic",
    ]
    # CI runs the same installs and test runs, in the same order.
    ci = [line.strip() for line in (EXAMPLES.parent / ".ci" / "run").read_text().splitlines()]
    same = [
        "python -m pip install --quiet -e '.[dev]'",
        "python -m pytest -q -n 2 --dist loadgroup -m 'not semantic'",
        "python -m pip install --quiet -e '.[dev,semantic,e5,model2vec]'",
        "python -m pytest -q -n 2 --dist loadgroup -m semantic",
    ]
    positions = [ci.index(line) for line in same]
    assert positions == sorted(positions)
    assert ".venv/" in (EXAMPLES.parent / ".gitignore").read_text().split()
    assert os.access(EXAMPLES.parent / ".ci" / "system-deps", os.X_OK)


def test_init_follows_the_discovery_order_then_the_current_folder(tmp_path):
    """lantern init: PATH, else --store, else $LANTERN_STORE, else the current folder, which
    wins over an enclosing store (a new store is made where one stands)."""
    env_store, option_store, inner = tmp_path / "env", tmp_path / "option", tmp_path / "outer/a"
    inner.mkdir(parents=True)
    assert lantern("init", str(tmp_path / "outer")).returncode == 0
    made = lantern("init", env={"LANTERN_STORE": str(env_store)}, cwd=inner)
    assert made.returncode == 0 and (env_store / "lantern.yaml").is_file()
    assert not (inner / "lantern.yaml").exists()
    both = lantern("--store", str(option_store), "init", env={"LANTERN_STORE": str(env_store)})
    assert both.returncode == 0 and (option_store / "lantern.yaml").is_file()
    here = lantern("init", cwd=inner)
    assert here.returncode == 0 and (inner / "lantern.yaml").is_file()
