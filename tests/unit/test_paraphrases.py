"""The held-out paraphrase set (benchmarks/paraphrases.yaml): what it claims of itself holds.

Each pair is a search and a record that say the same thing in other words, among four
distractors; the set measures semantic recall (``python benchmarks/retrieval.py`` prints it)
and nothing in lantern is tuned on it. These tests check the set's own promises with lantern's
word analysis, so that a keyword match can never be what finds a target.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from whoosh.lang.porter2 import stem

from lantern_git.index.analysis import matched_words, typed_words

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"
SET = BENCHMARKS / "paraphrases.yaml"
# Pairs of the same shape written to tune on (the floor of a search sharing no word with its
# store), kept apart from the held-out set
TUNING = BENCHMARKS / "paraphrases_tuning.yaml"


def pairs(path: Path = SET) -> list[dict]:
    with path.open(encoding="utf-8") as handle:
        return yaml.safe_load(handle)["pairs"]


def test_the_set_has_at_least_forty_pairs_each_among_four_distractors():
    found = pairs()
    assert len(found) >= 40
    for pair in found:
        assert len(pair["distractors"]) == 4, pair["query"]
        assert len({pair["target"], *pair["distractors"]}) == 5, pair["query"]
    assert len({pair["query"] for pair in found}) == len(found)


@pytest.mark.parametrize("path", [SET, TUNING], ids=["held-out", "tuning"])
def test_no_query_shares_a_word_with_its_target_that_a_distractor_lacks(path):
    """As written or by stem, stop words aside: the one word a query may share with its
    target is one that all five records hold (the issue's "where does Ana live")."""
    for pair in pairs(path):
        assert typed_words(pair["query"]), pair["query"]
        held = [set(matched_words(pair["query"], text)) for text in pair["distractors"]]
        shared = set(matched_words(pair["query"], pair["target"]))
        assert all(shared <= words for words in held), (pair["query"], shared)
        assert all(words <= shared for words in held), (pair["query"], held)


def test_the_header_says_the_set_is_held_out():
    head = SET.read_text(encoding="utf-8").split("\npairs:")[0]
    assert "HELD OUT" in head and "must not" in head


def test_the_tuning_pairs_are_apart_from_the_held_out_ones():
    """No tuning query holds a content word (by stem) of a held-out query, and no record of
    one set is in the other: tuning on them is never tuning on the held-out set."""
    held, tuning = pairs(SET), pairs(TUNING)
    assert len(tuning) >= 40
    for pair in tuning:
        assert len(pair["distractors"]) == 4, pair["query"]
    held_stems = {stem(w) for pair in held for w in typed_words(pair["query"])}
    function_words = {stem(w) for w in ("where", "does", "what", "how", "when")}
    for pair in tuning:
        shared = {stem(w) for w in typed_words(pair["query"])} & held_stems - function_words
        assert not shared, (pair["query"], shared)
    held_texts = {t for pair in held for t in (pair["target"], *pair["distractors"])}
    assert not held_texts & {t for p in tuning for t in (p["target"], *p["distractors"])}
    head = TUNING.read_text(encoding="utf-8").split("\npairs:")[0]
    assert "TUNING" in head and "held-out" in head
