"""The hybrid formula's parts asked directly (lantern_git.index.ranking): the floors, the
keyword weight and its rounding, and the ``explain`` object each mode gives.

The searches' tests (test_hybrid_fusion.py, test_search_explain.py, the fusion's in
test_semantic.py) rank real records; these hold the small rules they lean on at the values
where a changed bound or a lost case shows (the mutation run, benchmarks/mutation.py, found
them unasked). The formula's parts need no numpy; the page's tests (marked semantic) do.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
from typing import Any

import pytest

from lantern_git.index.ranking import (
    FLOORS,
    FUSIONS,
    NO_FLOORS,
    WORD_NEAREST,
    WORDS_HELD,
    Floors,
    Fusion,
    calibrated,
    closest_words,
    explained,
    floor,
    floors,
    fuse_first,
    fuse_full_match,
    fusion,
    held_first,
    keyword_weight,
    needs_noise,
    semantic_weight,
)


def test_an_embedders_floors_are_its_own_or_none_and_cannot_be_changed_in_place():
    wordllama = Floors(
        0.15, 0.40, 0.144, centred=True, beta=float("inf"), probe_text="The {} is here."
    )
    assert floors("wordllama") == wordllama and calibrated("wordllama")
    e5 = Floors(0.80, 0.84, 0.033, centred=True, beta=50.0, words=0.913)
    assert floors("e5") == e5 and calibrated("e5")
    assert floors("wordllama").words is None  # word pairs: e5's alone
    # An embedder with no calibration has no floor, never another model's.
    assert floors("an-embedder-with-no-calibration") == NO_FLOORS == Floors(0.0, 0.0)
    assert not calibrated("an-embedder-with-no-calibration")
    assert floor("wordllama", anchored=True) == 0.15
    assert floor("wordllama", anchored=False) == 0.40
    assert not needs_noise("wordllama", anchored=True) and needs_noise("e5", anchored=False)
    assert not needs_noise("an-embedder-with-no-calibration", anchored=False)


# An embedder calibrated with the query's noise level alone (not centred), as wordllama was
# before its floor became each record's own: a calibration a user may add to FLOORS.
NOISE_FLOORED = "an-embedder-with-a-noise-floor"


@pytest.mark.parametrize(
    ("embedder", "noise", "wanted"),
    [
        # the query's best cosine with the probe words, plus the embedder's margin...
        (NOISE_FLOORED, 0.1, 0.237),
        # ...unless the fixed floor without a word in common is lower
        (NOISE_FLOORED, 0.3, 0.36),
        # not measured: the fixed floor
        (NOISE_FLOORED, None, 0.36),
        # an embedder with no calibration: no floor, whatever its noise
        ("an-embedder-with-no-calibration", 0.5, 0.0),
    ],
)
def test_a_query_sharing_no_word_has_the_lower_of_the_fixed_floor_and_its_noise_level(
    embedder, noise, wanted, monkeypatch
):
    monkeypatch.setitem(FLOORS, NOISE_FLOORED, Floors(0.15, 0.36, 0.137))
    assert floor(embedder, anchored=False, noise=noise) == wanted
    # a word in common: the anchored floor, the noise level not read
    assert floor(embedder, anchored=True, noise=noise) == floors(embedder).floor
    # Every search shares these objects: one caller changing them would move everyone's floor.
    with pytest.raises(dataclasses.FrozenInstanceError):
        FLOORS["wordllama"].floor = 0.0  # type: ignore[misc]


@pytest.mark.parametrize(
    ("held", "words", "weight"),
    [(0, 0, 0.0), (0, 1, 0.0), (1, 1, 1.0), (1, 2, 0.5), (1, 3, 0.333333), (2, 3, 0.666667)],
)
def test_the_keyword_weight_is_the_share_of_the_query_words_held_to_six_places(held, words, weight):
    assert keyword_weight(held, words) == weight


def test_a_query_of_no_words_has_no_keyword_weight_and_all_its_weight_on_the_cosine():
    assert keyword_weight(0, 0) == 0.0
    assert semantic_weight(keyword_weight(0, 0)) == 1.0


@pytest.mark.parametrize(
    ("keyword", "semantic"),
    [(0.0, 1.0), (1.0, 0.0), (0.333333, 0.666667), (0.1, 0.9), (0.1234567, 0.876543)],
)
def test_the_cosines_weight_is_what_the_keyword_weight_leaves_to_six_places(keyword, semantic):
    assert semantic_weight(keyword) == semantic


def test_a_keyword_hit_explains_its_bm25_and_words_with_no_cosine_or_floor():
    out = explained("keyword", "deploy the Servers", "servers deploy nightly", 2.5, 3.0, None, None)
    assert out == {
        "mode": "keyword",
        "bm25": 2.5,
        "words": ["deploy", "servers"],
        "matched": ["deploy", "servers"],
        "cosine": None,
        "weights": {"keyword": 1.0, "semantic": 0.0},
        "floor": None,
    }


def test_a_semantic_hit_explains_its_cosine_and_floor_and_a_missing_bm25_as_zero():
    out = explained("semantic", "quokka deploy", "deploy it", None, None, 0.5, 0.15)
    assert out == {
        "mode": "semantic",
        "bm25": 0.0,
        "words": ["quokka", "deploy"],
        "matched": ["deploy"],
        "cosine": 0.5,
        "weights": {"keyword": 0.0, "semantic": 1.0},
        "floor": 0.15,
        "calibrated": True,
    }


def test_a_hybrid_hit_explains_its_weights_and_the_best_bm25_it_was_divided_by():
    out = explained("hybrid", "deploy servers", "deploy", 1.0, 4.0, 0.25, 0.15, weight=0.5)
    assert out["weights"] == {"keyword": 0.5, "semantic": 0.5}
    assert (out["bm25"], out["bm25_best"], out["cosine"], out["floor"]) == (1.0, 4.0, 0.25, 0.15)
    assert out["matched"] == ["deploy"]
    assert out["fusion"] == "words held" and "full_match" not in out
    assert out["calibrated"] is True
    # A hit with no keyword match was given no weight: all of it on the cosine.
    alone = explained("hybrid", "deploy", "nothing alike", None, 4.0, 0.5, 0.15)
    assert alone["weights"] == {"keyword": 0.0, "semantic": 1.0}
    assert (alone["bm25"], alone["bm25_best"]) == (0.0, 4.0)
    # The rule is told by its value: one built anew is the same rule.
    again = explained(
        "hybrid", "deploy", "deploy", 1.0, 4.0, 0.25, 0.15, 0.5, rule=Fusion("words held", 0.0)
    )
    assert again["weights"] == {"keyword": 0.5, "semantic": 0.5}
    assert again["fusion"] == "words held" and "full_match" not in again


def unit_rows(cosines: dict[str, float]) -> tuple[Any, Any]:
    """A vector set whose row for each id has exactly the given cosine with the query (the
    values chosen exact in float32), and that query."""
    import numpy as np

    from lantern_git.index.vectors import VectorSet

    ids = sorted(cosines)
    matrix = np.zeros((len(ids), 2), dtype=np.float32)
    for row, key in enumerate(ids):
        matrix[row] = (cosines[key], (1 - cosines[key] ** 2) ** 0.5)
    vectors = VectorSet("test", "0", ids, ["d"] * len(ids), ["t"] * len(ids), matrix)
    return vectors, np.asarray([1.0, 0.0], dtype=np.float32)


@pytest.mark.semantic
def test_with_no_floor_a_cosine_of_zero_or_below_is_no_semantic_candidate():
    import numpy as np

    from lantern_git.index.ranking import fuse_page

    vectors, query = unit_rows({"near": 0.5, "orthogonal": 0.0, "opposite": -0.5})
    ids = sorted(["near", "orthogonal", "opposite"])
    rows = np.arange(3, dtype=np.int64)
    page = fuse_page(vectors, query, rows, ids, [], [], [], 5, 0.0)
    assert page.ranked == [("near", 0.5)]
    # A page of no length holds nothing.
    assert fuse_page(vectors, query, rows, ids, [], [], [], 0, 0.0).ranked == []


@pytest.mark.semantic
def test_a_floor_below_zero_still_keeps_only_cosines_above_zero():
    """A query's noise floor is its best cosine with the probe words plus a margin, which a
    query unlike every probe could take below 0: a floor never lets in a cosine of 0 or less
    (nothing in common), in the page as in the semantic ranking."""
    import numpy as np

    from lantern_git.index.ranking import fuse_page
    from lantern_git.index.vectors import rank

    cosines = {"near": 0.5, "orthogonal": 0.0, "slightly": -0.125, "opposite": -0.5}
    vectors, query = unit_rows(cosines)
    ids = sorted(cosines)
    rows = np.arange(len(ids), dtype=np.int64)
    assert rank(vectors, query, rows, floor=-0.25) == [("near", 0.5)]
    page = fuse_page(vectors, query, rows, ids, [], [], [], 5, -0.25)
    assert page.ranked == [("near", 0.5)]


@pytest.mark.semantic
def test_keyword_scores_of_zero_are_divided_by_one_as_the_whole_ranking_does():
    import numpy as np

    from lantern_git.index.ranking import fuse, fuse_page

    vectors, query = unit_rows({"a": 0.5, "b": 0.25})
    ids = ["a", "b"]
    rows = np.arange(2, dtype=np.int64)
    page = fuse_page(vectors, query, rows, ids, [0, 1], [0.0, 0.0], [1.0, 0.5], 5, 0.0)
    whole = fuse([("a", 0.0), ("b", 0.0)], [("a", 0.5), ("b", 0.25)], {"a": 1.0, "b": 0.5})
    assert page.ranked == whole == [("a", 0.5), ("b", 0.25)]
    assert page.best == 0.0
    # Hits that all score 0, with no cosine: a page shorter than them still holds its first.
    vectors, query = unit_rows({"a": 0.0, "b": 0.0, "c": 0.0})
    rows = np.arange(3, dtype=np.int64)
    page = fuse_page(vectors, query, rows, ["a", "b", "c"], [2, 0, 1], [0.0] * 3, [1.0] * 3, 2, 0.0)
    assert page.ranked == [("a", 0.0), ("b", 0.0)]


@pytest.mark.semantic
@pytest.mark.parametrize(("alone", "under"), [("b", "c"), ("c", "b")])
def test_a_keyword_hit_with_no_vector_is_scored_and_placed_as_the_whole_ranking_places_it(
    alone, under
):
    """A record the index holds but the vectors do not yet (rare: written between the two):
    its keyword part alone, among the other hits with no cosine by id, before or after them."""
    import numpy as np

    from lantern_git.index.ranking import fuse, fuse_page

    # ``alone`` has no row; ``under`` has one, under the floor: both are hits with no cosine.
    vectors, query = unit_rows({"a": 0.5, under: 0.0})
    ids = [*sorted(["a", under]), alone]
    rows = np.arange(2, dtype=np.int64)
    # The keyword hits in another order than the rows', their scores unlike each other's.
    docs, scores, weights = [0, 2, 1], [1.0, 2.0, 2.0], [1.0, 0.5, 0.5]
    whole = fuse(
        [(alone, 2.0), (under, 2.0), ("a", 1.0)], [("a", 0.5)], {alone: 0.5, under: 0.5, "a": 1.0}
    )
    assert whole == [("a", 0.5), ("b", 0.5), ("c", 0.5)]
    for end in (1, 2, 3, 5):
        page = fuse_page(vectors, query, rows, ids, docs, scores, weights, end, 0.1)
        assert page.ranked == whole[:end], end


@pytest.mark.semantic
def test_a_page_of_many_candidates_is_the_top_of_the_whole_ranking_at_every_length():
    """Three hundred candidates in no order: the page's shortlist (a partition at the page's
    last place; numpy sorts small arrays whole, so it takes this many to tell) must keep every
    candidate of the page, at each length."""
    import numpy as np

    from lantern_git.index.ranking import fuse_page

    # Distinct cosines k/4096 (exact in float32), ids in an order unlike the cosines'.
    cosines = {f"r{n:03d}": ((n * 77) % 300 + 1) / 4096 for n in range(300)}
    vectors, query = unit_rows(cosines)
    ids = sorted(cosines)
    whole = sorted(((k, round(c, 6)) for k, c in cosines.items()), key=lambda kc: -kc[1])
    rows = np.arange(len(ids), dtype=np.int64)
    for end in range(1, len(ids) + 1):
        page = fuse_page(vectors, query, rows, ids, [], [], [], end, 0.0)
        assert page.ranked == whole[:end], end


def test_the_best_keyword_score_is_the_first_whatever_the_others_are():
    from lantern_git.index.ranking import fuse

    weights = {"a": 1.0, "b": 1.0}
    assert fuse([("a", 2.0), ("b", 0.0)], [], weights) == [("a", 1.0), ("b", 0.0)]
    assert fuse([("a", 2.0)], [], {"a": 1.0}) == [("a", 1.0)]
    # A best score under 1 is still what the others are divided by.
    assert fuse([("a", 0.5), ("b", 0.25)], [], weights) == [("a", 1.0), ("b", 0.5)]


def test_equal_scores_outside_the_semantic_ranking_are_in_id_order():
    from lantern_git.index.ranking import fuse

    keys = ["h", "c", "f", "a", "g", "b", "e", "d"]
    fused = fuse([(k, 1.0) for k in keys], [], dict.fromkeys(keys, 1.0))
    assert fused == [(k, 1.0) for k in sorted(keys)]


def test_a_keyword_hit_given_no_weight_counts_its_cosine_alone():
    from lantern_git.index.ranking import fuse

    assert fuse([("a", 1.0)], [("a", 0.5)], {}) == [("a", 0.5)]
    assert fuse([("a", 1.0)], [("a", 0.5)], {"a": 1.0}) == [("a", 1.0)]
    # Whatever its share of the best BM25 (here a quarter, below its cosine).
    assert fuse([("b", 4.0), ("a", 1.0)], [("a", 0.5)], {}) == [("a", 0.5), ("b", 0.0)]


def test_an_id_only_the_semantic_ranking_holds_counts_its_cosine_whatever_its_weight():
    from lantern_git.index.ranking import fuse

    assert fuse([], [("a", 0.5)], {"a": 1.0}) == [("a", 0.5)]
    assert fuse([("b", 2.0)], [("a", 0.5)], {"a": 0.5, "b": 1.0}) == [("b", 1.0), ("a", 0.5)]


@pytest.mark.semantic
def test_a_page_divides_by_the_best_keyword_score_rounded_as_the_keyword_ranking_rounds_it():
    import numpy as np

    from lantern_git.index.ranking import fuse, fuse_page

    vectors, query = unit_rows({"a": 0.25, "b": 0.125})
    rows = np.arange(2, dtype=np.int64)
    page = fuse_page(vectors, query, rows, ["a", "b"], [0, 1], [2.2345678, 1.0], [1.0, 1.0], 5, 0.0)
    assert page.best == 2.234568
    assert page.bm25 == {"a": 2.234568, "b": 1.0}
    # A hit with no vector ("c") is shown and scored with its score rounded the same way.
    ids, docs, scores = ["a", "b", "c"], [0, 1, 2], [2.2345678, 1.0, 1.2345678]
    more = fuse_page(vectors, query, rows, ids, docs, scores, [1.0] * 3, 5, 0.0)
    assert more.bm25["c"] == 1.234568
    assert dict(more.ranked)["c"] == round(1.234568 / 2.234568, 6)
    whole = fuse([("a", 2.234568), ("b", 1.0)], [("a", 0.25), ("b", 0.125)], {"a": 1, "b": 1})
    assert page.ranked == whole == [("a", 1.0), ("b", round(1.0 / 2.234568, 6))]


def test_a_mode_read_from_input_is_compared_by_its_value():
    # A mode typed on a command line is a new string, not the literal the code holds.
    typed = {mode: "".join(list(mode)) for mode in ("keyword", "semantic", "hybrid")}
    assert all(typed[m] is not m for m in typed)
    keyword = explained(typed["keyword"], "deploy", "deploy", 1.0, 1.0, None, None)
    assert keyword["weights"] == {"keyword": 1.0, "semantic": 0.0}
    assert "calibrated" not in keyword and "bm25_best" not in keyword
    semantic = explained(typed["semantic"], "deploy", "deploy", 1.0, 2.0, 0.5, 0.15, weight=1.0)
    assert semantic["weights"] == {"keyword": 0.0, "semantic": 1.0}
    hybrid = explained(typed["hybrid"], "deploy", "deploy", 1.0, 2.0, 0.5, 0.15, weight=1.0)
    assert hybrid["weights"] == {"keyword": 1.0, "semantic": 0.0}
    assert hybrid["bm25_best"] == 2.0


def test_each_embedder_has_its_fusion_rule_and_any_other_the_weight_by_words_held():
    assert fusion("e5") == Fusion("full match", 0.1)
    assert fusion("wordllama") == Fusion("idf share held first", 0.1, 0.25)
    assert fusion("an-embedder-with-no-calibration") == WORDS_HELD == Fusion("words held", 0.0)
    # Every search shares these objects: one caller changing them would change everyone's rule.
    with pytest.raises(dataclasses.FrozenInstanceError):
        FUSIONS["e5"].weight = 0.5  # type: ignore[misc]


def test_the_ranking_rules_load_without_numpy():
    """A keyword search reads the floors and the explain object from here: loading them
    must not load numpy (the CLI starts lean; numpy is for semantic and hybrid searches)."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    code = "import sys, lantern_git.index.ranking; print('numpy' in sys.modules)"
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    result = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
        env=env,
    )
    assert result.stdout.strip() == "False"


