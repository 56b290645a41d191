"""Sources merge without conflict markers (docs/sync.md, "How sources merge"): the pure rules of
model/source_merge.py, then ``lantern sync`` and a plain ``git pull`` between real clones."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path

import pygit2
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.cli import lantern
from support.stores import git, init_repo

from lantern_git.cli.sync import find_source_body
from lantern_git.errors import UncommittedChanges
from lantern_git.git.repo import parse_trailers
from lantern_git.model.record_merge import MergeError
from lantern_git.model.source import (
    SourceManifest,
    body_path,
    compute_source_id,
    count_lines,
    lines_of,
    manifest_path,
    media_type_for,
)
from lantern_git.model.source_file import describe, load_source, source_problems
from lantern_git.model.source_merge import (
    SourceVersion,
    merge_bodies,
    merge_manifest_files,
    merge_source,
)
from lantern_git.store import Store

MARKERS = (b"<<<<<<<", b">>>>>>>", b"=======")
URI = "session:2026-12-03"
SID = compute_source_id(URI, b"")
BASE = b"User: hello\nAssistant: hi, how can I help?\n"


def manifest(body: bytes, *, updated_at: int = 1000, title: str | None = None, **more) -> bytes:
    fields = dict(
        id=SID,
        kind="transcript",
        media_type=media_type_for("txt"),
        captured_at=1000,
        updated_at=updated_at,
        uri=URI,
        title=title,
    )
    fields.update(more)
    return SourceManifest(**fields, **describe(body)).to_yaml()


def version(body: bytes, **fields) -> SourceVersion:
    return SourceVersion(manifest(body, **fields), body, "txt")


# ---------------------------------------------------------------------------- pure rules


def test_two_appends_keep_the_base_and_both_tails_in_an_order_that_ignores_sides():
    ours, theirs = BASE + b"User: from a\n", BASE + b"User: from b\n"
    one, two = merge_bodies(BASE, ours, theirs), merge_bodies(BASE, theirs, ours)
    assert one.body == two.body == BASE + b"User: from a\nUser: from b\n"
    assert one.how == "appended"


def test_a_tail_without_a_final_newline_does_not_glue_onto_the_other():
    merged = merge_bodies(BASE, BASE + b"one", BASE + b"two").body
    assert merged == BASE + b"one\ntwo"
    assert count_lines(merged) == count_lines(BASE) + 2


def test_the_same_appended_text_is_kept_once_and_a_longer_append_wins_whole():
    assert merge_bodies(BASE, BASE + b"x\n", BASE + b"x\ny\n").body == BASE + b"x\ny\n"
    shared = merge_bodies(BASE, BASE + b"x\nfrom a\n", BASE + b"x\nfrom b\n").body
    assert shared == BASE + b"x\nfrom a\nfrom b\n"
    long = b"".join(b"line %d\n" % n for n in range(3000))  # past the 4096-byte blocks
    merged = merge_bodies(BASE, BASE + long + b"line a\n", BASE + long + b"line b\n").body
    assert merged == BASE + long + b"line a\nline b\n"


def test_two_re_ingests_keep_the_longer_and_report_the_other():
    ours, theirs = b"rewritten on a\n", b"rewritten on b, longer\n"
    merged = merge_bodies(BASE, ours, theirs)
    assert (merged.body, merged.how, merged.other) == (theirs, "reingested", ours)
    same_length = merge_bodies(BASE, b"version a\n", b"version b\n")
    larger = max(b"version a\n", b"version b\n", key=lambda b: hashlib.sha256(b).hexdigest())
    assert same_length.body == larger


def test_removed_on_one_side_and_changed_on_the_other_keeps_the_change():
    changed = version(BASE + b"more\n", updated_at=2000)
    merged = merge_source(version(BASE), SourceVersion(), changed, SID)
    assert (merged.manifest, merged.body, merged.kept) == (changed.manifest, changed.body, "theirs")
    gone = merge_source(version(BASE), SourceVersion(), version(BASE), SID)
    assert (gone.manifest, gone.body) == (None, None)
    both = merge_source(version(BASE), SourceVersion(), SourceVersion(), SID)
    assert (both.manifest, both.body) == (None, None)


def test_the_manifest_describes_the_merged_body_with_the_earliest_and_latest_times():
    ours = version(BASE + b"a\n", updated_at=2000)
    theirs = SourceVersion(
        manifest(BASE + b"b\n", updated_at=3000).replace(b"captured_at: 1000", b"captured_at: 900"),
        BASE + b"b\n",
        "txt",
    )
    merged = merge_source(version(BASE), ours, theirs, SID)
    parsed = SourceManifest.from_yaml(merged.manifest)
    assert merged.body == BASE + b"a\nb\n"
    assert {k: getattr(parsed, k) for k in ("lines", "bytes", "sha256")} == describe(merged.body)
    assert (parsed.captured_at, parsed.updated_at) == (900, 3000)


def test_fields_changed_on_both_sides_follow_the_winning_body_and_are_listed():
    ours = version(b"short\n", updated_at=5000, title="from a", meta={"k": "a", "only_a": "1"})
    theirs = version(b"the longer body\n", updated_at=2000, title="from b", meta={"k": "b"})
    merged = merge_source(version(BASE, title="base"), ours, theirs, SID)
    parsed = SourceManifest.from_yaml(merged.manifest)
    assert merged.body == b"the longer body\n"
    assert parsed.title == "from b"
    assert parsed.meta == {"k": "b", "only_a": "1"}
    assert set(merged.conflicts) == {"title", "meta.k"}


def test_an_unparsable_manifest_is_replaced_by_the_other_side_never_marked():
    good = version(BASE + b"a\n", title="kept")
    broken = SourceVersion(b"id: [not: valid\n", BASE + b"b\n", "txt")
    for ours, theirs in ((good, broken), (broken, good)):
        merged = merge_source(version(BASE), ours, theirs, SID)
        parsed = SourceManifest.from_yaml(merged.manifest)
        assert parsed.title == "kept" and merged.body == BASE + b"a\nb\n"
        assert parsed.sha256 == describe(merged.body)["sha256"]
        assert not any(m in merged.manifest for m in MARKERS)
    with pytest.raises(MergeError):
        merge_source(version(BASE), broken, SourceVersion(b"junk\n", b"x\n", "txt"), SID)


def test_different_extensions_are_picked_the_same_way_from_either_side():
    ours = SourceVersion(manifest(b"a\n"), b"a\n", "md")
    theirs = SourceVersion(manifest(b"b\n"), b"b\n", "txt")
    one, two = (
        merge_source(SourceVersion(), ours, theirs, SID),
        merge_source(SourceVersion(), theirs, ours, SID),
    )
    assert (one.ext, one.body, one.manifest) == (two.ext, two.body, two.manifest)


def test_the_manifest_driver_path_gives_the_same_manifest_as_sync():
    base, ours, theirs = (
        version(BASE),
        version(BASE + b"a\n", updated_at=2000),
        version(BASE + b"b\n", updated_at=3000, title="t"),
    )
    bodies = {hashlib.sha256(v.body).hexdigest(): v.body for v in (base, ours, theirs)}
    by_sync = merge_source(base, ours, theirs, SID).manifest
    by_driver = merge_manifest_files(
        base.manifest, ours.manifest, theirs.manifest, SID, lambda m: bodies.get(m.sha256)
    )
    assert by_driver == by_sync
    with pytest.raises(MergeError):
        merge_manifest_files(base.manifest, ours.manifest, theirs.manifest, SID, lambda m: None)


# ---------------------------------------------------------------------------- properties

line = st.text(alphabet="ab: \u00e9", max_size=6).map(lambda s: s.encode())
text_body = st.lists(line, max_size=6).map(lambda ls: b"\n".join(ls))
maybe_body = st.one_of(st.none(), text_body)


@settings(max_examples=300, deadline=None)
@given(maybe_body, maybe_body, maybe_body)
def test_merging_bodies_is_symmetric(base, ours, theirs):
    try:
        one = merge_bodies(base, ours, theirs).body
    except MergeError:
        with pytest.raises(MergeError):
            merge_bodies(base, theirs, ours)
        return
    assert one == merge_bodies(base, theirs, ours).body


@settings(max_examples=200, deadline=None)
@given(maybe_body, text_body, st.integers(0, 4000), st.one_of(st.none(), st.sampled_from("xy")))
def test_merging_a_version_with_itself_gives_it_back(base, body, at, title):
    same = version(body, updated_at=at, title=title)
    old = version(base) if base is not None else SourceVersion()
    merged = merge_source(old, same, same, SID)
    assert (merged.manifest, merged.body, merged.ext) == (same.manifest, same.body, same.ext)
    assert merge_bodies(base, body, body).body == body


@settings(max_examples=300, deadline=None)
@given(text_body, text_body, text_body)
def test_two_appends_keep_every_base_line_and_both_tails(base, tail_a, tail_b):
    base += b"\n"
    merged = merge_bodies(base, base + tail_a, base + tail_b)
    body = merged.body
    assert body is not None and body.startswith(base)
    assert merge_bodies(base, base + tail_b, base + tail_a).body == body
    n = count_lines(base)
    assert lines_of(body, 1, n) == lines_of(base, 1, n)
    rest = body[len(base) :]
    if tail_a.startswith(tail_b) or tail_b.startswith(tail_a):
        assert rest == max(tail_a, tail_b, key=len)  # nothing appended twice
        return
    # Each tail's lines are all there, in their order; lines both begin with appear once.
    for tail in (tail_a, tail_b):
        assert _subsequence(_lines(tail), _lines(rest))
    assert count_lines(rest) <= count_lines(tail_a) + count_lines(tail_b)


def _lines(data: bytes) -> list[bytes]:
    lines = data.split(b"\n")
    return lines[:-1] if data.endswith(b"\n") else lines


def _subsequence(small: list[bytes], big: list[bytes]) -> bool:
    items = iter(big)
    return all(any(x == y for y in items) for x in small)


@settings(max_examples=200, deadline=None)
@given(
    text_body,
    text_body,
    text_body,
    st.integers(0, 3),
    st.integers(0, 3),
    st.one_of(st.none(), st.sampled_from(["p", "q"])),
    st.one_of(st.none(), st.sampled_from(["p", "r"])),
)
def test_merging_sources_is_symmetric_byte_for_byte(base, a, b, at_a, at_b, title_a, title_b):
    ours = version(a, updated_at=at_a, title=title_a)
    theirs = version(b, updated_at=at_b, title=title_b)
    one = merge_source(version(base), ours, theirs, SID)
    two = merge_source(version(base), theirs, ours, SID)
    assert (one.manifest, one.body, one.ext) == (two.manifest, two.body, two.ext)
    parsed = SourceManifest.from_yaml(one.manifest)
    assert parsed.sha256 == describe(one.body)["sha256"]


# ---------------------------------------------------------------------------- between clones

TAIL_A = b"User: written on host a\n"
TAIL_B = b"User: written on host b\n"
TAIL_C = b"User: written on host c\n"


class Host:
    """One clone of a shared bare remote, writing source files as a user (or ingest) would."""

    def __init__(self, path: Path):
        self.path = path
        self.store = Store.open(str(path), actor="api")

    def sync(self):
        return self.store.sync()

    def write_source(self, body: bytes, message: str = "ingest", **fields) -> None:
        (self.path / body_path(SID, "txt")).parent.mkdir(parents=True, exist_ok=True)
        (self.path / body_path(SID, "txt")).write_bytes(body)
        (self.path / manifest_path(SID)).write_bytes(manifest(body, **fields))
        git(self.path, "add", "sources")
        git(self.path, "commit", "-q", "-m", message)

    def body(self) -> bytes:
        return (self.path / body_path(SID, "txt")).read_bytes()

    def sources(self) -> dict[str, bytes]:
        root = self.path / "sources"
        return {
            p.relative_to(self.path).as_posix(): p.read_bytes()
            for p in sorted(root.rglob("*"))
            if p.is_file()
        }

    def last_message(self) -> str:
        return git(self.path, "log", "-1", "--format=%B")


def make_remote(root: Path) -> Path:
    remote = root / "remote.git"
    pygit2.init_repository(str(remote), bare=True, initial_head="main")
    return remote


def first_host(root: Path, remote: Path, with_source: bool = True) -> Host:
    path = root / "a"
    init_repo(path)
    Store.init(str(path)).close()
    git(path, "remote", "add", "origin", str(remote))
    host = Host(path)
    if with_source:
        host.write_source(BASE)
    host.sync()
    return host


def clone_host(root: Path, remote: Path, name: str) -> Host:
    git(root, "clone", "-q", str(remote), name)
    Store.init(str(root / name)).close()
    return Host(root / name)


def hosts(tmp_path: Path, name: str, count: int = 2, with_source: bool = True) -> list[Host]:
    root = tmp_path / name
    root.mkdir()
    remote = make_remote(root)
    made = [first_host(root, remote, with_source)]
    made.extend(clone_host(root, remote, "bcd"[i]) for i in range(count - 1))
    return made


def assert_valid_and_clean(*hosts: Host) -> None:
    for host in hosts:
        assert git(host.path, "status", "--porcelain") == ""
        for path, data in host.sources().items():
            assert not any(m in data for m in MARKERS), path
        assert source_problems(str(host.path), SID) == []


def test_concurrent_appends_end_byte_identical_whichever_host_merges_first(tmp_path):
    results = []
    for order in ("ab", "ba"):
        a, b = hosts(tmp_path, order)
        a.write_source(BASE + TAIL_A, "append a", updated_at=2000)
        b.write_source(BASE + TAIL_B, "append b", updated_at=3000)
        first, second = (a, b) if order == "ab" else (b, a)
        first.sync()
        report = second.sync()
        assert first.sync().fast_forward
        assert a.sources() == b.sources()
        assert_valid_and_clean(a, b)
        assert [s.id for s in report.merged_sources] == [SID]
        trailers = parse_trailers(second.last_message())
        assert trailers["Lantern-Source"] == [f"{SID} (appended on both sides)"]
        results.append(a.sources())
    assert results[0] == results[1]
    body = results[0][body_path(SID, "txt")]
    n = count_lines(BASE)
    assert lines_of(body, 1, n) == BASE
    assert body.count(TAIL_A) == 1 and body.count(TAIL_B) == 1
    parsed = SourceManifest.from_yaml(results[0][manifest_path(SID)])
    assert (parsed.updated_at, parsed.lines) == (3000, n + 2)


def test_three_clones_appending_at_once_converge_with_every_line_once(tmp_path):
    a, b, c = hosts(tmp_path, "three", 3)
    for host, tail, at in ((a, TAIL_A, 2000), (b, TAIL_B, 2100), (c, TAIL_C, 2200)):
        host.write_source(BASE + tail, "append", updated_at=at)
    for host in (a, b, c, a, b):
        host.sync()
    assert a.sources() == b.sources() == c.sources()
    assert_valid_and_clean(a, b, c)
    body = a.body()
    assert body.startswith(BASE)
    assert all(body.count(tail) == 1 for tail in (TAIL_A, TAIL_B, TAIL_C))
    assert count_lines(body) == count_lines(BASE) + 3


def test_two_re_ingests_keep_the_same_version_on_both_hosts_and_list_the_other(tmp_path):
    short, longer = b"re-ingested on a\n", b"re-ingested on b, with more text\n"
    results = []
    for order in ("ab", "ba"):
        a, b = hosts(tmp_path, "re" + order)
        a.write_source(short, "re-ingest a", updated_at=5000, title="from a")
        b.write_source(longer, "re-ingest b", updated_at=4000, title="from b")
        first, second = (a, b) if order == "ab" else (b, a)
        first.sync()
        second.sync()
        first.sync()
        assert a.sources() == b.sources()
        assert_valid_and_clean(a, b)
        assert a.body() == longer
        [listed] = parse_trailers(second.last_message())["Lantern-Source"]
        other = short  # the version not kept is a's, whichever host merged
        blob = str(pygit2.hash(other))[:12]
        other_ref = f"source:{SID}@{blob}"
        assert listed == f"{SID} (title, re-ingested on both sides; other version {other_ref})"
        for host in (a, b):
            assert git(host.path, "cat-file", "-p", blob).encode() == other
        results.append(a.sources())
    assert results[0] == results[1]
    assert SourceManifest.from_yaml(results[0][manifest_path(SID)]).title == "from b"


def test_removed_on_one_host_and_appended_on_the_other_keeps_the_append(tmp_path):
    a, b = hosts(tmp_path, "rm")
    git(a.path, "rm", "-q", "-r", "sources")
    git(a.path, "commit", "-q", "-m", "remove the source")
    b.write_source(BASE + TAIL_B, "append b", updated_at=2000)
    a.sync()
    result = lantern("sync", "--json", "--store", str(b.path))
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["merged_sources"] == [
        {"id": SID, "how": "kept", "fields": [], "other": None, "notes": ["removed remote; kept"]}
    ]
    a.sync()
    assert a.sources() == b.sources()
    assert a.body() == BASE + TAIL_B
    assert_valid_and_clean(a, b)
    assert parse_trailers(b.last_message())["Lantern-Source"] == [f"{SID} (removed remote; kept)"]


@pytest.mark.parametrize("how", ["--no-rebase", "--rebase"])
def test_plain_git_pull_merges_sources_through_the_driver_without_markers(tmp_path, how):
    a, b = hosts(tmp_path, "pull" + how)
    a.write_source(BASE + TAIL_A, "append a", updated_at=2000)
    b.write_source(BASE + TAIL_B, "append b", updated_at=3000, title="titled on b")
    a.sync()
    assert (
        git(b.path, "check-attr", "merge", "--", body_path(SID, "txt"))
        .strip()
        .endswith("merge: lantern")
    )
    pulled = git(b.path, "pull", "-q", how, "--no-edit", "origin", "main")
    assert "CONFLICT" not in pulled
    assert_valid_and_clean(b)
    assert b.body() == BASE + TAIL_A + TAIL_B
    parsed = load_source(str(b.path), SID).manifest
    assert (parsed.title, parsed.updated_at) == ("titled on b", 3000)
    # What lantern sync would have written, byte for byte.
    expected = merge_source(
        version(BASE),
        version(BASE + TAIL_B, updated_at=3000, title="titled on b"),
        version(BASE + TAIL_A, updated_at=2000),
        SID,
    )
    assert b.sources() == {
        body_path(SID, "txt"): expected.body,
        manifest_path(SID): expected.manifest,
    }
    b.sync()
    a.sync()
    assert a.sources() == b.sources()


def test_an_untracked_source_file_blocks_sync_as_an_untracked_record_does(tmp_path):
    a, b = hosts(tmp_path, "untracked")
    a.write_source(BASE + TAIL_A, "append a", updated_at=2000)
    a.sync()
    stray = b.path / body_path(SID, "md")
    stray.write_bytes(b"an uncommitted second body\n")
    head = git(b.path, "rev-parse", "HEAD")
    with pytest.raises(UncommittedChanges, match=body_path(SID, "md")):
        b.sync()
    assert git(b.path, "rev-parse", "HEAD") == head
    assert stray.read_bytes() == b"an uncommitted second body\n"


def test_plain_git_pull_of_two_re_ingests_keeps_the_rule_s_version(tmp_path):
    a, b = hosts(tmp_path, "pull-re")
    a.write_source(b"re-ingested on a, the longer one\n", "re-ingest a", updated_at=2000)
    b.write_source(b"re-ingested on b\n", "re-ingest b", updated_at=3000)
    a.sync()
    git(b.path, "pull", "-q", "--no-rebase", "--no-edit", "origin", "main")
    assert_valid_and_clean(b)
    assert b.body() == b"re-ingested on a, the longer one\n"
    assert load_source(str(b.path), SID).manifest.updated_at == 3000


def test_plain_git_pull_of_an_append_and_a_title_edit_keeps_both(tmp_path):
    a, b = hosts(tmp_path, "pull-title")
    a.write_source(BASE + TAIL_A, "append a", updated_at=2000)
    b.write_source(BASE, "retitle b", updated_at=1500, title="named on b")
    a.sync()
    git(b.path, "pull", "-q", "--no-rebase", "--no-edit", "origin", "main")
    assert_valid_and_clean(b)
    assert b.body() == BASE + TAIL_A
    parsed = load_source(str(b.path), SID).manifest
    assert (parsed.title, parsed.updated_at, parsed.lines) == ("named on b", 2000, 3)


def test_the_same_uri_added_on_two_hosts_merges_alike_by_sync_and_by_git_pull(tmp_path):
    results = {}
    for how in ("sync", "pull"):
        a, b = hosts(tmp_path, "add-" + how, with_source=False)
        a.write_source(b"added on a\n", "ingest a", updated_at=2000, title="a")
        b.write_source(b"added on b, longer\n", "ingest b", updated_at=1000, title="b")
        a.sync()
        if how == "sync":
            b.sync()
        else:
            git(b.path, "pull", "-q", "--no-rebase", "--no-edit", "origin", "main")
        assert_valid_and_clean(b)
        results[how] = b.sources()
    assert results["sync"] == results["pull"]
    assert results["sync"][body_path(SID, "txt")] == b"added on b, longer\n"
    parsed = SourceManifest.from_yaml(results["sync"][manifest_path(SID)])
    assert (parsed.title, parsed.updated_at) == ("b", 2000)


def test_the_manifest_driver_leaves_the_file_alone_when_a_body_cannot_be_found(tmp_path):
    repo = tmp_path / "repo"
    init_repo(repo)
    files = {
        "base": manifest(BASE),
        "ours": manifest(BASE + TAIL_A),
        "theirs": manifest(BASE + TAIL_B),
    }
    for name, data in files.items():
        (tmp_path / name).write_bytes(data)
    result = subprocess.run(
        [sys.executable, "-m", "lantern_git", "merge-file"]
        + [str(tmp_path / n) for n in files]
        + [manifest_path(SID)],
        cwd=repo,
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 1
    assert "not in the repository" in result.stderr
    assert (tmp_path / "ours").read_bytes() == files["ours"]


def test_a_body_is_found_by_its_sha256_even_outside_every_commit(tmp_path):
    repo = tmp_path / "repo"
    init_repo(repo)
    body = BASE + TAIL_A
    (tmp_path / "loose").write_bytes(body)
    git(repo, "hash-object", "-w", str(tmp_path / "loose"))
    sha = hashlib.sha256(body).hexdigest()
    assert find_source_body(str(repo), SID, len(body), sha, environ={}) == body
    assert find_source_body(str(repo), SID, len(body), "0" * 64, environ={}) is None


def test_init_routes_sources_to_the_driver_and_adds_the_route_to_an_older_store(tmp_path):
    path = tmp_path / "old"
    init_repo(path)
    Store.init(str(path)).close()
    attributes = (path / ".gitattributes").read_text().splitlines()
    assert "sources/** merge=lantern" in attributes
    (path / ".gitattributes").write_text("memory/**/*.md merge=lantern\n")
    git(path, "commit", "-q", "-am", "a store from before sources")
    route = git(path, "check-attr", "merge", "--", manifest_path(SID))
    assert route.strip().endswith("unspecified")
    Store.init(str(path)).close()
    route = git(path, "check-attr", "merge", "--", manifest_path(SID))
    assert route.strip().endswith("merge: lantern")
    assert git(path, "status", "--porcelain") == ""


@settings(max_examples=200, deadline=None)
@given(
    text_body,
    text_body,
    text_body,
    st.integers(0, 3),
    st.integers(0, 3),
    st.one_of(st.none(), st.sampled_from(["p", "q"])),
)
def test_the_manifest_driver_writes_what_sync_writes(base, a, b, at_a, at_b, title):
    """The driver sees manifests only and finds the bodies; sync sees both: same bytes."""
    versions = [
        version(base),
        version(a, updated_at=at_a, title=title),
        version(b, updated_at=at_b),
    ]
    bodies = {hashlib.sha256(v.body).hexdigest(): v.body for v in versions}
    by_sync = merge_source(*versions, SID)
    by_driver = merge_manifest_files(
        *(v.manifest for v in versions), SID, lambda m: bodies.get(m.sha256)
    )
    assert by_driver == by_sync.manifest
    assert merge_bodies(base, a, b).body == by_sync.body


@settings(max_examples=200, deadline=None)
@given(text_body, text_body, text_body)
def test_the_manifest_driver_agrees_with_sync_on_appends(base, tail_a, tail_b):
    base += b"\n"
    versions = [version(base), version(base + tail_a, updated_at=7), version(base + tail_b)]
    bodies = {hashlib.sha256(v.body).hexdigest(): v.body for v in versions}
    by_driver = merge_manifest_files(
        *(v.manifest for v in versions), SID, lambda m: bodies.get(m.sha256)
    )
    assert by_driver == merge_source(*versions, SID).manifest


def test_criss_cross_appends_merge_alike_by_sync_and_by_git(tmp_path):
    """Two merge bases: sync's virtual base and git's (through the driver) give one result."""
    a, b = hosts(tmp_path, "criss")
    git(a.path, "remote", "add", "peer", str(b.path))
    git(b.path, "remote", "add", "peer", str(a.path))
    a.write_source(BASE + TAIL_A, "append a", updated_at=2000)
    b.write_source(BASE + TAIL_B, "append b", updated_at=2000)
    for host in (a, b):
        git(host.path, "fetch", "-q", "peer")
    for host in (a, b):
        git(host.path, "merge", "-q", "--no-edit", "peer/main")
    assert a.body() == b.body() == BASE + TAIL_A + TAIL_B
    a.write_source(a.body() + b"User: later on a\n", "append a again", updated_at=3000)
    b.write_source(b.body() + b"User: later on b\n", "append b again", updated_at=3100)
    git(b.path, "push", "-q", "origin", "main")
    twin = tmp_path / "criss" / "twin"
    git(tmp_path / "criss", "clone", "-q", str(a.path), "twin")
    Store.init(str(twin)).close()
    git(twin, "fetch", "-q", str(b.path), "main")
    assert len(git(twin, "merge-base", "--all", "HEAD", "FETCH_HEAD").split()) == 2
    git(twin, "merge", "-q", "--no-edit", "FETCH_HEAD")
    a.sync()
    assert a.body() == BASE + TAIL_A + TAIL_B + b"User: later on a\nUser: later on b\n"
    assert a.sources() == Host(twin).sources()
    assert_valid_and_clean(a, Host(twin))
