"""Export and import asked directly (docs/transfer.md): what an import skips, and what an
export says of a source it cannot read.

test_transfer.py holds the commands; these hold the rules its tests left unasked (the mutation
run of ``transfer``, benchmarks/mutation.py, found them).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support.stores import git, make_store, opened

from lantern_git.errors import ValidationError
from lantern_git.evidence.sources import SourceInput
from lantern_git.memory.transfer import RecordExport
from lantern_git.model.entity_keys import entity_path


def entity_line(key: str, name: str) -> str:
    return json.dumps({"entity": {"key": key, "name": name, "created_at": 1, "updated_at": 1}})


def head_of_review(path: Path) -> str:
    return git(path, "rev-parse", "lantern/review/agent").strip()


@pytest.fixture
def path(tmp_path: Path) -> Path:
    return make_store(tmp_path / "store")


def test_an_entity_twice_in_one_import_is_written_once_the_first_time(path):
    with opened(path) as store:
        result = store.import_records(
            [entity_line("person:ana", "Ana"), entity_line("person:ana", "Ana Again")]
        )
        assert result.entities == ["person:ana"] and result.imported == 0
        assert store.entities.get("person:ana").name == "Ana"
    message = git(path, "log", "-1", "--format=%B")
    assert message.count("Lantern-Entity: person:ana") == 1
    assert message.splitlines()[0] == "import 0 records and 1 entity"


def test_an_entity_the_review_branch_added_is_not_imported_again_in_review_mode(path):
    with opened(path, review=True, review_name="agent") as agent:
        agent.entities.add("person:ana", name="Ana")
        # The entity is on the review branch only: the working tree has no file for it.
        assert not (path / entity_path("person:ana")).exists()
        tip = head_of_review(path)
        result = agent.import_records([entity_line("person:ana", "Ana Again")])
        assert result.entities == [] and result.commit is None
    assert head_of_review(path) == tip
    pending = git(path, "show", f"lantern/review/agent:{entity_path('person:ana')}")
    assert "name: Ana\n" in pending


def test_an_export_skips_a_source_it_cannot_read_and_says_so(path):
    with opened(path) as store:
        [good] = store.sources.add([SourceInput(b"User: hi\n", "a.md", uri="session:a")])
        [bad] = store.sources.add([SourceInput(b"User: bye\n", "b.md", uri="session:b")])
    manifest = path / "sources" / bad.manifest.id[:2] / f"{bad.manifest.id}.yaml"
    manifest.write_text("id: [not, an, id]\n")
    warned: list[str] = []
    told = RecordExport(str(path), warn=warned.append)
    assert [s.manifest.id for s in told.sources()] == [good.manifest.id]
    assert len(warned) == 1 and warned[0].startswith(
        f"warning: skipped {manifest.relative_to(path)}"
    )
    quiet = RecordExport(str(path))
    assert [s.manifest.id for s in quiet.sources()] == [good.manifest.id]
    assert [str(p) for p in quiet.skipped] == [str(p) for p in told.skipped]
    assert len(quiet.skipped) == 1


def test_an_entity_line_with_a_key_beside_entity_is_refused_naming_the_line(path):
    extra = json.dumps({"entity": {"key": "person:ana", "created_at": 1, "updated_at": 1}, "x": 1})
    before = git(path, "rev-parse", "HEAD")
    with opened(path) as store, pytest.raises(ValidationError) as refused:
        store.import_records([extra])
    assert str(refused.value) == "line 1: an entity line has one key, entity"
    assert git(path, "rev-parse", "HEAD") == before


def test_a_source_line_without_its_extension_is_refused_naming_the_field(path):
    manifest = {"id": "0123456789abcdef", "kind": "note", "captured_at": 1, "updated_at": 1}
    line = json.dumps({"source": manifest, "body": "User: hi\n"})
    with opened(path) as store, pytest.raises(ValidationError) as refused:
        store.import_records([line])
    assert str(refused.value) == "line 1: ext: must be the body file's extension"


def test_a_file_whose_name_sorts_before_a_dash_is_read_as_a_file_not_stdin(path, monkeypatch):
    from lantern_git.memory.transfer import read_import_source

    (path / "+export.jsonl").write_text('{"kind": "fact", "content": "from the file"}\n')
    monkeypatch.chdir(path)
    lines = read_import_source("+export.jsonl")
    assert lines == [b'{"kind": "fact", "content": "from the file"}']


def test_records_after_an_entity_line_are_imported_too(path):
    record = json.dumps({"kind": "fact", "content": "Ana lives in Lisbon"})
    with opened(path) as store:
        result = store.import_records([entity_line("person:ana", "Ana"), record])
    assert (result.imported, result.entities) == (1, ["person:ana"])


def test_an_entity_the_store_has_is_skipped_and_the_next_one_imported(path):
    with opened(path) as store:
        store.entities.add("person:ana", name="Ana")
        result = store.import_records(
            [entity_line("person:ana", "Ana Again"), entity_line("person:bo", "Bo")]
        )
        assert result.entities == ["person:bo"]
        assert store.entities.get("person:ana").name == "Ana"


def source_line(uri: str, body: str) -> str:
    """An export's line for a source of ``uri`` holding ``body``."""
    from lantern_git.memory.transfer import SourceImport
    from lantern_git.model.source import SourceManifest, compute_source_id
    from lantern_git.model.source_file import describe

    data = body.encode()
    manifest = SourceManifest(
        id=compute_source_id(uri, data),
        kind="note",
        uri=uri,
        media_type="text/markdown",
        captured_at=1,
        updated_at=1,
        **describe(data),
    )
    return json.dumps(SourceImport(manifest, "md", data).to_dict())