@pytest.mark.semantic
def test_a_hit_whose_keyword_part_lifts_it_onto_the_page_is_kept_by_the_shortlist():
    """The page's estimate weighs the cosine by what the keyword weight leaves (1 - w): a hit
    with a small keyword weight, a cosine just under another's and the best BM25 is first."""
    import numpy as np

    from lantern_git.index.ranking import fuse, fuse_page

    vectors, query = unit_rows({"x": 0.5, "y": 0.53125, "z": 0.25})
    rows = np.arange(3, dtype=np.int64)
    whole = fuse([("x", 2.0)], [("y", 0.53125), ("x", 0.5), ("z", 0.25)], {"x": 0.125})
    # max(0.5, 0.125 * 2.0 / 2.0 + 0.875 * 0.5)
    assert whole == [("x", 0.5625), ("y", 0.53125), ("z", 0.25)]
    for end in (1, 2, 3):
        page = fuse_page(vectors, query, rows, ["x", "y", "z"], [0], [2.0], [0.125], end, 0.0)
        assert page.ranked == whole[:end], end


@pytest.mark.semantic
def test_a_page_breaks_equal_cosines_by_id_with_rows_the_journal_added():
    """A row added after the vectors were written (a journal entry) comes after the base rows
    but takes its id's place among them in a tie, as the semantic ranking places it."""
    import numpy as np

    from lantern_git.index.ranking import fuse, fuse_page
    from lantern_git.index.vectors import rank

    vectors, query = unit_rows({"b": 0.5, "c": 0.5})
    entry = {"drop": [], "ids": ["a"], "digests": ["d"], "texts": ["t"], "generation": "1"}
    vectors.apply(entry, np.asarray([[0.5, 0.75**0.5]], dtype=np.float32))
    rows = np.arange(3, dtype=np.int64)
    semantic = rank(vectors, query, rows)
    assert semantic == [("a", 0.5), ("b", 0.5), ("c", 0.5)]
    page = fuse_page(vectors, query, rows, ["b", "c", "a"], [], [], [], 3, 0.0)
    assert page.ranked == fuse([], semantic, {}) == semantic


