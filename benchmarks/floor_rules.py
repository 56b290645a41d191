"""The floor of a search sharing no word with the records searched: rules compared by
leave-one-fold-out (issue 35; docs/search.md, "A record's own level").

    nice -n 5 python benchmarks/floor_rules.py e5           # or wordllama; DRAWS=3 for more draws
    ONLY="W (lantern's)|Wmean + hubmean" python benchmarks/floor_rules.py e5
    HELD_OUT=1 ONLY="Wmean + hubmean" python benchmarks/floor_rules.py e5   # once, after choosing

Folds: the recall set, each conversation, and the tuning pairs (benchmarks/paraphrases_tuning.yaml,
ten pairs a fold, each pair's five records a store of their own). Each probe word (ranking.PROBES)
is searched itself in every store of every fold (the fold whole, 60 draws each of 5 and 20 of its
records, and each tuning pair's five), its noise reference being the other 27. Each rule's fixed
floor and margin are set, in each fold, just above what the other folds' probe searches reach, and
on the held-out fold it is measured: probe searches let in, the two sets' questions searched as if
they shared no word (whole-fold R@5; among four other records, first and kept), and the tuning
pairs' targets first and kept in their five. The held-out paraphrase set (paraphrases.yaml) is
printed last with the margins of all folds only when asked (``HELD_OUT=1``): it chooses nothing,
and a rule is chosen by the other columns before it is looked at. Embeddings are cached by text
(LANTERN_FLOOR_CACHE, default ~/.cache/lantern-floor-rules).

``LEAK_SHARE=0.001`` sets each threshold just above all but that share of the other folds' probe
searches instead of all of them (``LEAK_SHARE_ON=margins``: the margin and word threshold only;
docs/search.md, "A share of probe searches let in": tried, not taken).

``--shipped`` runs only the rule lantern ships for the embedder (``retrieval.py --calibrate``
runs it so). ``DRAWS`` (default 3) is how many draws of four other records each question gets;
``ONLY`` names the rules to run, separated by ``|``; a second argument ``sent2`` words the probe
sentences "Notes about the {probe}." instead of "The {probe} is here.".

Rules: keep a record when its cosine reaches the fixed floor, or when its excess reaches the
margin: ``W``: cosine - the query's best cosine with the probe words (lantern's before); ``S``: the
same with probe sentences; ``W3``: the mean of the query's best three; ``+ record hub``: cosine -
(query level + the record's best cosine with the probe words searched as queries) / 2; ``Wmean +
hubmean``: cosine - (the query's mean cosine with the probe words + the record's mean cosine with
them as queries) / 2: both texts' level over unrelated texts taken out (CSLS, Conneau et al. 2018,
with every probe as the neighbourhood). ``vocab ...`` and ``probes ...``: both texts' levels
over a neighbourhood (:class:`Neighbourhood`): 506 common words (benchmarks/probe_vocabulary.txt),
with or without the probe words, the mean of the k nearest, the k-th nearest, z-scores,
centring, or the probe words alone with a soft best. ``FOLD_LEAKS=1`` names, on stderr, the
folds whose probe searches a rule lets in. Shipped (ranking.FLOORS): ``S + record hub`` for
wordllama, ``probes soft best, beta=50`` for e5.

``WORDS=1`` (or a ``words ...`` rule named in ``ONLY``) adds the word pair rows
(:data:`WORD_RULES`, docs/search.md "Word pairs (e5)"): on top of e5's rule, the k records
nearest a search, when one of their words lies close to one of the search's, held to a lower
floor; e5 ships ``words raw, anchored, k=1``. The rows named ``..., first`` also rank such a
record above the kept records holding no such pair (docs/search.md, "Word pairs ranked first":
tried, not taken).
"""

from __future__ import annotations

import argparse
import math
import os
import pickle
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

# Imported before lantern_git (isort keeps it so): it puts this checkout first on sys.path, so the
# lantern_git measured is the one beside this script, not whichever is installed.
import retrieval
import yaml

from lantern_git.index import ranking
from lantern_git.index.embedders import load_embedder
from lantern_git.index.vectors import unit_rows

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_CACHE = os.path.join(os.path.expanduser("~"), ".cache", "lantern-floor-rules")
BATCH = 64


@dataclass(frozen=True)
class Neighbourhood:
    """Both texts' levels over :data:`VOCABULARY` (the query's with its words embedded as
    records, the record's with them embedded as searches): each text's mean cosine with its
    ``k`` nearest (None: all; CSLS, Conneau et al. 2018), or with ``kth`` its ``k``-th nearest
    (local scaling, Zelnik-Manor and Perona 2004), or with ``z`` each side's cosine as a z-score
    over its cosines with all of them, the two averaged (mutual proximity's Gaussian form,
    Schnitzer et al. 2012); or with ``centre`` no level: the cosine of the two vectors less
    the vocabulary's centroid on their side (centring against hubness, Hara et al. 2015)."""

    k: int | None = None
    kth: bool = False
    z: bool = False
    centre: bool = False
    # the 28 probe words among the vocabulary's (the one searched left out of its own levels)
    with_probes: bool = False
    # the probe words alone, no vocabulary (with the mean: "Wmean + hubmean" again, a check)
    probes_only: bool = False
    # a soft best: (1 / beta) log mean exp(beta cos), between the mean (beta -> 0) and the best
    # (the inverted softmax's normaliser, Smith et al. 2017)
    beta: float | None = None


