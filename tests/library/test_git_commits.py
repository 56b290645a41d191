"""How the git layer makes a commit, asked directly on real repositories: the message and its
trailers, the tree built from the changed paths only, author and committer, a write's commit,
a review branch's commit (on its tip, or fresh from HEAD) and the compare-and-swap that moves
a branch that is not checked out.

Every writer goes through these (test_write_transaction.py, test_review.py, ...); here each
rule is held on its own, with the expected trees and messages written out by the test, so the
mutation run's ``git_commits`` module (benchmarks/mutation.py) can ask every line of them.
"""

from __future__ import annotations

from pathlib import Path

import pygit2
import pytest
from support.stores import commit_whose_id_sorts, init_repo

from lantern_git.errors import GitError, InvalidInput
from lantern_git.git.repo import (
    BLOB_MODE,
    EXECUTABLE_MODE,
    LINK_MODE,
    GitRepo,
    Provenance,
    format_message,
    parse_trailers,
)

SIDE = "refs/heads/lantern/review/agent"
EMPTY_TREE = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"


@pytest.fixture
def repo(tmp_path: Path) -> GitRepo:
    """A repository with a local identity and no commit yet."""
    init_repo(tmp_path / "repo")
    return GitRepo(str(tmp_path / "repo"))


@pytest.fixture
def journal(tmp_path: Path) -> str:
    return str(tmp_path / "state")


def walk(repo: GitRepo, tree: pygit2.Tree | pygit2.Oid | None) -> tuple[dict[str, bytes], set[str]]:
    """Every file of a tree (path -> bytes) and every folder (its subtrees' paths), walked with
    pygit2 alone."""
    files: dict[str, bytes] = {}
    folders: set[str] = set()
    todo = [("", repo.repo[tree].peel(pygit2.Tree) if isinstance(tree, pygit2.Oid) else tree)]
    while todo:
        prefix, node = todo.pop()
        for entry in node or ():
            obj = repo.repo[entry.id]
            if isinstance(obj, pygit2.Tree):
                folders.add(prefix + entry.name)
                todo.append((prefix + entry.name + "/", obj))
            else:
                files[prefix + entry.name] = obj.peel(pygit2.Blob).data
    return files, folders


def files_of(repo: GitRepo, tree: pygit2.Tree | pygit2.Oid | None) -> dict[str, bytes]:
    return walk(repo, tree)[0]


def folders_of(repo: GitRepo, tree: pygit2.Oid) -> set[str]:
    return walk(repo, tree)[1]


def blob(repo: GitRepo, data: bytes, mode: int = BLOB_MODE) -> tuple[str, int]:
    return str(repo.repo.create_blob(data)), mode


def commit(repo: GitRepo, journal: str, files: dict[str, bytes | None], summary: str = "w"):
    oid = repo.commit_files(files, summary, Provenance(op="add"), journal_dir=journal)
    repo.finish(journal)
    return oid


def side_commit(repo: GitRepo, journal: str, files: dict[str, bytes | None], summary="r"):
    oid = repo.commit_to_branch(SIDE, files, summary, Provenance(op="add"), journal_dir=journal)
    repo.finish(journal)
    return oid


# ---------------------------------------------------------------------- message and trailers


def test_a_message_is_the_summary_s_first_line_then_each_trailer_in_order():
    prov = Provenance(
        op="update",
        records=("r1", "r2"),
        sources=("s1",),
        actor="cli",
        reason="because  of\nthis",
    )
    message = format_message("  update two records\nand more  ", prov, ["Lantern-Extra: x"])
    assert message == (
        "update two records\n"
        "\n"
        "Lantern-Op: update\n"
        "Lantern-Record: r1\n"
        "Lantern-Record: r2\n"
        "Lantern-Source: s1\n"
        "Lantern-Actor: cli\n"
        "Lantern-Reason: because of this\n"
        "Lantern-Extra: x\n"
    )


@pytest.mark.parametrize("summary", ["", "   ", "\n\n"])
def test_a_blank_summary_makes_the_op_the_subject_and_no_reason_no_reason_line(summary):
    assert format_message(summary, Provenance(op="delete")) == (
        "delete\n\nLantern-Op: delete\nLantern-Actor: api\n"
    )


