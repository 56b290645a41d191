"""Entities at scale: ``entity show`` and an ``--entity`` filtered list in the library, warm, and
what the entity part adds to an index rebuild.

    python benchmarks/entities.py                          # 10,000 records, 100 entities
    python benchmarks/entities.py --records 100000 --entities 1000   # issue 34's targets

A store of N records (imported in one commit): one in five names an entity in ``entities``,
one in five links one as ``[[name]]`` or ``[[alias]]``, the rest name none; M entity files,
each with a name and two aliases. Then, in this process, warm: ``store.entity_show(key)`` (its
records' first page of 50, their count, its chunks) and ``store.list`` filtered by an entity
(a page of 50), each over 40 keys (median, p95); and the record index rebuilt from the files
(``store.workspace.index.rebuild()``) with the record mentions indexed (this checkout) against
the same rebuild with every record's mentions left out (the index as it was before entities):
the share the entity part adds. Targets (issue 34): at 100k records and 1k entities, show and
the filtered list <= 50 ms warm, the rebuild <= 20 % more.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path


def build(root: Path, records: int, entities: int) -> None:
    import pygit2

    from lantern_git.store import Store

    pygit2.init_repository(str(root), initial_head="main")
    store = Store.init(str(root), author="Bench <bench@lantern.invalid>")
    lines = []
    for n in range(entities):
        lines.append(json.dumps({"entity": {
            "key": f"person:p{n}", "name": f"Person Number{n}",
            "aliases": [f"P. Number{n}", f"pn{n}"], "created_at": 1, "updated_at": 1,
        }}))  # fmt: skip
    for n in range(records):
        who = n % entities
        record: dict = {"kind": "fact", "content": f"Fact {n} about the project and its work."}
        if n % 5 == 0:
            record["entities"] = [f"person:p{who}"]
        elif n % 5 == 1:
            record["content"] += f" Talked with [[P. Number{who}]]."
        lines.append(json.dumps(record))
    store.import_records(lines)
    store.close()


def timed(call, rounds: int) -> tuple[float, float]:
    times = []
    for _ in range(rounds):
        started = time.perf_counter()
        call()
        times.append((time.perf_counter() - started) * 1000)
    times.sort()
    return statistics.median(times), times[int(len(times) * 0.95) - 1]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--records", type=int, default=10_000)
    parser.add_argument("--entities", type=int, default=100)
    args = parser.parse_args()

    from lantern_git.core.paging import Page
    from lantern_git.index import search
    from lantern_git.model.query import RecordQuery
    from lantern_git.store import Store

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "store"
        started = time.perf_counter()
        build(root, args.records, args.entities)
        print(f"built {args.records} records, {args.entities} entities "
              f"in {time.perf_counter() - started:.1f} s")  # fmt: skip
        store = Store.open(str(root))
        store.list(RecordQuery(limit=1))  # the index, built
        keys = [f"person:p{n * args.entities // 40}" for n in range(40)]
        for key in keys:  # warm
            store.entity_show(key, RecordQuery(limit=50))
        position = iter(range(10**9))

        def show() -> None:
            store.entity_show(keys[next(position) % 40], RecordQuery(limit=50))

        def listed() -> None:
            labels = store.entities.labels(keys[next(position) % 40])
            store.list(RecordQuery.from_options(mentions=labels, page=Page(50, 0)))

        median, p95 = timed(show, 80)
        print(f"entity show        median {median:7.1f} ms  p95 {p95:7.1f} ms")
        median, p95 = timed(listed, 80)
        print(f"--entity list      median {median:7.1f} ms  p95 {p95:7.1f} ms")

        def rebuild() -> float:
            started = time.perf_counter()
            store.workspace.index.rebuild()
            return time.perf_counter() - started

        with_mentions = statistics.median(rebuild() for _ in range(3))
        original = search.mention_terms
        search.mention_terms = lambda entities, content: []  # the index as before entities
        try:
            without = statistics.median(rebuild() for _ in range(3))
        finally:
            search.mention_terms = original
        share = (with_mentions / without - 1) * 100
        print(f"index rebuild      {with_mentions:.2f} s with mentions, {without:.2f} s "
              f"without: {share:+.1f} %")  # fmt: skip
        store.close()


if __name__ == "__main__":
    sys.exit(main())
