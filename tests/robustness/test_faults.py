"""Crashes at precise points, git in odd states, and a damaged search index.

Kills use the LANTERN_FAULT test hook (gitstore.fault): the CLI process SIGKILLs itself at the
named step of a write, and the next command must repair the store on its own.
"""

from __future__ import annotations

import json
import marshal
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pygit2
import pytest
from support.cli import cli_env, lantern
from support.processes import as_plain_user
from support.reliability import add_args, audit, record_id
from support.stores import git, make_store, snapshot

from lantern_git.errors import GitError
from lantern_git.git.repo import BULK_FILES, TMP_SUFFIX
from lantern_git.model.record import Record
from lantern_git.model.source import compute_source_id
from lantern_git.store import Store

BEFORE_REF = ["after-objects", "after-journal", "after-first-file", "after-files"]
AFTER_REF = ["after-ref", "after-index", "after-search-index"]


@pytest.fixture
def seeded(tmp_path) -> tuple[Path, str]:
    """A store with one committed record (so archive and supersede have a target)."""
    path = make_store(tmp_path / "store")
    result = lantern(*add_args("the seed record"), store=path)
    assert result.returncode == 0, result.stderr
    return path, json.loads(result.stdout)["id"]


def _op_args(op: str, seed: str) -> list[str]:
    return {
        "add": add_args("a fresh fact"),
        "archive": ["memory", "archive", seed, "--reason", "crash test"],
        "supersede": ["memory", "supersede", seed, "the replacement"],
        "update": ["memory", "update", seed, "--priority", "77"],
        "restore": ["memory", "restore", seed],
        "delete": ["memory", "delete", seed, "--reason", "crash test"],
        "revert": ["revert", "HEAD"],
        "import": ["import", "-"],
        "ingest": ["source", "add", "-", "--uri", "crash:new"],
        "append": ["source", "append", SEED_SOURCE, "-"],
        "remove": ["source", "remove", SEED_SOURCE],
    }[op]


# A source for append and remove to change, ingested before the crash.
SEED_SOURCE = compute_source_id("crash:seed", b"")
STDIN = {"ingest": "User: a new transcript\n", "append": "User: one more line\n"}


# Enough records for the bulk path: no fsync per file, one sync() per phase instead.
IMPORTED = [Record.new(kind="fact", content=f"imported fact {n}") for n in range(BULK_FILES + 6)]
IMPORT_LINES = "".join(json.dumps(r.to_dict()) + "\n" for r in IMPORTED)

# Every step for a one-file and a two-file write and a removal; two sides of the ref for the
# others; for the bulk import, both sides of the ref with a read and a write as the next command.
CASES = (
    [(op, point) for op in ("add", "supersede", "delete") for point in BEFORE_REF + AFTER_REF]
    + [
        (op, point)
        for op in ("archive", "update", "restore", "revert")
        for point in ("after-files", "after-ref")
    ]
    + [
        ("import", point)
        for point in ("after-first-file", "after-files", "after-ref", "after-index")
    ]
    # Sources: a new body and manifest, a body grown in place, two files removed.
    + [(op, point) for op in ("ingest", "append", "remove") for point in BEFORE_REF + AFTER_REF]
)


