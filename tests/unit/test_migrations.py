"""The store formats' table (workspace/migrations.py), asked directly: reading a store's format,
writing it, the .gitattributes lines each format has, and the ordered steps' plan. The migrate
command on real stores that the previous release made is tests/surfaces/test_migrate.py."""

from __future__ import annotations

from dataclasses import FrozenInstanceError

import pytest

from lantern_git.errors import StoreError
from lantern_git.workspace.migrations import (
    FORMAT,
    MIGRATIONS,
    Migrations,
    attribute_lines,
    parse_marker,
    read_format,
    with_attribute_lines,
    with_format,
)

FORMAT1_LINES = ("memory/**/*.md merge=lantern", "sources/** merge=lantern")
FORMAT2_LINES = ("entities/**/*.md merge=lantern", "lantern.yaml merge=lantern")


# ---------------------------------------------------------------------------- reading a format


@pytest.mark.parametrize("version", [1, 2, 7])
def test_a_positive_integer_format_is_read(version):
    assert read_format(b"format: %d\nembedder: e5\n" % version, "lantern.yaml") == version


@pytest.mark.parametrize(
    "data, shown",
    [
        (b"format: 0\n", "0"),
        (b"format: -1\n", "-1"),
        (b"format: true\n", "True"),
        (b"format: '2'\n", "'2'"),
        (b"format: 2.0\n", "2.0"),
        (b"embedder: e5\n", "None"),
        (b"- format\n", "None"),
        (b"", "None"),
    ],
)
def test_a_format_that_is_not_a_positive_integer_is_refused_naming_the_file(data, shown):
    with pytest.raises(StoreError) as refused:
        read_format(data, "store/lantern.yaml")
    assert str(refused.value) == (
        f"store/lantern.yaml: 'format' must be a positive integer, got {shown}"
    )


def test_a_marker_that_is_not_yaml_is_refused_naming_the_file():
    with pytest.raises(StoreError) as refused:
        read_format(b"format: [2\n", "store/lantern.yaml")
    assert str(refused.value).startswith("store/lantern.yaml: cannot be read: ")


def test_yaml_that_would_build_an_object_is_refused_not_run():
    with pytest.raises(StoreError):
        read_format(b"format: !!python/object/apply:os.getcwd []\n", "lantern.yaml")


def test_the_marker_gives_its_keys_and_its_format():
    keys, version = parse_marker(b"format: 2\nembedder: none\n", "lantern.yaml")
    assert (keys, version) == ({"format": 2, "embedder": "none"}, 2)
    with pytest.raises(StoreError):
        parse_marker(b"embedder: none\n", "lantern.yaml")


# ---------------------------------------------------------------------------- writing a format


def test_a_format_is_written_in_place_keeping_every_other_line():
    before = b"# the team's store\nformat: 1\nembedder: e5  # fast\n"
    assert with_format(before, 2) == b"# the team's store\nformat: 2\nembedder: e5  # fast\n"


def test_only_the_first_format_line_is_rewritten():
    assert with_format(b"format: 1\nformat: 1\n", 3) == b"format: 3\nformat: 1\n"


def test_a_format_line_with_anything_after_the_key_is_replaced_whole():
    assert with_format(b"format:1 # old\nx: 1\n", 2) == b"format: 2\nx: 1\n"


def test_a_marker_without_a_format_line_gets_one_first():
    assert with_format(b"embedder: e5\n", 2) == b"format: 2\nembedder: e5\n"
    # an indented "format:" is another mapping's key, not the store's
    assert with_format(b"x:\n  format: 1\n", 2) == b"format: 2\nx:\n  format: 1\n"


def test_no_marker_becomes_one_holding_the_format():
    assert with_format(None, 2) == b"format: 2\n"


# ---------------------------------------------------------------------------- .gitattributes


def test_missing_attribute_lines_are_added_at_the_end_in_order():
    before = b"*.png binary\nmemory/**/*.md merge=lantern\n"
    after = with_attribute_lines(before, ("memory/**/*.md merge=lantern", "a x", "b y"))
    assert after == b"*.png binary\nmemory/**/*.md merge=lantern\na x\nb y\n"


def test_a_file_without_a_final_newline_gets_one_before_the_added_lines():
    assert with_attribute_lines(b"*.png binary", ("a x",)) == b"*.png binary\na x\n"


def test_lines_already_there_even_indented_leave_the_file_byte_for_byte():
    before = b"  a x  \r\nb y"
    assert with_attribute_lines(before, ("a x", "b y")) == before