@pytest.mark.semantic
def test_a_page_divides_by_a_best_keyword_score_below_one():
    import numpy as np

    from lantern_git.index.ranking import fuse, fuse_page

    vectors, query = unit_rows({"a": 0.25, "b": 0.125})
    rows = np.arange(2, dtype=np.int64)
    page = fuse_page(vectors, query, rows, ["a", "b"], [0, 1], [0.5, 0.25], [1.0, 1.0], 5, 0.0)
    whole = fuse([("a", 0.5), ("b", 0.25)], [("a", 0.25), ("b", 0.125)], {"a": 1, "b": 1})
    assert page.ranked == whole == [("a", 1.0), ("b", 0.5)]


def test_a_noise_floor_is_rounded_to_six_places_as_every_floor_is():
    from lantern_git.index.ranking import floor, floors

    margin = floors("wordllama").noise
    assert margin is not None
    got = floor("wordllama", False, noise=0.1234567)
    assert got == round(0.1234567 + margin, 6)
    assert got != round(0.1234567 + margin, 5) and got != round(0.1234567 + margin, 7)


@pytest.mark.semantic  # numpy, which only the semantic extra installs
def test_a_centred_floor_is_each_records_own_above_the_mean_of_both_levels():
    """e5 without a word in common: 0.033 above the mean of the query's level and the
    record's, or the fixed 0.84 when that is lower; rounded to 6 places."""
    import numpy as np

    from lantern_git.index.ranking import centred, record_floors

    got = record_floors("e5", 0.80, np.asarray([0.70, 0.78, 0.86, 0.95, 0.7812345678]))
    assert got.tolist() == [0.783, 0.823, 0.84, 0.84, round(0.033 + (0.80 + 0.7812345678) / 2, 6)]
    assert centred("e5", anchored=False) and not centred("e5", anchored=True)
    # wordllama: 0.144 above the mean of the two levels (each text's best cosine with the
    # probes), or the fixed 0.40 when that is lower
    got = record_floors("wordllama", 0.2, np.asarray([0.1, 0.3, 0.35, 0.6, 0.1234567]))
    assert got.tolist() == [0.294, 0.394, 0.40, 0.40, round(0.144 + (0.2 + 0.1234567) / 2, 6)]
    assert centred("wordllama", anchored=False) and not centred("wordllama", anchored=True)
    assert not centred("an-embedder-with-no-calibration", anchored=False)


