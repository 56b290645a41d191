"""Edges of the evidence inputs found under load: many references into one body, a symlink on
the command line, the size a too-large refusal names, what counts as empty, and the argument
a ``source show`` error names. Real stores in temp folders; the CLI in a subprocess where the
exit code or the message is the behaviour; the MCP server through the SDK's stdio client.
"""

from __future__ import annotations

import itertools
import json
import os
import re
import shutil
from pathlib import Path

import anyio
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from mcp import Client, StdioServerParameters
from support.cli import lantern
from support.mcp import fail, ok, run, server_params
from support.stores import git, snapshot

from lantern_git.errors import InvalidInput, ValidationError
from lantern_git.evidence.sources import SourceInput
from lantern_git.mcp.server import ALL_TOOLS
from lantern_git.model.source import line_spans

# ---------------------------------------------------------------------------- verify's memory


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=40).map(lambda b: bytes(b"ab\n"[x % 3] for x in b)))
def test_line_spans_cut_a_body_into_its_lines(data):
    # A line is its text and its newline; a last line without one still counts (count_lines).
    lines = re.findall(rb"[^\n]*\n|[^\n]+\Z", data)
    spans = line_spans(data)
    assert len(spans) == len(lines) + 1 and spans[0] == 0 and spans[-1] == len(data)
    assert [data[a:b] for a, b in itertools.pairwise(spans)] == lines


def _source(store, text: str, uri: str = "note:edges") -> str:
    [result] = store.sources.add([SourceInput(text.encode(), "n.txt", uri=uri)])
    return result.manifest.id


def _moved(store, cited: str, later: str, ref_lines: str) -> tuple[int, int] | None:
    """Where verify says the text of ``ref_lines`` in ``cited`` went in ``later``."""
    source_id = _source(store, cited)
    record = store.add("cites", kind="fact", source_refs=[f"source:{source_id}#{ref_lines}"])
    _source(store, later)
    [problem] = store.sources.verify().problems
    assert problem.record_id == record.id and problem.problem == "drifted"
    return problem.moved_to


def test_drifted_text_is_found_at_its_first_whole_line_place(store):
    # "x" is on three lines, "y" on two: the block x,y is at lines 3-4 (and again at 5-6).
    assert _moved(store, "h\nx\ny\nz\n", "x\nq\nx\ny\nx\ny\n", "L2-L3") == (3, 4)


def test_drifted_text_is_found_past_places_that_do_not_fit(store):
    # "y" (rarer than "x") first stands on line 1, where no "x" comes before it.
    assert _moved(store, "h\nx\ny\nz\n", "y\nq\nx\ny\nx\nx\n", "L2-L3") == (3, 4)


def test_drifted_text_is_not_found_inside_longer_lines(store):
    # "foo" inside "xfoo" and "foox" is no line of its own; line 4 is.
    assert _moved(store, "a\nfoo\n", "z\nxfoo\nfoox\nfoo\n", "L2") == (4, 4)


def test_a_block_whose_last_line_goes_on_in_the_current_version_is_not_there(store):
    # Lines 1-2 of the new version start with "a", "b" but its line 2 is "bb".
    assert _moved(store, "z\na\nb\n", "a\nbb\nb\n", "L2-L3") is None


def test_a_last_line_without_newline_is_found_where_it_ends_a_line(store):
    assert _moved(store, "a\nb", "c\nbb\nb\nd\n", "L2") == (3, 3)


def test_text_gone_from_the_current_version_has_no_place(store):
    # Every line of the block is still there, but never together and in order.
    assert _moved(store, "a\nb\nc\n", "c\nb\nx\nb\nx\nc\n", "L2-L3") is None


def test_a_blank_cited_line_is_drifted_with_no_place(store):
    assert _moved(store, "a\n\nb\n", "a\nb\n\n", "L2") is None


def test_many_references_into_one_body_each_get_their_own_answer(store):
    lines = [f"line {n} of the long transcript\n" for n in range(1, 2001)]
    source_id = _source(store, "".join(lines), uri="session:long")
    refs = [f"source:{source_id}#L{10 * i + 1}-L{10 * i + 3}" for i in range(199)]
    refs.append(f"source:{source_id}#L2000")  # the last line, which the new version rewrites
    record = store.add("cites the long transcript", kind="fact", source_refs=refs)
    assert store.sources.verify().checked == 200 and store.sources.verify().ok
    # Seven lines inserted at the top: every cited block moves down by seven.
    _source(store, "".join(["new\n"] * 7 + lines[:-1] + ["rewritten\n"]), uri="session:long")
    report = store.sources.verify()
    assert report.checked == 200
    got = {p.ref: (p.problem, p.moved_to) for p in report.problems}
    for i, ref in enumerate(record.source_refs[:199]):
        assert got[ref] == ("drifted", (10 * i + 8, 10 * i + 10)), ref
    assert got[record.source_refs[199]] == ("drifted", None)
    evidence = store.sources.evidence(record)
    assert evidence[5]["lines"] == [51, 53]
    assert evidence[5]["text"] == "".join(lines[50:53])


