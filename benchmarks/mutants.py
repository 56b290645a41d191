"""A small mutation check, run on demand (not in CI): plant one known bug at a time in a copy of
the tree and run the tests that must catch it.

These are the regressions once found, each named with the test that now holds it; whether the
tests guard the code as a whole is asked by a real mutation tool, ``benchmarks/mutation.py``
(cosmic-ray), on the modules that guard the store.

Each plant names a file, an exact snippet of it (which must occur exactly once, so a plant that
no longer applies after the code changed is reported rather than silently skipped), the
replacement, and the test node ids that must fail with it in. The real tree is never edited:
each plant gets its own copy of the tracked and untracked (not ignored) files in a temporary
folder, and the tests run there with that copy first on the import path, so subprocesses that
run ``python -m lantern_git`` use the planted code too.

    python benchmarks/mutants.py            # every plant
    python benchmarks/mutants.py -k verify  # the plants whose name contains "verify"
    python benchmarks/mutants.py --list

Prints caught/missed per plant and the totals; exits 1 when any plant was missed or did not
apply. A "caught" plant also passed the same tests without it (the baseline run first), so a
failure is the plant's doing.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class Plant:
    name: str
    file: str
    original: str
    planted: str
    tests: tuple[str, ...]


PLANTS = [
    # -- the eight bugs that once passed the whole suite
    Plant(
        "verify compares only the first line of a cited range",
        "lantern_git/evidence/sources.py",
        "found[0].body[current_spans[start - 1] : current_spans[end]], want",
        "found[0].body[current_spans[start - 1] : current_spans[start]],"
        " data[pin_spans[start - 1] : pin_spans[start]]",
        (
            "tests/library/test_evidence.py::test_verify_compares_every_line_of_a_range_not_only_the_first",
        ),
    ),
    Plant(
        "verify skips 'is this blob a version of this source'",
        "lantern_git/evidence/sources.py",
        "if pinned != current_blob and pinned not in self.sources.versions(ref.source_id):",
        "if False:",
        (
            "tests/library/test_evidence.py::"
            "test_verify_refuses_a_hand_written_pin_to_a_blob_of_another_source",
        ),
    ),
    Plant(
        "the self-approval check applies only to `review accept --all`",
        "lantern_git/review.py",
        "if actor in writers and name == branch.name:",
        "if everything and actor in writers and name == branch.name:",
        (
            "tests/library/test_review.py::test_a_writer_cannot_accept_its_own_changes_by_id_on_the_cli",
            "tests/library/test_review.py::test_a_writer_cannot_accept_its_own_changes_through_the_library",
        ),
    ),
    Plant(
        "record hybrid search drops the keyword side",
        "lantern_git/index/corpora.py",
        "return Matches(id_of, docs, scores, full)",
        "return Matches(id_of, [], [], full)",
        (
            "tests/library/test_hybrid_fusion.py::"
            "test_record_hybrid_search_ranks_by_the_fused_score_not_the_cosine_alone",
        ),
    ),
    Plant(
        "source hybrid search drops the keyword side",
        "lantern_git/index/corpora.py",
        "return Matches(keys, list(range(len(keys))), scores, full)",
        "return Matches([], [], [], full)",
        (
            "tests/library/test_hybrid_fusion.py::"
            "test_source_hybrid_search_ranks_chunks_by_the_fused_score_not_the_cosine_alone",
        ),
    ),
    Plant(
        "hybrid weighs every keyword hit by one constant 0.1, not by the words it holds",
        "lantern_git/index/ranking.py",
        "return round(held / words, 6) if words > 0 else 0.0",
        "return 0.1",
        (
            "tests/library/test_hybrid_fusion.py::"
            "test_a_hit_holding_more_of_the_question_outranks_nearer_turns_holding_only_its_name",
        ),
    ),
    Plant(
        "a word a hit holds lowers its hybrid score below its cosine",
        "lantern_git/index/ranking.py",
        "return round(max(counted, weight * share + semantic_weight(weight) * counted), 6)",
        "return round(weight * share + semantic_weight(weight) * counted, 6)",
        (
            "tests/library/test_hybrid_fusion.py::"
            "test_a_hit_holding_more_of_the_question_outranks_nearer_turns_holding_only_its_name",
            "tests/library/test_semantic.py::"
            "test_hybrid_is_a_weighted_sum_of_the_best_normalised_bm25_and_the_cosine",
        ),
    ),
    Plant(
        "a hybrid page's shortlist lets a word held lower a hit below its cosine",
        "lantern_git/index/ranking.py",
        "        fused[at] = np.maximum(\n"
        "            counted, weight * np.round(found, 6) / divisor"
        " + np.round(1.0 - weight, 6) * counted\n"
        "        )",
        "        fused[at] = weight * np.round(found, 6) / divisor"
        " + np.round(1.0 - weight, 6) * counted",
        (
            "tests/library/test_semantic.py::"
            "test_a_hybrid_page_breaks_equal_sums_by_the_semantic_order_then_keyword_only_hits_by_id",
        ),
    ),
    Plant(
        "a query word held only by its stem not counted as held",
        "lantern_git/index/bm25.py",
        "for term in word_terms(word):",
        "for term in word_terms(word)[:1]:",
        (
            "tests/library/test_hybrid_fusion.py::"
            "test_a_hit_holding_more_of_the_question_outranks_nearer_turns_holding_only_its_name",
        ),
    ),
    Plant(
        "the watcher's wait for pending events removed",
        "lantern_git/index/watch.py",
        "return seen.wait(BARRIER_TIMEOUT)",
        "return True",
        ("tests/library/test_watch.py::test_a_read_waits_for_events_queued_behind_a_slow_one",),
    ),
    Plant(
        "stop_watching does nothing",
        "lantern_git/index/search.py",
        "watcher, self._watcher = self._watcher, None\n        if watcher is not None:\n"
        "            watcher.stop()",
        "return",
        ("tests/library/test_watch.py::test_a_stopped_watcher_falls_back_to_the_sweep",),
    ),
    Plant(
        "the folder fsync after a rename removed",
        "lantern_git/git/repo.py",
        "    if sync:\n        _fsync_dir(folder)",
        "    if sync:\n        pass",
        (
            "tests/robustness/test_faults.py::"
            "test_a_write_fsyncs_its_objects_journal_record_file_and_branch_ref",
        ),
    ),
    # -- the weak spots: each of these once passed the tests named for it
    Plant(
        "a list of every record keeps the deleted documents of each segment",
        "lantern_git/index/search.py",
        "docs = filterfalse(deleted.__contains__, docs)",
        "pass",
        ("tests/library/test_ordering.py::test_list_pages_over_segments_with_deleted_documents",),
    ),
    Plant(
        "a minimum priority read from the order column lets one level below it through",
        "lantern_git/model/query.py",
        "return lambda order: (order >> _PRIORITY_AT) & _LEVEL <= top_p\n",
        "return lambda order: (order >> _PRIORITY_AT) & _LEVEL <= top_p + 1\n",
        (
            "tests/library/test_ordering.py::"
            "test_minimums_read_from_the_order_column_select_what_numeric_ranges_select",
        ),
    ),
    Plant(
        "kept postings found by term and place alone, whatever the segment",
        "lantern_git/index/whoosh_compat.py",
        "return (segment.segment_id(), fieldname, text, place, info.doc_frequency())",
        "return (fieldname, text, place, info.doc_frequency())",
        (
            "tests/library/test_search_index.py::"
            "test_search_in_one_process_finds_what_each_new_segment_and_rebuild_holds",
        ),
    ),
    Plant(
        "a history's walk kept by git folder alone, not by the branch's tip",
        "lantern_git/memory/history.py",
        "key = (os.path.realpath(repo.path), head)",
        "key = (os.path.realpath(repo.path), None)",
        (
            "tests/library/test_history.py::test_history_read_again_follows_the_branch_and_gives_fresh_lists",
        ),
    ),
    Plant(
        "a shallow clone's history walk kept, though deepening it changes the walk",
        "lantern_git/memory/history.py",
        'rewritten = repo.is_shallow or os.path.exists(os.path.join(repo.path, "info", "grafts"))',
        "rewritten = False",
        (
            "tests/library/test_history.py::"
            "test_history_in_a_shallow_clone_grows_when_the_clone_is_deepened",
        ),
    ),
    Plant(
        "recovery of a committed write forgets to put the files back",
        "lantern_git/git/repo.py",
        '                if "after" in change:\n'
        '                    _restore_file(git, path, change["after"], BLOB_MODE)\n'
        "                else:\n"
        '                    _restore_file(git, path, change["new"], change.get("mode"))\n',
        "                pass\n",
        (
            "tests/robustness/test_faults.py::"
            "test_a_crash_while_completing_a_committed_write_is_completed_by_the_next_command",
        ),
    ),
    Plant(
        "hybrid pages through search: the first page from the semantic ranking alone",
        "lantern_git/index/retrieval.py",
        "current, wanted, candidates, keys, matches.numbers, matches.scores, shares, end, floor",
        "current, wanted, candidates, keys, [], [], [], end, floor",
        (
            "tests/library/test_semantic.py::"
            "test_hybrid_pages_fuse_as_the_whole_rankings_do_with_journal_rows_in_id_order",
        ),
    ),
    # -- found when the record and chunk indexes took one base class
    Plant(
        "a kept searcher renewed with Searcher.refresh(), which keeps a replaced chunk",
        "lantern_git/index/derived.py",
        "            self._kept = None\n"
        "            kept.close()\n"
        "        self._kept = ix.searcher()",
        "            self._kept = kept.refresh()\n            return self._kept\n"
        "        self._kept = ix.searcher()",
        (
            "tests/library/test_chunk_index.py::test_a_long_lived_index_never_answers_with_a_replaced_chunk",
        ),
    ),
    Plant(
        "a damaged table of contents reaches the user as an internal error",
        "lantern_git/index/derived.py",
        "            except Exception as err:\n"
        '                raise NeedsRebuild(f"unreadable ({type(err).__name__})") from None\n'
        "            if not exists:",
        "            except KeyError as err:\n"
        '                raise NeedsRebuild(f"unreadable ({type(err).__name__})") from None\n'
        "            if not exists:",
        ("tests/robustness/test_faults.py::test_a_damaged_index_is_rebuilt_and_lists_correctly",),
    ),
]


def copy_tree(dest: Path) -> None:
    """The tracked and untracked (not ignored) files of the working tree, as they are now."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT,
        capture_output=True,
        check=True,
    ).stdout.split(b"\0")
    for raw in listed:
        if not raw:
            continue
        rel = os.fsdecode(raw)
        source = ROOT / rel
        if not source.is_file():  # deleted in the working tree, not yet in the index
            continue
        target = dest / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(source, target)