def test_a_calibration_of_ones_own_that_names_no_beta_reads_levels_as_means_over_the_bare_words():
    """``Floors(floor, alone, noise, centred=True)``, as docs/search.md tells a user to add one:
    each level is the mean of a text's cosines with the probes (beta 0, the rule e5 shipped with
    first), and the query's is read over the probe words as they are."""
    from lantern_git.index.ranking import Floors

    own = Floors(0.5, 0.9, 0.01, centred=True)
    assert (own.beta, own.probe_text) == (0.0, "{}")


@pytest.mark.semantic  # numpy, which only the semantic extra installs
@pytest.mark.parametrize(
    ("beta", "wanted"),
    [
        # the mean of the cosines with the probes
        (0.0, 0.7),
        # the best
        (float("inf"), 0.9),
        # a soft best, (1 / beta) log mean exp(beta * cosine), worked out here by hand
        (50.0, 0.9 + math.log((math.exp(-20.0) + math.exp(-10.0) + 1.0) / 3.0) / 50.0),
        # a beta large enough to overflow exp unless shifted: the best, to within 1e-9
        (1e9, 0.9 - math.log(3.0) / 1e9),
    ],
)
def test_a_texts_level_over_the_probes_is_their_mean_their_best_or_a_soft_best(beta, wanted):
    import numpy as np

    from lantern_git.index.vectors import probe_level

    got = probe_level(np.asarray([[0.5, 0.7, 0.9], [0.7, 0.9, 0.5]]), beta)
    assert got == pytest.approx([wanted, wanted], abs=1e-12)