def test_trailers_are_read_by_key_with_every_value_and_nothing_else():
    message = (
        "subject: Lantern-Op: no\n"
        "\n"
        "Lantern-Op: add\n"
        "Lantern-Record: aaa \n"
        "Lantern-Record: bbb\n"
        "  Lantern-Actor: indented\n"
        "Signed-off-by: Someone <s@example.com>\n"
        "Lantern-Reason: a: b\n"
        "Lantern-NoValue\n"
        "Lantern-Colon:no-space\n"
    )
    assert parse_trailers(message) == {
        "Lantern-Op": ["add"],
        "Lantern-Record": ["aaa", "bbb"],
        "Lantern-Reason": ["a: b"],
    }


def test_a_formatted_message_s_trailers_read_back_as_given():
    prov = Provenance(op="add", records=("r1",), sources=("s1", "s2"), actor="mcp", reason="why")
    assert parse_trailers(format_message("add", prov)) == {
        "Lantern-Op": ["add"],
        "Lantern-Record": ["r1"],
        "Lantern-Source": ["s1", "s2"],
        "Lantern-Actor": ["mcp"],
        "Lantern-Reason": ["why"],
    }


# ---------------------------------------------------------------------------------- trees


def test_a_tree_built_from_nothing_holds_each_path_with_its_mode(repo):
    tree = repo.build_tree(
        None,
        {
            "top.md": blob(repo, b"top\n"),
            "memory/aa/one.md": blob(repo, b"one\n"),
            "memory/ab/two.md": blob(repo, b"two\n"),
            "bin/run": blob(repo, b"#!/bin/sh\n", EXECUTABLE_MODE),
            "link": blob(repo, b"top.md", LINK_MODE),
            "gone.md": None,
        },
    )
    assert files_of(repo, tree) == {
        "top.md": b"top\n",
        "memory/aa/one.md": b"one\n",
        "memory/ab/two.md": b"two\n",
        "bin/run": b"#!/bin/sh\n",
        "link": b"top.md",
    }
    built = repo.repo[tree].peel(pygit2.Tree)
    assert built["bin/run"].filemode == EXECUTABLE_MODE
    assert built["link"].filemode == LINK_MODE
    assert built["memory/aa/one.md"].filemode == BLOB_MODE
    assert folders_of(repo, tree) == {"memory", "memory/aa", "memory/ab", "bin"}


def test_a_tree_keeps_what_the_changes_do_not_name_down_to_the_same_subtrees(repo):
    base = repo.build_tree(
        None,
        {
            "memory/aa/one.md": blob(repo, b"one\n"),
            "memory/aa/two.md": blob(repo, b"two\n"),
            "memory/bb/three.md": blob(repo, b"three\n"),
            "sources/s.md": blob(repo, b"s\n"),
        },
    )
    base_tree = repo.repo[base].peel(pygit2.Tree)
    new = repo.build_tree(base_tree, {"memory/aa/one.md": blob(repo, b"ONE\n")})
    assert files_of(repo, new) == {
        "memory/aa/one.md": b"ONE\n",
        "memory/aa/two.md": b"two\n",
        "memory/bb/three.md": b"three\n",
        "sources/s.md": b"s\n",
    }
    new_tree = repo.repo[new].peel(pygit2.Tree)
    assert new_tree["memory/bb"].id == base_tree["memory/bb"].id
    assert new_tree["sources"].id == base_tree["sources"].id
    assert new_tree["memory/aa/two.md"].id == base_tree["memory/aa/two.md"].id


def test_removing_a_folder_s_last_file_removes_the_folder_and_its_empty_parents(repo):
    base = repo.build_tree(
        None,
        {"memory/aa/one.md": blob(repo, b"one\n"), "memory/bb/two.md": blob(repo, b"two\n")},
    )
    base_tree = repo.repo[base].peel(pygit2.Tree)
    fewer = repo.build_tree(base_tree, {"memory/aa/one.md": None})
    assert files_of(repo, fewer) == {"memory/bb/two.md": b"two\n"}
    assert folders_of(repo, fewer) == {"memory", "memory/bb"}
    emptied = repo.build_tree(base_tree, {"memory/aa/one.md": None, "memory/bb/two.md": None})
    assert str(emptied) == EMPTY_TREE


