"""Retrieval quality against named peers: lantern's three modes, rank-bm25 and bm25s, one run.

    python benchmarks/retrieval.py                  # all three sets, every ranker, every
                                                    # installed embedder (e5: many minutes)
    python benchmarks/retrieval.py --embedders wordllama --sets recall,paraphrases
    python benchmarks/retrieval.py --sets conversations --rankers keyword,bm25okapi
    python benchmarks/retrieval.py --json           # the figures as JSON

Two sets, the same texts given to every ranker:

- ``recall``: the project's hand-labelled set (``benchmarks/recall/``, see ``recall.py``): an
  agent's memory of people, projects and rules; every query searches the whole store.
- ``conversations``: the generated conversational set (``benchmarks/conversations/``, see
  ``conversations.py``): one record per dialogue turn, each question searched within its
  conversation's scope (the peers get one index per conversation).

And one held out from every choice (``paraphrases.yaml``, see its header): 45 short paraphrase
pairs, each query searched among its target and four distractors sharing no word with it.

And one nobody here wrote, read from outside the repository when ``LANTERN_REALTALK`` names a
clone of github.com/danny911kr/REALTALK (its data carries no licence, so it is not copied
here): ``realtalk``, ten real messaging-app conversations of 21 days between people, one
record per turn (``speaker: text``), 679 questions (multi-hop, temporal, commonsense) with the
turns that answer them, each searched within its conversation (see ``realtalk()``). With it
set, ``--cv`` counts its ten conversations as ten more folds (``--calibrate`` keeps to the two
sets: four of its probe words, "yacht" among them, are in REALTALK's turns).

    LANTERN_REALTALK=~/src/REALTALK python benchmarks/retrieval.py --sets realtalk

Lantern's semantic and hybrid modes run once per installed embedder (``--embedders``: wordllama,
e5), keyword and the peers once.

Rankers: lantern ``keyword``, ``semantic`` and ``hybrid`` (``Store.search(mode=...)``, the
library as a user calls it; semantic and hybrid need the ``semantic`` extra), rank-bm25's
``BM25Okapi`` over lower-cased word tokens, and bm25s with its English stop words (the
``bench`` extra: ``pip install -e '.[bench]'``). Figures: R@k is the share of a question's
evidence found in its first k hits, averaged over questions; MRR the mean of 1/rank of the
first evidence hit within 10; ms/query the median wall time of one search (lantern: the whole
library call, warm).

Hybrid fuses by each embedder's rule (``lantern_git/index/ranking.py``: wordllama the idf share
held first, e5 the BM25 over a full match, any other the weight by the share of the query's
words each hit holds) and keeps the similarity floor. The floor was chosen by
leave-one-out cross-validation over eleven folds, each conversation of the conversational set
and the recall set as one more, with the constant keyword weight hybrid had then: ``--cv``
prints, for each held-out fold, the weight with the best R@5 on the other folds, the highest
floor whose R@10 there stays within half a point of no floor, and the R@5 they give on the
held-out fold; then each set's R@5 and R@10 at every floor under today's rule, and the floor
each fold would choose under it. ``--cv`` then tries fusion rules (``RULES``: constant weights,
reciprocal rank fusion, BM25 over the query's most, a higher weight for a confident keyword
hit, a weight by the question's coverage, lantern's weight by words held never below the
cosine and a power of it, that weight's sum alone, the cosine plus the words held, three tiers
by words held, a step weight by words held), each family's parameters chosen by the
same folds under one more condition: the other folds' lexical questions keep keyword's R@5.
It prints the folds' choices, each family's held-out R@5 by set and question type, and the
rule most folds chose on the whole sets (R@1, R@5, R@10, MRR).
``--calibrate`` prints the cosines that words in no record reach with the two sets' records,
then the rule in force for a query sharing no word with the records searched, as
``floor_rules.py --shipped`` measures and calibrates it (its folds add the tuning pairs).
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)

from lantern_git.index import ranking  # noqa: E402
from lantern_git.index.embedders import default_name  # noqa: E402
from lantern_git.model.record import Record  # noqa: E402
from lantern_git.store import Store  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
LANTERN = ("keyword", "semantic", "hybrid")
PEERS = ("bm25okapi", "bm25s")
RANKERS = (*LANTERN, *PEERS)
SETS = ("recall", "conversations")
# Printed, never tuned on: benchmarks/paraphrases.yaml (see its header)
HELD_OUT = ("paraphrases",)
# Real dialogue nobody here wrote, read from outside the repository when asked for by name
OUTSIDE = ("realtalk",)


def tuning_sets() -> tuple[str, ...]:
    """The sets ``--cv`` chooses by: the two of this repository, and REALTALK's ten
    conversations as ten more folds when ``LANTERN_REALTALK`` names it."""
    return (*SETS, *OUTSIDE) if os.environ.get("LANTERN_REALTALK") else SETS


EMBEDDERS = ("wordllama", "e5")
LIMIT = 10
NOW = 1_764_720_000  # fixed, so that record ids never vary
TOKEN = re.compile(r"\w+")


def load(path: str) -> list[dict]:
    with open(path, encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def dataset(name: str) -> tuple[list[dict], list[dict]]:
    """(documents, questions) in one shape: documents ``key``, ``kind``, ``scope``,
    ``content``; questions ``id``, ``text``, ``targets``, ``type``, ``scope`` (None: all)."""
    if name == "paraphrases":
        return paraphrases()
    if name == "realtalk":
        return realtalk()
    if name == "recall":
        docs = load(os.path.join(HERE, "recall", "records.jsonl"))
        questions = [
            {"id": q["id"], "text": q["query"], "targets": q["targets"], "type": q["type"]}
            | {"scope": None}
            for q in load(os.path.join(HERE, "recall", "queries.jsonl"))
        ]
        return docs, questions
    docs = load(os.path.join(HERE, "conversations", "turns.jsonl"))
    questions = [
        {
            "id": q["id"],
            "text": q["question"],
            "targets": q["evidence"],
            "type": q["type"],
            "scope": q["scope"],
        }
        for q in load(os.path.join(HERE, "conversations", "questions.jsonl"))
    ]
    return docs, questions


def paraphrases() -> tuple[list[dict], list[dict]]:
    """The held-out paraphrase pairs (``paraphrases.yaml``) as a set: each pair's five records
    in a scope of their own (``pair:NN``), its query searched within it, its target the one
    answer."""
    import yaml

    with open(os.path.join(HERE, "paraphrases.yaml"), encoding="utf-8") as handle:
        pairs = yaml.safe_load(handle)["pairs"]
    docs, questions = [], []
    for n, pair in enumerate(pairs):
        scope = f"pair:{n:02d}"
        for m, content in enumerate([pair["target"], *pair["distractors"]]):
            docs.append({"key": f"{scope}/{m}", "kind": "fact", "scope": scope, "content": content})
        questions.append(
            {
                "id": scope,
                "text": pair["query"],
                "targets": [f"{scope}/0"],
                "type": "paraphrase",
                "scope": scope,
            }
        )
    return docs, questions


# REALTALK's question categories (its paper, arXiv 2502.13270, and its data's answers)
REALTALK_TYPES = {1: "multi-hop", 2: "temporal", 3: "commonsense"}


def realtalk() -> tuple[list[dict], list[dict]]:
    """REALTALK (Lee et al. 2025, github.com/danny911kr/REALTALK): ten real messaging-app
    conversations between people over 21 days, ~8,900 turns, 728 questions with the turns
    that answer them. Not in this repository (its data carries no licence): fetch it and name
    its folder with ``LANTERN_REALTALK``. Only its own ``data/Chat_*.json`` are read; the
    repository also holds a copy of another set (``data/locomo/``), which is never read.
    One record per turn, ``speaker: text``, each conversation its own scope; an evidence turn
    the data does not hold is dropped, and a question left with none."""
    import glob

    folder = os.environ.get("LANTERN_REALTALK")
    if not folder:
        raise SystemExit(
            "the realtalk set is not in this repository: set LANTERN_REALTALK to a clone of"
            " github.com/danny911kr/REALTALK"
        )
    paths = sorted(
        glob.glob(os.path.join(folder, "data", "Chat_*.json")),
        key=lambda path: int(os.path.basename(path).split("_")[1]),
    )
    if not paths:
        raise SystemExit(f"no data/Chat_*.json under {folder}")
    docs, questions = [], []
    for path in paths:
        with open(path, encoding="utf-8") as handle:
            chat = json.load(handle)
        number = int(os.path.basename(path).split("_")[1])
        scope = f"realtalk:{number:02d}"
        held = set()
        for key in sorted(
            (k for k in chat if re.fullmatch(r"session_\d+", k)), key=lambda k: int(k[8:])
        ):
            for turn in chat[key]:
                text = (turn.get("clean_text") or "").strip()
                if not text:
                    continue
                held.add(turn["dia_id"])
                docs.append(
                    {
                        "key": f"{scope}/{turn['dia_id']}",
                        "kind": "observation",
                        "scope": scope,
                        "content": f"{turn['speaker']}: {text}",
                    }
                )
        for n, qa in enumerate(chat["qa"]):
            targets = [f"{scope}/{e}" for e in qa.get("evidence", []) if e in held]
            if targets:
                questions.append(
                    {
                        "id": f"{scope}/q{n:03d}",
                        "text": qa["question"],
                        "targets": list(dict.fromkeys(targets)),
                        "type": REALTALK_TYPES.get(qa["category"], str(qa["category"])),
                        "scope": scope,
                    }
                )
    return docs, questions


def build_store(root: str, docs: list[dict]) -> tuple[Store, dict[str, str]]:
    """A store holding ``docs`` imported in one commit; the key of each record id."""
    keys = {}
    lines = []
    for doc in docs:
        record = Record.new(kind=doc["kind"], content=doc["content"], scope=doc["scope"], now=NOW)
        keys[record.id] = doc["key"]
        lines.append(json.dumps(record.to_dict()))
    store = Store.init(root, author="Retrieval <retrieval@example.com>")
    store.import_records(lines)
    return store, keys


# ---------------------------------------------------------------- rankers


def lantern_ranker(store: Store, keys: dict[str, str], mode: str) -> Callable | str:
    def run(question: dict) -> list[str]:
        scopes = (question["scope"],) if question["scope"] else ()
        hits = store.search(question["text"], mode=mode, scopes=scopes, limit=LIMIT)
        return [keys[h.record.id] for h in hits]

    try:
        run({"text": "availability probe", "scope": None})
    except Exception as exc:  # no semantic extra
        return f"n/a ({type(exc).__name__})"
    return run


def _by_scope(docs: list[dict]) -> dict[str | None, list[dict]]:
    groups: dict[str | None, list[dict]] = {None: docs}
    for doc in docs:
        groups.setdefault(doc["scope"], []).append(doc)
    return groups


def bm25okapi_ranker(docs: list[dict]) -> Callable | str:
    try:
        from rank_bm25 import BM25Okapi
    except ImportError:
        return "n/a (pip install -e '.[bench]')"

    def tokens(text: str) -> list[str]:
        return TOKEN.findall(text.lower())

    indexes = {
        scope: (BM25Okapi([tokens(d["content"]) for d in group]), [d["key"] for d in group])
        for scope, group in _by_scope(docs).items()
    }

    def run(question: dict) -> list[str]:
        bm25, keys = indexes[question["scope"]]
        scores = bm25.get_scores(tokens(question["text"]))
        # Only documents that hold a word of the question, as bm25s returns them: otherwise a
        # question matching nothing "finds" the first documents in file order.
        order = sorted((i for i in range(len(keys)) if scores[i] > 0), key=lambda i: -scores[i])
        return [keys[i] for i in order[:LIMIT]]

    return run


def bm25s_ranker(docs: list[dict]) -> Callable | str:
    try:
        import bm25s
    except ImportError:
        return "n/a (pip install -e '.[bench]')"
    logging.getLogger("bm25s").setLevel(logging.WARNING)
    indexes = {}
    for scope, group in _by_scope(docs).items():
        retriever = bm25s.BM25()
        corpus = bm25s.tokenize([d["content"] for d in group], stopwords="en", show_progress=False)
        retriever.index(corpus, show_progress=False)
        indexes[scope] = (retriever, [d["key"] for d in group])

    def run(question: dict) -> list[str]:
        retriever, keys = indexes[question["scope"]]
        query = bm25s.tokenize([question["text"]], stopwords="en", show_progress=False)
        if not query.vocab:
            return []
        k = min(LIMIT, len(keys))
        found, scores = retriever.retrieve(query, k=k, show_progress=False)
        return [keys[int(i)] for i, s in zip(found[0], scores[0]) if s > 0]

    return run


# ---------------------------------------------------------------- figures


def evaluate(run: Callable, questions: list[dict]) -> tuple[list[dict], float]:
    """Each question with the ranks of its targets; the median ms per question."""
    results, times = [], []
    for q in questions:
        start = time.perf_counter()
        order = run(q)
        times.append(time.perf_counter() - start)
        ranks = [order.index(t) + 1 if t in order else None for t in q["targets"]]
        results.append({**q, "ranks": ranks, "top": order[:3]})
    return results, statistics.median(times) * 1000


def figures(results: list[dict]) -> dict:
    n = len(results)
    if not n:
        return {"n": 0}

    def recall(q: dict, k: int) -> float:
        return sum(1 for r in q["ranks"] if r is not None and r <= k) / len(q["ranks"])

    def reciprocal(q: dict) -> float:
        found = [r for r in q["ranks"] if r is not None]
        return 1 / min(found) if found else 0.0

    out = {"n": n}
    for k in (1, 5, 10):
        out[f"R@{k}"] = sum(recall(q, k) for q in results) / n
    out["MRR"] = sum(reciprocal(q) for q in results) / n
    return out


def installed() -> list[str]:
    """The shipped embedders whose extra is installed here."""
    from lantern_git.index.embedders import available

    return [name for name in EMBEDDERS if available(name)]


def run_set(
    name: str, rankers: list[str], misses: bool = False, embedders: list[str] | None = None
) -> dict:
    """Every ranker over one set; lantern's semantic and hybrid once per embedder (named
    ``semantic/e5``; the first embedder's as plain ``semantic``, which is wordllama's by
    default)."""
    embedders = embedders or [embedder_name()]
    report = _run_set(name, rankers, misses, embedders[0])
    for embedder in embedders[1:]:
        by_vectors = [r for r in rankers if r in ("semantic", "hybrid")]
        if by_vectors:
            more = _run_set(name, by_vectors, misses, embedder)
            for ranker, entry in more["rankers"].items():
                report["rankers"][f"{ranker}/{embedder}"] = entry
    if len(embedders) > 1:
        for ranker in ("semantic", "hybrid"):
            if ranker in report["rankers"]:
                report["rankers"][f"{ranker}/{embedders[0]}"] = report["rankers"].pop(ranker)
    return report


def _run_set(name: str, rankers: list[str], misses: bool, embedder: str) -> dict:
    os.environ["LANTERN_EMBEDDER"] = embedder
    docs, questions = dataset(name)
    types = sorted({q["type"] for q in questions})
    report: dict = {
        "set": name,
        "documents": len(docs),
        "questions": len(questions),
        "types": {t: sum(1 for q in questions if q["type"] == t) for t in types},
        "rankers": {},
    }
    work = tempfile.mkdtemp(prefix="lantern-retrieval-")
    try:
        store, keys = build_store(os.path.join(work, "store"), docs)
        for ranker in rankers:
            if ranker in LANTERN:
                run = lantern_ranker(store, keys, ranker)
            elif ranker == "bm25okapi":
                run = bm25okapi_ranker(docs)
            else:
                run = bm25s_ranker(docs)
            if isinstance(run, str):
                report["rankers"][ranker] = {"unavailable": run}
                continue
            run(questions[0])  # warm: models, searchers
            results, ms = evaluate(run, questions)
            entry = {"ms": ms, "all": figures(results)}
            for t in types:
                entry[t] = figures([q for q in results if q["type"] == t])
            if misses:
                entry["misses"] = [
                    (q["id"], q["text"], q["ranks"], q["top"])
                    for q in results
                    if all(r is None or r > 5 for r in q["ranks"])
                ]
            report["rankers"][ranker] = entry
        store.close()
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return report


def table(report: dict) -> str:
    out = [
        f"{report['set']}: {report['documents']} records, {report['questions']} questions "
        f"({', '.join(f'{t} {c}' for t, c in report['types'].items())})",
        "",
        "| ranker | questions | R@1 | R@5 | R@10 | MRR | ms / query |",
        "|---|---|---|---|---|---|---|",
    ]
    names = {
        "keyword": "lantern keyword",
        "semantic": "lantern semantic",
        "hybrid": "lantern hybrid",
        "bm25okapi": "rank-bm25 BM25Okapi",
        "bm25s": "bm25s (English stop words)",
    }
    for ranker, entry in report["rankers"].items():
        mode, _, embedder = ranker.partition("/")
        name = names[mode] + (f" ({embedder})" if embedder else "")
        if "unavailable" in entry:
            out.append(f"| {name} | | {entry['unavailable']} | | | | |")
            continue
        for part in ("all", *report["types"]):
            f = entry[part]
            label = name if part == "all" else f"  {part}"
            ms = f"{entry['ms']:.1f}" if part == "all" else ""
            out.append(
                f"| {label} | {f['n']} | {f['R@1']:.3f} | {f['R@5']:.3f} | {f['R@10']:.3f} "
                f"| {f['MRR']:.3f} | {ms} |"
            )
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sets", default=",".join((*tuning_sets(), *HELD_OUT)))
    parser.add_argument("--rankers", default=",".join(RANKERS))
    parser.add_argument(
        "--embedders",
        default="installed",
        help="embedders whose semantic and hybrid modes are run (default: every one installed)",
    )
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--misses", action="store_true", help="list questions missed in top 5")
    parser.add_argument(
        "--cv", action="store_true", help="choose hybrid's weight and floor by cross-validation"
    )
    parser.add_argument(
        "--calibrate", action="store_true", help="the best cosine words in no record reach"
    )
    args = parser.parse_args(argv)
    if args.cv or args.calibrate:
        return tune(args.cv, args.calibrate)
    sets = [s for s in args.sets.split(",") if s]
    rankers = [r for r in args.rankers.split(",") if r]
    bad = [s for s in sets if s not in (*SETS, *HELD_OUT, *OUTSIDE)] + [
        r for r in rankers if r not in RANKERS
    ]
    if bad:
        parser.error(f"unknown: {', '.join(bad)}")
    embedders = installed() if args.embedders == "installed" else args.embedders.split(",")
    reports = [run_set(s, rankers, args.misses, embedders) for s in sets]
    if args.json:
        print(json.dumps(reports, indent=2))
        return 0
    print(
        "Hybrid fuses per embedder (wordllama: 0.1 x BM25 / best + 0.9 x cosine, the hits"
        " holding a quarter of the query words' idf first; e5: 0.1 x its BM25 over a full"
        " match + 0.9 x cosine), each"
        " embedder with its own floors, chosen by leave-one-out cross-validation, not fitted"
        " on these figures: the fusion over the conversations, the recall set and, when read,"
        " REALTALK's conversations (--cv), the floors over the two sets and the tuning pairs"
        " (--calibrate)."
        " The paraphrase set is held out from every choice.\n"
    )
    for report in reports:
        print(table(report))
        if args.misses:
            for ranker, entry in report["rankers"].items():
                for miss in entry.get("misses", []):
                    print(f"  miss {ranker} {miss}")
        print()
    return 0


def tune(cv: bool, calibrate: bool) -> int:
    """``--cv``: leave one fold out (each conversation, and the recall set as one more fold);
    ``--calibrate``: the highest cosine a probe word reaches with any record of a scope, then
    the rule in force without a lexical anchor (``floor_rules.py --shipped``)."""
    import numpy as np

    items = []
    reached: list[tuple[float, str, str, str]] = []
    for name in tuning_sets() if cv else SETS:
        docs, questions = dataset(name)
        work = tempfile.mkdtemp(prefix="lantern-retrieval-")
        try:
            store, keys = build_store(os.path.join(work, "store"), docs)
            if calibrate and name in SETS:  # the probes are words in no record of these
                vectors = store.record_vectors()
                current = vectors.current()
                words = {w for d in docs for w in TOKEN.findall(d["content"].lower())}
                for probe in PROBES:
                    assert probe not in words, probe
                    scores = current.scores(vectors.embed_query(probe))
                    best = int(np.argmax(scores))
                    text = next(d["content"] for d in docs if keys[current.ids[best]] == d["key"])
                    reached.append((float(scores[best]), name, probe, text))
                    print(f"{name}: {probe!r} reaches {scores[best]:.3f} with {text!r}")
            if cv:
                found = components(store, keys, questions)
                add_features(found, docs, keys)
                for item in found:
                    items.append({**item, "fold": item["scope"] or name, "set": name})
            store.close()
        finally:
            shutil.rmtree(work, ignore_errors=True)
    embedder = embedder_name()
    if calibrate:
        top = max(reached)
        print(
            f"{embedder}: the best cosine a probe word reaches is {top[0]:.3f} ({top[2]!r} in the"
            f" {top[1]} set, with {top[3]!r})"
        )
        # The rule in force without a lexical anchor, calibrated by floor_rules.py alone (its
        # folds add the tuning pairs' stores): its figures and the floor and margin it gives
        sys.stdout.flush()
        command = [sys.executable, os.path.join(HERE, "floor_rules.py"), embedder, "--shipped"]
        subprocess.run(command, check=True)
    if cv:
        found = cross_validate(items)
        print("How lantern chose its floor, with the constant weight it had then:")
        print("\n| held out | weight chosen | floor chosen | R@5 held out |")
        print("|---|---|---|---|")
        for row in found["folds"]:
            print(f"| {row['held_out']} | {row['weight']} | {row['floor']} | {row['R@5']:.3f} |")
        print(f"\ncross-validated hybrid R@5 with a constant weight: {found['R@5']:.3f}")
        print(
            "lantern ships a keyword weight by the words each hit holds (no parameter) and, for"
            f" {embedder}, the floor {ranking.floors(embedder).floor}"
            f"{'' if ranking.calibrated(embedder) else ' (not calibrated: no floor)'}"
            " (lantern_git/index/ranking.py)"
        )
        print(floor_check(items))
        print(rules_report(items))
    return 0


# ---------------------------------------------------------------- cross-validation

# Words in no record of either set: what a query with no lexical anchor looks like (lantern's own
# list: a query's cosines with them are its noise level, ranking.floor).
PROBES = ranking.PROBES

WEIGHTS = (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7)
# The floors tried, per embedder: each embedder's cosines have a scale of their own (e5 gives
# unrelated texts ~0.8), so each gets a grid over its own range.
FLOOR_GRIDS = {
    "wordllama": (0.0, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35),
    "e5": (0.0, *(round(0.70 + 0.01 * n, 2) for n in range(17))),
}


def embedder_name() -> str:
    """The embedder the run measures: LANTERN_EMBEDDER, else lantern's default here."""
    return os.environ.get("LANTERN_EMBEDDER") or default_name()


