"""Every bad input of the contract's section 7: exit code, a message naming the field, no change."""

from __future__ import annotations

import json
import shutil

import pytest
from support.cli import invoke, lantern
from support.stores import colliding_contents, git, init_repo, snapshot

from lantern_git.model.record import compute_id
from lantern_git.store import Store

EXISTING = "An existing record."
EXISTING_ID = compute_id("fact", "global", EXISTING)


AMBIGUOUS = colliding_contents(stem="ambiguous ")
AMBIGUOUS_PREFIX = compute_id("fact", "global", AMBIGUOUS[0])[:4]


@pytest.fixture(scope="module")
def template(tmp_path_factory):
    """Built once: a store with one record and two records sharing a 4-digit id prefix."""
    path = tmp_path_factory.mktemp("template") / "store"
    init_repo(path)
    store = Store.init(str(path))
    for content in (EXISTING, *AMBIGUOUS):
        store.add(content, kind="fact")
    store.close()
    return path


@pytest.fixture
def populated(template, tmp_path, monkeypatch):
    """A private copy of the template store, selected through LANTERN_STORE."""
    path = tmp_path / "store"
    shutil.copytree(template, path, symlinks=True)
    monkeypatch.setenv("LANTERN_STORE", str(path))
    return path


ADD = ["memory", "add", "Valid content.", "--kind", "fact"]


def too_many_refs(option: str) -> list[str]:
    """One more source ref than a record may hold (200), each given with ``option``."""
    return [arg for n in range(201) for arg in (option, f"ref:{n}")]


