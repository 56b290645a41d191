"""List order and filters through the real index, against a reference written out in the test."""

from __future__ import annotations

import itertools
import random
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.stores import git, init_repo

from lantern_git.core.fields import KINDS, STATUSES
from lantern_git.model.query import order_key
from lantern_git.model.record import Record, compute_id
from lantern_git.model.record_file import record_path
from lantern_git.store import Store

NOW = 2_000_000_000
SCOPES = ["global", "user:ana", "user:anabel", "user:bob", "project:x", "project:xy", "host:Zetta"]
SCOPE_FILTERS = [
    (),
    ("user:ana",),
    ("user:*",),
    ("user:ana*",),
    ("project:x",),
    ("project:*", "global"),
    ("host:z*",),
    ("host:Z*",),
    ("nobody:*",),
]
KIND_FILTERS = [(), ("fact",), ("goal", "constraint"), tuple(KINDS)]
STATUS_FILTERS = ["active", "archived", "superseded", "all"]
WORDS = ["apple", "banana", "cherry"]


# ---------------------------------------------------------------------------- the reference


def reference(records: list[Record], query: dict) -> list[str]:
    """The contract, written out plainly: filter, then sort, then limit."""

    def scope_ok(scope: str) -> bool:
        patterns = query.get("scopes", ())
        if not patterns:
            return True
        for pattern in patterns:
            if pattern.endswith("*"):
                if scope.startswith(pattern[:-1]):
                    return True
            elif scope == pattern:
                return True
        return False

    status = query.get("status", "active")
    chosen = [
        r
        for r in records
        if (status == "all" or r.status == status)
        and (not query.get("kinds") or r.kind in query["kinds"])
        and scope_ok(r.scope)
        and r.priority >= (query.get("min_priority") or 0)
        and r.urgency >= (query.get("min_urgency") or 0)
        and (query.get("include_expired") or r.expires_at is None or r.expires_at > NOW)
        and (not query.get("text") or query["text"] in r.content.split())
    ]
    chosen.sort(
        key=lambda r: (
            0 if r.status == "active" else 1,
            -r.priority,
            -r.urgency,
            -r.updated_at,
            r.id,
        )
    )
    limit = query.get("limit")  # 0, like None, is no limit
    return [r.id for r in (chosen[:limit] if limit else chosen)]


# ---------------------------------------------------------------------------- data


@st.composite
def record_sets(draw) -> list[Record]:
    count = draw(st.integers(0, 30))
    records = []
    # Few distinct values, so ties on every sort key happen and the tie-breakers are exercised.
    for n in range(count):
        kind = draw(st.sampled_from(KINDS))
        scope = draw(st.sampled_from(SCOPES))
        content = f"record {n} {draw(st.sampled_from(WORDS))}"
        records.append(
            Record(
                id=compute_id(kind, scope, content),
                kind=kind,
                scope=scope,
                content=content,
                status=draw(st.sampled_from(STATUSES)),
                priority=draw(st.sampled_from([0, 1, 50, 99, 100])),
                urgency=draw(st.sampled_from([0, 1, 50, 100])),
                created_at=1_000_000_000,
                updated_at=draw(st.sampled_from([1_000_000_000, 1_500_000_000, 1_999_999_999])),
                expires_at=draw(st.sampled_from([None, None, NOW - 1, NOW, NOW + 1])),
            )
        )
    return records


queries = st.fixed_dictionaries(
    {},
    optional={
        "scopes": st.sampled_from(SCOPE_FILTERS),
        "kinds": st.sampled_from(KIND_FILTERS),
        "status": st.sampled_from(STATUS_FILTERS),
        "min_priority": st.sampled_from([0, 1, 50, 100]),
        "min_urgency": st.sampled_from([0, 1, 50, 100]),
        "limit": st.integers(0, 8),
        "include_expired": st.booleans(),
        "text": st.sampled_from(WORDS),
    },
)


