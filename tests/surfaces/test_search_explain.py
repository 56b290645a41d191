"""Lantern's BM25 (docs/search.md, "How ranking works"), ``--explain`` on the CLI and over a
real MCP stdio client, the similarity floor, and keyword search without the semantic extra.

Expected scores are computed here from the documented formula: Lucene's idf
``ln(1 + (N - df + 0.5) / (df + 0.5))``, ``K1 = 1.2``, ``B = 0.75``, statistics over the records
the filters select, a word's form as written at a tenth of its stem's weight.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import anyio
import pytest
from support.cli import lantern
from support.mcp import connect, ok

from lantern_git.evidence.sources import SourceInput
from lantern_git.store import Store

ROOT = Path(__file__).resolve().parents[2]
K1, B = 1.2, 0.75
NO_EMBEDDER = {"LANTERN_EMBEDDER": "none"}

# Every word a single letter-free token; no word is its own stem's other form, so each query
# word asks for one term (none of these change under Porter2).
RECORDS = [
    ("mango pear plum", "user:ana"),
    ("mango mango kiwi lime melon fig", "user:ana"),
    ("pear kiwi", "user:ana"),
    ("plum fig date", "user:bob"),
    ("lime", "user:bob"),
]


def bm25(query: list[str], doc: list[str], docs: list[list[str]]) -> float:
    """The documented formula, by hand."""
    n = len(docs)
    avg = sum(len(d) for d in docs) / n
    score = 0.0
    for word in query:
        tf = doc.count(word)
        if not tf:
            continue
        df = sum(1 for d in docs if word in d)
        idf = math.log(1 + (n - df + 0.5) / (df + 0.5))
        score += idf * tf * (K1 + 1) / (tf + K1 * (1 - B + B * len(doc) / avg))
    return score


def filled(store: Store) -> dict[str, str]:
    return {store.add(text, kind="fact", scope=scope).id: text for text, scope in RECORDS}


def test_keyword_scores_are_the_documented_bm25_over_the_records_searched(store):
    contents = filled(store)
    query = ["mango", "kiwi", "fig"]
    everything = [text.split() for text, _ in RECORDS]
    hits = store.search(" ".join(query), mode="keyword")
    expected = {i: bm25(query, text.split(), everything) for i, text in contents.items()}
    expected = {i: s for i, s in expected.items() if s > 0}
    assert {h.record.id: h.score for h in hits} == pytest.approx(expected, abs=1e-5)
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
    # In one scope, N, df and the average length are that scope's.
    ana = [text.split() for text, scope in RECORDS if scope == "user:ana"]
    scoped = store.search(" ".join(query), mode="keyword", scopes=("user:ana",))
    want = {
        i: bm25(query, text.split(), ana)
        for i, text in contents.items()
        if text.split() in ana and bm25(query, text.split(), ana) > 0
    }
    assert {h.record.id: h.score for h in scoped} == pytest.approx(want, abs=1e-5)
    # "fig" is in one of three records here and two of five overall: the scores differ.
    fig = next(h for h in scoped if "fig" in h.record.content)
    assert fig.score != pytest.approx(next(h.score for h in hits if h.record.id == fig.record.id))


def test_scoped_prefix_and_and_queries_are_scored_with_the_scopes_statistics(store):
    """Queries other than words joined by OR (a prefix, AND) go through Whoosh's search, with
    lantern's weighting: the same formula, the same statistics of the records searched."""
    contents = filled(store)
    ana = [text.split() for text, scope in RECORDS if scope == "user:ana"]
    everything = [text.split() for text, _ in RECORDS]
    cases = [
        # "fig*" asks for the one word "fig" (the only word it begins); "lime AND fig" for the
        # records holding both, scored as the two words.
        ("fig*", ["fig"], lambda words: "fig" in words),
        ("lime AND fig", ["lime", "fig"], lambda words: {"lime", "fig"} <= set(words)),
        ("mango AND kiwi", ["mango", "kiwi"], lambda words: {"mango", "kiwi"} <= set(words)),
    ]
    for text, words, matches in cases:
        for scopes, docs in ((("user:ana",), ana), ((), everything)):
            hits = store.search(text, mode="keyword", scopes=scopes, limit=None)
            want = {
                i: bm25(words, content.split(), docs)
                for i, content in contents.items()
                if content.split() in docs and matches(content.split())
            }
            assert want, (text, scopes)
            assert {h.record.id: h.score for h in hits} == pytest.approx(want, abs=1e-5), (
                text,
                scopes,
            )
    # The premise: "fig" is in one of ana's three records and two of all five, so a scoped
    # score taken with the whole index's statistics would differ.
    assert bm25(["fig"], ana[1], ana) != pytest.approx(bm25(["fig"], ana[1], everything))


