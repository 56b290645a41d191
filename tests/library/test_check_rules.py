"""lantern check and lantern commit asked directly (docs/editing.md): what a report's summary
names, what check finds under sources/, and what commit takes as changed.

test_check_commit.py holds the commands; these hold the rules its tests left unasked (the
mutation run of ``checker``, benchmarks/mutation.py, found them).
"""

from __future__ import annotations

import os
import re
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


def test_a_duplicate_id_names_each_other_file_and_never_its_own(path):
    with opened(path) as store:
        record = store.add("Ana drinks tea", kind="preference")
    real = record_path(record.id)
    copy = f"memory/{record.id[:2]}/copy.md"
    (path / copy).write_text((path / real).read_text())
    with opened(path) as store:
        duplicates = [str(p) for p in store.check().problems if "duplicate id" in p.message]
    assert sorted(duplicates) == sorted(
        [
            f"{copy}:2: id: duplicate id {record.id}, also in {real}",
            f"{real}:2: id: duplicate id {record.id}, also in {copy}",
        ]
    )


def test_commit_finds_a_record_edit_behind_a_new_file_outside_memory(path):
    with opened(path) as store:
        record = store.add("Ana drinks tea", kind="preference")
    # git lists a.txt before memory/: the walk must go past it.
    (path / "a.txt").write_text("not lantern's\n")
    file = path / record_path(record.id)
    file.write_text(file.read_text().replace("priority: 50", "priority: 70"))
    with opened(path) as store:
        done = store.commit_hand_edits()
    assert done.records == [record.id] and done.commit is not None
    assert git(path, "status", "--porcelain") == "?? a.txt\n"


@pytest.mark.parametrize("offset", [-100, 100])
def test_commit_keeps_an_updated_at_set_by_hand_whichever_way_it_moved(path, offset):
    with opened(path) as store:
        record = store.add("Ana drinks tea", kind="preference")
    file = path / record_path(record.id)
    text = file.read_text().replace("priority: 50", "priority: 70")
    wanted = record.updated_at + offset
    file.write_text(text.replace(f"updated_at: {record.updated_at}", f"updated_at: {wanted}"))
    with opened(path) as store:
        done = store.commit_hand_edits()
        assert done.updated == [] and store.get(record.id).updated_at == wanted


def ingest_two(path: Path) -> tuple[str, str]:
    with opened(path) as store:
        return tuple(  # type: ignore[return-value]
            store.sources.add([SourceInput(f"User: {n}\n".encode(), "chat.md", uri=f"note:{n}")])[
                0
            ].manifest.id
            for n in ("a", "b")
        )


def manifest_of(path: Path, source_id: str) -> Path:
    return path / "sources" / source_id[:2] / f"{source_id}.yaml"


def test_a_refused_commit_reports_every_broken_or_deleted_file_it_checked(path):
    from lantern_git.memory.checker import HandEditsInvalid

    with opened(path) as store:
        record = store.add("Ana drinks tea", kind="preference")
    first, second = ingest_two(path)
    (path / record_path(record.id)).unlink()
    for source_id in (first, second):
        manifest_of(path, source_id).write_text("- a list\n")
    with opened(path) as store, pytest.raises(HandEditsInvalid) as refused:
        store.commit_hand_edits()
    report = refused.value.report
    assert sorted(p.path for p in report.problems) == sorted(
        [
            record_path(record.id),
            f"sources/{first[:2]}/{first}.yaml",
            f"sources/{second[:2]}/{second}.yaml",
        ]
    )
    # The deleted record and the two sources.
    assert report.checked == 3
    deleted = next(p for p in report.problems if p.path == record_path(record.id))
    assert f"lantern memory delete {record.id})" in deleted.message


def test_a_source_deleted_by_hand_is_refused_naming_how_to_remove_it(path):
    from lantern_git.memory.checker import HandEditsInvalid

    first, _ = ingest_two(path)
    before = git(path, "rev-parse", "HEAD")
    for name in (f"{first}.md", f"{first}.yaml"):
        (path / "sources" / first[:2] / name).unlink()
    with opened(path) as store, pytest.raises(HandEditsInvalid) as refused:
        store.commit_hand_edits()
    assert [str(p) for p in refused.value.report.problems] == [
        f"sources/{first[:2]}/{first}.yaml: was deleted by hand; remove a source with: lantern "
        f"source remove {first} (or bring it back with: git checkout HEAD -- sources/{first[:2]}/)"
    ]
    assert git(path, "rev-parse", "HEAD") == before