def test_removing_what_the_tree_lacks_changes_nothing(repo):
    base = repo.build_tree(None, {"memory/aa/one.md": blob(repo, b"one\n")})
    base_tree = repo.repo[base].peel(pygit2.Tree)
    same = repo.build_tree(
        base_tree,
        {"memory/aa/none.md": None, "memory/zz/none.md": None, "none.md": None},
    )
    assert same == base
    assert str(repo.build_tree(None, {"a/b.md": None, "c.md": None})) == EMPTY_TREE


def test_a_folder_replaces_a_file_of_its_name_and_a_file_replaces_a_folder(repo):
    base = repo.build_tree(None, {"a": blob(repo, b"file a\n"), "b/c.md": blob(repo, b"c\n")})
    base_tree = repo.repo[base].peel(pygit2.Tree)
    swapped = repo.build_tree(
        base_tree,
        {
            "a": None,
            "a/inside.md": blob(repo, b"inside\n"),
            "b/c.md": None,
            "b": blob(repo, b"file b\n"),
        },
    )
    assert files_of(repo, swapped) == {"a/inside.md": b"inside\n", "b": b"file b\n"}
    # A path under a file that stays: the file's name becomes a folder holding only the new.
    grown = repo.build_tree(base_tree, {"a/deeper/x.md": blob(repo, b"x\n")})
    assert files_of(repo, grown) == {"a/deeper/x.md": b"x\n", "b/c.md": b"c\n"}


# -------------------------------------------------------------------------------- commits


def test_a_commit_object_names_its_author_committer_message_tree_and_parents(repo):
    tree = repo.build_tree(None, {"a.md": blob(repo, b"a\n")})
    prov = Provenance(
        op="add",
        records=("r1",),
        author="Agent Smith <agent@example.com>",
        committer="Pat Person <pat@example.com>",
    )
    made = repo.create_commit(tree, [], "add a", prov, ["Lantern-Extra: 1"])
    found = repo.repo[made].peel(pygit2.Commit)
    assert (found.author.name, found.author.email) == ("Agent Smith", "agent@example.com")
    assert (found.committer.name, found.committer.email) == ("Pat Person", "pat@example.com")
    assert found.message == (
        "add a\n\nLantern-Op: add\nLantern-Record: r1\nLantern-Actor: api\nLantern-Extra: 1\n"
    )
    assert found.tree_id == tree
    assert found.parents == []
    second = repo.create_commit(tree, [made], "again", Provenance(op="add"))
    assert [p.id for p in repo.repo[second].peel(pygit2.Commit).parents] == [made]
    # Nothing moved: the branch is still unborn.
    assert repo.head_oid() is None


def test_without_a_committer_the_author_commits_and_without_either_git_s_identity(repo):
    tree = repo.build_tree(None, {"a.md": blob(repo, b"a\n")})
    made = repo.create_commit(tree, [], "a", Provenance(op="add", author="Ana <ana@example.com>"))
    found = repo.repo[made].peel(pygit2.Commit)
    assert (found.committer.name, found.committer.email) == ("Ana", "ana@example.com")
    plain = repo.repo[repo.create_commit(tree, [], "a", Provenance(op="add"))]
    assert (plain.author.name, plain.committer.name) == ("Test Author", "Test Author")
    assert plain.author.email == "author@example.com"


def test_a_commit_of_a_tree_git_lacks_is_a_git_error_that_says_nothing_changed(repo):
    missing = pygit2.Oid(hex="1" * 40)
    with pytest.raises(GitError, match=r"cannot write to the git repository.*nothing changed"):
        repo.create_commit(missing, [], "a", Provenance(op="add"))


