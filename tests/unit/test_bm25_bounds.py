"""The parts of a pruned keyword page (lantern_git.index.bm25) asked directly: the bound of a
word's score, a document's score summed as every posting's scoring sums it, a word's postings
in layers by weight, the floor and the raised bounds over them, the page's last score, and
which word's level comes down next.

``tests/library/test_bm25_pruned_page.py`` holds the whole page against every posting scored
on real indexes; these hold each rule at values where a changed bound or order shows (a
mutation of any of them either breaks one of these or makes a page differ there).
"""

from __future__ import annotations

import pytest
from whoosh.analysis import SpaceSeparatedTokenizer
from whoosh.fields import TEXT, Schema

from lantern_git.index import bm25, whoosh_compat
from lantern_git.index.bm25 import (
    BOUND_MARGIN,
    Layers,
    document_scores,
    length_norms,
    level_floor,
    lower_level,
    page_cutoff,
    raised_bounds,
    score_bound,
    shortest_norm,
    weight_layers,
    word_levels,
)


def test_a_bound_is_bm25_of_that_weight_at_that_norm():
    # factor * (w * 2.2) / (w + norm), K1 = 1.2
    assert score_bound(2.0, 1.0, 1.2) == 2.0
    assert score_bound(1.0, 2.0, 0.2) == pytest.approx(4.4 / 2.2)
    assert score_bound(0.5, 3.0, 1.0) == pytest.approx(0.5 * 6.6 / 4.0)


def test_a_bound_grows_with_the_weight_and_falls_with_the_norm():
    assert score_bound(1.0, 2.0, 1.0) > score_bound(1.0, 1.0, 1.0)
    assert score_bound(1.0, 1.0, 0.5) > score_bound(1.0, 1.0, 1.0)
    assert score_bound(1.0, 0.0, 1.0) == 0.0


def test_length_norms_are_k1_times_one_less_b_plus_b_times_the_relative_length():
    assert length_norms([0, 10, 20], 10.0) == pytest.approx([0.3, 1.2, 2.1])


def test_the_shortest_norm_is_the_least_codes_norm_in_either_order_of_norms():
    rising = [0.3, 0.5, 0.9, 1.4]
    assert shortest_norm(bytes([3, 2, 2, 3]), rising) == 0.9
    assert shortest_norm([1, 3], rising) == 0.5
    # Norms that fall somewhere as codes rise: each code present looked up.
    uneven = [0.3, 1.5, 0.9, 1.4]
    assert shortest_norm([1, 2, 3], uneven) == 0.9
    assert shortest_norm([1, 3], uneven) == 1.4
    # Rising two codes apart but falling one apart: still uneven.
    assert shortest_norm([1, 2], [0.1, 3.0, 2.0]) == 2.0


def test_a_documents_score_sums_the_words_it_holds_in_the_querys_order():
    # Two words: the first in documents 1 and 4 (tf 1 and 3), the second in 4 and 7 (tf 2, 1).
    terms = [(2.0, [1, 4], [1.0, 3.0]), (0.5, [4, 7], [2.0, 1.0])]
    scores = document_scores(terms, [1, 4, 5, 7], [1.2, 0.8, 1.0, 2.2])
    first = 2.0 * ((1.0 * 2.2) / (1.0 + 1.2))
    both = 2.0 * ((3.0 * 2.2) / (3.0 + 0.8)) + 0.5 * ((2.0 * 2.2) / (2.0 + 0.8))
    last = 0.5 * ((1.0 * 2.2) / (1.0 + 2.2))
    assert scores == [first, both, 0.0, last]
    # The same floats, summed in the same order, as a posting at a time: bit for bit.
    assert scores[1] == 0.0 + 2.0 * ((3.0 * 2.2) / (3.0 + 0.8)) + 0.5 * ((2.0 * 2.2) / 2.8)


def test_a_document_past_the_last_posting_holds_nothing():
    assert document_scores([(1.0, [2], [1.0])], [0, 3, 9], [1.0, 1.0, 1.0]) == [0.0, 0.0, 0.0]


def test_layers_keep_the_postings_above_the_lowest_weight_heaviest_first():
    layers = weight_layers([0, 2, 5, 6, 9], [1.0, 3.0, 1.0, 2.0, 3.0])
    assert layers.lowest == 1.0
    assert list(layers.negated) == [-3.0, -3.0, -2.0]
    assert sorted(layers.ids[:2]) == [2, 9] and layers.ids[2] == 6
    assert layers.heavier_than(2.0) == 2
    assert layers.heavier_than(1.0) == 3
    assert layers.heavier_than(3.0) == 0
    assert layers.heavier == (3.0, 2.0)


def test_layers_of_no_postings_are_empty_with_lowest_zero():
    empty = weight_layers([], [])
    assert (list(empty.ids), list(empty.negated), empty.lowest, empty.heavier) == ([], [], 0.0, ())
    single = weight_layers([4], [2.0])
    assert (list(single.ids), list(single.negated), single.lowest) == ([], [], 2.0)


