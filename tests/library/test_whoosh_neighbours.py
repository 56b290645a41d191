"""Whoosh kept to lantern's own objects: a program using Whoosh beside lantern gets stock Whoosh.

lantern reads its own index faster than Whoosh's public API alone allows (see
``lantern_git/index/whoosh_compat.py``), but only through objects it creates: importing and using
lantern changes no Whoosh class, function or module, so another index in the same process (in
memory or on disk) answers exactly as it would without lantern. Each scenario runs in a fresh
interpreter, so that nothing the test run itself imported is in the way.

Where an internal of Whoosh that a speed-up relies on is missing, the public API does the same
work: the answers are the same, only slower.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from lantern_git.index import whoosh_compat
from lantern_git.store import Store

REPO = Path(__file__).resolve().parents[2]

# A program that knows nothing of lantern: a Whoosh index in memory (RamStorage) and one on disk,
# each written in two segments with a deletion, then searched, sorted, stemmed and read by column.
NEIGHBOUR = r'''
import importlib
import json
import sys
import tempfile
import types

# Whoosh is imported only when the neighbour runs, so that a script can let lantern go first.
TEXTS = ["rendering a page", "rendered pages twice", "a render farm", "nothing", "render pages"]


def build(storage):
    from whoosh.fields import ID, NUMERIC, STORED, TEXT, Schema

    schema = Schema(
        name=ID(stored=True, sortable=True),
        body=TEXT(stored=True),
        n=NUMERIC(int, stored=True, sortable=True),
        note=STORED,
    )
    ix = storage.create_index(schema)
    writer = ix.writer()
    for i, body in enumerate(TEXTS[:4]):
        writer.add_document(name=f"doc{i}", body=body, n=10 - i, note={"i": i})
    writer.commit()
    writer = ix.writer()
    writer.add_document(name="doc4", body=TEXTS[4], n=3, note={"i": 4})
    writer.delete_by_term("name", "doc3")
    writer.commit(merge=False)
    return ix


def answers(ix):
    from whoosh import query
    from whoosh.qparser import QueryParser

    out = {}
    with ix.searcher() as searcher:
        parsed = QueryParser("body", ix.schema).parse("render OR pages")
        out["scored"] = [[h["name"], round(h.score, 6)] for h in searcher.search(parsed)]
        out["sorted"] = [h["name"] for h in searcher.search(query.Every(), sortedby="n")]
        out["stored"] = sorted(repr(searcher.stored_fields(d)) for d in range(5))
        stemmed = searcher.search(query.Variations("body", "render"))
        out["stemmed"] = sorted(h["name"] for h in stemmed)
        out["columns"] = [list(r.column_reader("n")) for r, _ in searcher.reader().leaf_readers()]
        out["lengths"] = [searcher.reader().doc_field_length(d, "body") for d in range(5)]
    ix.close()
    return out


def neighbour():
    from whoosh.filedb.filestore import FileStorage, RamStorage

    ram = build(RamStorage())
    disk = build(FileStorage(tempfile.mkdtemp()))
    return {"ram": answers(ram), "disk": answers(disk), "again": answers(ram)}


def fingerprint(value):
    """What a name in a Whoosh module or class is, comparable between processes."""
    if isinstance(value, types.ModuleType):
        spec = value.__spec__  # a stand-in module has none
        return ["module", value.__name__, spec.origin if spec else None]
    for wrapped in ("__func__", "fget"):  # classmethod, staticmethod, property
        value = getattr(value, wrapped, value)
    if isinstance(value, (types.FunctionType, type)):
        return [type(value).__name__, value.__module__, value.__qualname__]
    return ["value", type(value).__module__, type(value).__qualname__]


def whoosh_state(names):
    """Every name in the given Whoosh modules, and in the classes they define."""
    state = {}
    for name in names:
        module = sys.modules.get(name)
        if module is None:
            state[name] = None
            continue
        state[name] = fingerprint(module)
        for attr, value in list(vars(module).items()):
            state[f"{name}:{attr}"] = fingerprint(value)
            if isinstance(value, type) and value.__module__ == name:
                for inner, member in list(vars(value).items()):
                    if inner != "__slotnames__":  # copyreg's cache, once a field is pickled
                        state[f"{name}:{attr}.{inner}"] = fingerprint(member)
    for name in names:  # find_spec refuses a module that only stands in for the real one
        try:
            importlib.util.find_spec(name)
        except ValueError as err:
            state[f"{name}:find_spec"] = str(err)
    return state


def whoosh_modules():
    return sorted(name for name in sys.modules if name.split(".")[0] == "whoosh")
'''

USE_LANTERN = r"""
def use_lantern(root):
    from lantern_git.store import Store

    store = Store.init(root)
    added = [
        store.add(text, kind="fact", priority=p)
        for p, text in [(10, "render the docs"), (50, "deploy on Fridays"), (90, "render farm")]
    ]
    listed = [r.id for r in store.list()]
    found = sorted(h.record.id for h in store.search("render"))
    store.close()
    ids = [r.id for r in added]
    return listed == ids[::-1] and found == sorted([ids[0], ids[2]])
