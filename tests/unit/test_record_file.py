"""Record files asked directly (lantern_git.model.record_file): where a record lives, the one safe
way to read one, and the problem each wrong file gets, on real files in a temporary folder.

test_record_files.py holds that every command reports a FIFO, a socket or a link and none hangs;
these hold the rules under it, each at its edge (the mutation run's ``record_file`` module,
benchmarks/mutation.py, asks each line).
"""

from __future__ import annotations

import os
import socket
import stat
from pathlib import Path

import pygit2
import pytest
from support.stores import git, make_store

from lantern_git.core.fields import MAX_FILE_BYTES, TMP_SUFFIX
from lantern_git.errors import NotFound, StoreError, ValidationError
from lantern_git.git.repo import GitRepo
from lantern_git.model.record import Record
from lantern_git.model.record_file import (
    Problem,
    conflict_line,
    count_records,
    expected_id,
    layout_problem,
    load,
    parse,
    read_bytes,
    read_record_file,
    record_candidates,
    record_files,
    record_path,
    walk,
)
from lantern_git.store import Store

T0 = 1_764_000_000
LAYOUT = "memory/<aa>/<id>.md"
MISNAMED = f"is not named <16 hex digit id>.md; records live at {LAYOUT}"
REGULAR = "record files must be regular files"


def record(content: str = "a fact") -> Record:
    return Record.new(kind="fact", content=content, now=T0)


def put(root: Path, path: str, data: bytes) -> Path:
    full = root / path
    full.parent.mkdir(parents=True, exist_ok=True)
    full.write_bytes(data)
    return full


# -- where a record lives


def test_a_records_path_is_its_shard_then_its_id():
    assert record_path("0123456789abcdef") == "memory/01/0123456789abcdef.md"


@pytest.mark.parametrize(
    "bad", ["0123456789ABCDEF", "0123456789abcde", "0123456789abcdef0", "../../etc/passwd", 7]
)
def test_an_id_that_is_not_sixteen_lowercase_hex_digits_never_becomes_a_path(bad):
    with pytest.raises(ValidationError) as caught:
        record_path(bad)
    assert caught.value.field == "id"
    assert caught.value.message == f"invalid id {bad!r}: expected 16 lowercase hex digits"


def test_the_id_a_path_must_hold():
    assert expected_id("memory/01/0123456789abcdef.md") == "0123456789abcdef"
    for path in (
        None,
        "",
        "memory/02/0123456789abcdef.md",  # the wrong shard
        "memory/00/0123456789abcdef.md",  # the wrong shard, sorting before the right one
        "memory/01/0123456789abcdef.md/x",
        "memory/01/0123456789abcdef.md/0123456789abcdef.md",
        "memory/01/0123456789abcdef.txt",
        "memory/01/0123456789abcdeg.md",
        "notes/01/0123456789abcdef.md",
        "archive/01/0123456789abcdef.md",  # a folder sorting before memory/
        "memory/0123456789abcdef.md",
        "memory/01/x/0123456789abcdef.md",
    ):
        assert expected_id(path) is None, path


def test_what_is_wrong_with_a_place_for_a_record():
    assert layout_problem("memory/01/0123456789abcdef.md") is None
    outside = f"is outside the store layout; records live at {LAYOUT}"
    assert layout_problem("notes/01/0123456789abcdef.md") == outside
    assert layout_problem("archive/01/0123456789abcdef.md") == outside  # sorts before memory
    assert layout_problem("memory/0123456789abcdef.md") == outside
    assert layout_problem("memory/01/x/0123456789abcdef.md") == outside
    assert layout_problem("memory/01/0123456789abcdef.txt") == MISNAMED
    assert layout_problem("memory/01/0123456789abcde.md") == MISNAMED
    assert layout_problem("memory/01/0123456789abcdef.MD") == MISNAMED  # sorts before .md
    for shard in ("00", "02"):
        assert layout_problem(f"memory/{shard}/0123456789abcdef.md") == (
            "is in the wrong folder; record 0123456789abcdef belongs at "
            "memory/01/0123456789abcdef.md"
        )