@pytest.mark.semantic
@pytest.mark.parametrize("beta", [0.0, 50.0, float("inf")])
def test_every_rows_level_is_the_same_read_whole_or_a_block_at_a_time(beta, monkeypatch):
    """A vector set's levels over the probes (kept per set), base and journal rows alike, read
    in blocks of two rows: each row's own level, as if read alone."""
    import numpy as np

    from lantern_git.index import vectors as vectors_module
    from lantern_git.index.vectors import probe_level

    monkeypatch.setattr(vectors_module, "LEVEL_BLOCK", 2)
    vectors, _ = unit_rows({"a": 0.5, "b": 0.25, "c": 0.75, "d": 0.125, "e": 0.875})
    vectors.extra = np.asarray([[0.6, 0.8], [0.0, 1.0]], dtype=np.float32)
    vectors.ids = [*vectors.ids, "f", "g"]
    probes = np.asarray([[1.0, 0.0], [0.0, 1.0], [0.6, 0.8]], dtype=np.float32)
    rows = np.vstack([vectors.matrix, vectors.extra]).astype(np.float64)
    wanted = [probe_level(row[None, :] @ probes.T.astype(np.float64), beta)[0] for row in rows]
    got = vectors.levels(probes, "three probes", beta)
    assert got == pytest.approx(wanted, abs=1e-6) and len(got) == 7


def test_a_querys_level_is_read_over_the_probes_worded_as_its_embedder_was_calibrated():
    """wordllama's over probe sentences ("The quokka is here."), e5's and an uncalibrated
    embedder's over the probe words themselves."""
    from lantern_git.index.ranking import PROBES, query_probes

    assert query_probes("wordllama")[:2] == ("The quokka is here.", "The zebra is here.")
    assert query_probes("wordllama")[-1] == "The yacht is here."
    assert len(query_probes("wordllama")) == len(PROBES) == 28
    assert query_probes("e5") == PROBES == query_probes("an-embedder-with-no-calibration")


class IdsRead(list[str]):
    """A vector set's ids that note which rows' ids were read: the rows a page scored."""

    def __init__(self, ids: list[str]) -> None:
        super().__init__(ids)
        self.rows: set[int] = set()

    def __getitem__(self, row: Any) -> Any:
        self.rows.add(row)
        return super().__getitem__(row)


@pytest.mark.semantic
@pytest.mark.parametrize(
    ("cosines", "best"), [(True, None), (False, 0.5), (False, 1024.0), (True, 4.0)]
)
def test_a_page_scores_only_the_candidates_near_its_last_score(cosines, best):
    """The page's claim: of many candidates, only those within rounding of the page's last
    score (here none but the page's own: the scores lie 1e-4 apart and more) are scored
    exactly and have their ids looked up. Semantic candidates only; keyword hits with no
    cosine whose shares of a best BM25 of 0.5 or 1024 cluster just above 0.5; and hits that
    are both, each with a keyword weight of 0.5."""
    import numpy as np

    from lantern_git.index.ranking import fuse_page

    count = 300
    names = [f"r{n:03d}" for n in range(count)]
    # Places 1 to 300 dealt in two orders unlike the ids'
    place = {name: (n * 77) % count + 1 for n, name in enumerate(names)}
    other = {name: (n * 131) % count + 1 for n, name in enumerate(names)}
    cosine = {name: place[name] / 4096 if cosines else 0.0 for name in names}
    vectors, query = unit_rows(cosine)
    docs: list[int] = []
    raw: dict[str, float] = {}
    weight = 1.0
    if best is None:
        expected = {name: round(cosine[name], 6) for name in names}
    elif not cosines:
        # The best BM25 (place 300) and the rest at half of it plus place/8192 of it
        raw = {n: best * (1.0 if p == count else 0.5 + p / 8192) for n, p in place.items()}
        # Each BM25 rounded as the keyword ranking rounds it, then divided by the best
        expected = {name: round(round(raw[name], 6) / best, 6) for name in names}
    else:
        weight = 0.5
        raw = {name: best * other[name] / count for name in names}
        expected = {}
        for name in names:
            counted = round(cosine[name], 6)
            share = round(raw[name], 6) / best
            expected[name] = round(max(counted, 0.5 * share + 0.5 * counted), 6)
    if raw:
        docs = list(range(count))
    scores = [raw[name] for name in names] if raw else []
    whole = sorted(expected.items(), key=lambda item: -item[1])
    apart = [high[1] - low[1] for high, low in itertools.pairwise(whole)]
    assert min(apart) > 1e-4
    rows = np.arange(count, dtype=np.int64)
    for end in (1, 2, 7, 150, 299):
        vectors.ids = IdsRead(names)
        page = fuse_page(vectors, query, rows, names, docs, scores, [weight] * len(docs), end, 0.0)
        assert page.ranked == whole[:end], end
        assert vectors.ids.rows == {names.index(key) for key, _ in whole[:end]}, end