@pytest.mark.parametrize(("op", "point"), CASES)
def test_a_write_killed_at_any_step_is_completed_or_rolled_back(seeded, op, point):
    path, seed = seeded
    if op in ("restore", "revert"):
        # Something to restore, and a commit to revert (the archive, HEAD).
        assert lantern("memory", "archive", seed, store=path).returncode == 0
    if op in ("append", "remove"):
        seeded_source = lantern(
            "source", "add", "-", "--uri", "crash:seed", input="User: hi\n", store=path
        )
        assert seeded_source.returncode == 0, seeded_source.stderr
    before = snapshot(path)
    stdin = IMPORT_LINES if op == "import" else STDIN.get(op)
    killed = lantern(*_op_args(op, seed), env=cli_env(LANTERN_FAULT=point), input=stdin, store=path)
    assert killed.returncode == -9, killed.stderr
    if op == "import":
        # Killed where the bulk path was meant to be: one file written, or all of them.
        written = {p.stem for p in (path / "memory").glob("*/*.md")} & {r.id for r in IMPORTED}
        assert len(written) == (1 if point == "after-first-file" else len(IMPORTED))

    # The next command, a read for half the cases and a write for the others, repairs it.
    next_is_write = (BEFORE_REF + AFTER_REF).index(point) % 2 == 1
    follow = lantern(*add_args("written after the crash"), store=path) if next_is_write else None
    if follow is None:
        follow = lantern("memory", "list", "--status", "all", "--json", store=path)
    assert follow.returncode == 0, follow.stderr
    assert "Traceback" not in follow.stderr

    head = git(path, "rev-parse", "HEAD").strip()
    if point in BEFORE_REF:
        if point == "after-objects":
            # Killed before its journal: only unreferenced objects exist, nothing to repair
            # and nothing to report (the follow-up is a read, which prints nothing else).
            assert not next_is_write and follow.stderr == ""
        else:
            assert f"lantern: rolled back an interrupted {op}; nothing" in follow.stderr
        if next_is_write:
            assert git(path, "rev-parse", "HEAD~1").strip() == before["head"]
        else:
            assert snapshot(path) == before
    else:
        assert f"completed an interrupted {op}" in follow.stderr
        done = "HEAD~1" if next_is_write else "HEAD"
        message = git(path, "log", "-1", "--format=%B", done)
        assert f"Lantern-Op: {op}" in message
        assert git(path, "rev-parse", f"{done}~1").strip() == before["head"]
        assert head != before["head"]
        if op == "add":
            assert (path / "memory" / record_id("a fresh fact")[:2]).exists()
    if op == "import":
        present = {p.stem for p in (path / "memory").glob("*/*.md")}
        imported = {r.id for r in IMPORTED}
        assert imported <= present if point in AFTER_REF else not imported & present
    if op in ("restore", "revert"):
        shown = lantern("memory", "show", seed, "--json", store=path)
        expected_status = "active" if point in AFTER_REF else "archived"
        assert json.loads(shown.stdout)["status"] == expected_status
    if op == "delete":
        assert (path / "memory" / seed[:2] / f"{seed}.md").exists() is (point in BEFORE_REF)
    if op in ("ingest", "append", "remove"):
        if point in AFTER_REF:
            done = "HEAD~1" if next_is_write else "HEAD"
            source = SEED_SOURCE if op != "ingest" else compute_source_id("crash:new", b"")
            trailer = f"Lantern-Source: {source}"
            assert trailer in git(path, "log", "-1", "--format=%B", done)
        new = path / "sources" / compute_source_id("crash:new", b"")[:2]
        if op == "ingest":
            assert new.exists() is (point in AFTER_REF)
        body = path / "sources" / SEED_SOURCE[:2] / f"{SEED_SOURCE}.txt"
        if op == "append":
            grown = body.read_text() == "User: hi\nUser: one more line\n"
            assert grown is (point in AFTER_REF)
        if op == "remove":
            assert body.exists() is (point in BEFORE_REF)
    audit(path)


def _worktree_blob(path: Path, rel: str) -> str | None:
    """The blob id of a working file, as the write journal names it; None when absent."""
    full = path / rel
    return str(pygit2.hash(full.read_bytes())) if full.exists() else None


def test_a_crash_during_recovery_is_recovered_by_the_next_command(seeded):
    path, seed = seeded
    before = snapshot(path)
    journal_path = path / ".lantern" / "journal.json"
    # A two-file write (the old record and its replacement) cut off before its branch moved.
    killed = lantern(
        *_op_args("supersede", seed), env=cli_env(LANTERN_FAULT="after-files"), store=path
    )
    assert killed.returncode == -9, killed.stderr
    journal = journal_path.read_bytes()
    files = json.loads(journal)["files"]
    assert len(files) == 2
    assert all(_worktree_blob(path, rel) == c["new"] for rel, c in files.items())

    # Recovery itself is a write (it puts files back); kill the recovering command inside it,
    # right after it put back the first file.
    cut = lantern("memory", "list", env=cli_env(LANTERN_FAULT="during-recovery"), store=path)
    assert cut.returncode == -9, cut.stderr
    assert journal_path.exists(), "a recovery cut off must leave its journal for the next one"
    assert journal_path.read_bytes() == journal
    states = {rel: _worktree_blob(path, rel) for rel in files}
    restored = [rel for rel, c in files.items() if states[rel] == c["before"]]
    untouched = [rel for rel, c in files.items() if states[rel] == c["new"]]
    assert len(restored) == 1 and len(untouched) == 1, (files, states)

    follow = lantern("memory", "list", "--status", "all", "--json", store=path)
    assert follow.returncode == 0, follow.stderr
    assert "rolled back an interrupted supersede" in follow.stderr
    assert not journal_path.exists()
    assert snapshot(path) == before
    audit(path)