# Each rule: None (the fixed floor alone), or (the query's noise level, the record's level):
# 0 none, 1 its best cosine with the probe queries, 2 its mean cosine with them; or both
# texts' levels over a neighbourhood of common words (:class:`Neighbourhood`).
RULES: dict[str, tuple[str, int] | Neighbourhood | None] = {
    "fixed only": None,
    "W (lantern's)": ("W", 0),
    "S sentences": ("S", 0),
    "W or S (max)": ("WS", 0),
    "W top3 mean": ("W3", 0),
    "W + record hub (csls)": ("W", 1),
    "S + record hub (csls)": ("S", 1),
    "Smean + hubmean (csls mean)": ("Smean", 2),
    "Wmean + hubmean": ("Wmean", 2),
    "vocab mean, all": Neighbourhood(),
    "vocab mean, k=50": Neighbourhood(50),
    "vocab mean, k=20": Neighbourhood(20),
    "vocab mean, k=10": Neighbourhood(10),
    "vocab 10th nearest": Neighbourhood(10, kth=True),
    "vocab z-scores": Neighbourhood(z=True),
    "vocab centring": Neighbourhood(centre=True),
    "probes + vocab mean, all": Neighbourhood(with_probes=True),
    "probes + vocab mean, k=50": Neighbourhood(50, with_probes=True),
    "probes + vocab mean, k=20": Neighbourhood(20, with_probes=True),
    "probes mean (Wmean + hubmean again)": Neighbourhood(with_probes=True, probes_only=True),
    "probes soft best, beta=10": Neighbourhood(with_probes=True, probes_only=True, beta=10.0),
    "probes soft best, beta=20": Neighbourhood(with_probes=True, probes_only=True, beta=20.0),
    "probes soft best, beta=30": Neighbourhood(with_probes=True, probes_only=True, beta=30.0),
    "probes soft best, beta=50": Neighbourhood(with_probes=True, probes_only=True, beta=50.0),
    "probes soft best, beta=100": Neighbourhood(with_probes=True, probes_only=True, beta=100.0),
    "probes + vocab soft best, beta=30": Neighbourhood(with_probes=True, beta=30.0),
}
# benchmarks/probe_vocabulary.txt: common words, none of them a probe word (its header)
VOCABULARY = os.path.join(os.path.dirname(os.path.abspath(__file__)), "probe_vocabulary.txt")
KINDS = ("W", "S", "WS", "W3", "Smean", "Wmean")
DEFAULT_SENTENCE = "The {} is here."
STEP = 0.001  # a floor or margin is set this far above the highest probe search it must refuse
# LEAK_SHARE=0.001: each threshold set just above all but that share of the other folds' probe
# searches (their 1 - share quantile) instead of above all of them
LEAK_SHARE = float(os.environ.get("LEAK_SHARE", "0"))
# LEAK_SHARE_ON=margins: the share for the margin and the word threshold only, the fixed floor
# above all the probe searches
MARGINS_ONLY = os.environ.get("LEAK_SHARE_ON") == "margins"


def above_probes(values: list[float], fixed: bool = False) -> float:
    """A threshold just above the probe searches ``values`` (all of them, or all but
    :data:`LEAK_SHARE` of them); ``fixed``: the fixed floor's."""
    if not values:
        return -np.inf
    if LEAK_SHARE and not (fixed and MARGINS_ONLY):
        return float(np.quantile(values, 1.0 - LEAK_SHARE, method="higher")) + STEP
    return max(values) + STEP