@pytest.mark.semantic
@pytest.mark.parametrize(
    ("scores", "weights", "keyword"),
    [
        # a: 3 of 5 words, 0.6 * 0.833333 = 0.4999998; b: 3 of 4, 0.75 * 0.666667 = 0.50000025
        (
            [1.0, 0.666667, 0.833333],
            [1.0, 0.75, 0.6],
            [("c", 1.0), ("a", 0.833333), ("b", 0.666667)],
        ),
        # Sums that differ only by the BM25's rounding, which a small best (0.01) magnifies 100
        # times: a's BM25 0.0049996 and b's 0.0050004 both round to 0.005, half the best.
        (
            [0.01, 0.0050004, 0.0049996],
            [1.0, 1.0, 1.0],
            [("c", 0.01), ("a", 0.005), ("b", 0.005)],
        ),
    ],
    ids=["weights", "bm25-rounding"],
)
def test_a_hit_whose_score_rounds_to_the_page_s_last_is_kept_for_the_tie(scores, weights, keyword):
    """Two keyword hits whose sums lie either side of 0.5, less than rounding apart: both
    score 0.5, and the tie goes by id to ``a``, whose sum is the lower. The page of two must
    hold it, though its unrounded sum is below the other's. ``scores`` and ``weights`` are
    documents 2, 1 and 0's (c, b, a); ``keyword`` the same hits as the whole ranking has them."""
    import numpy as np

    from lantern_git.index.ranking import fuse, fuse_page

    vectors, query = unit_rows({"a": 0.0, "b": 0.0, "c": 0.0})
    rows = np.arange(3, dtype=np.int64)
    shares = {"a": weights[2], "b": weights[1], "c": weights[0]}
    whole = fuse(keyword, [], shares)
    assert whole == [("c", 1.0), ("a", 0.5), ("b", 0.5)]
    for end in (1, 2, 3):
        page = fuse_page(
            vectors, query, rows, ["a", "b", "c"], [2, 1, 0], scores, weights, end, 0.0
        )
        assert page.ranked == whole[:end], end


def test_a_word_pair_can_hold_only_the_nearest_record():
    assert WORD_NEAREST == 1


def _at(degrees: float) -> Any:
    """A unit vector in the plane at this angle: two such vectors' cosine is the cosine of the
    angle between them."""
    import numpy as np

    return np.array([math.cos(math.radians(degrees)), math.sin(math.radians(degrees))])


@pytest.mark.semantic
def test_the_closest_words_are_the_pair_with_the_highest_cosine_rounded_to_six_places():
    vectors = {"brief": _at(0), "replies": _at(90), "short": _at(23), "answers": _at(100)}
    pair = closest_words(["brief", "replies"], ["short", "answers"], vectors)
    # replies-answers are 10 degrees apart, brief-short 23
    assert pair == ("replies", "answers", round(math.cos(math.radians(10)), 6))
    assert closest_words(["brief"], ["short", "answers"], vectors) == (
        "brief",
        "short",
        round(math.cos(math.radians(23)), 6),
    )


@pytest.mark.semantic
def test_two_words_of_one_stem_are_no_pair_and_no_words_no_pair():
    vectors = {"answer": _at(0), "answers": _at(0), "replies": _at(30), "brief": _at(80)}
    # answer and answers share their stem: keyword search finds those, so the next pair counts
    assert closest_words(["answer"], ["answers", "replies"], vectors) == (
        "answer",
        "replies",
        round(math.cos(math.radians(30)), 6),
    )
    assert closest_words(["answer"], ["answers"], vectors) is None
    assert closest_words([], ["brief"], vectors) is None
    assert closest_words(["brief"], [], vectors) is None


@pytest.mark.semantic
def test_a_tie_between_pairs_goes_to_the_first_query_word_then_the_first_record_word():
    vectors = {"a": _at(0), "b": _at(0), "x": _at(40), "y": _at(-40)}
    expected = round(math.cos(math.radians(40)), 6)
    assert closest_words(["a", "b"], ["x", "y"], vectors) == ("a", "x", expected)
    assert closest_words(["b", "a"], ["y", "x"], vectors) == ("b", "y", expected)


def test_a_hit_held_to_a_lower_floor_by_a_word_pair_explains_the_pair():
    out = explained("semantic", "brief replies", "answers", None, None, 0.81, 0.8,
                    similar=("replies", "answers", 0.948))  # fmt: skip
    assert out["similar_words"] == {"query": "replies", "record": "answers", "cosine": 0.948}
    assert out["floor"] == 0.8
    assert "similar_words" not in explained("semantic", "brief", "answers", None, None, 0.8, 0.8)


def test_content_words_are_the_typed_words_made_of_letters():
    from lantern_git.index.analysis import content_words

    text = "The deploy at 2am on Friday: Ana's 3 replies, brief"
    assert content_words(text) == ["deploy", "friday", "ana", "replies", "brief"]


def test_a_full_match_fusion_scores_a_share_of_the_full_match_capped_at_one_plus_the_cosine():
    rule = Fusion("full match", 0.1)
    keyword = [("a", 6.0), ("b", 2.0), ("c", 1.0)]
    semantic = [("c", 0.9), ("d", 0.85), ("a", 0.8)]
    # 0.1 * min(bm25 / 4, 1) + 0.9 * cosine; a ranking an id is not in adds 0
    assert fuse_full_match(keyword, semantic, rule, 4.0) == [
        ("c", 0.835),  # 0.1 * 0.25 + 0.9 * 0.9
        ("a", 0.82),  # 0.1 * 1 (6 / 4, capped) + 0.9 * 0.8
        ("d", 0.765),  # 0.9 * 0.85
        ("b", 0.05),  # 0.1 * 0.5
    ]


def test_a_full_match_fusion_without_a_full_match_divides_by_the_best_bm25():
    rule = Fusion("full match", 0.5)
    keyword = [("a", 4.0), ("b", 1.0)]
    semantic = [("b", 0.5)]
    assert fuse_full_match(keyword, semantic, rule, None) == [("a", 0.5), ("b", 0.375)]
    assert fuse_full_match(keyword, semantic, rule, 0.0) == [("a", 0.5), ("b", 0.375)]
    # No keyword hit at all: the cosines alone, weighed
    assert fuse_full_match([], [("x", 0.8)], rule, None) == [("x", 0.4)]
    # Keyword scores of 0 alone (no full match): divided by 1, never by their 0
    assert fuse_full_match([("a", 0.0)], [("b", 0.5)], rule, None) == [("b", 0.25), ("a", 0.0)]


def test_a_full_match_fusion_breaks_equal_scores_by_the_semantic_order_then_id():
    rule = Fusion("full match", 0.5)
    # y (semantic only) and x (keyword only) both score 0.5: y is in the semantic ranking.
    assert fuse_full_match([("x", 2.0)], [("y", 1.0)], rule, 2.0) == [("y", 0.5), ("x", 0.5)]
    # Keyword hits alone, equal: by id, whatever order they come in.
    ids = ["q", "b", "x", "a", "m", "c", "z", "k"]
    tied = fuse_full_match([(key, 1.0) for key in ids], [], rule, 4.0)
    assert tied == [(key, 0.125) for key in sorted(ids)]