@pytest.mark.parametrize(
    ("records", "sources", "summary"),
    [
        (1, 0, "edit {record} by hand"),
        (0, 1, "edit source {source} by hand"),
        (0, 2, "edit 0 records and 2 sources by hand"),
        (1, 1, "edit 1 records and 1 sources by hand"),
        (2, 0, "edit 2 records by hand"),
    ],
)
def test_a_hand_commit_s_summary_names_what_it_holds(path, records, sources, summary):
    with opened(path) as store:
        added = [store.add(f"fact {n}", kind="fact") for n in range(records)]
    source_ids = ingest_two(path)[:sources]
    for record in added:
        file = path / record_path(record.id)
        file.write_text(file.read_text().replace("priority: 50", "priority: 70"))
    for source_id in source_ids:
        body = path / "sources" / source_id[:2] / f"{source_id}.md"
        body.write_text(body.read_text() + "User: more\n")
    with opened(path) as store:
        store.commit_hand_edits()
    expected = summary.format(
        source=source_ids[0] if source_ids else "", record=added[0].id if added else ""
    )
    assert git(path, "log", "-1", "--format=%s") == expected + "\n"


def test_a_manifest_edited_by_hand_is_committed_as_written_when_its_body_is_unchanged(path):
    first, _ = ingest_two(path)
    manifest = manifest_of(path, first)
    uri = "uri: note:a\n"
    written = manifest.read_text().replace(uri, uri + "title: chat a\n") + "# checked by Ana\n"
    # An updated_at set by hand, long before now: a manifest lantern rewrote would show it.
    written = re.sub(r"updated_at: \d+", "updated_at: 1700000000", written)
    manifest.write_text(written)
    with opened(path) as store:
        store.commit_hand_edits()
        kept = store.sources.get(first)
    assert (kept.title, kept.updated_at) == ("chat a", 1_700_000_000)
    assert git(path, "show", f"HEAD:sources/{first[:2]}/{first}.yaml") == written


def test_a_body_renamed_by_hand_is_committed_under_its_new_name_only(path):
    first, _ = ingest_two(path)
    folder = path / "sources" / first[:2]
    (folder / f"{first}.md").rename(folder / f"{first}.txt")
    with opened(path) as store:
        store.commit_hand_edits()
    assert git(path, "ls-files", f"sources/{first[:2]}/{first}.*").split() == [
        f"sources/{first[:2]}/{first}.txt",
        f"sources/{first[:2]}/{first}.yaml",
    ]
    assert git(path, "status", "--porcelain") == ""


def test_commit_checks_the_files_changed_since_head_not_every_file(path):
    with opened(path) as store:
        broken = store.add("Ana drinks tea", kind="preference")
        edited = store.add("Bo drinks coffee", kind="preference")
    # A broken file committed with plain git past the hook: check reports it, and commit,
    # which checks what changed since HEAD, still takes another record's edit.
    file = path / record_path(broken.id)
    file.write_text(file.read_text().replace("priority: 50", "priority: lots"))
    git(path, "commit", "-q", "--no-verify", "-am", "broken by hand")
    other = path / record_path(edited.id)
    other.write_text(other.read_text().replace("priority: 50", "priority: 70"))
    with opened(path) as store:
        assert [p.path for p in store.check().problems] == [record_path(broken.id)]
        done = store.commit_hand_edits()
    assert done.records == [edited.id]
    assert git(path, "show", "--name-only", "--format=", "HEAD").split() == [record_path(edited.id)]


def test_commit_leaves_a_file_git_ignores_under_memory_alone(path):
    with opened(path) as store:
        record = store.add("Ana drinks tea", kind="preference")
    (path / ".gitignore").write_text("*.swp\n")
    git(path, "add", ".gitignore")
    git(path, "commit", "-qm", "ignore swap files")
    swap = path / "memory" / record.id[:2] / f".{record.id}.md.swp"
    swap.write_bytes(b"an editor's swap file\0")
    file = path / record_path(record.id)
    file.write_text(file.read_text().replace("priority: 50", "priority: 70"))
    with opened(path) as store:
        done = store.commit_hand_edits()
    assert done.records == [record.id]
    assert git(path, "show", "--name-only", "--format=", "HEAD").split() == [record_path(record.id)]
    assert swap.exists()