class Cache:
    """Embeddings by text, kept on disk: a rerun embeds only texts it has not seen."""

    def __init__(self, name: str, folder: str) -> None:
        self.name = name
        self.path = os.path.join(folder, f"{name}.pkl")
        self.data: dict[tuple[str, str], np.ndarray] = {}
        if os.path.exists(self.path):
            with open(self.path, "rb") as handle:
                self.data = pickle.load(handle)
        self.embedder: Any = None

    def _embedder(self) -> Any:
        if self.embedder is None:
            self.embedder = load_embedder(self.name)
        return self.embedder

    def _save(self) -> None:
        with open(self.path + ".tmp", "wb") as handle:
            pickle.dump(self.data, handle)
        os.replace(self.path + ".tmp", self.path)

    def get(self, texts: list[str], query: bool = False) -> np.ndarray:
        tag = "q" if query else "p"
        missing = [t for t in dict.fromkeys(texts) if (tag, t) not in self.data]
        for start in range(0, len(missing), BATCH):
            batch = missing[start : start + BATCH]
            embedder = self._embedder()
            embed = embedder.embed
            if query:
                embed = getattr(embedder, "embed_query", None) or embedder.embed
            for text, row in zip(batch, unit_rows(embed(batch), embedder.dim)):
                self.data[(tag, text)] = row
            self._save()
            done = f"{start + len(batch)}/{len(missing)}"
            print(f"{self.name}: {done} {tag}", file=sys.stderr, flush=True)
        if not texts:
            return np.zeros((0, 1))
        return np.stack([self.data[(tag, t)] for t in texts]).astype(np.float64)


