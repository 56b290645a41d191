# ruff: noqa: E501, SIM115, B007, E402, B023 - an analysis script kept as it was run (issue 35)
"""The floor of a search sharing no word with the records searched: rules compared by
leave-one-fold-out (issue 35; docs/search.md, "A record's own level").

    nice -n 5 python benchmarks/floor_rules.py e5           # or wordllama; DRAWS=3 for more draws
    ONLY="W (lantern's)|Wmean + hubmean" python benchmarks/floor_rules.py e5

Folds: the recall set, each conversation, and the tuning pairs (benchmarks/paraphrases_tuning.yaml,
ten pairs a fold, each pair's five records a store of their own). Each probe word (ranking.PROBES)
is searched itself in every store of every fold (the fold whole, 60 draws each of 5 and 20 of its
records, and each tuning pair's five), its noise reference being the other 27. Each rule's fixed
floor and margin are set, in each fold, just above what the other folds' probe searches reach, and
on the held-out fold it is measured: probe searches let in, the two sets' questions searched as if
they shared no word (whole-fold R@5; among four other records, first and kept), and the tuning
pairs' targets first and kept in their five. The held-out paraphrase set (paraphrases.yaml) is
printed last with the margins of all folds: it chooses nothing. Embeddings are cached by text
(LANTERN_FLOOR_CACHE, default ~/.cache/lantern-floor-rules).

Rules: keep a record when its cosine reaches the fixed floor, or when its excess reaches the margin:
``W``: cosine - the query's best cosine with the probe words (lantern's before); ``S``: the same with
probe sentences; ``W3``: the mean of the query's best three; ``+ record hub``: cosine - (query level
+ the record's best cosine with the probe words searched as queries) / 2; ``Wmean + hubmean``:
cosine - (the query's mean cosine with the probe words + the record's mean cosine with them as
queries) / 2: both texts' level over unrelated texts taken out (CSLS, Conneau et al. 2018, with
every probe as the neighbourhood).
"""

import os
import pickle
import statistics  # noqa: F401
import sys

import numpy as np
import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)

import retrieval

from lantern_git.index.embedders import load_embedder
from lantern_git.index.vectors import unit_rows

DIR = os.environ.get(
    "LANTERN_FLOOR_CACHE", os.path.join(os.path.expanduser("~"), ".cache", "lantern-floor-rules")
)
os.makedirs(DIR, exist_ok=True)


class Cache:
    def __init__(self, name):
        self.name = name
        self.path = os.path.join(DIR, f"{name}.pkl")
        self.data = pickle.load(open(self.path, "rb")) if os.path.exists(self.path) else {}
        self.emb = None

    def _e(self):
        if self.emb is None:
            self.emb = load_embedder(self.name)
        return self.emb

    def get(self, texts, query=False):
        tag = "q" if query else "p"
        missing = [t for t in dict.fromkeys(texts) if (tag, t) not in self.data]
        for s in range(0, len(missing), 64):
            batch = missing[s : s + 64]
            e = self._e()
            fn = (getattr(e, "embed_query", None) or e.embed) if query else e.embed
            rows = unit_rows(fn(batch), e.dim)
            for t, r in zip(batch, rows):
                self.data[(tag, t)] = r
            pickle.dump(self.data, open(self.path + ".tmp", "wb"))
            os.replace(self.path + ".tmp", self.path)
            print(
                f"{self.name}: {s + len(batch)}/{len(missing)} {tag}", file=sys.stderr, flush=True
            )
        return (
            np.stack([self.data[(tag, t)] for t in texts]).astype(np.float64)
            if texts
            else np.zeros((0, 1))
        )


name = sys.argv[1]
c = Cache(name)
PROBES = list(retrieval.PROBES)
SENT = [f"The {p} is here." for p in PROBES]
if len(sys.argv) > 2 and sys.argv[2] == "sent2":
    SENT = [f"Notes about the {p}." for p in PROBES]
