"""The tree merge every sync and every review accept goes through (model/tree_merge.py), asked
directly on trees of a real git repository: which side each path takes, which files go to the
record, entity and source merges, what is refused and what the reports say."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pygit2
import pytest
from support.sources import SID, T0, transcript
from support.stores import init_repo

from lantern_git.git.repo import BLOB_MODE, EXECUTABLE_MODE, GitRepo
from lantern_git.model.entity import Entity
from lantern_git.model.entity_keys import entity_path
from lantern_git.model.record import Record
from lantern_git.model.record_file import record_path
from lantern_git.model.source import (
    SourceManifest,
    body_path,
    compute_source_id,
    manifest_path,
)
from lantern_git.model.source_file import describe
from lantern_git.model.tree_merge import TreeMerge, Unmergeable, merge_trees

LINK_MODE = 0o120000
LINES = b"one\ntwo\nthree\nfour\nfive\n"
TALK = b"User: hello\nAssistant: hi\n"

Files = dict[str, "bytes | tuple[bytes, int] | None"]


class Trees:
    """Trees of one real repository, written from {path: content} (a content with a mode as a
    pair; None removes the path from the tree built on)."""

    def __init__(self, path: Path) -> None:
        init_repo(path)
        self.git = GitRepo(str(path))
        self.repo = self.git.repo

    def tree(self, files: Files, on: pygit2.Tree | None = None) -> pygit2.Tree:
        changes = {}
        for name, content in files.items():
            if content is None:
                changes[name] = None
                continue
            data, mode = (content, BLOB_MODE) if isinstance(content, bytes) else content
            changes[name] = (str(self.repo.create_blob(data)), mode)
        return self.repo[self.git.build_tree(on, changes)].peel(pygit2.Tree)

    def files(self, tree: pygit2.Oid | pygit2.Tree, folder: str = "") -> dict[str, bytes]:
        """Every file in ``tree``: path -> content."""
        tree = tree if isinstance(tree, pygit2.Tree) else self.repo[tree].peel(pygit2.Tree)
        out: dict[str, bytes] = {}
        for item in tree:
            path = f"{folder}{item.name}"
            found = self.repo[item.id]
            if isinstance(found, pygit2.Tree):
                out.update(self.files(found, path + "/"))
            else:
                out[path] = found.peel(pygit2.Blob).data
        return out

    def mode(self, tree: pygit2.Oid, path: str) -> int:
        return int(self.repo[tree].peel(pygit2.Tree)[path].filemode)

    def merge(self, base: Files, ours: Files, theirs: Files, strict: bool = True) -> TreeMerge:
        """Merge two trees made of ``base`` with each side's changes on top."""
        start = self.tree(base)
        return merge_trees(
            self.git, start, self.tree(ours, on=start), self.tree(theirs, on=start), strict=strict
        )


@pytest.fixture
def trees(tmp_path: Path) -> Trees:
    return Trees(tmp_path / "repo")


def refused_paths(trees: Trees, base: Files, ours: Files, theirs: Files) -> list[str]:
    """The paths a merge of these trees refuses (it must refuse)."""
    with pytest.raises(Unmergeable) as refused:
        trees.merge(base, ours, theirs)
    return refused.value.paths


def record(**changes) -> Record:
    base = Record.new(
        kind="preference",
        content="Ana prefers short answers.",
        scope="user:ana",
        priority=50,
        now=T0,
    )
    return replace(base, **changes).validated() if changes else base


def record_text(**changes) -> bytes:
    """A side's record file: the base record rewritten as lantern writes it."""
    return replace(record(), **changes).validated().rewrite(record().to_markdown()).encode()


RECORD = record_path(record().id)


def entity(**changes) -> bytes:
    found = Entity.new("person:ana", name="Ana", description="A friend.", now=T0)
    return found.evolve(**changes).to_markdown().encode()


ENTITY = entity_path("person:ana")


def manifest(body: bytes, updated_at: int = T0, title: str | None = None) -> bytes:
    return transcript(body, updated_at=updated_at, title=title).to_yaml()


def source(body: bytes, **fields) -> Files:
    return {manifest_path(SID): manifest(body, **fields), body_path(SID, "txt"): body}


# ---------------------------------------------------------------------------- one side


