"""The library on real repositories: one commit per write, provenance, ids, init and adoption."""

from __future__ import annotations

import unicodedata
from pathlib import Path

import pytest
from support.stores import colliding_contents, git, init_repo, snapshot

from lantern_git.errors import (
    AmbiguousId,
    InvalidInput,
    NoStore,
    NotFound,
    UncommittedChanges,
    UnsupportedFormat,
)
from lantern_git.model.record import Record, compute_id
from lantern_git.model.record_file import record_path
from lantern_git.store import Store


def commit_count(path) -> int:
    return int(git(path, "rev-list", "--count", "HEAD").strip())


def last_message(path) -> str:
    """The raw commit message, byte for byte (``git log`` would add a newline)."""
    return git(path, "cat-file", "commit", "HEAD").split("\n\n", 1)[1]


def last_author(path) -> str:
    return git(path, "log", "-1", "--format=%an <%ae>").strip()


def trailer(path, key: str) -> list[str]:
    """Trailer values as git itself parses them (proves they are real git trailers)."""
    out = git(path, "log", "-1", f"--format=%(trailers:key={key},valueonly)")
    return [line for line in out.splitlines() if line]


def assert_clean(path) -> None:
    assert git(path, "status", "--porcelain", "--untracked-files=all") == ""


def changed_lines(path, rev_range: str = "HEAD~1") -> list[str]:
    diff = git(path, "diff", rev_range, "--unified=0")
    return [
        line
        for line in diff.splitlines()
        if line[:1] in "+-" and not line.startswith(("+++", "---"))
    ]


# ---------------------------------------------------------------------------- add


def test_add_makes_one_commit_with_summary_and_trailers(store, store_path):
    before = commit_count(store_path)
    written = store.written(
        store.add, "Raphael prefers separate branches.", kind="preference", scope="user:r"
    )
    record = written.value
    assert commit_count(store_path) == before + 1
    assert last_message(store_path) == (
        f"add {record.id}: Raphael prefers separate branches.\n"
        "\n"
        "Lantern-Op: add\n"
        f"Lantern-Record: {record.id}\n"
        "Lantern-Actor: api\n"
    )
    assert trailer(store_path, "Lantern-Op") == ["add"]
    assert trailer(store_path, "Lantern-Record") == [record.id]
    assert trailer(store_path, "Lantern-Actor") == ["api"]
    assert trailer(store_path, "Lantern-Reason") == []
    assert git(store_path, "show", "--name-only", "--format=", "HEAD").split() == [
        record_path(record.id)
    ]
    assert (store_path / record_path(record.id)).read_text() == record.to_markdown()
    assert written.commit == git(store_path, "rev-parse", "HEAD").strip()
    assert_clean(store_path)


def test_add_returns_a_validated_record_with_defaults(store):
    record = store.add("  The build uses uv.  \n", kind="fact")
    assert record.id == compute_id("fact", "global", "The build uses uv.")
    assert (record.scope, record.status, record.priority, record.urgency) == (
        "global",
        "active",
        50,
        0,
    )
    assert record.confidence == 1.0
    assert record.created_at == record.updated_at > 0
    assert record.content == "The build uses uv."
    assert store.get(record.id) == record


def test_add_with_reason_writes_the_reason_trailer(store, store_path):
    record = store.add("x", kind="fact", reason="told   by\nthe user")
    assert trailer(store_path, "Lantern-Reason") == ["told by the user"]
    assert last_message(store_path).endswith(
        f"Lantern-Record: {record.id}\nLantern-Actor: api\nLantern-Reason: told by the user\n"
    )


def test_long_content_gives_a_one_line_summary(store, store_path):
    content = "word " * 40 + "\nsecond line"
    record = store.add(content, kind="fact")
    summary = last_message(store_path).splitlines()[0]
    assert summary.startswith(f"add {record.id}: word word")
    assert summary.endswith("...")
    assert len(summary) < 100


def test_idempotent_add_returns_the_existing_record_and_makes_no_commit(store, store_path):
    first = store.add("Same text.", kind="fact", scope="project:x", priority=70)
    store.archive(first.id)
    head = git(store_path, "rev-parse", "HEAD")
    written = store.written(
        store.add, "  Same \n text. ", kind="fact", scope="project:x", priority=10
    )
    again = written.value
    assert written.commit is None
    assert git(store_path, "rev-parse", "HEAD") == head
    assert again.id == first.id
    assert again.status == "archived"
    assert again.priority == 70
    assert_clean(store_path)
    # Another kind or scope is another record.
    assert store.add("Same text.", kind="goal", scope="project:x").id != first.id
    assert store.add("Same text.", kind="fact", scope="project:y").id != first.id


