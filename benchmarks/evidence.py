"""Evidence writes and verify, against git's own cost for the same bytes, in one run.

    python benchmarks/evidence.py            # 1,000 x 10 KB, 10 MB, append, verify at 10,000
    python benchmarks/evidence.py --quick    # 200 x 10 KB, 10 MB, append, verify at 2,000

Figures (median of --reps runs where a run is cheap):

- ingest of N sources of ~10 KB in one ``source add`` (one CLI process) against
  ``git add && git commit`` of the same files in a plain repository;
- ingest of one 10 MB transcript, the same way;
- ``source append`` of 1 KB to that 10 MB transcript (library, one commit each) against
  ``git hash-object -w`` of the grown file (git's own blob write, the floor) and against
  ``git add && git commit`` of the same change;
- ``lantern verify`` over N records, each citing lines of one of 100 sources.

Stores live in a temporary folder that is removed afterwards.
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

from lantern_git.evidence.sources import SourceInput, blob_id  # noqa: E402
from lantern_git.model.record import Record  # noqa: E402
from lantern_git.store import Store  # noqa: E402

PY = sys.executable
ENV = dict(os.environ, LANTERN_AUTHOR="Bench <bench@example.com>", PYTHONDONTWRITEBYTECODE="1")
ENV.update(
    GIT_AUTHOR_NAME="Bench",
    GIT_AUTHOR_EMAIL="bench@example.com",
    GIT_COMMITTER_NAME="Bench",
    GIT_COMMITTER_EMAIL="bench@example.com",
)
ENV.pop("LANTERN_STORE", None)
WORDS = [
    "deploy",
    "review",
    "freeze",
    "editor",
    "helix",
    "tea",
    "coffee",
    "meeting",
    "agenda",
    "budget",
    "latency",
    "cache",
    "index",
    "merge",
    "branch",
    "commit",
    "transcript",
    "memory",
    "source",
    "evidence",
    "user",
    "assistant",
    "question",
    "answer",
    "schedule",
    "friday",
    "monday",
    "release",
    "incident",
    "postmortem",
    "rollback",
    "feature",
    "flag",
]


def sentence(rng: random.Random) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(6, 16)))


def transcript(rng: random.Random, size: int) -> bytes:
    lines, total, turn = [], 0, 0
    while total < size:
        line = f"{'User' if turn % 2 == 0 else 'Assistant'}: {sentence(rng)}.\n"
        lines.append(line)
        total += len(line)
        turn += 1
    return "".join(lines).encode()


def run(argv, cwd=None, stdin=None) -> float:
    start = time.perf_counter()
    subprocess.run(argv, cwd=cwd, env=ENV, check=True, capture_output=True, input=stdin)
    return time.perf_counter() - start


def git(root, *args) -> float:
    return run(["git", *args], cwd=root)


# Lantern fsyncs every object, file and ref it writes before it says a write is done; git by
# default does not. The second baseline asks git for the same (core.fsync=all).
DURABLE = ("-c", "core.fsync=all", "-c", "core.fsyncMethod=fsync")


def git_commit_all(repo: str, message: str, durable: bool = False) -> float:
    extra = DURABLE if durable else ()
    return git(repo, *extra, "add", "-A") + git(repo, *extra, "commit", "-q", "-m", message)


def copy_repo(files: list[str], path: str) -> str:
    plain_repo(path)
    for name in files:
        shutil.copy(name, path)
    return path


def plain_repo(path: str) -> str:
    os.makedirs(path)
    git(path, "init", "-q", "-b", "main")
    git(path, "commit", "-q", "--allow-empty", "-m", "start")
    return path


def new_store(path: str) -> Store:
    run([PY, "-m", "lantern_git", "init", path])
    return Store.open(path, actor="bench", author="Bench <bench@example.com>")


def row(name: str, ours: float, base: float, base_name: str, target: float) -> None:
    ratio = ours / base if base else float("inf")
    verdict = "ok" if ratio <= target else "MISSED"
    print(
        f"{name:<44} {ours * 1000:9.1f} ms   {base_name} {base * 1000:9.1f} ms   "
        f"ratio {ratio:5.2f}  (target <= {target:.2f}: {verdict})"
    )


def bench_ingest_many(tmp: str, count: int, rng: random.Random) -> None:
    docs = os.path.join(tmp, "docs")
    os.makedirs(docs)
    for i in range(count):
        with open(os.path.join(docs, f"note-{i:05d}.md"), "wb") as handle:
            handle.write(transcript(rng, 10_000))
    paths = [os.path.join(docs, n) for n in sorted(os.listdir(docs))]
    base = git_commit_all(copy_repo(paths, os.path.join(tmp, "plain-many")), "many")
    durable = git_commit_all(copy_repo(paths, os.path.join(tmp, "durable-many")), "many", True)
    store = os.path.join(tmp, "store-many")
    new_store(store)
    ours = run([PY, "-m", "lantern_git", "--store", store, "source", "add", *paths])
    name = f"source add of {count} x 10 KB (one process)"
    row(name, ours, base, "git add+commit", 5.0)
    row(name, ours, durable, "the same, fsync=all", 3.0)


def bench_big(tmp: str, rng: random.Random, reps: int) -> None:
    body = transcript(rng, 10 * 1024 * 1024)
    path = os.path.join(tmp, "big.md")
    with open(path, "wb") as handle:
        handle.write(body)
    repo = copy_repo([path], os.path.join(tmp, "plain-big"))
    base = git_commit_all(repo, "big")
    durable = git_commit_all(copy_repo([path], os.path.join(tmp, "durable-big")), "big", True)
    # hash-object in a repository of its own: git skips compressing an object it already has.
    floor_repo = plain_repo(os.path.join(tmp, "plain-floor"))
    store_path = os.path.join(tmp, "store-big")
    new_store(store_path)
    ours = run([PY, "-m", "lantern_git", "--store", store_path, "source", "add", path])
    row("source add of one 10 MB transcript", ours, base, "git add+commit", 3.0)
    row("source add of one 10 MB transcript", ours, durable, "the same, fsync=all", 3.0)

    store = Store.open(store_path, actor="bench", author="Bench <bench@example.com>")
    [source] = store.sources.list()
    # A write leaves a large text's chunks to the next read: this search indexes them.
    start = time.perf_counter()
    store.sources.search("deploy review")
    took = time.perf_counter() - start
    print(f"{'first source search after it (indexes 10 MB)':<44} {took * 1000:9.1f} ms")
    chunk = transcript(rng, 1024).decode()
    appends, floors, commits = [], [], []
    grown = body
    for _ in range(reps):
        start = time.perf_counter()
        store.sources.append(source.id, chunk)
        appends.append(time.perf_counter() - start)
        grown += chunk.encode()
        for folder in (repo, floor_repo):
            with open(os.path.join(folder, "big.md"), "wb") as handle:
                handle.write(grown)
        floors.append(git(floor_repo, "hash-object", "-w", "big.md"))
        commits.append(git(repo, "add", "big.md") + git(repo, "commit", "-q", "-m", "append"))
    ours_ms = statistics.median(appends)
    row(
        "source append 1 KB to 10 MB (library)",
        ours_ms,
        statistics.median(floors),
        "git hash-object -w",
        3.0,
    )
    row(
        "source append 1 KB to 10 MB (library)",
        ours_ms,
        statistics.median(commits),
        "git add+commit",
        3.0,
    )
    store.close()


def bench_verify(tmp: str, count: int, rng: random.Random, reps: int) -> None:
    store_path = os.path.join(tmp, "store-verify")
    store = new_store(store_path)
    inputs = [
        SourceInput(transcript(rng, 4000), f"t{i}.md", kind="transcript", uri=f"session:{i}")
        for i in range(100)
    ]
    results = store.sources.add(inputs)
    pins = []
    for result in results:
        lines = result.manifest.lines
        pins.append((result.manifest.id, blob_id(_body(store_path, result.manifest.id)), lines))
    records = []
    for i in range(count):
        source_id, blob, lines = pins[i % len(pins)]
        start = rng.randint(1, max(1, lines - 3))
        ref = f"source:{source_id}@{blob[:12]}#L{start}-L{start + 2}"
        records.append(
            Record.new(kind="fact", content=f"fact {i}: {sentence(rng)}", source_refs=(ref,))
        )
    import json

    lines_jsonl = [json.dumps(r.to_dict()) for r in records]
    store.import_records(lines_jsonl)
    store.close()
    times = []
    for _ in range(reps):
        times.append(run([PY, "-m", "lantern_git", "--store", store_path, "verify"]))
    took = statistics.median(times)
    verdict = "ok" if took <= 3.0 else "MISSED"
    print(
        f"{'lantern verify, ' + str(count) + ' records citing 100 sources':<44} "
        f"{took * 1000:9.1f} ms   (target <= 3000 ms: {verdict})"
    )


def _body(store_path: str, source_id: str) -> bytes:
    folder = os.path.join(store_path, "sources", source_id[:2])
    [name] = [n for n in os.listdir(folder) if n.startswith(source_id) and n.endswith(".md")]
    with open(os.path.join(folder, name), "rb") as handle:
        return handle.read()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="Smaller sizes, for a first look.")
    parser.add_argument("--reps", type=int, default=5)
    args = parser.parse_args()
    many, records = (200, 2000) if args.quick else (1000, 10_000)
    rng = random.Random(1203)
    tmp = tempfile.mkdtemp(prefix="lantern-evidence-bench-")
    try:
        bench_ingest_many(tmp, many, rng)
        bench_big(tmp, rng, args.reps)
        bench_verify(tmp, records, rng, args.reps)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