def floor_grid() -> tuple[float, ...]:
    name = embedder_name()
    return FLOOR_GRIDS.get(name, (0.0, *(round(0.05 * n, 2) for n in range(1, 19))))


def components(store: Store, keys: dict[str, str], questions: list[dict]) -> list[dict]:
    """For each question, its candidates' keys, BM25 scores (0: no keyword match) and
    cosines, as lantern's hybrid sees them: what a weight and a floor are chosen from."""
    import numpy as np

    from lantern_git.model.query import RecordQuery

    vectors = store.record_vectors()
    current = vectors.current()
    out = []
    for q in questions:
        query = RecordQuery(scopes=(q["scope"],) if q["scope"] else (), limit=None)
        ids = store.index.matching_ids(query)
        query.text = q["text"]
        bm25 = dict(store.index.scored_ids(query))
        full = store.index.raw_scored_docs(query)[3]
        cosines = current.scores(vectors.embed_query(q["text"]))
        rows = np.asarray([current.row[i] for i in ids], dtype=np.int64)
        out.append(
            {
                **q,
                "keys": [keys[i] for i in ids],
                "bm25": np.asarray([bm25.get(i, 0.0) for i in ids]),
                "full": full,
                "cos": np.asarray(cosines[rows], dtype=np.float64),
            }
        )
    return out