def test_paths_only_one_side_changed_take_that_side(trees):
    base = {"a.txt": b"a\n", "b.txt": b"b\n", "c.txt": b"c\n", "dir/d.txt": b"d\n"}
    ours = {"b.txt": b"b ours\n", "new/ours.txt": b"o\n"}
    theirs = {"a.txt": b"a theirs\n", "c.txt": None, "dir/d.txt": None, "t.txt": b"t\n"}
    merged = trees.merge(base, ours, theirs)
    assert trees.files(merged.tree) == {
        "a.txt": b"a theirs\n",
        "b.txt": b"b ours\n",
        "new/ours.txt": b"o\n",
        "t.txt": b"t\n",
    }
    assert (merged.records, merged.sources) == ([], [])


def test_a_change_both_sides_made_alike_is_no_conflict(trees):
    base = {"a.txt": LINES, "gone.txt": b"x\n"}
    same = {"a.txt": LINES + b"six\n", "gone.txt": None, "added.txt": b"both\n"}
    merged = trees.merge(base, same, same)
    assert trees.files(merged.tree) == {"a.txt": LINES + b"six\n", "added.txt": b"both\n"}


def test_without_a_base_every_path_is_an_addition(trees):
    ours = trees.tree({"o.txt": b"o\n", "same.txt": b"s\n"})
    theirs = trees.tree({"t.txt": b"t\n", "same.txt": b"s\n"})
    merged = merge_trees(trees.git, None, ours, theirs)
    assert trees.files(merged.tree) == {"o.txt": b"o\n", "t.txt": b"t\n", "same.txt": b"s\n"}


# ---------------------------------------------------------------------------- other files


def test_other_files_both_sides_changed_merge_line_by_line_and_keep_their_mode(trees):
    base = {"notes.txt": LINES, "run.sh": (LINES, EXECUTABLE_MODE)}
    ours = {
        "notes.txt": LINES.replace(b"one", b"ONE"),
        "run.sh": (LINES.replace(b"one", b"ONE"), EXECUTABLE_MODE),
    }
    theirs = {
        "notes.txt": LINES.replace(b"five", b"FIVE"),
        "run.sh": (LINES.replace(b"five", b"FIVE"), EXECUTABLE_MODE),
    }
    merged = trees.merge(base, ours, theirs)
    both = b"ONE\ntwo\nthree\nfour\nFIVE\n"
    assert trees.files(merged.tree) == {"notes.txt": both, "run.sh": both}
    assert trees.mode(merged.tree, "run.sh") == EXECUTABLE_MODE
    assert trees.mode(merged.tree, "notes.txt") == BLOB_MODE


def test_a_line_both_sides_changed_differently_is_refused_naming_the_path(trees):
    base = {"notes.txt": LINES, "other.txt": b"x\n"}
    ours = {"notes.txt": LINES.replace(b"two", b"ours"), "other.txt": b"mine\n"}
    theirs = {"notes.txt": LINES.replace(b"two", b"theirs")}
    with pytest.raises(Unmergeable) as refused:
        trees.merge(base, ours, theirs)
    assert (refused.value.paths, refused.value.shown) == (["notes.txt"], "notes.txt")
    assert refused.value.code == "merge_conflict"
    assert "notes.txt" in str(refused.value) and "nothing was changed" in str(refused.value)


def test_a_file_that_is_not_utf8_is_left_to_git_even_where_its_lines_would_merge(trees):
    latin = b"caf\xe9\n" + LINES  # Latin-1: the line merge's text cannot be read as UTF-8
    base = {"notes.txt": latin}
    ours = {"notes.txt": latin.replace(b"one", b"ONE")}
    theirs = {"notes.txt": latin.replace(b"five", b"FIVE")}
    assert refused_paths(trees, base, ours, theirs) == ["notes.txt"]


def test_a_merge_base_that_is_not_strict_leaves_out_a_file_whose_lines_conflict(trees):
    # As git's virtual base holds it conflicted: a version neither side of the next merge is.
    base = {"notes.txt": LINES}
    ours = {"notes.txt": LINES.replace(b"two", b"ours")}
    theirs = {"notes.txt": LINES.replace(b"two", b"theirs"), "t.txt": b"t\n"}
    merged = trees.merge(base, ours, theirs, strict=False)
    assert trees.files(merged.tree) == {"t.txt": b"t\n"}