"""


def run(script: str, *args: str) -> dict:
    # The neighbour's own RamStorage keeps its temporary files in $TMPDIR/MAIN.tmp, which
    # every process on the machine shares (see whoosh_compat.memory_index): a TMPDIR per run
    # keeps two runs at once (pytest-xdist) from deleting each other's.
    with tempfile.TemporaryDirectory() as tmp:
        env = dict(os.environ, PYTHONPATH=str(REPO), TMPDIR=tmp)
        result = subprocess.run(
            [sys.executable, "-c", NEIGHBOUR + USE_LANTERN + script, *args],
            capture_output=True,
            text=True,
            env=env,
            timeout=120,
        )
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def without_lantern(modules: list[str]) -> dict:
    """The same Whoosh modules, used by the neighbour alone."""
    return run(
        "for name in json.loads(sys.argv[1]):\n"
        "    importlib.import_module(name)\n"
        "answer = neighbour()\n"
        "modules = json.loads(sys.argv[1])\n"
        "print(json.dumps({'answer': answer, 'state': whoosh_state(modules)}))\n",
        json.dumps(modules),
    )


def test_a_ram_storage_index_answers_the_same_before_and_after_lantern_is_imported_and_used(
    tmp_path,
):
    out = run(
        "before = neighbour()\n"
        "modules = whoosh_modules()\n"
        "state = whoosh_state(modules)\n"
        "lantern_ok = use_lantern(sys.argv[1])\n"
        "after = neighbour()\n"
        "print(json.dumps({'before': before, 'after': after, 'lantern_ok': lantern_ok,\n"
        "                  'state': state, 'state_after': whoosh_state(modules)}))\n",
        str(tmp_path / "store"),
    )
    assert out["lantern_ok"]
    assert out["before"]["ram"]["scored"], out["before"]  # the neighbour's index answers
    assert out["after"] == out["before"]
    changed = {
        key: (value, out["state_after"].get(key))
        for key, value in out["state"].items()
        if out["state_after"].get(key) != value
    }
    assert changed == {}


def test_whoosh_is_stock_for_a_program_that_imports_and_uses_lantern_first(tmp_path):
    out = run(
        "assert not any(name.startswith('whoosh') for name in sys.modules)\n"
        "lantern_ok = use_lantern(sys.argv[1])\n"
        "answer = neighbour()\n"
        "modules = whoosh_modules()\n"
        "print(json.dumps({'answer': answer, 'lantern_ok': lantern_ok, 'modules': modules,\n"
        "                  'state': whoosh_state(modules)}))\n",
        str(tmp_path / "store"),
    )
    assert out["lantern_ok"]
    assert "whoosh.lang.morph_en" in out["modules"]
    clean = without_lantern(out["modules"])
    assert out["answer"] == clean["answer"]
    differs = {
        key: (value, clean["state"].get(key))
        for key, value in out["state"].items()
        if clean["state"].get(key) != value
    }
    assert differs == {}
    assert clean["state"].keys() == out["state"].keys()


# ---------------------------------------------------------------- Whoosh's internals missing


@pytest.fixture
def varied_store(store_path):
    """Records over several segments, with deleted documents (updates, archives), expired
    records and equal order values: everything the fast paths read."""
    store = Store.open(str(store_path))
    texts = ["deploy on Fridays", "render the pages", "pages render slowly", "deploy the docs"]
    added = []
    for i in range(14):
        added.append(
            store.add(
                f"{texts[i % 4]} note {i}",
                kind=("fact", "preference")[i % 2],
                scope=f"user:u{i % 3}",
                priority=(10, 50, 90)[i % 3],
                expires_at=1 if i == 5 else None,
            )
        )
    store.update(added[2].id, priority=70)
    store.update(added[7].id, urgency=40)
    store.archive(added[4].id)
    store.close()
    return str(store_path)


LISTS = [
    {},
    {"status": "all", "include_expired": True},
    {"status": "archived"},
    {"scopes": ("user:u1",)},
    {"kinds": ("fact",), "min_priority": 50},
    {"limit": 4, "offset": 3},
]
SEARCHES = [("deploy", {}), ("render pages", {"status": "all"}), ("pages", {"limit": 2})]


def answers(root: str) -> list:
    store = Store.open(root)
    try:
        out: list = [[r.id for r in store.list(**filters)] for filters in LISTS]
        for words, filters in SEARCHES:
            out.append([(h.record.id, h.score) for h in store.search(words, **filters)])
        return out
    finally:
        store.close()


def fresh_checks(monkeypatch):
    monkeypatch.setattr(whoosh_compat, "_usable", {})


def test_every_fast_path_is_taken_with_the_tested_whoosh(varied_store, monkeypatch):
    fresh_checks(monkeypatch)
    assert answers(varied_store)
    assert all(whoosh_compat.usable(name) for name in ("parts", "numeric", "deleted"))
    store = Store.open(varied_store)
    try:
        ix = store.index._open()
        assert isinstance(ix.storage, whoosh_compat.LanternStorage)
        assert not ix.storage.supports_mmap  # lantern maps the segments, in place
    finally:
        store.close()


@pytest.mark.parametrize(
    "missing",
    [
        ("COMPOUND_OPEN_USES", "subset_of_parts"),
        ("NUMERIC_READER_HAS", "_values"),
        ("SEGMENT_READER_HAS", "deleted_docs_frozenset"),
        ("all", None),
    ],
    ids=["parts", "numeric", "deleted", "all"],
)
def test_without_the_internals_a_speedup_relies_on_the_public_api_gives_the_same_answers(
    varied_store, monkeypatch, missing
):
    fresh_checks(monkeypatch)
    fast = answers(varied_store)
    tables = ("COMPOUND_OPEN_USES", "NUMERIC_READER_HAS", "SEGMENT_READER_HAS")
    for table in tables if missing[0] == "all" else (missing[0],):
        # As if this Whoosh had no such attribute: the check at first use turns the path off.
        monkeypatch.setattr(whoosh_compat, table, (*getattr(whoosh_compat, table), "_gone"))
    fresh_checks(monkeypatch)
    if missing[0] in ("NUMERIC_READER_HAS", "all"):
        monkeypatch.setattr(whoosh_compat, "_numeric_in_one_piece", None)  # never called
    slow = answers(varied_store)
    assert slow == fast
    off = {
        "COMPOUND_OPEN_USES": "parts",
        "NUMERIC_READER_HAS": "numeric",
        "SEGMENT_READER_HAS": "deleted",
    }
    for table, name in off.items():
        assert whoosh_compat.usable(name) == (missing[0] not in (table, "all"))
    store = Store.open(varied_store)
    try:
        # Without lantern's parts, Whoosh maps the segments itself, as it would anywhere.
        parts_off = missing[0] in ("COMPOUND_OPEN_USES", "all")
        assert store.index._open().storage.supports_mmap == parts_off
    finally:
        store.close()


def test_a_whoosh_whose_compound_files_never_ask_for_subset_is_read_through_its_own_map(
    varied_store, monkeypatch
):
    """As another Whoosh might: a compound file read without ``subset``. The check sees it and
    leaves the mapping to Whoosh."""
    from whoosh.filedb.compound import CompoundStorage, SubFile
    from whoosh.filedb.structfile import BufferFile, StructFile

    fresh_checks(monkeypatch)
    fast = answers(varied_store)

    def open_file(self, name, *args, **kwargs):
        offset, length = self.range(name)
        if self._source:
            return BufferFile(memoryview(self._source)[offset : offset + length], name=name)
        return StructFile(SubFile(self._file, offset, length), name=name)

    monkeypatch.setattr(CompoundStorage, "open_file", open_file)
    fresh_checks(monkeypatch)
    assert answers(varied_store) == fast
    assert not whoosh_compat.usable("parts")


def test_a_part_read_in_place_answers_as_whoosh_s_own_file():
    from io import BytesIO

    from whoosh.filedb.structfile import StructFile

    data = bytes(range(256)) * 8
    ours = whoosh_compat._PartFile(memoryview(data)).subset(16, 1024)
    theirs = StructFile(BytesIO(data[16 : 16 + 1024]))
    assert ours.get(3, 40) == theirs.get(3, 40)
    for typecode in "bBhHiIqQf":
        assert ours.get_array(8, typecode, 12) == theirs.get_array(8, typecode, 12)
    assert ours.get_long(100) == theirs.get_long(100)
    assert ours.subset(5, 9).read() == data[21:30]


def test_the_index_counted_from_its_table_of_contents_or_by_a_reader_gives_the_same_count(
    varied_store, monkeypatch
):
    store = Store.open(varied_store)
    try:
        store.list()
        ix = store.index._open()
        fresh_checks(monkeypatch)
        fast = whoosh_compat.doc_count_all(ix)
        monkeypatch.setattr(whoosh_compat, "FILE_INDEX_HAS", ("_segments", "_gone"))
        fresh_checks(monkeypatch)
        assert whoosh_compat.doc_count_all(ix) == fast == ix.doc_count_all() >= 14
        assert not whoosh_compat.usable("toc")
    finally:
        store.close()


def test_an_index_in_memory_leaves_the_shared_temporary_folder_alone(tmp_path, monkeypatch):
    """Whoosh's RamStorage writers share $TMPDIR/MAIN.tmp with every process on the machine
    and delete it whole when they finish; lantern's (``whoosh_compat.memory_index``) keep
    their temporary files to themselves, so another process's files there survive."""
    import tempfile as tempfile_module

    from whoosh.fields import TEXT, Schema
    from whoosh.filedb.filestore import RamStorage

    monkeypatch.setattr(tempfile_module, "tempdir", str(tmp_path))
    shared = tmp_path / "MAIN.tmp"

    def build(ix) -> None:
        shared.mkdir(exist_ok=True)
        (shared / "another-process.ctmp").write_text("in use")
        writer = ix.writer()
        writer.add_document(body="alpha beta")
        writer.commit()

    build(whoosh_compat.memory_index(Schema(body=TEXT)))
    assert (shared / "another-process.ctmp").read_text() == "in use"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["MAIN.tmp"]  # its own is gone
    # Stock RamStorage, for contrast: the other process's file is deleted under it.
    build(RamStorage().create_index(Schema(body=TEXT)))
    assert not (shared / "another-process.ctmp").exists()
