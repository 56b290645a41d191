"""lantern export and lantern import: JSON Lines, validated as a whole, one commit."""

from __future__ import annotations

import json

import pytest
from support.cli import lantern, stderr_on_a_terminal
from support.stores import git, init_repo, snapshot

from lantern_git.errors import ValidationError
from lantern_git.git.repo import parse_trailers
from lantern_git.model.record import Record, compute_id
from lantern_git.model.record_file import record_path
from lantern_git.store import Store


def line(content: str, new_kind: str = "fact", new_scope: str = "global", **overrides) -> str:
    """One export line for a valid record, with ``overrides`` applied to its object."""
    record = Record.new(kind=new_kind, content=content, scope=new_scope, now=1_700_000_000)
    data = record.to_dict()
    data.update(overrides)
    return json.dumps(data)


def test_export_writes_every_record_any_status_in_id_order(store, store_path):
    a = store.add("Ana drinks tea", kind="preference")
    b = store.add("Bo drinks coffee", kind="preference")
    c = store.add("Cy drinks water", kind="preference", source_refs=["chat:1"])
    store.archive(b.id)
    store.supersede(c.id, "Cy drinks sparkling water")
    result = lantern("export", cwd=store_path)
    assert result.returncode == 0, result.stderr
    rows = [json.loads(x) for x in result.stdout.splitlines()]
    assert [r["id"] for r in rows] == sorted(r["id"] for r in rows)
    assert len(rows) == 4
    by_id = {r["id"]: r for r in rows}
    assert by_id[b.id]["status"] == "archived" and by_id[c.id]["status"] == "superseded"
    assert by_id[a.id] == store.get(a.id).to_dict()
    assert list(by_id[c.id]) == list(Record.new(kind="fact", content="x").to_dict())
    assert [r.id for r in store.export_records()] == [r["id"] for r in rows]


def test_export_skips_a_broken_file_with_a_warning_and_exits_4(store, store_path):
    a = store.add("Ana drinks tea", kind="preference")
    b = store.add("Bo drinks coffee", kind="preference")
    path = store_path / record_path(b.id)
    path.write_text(path.read_text().replace("priority: 50", "priority: lots"))
    result = lantern("export", cwd=store_path)
    # Every readable record is written, but a partial backup must not pass for a whole one.
    assert result.returncode == 4
    assert [json.loads(x)["id"] for x in result.stdout.splitlines()] == [a.id]
    assert f"warning: skipped {record_path(b.id)}:6: priority" in result.stderr


def test_export_then_import_into_a_new_store_round_trips(store, store_path, tmp_path):
    store.add("Ana drinks tea", kind="preference", scope="user:ana", priority=90)
    old = store.add("Bo drinks coffee", kind="preference", expires_at=4_000_000_000)
    store.supersede(old.id, "Bo drinks decaf")
    exported = lantern("export", cwd=store_path).stdout
    other = tmp_path / "other"
    init_repo(other)
    Store.init(str(other))
    result = lantern("import", "-", "--json", cwd=other, input=exported)
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["imported"] == 3 and data["skipped"] == 0
    assert data["commit"] == git(other, "rev-parse", "HEAD").strip()
    assert lantern("export", cwd=other).stdout == exported
    for record_id in (json.loads(x)["id"] for x in exported.splitlines()):
        assert (other / record_path(record_id)).read_bytes() == (
            store_path / record_path(record_id)
        ).read_bytes()
    assert git(other, "status", "--porcelain") == ""
    # the index sees them without a rebuild
    listed = json.loads(lantern("memory", "list", "--status", "all", "--json", cwd=other).stdout)
    assert len(listed) == 3


def test_an_edited_record_keeps_its_id_through_export_and_import(store, store_path, tmp_path):
    record = store.add("Ana drinks tea", kind="preference", scope="user:ana")
    path = store_path / record_path(record.id)
    path.write_text(path.read_text().replace("Ana drinks tea", "Ana drinks green tea"))
    store.commit_hand_edits()
    exported = lantern("export", cwd=store_path).stdout
    assert json.loads(exported)["content"] == "Ana drinks green tea"
    other = tmp_path / "other"
    init_repo(other)
    Store.init(str(other))
    result = lantern("import", "-", "--json", cwd=other, input=exported)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["imported"] == 1
    assert Store.open(str(other)).get(record.id).content == "Ana drinks green tea"


