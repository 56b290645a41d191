"""How text becomes search terms, for records and source chunks alike.

Whoosh's default stemmer is the original Porter algorithm as Whoosh implements it, which cuts
"running" to "runn" and leaves "deployment" whole, so ``search running`` missed "runs nightly"
and ``search deploy`` missed "the deployment". Porter2 (Snowball English) maps "running",
"runs" → "run", "deployment" → "deploy", "preferring", "prefers" → "prefer".

Each word is indexed as written (lower-cased) and, where it differs, as its stem at the same
position; a query word asks for both, the form as written at a tenth of the stem's weight. A
document with the word as typed matches both and ranks above one that matches only by stem,
and the bonus is small enough not to outweigh another query word. On the labelled recall set
(``benchmarks/recall.py``, keyword mode, recall@1) the weight moved word-form queries from
0.80 (full weight) to 0.86 (1/2), 0.88 (1/4) and 0.91 (1/10, no further gain at 1/100), with
keyword queries at 0.96; Whoosh's Porter stems alone gave 0.875 and 0.94. (That sweep was
made before field lengths counted words, below; with them, 1/10 gives 0.89 and 0.96.)

One field with both forms costs less than a second field: the text is tokenized once, and
this analyzer is faster than Whoosh's stemming one (36 against 54 µs for a 40-word record),
so a rebuild does not pay for the exact matches.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator
from typing import Any

from whoosh.analysis import STOP_WORDS, Filter, StandardAnalyzer
from whoosh.analysis.tokenizers import default_pattern
from whoosh.fields import TEXT, Schema
from whoosh.formats import Positions
from whoosh.lang.porter2 import stem

from ..errors import InvalidInput

FIELD = "content"
# The weight of a word's form as written beside its stem's 1 (see above).
AS_WRITTEN_WEIGHT = 0.1

# Words repeat across records; a bounded cache keeps a rebuild from stemming each one again.
_stem_cached = functools.lru_cache(maxsize=1 << 16)(stem)


def _stem(word: str) -> str:
    # A word of digits is its own stem (Porter2's rules end in letters): numbers, most of them
    # in one record each (ids, counts, times), need no stemming and would push the words that
    # do repeat out of the cache.
    return word if word.isdigit() else _stem_cached(word)


class StemAlongside(Filter):
    """Yields each token as written, then its Porter2 stem when that differs; only the stem
    for a phrase (see :class:`WordForms`)."""

    def __call__(self, tokens: Iterator[Any]) -> Iterator[Any]:
        for token in tokens:
            text = token.text
            stemmed = _stem(text)
            if getattr(token, "stems_only", False):
                token.text = stemmed
                yield token
                continue
            yield token
            words = getattr(token, "words", None)
            if words is not None:
                words[0] += 1
            if stemmed != text:
                # Whoosh reuses one token object; the consumer has read it before it changes.
                token.text = stemmed
                yield token


class WordForms(TEXT):
    """The text field: words as written and their stems. A query word that yields both forms
    becomes an OR of the two, so either one matches.

    A phrase asks for one word per position, so there the query asks for the stems, which
    every indexed word has at its position. Whoosh's parser reads a phrase as the only query
    text it tokenizes with character offsets (``PhrasePlugin``); single words come without."""

    def index(self, value: str, **kwargs: Any) -> Iterator[tuple[bytes, int, float, bytes]]:
        # Whoosh's writer takes a field's length to be the sum of the frequencies given here.
        # A stem beside its word is not another word: the length must count words, or BM25
        # would score a record with inflected words as a longer one ("Ana prefers short
        # answers" as six words, below "Ana's editor is helix" for "Ana"). Frequencies feed
        # nothing else (postings carry the weights), so the first term carries the count.
        if not kwargs and isinstance(value, str) and self.analyzer == _ANALYZER:
            # A writer's call: the same terms, counts, weights and positions, without a Token
            # passing through four generators per word (a third of a rebuild's indexing).
            yield from _indexed(value, self.format)
            return
        words = [0]
        items = list(super().index(value, words=words, **kwargs))
        for number, (term, _, weight, encoded) in enumerate(items):
            yield term, words[0] if number == 0 else 0, weight, encoded

    def tokenize(self, value: str, **kwargs: Any) -> Any:
        if kwargs.get("mode") == "query" and kwargs.get("chars"):
            # Keyword arguments of an analyzer call become attributes of its tokens.
            kwargs["stems_only"] = True
        return self.analyzer(value, **kwargs)


def _analyzer() -> Any:
    return StandardAnalyzer() | StemAlongside()


# What the text field's analyzer is, compared by value (Whoosh compares analyzers by their
# parts): ``_indexed`` does its work only for this one.
_ANALYZER = _analyzer()
_TOKEN = re.compile(default_pattern.pattern, re.UNICODE)
# Whoosh's positions format, whose encoding of a list of positions depends on nothing else.
ONE_POSITION_KEPT = 4096
_ONE_POSITION: dict[int, bytes] = {}
_STOPS = frozenset(STOP_WORDS)


def _indexed(value: str, form: Any) -> Iterator[tuple[bytes, int, float, bytes]]:
    """What ``WordForms.index`` gives for ``value`` through the analyzer, term by term, in the
    same order: Whoosh's tokenizer pattern, lower case, stop words and one-letter words left
    out with positions renumbered from the first word kept (its ``StopFilter``), each word and
    then its stem where that differs at the same position, positions encoded by ``form``;
    the first term's frequency is the count of words (see ``WordForms.index``).
    ``tests/test_word_forms.py`` checks that both ways agree."""
    positions: dict[str, list[int]] = {}
    count = 0
    at = -1
    for number, match in enumerate(_TOKEN.finditer(value)):
        word = match.group(0).lower()
        if len(word) < 2 or word in _STOPS:
            continue
        at = number if at < 0 else at + 1
        count += 1
        held = positions.get(word)
        if held is None:
            positions[word] = [at]
        else:
            held.append(at)
        stemmed = _stem(word)
        if stemmed != word:
            held = positions.get(stemmed)
            if held is None:
                positions[stemmed] = [at]
            else:
                held.append(at)
    boost = form.field_boost
    encode = form.encode
    # Most words occur once in a record: their encoded positions are kept by position.
    once = _ONE_POSITION if type(form) is Positions else {}
    for number, (term, where) in enumerate(positions.items()):
        if len(where) == 1:
            encoded = once.get(where[0])
            if encoded is None:
                encoded = encode(where)
                if len(once) < ONE_POSITION_KEPT:
                    once[where[0]] = encoded
        else:
            encoded = encode(where)
        yield (
            term.encode("utf-8"),
            count if number == 0 else 0,
            len(where) * 1.0 * boost,
            encoded,
        )


def word_forms() -> TEXT:
    return WordForms(analyzer=_analyzer(), multitoken_query="or")


@functools.lru_cache(maxsize=1)
def _parser() -> Any:
    from whoosh import query as Q
    from whoosh.qparser import OrGroup, QueryParser

    class WordFormsParser(QueryParser):
        def multitoken_query(
            self, spec: str, texts: list[str], fieldname: str, termclass: Any, boost: float
        ) -> Any:
            # A word that is not its own stem is a form as written; its stem follows it. The
            # stem is known by being among the texts: Porter2 is not idempotent ("database" ->
            # "databas" -> "databa"), so a stem may itself stem further and is still the stem.
            return Q.Or(
                [
                    termclass(fieldname, text, boost=boost * AS_WRITTEN_WEIGHT)
                    if _stem(text) != text and _stem(text) in texts
                    else termclass(fieldname, text, boost=boost)
                    for text in texts
                ]
            )

    # The parser needs only the analyzer of the field it reads, not the index's schema.
    # Plain OR: a document's score is the sum of its matching words' BM25F scores, so matching
    # more words ranks higher without Whoosh's coordination bonus, which zeroes partial matches.
    return WordFormsParser(FIELD, Schema(**{FIELD: word_forms()}), group=OrGroup)


# A "?" that ends a word: punctuation of a question, not Whoosh's one-character wildcard
# ("called?" matched "callers" and never "called"). A "?" inside a word stays a wildcard.
_QUESTION_MARK = re.compile(r"(?<=\w)\?+(?=[\s\"')\]]|$)")


# What Whoosh's parser reads as syntax rather than words: quotes (a single quote opens a quote
# only where no letter precedes it: "Ana's" is a word), a field's colon, wildcards, ranges,
# groups, a boost, and its operators. A text without any is its words joined by OR.
_WORD = re.compile(r"\S+")
_SYNTAX = re.compile(r"(?<!\w)'|[\":*?\[\]{}()^]|\b(?:AND|OR|NOT|ANDNOT|ANDMAYBE)\b")


def phrase_query(text: str) -> Any:
    """``text``'s words, one after the other, as a Whoosh phrase over the text field (an
    entity's name or alias held by a chunk: docs/entities.md); None when it has no words.

    Only a candidate: the index drops stop words and one-letter words, so the phrase of "A.
    García" is "garcía", which any García holds. :func:`holds_phrase` judges each candidate
    by every word of the name."""
    words = re.sub(r'["\\]', " ", text).strip()
    return text_query(f'"{words}"') if words else None


# The words of a name or a chunk for phrase matching: letters and digits, none dropped. Not the
# index's tokenizer (``_TOKEN``, Whoosh's pattern), which keeps a ``*`` inside a word.
_PHRASE_WORD = re.compile(r"\w+(?:\.?\w+)*")


def phrase_words(text: str) -> tuple[str, ...]:
    """Every word of ``text``, lower-cased, in order: stop words and initials ("A.") kept."""
    return tuple(word.lower() for word in _PHRASE_WORD.findall(text))


def holds_phrase(text: str, phrases: tuple[tuple[str, ...], ...]) -> bool:
    """Whether ``text`` holds one of ``phrases`` (each :func:`phrase_words` of a name): all
    its words, in order, one right after the other. "A. García" is held by "met A. Garcia"
    only with the accent, never by "García" alone or "B. García"; "Ana García" is not held by
    "Ana María García"."""
    words = phrase_words(text)
    for phrase in phrases:
        if not phrase:
            continue
        first, size = phrase[0], len(phrase)
        for start, word in enumerate(words):
            if word == first and words[start : start + size] == phrase:
                return True
    return False


def text_query(text: str) -> Any:
    """``text`` as a Whoosh query over the text field. Plain words skip the parser's taggers
    (0.1 ms of a 10k-record search's 1-2 ms): the same word nodes are made and turned into a
    query by Whoosh's own code (``tests/library/test_word_forms.py`` checks that the two ways
    agree)."""
    text = _QUESTION_MARK.sub("", text)
    try:
        if _SYNTAX.search(text) is None:
            return plain_words_query(text)
        return parsed_query(text)
    except Exception as err:  # whoosh's parser raises several kinds on what it cannot read
        raise InvalidInput(
            f"query: cannot be read as a search ({err})", code="invalid_query"
        ) from None


def parsed_query(text: str) -> Any:
    """``text`` read by Whoosh's query parser (lantern's: word forms, OR between words)."""
    return _parser().parse(text)


def plain_words_query(text: str) -> Any:
    """What the parser makes of ``text`` when it holds none of the query syntax: each word a
    word node of the OR group, as the parser's whitespace tagger would leave them."""
    from whoosh import query as Q
    from whoosh.qparser import syntax

    parser = _parser()
    nodes = []
    for word in _WORD.finditer(text):
        node = syntax.WordNode(word.group())
        node.set_range(word.start(), word.end())
        nodes.append(node)
    group = parser.group(nodes)
    return (group.query(parser) or Q.NullQuery).normalize()


