"""Entity keys asked directly (lantern_git.model.entity_keys): the one way a key becomes a path,
each refusal at its bounds, and how text names an entity.

test_entities.py holds that the CLI refuses a hostile key and writes nothing; these hold the
rule itself, character by character and byte by byte (the mutation run's ``entity_keys``
module, benchmarks/mutation.py, asks each line).
"""

from __future__ import annotations

import pytest

from lantern_git.errors import ValidationError
from lantern_git.model.entity_keys import (
    check_key,
    entity_path,
    key_of_path,
    label_term,
    links_in,
    mention_terms,
    parse_key,
)


def refusal(value: object) -> str:
    with pytest.raises(ValidationError) as caught:
        parse_key(value)
    assert (caught.value.code, caught.value.field) == ("invalid_entity", "key")
    return caught.value.message


def test_a_key_is_its_type_and_name_trimmed_and_lower_cased():
    assert parse_key("  Person:Ana.García-2_b ") == ("person", "ana.garcía-2_b")
    assert check_key("Project:Beta") == "project:beta"
    assert entity_path("Project:Beta") == "entities/project/beta.md"


@pytest.mark.parametrize("value, type_name", [(42, "int"), (None, "NoneType"), (["a:b"], "list")])
def test_a_key_that_is_not_text_is_refused_naming_what_it_was(value, type_name):
    assert refusal(value) == f"entity key: must be a string TYPE:NAME, got {type_name}"


def test_a_key_is_at_most_two_hundred_characters():
    longest = "person:" + "a" * 193
    assert len(longest) == 200 and check_key(longest) == longest
    assert "at most 200 characters" in refusal(longest + "a")


@pytest.mark.parametrize(
    "char", ["\x00", "\x1f", "\x7f", "\x80", "\x9f", "\u2028", "\u2029", "\ud800", "\udfff"]
)
def test_control_characters_and_lone_surrogates_are_refused(char):
    message = refusal(f"person:a{char}b")
    assert "without whitespace, control characters or '*'" in message
    assert "person:a" in message


@pytest.mark.parametrize("char", ["~", "\xa1", "é", "\u2027", "\u202a", "\ud7ff", "\ue000"])
def test_the_characters_next_to_the_refused_ones_are_kept(char):
    assert check_key(f"person:a{char}b") == f"person:a{char}b".lower()


def test_global_names_no_entity():
    for value in ("global", " GLOBAL "):
        assert (
            refusal(value) == "entity key: must be TYPE:NAME (person:ana); 'global' names no entity"
        )


@pytest.mark.parametrize(
    "value",
    [
        "person:a/b",
        "person:a\\b",
        "person:.hidden",
        "person:..",
        ".person:ana",
        "..:ana",
        "person:a:b",
    ],
)
def test_a_type_or_name_that_is_no_plain_file_name_is_refused(value):
    message = refusal(value)
    assert message.startswith("entity key: a key's type and name become a folder and a file name")
    assert message.endswith(f"got {value!r}")
    with pytest.raises(ValidationError):
        entity_path(value)


def test_a_name_is_at_most_240_bytes_of_utf8():
    assert check_key("person:" + "é" * 120) == "person:" + "é" * 120  # 240 bytes
    assert refusal("person:" + "é" * 121) == (
        "entity key: the name part is longer than 240 bytes of UTF-8"
    )


@pytest.mark.parametrize("value", ["person:" + "x" * 300, "person:" + "x" * 100 + "/y"])
def test_a_long_refused_key_is_shown_cut_at_eighty_characters(value):
    assert refusal(value).endswith(f"got {value[:80]!r}")


# -- paths back to keys


def test_an_entity_files_path_gives_its_key():
    assert key_of_path("entities/person/ana.md") == "person:ana"
    assert key_of_path("entities/project/beta-2.md") == "project:beta-2"


@pytest.mark.parametrize(
    "path",
    [
        "entities/person/ana.txt",
        "entities/ana.md",
        "entities/person/x/ana.md",
        "memory/person/ana.md",
        "entities/Person/ana.md",  # its key's path is lower-case: another file's name
        "entities/person/.md",
        "entities/person/a:b.md",
        "entities/global/x.md/",
        # The Kelvin sign lower-cases to "k", whose path sorts before this one's: still
        # another file's name.
        "entities/person/\u212a.md",
    ],
)
def test_a_path_that_is_no_entity_files_gives_no_key(path):
    assert key_of_path(path) is None


# -- how text names an entity


def test_links_are_the_targets_of_double_brackets_lower_cased_spaced_once_and_in_order():
    text = "[[Ana  García]] met [[bea]], then [[ana garcía]] and [[ ]] and [[Bea]]."
    assert links_in(text) == ["ana garcía", "bea"]


def test_a_link_holds_no_bracket_or_line_break_and_at_most_200_characters():
    assert links_in("[[a[b]] [[c\nd]] [[" + "e" * 201 + "]]") == []
    assert links_in("[[" + "e" * 200 + "]]") == ["e" * 200]


def test_a_label_term_is_lower_cased_with_commas_and_runs_of_space_made_one_space():
    assert label_term("  Ana,García\t Lima ") == "ana garcía lima"


def test_mention_terms_are_the_keys_then_the_links_each_once():
    content = "Met [[Ana García]] and [[person:ana]] and [[ ]]."
    assert mention_terms(["person:ana", "project:beta"], content) == [
        "person:ana",
        "project:beta",
        "ana garcía",
    ]
    assert mention_terms([" "], "") == []
