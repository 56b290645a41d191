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
``BM25Okapi`` over lower-cased word tokens, and bm25s with its English stop words (the
``bench`` extra: ``pip install -e '.[bench]'``). Figures: R@k is the share of a question's
evidence found in its first k hits, averaged over questions; MRR the mean of 1/rank of the
first evidence hit within 10; ms/query the median wall time of one search (lantern: the whole
library call, warm).

Hybrid's keyword weight and the similarity floor are lantern's constants
(``lantern_git/index/ranking.py``). They were chosen by leave-one-out cross-validation over
eleven folds, each conversation of the conversational set and the recall set as one more:
``--cv`` prints, for each held-out fold, the weight with the best R@5 on the other folds, the
highest floor whose R@10 there stays within half a point of no floor, and the R@5 they give on
the held-out fold. The shipped values are those most folds chose, never fitted on the figures
of a held-out fold. ``--cv`` then tries a keyword weight per question that grows with the
share of the question's idf its best keyword hit holds (``COVERAGE_RULES``), chosen by the same
folds, and prints its held-out R@5 by question type beside the constant weight's and keyword's.
``--calibrate`` prints the cosines that words in no record reach, which set
the floor for a query that shares no word with the records searched.
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
        return "n/a (pip install -e '.[bench]')"

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
        return "n/a (pip install -e '.[bench]')"
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
    parser.add_argument(
        "--cv", action="store_true", help="choose hybrid's weight and floor by cross-validation"
    )
    parser.add_argument(
        "--calibrate", action="store_true", help="the best cosine words in no record reach"
    )
    args = parser.parse_args(argv)
    if args.cv or args.calibrate:
        return tune(args.cv, args.calibrate)
    sets = [s for s in args.sets.split(",") if s]
    rankers = [r for r in args.rankers.split(",") if r]
    bad = [s for s in sets if s not in SETS] + [r for r in rankers if r not in RANKERS]
    if bad:
        parser.error(f"unknown: {', '.join(bad)}")
    reports = [run_set(s, rankers, args.misses) for s in sets]
    if args.json:
        print(json.dumps(reports, indent=2))
        return 0
    print(
        "Hybrid's weight and floor were chosen by leave-one-out cross-validation over the"
        " conversations and the recall set (--cv), not fitted on these figures.\n"
    )
    for report in reports:
        print(table(report))
        if args.misses:
            for ranker, entry in report["rankers"].items():
                for miss in entry.get("misses", []):
                    print(f"  miss {ranker} {miss}")
        print()
    return 0


def tune(cv: bool, calibrate: bool) -> int:
    """``--cv``: leave one fold out (each conversation, and the recall set as one more fold);
    ``--calibrate``: the highest cosine a probe word reaches with any record of a scope."""
    import numpy as np

    from lantern_git.index import ranking

    items = []
    for name in SETS:
        docs, questions = dataset(name)
        work = tempfile.mkdtemp(prefix="lantern-retrieval-")
        try:
            store, keys = build_store(os.path.join(work, "store"), docs)
            if calibrate:
                vectors = store.record_vectors()
                current = vectors.current()
                words = {w for d in docs for w in TOKEN.findall(d["content"].lower())}
                for probe in PROBES:
                    assert probe not in words, probe
                    scores = current.scores(vectors.embed_query(probe))
                    best = int(np.argmax(scores))
                    text = next(d["content"] for d in docs if keys[current.ids[best]] == d["key"])
                    print(f"{name}: {probe!r} reaches {scores[best]:.3f} with {text!r}")
            if cv:
                found = components(store, keys, questions)
                add_coverage(found, docs, keys)
                for item in found:
                    items.append({**item, "fold": item["scope"] or name, "set": name})
            store.close()
        finally:
            shutil.rmtree(work, ignore_errors=True)
    if calibrate:
        print(f"the floor without a lexical anchor: {ranking.DEFAULT_FLOORS.alone}")
    if cv:
        found = cross_validate(items)
        print("\n| held out | weight chosen | floor chosen | R@5 held out |")
        print("|---|---|---|---|")
        for row in found["folds"]:
            print(f"| {row['held_out']} | {row['weight']} | {row['floor']} | {row['R@5']:.3f} |")
        print(f"\ncross-validated hybrid R@5: {found['R@5']:.3f}")
        print(
            f"lantern ships weight {ranking.KEYWORD_WEIGHT}, floor "
            f"{ranking.DEFAULT_FLOORS.floor} (lantern_git/index/ranking.py)"
        )
        print(coverage_report(items))
    return 0


# ---------------------------------------------------------------- cross-validation