def test_a_floor_adds_each_held_words_bound_at_its_level():
    held = weight_layers([0, 1], [1.0, 2.0])
    absent = Layers([], [], 0.0)
    terms = [(1.0, held), (3.0, absent), (0.5, held)]
    floor = level_floor(terms, [2.0, 5.0, 1.0], 1.0)
    assert floor == score_bound(1.0, 2.0, 1.0) + score_bound(0.5, 1.0, 1.0)


def test_a_raised_bound_is_the_floor_plus_what_each_heavier_weight_adds():
    first = weight_layers([0, 1, 2], [1.0, 3.0, 2.0])
    second = weight_layers([1, 3], [1.0, 4.0])
    terms = [(1.0, first), (2.0, second)]
    levels = [1.0, 1.0]
    floor = level_floor(terms, levels, 0.5)
    bounds = raised_bounds(terms, levels, 0.5)
    low_first, low_second = score_bound(1.0, 1.0, 0.5), score_bound(2.0, 1.0, 0.5)
    assert set(bounds) == {1, 2, 3}
    assert bounds[1] == pytest.approx(floor + score_bound(1.0, 3.0, 0.5) - low_first)
    assert bounds[2] == pytest.approx(floor + score_bound(1.0, 2.0, 0.5) - low_first)
    assert bounds[3] == pytest.approx(floor + score_bound(2.0, 4.0, 0.5) - low_second)
    # A higher level raises only what weighs more than it.
    assert set(raised_bounds(terms, [2.0, 1.0], 0.5)) == {1, 3}
    assert raised_bounds(terms, [3.0, 4.0], 0.5) == {}
    # A first word with nothing above its level leaves the next word's raised documents.
    assert set(raised_bounds(terms, [3.0, 1.0], 0.5)) == {3}
    # Far above its level (a long shortest length), a weight adds more than the level's bound.
    long_terms = [(1.0, weight_layers([0, 1], [1.0, 20.0]))]
    far = raised_bounds(long_terms, [1.0], 3.0)
    assert far[1] == pytest.approx(score_bound(1.0, 20.0, 3.0))
    assert score_bound(1.0, 20.0, 3.0) > 2 * score_bound(1.0, 1.0, 3.0)


def test_every_raised_bound_is_at_least_the_score_of_its_document():
    ids, weights = [0, 1, 2, 3], [1.0, 3.0, 2.0, 1.0]
    terms = [(1.5, weight_layers(ids, weights))]
    norms = [1.0, 0.9, 1.4, 0.9]
    bounds = raised_bounds(terms, [1.0], min(norms))
    scores = document_scores([(1.5, ids, weights)], ids, norms)
    floor = level_floor(terms, [1.0], min(norms))
    for doc, score in zip(ids, scores):
        assert score <= bounds.get(doc, floor)


def test_a_page_cutoff_is_the_end_th_best_rounded_or_none_with_fewer():
    assert page_cutoff([0.5, 2.0000004, 1.0, 3.0], 2) == 2.0
    assert page_cutoff([0.5, 1.0], 3) is None
    assert page_cutoff([0.5, 1.0, 0.25], 3) == 0.25
    assert page_cutoff([0.1234567, 0.9], 2) == 0.123457  # six places, as a page rounds
    assert BOUND_MARGIN > 5e-7  # above what rounding moves a score


def test_the_word_with_the_largest_bound_and_a_level_left_comes_down_one_step():
    levels = [3.0, 5.0, 2.0]
    steps = [[3.0, 2.0, 1.0], [5.0, 4.0], [2.0]]
    assert lower_level(levels, steps, [1.0, 0.5, 9.0])
    assert levels == [2.0, 5.0, 2.0]  # the third is at its last level
    assert lower_level(levels, steps, [0.1, 0.5, 9.0])
    assert levels == [2.0, 4.0, 2.0]
    assert lower_level(levels, steps, [0.1, 0.5, 9.0])
    assert levels == [1.0, 4.0, 2.0]
    assert not lower_level(levels, steps, [0.1, 0.5, 9.0])
    assert levels == [1.0, 4.0, 2.0]


def test_a_tie_of_bounds_lowers_the_first_word():
    levels = [2.0, 2.0]
    assert lower_level(levels, [[2.0, 1.0], [2.0, 1.0]], [1.0, 1.0])
    assert levels == [1.0, 2.0]


def test_a_words_levels_run_from_its_heaviest_weight_to_its_segments_heaviest_lowest():
    one = weight_layers([0, 1, 2], [1.0, 4.0, 2.0])
    other = weight_layers([0, 1, 2], [2.0, 3.0, 2.0])
    assert word_levels([one, other]) == [4.0, 3.0, 2.0]
    assert word_levels([one, Layers([], [], 0.0)]) == [4.0, 2.0, 1.0]
    # A weight above one segment's lowest but below another's lowest is no level.
    light = weight_layers([0, 1, 2], [1.0, 1.5, 4.0])
    assert word_levels([light, other]) == [4.0, 3.0, 2.0]
    assert word_levels([Layers([], [], 0.0)]) == []


