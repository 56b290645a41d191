"""A word of digits is its own stem, so the analyzer skips Porter2 for it: the index terms of
every word stay those Porter2 gives."""

from __future__ import annotations

import sys

from hypothesis import given, settings
from hypothesis import strategies as st
from whoosh.lang.porter2 import stem

from lantern_git.index.analysis import word_terms

DIGITS = [chr(code) for code in range(sys.maxunicode + 1) if chr(code).isdigit()]


def porter2_terms(word: str) -> tuple[str, ...]:
    stemmed = stem(word)
    return (word,) if stemmed == word else (word, stemmed)


def test_every_unicode_digit_word_is_its_own_stem():
    assert len(DIGITS) > 700  # not only 0-9: superscripts, circled and other scripts' digits
    for digit in DIGITS:
        for word in (digit, digit * 3, f"1{digit}9", f"{digit}0000"):
            assert word_terms(word) == porter2_terms(word) == (word,), word


# Digits and the letters Porter2's suffixes are made of, mixed: a shortcut wider than "only
# digits" (any digit, alphanumeric, not all letters) stems "1running" or "2026ies" wrongly.
WORDS = st.text(alphabet=st.sampled_from([*"0123456789²٣", *"abeginlsuy'"]), min_size=1)


@settings(max_examples=2000, deadline=None)
@given(WORDS)
def test_a_word_s_terms_are_porter2_s_whatever_digits_it_holds(word):
    assert word_terms(word) == porter2_terms(word), word


def test_mixed_words_still_stem():
    assert word_terms("1running") == ("1running", "1run")
    assert word_terms("2026") == ("2026",)