@pytest.mark.parametrize("removed", ["ours", "theirs"])
def test_a_file_removed_on_one_side_and_changed_on_the_other_is_refused(trees, removed):
    base = {"notes.txt": LINES}
    changed = {"notes.txt": LINES + b"six\n"}
    gone: Files = {"notes.txt": None}
    ours, theirs = (gone, changed) if removed == "ours" else (changed, gone)
    assert refused_paths(trees, base, ours, theirs) == ["notes.txt"]


def test_a_file_whose_mode_one_side_changed_and_the_other_edited_is_refused(trees):
    base = {"run.sh": LINES}
    ours = {"run.sh": (LINES, EXECUTABLE_MODE)}
    theirs = {"run.sh": LINES.replace(b"one", b"ONE")}
    assert refused_paths(trees, base, ours, theirs) == ["run.sh"]


def test_a_file_one_side_made_executable_and_the_other_edited_is_refused(trees):
    base = {"run.sh": LINES}
    ours = {"run.sh": LINES.replace(b"one", b"ONE")}
    theirs = {"run.sh": (LINES, EXECUTABLE_MODE)}
    assert refused_paths(trees, base, ours, theirs) == ["run.sh"]


def test_two_different_additions_of_one_path_are_refused(trees):
    with pytest.raises(Unmergeable) as refused:
        trees.merge({}, {"new.txt": b"mine\n"}, {"new.txt": b"yours\n"})
    assert refused.value.paths == ["new.txt"]


def test_a_symbolic_link_is_never_line_merged(trees):
    base = {"link": (b"a.txt", LINK_MODE)}
    with pytest.raises(Unmergeable) as refused:
        trees.merge(base, {"link": (b"b.txt", LINK_MODE)}, {"link": b"a.txt\nmore\n"})
    assert refused.value.paths == ["link"]
    with pytest.raises(Unmergeable):
        trees.merge({"f.txt": LINES}, {"f.txt": (b"x", LINK_MODE)}, {"f.txt": LINES + b"6\n"})


def test_links_whose_targets_would_merge_line_by_line_are_still_refused(trees):
    base = {"link": (LINES, LINK_MODE)}
    ours = {"link": (LINES.replace(b"one", b"ONE"), LINK_MODE)}
    theirs = {"link": (LINES.replace(b"five", b"FIVE"), LINK_MODE)}
    assert refused_paths(trees, base, ours, theirs) == ["link"]


def test_a_link_in_the_base_that_both_sides_made_a_file_is_refused(trees):
    base = {"notes.txt": (LINES, LINK_MODE)}
    ours = {"notes.txt": LINES.replace(b"one", b"ONE")}
    theirs = {"notes.txt": LINES.replace(b"five", b"FIVE")}
    assert refused_paths(trees, base, ours, theirs) == ["notes.txt"]


def test_the_refusal_names_five_paths_then_says_there_are_more(trees):
    names = [f"f{n}.txt" for n in range(7)]
    base = dict.fromkeys(names, LINES)
    ours = dict.fromkeys(names, LINES.replace(b"two", b"ours"))
    theirs = dict.fromkeys(names, LINES.replace(b"two", b"theirs"))
    with pytest.raises(Unmergeable) as refused:
        trees.merge(base, ours, theirs)
    assert refused.value.paths == names
    assert refused.value.shown == "f0.txt, f1.txt, f2.txt, f3.txt, f4.txt ..."
    six = dict(list(ours.items())[:6])
    with pytest.raises(Unmergeable) as refused:
        trees.merge(base, six, theirs)
    assert refused.value.shown == "f0.txt, f1.txt, f2.txt, f3.txt, f4.txt ..."
    five = dict(list(ours.items())[:5])
    with pytest.raises(Unmergeable) as refused:
        trees.merge(base, five, theirs)
    assert refused.value.shown == "f0.txt, f1.txt, f2.txt, f3.txt, f4.txt"


# ---------------------------------------------------------------------------- records


def test_a_record_both_sides_changed_merges_field_by_field(trees):
    ours = record_text(priority=80, updated_at=T0 + 5)
    theirs = record_text(status="archived", updated_at=T0 + 3)
    merged = trees.merge({RECORD: record_text()}, {RECORD: ours}, {RECORD: theirs})
    result = Record.from_markdown(trees.files(merged.tree)[RECORD].decode())
    assert (result.priority, result.status, result.updated_at) == (80, "archived", T0 + 5)
    [report] = merged.records
    assert (report.id, report.note) == (record().id, None)
    assert report.trailer() == record().id
    assert report.to_dict() == {"id": record().id, "fields": [], "note": None}