def one_word_segment(weights: list[float]) -> bm25._Layout:
    """A segment of documents 0, 1, ... all of length norm 1.0, each holding one query word
    (factor 1.0) ``weights[doc]`` times."""
    ids = list(range(len(weights)))
    return bm25._Layout(
        0,
        [(1.0, weight_layers(ids, weights))],
        [(1.0, ids, weights)],
        bytes([1] * len(weights)),
        [1.0] * 256,
        set(),
        1.0,
    )


def test_documents_left_are_scored_best_bound_first_until_the_next_falls_below_the_page(
    monkeypatch,
):
    monkeypatch.setattr(bm25, "BATCH_AT_LEAST", 1)  # batches of twice the page's end: 2
    weights = [3.0] * 6 + [2.0, 1.0, 1.0]
    layout = one_word_segment(weights)
    scores = document_scores(layout.postings, list(range(9)), [1.0] * 9)
    found: dict[int, float] = {}
    tried: set[int] = set()
    # Each bound its document's score, but those of 2 to 5 a hair lower (within the margin):
    # they tie the page's last score once rounded, so they are scored too.
    rest = [(scores[doc] - (1e-6 if 2 <= doc <= 5 else 0.0), doc, 0) for doc in range(9)]
    bm25._score_best_first(found, tried, rest, [layout], lambda doc: True, 1, 0.0)
    # End 1: batches of 2, then 4. The first (0 and 1) sets the page's last score; the
    # second (2 to 5) ties it; 6 to 8 score less and are never scored.
    assert found == {doc: scores[doc] for doc in range(6)}
    assert tried == set(range(6))


def test_scoring_the_documents_left_skips_those_not_wanted_and_the_deleted():
    layout = one_word_segment([2.0, 2.0, 2.0, 2.0])
    layout.deleted = {1}
    found: dict[int, float] = {}
    rest = [(5.0, doc, 0) for doc in range(4)]
    bm25._score_best_first(found, set(), rest, [layout], lambda doc: doc != 2, 1, 0.0)
    assert set(found) == {0, 3}


def test_a_page_is_pruned_for_words_alone_from_prune_from_postings_on(monkeypatch):
    monkeypatch.setattr(bm25, "PRUNE_FROM", 5)
    segments = [
        bm25._Segment(None, 0, {"alpha": ([0, 1, 2], [1.0] * 3), "beta": ([1], [1.0])}),
        bm25._Segment(None, 3, {"alpha": ([0], [2.0])}),
    ]
    words = [(("alpha",), 1.0), (("beta",), 0.1)]
    assert bm25.worth_pruning(words, segments)  # 3 + 1 + 1 postings
    assert not bm25.worth_pruning([(("alpha",), 1.0)], segments)  # 4
    assert not bm25.worth_pruning([(("alpha", "beta"), 1.0)], segments)  # a phrase
    assert not bm25.worth_pruning([*words, (("alpha", "beta"), 1.0)], segments)


def test_a_query_of_5000_postings_or_more_is_pruned_and_one_of_fewer_is_not():
    # docs/search.md: fewer postings than 5,000 in a query are scored every one.
    def segment(count: int) -> bm25._Segment:
        return bm25._Segment(None, 0, {"alpha": (range(count), [1.0] * count)})

    words = [(("alpha",), 1.0)]
    assert bm25.worth_pruning(words, [segment(5_000)])
    assert bm25.worth_pruning(words, [segment(6_000)])
    assert not bm25.worth_pruning(words, [segment(4_999)])
    assert bm25.worth_pruning(words, [segment(2_500), segment(2_500)])


def test_kept_layers_count_their_raised_postings_and_one_toward_the_budget():
    # Layers of a word with no posting above its lowest weight still count one, so that
    # such layers, however many words and segments have them, stay within the budget.
    bm25._layers.clear()
    ix = whoosh_compat.memory_index(Schema(content=TEXT(analyzer=SpaceSeparatedTokenizer())))
    writer = ix.writer()
    for words in (["alpha"], ["alpha", "gamma"], ["alpha"] * 3, ["beta"] * 2, ["beta"] * 2):
        writer.add_document(content=" ".join(words))
    writer.commit()
    with ix.searcher() as searcher:
        (reader, _), *_ = searcher.reader().leaf_readers()
        for word, raised in (("alpha", 1), ("beta", 0)):
            before = bm25._layers.currsize
            postings = whoosh_compat.term_postings(reader, bm25.FIELD, word)
            layers = bm25._kept_layers(reader, (word,), postings)
            assert len(layers.ids) == raised
            assert bm25._layers.currsize - before == raised + 1
