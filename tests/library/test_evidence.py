"""Evidence (docs/evidence.md): sources as files, versions and appends, pinned references, verify.

Through the library on real stores in temp folders, and through the CLI in a subprocess where
the exit code or the text is the behaviour.
"""

from __future__ import annotations

import hashlib
import json
import os

import pygit2
import pytest
from support.cli import lantern
from support.stores import git, snapshot

from lantern_git.errors import InvalidInput, NotFound, UncommittedChanges, ValidationError
from lantern_git.evidence.sources import SourceInput
from lantern_git.model.record_file import record_path
from lantern_git.model.source import SourceManifest, SourceRef, compute_source_id

TRANSCRIPT = (
    "User: hello there\n"
    "Assistant: hi, how can I help?\n"
    "User: I prefer tea over coffee.\n"
    "Assistant: Noted, tea it is.\n"
)


def ingest(store, text=TRANSCRIPT, uri="session:2026-12-03", **more):
    more.setdefault("kind", "transcript")
    [result] = store.sources.add([SourceInput(text.encode(), "chat.md", uri=uri, **more)])
    return result


def files_of(root, source_id):
    folder = os.path.join(root, "sources", source_id[:2])
    return sorted(os.listdir(folder))


def trailers(path, rev="HEAD"):
    return git(path, "log", "-1", "--format=%B", rev)


# ---------------------------------------------------------------------------- sources as files


def test_ingest_writes_body_verbatim_and_manifest_in_contract_order(store, store_path):
    result = ingest(store, title="chat 1", meta={"host": "laptop"})
    source_id = result.manifest.id
    assert source_id == hashlib.sha256(b"uri\0session:2026-12-03").hexdigest()[:16]
    assert files_of(store_path, source_id) == [f"{source_id}.md", f"{source_id}.yaml"]
    body = (store_path / "sources" / source_id[:2] / f"{source_id}.md").read_bytes()
    assert body == TRANSCRIPT.encode()
    manifest = (store_path / "sources" / source_id[:2] / f"{source_id}.yaml").read_text()
    keys = [line.split(":")[0] for line in manifest.splitlines() if not line.startswith(" ")]
    assert keys == [
        "id",
        "kind",
        "uri",
        "title",
        "media_type",
        "captured_at",
        "updated_at",
        "lines",
        "bytes",
        "sha256",
        "meta",
    ]
    data = result.manifest.to_dict()
    assert data["lines"] == 4 and data["bytes"] == len(TRANSCRIPT.encode())
    assert data["sha256"] == hashlib.sha256(TRANSCRIPT.encode()).hexdigest()
    assert data["media_type"] == "text/markdown" and data["meta"] == {"host": "laptop"}
    message = trailers(store_path)
    assert "Lantern-Op: ingest" in message and f"Lantern-Source: {source_id}" in message
    assert git(store_path, "status", "--porcelain") == ""


def test_stdin_source_without_uri_is_named_by_its_body(store):
    [result] = store.sources.add([SourceInput(b"a note\n")])
    assert result.manifest.id == compute_source_id(None, b"a note\n")
    assert result.manifest.kind == "other" and result.manifest.uri is None
    assert result.manifest.media_type == "text/plain"


def test_reingest_same_bytes_makes_no_commit(store, store_path):
    ingest(store)
    head = git(store_path, "rev-parse", "HEAD")
    again = ingest(store)
    assert again.status == "unchanged"
    assert git(store_path, "rev-parse", "HEAD") == head


def test_reingest_different_bytes_is_a_new_version_of_the_same_source(store, store_path):
    first = ingest(store)
    second = ingest(store, text="User: something else entirely\n")
    assert second.manifest.id == first.manifest.id and second.status == "updated"
    assert second.manifest.captured_at == first.manifest.captured_at
    assert second.manifest.lines == 1
    appended = ingest(store, text="User: something else entirely\nUser: more\n")
    assert appended.status == "appended"


def test_append_keeps_every_earlier_line_and_starts_on_a_new_line(store, store_path):
    [result] = store.sources.add([SourceInput(b"one\ntwo", "n.txt", uri="note:1")])
    source_id = result.manifest.id
    appended = store.sources.append(source_id, "three\n")
    body = (store_path / "sources" / source_id[:2] / f"{source_id}.txt").read_bytes()
    assert body == b"one\ntwo\nthree\n"
    assert appended.manifest.lines == 3
    assert "Lantern-Op: append" in trailers(store_path)


def test_many_paths_are_one_commit(store, store_path):
    before = int(git(store_path, "rev-list", "--count", "HEAD"))
    inputs = [SourceInput(f"note {i}\n".encode(), f"n{i}.md", uri=f"note:{i}") for i in range(5)]
    results = store.sources.add(inputs)
    assert len({r.manifest.id for r in results}) == 5
    assert int(git(store_path, "rev-list", "--count", "HEAD")) == before + 1
    assert trailers(store_path).count("Lantern-Source: ") == 5


