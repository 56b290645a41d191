"""The index follows the files: hand edits, checkouts, pulls, a lost or damaged index, bad files."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from support.cli import lantern
from support.stores import git

from lantern_git.model.record_file import record_path
from lantern_git.store import Store


def ids(records) -> list[str]:
    """Ids of records, or of search hits."""
    return [getattr(r, "record", r).id for r in records]


def cli_list(store_path, *args) -> tuple[list[dict], str]:
    result = lantern("memory", "list", "--json", *args, env={"LANTERN_STORE": str(store_path)})
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout), result.stderr


@pytest.fixture
def three(store):
    a = store.add("Alpha prefers tea.", kind="preference", priority=30)
    b = store.add("Bravo deploys on Fridays.", kind="fact", priority=60)
    c = store.add("Charlie owns the search index.", kind="fact", priority=90)
    assert ids(store.list()) == [c.id, b.id, a.id]
    return a, b, c


# ---------------------------------------------------------------------------- hand edits


def _edit_same_size(path: Path, old: str, new: str, keep_mtime: bool) -> None:
    assert len(old) == len(new)
    before = os.stat(path)
    text = path.read_text()
    assert old in text
    with open(path, "r+", encoding="utf-8") as handle:
        handle.write(text.replace(old, new))
    after = os.stat(path)
    assert after.st_size == before.st_size
    if keep_mtime:
        os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    else:
        os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns + 1_000_000_000))


@pytest.mark.parametrize("keep_mtime", [False, True], ids=["mtime-changed", "mtime-restored"])
def test_a_same_size_hand_edit_is_seen(store, store_path, three, keep_mtime):
    a, b, c = three
    _edit_same_size(store_path / record_path(a.id), "priority: 30", "priority: 99", keep_mtime)
    assert ids(store.list()) == [a.id, c.id, b.id]
    assert store.get(a.id).priority == 99
    _edit_same_size(store_path / record_path(b.id), "Fridays", "Mondays", keep_mtime)
    assert ids(store.search("mondays")) == [b.id]
    assert store.search("fridays") == []
    # Another process sees the same.
    listed, _ = cli_list(store_path)
    assert [r["id"] for r in listed] == [a.id, c.id, b.id]


def test_a_hand_added_and_a_hand_deleted_file_are_seen(store, store_path, three):
    a, b, c = three
    new_text = (store_path / record_path(a.id)).read_text().replace("tea", "tee")
    (store_path / record_path(a.id)).unlink()
    from lantern_git.model.record import Record, compute_id

    new_id = compute_id("preference", "global", "Alpha prefers tee.")
    new = Record.from_markdown(new_text.replace(a.id, new_id))
    (store_path / record_path(new_id)).parent.mkdir(parents=True, exist_ok=True)
    (store_path / record_path(new_id)).write_text(new.to_markdown())
    assert ids(store.list()) == [c.id, b.id, new_id]
    assert ids(store.search("tee")) == [new_id]


# ---------------------------------------------------------------------------- git moving files


def test_a_checkout_of_an_older_commit_is_seen(store, store_path, three):
    a, b, c = three
    store.archive(c.id)
    assert ids(store.list()) == [b.id, a.id]
    git(store_path, "checkout", "-q", "main~1")
    assert ids(store.list()) == [c.id, b.id, a.id]
    git(store_path, "checkout", "-q", "main~2")
    assert ids(store.list()) == [b.id, a.id]
    assert store.list(status="all") == [store.get(b.id), store.get(a.id)]
    git(store_path, "checkout", "-q", "main")
    assert ids(store.list()) == [b.id, a.id]
    assert ids(store.list(status="archived")) == [c.id]


def test_a_checkout_of_a_single_file_is_seen(store, store_path, three):
    a, _, _ = three
    store.update(a.id, priority=1)
    assert a.id not in ids(store.list(min_priority=30))
    git(store_path, "checkout", "HEAD~1", "--", record_path(a.id))
    assert store.get(a.id).priority == 30
    assert a.id in ids(store.list(min_priority=30))


def test_a_pull_from_a_clone_is_seen(store, store_path, three, tmp_path):
    a, b, c = three
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(store_path), str(clone))
    other = Store.open(str(clone))
    new = other.add("Delta joined the team.", kind="fact", priority=95)
    other.archive(b.id)
    other.close()
    git(store_path, "pull", "-q", "--ff-only", str(clone), "main")
    assert ids(store.list()) == [new.id, c.id, a.id]
    assert store.get(b.id).status == "archived"
    listed, _ = cli_list(store_path)
    assert [r["id"] for r in listed] == [new.id, c.id, a.id]
    assert git(store_path, "status", "--porcelain") == ""


# ---------------------------------------------------------------------------- losing the index


def test_a_deleted_state_folder_is_rebuilt_transparently(store, store_path, three):
    a, b, c = three
    store.close()
    shutil.rmtree(store_path / ".lantern")
    listed, stderr = cli_list(store_path)
    assert [r["id"] for r in listed] == [c.id, b.id, a.id]
    assert stderr == ""
    assert (store_path / ".lantern").is_dir()
    assert git(store_path, "status", "--porcelain") == ""
    # The library, with its index handle closed under it, also recovers.
    shutil.rmtree(store_path / ".lantern")
    assert ids(store.list()) == [c.id, b.id, a.id]
    assert ids(store.search("search index")) == [c.id]


def test_a_corrupted_index_is_rebuilt_transparently(store, store_path, three):
    a, b, c = three
    store.close()
    index_dir = store_path / ".lantern" / "index"
    damaged = 0
    for path in index_dir.rglob("*"):
        if path.is_file():
            path.write_bytes(b"\x00garbage\xff" * 37)
            damaged += 1
    assert damaged > 0
    listed, stderr = cli_list(store_path)
    assert [r["id"] for r in listed] == [c.id, b.id, a.id]
    assert stderr == ""
    fresh = Store.open(str(store_path))
    try:
        assert ids(fresh.search("deploys")) == [b.id]
        assert fresh.status()["records"] == 3
    finally:
        fresh.close()


def test_a_truncated_index_is_rebuilt_transparently(store, store_path, three):
    a, b, c = three
    store.close()
    for path in (store_path / ".lantern" / "index").rglob("*"):
        if path.is_file():
            path.write_bytes(b"")
    listed, _ = cli_list(store_path)
    assert [r["id"] for r in listed] == [c.id, b.id, a.id]


# ---------------------------------------------------------------------------- broken files


def test_a_broken_record_file_is_skipped_with_a_warning(store, store_path, three):
    a, b, c = three
    path = store_path / record_path(b.id)
    lines = path.read_text().splitlines(keepends=True)
    assert lines[5].startswith("priority:")
    lines[5] = "priority: lots\n"
    path.write_text("".join(lines))
    listed, stderr = cli_list(store_path)
    assert [r["id"] for r in listed] == [c.id, a.id]
    assert f"{record_path(b.id)}:6: priority: " in stderr
    assert stderr.startswith("warning: ")
    # Search still works and skips it too; other records can still be written.
    hits = json.loads(
        lantern(
            "memory", "search", "alpha", "--json", env={"LANTERN_STORE": str(store_path)}
        ).stdout
    )
    assert [h["id"] for h in hits] == [a.id]
    store.archive(a.id)
    assert path.read_text() == "".join(lines)
    # Fixing the file brings the record back.
    lines[5] = "priority: 60\n"
    path.write_text("".join(lines))
    listed, stderr = cli_list(store_path)
    assert [r["id"] for r in listed] == [c.id, b.id]
    assert stderr == ""


@pytest.mark.parametrize(
    ("damage", "line"),
    [
        (lambda text: text.replace("kind: fact", "kind: opinion"), 3),
        (lambda text: text.replace("status: active", "status: active: yes"), 5),
        (lambda text: text.replace("---\n", "", 1), 1),
        (lambda text: text.replace("urgency: 0", "urgency: 0\nurgency: 1"), 8),
        (lambda text: text.replace("id: ", "id: 0", 1), 2),
        (lambda text: text.replace("Bravo", "Br\udcffvo"), 12),
    ],
    ids=["unknown-kind", "bad-yaml", "no-fence", "duplicate-key", "wrong-id", "not-utf8"],
)
def test_each_kind_of_broken_file_names_file_and_line(store, store_path, three, damage, line):
    a, b, c = three
    path = store_path / record_path(b.id)
    path.write_bytes(damage(path.read_text()).encode("utf-8", "surrogateescape"))
    listed, stderr = cli_list(store_path)
    assert [r["id"] for r in listed] == [c.id, a.id]
    assert f"{record_path(b.id)}:{line}: " in stderr


def test_a_file_in_the_wrong_place_is_skipped_with_a_warning(store, store_path, three):
    a, b, c = three
    misplaced = store_path / "memory" / "zz" / f"{b.id}.md"
    misplaced.parent.mkdir()
    (store_path / record_path(b.id)).rename(misplaced)
    listed, stderr = cli_list(store_path)
    assert [r["id"] for r in listed] == [c.id, a.id]
    assert f"memory/zz/{b.id}.md" in stderr


def test_status_counts_broken_files(store, store_path, three):
    _, b, _ = three
    (store_path / record_path(b.id)).write_text("not a record\n")
    info = json.loads(lantern("status", "--json", env={"LANTERN_STORE": str(store_path)}).stdout)
    assert info["records"] == 2
    assert info["broken_files"] == 1


# ---------------------------------------------------------------------------- rebuild


def test_index_rebuild_command(store, store_path, three):
    a, b, c = three
    env = {"LANTERN_STORE": str(store_path)}
    (store_path / record_path(a.id)).write_text("---\nbroken\n")
    result = lantern("index", "rebuild", "--json", env=env)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == {"indexed": 2, "skipped": 1}
    assert record_path(a.id) in result.stderr
    text = lantern("index", "rebuild", env=env)
    assert text.stdout == "indexed 2 records, skipped 1\n"
    listed, _ = cli_list(store_path)
    assert [r["id"] for r in listed] == [c.id, b.id]
    git(store_path, "checkout", "--", record_path(a.id))
    assert ids(store.list()) == [c.id, b.id, a.id]
    assert git(store_path, "status", "--porcelain") == ""


def test_a_record_matching_some_of_the_words_scores_above_zero_and_below_one_matching_all(
    store,
):
    both = store.add("Ana prefers short answers on branches.", kind="preference")
    answers = store.add("Ana prefers short answers.", kind="preference")
    branches = store.add("Raphael prefers separate branches on his repos.", kind="preference")
    store.add("Deploys go on Friday.", kind="fact")
    hits = store.search("branches answers")
    assert {h.record.id for h in hits} == {both.id, answers.id, branches.id}
    assert all(h.score > 0 for h in hits)
    assert hits[0].record.id == both.id
    assert hits[0].score > max(h.score for h in hits[1:])


def test_map_file_reads_like_bytesio():
    """Whoosh's segment parts are read in place through _MapFile: same answers as BytesIO."""
    import io

    from lantern_git.index.whoosh_compat import _MapFile

    data = b"first line\nsecond\n" + bytes(range(256)) * 40 + b"\nlast"
    ours, theirs = _MapFile(memoryview(data)), io.BytesIO(data)
    for step in [
        ("read", 5),
        ("readline",),
        ("tell",),
        ("seek", 3),
        ("read", 0),
        ("read", 7),
        ("seek", -4, 2),
        ("read", -1),
        ("read", 10),
        ("seek", 2, 0),
        ("seek", 6, 1),
        ("readline",),
        ("readline", 3),
        ("readline",),
        ("seek", 0),
        ("read",),
    ]:
        assert getattr(ours, step[0])(*step[1:]) == getattr(theirs, step[0])(*step[1:]), step
    ours.seek(0)
    assert list(ours) == list(io.BytesIO(data))
    target = bytearray(8)
    ours.seek(len(data) - 3)
    assert ours.readinto(target) == 3 and bytes(target[:3]) == data[-3:]