# (args, stdin, exit code, error code, text the message must contain)
CASES = [
    # unknown options and commands
    ([*ADD, "--colour", "red"], None, 2, "usage_error", "--colour"),
    (["memory", "list", "--sort", "id"], None, 2, "usage_error", "--sort"),
    (["memory", "frobnicate"], None, 2, "usage_error", "frobnicate"),
    (["memory", "add", "--kind", "fact"], None, 2, "usage_error", "CONTENT"),
    # kind
    (["memory", "add", "x", "--kind", "opinion"], None, 2, "invalid_field", "kind: "),
    (["memory", "add", "x", "--kind", "FACT"], None, 2, "invalid_field", "kind: "),
    (["memory", "add", "x", "--kind", ""], None, 2, "invalid_field", "kind: "),
    (["memory", "list", "--kind", "opinion"], None, 2, "invalid_field", "kind: "),
    # scope
    ([*ADD, "--scope", "has space"], None, 2, "invalid_field", "scope: "),
    ([*ADD, "--scope", "user:*"], None, 2, "invalid_field", "scope: "),
    ([*ADD, "--scope", "nocolon"], None, 2, "invalid_field", "scope: "),
    ([*ADD, "--scope", ""], None, 2, "invalid_field", "scope: "),
    ([*ADD, "--scope", "user:a\tb"], None, 2, "invalid_field", "scope: "),
    ([*ADD, "--scope", "user:" + "a" * 300], None, 2, "invalid_field", "scope: "),
    (["memory", "list", "--scope", "has space"], None, 2, "invalid_field", "scope: "),
    # priority and urgency
    ([*ADD, "--priority", "101"], None, 2, "invalid_field", "priority: "),
    ([*ADD, "--priority", "-1"], None, 2, "invalid_field", "priority: "),
    ([*ADD, "--priority", "high"], None, 2, "usage_error", "priority"),
    ([*ADD, "--priority", "1.5"], None, 2, "usage_error", "priority"),
    ([*ADD, "--urgency", "1000"], None, 2, "invalid_field", "urgency: "),
    ([*ADD, "--urgency", "soon"], None, 2, "usage_error", "urgency"),
    (["memory", "list", "--min-priority", "101"], None, 2, "invalid_field", "min_priority"),
    (["memory", "list", "--min-urgency", "-5"], None, 2, "invalid_field", "min_urgency"),
    (["memory", "list", "--limit", "-1"], None, 2, "usage_error", "limit"),
    (["memory", "list", "--status", "deleted"], None, 2, "invalid_field", "status: "),
    # confidence
    ([*ADD, "--confidence", "1.5"], None, 2, "invalid_field", "confidence: "),
    ([*ADD, "--confidence", "-0.1"], None, 2, "invalid_field", "confidence: "),
    ([*ADD, "--confidence", "nan"], None, 2, "invalid_field", "confidence: "),
    ([*ADD, "--confidence", "sure"], None, 2, "usage_error", "confidence"),
    # expires-at
    ([*ADD, "--expires-at", "tomorrow"], None, 2, "invalid_time", "expires_at: "),
    ([*ADD, "--expires-at", "2026-13-45"], None, 2, "invalid_time", "expires_at: "),
    ([*ADD, "--expires-at", "+5y"], None, 2, "invalid_time", "expires_at: "),
    ([*ADD, "--expires-at", "99999999999999"], None, 2, "invalid_field", "expires_at: "),
    # source refs and author
    ([*ADD, "--source-ref", ""], None, 2, "invalid_field", "source_refs: "),
    ([*ADD, "--source-ref", "two\nlines"], None, 2, "invalid_field", "source_refs: "),
    ([*ADD, "--source-ref", "x" * 1001], None, 2, "invalid_field", "source_refs: "),
    (
        [*ADD, *too_many_refs("--source-ref")],
        None,
        2,
        "invalid_field",
        "source_refs: has more than 200",
    ),
    ([*ADD, "--author", "nobody"], None, 2, "invalid_author", "author: "),
    # content
    (
        ["memory", "add", "", "--kind", "fact"],
        None,
        2,
        "invalid_field",
        "content: must not be empty",
    ),
    (["memory", "add", " \n\t ", "--kind", "fact"], None, 2, "invalid_field", "content: "),
    (["memory", "add", "-", "--kind", "fact"], "", 2, "invalid_field", "content: "),
    (["memory", "add", "-", "--kind", "fact"], "nul\0byte", 2, "invalid_field", "content: "),
    (["memory", "add", "nul\0byte", "--kind", "fact"], None, 2, "invalid_field", "content: "),
    (["memory", "add", "-", "--kind", "fact"], b"\xff\xfe", 2, "invalid_field", "content: "),
    (["memory", "add", "-", "--kind", "fact"], "x" * 70_000, 2, "invalid_field", "content: "),
    # ids
    (["memory", "show", "xyz!"], None, 2, "invalid_id", "id: "),
    (["memory", "show", "0123456789abcdef0"], None, 2, "invalid_id", "id: "),
    (["memory", "show", "abc"], None, 2, "invalid_id", "at least 4"),
    (["memory", "archive", "abc"], None, 2, "invalid_id", "at least 4"),
    (["memory", "show", "0123456789abcdef"], None, 3, "not_found", "0123456789abcdef"),
    (["memory", "archive", "0123456789abcdef"], None, 3, "not_found", "0123456789abcdef"),
    (["memory", "restore", "ffffffff"], None, 3, "not_found", "ffffffff"),
    (["memory", "update", "ffffffff", "--priority", "1"], None, 3, "not_found", "ffffffff"),
    (["memory", "supersede", "ffffffff", "new"], None, 3, "not_found", "ffffffff"),
    (["memory", "show", AMBIGUOUS_PREFIX], None, 3, "ambiguous_id", AMBIGUOUS_PREFIX),
    (["memory", "archive", AMBIGUOUS_PREFIX], None, 3, "ambiguous_id", AMBIGUOUS_PREFIX),
    (["memory", "supersede", AMBIGUOUS_PREFIX, "new"], None, 3, "ambiguous_id", AMBIGUOUS_PREFIX),
    # update and supersede values
    (["memory", "update", EXISTING_ID], None, 2, "nothing_to_update", "nothing to update"),
    (
        ["memory", "update", EXISTING_ID, "--priority", "500"],
        None,
        2,
        "invalid_field",
        "priority: ",
    ),
    (
        ["memory", "update", EXISTING_ID, "--confidence", "2"],
        None,
        2,
        "invalid_field",
        "confidence",
    ),
    (
        ["memory", "update", EXISTING_ID, "--expires-at", "soon"],
        None,
        2,
        "invalid_time",
        "expires_at",
    ),
    (
        ["memory", "update", EXISTING_ID, "--add-source-ref", ""],
        None,
        2,
        "invalid_field",
        "source_refs",
    ),
    (
        ["memory", "update", EXISTING_ID, "--add-source-ref", "two\nlines"],
        None,
        2,
        "invalid_field",
        "source_refs: ",
    ),
    (
        ["memory", "update", EXISTING_ID, "--add-source-ref", "x" * 1001],
        None,
        2,
        "invalid_field",
        "source_refs: ",
    ),
    (
        ["memory", "update", EXISTING_ID, *too_many_refs("--add-source-ref")],
        None,
        2,
        "invalid_field",
        "source_refs: has more than 200",
    ),
    (
        ["memory", "supersede", EXISTING_ID, EXISTING],
        None,
        2,
        "identical_content",
        "same as the old",
    ),
    (["memory", "supersede", EXISTING_ID, ""], None, 2, "invalid_field", "content: "),
    (
        ["memory", "supersede", EXISTING_ID, "x", "--kind", "opinion"],
        None,
        2,
        "invalid_field",
        "kind",
    ),
    (
        ["memory", "supersede", EXISTING_ID, "x", "--scope", "a b"],
        None,
        2,
        "invalid_field",
        "scope",
    ),
    (["memory", "search", ""], None, 2, "invalid_query", "query"),
]