def test_a_crash_while_completing_a_committed_write_is_completed_by_the_next_command(seeded):
    path, seed = seeded
    journal_path = path / ".lantern" / "journal.json"
    # A two-file write killed right after its branch moved: committed, the journal still there.
    killed = lantern(
        *_op_args("supersede", seed), env=cli_env(LANTERN_FAULT="after-ref"), store=path
    )
    assert killed.returncode == -9, killed.stderr
    journal = journal_path.read_bytes()
    written = json.loads(journal)
    assert git(path, "rev-parse", "HEAD").strip() == written["commit"]
    want = {rel: c.get("after", c["new"]) for rel, c in written["files"].items()}
    assert len(want) == 2
    # As a power cut after the ref moved could leave them: the working files never reached
    # the disk. Recovery puts back the committed versions; kill it after the first one.
    for rel in want:
        (path / rel).unlink()
    cut = lantern("memory", "list", env=cli_env(LANTERN_FAULT="during-recovery"), store=path)
    assert cut.returncode == -9, cut.stderr
    assert journal_path.read_bytes() == journal, "a recovery cut off leaves its journal"
    states = {rel: _worktree_blob(path, rel) for rel in want}
    assert sorted(states[rel] == want[rel] for rel in want) == [False, True], (want, states)

    follow = lantern("memory", "list", "--status", "all", "--json", store=path)
    assert follow.returncode == 0, follow.stderr
    assert "completed an interrupted supersede" in follow.stderr
    assert not journal_path.exists()
    assert {rel: _worktree_blob(path, rel) for rel in want} == want
    assert git(path, "rev-parse", "HEAD").strip() == written["commit"]
    assert git(path, "status", "--porcelain") == ""
    statuses = sorted(r["status"] for r in json.loads(follow.stdout))
    assert statuses == ["active", "superseded"]
    audit(path)


def test_git_lock_files_left_by_the_killed_writer_are_cleared(seeded):
    path, seed = seeded
    lantern(*_op_args("archive", seed), env=cli_env(LANTERN_FAULT="after-ref"), store=path)
    # libgit2 killed inside its index or reflog update leaves these behind.
    for name in ("index.lock", "logs/HEAD.lock"):
        (path / ".git" / name).write_bytes(b"")
    follow = lantern("memory", "show", seed, "--json", store=path)
    assert follow.returncode == 0, follow.stderr
    assert "completed an interrupted archive" in follow.stderr
    assert json.loads(follow.stdout)["status"] == "archived"
    assert not (path / ".git" / "index.lock").exists()
    audit(path)


def test_a_git_lock_older_than_the_write_is_not_ours_and_is_named(seeded):
    path, seed = seeded
    lock = path / ".git" / "index.lock"
    lock.write_bytes(b"")
    # A minute before now on the file system's clock (the one git's lock files are stamped by).
    old = lock.stat().st_mtime - 60
    os.utime(lock, (old, old))
    lantern(*_op_args("archive", seed), env=cli_env(LANTERN_FAULT="after-ref"), store=path)
    blocked = lantern("memory", "list", store=path)
    assert blocked.returncode == 1
    assert f"remove {lock}" in blocked.stderr
    assert "Traceback" not in blocked.stderr
    assert lock.exists(), "a lock that may belong to a running git command is never removed"
    lock.unlink()
    follow = lantern("memory", "list", "--status", "all", store=path)
    assert follow.returncode == 0 and "completed an interrupted archive" in follow.stderr
    audit(path)


def test_a_write_that_fails_before_the_branch_moves_is_rolled_back_in_process(store_path):
    store = Store.open(str(store_path))
    seed = store.add("first", kind="fact")
    before = snapshot(store_path)
    # A ref lock held by a (pretend) running git command: the branch cannot move.
    lock = store_path / ".git" / "refs" / "heads" / "main.lock"
    lock.write_bytes(b"")
    with pytest.raises(GitError) as caught:
        store.supersede(seed.id, "second")
    assert "rolled back" in caught.value.message
    lock.unlink()
    assert snapshot(store_path) == before
    assert not (store_path / ".lantern" / "journal.json").exists()
    store.close()
    audit(store_path)


def test_atomic_write_replaces_the_file_in_one_step(tmp_path):
    from lantern_git.git.repo import TMP_SUFFIX, atomic_write

    target = tmp_path / "f.md"
    target.write_bytes(b"old")
    inode = target.stat().st_ino
    atomic_write(str(target), b"new")
    assert target.read_bytes() == b"new"
    assert target.stat().st_ino != inode, "written beside and renamed, never in place"
    assert not list(tmp_path.glob("*" + TMP_SUFFIX))