@pytest.mark.parametrize("ties_loaded", [16, 0], ids=["ties-loaded", "ties-by-id-column"])
def test_search_pages_are_slices_of_the_whole_ranking_with_ties_broken_by_id(
    store, monkeypatch, ties_loaded
):
    # Either way of putting ties in order: their records loaded, or the id column read first.
    from lantern_git.index import search

    monkeypatch.setattr(search, "TIES_LOADED", ties_loaded)
    # Same length, one "apple" each: equal scores, so the id decides among them.
    tied = [store.add(f"apple note{i:02d}", kind="fact") for i in range(12)]
    store.add("apple apple apple note", kind="fact")
    store.add("apple and a much longer note about orchards", kind="fact")
    store.archive(tied[3].id)
    store.add("apple expired", kind="fact", expires_at=1)
    store.add("pear note", kind="fact")
    whole = store.search("apple")
    assert tied[3].id not in {h.record.id for h in whole}
    assert all(h.record.content != "apple expired" for h in whole)
    assert [(-h.score, h.record.id) for h in whole] == sorted(
        (-h.score, h.record.id) for h in whole
    )
    assert len(whole) == 13
    for offset in range(0, 15):
        for limit in (1, 2, 5, 13, None):
            page = store.search("apple", limit=limit, offset=offset)
            stop = None if limit is None else offset + limit
            assert page == whole[offset:stop], (offset, limit)
    # BM25's statistics are those of the records the filters select, so the archived
    # record's score differs between the two searches; the record found does not.
    assert [h.record for h in store.search("apple", status="archived")] == [
        h.record for h in store.search("apple", status="all") if h.record.id == tied[3].id
    ]