def add_features(items: list[dict], docs: list[dict], keys: dict[str, str]) -> None:
    """What the fusion rules tried in ``RULES`` read beyond lantern's BM25 and cosines, for
    each question: ``coverage``, the share of its words' idf (as BM25 counts it, over the
    records it searches) that its best keyword hit holds, as written or by stem (0 without a
    keyword hit); ``most``, the sum of those idfs, the BM25 a record holding each word once
    at the average length would score; ``words``, how many words it has as ``--explain``
    counts them (``typed_words``); and per candidate, ``count``, how many of them it holds,
    ``held``, their share, and ``cover``, their share of the question's idf (all 0 for a
    candidate that is no keyword match)."""
    import math

    import numpy as np
    from whoosh.lang.porter2 import stem  # lantern's stemmer (index/analysis.py)

    from lantern_git.index.analysis import matched_words, typed_words, word_forms

    analyzer = word_forms().analyzer
    content = {d["key"]: d["content"] for d in docs}
    terms = {d["key"]: {t.text for t in analyzer(d["content"])} for d in docs}
    by_scope: dict[str | None, list[str]] = {None: [d["key"] for d in docs]}
    for d in docs:
        by_scope.setdefault(d["scope"], []).append(d["key"])
    counted: dict[tuple[str | None, str], int] = {}

    def idf(scope: str | None, word: str) -> float:
        searched = by_scope[scope]
        if (scope, word) not in counted:
            forms = {word, stem(word)}
            counted[scope, word] = sum(1 for k in searched if forms & terms[k])
        df = counted[scope, word]
        return math.log(1 + (len(searched) - df + 0.5) / (df + 0.5))

    for item in items:
        hits = [(k, float(b)) for k, b in zip(item["keys"], item["bm25"]) if b > 0]
        words = typed_words(item["text"])
        weights = {w: idf(item["scope"], w) for w in words}
        item["most"] = sum(weights.values())
        item["coverage"] = 0.0
        if hits and words:
            held = terms[min(hits, key=lambda h: (-h[1], h[0]))[0]]
            mine = sum(v for w, v in weights.items() if w in held or stem(w) in held)
            item["coverage"] = mine / item["most"]
        item["words"] = len(words)
        matched = [
            matched_words(item["text"], content[k]) if b > 0 else []
            for k, b in zip(item["keys"], item["bm25"])
        ]
        item["count"] = np.asarray([len(m) for m in matched])
        item["held"] = item["count"] / max(len(words), 1)
        item["cover"] = np.asarray(
            [sum(weights[w] for w in m) / (item["most"] or 1.0) for m in matched]
        )