def test_a_field_both_sides_changed_is_reported_with_both_values(trees):
    ours = record_text(priority=80, updated_at=T0 + 5)
    theirs = record_text(priority=20, updated_at=T0 + 3)
    merged = trees.merge({RECORD: record_text()}, {RECORD: ours}, {RECORD: theirs})
    assert Record.from_markdown(trees.files(merged.tree)[RECORD].decode()).priority == 80
    [report] = merged.records
    assert report.trailer() == f"{record().id} (priority)"
    # The sides as a sync names them by default, or as the caller does
    conflict = {"field": "priority", "base": 50, "merged": 80}
    assert report.to_dict()["fields"] == [{**conflict, "local": 80, "remote": 20}]
    named = report.to_dict(ours="store", theirs="branch")["fields"]
    assert named == [{**conflict, "store": 80, "branch": 20}]


def test_a_record_both_sides_changed_alike_is_taken_without_a_report(trees):
    same = record_text(priority=80, updated_at=T0 + 5)
    merged = trees.merge({RECORD: record_text()}, {RECORD: same}, {RECORD: same})
    assert trees.files(merged.tree) == {RECORD: same}
    assert merged.records == []


def test_a_record_merge_that_equals_ours_leaves_ours_unwritten(trees):
    ours = record_text(priority=80, updated_at=T0 + 5)
    theirs = record_text(priority=80, updated_at=T0 + 3)
    merged = trees.merge({RECORD: record_text()}, {RECORD: ours}, {RECORD: theirs})
    assert trees.files(merged.tree)[RECORD] == ours
    assert [r.id for r in merged.records] == [record().id]


@pytest.mark.parametrize("removed", ["ours", "theirs"])
def test_a_record_removed_on_one_side_and_changed_on_the_other_is_kept(trees, removed):
    changed = record_text(priority=80, updated_at=T0 + 5)
    sides: list[Files] = [{RECORD: None}, {RECORD: changed}]
    ours, theirs = sides if removed == "ours" else sides[::-1]
    merged = trees.merge({RECORD: record_text()}, ours, theirs)
    assert trees.files(merged.tree) == {RECORD: changed}
    [report] = merged.records
    side = "local" if removed == "ours" else "remote"
    assert report.note == f"deleted {side}; kept"
    assert report.trailer() == f"{record().id} (deleted {side}; kept)"
    assert report.to_dict() == {"id": record().id, "fields": [], "note": f"deleted {side}; kept"}


@pytest.mark.parametrize("broken", ["ours", "theirs"])
def test_an_invalid_side_of_a_record_is_replaced_by_the_valid_one(trees, broken):
    valid = record_text(priority=80, updated_at=T0 + 5)
    invalid = b"---\nid: [not, a, record\n---\n"
    ours, theirs = (invalid, valid) if broken == "ours" else (valid, invalid)
    merged = trees.merge({RECORD: record_text()}, {RECORD: ours}, {RECORD: theirs})
    assert trees.files(merged.tree)[RECORD] == valid
    side = "local" if broken == "ours" else "remote"
    assert [r.note for r in merged.records] == [f"invalid {side} version replaced"]


def test_a_record_neither_side_of_which_reads_is_refused_or_left_out_of_a_base(trees):
    ours, theirs = b"---\nnot: a record\n---\n", b"---\nnor: this\n---\n"
    with pytest.raises(Unmergeable) as refused:
        trees.merge({RECORD: record_text()}, {RECORD: ours}, {RECORD: theirs})
    assert refused.value.paths == [RECORD]
    merged = trees.merge({RECORD: record_text()}, {RECORD: ours}, {RECORD: theirs}, strict=False)
    assert trees.files(merged.tree) == {}
    assert merged.records == []


def test_a_merge_base_that_is_not_strict_goes_on_past_an_unmergeable_record(trees):
    ours, theirs = b"---\nnot: a record\n---\n", b"---\nnor: this\n---\n"
    merged = trees.merge(
        {RECORD: record_text()},
        {RECORD: ours},
        {RECORD: theirs, "zz-after.txt": b"theirs\n"},
        strict=False,
    )
    assert trees.files(merged.tree) == {"zz-after.txt": b"theirs\n"}


def test_a_record_path_holding_a_link_goes_to_the_line_merge_and_is_refused(trees):
    base = {RECORD: record_text()}
    ours = {RECORD: (b"elsewhere.md", LINK_MODE)}
    theirs = {RECORD: record_text(priority=80, updated_at=T0 + 5)}
    assert refused_paths(trees, base, ours, theirs) == [RECORD]