def test_a_full_match_fusion_rounds_to_six_places():
    rule = Fusion("full match", 0.1)
    # 0.1 * 1 / 3 = 0.0333...; 0.9 * 0.7777777 = 0.69999993
    assert fuse_full_match([("a", 1.0)], [("b", 0.7777777)], rule, 3.0) == [
        ("b", 0.7),
        ("a", 0.033333),
    ]


def test_without_a_full_match_the_scale_is_the_first_keyword_score_even_beside_a_zero():
    rule = Fusion("full match", 0.5)
    # The best is 0.5, so a's share is 1; a hit scoring 0 (a word of no weight) shares nothing
    assert fuse_full_match([("a", 0.5), ("b", 0.0)], [], rule, None) == [("a", 0.5), ("b", 0.0)]


def test_a_full_match_hit_explains_the_rule_s_weights_and_the_full_match():
    rule = Fusion("".join(["full", " ", "match"]), 0.1)
    out = explained("hybrid", "deploy", "deploy", 3.0, 4.0, 0.82, 0.8, rule=rule, full=2.5)
    assert out["fusion"] == "full match"
    assert out["weights"] == {"keyword": 0.1, "semantic": 0.9}
    assert out["full_match"] == 2.5 and out["bm25_best"] == 4.0
    none = explained("hybrid", "a AND b", "a b", 3.0, 4.0, 0.82, 0.8, rule=rule, full=None)
    assert none["full_match"] is None
    # The other rules name no full match, whatever their names sort by.
    words = explained("hybrid", "deploy", "deploy", 3.0, 4.0, 0.82, 0.8, weight=1.0)
    assert "full_match" not in words
    other = explained("hybrid", "deploy", "deploy", 3.0, 4.0, 0.82, 0.8, rule=Fusion("a", 0.5))
    assert "full_match" not in other


FIRST = Fusion("idf share held first", 0.1, 0.25)


def test_a_hit_holding_a_quarter_of_the_idf_goes_first_to_six_places_under_that_rule_only():
    assert held_first(0.25, FIRST) and held_first(1.0, FIRST)
    assert not held_first(0.249999, FIRST) and not held_first(0.0, FIRST)
    # Rounded to six places, as --explain shows it: 0.2499996 is shown 0.25, and goes first
    assert held_first(0.2499996, FIRST) and not held_first(0.2499994, FIRST)
    assert not held_first(1.0, Fusion("full match", 0.1, 0.25))
    assert not held_first(1.0, WORDS_HELD)


def test_an_idf_share_fusion_puts_the_hits_held_first_above_every_other():
    keyword = [("a", 4.0), ("b", 2.0), ("c", 1.0)]
    semantic = [("d", 0.95), ("c", 0.9), ("a", 0.2)]
    shares = {"a": 0.2, "b": 0.5, "c": 0.25}
    # 0.1 * bm25 / 4 + 0.9 * cosine, and 1 more for b and c (a quarter of the idf or more)
    assert fuse_first(keyword, semantic, FIRST, shares) == [
        ("c", 1.835),  # 1 + 0.1 * 0.25 + 0.9 * 0.9
        ("b", 1.05),  # 1 + 0.1 * 0.5
        ("d", 0.855),  # 0.9 * 0.95
        ("a", 0.28),  # 0.1 * 1 + 0.9 * 0.2
    ]
    # A share not given is none; an id the semantic ranking alone holds is never lifted
    assert fuse_first(keyword, semantic, FIRST, {"d": 1.0}) == [
        ("d", 0.855),
        ("c", 0.835),
        ("a", 0.28),
        ("b", 0.05),
    ]


def test_an_idf_share_fusion_divides_by_the_best_bm25_and_by_one_when_it_is_zero():
    rule = Fusion("idf share held first", 0.5, 0.25)
    assert fuse_first([("a", 4.0), ("b", 1.0)], [("b", 0.5)], rule, {}) == [
        ("a", 0.5),
        ("b", 0.375),
    ]
    assert fuse_first([("a", 0.0)], [("b", 0.5)], rule, {}) == [("b", 0.25), ("a", 0.0)]
    assert fuse_first([], [("x", 0.8)], rule, {}) == [("x", 0.4)]


def test_an_idf_share_fusion_divides_by_the_first_keyword_score_even_beside_a_zero():
    rule = Fusion("idf share held first", 0.5, 0.25)
    # The best is 0.5, so a's share of it is 1; a hit scoring 0 (a word of no weight) has none
    assert fuse_first([("a", 0.5), ("b", 0.0)], [], rule, {}) == [("a", 0.5), ("b", 0.0)]


def test_an_idf_share_fusion_rounds_a_cosine_alone_to_six_places_and_never_lifts_it():
    # 0.9 x 0.123457 = 0.1111113: six places 0.111111, where five would give 0.11111
    assert fuse_first([], [("b", 0.123457)], FIRST, {"b": 1.0}) == [("b", 0.111111)]


def test_an_idf_share_fusion_breaks_equal_scores_by_the_semantic_order_then_id_and_rounds():
    rule = Fusion("idf share held first", 0.5, 0.25)
    assert fuse_first([("x", 2.0)], [("y", 1.0)], rule, {}) == [("y", 0.5), ("x", 0.5)]
    ids = ["q", "b", "x", "a", "m", "c", "z", "k"]
    tied = fuse_first([(key, 1.0) for key in ids], [], rule, dict.fromkeys(ids, 0.3))
    assert tied == [(key, 1.5) for key in sorted(ids)]
    # 1 + 0.1 * 1 / 3 = 1.0333...
    assert fuse_first([("b", 3.0), ("a", 1.0)], [], FIRST, {"a": 0.3}) == [
        ("a", 1.033333),
        ("b", 0.1),
    ]