def test_a_bad_author_is_refused_before_any_object_is_written(repo, journal):
    with pytest.raises(InvalidInput, match="author"):
        repo.commit_files(
            {"a.md": b"a\n"}, "a", Provenance(op="add", author="no email"), journal_dir=journal
        )
    assert repo.head_oid() is None
    assert not (Path(repo.root) / "a.md").exists()


def test_commit_files_commits_on_head_s_line_and_leaves_the_files_in_the_working_tree(
    repo, journal
):
    first = commit(repo, journal, {"a.md": b"a\n", "memory/b.md": b"b\n"}, "first\nmore")
    found = repo.repo[first].peel(pygit2.Commit)
    assert found.parents == []
    assert found.message.startswith("first\n\nLantern-Op: add\n")
    second = commit(repo, journal, {"a.md": b"A\n", "memory/b.md": None, "c.md": b"c\n"})
    assert repo.head_oid() == second
    assert [p.id for p in repo.repo[second].peel(pygit2.Commit).parents] == [first]
    assert files_of(repo, repo.head_tree()) == {"a.md": b"A\n", "c.md": b"c\n"}
    root = Path(repo.root)
    assert (root / "a.md").read_bytes() == b"A\n"
    assert (root / "c.md").read_bytes() == b"c\n"
    assert not (root / "memory").exists()


def test_a_kept_working_file_stays_as_given_while_the_commit_holds_the_new_content(repo, journal):
    commit(repo, journal, {"a.md": b"a\n"})
    made = repo.commit_files(
        {"a.md": b"committed\n", "b.md": b"b\n"},
        "w",
        Provenance(op="update"),
        journal_dir=journal,
        worktree={"a.md": b"the user's edit\n"},
    )
    repo.finish(journal)
    assert files_of(repo, made) == {"a.md": b"committed\n", "b.md": b"b\n"}
    assert (Path(repo.root) / "a.md").read_bytes() == b"the user's edit\n"
    assert (Path(repo.root) / "b.md").read_bytes() == b"b\n"


@pytest.mark.parametrize("count", [63, 64, 65])
def test_a_write_of_many_files_is_one_commit_holding_each(repo, journal, count):
    files: dict[str, bytes | None] = {f"memory/{n:03d}.md": f"{n}\n".encode() for n in range(count)}
    made = commit(repo, journal, files)
    assert files_of(repo, made) == files
    assert repo.repo[made].peel(pygit2.Commit).parents == []
    assert sorted(p.name for p in (Path(repo.root) / "memory").iterdir()) == sorted(
        f"{n:03d}.md" for n in range(count)
    )


@pytest.mark.parametrize("path", ["../outside.md", "memory/../../outside.md", "/abs.md"])
def test_a_write_to_a_path_that_leaves_the_store_is_refused_writing_nothing(
    repo, journal, tmp_path, path
):
    head = commit(repo, journal, {"a.md": b"a\n"})
    objects = sorted(p.name for p in Path(repo.repo.path, "objects").rglob("*"))
    for write in (repo.commit_files, lambda *a, **k: repo.commit_to_branch(SIDE, *a, **k)):
        with pytest.raises(GitError, match="not a plain path inside the store"):
            write({"b.md": b"b\n", path: b"x\n"}, "w", Provenance(op="add"), journal_dir=journal)
    assert repo.head_oid() == head and repo.branch_tip(SIDE) is None
    assert sorted(p.name for p in Path(repo.repo.path, "objects").rglob("*")) == objects
    assert not (tmp_path / "outside.md").exists() and not (Path(repo.root) / "b.md").exists()


def test_a_write_through_a_linked_folder_is_refused_naming_the_link(repo, journal, tmp_path):
    head = commit(repo, journal, {"a.md": b"a\n"})
    outside = tmp_path / "outside"
    outside.mkdir()
    Path(repo.root, "memory").symlink_to(outside)
    for write in (repo.commit_files, lambda *a, **k: repo.commit_to_branch(SIDE, *a, **k)):
        with pytest.raises(GitError, match="memory is a symbolic link"):
            write({"memory/b.md": b"b\n"}, "w", Provenance(op="add"), journal_dir=journal)
    assert repo.head_oid() == head and repo.branch_tip(SIDE) is None
    assert list(outside.iterdir()) == []


