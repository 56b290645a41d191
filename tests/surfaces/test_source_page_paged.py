"""A source's page pages the records citing it (issue 32, speed): a source cited by a
thousand records shows fifty at a time, with a next link, instead of reading and checking
every one on each load; each page marks the lines its own records cite."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from support.serve import Markup, params, served
from support.stores import make_store

from lantern_git.evidence.sources import SourceInput
from lantern_git.store import Store
from lantern_git.web.views import source


@pytest.fixture
def path(tmp_path) -> Path:
    return make_store(tmp_path / "store")


@pytest.fixture
def store(path) -> Iterator[Store]:
    opened = Store(str(path), actor="cli")
    try:
        yield opened
    finally:
        opened.close()


def cited(store: Store) -> tuple[str, dict[str, int]]:
    """A source of five lines and five records, the n-th citing line n: (source id, line of
    each record)."""
    body = b"".join(f"line {n}\n".encode() for n in range(1, 6))
    source_id = store.sources.add([SourceInput(body, "n.md", uri="session:n")])[0].manifest.id
    lines = {}
    for n in range(1, 6):
        ref = f"source:{source_id}#L{n}"
        lines[store.add(f"cites line {n}", kind="fact", source_refs=[ref]).id] = n
    return source_id, lines


def test_the_citing_records_come_a_page_at_a_time_each_marking_its_own_lines(store):
    source_id, lines = cited(store)
    pages = [
        source.data(store, params(f"limit=2&offset={offset}", source_id=source_id))
        for offset in (0, 2, 4)
    ]
    assert [len(p.citations) for p in pages] == [2, 2, 1]
    assert [p.more for p in pages] == [True, True, False]
    seen = [c.record.id for p in pages for c in p.citations]
    assert sorted(seen) == sorted(lines) and len(set(seen)) == 5
    for page in pages:
        assert page.cited == {lines[c.record.id]: [c.record.id] for c in page.citations}
    # The whole list when asked for with limit 0, as on every page.
    everything = source.data(store, params("limit=0", source_id=source_id))
    assert len(everything.citations) == 5 and everything.more is False


def test_the_page_links_to_the_next_and_previous_citing_records(path):
    store = Store(str(path), actor="cli")
    source_id, _ = cited(store)
    store.close()
    with served(path) as (client, _):
        first = client.get(f"/sources/{source_id}?limit=2").text
        links = Markup(first)
        nav = [a.get("href") for tag, a in links.elements if tag == "a"]
        assert "?limit=2&offset=2" in nav or "?offset=2&limit=2" in nav
        assert "Records 1–2" in links.text
        last = Markup(client.get(f"/sources/{source_id}?limit=2&offset=4").text)
        assert "Records 5–5" in last.text and "next →" not in last.text
        assert "← previous" in last.text
        # A page of one source's records, default size: no paging line at all.
        plain = client.get(f"/sources/{source_id}").text
        assert 'id="citing-pages"' not in plain
        assert len(re.findall(r'<li><a href="/records/', plain)) == 5


def test_the_citing_records_checks_are_check_refs_without_the_cited_text(store):
    # The page marks the cited lines in the version it shows, so its checks leave out the
    # text each reference cites (one record's own page shows it: check_refs).
    _, lines = cited(store)
    records = [store.get(record_id) for record_id in lines]
    together = store.sources.check_refs_of(records)
    for record, checks in zip(records, together, strict=True):
        alone = store.sources.check_refs(record)
        assert [ref for ref, _ in checks] == [ref for ref, _ in alone] == list(record.source_refs)
        for (_, found), (_, with_text) in zip(checks, alone, strict=True):
            n = lines[record.id]
            assert with_text.text == f"line {n}\n" and with_text.lines == (n, n)
            assert found.text is None and found.lines == (n, n)
            assert (found.problem, found.detail) == (with_text.problem, with_text.detail)