def test_conflict_markers_are_found_only_in_order_and_at_the_start_of_lines():
    text = "a\nb\n<<<<<<< ours\nx\n=======\ny\n>>>>>>> theirs\n"
    assert conflict_line(text) == 3
    assert conflict_line("<<<<<<<\n=======\n>>>>>>>\n") == 1
    assert conflict_line("a <<<<<<< x\n=======\n>>>>>>> y\n") is None
    assert conflict_line(">>>>>>> y\n=======\n<<<<<<< x\n") is None
    assert conflict_line("<<<<<<<< x\n=======\n>>>>>>> y\n") is None  # eight, not seven
    assert conflict_line("no markers\n") is None


def test_a_problem_names_its_path_and_line():
    assert str(Problem("memory/a.md", 3, "is bad")) == "memory/a.md:3: is bad"
    assert str(Problem("memory/a.md", None, "is bad")) == "memory/a.md: is bad"
    assert Problem("p", 2, "m").to_dict() == {"path": "p", "line": 2, "message": "m"}
    # A value: the same problem found twice is one problem.
    assert len({Problem("p", 2, "m"), Problem("p", 2, "m")}) == 1


# -- reading one file


def test_a_regular_file_is_read_up_to_one_byte_past_the_limit(tmp_path):
    put(tmp_path, "memory/01/f.md", b"x" * 20)
    assert read_bytes(str(tmp_path), "memory/01/f.md", limit=5) == (b"x" * 6, None)
    assert read_bytes(str(tmp_path), "memory/01/f.md") == (b"x" * 20, None)
    assert read_bytes(str(tmp_path), "memory/01/none.md") == (None, None)


def test_a_link_is_never_followed_whether_it_is_the_file_or_a_folder_above_it(tmp_path):
    outside = put(tmp_path, "outside/secret.md", b"secret")
    (tmp_path / "memory").mkdir()
    os.symlink(outside, tmp_path / "memory" / "f.md")
    assert read_bytes(str(tmp_path), "memory/f.md") == (
        None,
        Problem("memory/f.md", None, "is a symbolic link; record files must be regular files"),
    )
    os.symlink(tmp_path / "outside", tmp_path / "memory" / "01")
    assert read_bytes(str(tmp_path), "memory/01/secret.md") == (
        None,
        Problem(
            "memory/01/secret.md",
            None,
            "lies under memory/01, a symbolic link; lantern reads only inside the store",
        ),
    )
    dangling = tmp_path / "memory" / "gone.md"
    os.symlink(tmp_path / "nowhere", dangling)
    assert read_bytes(str(tmp_path), "memory/gone.md", what="entity files")[1] == Problem(
        "memory/gone.md", None, "is a symbolic link; entity files must be regular files"
    )


def test_a_folder_a_pipe_and_a_socket_are_named_and_never_read(tmp_path):
    (tmp_path / "memory" / "01" / "dir.md").mkdir(parents=True)
    os.mkfifo(tmp_path / "memory" / "01" / "pipe.md")
    sock = socket.socket(socket.AF_UNIX)
    try:
        sock.bind(str(tmp_path / "memory" / "01" / "sock.md"))
        root = str(tmp_path)
        for name, kind in (
            ("dir", "a folder"),
            ("pipe", "a named pipe (FIFO)"),
            ("sock", "a socket"),
        ):
            path = f"memory/01/{name}.md"
            assert read_bytes(root, path) == (
                None,
                Problem(
                    path,
                    None,
                    f"is not a regular file but {kind}; record files must be regular files",
                ),
            ), name
    finally:
        sock.close()


