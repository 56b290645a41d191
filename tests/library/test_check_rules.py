"""lantern check and lantern commit asked directly (docs/editing.md): what a report's summary
names, what check finds under sources/, and what commit takes as changed.

test_check_commit.py holds the commands; these hold the rules its tests left unasked (the
mutation run of ``checker``, benchmarks/mutation.py, found them).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from support.stores import git, make_store, opened

from lantern_git.evidence.sources import SourceInput
from lantern_git.memory.checker import CheckReport
from lantern_git.model.record_file import Problem, record_path

RECORD = Problem("memory/ab/abcdef0123456789.md", 3, "kind: unknown")
SOURCE = Problem("sources/ab/abcdef0123456789.yaml", None, "body: missing")
ENTITY = Problem("entities/person/ana.md", 2, "key: wrong")


@pytest.mark.parametrize(
    ("problems", "summary"),
    [
        ([], "0 problems in record files"),
        ([RECORD], "1 problem in record files"),
        ([SOURCE], "1 problem in source files"),
        ([RECORD, RECORD], "2 problems in record files"),
        ([ENTITY, SOURCE], "2 problems in source and entity files"),
        ([ENTITY, SOURCE, RECORD], "3 problems in record, source and entity files"),
    ],
)
def test_a_reports_summary_counts_the_problems_and_names_what_they_are_in(problems, summary):
    assert CheckReport(checked=3, problems=list(problems)).summary == summary


@pytest.fixture
def path(tmp_path: Path) -> Path:
    return make_store(tmp_path / "store")


def test_check_names_a_file_under_sources_where_no_source_file_lives(path):
    with opened(path) as store:
        store.sources.add([SourceInput(b"User: hi\n", "a.md", uri="session:a")])
    (path / "sources" / "notes.txt").write_text("not a source\n")
    with opened(path) as store:
        report = store.check()
    assert [str(p) for p in report.problems] == [
        "sources/notes.txt: is not a source file; sources live at "
        "sources/<aa>/<id>.<ext> beside sources/<aa>/<id>.yaml"
    ]
    # The stray file, the one source, and no record or entity file.
    assert report.checked == 2


def test_commit_leaves_out_a_source_larger_than_a_record_whose_working_file_is_as_committed(path):
    big = b"".join(b"User: line %d of a long session\n" % n for n in range(20_000))
    assert len(big) > 256 * 1024
    with opened(path) as store:
        [source] = store.sources.add([SourceInput(big, "long.md", uri="session:long")])
        record = store.add("a long session was had", kind="fact")
    source_id = source.manifest.id
    body = path / "sources" / source_id[:2] / f"{source_id}.md"
    # git lists the body (a change staged), but the file itself is as HEAD has it.
    body.write_bytes(big + b"User: one more line\n")
    git(path, "add", str(body))
    body.write_bytes(big)
    file = path / record_path(record.id)
    file.write_text(file.read_text().replace("priority: 50", "priority: 70"))
    with opened(path) as store:
        done = store.commit_hand_edits()
    assert (done.records, done.sources) == ([record.id], [])
    assert git(path, "show", "--name-only", "--format=", "HEAD").split() == [record_path(record.id)]