def test_an_idf_share_hit_explains_the_rule_s_weights_its_share_and_whether_it_went_first():
    out = explained("hybrid", "deploy", "deploy", 3.0, 4.0, 0.82, 0.15, rule=FIRST, share=0.3)
    assert out["fusion"] == "idf share held first"
    assert out["weights"] == {"keyword": 0.1, "semantic": 0.9}
    assert out["idf_share"] == 0.3 and out["first"] is True
    assert "full_match" not in out
    under = explained("hybrid", "a b", "a", 3.0, 4.0, 0.8, 0.15, rule=FIRST, share=0.12345678)
    assert under["idf_share"] == 0.123457 and under["first"] is False
    # A hit given no share holds none, and does not go first
    given_none = explained("hybrid", "a b", "c", 0.0, 4.0, 0.8, 0.15, rule=FIRST)
    assert given_none["idf_share"] == 0.0 and given_none["first"] is False
    # The other rules name no share, whatever their names sort by
    for rule in (WORDS_HELD, Fusion("full match", 0.1), Fusion("a rule", 0.5)):
        other = explained("hybrid", "deploy", "deploy", 3.0, 4.0, 0.82, 0.8, rule=rule)
        assert "idf_share" not in other and "first" not in other
    assert "idf_share" not in explained("semantic", "deploy", "deploy", 3.0, 4.0, 0.82, 0.8)


@pytest.mark.semantic
@pytest.mark.parametrize("with_no_vector", [True, False])
def test_an_idf_share_page_is_the_top_of_its_whole_ranking_at_every_length(with_no_vector):
    """A page under the idf share held first, scored in bulk, against the whole ranking
    (fuse_first): lifted hits far down by cosine and BM25, or with no vector at all, must reach
    the page's first places through their lift; a semantic candidate alone scores its weighed
    cosine, so that a keyword hit of a slightly lower cosine stays above it; and a keyword hit
    far down must not push the page's last semantic candidate off it."""
    import numpy as np

    from lantern_git.index.ranking import fuse_page

    rule = Fusion("idf share held first", 0.1, 0.25)
    # Forty semantic candidates with cosines 0.5 to 0.89 and t at 0.895, then keyword hits:
    # "low" lifted with the least cosine and BM25, "mid" not lifted, "kw" not lifted, near by
    # cosine and low by BM25, "weak" not lifted and far down, "gone" lifted with a cosine under
    # the floor, "novec" lifted with no vector (written between the index and the vectors)
    cosines = {f"s{n:02d}": 0.5 + n / 100 for n in range(40)}
    cosines |= {"t": 0.895, "low": 0.2, "mid": 0.785, "kw": 0.8805, "weak": 0.3, "gone": -0.1}
    vectors, query = unit_rows(cosines)
    ids = [*sorted(cosines), "novec"]
    rows = np.arange(len(cosines), dtype=np.int64)[::-1].copy()  # in no particular order
    hits = [("mid", 4.0, False, 0.1), ("low", 1.0, True, 0.3), ("kw", 0.4, False, 0.05)]
    hits += [("weak", 0.5, False, 0.05)]
    hits += [("gone", 0.5, True, 0.9)] + ([("novec", 0.25, True, 0.5)] if with_no_vector else [])
    docs = [ids.index(key) for key, *_ in hits]
    scores, lifted = [score for _, score, _, _ in hits], [lift for _, _, lift, _ in hits]
    read = vectors.scores(query)  # rank rounds the float32 cosines as fuse_page reads them
    semantic = sorted(
        ((key, round(float(read[ids.index(key)]), 6)) for key in cosines if cosines[key] >= 0.1),
        key=lambda item: (-item[1], item[0]),
    )
    keyword = [(key, score) for key, score, _, _ in hits]
    whole = fuse_first(keyword, semantic, rule, {key: share for key, *_, share in hits})
    # Lifted, whatever their cosines: 1 + 0.1 x 0.25 + 0.9 x 0.2, 1 + 0.1 x 0.125, 1 + 0.1 x
    # 0.0625; then mid, 0.1 + 0.9 x 0.785 = 0.8065, above t's 0.9 x 0.895 = 0.8055 (their
    # cosines unweighed would put t and s39 above it); kw, 0.1 x 0.1 + 0.9 x 0.8805 = 0.80245,
    # above s39's 0.801; weak, 0.1 x 0.125 + 0.9 x 0.3, far down
    ahead = ["low", "gone", "novec"] if with_no_vector else ["low", "gone"]
    assert [key for key, _ in whole[: len(ahead) + 4]] == [*ahead, "mid", "t", "kw", "s39"]
    assert [key for key, _ in whole].index("weak") > 40
    for end in range(1, 12):
        page = fuse_page(
            vectors, query, rows, ids, docs, scores, [0.1] * len(hits), end, 0.1, rule, lifted
        )
        assert page.ranked == whole[:end], end


@pytest.mark.semantic
def test_a_page_under_a_rule_of_another_name_is_the_weight_by_words_held_s():
    """fuse_page scores by the idf share held first only under that rule, whatever another
    rule's name sorts by ("full match" sorts before it)."""
    import numpy as np

    from lantern_git.index.ranking import fuse, fuse_page

    vectors, query = unit_rows({"a": 0.5, "b": 0.25, "c": 0.75})
    rows = np.arange(3, dtype=np.int64)
    whole = fuse([("b", 2.0), ("a", 1.0)], [("c", 0.75), ("a", 0.5), ("b", 0.25)], {"b": 1.0})
    for rule in (WORDS_HELD, Fusion("full match", 0.1), Fusion("a rule", 0.5)):
        page = fuse_page(
            vectors, query, rows, ["a", "b", "c"], [1, 0], [2.0, 1.0], [1.0, 0.0], 3, 0.1,
            rule, [True, True],
        )  # fmt: skip
        assert page.ranked == whole, rule