def test_commit_never_looks_inside_a_linked_folder_under_memory(path, tmp_path):
    from lantern_git.memory.checker import HandEditsInvalid

    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    os.mkfifo(elsewhere / "pipe")
    (path / "memory").mkdir(exist_ok=True)
    (path / "memory" / "zz").symlink_to(elsewhere, target_is_directory=True)
    with opened(path) as store, pytest.raises(HandEditsInvalid) as refused:
        store.commit_hand_edits()
    assert [p.path for p in refused.value.report.problems] == ["memory/zz"]


def test_a_refused_commit_counts_a_stray_file_under_sources_and_reports_each_source(path):
    from lantern_git.memory.checker import HandEditsInvalid

    first, second = sorted(ingest_two(path))
    for name in (f"{first}.md", f"{first}.yaml"):
        (path / "sources" / first[:2] / name).unlink()
    manifest_of(path, second).write_text("- a list\n")
    (path / "sources" / "notes.txt").write_text("not a source\n")
    with opened(path) as store, pytest.raises(HandEditsInvalid) as refused:
        store.commit_hand_edits()
    report = refused.value.report
    assert [p.path for p in report.problems] == [
        f"sources/{first[:2]}/{first}.yaml",
        f"sources/{second[:2]}/{second}.yaml",
        "sources/notes.txt",
    ]
    # The stray file and the two sources.
    assert report.checked == 3


def test_a_commit_message_with_a_carriage_return_is_refused(path):
    from lantern_git.errors import InvalidInput

    with opened(path) as store:
        record = store.add("Ana drinks tea", kind="preference")
    file = path / record_path(record.id)
    file.write_text(file.read_text().replace("priority: 50", "priority: 70"))
    before = git(path, "rev-parse", "HEAD")
    with opened(path) as store, pytest.raises(InvalidInput) as refused:
        store.commit_hand_edits("one\rtwo")
    assert refused.value.code == "invalid_message"
    assert git(path, "rev-parse", "HEAD") == before


def test_check_goes_on_past_a_file_it_cannot_read(path):
    with opened(path) as store:
        record = store.add("Ana drinks tea", kind="preference")
    file = path / record_path(record.id)
    file.write_text(file.read_text().replace("priority: 50", "priority: lots"))
    fifo = path / "memory" / "00" / "0000000000000000.md"
    fifo.parent.mkdir()
    os.mkfifo(fifo)
    with opened(path) as store:
        problems = [p.path for p in store.check().problems]
    assert problems == ["memory/00/0000000000000000.md", record_path(record.id)]


def test_a_body_shortened_by_hand_gets_its_manifest_s_facts_whichever_way_they_sort(path):
    import hashlib

    first, _ = ingest_two(path)  # "User: a\n"
    old = hashlib.sha256(b"User: a\n").hexdigest()
    # A shorter body: fewer bytes, as many lines, a sha256 that sorts first; no fact of it is
    # larger than the manifest's.
    shorter = next(
        body for n in range(1000) if hashlib.sha256(body := f"{n}\n".encode()).hexdigest() < old
    )
    (path / "sources" / first[:2] / f"{first}.md").write_bytes(shorter)
    with opened(path) as store:
        store.commit_hand_edits()
        manifest = store.sources.get(first)
    assert (manifest.bytes, manifest.lines) == (len(shorter), 1)
    assert manifest.sha256 == hashlib.sha256(shorter).hexdigest()


def test_a_stray_file_sorting_first_under_sources_does_not_hide_the_sources_after_it(path):
    from lantern_git.memory.checker import HandEditsInvalid

    first, _ = ingest_two(path)
    (path / "sources" / "!notes.txt").write_text("not a source\n")
    body = path / "sources" / first[:2] / f"{first}.md"
    body.write_text(body.read_text() + "User: more\n")
    with opened(path) as store, pytest.raises(HandEditsInvalid) as refused:
        store.commit_hand_edits()
    report = refused.value.report
    assert [p.path for p in report.problems] == ["sources/!notes.txt"]
    # The stray file and the edited source, checked after it.
    assert report.checked == 2