def test_a_program_that_imports_lantern_gets_whoosh_s_real_stemming_module():
    """lantern no longer stands in for whoosh.lang.morph_en (5 ms of tables it never uses):
    anyone who uses it, in the same process, gets the real module (see also
    test_whoosh_neighbours.py)."""
    script = (
        "import lantern_git.index.search, sys\n"
        "from whoosh.lang import morph_en\n"
        "assert 'rendering' in morph_en.variations('render')\n"
        "assert sys.modules['whoosh.lang.morph_en'].__file__.endswith('morph_en.py')\n"
        "from whoosh.lang.morph_en import variations\n"
        "assert 'renders' in variations('render')\n"
    )
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    other_attribute = (
        "import lantern_git.index.search\n"
        "import whoosh.lang.morph_en as m\n"
        "assert m.__file__.endswith('morph_en.py')\n"
    )
    result = subprocess.run([sys.executable, "-c", other_attribute], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr


def test_a_rebuild_split_over_processes_answers_as_one_built_in_one(store, store_path, monkeypatch):
    from lantern_git.index import search as search_index

    made = [
        store.add(f"Record number {n} about tea.", kind="fact", priority=n * 7 % 101)
        for n in range(40)
    ]
    broken = store_path / record_path(made[5].id)
    broken.write_text(broken.read_text().replace("kind: fact", "kind: [unclosed"))
    serial = Store.open(str(store_path)).rebuild_index()
    in_one = ids(Store.open(str(store_path)).list(limit=None))
    hits_in_one = ids(Store.open(str(store_path)).search("tea", limit=None))

    monkeypatch.setattr(search_index, "PARALLEL_FROM", 2)
    monkeypatch.setattr(search_index, "BUILDERS", 3)
    split = Store.open(str(store_path))
    report = split.rebuild_index()
    assert len(search_index._shares([(str(n), None) for n in range(40)])) == 3
    assert (report.reread, report.updated, report.broken) == (
        serial.reread,
        serial.updated,
        serial.broken,
    )
    assert report.updated == 39
    assert ids(split.list(limit=None)) == in_one
    assert ids(split.search("tea", limit=None)) == hits_in_one
    # Later writes and checks go on from the split index.
    added = split.add("One more about tea.", kind="fact", priority=100)
    assert ids(Store.open(str(store_path)).list(limit=1)) == [added.id]


def test_a_rebuild_in_more_shares_than_builders_answers_as_one_built_in_one(
    store, store_path, monkeypatch
):
    """Shares of at most SHARE_MAX records, built BUILDERS at a time: a builder's memory
    holds one share, whatever the store's size (a million records: ten shares of 100k)."""
    from lantern_git.index import search as search_index
    from lantern_git.index import whoosh_compat

    for n in range(30):
        store.add(f"Record number {n} about tea.", kind="fact", priority=n * 7 % 101)
    Store.open(str(store_path)).rebuild_index()
    in_one = ids(Store.open(str(store_path)).list(limit=None))
    hits_in_one = ids(Store.open(str(store_path)).search("tea", limit=None))

    monkeypatch.setattr(search_index, "PARALLEL_FROM", 2)
    monkeypatch.setattr(search_index, "BUILDERS", 2)
    monkeypatch.setattr(search_index, "SHARE_MAX", 4)
    assert [len(s) for s in search_index._shares([(str(n), None) for n in range(30)])] == [
        *[4] * 7,
        2,
    ]
    most = [0]
    build = whoosh_compat.build_segments

    def counted(*args, **kwargs):
        import multiprocessing

        real = multiprocessing.Process.start

        def start(process):
            real(process)
            alive = [child for child in multiprocessing.active_children() if child.is_alive()]
            most[0] = max(most[0], len(alive))

        monkeypatch.setattr(multiprocessing.process.BaseProcess, "start", start)
        try:
            return build(*args, **kwargs)
        finally:
            monkeypatch.setattr(multiprocessing.process.BaseProcess, "start", real)

    monkeypatch.setattr(whoosh_compat, "build_segments", counted)
    split = Store.open(str(store_path))
    report = split.rebuild_index()
    assert report.updated == 30
    assert 1 <= most[0] <= 2  # never more builders at once than BUILDERS
    assert len(split.index._open()._segments()) == 8
    assert ids(split.list(limit=None)) == in_one
    assert ids(split.search("tea", limit=None)) == hits_in_one


# ---------------------------------------------------------------------------- kept postings


def test_search_in_one_process_finds_what_each_new_segment_and_rebuild_holds(store, store_path):
    """A term's postings read from a segment are kept for the process; a batch written later
    (a new segment, whose postings of the word start at the same place in its own file and
    count as many documents, other documents among them), a record edited to drop the word and
    a rebuild (new segments) are each searched as they are, not as a kept segment was."""

    def batch(tag: str) -> None:
        contents = [f"tea {tag}{n}" for n in range(4)] + [f"zebra {tag}"]
        store.import_records(json.dumps({"kind": "fact", "content": c}) for c in contents)

    def found() -> set[str]:
        return {hit.record.id for hit in store.search("tea", mode="keyword", limit=0)}

    def with_tea() -> set[str]:
        return {r.id for r in store.list(limit=0) if r.content.startswith("tea ")}

    batch("a")
    assert found() == with_tea() and len(with_tea()) == 4
    # The zebra's document is the third of the first batch's segment, the first of this one's.
    batch("c")
    assert found() == with_tea() and len(with_tea()) == 8
    changed = sorted(with_tea())[0]
    path = store_path / record_path(changed)
    path.write_text(path.read_text().replace("\ntea ", "\ncoffee "))
    assert found() == with_tea() and len(with_tea()) == 7
    store.rebuild_index()
    assert found() == with_tea() and len(with_tea()) == 7