# ---------------------------------------------------------------- fusion rules tried
#
# Each family scores a question's candidates (keyword matches and records at or above the
# floor, 0.15) from its BM25 scores, cosines and the features above; ties go by cosine, then
# key, as lantern's fuse does. The weight by words held, never below the cosine, is lantern's
# formula (ranking.py); the constant weight 0.1 the one it had before.

COVERAGE_RULES = [
    (a, b, p) for a in (0.05, 0.1) for b in (0.25, 0.45, 0.7, 1.0, 1.5) for p in (1, 2, 4, 6)
]
RULES: dict[str, list[tuple]] = {
    # w x bm25 / best bm25 + (1 - w) x cosine: lantern's
    "constant weight": [(w,) for w in WEIGHTS],
    # w / (k + keyword rank) + (1 - w) / (k + semantic rank)
    "reciprocal rank (RRF)": [
        (w, k) for w in (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7) for k in (1, 5, 20, 60)
    ],
    # w x min(bm25 / most, 1) + (1 - w) x cosine: BM25 over the query's most, not the best hit's
    "BM25 over the query's most": [(w,) for w in WEIGHTS],
    # the same over lantern's own scale: w x min(bm25 / full match, 1) + (1 - w) x cosine, the
    # full match the BM25 a record of average length holding each of the query's terms once
    # scores (bm25.full_match: the stems and the forms as written, each with its weight)
    "BM25 over a full match (lantern's scorer)": [(w,) for w in (0.05, *WEIGHTS)],
    # the weight hi for a hit whose BM25 is at least rho x best bm25, lo for the others
    "confident keyword hit": [
        (0.1, hi, rho) for hi in (0.2, 0.3, 0.4, 0.6) for rho in (0.8, 0.9, 0.95, 1.0)
    ],
    # the question's weight a + b x coverage^p (at most 0.95), tried in an earlier round
    "weight by coverage (idf)": list(COVERAGE_RULES),
    # the keyword weight of each hit the share of the query's words it holds, the score never
    # below the cosine alone: max(cosine, w x bm25 / best + (1 - w) x cosine): lantern's
    "words held, never below the cosine (lantern's)": [()],
    # lantern's rule with each cosine replaced by its rank among the candidates, normalised
    # to 1 for the best and 0 for the last: no model's cosine scale left in it
    "words held, never below the cosine, cosines rank-normalised": [()],
    # lantern's rule with each cosine put on the scale of its model's calibrated floor:
    # (cosine - floor) / (1 - floor), 0 at the floor, 1 for the query itself
    "words held, never below the cosine, cosines from the model's floor": [()],
    # the same with the share to a power p, a family around lantern's p = 1
    "(words held)^p, never below the cosine": [(p,) for p in (0.5, 0.75, 1.0, 1.25, 1.5, 2.0)],
    # the weight by words held, the sum alone (a hit holding few words can fall under its
    # cosine)
    "keyword weight = words held": [()],
    # the cosine plus the share of the query's words held (the BM25's size left out)
    "cosine + words held": [()],
    # the constant weight 0.1, but the hits holding every word of the query first
    "tier: every word held first": [()],
    # the constant weight 0.1, but the hits holding the most words (two or more) held first
    "tier: most words held first": [()],
    # the constant weight 0.1, but the hits holding at least theta of the query's idf first
    "tier: idf share held first": [(t,) for t in (0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5)],
    # the weight hi for a hit holding at least theta of the query's words, lo for the others
    "weight by words held": [
        (lo, hi, theta)
        for lo in (0.05, 0.1)
        for hi in (0.2, 0.3, 0.4, 0.6)
        for theta in (0.25, 0.333, 0.34, 0.4, 0.5, 0.67, 1.0)  # 0.333: a third; 0.34: more
    ],
}


