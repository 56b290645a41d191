"""What the serve pages say that a newcomer found unhelpful (issue 36, item 4): a record's
``source_refs`` printed as a Python list, commit ids in the logs that led nowhere, and a
Changes page that opened on an empty "HEAD → working tree"."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from support.serve import Markup, served
from support.stores import git, make_store

from lantern_git.evidence.sources import SourceInput
from lantern_git.store import Store


@pytest.fixture
def path(tmp_path) -> Path:
    return make_store(tmp_path / "store")


def section(html: str, name: str) -> str:
    return html.split(f'id="{name}"', 1)[1].split("</section>", 1)[0]


def cited_store(path: Path) -> tuple[str, str, str]:
    """A source, an active record citing two of its lines, and a pending record (as an agent
    in review mode writes it) citing another: (source id, active id, pending id)."""
    store = Store(str(path), actor="cli")
    source = store.sources.add([SourceInput(b"one\ntwo\nthree\n", "n.md", uri="session:n")])
    source_id = source[0].manifest.id
    active = store.add(
        "cites two lines",
        kind="fact",
        source_refs=[f"source:{source_id}#L1", f"source:{source_id}#L2"],
    ).id
    store.close()
    agent = Store(str(path), actor="mcp", review=True)
    pending = agent.add("pending", kind="fact", source_refs=[f"source:{source_id}#L3"]).id
    agent.close()
    return source_id, active, pending


def test_source_refs_read_as_a_list_of_references_not_as_python(path):
    source_id, active, pending = cited_store(path)
    with served(path) as (client, _):
        for url in ("/review", f"/records/{active}", f"/records/{pending}?pending=1"):
            page = client.get(url)
            assert page.status_code == 200
            assert "['source:" not in page.text and "[&#39;source:" not in page.text, url
        review = Markup(client.get("/review").text).text
        assert re.search(rf"source_refs\s*source:{source_id}@[0-9a-f]+#L3", review)
        # A field's old and new lists on the Changes page, too.
        store = Store(str(path), actor="cli")
        store.update(active, add_source_refs=[f"source:{source_id}#L3"])
        store.close()
        changes = client.get("/changes").text
        assert "['source:" not in changes and "[&#39;source:" not in changes
        old_and_new = Markup(section(changes, "diff")).text
        assert re.search(
            rf"source:{source_id}@\w+#L1, source:{source_id}@\w+#L2 → "
            rf"source:{source_id}@\w+#L1, source:{source_id}@\w+#L2, source:{source_id}@\w+#L3",
            old_and_new,
        ), old_and_new


def test_every_commit_in_the_log_links_to_its_change(path):
    store = Store(str(path), actor="cli")
    first = store.add("first", kind="fact").id
    second = store.add("second", kind="fact").id
    store.archive(first, reason="done")
    log = store.log(10)
    store.close()
    with served(path) as (client, _):
        page = client.get("/changes?from=HEAD~1&to=HEAD").text
        links = re.findall(r'href="/changes\?commit=([0-9a-f]{40})"', section(page, "log"))
        assert links == [entry.commit for entry in log]
        archive, add_second, add_first, init = links
        shown = client.get(f"/changes?commit={archive}")
        diff = Markup(section(shown.text, "diff")).text
        assert f"Commit {archive[:12]}: its change" in diff
        assert f"changed {first}" in diff and "active → archived" in diff
        assert second not in diff
        assert f"added {second}" in Markup(client.get(f"/changes?commit={add_second}").text).text
        # The first commit has no parent: its change holds no record.
        root = client.get(f"/changes?commit={init}")
        assert root.status_code == 200 and "No record changed." in root.text
        # The record page's history links its commits the same way.
        history = section(client.get(f"/records/{first}").text, "history")
        assert f'href="/changes?commit={archive}"' in history
        assert f'href="/changes?commit={add_first}"' in history
        assert client.get("/changes?commit=nonsense").status_code == 400


def test_the_changes_page_opens_on_the_last_commit_when_nothing_is_uncommitted(path):
    store = Store(str(path), actor="cli")
    record = store.add("the last change", kind="fact").id
    head = store.log(1)[0].commit
    store.close()
    with served(path) as (client, _):
        page = client.get("/changes").text
        text = Markup(page).text
        assert "Nothing uncommitted: the working tree matches the last commit" in text
        assert f"Commit {head[:12]}: its change" in text
        assert f"added {record}" in Markup(section(page, "diff")).text
        # With a hand edit waiting, the page opens on it, as before.
        [file] = (path / "memory").rglob(f"{record}.md")
        file.write_text(file.read_text().replace("priority: 50", "priority: 70"))
        edited = client.get("/changes").text
        assert 'id="clean"' not in edited
        diff = Markup(section(edited, "diff")).text
        assert "working tree" in diff and "50 → 70" in diff
        git(path, "checkout", "--", ".")
        # A diff asked for by name is shown even when it is empty.
        asked = client.get("/changes?from=HEAD&to=HEAD").text
        assert 'id="clean"' not in asked and "No record changed." in asked