PW = c.get(PROBES)  # probe words as passages
PS = c.get(SENT)  # probe sentences as passages
PQ = c.get(PROBES, query=True)  # probe words as queries
rng = np.random.default_rng(0)
# folds: name -> (matrix, keys, stores(list of index arrays))
folds = {}
questions = []
for s in ("recall", "conversations"):
    docs, qs = retrieval.dataset(s)
    seen = {}
    for d in docs:
        f = d["scope"] if s == "conversations" else s
        seen.setdefault(f, {})[d["content"]] = d["key"]  # dedupe by content
    for f, m in seen.items():
        texts = list(m)
        folds[f] = [c.get(texts), [m[t] for t in texts], None, s]
    qv = c.get([q["text"] for q in qs], query=True)
    for q, v in zip(qs, qv):
        questions.append({**q, "fold": q["scope"] or s, "set": s, "v": v})
tp = yaml.safe_load(open(os.path.join(HERE, "paraphrases_tuning.yaml")))["pairs"]
pairs = []
for n, p in enumerate(tp):
    f = f"tuning{n // 10}"
    texts = [p["target"], *p["distractors"]]
    fm = folds.setdefault(f, [np.zeros((0, PW.shape[1])), [], [], "tuning"])
    start = len(fm[1])
    fm[0] = np.vstack([fm[0], c.get(texts)])
    fm[1] += [f"t{n}/{i}" for i in range(5)]
    fm[2].append(np.arange(start, start + 5))
    pairs.append(
        {"fold": f, "v": c.get([p["query"]], query=True)[0], "rows": np.arange(start, start + 5)}
    )
held = yaml.safe_load(open(os.path.join(HERE, "paraphrases.yaml")))["pairs"]
heldq = [
    (c.get([h["query"]], query=True)[0], c.get([h["target"], *h["distractors"]])) for h in held
]
for f, fm in folds.items():
    n = len(fm[1])
    stores = [np.arange(n)] + [
        rng.choice(n, size, replace=False) for size in (5, 20) for _ in range(60)
    ]
    if fm[2]:
        stores += fm[2]
    fm[2] = stores


def noise_of(v, kind, skip=None):
    def mx(M):
        x = M @ v
        if skip is not None:
            x = np.delete(x, skip)
        return x

    if kind == "W":
        return mx(PW).max()
    if kind == "S":
        return mx(PS).max()
    if kind == "WS":
        return max(mx(PW).max(), mx(PS).max())
    if kind == "W3":
        return np.sort(mx(PW))[-3:].mean()
    if kind == "Smean":
        return mx(PS).mean()
    if kind == "Wmean":
        return mx(PW).mean()
    raise ValueError(kind)


def hub(M, skip=None):  # each record's best cosine with the probe queries
    X = M @ PQ.T
    if skip is not None:
        X = np.delete(X, skip, axis=1)
    return X.max(axis=1)


def hubmean(M, skip=None):
    X = M @ PQ.T
    if skip is not None:
        X = np.delete(X, skip, axis=1)
    return X.mean(axis=1)


RULES = {
    "fixed only": None,
    "W (lantern's)": ("W", 0),
    "S sentences": ("S", 0),
    "W or S (max)": ("WS", 0),
    "W top3 mean": ("W3", 0),
    "W + record hub (csls)": ("W", 1),
    "S + record hub (csls)": ("S", 1),
    "Smean + hubmean (csls mean)": ("Smean", 2),
    "Wmean + hubmean": ("Wmean", 2),
}


def scores(rule, v, M, skip=None):
    """per record: its excess over its own threshold (keep iff excess >= margin)"""
    kind, h = RULES[rule]
    n = noise_of(v, kind, skip)
    cos = M @ v
    if h == 0:
        return cos - n
    if h == 1:
        return cos - 0.5 * (n + hub(M, skip))
    return cos - 0.5 * (n + hubmean(M, skip))


res = {}


def noise_vec(kind):
    return np.array([noise_of(PQ[p], kind, skip=p) for p in range(len(PROBES))])


NV = {k: noise_vec(k) for k in ("W", "S", "WS", "W3", "Smean", "Wmean")}
FC = {}
for f, (M, keys, stores, _) in folds.items():
    C = PQ @ M.T
    o = np.argsort(-C, axis=0)
    first, second = C[o[0], np.arange(C.shape[1])], C[o[1], np.arange(C.shape[1])]
    hubskip = np.where(
        np.arange(len(PROBES))[:, None] == o[0][None, :], second[None, :], first[None, :]
    )
    tot = C.sum(0)
    hubmeanskip = (tot[None, :] - C) / (len(PROBES) - 1)
    FC[f] = (C, hubskip, hubmeanskip)