# Words in no record of either set: what a query with no lexical anchor looks like.
PROBES = (
    "quokka", "zebra", "xylophone", "asdfgh", "blorptang", "tractor", "volcano", "submarine",
    "kangaroo", "origami",
)  # fmt: skip

WEIGHTS = (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7)
FLOORS = (0.0, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35)


def components(store: Store, keys: dict[str, str], questions: list[dict]) -> list[dict]:
    """For each question, its candidates' keys, BM25 scores (0: no keyword match) and
    cosines, as lantern's hybrid sees them: what a weight and a floor are chosen from."""
    import numpy as np

    from lantern_git.query import RecordQuery

    vectors = store.record_vectors()
    current = vectors.current()
    out = []
    for q in questions:
        query = RecordQuery(scopes=(q["scope"],) if q["scope"] else (), limit=None)
        ids = store.index.matching_ids(query)
        query.text = q["text"]
        bm25 = dict(store.index.scored_ids(query))
        cosines = current.scores(vectors.embed_query(q["text"]))
        rows = np.asarray([current.row[i] for i in ids], dtype=np.int64)
        out.append(
            {
                **q,
                "keys": [keys[i] for i in ids],
                "bm25": np.asarray([bm25.get(i, 0.0) for i in ids]),
                "cos": np.asarray(cosines[rows], dtype=np.float64),
            }
        )
    return out


def add_coverage(items: list[dict], docs: list[dict], keys: dict[str, str]) -> None:
    """Each question's ``coverage``: the share of its words' idf (as BM25 counts it, over the
    records it searches) that its best keyword hit holds, as written or by stem; 0 without a
    keyword hit. A question answered by the words it names has its best hit cover most of
    them; a paraphrase, few."""
    import math

    from whoosh.lang.porter2 import stem  # lantern's stemmer (index/analysis.py)

    from lantern_git.index.analysis import typed_words, word_forms

    analyzer = word_forms().analyzer
    terms = {d["key"]: {t.text for t in analyzer(d["content"])} for d in docs}
    by_scope: dict[str | None, list[str]] = {None: [d["key"] for d in docs]}
    for d in docs:
        by_scope.setdefault(d["scope"], []).append(d["key"])
    counted: dict[tuple[str | None, str], int] = {}

    def idf(scope: str | None, word: str) -> float:
        searched = by_scope[scope]
        if (scope, word) not in counted:
            forms = {word, stem(word)}
            counted[scope, word] = sum(1 for k in searched if forms & terms[k])
        df = counted[scope, word]
        return math.log(1 + (len(searched) - df + 0.5) / (df + 0.5))

    for item in items:
        hits = [(k, float(b)) for k, b in zip(item["keys"], item["bm25"]) if b > 0]
        words = typed_words(item["text"])
        item["coverage"] = 0.0
        if hits and words:
            held = terms[min(hits, key=lambda h: (-h[1], h[0]))[0]]
            weights = {w: idf(item["scope"], w) for w in words}
            mine = sum(v for w, v in weights.items() if w in held or stem(w) in held)
            item["coverage"] = mine / sum(weights.values())


# Per-query keyword weights tried against the constant one: a + b x coverage^p (at most 0.95)
COVERAGE_RULES = [
    (a, b, p) for a in (0.05, 0.1) for b in (0.25, 0.45, 0.7, 1.0, 1.5) for p in (1, 2, 4, 6)
]


def coverage_weight(rule: tuple[float, float, int], coverage: float) -> float:
    a, b, p = rule
    return min(a + b * coverage**p, 0.95)


