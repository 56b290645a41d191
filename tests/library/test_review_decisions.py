"""The review decision asked through the library (lantern_git.review: choose, accept, reject):
which branch and which records a decision is about, and what it writes.

test_review.py and test_review_binding.py hold the surfaces and the tip check; these hold the
choices they left unasked (the mutation run, benchmarks/mutation.py, found them).
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest
from support.stores import make_store, opened

from lantern_git.errors import AmbiguousId, InvalidInput
from lantern_git.model.record import Record


@pytest.fixture
def seeded(tmp_path: Path) -> tuple[Path, str]:
    path = make_store(tmp_path / "store")
    with opened(path) as store:
        seed = store.add("the seed record", kind="fact").id
    return path, seed


def pending_on(path: Path) -> dict[str, list[str]]:
    with opened(path) as store:
        return {b.name: [r.id for r in b.records] for b in store.review_list().branches}


def test_a_record_pending_on_two_branches_is_decided_on_the_one_named(seeded):
    path, seed = seeded
    for name, priority in (("one", 61), ("two", 62)):
        with opened(path, review=True, review_name=name) as writer:
            writer.update(seed, priority=priority)
    with opened(path, review_name="person") as person:
        for decide in (person.review_accept, person.review_reject):
            with pytest.raises(InvalidInput) as refused:
                decide([seed])
            assert refused.value.code == "ambiguous_branch"
            assert f"record {seed} is pending on several review branches (one, two)" in str(
                refused.value
            )
        assert pending_on(path) == {"one": [seed], "two": [seed]}
        assert person.review_accept([seed], branch="two").records == [seed]
        assert person.get(seed).priority == 62
    assert pending_on(path) == {"one": [seed]}


def test_records_pending_on_different_branches_are_not_decided_together(seeded):
    path, _ = seeded
    added = {}
    for name in ("one", "two"):
        with opened(path, review=True, review_name=name) as writer:
            added[name] = writer.add(f"from {name}", kind="fact").id
    with opened(path, review_name="person") as person:
        for decide in (person.review_accept, person.review_reject):
            with pytest.raises(InvalidInput) as refused:
                decide([added["one"], added["two"]])
            assert refused.value.code == "ambiguous_branch"
            assert "the records are pending on different review branches (one, two)" in str(
                refused.value
            )
    assert pending_on(path) == {"one": [added["one"]], "two": [added["two"]]}


def test_naming_both_halves_of_a_pending_supersede_decides_the_unit_once(seeded):
    path, seed = seeded
    with opened(path, review=True, review_name="agent") as writer:
        new = writer.supersede(seed, "the seed, restated", reason="clearer").id
    for decision in ("reject", "accept"):
        if decision == "reject":
            with opened(path, review_name="person") as person:
                done = person.review_reject([seed, new])
        else:
            with opened(path, review=True, review_name="agent") as writer:
                new = writer.supersede(seed, "the seed, restated", reason="clearer").id
            with opened(path, review_name="person") as person:
                done = person.review_accept([new, seed])
        assert sorted(done.records) == sorted([seed, new]), decision
        assert pending_on(path) == {}
    with opened(path) as store:
        assert store.get(seed).status == "superseded"
        assert store.get(new).supersedes_id == seed


def test_a_prefix_of_two_pending_records_is_ambiguous_and_decides_nothing(seeded):
    path, _ = seeded
    twins = ["abcd000000000001", "abcd000000000002"]
    lines = [
        json.dumps(replace(Record.new(kind="fact", content=f"twin {n}"), id=i).to_dict())
        for n, i in enumerate(twins)
    ]
    with opened(path, review=True, review_name="agent") as writer:
        writer.import_records(lines)
    with opened(path, review_name="person") as person:
        for decide in (person.review_accept, person.review_reject):
            with pytest.raises(AmbiguousId) as refused:
                decide(["abcd"])
            assert refused.value.candidates == twins
        assert pending_on(path) == {"agent": twins}
        assert person.review_accept([twins[0]]).records == [twins[0]]
    assert pending_on(path) == {"agent": [twins[1]]}


def test_a_reject_puts_back_where_the_branch_left_even_after_the_store_moved_on(seeded):
    path, seed = seeded
    with opened(path, review=True, review_name="agent") as writer:
        writer.update(seed, priority=61)
    with opened(path) as store:
        store.update(seed, priority=70)
    with opened(path, review_name="person") as person:
        assert person.review_reject([seed]).records == [seed]
        assert person.get(seed).priority == 70
    # The branch holds its base's version again: nothing of the proposal is pending.
    assert pending_on(path) == {}


def test_no_ids_or_one_string_of_ids_is_a_usage_error_not_everything(seeded):
    from lantern_git.review import choose

    path, seed = seeded
    with opened(path, review=True, review_name="agent") as writer:
        writer.update(seed, priority=61)
    with opened(path, review_name="person") as person:
        for decide in (person.review_accept, person.review_reject):
            with pytest.raises(InvalidInput) as refused:
                decide([])
            assert refused.value.code == "usage_error"
            assert "give record ids, or --all" in str(refused.value)
        # One id as a bare string is refused whole, never read as ids of one character.
        with pytest.raises(InvalidInput) as refused:
            choose(person.git, seed, None)
        assert refused.value.code == "usage_error"
    assert pending_on(path) == {"agent": [seed]}


def test_everything_on_the_branch_named_is_decided_and_no_other_branchs(seeded):
    path, _ = seeded
    added = {}
    for name in ("one", "two"):
        with opened(path, review=True, review_name=name) as writer:
            added[name] = writer.add(f"from {name}", kind="fact").id
    with opened(path, review_name="person") as person:
        # "one" sorts before "two": a branch is chosen by its name, not by where it sorts.
        assert person.review_accept(branch="one").records == [added["one"]]
        assert person.get(added["one"]).content == "from one"
    assert pending_on(path) == {"two": [added["two"]]}
