"""Real git repositories and stores in temporary folders, never mocks; plain git beside them;
and the snapshot that a refused write must leave as it was."""

from __future__ import annotations

import hashlib
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pygit2
import pytest

from lantern_git.model.record import compute_id
from lantern_git.store import Store


def init_repo(path: Path) -> pygit2.Repository:
    """A plain git repository with a local identity, as a user would have."""
    repo = pygit2.init_repository(str(path), initial_head="main")
    repo.config["user.name"] = "Test Author"
    repo.config["user.email"] = "author@example.com"
    return repo


def make_store(path: Path) -> Path:
    """A new store at ``path``: a git repository as a user would have, then ``Store.init``."""
    init_repo(path)
    Store.init(str(path)).close()
    return path


@pytest.fixture
def store_path(tmp_path) -> Path:
    path = tmp_path / "store"
    init_repo(path)
    Store.init(str(path))
    return path


@pytest.fixture
def store(store_path) -> Store:
    s = Store.open(str(store_path), actor="api")
    yield s
    s.close()


@contextmanager
def opened(path: Path, **kwargs: Any) -> Iterator[Store]:
    """The store at ``path`` (``Store.open``'s keywords), closed after."""
    store = Store.open(str(path), **kwargs)
    try:
        yield store
    finally:
        store.close()


def git(path, *args, check=True) -> str:
    """Run the real git CLI in ``path``; returns stdout."""
    result = subprocess.run(["git", *args], cwd=path, capture_output=True, text=True, check=False)
    if check and result.returncode != 0:
        raise AssertionError(f"git {' '.join(args)} failed: {result.stderr}")
    return result.stdout


def git_out(path, *args: str) -> subprocess.CompletedProcess:
    """Run the real git CLI in ``path``; the whole answer, whatever its exit code."""
    return subprocess.run(["git", *args], cwd=path, capture_output=True, text=True)


def edit_in_place(path, old: str, new: str) -> None:
    """A hand edit that writes over the file's own inode (as some editors save), replacing
    ``old`` by ``new`` of the same length: no new name, no change to its folder."""
    assert len(old) == len(new)
    with open(path, "r+", encoding="utf-8") as handle:
        text = handle.read()
        assert old in text
        handle.seek(0)
        handle.write(text.replace(old, new))


def snapshot(path) -> dict:
    """Everything that must not change after a refused write: HEAD, the files, git status."""
    files = {}
    root = Path(path)
    for p in sorted(root.rglob("*")):
        rel = p.relative_to(root).as_posix()
        if rel.startswith(".git/") or rel == ".git" or rel.startswith(".lantern"):
            continue
        if p.is_file():
            files[rel] = p.read_bytes()
    return {
        "head": git(path, "rev-parse", "HEAD").strip(),
        "files": files,
        "status": git(path, "status", "--porcelain"),
    }


def colliding_contents(
    prefix_length: int = 4, stem: str = "collision candidate "
) -> tuple[str, str]:
    """Two contents of global facts whose ids share their first ``prefix_length`` hex digits:
    the first such pair among ``f"{stem}{i}"`` (a birthday search)."""
    seen: dict[str, str] = {}
    i = 0
    while True:
        content = f"{stem}{i}"
        prefix = compute_id("fact", "global", content)[:prefix_length]
        if prefix in seen:
            return seen[prefix], content
        seen[prefix] = content
        i += 1


def commit_whose_id_sorts(
    repo: pygit2.Repository,
    tree: pygit2.Oid,
    parents: list[pygit2.Oid],
    than: str,
    *,
    above: bool,
) -> pygit2.Oid:
    """A commit of ``tree`` on ``parents`` whose id sorts above (or below) ``than`` as text.

    Candidates are hashed here, as git hashes a commit, and only the one found is written: a
    million candidates cost about a second, so even an id near either end of the range has
    one on the side asked (a few hundred written commits did not always find one)."""
    name, email, when = "Other Host", "other@example.com", 1_764_690_000
    signature = pygit2.Signature(name, email, when, 0)
    head = f"tree {tree}\n" + "".join(f"parent {p}\n" for p in parents)
    person = f"{name} <{email}> {when} +0000"
    for n in range(1_000_000):
        body = f"{head}author {person}\ncommitter {person}\n\nother {n}".encode()
        found = hashlib.sha1(b"commit %d\0" % len(body) + body).hexdigest()
        if (found > than) == above:
            oid = repo.create_commit(None, signature, signature, f"other {n}", tree, parents)
            assert str(oid) == found, "git hashed the commit otherwise"
            return oid
    raise AssertionError(f"no commit id {'above' if above else 'below'} {than}")