def test_a_file_beside_the_record_layout_is_merged_by_lines_not_as_a_record(trees):
    path = "memory/notes.md"  # under memory/, but not named by a record id
    base = {path: LINES}
    merged = trees.merge(
        base, {path: LINES.replace(b"one", b"ONE")}, {path: LINES.replace(b"five", b"FIVE")}
    )
    assert trees.files(merged.tree) == {path: b"ONE\ntwo\nthree\nfour\nFIVE\n"}
    assert merged.records == []


# ---------------------------------------------------------------------------- entities


def test_an_entity_both_sides_changed_merges_field_by_field(trees):
    ours = entity(name="Ana Lima", updated_at=T0 + 5)
    theirs = entity(description="A colleague.", updated_at=T0 + 3)
    merged = trees.merge({ENTITY: entity()}, {ENTITY: ours}, {ENTITY: theirs})
    result = Entity.from_markdown(trees.files(merged.tree)[ENTITY].decode(), ENTITY)
    assert (result.name, result.description) == ("Ana Lima", "A colleague.")
    assert merged.records == []


@pytest.mark.parametrize("removed", ["ours", "theirs"])
def test_an_entity_removed_on_one_side_and_changed_on_the_other_is_refused(trees, removed):
    sides: list[Files] = [{ENTITY: None}, {ENTITY: entity(name="Ana Lima", updated_at=T0 + 5)}]
    ours, theirs = sides if removed == "ours" else sides[::-1]
    with pytest.raises(Unmergeable) as refused:
        trees.merge({ENTITY: entity()}, ours, theirs)
    assert refused.value.paths == [ENTITY]


def test_an_entity_file_that_does_not_read_is_refused(trees):
    with pytest.raises(Unmergeable) as refused:
        trees.merge(
            {ENTITY: entity()}, {ENTITY: b"---\nkey: [\n---\n"}, {ENTITY: entity(name="Ana L")}
        )
    assert refused.value.paths == [ENTITY]
    merged = trees.merge(
        {ENTITY: entity()},
        {ENTITY: b"---\nkey: [\n---\n"},
        {ENTITY: entity(name="Ana L")},
        strict=False,
    )
    assert trees.files(merged.tree) == {}


def test_an_entity_link_is_not_merged_as_an_entity(trees):
    with pytest.raises(Unmergeable) as refused:
        trees.merge(
            {ENTITY: entity()},
            {ENTITY: (b"x.md", LINK_MODE)},
            {ENTITY: entity(name="Ana L", updated_at=T0 + 1)},
        )
    assert refused.value.paths == [ENTITY]


# ---------------------------------------------------------------------------- sources


def test_a_source_both_sides_appended_to_keeps_both_tails_and_says_so(trees):
    ours_body, theirs_body = TALK + b"User: from a\n", TALK + b"User: from b\n"
    merged = trees.merge(
        source(TALK),
        source(ours_body, updated_at=T0 + 5),
        source(theirs_body, updated_at=T0 + 3),
    )
    files = trees.files(merged.tree)
    assert files[body_path(SID, "txt")] == TALK + b"User: from a\nUser: from b\n"
    assert SourceManifest.from_yaml(files[manifest_path(SID)]).updated_at == T0 + 5
    assert set(files) == {manifest_path(SID), body_path(SID, "txt")}
    [report] = merged.sources
    assert report.id == SID and report.other_ref is None
    assert report.notes() == ["appended on both sides"]
    assert report.trailer() == f"{SID} (appended on both sides)"
    assert report.to_dict() == {
        "id": SID,
        "how": "appended",
        "fields": [],
        "other": None,
        "notes": ["appended on both sides"],
    }
    assert merged.records == []


def test_a_source_re_ingested_on_both_sides_pins_the_version_left_behind(trees):
    longer, shorter = b"User: a whole new talk\nAssistant: yes\n", b"User: another\n"
    merged = trees.merge(source(TALK), source(longer), source(shorter))
    assert trees.files(merged.tree)[body_path(SID, "txt")] == longer
    [report] = merged.sources
    left = str(trees.repo.create_blob(shorter))
    assert report.other_blob is not None and left.startswith(report.other_blob)
    assert report.other_ref == f"source:{SID}@{report.other_blob}"
    assert report.notes() == [f"re-ingested on both sides; other version {report.other_ref}"]
    assert report.to_dict()["other"] == report.other_ref