@pytest.mark.parametrize(("count", "subject"), [(1, "1 source"), (2, "2 sources")])
def test_an_import_s_subject_counts_its_sources(path, count, subject):
    lines = [source_line(f"note:{n}", f"User: {n}\n") for n in range(count)]
    with opened(path) as store:
        assert len(store.import_records(lines).sources) == count
    assert git(path, "log", "-1", "--format=%s").strip() == f"import 0 records and {subject}"


def test_a_source_the_review_branch_added_is_not_imported_again_in_review_mode(path):
    with opened(path, review=True, review_name="agent") as agent:
        [added] = agent.sources.add([SourceInput(b"User: 1\n", "a.md", uri="note:1")])
        tip = head_of_review(path)
        result = agent.import_records([source_line("note:1", "User: other\n")])
        assert result.sources == [] and result.commit is None
    assert head_of_review(path) == tip
    assert added.manifest.id == json.loads(source_line("note:1", ""))["source"]["id"]


def test_an_export_skips_an_entity_file_it_cannot_read_and_says_so(path):
    with opened(path) as store:
        store.entities.add("person:ana", name="Ana")
        store.entities.add("person:bo", name="Bo")
    (path / entity_path("person:bo")).write_text("no front matter\n")
    warned: list[str] = []
    told = RecordExport(str(path), warn=warned.append)
    assert [e.key for e in told.entities()] == ["person:ana"]
    assert len(warned) == 1 and warned[0].startswith(f"warning: skipped {entity_path('person:bo')}")
    quiet = RecordExport(str(path))
    assert [e.key for e in quiet.entities()] == ["person:ana"] and len(quiet.skipped) == 1


def test_a_bad_entity_line_is_refused_naming_its_line(path):
    bad = json.dumps({"entity": {"key": "no colon", "created_at": 1, "updated_at": 1}})
    with opened(path) as store, pytest.raises(ValidationError) as refused:
        store.import_records([entity_line("person:ana", "Ana"), bad])
    assert str(refused.value).startswith("line 2: ")


def test_records_after_a_source_line_and_a_repeated_source_are_imported_too(path):
    record = json.dumps({"kind": "fact", "content": "Ana lives in Lisbon"})
    lines = [source_line("note:1", "User: 1\n"), source_line("note:1", "User: 1\n")]
    lines += [source_line("note:2", "User: 2\n"), record]
    with opened(path) as store:
        result = store.import_records(lines)
    assert (result.imported, len(result.sources)) == (1, 2)
    assert git(path, "log", "-1", "--format=%s").strip() == "import 1 record and 2 sources"


def test_an_import_s_subject_counts_its_entities(path):
    lines = [entity_line("person:ana", "Ana"), entity_line("person:bo", "Bo")]
    with opened(path) as store:
        assert store.import_records(lines).entities == ["person:ana", "person:bo"]
    assert git(path, "log", "-1", "--format=%s").strip() == "import 0 records and 2 entities"


def test_an_import_reports_progress_once_a_line_blank_lines_too(path):
    told: list[int] = []
    record = json.dumps({"kind": "fact", "content": "Ana lives in Lisbon"})
    with opened(path) as store:
        store.import_records([record, "", entity_line("person:ana", "Ana")], progress=told.append)
    assert told == [1, 1, 1]


@pytest.mark.parametrize(
    ("new", "existing", "rebuilds"),
    [
        (10, 0, False),
        (1000, 0, False),
        (1001, 0, True),
        (1001, 5000, False),
        (1001, 4003, True),
        (1001, 4004, False),
        (4000, 15_999, True),
        (4000, 16_000, False),
    ],
)
def test_an_import_rebuilds_the_index_past_1000_new_records_and_a_quarter_of_the_store(
    new, existing, rebuilds
):
    from lantern_git.memory.transfer import rebuilds_index

    counted: list[int] = []

    def count() -> int:
        counted.append(existing)
        return existing

    assert rebuilds_index(new, count) is rebuilds
    # The store is walked to count it only when the import is past the threshold.
    assert counted == ([existing] if new > 1000 else [])