def _fsynced(store: Path, *args: str, trace: Path) -> list[str]:
    """Run the CLI under strace; the store-relative paths it fsynced, in order."""
    strace = shutil.which("strace") or "/usr/bin/strace"
    assert os.path.exists(strace), "strace is needed here; .ci/system-deps installs it"
    tracer = [strace, "-f", "-qq", "-y", "-e", "trace=fsync,fdatasync", "-o", str(trace)]
    result = subprocess.run(
        [*tracer, sys.executable, "-m", "lantern_git", "--store", str(store), *args],
        env=cli_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    root = str(store) + "/"
    # -y names each file descriptor's path: "fsync(4</store/.git/objects/tmp_obj...>) = 0".
    paths = re.findall(r"\bf(?:data)?sync\(\d+<([^>]*)>\) = 0", trace.read_text())
    return [p.removeprefix(root) for p in paths if p.startswith(root)]


def test_a_write_fsyncs_its_objects_journal_record_file_and_branch_ref(store_path, tmp_path):
    """What reaches the disk, seen from outside: the fsync calls of a real CLI write, traced.

    libgit2 fsyncs loose objects and refs only when told to (ENABLE_FSYNC_GITDIR); lantern
    fsyncs its journal and the record file itself. Each must be flushed before the next step
    refers to it. (.git/index is not flushed by libgit2 at all; the next command rebuilds its
    entries from HEAD and the working tree, so it needs no flush.)
    """
    objects = store_path / ".git" / "objects"

    def loose() -> set[Path]:
        return {p for p in objects.glob("??/*") if p.is_file()}

    existing = loose()
    synced = _fsynced(store_path, *add_args("flushed to disk"), trace=tmp_path / "trace")
    new_objects = loose() - existing
    rid = record_id("flushed to disk")
    record = f"memory/{rid[:2]}/.{rid}.md{TMP_SUFFIX}"

    # Loose objects are fsynced under a temporary name, then renamed into their folder (whose
    # fsync, a two-hex-digit folder, is not a file's).
    object_files = [
        n
        for n, p in enumerate(synced)
        if p.startswith(".git/objects/")
        and not p.startswith(".git/objects/pack/")
        and not re.fullmatch(r"[0-9a-f]{2}", p.rsplit("/", 1)[1])
    ]
    assert len(new_objects) >= 3, "a blob, trees and a commit"
    assert len(object_files) >= len(new_objects), synced
    refs = [n for n, p in enumerate(synced) if p.removesuffix(".lock") == ".git/refs/heads/main"]
    journal = f".lantern/.journal.json{TMP_SUFFIX}"
    assert journal in synced and record in synced and refs, synced
    # Objects before the journal that names them, the journal before the record file, the
    # record file before the branch ref that makes it part of history.
    assert max(object_files) < synced.index(journal) < synced.index(record) < min(refs), synced
    # A rename is on disk only once its folder is flushed: the journal's folder after the
    # journal's rename, the record's folder after the record file's, each before the ref.
    for renamed, folder in ((journal, ".lantern"), (record, f"memory/{rid[:2]}")):
        after = synced.index(renamed)
        assert folder in synced[after:], (folder, synced)
        assert after < synced.index(folder, after) < min(refs), synced


def test_a_recovery_flushes_each_file_it_puts_back_before_it_drops_the_journal(seeded, tmp_path):
    """A write cut off after its branch moved, its record file lost: the next command writes
    the file back and must flush it (and its folder) before the journal that would redo it
    is gone. Traced from outside, as above."""
    path, seed = seeded
    lantern(*_op_args("archive", seed), env=cli_env(LANTERN_FAULT="after-ref"), store=path)
    record = path / "memory" / seed[:2] / f"{seed}.md"
    record.unlink()
    synced = _fsynced(path, "memory", "show", seed, trace=tmp_path / "trace")
    assert "status: archived" in record.read_text()
    put_back = f"memory/{seed[:2]}/.{seed}.md{TMP_SUFFIX}"
    assert put_back in synced, synced
    # The journal's folder is flushed once the journal is gone: the last word of the recovery.
    dropped = max(n for n, p in enumerate(synced) if p == ".lantern")
    assert synced.index(put_back) < synced.index(f"memory/{seed[:2]}", synced.index(put_back))
    assert synced.index(f"memory/{seed[:2]}", synced.index(put_back)) < dropped, synced


def test_a_bulk_import_flushes_with_sync_before_the_journal_and_before_the_ref(
    store_path, tmp_path
):
    """A write of BULK_FILES files or more (an import) is flushed by one ``sync()`` per phase
    instead of an fsync per file: the objects before the journal names them, the working
    files before the branch ref makes them history. Traced from outside, as above."""
    count = BULK_FILES + 6
    batch = tmp_path / "batch.jsonl"
    batch.write_text(
        "".join(
            json.dumps({"content": f"bulk record number {n}", "kind": "fact"}) + "\n"
            for n in range(count)
        )
    )
    trace = tmp_path / "trace"
    strace = shutil.which("strace") or "/usr/bin/strace"
    assert os.path.exists(strace), "strace is needed here; .ci/system-deps installs it"
    calls = "trace=sync,fsync,fdatasync,rename,renameat,renameat2,link,linkat"
    result = subprocess.run(
        [strace, "-f", "-qq", "-y", "-e", calls, "-o", str(trace), sys.executable, "-m",
         "lantern_git", "--store", str(store_path), "import", str(batch), "--json"],
        env=cli_env(), capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["imported"] == count
    root = str(store_path) + "/"
    # Each traced call that succeeded, in order: ("sync", ""), ("fsync", its path) or
    # ("rename", the path a file was renamed or linked to: libgit2 links each loose object
    # into place).
    events: list[tuple[str, str]] = []
    for text in trace.read_text().splitlines():
        if not text.rstrip().endswith("= 0"):
            continue
        if re.search(r"\bsync\(\)", text):
            events.append(("sync", ""))
        elif found := re.search(r"\bf(?:data)?sync\(\d+<([^>]*)>\)", text):
            events.append(("fsync", found[1].removeprefix(root)))
        elif re.search(r"\b(?:rename(?:at2?)?|link(?:at)?)\(", text):
            target = re.findall(r'"([^"]*)"', text)[-1]
            events.append(("rename", target.removeprefix(root)))

    def placed(test) -> list[int]:
        return [n for n, (call, path) in enumerate(events) if call == "rename" and test(path)]

    syncs = [n for n, (call, _) in enumerate(events) if call == "sync"]
    [journal] = placed(lambda path: path == ".lantern/journal.json")
    objects = [n for n in placed(lambda path: path.startswith(".git/objects/")) if n < journal]
    records = placed(lambda path: path.startswith("memory/"))
    # The branch moves: its reflog and its ref, each flushed by libgit2.
    ref = min(n for n, (_, p) in enumerate(events) if p.startswith((".git/refs/", ".git/logs/")))
    assert len(objects) > count and len(records) == count, events
    # The records' files and the objects are not each flushed: one sync covers them all.
    assert not [p for c, p in events if c == "fsync" and p.startswith("memory/")], events
    assert not [p for c, p in events if c == "fsync" and p.startswith(".git/objects/")], events
    assert max(objects) < journal < min(records) and max(records) < ref, events
    assert any(max(objects) < n < journal for n in syncs), "no sync between objects and journal"
    assert any(max(records) < n < ref for n in syncs), "no sync between the files and the ref"


# ---------------------------------------------------------------------------- git states


def test_detached_head_refuses_writes_and_still_reads(seeded):
    path, seed = seeded
    git(path, "checkout", "-q", "--detach")
    before = snapshot(path)
    result = lantern(*add_args("not on a branch"), store=path)
    assert result.returncode == 1
    assert "detached" in result.stderr and "git switch" in result.stderr
    assert snapshot(path) == before
    listing = lantern("memory", "list", "--json", store=path)
    assert listing.returncode == 0 and [r["id"] for r in json.loads(listing.stdout)] == [seed]


def test_unborn_branch_refuses_writes_until_init(seeded):
    path, _ = seeded
    git(path, "checkout", "-q", "--orphan", "fresh")
    git(path, "rm", "-rq", "--cached", ".")
    before = git(path, "status", "--porcelain")
    result = lantern(*add_args("on an unborn branch"), store=path)
    assert result.returncode == 1
    assert "no commits yet" in result.stderr and "lantern init" in result.stderr
    assert git(path, "status", "--porcelain") == before
    assert lantern("init", str(path), store=path).returncode == 0
    assert lantern(*add_args("on an unborn branch"), store=path).returncode == 0
    assert "Lantern-Op: add" in git(path, "log", "-1", "--format=%B")


def _conflicting_branches(path: Path) -> None:
    (path / "notes.txt").write_text("base\n")
    git(path, "add", "notes.txt")
    git(path, "commit", "-qm", "notes")
    git(path, "checkout", "-qb", "other")
    (path / "notes.txt").write_text("other\n")
    git(path, "commit", "-qam", "other side")
    git(path, "checkout", "-q", "main")
    (path / "notes.txt").write_text("main\n")
    git(path, "commit", "-qam", "main side")


@pytest.mark.parametrize("operation", ["merge", "rebase"])
def test_an_unfinished_git_merge_or_rebase_refuses_writes(seeded, operation):
    path, seed = seeded
    _conflicting_branches(path)
    stopped = subprocess.run(["git", operation, "other"], cwd=path, capture_output=True)
    assert stopped.returncode != 0
    before = snapshot(path)
    for args in (add_args("during a " + operation), ["memory", "archive", seed]):
        result = lantern(*args, store=path)
        assert result.returncode == 1
        assert "unfinished git operation" in result.stderr
        assert snapshot(path) == before
    assert lantern("memory", "show", seed, store=path).returncode == 0


def test_missing_git_identity_falls_back_to_user_at_host_with_a_warning(tmp_path):
    path = tmp_path / "store"
    pygit2.init_repository(str(path), initial_head="main")
    home = tmp_path / "bare-home"
    home.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(HOME=str(home), XDG_CONFIG_HOME=str(home / "config"), GIT_CONFIG_NOSYSTEM="1")
    assert lantern("init", str(path), env=env, inherit_env=False, store=path).returncode == 0
    result = lantern(*add_args("who wrote this"), env=env, inherit_env=False, store=path)
    assert result.returncode == 0, result.stderr
    assert "no git identity is configured" in result.stderr
    import getpass
    import socket

    author = git(path, "log", "-1", "--format=%an <%ae>")
    assert author.strip() == f"{getpass.getuser()} <{getpass.getuser()}@{socket.gethostname()}>"


# ---------------------------------------------------------------------------- read-only stores


@pytest.fixture
def shared_dir(tmp_path):
    yield tmp_path
    subprocess.run(["chmod", "-R", "u+w", str(tmp_path)], check=False)


def _read_only_runner(root: Path, writable: list[Path] = ()):
    """Run the CLI on a store whose files it may not write (file modes, honoured even by root)."""
    subprocess.run(["chmod", "-R", "a-w", str(root / "store")], check=True)
    for folder in writable:
        subprocess.run(["chmod", "-R", "u+w", str(folder)], check=True)

    def run(*args):
        return lantern(*args, preexec_fn=as_plain_user)

    return run


def test_a_read_only_store_refuses_writes_clearly_and_still_lists(shared_dir):
    path = make_store(shared_dir / "store")
    assert lantern(*add_args("already here"), store=path).returncode == 0
    before = snapshot(path)
    run = _read_only_runner(shared_dir)
    result = run("--store", str(path), *add_args("cannot be written"))
    assert result.returncode == 1, result.stderr
    error = json.loads(result.stderr)["error"]
    assert error["code"] == "read_only"
    assert error["message"].startswith(f"{path} is read-only for this user")
    listing = run("--store", str(path), "memory", "list", "--json")
    assert listing.returncode == 0, listing.stderr
    assert [r["content"] for r in json.loads(listing.stdout)] == ["already here"]
    assert snapshot(path) == before


def test_a_read_only_git_folder_fails_before_anything_is_written(shared_dir):
    path = make_store(shared_dir / "store")
    assert lantern(*add_args("already here"), store=path).returncode == 0
    before = snapshot(path)
    run = _read_only_runner(shared_dir, writable=[path / ".lantern"])
    result = run("--store", str(path), *add_args("cannot be committed", "project:x"))
    assert result.returncode == 1, result.stderr
    assert json.loads(result.stderr)["error"]["code"] == "read_only"
    assert "nothing was written" in result.stderr
    assert snapshot(path) == before
    assert not (path / ".lantern" / "journal.json").exists()


def test_an_unwritable_index_folder_with_no_index_answers_from_a_temporary_index(shared_dir):
    path = make_store(shared_dir / "store")
    assert lantern(*add_args("already here"), store=path).returncode == 0
    # A CLI write leaves indexing to the next command: there may be no index yet at all.
    shutil.rmtree(path / ".lantern" / "index", ignore_errors=True)
    run = _read_only_runner(shared_dir)
    result = run("--store", str(path), "memory", "list")
    assert result.returncode == 0, result.stderr
    assert "already here" in result.stdout
    # The index was built elsewhere: .lantern/ still has none.
    assert not (path / ".lantern" / "index").exists()


# ---------------------------------------------------------------------------- index faults


def _records(path: Path) -> list[str]:
    result = lantern("memory", "list", "--status", "all", "--json", store=path)
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr
    return [r["id"] for r in json.loads(result.stdout)]


@pytest.fixture
def indexed(tmp_path) -> tuple[Path, list[str]]:
    path = make_store(tmp_path / "store")
    store = Store.open(str(path))
    for n in range(6):
        store.add(f"indexed fact {n}", kind="fact", priority=n * 10)
    store.archive(store.list()[0].id)
    expected = [r.id for r in store.list(status="all")]
    store.close()
    return path, expected


def _damage(index: Path, how: str) -> None:
    if how == "deleted":
        shutil.rmtree(index)
        return
    for item in index.iterdir():
        if item.is_file():
            if how == "truncated":
                with open(item, "r+b") as handle:
                    handle.truncate(item.stat().st_size // 2)
            elif how == "garbage":
                item.write_bytes(os.urandom(max(item.stat().st_size, 64)))
            elif how == "segments-garbage" and item.suffix == ".seg":
                item.write_bytes(os.urandom(item.stat().st_size))
            elif how == "toc-garbage" and item.suffix == ".toc":
                # The manifest intact: only opening the index shows the damage.
                item.write_bytes(b"not a table of contents")
    from lantern_git.index.search import MANIFEST, SCHEMA_VERSION

    if how == "older-schema":
        with open(index / MANIFEST, "wb") as handle:
            marshal.dump({"v": SCHEMA_VERSION - 1, "files": {}, "broken": {}}, handle)
    if how == "wrong-shape":
        with open(index / MANIFEST, "wb") as handle:
            marshal.dump({"v": SCHEMA_VERSION, "files": "x", "broken": [3]}, handle)


@pytest.mark.parametrize(
    "how",
    [
        "deleted",
        "truncated",
        "garbage",
        "segments-garbage",
        "toc-garbage",
        "older-schema",
        "wrong-shape",
    ],
)
def test_a_damaged_index_is_rebuilt_and_lists_correctly(indexed, how):
    path, expected = indexed
    _damage(path / ".lantern" / "index", how)
    assert _records(path) == expected
    status = lantern("status", "--json", store=path)
    assert status.returncode == 0, status.stderr
    assert json.loads(status.stdout)["records"] == len(expected)
    search = lantern("memory", "search", "indexed", "--status", "all", "--json", store=path)
    assert search.returncode == 0
    assert sorted(r["id"] for r in json.loads(search.stdout)) == sorted(expected)


def test_status_survives_damaged_segments(indexed):
    path, expected = indexed
    _damage(path / ".lantern" / "index", "segments-garbage")
    status = lantern("status", "--json", store=path)
    assert status.returncode == 0, status.stderr
    assert json.loads(status.stdout)["records"] == len(expected)


def test_a_checkout_underneath_a_running_process_is_seen(indexed):
    path, expected = indexed
    store = Store.open(str(path))
    assert [r.id for r in store.list(status="all")] == expected
    store.add("added later", kind="fact")
    old = git(path, "rev-parse", "HEAD~1").strip()
    git(path, "checkout", "-q", old)
    assert [r.id for r in store.list(status="all")] == expected
    git(path, "checkout", "-q", "main")
    assert record_id("added later") in [r.id for r in store.list(status="all")]
    git(path, "checkout", "-q", "HEAD~3")
    at_that_commit = Store.open(str(path))
    fresh = [r.id for r in at_that_commit.list(status="all")]
    at_that_commit.close()
    assert [r.id for r in store.list(status="all")] == fresh
    git(path, "checkout", "-q", "main")
    store.close()
    audit(path)


def test_a_crashed_init_puts_back_the_users_own_untracked_files(tmp_path):
    path = tmp_path / "repo"
    pygit2.init_repository(str(path), initial_head="main")
    (path / ".gitignore").write_text("*.log\n")
    killed = lantern("init", str(path), env=cli_env(LANTERN_FAULT="after-files"), store=path)
    assert killed.returncode == -9
    assert (path / ".gitignore").read_text() == "*.log\n/.lantern/\n"
    follow = lantern("memory", "list", store=path)
    assert "rolled back an interrupted init" in follow.stderr
    assert (path / ".gitignore").read_text() == "*.log\n", "the user's file, exactly as it was"
    assert not (path / "lantern.yaml").exists()
    assert lantern("init", str(path), store=path).returncode == 0
    assert git(path, "show", "HEAD:.gitignore") == "*.log\n/.lantern/\n"
    audit(path)


def test_init_repairs_an_interrupted_write_before_committing(seeded):
    path, _ = seeded
    before = snapshot(path)
    lantern(*add_args("cut off"), env=cli_env(LANTERN_FAULT="after-files"), store=path)
    again = lantern("init", str(path), store=path)
    assert again.returncode == 0
    assert "rolled back an interrupted add" in again.stderr
    assert snapshot(path) == before
    audit(path)


@pytest.mark.parametrize("point", ["after-files", "after-ref"])
def test_a_crashed_init_never_loses_uncommitted_edits_to_gitignore(tmp_path, point):
    path = tmp_path / "repo"
    repo = pygit2.init_repository(str(path), initial_head="main")
    repo.config["user.name"] = "Test Author"
    repo.config["user.email"] = "author@example.com"
    (path / ".gitignore").write_text("*.log\n")
    git(path, "add", ".gitignore")
    git(path, "commit", "-qm", "ignore logs")
    (path / ".gitignore").write_text("*.log\n*.tmp\n")  # the user's edit, not committed
    killed = lantern("init", str(path), env=cli_env(LANTERN_FAULT=point), store=path)
    assert killed.returncode == -9
    follow = lantern("status", store=path)
    assert follow.returncode == 0 or point == "after-files", follow.stderr
    if point == "after-files":
        assert "rolled back an interrupted init" in follow.stderr
        assert (path / ".gitignore").read_text() == "*.log\n*.tmp\n"
        assert git(path, "status", "--porcelain", "--untracked-files=no") == " M .gitignore\n"
    else:
        assert "completed an interrupted init" in follow.stderr
        assert git(path, "show", "HEAD:.gitignore") == "*.log\n/.lantern/\n"
        assert (path / ".gitignore").read_text() == "*.log\n*.tmp\n/.lantern/\n"
        assert git(path, "status", "--porcelain") == " M .gitignore\n"


def test_a_journal_cut_off_while_being_written_is_dropped_by_the_next_command(seeded):
    path, seed = seeded
    before = snapshot(path)
    # A writer killed between creating its journal's temporary file and renaming it.
    leftover = path / ".lantern" / ".journal.json.lantern-tmp"
    leftover.write_bytes(b'{"op": "add", "fi')
    follow = lantern("memory", "show", seed, "--json", store=path)
    assert follow.returncode == 0, follow.stderr
    assert not leftover.exists()
    assert snapshot(path) == before
    audit(path)


def test_a_write_after_a_bulk_import_in_the_same_process_flushes_its_objects_again(
    store_path, tmp_path
):
    """A bulk write turns libgit2's fsync off for its objects and back on after: a long-lived
    process (``lantern mcp``, ``lantern serve``) that imports and then adds a record must flush
    the add's objects as any write does. Traced from outside, as above."""
    script = (
        "import json, sys\n"
        "from lantern_git.store import Store\n"
        "store = Store.open(sys.argv[1])\n"
        f"store.import_records([json.dumps({{'content': f'bulk {{n}}', 'kind': 'fact'}})"
        f" for n in range({BULK_FILES + 1})])\n"
        "print('imported', flush=True)\n"
        "store.add('written after the import', kind='fact')\n"
        "store.close()\n"
    )
    trace = tmp_path / "trace"
    strace = shutil.which("strace") or "/usr/bin/strace"
    assert os.path.exists(strace), "strace is needed here; .ci/system-deps installs it"
    result = subprocess.run(
        [strace, "-f", "-qq", "-y", "-e", "trace=fsync,fdatasync,write", "-o", str(trace),
         sys.executable, "-c", script, str(store_path)],
        env=cli_env(), capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    lines = trace.read_text().splitlines()
    # The process's own "imported" line on stdout marks where the add begins.
    [start] = [n for n, text in enumerate(lines) if "imported" in text and "write(1" in text]
    root = str(store_path) + "/"
    objects = [
        found[1]
        for text in lines[start:]
        if (found := re.search(r"\bf(?:data)?sync\(\d+<([^>]*)>\) = 0", text))
        and found[1].removeprefix(root).startswith(".git/objects/")
    ]
    assert len(objects) >= 3, "a blob, trees and a commit, each flushed"
