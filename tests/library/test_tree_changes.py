"""GitRepo.tree_changes walks only the subtrees whose ids differ: it must answer exactly what
libgit2's own tree diff answers, for every kind of change a tree can hold."""

from __future__ import annotations

import random

import pygit2
import pytest

from lantern_git.git.repo import BLOB_MODE, EXECUTABLE_MODE, LINK_MODE, GitRepo


def libgit2_changes(old: pygit2.Tree | None, new: pygit2.Tree | None) -> dict:
    """The answer from libgit2's diff: the walk tree_changes replaced, kept here as the oracle."""
    if old is not None and new is not None:
        diff = old.diff_to_tree(new)
    elif old is not None:
        diff = old.diff_to_tree()
    elif new is not None:
        diff = new.diff_to_tree(swap=True)
    else:
        return {}
    found: dict = {}
    for delta in diff.deltas:
        if delta.status == pygit2.enums.DeltaStatus.DELETED:
            found.setdefault(delta.old_file.path, None)
        else:
            found[delta.new_file.path] = (str(delta.new_file.id), int(delta.new_file.mode))
    return found


def tree_of(repo: pygit2.Repository, files: dict[str, tuple[bytes, int]]) -> pygit2.Tree:
    """A tree holding ``files`` (path -> (bytes, mode)), written through an in-memory index."""
    index = pygit2.Index()
    for path, (data, mode) in files.items():
        index.add(pygit2.IndexEntry(path, repo.create_blob(data), mode))
    return repo[index.write_tree(repo)].peel(pygit2.Tree)


@pytest.fixture
def repo(tmp_path) -> GitRepo:
    pygit2.init_repository(str(tmp_path))
    return GitRepo(str(tmp_path))


def test_every_kind_of_change_is_found_as_libgit2_finds_it(repo):
    base = {
        "lantern.yaml": (b"a: 1\n", BLOB_MODE),
        "memory/aa/aa1.md": (b"one\n", BLOB_MODE),
        "memory/aa/aa2.md": (b"two\n", BLOB_MODE),
        "memory/bb/bb1.md": (b"three\n", BLOB_MODE),
        "sources/s/body": (b"body\n", BLOB_MODE),
        "tool": (b"#!/bin/sh\n", BLOB_MODE),
        "place": (b"a file that becomes a folder\n", BLOB_MODE),
        "deep/er/folder/x": (b"a folder that becomes a file\n", BLOB_MODE),
        "link": (b"target", LINK_MODE),
    }
    changed = dict(base)
    changed["memory/aa/aa1.md"] = (b"one, edited\n", BLOB_MODE)  # content
    del changed["memory/aa/aa2.md"]  # removed
    changed["memory/cc/cc1.md"] = (b"new shard\n", BLOB_MODE)  # added in a new folder
    del changed["sources/s/body"]  # a whole folder removed
    changed["tool"] = (b"#!/bin/sh\n", EXECUTABLE_MODE)  # mode only
    del changed["place"]
    changed["place/inside"] = (b"now a folder\n", BLOB_MODE)
    del changed["deep/er/folder/x"]
    changed["deep"] = (b"now a file\n", BLOB_MODE)
    changed["link"] = (b"target", BLOB_MODE)  # a link becomes a file, same bytes
    old, new = tree_of(repo.repo, base), tree_of(repo.repo, changed)
    expected = {
        "memory/aa/aa1.md": (str(pygit2.hash(b"one, edited\n")), BLOB_MODE),
        "memory/aa/aa2.md": None,
        "memory/cc/cc1.md": (str(pygit2.hash(b"new shard\n")), BLOB_MODE),
        "sources/s/body": None,
        "tool": (str(pygit2.hash(b"#!/bin/sh\n")), EXECUTABLE_MODE),
        "place": None,
        "place/inside": (str(pygit2.hash(b"now a folder\n")), BLOB_MODE),
        "deep/er/folder/x": None,
        "deep": (str(pygit2.hash(b"now a file\n")), BLOB_MODE),
        "link": (str(pygit2.hash(b"target")), BLOB_MODE),
    }
    assert repo.tree_changes(old, new) == expected
    assert libgit2_changes(old, new) == expected
    back = repo.tree_changes(new, old)
    assert back == libgit2_changes(new, old)
    assert repo.tree_changes(old, old) == {}
    assert repo.tree_changes(None, None) == {}
    assert repo.tree_changes(None, old) == libgit2_changes(None, old)
    assert repo.tree_changes(old, None) == libgit2_changes(old, None)
    assert set(repo.tree_changes(None, old)) == set(base)


def test_random_trees_agree_with_libgit2(repo):
    rng = random.Random(32)
    names = [f"memory/{a}{b}/{a}{b}{i}.md" for a in "abc" for b in "xy" for i in range(4)]
    names += ["lantern.yaml", "sources/one/body", "sources/one/manifest.yaml", "top"]
    for _ in range(60):
        trees = []
        for _side in range(2):
            files = {
                name: (
                    rng.choice([b"a\n", b"b\n", b"c\n"]),
                    rng.choice([BLOB_MODE] * 5 + [EXECUTABLE_MODE]),
                )
                for name in names
                if rng.random() < 0.7
            }
            trees.append(tree_of(repo.repo, files))
        old, new = trees
        assert repo.tree_changes(old, new) == libgit2_changes(old, new)