def rule_scores(family: str, rule: tuple, item: dict):  # -> np.ndarray
    """Every candidate's fused score under ``rule``; -inf for a record that is not one."""
    import numpy as np

    bm25 = np.round(np.asarray(item["bm25"], dtype=np.float64), 6)
    cos = np.round(np.asarray(item["cos"], dtype=np.float64), 6)
    matched = bm25 > 0
    from lantern_git.index import ranking

    floor = ranking.floor(embedder_name(), anchored=bool(matched.any()))
    placed = cos >= floor
    semantic = np.where(placed, np.maximum(cos, 0.0), 0.0)
    best = bm25.max() if matched.any() else 1.0
    share = bm25 / best
    if family == "constant weight":
        weight = rule[0]
    elif family == "reciprocal rank (RRF)":
        w, k = rule

        def places(values, keep):
            order = sorted(np.flatnonzero(keep), key=lambda i: (-values[i], item["keys"][i]))
            out = np.full(len(values), np.inf)
            out[order] = np.arange(1, len(order) + 1)
            return out

        fused = w / (k + places(bm25, matched)) + (1 - w) / (k + places(cos, placed))
        return np.where(matched | placed, fused, -np.inf)
    elif family == "BM25 over the query's most":
        weight = rule[0]
        share = np.minimum(bm25 / (item["most"] or 1.0), 1.0)
    elif family == "BM25 over a full match (lantern's scorer)":
        weight = rule[0]
        share = np.minimum(bm25 / (item["full"] or 1.0), 1.0)
    elif family == "confident keyword hit":
        lo, hi, rho = rule
        weight = np.where(matched & (share >= rho), hi, lo)
    elif family == "weight by coverage (idf)":
        a, b, p = rule
        weight = min(a + b * item["coverage"] ** p, 0.95)
    elif family in (
        "words held, never below the cosine (lantern's)",
        "keyword weight = words held",
    ):
        weight = np.round(item["held"], 6)
        fused = weight * share + np.round(1 - weight, 6) * semantic
        if family != "keyword weight = words held":
            fused = np.maximum(semantic, fused)
        return np.where(matched | placed, fused, -np.inf)
    elif family == "words held, never below the cosine, cosines rank-normalised":
        order = sorted(np.flatnonzero(placed), key=lambda i: (-cos[i], item["keys"][i]))
        normal = np.zeros(len(cos))
        if len(order) > 1:
            normal[order] = 1.0 - np.arange(len(order)) / (len(order) - 1)
        elif order:
            normal[order] = 1.0
        weight = np.round(item["held"], 6)
        fused = np.maximum(normal, weight * share + (1 - weight) * normal)
        return np.where(matched | placed, fused, -np.inf)
    elif family == "words held, never below the cosine, cosines from the model's floor":
        anchored = ranking.floors(embedder_name()).floor
        scaled = np.where(placed, (semantic - anchored) / (1.0 - anchored), 0.0)
        weight = np.round(item["held"], 6)
        fused = np.maximum(scaled, weight * share + (1 - weight) * scaled)
        return np.where(matched | placed, fused, -np.inf)
    elif family == "(words held)^p, never below the cosine":
        weight = item["held"] ** rule[0]
        fused = np.maximum(semantic, weight * share + (1 - weight) * semantic)
        return np.where(matched | placed, fused, -np.inf)
    elif family == "cosine + words held":
        return np.where(matched | placed, semantic + item["held"], -np.inf)
    elif family.startswith("tier: "):
        count = item["count"]
        if family == "tier: every word held first":
            first = matched & (count == item["words"])
        elif family == "tier: idf share held first":
            first = matched & (item["cover"] >= rule[0] - 1e-9)
        else:
            first = matched & (count == count.max()) & (count >= 2)
        fused = 0.1 * share + 0.9 * semantic + np.where(first, 2.0, 0.0)  # fused is at most 1
        return np.where(matched | placed, fused, -np.inf)
    else:
        lo, hi, theta = rule
        weight = np.where(item["held"] >= theta, hi, lo)
    fused = weight * share + (1 - weight) * semantic
    return np.where(matched | placed, fused, -np.inf)