def run_tests(tree: Path, tests: tuple[str, ...]) -> tuple[bool, str]:
    """Whether every test passed, and pytest's summary line (each named test runs, so the
    summary says how many of them the plant failed)."""
    env = dict(os.environ, PYTHONPATH=str(tree), PYTHONDONTWRITEBYTECODE="1")
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *tests]
    result = subprocess.run(command, cwd=tree, env=env, capture_output=True, text=True)
    lines = result.stdout.strip().splitlines()
    return result.returncode == 0, lines[-1] if lines else result.stderr.strip()[-200:]


def check_import_path(tree: Path) -> None:
    """The copy, not the installed tree, is what the tests import."""
    env = dict(os.environ, PYTHONPATH=str(tree))
    found = subprocess.run(
        [sys.executable, "-c", "import lantern_git; print(lantern_git.__file__)"],
        cwd=tree,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    if not found.startswith(str(tree)):
        raise SystemExit(f"the copy is not first on the import path: lantern_git from {found}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("-k", default="", help="only the plants whose name contains this")
    parser.add_argument("--list", action="store_true", help="list the plants and stop")
    options = parser.parse_args()
    plants = [p for p in PLANTS if options.k.lower() in p.name.lower()]
    if options.list:
        for plant in plants:
            print(f"{plant.name}\n    {plant.file}\n    " + "\n    ".join(plant.tests))
        return 0
    caught = missed = broken = 0
    with tempfile.TemporaryDirectory(prefix="lantern-mutants-") as scratch:
        base = Path(scratch) / "baseline"
        copy_tree(base)
        check_import_path(base)
        every_test = tuple(dict.fromkeys(t for p in plants for t in p.tests))
        ok, summary = run_tests(base, every_test)
        print(f"baseline ({len(every_test)} tests): {'pass' if ok else 'FAIL'}  {summary}")
        if not ok:
            print("the tests fail without any plant: fix them first")
            return 1
        for number, plant in enumerate(plants, 1):
            tree = Path(scratch) / f"plant-{number}"
            copy_tree(tree)
            path = tree / plant.file
            text = path.read_text()
            if text.count(plant.original) != 1:
                found = text.count(plant.original)
                print(f"[{number}] NOT APPLIED  {plant.name}: the snippet occurs {found} times")
                broken += 1
                shutil.rmtree(tree)
                continue
            path.write_text(text.replace(plant.original, plant.planted))
            started = time.monotonic()
            passed, summary = run_tests(tree, plant.tests)
            took = time.monotonic() - started
            verdict = "missed" if passed else "caught"
            caught += not passed
            missed += passed
            print(
                f"[{number}] {verdict:6}  {plant.name}  "
                f"({len(plant.tests)} named; {summary}; {took:.0f} s)"
            )
            shutil.rmtree(tree)
    print(f"\n{caught} caught, {missed} missed, {broken} not applied, of {len(plants)} plants")
    return 0 if missed == 0 and broken == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
