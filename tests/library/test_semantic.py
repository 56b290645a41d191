"""Semantic recall (docs/semantic.md): real stores, the real CLI, a real MCP client.

Tests marked ``semantic`` need the extra (numpy, wordllama) and fail without it
(tests/support/env.py); the others run with ``LANTERN_EMBEDDER=none`` or with numpy and
wordllama blocked, as a host without the extra. ``HashEmbedder`` (tests/support/semantic.py)
is a tiny deterministic embedder for the plug-in tests.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import anyio
import pytest
from support.cli import invoke
from support.semantic import HASH_EMBEDDER, QUESTION, RECORDS, TARGET, fill, meta
from support.stores import git

from lantern_git.store import Store

ROOT = Path(__file__).resolve().parents[2]
INSTALL = "pip install 'lantern-git[semantic]'"


def cli_json(store_path, *args):
    result = invoke(*args, "--json", store=store_path)
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


# ---------------------------------------------------------------------------- the docs scenario


@pytest.mark.semantic
def test_a_paraphrase_is_found_first_by_hybrid_and_semantic_not_by_keyword(store, store_path):
    fill(store)
    keyword = cli_json(store_path, "memory", "search", QUESTION, "--mode", "keyword")
    assert keyword[0]["content"] != TARGET  # "likes" in another record outweighs "Ana"
    assert {hit["mode"] for hit in keyword} == {"keyword"}
    for mode in ("semantic", "hybrid"):
        hits = cli_json(store_path, "memory", "search", QUESTION, "--mode", mode)
        assert hits[0]["content"] == TARGET, mode
        assert hits[0]["mode"] == mode and isinstance(hits[0]["score"], float)
    default = cli_json(store_path, "memory", "search", QUESTION)
    assert default[0]["content"] == TARGET and default[0]["mode"] == "hybrid"
    status = cli_json(store_path, "status")
    assert (status["embedder"], status["search_mode"]) == ("wordllama", "hybrid")
    # Derived state only: nothing for git to see.
    assert git(store_path, "status", "--porcelain") == ""
    assert (Path(store_path) / ".lantern/vectors/records/vectors.npy").is_file()


@pytest.mark.semantic
def test_the_scenario_over_mcp(store, store_path):
    from support.mcp import connect, fail, ok

    ids = fill(store)
    store.add("Ana likes short answers.", kind="preference", scope="user:other")

    async def body(client):
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
        mode = tools["lantern_memory_search"].input_schema["properties"]["mode"]
        assert mode["enum"] == ["keyword", "semantic", "hybrid"]
        assert tools["lantern_memory_similar"].annotations.read_only_hint is True
        found = {}
        for mode in ("semantic", "hybrid", None):
            args = {"query": QUESTION, "scope": ["user:ana", "project:*", "user:raphael"]}
            if mode:
                args["mode"] = mode
            found[mode] = await ok(client, "lantern_memory_search", **args)
        similar = await ok(client, "lantern_memory_similar", id=ids[TARGET][:6], limit=2)
        dupes = await ok(client, "lantern_memory_dupes", limit=1)
        error = await fail(client, "lantern_memory_search", query="x", mode="fuzzy")
        return found, similar, dupes, error

    found, similar, dupes, error = anyio.run(lambda: _run(store_path, body, connect))
    for mode, page in found.items():
        assert page["records"][0]["content"] == TARGET, mode
        assert page["records"][0]["mode"] == (mode or "hybrid")
    assert len(similar["records"]) == 2 and similar["next_offset"] == 2
    assert similar["records"][0]["content"] == "Ana likes short answers."
    pair = dupes["pairs"][0]
    assert {pair["a"]["content"], pair["b"]["content"]} == {TARGET, "Ana likes short answers."}
    assert error["code"] == "invalid_field" and "mode" in error["message"]


async def _run(store_path, body, connect):
    async with connect(store_path) as client:
        return await body(client)


# ---------------------------------------------------------------------------- filters and order


def no_floor(monkeypatch) -> None:
    """Floors of 0 (a cosine above 0 makes a candidate): these tests are about filters and
    order, and their six records reach cosines under wordllama's calibrated floors
    (docs/search.md, "The similarity floor"), which tests of their own cover."""
    from lantern_git.index import ranking

    monkeypatch.setitem(ranking.FLOORS, "wordllama", ranking.Floors(0.0, 0.0))


@pytest.mark.semantic
def test_filters_choose_the_candidates_before_ranking(store, store_path, monkeypatch):
    no_floor(monkeypatch)
    ids = fill(store)
    store.archive(ids[TARGET])
    store.update(ids["Raphael likes separate branches on his repos."], priority=90)
    for mode in ("semantic", "hybrid"):
        hits = store.search(QUESTION, mode=mode)
        assert TARGET not in [h.record.content for h in hits]  # archived: not a candidate
        scoped = store.search(QUESTION, mode=mode, scopes=("project:*",))
        assert {h.record.scope for h in scoped} == {"project:beta"}
        assert len(scoped) == 2
        kinds = store.search(QUESTION, mode=mode, kinds=("goal",), status="all")
        assert [h.record.kind for h in kinds] == ["goal"]
        important = store.search(QUESTION, mode=mode, min_priority=80)
        assert [h.record.priority for h in important] == [90]
        archived = store.search(QUESTION, mode=mode, status="archived")
        assert [h.record.content for h in archived] == [TARGET]
        page = store.search(QUESTION, mode=mode, limit=2, offset=1)
        assert [h.record.id for h in page] == [h.record.id for h in hits[1:3]]


@pytest.mark.semantic
def test_relevance_only_and_list_order_unchanged(store, store_path):
    ids = fill(store)
    before = [r.id for r in store.list()]
    store.search(QUESTION, mode="semantic")
    assert [r.id for r in store.list()] == before
    # Priority never enters a score: raising one changes no score. (Each side is scored by a
    # freshly built index: Whoosh's BM25 statistics count a replaced document until a merge.)
    store.rebuild_index()
    scores = {h.record.id: h.score for h in store.search(QUESTION, mode="hybrid")}
    store.update(ids["Ship the beta on Friday."], priority=100, urgency=100)
    store.rebuild_index()
    again = {h.record.id: h.score for h in store.search(QUESTION, mode="hybrid")}
    assert again == scores
    assert store.list()[0].id == ids["Ship the beta on Friday."]


# ---------------------------------------------------------------------------- similar and dupes


@pytest.mark.semantic
def test_similar_returns_the_nearest_other_records(store, store_path):
    ids = fill(store)
    near = store.add("Ana wants brief replies.", kind="preference", scope="user:ana")
    hits = store.similar(ids[TARGET], limit=3)
    assert hits[0].record.id == near.id
    assert ids[TARGET] not in [h.record.id for h in hits]
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
    assert store.similar(ids[TARGET], min_score=0.99) == []
    rows = cli_json(store_path, "memory", "similar", ids[TARGET][:6], "--limit", "1")
    assert [row["id"] for row in rows] == [near.id]
    assert rows[0]["mode"] == "semantic" and rows[0]["score"] == hits[0].score
    assert invoke("memory", "similar", "ffff", store=store_path).exit_code == 3


@pytest.mark.semantic
def test_dupes_finds_a_paraphrase_pair_and_not_unrelated_records(store, store_path):
    fill(store)
    store.add(
        "Raphael prefers a distinct branch for each repository.",
        kind="preference",
        scope="user:raphael",
    )
    pairs = store.dupes()
    assert [{p.a.content, p.b.content} for p in pairs] == [
        {
            "Raphael likes separate branches on his repos.",
            "Raphael prefers a distinct branch for each repository.",
        }
    ]
    assert pairs[0].a.id < pairs[0].b.id
    rows = cli_json(store_path, "memory", "dupes")
    assert rows == [pairs[0].to_dict()] and set(rows[0]) == {"a", "b", "score"}
    assert cli_json(store_path, "memory", "dupes", "--scope", "user:ana") == []
    low = store.dupes(threshold=0.1)
    assert len(low) > 1
    assert [p.score for p in low] == sorted((p.score for p in low), reverse=True)
    text = invoke("memory", "dupes", store=store_path)
    assert text.exit_code == 0 and "Raphael prefers a distinct" in text.output
    # Reported only: nothing was written.
    assert git(store_path, "status", "--porcelain") == ""
    assert len(store.list()) == len(RECORDS) + 1


# ---------------------------------------------------------------------------- derived state


@pytest.mark.semantic
def test_a_hand_edit_is_embedded_again_by_the_next_search(store, store_path):
    ids = fill(store)
    store.search(QUESTION, mode="semantic")
    path = next(Path(store_path, "memory").rglob(f"{ids['Ship the beta on Friday.']}.md"))
    text = path.read_text()
    path.write_text(text.replace("Ship the beta on Friday.", "Ana enjoys terse replies."))
    fresh = Store.open(str(store_path))
    hits = fresh.search(QUESTION, mode="semantic")
    assert fresh.record_vectors().embedded == 1
    assert hits[0].record.content == "Ana enjoys terse replies."
    # A status edit changes the file, not the text: nothing is embedded again.
    path.write_text(path.read_text().replace("status: active", "status: archived"))
    again = Store.open(str(store_path))
    again.search(QUESTION, mode="semantic", status="all")
    assert again.record_vectors().embedded == 0
    # A removed record's row is dropped.
    path.unlink()
    gone = Store.open(str(store_path))
    gone.search(QUESTION, mode="semantic", status="all")
    # (as a fresh process reads the set: the base file and the journal after it)
    on_disk = Store.open(str(store_path)).record_vectors().current()
    assert ids["Ship the beta on Friday."] not in on_disk.row
    assert len(on_disk.row) == len(RECORDS) - 1


@pytest.mark.semantic
@pytest.mark.parametrize("damage", ["delete", "truncate", "flip", "meta", "shape"])
def test_damaged_vectors_are_rebuilt_never_trusted(store, store_path, damage):
    fill(store)
    expected = [h.record.id for h in store.search(QUESTION, mode="semantic")]
    folder = Path(store_path, ".lantern/vectors/records")
    data = folder / "vectors.npy"
    if damage == "delete":
        import shutil

        shutil.rmtree(Path(store_path, ".lantern/vectors"))
    elif damage == "truncate":
        data.write_bytes(data.read_bytes()[:-100])
    elif damage == "flip":
        raw = bytearray(data.read_bytes())
        raw[-7] ^= 0xFF  # one vector's bytes: the CRC no longer matches
        data.write_bytes(bytes(raw))
    elif damage == "meta":
        (folder / "meta.json").write_text("{not json")
    else:
        recorded = meta(store_path)
        recorded["count"] += 1
        (folder / "meta.json").write_text(json.dumps(recorded))
    fresh = Store.open(str(store_path))
    assert [h.record.id for h in fresh.search(QUESTION, mode="semantic")] == expected
    assert fresh.record_vectors().embedded == len(RECORDS)
    assert meta(store_path)["count"] == len(RECORDS)
    # And now whole again: the next process embeds nothing.
    again = Store.open(str(store_path))
    again.search(QUESTION, mode="semantic")
    assert again.record_vectors().embedded == 0


@pytest.mark.semantic
def test_an_empty_store_answers_every_mode(store, store_path):
    for mode in ("keyword", "semantic", "hybrid"):
        assert store.search("anything", mode=mode) == []
        assert store.sources.search("anything", mode=mode) == []
    assert store.dupes() == []
    assert meta(store_path)["count"] == 0


@pytest.mark.semantic
def test_index_rebuild_rebuilds_the_vectors(store, store_path):
    fill(store)
    store.search(QUESTION, mode="semantic")
    result = invoke("index", "rebuild", store=store_path)
    assert result.exit_code == 0, result.output
    assert meta(store_path)["count"] == len(RECORDS)
    fresh = Store.open(str(store_path))
    fresh.search(QUESTION, mode="semantic")
    assert fresh.record_vectors().embedded == 0


@pytest.mark.semantic
def test_switching_embedder_embeds_again(store, store_path, monkeypatch):
    fill(store)
    store.search(QUESTION, mode="semantic")
    assert meta(store_path)["embedder"].startswith("wordllama-")
    monkeypatch.setenv("LANTERN_EMBEDDER", HASH_EMBEDDER)
    hashed = Store.open(str(store_path))
    hits = hashed.search("Ana answers", mode="semantic")
    assert hashed.record_vectors().embedded == len(RECORDS)
    assert meta(store_path)["embedder"] == "test-hashed-words-v1/64"
    assert hits[0].record.content == TARGET  # two words in common
    # The CLI, in a subprocess, imports the embedder from the variable too.
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(ROOT / "tests")])}
    search = ["memory", "search", "Ana answers", "--json"]
    out = subprocess.run(
        [sys.executable, "-m", "lantern_git", "--store", str(store_path), *search],
        capture_output=True,
        text=True,
        env=env,
        check=True,
    )
    assert json.loads(out.stdout)[0]["content"] == TARGET
    monkeypatch.setenv("LANTERN_EMBEDDER", "wordllama")
    back = Store.open(str(store_path))
    back.search(QUESTION, mode="semantic")
    assert back.record_vectors().embedded == len(RECORDS)
    assert meta(store_path)["embedder"].startswith("wordllama-")


@pytest.mark.semantic
def test_pending_records_are_searched_by_keyword_only(store, store_path):
    fill(store)
    hits = store.search("Ana", include_pending=True)
    assert hits and {h.mode for h in hits} == {"keyword"}
    with pytest.raises(Exception) as caught:
        store.search("Ana", mode="semantic", include_pending=True)
    assert caught.value.code == "usage_error"


@pytest.mark.semantic
def test_hybrid_is_a_weighted_sum_of_the_best_normalised_bm25_and_the_cosine():
    from lantern_git.index.ranking import fuse

    keyword = [("a", 8.0), ("b", 4.0), ("d", 1.6)]
    semantic = [("c", 0.7), ("d", 0.6), ("b", 0.5), ("a", -0.2)]
    # Each keyword hit's weight (docs/search.md: the share of the query's words it holds); a
    # hit scores max(cosine, w x bm25 / best + (1 - w) x cosine).
    weights = {"a": 0.25, "b": 0.75, "d": 0.5}
    fused = dict(fuse(keyword, semantic, weights))
    assert fused["a"] == 0.25 * 1.0  # a negative cosine adds nothing
    assert fused["b"] == round(0.75 * 0.5 + 0.25 * 0.5, 6)
    assert fused["c"] == 0.7  # no keyword match: the cosine alone
    assert fused["d"] == 0.6  # 0.5 x 0.2 + 0.5 x 0.6 = 0.4: never below its cosine
    assert [key for key, _ in fuse(keyword, semantic, weights)] == ["c", "d", "b", "a"]
    # A record only the keyword ranking places first does not tie with the cosine's first:
    # max(0.3, 0.25 x 1 + 0.75 x 0.3) = 0.475 against max(0.6, 0.25 x 1/3 + 0.75 x 0.6) = 0.6.
    named = fuse(
        [("shares-the-name", 3.0), ("target", 1.0)],
        [("target", 0.6), ("shares-the-name", 0.3)],
        {"shares-the-name": 0.25, "target": 0.25},
    )
    assert named == [("target", 0.6), ("shares-the-name", 0.475)]
    # Equal sums: the semantic ranking's order, whatever the ids.
    assert [k for k, _ in fuse([], [("z", 0.5), ("y", 0.5)], {})] == ["z", "y"]


@pytest.mark.semantic
def test_a_hybrid_page_breaks_equal_sums_by_the_semantic_order_then_keyword_only_hits_by_id():
    import numpy as np

    from lantern_git.index.ranking import fuse_page
    from lantern_git.index.vectors import VectorSet

    # Row i's cosine with the query (the first axis) is COSINES[i], exactly in float32; None:
    # a row at 0 (no cosine, under any floor). BM25 scores, best 2.0, and keyword weights.
    cosines = {"a": 0.25, "b": 0.5, "c": 0.375, "d": None, "e": None, "f": 0.0625, "g": 0.5}
    cosines |= {"h": None, "i": 0.0625, "k": 0.25, "m": 0.3125, "n": 0.4375}
    bm25 = {"a": 2.0, "c": 1.0, "d": 0.5, "e": 0.5, "f": 0.5, "h": 0.5, "k": 1.125, "n": 0.25}
    weights = {"a": 0.5, "c": 0.25, "d": 0.5, "e": 0.25, "f": 0.75, "h": 0.25, "k": 0.2}
    weights["n"] = 0.5  # 0.5 x 0.125 + 0.5 x 0.4375 is under its cosine: it scores 0.4375
    ids = sorted(cosines)
    matrix = np.zeros((len(ids), 4), dtype=np.float32)
    for row, key in enumerate(ids):
        cos = cosines[key] or 0.0
        matrix[row, 0], matrix[row, 1] = cos, (1 - cos * cos) ** 0.5
    vectors = VectorSet("test", "0", ids, ["d"] * len(ids), ["t"] * len(ids), matrix)
    query = np.asarray([1.0, 0.0, 0.0, 0.0], dtype=np.float32)

    def expected(floor: float) -> list[tuple[str, float]]:
        # docs/search.md: max(cosine, w x bm25 / best + (1 - w) x cosine), the cosine counted
        # when it reaches the floor (and is above 0), w the hit's keyword weight (0 without a
        # keyword match); equal sums in the semantic order (cosine, then id), the records it
        # leaves out after, by id.
        placed = {k: c for k, c in cosines.items() if c is not None and c > 0 and c >= floor}
        scored = []
        for key in set(placed) | set(bm25):
            weight, cosine = weights.get(key, 0.0), placed.get(key, 0.0)
            total = max(cosine, weight * bm25.get(key, 0.0) / 2.0 + (1 - weight) * cosine)
            tie = (0, -placed[key]) if key in placed else (1, 0.0)
            scored.append((-round(total, 6), tie, key))
        return [(key, -score) for score, _, key in sorted(scored)]

    rows = np.arange(len(ids), dtype=np.int64)
    docs = [ids.index(key) for key in bm25]
    for floor in (0.0, 0.1):
        whole = expected(floor)
        score = dict(whole)
        # The test's premise: equal sums of two cosines (k's with BM25 and m's without), of
        # equal cosines (b, g), of a cosine and a keyword hit the floor leaves out (i, h), of
        # two keyword hits with no cosine (e, h).
        assert score["k"] == score["m"] and score["b"] == score["g"]
        assert floor > 0.0625 or score["i"] == score["h"]
        assert score["e"] == score["h"] and score["n"] == 0.4375
        shares = [weights[key] for key in bm25]
        for end in range(1, len(whole) + 2):
            page = fuse_page(
                vectors, query, rows, ids, docs, list(bm25.values()), shares, end, floor
            )
            assert page.ranked == whole[:end], (floor, end)
            on_page = [key for key, _ in page.ranked if key in bm25]
            assert page.weights == {key: weights[key] for key in on_page}


@pytest.mark.semantic
def test_a_cosine_exactly_at_the_similarity_floor_is_kept_by_both_rankings():
    """The floor is reached at equality ("at or above the floor", docs/search.md): a cosine
    of exactly the floor is a candidate, in semantic search (``rank``) and hybrid (``fuse_page``)
    alike, and one a step below is not. 0.25 and 0.375 are exact in float32."""
    import numpy as np

    from lantern_git.index.ranking import fuse_page
    from lantern_git.index.vectors import VectorSet, rank

    cosines = {"at": 0.25, "above": 0.375, "below": 0.249}
    ids = sorted(cosines)
    matrix = np.zeros((len(ids), 2), dtype=np.float32)
    for row, key in enumerate(ids):
        matrix[row] = (cosines[key], (1 - cosines[key] ** 2) ** 0.5)
    vectors = VectorSet("test", "0", ids, ["d"] * len(ids), ["t"] * len(ids), matrix)
    query = np.asarray([1.0, 0.0], dtype=np.float32)
    want = [("above", 0.375), ("at", 0.25)]
    for end in (None, 2, 5):
        assert rank(vectors, query, ids, end=end, floor=0.25) == want, end
    rows = np.arange(len(ids), dtype=np.int64)
    for end in (2, 5):
        page = fuse_page(vectors, query, rows, ids, [], [], [], end, 0.25)
        assert page.ranked == want, end
    # Just above the floor the same cosine is left out: the floor is what decided.
    assert rank(vectors, query, ids, floor=0.250001) == [("above", 0.375)]


# ---------------------------------------------------------------------------- choosing


def test_an_import_path_in_lantern_yaml_is_refused(store, store_path):
    marker = Path(store_path, "lantern.yaml")
    marker.write_text(marker.read_text() + f"embedder: {HASH_EMBEDDER}\n")
    result = invoke("memory", "search", "Ana", "--mode", "semantic", "--json", store=store_path)
    assert result.exit_code == 2
    error = json.loads(result.stderr)["error"]
    assert error["code"] == "invalid_embedder"
    assert "lantern.yaml" in error["message"] and "'embedder'" in error["message"]
    assert "LANTERN_EMBEDDER" in error["message"]


def test_embedder_none_means_keyword_only(store, store_path):
    fill(store)
    assert os.environ["LANTERN_EMBEDDER"] == "none"
    assert {hit["mode"] for hit in cli_json(store_path, "memory", "search", "Ana")} == {"keyword"}
    for args in (("search", "Ana", "--mode", "hybrid"), ("similar", "61f4"), ("dupes",)):
        result = invoke("memory", *args, "--json", store=store_path)
        assert result.exit_code == 1, args
        error = json.loads(result.stderr)["error"]
        assert error["code"] == "semantic_unavailable" and INSTALL in error["message"]


BLOCKED = """
import sys
class Blocker:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("numpy", "wordllama"):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None
sys.meta_path.insert(0, Blocker())
sys.argv = ["lantern", *sys.argv[1:]]
from lantern_git.cli import main
main()
"""


def test_without_the_extra_lantern_works_by_keyword(store_path):
    env = {k: v for k, v in os.environ.items() if k != "LANTERN_EMBEDDER"}
    env["PYTHONPATH"] = str(ROOT)

    def run(*args):
        return subprocess.run(
            [sys.executable, "-c", BLOCKED, "--store", str(store_path), *args],
            capture_output=True,
            text=True,
            env=env,
        )

    added = run("memory", "add", TARGET, "--kind", "preference", "--json")
    assert added.returncode == 0, added.stderr
    listed = run("memory", "list", "--json")
    assert [r["content"] for r in json.loads(listed.stdout)] == [TARGET]
    found = run("memory", "search", "answers", "--json")
    assert found.returncode == 0, found.stderr
    assert [(h["content"], h["mode"]) for h in json.loads(found.stdout)] == [(TARGET, "keyword")]
    for args in (
        ("memory", "search", "answers", "--mode", "semantic"),
        ("source", "search", "answers", "--mode", "hybrid"),
        ("memory", "similar", "61f4"),
        ("memory", "dupes"),
    ):
        refused = run(*args)
        assert refused.returncode == 1, args
        assert INSTALL in refused.stderr and "Traceback" not in refused.stderr
    sources = run("source", "search", "answers", "--json")
    assert sources.returncode == 0 and json.loads(sources.stdout) == []


@pytest.mark.semantic
def test_a_keyword_session_never_imports_numpy(store_path):
    code = (
        "import sys\n"
        "from lantern_git.cli import cli\n"
        "def run(*args):\n"
        f"    cli.main(['--store', {str(store_path)!r}, *args], standalone_mode=False)\n"
        f"run('memory', 'add', {TARGET!r}, '--kind', 'preference')\n"
        "run('memory', 'list')\n"
        "run('memory', 'search', 'answers', '--mode', 'keyword')\n"
        "run('memory', 'show', '61f4')\n"
        "print('numpy' in sys.modules, 'wordllama' in sys.modules)\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "LANTERN_EMBEDDER"}
    env["PYTHONPATH"] = str(ROOT)
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True
    )
    assert result.stdout.strip().splitlines()[-1] == "False False"


# ---------------------------------------------------------------------------- source chunks


def add_sources(store: Store) -> dict[str, str]:
    from lantern_git.evidence.sources import SourceInput

    ids = {}
    for name, text in (
        ("food.md", "# Food\n\nBob is allergic to peanuts.\n"),
        ("deploy.md", "# Release\n\nThe deploy runs every night at 2am.\n"),
    ):
        [result] = store.sources.add([SourceInput(text.encode(), name, kind="note", uri=name)])
        ids[name] = result.manifest.id
    return ids


@pytest.mark.semantic
def test_source_search_by_meaning(store, store_path, monkeypatch):
    no_floor(monkeypatch)
    ids = add_sources(store)
    keyword = store.sources.search("food Bob must avoid", mode="keyword")
    assert all(hit.mode == "keyword" for hit in keyword)
    for mode in ("semantic", "hybrid", None):
        hits = store.sources.search("which snacks are dangerous for him", mode=mode)
        assert hits[0].source_id == ids["food.md"], mode
        assert hits[0].mode == (mode or "hybrid")
        assert hits[0].to_dict()["ref"].startswith(f"source:{ids['food.md']}@")
    only = store.sources.search("snacks", mode="semantic", sources=[ids["deploy.md"]])
    assert {hit.source_id for hit in only} == {ids["deploy.md"]}
    rows = cli_json(store_path, "source", "search", "nightly release time", "--mode", "semantic")
    assert rows[0]["source_id"] == ids["deploy.md"] and rows[0]["mode"] == "semantic"
    # An append embeds only the chunks whose text is new (the tail, re-chunked from its
    # resume line), not the rest.
    before = set(store.chunk_vectors().current().texts)
    store.sources.append(ids["deploy.md"], "\n# Freeze\n\nNo deploys in August.\n")
    fresh = Store.open(str(store_path))
    hits = fresh.sources.search("holiday freeze", mode="semantic")
    embedded = fresh.chunk_vectors().embedded
    new = set(fresh.chunk_vectors().current().texts) - before
    assert 1 <= embedded == len(new) < len(hits)
    assert git(store_path, "status", "--porcelain") == ""


@pytest.mark.semantic
def test_source_search_mode_over_mcp(store, store_path):
    from support.mcp import connect, ok

    ids = add_sources(store)

    async def body(client):
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
        schema = tools["lantern_source_search"].input_schema["properties"]["mode"]
        assert schema["enum"] == ["keyword", "semantic", "hybrid"]
        # "Bob" anchors the query in the sources' words, so the lower similarity floor holds
        # (docs/search.md, "The similarity floor").
        return await ok(
            client,
            "lantern_source_search",
            query="which snacks are dangerous for Bob",
            mode="semantic",
        )

    page = anyio.run(lambda: _run(store_path, body, connect))
    assert page["hits"][0]["source_id"] == ids["food.md"]
    assert page["hits"][0]["mode"] == "semantic"


@pytest.mark.semantic
def test_wordllama_loads_and_embeds_without_the_network(store, store_path):
    fill(store)
    code = (
        "import socket, sys\n"
        "def refuse(*args, **kwargs):\n"
        "    raise OSError('lantern tried the network')\n"
        "socket.socket.connect = refuse\n"
        "socket.create_connection = refuse\n"
        "socket.getaddrinfo = refuse\n"
        "from lantern_git.cli import cli\n"
        f"cli.main(['--store', {str(store_path)!r}, 'memory', 'search', {QUESTION!r},\n"
        "          '--mode', 'semantic', '--json', '--limit', '1'], standalone_mode=False)\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "LANTERN_EMBEDDER"}
    env["PYTHONPATH"] = str(ROOT)
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)[0]["content"] == TARGET


@pytest.mark.semantic
def test_one_text_is_embedded_once_and_shared(store, store_path):
    a = store.add(TARGET, kind="preference", scope="user:ana")
    b = store.add(TARGET, kind="preference", scope="user:bob")
    store.add("Ship the beta on Friday.", kind="goal")
    store.search(QUESTION, mode="semantic")
    assert store.record_vectors().embedded == 2
    pairs = store.dupes()
    assert [(p.a.id, p.b.id) for p in pairs] == [tuple(sorted((a.id, b.id)))]
    assert pairs[0].score == pytest.approx(1.0, abs=1e-5)


# ------------------------------------------------------- catching up: the journal after the base


def vectors_folder(store_path) -> Path:
    return Path(store_path, ".lantern/vectors/records")


def on_disk(store_path):
    """The record vectors as a fresh process reads them, and how many it embedded to get there."""
    fresh = Store.open(str(store_path))
    fresh.refresh()  # the index in step with the files first, as a search does
    vectors = fresh.record_vectors()
    current = vectors.current()
    return current, vectors.embedded


def base_file(store_path) -> tuple[bytes, int]:
    data = vectors_folder(store_path) / "vectors.npy"
    return data.read_bytes(), data.stat().st_ino


@pytest.mark.semantic
def test_an_add_an_edit_and_a_delete_each_change_only_their_rows(store, store_path):
    import numpy as np

    ids = fill(store)
    store.search(QUESTION, mode="semantic")
    base = base_file(store_path)
    before, _ = on_disk(store_path)
    rows = {key: before.vector(key).copy() for key in before.row}
    journal = vectors_folder(store_path) / "journal.bin"
    assert not journal.exists()

    added = store.add("Bob is allergic to peanuts.", kind="fact", scope="user:bob")
    store.search(QUESTION, mode="semantic")
    assert store.record_vectors().embedded == 1
    assert base_file(store_path) == base  # the base file is not written again
    size = journal.stat().st_size
    assert 0 < size < 4 * 1024 * 384  # one entry: a row and its ids, not the set

    path = next(Path(store_path, "memory").rglob(f"{ids['Ship the beta on Friday.']}.md"))
    path.write_text(
        path.read_text().replace("Ship the beta on Friday.", "Ana enjoys terse replies.")
    )
    hits = Store.open(str(store_path)).search(QUESTION, mode="semantic")
    assert hits[0].record.content == "Ana enjoys terse replies."

    store.delete(ids["The deploy runs every night at 2am."])
    after, embedded = on_disk(store_path)
    assert embedded == 0  # a delete embeds nothing
    assert base_file(store_path) == base
    assert journal.stat().st_size > size

    assert set(after.row) == (set(rows) | {added.id}) - {ids["The deploy runs every night at 2am."]}
    embedder = store.record_vectors()
    for key in after.row:
        if key == ids["Ship the beta on Friday."]:
            expected = embedder.embed_query("Ana enjoys terse replies.")
        elif key == added.id:
            expected = embedder.embed_query("Bob is allergic to peanuts.")
        else:
            expected = rows[key]
        assert np.allclose(after.vector(key), expected, atol=1e-6), key
    # The rows as the journal left them rank as a set written whole would.
    rebuilt = Store.open(str(store_path))
    journal_hits = [(h.record.id, h.score) for h in rebuilt.search("Ana answers", mode="semantic")]
    rebuilt.record_vectors().rebuild()
    assert not journal.exists()
    whole = [(h.record.id, h.score) for h in rebuilt.search("Ana answers", mode="semantic")]
    assert journal_hits == whole


@pytest.mark.semantic
@pytest.mark.parametrize("damage", ["torn", "flip", "garbage"])
def test_a_write_killed_mid_journal_entry_is_ignored_and_cut_off(store, store_path, damage):
    fill(store)
    store.search(QUESTION, mode="semantic")
    first = store.add("Bob is allergic to peanuts.", kind="fact", scope="user:bob")
    store.search(QUESTION, mode="semantic")
    journal = vectors_folder(store_path) / "journal.bin"
    whole = journal.read_bytes()
    second = store.add("Carla reviews every pull request.", kind="fact", scope="user:carla")
    store.search(QUESTION, mode="semantic")
    both = journal.read_bytes()
    assert both.startswith(whole) and len(both) > len(whole)
    # What a kill leaves: the second entry cut short, or whole but with a byte gone wrong
    # (never fsynced), or bytes that are no entry at all.
    if damage == "torn":
        journal.write_bytes(both[: len(whole) + (len(both) - len(whole)) // 2])
    elif damage == "flip":
        raw = bytearray(both)
        raw[-5] ^= 0xFF
        journal.write_bytes(bytes(raw))
    else:
        journal.write_bytes(whole + b"\0" * 100)
    current, embedded = on_disk(store_path)
    # The first entry stands; the second record is embedded again, never read from the damage.
    assert embedded == 1
    assert first.id in current.row and second.id in current.row
    embedder = store.record_vectors()
    import numpy as np

    expected = embedder.embed_query("Carla reviews every pull request.")
    assert np.allclose(current.vector(second.id), expected, atol=1e-6)
    # The damaged tail was cut off before the new entry went in: the next process is in step.
    assert journal.read_bytes().startswith(whole)
    again, embedded = on_disk(store_path)
    assert embedded == 0 and set(again.row) == set(current.row)


@pytest.mark.semantic
def test_a_journal_of_another_base_is_never_applied(store, store_path):
    ids = fill(store)
    store.search(QUESTION, mode="semantic")
    store.add("Bob is allergic to peanuts.", kind="fact", scope="user:bob")
    store.search(QUESTION, mode="semantic")
    journal = vectors_folder(store_path) / "journal.bin"
    stale = journal.read_bytes()
    # Written whole again (a rebuild, or a compaction), then the old base's journal put beside
    # the new base (a copy by hand, a backup restored): its entries are not this base's.
    store.record_vectors().rebuild()
    path = next(Path(store_path, "memory").rglob(f"{ids[TARGET]}.md"))
    path.unlink()
    journal.write_bytes(stale)
    current, embedded = on_disk(store_path)
    assert embedded == 0
    assert ids[TARGET] not in current.row
    assert len(current.row) == len(RECORDS)  # the five left and Bob's
    assert len(current.extra) == 0  # Bob's row of the old journal was not taken in
    assert not journal.read_bytes().startswith(stale)  # and that journal was cut off


@pytest.mark.semantic
def test_many_changes_write_the_set_whole_and_a_half_written_one_is_ignored(
    store, store_path, monkeypatch
):
    from lantern_git.index import vectors

    fill(store)
    store.search(QUESTION, mode="semantic")
    journal = vectors_folder(store_path) / "journal.bin"
    monkeypatch.setattr(vectors, "COMPACT_FROM", 2)
    store.add("Bob is allergic to peanuts.", kind="fact", scope="user:bob")
    store.search(QUESTION, mode="semantic")
    assert journal.exists()
    store.add("Carla reviews every pull request.", kind="fact", scope="user:carla")
    store.add("Dan runs the Tuesday standup.", kind="fact", scope="user:dan")
    store.search(QUESTION, mode="semantic")
    assert store.record_vectors().embedded == 2
    assert not journal.exists()  # the set was written whole, the journal with it gone
    assert meta(store_path)["count"] == len(RECORDS) + 3
    # A whole write killed before its swap leaves its fresh folder half written: never read.
    fresh = Path(str(vectors_folder(store_path)) + ".new")
    fresh.mkdir()
    (fresh / "vectors.npy").write_bytes(b"\x93NUMPY half")
    (fresh / "meta.json").write_text('{"format": 2, "count"')
    current, embedded = on_disk(store_path)
    assert embedded == 0 and len(current.row) == len(RECORDS) + 3


@pytest.mark.semantic
@pytest.mark.parametrize("damage", ["flip", "delete"])
def test_damaged_row_digests_are_never_trusted(store, store_path, damage):
    fill(store)
    store.search(QUESTION, mode="semantic")
    rows = vectors_folder(store_path) / "rows.json"
    if damage == "flip":
        rows.write_text(rows.read_text().replace('"', "'", 1))
    else:
        rows.unlink()
    # A search of a set in step does not read them ...
    current, embedded = on_disk(store_path)
    assert embedded == 0 and len(current.row) == len(RECORDS)
    # ... a catch-up does, finds them damaged and embeds everything again.
    store.add("Bob is allergic to peanuts.", kind="fact", scope="user:bob")
    current, embedded = on_disk(store_path)
    assert embedded == len(RECORDS) + 1
    assert rows.is_file()
    again, embedded = on_disk(store_path)
    assert embedded == 0 and len(again.row) == len(RECORDS) + 1


@pytest.mark.semantic
def test_deletes_alone_do_not_grow_the_journal_without_end(store, store_path, monkeypatch):
    from lantern_git.index import vectors

    ids = fill(store)
    store.search(QUESTION, mode="semantic")
    monkeypatch.setattr(vectors, "COMPACT_FROM", 3)
    journal = vectors_folder(store_path) / "journal.bin"
    gone = [ids[content] for content, _, _ in RECORDS[1:4]]
    journaled = []
    for record_id in gone:
        store.delete(record_id)
        store.search(QUESTION, mode="semantic")
        assert store.record_vectors().embedded == 0
        journaled.append(journal.exists())
    # The second delete: an unused row and an entry already, so the set is written whole.
    assert journaled == [True, False, True]
    assert meta(store_path)["count"] == len(RECORDS) - 2
    current, embedded = on_disk(store_path)
    assert embedded == 0 and not set(gone) & set(current.row)


@pytest.mark.semantic
def test_hybrid_pages_fuse_as_the_whole_rankings_do_with_journal_rows_in_id_order(
    store, store_path, monkeypatch
):
    from lantern_git.index import ranking
    from lantern_git.index.ranking import fuse, fuse_page

    # The paged fusion is the weight by words held's (an embedder without a rule of its own);
    # wordllama's vectors serve, with its rule set to that one in this process
    monkeypatch.setitem(ranking.FUSIONS, "wordllama", ranking.WORDS_HELD)
    from lantern_git.index.vectors import rank
    from lantern_git.model.query import RecordQuery

    words = ["Ana", "answers", "short", "deploy", "night", "beta", "Friday", "branch", "Bob"]
    contents = {}
    for number in range(40):
        # Repeated texts tie on cosine; shared words tie on BM25.
        text = " ".join(words[(number * k) % len(words)] for k in (1, 2, 5))
        record = store.add(f"{text} note {number % 7}.", kind="fact", scope="project:beta")
        contents[record.id] = text
    store.search(QUESTION, mode="semantic")
    for number in range(0, 40, 3):  # journal rows too, their cosines tied with base rows'
        text = " ".join(words[(number * k) % len(words)] for k in (1, 2, 5))
        record = store.add(f"{text} note {number % 7}.", kind="fact", scope="project:gamma")
        contents[record.id] = text
    # Each query's words as typed, stop words ("at", "it") aside; each record's keyword weight
    # is the share of them it holds (docs/search.md), none a stem of another word here.
    queries = {
        "Ana short answers": ["ana", "short", "answers"],
        "deploy at night": ["deploy", "night"],
        "Bob": ["bob"],
        "nothing like it": ["nothing", "like"],
    }
    store.refresh()
    vectors = store.record_vectors()
    current = vectors.current()
    assert len(current.extra)
    candidates = store.index.matching_ids(RecordQuery())
    for text, asked in queries.items():
        keyword = store.index.scored_ids(RecordQuery(text=text))
        held = {key: sum(w in contents[key].lower().split() for w in asked) for key, _ in keyword}
        weights = {key: round(count / len(asked), 6) for key, count in held.items()}
        assert all(count > 0 for count in held.values())
        wanted = vectors.embed_query(text)
        # The floor docs/search.md gives wordllama: 0.15 with a query word in some record;
        # without one each record has its own, at most 0.40, and none here reaches its own
        floor = 0.15 if keyword else 0.40
        ranked = rank(current, wanted, candidates, floor=floor)
        assert ranked == sorted(ranked, key=lambda item: (-item[1], item[0]))  # ties by id
        whole = fuse(keyword, ranked, weights)
        # Through search: every page is the same slice of the whole hybrid ranking, which
        # is the fusion of the two whole rankings.
        searched = [(h.record.id, h.score) for h in store.search(text, mode="hybrid", limit=None)]
        assert searched == whole, text
        scores = dict(keyword)
        id_of, docs, raw, _, _ = store.index.raw_scored_docs(RecordQuery(text=text))
        rows = current.rows_of_docs(*store.index.matching_docs(RecordQuery()))
        for end in (1, 3, 10, 25, 100):
            shares = [weights[id_of[doc]] for doc in docs]
            top = fuse_page(current, wanted, rows, id_of, docs, raw, shares, end, floor)
            assert top.ranked == whole[:end], (text, end)
            assert top.bm25 == {key: scores[key] for key, _ in whole[:end] if key in scores}
            assert top.best == (keyword[0][1] if keyword else None)
            for offset in (0, 2):
                page = store.search(text, mode="hybrid", limit=end, offset=offset)
                assert [(h.record.id, h.score) for h in page] == whole[offset : offset + end]


@pytest.mark.semantic
def test_hybrid_pages_under_the_idf_share_held_first_are_slices_of_its_whole_ranking(store):
    from lantern_git.index import ranking
    from lantern_git.index.ranking import fuse_first, fuse_page
    from lantern_git.index.vectors import rank
    from lantern_git.model.query import RecordQuery

    # wordllama's rule (docs/search.md): the whole ranking is fuse_first's, tested by hand in
    # tests/surfaces/test_fusion_per_embedder.py; a page is fuse_page's, in bulk
    rule = ranking.fusion("wordllama")
    assert rule.rule == ranking.IDF_SHARE_FIRST
    words = ["Ana", "answers", "short", "deploy", "night", "beta", "Friday", "branch", "Bob"]
    for number in range(40):
        text = " ".join(words[(number * k) % len(words)] for k in (1, 2, 5))
        store.add(f"{text} note {number % 7}.", kind="fact", scope="project:beta")
    store.search(QUESTION, mode="semantic")
    for number in range(0, 40, 3):  # journal rows too, their cosines tied with base rows'
        text = " ".join(words[(number * k) % len(words)] for k in (1, 2, 5))
        store.add(f"{text} note {number % 7}.", kind="fact", scope="project:gamma")
    store.refresh()
    vectors = store.record_vectors()
    current = vectors.current()
    assert len(current.extra)
    candidates = store.index.matching_ids(RecordQuery())
    lifted_some = unlifted_some = False
    for text in ("Ana short answers", "deploy at night beta", "Bob", "Friday branch Ana note"):
        keyword = store.index.scored_ids(RecordQuery(text=text))
        id_of, docs, raw, _, idf = store.index.raw_scored_docs(RecordQuery(text=text), True)
        assert idf is not None
        shares = {id_of[doc]: share for doc, share in zip(docs, idf)}
        lifted = [ranking.held_first(share, rule) for share in idf]
        lifted_some |= any(lifted)
        unlifted_some |= not all(lifted)
        wanted = vectors.embed_query(text)
        ranked = rank(current, wanted, candidates, floor=0.15)
        whole = fuse_first(keyword, ranked, rule, shares)
        searched = [(h.record.id, h.score) for h in store.search(text, mode="hybrid", limit=None)]
        assert searched == whole, text
        rows = current.rows_of_docs(*store.index.matching_docs(RecordQuery()))
        weights = [rule.weight] * len(docs)
        for end in (1, 3, 10, 25, 100):
            top = fuse_page(
                current, wanted, rows, id_of, docs, raw, weights, end, 0.15, rule, lifted
            )
            assert top.ranked == whole[:end], (text, end)
            for offset in (0, 2):
                page = store.search(text, mode="hybrid", limit=end, offset=offset)
                assert [(h.record.id, h.score) for h in page] == whole[offset : offset + end]
        # A page explains each hit's share as the whole ranking does
        for hit in store.search(text, mode="hybrid", limit=5, explain=True):
            share = shares.get(hit.record.id, 0.0)
            assert hit.explain["idf_share"] == pytest.approx(share, abs=1e-6)
            assert hit.explain["first"] is ranking.held_first(share, rule)
    assert lifted_some and unlifted_some