class Probes:
    """The probe words as passages and as queries, and probe sentences as passages: the texts
    every level is measured against."""

    def __init__(self, cache: Cache, sentence: str) -> None:
        self.words = list(retrieval.PROBES)
        self.word_passages = cache.get(self.words)
        self.sentence_passages = cache.get([sentence.format(p) for p in self.words])
        self.queries = cache.get(self.words, query=True)
        self.vocabulary: tuple[np.ndarray, np.ndarray] | None = None
        if any(isinstance(spec, Neighbourhood) for spec in RULES.values()):
            with open(VOCABULARY, encoding="utf-8") as handle:
                words = [w.strip() for w in handle if w.strip() and not w.startswith("#")]
            assert not set(words) & set(self.words)
            self.vocabulary = (cache.get(words), cache.get(words, query=True))

    def neighbourhood(
        self, rows: np.ndarray, spec: Neighbourhood, query: bool, skip: int | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """Each row's level over the vocabulary and the spread of its cosines with it (rows
        that are searches against the words as records, else the words as searches; skip: the
        probe searched, left out when the probes are among the words)."""
        assert self.vocabulary is not None
        words = self.vocabulary[0] if query else self.vocabulary[1]
        if spec.with_probes:
            own = self.word_passages if query else self.queries
            if skip is not None:
                own = np.delete(own, skip, axis=0)
            words = own if spec.probes_only else np.vstack([own, words])
        x = np.atleast_2d(rows) @ words.T
        if spec.beta is not None:
            top = x.max(1, keepdims=True)
            soft = top[:, 0] + np.log(np.exp(spec.beta * (x - top)).mean(1)) / spec.beta
            return soft, np.ones(len(soft))
        if spec.z or spec.k is None:
            return x.mean(1), x.std(1)
        nearest = -np.sort(-x, axis=1)[:, : spec.k]
        level = nearest[:, -1] if spec.kth else nearest.mean(1)
        return level, np.ones(len(level))

    def vocab_excess(
        self, spec: Neighbourhood, v: np.ndarray, records: np.ndarray, skip: int | None = None
    ) -> np.ndarray:
        """The records' excess over their floors under ``spec``: cos - the mean of the two
        levels, or the mean of the two z-scores, or the centred cosine."""
        assert self.vocabulary is not None
        cos = records @ v
        if spec.centre:
            q = v - self.vocabulary[0].mean(0)
            r = records - self.vocabulary[1].mean(0)
            q /= np.linalg.norm(q)
            return (r @ q) / np.linalg.norm(r, axis=1)
        levels, spreads = self.neighbourhood(v, spec, query=True, skip=skip)
        query = (levels[0], spreads[0])
        level, spread = self.neighbourhood(records, spec, query=False, skip=skip)
        if spec.z:
            return 0.5 * ((cos - query[0]) / query[1] + (cos - level) / spread)
        return cos - 0.5 * (query[0] + level)

    def noise_of(self, v: np.ndarray, kind: str, skip: int | None = None) -> float:
        """The query's level of kind ``kind`` (skip: a probe left out, the query being it)."""

        def cosines(matrix: np.ndarray) -> np.ndarray:
            x = matrix @ v
            if skip is not None:
                x = np.delete(x, skip)
            return x

        words, sentences = self.word_passages, self.sentence_passages
        if kind == "W":
            return cosines(words).max()
        if kind == "S":
            return cosines(sentences).max()
        if kind == "WS":
            return max(cosines(words).max(), cosines(sentences).max())
        if kind == "W3":
            return np.sort(cosines(words))[-3:].mean()
        if kind == "Smean":
            return cosines(sentences).mean()
        if kind == "Wmean":
            return cosines(words).mean()
        raise ValueError(kind)

    def hub(self, records: np.ndarray) -> np.ndarray:
        """Each record's best cosine with the probe queries."""
        return (records @ self.queries.T).max(axis=1)

    def hubmean(self, records: np.ndarray) -> np.ndarray:
        """Each record's mean cosine with the probe queries."""
        return (records @ self.queries.T).mean(axis=1)

    def scores(self, rule: str, v: np.ndarray, records: np.ndarray) -> np.ndarray:
        """Per record: its excess over its own threshold (keep iff excess >= margin)."""
        spec = RULES[rule]
        assert spec is not None
        cos = records @ v
        if isinstance(spec, Neighbourhood):
            return self.vocab_excess(spec, v, records)
        kind, record_level = spec
        n = self.noise_of(v, kind)
        if record_level == 0:
            return cos - n
        if record_level == 1:
            return cos - 0.5 * (n + self.hub(records))
        return cos - 0.5 * (n + self.hubmean(records))


@dataclass
class Fold:
    matrix: np.ndarray
    keys: list[str]
    stores: list[np.ndarray] = field(default_factory=list)
    texts: list[str] = field(default_factory=list)


@dataclass
class Data:
    folds: dict[str, Fold]
    questions: list[dict[str, Any]]
    pairs: list[dict[str, Any]]
    held: list[tuple[np.ndarray, np.ndarray]]
    held_texts: list[tuple[str, list[str]]] = field(default_factory=list)


def read_yaml(name: str) -> Any:
    with open(os.path.join(HERE, name), encoding="utf-8") as handle:
        return yaml.safe_load(handle)


def load_data(cache: Cache, width: int) -> Data:
    """The folds (each with its stores), the two sets' questions, the tuning pairs, and the
    held-out paraphrase pairs, embedded."""
    folds: dict[str, Fold] = {}
    questions: list[dict[str, Any]] = []
    for set_name in ("recall", "conversations"):
        docs, qs = retrieval.dataset(set_name)
        seen: dict[str, dict[str, str]] = {}
        for d in docs:
            fold = d["scope"] if set_name == "conversations" else set_name
            seen.setdefault(fold, {})[d["content"]] = d["key"]  # dedupe by content
        for fold, by_content in seen.items():
            texts = list(by_content)
            folds[fold] = Fold(cache.get(texts), [by_content[t] for t in texts], texts=texts)
        vectors = cache.get([q["text"] for q in qs], query=True)
        for q, v in zip(qs, vectors):
            questions.append({**q, "fold": q["scope"] or set_name, "set": set_name, "v": v})
    pairs: list[dict[str, Any]] = []
    tuning_stores: dict[str, list[np.ndarray]] = {}
    for n, p in enumerate(read_yaml("paraphrases_tuning.yaml")["pairs"]):
        fold = f"tuning{n // 10}"
        if fold not in folds:
            folds[fold] = Fold(np.zeros((0, width)), [])
        tuning = folds[fold]
        start = len(tuning.keys)
        tuning.matrix = np.vstack([tuning.matrix, cache.get([p["target"], *p["distractors"]])])
        tuning.keys += [f"t{n}/{i}" for i in range(5)]
        tuning.texts += [p["target"], *p["distractors"]]
        rows = np.arange(start, start + 5)
        tuning_stores.setdefault(fold, []).append(rows)
        pairs.append(
            {
                "fold": fold,
                "v": cache.get([p["query"]], query=True)[0],
                "rows": rows,
                "text": p["query"],
            }
        )
    held = [
        (cache.get([h["query"]], query=True)[0], cache.get([h["target"], *h["distractors"]]))
        for h in read_yaml("paraphrases.yaml")["pairs"]
    ]
    held_texts = [
        (h["query"], [h["target"], *h["distractors"]])
        for h in read_yaml("paraphrases.yaml")["pairs"]
    ]
    rng = np.random.default_rng(0)
    for name, fold in folds.items():
        n = len(fold.keys)
        draws = [rng.choice(n, size, replace=False) for size in (5, 20) for _ in range(60)]
        fold.stores = [np.arange(n), *draws, *tuning_stores.get(name, [])]
    return Data(folds, questions, pairs, held, held_texts)


def probe_cosines(
    folds: dict[str, Fold], probes: Probes
) -> dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """Per fold: each probe query's cosine with each record, and each record's best and mean
    cosine with the other probes (the probe searched left out of its own record levels)."""
    out = {}
    count = len(probes.words)
    for name, fold in folds.items():
        C = probes.queries @ fold.matrix.T
        o = np.argsort(-C, axis=0)
        columns = np.arange(C.shape[1])
        first, second = C[o[0], columns], C[o[1], columns]
        hub_skip = np.where(
            np.arange(count)[:, None] == o[0][None, :], second[None, :], first[None, :]
        )
        hubmean_skip = (C.sum(0)[None, :] - C) / (count - 1)
        out[name] = (C, hub_skip, hubmean_skip)
    return out


def keep(
    probes: Probes, rule: str, v: np.ndarray, records: np.ndarray, floor: float, margin: float
) -> tuple[np.ndarray, np.ndarray]:
    """The records' cosines with the query, and which of them the rule keeps."""
    cos = records @ v
    kept = cos >= floor
    if RULES[rule]:
        kept |= probes.scores(rule, v, records) >= margin
    return cos, kept


def question_scores(
    data: Data,
    draws: int,
    judge: Callable[[dict[str, Any], np.ndarray | None], tuple[np.ndarray, np.ndarray]],
) -> dict[tuple[str, str], list[float]]:
    """A rule's figures on both sets' questions, the ones every rule is judged by: by set,
    each question's R@5 over its fold (``"R@5"``), and for each of ``draws`` draws whether its
    first target, among four other records of the fold drawn at random, comes first and kept
    (``"4"``). ``judge(question, rows)``: the question's cosines with those rows of its fold
    (None: every row) and which of them the rule keeps."""
    out: dict[tuple[str, str], list[float]] = {}
    dr = np.random.default_rng(1)
    for q in data.questions:
        keys = data.folds[q["fold"]].keys
        cos, k = judge(q, None)
        order = [i for i in np.argsort(-cos, kind="stable") if k[i]][:5]
        found = {keys[i] for i in order}
        got = sum(t in found for t in q["targets"]) / len(q["targets"])
        out.setdefault((q["set"], "R@5"), []).append(got)
        ans = [i for i, key in enumerate(keys) if key == q["targets"][0]]
        others = [i for i, key in enumerate(keys) if key not in q["targets"]]
        for _ in range(draws):
            if not ans:
                out.setdefault((q["set"], "4"), []).append(0.0)
                continue
            st = np.asarray(ans[:1] + list(dr.choice(others, 4, replace=False)))
            cs, kk = judge(q, st)
            out.setdefault((q["set"], "4"), []).append(float(np.argmax(cs) == 0 and kk[0]))
    return out


def figures(
    rule: str, leaks: int, total: int, out: dict[tuple[str, str], list[float]], data: Data
) -> str:
    """The start of a rule's line: probe searches let in, each set's R@5 and first of five
    (:func:`question_scores`), tuning pairs first and kept."""

    def mean(key: tuple[str, str]) -> str:
        return f"{np.mean(out[key]):.3f}"

    return (
        f"{rule:30} leaks {leaks:4d}/{total}"
        f" | recall R@5 {mean(('recall', 'R@5'))} 4oth {mean(('recall', '4'))}"
        f" | conv R@5 {mean(('conversations', 'R@5'))} 4oth {mean(('conversations', '4'))}"
        f" | tuning first {int(sum(out['tuning', 'first']))}/{len(data.pairs)}"
    )


def evaluate(
    rule: str,
    data: Data,
    probes: Probes,
    cosines: dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]],
    noise: dict[str, np.ndarray],
    draws: int,
    show_held_out: bool = False,
) -> str:
    """One rule's line: its floors chosen leave-one-fold-out, then measured."""
    spec = RULES[rule]
    top, exc = {}, {}
    for name, fold in data.folds.items():
        C, hub_skip, hubmean_skip = cosines[name]
        X = None
        if isinstance(spec, Neighbourhood):
            # the probes are not in the vocabulary: no probe is its own neighbour (and where
            # they are added to it, the one searched is left out)
            X = np.stack(
                [
                    probes.vocab_excess(spec, v, fold.matrix, skip=p)
                    for p, v in enumerate(probes.queries)
                ]
            )
        elif spec is not None:
            kind, record_level = spec
            n = noise[kind][:, None]
            if record_level == 0:
                X = C - n
            elif record_level == 1:
                X = C - 0.5 * (n + hub_skip)
            else:
                X = C - 0.5 * (n + hubmean_skip)
        tops, excesses = [], []
        for st in fold.stores:
            tops += list(C[:, st].max(1))
            if X is not None:
                excesses += list(X[:, st].max(1))
        top[name], exc[name] = tops, excesses
    names = list(data.folds)

    def others(values: dict[str, list[float]], held: str | None) -> list[float]:
        return [x for f in names if f != held for x in values[f]]

    floor = {h: above_probes(others(top, h), fixed=True) for h in names}
    margin = {h: (above_probes(others(exc, h)) if spec else np.inf) for h in names}
    leaks = sum(
        sum(
            (t >= floor[f]) or (e >= margin[f])
            for t, e in zip(top[f], exc[f] or [-9] * len(top[f]))
        )
        for f in names
    )
    total = sum(len(top[f]) for f in names)
    if os.environ.get("FOLD_LEAKS") == "1":  # where the probe searches let in are
        by_fold = {
            f: sum(
                (t >= floor[f]) or (e >= margin[f])
                for t, e in zip(top[f], exc[f] or [-9] * len(top[f]))
            )
            for f in names
        }
        print(rule, {f: n for f, n in by_fold.items() if n}, file=sys.stderr)

    def judge(q: dict[str, Any], rows: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
        M = data.folds[q["fold"]].matrix
        limits = (floor[q["fold"]], margin[q["fold"]])
        return keep(probes, rule, q["v"], M if rows is None else M[rows], *limits)

    out = question_scores(data, draws, judge)
    for p in data.pairs:
        M = data.folds[p["fold"]].matrix[p["rows"]]
        cs, kk = keep(probes, rule, p["v"], M, floor[p["fold"]], margin[p["fold"]])
        out.setdefault(("tuning", "first"), []).append(float(np.argmax(cs) == 0 and kk[0]))
    # held-out paraphrase set: margins chosen on all folds
    all_floor = above_probes(others(top, None), fixed=True)
    all_margin = above_probes(others(exc, None)) if spec else np.inf
    held_kept = 0
    for v, M in data.held:
        cos, k = keep(probes, rule, v, M, all_floor, all_margin)
        held_kept += int(np.argmax(cos) == 0 and k[0])
    held_out = f" | HELD-OUT {held_kept}/{len(data.held)}" if show_held_out else ""
    return (
        f"{figures(rule, leaks, total, out, data)}"
        f" | all-fold fixed {all_floor:.3f} margin {all_margin:.3f}{held_out}"
    )


@dataclass(frozen=True)
class WordRule:
    """Word-level expansion on top of :data:`WORD_BASE` (issue 35): among a search's ``k``
    nearest records by cosine, one holding a word close to a word of the search (the pair's
    ``score`` at least a threshold set, like the margins, just above what the other folds'
    probe searches reach) is held to a lower floor, ``rescue``. Each word is one e5 query
    (``query: brief``); pairs of the same stem are not counted (an unanchored search has none).
    ``score``: ``raw`` the pair's cosine; ``mean``: less the mean of the two words' mean
    cosines with :data:`VOCABULARY`; ``csls10``: less the mean of their ten nearest there (CSLS
    on words). ``rescue``: ``anchored`` the floor of a search sharing a word; ``level`` the
    record's own floor without the margin (the mean of the two texts' levels); ``none`` no
    floor (among the ``k`` nearest). ``promote``: such a record, kept, also ranks above the
    kept records holding no such word (by cosine among themselves), where the others only let
    it in."""

    score: str
    rescue: str
    k: int = 10
    promote: bool = False


WORD_BASE = "probes soft best, beta=50"
WORD_RULES = {
    f"words {score}, {rescue}": WordRule(score, rescue)
    for score in ("raw", "mean", "csls10")
    for rescue in ("anchored", "level", "none")
} | {f"words raw, anchored, k={k}": WordRule("raw", "anchored", k) for k in (1, 3, 5)}
# Rows added after the ones above had chosen k = 1 (docs/search.md, "Word pairs ranked first"):
# the same pairs ranking a record first among the k nearest, not only letting it in.
WORD_RULES |= {
    f"words raw, {rescue}, k={k}, first": WordRule("raw", rescue, k, promote=True)
    for rescue in ("anchored", "none")
    for k in (3, 5, 10)
}


class Words:
    """Every content word of the folds' texts and searches (``analysis.content_words``, as
    lantern reads them), embedded one by one as e5 queries, with their levels over
    :data:`VOCABULARY`."""

    def __init__(self, cache: Cache, data: Data) -> None:
        from lantern_git.index.analysis import content_words, word_stem

        self.split, self.stem_of = content_words, word_stem
        texts = [t for fold in data.folds.values() for t in fold.texts]
        texts += [q["text"] for q in data.questions] + [p["text"] for p in data.pairs]
        texts += list(retrieval.PROBES)
        texts += [t for query, records in data.held_texts for t in (query, *records)]
        words = list(dict.fromkeys(w for t in texts for w in self.split(t)))
        self.index = {w: i for i, w in enumerate(words)}
        self.vectors = cache.get(words, query=True)
        stems: dict[str, int] = {}
        self.stems = np.array([stems.setdefault(self.stem_of(w), len(stems)) for w in words])
        with open(VOCABULARY, encoding="utf-8") as handle:
            vocab = [w.strip() for w in handle if w.strip() and not w.startswith("#")]
        x = self.vectors @ cache.get(vocab, query=True).T
        x[x > 0.9999] = np.nan  # a word is not its own neighbour
        self.levels = {
            "raw": np.zeros(len(words)),
            "mean": np.nanmean(x, axis=1),
            "csls10": -np.sort(-np.nan_to_num(x, nan=-1.0), axis=1)[:, :10].mean(1),
        }
        self.of_text: dict[str, np.ndarray] = {}

    def of(self, text: str) -> np.ndarray:
        found = self.of_text.get(text)
        if found is None:
            found = np.array([self.index[w] for w in self.split(text)], dtype=np.int64)
            self.of_text[text] = found
        return found

    def best(self, score: str, query: np.ndarray, record: np.ndarray) -> tuple[float, int, int]:
        """The best pair's score between the two texts' words (-inf: none), and the pair."""
        if not len(query) or not len(record):
            return -np.inf, -1, -1
        level = self.levels[score]
        x = self.vectors[query] @ self.vectors[record].T
        x = x - 0.5 * (level[query][:, None] + level[record][None, :])
        x[self.stems[query][:, None] == self.stems[record][None, :]] = -np.inf
        at = np.unravel_index(int(np.argmax(x)), x.shape)
        return float(x[at]), int(query[at[0]]), int(record[at[1]])


def evaluate_words(
    rule: str,
    data: Data,
    probes: Probes,
    words: Words,
    cosines: dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]],
    anchored: float,
    draws: int,
    show_held_out: bool = False,
) -> str:
    """One word rule's line, as :func:`evaluate`'s: the base rule's fixed floor and margin and
    the word threshold all chosen leave-one-fold-out, then measured."""
    spec = WORD_RULES[rule]
    base = RULES[WORD_BASE]
    assert isinstance(base, Neighbourhood)
    top, exc, reach = {}, {}, {}
    for name, fold in data.folds.items():
        C = cosines[name][0]
        X = np.stack(
            [
                probes.vocab_excess(base, v, fold.matrix, skip=p)
                for p, v in enumerate(probes.queries)
            ]
        )
        # each probe's best word pair with each record (the probe is the search's one word)
        P = np.full(C.shape, -np.inf)
        for r, text in enumerate(fold.texts):
            for p, probe in enumerate(probes.words):
                P[p, r] = words.best(spec.score, words.of(probe), words.of(text))[0]
        rescued = {
            "anchored": np.greater_equal(C, anchored),
            "level": X >= 0.0,
            "none": np.ones(C.shape, dtype=bool),
        }[spec.rescue]
        tops, excesses, reaches = [], [], []
        for st in fold.stores:
            tops += list(C[:, st].max(1))
            excesses += list(X[:, st].max(1))
            nearest = st[np.argsort(-C[:, st], axis=1, kind="stable")[:, : spec.k]]
            rows = np.arange(C.shape[0])[:, None]
            pairs = np.where(rescued[rows, nearest], P[rows, nearest], -np.inf)
            reaches += list(pairs.max(1))
        top[name], exc[name], reach[name] = tops, excesses, reaches
    names = list(data.folds)

    def above(values: dict[str, list[float]], held: str | None, fixed: bool = False) -> float:
        return above_probes([x for f in names if f != held for x in values[f]], fixed)

    floor = {h: above(top, h, fixed=True) for h in names}
    margin = {h: above(exc, h) for h in names}
    threshold = {h: above(reach, h) for h in names}
    leaks = sum(
        sum(
            (t >= floor[f]) or (e >= margin[f]) or (w >= threshold[f])
            for t, e, w in zip(top[f], exc[f], reach[f])
        )
        for f in names
    )
    total = sum(len(top[f]) for f in names)
    if os.environ.get("FOLD_LEAKS") == "1":
        by_fold = {
            f: sum(
                (t >= floor[f]) or (e >= margin[f]) or (w >= threshold[f])
                for t, e, w in zip(top[f], exc[f], reach[f])
            )
            for f in names
        }
        print(rule, {f: n for f, n in by_fold.items() if n}, file=sys.stderr)

    def kept_by(
        v: np.ndarray, text: str, M: np.ndarray, texts: list[str], limits: tuple[float, ...]
    ) -> tuple[np.ndarray, np.ndarray, int]:
        fixed, noise, least = limits
        cos, k = keep(probes, WORD_BASE, v, M, fixed, noise)
        excess = probes.scores(WORD_BASE, v, M)
        query = words.of(text)
        saved = 0
        first = np.zeros(len(cos), dtype=bool)
        for i in np.argsort(-cos, kind="stable")[: spec.k]:
            if k[i] and not spec.promote:
                continue
            ok = {"anchored": cos[i] >= anchored, "level": excess[i] >= 0.0, "none": True}
            if not (k[i] or ok[spec.rescue]):
                continue
            if words.best(spec.score, query, words.of(texts[i]))[0] >= least:
                saved += int(not k[i])
                k[i] = first[i] = True
        # the order the rule gives: a record held by a pair above the rest, by cosine each
        return cos + 2.0 * first, k, saved

    def judge(q: dict[str, Any], rows: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
        fold = data.folds[q["fold"]]
        limits = (floor[q["fold"]], margin[q["fold"]], threshold[q["fold"]])
        M, texts = fold.matrix, fold.texts
        if rows is not None:
            M, texts = M[rows], [texts[i] for i in rows]
        cos, k, _ = kept_by(q["v"], q["text"], M, texts, limits)
        return cos, k

    out = question_scores(data, draws, judge)
    saved_pairs = 0
    for p in data.pairs:
        fold = data.folds[p["fold"]]
        limits = (floor[p["fold"]], margin[p["fold"]], threshold[p["fold"]])
        texts = [fold.texts[i] for i in p["rows"]]
        cs, kk, saved = kept_by(p["v"], p["text"], fold.matrix[p["rows"]], texts, limits)
        first = float(np.argmax(cs) == 0 and kk[0])
        out.setdefault(("tuning", "first"), []).append(first)
        saved_pairs += int(saved > 0 and first > 0)
    all_limits = (above(top, None, True), above(exc, None), above(reach, None))
    held_out = ""
    if show_held_out:
        held_kept = 0
        for (v, M), (query, texts) in zip(data.held, data.held_texts):
            cos, k, _ = kept_by(v, query, M, texts, all_limits)
            held_kept += int(np.argmax(cos) == 0 and k[0])
        held_out = f" | HELD-OUT {held_kept}/{len(data.held)}"
    return (
        f"{figures(rule, leaks, total, out, data)} (by a word pair {saved_pairs})"
        f" | all-fold fixed {all_limits[0]:.3f} margin {all_limits[1]:.3f}"
        f" word {all_limits[2]:.3f}{held_out}"
    )


def shipped_rule(embedder: str) -> tuple[str, str] | None:
    """The rule lantern ships for ``embedder`` (ranking.FLOORS) as one of :data:`RULES`, with the
    probe sentence its query level reads (None: not calibrated, no floor)."""
    if not ranking.calibrated(embedder):
        return None
    found = ranking.floors(embedder)
    sentences = found.probe_text != "{}"
    sentence = found.probe_text if sentences else DEFAULT_SENTENCE
    if found.noise is None:
        return "fixed only", sentence
    if not found.centred:
        return ("S sentences" if sentences else "W (lantern's)"), sentence
    if math.isinf(found.beta):
        return ("S + record hub (csls)" if sentences else "W + record hub (csls)"), sentence
    if found.beta == 0.0:
        return ("Smean + hubmean (csls mean)" if sentences else "Wmean + hubmean"), sentence
    soft = f"probes soft best, beta={found.beta:g}"
    assert not sentences and soft in RULES, (embedder, found)
    if found.words is not None:  # word pairs on top of it (WORD_BASE)
        words = f"words raw, anchored, k={ranking.WORD_NEAREST}"
        assert soft == WORD_BASE and words in WORD_RULES, (embedder, found)
        return words, sentence
    return soft, sentence


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("embedder", help="e5 or wordllama")
    parser.add_argument(
        "sentences", nargs="?", help='"sent2": probe sentences "Notes about the {probe}."'
    )
    parser.add_argument(
        "--shipped", action="store_true", help="only the rule lantern ships for the embedder"
    )
    args = parser.parse_args()
    shipped = shipped_rule(args.embedder) if args.shipped else None
    if args.shipped and shipped is None:
        print(f"{args.embedder}: not calibrated, no floor (ranking.FLOORS)")
        return
    folder = os.environ.get("LANTERN_FLOOR_CACHE", DEFAULT_CACHE)
    os.makedirs(folder, exist_ok=True)
    cache = Cache(args.embedder, folder)
    sentence = "Notes about the {}." if args.sentences == "sent2" else DEFAULT_SENTENCE
    if shipped is not None:
        sentence = shipped[1]
    probes = Probes(cache, sentence)
    data = load_data(cache, probes.word_passages.shape[1])
    noise = {
        kind: np.array(
            [probes.noise_of(probes.queries[p], kind, skip=p) for p in range(len(probes.words))]
        )
        for kind in KINDS
    }
    cosines = probe_cosines(data.folds, probes)
    wanted = [shipped[0]] if shipped else os.environ.get("ONLY", "").split("|")
    draws = int(os.environ.get("DRAWS", "3"))
    held_out = os.environ.get("HELD_OUT") == "1"
    for rule in [r for r in RULES if not wanted[0] or r in wanted]:
        print(evaluate(rule, data, probes, cosines, noise, draws, held_out), flush=True)
    chosen = [r for r in WORD_RULES if r in wanted]
    if chosen or os.environ.get("WORDS") == "1":
        words = Words(cache, data)
        anchored = ranking.floors(args.embedder).floor
        for rule in chosen or list(WORD_RULES):
            line = evaluate_words(rule, data, probes, words, cosines, anchored, draws, held_out)
            print(line, flush=True)
    if shipped is not None:
        found = ranking.floors(args.embedder)
        words = "" if found.words is None else f", word pairs {found.words}"
        print(
            f"{args.embedder}: lantern ships {shipped[0]!r} (fixed floor {found.alone},"
            f" margin {found.noise}{words}; ranking.FLOORS), from the all-fold figures above"
        )


if __name__ == "__main__":
    main()