# ---------------------------------------------------------------------------- authors


def _write_with(path, **kwargs) -> str:
    store = Store.open(str(path), **kwargs)
    try:
        return store.add(f"written with {sorted(kwargs)}", kind="fact").id
    finally:
        store.close()


@pytest.fixture
def no_env_identity(monkeypatch):
    for name in (
        "GIT_AUTHOR_NAME",
        "GIT_AUTHOR_EMAIL",
        "GIT_COMMITTER_NAME",
        "GIT_COMMITTER_EMAIL",
    ):
        monkeypatch.delenv(name)


def test_author_comes_from_the_repository_identity(store_path, no_env_identity):
    git(store_path, "config", "user.name", "Repo Person")
    git(store_path, "config", "user.email", "repo@example.com")
    _write_with(store_path)
    assert last_author(store_path) == "Repo Person <repo@example.com>"


def test_author_argument_overrides_the_repository_identity(
    store_path, no_env_identity, monkeypatch
):
    monkeypatch.setenv("LANTERN_AUTHOR", "Env Person <env@example.com>")
    _write_with(store_path, author="Arg Person <arg@example.com>")
    assert last_author(store_path) == "Arg Person <arg@example.com>"


def test_lantern_author_overrides_the_repository_identity(store_path, no_env_identity, monkeypatch):
    monkeypatch.setenv("LANTERN_AUTHOR", "Env Person <env@example.com>")
    _write_with(store_path)
    assert last_author(store_path) == "Env Person <env@example.com>"


def test_a_malformed_author_is_refused_and_nothing_changes(store_path):
    before = snapshot(store_path)
    with pytest.raises(InvalidInput, match="author"):
        _write_with(store_path, author="no email here")
    assert snapshot(store_path) == before


# ---------------------------------------------------------------------------- reading


def contract_order(record: Record) -> tuple:
    """The contract's list order, written out here rather than taken from the library: active
    first, then priority, urgency and updated_at, each highest first, then id."""
    return (
        record.status != "active",
        -record.priority,
        -record.urgency,
        -record.updated_at,
        record.id,
    )


def test_get_and_list_and_search(store):
    a = store.add("Ana prefers short answers.", kind="preference", scope="user:ana", priority=90)
    b = store.add("The deploy host is zettabyte.", kind="fact", scope="host:zettabyte")
    c = store.add("Ship the search index this week.", kind="goal", scope="project:lantern")
    assert store.get(a.id) == a
    assert store.get(a.id[:4]) == a
    assert store.list() == [a, *sorted([b, c], key=contract_order)]
    assert store.list(scopes=("user:ana",)) == [a]
    assert store.list(scopes=("user:*",)) == [a]
    assert store.list(kinds=("goal", "fact"), min_priority=50) == sorted([b, c], key=contract_order)
    assert store.list(min_priority=60) == [a]
    assert store.list(limit=1) == [a]
    hits = store.search("search index")
    assert [h.record for h in hits] == [c]
    assert hits[0].score > 0
    assert store.search("zettabyte", kinds=("goal",)) == []


def test_get_unknown_id_and_bad_ids(store):
    store.add("x", kind="fact")
    with pytest.raises(NotFound, match="no record with id 0123456789abcdef"):
        store.get("0123456789abcdef")
    with pytest.raises(NotFound):
        store.get("ffffff")
    with pytest.raises(InvalidInput, match="too short"):
        store.get("abc")
    with pytest.raises(InvalidInput, match="not a record id"):
        store.get("xyz123")
    with pytest.raises(InvalidInput, match="not a record id"):
        store.get("0123456789abcdef0")


def test_unique_prefixes_resolve_and_ambiguous_ones_list_the_candidates(store, store_path):
    first, second = colliding_contents()
    a = store.add(first, kind="fact")
    b = store.add(second, kind="fact")
    shared = a.id[:4]
    assert b.id[:4] == shared
    with pytest.raises(AmbiguousId) as caught:
        store.get(shared)
    assert caught.value.exit_code == 3
    assert caught.value.candidates == sorted([a.id, b.id])
    assert a.id in caught.value.message and b.id in caught.value.message
    # The shortest prefix that tells them apart resolves, in upper case too.
    common = next(i for i, (x, y) in enumerate(zip(a.id, b.id)) if x != y)
    assert store.get(a.id[: common + 1]) == a
    assert store.get(b.id[: common + 1].upper()) == b
    assert store.resolve_id(a.id) == a.id
    # A write through an ambiguous prefix changes nothing.
    before = snapshot(store_path)
    with pytest.raises(AmbiguousId):
        store.archive(shared)
    assert snapshot(store_path) == before


