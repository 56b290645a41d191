"""Keyword search finds word forms (Porter2 stems), and ranks the form as typed first."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.cli import lantern

from lantern_git.evidence.sources import SourceInput
from lantern_git.index.analysis import parsed_query, plain_words_query, text_query


def ids(hits) -> list[str]:
    return [hit.record.id for hit in hits]


@pytest.mark.parametrize(
    ("query", "content"),
    [
        ("running", "The backup job runs nightly."),
        ("deploy", "The deployment is on Friday."),
        ("preferring", "Ana prefers short answers."),
        ("replies", "Bo wants a reply within a day."),
    ],
)
def test_a_word_finds_its_other_forms(store, query, content):
    target = store.add(content, kind="fact")
    store.add("Unrelated: the office plant needs water.", kind="fact")
    assert ids(store.search(query)) == [target.id]


def test_the_form_as_typed_ranks_above_a_stem_only_match(store):
    stem_only = store.add("The importer runs every hour.", kind="fact")
    exact = store.add("The exporter is running every hour.", kind="fact")
    assert ids(store.search("running")) == [exact.id, stem_only.id]
    assert ids(store.search("runs")) == [stem_only.id, exact.id]
    hits = store.search("running")
    assert hits[0].score > hits[1].score


def test_the_cli_finds_word_forms(store_path):
    env = {"LANTERN_STORE": str(store_path)}
    added = lantern(
        "memory", "add", "Nightly backups run at 02:00.", "--kind", "fact", "-q", env=env
    )
    assert added.returncode == 0, added.stderr
    found = lantern("memory", "search", "running backup", "--json", env=env)
    assert found.returncode == 0, found.stderr
    assert [hit["id"] for hit in json.loads(found.stdout)] == [added.stdout.strip()]


def test_source_chunks_find_word_forms(store):
    [result] = store.sources.add(
        [SourceInput(b"We deployed the fix.\nIt runs fine now.\n", "n.md")]
    )
    for query in ("deploying", "running"):
        hits = store.sources.search(query)
        assert [hit.source_id for hit in hits] == [result.manifest.id], query


def test_a_phrase_matches_its_words_in_any_form_and_only_in_order(store):
    target = store.add("The importer is running jobs every hour.", kind="fact")
    store.add("Jobs keep running.", kind="fact")
    assert ids(store.search('"run job"')) == [target.id]
    assert ids(store.search('"running jobs"')) == [target.id]


def test_a_stem_beside_its_word_does_not_make_a_record_longer(store):
    """BM25 scores a shared word by the record's length in words: "likes" indexed with its
    stem "like" is still one word, so these two four-word records score alike for "Ana"."""
    inflected = store.add("Ana likes green tea.", kind="preference")
    plain = store.add("Ana drink green tea.", kind="preference")
    hits = store.search("ana")
    assert {hit.record.id for hit in hits} == {inflected.id, plain.id}
    assert hits[0].score == hits[1].score


# Words a query is made of, stop words and operators' look-alikes among them, and characters
# the parser does not take for syntax.
WORDS = st.sampled_from(
    [
        "the",
        "a",
        "of",
        "running",
        "deploys",
        "Ana's",
        "dogs'",
        "'quoted'",
        "AND",
        "x-ray",
        "e.g.",
        "3.14",
        "café",
        "STRASSE",
        "İstanbul",
        "naïve",
        "中文",
        "and",
        "or",
        "not",
        "ANDROID",
        "ORacle",
        "NOTE",
        "_",
        "--",
    ]
)
CHARS = st.text(
    alphabet=st.sampled_from(list("abcXYZé0 '9\t\n\u00a0\u2003.,;!-/&%$#@+=<>~|_\\")),
    max_size=12,
)
SPACES = st.sampled_from([" ", "  ", "\t", "\n", "\u00a0", " \u2003 "])


@settings(max_examples=400, deadline=None)
@given(st.lists(st.one_of(WORDS, CHARS), max_size=8), st.lists(SPACES, min_size=8, max_size=8))
def test_plain_words_are_read_as_the_parser_reads_them(words, spaces):
    text = "".join(word + space for word, space in zip(words, spaces))
    fast, parsed = text_query(text), parsed_query(text)
    assert (fast, repr(fast)) == (parsed, repr(parsed)), text


def test_query_syntax_still_goes_to_the_parser():
    """Syntax is read as Whoosh's query language (phrases, prefixes, boosts, AND, NOT,
    groups), each word still asking for its form as written (a tenth) and its stem; plain
    words go the fast way, to the same OR of words the parser would make."""
    from whoosh import query as Q

    def term(word: str, boost: float = 1.0) -> Q.Term:
        return Q.Term("content", word, boost=boost)

    def forms(written: str, stem: str, boost: float = 1.0) -> Q.Or:
        return Q.Or([term(written, boost=0.1 * boost), term(stem, boost=boost)])

    expected = {
        '"deploy window"': Q.Phrase("content", ["deploy", "window"]),
        '"running jobs"': Q.Phrase("content", ["run", "job"]),
        "deploy*": Q.Prefix("content", "deploy"),
        "deploy^2": term("deploy", boost=2.0),
        "deploying^2": forms("deploying", "deploy", boost=2.0),
        "deploy AND window": Q.And([term("deploy"), term("window")]),
        "deploying AND window": Q.And([forms("deploying", "deploy"), term("window")]),
        "deploy NOT window": Q.Or([term("deploy"), Q.Not(term("window"))]),
        "(deploy OR ship) AND window": Q.And(
            [Q.Or([term("deploy"), term("ship")]), term("window")]
        ),
        # No syntax: the plain way, an OR of the words.
        "deploy window": Q.Or([term("deploy"), term("window")]),
        # A stem that Porter2 would stem again ("databas" -> "databa") is still the stem:
        # whole weight, its form as written a tenth.
        "database": forms("database", "databas"),
        "coffee window": Q.Or([term("coffee", boost=0.1), term("coffe"), term("window")]),
        "releases^2": forms("releases", "releas", boost=2.0),
        # Two words of one node (a hyphen joins them), each its own stem: both whole.
        "tea-time": Q.Or([term("tea"), term("time")]),
    }
    for text, query in expected.items():
        made = text_query(text)
        assert (made, repr(made)) == (query, repr(query)), text
        syntax = text not in ("deploy window", "database", "coffee window", "tea-time")
        assert (repr(made) != repr(plain_words_query(text))) is syntax, text


TEXTS = st.lists(
    st.one_of(
        st.sampled_from(["running ", "the ", "a ", "São ", "3.5 ", "runs ", "Running. "]),
        st.text(alphabet=st.sampled_from(list("abcdeingrsu XYZé0 '9\t\n.,;!-/*_")), max_size=9),
    ),
    max_size=12,
).map("".join)


@settings(max_examples=400, deadline=None)
@given(TEXTS)
def test_a_writer_indexes_the_terms_whoosh_s_analyzer_gives(text):
    """The writer's quick way through a record's text gives, term by term and in order, what
    Whoosh's own pipeline gives with the field's analyzer: the same terms, weights and encoded
    positions, and the first term's frequency the count of words as written (stop words out)."""
    from whoosh.analysis import StandardAnalyzer
    from whoosh.formats import Positions

    from lantern_git.index.analysis import word_forms

    field = word_forms()
    through_whoosh = list(Positions().word_values(text, field.analyzer, mode="index"))
    words = sum(1 for _ in StandardAnalyzer()(text))
    expected = [
        (term.encode("utf-8"), words if number == 0 else 0, weight, encoded)
        for number, (term, _, weight, encoded) in enumerate(through_whoosh)
    ]
    assert list(field.index(text)) == expected, text