class TempStore:
    """A fresh store whose records are written as files, as a hand edit or a pull would."""

    def __init__(self, records: list[Record]):
        self._dir = tempfile.TemporaryDirectory()
        self.root = Path(self._dir.name) / "store"
        init_repo(self.root)
        Store.init(str(self.root)).close()
        for record in records:
            path = self.root / record_path(record.id)
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(record.to_markdown())
        self.store = Store.open(str(self.root))

    def list(self, query: dict) -> list[str]:
        return [r.id for r in self.store.list(now=NOW, **query)]

    def close(self) -> None:
        self.store.close()
        self._dir.cleanup()


# ---------------------------------------------------------------------------- properties


@settings(
    max_examples=20,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(record_sets(), st.lists(queries, min_size=1, max_size=10))
def test_list_matches_the_reference_for_any_records_and_filters(records, drawn):
    temp = TempStore(records)
    try:
        for query in [{}, {"status": "all", "include_expired": True}, *drawn]:
            assert temp.list(query) == reference(records, query), query
    finally:
        temp.close()


def test_every_filter_combination_on_one_record_set():
    rng = random.Random(20261202)
    records = []
    for n in range(60):
        kind, scope = rng.choice(KINDS), rng.choice(SCOPES)
        content = f"record {n} {rng.choice(WORDS)}"
        records.append(
            Record(
                id=compute_id(kind, scope, content),
                kind=kind,
                scope=scope,
                content=content,
                status=rng.choice(STATUSES),
                priority=rng.choice([0, 50, 100]),
                urgency=rng.choice([0, 100]),
                created_at=1,
                updated_at=rng.choice([1, 2]),
                expires_at=rng.choice([None, NOW - 1, NOW + 1]),
            )
        )
    temp = TempStore(records)
    try:
        # Every scope, kind and status filter together; the numeric filters, limit and expiry
        # cycle through all 16 of their combinations across those, so each pairing occurs.
        others = list(itertools.product([None, 50], [None, 100], [None, 3], [False, True]))
        combos = itertools.product(SCOPE_FILTERS, KIND_FILTERS, STATUS_FILTERS)
        checked = 0
        for n, (scopes, kinds, status) in enumerate(combos):
            min_p, min_u, limit, expired = others[n % len(others)]
            query = {
                "scopes": scopes,
                "kinds": kinds,
                "status": status,
                "min_priority": min_p,
                "min_urgency": min_u,
                "limit": limit,
                "include_expired": expired,
            }
            assert temp.list(query) == reference(records, query), query
            checked += 1
        assert checked == len(SCOPE_FILTERS) * len(KIND_FILTERS) * len(STATUS_FILTERS)
    finally:
        temp.close()


def test_order_follows_changes_made_through_the_library(store, store_path):
    """Writes keep the index in step: after each change the order is recomputed."""
    a = store.add("a", kind="fact", priority=10)
    b = store.add("b", kind="fact", priority=20)
    c = store.add("c", kind="fact", priority=20, urgency=5)
    assert [r.id for r in store.list()] == [c.id, b.id, a.id]
    store.update(a.id, priority=90)
    assert [r.id for r in store.list()] == [a.id, c.id, b.id]
    store.archive(c.id)
    assert [r.id for r in store.list()] == [a.id, b.id]
    assert [r.id for r in store.list(status="all")] == [a.id, b.id, c.id]
    new = store.supersede(b.id, "b2")
    # The replacement inherits priority 20 and is active; the superseded one sorts after.
    assert [r.id for r in store.list(status="all")] == [a.id, new.id, *_inactive(store, b, c)]
    assert git(store_path, "status", "--porcelain") == ""


def _inactive(store, *records) -> list[str]:
    current = [store.get(r.id) for r in records]
    current.sort(key=lambda r: (-r.priority, -r.urgency, -r.updated_at, r.id))
    return [r.id for r in current]


def _ordered_ids(count: int) -> list[tuple[str, str]]:
    """``count`` (content, id) pairs whose ids, hence index order, ascend."""
    found: list[tuple[str, str]] = []
    n = 0
    while len(found) < count:
        content = f"ordered {n}"
        record_id = compute_id("fact", "global", content)
        if not found or record_id > found[-1][1]:
            found.append((content, record_id))
        n += 1
    return found


def test_expired_records_are_hidden_whatever_their_index_position():
    """An expired record that is the first match of the other filters is still hidden.

    Whoosh's AndNot matcher does not skip its negative side forward to the first positive
    match, so excluding expired records with AndNot let exactly that record through.
    """
    (x_content, _), (y_content, _), (z_content, _) = _ordered_ids(3)
    x = Record.new(kind="fact", content=x_content, urgency=0, expires_at=NOW - 5, now=1)
    y = Record.new(kind="fact", content=y_content, urgency=100, expires_at=NOW, now=1)
    z = Record.new(kind="fact", content=z_content, urgency=100, expires_at=NOW + 5, now=1)
    temp = TempStore([x, y, z])
    try:
        assert temp.list({"min_urgency": 50}) == [z.id]
        assert temp.list({"min_urgency": 50, "include_expired": True}) == [y.id, z.id]
        assert temp.list({}) == [z.id]
    finally:
        temp.close()


# ---------------------------------------------------------------------------- several segments


def test_list_order_is_whoosh_sort_over_segments_with_deleted_documents(tmp_path):
    """The list path picks its page from the ``order`` column itself; it returns the very
    documents, in the very order, that Whoosh's own sort on (order, id) returns, for an index of
    several segments with deleted documents, ties on ``order`` across segments, a repeated id
    (two files, one record), masks, and every limit."""
    from whoosh import index as whoosh_index
    from whoosh import query as Q
    from whoosh import sorting

    from lantern_git.index import search as search_index

    rng = random.Random(20261203)
    ix = whoosh_index.create_in(str(tmp_path), search_index._schema())
    paths = []
    for batch in range(4):
        records = []
        for n in range(24):
            kind = rng.choice(KINDS)
            content = f"batch {batch} record {n} {rng.choice(WORDS)}"
            records.append(
                Record(
                    id=compute_id(kind, "global", content),
                    kind=kind,
                    scope=rng.choice(SCOPES),
                    content=content,
                    status=rng.choice(STATUSES),
                    priority=rng.choice([0, 50]),
                    urgency=rng.choice([0, 100]),
                    created_at=1,
                    updated_at=rng.choice([1, 2]),
                )
            )
        records.append(records[-1])  # the same record in two files: (order, id) ties
        writer = ix.writer()
        for n, record in enumerate(records):
            writer.add_document(**search_index._document(f"m/{batch}/{n}.md", record, "digest"))
            paths.append(f"m/{batch}/{n}.md")
        if batch:
            for path in rng.sample(paths[: batch * 25], 6):
                writer.delete_by_term("path", path)
        writer.commit(merge=False)

    facet = sorting.MultiFacet([sorting.FieldFacet("order"), sorting.FieldFacet("id")])
    with ix.searcher() as searcher:
        assert len(list(searcher.reader().leaf_readers())) == 4
        assert searcher.reader().has_deletions()
        total = searcher.doc_count_all()
        orders = _orders(searcher)
        id_columns = search_index._id_columns(searcher)
        queries = [
            Q.Every(),
            Q.Term("kind", "fact"),
            Q.Prefix("scope", "user:"),
            Q.And([Q.Term("status", "active"), Q.Term("content", "appl")]),
            Q.Term("scope", "nobody"),
        ]
        masks = [None, set(), set(rng.sample(range(total), 30)), set(range(total))]
        checked = 0
        for query in queries:
            for mask in masks:
                for end in [None, 1, 2, 3, 7, 20, 50, total, total + 5]:
                    whoosh = searcher.search(query, sortedby=facet, limit=end, mask=mask)
                    expected = [hit.docnum for hit in whoosh]
                    docs = [d for d in searcher.docs_for_query(query) if not mask or d not in mask]
                    got = search_index._first_in_order(docs, orders, end, id_columns)
                    assert got == expected, (query, mask, end)
                    checked += bool(expected)
        assert checked > 100


def _orders(searcher):
    from array import array

    from lantern_git.index import search as search_index

    orders = array("Q")
    for reader in search_index._leaves(searcher):
        orders.extend(search_index._order_column(reader))
    return orders


def test_minimums_read_from_the_order_column_select_the_records_that_meet_them(tmp_path):
    """The minimum priority and urgency are tested on the ``order`` column (the index holds
    no priority or urgency terms); over segments with deleted documents and every priority
    and urgency from 0 to 100, they select exactly the live records whose priority and urgency
    meet them, alone, together and beside a term filter."""
    from whoosh import index as whoosh_index

    from lantern_git.index import search as search_index
    from lantern_git.model.query import RecordQuery

    rng = random.Random(20261204)
    ix = whoosh_index.create_in(str(tmp_path), search_index._schema())
    paths = []
    added: list[Record] = []
    deleted: set[str] = set()
    for batch in range(3):
        writer = ix.writer()
        for n in range(101):
            kind = rng.choice(KINDS)
            content = f"batch {batch} record {n}"
            record = Record(
                id=compute_id(kind, "global", content),
                kind=kind,
                scope="global",
                content=content,
                status=rng.choice(STATUSES),
                priority=n if batch != 1 else rng.randrange(101),
                urgency=100 - n if batch != 1 else rng.randrange(101),
                created_at=1,
                updated_at=rng.choice([1, 2, 10**9]),
            )
            paths.append(f"m/{batch}/{n}.md")
            added.append(record)
            writer.add_document(**search_index._document(paths[-1], record, "digest"))
        if batch:
            for path in rng.sample(paths[: batch * 101], 20):
                writer.delete_by_term("path", path)
                deleted.add(path)
        writer.commit(merge=False)

    def orders_of(searcher):
        return _orders(searcher)

    minimums = [None, 0, 1, 2, 49, 50, 51, 99, 100, 101]
    with ix.searcher() as searcher:
        assert searcher.reader().has_deletions()
        checked = 0
        for min_p, min_u, kinds in itertools.product(minimums, minimums, [(), ("fact",)]):
            expected = [
                docnum
                for docnum, (path, record) in enumerate(zip(paths, added))
                if path not in deleted
                and (not kinds or record.kind in kinds)
                and (min_p is None or record.priority >= min_p)
                and (min_u is None or record.urgency >= min_u)
            ]
            query = RecordQuery(kinds=kinds, min_priority=min_p, min_urgency=min_u, status="all")
            got = search_index._selected(searcher, query, None, orders_of)
            assert got == expected, (min_p, min_u, kinds)
            checked += bool(expected) and len(expected) < searcher.doc_count()
        assert checked > 100


def test_list_pages_over_segments_with_deleted_documents(store, store_path):
    """Through the library: records added one by one (a segment each), some changed (the old
    document deleted), listed page by page with ties on every sort key."""
    added = [
        store.add(f"record {n}", kind="fact", priority=(n % 3) * 10, urgency=(n % 2) * 5)
        for n in range(14)
    ]
    # Changed by hand in their content only: a new document of the same order value, the old
    # one deleted in its segment (an update through lantern would move updated_at, and an
    # update to the same values writes nothing).
    for record in added[::4]:
        path = store_path / record_path(record.id)
        path.write_text(path.read_text().replace(f"\n{record.content}\n", f"\n{record.content}!\n"))
    store.refresh()
    store.archive(added[5].id)
    for record in added[::4]:
        changed = store.get(record.id)
        assert changed.content == record.content + "!"
        assert order_key(changed) == order_key(record)
    with store.workspace.index._open().searcher() as searcher:
        assert len(list(searcher.reader().leaf_readers())) > 1
        assert searcher.reader().has_deletions()
    # Every record as its file holds it (not as the index lists it), ordered by the reference.
    records = [store.get(r.id) for r in added]
    for status in ["active", "archived", "all"]:
        expected = reference(records, {"status": status})
        assert len(expected) == {"active": 13, "archived": 1, "all": 14}[status]
        assert [r.id for r in store.list(status=status)] == expected
        by_id = {r.id: r.content for r in records}
        assert [r.content for r in store.list(status=status)] == [by_id[i] for i in expected]
        for limit in [None, 1, 2, 5]:
            for offset in range(len(expected) + 2):
                end = None if limit is None else offset + limit
                got = store.list(status=status, offset=offset, limit=limit)
                assert [r.id for r in got] == expected[offset:end], (status, limit, offset)