# ---------------------------------------------------------------------------- status changes


def _backdate(path: Path, record: Record, stamp: int = 1000) -> None:
    """A committed hand edit that makes updated_at old, so a write must change it."""
    file = path / record_path(record.id)
    text = file.read_text().replace(f"updated_at: {record.updated_at}", f"updated_at: {stamp}")
    file.write_text(text)
    git(path, "commit", "-qam", "backdate")


def test_archive_changes_only_status_and_updated_at_lines(store, store_path):
    record = store.add("Raphael prefers separate branches on his repos.", kind="preference")
    _backdate(store_path, record)
    before = commit_count(store_path)
    archived = store.archive(record.id[:6], reason="moved to a monorepo")
    assert commit_count(store_path) == before + 1
    assert archived.status == "archived"
    assert archived.updated_at > 1000
    assert sorted(changed_lines(store_path)) == sorted(
        [
            "-status: active",
            "+status: archived",
            "-updated_at: 1000",
            f"+updated_at: {archived.updated_at}",
        ]
    )
    assert last_message(store_path) == (
        f"archive {record.id}: Raphael prefers separate branches on his repos.\n"
        "\n"
        "Lantern-Op: archive\n"
        f"Lantern-Record: {record.id}\n"
        "Lantern-Actor: api\n"
        "Lantern-Reason: moved to a monorepo\n"
    )
    assert_clean(store_path)
    assert store.list() == []
    assert store.list(status="archived") == [archived]
    assert store.get(record.id) == archived


def test_archive_keeps_hand_added_fields_and_comments(store, store_path):
    record = store.add("keep my notes", kind="fact")
    file = store_path / record_path(record.id)
    file.write_text(
        file.read_text().replace("status: active\n", "# why\nstatus: active\nnote: hi\n")
    )
    git(store_path, "commit", "-qam", "hand edit")
    store.archive(record.id)
    assert changed_lines(store_path) in (
        ["-status: active", "+status: archived"],
        [
            "-status: active",
            "+status: archived",
            f"-updated_at: {record.updated_at}",
            f"+updated_at: {store.get(record.id).updated_at}",
        ],
    )
    text = file.read_text()
    assert "# why\n" in text and "note: hi\n" in text
    assert store.get(record.id).extra == {"note": "hi"}


def test_archive_of_an_archived_record_makes_no_commit(store, store_path):
    record = store.add("x", kind="fact")
    store.archive(record.id)
    head = git(store_path, "rev-parse", "HEAD")
    written = store.written(store.archive, record.id)
    assert written.value.status == "archived"
    assert written.commit is None
    assert git(store_path, "rev-parse", "HEAD") == head


def test_restore_makes_an_archived_record_active(store, store_path):
    record = store.add("x", kind="fact")
    store.archive(record.id)
    restored = store.restore(record.id, reason="still true")
    assert restored.status == "active"
    assert trailer(store_path, "Lantern-Op") == ["restore"]
    assert trailer(store_path, "Lantern-Reason") == ["still true"]
    assert last_message(store_path).startswith(f"restore {record.id}: x\n\n")
    assert store.list() == [restored]
    assert_clean(store_path)


def test_update_changes_importance_fields_in_one_commit(store, store_path):
    record = store.add("x", kind="fact", source_refs=["session:1"])
    _backdate(store_path, record)
    updated = store.update(
        record.id,
        priority=80,
        urgency=30,
        confidence=0.5,
        expires_at=4_000_000_000,
        add_source_refs=["session:1", "commit:abc"],
    )
    assert (updated.priority, updated.urgency, updated.confidence) == (80, 30, 0.5)
    assert updated.expires_at == 4_000_000_000
    assert updated.source_refs == ("session:1", "commit:abc")
    assert trailer(store_path, "Lantern-Op") == ["update"]
    assert sorted(changed_lines(store_path)) == sorted(
        [
            "-priority: 50",
            "+priority: 80",
            "-urgency: 0",
            "+urgency: 30",
            "-confidence: 1.0",
            "+confidence: 0.5",
            "-updated_at: 1000",
            f"+updated_at: {updated.updated_at}",
            "+expires_at: 4000000000",
            "+- commit:abc",
        ]
    )
    cleared = store.update(record.id, expires_at=None)
    assert cleared.expires_at is None
    # The line goes; updated_at changes too when the second ticked between the two updates.
    lines = changed_lines(store_path)
    assert "-expires_at: 4000000000" in lines
    assert not [line for line in lines if line.startswith("+expires_at")]
    assert set(lines) - {"-expires_at: 4000000000"} <= {
        f"-updated_at: {updated.updated_at}",
        f"+updated_at: {cleared.updated_at}",
    }
    assert_clean(store_path)