def _id(case) -> str:
    args, stdin = case[0], case[1]
    text = " ".join(a if len(a) < 20 else a[:17] + "..." for a in args[1:])
    if len(text) > 80:
        text = text[:77] + "..."
    return text + (" <stdin>" if stdin is not None else "")


@pytest.mark.parametrize(
    ("args", "stdin", "exit_code", "code", "needle"), CASES, ids=map(_id, CASES)
)
def test_bad_input_is_refused_and_changes_nothing(populated, args, stdin, exit_code, code, needle):
    before = snapshot(populated)

    text = invoke(*args, input=stdin)
    assert text.exit_code == exit_code, text.stderr
    assert text.stdout == ""
    assert text.stderr.startswith("Error: ")
    assert needle in text.stderr
    assert snapshot(populated) == before

    as_json = invoke(*args, "--json", input=stdin)
    assert as_json.exit_code == exit_code
    assert as_json.stdout == ""
    error = json.loads(as_json.stderr)["error"]
    assert error["code"] == code
    assert needle in error["message"]
    assert snapshot(populated) == before


def test_state_errors_change_nothing(populated):
    invoke("memory", "archive", EXISTING_ID)
    before = snapshot(populated)
    result = invoke("memory", "supersede", EXISTING_ID, "new", "--json")
    assert result.exit_code == 2
    assert json.loads(result.stderr)["error"]["code"] == "invalid_state"
    assert snapshot(populated) == before
    other = compute_id("fact", "global", AMBIGUOUS[0])
    result = invoke("memory", "supersede", other, EXISTING)
    assert result.exit_code == 2
    assert "already exists" in result.stderr
    assert snapshot(populated) == before


@pytest.mark.parametrize(
    ("args", "stdin", "exit_code", "needle"),
    [
        (["memory", "add", "x", "--kind", "fact", "--nope"], None, 2, "--nope"),
        (["memory", "add", "x", "--kind", "fact", "--priority", "101"], None, 2, "priority: "),
        (["memory", "add", "-", "--kind", "fact"], b"a\0b", 2, "content: "),
        (["memory", "show", "0123456789abcdef"], None, 3, "0123456789abcdef"),
        (["memory", "archive", AMBIGUOUS_PREFIX], None, 3, "ambiguous"),
    ],
)
def test_exit_codes_at_the_process_boundary(populated, args, stdin, exit_code, needle):
    before = snapshot(populated)
    result = lantern(*args, input=stdin)
    stderr = result.stderr.decode() if isinstance(result.stderr, bytes) else result.stderr
    assert result.returncode == exit_code
    assert result.stdout in ("", b"")
    assert stderr.startswith("Error: ") and needle in stderr
    assert snapshot(populated) == before


def test_source_ref_limits_are_inclusive_and_count_the_refs_already_held(populated):
    """200 refs of 1,000 characters are accepted; one more ref, added by update, is refused."""
    longest = [arg for n in range(200) for arg in ("--source-ref", f"{n:04}" + "x" * 996)]
    added = invoke(*ADD, *longest, "--json")
    assert added.exit_code == 0, added.stderr
    record = json.loads(added.stdout)
    assert len(record["source_refs"]) == 200 and {len(r) for r in record["source_refs"]} == {1000}
    before = snapshot(populated)
    result = invoke("memory", "update", record["id"], "--add-source-ref", "one:more", "--json")
    assert result.exit_code == 2
    error = json.loads(result.stderr)["error"]
    assert error["code"] == "invalid_field"
    assert "source_refs: has more than 200" in error["message"]
    assert snapshot(populated) == before


@pytest.mark.parametrize(
    "args",
    [
        ["memory", "archive", EXISTING_ID],
        ["memory", "restore", EXISTING_ID],
        ["memory", "update", EXISTING_ID, "--priority", "60"],
        ["memory", "supersede", EXISTING_ID, "A replacement record."],
    ],
    ids=lambda args: args[1],
)
def test_a_hand_broken_file_is_never_overwritten(populated, args):
    """A write to a record whose file does not parse is refused; the file stays as it was.

    The broken file is committed with plain git, so the refusal comes from the parse check, not
    from the check for uncommitted hand edits.
    """
    if args[1] == "restore":
        assert invoke("memory", "archive", EXISTING_ID).exit_code == 0
    path = populated / "memory" / EXISTING_ID[:2] / f"{EXISTING_ID}.md"
    broken = path.read_text().replace("priority: 50", "priority: [")
    path.write_text(broken)
    git(populated, "commit", "-qam", "break a record by hand")
    before = snapshot(populated)
    result = invoke(*args, "--json")
    assert result.exit_code == 1
    assert result.stdout == ""
    error = json.loads(result.stderr)["error"]
    assert error["code"] == "invalid_record"
    assert f"memory/{EXISTING_ID[:2]}/{EXISTING_ID}.md" in error["message"]
    assert snapshot(populated) == before
    assert path.read_text() == broken