def neighbour_ids() -> tuple[str, str]:
    """Two other sources' ids in the same folder as SID's (``sources/<first two>/``), one
    sorting before it and one after."""
    below = above = None
    for n in range(100_000):
        other = compute_source_id(f"session:neighbour-{n}", b"")
        if other[:2] == SID[:2] and other != SID:
            if other < SID:
                below = below or other
            else:
                above = above or other
        if below and above:
            return below, above
    raise AssertionError("no neighbours in 100,000 tries")


def test_a_source_merge_leaves_the_other_sources_of_its_folder_alone(trees):
    beside = {}
    for other in neighbour_ids():
        beside[manifest_path(other)] = b"not read: another source's manifest\n"
        beside[body_path(other, "txt")] = b"another source's body\n"
    merged = trees.merge(
        {**source(TALK), **beside},
        source(TALK + b"User: from a\n", updated_at=T0 + 5),
        source(TALK + b"User: from b\n", updated_at=T0 + 3),
    )
    files = trees.files(merged.tree)
    assert {path: files.get(path) for path in beside} == beside
    assert files[body_path(SID, "txt")] == TALK + b"User: from a\nUser: from b\n"


def test_paths_after_a_merged_source_still_take_their_side(trees):
    merged = trees.merge(
        source(TALK),
        source(TALK + b"User: from a\n", updated_at=T0 + 5),
        {**source(TALK + b"User: from b\n", updated_at=T0 + 3), "zz-after.txt": b"t\n"},
    )
    assert trees.files(merged.tree)["zz-after.txt"] == b"t\n"


def test_a_merge_base_that_is_not_strict_goes_on_past_an_unmergeable_source(trees):
    below, _ = neighbour_ids()
    binary = {  # the first source by id: neither side's body is text
        manifest_path(below): manifest(TALK),
        body_path(below, "txt"): TALK,
    }

    def of(sid: str, body: bytes) -> Files:
        return {body_path(sid, "txt"): body}

    merged = trees.merge(
        {**binary, **source(TALK)},
        {**of(below, b"\xff\x00ours"), **source(TALK + b"User: from a\n", updated_at=T0 + 5)},
        {**of(below, b"\xff\x00theirs"), **source(TALK + b"User: from b\n", updated_at=T0 + 3)},
        strict=False,
    )
    files = trees.files(merged.tree)
    assert manifest_path(below) not in files and body_path(below, "txt") not in files
    assert files[body_path(SID, "txt")] == TALK + b"User: from a\nUser: from b\n"
    assert [r.id for r in merged.sources] == [SID]


def test_a_source_whose_body_sorts_after_its_manifest_is_read_by_its_body(trees):
    yml = body_path(SID, "yml")  # "<id>.yml" sorts after the manifest "<id>.yaml"
    base = {manifest_path(SID): manifest(TALK), yml: TALK}
    merged = trees.merge(
        base,
        {manifest_path(SID): manifest(TALK + b"a: 1\n", updated_at=T0 + 5), yml: TALK + b"a: 1\n"},
        {manifest_path(SID): manifest(TALK + b"b: 2\n", updated_at=T0 + 3), yml: TALK + b"b: 2\n"},
    )
    files = trees.files(merged.tree)
    assert set(files) == {manifest_path(SID), yml}
    assert files[yml] == TALK + b"a: 1\nb: 2\n"


def test_a_body_file_renamed_on_both_sides_leaves_only_the_chosen_one(trees):
    md, csv = body_path(SID, "md"), body_path(SID, "csv")
    txt = body_path(SID, "txt")
    ours = {txt: None, md: TALK, manifest_path(SID): manifest(TALK, updated_at=T0 + 1)}
    theirs = {txt: None, csv: TALK, manifest_path(SID): manifest(TALK, updated_at=T0 + 2)}
    merged = trees.merge(source(TALK), ours, theirs)
    # Both changed the extension: the later side's, and no other body file is left
    assert set(trees.files(merged.tree)) == {manifest_path(SID), csv}


def test_a_source_removed_on_one_side_and_only_retitled_on_the_other_keeps_its_body(trees):
    gone: Files = dict.fromkeys(source(TALK))
    retitled = {manifest_path(SID): manifest(TALK, title="Kickoff", updated_at=T0 + 1)}
    merged = trees.merge(source(TALK), gone, retitled)
    files = trees.files(merged.tree)
    assert files == {manifest_path(SID): retitled[manifest_path(SID)], body_path(SID, "txt"): TALK}


