"""Retrieval quality on a small hand-labelled set: recall@1, recall@5 and MRR per query type.

    python benchmarks/recall.py                       # every mode the store offers
    python benchmarks/recall.py --modes keyword       # one mode
    python benchmarks/recall.py --json                # the figures as JSON
    python benchmarks/recall.py --misses keyword      # also list the queries a mode missed

The set lives in ``benchmarks/recall/``: ``records.jsonl`` (an agent's memory of people,
projects, teams and rules: ``key``, ``kind``, ``scope``, ``content``) and ``queries.jsonl``
(``id``, ``query``, ``targets``: the keys of the records that answer it, and ``type``):

- ``paraphrase``: the same question in other words; it shares at most one content word
  (after stemming, stopwords aside) with each of its targets. The script checks this and
  prints every violation.
- ``keyword``: uses the target's distinctive words.
- ``wordform``: the target's words in another form ("deploying" for "deployment", "migrated"
  for "migrating").

The records go into a temporary store in one ``import_records`` commit. Every query runs in
each mode through ``Store.search(text, mode=..., limit=10)``; a store whose ``search`` has no
``mode`` parameter (TypeError) answers keyword queries with its plain ``search`` and reports
the other modes as n/a, as does a store without the semantic extra. Figures: recall@k is the
share of a query's targets in its first k hits, averaged over queries; MRR is the mean of
1/rank of the first target found in the first 10 hits (0 when none is).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)

from lantern_git.model.record import Record  # noqa: E402
from lantern_git.store import Store  # noqa: E402

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "recall")
MODES = ("keyword", "semantic", "hybrid")
TYPES = ("paraphrase", "keyword", "wordform")
LIMIT = 10
NOW = 1_764_720_000  # 2025-12-03: fixed, so that record files and ids never vary

# Words that carry no topic: the English function words plus the question and auxiliary
# words a query is made of. A paraphrase may share one word outside this list with its target.
_STOPWORDS = """
    a about above after again against all am an and any are as at be because been before
    being below between both but by can could did do does doing done down during each few for
    from further get gets got had has have having he her here hers herself him himself his how
    i if in into is it its itself just let me more most my myself no nor not now of off on once
    only or other our ours ourselves out over own same she should so some such than that the
    their theirs them themselves then there these they this those through to too under until
    up us very was we were what when where which while who whom whose why will with would you
    your yours yourself yourselves anything something someone anyone everyone every also still
    yet may might must shall need needs lately recently right now kind sort way ever tell
    know like want wants s t
"""
STOPWORDS = frozenset(_STOPWORDS.split())
WORD = re.compile(r"[a-z0-9]+(?:[-'][a-z0-9]+)*")


def stem(word: str) -> str:
    from whoosh.lang.porter import stem as porter

    return porter(word)


def content_words(text: str) -> set[str]:
    """The stemmed words of ``text`` that are not stopwords ("Ana's" counts as "ana")."""
    words = set()
    for word in WORD.findall(text.lower()):
        word = word.removesuffix("'s")
        for part in word.split("-"):
            if part and part not in STOPWORDS:
                words.add(stem(part))
    return words


def load(name: str) -> list[dict]:
    with open(os.path.join(DATA, name), encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def check(records: list[dict], queries: list[dict]) -> list[str]:
    """What is wrong with the set: unknown keys or types, and paraphrases that share more
    than one content word with a target."""
    problems = []
    by_key = {r["key"]: r for r in records}
    if len(by_key) != len(records):
        problems.append("duplicate record keys")
    ids = [q["id"] for q in queries]
    if len(set(ids)) != len(ids):
        problems.append("duplicate query ids")
    for q in queries:
        if q["type"] not in TYPES:
            problems.append(f"{q['id']}: unknown type {q['type']!r}")
        for key in q["targets"]:
            if key not in by_key:
                problems.append(f"{q['id']}: unknown target {key!r}")
            elif q["type"] == "paraphrase":
                shared = content_words(q["query"]) & content_words(by_key[key]["content"])
                if len(shared) > 1:
                    problems.append(
                        f"{q['id']}: paraphrase shares {sorted(shared)} with {key}: {q['query']!r}"
                    )
    return problems


def build(root: str, records: list[dict]) -> tuple[Store, dict[str, str]]:
    """A store holding ``records``, imported in one commit; the record id of each key."""
    ids = {}
    lines = []
    for r in records:
        record = Record.new(kind=r["kind"], content=r["content"], scope=r["scope"], now=NOW)
        ids[r["key"]] = record.id
        lines.append(json.dumps(record.to_dict()))
    store = Store.init(root, author="Recall <recall@example.com>")
    store.import_records(lines)
    return store, ids


def searcher(store: Store, mode: str):
    """A function running one query in ``mode``, or the reason the mode is not available."""

    def with_mode(text):
        return store.search(text, mode=mode, limit=LIMIT)

    try:
        with_mode("availability probe")
    except TypeError:
        if mode == "keyword":  # a store from before modes: its search is the keyword search
            return lambda text: store.search(text, limit=LIMIT)
        return "n/a (semantic extra/API not available)"
    except Exception as exc:  # the API is there but the mode is not (no extra installed)
        return f"n/a ({type(exc).__name__}: {exc})"
    return with_mode


def evaluate(run, queries: list[dict], ids: dict[str, str]) -> tuple[list[dict], list[float]]:
    """Each query's ranks of its targets, and the time each query took."""
    results, times = [], []
    for q in queries:
        start = time.perf_counter()
        try:
            hits = run(q["query"])
            error = None
        except Exception as exc:  # one query the parser rejects must not end the run
            hits, error = [], f"{type(exc).__name__}: {exc}"
        times.append(time.perf_counter() - start)
        order = [h.record.id for h in hits]
        ranks = [order.index(ids[k]) + 1 if ids[k] in order else None for k in q["targets"]]
        results.append({**q, "ranks": ranks, "top": order[:3], "error": error})
    return results, times


