"""Retrieval quality against named peers: lantern's three modes, rank-bm25 and bm25s, one run.

    python benchmarks/retrieval.py                  # both sets, every ranker (~3 minutes)
    python benchmarks/retrieval.py --sets conversations --rankers keyword,bm25okapi
    python benchmarks/retrieval.py --json           # the figures as JSON

Two sets, the same texts given to every ranker:

- ``recall``: the project's hand-labelled set (``benchmarks/recall/``, see ``recall.py``): an
  agent's memory of people, projects and rules; every query searches the whole store.
- ``conversations``: the generated conversational set (``benchmarks/conversations/``, see
  ``conversations.py``): one record per dialogue turn, each question searched within its
  conversation's scope (the peers get one index per conversation).

Rankers: lantern ``keyword``, ``semantic`` and ``hybrid`` (``Store.search(mode=...)``, the
library as a user calls it; semantic and hybrid need the ``semantic`` extra), rank-bm25's
``BM25Okapi`` over lower-cased word tokens, and bm25s with its English stop words (both are dev
dependencies). Figures: R@k is the share of a question's evidence found in its first k hits,
averaged over questions; MRR the mean of 1/rank of the first evidence hit within 10;
ms/query the median wall time of one search (lantern: the whole library call, warm).

Hybrid's keyword weight and the similarity floor are lantern's constants
(``lantern_git.index.ranking``). They were chosen by leave-one-conversation-out
cross-validation on the conversational set: ``--cv`` prints, for each held-out conversation,
the weight and floor that did best on the other nine, and the recall they then give on the
held-out one; the shipped values are those most folds chose, never fitted on the figures of
the held-out conversations they are reported with.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import re
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)

from lantern_git.record import Record  # noqa: E402
from lantern_git.store import Store  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
LANTERN = ("keyword", "semantic", "hybrid")
PEERS = ("bm25okapi", "bm25s")
RANKERS = (*LANTERN, *PEERS)
SETS = ("recall", "conversations")
LIMIT = 10
NOW = 1_764_720_000  # fixed, so that record ids never vary
TOKEN = re.compile(r"\w+")


def load(path: str) -> list[dict]:
    with open(path, encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def dataset(name: str) -> tuple[list[dict], list[dict]]:
    """(documents, questions) in one shape: documents ``key``, ``kind``, ``scope``,
    ``content``; questions ``id``, ``text``, ``targets``, ``type``, ``scope`` (None: all)."""
    if name == "recall":
        docs = load(os.path.join(HERE, "recall", "records.jsonl"))
        questions = [
            {"id": q["id"], "text": q["query"], "targets": q["targets"], "type": q["type"]}
            | {"scope": None}
            for q in load(os.path.join(HERE, "recall", "queries.jsonl"))
        ]
        return docs, questions
    docs = load(os.path.join(HERE, "conversations", "turns.jsonl"))
    questions = [
        {
            "id": q["id"],
            "text": q["question"],
            "targets": q["evidence"],
            "type": q["type"],
            "scope": q["scope"],
        }
        for q in load(os.path.join(HERE, "conversations", "questions.jsonl"))
    ]
    return docs, questions


def build_store(root: str, docs: list[dict]) -> tuple[Store, dict[str, str]]:
    """A store holding ``docs`` imported in one commit; the key of each record id."""
    keys = {}
    lines = []
    for doc in docs:
        record = Record.new(kind=doc["kind"], content=doc["content"], scope=doc["scope"], now=NOW)
        keys[record.id] = doc["key"]
        lines.append(json.dumps(record.to_dict()))
    store = Store.init(root, author="Retrieval <retrieval@example.com>")
    store.import_records(lines)
    return store, keys


# ---------------------------------------------------------------- rankers


def lantern_ranker(store: Store, keys: dict[str, str], mode: str) -> Callable | str:
    def run(question: dict) -> list[str]:
        scopes = (question["scope"],) if question["scope"] else ()
        hits = store.search(question["text"], mode=mode, scopes=scopes, limit=LIMIT)
        return [keys[h.record.id] for h in hits]

    try:
        run({"text": "availability probe", "scope": None})
    except Exception as exc:  # no semantic extra
        return f"n/a ({type(exc).__name__})"
    return run


def _by_scope(docs: list[dict]) -> dict[str | None, list[dict]]:
    groups: dict[str | None, list[dict]] = {None: docs}
    for doc in docs:
        groups.setdefault(doc["scope"], []).append(doc)
    return groups


def bm25okapi_ranker(docs: list[dict]) -> Callable | str:
    try:
        from rank_bm25 import BM25Okapi
    except ImportError:
        return "n/a (pip install rank-bm25)"

    def tokens(text: str) -> list[str]:
        return TOKEN.findall(text.lower())

    indexes = {
        scope: (BM25Okapi([tokens(d["content"]) for d in group]), [d["key"] for d in group])
        for scope, group in _by_scope(docs).items()
    }

    def run(question: dict) -> list[str]:
        bm25, keys = indexes[question["scope"]]
        scores = bm25.get_scores(tokens(question["text"]))
        order = sorted(range(len(keys)), key=lambda i: -scores[i])
        return [keys[i] for i in order[:LIMIT]]

    return run


def bm25s_ranker(docs: list[dict]) -> Callable | str:
    try:
        import bm25s
    except ImportError:
        return "n/a (pip install bm25s)"
    logging.getLogger("bm25s").setLevel(logging.WARNING)
    indexes = {}
    for scope, group in _by_scope(docs).items():
        retriever = bm25s.BM25()
        corpus = bm25s.tokenize([d["content"] for d in group], stopwords="en", show_progress=False)
        retriever.index(corpus, show_progress=False)
        indexes[scope] = (retriever, [d["key"] for d in group])

    def run(question: dict) -> list[str]:
        retriever, keys = indexes[question["scope"]]
        query = bm25s.tokenize([question["text"]], stopwords="en", show_progress=False)
        if not query.vocab:
            return []
        k = min(LIMIT, len(keys))
        found, scores = retriever.retrieve(query, k=k, show_progress=False)
        return [keys[int(i)] for i, s in zip(found[0], scores[0]) if s > 0]

    return run


# ---------------------------------------------------------------- figures


def evaluate(run: Callable, questions: list[dict]) -> tuple[list[dict], float]:
    """Each question with the ranks of its targets; the median ms per question."""
    results, times = [], []
    for q in questions:
        start = time.perf_counter()
        order = run(q)
        times.append(time.perf_counter() - start)
        ranks = [order.index(t) + 1 if t in order else None for t in q["targets"]]
        results.append({**q, "ranks": ranks, "top": order[:3]})
    return results, statistics.median(times) * 1000


def figures(results: list[dict]) -> dict:
    n = len(results)
    if not n:
        return {"n": 0}

    def recall(q: dict, k: int) -> float:
        return sum(1 for r in q["ranks"] if r is not None and r <= k) / len(q["ranks"])

    def reciprocal(q: dict) -> float:
        found = [r for r in q["ranks"] if r is not None]
        return 1 / min(found) if found else 0.0

    out = {"n": n}
    for k in (1, 5, 10):
        out[f"R@{k}"] = sum(recall(q, k) for q in results) / n
    out["MRR"] = sum(reciprocal(q) for q in results) / n
    return out


def run_set(name: str, rankers: list[str], misses: bool = False) -> dict:
    docs, questions = dataset(name)
    types = sorted({q["type"] for q in questions})
    report: dict = {
        "set": name,
        "documents": len(docs),
        "questions": len(questions),
        "types": {t: sum(1 for q in questions if q["type"] == t) for t in types},
        "rankers": {},
    }
    work = tempfile.mkdtemp(prefix="lantern-retrieval-")
    try:
        store, keys = build_store(os.path.join(work, "store"), docs)
        for ranker in rankers:
            if ranker in LANTERN:
                run = lantern_ranker(store, keys, ranker)
            elif ranker == "bm25okapi":
                run = bm25okapi_ranker(docs)
            else:
                run = bm25s_ranker(docs)
            if isinstance(run, str):
                report["rankers"][ranker] = {"unavailable": run}
                continue
            run(questions[0])  # warm: models, searchers
            results, ms = evaluate(run, questions)
            entry = {"ms": ms, "all": figures(results)}
            for t in types:
                entry[t] = figures([q for q in results if q["type"] == t])
            if misses:
                entry["misses"] = [
                    (q["id"], q["text"], q["ranks"], q["top"])
                    for q in results
                    if all(r is None or r > 5 for r in q["ranks"])
                ]
            report["rankers"][ranker] = entry
        store.close()
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return report


def table(report: dict) -> str:
    out = [
        f"{report['set']}: {report['documents']} records, {report['questions']} questions "
        f"({', '.join(f'{t} {c}' for t, c in report['types'].items())})",
        "",
        "| ranker | questions | R@1 | R@5 | R@10 | MRR | ms / query |",
        "|---|---|---|---|---|---|---|",
    ]
    names = {
        "keyword": "lantern keyword",
        "semantic": "lantern semantic",
        "hybrid": "lantern hybrid",
        "bm25okapi": "rank-bm25 BM25Okapi",
        "bm25s": "bm25s (English stop words)",
    }
    for ranker, entry in report["rankers"].items():
        if "unavailable" in entry:
            out.append(f"| {names[ranker]} | | {entry['unavailable']} | | | | |")
            continue
        for part in ("all", *report["types"]):
            f = entry[part]
            label = names[ranker] if part == "all" else f"  {part}"
            ms = f"{entry['ms']:.1f}" if part == "all" else ""
            out.append(
                f"| {label} | {f['n']} | {f['R@1']:.3f} | {f['R@5']:.3f} | {f['R@10']:.3f} "
                f"| {f['MRR']:.3f} | {ms} |"
            )
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sets", default=",".join(SETS))
    parser.add_argument("--rankers", default=",".join(RANKERS))
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--misses", action="store_true", help="list questions missed in top 5")
    args = parser.parse_args(argv)
    sets = [s for s in args.sets.split(",") if s]
    rankers = [r for r in args.rankers.split(",") if r]
    bad = [s for s in sets if s not in SETS] + [r for r in rankers if r not in RANKERS]
    if bad:
        parser.error(f"unknown: {', '.join(bad)}")
    reports = [run_set(s, rankers, args.misses) for s in sets]
    if args.json:
        print(json.dumps(reports, indent=2))
        return 0
    for report in reports:
        print(table(report))
        if args.misses:
            for ranker, entry in report["rankers"].items():
                for miss in entry.get("misses", []):
                    print(f"  miss {ranker} {miss}")
        print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
