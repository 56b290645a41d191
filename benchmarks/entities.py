"""Entities at scale: ``entity show``, an ``--entity`` filtered list and ``entity list`` in the
library, warm, and what the entity part adds to an index rebuild.

    python benchmarks/entities.py                          # 10,000 records, 100 entities
    python benchmarks/entities.py --records 100000 --entities 1000   # issue 34's targets

A store of N records (imported in one commit): one in five names an entity in ``entities``,
one in five links one as ``[[name]]`` or ``[[alias]]``, the rest name none; M entity files,
each with a name and two aliases; and N/500 sources of 100 lines, one line in four holding an
entity's alias as a phrase, one in four only its last word (a near miss). Then, in this process,
the store opened as a long-running caller opens it (``Store.open(watch=True)``: the MCP server's
way, whose freshness check reads the watch's events, not the disk), warm: ``entity_show(key)``
(its records' first page of 50, their count, its chunks), ``store.list`` filtered by an entity
(a page of 50), each over 40 keys (median, p95), and ``entity_list()`` once (every key's counts).
Then the index rebuild (``store.rebuild_index()``, the record and chunk indexes, and the entity
index where there is one) against the same rebuild with the entity part left out: every record's
mentions not indexed and no entity index built (the indexes as they were before entities).
Targets (issue 34): at 100k records and 1k entities, show and the filtered list <= 50 ms warm,
the rebuild <= 20 % more. It runs against whichever lantern_git is imported, so a checkout
before the entity index is measured with ``PYTHONPATH=<that checkout>``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

LINES_PER_SOURCE = 100


def build(root: Path, records: int, entities: int) -> None:
    import pygit2

    from lantern_git.evidence.sources import SourceInput
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
        who = (n // 5) % entities
        record: dict[str, Any] = {
            "kind": "fact", "content": f"Fact {n} about the project and its work."
        }  # fmt: skip
        if n % 5 == 0:
            record["entities"] = [f"person:p{who}"]
        elif n % 5 == 1:
            record["content"] += f" Talked with [[P. Number{who}]]."
        lines.append(json.dumps(record))
    store.import_records(lines)
    inputs = []
    for s in range(max(1, records // 500)):
        text = []
        for line in range(LINES_PER_SOURCE):
            who = ((s * LINES_PER_SOURCE + line) // 4) % entities
            if line % 4 == 0:
                text.append(f"Line {line}: met P. Number{who} about the plan.")
            elif line % 4 == 1:
                text.append(f"Line {line}: Number{(who + 7) % entities} came up, a near miss.")
            else:
                text.append(f"Line {line}: notes on the work of source {s}.")
        inputs.append(SourceInput(("\n".join(text) + "\n").encode(), name=f"s{s}.md"))
    store.sources.add(inputs)
    store.close()


def timed(call: Callable[[], object], rounds: int) -> tuple[float, float]:
    times = []
    for _ in range(rounds):
        started = time.perf_counter()
        call()
        times.append((time.perf_counter() - started) * 1000)
    times.sort()
    return statistics.median(times), times[int(len(times) * 0.95) - 1]


def filtered_list(store: Any, key: str) -> object:
    """``lantern memory list --entity KEY --limit 50`` as the CLI calls it."""
    from lantern_git.core.paging import Page
    from lantern_git.model.query import RecordQuery

    if "entity" in RecordQuery.__dataclass_fields__:
        return store.list(RecordQuery(entity=key, limit=50))
    labels = store.entities.labels(key)  # before the entity index: the labels, from the file
    return store.list(RecordQuery.from_options(mentions=labels, page=Page(50, 0)))


def rebuild(store: Any, entity_part: bool) -> tuple[float, float]:
    """(wall seconds, CPU seconds of this process and its builders) of one ``rebuild_index``;
    without ``entity_part``, no mentions and no entity index (the indexes as they were before
    entities). The CPU seconds hardly move with the machine's load, the wall seconds do."""
    import resource

    from lantern_git.index import search

    workspace = store.workspace
    original_terms = search.mention_terms
    original_entities = getattr(type(workspace), "entity_index", None)
    if not entity_part:
        search.mention_terms = lambda entities, content: []
        if original_entities is not None:
            saved = type(workspace).rebuild_index

            def without(self: Any) -> Any:  # the rebuild as it was: records, then chunks
                self.recover()
                report = self.index.rebuild()
                self.chunks.rebuild()
                return report

            type(workspace).rebuild_index = without  # type: ignore[method-assign]

    def cpu() -> float:
        own, children = (
            resource.getrusage(who) for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)
        )
        return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime

    try:
        started, used = time.perf_counter(), cpu()
        store.rebuild_index()
        return time.perf_counter() - started, cpu() - used
    finally:
        search.mention_terms = original_terms
        if not entity_part and original_entities is not None:
            type(workspace).rebuild_index = saved  # type: ignore[method-assign]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--records", type=int, default=10_000)
    parser.add_argument("--entities", type=int, default=100)
    parser.add_argument("--store", help="keep the store here (built when missing)")
    parser.add_argument("--reads-only", action="store_true", help="no rebuilds timed")
    parser.add_argument("--rounds", type=int, default=3, help="rebuilds of each kind")
    args = parser.parse_args()

    import lantern_git
    from lantern_git.model.query import RecordQuery
    from lantern_git.store import Store

    print(f"lantern_git from {os.path.dirname(lantern_git.__file__)}")
    print("uptime:", subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip())
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(args.store) if args.store else Path(tmp) / "store"
        if not root.exists():
            started = time.perf_counter()
            build(root, args.records, args.entities)
            print(f"built {args.records} records, {args.entities} entities "
                  f"in {time.perf_counter() - started:.1f} s")  # fmt: skip
        store = Store.open(str(root), watch=True)
        started = time.perf_counter()
        if not args.reads_only:
            store.rebuild_index()
        store.list(RecordQuery(limit=1))
        store.entity_show("person:p0")
        print(f"first rebuild or check {time.perf_counter() - started:.1f} s")
        keys = [f"person:p{n * args.entities // 40}" for n in range(40)]
        for key in keys:  # warm
            store.entity_show(key, RecordQuery(limit=50))
            filtered_list(store, key)
        position = iter(range(10**9))

        def show() -> None:
            store.entity_show(keys[next(position) % 40], RecordQuery(limit=50))

        def listed() -> None:
            filtered_list(store, keys[next(position) % 40])

        shown = store.entity_show(keys[1], RecordQuery(limit=50))
        print(f"entity show {keys[1]}: {shown['record_count']} records, "
              f"{shown['chunk_count']} chunks")  # fmt: skip
        median, p95 = timed(show, 80)
        print(f"entity show        median {median:7.1f} ms  p95 {p95:7.1f} ms")
        median, p95 = timed(listed, 80)
        print(f"--entity list      median {median:7.1f} ms  p95 {p95:7.1f} ms")
        median, _ = timed(store.entity_list, 3)
        print(f"entity list        median {median:7.1f} ms  (every key, once)")

        if args.reads_only:
            store.close()
            return
        # Alternating, so that a change of the machine's load falls on both alike.
        runs: dict[bool, list[tuple[float, float]]] = {True: [], False: []}
        for _ in range(args.rounds):
            for part in (True, False):
                runs[part].append(rebuild(store, part))
        for what, index in (("wall", 0), ("CPU", 1)):
            with_part = statistics.median(run[index] for run in runs[True])
            without = statistics.median(run[index] for run in runs[False])
            share = (with_part / without - 1) * 100
            print(f"index rebuild {what:<4} {with_part:.2f} s with the entity part, "
                  f"{without:.2f} s without: {share:+.1f} %")  # fmt: skip
        if hasattr(store.workspace, "entity_index"):
            started = time.perf_counter()
            store.workspace.entity_index.rebuild()
            print(f"entity index alone {time.perf_counter() - started:.2f} s")
        print("uptime:", subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip())
        store.close()


if __name__ == "__main__":
    sys.exit(main())
