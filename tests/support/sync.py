"""Clones of one bare remote, each driven through the library: what the sync, review and
state-machine tests share."""

from __future__ import annotations

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


def merge_message(host: Host) -> str:
    return git(host.path, "log", "-1", "--format=%B")