def test_a_question_mark_ending_a_word_is_punctuation(store):
    store.add("The dog is called Biscuit.", kind="fact")
    store.add("The callers rang twice.", kind="fact")
    for text in ("called?", "called??", "who was called?"):
        hits = store.search(text, mode="keyword")
        assert [h.record.content for h in hits] == ["The dog is called Biscuit."], text


def _cli_json(store_path, *args, env=None):
    result = lantern("--store", str(store_path), *args, "--json", env=env)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def test_cli_explain_keyword_adds_one_object_per_hit(store, store_path):
    contents = filled(store)
    plain = _cli_json(store_path, "memory", "search", "Mangos kiwi", "--mode", "keyword")
    explained = _cli_json(
        store_path, "memory", "search", "Mangos kiwi", "--mode", "keyword", "--explain"
    )
    assert all("explain" not in hit for hit in plain)
    assert [{k: v for k, v in hit.items() if k != "explain"} for hit in explained] == plain
    everything = [text.split() for text, _ in RECORDS]
    for hit in explained:
        words = contents[hit["id"]].split()
        why = hit["explain"]
        # "Mangos" asks for "mango" (its stem) and "mangos" (as written, a tenth: in no record)
        want = bm25(["mango", "kiwi"], words, everything)
        assert why["bm25"] == hit["score"] == pytest.approx(want, abs=1e-5)
        assert why["mode"] == "keyword" and why["cosine"] is None and why["floor"] is None
        assert why["weights"] == {"keyword": 1.0, "semantic": 0.0}
        assert why["matched"] == [w for w in ("mangos", "kiwi") if w.rstrip("s") in words]
    table = lantern(
        "--store", str(store_path), "memory", "search", "Mangos kiwi", "--mode", "keyword",
        "--explain", env={"COLUMNS": "200"},
    )  # fmt: skip
    lines = table.stdout.splitlines()
    assert len(lines) == 1 + 2 * len(explained)
    assert lines[2].strip() == f"bm25 {explained[0]['score']:.3f}; matched: mangos, kiwi"


def test_source_search_explain_on_the_cli(store, store_path):
    store.sources.add([SourceInput(b"User: the ferry leaves at noon\nBot: noted\n", "a.md")])
    plain = _cli_json(store_path, "source", "search", "ferry", "--mode", "keyword")
    [hit] = _cli_json(store_path, "source", "search", "ferry", "--mode", "keyword", "--explain")
    assert "explain" not in plain[0]
    assert {k: v for k, v in hit.items() if k != "explain"} == plain[0]
    assert hit["explain"]["bm25"] == hit["score"] and hit["explain"]["matched"] == ["ferry"]
    text = lantern("--store", str(store_path), "source", "search", "ferry", "--explain")
    assert f"bm25 {hit['score']:.3f}; matched: ferry" in text.stdout


def test_a_chunk_explains_the_words_its_source_title_holds(store):
    # The index reads a chunk's words from its text and its source's title, and so does BM25:
    # "ferry" is only in the title, "noon" only in the text.
    body = b"User: it leaves at noon\nBot: noted\n"
    store.sources.add([SourceInput(body, "a.md", title="Ferry times")])
    [hit] = store.sources.search("ferry noon", mode="keyword", explain=True)
    assert hit.explain is not None
    assert hit.explain["words"] == ["ferry", "noon"]
    assert hit.explain["matched"] == ["ferry", "noon"]


def test_mcp_explain_on_both_search_tools(store, store_path):
    contents = filled(store)
    store.sources.add([SourceInput(b"User: the ferry leaves at noon\nBot: noted\n", "a.md")])

    async def body():
        async with connect(store_path) as client:
            records = await ok(client, "lantern_memory_search", query="kiwi", explain=True)
            plain = await ok(client, "lantern_memory_search", query="kiwi")
            hits = await ok(client, "lantern_source_search", query="ferry", explain=True)
            bare = await ok(client, "lantern_source_search", query="ferry")
            return records, plain, hits, bare

    records, plain, hits, bare = anyio.run(body)
    everything = [text.split() for text, _ in RECORDS]
    assert records["records"] and all("explain" not in r for r in plain["records"])
    for record in records["records"]:
        why = record["explain"]
        want = bm25(["kiwi"], contents[record["id"]].split(), everything)
        assert why["bm25"] == pytest.approx(want, abs=1e-5) and why["matched"] == ["kiwi"]
        assert why["mode"] == record["mode"] == "keyword"
    assert "explain" not in bare["hits"][0]
    assert hits["hits"][0]["explain"]["matched"] == ["ferry"]


