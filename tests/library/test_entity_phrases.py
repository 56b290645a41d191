"""A chunk holds an entity's name or alias as a phrase: every word of it, in order, stop words
and initials included, so "A. García" is never held by any García (docs/entities.md)."""

from __future__ import annotations

import pytest

from lantern_git.evidence.sources import SourceInput
from lantern_git.index.analysis import holds_phrase, phrase_words

ALIAS = phrase_words("A. García")

# (text, held by "A. García"): the near misses a phrase of its significant words alone took.
NEAR_MISSES = [
    ("I met A. García at the offsite.", True),
    ("i met a. garcía at the offsite.", True),
    ("Call A García tomorrow.", True),  # punctuation aside, the same words
    ("[[A. García]] asked for the notes.", True),
    ("García sent the notes.", False),  # the word alone: the bug
    ("B. García sent the notes.", False),
    ("A. Garcías sent the notes.", False),
    ("Ana María García sent them.", False),
    ("A. and García met.", False),
    ("García, A. sent them.", False),
    ("A.García sent them.", False),  # one word, not two
    ("", False),
]


@pytest.mark.parametrize(("text", "held"), NEAR_MISSES)
def test_a_phrase_is_every_word_in_order_with_initials_and_stop_words(text, held):
    assert holds_phrase(text, (ALIAS,)) is held


def test_hostile_names_are_only_their_words():
    # Quotes, backslashes and regex characters are not syntax: only the words count.
    hostile = phrase_words('"Quoted" \\ back.*slash (AG)')
    assert hostile == ("quoted", "back", "slash", "ag")
    assert holds_phrase("the quoted back slash ag team", (hostile,))
    assert not holds_phrase("quoted back slash", (hostile,))
    # A name of no words holds nothing, and nothing holds it.
    assert phrase_words("*** ...") == ()
    assert not holds_phrase("*** ...", ((),))
    # The words of a stop-word name are kept: "The Who" is not held by "who".
    assert holds_phrase("Saw The Who live.", (phrase_words("The Who"),))
    assert not holds_phrase("Who is that?", (phrase_words("The Who"),))


def _source(store, uri: str, text: str) -> str:
    (added,) = store.sources.add([SourceInput(text.encode(), uri=uri)])
    return added.manifest.id


def test_entity_show_and_source_search_hold_the_alias_as_a_phrase(store):
    store.entities.add("person:ana", name="Ana García", aliases=["A. García"])
    held = {
        _source(store, "chat:1", "User: I met A. García at the offsite.\nAssistant: Noted.\n"),
        _source(store, "chat:2", "User: ana garcía called.\nAssistant: Noted.\n"),
        _source(store, "chat:3", "User: [[person:ana]] asked.\nAssistant: Noted.\n"),
    }
    missed = {
        _source(store, "chat:4", "User: García from Beta called.\nAssistant: Noted.\n"),
        _source(store, "chat:5", "User: B. García called.\nAssistant: Noted.\n"),
        _source(store, "chat:6", "User: Ana María García called.\nAssistant: Noted.\n"),
    }
    shown = store.entity_show("person:ana")
    found = {ref.split("@")[0].removeprefix("source:") for ref in shown["chunks"]}
    assert found == held and shown["chunk_count"] == 3
    labels = store.entities.labels("person:ana")
    hits = store.sources.search("noted", phrases=labels, mode="keyword")
    assert {hit.source_id for hit in hits} == held
    assert not {hit.source_id for hit in hits} & missed