def typed_words(text: str) -> list[str]:
    """The words of ``text`` as typed (lower-cased), stop words aside, each once, in order:
    the query words ``--explain`` reports as matched or not."""
    seen: list[str] = []
    for token in StandardAnalyzer()(_QUESTION_MARK.sub("", text)):
        if token.text not in seen:
            seen.append(token.text)
    return seen


# The longest word word-level expansion compares: no English word comes near it, and a run of
# letters longer than this (a pasted blob) is not worth a pass of the model
LONGEST_WORD = 40


def content_words(text: str) -> list[str]:
    """The words of ``text`` that word-level expansion compares (``ranking.closest_words``):
    :func:`typed_words` made of letters only (numbers, ids and times have no synonyms), at most
    :data:`LONGEST_WORD` of them long."""
    return [word for word in typed_words(text) if word.isalpha() and len(word) <= LONGEST_WORD]


def word_stem(word: str) -> str:
    """A word's Porter2 stem, as the index holds it: two words of one stem are one word to
    keyword search."""
    return _stem(word)


def word_terms(word: str) -> tuple[str, ...]:
    """The index terms a query word (as :func:`typed_words` gives it) is found by: the word as
    written, and its stem where that differs."""
    stemmed = _stem(word)
    return (word,) if stemmed == word else (word, stemmed)


def matched_words(text: str, content: str) -> list[str]:
    """The words of the query ``text`` as typed (see :func:`typed_words`) that ``content``
    holds, as written or by stem: the BM25 part's matches, as ``--explain`` shows them."""
    held = {token.text for token in word_forms().analyzer(content)}
    found = []
    for word in typed_words(text):
        if any(term in held for term in word_terms(word)):
            found.append(word)
    return found