import os

ONLY = os.environ.get("ONLY", "").split("|")
for rule in [r for r in RULES if not ONLY[0] or r in ONLY]:
    top, exc = {}, {}
    for f, (M, keys, stores, _) in folds.items():
        C, hs, hm = FC[f]
        if RULES[rule] is None:
            X = None
        else:
            kind, h = RULES[rule]
            n = NV[kind][:, None]
            X = C - n if h == 0 else (C - 0.5 * (n + hs) if h == 1 else C - 0.5 * (n + hm))
        T, E = [], []
        for st in stores:
            T += list(C[:, st].max(1))
            if X is not None:
                E += list(X[:, st].max(1))
        top[f], exc[f] = T, E
    fl = list(folds)
    TOPM = {f: max(top[f]) for f in fl}
    EXCM = {f: (max(exc[f]) if exc[f] else -np.inf) for f in fl}
    FX = {h: max(TOPM[f] for f in fl if f != h) + 0.001 for h in fl}
    MG = {h: (max(EXCM[f] for f in fl if f != h) + 0.001 if RULES[rule] else np.inf) for h in fl}

    def fixed(h):
        return FX[h]

    def marg(h):
        return MG[h]

    leaks = sum(
        sum((t >= fixed(f)) or (e >= marg(f)) for t, e in zip(top[f], exc[f] or [-9] * len(top[f])))
        for f in fl
    )
    total = sum(len(top[f]) for f in fl)

    def keep(v, M, f):
        cos = M @ v
        k = cos >= fixed(f)
        if RULES[rule]:
            k |= scores(rule, v, M) >= marg(f)
        return cos, k

    out = {}
    dr = np.random.default_rng(1)
    for q in questions:
        M, keys = folds[q["fold"]][0], folds[q["fold"]][1]
        cos, k = keep(q["v"], M, q["fold"])
        order = [i for i in np.argsort(-cos, kind="stable") if k[i]][:5]
        got = (
            sum(keys[i] in q["targets"] for i in order) / len(q["targets"])
            if False
            else sum(t in {keys[i] for i in order} for t in q["targets"]) / len(q["targets"])
        )
        out.setdefault((q["set"], "R@5"), []).append(got)
        ans = [i for i, kk in enumerate(keys) if kk == q["targets"][0]]
        others = [i for i, kk in enumerate(keys) if kk not in q["targets"]]
        for _ in range(int(os.environ.get("DRAWS", "3"))):
            if not ans:
                out.setdefault((q["set"], "4"), []).append(0.0)
                continue
            st = np.asarray(ans[:1] + list(dr.choice(others, 4, replace=False)))
            cs, kk = keep(q["v"], M[st], q["fold"])
            out.setdefault((q["set"], "4"), []).append(float(np.argmax(cs) == 0 and kk[0]))
    for p in pairs:
        M = folds[p["fold"]][0][p["rows"]]
        cs, kk = keep(p["v"], M, p["fold"])
        out.setdefault(("tuning", "first"), []).append(float(np.argmax(cs) == 0 and kk[0]))
    # held-out paraphrase set: margins chosen on all folds
    allf = max(max(top[f]) for f in fl) + 0.001
    allm = max(max(exc[f]) for f in fl) + 0.001 if RULES[rule] else np.inf
    hk = 0
    for v, M in heldq:
        cos = M @ v
        k = cos >= allf
        if RULES[rule]:
            k |= scores(rule, v, M) >= allm
        hk += int(np.argmax(cos) == 0 and k[0])
    print(
        f"{rule:30} leaks {leaks:4d}/{total} | recall R@5 {np.mean(out['recall', 'R@5']):.3f} 4oth {np.mean(out['recall', '4']):.3f} | conv R@5 {np.mean(out['conversations', 'R@5']):.3f} 4oth {np.mean(out['conversations', '4']):.3f} | tuning first {int(sum(out['tuning', 'first']))}/{len(pairs)} | all-fold fixed {allf:.3f} margin {allm:.3f} | HELD-OUT {hk}/45",
        flush=True,
    )
