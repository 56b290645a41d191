"""A full disk (issue 11, item 9): a store on a small tmpfs, filled until writes fail.

Each failing write must exit 1 and say "the disk is full", with the operating system's words
("No space left on device"); nothing acknowledged may be lost; the store must stay whole (``lantern
check``, ``git fsck``, ``git status``); and once space is freed the next write must succeed.

The tmpfs is mounted by the test, so it needs root (CI runs as root). Without root, or where
mounting is impossible, the tests fail, saying why: they are not skipped.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from support.cli import lantern
from support.reliability import add_args, audit, record_id
from support.stores import git_out, make_store

DISK_SIZE = "2m"
NO_SPACE = "No space left on device"
DISK_FULL = "the disk is full"


@pytest.fixture
def disk(tmp_path) -> Path:
    """A 2 MiB tmpfs mounted for the test, unmounted after it."""
    if os.geteuid() != 0:
        pytest.fail(
            "tests/robustness/test_full_disk.py mounts a tmpfs and must run as root (CI does); "
            f"running as uid {os.geteuid()}"
        )
    mount_point = tmp_path / "disk"
    mount_point.mkdir()
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={DISK_SIZE}", "tmpfs", str(mount_point)],
        capture_output=True,
        text=True,
    )
    if mounted.returncode != 0:
        pytest.fail(
            f"cannot mount a tmpfs at {mount_point} (the full-disk tests need one): "
            f"{mounted.stderr.strip() or mounted.returncode}"
        )
    try:
        yield mount_point
    finally:
        subprocess.run(["umount", "-l", str(mount_point)], capture_output=True)


def free_bytes(path: Path) -> int:
    stats = os.statvfs(path)
    return stats.f_bavail * stats.f_frsize


def fill(disk: Path, leave: int) -> Path:
    """Write a filler file so that about ``leave`` bytes stay free; returns its path."""
    filler = disk / "filler"
    size = max(0, free_bytes(disk) - leave)
    with open(filler, "ab") as handle:
        handle.write(b"\0" * size)
    return filler


def content(n: int) -> str:
    return f"full disk record {n}: " + "words that take some room " * 20


def assert_refused_for_space(result: subprocess.CompletedProcess) -> None:
    """A write the full disk stopped: exit 1, one JSON error naming the cause, no traceback."""
    assert "Traceback" not in result.stderr, result.stderr
    assert result.returncode == 1, (result.returncode, result.stdout, result.stderr)
    assert result.stdout == ""
    error = json.loads(result.stderr)["error"]
    assert DISK_FULL in error["message"] and NO_SPACE in error["message"], error


def assert_git_whole(store: Path, commits: int) -> None:
    """Checks that need no free space: fsck, a clean status, and exactly ``commits`` commits."""
    fsck = git_out(store, "fsck", "--no-dangling")
    assert fsck.returncode == 0, fsck.stdout + fsck.stderr
    # --no-optional-locks: a plain status would try to refresh .git/index, and find no room.
    status = git_out(store, "--no-optional-locks", "status", "--porcelain", "--untracked-files=all")
    assert status.returncode == 0, status.stderr
    assert status.stdout == "", f"git status not clean:\n{status.stdout}"
    count = git_out(store, "rev-list", "--count", "HEAD")
    assert int(count.stdout) == commits, count.stdout + count.stderr


def assert_everything_listed(store: Path, acknowledged: set[str]) -> None:
    listing = lantern(
        "memory", "list", "--json", "--status", "all", "--limit", "100000", store=store
    )
    assert listing.returncode == 0, listing.stderr
    listed = {r["id"] for r in json.loads(listing.stdout)}
    assert acknowledged <= listed, f"acknowledged writes lost: {sorted(acknowledged - listed)}"


def test_a_full_disk_refuses_writes_clearly_and_loses_nothing(disk):
    store = make_store(disk / "store")
    filler = fill(disk, leave=96 * 1024)
    acknowledged: set[str] = set()
    failures = 0
    for n in range(60):
        result = lantern(*add_args(content(n)), store=store)
        if result.returncode == 0:
            assert failures == 0, "a write succeeded after the disk was full"
            acknowledged.add(json.loads(result.stdout)["id"])
            continue
        assert_refused_for_space(result)
        failures += 1
        # Each refusal leaves the repository whole, with every acknowledged write committed.
        assert_git_whole(store, commits=1 + len(acknowledged))
        if failures == 3:
            break
    assert acknowledged, "no write fitted before the disk was full: leave more room"
    assert failures == 3, f"the disk never filled up ({len(acknowledged)} writes fitted)"

    filler.unlink()
    audit(store, acknowledged)
    assert_everything_listed(store, acknowledged)
    after = lantern(*add_args("written once space was freed"), store=store)
    assert after.returncode == 0, after.stderr
    acknowledged.add(json.loads(after.stdout)["id"])
    audit(store, acknowledged)
    assert_everything_listed(store, acknowledged)


def test_running_out_of_space_at_any_step_of_a_write_is_refused_and_repaired(disk):
    """The room left steps by 4 KiB, so the write runs out in its git objects, its journal,
    its record file, the branch and .git/index, or the search index, each in one round."""
    outcomes = []
    for leave_kib in range(0, 44, 4):
        store = disk / "store"
        shutil.rmtree(store, ignore_errors=True)
        make_store(store)
        filler = fill(disk, leave=leave_kib * 1024)
        acknowledged: set[str] = set()
        for n in range(8):
            result = lantern(*add_args(content(n)), store=store)
            if result.returncode == 0:
                acknowledged.add(record_id(content(n)))
                continue
            assert_refused_for_space(result)
            outcomes.append((leave_kib, json.loads(result.stderr)["error"]["message"]))
            break
        else:
            pytest.fail(f"with {leave_kib} KiB left, 8 writes fitted: the disk never filled")
        fsck = git_out(store, "fsck", "--no-dangling")
        assert fsck.returncode == 0, (leave_kib, fsck.stdout + fsck.stderr)

        filler.unlink()
        # The first command after space is back repairs a write that was cut off, then writes.
        after = lantern(*add_args("written once space was freed"), store=store)
        assert after.returncode == 0, (leave_kib, after.stderr)
        acknowledged.add(json.loads(after.stdout)["id"])
        audit(store, acknowledged)
    # The rounds ran out of space in different places, not all in the same step.
    assert len({message for _, message in outcomes}) >= 2, outcomes


def test_reads_on_a_full_disk_answer_or_fail_clearly(disk):
    """While the disk is still full, check and list either answer, or exit 1 naming the cause."""
    problems = []
    for leave_kib in range(0, 44, 4):
        store = disk / "store"
        shutil.rmtree(store, ignore_errors=True)
        make_store(store)
        filler = fill(disk, leave=leave_kib * 1024)
        acknowledged: set[str] = set()
        for n in range(8):
            result = lantern(*add_args(content(n)), store=store)
            if result.returncode != 0:
                break
            acknowledged.add(record_id(content(n)))
        for args in (["check", "--json"], ["memory", "list", "--json", "--status", "all"]):
            read = lantern(*args, store=store)
            if read.returncode == 0:
                if args[0] == "memory":
                    listed = {r["id"] for r in json.loads(read.stdout)}
                    if not acknowledged <= listed:
                        problems.append((leave_kib, args[0], "lost", acknowledged - listed))
                continue
            error = json.loads(read.stderr)["error"] if read.stderr.startswith("{") else {}
            if (
                read.returncode != 1
                or error.get("code") == "internal_error"
                or NO_SPACE not in error.get("message", "")
            ):
                problems.append((leave_kib, args[0], read.returncode, read.stderr.strip()))
        filler.unlink()
    assert not problems, "\n".join(map(str, problems))