def test_a_source_one_side_changed_takes_that_side_file_by_file(trees):
    merged = trees.merge(source(TALK), {}, source(TALK + b"User: more\n", updated_at=T0 + 1))
    assert trees.files(merged.tree)[body_path(SID, "txt")] == TALK + b"User: more\n"
    assert merged.sources == []


def test_a_source_both_sides_touched_through_different_files_merges_as_a_pair(trees):
    ours = {manifest_path(SID): manifest(TALK, title="Kickoff", updated_at=T0 + 2)}
    theirs = source(TALK + b"User: more\n", updated_at=T0 + 1)
    merged = trees.merge(source(TALK), ours, theirs)
    files = trees.files(merged.tree)
    assert files[body_path(SID, "txt")] == TALK + b"User: more\n"
    merged_manifest = SourceManifest.from_yaml(files[manifest_path(SID)])
    assert merged_manifest.title == "Kickoff"
    # The manifest describes the merged body, not either side's
    assert merged_manifest.lines == describe(TALK + b"User: more\n")["lines"]
    assert [r.id for r in merged.sources] == [SID]


@pytest.mark.parametrize("removed", ["ours", "theirs"])
def test_a_source_removed_on_one_side_and_changed_on_the_other_is_kept(trees, removed):
    gone: Files = dict.fromkeys(source(TALK))
    changed = source(TALK + b"User: more\n", updated_at=T0 + 1)
    ours, theirs = (gone, changed) if removed == "ours" else (changed, gone)
    merged = trees.merge(source(TALK), ours, theirs)
    assert trees.files(merged.tree) == changed
    [report] = merged.sources
    assert report.notes() == [f"removed {'local' if removed == 'ours' else 'remote'}; kept"]


def test_a_source_both_sides_removed_is_gone(trees):
    gone: Files = dict.fromkeys(source(TALK))
    merged = trees.merge({**source(TALK), "keep.txt": b"k\n"}, gone, gone)
    assert trees.files(merged.tree) == {"keep.txt": b"k\n"}


@pytest.mark.parametrize("broken", ["ours", "theirs"])
def test_a_source_with_an_invalid_manifest_on_one_side_says_which_was_replaced(trees, broken):
    invalid = {manifest_path(SID): b"id: [broken\n", body_path(SID, "txt"): TALK + b"User: a\n"}
    valid = source(TALK + b"User: b\n", updated_at=T0 + 1)
    ours, theirs = (invalid, valid) if broken == "ours" else (valid, invalid)
    merged = trees.merge(source(TALK), ours, theirs)
    files = trees.files(merged.tree)
    assert SourceManifest.from_yaml(files[manifest_path(SID)]).id == SID
    [report] = merged.sources
    side = "local" if broken == "ours" else "remote"
    assert report.notes() == ["appended on both sides", f"invalid {side} manifest replaced"]


def test_a_source_neither_body_of_which_is_text_is_refused_or_left_out_of_a_base(trees):
    ours = source(b"\xff\xfe\x00binary ours")
    theirs = source(b"\xff\xfe\x00binary theirs")
    with pytest.raises(Unmergeable) as refused:
        trees.merge(source(TALK), ours, theirs)
    assert refused.value.paths == [manifest_path(SID)]
    merged = trees.merge(source(TALK), ours, theirs, strict=False)
    assert trees.files(merged.tree) == {}  # both of its files
    assert merged.sources == []


def test_a_source_with_two_bodies_is_read_by_the_first_by_name(trees):
    # A broken tree (lantern check names it): the same body chosen on every host
    md = body_path(SID, "md")
    base = {**source(TALK), md: b"ignored\n"}
    ours = source(TALK + b"User: a\n", updated_at=T0 + 1)
    theirs = source(TALK + b"User: b\n", updated_at=T0 + 2)
    merged = trees.merge(base, ours, theirs)
    [report] = merged.sources
    # "md" sorts before "txt": the md body stands for each side, changed on neither, and the
    # merged source is written as one manifest and that one body
    assert report.merge.body_merge.how == "same"
    files = trees.files(merged.tree)
    assert set(files) == {manifest_path(SID), md}
    assert files[md] == b"ignored\n"