# ---------------------------------------------------------------------------- symlinks

SECRET = "the secret text of a file outside the store\n"


def _add(store_path, *args, input=None):
    return lantern("--store", str(store_path), "source", "add", *args, input=input)


def _error(result) -> dict:
    """The JSON error of a failed ``--json`` command (stdout stays empty)."""
    assert not result.stdout
    stderr = result.stderr if isinstance(result.stderr, str) else result.stderr.decode()
    return json.loads(stderr.strip().splitlines()[-1])["error"]


@pytest.fixture
def outside(tmp_path) -> Path:
    """A file outside the store, and a ``link.md`` beside it that points to it."""
    folder = tmp_path / "outside"
    folder.mkdir()
    secret = folder / "secret.txt"
    secret.write_text(SECRET)
    (folder / "link.md").symlink_to(secret)
    return folder


def test_a_symlink_on_the_command_line_is_refused_and_nothing_written(store_path, outside):
    link = outside / "link.md"
    good = outside / "good.md"
    good.write_text("a plain file\n")
    before = snapshot(store_path)
    text = _add(store_path, str(link), "--kind", "transcript")
    assert text.returncode == 2
    assert f"{link}: is a symbolic link to {outside / 'secret.txt'}" in text.stderr
    assert "--follow-symlinks" in text.stderr
    # With other paths in the same command: the whole ingest is refused.
    both = _add(store_path, str(good), str(link), "--json")
    assert both.returncode == 2 and _error(both)["code"] == "invalid_path"
    assert snapshot(store_path) == before


def test_follow_symlinks_reads_the_target_and_records_its_path(store_path, outside):
    # A chain: chain.md -> link.md -> secret.txt; the target is the end of it.
    chain = outside / "chain.md"
    chain.symlink_to(outside / "link.md")
    out = _add(store_path, str(chain), "--follow-symlinks", "--json")
    assert out.returncode == 0, out.stderr
    target = os.path.realpath(outside / "secret.txt")
    assert f"followed {chain} -> {target}" in out.stderr
    [manifest] = json.loads(out.stdout)
    assert manifest["uri"] == "file://" + target
    assert manifest["media_type"] == "text/plain"  # the target's .txt, not the link's .md
    body = store_path / "sources" / manifest["id"][:2] / f"{manifest['id']}.txt"
    assert body.read_text() == SECRET and not body.is_symlink()


def test_a_file_under_a_linked_folder_is_read_and_named_by_its_real_path(store_path, outside):
    # Only the last part of a path is checked: folders on the way resolve as usual.
    (outside / "notes").mkdir()
    (outside / "notes" / "a.md").write_text("a note\n")
    (outside / "via").symlink_to(outside / "notes", target_is_directory=True)
    out = _add(store_path, str(outside / "via" / "a.md"), "--json")
    assert out.returncode == 0, out.stderr
    assert "followed" not in out.stderr
    real = os.path.realpath(outside / "notes" / "a.md")
    assert json.loads(out.stdout)[0]["uri"] == "file://" + real


# ---------------------------------------------------------------------------- the MCP server

HIDDEN = "lantern-hidden-7c1f0e"  # in the name and the text of a file no tool may read


def _hostile_calls(tool, value: str) -> list[dict]:
    """Calls of ``tool`` with ``value`` in each of its free-text arguments in turn (and in its
    required ones, enums aside, which get their first value), so that a refusal of one
    argument never hides what another does with a path."""

    def fill(schema: dict) -> object | None:
        kind = schema.get("type")
        kinds = kind if isinstance(kind, list) else [kind]
        if "enum" in schema:
            return schema["enum"][0]
        if "string" in kinds:
            return value
        if kind == "array" and "enum" not in schema.get("items", {}):
            return [value]
        if kind == "object":
            return {"from": value}
        return None

    properties = tool.input_schema.get("properties", {})
    required = {name: fill(properties[name]) for name in tool.input_schema.get("required", ())}
    calls = [required] if required else [{}]
    for name, schema in properties.items():
        filled = fill(schema)
        if name not in required and filled is not None and "enum" not in schema:
            calls.append({**required, name: filled})
    return calls