def rule_keys(family: str, rule: tuple, item: dict) -> list[str]:
    import numpy as np

    scores = np.round(rule_scores(family, rule, item), 6)
    cos = np.round(np.asarray(item["cos"], dtype=np.float64), 6)
    keys = item["keys"]
    order = sorted(np.flatnonzero(scores > -np.inf), key=lambda i: (-scores[i], -cos[i], keys[i]))
    return [keys[i] for i in order[:LIMIT]]


LANTERNS = "words held, never below the cosine (lantern's)"  # checked against vectors.fuse
LEXICAL = ("lexical", "keyword")  # the two sets' names for questions in their answers' words


def rules_report(items: list[dict]) -> str:
    """Each family of ``RULES`` by leave-one-fold-out: in each fold, the rule with the best
    R@5 on the other folds among those that keep their lexical questions at keyword's R@5 at
    least (none: the best R@5; ties: the first in ``RULES``); the held-out R@5 by set and
    type. The constant weight also as lantern chose it, by R@5 alone. Then every family's rule
    most folds chose, on the whole sets: R@1, R@5, R@10, MRR; and every rule's R@5 there."""

    def ranks(top: list[str], item: dict) -> list[int | None]:
        return [top.index(t) + 1 if t in top else None for t in item["targets"]]

    keyword = []
    for item in items:
        hits = sorted(
            ((k, float(b)) for k, b in zip(item["keys"], item["bm25"]) if b > 0), key=_best
        )
        keyword.append([k for k, _ in hits][:LIMIT])

    def r5(top: list[str], item: dict) -> float:
        return sum(t in top[:5] for t in item["targets"]) / len(item["targets"])

    folds = sorted({item["fold"] for item in items})
    lexical = [n for n, i in enumerate(items) if i["type"] in LEXICAL]
    base = [r5(keyword[n], item) for n, item in enumerate(items)]
    groups = [
        (name, kind)
        for name in tuning_sets()
        for kind in (None, *sorted({i["type"] for i in items if i["set"] == name}))
    ]

    def members(name: str, kind: str | None) -> list[int]:
        return [n for n, i in enumerate(items) if i["set"] == name and kind in (None, i["type"])]

    head = " | ".join(f"{n} {k or 'all'} ({len(members(n, k))})" for n, k in groups)
    held_rows = [f"| rule | {head} |", "|---" * (len(groups) + 1) + "|"]
    held_rows.append(
        "| keyword | "
        + " | ".join(f"{statistics.mean(base[n] for n in members(*g)):.3f}" for g in groups)
        + " |"
    )
    whole_rows = [
        "| rule | chosen (folds) | set | questions | R@1 | R@5 | R@10 | MRR |",
        "|---|---|---|---|---|---|---|---|",
    ]
    choices = []
    grid = []

    def whole(label: str, chosen: str, tops: list[list[str]]) -> None:
        for name in tuning_sets():
            for kind in (None, LEXICAL):
                ns = [n for n in members(name, None) if kind is None or items[n]["type"] in kind]
                if not ns:  # REALTALK has no lexical questions
                    continue
                f = figures([{"ranks": ranks(tops[n], items[n])} for n in ns])
                whole_rows.append(
                    f"| {label} | {chosen} | {name} | {'lexical' if kind else 'all'} ({len(ns)})"
                    f" | {f['R@1']:.3f} | {f['R@5']:.3f} | {f['R@10']:.3f} | {f['MRR']:.3f} |"
                )

    whole("keyword", "", keyword)
    from lantern_git.index import ranking

    anchored = ranking.floors(embedder_name()).floor
    alike = sum(rule_keys(LANTERNS, (), item) == fused_keys(item, None, anchored) for item in items)
    # The constant weight as lantern chose it before, by R@5 alone, as cross_validate does
    runs = [("constant weight, by R@5 alone (lantern's before)", "constant weight", False)]
    runs += [(family, family, True) for family in RULES]
    for label, family, level_kept in runs:
        rules = RULES[family]
        tops = {rule: [rule_keys(family, rule, item) for item in items] for rule in rules}
        recall = {rule: [r5(tops[rule][n], i) for n, i in enumerate(items)] for rule in rules}
        for rule in rules if level_kept else ():
            cells = [
                statistics.mean(recall[rule][n] for n in ns)
                for name in tuning_sets()
                for ns in (
                    members(name, None),
                    [n for n in members(name, None) if items[n]["type"] in LEXICAL],
                )
                if ns
            ]
            grid.append(f"{family} {rule}: " + " ".join(f"{c:.3f}" for c in cells))
        held: dict[int, float] = {}
        picked = []
        for fold in folds:
            train = [n for n, i in enumerate(items) if i["fold"] != fold]
            lex = [n for n in train if n in set(lexical)]
            floor = sum(base[n] for n in lex)
            level = [r for r in rules if sum(recall[r][n] for n in lex) >= floor - 1e-9]
            level = level if level_kept else []
            best = max(level or rules, key=lambda r: round(sum(recall[r][n] for n in train), 6))
            picked.append(best)
            held.update({n: recall[best][n] for n, i in enumerate(items) if i["fold"] == fold})
        choices.append(f"{label}: " + "; ".join(f"{f} {r}" for f, r in zip(folds, picked)))
        held_rows.append(
            f"| {label} | "
            + " | ".join(f"{statistics.mean(held[n] for n in members(*g)):.3f}" for g in groups)
            + " |"
        )
        most = max(set(picked), key=lambda r: (picked.count(r), r))
        whole(label, f"{most} ({picked.count(most)}/{len(folds)})", tops[most])
    return "\n".join(
        [
            "\nFusion rules tried, each family's parameters chosen by leave-one-fold-out (the"
            " best R@5 on the other folds that keeps their lexical questions at keyword's R@5)."
            "\nHeld-out R@5:",
            *held_rows,
            "\nThe rule most folds chose, on the whole sets (lexical: the conversations'"
            " lexical questions, the recall set's keyword queries):",
            *whole_rows,
            f"\nThe weight by words held ranks here as lantern's fuse does on {alike} of"
            f" {len(items)} questions.\nFolds' choices:",
            *choices,
            "\nEvery rule's R@5 on the whole sets (recall: all, lexical; conversations: all,"
            " lexical):",
            *grid,
        ]
    )