def test_update_with_nothing_to_change_is_refused(store, store_path):
    record = store.add("x", kind="fact")
    before = snapshot(store_path)
    with pytest.raises(InvalidInput, match="nothing to update"):
        store.update(record.id)
    with pytest.raises(InvalidInput, match="priority"):
        store.update(record.id, priority=101)
    assert snapshot(store_path) == before


def test_supersede_writes_both_records_in_one_commit(store, store_path):
    old = store.add("Deploys go through Jenkins.", kind="fact", scope="project:x", priority=70)
    before = commit_count(store_path)
    new = store.supersede(old.id[:5], "Deploys go through GitHub Actions.", reason="migrated")
    assert commit_count(store_path) == before + 1
    assert (new.kind, new.scope, new.priority, new.supersedes_id) == (
        "fact",
        "project:x",
        70,
        old.id,
    )
    assert store.get(old.id).status == "superseded"
    assert sorted(git(store_path, "show", "--name-only", "--format=", "HEAD").split()) == sorted(
        [record_path(old.id), record_path(new.id)]
    )
    # The new record is added and the old one changed (from the copy in test_lifecycle.py).
    files = git(store_path, "show", "--name-status", "--format=", "HEAD").splitlines()
    assert sorted(files) == sorted([f"A\t{record_path(new.id)}", f"M\t{record_path(old.id)}"])
    assert last_message(store_path) == (
        f"supersede {old.id} -> {new.id}: Deploys go through GitHub Actions.\n"
        "\n"
        "Lantern-Op: supersede\n"
        f"Lantern-Record: {old.id}\n"
        f"Lantern-Record: {new.id}\n"
        "Lantern-Actor: api\n"
        "Lantern-Reason: migrated\n"
    )
    assert trailer(store_path, "Lantern-Record") == [old.id, new.id]
    assert store.list(scopes=("project:x",)) == [new]
    assert [r.id for r in store.list(status="all")] == [new.id, old.id]
    assert_clean(store_path)


def test_supersede_refusals_leave_the_store_unchanged(store, store_path):
    old = store.add("A", kind="fact")
    other = store.add("B", kind="fact")
    before = snapshot(store_path)
    with pytest.raises(InvalidInput, match="same as the old"):
        store.supersede(old.id, " A ")
    with pytest.raises(InvalidInput, match="already exists"):
        store.supersede(old.id, "B")
    with pytest.raises(InvalidInput, match="content"):
        store.supersede(old.id, "   ")
    assert snapshot(store_path) == before
    store.archive(other.id)
    before = snapshot(store_path)
    with pytest.raises(InvalidInput, match="archived"):
        store.supersede(other.id, "C")
    assert snapshot(store_path) == before


def test_restore_of_a_superseded_record(store):
    old = store.add("v1", kind="fact")
    store.supersede(old.id, "v2")
    assert store.restore(old.id).status == "active"


def test_an_uncommitted_hand_edit_is_not_swept_into_a_lantern_commit(store, store_path):
    record = store.add("x", kind="fact")
    file = store_path / record_path(record.id)
    file.write_text(file.read_text().replace("priority: 50", "priority: 60"))
    before = snapshot(store_path)
    with pytest.raises(UncommittedChanges, match="uncommitted changes"):
        store.archive(record.id)
    assert snapshot(store_path) == before


def test_git_status_is_clean_after_every_operation(store, store_path):
    assert_clean(store_path)
    a = store.add("one", kind="fact")
    assert_clean(store_path)
    store.add("one", kind="fact")
    assert_clean(store_path)
    store.list()
    store.search("one")
    store.get(a.id)
    assert_clean(store_path)
    for step in (
        lambda: store.archive(a.id),
        lambda: store.restore(a.id),
        lambda: store.update(a.id, priority=1),
        lambda: store.supersede(a.id, "two"),
        lambda: store.rebuild_index(),
        lambda: store.status(),
    ):
        step()
        assert_clean(store_path)
    assert git(store_path, "diff", "--cached", "--name-only") == ""