def test_no_mcp_tool_reads_a_path_of_the_servers_host(store_path, tmp_path):
    """Every tool, called with a path of the server's host (as itself, as a file:// uri, as a
    source reference's place) in each of its free-text arguments: the server makes no file
    system call on that path (strace watches the server and every process it starts), and its
    text never reaches a reply or the store."""
    hidden = tmp_path / f"{HIDDEN}.md"
    hidden.write_text(f"{HIDDEN} contents\n")
    (tmp_path / f"{HIDDEN}-link.md").symlink_to(hidden)
    values = [str(hidden), hidden.as_uri(), str(tmp_path / f"{HIDDEN}-link.md"), f"{HIDDEN}.md"]
    trace = tmp_path / "server.strace"
    strace = shutil.which("strace") or "/usr/bin/strace"
    assert os.path.exists(strace), "strace is needed here; .ci/system-deps installs it"
    plain = server_params(store_path)
    params = StdioServerParameters(
        command=strace,
        args=["-f", "-qq", "-e", "trace=%file", "-o", str(trace), plain.command, *plain.args],
        env=plain.env,
        cwd=str(tmp_path),  # so that even a relative name would find the file
    )

    async def main():
        replies = []
        async with Client(params) as client:
            source = await ok(client, "lantern_source_add", text="decoy\n", uri=hidden.as_uri())
            record = await ok(client, "lantern_memory_add", content="a fact", kind="fact")
            replies.append(source)
            for value in values:
                # Real ids first, so that the path reaches what each tool does with a record
                # or a source that exists.
                calls = [
                    ("lantern_source_show", {"ref": source["id"], "at": value}),
                    ("lantern_source_search", {"query": "decoy", "source": [value]}),
                    ("lantern_memory_show", {"id": record["id"], "at": value}),
                    ("lantern_memory_update", {"id": record["id"], "add_source_refs": [value]}),
                ]
                calls += [
                    (tool.name, arguments)
                    for tool in ALL_TOOLS
                    for arguments in _hostile_calls(tool, value)
                ]
                for name, arguments in calls:
                    result = await client.call_tool(name, arguments)
                    replies.append(result.content[0].text)
        return replies

    replies = anyio.run(main)
    assert replies[0]["uri"] == hidden.as_uri() and replies[0]["lines"] == 1  # the decoy's
    calls = [line for line in trace.read_text().splitlines() if HIDDEN in line]
    # A value taken as a revision is looked up among the store's refs (.git/refs/<value>),
    # and one taken as an entity type among the store's entity folders (entities/<value>,
    # a checked folder name): the store's own names, not the host's files. Nothing else may
    # name the file.
    inside = (f'("{store_path}/.git/refs/', f'"{store_path}/entities/{HIDDEN}.md"')
    assert [line for line in calls if not any(place in line for place in inside)] == []
    assert not any(f"{HIDDEN} contents" in str(reply) for reply in replies)
    history = git(store_path, "log", "--all", "-p", "--format=%B")
    assert HIDDEN in history  # the path was stored as text where a tool takes text...
    assert f"{HIDDEN} contents" not in history  # ...but the file was never read


def test_the_mcp_tools_follow_the_same_rules_for_empty_text_and_references(store_path):
    async def body(client):
        source = await ok(client, "lantern_source_add", text="one\n", uri="note:mcp")
        blank = await fail(client, "lantern_source_append", id=source["id"], text=" \n\t\n")
        bad = await fail(client, "lantern_source_show", ref="source:nothex")
        lines = await fail(client, "lantern_source_show", ref=f"source:{source['id']}#L0")
        return blank, bad, lines

    blank, bad, lines = run(body)(store_path)
    assert blank == {
        "code": "invalid_input",
        "message": "nothing to append: the text is empty or only whitespace",
    }
    assert bad["code"] == "invalid_ref" and bad["message"].startswith("ref: 'source:nothex'")
    assert lines["code"] == "invalid_ref" and lines["message"].endswith("numbered from 1")


# ---------------------------------------------------------------------------- too large

LIMIT = 32 * 1024 * 1024  # the documented largest body, 32 MiB


def test_a_file_over_the_limit_is_refused_naming_its_real_size(store_path, tmp_path):
    huge = tmp_path / "huge.txt"
    with open(huge, "wb") as handle:
        handle.truncate(200_000_000)  # sparse: nothing is written, and nothing need be read
    before = snapshot(store_path)
    out = _add(store_path, str(huge), "--json")
    assert out.returncode == 2
    error = _error(out)
    assert error["code"] == "too_large"
    assert error["message"] == (
        f"{huge}: is 200000000 bytes; the largest source body is {LIMIT} bytes "
        "(split it into several sources)"
    )
    assert snapshot(store_path) == before