def fused_keys(item: dict, weight: float | None, floor: float) -> list[str]:
    """The first ten keys of lantern's hybrid ranking (``vectors.fuse``, the formula in
    ``lantern_git/index/ranking.py``) with this floor, each keyword hit weighed as lantern
    weighs it (``weight`` None: the share of the question's words it holds) or by the
    constant ``weight`` (the formula lantern had before)."""
    from lantern_git.index import ranking
    from lantern_git.index.ranking import fuse

    keys, bm25, cos = item["keys"], item["bm25"], item["cos"]
    keyword = sorted(((keys[i], float(b)) for i, b in enumerate(bm25) if b > 0), key=_best)
    if not keyword:
        floor = max(floor, ranking.floors(embedder_name()).alone)
    semantic = sorted(
        ((keys[i], round(float(c), 6)) for i, c in enumerate(cos) if c >= floor and c > 0),
        key=_best,
    )
    if weight is None:
        held = dict(zip(keys, item["count"]))
        weights = {k: ranking.keyword_weight(int(held[k]), item["words"]) for k, _ in keyword}
    else:
        weights = {k: weight for k, _ in keyword}
    return [key for key, _ in fuse(keyword, semantic, weights)[:LIMIT]]


def _best(item: tuple[str, float]) -> tuple[float, str]:
    return -item[1], item[0]