# ---------------------------------------------------------------------------- init


def test_init_creates_a_repository_and_a_store(tmp_path):
    target = tmp_path / "fresh"
    store = Store.init(str(target))
    store.close()
    assert (target / ".git").is_dir()
    assert (target / "lantern.yaml").read_text() == "format: 2\n"
    assert "/.lantern/" in (target / ".gitignore").read_text().splitlines()
    assert "memory/**/*.md merge=lantern" in (target / ".gitattributes").read_text().splitlines()
    assert commit_count(target) == 1
    assert trailer(target, "Lantern-Op") == ["init"]
    assert sorted(git(target, "ls-files").split()) == [
        ".gitattributes",
        ".gitignore",
        "lantern.yaml",
    ]
    assert_clean(target)


def test_init_adopts_a_repository_without_touching_its_files(tmp_path):
    repo_path = tmp_path / "existing"
    init_repo(repo_path)
    (repo_path / "README.md").write_text("hello\n")
    (repo_path / ".gitignore").write_text("*.pyc\nbuild/")
    (repo_path / "notes").mkdir()
    (repo_path / "notes" / "a.txt").write_text("a\n")
    git(repo_path, "add", ".")
    git(repo_path, "commit", "-qm", "user work")
    user_commit = git(repo_path, "rev-parse", "HEAD").strip()
    # Uncommitted work of every kind: modified, staged, untracked.
    (repo_path / "README.md").write_text("hello, edited\n")
    (repo_path / "staged.txt").write_text("staged\n")
    git(repo_path, "add", "staged.txt")
    (repo_path / "untracked.txt").write_text("untracked\n")
    status_before = git(repo_path, "status", "--porcelain")

    Store.init(str(repo_path)).close()

    assert git(repo_path, "rev-parse", "HEAD~1").strip() == user_commit
    assert git(repo_path, "status", "--porcelain") == status_before
    assert (repo_path / "README.md").read_text() == "hello, edited\n"
    assert (repo_path / "untracked.txt").read_text() == "untracked\n"
    assert (repo_path / "notes" / "a.txt").read_text() == "a\n"
    assert git(repo_path, "show", "HEAD:README.md") == "hello\n"
    assert sorted(git(repo_path, "show", "--name-only", "--format=", "HEAD").split()) == [
        ".gitattributes",
        ".gitignore",
        "lantern.yaml",
    ]
    assert (repo_path / ".gitignore").read_text() == "*.pyc\nbuild/\n/.lantern/\n"
    assert git(repo_path, "diff", "--cached", "--name-only").split() == ["staged.txt"]
    # The adopted store works and leaves the user's changes alone.
    store = Store.open(str(repo_path))
    store.add("adopted", kind="fact")
    store.close()
    assert git(repo_path, "status", "--porcelain") == status_before


def test_init_leaves_uncommitted_edits_of_gitignore_uncommitted(tmp_path):
    repo_path = tmp_path / "existing"
    init_repo(repo_path)
    (repo_path / ".gitignore").write_text("*.pyc\n")
    (repo_path / ".gitattributes").write_text("*.png binary\n")
    git(repo_path, "add", ".")
    git(repo_path, "commit", "-qm", "user work")
    (repo_path / ".gitignore").write_text("*.pyc\nmy-uncommitted-line\n")
    (repo_path / ".gitattributes").write_text("*.png binary\n*.jpg binary\n")

    Store.init(str(repo_path)).close()

    assert git(repo_path, "show", "HEAD:.gitignore") == "*.pyc\n/.lantern/\n"
    assert git(repo_path, "show", "HEAD:.gitattributes") == (
        "*.png binary\nmemory/**/*.md merge=lantern\nsources/** merge=lantern\n"
        "entities/**/*.md merge=lantern\nlantern.yaml merge=lantern\n"
    )
    assert (repo_path / ".gitignore").read_text() == "*.pyc\nmy-uncommitted-line\n/.lantern/\n"
    assert git(repo_path, "status", "--porcelain") == " M .gitattributes\n M .gitignore\n"
    assert "+my-uncommitted-line" in git(repo_path, "diff", ".gitignore")
    head = git(repo_path, "rev-parse", "HEAD")
    Store.init(str(repo_path)).close()
    assert git(repo_path, "rev-parse", "HEAD") == head


