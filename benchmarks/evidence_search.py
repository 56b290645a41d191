"""Source search at scale: the chunk index against ``git grep`` over the same files.

    python benchmarks/evidence_search.py            # ~10,000 chunks (about a minute)
    python benchmarks/evidence_search.py --full     # also ~100,000 chunks (several minutes)
    python benchmarks/evidence_search.py --reps 15 --keep

Each size is a fresh git repository in a temporary folder (or under ``--dir``) holding generated
transcripts laid out as lantern stores sources (body + manifest, committed), so ``git grep``
searches exactly the text the index holds. Printed per size: the build, a refresh that finds
nothing changed, the median of a search (the check for changed files, then the top 10 hits, the
index kept open as a long-lived process keeps it) beside ``git grep -n -i -F`` for the same words
with the target (search no slower than git grep), then indexing one long transcript and an
append to it.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)

from lantern_git.index.chunks import ChunkIndex  # noqa: E402
from lantern_git.model.source import (  # noqa: E402
    SourceManifest,
    body_path,
    compute_source_id,
    manifest_path,
)
from lantern_git.model.source_file import describe  # noqa: E402
from lantern_git.workspace.lock import WriterLock  # noqa: E402

# Queries of different selectivity: a word in a few chunks, one in many, a phrase, two words.
QUERIES = [
    ("rare word", ["quillon"]),
    ("common word", ["deploy"]),
    ("phrase", ['"rollback plan"']),
    ("two words", ["lighthouse", "migration"]),
]
GIT_PATTERNS = {
    "rare word": ["-e", "quillon"],
    "common word": ["-e", "deploy"],
    "phrase": ["-e", "rollback plan"],
    "two words": ["-e", "lighthouse", "-e", "migration"],
}
TURNS_PER_CHUNK = 2  # the chunk rule cuts at a speaker turn once a chunk has six lines
LINES_PER_TURN = 3


def vocabulary(rng: random.Random) -> list[str]:
    syllables = ["ka", "lo", "mi", "ter", "shu", "ven", "dra", "po", "lin", "sor", "eth", "qua"]
    made = {"".join(rng.choice(syllables) for _ in range(rng.randint(2, 4))) for _ in range(6000)}
    common = [
        *("the", "a", "to", "and", "of", "we", "it", "is", "that", "for", "on", "with"),
        *("this", "be", "as", "at", "by", "from", "or", "you", "deploy", "server", "test"),
        *("branch", "commit", "review", "user", "memory", "index", "search", "build"),
    ]
    return common * 40 + sorted(made)


def transcript(rng: random.Random, words: list[str], turns: int) -> bytes:
    lines = []
    for n in range(turns):
        speaker = "User" if n % 2 else "Assistant"
        for k in range(LINES_PER_TURN):
            text = " ".join(rng.choice(words) for _ in range(rng.randint(6, 16)))
            if rng.random() < 0.002:
                text += " quillon"
            if rng.random() < 0.01:
                text += " the rollback plan"
            if rng.random() < 0.004:
                text += " lighthouse"
            if rng.random() < 0.004:
                text += " migration"
            lines.append(f"{speaker}: {text}\n" if k == 0 else f"{text}\n")
    return "".join(lines).encode()


def build_repo(folder: str, chunks: int, seed: int = 7) -> int:
    """Transcripts of ~100 chunks each, committed; returns the number of sources."""
    rng = random.Random(seed)
    words = vocabulary(rng)
    per_source = 100
    sources = max(1, chunks // per_source)
    subprocess.run(["git", "init", "-q", "-b", "main", folder], check=True)
    for n in range(sources):
        body = transcript(rng, words, per_source * TURNS_PER_CHUNK)
        uri = f"session:bench-{n}"
        sid = compute_source_id(uri, body)
        manifest = SourceManifest(
            id=sid,
            kind="transcript",
            media_type="text/plain",
            captured_at=1764690000,
            updated_at=1764690000,
            uri=uri,
            **describe(body),  # type: ignore[arg-type]
        )
        os.makedirs(os.path.join(folder, "sources", sid[:2]), exist_ok=True)
        with open(os.path.join(folder, body_path(sid, "txt")), "wb") as handle:
            handle.write(body)
        with open(os.path.join(folder, manifest_path(sid)), "wb") as handle:
            handle.write(manifest.to_yaml())
    git = ["git", "-c", "user.name=Bench", "-c", "user.email=bench@example.com"]
    subprocess.run([*git, "add", "-A"], cwd=folder, check=True)
    subprocess.run([*git, "commit", "-q", "-m", "sources"], cwd=folder, check=True)
    return sources


def timed(action, reps: int) -> list[float]:
    out = []
    for _ in range(reps):
        start = time.perf_counter()
        action()
        out.append((time.perf_counter() - start) * 1000)
    return out


def p95(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))]


def run_size(base: str, chunks: int, reps: int) -> None:
    folder = os.path.join(base, f"store-{chunks}")
    state = os.path.join(base, f"state-{chunks}")
    start = time.perf_counter()
    build_repo(folder, chunks)
    made = time.perf_counter() - start
    size = sum(
        os.path.getsize(os.path.join(d, f))
        for d, _, fs in os.walk(os.path.join(folder, "sources"))
        for f in fs
    )
    lock = WriterLock(os.path.join(state, "lock"))
    index = ChunkIndex(folder, state, lambda: lock)
    start = time.perf_counter()
    built = index.rebuild()
    build_s = time.perf_counter() - start
    n_sources, n_chunks = index.counts()
    print(
        f"\n== {n_chunks} chunks in {n_sources} sources ({size / 1e6:.1f} MB; "
        f"files written in {made:.1f} s)"
    )
    print(f"  build (rebuild)            {build_s:8.2f} s   ({built.chunks_written} chunks)")

    refresh = timed(index.refresh, reps)
    print(f"  refresh, nothing changed   {statistics.median(refresh):8.1f} ms median")
    print(
        f"  {'query (top 10)':<16} {'source search':>14} {'git grep':>10}"
        "   target: search <= git grep"
    )

    all_search: list[float] = []
    all_grep: list[float] = []
    for label, words in QUERIES:
        text = " ".join(words)
        index.search(text, limit=10)  # the first search after a commit opens its searcher

        def search(text: str = text) -> None:
            index.refresh()
            index.search(text, limit=10)

        def grep(label: str = label) -> None:
            subprocess.run(
                ["git", "grep", "-n", "-i", "-F", *GIT_PATTERNS[label], "--", "sources"],
                cwd=folder,
                stdout=subprocess.DEVNULL,
                check=False,
            )

        grep()
        s: list[float] = []
        g: list[float] = []
        for _ in range(reps):  # interleaved, so that a busy moment weighs on both alike
            s += timed(search, 1)
            g += timed(grep, 1)
        all_search += s
        all_grep += g
        ok = "ok" if statistics.median(s) <= statistics.median(g) else "MISSED"
        print(
            f"  {label:<16} {statistics.median(s):11.1f} ms {statistics.median(g):7.1f} ms   {ok}"
        )
    ms, mg = statistics.median(all_search), statistics.median(all_grep)
    print(
        f"  source search  median {ms:.1f} ms (p95 {p95(all_search):.1f})  vs  git grep median "
        f"{mg:.1f} ms (p95 {p95(all_grep):.1f})  target search <= git grep: "
        f"{'ok' if ms <= mg else 'MISSED'}"
    )
    # One long transcript (not in git: measured after the searches) grows by a turn: only its
    # tail is chunked again.
    rng = random.Random(1)
    long_body = transcript(rng, vocabulary(rng), 20000)
    uri = "session:long"
    sid = compute_source_id(uri, long_body)
    os.makedirs(os.path.join(folder, "sources", sid[:2]), exist_ok=True)

    def write(body: bytes) -> None:
        manifest = SourceManifest(
            id=sid,
            kind="transcript",
            media_type="text/plain",
            captured_at=1764690000,
            updated_at=1764690000,
            uri=uri,
            **describe(body),  # type: ignore[arg-type]
        )
        with open(os.path.join(folder, body_path(sid, "txt")), "wb") as handle:
            handle.write(body)
        with open(os.path.join(folder, manifest_path(sid)), "wb") as handle:
            handle.write(manifest.to_yaml())

    write(long_body)
    start = time.perf_counter()
    first = index.refresh()
    whole_ms = (time.perf_counter() - start) * 1000
    write(long_body + b"User: one more turn about the quillon\nand its answer\n")
    start = time.perf_counter()
    appended = index.refresh()
    append_ms = (time.perf_counter() - start) * 1000
    print(
        f"  index a {len(long_body) / 1e6:.1f} MB transcript {whole_ms:8.1f} ms "
        f"({first.chunks_written} chunks); append to it {append_ms:.1f} ms "
        f"({appended.chunks_written} chunks written)"
    )

    index.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--full", action="store_true", help="also ~100,000 chunks")
    parser.add_argument("--reps", type=int, default=9)
    parser.add_argument("--dir", help="where to build the stores (default: a temporary folder)")
    parser.add_argument("--keep", action="store_true", help="keep the stores afterwards")
    args = parser.parse_args()
    base = args.dir or tempfile.mkdtemp(prefix="lantern-evidence-bench-")
    os.makedirs(base, exist_ok=True)
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} cpus; stores under {base}")
    try:
        for chunks in [10_000, 100_000] if args.full else [10_000]:
            run_size(base, chunks, args.reps)
    finally:
        if not args.keep:
            shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