def coverage_report(items: list[dict]) -> str:
    """Leave-one-fold-out, as for the constant weight (floor 0.15): in each fold the rule,
    constant weights and ``COVERAGE_RULES`` alike, with the best R@5 on the other folds; the
    held-out R@5 by set and question type, beside the constant weight's and keyword's."""
    floor = 0.15
    rules: list[tuple] = [("weight", w) for w in WEIGHTS] + [
        ("coverage", *r) for r in COVERAGE_RULES
    ]

    def weight(rule: tuple, item: dict) -> float:
        return rule[1] if rule[0] == "weight" else coverage_weight(rule[1:], item["coverage"])

    def r5(top: list[str], item: dict) -> float:
        return sum(t in top[:5] for t in item["targets"]) / len(item["targets"])

    table = {
        (rule, n): r5(fused_keys(item, weight(rule, item), floor), item)
        for rule in rules
        for n, item in enumerate(items)
    }
    keyword = {}
    for n, item in enumerate(items):
        hits = sorted(
            ((k, float(b)) for k, b in zip(item["keys"], item["bm25"]) if b > 0), key=_best
        )
        keyword[n] = r5([k for k, _ in hits], item)
    held: dict[str, dict[int, float]] = {"constant weight": {}, "coverage rule": {}}
    chosen: dict[str, list[str]] = {"constant weight": [], "coverage rule": []}
    for fold in sorted({item["fold"] for item in items}):
        train = [n for n, i in enumerate(items) if i["fold"] != fold]
        for label in held:
            pool = [r for r in rules if label == "coverage rule" or r[0] == "weight"]
            best = max(pool, key=lambda r: round(sum(table[r, n] for n in train) / len(train), 4))
            chosen[label].append(f"{fold}: {best}")
            held[label].update(
                {n: table[best, n] for n, i in enumerate(items) if i["fold"] == fold}
            )
    lines = [
        "\nPer-query keyword weight from the best keyword hit's coverage of the question,"
        " chosen by the same folds (held-out R@5):",
        "| set | questions | keyword | hybrid, constant weight | hybrid, coverage rule |",
        "|---|---|---|---|---|",
    ]
    for name in SETS:
        for kind in (None, *sorted({i["type"] for i in items if i["set"] == name})):
            ns = [n for n, i in enumerate(items) if i["set"] == name and kind in (None, i["type"])]
            if not ns:
                continue
            cells = [sum(d[n] for n in ns) / len(ns) for d in (keyword, *held.values())]
            lines.append(
                f"| {name} | {kind or 'all'} ({len(ns)}) | "
                + " | ".join(f"{c:.3f}" for c in cells)
                + " |"
            )
    lines.append("coverage rules chosen: " + "; ".join(chosen["coverage rule"]))
    return "\n".join(lines)


def fused_keys(item: dict, weight: float, floor: float) -> list[str]:
    """The first ten keys of lantern's hybrid ranking (``vectors.fuse``, the formula in
    ``lantern_git/index/ranking.py``) with this keyword weight and floor."""
    from lantern_git.index import ranking
    from lantern_git.index.vectors import fuse

    keys, bm25, cos = item["keys"], item["bm25"], item["cos"]
    keyword = sorted(((keys[i], float(b)) for i, b in enumerate(bm25) if b > 0), key=_best)
    if not keyword:
        floor = max(floor, ranking.DEFAULT_FLOORS.alone)
    semantic = sorted(
        ((keys[i], round(float(c), 6)) for i, c in enumerate(cos) if c >= floor and c > 0),
        key=_best,
    )
    return [key for key, _ in fuse(keyword, semantic, weight)[:LIMIT]]


def _best(item: tuple[str, float]) -> tuple[float, str]:
    return -item[1], item[0]


def recall_at(items: list[dict], weight: float, floor: float, k: int = 5) -> float:
    total = 0.0
    for item in items:
        top = fused_keys(item, weight, floor)[:k]
        total += sum(1 for t in item["targets"] if t in top) / len(item["targets"])
    return total / len(items) if items else 0.0


def cross_validate(items: list[dict]) -> dict:
    """Leave one conversation out: the weight with the best R@5 on the other conversations,
    then the highest floor whose R@10 there is within 0.5 points of no floor; both applied
    to the held-out conversation."""
    table = {}
    for weight in WEIGHTS:
        for floor in FLOORS:
            for n, item in enumerate(items):
                top = fused_keys(item, weight, floor)
                hits = [t in top[:5] for t in item["targets"]], [t in top for t in item["targets"]]
                table[weight, floor, n] = tuple(sum(h) / len(h) for h in hits)
    folds = sorted({item["fold"] for item in items})
    rows = []
    for held in folds:
        train = [n for n, i in enumerate(items) if i["fold"] != held]
        test = [n for n, i in enumerate(items) if i["fold"] == held]

        def mean(w: float, f: float, ns: list[int], at: int) -> float:
            return sum(table[w, f, n][at] for n in ns) / len(ns)

        weight = max(WEIGHTS, key=lambda w: (round(mean(w, 0.0, train, 0), 4), -w))
        base = mean(weight, 0.0, train, 1)
        floor = max(f for f in FLOORS if mean(weight, f, train, 1) >= base - 0.005)
        found = mean(weight, floor, test, 0)
        rows.append({"held_out": held, "weight": weight, "floor": floor, "R@5": found})
    grid = {
        f"{w}/{f}": round(sum(table[w, f, n][0] for n in range(len(items))) / len(items), 4)
        for w in WEIGHTS
        for f in FLOORS
    }
    return {"folds": rows, "R@5": statistics.mean(r["R@5"] for r in rows), "grid": grid}


if __name__ == "__main__":
    sys.exit(main())
