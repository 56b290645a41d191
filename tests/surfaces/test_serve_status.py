"""The status page is written for a person: what the store is, and what needs attention
(unreadable files by name, pending reviews, references that no longer hold, a pending
recovery); a broken record file is flagged on the records page too."""

from __future__ import annotations

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


def words(html: str) -> str:
    return " ".join(Markup(html).text.split())


def section(html: str, element_id: str) -> str:
    """From the element to the next heading."""
    return html.split(f'id="{element_id}"', 1)[1].split("<h2>", 1)[0]


def test_a_healthy_store_reads_as_sentences_with_nothing_needing_attention(path):
    store = Store(str(path), actor="cli")
    try:
        store.add("one", kind="fact")
        archived = store.add("two", kind="goal").id
        store.archive(archived)
    finally:
        store.close()
    with served(path) as (client, _):
        page = client.get("/status").text
    text = words(page)
    assert "holds 2 records (1 active, 1 archived, 0 superseded) and 0 sources" in text
    assert "git branch main" in text and "with no remote to sync with" in text
    assert "Nothing: every file reads, nothing awaits review, and every cited line holds." in text
    # Not a dump of the status document's keys.
    for raw in ("exists", "read_only", "by_status", "True", "False", "None"):
        assert raw not in text, raw


def test_a_broken_record_file_is_named_on_status_and_flagged_on_the_records_page(path):
    store = Store(str(path), actor="cli")
    try:
        ids = [store.add(f"record {n}", kind="fact").id for n in range(3)]
    finally:
        store.close()
    broken = next((path / "memory").rglob(f"{ids[1]}.md"))
    broken.write_text("---\nthis: [is not\n---\nbroken front matter\n")
    relative = broken.relative_to(path).as_posix()
    with served(path) as (client, _):
        status = client.get("/status").text
        listing = client.get("/").text
    attention = words(section(status, "attention"))
    assert "1 file cannot be read" in attention and relative in attention
    assert "lantern check" in attention
    flagged = words(listing.split('id="broken"', 1)[1].split("</p>", 1)[0])
    assert "1 record file cannot be read" in flagged and relative in flagged
    assert "lantern check" in flagged
    table = listing.split('id="records"', 1)[1]
    assert {i for i in ids if f"/records/{i}" in table} == {ids[0], ids[2]}


def test_pending_reviews_and_failing_references_are_named_with_where_to_act(path):
    store = Store(str(path), actor="cli")
    try:
        [made] = store.sources.add([SourceInput(b"one\ntwo\n", "n.md", uri="session:n")])
        source = made.manifest.id
        store.add("cites two", kind="fact", source_refs=[f"source:{source}#L2"])
        store.sources.add([SourceInput(b"one\nchanged\n", "n.md", uri="session:n")])
    finally:
        store.close()
    agent = Store(str(path), actor="mcp", review=True)
    try:
        agent.add("an agent's first", kind="fact")
        agent.add("an agent's second", kind="fact")
    finally:
        agent.close()
    with served(path) as (client, _):
        status = client.get("/status").text
    attention = section(status, "attention")
    review = words(attention.split('id="attention-review">', 1)[1].split("</li>", 1)[0])
    assert review.startswith("2 records written by agents await review on 1 review branch")
    assert 'href="/review"' in attention
    verify = words(attention.split('id="attention-verify">', 1)[1].split("</li>", 1)[0])
    assert verify.startswith("1 source reference no longer holds")
    assert 'id="attention-none"' not in status


def test_status_verify_follows_each_new_commit(path):
    """Verify is kept per commit tree: a commit that breaks a reference shows on the next load."""
    store = Store(str(path), actor="cli")
    try:
        [made] = store.sources.add([SourceInput(b"one\ntwo\n", "n.md", uri="session:n")])
        store.add("cites two", kind="fact", source_refs=[f"source:{made.manifest.id}#L2"])
    finally:
        store.close()
    with served(path) as (client, _):
        first = words(client.get("/status").text)
        assert "1 source reference checked; all hold." in first
        assert "1 source reference checked; all hold." in words(client.get("/status").text)
        writer = Store(str(path), actor="cli")
        try:
            writer.sources.add([SourceInput(b"one\nchanged\n", "n.md", uri="session:n")])
        finally:
            writer.close()
        assert "1 source reference checked; 1 do not hold." in words(client.get("/status").text)


def test_status_review_count_follows_each_pending_write_and_decision(path):
    """The review list is kept per state of the refs: a new pending write, or a decision,
    shows on the next load."""
    with served(path) as (client, config):
        assert 'id="attention-review"' not in client.get("/status").text
        agent = Store(str(path), actor="mcp", review=True)
        try:
            first = agent.add("an agent's first", kind="fact").id
            shown = words(client.get("/status").text)
            assert "1 record written by agents awaits review" in shown
            agent.add("an agent's second", kind="fact")
        finally:
            agent.close()
        assert "2 records written by agents await review" in words(client.get("/status").text)
        tip = str(pygit2.Repository(str(path)).references["refs/heads/lantern/review/mcp"].target)
        accepted = client.post(
            "/review/accept",
            data={"csrf": config.csrf, "id": first, "branch": "mcp", "tip": tip},
        )
        assert accepted.status_code == 200  # the redirect to /review, followed
        assert "1 record written by agents awaits review" in words(client.get("/status").text)
