"""Hybrid search fuses both rankings, for records and for source chunks, as docs/search.md
defines it: ``max(cosine, w × BM25 / (the best BM25 among the candidates) + (1 − w) × cosine)``,
where ``w`` is the share of the query's words (as typed, stop words aside) that the text
holds, as written or by stem; the cosine counted only at or above the similarity floor (0.15
for wordllama when the query shares a word with the texts searched, as here), over the keyword
matches and the texts at or above the floor, best first.

The expected order and scores are computed here from that formula: the cosine from the
embedder's own vectors (numpy, the model rather than the code under test), the BM25 scores from
a keyword-mode search (a path tested on its own), the words each text holds counted by hand.
The texts are chosen so that the cosine alone puts one text first and the fused score another:
a search that dropped either side would rank them the other way round. If the documented
formula changes, only ``fused`` below changes.

This rule is the one for an embedder without a rule of its own (model2vec, one of yours);
wordllama's is the idf share held first (tests/surfaces/test_fusion_per_embedder.py). Its
vectors and floor serve here, with the rule set to the weight by words held in this process.
"""

from __future__ import annotations

import pytest

from lantern_git.evidence.sources import SourceInput

FLOOR = 0.15  # docs/search.md: wordllama's floor for a query that shares a word with the texts
QUERY = "what kind of replies does Ana like"
# Its words as typed, stop words aside: what, kind, replies, does, ana, like ("of" is one).
WORDS = 6
# By meaning, "Ana prefers short answers." is nearest the question; the last text shares most of
# its words ("what kind", "does Ana like") and so wins on BM25 by a wide margin and holds five
# of its six words, enough to lead the fused ranking though its cosine is lower.
MEANING_FIRST = "Ana prefers short answers."
WORDS_FIRST = "What kind of editor does Ana like? She uses helix."
TEXTS = [
    MEANING_FIRST,
    "Ana's editor is helix.",
    "Ana lives in Lisbon and works remotely.",
    "Ship the beta on Friday.",
    "Raphael likes separate branches on his repos.",
    WORDS_FIRST,
]
# How many of the query's words each text holds, counted by hand ("likes" holds "like" by its
# stem; "lives" is not "like").
HELD = {
    MEANING_FIRST: 1,  # ana
    "Ana's editor is helix.": 1,  # ana
    "Ana lives in Lisbon and works remotely.": 1,  # ana
    "Ship the beta on Friday.": 0,
    "Raphael likes separate branches on his repos.": 1,  # like
    WORDS_FIRST: 5,  # what, kind, does, ana, like
}


@pytest.fixture(autouse=True)
def _words_held(monkeypatch):
    from lantern_git.index import ranking

    monkeypatch.setitem(ranking.FUSIONS, "wordllama", ranking.WORDS_HELD)


# Scores are rounded to 6 places by the product; the test's own float64 cosine of the model's
# float32 vectors differs from the product's float32 one in the 7th place.
CLOSE = 1e-5


def cosines(query: str, texts: list[str]) -> dict[str, float]:
    import numpy as np

    from lantern_git.index.embedders import load_embedder

    rows = load_embedder("wordllama").embed([query, *texts]).astype(np.float64)
    rows /= np.linalg.norm(rows, axis=1, keepdims=True)
    return {text: float(rows[1 + i] @ rows[0]) for i, text in enumerate(texts)}


def above_floor(cosine: dict[str, float]) -> dict[str, float]:
    """The semantic candidates: the texts whose cosine reaches the floor."""
    return {text: c for text, c in cosine.items() if c >= FLOOR}


def fused(
    bm25: dict[str, float], cosine: dict[str, float], held: dict[str, int], words: int
) -> dict[str, float]:
    """The documented formula, over the candidates: keyword matches and texts at the floor,
    each keyword match weighed by the share of the query's ``words`` it holds, never below
    its cosine (0 under the floor)."""
    best = max(bm25.values())
    counted = above_floor(cosine)
    scores = {}
    for text in set(bm25) | set(counted):
        weight = held[text] / words if text in bm25 else 0.0
        semantic = counted.get(text, 0.0)
        mixed = weight * bm25.get(text, 0.0) / best + (1 - weight) * semantic
        scores[text] = max(semantic, mixed)
    return scores


def by_score(scores: dict[str, float]) -> list[str]:
    return sorted(scores, key=lambda text: -scores[text])


def check_expected(bm25: dict[str, float], cosine: dict[str, float]) -> dict[str, float]:
    """The premise of the test, from the formula alone: meaning and fusion disagree on the top."""
    expected = fused(bm25, cosine, HELD, WORDS)
    assert by_score(cosine)[0] == MEANING_FIRST
    assert by_score(expected)[0] == WORDS_FIRST
    # Wide margins, so the premise does not hang on rounding.
    assert cosine[MEANING_FIRST] - cosine[WORDS_FIRST] > 0.02
    assert expected[WORDS_FIRST] - expected[MEANING_FIRST] > 0.03
    # And the floor leaves a text out: one the keyword side does not match either.
    assert set(cosine) - set(expected)
    return expected


def assert_ranked(got: list[tuple[str, float]], expected: dict[str, float]) -> None:
    order = by_score(expected)
    assert [text for text, _ in got] == order[: len(got)]
    for text, score in got:
        assert score == pytest.approx(expected[text], abs=CLOSE), text


