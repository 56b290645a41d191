"""Every hit and score of the benchmarks' searches, dumped to JSON: a refactoring of search must
leave them the same to the bit.

    python benchmarks/same_hits.py build DIR          # the stores (once, with any checkout)
    python benchmarks/same_hits.py dump DIR OUT.json  # the hits of this checkout
    python benchmarks/same_hits.py compare A.json B.json

Searched: ``benchmarks/retrieval.py``'s two sets (their questions, each mode, as the benchmark
asks them, then with ``explain``, an offset and no limit), a 10,000-record store of the shared
corpus (``search_speed.py``'s query words, each mode, pages and no limit), and the chunks of the
conversational set's sessions ingested as transcripts and the recall set's records as notes
(the two sets' questions, each mode, with ``explain`` and a page). Each hit is its id (the
record's, or the chunk's reference) and its score as ``repr`` of the float, so that any bit
that moves shows.
"""

from __future__ import annotations

import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, REPO)
MODES = ("keyword", "semantic", "hybrid")


def build(folder: str) -> None:
    sys.path.insert(0, HERE)
    import retrieval
    from search_speed import build as build_speed

    from lantern_git.evidence.sources import SourceInput
    from lantern_git.store import Store

    for name in retrieval.SETS:
        docs, _ = retrieval.dataset(name)
        store, _ = retrieval.build_store(os.path.join(folder, name), docs)
        store.search("warm", mode="hybrid")
        store.close()
    words = build_speed(os.path.join(folder, "10k"), 10_000)
    with open(os.path.join(folder, "words.json"), "w") as handle:
        json.dump(words, handle)
    store = Store.init(os.path.join(folder, "chunks"), author="Bench <bench@example.com>")
    inputs = []
    sessions: dict[str, list[str]] = {}
    for doc in retrieval.load(os.path.join(HERE, "conversations", "turns.jsonl")):
        sessions.setdefault(f"c{doc['conversation']}-s{doc['session']}", []).append(doc["content"])
    for key, lines in sessions.items():
        body = "\n".join(lines) + "\n"
        inputs.append(SourceInput(body.encode(), f"{key}.txt", "transcript", f"conv://{key}", key))
    for doc in retrieval.load(os.path.join(HERE, "recall", "records.jsonl")):
        inputs.append(
            SourceInput(doc["content"].encode() + b"\n", f"{doc['key']}.md", "note", doc["key"])
        )
    store.sources.add(inputs)
    store.sources.search("warm", mode="hybrid")
    store.close()


def _hits(hits: list, chunk: bool) -> list:
    out = []
    for hit in hits:
        key = hit.ref if chunk else hit.record.id
        item = [key, repr(hit.score), hit.mode]
        if hit.explain is not None:
            item.append(json.dumps(hit.explain, sort_keys=True))
        out.append(item)
    return out


def dump(folder: str, out_path: str) -> None:
    sys.path.insert(0, HERE)
    import retrieval

    from lantern_git.store import Store

    out: dict[str, list] = {}
    for name in retrieval.SETS:
        _, questions = retrieval.dataset(name)
        store = Store.open(os.path.join(folder, name))
        for q in questions:
            scopes = (q["scope"],) if q["scope"] else ()
            for mode in MODES:
                key = f"{name}/{q['id']}/{mode}"
                out[key] = _hits(store.search(q["text"], mode=mode, scopes=scopes, limit=10), False)
                out[key + "/explain"] = _hits(
                    store.search(
                        q["text"], mode=mode, scopes=scopes, limit=7, offset=3, explain=True
                    ),
                    False,
                )
        for q in questions[:40]:
            for mode in MODES:
                hits = store.search(q["text"], mode=mode, limit=0)
                out[f"{name}/{q['id']}/{mode}/all"] = _hits(hits, False)
        store.close()
    with open(os.path.join(folder, "words.json")) as handle:
        words = json.load(handle)
    store = Store.open(os.path.join(folder, "10k"))
    for i, w in enumerate(words):
        text = w if i % 2 else f"{w} {words[(i * 7) % len(words)]}"
        for mode in MODES:
            key = f"10k/{text}/{mode}"
            out[key] = _hits(store.search(text, mode=mode, limit=10), False)
            out[key + "/page"] = _hits(
                store.search(text, mode=mode, limit=10, offset=20, explain=True), False
            )
            out[key + "/scoped"] = _hits(
                store.search(text, mode=mode, kinds=("fact",), limit=5), False
            )
            if i < 8:
                out[key + "/all"] = _hits(store.search(text, mode=mode, limit=0), False)
    store.close()
    store = Store.open(os.path.join(folder, "chunks"))
    for name in retrieval.SETS:
        _, questions = retrieval.dataset(name)
        for q in questions[:120]:
            for mode in MODES:
                key = f"chunks/{name}/{q['id']}/{mode}"
                out[key] = _hits(store.sources.search(q["text"], mode=mode, limit=10), True)
                out[key + "/explain"] = _hits(
                    store.sources.search(
                        q["text"], mode=mode, limit=5, offset=2, explain=True, kinds=("note",)
                    ),
                    True,
                )
    store.close()
    with open(out_path, "w") as handle:
        json.dump(out, handle, sort_keys=True)
    print(f"{len(out)} searches, {sum(map(len, out.values()))} hits -> {out_path}")


def compare(a_path: str, b_path: str) -> int:
    with open(a_path) as handle:
        a = json.load(handle)
    with open(b_path) as handle:
        b = json.load(handle)
    differ = [key for key in sorted(a.keys() | b.keys()) if a.get(key) != b.get(key)]
    for key in differ[:20]:
        print(key, "\n  ", a.get(key), "\n  ", b.get(key))
    total = sum(map(len, a.values()))
    print(f"{len(a)} searches, {total} hits; {len(differ)} searches differ")
    return 1 if differ else 0


if __name__ == "__main__":
    command, *rest = sys.argv[1:]
    if command == "build":
        build(*rest)
    elif command == "dump":
        dump(*rest)
    else:
        sys.exit(compare(*rest))