# --------------------------------------------------------------------- a review branch


def test_a_new_review_branch_starts_from_head_and_nothing_else_moves(repo, journal):
    head = commit(repo, journal, {"a.md": b"a\n"})
    index_before = Path(repo.repo.path, "index").read_bytes()
    made = side_commit(repo, journal, {"b.md": b"b\n"})
    assert repo.branch_tip(SIDE) == made
    assert [p.id for p in repo.repo[made].peel(pygit2.Commit).parents] == [head]
    assert files_of(repo, made) == {"a.md": b"a\n", "b.md": b"b\n"}
    assert repo.head_oid() == head
    assert not (Path(repo.root) / "b.md").exists()
    assert Path(repo.repo.path, "index").read_bytes() == index_before


def test_a_review_branch_ahead_of_head_grows_on_its_tip(repo, journal):
    head = commit(repo, journal, {"a.md": b"a\n"})
    first = side_commit(repo, journal, {"b.md": b"b\n"})
    second = side_commit(repo, journal, {"c.md": b"c\n", "a.md": None})
    assert [p.id for p in repo.repo[second].peel(pygit2.Commit).parents] == [first]
    assert files_of(repo, second) == {"b.md": b"b\n", "c.md": b"c\n"}
    assert repo.head_oid() == head


@pytest.mark.parametrize("above", [True, False], ids=["tip-id-above", "tip-id-below"])
def test_a_review_branch_ahead_grows_on_its_tip_whichever_way_the_ids_sort(repo, journal, above):
    head = commit(repo, journal, {"a.md": b"a\n"})
    tree = repo.repo[head].peel(pygit2.Commit).tree_id
    pending = commit_whose_id_sorts(repo.repo, tree, [head], str(head), above=above)
    repo.repo.references.create(SIDE, pending)
    made = side_commit(repo, journal, {"b.md": b"b\n"})
    assert [p.id for p in repo.repo[made].peel(pygit2.Commit).parents] == [pending]


def test_a_review_branch_head_has_taken_in_starts_fresh_from_head(repo, journal):
    commit(repo, journal, {"a.md": b"a\n"})
    reviewed = side_commit(repo, journal, {"b.md": b"b\n"})
    # Accepted: HEAD's branch moves to the review branch's commit, then on past it.
    repo.repo.references[repo.branch_ref()].set_target(reviewed)
    head = commit(repo, journal, {"c.md": b"c\n"})
    fresh = side_commit(repo, journal, {"d.md": b"d\n"})
    assert [p.id for p in repo.repo[fresh].peel(pygit2.Commit).parents] == [head]
    assert files_of(repo, fresh) == {"a.md": b"a\n", "b.md": b"b\n", "c.md": b"c\n", "d.md": b"d\n"}


def test_a_review_branch_that_forked_before_head_moved_on_keeps_its_own_line(repo, journal):
    commit(repo, journal, {"a.md": b"a\n"})
    pending = side_commit(repo, journal, {"b.md": b"b\n"})
    commit(repo, journal, {"c.md": b"c\n"})
    more = side_commit(repo, journal, {"d.md": b"d\n"})
    assert [p.id for p in repo.repo[more].peel(pygit2.Commit).parents] == [pending]
    assert files_of(repo, more) == {"a.md": b"a\n", "b.md": b"b\n", "d.md": b"d\n"}


def test_a_review_branch_in_a_repository_with_no_commit_is_a_root_commit(repo, journal):
    made = side_commit(repo, journal, {"b.md": b"b\n"})
    assert repo.repo[made].peel(pygit2.Commit).parents == []
    assert repo.head_oid() is None
    again = side_commit(repo, journal, {"c.md": b"c\n"})
    assert [p.id for p in repo.repo[again].peel(pygit2.Commit).parents] == [made]


