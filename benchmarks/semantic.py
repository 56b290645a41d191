"""Semantic recall: is wordllama worth it, and what does it cost? (docs/semantic.md)

    python benchmarks/semantic.py              # quality, load, throughput, search at 10,000
    python benchmarks/semantic.py --records 2000

Quality: each query below is a paraphrase of one record and shares few or no words with it.
Each embedder ranks all the records for each query; we count how often the intended record is
first (top-1) and the mean cosine of the intended pairs against that of every other pair. The
alternative is a hashed character-trigram embedder in numpy (no model, no download), the
cheapest thing that could work. Speed: wordllama's load time, embedding throughput, and the
median of 20 library searches per mode on a store of synthetic records (the figures a
colleague's proper benchmark will replace). Needs the semantic extra.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
import tempfile
import time
import zlib

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

# (record, a query that means it)
PAIRS = [
    ("Ana prefers short answers.", "what kind of replies does Ana like"),
    (
        "Raphael keeps a separate branch for each repository.",
        "how does Raphael organise his git work",
    ),
    ("The deploy runs every night at 2am.", "when does the nightly release happen"),
    ("Bob is allergic to peanuts.", "food Bob must avoid"),
    ("The staging database is Postgres 16.", "which SQL engine backs the test environment"),
    ("Never push directly to main.", "rules about committing to the primary branch"),
    ("The user lives in Lisbon.", "which city is the user based in"),
    ("Meetings with the design team are on Tuesdays.", "what day do we meet the designers"),
    ("The API rate limit is 100 requests per minute.", "how many calls can we make per minute"),
    ("Use tabs for indentation in Go files.", "formatting whitespace convention for golang"),
    ("Ship the beta on Friday.", "deadline for the beta release"),
    ("The laptop's battery drains fast when Docker runs.", "why does my notebook lose power"),
]


class TrigramEmbedder:
    """Hashed character trigrams, 256 buckets: spelling overlap, no meaning."""

    name = "trigram-256"
    dim = 256

    def embed(self, texts):
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for row, text in enumerate(texts):
            padded = f"  {text.lower()} "
            for i in range(len(padded) - 2):
                out[row, zlib.crc32(padded[i : i + 3].encode()) % self.dim] += 1.0
        out /= np.maximum(np.linalg.norm(out, axis=1, keepdims=True), 1e-9)
        return out


def quality(embedder) -> tuple[int, float, float]:
    records = embedder.embed([r for r, _ in PAIRS])
    queries = embedder.embed([q for _, q in PAIRS])
    scores = queries @ records.T
    top1 = int(sum(int(np.argmax(scores[i]) == i) for i in range(len(PAIRS))))
    matched = float(np.mean(np.diag(scores)))
    others = float((scores.sum() - np.trace(scores)) / (scores.size - len(PAIRS)))
    return top1, matched, others


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--records", type=int, default=10_000)
    args = parser.parse_args()

    from lantern_git.index.embedders import WordLlamaEmbedder

    started = time.perf_counter()
    wordllama = WordLlamaEmbedder()
    load = time.perf_counter() - started
    for embedder in (wordllama, TrigramEmbedder()):
        top1, matched, others = quality(embedder)
        print(
            f"{embedder.name:40s} top-1 {top1}/{len(PAIRS)}  mean cosine: intended pair "
            f"{matched:.2f}, other pairs {others:.2f}"
        )
    print(f"wordllama load: {load * 1000:.0f} ms")

    rng = random.Random(7)
    words = ["answer", "branch", "deploy", "night", "release", "user", "team", "project"]
    texts = [
        f"Record {i}: {' '.join(rng.choice(words) for _ in range(10))} {rng.random():.6f}"
        for i in range(args.records)
    ]
    started = time.perf_counter()
    wordllama.embed(texts)
    spent = time.perf_counter() - started
    print(f"embedding throughput: {len(texts) / spent:,.0f} texts/s ({len(texts)} texts)")

    from lantern_git.store import Store

    with tempfile.TemporaryDirectory() as folder:
        import pygit2

        path = os.path.join(folder, "store")
        pygit2.init_repository(path, initial_head="main")
        store = Store.init(path)
        lines = (
            json.dumps({"kind": "fact", "scope": "project:bench", "content": t}) for t in texts
        )
        store.import_records(lines)
        started = time.perf_counter()
        store.search("release", mode="semantic")
        print(
            f"first semantic search (embeds {args.records} records): "
            f"{time.perf_counter() - started:.2f} s"
        )
        for mode in ("keyword", "semantic", "hybrid"):
            times = []
            for _ in range(20):
                started = time.perf_counter()
                store.search(f"{rng.choice(words)} {rng.choice(words)}", mode=mode, limit=20)
                times.append(time.perf_counter() - started)
            print(
                f"{mode:8s} search median at {args.records}: "
                f"{statistics.median(times) * 1000:.1f} ms"
            )
        store.close()


if __name__ == "__main__":
    main()