@pytest.mark.semantic
def test_record_hybrid_search_ranks_by_the_fused_score_not_the_cosine_alone(store, store_path):
    for text in TEXTS:
        store.add(text, kind="fact", scope="user:ana")
    bm25 = {hit.record.content: hit.score for hit in store.search(QUERY, mode="keyword")}
    cosine = cosines(QUERY, TEXTS)
    expected = check_expected(bm25, cosine)
    # The semantic mode agrees with the test's cosine (same model, same texts).
    semantic = [(h.record.content, h.score) for h in store.search(QUERY, mode="semantic")]
    assert_ranked(semantic, above_floor(cosine))
    assert len(semantic) == len(above_floor(cosine))

    whole = [(h.record.content, h.score) for h in store.search(QUERY, mode="hybrid")]
    assert len(whole) == len(expected)
    assert_ranked(whole, expected)
    # A page is the head of the same ranking (a page takes a shorter path to its first hits).
    page = [(h.record.content, h.score) for h in store.search(QUERY, mode="hybrid", limit=2)]
    assert_ranked(page, expected)
    second = store.search(QUERY, mode="hybrid", limit=2, offset=1)
    assert [h.record.content for h in second] == by_score(expected)[1:3]


@pytest.mark.semantic
def test_source_hybrid_search_ranks_chunks_by_the_fused_score_not_the_cosine_alone(store):
    for number, text in enumerate(TEXTS):
        body = f"{text}\n"
        source = SourceInput(body.encode(), f"note{number}.md", kind="note", uri=f"note:{number}")
        store.sources.add([source])
    # Each source is one line, so its one chunk's text is its whole body.
    bodies = [f"{text}\n" for text in TEXTS]
    keyword = store.sources.search(QUERY, mode="keyword")
    assert all(hit.lines == (1, 1) and hit.text in bodies for hit in keyword)
    bm25 = {hit.text.rstrip("\n"): hit.score for hit in keyword}
    cosine = {t.rstrip("\n"): c for t, c in cosines(QUERY, bodies).items()}
    expected = check_expected(bm25, cosine)
    semantic = [
        (h.text.rstrip("\n"), h.score) for h in store.sources.search(QUERY, mode="semantic")
    ]
    assert_ranked(semantic, above_floor(cosine))
    assert len(semantic) == len(above_floor(cosine))

    hits = store.sources.search(QUERY, mode="hybrid")
    assert {hit.mode for hit in hits} == {"hybrid"} and len(hits) == len(expected)
    assert_ranked([(h.text.rstrip("\n"), h.score) for h in hits], expected)
    page = store.sources.search(QUERY, mode="hybrid", limit=2, offset=1)
    assert [h.text.rstrip("\n") for h in page] == by_score(expected)[1:3]


# A question in its answer's words, where the answer shares only a name with the chit-chat
# around it: short turns holding only the name come nearer the question by meaning.
QUESTION = "What was Priya promoted to?"
ANSWER = "Priya: I got promoted to senior designer, the raise is small but the title is nice."
TURNS = [
    ANSWER,
    "Priya: That must have been a lot to deal with.",
    "Priya: Let me know how it goes, okay?",
    "Priya: Wow, tell me more about that.",
    "Tomas: They keep promoting that new cafe downtown, on every street corner, every single "
    "week of the year.",
    "Tomas: The ferry was late again this morning, and the one after it got cancelled, so I "
    "walked to work in the rain.",
]
# The question's words as typed: what, was, priya, promoted ("to" is a stop word). Each turn
# after the answer holds one: priya; "promoted" by its stem ("promoting"); "was".
TURN_HELD = {ANSWER: 2} | {turn: 1 for turn in TURNS[1:]}


@pytest.mark.semantic
def test_a_hit_holding_more_of_the_question_outranks_nearer_turns_holding_only_its_name(store):
    for text in TURNS:
        store.add(text, kind="observation", scope="conv:01")
    bm25 = {hit.record.content: hit.score for hit in store.search(QUESTION, mode="keyword")}
    assert set(bm25) == set(TURNS)
    cosine = cosines(QUESTION, TURNS)
    # The premise: by meaning the answer is behind every name-only turn, and so it is under
    # one constant keyword weight of 0.1 (the formula hybrid had before).
    assert all(cosine[turn] > cosine[ANSWER] + 0.1 for turn in TURNS[1:4])
    best = max(bm25.values())
    constant = {t: 0.1 * bm25[t] / best + 0.9 * above_floor(cosine).get(t, 0.0) for t in TURNS}
    assert by_score(constant)[0] != ANSWER
    expected = fused(bm25, cosine, TURN_HELD, 4)
    assert by_score(expected)[0] == ANSWER
    assert expected[ANSWER] - max(expected[turn] for turn in TURNS[1:]) > 0.01  # not rounding
    # A name-only turn keeps its cosine: the word it holds never lowers its score.
    assert all(expected[turn] == cosine[turn] for turn in TURNS[1:4])
    # The last two turns hold a word each with a cosine under the floor: their keyword part.
    for turn in TURNS[4:]:
        assert cosine[turn] < FLOOR and expected[turn] == bm25[turn] / best / 4

    whole = [(h.record.content, h.score) for h in store.search(QUESTION, mode="hybrid")]
    assert len(whole) == len(expected)
    assert_ranked(whole, expected)
    page = [(h.record.content, h.score) for h in store.search(QUESTION, mode="hybrid", limit=3)]
    assert_ranked(page, expected)