def test_a_file_that_cannot_be_opened_says_why(tmp_path):
    put(tmp_path, "memory/01", b"a file where a shard folder should be")
    assert read_bytes(str(tmp_path), "memory/01/f.md") == (
        None,
        Problem("memory/01/f.md", None, "cannot be read: Not a directory"),
    )


# -- parsing one file


def test_a_record_file_parses_to_its_record(tmp_path):
    kept = record()
    path = record_path(kept.id)
    assert parse(path, kept.to_markdown().encode()) == (kept, None)
    put(tmp_path, path, kept.to_markdown().encode())
    found = read_record_file(str(tmp_path), path)
    assert (found.record, found.problem) == (kept, None)
    assert found.data == kept.to_markdown().encode()
    assert load(str(tmp_path), kept.id) == (kept.to_markdown(), kept)


def test_each_wrong_record_file_gets_its_problem_and_line():
    kept = record()
    path = record_path(kept.id)
    text = kept.to_markdown()
    assert parse("memory/zz/x.md", text.encode()) == (
        None,
        Problem(
            "memory/zz/x.md", None, f"is not named <16 hex digit id>.md; records live at {LAYOUT}"
        ),
    )
    # Without the layout check, a record may sit anywhere (a blob from history, an import).
    assert parse("memory/zz/x.md", text.encode(), check_layout=False) == (kept, None)
    assert parse(path, b"x" * MAX_FILE_BYTES + b"x") == (
        None,
        Problem(path, None, f"is larger than {MAX_FILE_BYTES} bytes"),
    )
    assert parse(path, b"---\nok\n\xff\n") == (None, Problem(path, 3, "is not valid UTF-8"))
    assert parse(path, b"---\n\xff\n") == (None, Problem(path, 2, "is not valid UTF-8"))
    at_most = parse(path, b"x" * MAX_FILE_BYTES)[1]
    assert at_most is not None and at_most.message != f"is larger than {MAX_FILE_BYTES} bytes"
    conflicted = parse(path, f"{text}<<<<<<< a\n=======\n>>>>>>> b\n".encode())[1]
    assert conflicted is not None and conflicted.line == text.count("\n") + 1
    assert conflicted.message.startswith("holds git merge conflict markers")
    assert conflicted.message.endswith(f"--theirs -- {path}) and run lantern commit")
    nested = "---\nid: " + "[" * 10_000 + "\n---\nx\n"
    assert parse(path, nested.encode())[0] is None


@pytest.mark.parametrize("contents", [("one", "two"), ("two", "one")])
def test_a_record_whose_id_is_not_its_file_name_is_refused_at_line_2(contents):
    kept, other = record(contents[0]), record(contents[1])
    path = record_path(other.id)
    assert parse(path, kept.to_markdown().encode()) == (
        None,
        Problem(path, 2, f"id: {kept.id} does not match the file name {other.id}"),
    )
    assert parse(path, kept.to_markdown().encode(), check_layout=False) == (kept, None)


def test_load_says_no_record_or_names_the_files_problem(tmp_path):
    with pytest.raises(NotFound) as caught:
        load(str(tmp_path), "0123456789abcdef")
    assert str(caught.value) == "no record with id 0123456789abcdef"
    put(tmp_path, record_path("0123456789abcdef"), b"not a record\n")
    with pytest.raises(StoreError) as caught:
        load(str(tmp_path), "0123456789abcdef")
    assert caught.value.code == "invalid_record"
    assert str(caught.value).startswith(f"{record_path('0123456789abcdef')}")
    assert str(caught.value).endswith("; fix the file (see lantern check)")


# -- walking the store