def test_stdin_over_the_limit_is_refused_as_larger_than_the_limit(store_path):
    before = snapshot(store_path)
    out = _add(store_path, "-", "--json", input=b"a" * (LIMIT + 4096))
    assert out.returncode == 2
    assert _error(out) == {
        "code": "too_large",
        "message": f"stdin: is larger than the largest source body, {LIMIT} bytes "
        "(split it into several sources)",
    }
    assert snapshot(store_path) == before


def test_text_over_the_limit_is_refused_naming_its_size(store, store_path):
    # Text given whole (the library, MCP) has a known size: it is named.
    before = snapshot(store_path)
    with pytest.raises(ValidationError) as err:
        store.sources.add([SourceInput(b"b" * (LIMIT + 7), "big.txt")])
    assert err.value.code == "too_large"
    assert err.value.message.startswith(f"big.txt: is {LIMIT + 7} bytes;")
    assert snapshot(store_path) == before


def test_check_names_a_hand_placed_body_over_the_limit_without_a_wrong_size(store, store_path):
    source_id = _source(store, "small\n")
    (store_path / "sources" / source_id[:2] / f"{source_id}.txt").write_bytes(b"c" * (LIMIT + 9))
    out = lantern("--store", str(store_path), "check")
    assert out.returncode == 4
    assert f"is larger than the largest source body, {LIMIT} bytes" in out.stdout + out.stderr
    assert str(LIMIT + 1) not in out.stdout + out.stderr


# ---------------------------------------------------------------------------- empty text

BLANK = ["", "\n", " ", "  \t\n", "\r\n\n", "\u3000\n"]


@pytest.mark.parametrize("text", BLANK, ids=repr)
def test_an_append_of_nothing_but_whitespace_is_refused_on_each_surface(store, store_path, text):
    source_id = _source(store, "one\n")
    before = snapshot(store_path)
    with pytest.raises(InvalidInput) as err:
        store.sources.append(source_id, text)
    assert err.value.message == "nothing to append: the text is empty or only whitespace"
    out = lantern("--store", str(store_path), "source", "append", source_id, "-", "--json",
                  input=text.encode())  # fmt: skip
    assert out.returncode == 2 and _error(out) == {
        "code": err.value.code,
        "message": err.value.message,
    }
    assert snapshot(store_path) == before


def test_an_append_with_one_visible_character_keeps_its_whitespace(store, store_path):
    source_id = _source(store, "one\n")
    store.sources.append(source_id, "\n  two\n")
    body = store_path / "sources" / source_id[:2] / f"{source_id}.txt"
    assert body.read_bytes() == b"one\n\n  two\n"


def test_an_ingest_stores_an_empty_or_blank_document_as_it_is(store_path, tmp_path):
    # source add keeps a document as it is (a file emptied since its last ingest is a new,
    # empty version): the empty rule is append's.
    (tmp_path / "empty.md").write_bytes(b"")
    (tmp_path / "blank.md").write_bytes(b"\n \n")
    out = _add(store_path, str(tmp_path / "empty.md"), str(tmp_path / "blank.md"), "--json")
    assert out.returncode == 0, out.stderr
    assert [(m["lines"], m["bytes"]) for m in json.loads(out.stdout)] == [(0, 0), (2, 3)]


# ---------------------------------------------------------------------------- source show


@pytest.mark.parametrize(
    "ref, reason",
    [
        ("source:nothex", "'source:nothex' is not a source reference"),
        ("source:0123456789abcdef#L0", "source:0123456789abcdef#L0: lines are numbered from 1"),
        (
            "source:0123456789abcdef#L3-L2",
            "source:0123456789abcdef#L3-L2: the range ends (L2) before it starts (L3)",
        ),
    ],
)
def test_source_show_names_its_argument_not_a_record_field(store_path, ref, reason):
    out = lantern("--store", str(store_path), "source", "show", ref, "--json")
    assert out.returncode == 2
    error = _error(out)
    assert error["code"] == "invalid_ref"
    assert error["message"].startswith(f"ref: {reason}")
    assert "source_refs" not in error["message"]


def test_a_record_s_bad_reference_still_names_source_refs(store, store_path):
    with pytest.raises(ValidationError) as err:
        store.add("x", kind="fact", source_refs=["source:nothex"])
    assert err.value.code == "invalid_field" and err.value.field == "source_refs"
    assert err.value.message.startswith("source_refs: 'source:nothex'")


def test_a_reference_where_a_source_id_is_taken_names_the_source_id(store_path):
    out = lantern("--store", str(store_path), "source", "remove", "source:nothex", "--json")
    assert out.returncode == 2
    assert _error(out) == {
        "code": "invalid_ref",
        "message": "source id: 'source:nothex' is not a source reference; expected "
        "source:<16 hex id>[@<blob, 7-40 hex>][#L<a>[-L<b>]]",
    }