BLOCKED = """
import json, sys
class Blocker:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("numpy", "wordllama"):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None
if sys.argv[1] == "block":
    sys.meta_path.insert(0, Blocker())
from lantern_git.store import Store
store = Store.open(sys.argv[2])
if sys.argv[1] == "plain":  # numpy and the model loaded, as in a server that ran a hybrid search
    store.search("anything", mode="hybrid")
    assert "numpy" in sys.modules
out = []
for text in sys.argv[3:]:
    out.append([(h.record.id, h.score) for h in store.search(text, mode="keyword", limit=None)])
print(json.dumps(out))
"""


@pytest.mark.semantic
def test_keyword_ranking_is_the_same_with_and_without_the_extra(store, store_path):
    filled(store)
    queries = ["mango kiwi", "fig date lime", "pears?", "plum"]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}

    def run(how):
        args = [sys.executable, "-c", BLOCKED, how, str(store_path), *queries]
        result = subprocess.run(args, capture_output=True, text=True, env=env, check=True)
        return json.loads(result.stdout)

    without, with_extra = run("block"), run("plain")
    assert without == with_extra
    assert all(without)


@pytest.mark.semantic
def test_a_word_in_no_record_finds_nothing_in_hybrid_and_semantic(store, store_path):
    from lantern_git.index import ranking

    store.add("Ana prefers short answers.", kind="preference", scope="user:ana")
    store.add("Bob answers support tickets on Mondays.", kind="fact", scope="user:bob")
    store.add("The deploy runs every night at 2am.", kind="fact", scope="project:beta")
    env = {**os.environ, "LANTERN_EMBEDDER": "wordllama"}
    for mode in ("hybrid", "semantic"):
        assert _cli_json(store_path, "memory", "search", "quokka", "--mode", mode, env=env) == []
    # A query sharing a word with the records has the lower floor, and every hit explains it:
    # docs/search.md, wordllama's rule: 0.1 x BM25 / best BM25 + 0.9 x cosine, and 1 more for a
    # hit holding a quarter of the query words' idf or more. Over the three records, "ana" is in
    # one and "answers" in two (counted here by hand), so Bob's "answers" holds
    # idf(2) / (idf(1) + idf(2)) = 0.32 of it, enough.
    held = {
        "Ana prefers short answers.": ["ana", "answers"],
        "Bob answers support tickets on Mondays.": ["answers"],
        "The deploy runs every night at 2am.": [],
    }

    def idf(df: int) -> float:
        return math.log(1 + (3 - df + 0.5) / (df + 0.5))

    idfs = {"ana": idf(1), "answers": idf(2)}
    hits = _cli_json(
        store_path, "memory", "search", "Ana answers", "--mode", "hybrid", "--explain", env=env
    )
    assert {hit["content"] for hit in hits} >= set(list(held)[:2])
    for hit in hits:
        why = hit["explain"]
        share = sum(idfs[word] for word in held[hit["content"]]) / sum(idfs.values())
        assert why["words"] == ["ana", "answers"] and why["matched"] == held[hit["content"]]
        assert why["weights"] == {"keyword": 0.1, "semantic": 0.9}
        assert why["fusion"] == "idf share held first"
        assert why["idf_share"] == pytest.approx(share, abs=1e-6)
        assert why["first"] is (share >= 0.25)
        assert why["floor"] == ranking.floors("wordllama").floor
        semantic = why["cosine"] if why["cosine"] >= why["floor"] else 0.0
        want = (share >= 0.25) + 0.1 * why["bm25"] / why["bm25_best"] + 0.9 * semantic
        assert hit["score"] == pytest.approx(want, abs=2e-6)
    # The table shows each hit's weights and its share of the query words' idf.
    table = lantern(
        "--store", str(store_path), "memory", "search", "Ana answers", "--mode", "hybrid",
        "--explain", env={**env, "COLUMNS": "200"},
    ).stdout.splitlines()  # fmt: skip
    [bob] = [hit for hit in hits if hit["content"].startswith("Bob")]
    why = bob["explain"]
    line = (
        f"1 + 0.1 x bm25 {why['bm25']:.3f}/{why['bm25_best']:.3f} + 0.9 x cosine, "
        f"cosine {why['cosine']:.3f} (floor 0.15); idf share 0.32, first; matched: answers"
    )
    assert table[1 + 2 * hits.index(bob) + 1].strip() == line