@pytest.mark.parametrize(
    "ref, message",
    [
        ("refs/heads/main", "not a branch other than the checked-out one"),
        ("refs/tags/review", "not a branch other than the checked-out one"),
        ("lantern/review/agent", "not a branch other than the checked-out one"),
        ("refs/heads/a..b", "not a valid ref name"),
        ("refs/heads/review.lock", "not a valid ref name"),
    ],
)
def test_a_review_commit_to_head_s_branch_or_not_a_branch_is_refused_writing_nothing(
    repo, journal, ref, message
):
    head = commit(repo, journal, {"a.md": b"a\n"})
    refs_before = sorted(repo.repo.references)
    with pytest.raises(GitError, match=message):
        repo.commit_to_branch(ref, {"b.md": b"b\n"}, "r", Provenance(op="add"), journal_dir=journal)
    assert sorted(repo.repo.references) == refs_before
    assert repo.head_oid() == head
    assert not Path(journal, "journal.json").exists()


def test_what_a_review_branch_changed_is_counted_from_where_it_left_head(repo, journal):
    assert repo.branch_changes(SIDE) == {}
    assert repo.branch_tip(SIDE) is None
    commit(repo, journal, {"a.md": b"a\n", "b.md": b"b\n", "keep.md": b"k\n"})
    side_commit(repo, journal, {"a.md": b"A\n", "b.md": None, "new.md": b"n\n"})
    # HEAD moves on afterwards: its own change is not the branch's.
    commit(repo, journal, {"keep.md": b"K\n", "head.md": b"h\n"})
    assert repo.branch_changes(SIDE) == {
        "a.md": (str(pygit2.hash(b"A\n")), BLOB_MODE),
        "b.md": None,
        "new.md": (str(pygit2.hash(b"n\n")), BLOB_MODE),
    }


def test_a_review_branch_in_an_unborn_repository_changed_all_it_holds(repo, journal):
    side_commit(repo, journal, {"b.md": b"b\n"})
    assert repo.branch_changes(SIDE) == {"b.md": (str(pygit2.hash(b"b\n")), BLOB_MODE)}


# ------------------------------------------------------------------- moving a side branch


def test_moving_a_side_branch_creates_it_then_moves_it_with_a_reflog_line(repo, journal):
    first = commit(repo, journal, {"a.md": b"a\n"})
    second = commit(repo, journal, {"b.md": b"b\n"})
    repo.move_branch(SIDE, None, first, "add", "create it\nsecond line", journal_dir=journal)
    assert repo.branch_tip(SIDE) == first
    repo.move_branch(SIDE, first, second, "add", "x" * 300, journal_dir=journal)
    assert repo.branch_tip(SIDE) == second
    log = [entry.message for entry in repo.repo.references[SIDE].log()]
    assert log == ["lantern: " + "x" * 191, "lantern: create it"]
    assert repo.head_oid() == second


@pytest.mark.parametrize(
    ("meanwhile", "message"),
    [
        ("moved", "moved during the write; nothing was committed"),
        ("disappeared", "disappeared during the write"),
        # Created by someone else: it counts as moved, and is never overwritten.
        ("appeared", "moved during the write; nothing was committed"),
    ],
)
def test_a_side_branch_that_changed_meanwhile_is_left_as_it_is(repo, journal, meanwhile, message):
    first = commit(repo, journal, {"a.md": b"a\n"})
    second = commit(repo, journal, {"b.md": b"b\n"})
    third = commit(repo, journal, {"c.md": b"c\n"})
    expected = {"moved": first, "disappeared": first, "appeared": None}[meanwhile]
    found = {"moved": second, "disappeared": None, "appeared": first}[meanwhile]
    if found is not None:
        repo.repo.references.create(SIDE, found)
    with pytest.raises(GitError, match=message):
        repo.move_branch(SIDE, expected, third, "add", "s", journal_dir=journal)
    assert repo.branch_tip(SIDE) == found
    assert not Path(journal, "journal.json").exists()


def test_moving_head_s_own_branch_aside_is_refused(repo, journal):
    first = commit(repo, journal, {"a.md": b"a\n"})
    second = commit(repo, journal, {"b.md": b"b\n"})
    with pytest.raises(GitError, match="not a branch other than the checked-out one"):
        repo.move_branch(repo.branch_ref(), second, first, "add", "s", journal_dir=journal)
    assert repo.head_oid() == second