def test_walk_lists_every_entry_a_record_file_should_be_in_path_order(tmp_path):
    root = tmp_path
    for path in ("memory/02/b.md", "memory/01/a.md", "memory/01/notes.txt"):
        put(root, path, b"x")
    put(root, f"memory/01/.a.md{TMP_SUFFIX}", b"lantern's own")
    put(root, "memory/01/.hidden.md", b"a person's")
    put(root, "memory/stray.md", b"x")
    put(root, "memory/0-first.md", b"x")  # a file sorting before the shards
    (root / "memory" / "01" / "deeper").mkdir()
    assert list(walk(str(root))) == [
        "memory/0-first.md",
        "memory/01/.hidden.md",
        "memory/01/a.md",
        "memory/01/deeper",
        "memory/01/notes.txt",
        "memory/02/b.md",
        "memory/stray.md",
    ]
    assert list(walk(str(tmp_path / "nowhere"))) == []


def test_walk_lists_a_linked_shard_as_an_entry_and_never_enters_it(tmp_path):
    put(tmp_path, "elsewhere/x.md", b"x")
    (tmp_path / "memory").mkdir()
    os.symlink(tmp_path / "elsewhere", tmp_path / "memory" / "01")
    assert list(walk(str(tmp_path))) == ["memory/01"]
    put(tmp_path, "plain/memory", b"memory is a file here")
    assert list(walk(str(tmp_path / "plain"))) == []


def test_record_files_are_the_md_files_of_real_shards(tmp_path):
    for path in ("memory/01/a.md", "memory/01/b.txt", "memory/01/.c.md", "memory/02/d.md"):
        put(tmp_path, path, b"x")
    put(tmp_path, "memory/e.md", b"x")
    put(tmp_path, "elsewhere/f.md", b"x")
    os.symlink(tmp_path / "elsewhere", tmp_path / "memory" / "03")
    os.symlink(tmp_path / "elsewhere" / "f.md", tmp_path / "memory" / "02" / "g.md")
    found = dict(record_files(str(tmp_path)))
    assert sorted(found) == ["memory/01/a.md", "memory/02/d.md", "memory/02/g.md"]
    assert found["memory/01/a.md"].st_size == 1
    # A link is listed as the link it is (reading it reports it), never as what it names.
    assert stat.S_ISLNK(found["memory/02/g.md"].st_mode)


def test_record_files_of_a_linked_or_missing_memory_folder_are_none(tmp_path):
    put(tmp_path, "elsewhere/01/a.md", b"x")
    assert list(record_files(str(tmp_path))) == []
    os.symlink(tmp_path / "elsewhere", tmp_path / "memory")
    assert list(record_files(str(tmp_path))) == []


def test_the_candidates_for_a_prefix_are_the_ids_of_its_shard(tmp_path):
    ids = ["0123456789abcdef", "0123456789abcd00", "01ffffffffffffff", "0223456789abcdef"]
    for record_id in ids:
        put(tmp_path, record_path(record_id), b"x")
    put(tmp_path, "memory/01/0123notanid.md", b"x")
    put(tmp_path, "memory/01/0123456789abcd11.txt", b"x")
    root = str(tmp_path)
    assert sorted(record_candidates(root, "0123")) == ["0123456789abcd00", "0123456789abcdef"]
    assert record_candidates(root, "01ff") == ["01ffffffffffffff"]
    assert record_candidates(root, "0123456789abcdef") == ["0123456789abcdef"]
    assert record_candidates(root, "0123456789abcde") == ["0123456789abcdef"]  # 15 digits
    assert record_candidates(root, "0123456789abcde0") == []
    assert record_candidates(root, "ffff") == []


def test_count_records_counts_the_record_paths_of_a_tree(tmp_path):
    path = make_store(tmp_path / "store")
    store = Store.open(str(path))
    try:
        for n in range(3):
            store.add(f"fact {n}", kind="fact")
    finally:
        store.close()
    put(path, "memory/notes.md", b"not a record path")
    put(path, "memory/01/readme.txt", b"not one either")
    git(path, "add", "-A")
    git(path, "commit", "-qm", "other files")
    repo = GitRepo(str(path))
    assert count_records(repo) == 3
    two_back = repo.repo.revparse_single("HEAD~2").peel(pygit2.Tree)
    assert count_records(repo, two_back) == 2