def test_init_twice_is_a_no_op(store_path):
    head = git(store_path, "rev-parse", "HEAD")
    files = snapshot(store_path)
    store = Store(str(store_path), create_on_write=True)
    result = store.initialize()
    store.close()
    assert result.committed is False
    assert result.commit is None
    assert git(store_path, "rev-parse", "HEAD") == head
    assert snapshot(store_path) == files
    Store.init(str(store_path)).close()
    assert git(store_path, "rev-parse", "HEAD") == head


def test_a_newer_store_format_is_refused(store_path):
    (store_path / "lantern.yaml").write_text("format: 3\n")
    git(store_path, "commit", "-qam", "from the future")
    before = snapshot(store_path)
    with pytest.raises(UnsupportedFormat) as caught:
        Store.open(str(store_path))
    message = caught.value.message
    assert "format 3" in message and "up to 2" in message and "upgrade" in message
    assert caught.value.exit_code == 1
    with pytest.raises(UnsupportedFormat):
        Store.init(str(store_path))
    assert snapshot(store_path) == before


def test_opening_a_folder_that_is_not_a_store(tmp_path):
    init_repo(tmp_path / "plain")
    with pytest.raises(NoStore, match="lantern init"):
        Store.open(str(tmp_path / "plain"))


def test_add_is_idempotent_across_unicode_normalization(store, store_path):
    composed = store.add("Zoë likes crème brûlée.", kind="preference", scope="user:zoe")
    head = git(store_path, "rev-parse", "HEAD")
    decomposed = unicodedata.normalize("NFD", "Zoë  likes\ncrème brûlée.")
    again = store.add(decomposed, kind="preference", scope="user:zoe")
    assert again == composed
    assert git(store_path, "rev-parse", "HEAD") == head


def test_a_single_string_is_not_taken_as_a_list_of_references(store, store_path):
    record = store.add("x", kind="fact")
    before = snapshot(store_path)
    with pytest.raises(InvalidInput, match="source_refs: must be a list"):
        store.add("y", kind="fact", source_refs="session:1")
    with pytest.raises(InvalidInput, match="add_source_refs: must be a list"):
        store.update(record.id, add_source_refs="session:1")
    with pytest.raises(InvalidInput, match="source_refs: must be a list"):
        store.supersede(record.id, "z", source_refs="session:1")
    assert snapshot(store_path) == before
    assert store.add("y", kind="fact", source_refs=["session:1"]).source_refs == ("session:1",)


# ---------------------------------------------------------------------------- what a write did


def test_written_returns_each_writes_value_commit_and_pending(store, store_path):
    def head() -> str:
        return git(store_path, "rev-parse", "HEAD").strip()

    added = store.written(store.add, "Written says what happened.", kind="fact")
    assert added.commit == head() and added.pending is False
    assert added.value == store.get(added.value.id)
    same = store.written(store.add, "Written says what happened.", kind="fact")
    assert (same.value, same.commit) == (added.value, None)
    # A call that writes twice, one write inside another written(): each sees only its own.
    inner = []

    def two_writes():
        store.update(added.value.id, priority=90)
        inner.append(store.written(store.archive, added.value.id))
        return "done"

    outer = store.written(two_writes)
    # The outer call's last commit is the inner archive's: it saw the inner write too.
    assert outer.value == "done" and outer.commit == head() == inner[0].commit
    assert trailer_of(store_path, "HEAD") == "archive"
    assert trailer_of(store_path, "HEAD~1") == "update"
    # A write that fails leaves nothing behind for the next one.
    with pytest.raises(NotFound):
        store.written(store.archive, "ffffffffffffffff")
    assert store.written(store.restore, added.value.id).commit == head()
    assert store.written(store.get, added.value.id).commit is None


def trailer_of(store_path, commit: str) -> str:
    return git(
        store_path, "log", "-1", "--format=%(trailers:key=Lantern-Op,valueonly)", commit
    ).strip()


def test_the_store_shows_its_workspace_and_only_warn_and_progress_can_be_replaced(
    store, store_path
):
    # The Store is a front: what it says of its folder is the workspace's.
    assert store.root == str(store_path) == store.workspace.root
    assert store.exists and not store.read_only
    heard: list[str] = []
    store.warn = heard.append
    store.workspace.warn("from the workspace")
    assert heard == ["from the workspace"]
    with pytest.raises(AttributeError, match="root cannot be set"):
        store.root = "/elsewhere"
    assert store.workspace.root == str(store_path)
