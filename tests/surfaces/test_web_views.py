"""Each page of ``lantern serve`` computes what it shows without HTTP: its view's ``data`` is
called here on a real store (a git repository in a temp dir, the real index) with parameters
built as a request would carry them, and the context it returns is checked field by field."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from support.serve import params
from support.stores import make_store

from lantern_git.errors import InvalidInput, NotFound
from lantern_git.evidence.sources import SourceInput
from lantern_git.store import Store
from lantern_git.web.views import changes, record, records, review, source, sources, status


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


def ingest(store: Store, body: bytes, name: str = "notes.md") -> str:
    added = store.sources.add([SourceInput(body, name, uri=f"session:{name}")])
    return added[0].manifest.id


def test_records_data_lists_a_page_with_the_total_and_searches_by_text(store):
    first = store.add("tabs over spaces", kind="preference").id
    second = store.add("ship on fridays", kind="goal").id
    store.archive(store.add("an old fact", kind="fact").id)

    page = records.data(store, params("status=active&limit=1"))
    assert page.total == 2 and len(page.hits) == 1 and page.limit == 1 and page.offset == 0
    assert page.hits[0].record.id in {first, second} and page.hits[0].pending is False
    assert page.params["limit"] == 1 and page.params["status"] == "active"
    assert page.searching is False and page.broken == []
    assert "keyword" in page.modes and "list" not in page.modes

    # The default page size is left out of the links' query.
    assert records.data(store, params()).params["limit"] is None

    found = records.data(store, params("q=fridays&mode=keyword"))
    assert found.searching is True and found.total is None
    assert [hit.record.id for hit in found.hits] == [second]
    assert found.hits[0].score is not None

    with pytest.raises(InvalidInput, match="mode: must be one of"):
        records.data(store, params("mode=psychic"))


def test_record_data_names_the_records_that_replaced_it_and_its_evidence(store):
    source_id = ingest(store, b"one\ntwo\nthree\n")
    old = store.add("uses spaces", kind="preference", source_refs=[f"source:{source_id}#L2"]).id
    new = store.supersede(old, "uses tabs", reason="changed her mind").id

    page = record.data(store, params(record_id=old))
    assert page.record.id == old and page.record.status == "superseded"
    assert page.replaced_by == [new]
    assert [entry.op for entry in page.history] == ["supersede", "add"]
    assert page.is_pending is False and page.waiting == [] and page.at is None
    [evidence] = page.evidence
    # The reference is pinned to the version it was written against.
    assert evidence.ref.startswith(f"source:{source_id}@") and evidence.ref.endswith("#L2")
    assert (evidence.source_id, evidence.problem) == (source_id, "ok") and evidence.blob
    assert evidence.lines == (2, 2) and evidence.text == "two\n"

    # The newer record was replaced by nothing.
    assert record.data(store, params(record_id=new)).replaced_by == []
    with pytest.raises(NotFound):
        record.data(store, params(record_id="0123456789abcdef"))


def test_record_data_of_a_pending_record_says_where_it_waits(path, store):
    agent = Store(str(path), actor="mcp", review=True)
    try:
        pending = agent.add("an agent's guess", kind="hypothesis").id
    finally:
        agent.close()
    page = record.data(store, params("pending=1", record_id=pending))
    assert page.is_pending is True and page.history == [] and page.replaced_by == []
    [(branch, decided_with)] = page.waiting
    assert branch.name.endswith("mcp") and decided_with == [pending]


def test_sources_data_pages_the_sources_and_says_whether_more_follow(store):
    ids = {ingest(store, f"body {n}\n".encode(), f"note{n}.md") for n in range(3)}
    first = sources.data(store, params("limit=2"))
    assert len(first.manifests) == 2 and first.more is True and first.limit == 2
    rest = sources.data(store, params("limit=2&offset=2"))
    assert len(rest.manifests) == 1 and rest.more is False and rest.offset == 2
    assert {m.id for m in first.manifests + rest.manifests} == ids
    with pytest.raises(InvalidInput, match="limit: expected a whole number"):
        sources.data(store, params("limit=two"))


def test_source_data_marks_each_cited_line_with_the_records_citing_it(store):
    source_id = ingest(store, b"alpha\nbeta\ngamma\ndelta\n")
    both = store.add("beta and gamma", kind="fact", source_refs=[f"source:{source_id}#L2-L3"]).id
    one = store.add("gamma alone", kind="fact", source_refs=[f"source:{source_id}#L3"]).id
    store.add("cites nothing here", kind="fact", source_refs=["session:2026-12-03"])

    page = source.data(store, params(source_id=source_id))
    assert page.source_id == source_id
    assert page.lines == ["alpha", "beta", "gamma", "delta"]
    # Each line's citing records come in list order; which of the two is first is not the point.
    assert {line: sorted(ids) for line, ids in page.cited.items()} == {
        2: [both],
        3: sorted([both, one]),
    }
    assert {c.record.id: c.shown for c in page.citations} == {both: (2, 3), one: (3, 3)}
    assert len(page.versions) == 1


def test_review_data_lists_pending_records_with_evidence_and_the_last_decision(path, store):
    source_id = ingest(store, b"one\ntwo\n")
    agent = Store(str(path), actor="mcp", review=True)
    try:
        pending = agent.add("cites two", kind="fact", source_refs=[f"source:{source_id}#L2"]).id
    finally:
        agent.close()

    page = review.data(store, params())
    assert [p.id for p in page.review.records] == [pending]
    assert [(e.source_id, e.problem, e.lines) for e in page.evidence[pending]] == [
        (source_id, "ok", (2, 2))
    ]
    assert page.notice is None and page.error is None

    done = review.data(store, params(f"done=accept&records={pending}&commit={'c' * 40}"))
    assert done.notice == f"accepted {pending} in commit {'c' * 12}"
    assert review.data(store, params("done=drop")).notice is None


def test_changes_data_shows_the_last_commit_when_nothing_is_uncommitted(store):
    first = store.add("first", kind="fact").id
    second = store.add("second", kind="fact").id
    log = store.log(10, 0)

    plain = changes.data(store, params())
    assert plain.clean is True and plain.commit == log[0].commit
    assert [r.id for r in plain.diff.added] == [second]
    assert [entry.commit for entry in plain.log] == [entry.commit for entry in log]

    earlier = changes.data(store, params(f"commit={log[1].commit}&limit=1"))
    assert earlier.clean is False and earlier.commit == log[1].commit
    assert [r.id for r in earlier.diff.added] == [first]
    assert len(earlier.log) == 1 and earlier.limit == 1


def test_status_data_counts_the_store_and_keeps_costly_answers_until_a_commit(store):
    store.add("one", kind="fact")
    memo = status.StatusMemo()
    page = status.data(store, params(), memo=memo)
    assert page.info["records"] == 1 and page.broken == [] and page.recovery is False
    assert page.review.records == []
    # Asked again at the same commit: the kept report; after a commit, a fresh one.
    assert status.data(store, params(), memo=memo).report is page.report
    store.add("two", kind="fact")
    again = status.data(store, params(), memo=memo)
    assert again.report is not page.report and again.info["records"] == 2