def floor_check(items: list[dict]) -> str:
    """The floor under lantern's rule (each keyword hit weighed by the words it holds): each
    set's R@5 and R@10 at every floor, and the floor cross_validate's procedure chooses in
    each fold (the highest whose R@10 on the other folds stays within 0.5 points of none)."""
    table = {}
    for floor in floor_grid():
        for n, item in enumerate(items):
            top = fused_keys(item, None, floor)
            hits = [t in top[:5] for t in item["targets"]], [t in top for t in item["targets"]]
            table[floor, n] = tuple(sum(h) / len(h) for h in hits)

    def mean(floor: float, ns: list[int], at: int) -> float:
        return sum(table[floor, n][at] for n in ns) / len(ns)

    rows = ["| floor | " + " | ".join(f"{name} R@5 | R@10" for name in tuning_sets()) + " |"]
    rows.append("|---" * (1 + 2 * len(tuning_sets())) + "|")
    for floor in floor_grid():
        cells = []
        for name in tuning_sets():
            ns = [n for n, i in enumerate(items) if i["set"] == name]
            cells += [f"{mean(floor, ns, 0):.3f}", f"{mean(floor, ns, 1):.3f}"]
        rows.append(f"| {floor} | " + " | ".join(cells) + " |")
    chosen = []
    for fold in sorted({item["fold"] for item in items}):
        train = [n for n, i in enumerate(items) if i["fold"] != fold]
        base = mean(0.0, train, 1)
        chosen.append(f"{fold} {max(f for f in floor_grid() if mean(f, train, 1) >= base - 0.005)}")
    return "\n".join(
        [
            "\nThe floor under lantern's rule (each keyword hit weighed by the words it holds):",
            *rows,
            "Each fold's choice by the same procedure: " + "; ".join(chosen),
        ]
    )


def cross_validate(items: list[dict]) -> dict:
    """Leave one conversation out: the weight with the best R@5 on the other conversations,
    then the highest floor whose R@10 there is within 0.5 points of no floor; both applied
    to the held-out conversation."""
    table = {}
    for weight in WEIGHTS:
        for floor in floor_grid():
            for n, item in enumerate(items):
                top = fused_keys(item, weight, floor)
                hits = [t in top[:5] for t in item["targets"]], [t in top for t in item["targets"]]
                table[weight, floor, n] = tuple(sum(h) / len(h) for h in hits)
    folds = sorted({item["fold"] for item in items})
    rows = []
    for held in folds:
        train = [n for n, i in enumerate(items) if i["fold"] != held]
        test = [n for n, i in enumerate(items) if i["fold"] == held]

        def mean(w: float, f: float, ns: list[int], at: int) -> float:
            return sum(table[w, f, n][at] for n in ns) / len(ns)

        weight = max(WEIGHTS, key=lambda w: (round(mean(w, 0.0, train, 0), 4), -w))
        base = mean(weight, 0.0, train, 1)
        floor = max(f for f in floor_grid() if mean(weight, f, train, 1) >= base - 0.005)
        found = mean(weight, floor, test, 0)
        rows.append({"held_out": held, "weight": weight, "floor": floor, "R@5": found})
    grid = {
        f"{w}/{f}": round(sum(table[w, f, n][0] for n in range(len(items))) / len(items), 4)
        for w in WEIGHTS
        for f in floor_grid()
    }
    return {"folds": rows, "R@5": statistics.mean(r["R@5"] for r in rows), "grid": grid}


if __name__ == "__main__":
    sys.exit(main())
