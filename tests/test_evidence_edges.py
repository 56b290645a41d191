"""Edges of the evidence inputs found under load: many references into one body, a symlink on
the command line, the size a too-large refusal names, what counts as empty, and the argument
a ``source show`` error names. Real stores in temp folders; the CLI in a subprocess where the
exit code or the message is the behaviour; the MCP server through the SDK's stdio client.
"""

from __future__ import annotations

from lantern_git.evidence import SourceInput

# ---------------------------------------------------------------------------- verify's memory


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
