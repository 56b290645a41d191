"""The entity file's three-way merge asked directly (lantern_git.model.entity_merge): each field's
rule, one side's change against both sides', and the same answer whichever host merges.

The syncs that go through it (test_entities.py, test_entity_records.py) and the tree merge's
tests hold that it is called; these hold what it answers, field by field (the mutation run's
``entity_merge`` module, benchmarks/mutation.py, found them unasked).
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lantern_git.model.entity import Entity, entity_path
from lantern_git.model.entity_merge import merge_entity_files
from lantern_git.model.record_merge import MergeError

KEY = "person:ana"
PATH = entity_path(KEY)
T0 = 1_764_000_000


def entity(
    *,
    name: str = "Ana",
    aliases: tuple[str, ...] = (),
    description: str = "",
    notes: str = "",
    created_at: int = T0,
    updated_at: int = T0,
    **extra: Any,
) -> bytes:
    """An entity file of person:ana."""
    return (
        Entity(
            key=KEY,
            name=name,
            aliases=aliases,
            description=description,
            created_at=created_at,
            updated_at=updated_at,
            notes=notes,
            extra=extra,
        )
        .to_markdown()
        .encode()
    )


def merged(base: bytes | None, ours: bytes, theirs: bytes) -> Entity:
    """The merge of ``ours`` and ``theirs``, which must not depend on which side is ours."""
    one = merge_entity_files(base, ours, theirs, PATH)
    assert merge_entity_files(base, theirs, ours, PATH) == one
    return Entity.from_markdown(one.decode(), PATH)


# Values below and above the base's in every comparison, so the rule that picks one is the rule
# and not an order of the values.
BASE = dict(name="Mara", description="m", notes="m", role="m")
SMALLER = dict(name="Ana", description="a", notes="a", role="a")
LARGER = dict(name="Zoe", description="z", notes="z", role="z")


def read(found: Entity, field: str) -> Any:
    return found.extra.get(field) if field == "role" else getattr(found, field)


@pytest.mark.parametrize("field", ["name", "description", "notes", "role"])
@pytest.mark.parametrize("values", [SMALLER, LARGER], ids=["smaller", "larger"])
def test_a_field_one_side_changed_takes_that_sides_value_even_when_the_other_is_later(
    field, values
):
    base = entity(**{field: BASE[field]})
    changed = entity(**{field: values[field]}, updated_at=T0 + 1)
    # The other side changed something else, later: its value of this field is the base's.
    other = entity(**{field: BASE[field]}, aliases=("A.",), updated_at=T0 + 9)
    assert read(merged(base, changed, other), field) == values[field]
    assert read(merged(base, other, changed), field) == values[field]


@pytest.mark.parametrize("field", ["name", "description", "notes", "role"])
@pytest.mark.parametrize("later", [SMALLER, LARGER], ids=["later smaller", "later larger"])
def test_a_field_both_sides_changed_takes_the_later_sides_value(field, later):
    earlier = LARGER if later is SMALLER else SMALLER
    base = entity(**{field: BASE[field]})
    found = merged(
        base,
        entity(**{field: earlier[field]}, updated_at=T0 + 1),
        entity(**{field: later[field]}, updated_at=T0 + 2),
    )
    assert read(found, field) == later[field]
    assert found.updated_at == T0 + 2


def test_on_a_tie_of_updated_at_the_larger_file_wins_on_both_hosts():
    base = entity(name="Mara")
    found = merged(
        base, entity(name="Ana", updated_at=T0 + 5), entity(name="Zoe", updated_at=T0 + 5)
    )
    assert found.name == "Zoe"


def test_both_sides_adding_the_file_merge_every_difference_as_two_sided():
    found = merged(
        None,
        entity(
            name="Ana", aliases=("A.",), description="ours", created_at=T0 + 3, updated_at=T0 + 4
        ),
        entity(
            name="Zoe", aliases=("Z.",), description="theirs", created_at=T0 + 1, updated_at=T0 + 9
        ),
    )
    assert (found.name, found.description) == ("Zoe", "theirs")
    assert found.aliases == ("A.", "Z.")
    assert (found.created_at, found.updated_at) == (T0 + 1, T0 + 9)


def test_created_at_is_the_earlier_and_updated_at_the_later():
    found = merged(
        entity(created_at=T0 + 5),
        entity(created_at=T0 + 5, updated_at=T0 + 7, description="one"),
        entity(created_at=T0 + 2, updated_at=T0 + 6, notes="two"),
    )
    assert (found.created_at, found.updated_at) == (T0 + 2, T0 + 7)
    assert (found.description, found.notes) == ("one", "two")


# -- aliases


def test_an_alias_one_side_removed_is_gone_when_the_other_left_the_aliases_alone():
    base = entity(aliases=("A.", "Ana G."))
    removed = entity(aliases=("Ana G.",), updated_at=T0 + 1)
    described = entity(aliases=("A.", "Ana G."), description="leads Beta", updated_at=T0 + 9)
    found = merged(base, removed, described)
    assert found.aliases == ("Ana G.",)
    assert found.description == "leads Beta"


def test_aliases_both_sides_changed_are_the_union_of_what_either_still_holds():
    base = entity(aliases=("B.", "A.", "Gone"))
    ours = entity(aliases=("B.", "A.", "Zed", "Ana G."), updated_at=T0 + 1)  # Gone removed
    theirs = entity(aliases=("A.", "Mid"), updated_at=T0 + 2)  # B. and Gone removed
    # The base's still held, in its order, then the new ones sorted.
    assert merged(base, ours, theirs).aliases == ("B.", "A.", "Ana G.", "Mid", "Zed")


def test_aliases_both_sides_added_without_a_base_are_sorted():
    found = merged(None, entity(aliases=("Zed", "A.")), entity(aliases=("Mid",), updated_at=T0 + 1))
    assert found.aliases == ("A.", "Mid", "Zed")


def test_two_spellings_of_one_alias_are_one_alias():
    base = entity(aliases=("ana g.",))
    found = merged(
        base,
        entity(aliases=("ana g.", "A.", "Bea"), updated_at=T0 + 1),
        entity(aliases=("ANA G.", "a."), updated_at=T0 + 2),
    )
    assert found.aliases == ("ana g.", "A.", "Bea")


def test_the_union_keeps_the_most_a_file_holds_the_bases_first():
    base_aliases = tuple(f"base {i:03}" for i in range(60))
    ours = tuple(f"ours {i:03}" for i in range(30))
    theirs = tuple(f"theirs {i:03}" for i in range(30))
    found = merged(
        entity(aliases=base_aliases),
        entity(aliases=base_aliases + ours, updated_at=T0 + 1),
        entity(aliases=base_aliases + theirs, updated_at=T0 + 2),
    )
    assert found.aliases == base_aliases + ours + theirs[:10]


# -- keys lantern does not know


def test_a_key_one_side_added_or_removed_stays_added_or_removed():
    base = entity(team="beta", site="lisbon")
    ours = entity(team="beta", site="lisbon", desk="4F", updated_at=T0 + 1)
    theirs = entity(team="beta", updated_at=T0 + 9)  # site removed
    found = merged(base, ours, theirs)
    assert found.extra == {"team": "beta", "desk": "4F"}


def test_keys_lantern_does_not_know_keep_the_bases_order_then_the_new_ones_sorted():
    base = entity(zone="z", alpha="a")
    found = merged(
        base,
        entity(zone="z", alpha="a", mango="m", updated_at=T0 + 1),
        entity(zone="z", alpha="a", kiwi="k", updated_at=T0 + 2),
    )
    assert list(found.extra) == ["zone", "alpha", "kiwi", "mango"]


def test_a_key_both_sides_changed_and_one_removed_takes_the_later_side():
    base = entity(team="beta")
    removed_later = merged(base, entity(team="gamma", updated_at=T0 + 1), entity(updated_at=T0 + 2))
    assert "team" not in removed_later.extra
    changed_later = merged(base, entity(team="gamma", updated_at=T0 + 3), entity(updated_at=T0 + 2))
    assert changed_later.extra == {"team": "gamma"}


# -- what is not merged


@pytest.mark.parametrize(
    "broken",
    [b"not an entity\n", b"\xff\xfe", entity().replace(KEY.encode(), b"person:bea")],
    ids=["no front matter", "not utf-8", "another key"],
)
@pytest.mark.parametrize("where", ["base", "ours", "theirs"])
def test_a_file_that_does_not_read_is_not_merged(broken, where):
    files = {"base": entity(), "ours": entity(name="Bea"), "theirs": entity(name="Zoe")}
    files[where] = broken
    with pytest.raises(MergeError) as caught:
        merge_entity_files(files["base"], files["ours"], files["theirs"], PATH)
    assert str(caught.value).startswith(f"{PATH}: an entity file that does not read: ")


@pytest.mark.parametrize("empty", [b"", None])
def test_an_empty_side_is_not_merged(empty):
    for ours, theirs in ((empty, entity()), (entity(), empty)):
        with pytest.raises(MergeError) as caught:
            merge_entity_files(entity(), ours, theirs, PATH)
        assert str(caught.value) == f"{PATH}: an empty entity file"


# -- symmetry, over many files

names = st.sampled_from(["Ana", "Bea", "Zoe"])
alias_sets = st.lists(st.sampled_from(["A.", "a.", "B.", "Cy", "Dee"]), max_size=4, unique=True)
times = st.integers(T0, T0 + 3)


@st.composite
def entity_files(draw: Any) -> bytes:
    extra = draw(st.dictionaries(st.sampled_from(["team", "site"]), names, max_size=2))
    return entity(
        name=draw(names),
        aliases=tuple(dict.fromkeys(draw(alias_sets), None)),
        description=draw(st.sampled_from(["", "one", "two"])),
        created_at=draw(times),
        updated_at=draw(times),
        **extra,
    )


@settings(max_examples=150, deadline=None)
@given(base=st.one_of(st.none(), entity_files()), ours=entity_files(), theirs=entity_files())
def test_the_merge_does_not_depend_on_which_side_is_ours(base, ours, theirs):
    merged(base, ours, theirs)  # asserts both orders give the same bytes