def test_import_is_one_commit_with_a_trailer_per_new_record_and_idempotent(store, store_path):
    existing = store.add("Already here", kind="fact")
    lines = [
        existing.to_dict(),
        json.loads(line(content="First new")),
        json.loads(line("Second new", new_kind="goal", new_scope="project:x")),
    ]
    text = "\n".join(json.dumps(x) for x in lines) + "\n\n"
    head = git(store_path, "rev-parse", "HEAD").strip()
    result = store.import_records(text.splitlines(), reason="migration")
    assert (result.imported, result.skipped) == (2, 1)
    assert git(store_path, "rev-parse", "HEAD~1").strip() == head
    message = git(store_path, "log", "-1", "--format=%B")
    trailers = parse_trailers(message)
    assert trailers["Lantern-Op"] == ["import"]
    assert trailers["Lantern-Record"] == [lines[1]["id"], lines[2]["id"]]
    assert trailers["Lantern-Reason"] == ["migration"]
    assert message.startswith("import 2 records\n")
    assert store.get(lines[2]["id"]).scope == "project:x"
    assert {r.id for r in store.list()} == {existing.id, lines[1]["id"], lines[2]["id"]}
    before = snapshot(store_path)
    again = store.import_records(text.splitlines())
    assert (again.imported, again.skipped, again.commit) == (0, 3, None)
    assert snapshot(store_path) == before


def test_import_skips_a_repeated_id_within_the_batch(store):
    text = line(content="Twice") + "\n" + line(content="Twice") + "\n"
    result = store.import_records(text.splitlines())
    assert (result.imported, result.skipped) == (1, 1)


@pytest.mark.parametrize(
    ("bad", "expected"),
    [
        ("{not json", "line 3: is not valid JSON"),
        ('["a list"]', "line 3: a record must be an object"),
        (line(content="x", priority=101), "line 3: priority: must be between 0 and 100"),
        (line(content="x", kind="wish"), "line 3: kind: must be one of"),
        (line(content="x", extra="field"), "line 3: unknown field 'extra'"),
        (line(content="x", id="../../etc/passwd"), "line 3: id: must be 16 lowercase hex digits"),
        (json.dumps({"content": "no id, no kind"}), "line 3: kind: is required"),
    ],
)
def test_a_bad_line_refuses_the_whole_batch(store, store_path, bad, expected):
    good = line(content="Fine record")
    text = good + "\n\n" + bad + "\n" + line(content="Also fine") + "\n"
    before = snapshot(store_path)
    with pytest.raises(ValidationError, match=expected.replace("(", r"\(").replace(")", r"\)")):
        store.import_records(text.splitlines())
    assert snapshot(store_path) == before


def test_cli_import_errors(store_path, tmp_path):
    source = tmp_path / "batch.jsonl"
    source.write_text(line(content="ok") + "\n" + line(content="bad", confidence=3) + "\n")
    before = snapshot(store_path)
    result = lantern("import", str(source), "--json", cwd=store_path)
    assert result.returncode == 2 and result.stdout == ""
    message = json.loads(result.stderr)["error"]["message"]
    assert message.startswith("line 2: confidence")
    missing = lantern("import", str(tmp_path / "nope.jsonl"), cwd=store_path)
    assert missing.returncode == 2 and "cannot read" in missing.stderr
    not_utf8 = tmp_path / "latin1.jsonl"
    not_utf8.write_bytes(b'{"content": "caf\xe9"}\n')
    assert "line 1: is not valid UTF-8" in lantern("import", str(not_utf8), cwd=store_path).stderr
    assert snapshot(store_path) == before


def test_a_large_import_is_one_commit_and_every_record_is_listed_and_found(store, store_path):
    # Past REBUILD_THRESHOLD the index is rebuilt once rather than told each file: the same
    # index either way (only the time differs), so this asks what a user sees.
    count = 1500
    text = "\n".join(line(content=f"bulk record number {i}") for i in range(count))
    result = store.import_records(text.splitlines())
    assert result.imported == count
    assert git(store_path, "rev-list", "--count", "HEAD").strip() == "2"
    assert len(store.list(limit=None)) == count
    assert store.search("number 1234")[0].record.content == "bulk record number 1234"
    assert git(store_path, "status", "--porcelain") == ""
    assert compute_id("fact", "global", "bulk record number 7") in result.ids


def _import_on_a_terminal(store_path, source, *args) -> tuple[int, bytes, bytes]:
    """``lantern import`` with stderr on a pseudo-terminal: (exit status, stdout, terminal)."""
    return stderr_on_a_terminal("import", str(source), *args, cwd=store_path, timeout=120)


def test_import_shows_a_progress_bar_on_a_terminal_but_not_with_json(store_path, tmp_path):
    source = tmp_path / "batch.jsonl"
    source.write_text("\n".join(line(f"progress record {i}") for i in range(600)) + "\n")
    code, out, seen = _import_on_a_terminal(store_path, source)
    assert code == 0
    assert out == b"imported 600, skipped 0 (already present)\n"
    assert b"importing" in seen and b"100%" in seen
    # --json keeps the terminal for the error object alone.
    code, out, seen = _import_on_a_terminal(store_path, source, "--json")
    assert code == 0 and json.loads(out)["skipped"] == 600
    assert seen == b""


def test_import_shows_no_progress_bar_when_not_on_a_terminal(store_path, tmp_path):
    source = tmp_path / "batch.jsonl"
    source.write_text("\n".join(line(f"quiet record {i}") for i in range(600)) + "\n")
    result = lantern("import", str(source), cwd=store_path)
    assert result.returncode == 0 and result.stderr == ""
    assert result.stdout == "imported 600, skipped 0 (already present)\n"