def figures(results: list[dict]) -> dict:
    def recall(q, k):
        return sum(1 for r in q["ranks"] if r is not None and r <= k) / len(q["ranks"])

    def reciprocal(q):
        found = [r for r in q["ranks"] if r is not None]
        return 1 / min(found) if found else 0.0

    n = len(results)
    if not n:
        return {"n": 0}
    return {
        "n": n,
        "recall@1": sum(recall(q, 1) for q in results) / n,
        "recall@5": sum(recall(q, 5) for q in results) / n,
        "mrr": sum(reciprocal(q) for q in results) / n,
        "errors": sum(1 for q in results if q["error"]),
    }


def table(report: dict) -> str:
    out = [
        "| mode | query type | queries | recall@1 | recall@5 | MRR@10 | median query |",
        "|---|---|---|---|---|---|---|",
    ]
    for mode, entry in report["modes"].items():
        if "unavailable" in entry:
            out.append(f"| {mode} | all | {report['queries']} | {entry['unavailable']} | | | |")
            continue
        for name in (*TYPES, "all"):
            f = entry["by_type"][name]
            if not f["n"]:
                continue
            errors = f" ({f['errors']} errors)" if f["errors"] else ""
            median = f"{entry['median_ms']:.1f} ms" if name == "all" else ""
            out.append(
                f"| {mode} | {name} | {f['n']}{errors} | {f['recall@1']:.3f} "
                f"| {f['recall@5']:.3f} | {f['mrr']:.3f} | {median} |"
            )
    return "\n".join(out)


def run(modes, show_misses=(), as_json=False) -> dict:
    records, queries = load("records.jsonl"), load("queries.jsonl")
    problems = check(records, queries)
    counts = {t: sum(1 for q in queries if q["type"] == t) for t in TYPES}
    kinds = {}
    for r in records:
        kinds[r["kind"]] = kinds.get(r["kind"], 0) + 1
    report: dict = {
        "records": len(records),
        "scopes": len({r["scope"] for r in records}),
        "kinds": kinds,
        "queries": len(queries),
        "query_types": counts,
        "problems": problems,
        "modes": {},
    }
    work = tempfile.mkdtemp(prefix="lantern-recall-")
    try:
        start = time.perf_counter()
        store, ids = build(os.path.join(work, "store"), records)
        report["build_s"] = time.perf_counter() - start
        for mode in modes:
            found = searcher(store, mode)
            if isinstance(found, str):
                report["modes"][mode] = {"unavailable": found}
                continue
            results, times = evaluate(found, queries, ids)
            by_type = {t: figures([q for q in results if q["type"] == t]) for t in TYPES}
            by_type["all"] = figures(results)
            times.sort()
            report["modes"][mode] = {
                "by_type": by_type,
                "median_ms": times[len(times) // 2] * 1000,
                "misses": [
                    {key: q[key] for key in ("id", "query", "targets", "ranks")}
                    for q in results
                    if all(r is None or r > 5 for r in q["ranks"])
                ],
            }
        store.close()
    finally:
        shutil.rmtree(work, ignore_errors=True)
    if not as_json:
        print(
            f"{report['records']} records in {report['scopes']} scopes "
            f"({', '.join(f'{k} {v}' for k, v in sorted(kinds.items()))}); "
            f"{report['queries']} queries "
            f"({', '.join(f'{t} {c}' for t, c in counts.items())}); "
            f"store built in {report['build_s']:.1f} s"
        )
        for problem in problems:
            print(f"set problem: {problem}")
        print()
        print(table(report))
        for mode in show_misses:
            entry = report["modes"].get(mode, {})
            print(f"\n{mode}: queries with no target in the first 5 hits")
            for miss in entry.get("misses", []):
                targets = ", ".join(miss["targets"])
                print(f"  {miss['id']} {miss['query']!r} -> {targets}, ranks {miss['ranks']}")
    return report


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--modes",
        default=",".join(MODES),
        help="comma-separated search modes (default: keyword,semantic,hybrid)",
    )
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    parser.add_argument(
        "--misses", default="", help="comma-separated modes whose missed queries to list"
    )
    parser.add_argument(
        "--strict", action="store_true", help="exit 1 when the set check finds problems"
    )
    args = parser.parse_args(argv)
    modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    unknown = [m for m in modes if m not in MODES]
    if unknown:
        parser.error(f"unknown mode(s) {', '.join(unknown)}; choose from {', '.join(MODES)}")
    misses = [m.strip() for m in args.misses.split(",") if m.strip()]
    report = run(modes, misses, args.json)
    if args.json:
        print(json.dumps(report, indent=2))
    return 1 if args.strict and report["problems"] else 0


if __name__ == "__main__":
    sys.exit(main())