def test_no_attributes_file_becomes_the_lines_alone():
    assert with_attribute_lines(None, ("a x", "b y")) == b"a x\nb y\n"
    assert with_attribute_lines(None, ()) == b""


def test_each_format_has_the_attribute_lines_of_its_steps():
    assert attribute_lines(1) == FORMAT1_LINES
    assert attribute_lines(2) == FORMAT1_LINES + FORMAT2_LINES


# ---------------------------------------------------------------------------- the table


def test_this_lantern_makes_stores_at_format_2_with_one_step():
    assert FORMAT == MIGRATIONS.latest == 2
    assert [step.to_dict() for step in MIGRATIONS.steps] == [
        {
            "format": 2,
            "name": "entities",
            "description": "entities: entity files under entities/ merge field by field, and "
            "lantern.yaml goes to the merge driver, which refuses to merge two stores of "
            "different formats",
        }
    ]


def test_a_registered_step_cannot_be_changed_afterwards():
    step = MIGRATIONS.steps[0]
    with pytest.raises(FrozenInstanceError):
        step.version = 3  # type: ignore[misc]
    assert MIGRATIONS.latest == 2


def test_an_empty_table_is_at_format_1():
    assert Migrations().latest == 1
    assert Migrations().steps == []


@pytest.mark.parametrize("version", [1, 3, 2.5])
def test_a_step_out_of_order_is_refused_when_registered(version):
    table = Migrations()
    with pytest.raises(ValueError, match="after format 1"):
        table.step(version, "x", "x")(lambda read: {})
    assert table.steps == []


def numbered_table() -> Migrations:
    """Three steps, each writing a file of its own and appending to one they share."""
    table = Migrations()
    for version in (2, 3, 4):

        def change(read, version=version):
            shared = (read("shared.txt") or b"") + b"step %d\n" % version
            return {f"step{version}.txt": b"%d" % version, "shared.txt": shared}

        table.step(version, f"step{version}", f"to {version}")(change)
    return table


def test_steps_are_applied_and_pending_by_the_store_s_format():
    table = numbered_table()
    assert [s.version for s in table.applied(1)] == []
    assert [s.version for s in table.applied(3)] == [2, 3]
    assert [s.version for s in table.pending(3)] == [4]
    assert [s.version for s in table.pending(4)] == []
    assert [s.version for s in table.applied(9)] == [2, 3, 4]


def test_a_plan_applies_each_pending_step_to_what_the_steps_before_it_left():
    committed = {"lantern.yaml": b"# mine\nformat: 2\n", "shared.txt": b"hand\n"}
    plan = numbered_table().plan(committed.get, 2)
    assert (plan.start, plan.target) == (2, 4)
    assert [s.version for s in plan.steps] == [3, 4]
    assert plan.files == {
        "step3.txt": b"3",
        "step4.txt": b"4",
        "shared.txt": b"hand\nstep 3\nstep 4\n",
        "lantern.yaml": b"# mine\nformat: 4\n",
    }
    assert plan.trailer == "Lantern-Format: 2 -> 4"


def test_a_step_reads_the_format_the_step_before_it_wrote():
    table = Migrations()
    seen: list[bytes | None] = []
    for version in (2, 3):

        def change(read):
            seen.append(read("lantern.yaml"))
            return {}

        table.step(version, f"s{version}", "")(change)
    table.plan({"lantern.yaml": b"format: 1\n"}.get, 1)
    assert seen == [b"format: 1\n", b"format: 2\n"]


def test_a_store_at_the_newest_format_plans_nothing():
    plan = numbered_table().plan({"lantern.yaml": b"format: 4\n"}.get, 4)
    assert (plan.start, plan.target, plan.steps, plan.files) == (4, 4, [], {})
    assert plan.trailer == "Lantern-Format: 4 -> 4"


def test_format_2_adds_its_attribute_lines_once_and_keeps_the_users_own():
    committed = {
        "lantern.yaml": b"format: 1\n",
        ".gitattributes": b"*.bin binary\n"
        + b"".join(line.encode() + b"\n" for line in FORMAT1_LINES),
    }
    plan = MIGRATIONS.plan(committed.get, 1)
    assert plan.files == {
        ".gitattributes": committed[".gitattributes"]
        + b"".join(line.encode() + b"\n" for line in FORMAT2_LINES),
        "lantern.yaml": b"format: 2\n",
    }
    # A store that already has the lines (a hand edit) gets only its new format
    already = {".gitattributes": plan.files[".gitattributes"], "lantern.yaml": b"format: 1\n"}
    assert MIGRATIONS.plan(already.get, 1).files == {"lantern.yaml": b"format: 2\n"}
