"""``lantern serve`` answers reads side by side while a write runs, and every page it answers
is consistent: a real server over real HTTP, readers in threads, accepts as the writes."""

from __future__ import annotations

import re
import threading
from pathlib import Path

from reliability_support import make_store
from serve_support import Markup, serving

from lantern_git.store import Store

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
                    form = f"csrf={csrf}&id={record}&branch=mcp"
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
