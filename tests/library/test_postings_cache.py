"""The postings a process keeps per segment belong to one index: Whoosh names segments from
the ``random`` module, so two indexes built after the same seed share segment names."""

from __future__ import annotations

import random

from whoosh import index
from whoosh.fields import TEXT, Schema

from lantern_git.index import whoosh_compat


def _built(folder, text: str):
    folder.mkdir()
    random.seed(7)  # as a caller (or a test framework) that seeds before each build
    built = index.create_in(str(folder), Schema(content=TEXT()))
    writer = built.writer()
    writer.add_document(content=text)
    writer.commit()
    return built


def test_two_indexes_whose_segments_share_a_name_keep_their_own_postings(tmp_path):
    once = _built(tmp_path / "once", "apple")
    thrice = _built(tmp_path / "thrice", "apple apple apple")
    found = []
    for built in (once, thrice):
        with built.searcher() as searcher:
            (reader, _), *_ = searcher.reader().leaf_readers()
            found.append(
                (
                    reader.segment().segment_id(),
                    whoosh_compat.term_postings(reader, "content", "apple"),
                )
            )
    (first_name, first), (second_name, second) = found
    assert first_name == second_name  # the premise: the same names
    assert (list(first[0]), list(first[1])) == ([0], [1.0])
    assert (list(second[0]), list(second[1])) == ([0], [3.0])
