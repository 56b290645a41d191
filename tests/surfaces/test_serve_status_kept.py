"""The status page under a running server keeps the store's counts between loads (issue 32,
speed: counting reads every posting, 1.5 s at 100,000 records). What it keeps must follow
every change beside it on the next load: a record committed by another process, a hand edit
that commits nothing, a source added, a broken file, and a remote's branch (ahead and
behind are read on every load)."""

from __future__ import annotations

import re
from pathlib import Path

import pygit2
import pytest
from support.serve import Markup, served
from support.stores import make_store

from lantern_git.evidence.sources import SourceInput
from lantern_git.store import Store


@pytest.fixture
def path(tmp_path) -> Path:
    return make_store(tmp_path / "store")


def summary(client) -> str:
    page = client.get("/status")
    assert page.status_code == 200, page.text
    return " ".join(Markup(page.text).text.split())


def test_the_kept_counts_follow_every_change_made_beside_the_server(path, tmp_path):
    store = Store(str(path), actor="cli")
    first = store.add("one", kind="fact").id
    store.close()
    with served(path) as (client, _):
        assert "holds 1 record (1 active, 0 archived, 0 superseded) and 0 sources" in summary(
            client
        )
        summary(client)  # kept
        side = Store(str(path), actor="cli")
        side.add("two", kind="goal")
        assert "holds 2 records (2 active" in summary(client)
        # A hand edit: HEAD stays, the index changes.
        [file] = (path / "memory").rglob(f"{first}.md")
        file.write_text(file.read_text().replace("status: active", "status: archived"))
        assert "holds 2 records (1 active, 1 archived, 0 superseded)" in summary(client)
        side.sources.add([SourceInput(b"a line\n", "n.md", uri="session:n")])
        assert "and 1 source of evidence" in summary(client)
        # A broken file: named, and no longer counted.
        file.write_text("not a record\n")
        text = summary(client)
        assert "holds 1 record (1 active" in text and f"{first}.md" in text
        # A remote with the branch one commit behind: ahead and behind are read afresh.
        remote = pygit2.init_repository(str(tmp_path / "remote.git"), bare=True)
        repo = pygit2.Repository(str(path))
        repo.remotes.create("origin", remote.path)
        head = repo.head.peel(pygit2.Commit)
        repo.references.create("refs/remotes/origin/main", head.parents[0].id)
        repo.branches.local["main"].upstream = repo.branches.remote["origin/main"]
        assert re.search(r"1 commit ahead of origin/main and 0 behind", summary(client))
        side.close()
