"""``lantern serve`` answers reads side by side while a write runs, and every page it answers
is consistent: a real server over real HTTP, readers in threads, accepts as the writes."""

from __future__ import annotations

import re
import threading
from pathlib import Path

import pygit2
from support.serve import Markup, serving
from support.stores import make_store

from lantern_git.store import Store

REVIEW_REF = "refs/heads/lantern/review/mcp"

COMMITTED = 10
PENDING = 12
# Every thread here ends within this bound (a hang fails the test instead of stalling it).
JOIN_TIMEOUT = 240


def listed(page: str) -> tuple[int, int]:
    """(the count the records page states, the rows it lists)."""
    stated = re.search(r"(\d+) records?", Markup(page.split('id="count"', 1)[1]).text)
    assert stated, page[:300]
    table = page.split('id="records"', 1)[1].split("</table>", 1)[0]
    return int(stated.group(1)), len(re.findall(r'href="/records/[0-9a-f]{16}"', table))


def held(page: str) -> int:
    """The records the status page says the store holds, checked against its own breakdown."""
    text = " ".join(Markup(page).text.split())
    found = re.search(
        r"holds (\d+) records? \((\d+) active, (\d+) archived, (\d+) superseded\)", text
    )
    assert found, text[:400]
    total, *parts = (int(n) for n in found.groups())
    assert total == sum(parts)
    return total


def test_reads_beside_a_run_of_accepts_see_the_store_before_or_after_each_never_between(
    tmp_path: Path,
):
    path = make_store(tmp_path / "store")
    store = Store(str(path), actor="cli")
    try:
        for n in range(COMMITTED):
            store.add(f"committed {n}", kind="fact")
    finally:
        store.close()
    agent = Store(str(path), actor="mcp", review=True)
    try:
        pending = [agent.add(f"pending {n}", kind="fact").id for n in range(PENDING)]
    finally:
        agent.close()
    with serving(path) as server:
        csrf = server.csrf()
        errors: list[str] = []
        seen: dict[str, list[int]] = {}
        done = threading.Event()

        def read(name: str, target: str) -> None:
            counts = seen.setdefault(name, [])
            try:
                while True:
                    # The last read starts after the last accept has answered.
                    last = done.is_set() and len(counts) >= 3
                    status, page = server.request("GET", target)
                    if status != 200:
                        errors.append(f"{target}: {status}")
                        return
                    if target == "/status":
                        counts.append(held(page))
                    else:
                        stated, rows = listed(page)
                        if stated != rows:
                            errors.append(f"{target}: states {stated}, lists {rows}")
                        counts.append(stated)
                    if last:
                        return
            except Exception as err:  # the thread's failure, reported by the test
                errors.append(f"{target}: {err!r}")

        def write() -> None:
            try:
                for record in pending:
                    # The tip the review page shows now: each accept moves it.
                    tip = pygit2.Repository(str(path)).references[REVIEW_REF].target
                    form = f"csrf={csrf}&id={record}&branch=mcp&tip={tip}"
                    status, page = server.request("POST", "/review/accept", body=form)
                    if status != 303:
                        errors.append(f"accept {record}: {status} {page[:200]}")
            finally:
                done.set()

        readers = [
            threading.Thread(target=read, args=(f"{target} #{n}", target))
            for n in range(2)
            for target in ("/?limit=0", "/status")
        ]
        writer = threading.Thread(target=write)
        for thread in [*readers, writer]:
            thread.start()
        for thread in [writer, *readers]:
            thread.join(JOIN_TIMEOUT)
            assert not thread.is_alive(), "a request did not finish in time"
        assert errors == []
        for name, counts in seen.items():
            # Each reader saw the store grow one accept at a time, never shrink or jump
            # outside what was written.
            assert counts == sorted(counts), (name, counts)
            assert counts[0] >= COMMITTED and counts[-1] == COMMITTED + PENDING, (name, counts)
        # The readers saw the store between accepts, not only before and after all of them.
        assert any(COMMITTED < c < COMMITTED + PENDING for counts in seen.values() for c in counts)


def test_every_page_of_the_list_with_pending_changes_is_a_slice_of_the_whole(tmp_path: Path):
    """The pending list reads only as much of the store's list as a page needs; each page must
    still be the same slice of the whole list a page of everything gives."""
    from lantern_git.model.query import RecordQuery

    path = make_store(tmp_path / "store")
    store = Store(str(path), actor="cli")
    try:
        ids = [store.add(f"committed {n}", kind="fact", priority=n * 7 % 100).id for n in range(12)]
    finally:
        store.close()
    agent = Store(str(path), actor="mcp", review=True)
    try:
        # Pending versions that take the top records down, out of the list, and to the top,
        # and new ones at the bottom: a page must reach past its end in the store's list.
        agent.update(ids[11], priority=0)
        agent.archive(ids[10])
        agent.update(ids[0], priority=100)
        for n in range(3):
            agent.add(f"pending {n}", kind="fact", priority=1 + n)
    finally:
        agent.close()
    reader = Store(str(path), actor="cli")
    try:
        whole = [r.id for r in reader.list(RecordQuery(limit=None), include_pending=True)]
        assert len(whole) == 12 - 1 + 3  # the archived one leaves the active list
        for limit in (1, 2, 3, 5):
            for offset in range(0, len(whole) + 2):
                page = reader.list(RecordQuery(limit=limit, offset=offset), include_pending=True)
                assert [r.id for r in page] == whole[offset : offset + limit], (limit, offset)
    finally:
        reader.close()
