"""Clones of one bare remote, each driven through the library: what the sync, review and
state-machine tests share."""

from __future__ import annotations

import stat
from pathlib import Path

import pygit2

from lantern_git.model.record import Record
from lantern_git.model.record_file import read_record_file, record_path
from lantern_git.store import Store

from .stores import git, init_repo

MARKERS = ("<<<<<<<", ">>>>>>>")


class Host:
    """One clone of the shared remote, driven through the library."""

    def __init__(self, path: Path):
        self.path = path
        self.store = Store.open(str(path), actor="api")

    def sync(self, remote=None, push=True):
        return self.store.sync(remote, push=push)

    def add(self, content, **fields):
        fields.setdefault("kind", "fact")
        return self.store.add(content, **fields)

    def read(self, record_id) -> Record:
        return self.store.get(record_id)

    def hand_edit(self, record_id, message="hand edit", **changes):
        """Change a record file by hand and commit it with plain git."""
        path = record_path(record_id)
        text = (self.path / path).read_text()
        record = Record.from_markdown(text).evolve(**changes)
        (self.path / path).write_text(record.rewrite(text))
        git(self.path, "commit", "-q", "-am", message)

    def memory(self) -> dict[str, bytes]:
        root = self.path / "memory"
        return {
            p.relative_to(self.path).as_posix(): p.read_bytes()
            for p in sorted(root.rglob("*.md"))
            if p.is_file()
        }

    def head(self) -> str:
        return git(self.path, "rev-parse", "HEAD").strip()

    def status(self) -> str:
        return git(self.path, "status", "--porcelain")


def make_remote(tmp_path: Path) -> Path:
    remote = tmp_path / "remote.git"
    pygit2.init_repository(str(remote), bare=True, initial_head="main")
    return remote


def first_host(tmp_path: Path, remote: Path, name: str = "a") -> Host:
    path = tmp_path / name
    init_repo(path)
    Store.init(str(path)).close()
    git(path, "remote", "add", "origin", str(remote))
    host = Host(path)
    host.sync()
    return host


def clone_host(tmp_path: Path, remote: Path, name: str) -> Host:
    git(tmp_path, "clone", "-q", str(remote), name)
    Store.init(str(tmp_path / name)).close()
    return Host(tmp_path / name)


def assert_clean_and_valid(*hosts: Host) -> None:
    for host in hosts:
        assert host.status() == ""
        for path, data in host.memory().items():
            assert not any(m.encode() in data for m in MARKERS), path
            _, record, problem = read_record_file(str(host.path), path)
            assert record is not None, problem


def cross_merge(a: Host, b: Host) -> None:
    """Each host merges the other's commits at once, with plain git (through the merge
    driver): from then on their histories have two merge bases (a criss-cross)."""
    git(a.path, "remote", "add", "peer", str(b.path))
    git(b.path, "remote", "add", "peer", str(a.path))
    for host in (a, b):
        git(host.path, "fetch", "-q", "peer")
    for host in (a, b):
        git(host.path, "merge", "-q", "--no-edit", "peer/main")


def merged_by_git(tmp_path: Path, a: Host, b: Host) -> Host:
    """A clone of ``a`` that merges ``b``'s branch with plain git (ort, through the driver):
    what lantern's merge of the two must equal. Their histories must have two merge bases."""
    twin = tmp_path / "twin"
    git(tmp_path, "clone", "-q", str(a.path), "twin")
    Store.init(str(twin)).close()
    git(twin, "fetch", "-q", str(b.path), "main")
    assert len(git(twin, "merge-base", "--all", "HEAD", "FETCH_HEAD").split()) == 2
    git(twin, "merge", "-q", "--no-edit", "FETCH_HEAD")
    return Host(twin)


def before_push(host: Host, tmp_path: Path, times: int, *commands: str) -> Path:
    """A pre-push hook on ``host`` that runs the shell ``commands`` before each of its first
    ``times`` pushes (a real race between a sync's fetch and its push, as git's hook stages
    it); the file it returns counts the runs that did."""
    hook = host.path / ".git" / "hooks" / "pre-push"
    count = tmp_path / "moves"
    hook.write_text(
        "#!/bin/sh\n"
        f'n=$(cat "{count}" 2>/dev/null || echo 0)\n'
        f'if [ "$n" -lt {times} ]; then\n'
        f'  echo $((n + 1)) > "{count}"\n'
        + "".join(f"  {command} >&2\n" for command in commands)
        + "fi\n"
    )
    hook.chmod(hook.stat().st_mode | stat.S_IXUSR)
    return count


def merge_message(host: Host) -> str:
    return git(host.path, "log", "-1", "--format=%B")