@pytest.mark.parametrize(
    "data, offset, what",
    [
        (b"fine\n\xff\xfebad", 5, "not valid UTF-8"),
        (b"abc\0def", 3, "NUL byte"),
    ],
)
def test_binary_or_invalid_text_is_refused_naming_the_byte_offset(
    store, store_path, data, offset, what
):
    before = snapshot(store_path)
    with pytest.raises(ValidationError) as err:
        store.sources.add([SourceInput(data, "x.bin")])
    assert what in err.value.message and f"byte offset {offset}" in err.value.message
    assert err.value.exit_code == 2
    assert snapshot(store_path) == before


def test_a_body_over_the_limit_is_refused_and_nothing_written(store, store_path):
    from lantern_git.model.source import MAX_SOURCE_BYTES

    before = snapshot(store_path)
    with pytest.raises(ValidationError, match="largest source body"):
        store.sources.add([SourceInput(b"x" * (MAX_SOURCE_BYTES + 1), "big.txt")])
    assert snapshot(store_path) == before


def test_an_append_past_the_limit_is_refused_and_nothing_written(store, store_path):
    """The limit holds for the body an append makes, not only for an ingest: a body grown
    past it would be committed, and ``lantern check`` would then fail on it."""
    from lantern_git.model.source import MAX_SOURCE_BYTES

    line = "x" * 1023 + "\n"
    source_id = ingest(store, text=line * (MAX_SOURCE_BYTES // 1024 - 1)).manifest.id
    before = snapshot(store_path)
    head = git(store_path, "rev-parse", "HEAD")
    # 1 KiB short of the limit: one more line fits, exactly; a second is one line too many.
    store.sources.append(source_id, line)
    assert store.sources.show(source_id).manifest.bytes == MAX_SOURCE_BYTES
    grown = snapshot(store_path)
    with pytest.raises(ValidationError, match="largest source body") as err:
        store.sources.append(source_id, "one byte too many")
    assert err.value.code == "too_large" and err.value.exit_code == 2
    assert snapshot(store_path) == grown != before
    assert git(store_path, "rev-list", "--count", f"{head.strip()}..HEAD").strip() == "1"
    assert store.check().ok


def test_remove_deletes_both_files_in_one_commit_and_pins_still_resolve(store, store_path):
    source_id = ingest(store).manifest.id
    record = store.add("tea", kind="preference", source_refs=[f"source:{source_id}#L3"])
    store.sources.remove(source_id, reason="stored by mistake")
    assert not (store_path / "sources" / source_id[:2]).exists() or not files_of(
        store_path, source_id
    )
    message = trailers(store_path)
    assert "Lantern-Op: remove" in message and "Lantern-Reason: stored by mistake" in message
    view = store.sources.show(record.source_refs[0])
    assert view.text == "User: I prefer tea over coffee.\n"
    report = store.sources.verify()
    assert [p.problem for p in report.problems] == ["removed"]


def test_show_at_a_revision_reads_the_old_version(store, store_path):
    source_id = ingest(store).manifest.id
    old_head = git(store_path, "rev-parse", "HEAD").strip()
    ingest(store, text="User: replaced\n")
    view = store.sources.show(f"source:{source_id}#L1", at=old_head)
    assert view.text == "User: hello there\n"
    assert store.sources.show(f"source:{source_id}#L1").text == "User: replaced\n"


# ---------------------------------------------------------------------------- references


def test_a_source_reference_is_stored_pinned_to_the_current_blob(store, store_path):
    source_id = ingest(store).manifest.id
    record = store.add("tea", kind="preference", source_refs=[f"source:{source_id}#L3", "url:x"])
    blob = str(pygit2.hash(TRANSCRIPT.encode()))
    assert record.source_refs == (f"source:{source_id}@{blob[:12]}#L3", "url:x")
    text = (store_path / "memory" / record.id[:2] / f"{record.id}.md").read_text()
    assert f"source:{source_id}@{blob[:12]}#L3" in text


def test_pin_outside_a_write_pins_to_the_current_blob_and_writes_nothing(store, store_path):
    """``store.sources.pin(refs)`` (docs/library.md) without a transaction: the references as
    ``add`` would store them, the store untouched."""
    source_id = ingest(store).manifest.id
    before = snapshot(store_path)
    blob = str(pygit2.hash(TRANSCRIPT.encode()))
    pinned = store.sources.pin([f"source:{source_id}#L3", "url:x"])
    assert pinned == (f"source:{source_id}@{blob[:12]}#L3", "url:x")
    assert snapshot(store_path) == before


def test_update_and_supersede_pin_their_references(store, store_path):
    """Each pins the source's current version: the blob git holds for its body at HEAD, not
    an earlier version's."""
    from lantern_git.model.source import PIN_DIGITS

    source_id = ingest(store).manifest.id
    body = f"sources/{source_id[:2]}/{source_id}.md"

    def current_blob() -> str:
        return git(store_path, "rev-parse", f"HEAD:{body}").strip()[:PIN_DIGITS]

    first = current_blob()
    store.sources.append(source_id, "User: and milk, please.")
    second = current_blob()
    assert second != first
    record = store.add("tea", kind="preference")
    updated = store.update(record.id, add_source_refs=[f"source:{source_id}#L1-L2"])
    assert updated.source_refs == (f"source:{source_id}@{second}#L1-L2",)
    store.sources.append(source_id, "Assistant: milk noted.")
    third = current_blob()
    assert third not in (first, second)
    new = store.supersede(record.id, "green tea", source_refs=[f"source:{source_id}"])
    assert new.source_refs == (f"source:{source_id}@{third}",)
    assert SourceRef.parse(new.source_refs[0]).blob == third
    # What the files say too, as git committed them.
    assert f"source:{source_id}@{third}" in (store_path / record_path(new.id)).read_text()


@pytest.mark.parametrize(
    "make_ref, reason",
    [
        (lambda sid: "source:../../etc/passwd", "not a source reference"),
        (lambda sid: "source:/etc/passwd#L1", "not a source reference"),
        (lambda sid: "source:..\\..\\x", "not a source reference"),
        (lambda sid: "source:0123456789abcdef#L1", "no such source"),
        (lambda sid: f"source:{sid}#L99999999999", "out of range"),
        (lambda sid: f"source:{sid}#L3-L2", "ends (L2) before it starts"),
        (lambda sid: f"source:{sid}#L0", "numbered from 1"),
        (lambda sid: f"source:{sid}@abc#L1", "not a source reference"),
    ],
)
def test_a_bad_source_reference_is_refused_and_nothing_is_written(
    store, store_path, make_ref, reason
):
    source_id = ingest(store).manifest.id
    before = snapshot(store_path)
    with pytest.raises(ValidationError) as err:
        store.add("tea", kind="preference", source_refs=[make_ref(source_id)])
    assert reason in err.value.message and err.value.code == "invalid_field"
    assert snapshot(store_path) == before


def test_a_pin_to_the_blob_of_another_file_is_refused(store, store_path):
    source_id = ingest(store).manifest.id
    other = ingest(store, text="another document\n", uri="note:other").manifest.id
    other_blob = str(pygit2.hash(b"another document\n"))
    assert other != source_id
    before = snapshot(store_path)
    with pytest.raises(ValidationError, match="is not a version of source"):
        store.add("tea", kind="preference", source_refs=[f"source:{source_id}@{other_blob[:9]}"])
    assert snapshot(store_path) == before


def test_a_pin_to_an_older_version_is_accepted_and_checked_against_it(store):
    source_id = ingest(store).manifest.id
    old_blob = str(pygit2.hash(TRANSCRIPT.encode()))
    ingest(store, text="User: short\n")
    record = store.add(
        "tea", kind="preference", source_refs=[f"source:{source_id}@{old_blob[:7]}#L3"]
    )
    assert record.source_refs == (f"source:{source_id}@{old_blob[:12]}#L3",)
    with pytest.raises(ValidationError, match="out of range"):
        store.add("x", kind="fact", source_refs=[f"source:{source_id}@{old_blob[:7]}#L9"])


def test_a_reference_to_a_source_with_uncommitted_edits_is_refused(store, store_path):
    source_id = ingest(store).manifest.id
    body = store_path / "sources" / source_id[:2] / f"{source_id}.md"
    body.write_text(TRANSCRIPT + "User: typed by hand\n")
    with pytest.raises(UncommittedChanges, match="lantern commit"):
        store.add("tea", kind="preference", source_refs=[f"source:{source_id}#L1"])


# ---------------------------------------------------------------------------- verify


def test_verify_reports_each_status_of_the_contract(store, store_path):
    source_id = ingest(store).manifest.id
    gone = ingest(store, text="to be removed\n", uri="note:gone").manifest.id
    ok = store.add("hello", kind="fact", source_refs=[f"source:{source_id}#L1"])
    moved = store.add("tea", kind="preference", source_refs=[f"source:{source_id}#L3"])
    lost = store.add("coffee", kind="fact", source_refs=[f"source:{source_id}#L4"])
    removed = store.add("removed", kind="fact", source_refs=[f"source:{gone}#L1"])
    assert store.sources.verify().ok
    # A new version: a line inserted before the tea line, the last line rewritten.
    ingest(
        store,
        text="User: hello there\nAssistant: hi, how can I help?\nUser: wait\n"
        "User: I prefer tea over coffee.\nAssistant: changed\n",
    )
    store.sources.remove(gone)
    # Hand-written references lantern never pinned: a missing version, a missing source,
    # lines past the end.
    refs = {
        "unknown_version": f"source:{source_id}@deadbeefdead#L1",
        "unknown_source": "source:0123456789abcdef#L1",
        "out_of_range": f"source:{source_id}#L40",
    }
    hand = store.add("hand", kind="fact")
    path = store_path / "memory" / hand.id[:2] / f"{hand.id}.md"
    listed = "".join(f"- {r}\n" for r in refs.values())
    path.write_text(path.read_text().replace("\n---\n", f"\nsource_refs:\n{listed}---\n", 1))
    store.commit_hand_edits()
    report = store.sources.verify()
    found = {(p.record_id, p.problem) for p in report.problems}
    assert (moved.id, "drifted") in found and (lost.id, "drifted") in found
    assert (removed.id, "removed") in found
    assert {p.problem for p in report.problems if p.record_id == hand.id} == set(refs)
    assert ok.id not in {p.record_id for p in report.problems}
    by_record = {p.record_id: p for p in report.problems}
    assert by_record[moved.id].moved_to == (4, 4)
    assert by_record[lost.id].moved_to is None
    assert report.checked == 7 and not report.ok


def test_verify_compares_every_line_of_a_range_not_only_the_first(store, store_path):
    source_id = ingest(store).manifest.id
    whole = store.add("tea, then noted", kind="fact", source_refs=[f"source:{source_id}#L3-L4"])
    head = store.add("the greeting", kind="fact", source_refs=[f"source:{source_id}#L1-L3"])
    three = store.add("all of it", kind="fact", source_refs=[f"source:{source_id}#L2-L4"])
    assert store.sources.verify().ok
    # A new version where only the last line changes: lines 1-3 are as they were.
    ingest(store, text=TRANSCRIPT.replace("Noted, tea it is.", "Noted, coffee it is."))
    report = store.sources.verify()
    problems = {p.record_id: p for p in report.problems}
    assert set(problems) == {whole.id, three.id} and head.id not in problems
    for record in (whole, three):
        assert problems[record.id].problem == "drifted"
        assert problems[record.id].moved_to is None  # the old text is nowhere in the new version
    assert problems[whole.id].detail == "lines 3-4 no longer hold the pinned text"
    assert report.checked == 3
    cli = lantern("--store", str(store_path), "verify", "--json")
    assert cli.returncode == 4
    assert {p["record_id"]: p["problem"] for p in json.loads(cli.stdout)["problems"]} == {
        whole.id: "drifted",
        three.id: "drifted",
    }


def test_verify_checks_every_record_or_only_the_records_it_is_handed(store):
    """``verify()`` checks every record of the store, archived and expired ones too;
    ``verify(records)`` only those it is handed (the evidence half never lists records)."""
    source_id = ingest(store).manifest.id
    kept = store.add("tea", kind="fact", source_refs=[f"source:{source_id}#L3"])
    archived = store.add("the greeting", kind="fact", source_refs=[f"source:{source_id}#L1"])
    store.archive(archived.id)
    expired = store.add(
        "an offer of help", kind="fact", expires_at=1, source_refs=[f"source:{source_id}#L2"]
    )
    store.add("no evidence", kind="fact")
    # A new version in which no line is what it was: each of the three references drifted.
    ingest(store, text="".join(f"line {n}\n" for n in range(1, 5)))
    every = store.sources.verify()
    assert every.checked == 3
    assert {p.record_id for p in every.problems} == {kept.id, archived.id, expired.id}
    only = store.sources.verify([store.get(kept.id)])
    assert only.checked == 1 and [p.record_id for p in only.problems] == [kept.id]
    assert store.sources.verify([]).to_dict() == {"ok": True, "checked": 0, "problems": []}


def test_verify_refuses_a_hand_written_pin_to_a_blob_of_another_source(store, store_path):
    """A pin lantern never checked, naming a real blob that is a version of a different source,
    whose first lines even read the same: verify must not judge the lines against it."""
    source_id = ingest(store).manifest.id
    lookalike = TRANSCRIPT.splitlines(keepends=True)[0] + "User: something else entirely\n"
    other = ingest(store, text=lookalike, uri="note:lookalike").manifest.id
    other_blob = str(pygit2.hash(lookalike.encode()))
    assert other != source_id
    hand = store.add("hand", kind="fact")
    ref = f"source:{source_id}@{other_blob[:12]}#L1"
    path = store_path / "memory" / hand.id[:2] / f"{hand.id}.md"
    path.write_text(path.read_text().replace("\n---\n", f"\nsource_refs:\n- {ref}\n---\n", 1))
    store.commit_hand_edits()
    [problem] = store.sources.verify().problems
    assert (problem.record_id, problem.ref, problem.problem) == (hand.id, ref, "unknown_version")
    assert problem.detail == f"{other_blob[:12]} is not a version of source {source_id}"
    cli = lantern("--store", str(store_path), "verify", "--json")
    assert cli.returncode == 4
    assert [p["problem"] for p in json.loads(cli.stdout)["problems"]] == ["unknown_version"]
    [shown] = store.sources.evidence(store.get(hand.id))
    assert shown["problem"] == "unknown_version"


def test_verify_through_the_cli_exits_4_with_the_json_report(store, store_path):
    source_id = ingest(store).manifest.id
    store.add("tea", kind="preference", source_refs=[f"source:{source_id}#L3"])
    good = lantern("--store", str(store_path), "verify", "--json")
    assert good.returncode == 0, good.stderr
    assert json.loads(good.stdout) == {"ok": True, "checked": 1, "problems": []}
    ingest(store, text="User: I prefer coffee.\n")
    bad = lantern("--store", str(store_path), "verify", "--json")
    assert bad.returncode == 4
    problem = json.loads(bad.stdout)["problems"][0]
    assert set(problem) == {"record_id", "ref", "problem", "detail", "moved_to"}
    assert problem["problem"] == "drifted"


def test_memory_show_evidence_and_list_cites(store, store_path):
    source_id = ingest(store).manifest.id
    cited = store.add("tea", kind="preference", source_refs=[f"source:{source_id}#L3", "url:y"])
    store.add("unrelated", kind="fact")
    out = lantern("--store", str(store_path), "memory", "show", cited.id, "--evidence", "--json")
    assert out.returncode == 0, out.stderr
    evidence = json.loads(out.stdout)["evidence"]
    assert evidence[0]["lines"] == [3, 3] and evidence[0]["problem"] is None
    assert evidence[0]["text"] == "User: I prefer tea over coffee.\n"
    assert evidence[1] == {"ref": "url:y", "problem": None, "lines": None, "text": None}
    listed = lantern("--store", str(store_path), "memory", "list", "--cites", source_id, "--json")
    assert [r["id"] for r in json.loads(listed.stdout)] == [cited.id]
    assert [r.id for r in store.list(cites=source_id[:6])] == [cited.id]


def test_a_keyword_search_that_cites_a_source_finds_only_the_records_citing_it(store):
    source_id = ingest(store).manifest.id
    cited = [
        store.add(f"tea note {n}", kind="fact", source_refs=[f"source:{source_id}#L3"])
        for n in range(3)
    ]
    store.add("tea is not coffee", kind="fact")
    store.add("tea again, citing nothing", kind="fact")
    everything = [h.record.id for h in store.search("tea", mode="keyword")]
    assert len(everything) == 5
    wanted = [i for i in everything if i in {r.id for r in cited}]
    for cites in (source_id, source_id[:6]):
        found = store.search("tea", mode="keyword", cites=cites)
        assert [h.record.id for h in found] == wanted
        # A page counts cited hits only: offset 1, limit 1 is the second cited record.
        paged = store.search("tea", mode="keyword", cites=cites, limit=1, offset=1)
        assert [h.record.id for h in paged] == wanted[1:2]


# ---------------------------------------------------------------------------- the CLI


def test_source_cli_session(store_path, tmp_path):
    doc = tmp_path / "talk.md"
    doc.write_text(TRANSCRIPT)
    s = ["--store", str(store_path)]
    added = lantern(*s, "source", "add", str(doc), "--kind", "transcript", "--json")
    assert added.returncode == 0, added.stderr
    [manifest] = json.loads(added.stdout)
    assert manifest["uri"] == doc.resolve().as_uri() and manifest["kind"] == "transcript"
    source_id = manifest["id"]
    shown = lantern(*s, "source", "show", f"source:{source_id}#L2-L3", "--json")
    view = json.loads(shown.stdout)
    assert view["lines"] == [2, 3] and view["text"].startswith("Assistant: hi")
    assert view["ref"].startswith(f"source:{source_id}@")
    appended = lantern(*s, "source", "append", source_id, "-", input="User: bye\n")
    assert appended.returncode == 0 and appended.stdout.startswith("appended")
    listed = json.loads(lantern(*s, "source", "list", "--json").stdout)
    assert [m["lines"] for m in listed] == [5]
    removed = lantern(*s, "source", "remove", source_id[:6])
    assert removed.returncode == 0 and removed.stdout.startswith("removed")
    missing = lantern(*s, "source", "show", source_id, "--json")
    assert missing.returncode == 3 and json.loads(missing.stderr)["error"]["code"] == "not_found"


def test_source_add_of_a_fifo_or_folder_is_refused_without_hanging(store_path, tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    out = lantern("--store", str(store_path), "source", "add", str(fifo), timeout=20)
    assert out.returncode == 2 and "not a regular file" in out.stderr
    out = lantern("--store", str(store_path), "source", "add", str(tmp_path))
    assert out.returncode == 2 and "not a regular file" in out.stderr


def test_binary_stdin_is_refused_through_the_cli_with_exit_2(store_path):
    before = snapshot(store_path)
    out = lantern("--store", str(store_path), "source", "add", "-", input=b"ab\xffcd")
    assert out.returncode == 2 and b"byte offset 2" in out.stderr
    assert snapshot(store_path) == before


def test_log_shows_ingest_append_remove(store, store_path):
    source_id = ingest(store).manifest.id
    store.sources.append(source_id, "more\n")
    store.sources.remove(source_id)
    log = json.loads(lantern("--store", str(store_path), "log", "--json").stdout)["log"]
    assert [e["op"] for e in log[:3]] == ["remove", "append", "ingest"]
    assert all(e["sources"] == [source_id] for e in log[:3])


# ---------------------------------------------------------------------------- hand edits


def test_check_and_commit_see_hand_edits_to_sources(store, store_path):
    source_id = ingest(store).manifest.id
    body = store_path / "sources" / source_id[:2] / f"{source_id}.md"
    body.write_text(TRANSCRIPT.replace("tea over coffee", "coffee over tea"))
    check = lantern("--store", str(store_path), "check", "--json")
    assert check.returncode == 4
    assert "body was changed by hand" in json.loads(check.stdout)["problems"][0]["message"]
    store.commit_hand_edits()
    assert git(store_path, "status", "--porcelain") == ""
    manifest = store.sources.get(source_id)
    assert manifest.sha256 == hashlib.sha256(body.read_bytes()).hexdigest()
    assert f"Lantern-Source: {source_id}" in trailers(store_path)
    assert lantern("--store", str(store_path), "check").returncode == 0


@pytest.mark.parametrize(
    "spoil, expected",
    [
        (lambda m: m.write_text("id: [unclosed\n"), "not valid YAML"),
        (lambda m: m.write_text("- a list\n"), "YAML mapping"),
        (lambda m: m.write_text(m.read_text().replace("kind: transcript", "kind: bogus")), "kind"),
    ],
)
def test_a_manifest_edited_into_nonsense_is_reported_and_commit_refuses(
    store, store_path, spoil, expected
):
    source_id = ingest(store).manifest.id
    manifest = store_path / "sources" / source_id[:2] / f"{source_id}.yaml"
    spoil(manifest)
    report = store.check()
    assert not report.ok and expected in str(report.problems[0])
    head = git(store_path, "rev-parse", "HEAD")
    with pytest.raises(Exception, match="refusing to commit"):
        store.commit_hand_edits()
    assert git(store_path, "rev-parse", "HEAD") == head
    with pytest.raises(Exception, match="fix the file"):
        store.sources.show(source_id)


def test_symlink_and_fifo_under_sources_are_reported_never_read(store, store_path, tmp_path):
    source_id = ingest(store).manifest.id
    body = store_path / "sources" / source_id[:2] / f"{source_id}.md"
    secret = tmp_path / "secret.txt"
    secret.write_text("outside the store\n")
    body.unlink()
    body.symlink_to(secret)
    problems = [str(p) for p in store.check().problems]
    assert any("symbolic link" in p for p in problems)
    with pytest.raises(Exception, match="symbolic link"):
        store.sources.show(f"source:{source_id}#L1")
    body.unlink()
    os.mkfifo(body)
    problems = [str(p) for p in store.check().problems]
    assert any("FIFO" in p for p in problems)


def test_conflict_markers_in_a_body_are_reported_by_check(store, store_path):
    source_id = ingest(store).manifest.id
    body = store_path / "sources" / source_id[:2] / f"{source_id}.md"
    body.write_text("User: first\n<<<<<<< ours\nUser: a\n=======\nUser: b\n>>>>>>> theirs\n")
    report = store.check()
    assert not report.ok
    [problem] = report.problems
    assert problem.path == f"sources/{source_id[:2]}/{source_id}.md" and problem.line == 2
    assert "conflict markers" in problem.message
    text = lantern("--store", str(store_path), "check")
    assert text.returncode == 4
    assert f"sources/{source_id[:2]}/{source_id}.md:2" in text.stdout + text.stderr
    assert "conflict markers" in text.stdout + text.stderr
    # A transcript that quotes markers, ingested as it is, is no conflict.
    ingest(store, text="<<<<<<< a\n=======\n>>>>>>> b\n", uri="session:quoted")
    body.write_text(TRANSCRIPT)
    assert store.check().ok


def test_a_source_id_that_is_a_path_never_reaches_the_file_system(store):
    for bad in ("../../etc", "/etc/passwd", "..\\x", "zz", "0123456789abcdeg"):
        with pytest.raises((InvalidInput, NotFound)):
            store.sources.show(bad)
        with pytest.raises((InvalidInput, NotFound)):
            store.sources.append(bad, "x")


def test_manifest_round_trips_and_keeps_unknown_keys():
    manifest = SourceManifest(
        id="0123456789abcdef",
        kind="note",
        media_type="text/plain",
        captured_at=1,
        updated_at=2,
        lines=3,
        bytes=4,
        sha256="0" * 64,
        title="t: with colon",
        meta={"a": "b"},
        extra={"x_custom": [1, 2]},
    )
    again = SourceManifest.from_yaml(manifest.to_yaml())
    assert again == manifest


def test_index_rebuild_rebuilds_the_chunk_index_too(store, store_path):
    ingest(store)
    import shutil

    assert store.chunks.counts() == (1, 1)  # the first read built it
    store.close()
    shutil.rmtree(store_path / ".lantern" / "chunks")
    out = lantern("--store", str(store_path), "index", "rebuild")
    assert out.returncode == 0, out.stderr
    assert (store_path / ".lantern" / "chunks").is_dir()
    assert store.chunks.counts() == (1, 1)


def test_source_list_and_search_take_the_listing_options(store, store_path):
    for i in range(3):
        store.sources.add([SourceInput(f"note {i} on roses\n".encode(), uri=f"n:{i}")])
    s = ["--store", str(store_path)]
    count = lantern(*s, "source", "list", "--count")
    assert count.stdout.strip() == "3"
    page = lantern(*s, "source", "list", "--limit", "2", "--offset", "2", "--jsonl")
    assert len(page.stdout.splitlines()) == 1 and json.loads(page.stdout)["kind"] == "other"
    csv = lantern(*s, "source", "search", "roses", "--csv", "--fields", "source_id,lines")
    rows = csv.stdout.splitlines()
    assert rows[0] == "source_id,lines" and len(rows) == 4
    bad = lantern(*s, "source", "list", "--fields", "nope")
    assert bad.returncode == 2 and "nope" in bad.stderr


def test_the_first_ingest_in_an_older_store_routes_sources_to_the_merge_driver(store, store_path):
    attributes = store_path / ".gitattributes"
    older = "".join(
        line + "\n" for line in attributes.read_text().splitlines() if "sources/" not in line
    )
    attributes.write_text(older)
    git(store_path, "commit", "-qam", "a store from before sources")
    ingest(store)
    assert "sources/** merge=lantern" in attributes.read_text()
    changed = git(store_path, "show", "--name-only", "--format=", "HEAD").split()
    assert ".gitattributes" in changed and git(store_path, "status", "--porcelain") == ""
    ingest(store, text="again\n", uri="note:2")
    assert git(store_path, "show", "--name-only", "--format=", "HEAD").count(".gitattributes") == 0


def test_export_and_import_carry_sources(store, store_path, tmp_path):
    source_id = ingest(store, title="chat").manifest.id
    store.add("tea", kind="preference", source_refs=[f"source:{source_id}#L3"])
    exported = lantern("--store", str(store_path), "export")
    assert exported.returncode == 0, exported.stderr
    lines = [json.loads(line) for line in exported.stdout.splitlines()]
    source_line = lines[-1]
    assert set(source_line) == {"source", "ext", "body"} and source_line["body"] == TRANSCRIPT
    dump = tmp_path / "dump.jsonl"
    dump.write_text(exported.stdout)
    other = tmp_path / "other"
    assert lantern("init", str(other)).returncode == 0
    imported = lantern("--store", str(other), "import", str(dump), "--json")
    assert imported.returncode == 0, imported.stderr
    assert json.loads(imported.stdout)["sources"] == [source_id]
    copy = other / "sources" / source_id[:2] / f"{source_id}.md"
    assert copy.read_text() == TRANSCRIPT
    assert f"Lantern-Source: {source_id}" in trailers(other)
    assert lantern("--store", str(other), "verify").returncode == 0
    again = lantern("--store", str(other), "import", str(dump), "--json")
    assert json.loads(again.stdout) == {
        "imported": 0,
        "skipped": 1,
        "commit": None,
        "sources": [],
        "entities": [],
    }


def test_an_import_line_with_a_bad_source_is_refused_naming_the_line(store, store_path, tmp_path):
    dump = tmp_path / "bad.jsonl"
    manifest = {
        "id": "../../x",
        "kind": "note",
        "media_type": "text/plain",
        "captured_at": 1,
        "updated_at": 1,
        "lines": 1,
        "bytes": 1,
        "sha256": "0" * 64,
    }
    bad = {"source": manifest, "ext": "md", "body": "x"}
    dump.write_text(json.dumps(bad) + "\n")
    before = snapshot(store_path)
    out = lantern("--store", str(store_path), "import", str(dump))
    assert out.returncode == 2 and "line 1" in out.stderr and "invalid source id" in out.stderr
    assert snapshot(store_path) == before


def test_a_large_ingest_leaves_its_chunks_to_the_next_search(store):
    from lantern_git.index.chunks import NOTE_BUDGET_BYTES

    small = ingest(store, text="a small note about otters\n", uri="note:small").manifest.id
    assert store.chunks.counts() == (1, 1)  # indexed by the write itself
    line = "User: the quarterly numbers for the walrus project look fine.\n"
    big = (line * (NOTE_BUDGET_BYTES // len(line) + 10)).encode()
    [result] = store.sources.add([SourceInput(big, "big.md", uri="note:big")])
    assert store.chunks.counts() == (1, 1)  # the write did not wait for Whoosh
    hits = store.sources.search("walrus", limit=1)
    assert hits and hits[0].source_id == result.manifest.id
    assert store.chunks.counts()[0] == 2
    assert store.sources.search("otters")[0].source_id == small


def test_a_read_only_store_answers_evidence_reads_and_refuses_ingest(store, store_path, tmp_path):
    import stat as stat_module

    from support.cli import as_reader

    source_id = ingest(store).manifest.id
    record = store.add("tea", kind="preference", source_refs=[f"source:{source_id}#L3"])
    store.close()
    paths = [store_path, *store_path.rglob("*")]
    for p in paths:
        if not p.is_symlink():
            p.chmod(p.stat().st_mode & ~(stat_module.S_IWUSR | stat_module.S_IWGRP))
    temp = tmp_path / "tmp"
    temp.mkdir()
    env = {"TMPDIR": str(temp)}
    s = ["--store", str(store_path)]
    try:
        hits = as_reader(*s, "source", "search", "coffee", "--json", env=env)
        assert hits.returncode == 0, hits.stderr
        assert json.loads(hits.stdout)[0]["source_id"] == source_id
        verified = as_reader(*s, "verify", "--json", env=env)
        assert verified.returncode == 0 and json.loads(verified.stdout)["ok"] is True
        shown = as_reader(*s, "memory", "show", record.id, "--evidence", "--json", env=env)
        assert json.loads(shown.stdout)["evidence"][0]["lines"] == [3, 3]
        note = temp / "note.md"
        note.write_text("a new note\n")
        refused = as_reader(*s, "source", "add", str(note), "--json", env=env)
        assert refused.returncode == 1 and "read_only" in refused.stderr
    finally:
        for p in paths:
            if not p.is_symlink():
                p.chmod(p.stat().st_mode | stat_module.S_IWUSR)


def test_two_hosts_append_cite_and_sync_and_every_pin_resolves_on_both(tmp_path):
    remote = tmp_path / "remote.git"
    pygit2.init_repository(str(remote), bare=True, initial_head="main")
    a, b = tmp_path / "a", tmp_path / "b"

    def run(host, *args, input=None):
        out = lantern("--store", str(host), *args, input=input)
        assert out.returncode == 0, (args, out.stderr)
        return out.stdout

    assert lantern("init", str(a)).returncode == 0
    git(a, "remote", "add", "origin", str(remote))
    run(a, "source", "add", "-", "--uri", "session:shared", "--kind", "transcript",
        input=TRANSCRIPT)  # fmt: skip
    run(a, "sync")
    assert lantern("clone", str(remote), str(b)).returncode == 0
    source_id = compute_source_id("session:shared", b"")
    run(a, "source", "append", source_id, "-", input="User: appended on host a\n")
    run(b, "source", "append", source_id, "-", input="User: appended on host b\n")
    cite = {}
    for host, name in ((a, "a"), (b, "b")):
        record = json.loads(
            run(host, "memory", "add", f"fact from {name}", "--kind", "fact", "--json",
                "--source-ref", f"source:{source_id}#L3", "--source-ref", f"source:{source_id}#L5")
        )  # fmt: skip
        cite[name] = record["source_refs"]
    run(a, "sync")
    run(b, "sync")
    run(a, "sync")
    assert (a / "sources").exists() and git(a, "rev-parse", "HEAD") == git(b, "rev-parse", "HEAD")
    for host in (a, b):
        report = json.loads(lantern("--store", str(host), "verify", "--json").stdout)
        problems = {(p["ref"], p["problem"]) for p in report["problems"]}
        # The line both hosts cited from the common text still holds; each host's own appended
        # line is still there, maybe lower down: it drifted, and verify says where it went.
        assert not any(problem in ("unknown_version", "unknown_source") for _, problem in problems)
        # The tails are ordered the same on both hosts: one host's line moved down by one.
        assert [problem for _, problem in problems] == ["drifted"]
        for name, (common, own) in cite.items():
            assert (common, "drifted") not in problems
            shown = json.loads(run(host, "source", "show", own, "--json"))
            assert shown["text"] == f"User: appended on host {name}\n"
            moved = [p for p in report["problems"] if p["ref"] == own]
            if moved:
                body = run(host, "source", "show", f"source:{source_id}#L{moved[0]['moved_to'][0]}")
                assert body == f"User: appended on host {name}\n"


def test_source_list_reads_manifests_only_and_check_judges_the_bodies(store, store_path):
    source_id = ingest(store, title="chat").manifest.id
    body = store_path / "sources" / source_id[:2] / f"{source_id}.md"
    body.unlink()
    os.mkfifo(body)  # a body that a read would block on
    assert [m.id for m in store.sources.list()] == [source_id]
    assert store.sources.get(source_id).title == "chat"
    assert any("FIFO" in str(p) for p in store.check().problems)
