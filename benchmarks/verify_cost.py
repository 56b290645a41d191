"""What references cost: verify and add against reading the cited blob once, in one run.

    python benchmarks/verify_cost.py                          # this checkout
    python benchmarks/verify_cost.py --compare ~/old-lantern  # and another, side by side

One source of 200,004 lines (~20 MB) is cited by one record with 1 reference and by one with
200. Figures (median of --reps runs, library calls in this process unless said):

- the floor: reading that blob out of git and splitting it into lines (``bytes.split``), once;
- ``verify`` with the 1-reference record only, then with both (201 references): the per-ref
  cost is their difference over 200, and the ratio to the floor is the target (<= 2: the blob
  read once, plus a small constant per reference);
- ``verify`` after a new version moved every cited line down (201 ``drifted`` references,
  each searched for where its text went), timed once;
- ``lantern verify`` as a process (201 references);
- adding the 200-reference record (each reference checked and pinned): the library, and
  ``lantern memory add`` as a process (target <= 0.5 s for the library).

``--compare DIR`` runs the same measurement against the lantern_git of another checkout (an
older commit: ``git worktree add /tmp/before <commit>``) in a child process, first, and prints
both columns. Stores live in a temporary folder that is removed afterwards.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LINES = 200_004
REFS = 200
SHIFT = 7  # lines a new version inserts at the top, so that every cited line drifts
WORDS = ("deploy", "review", "freeze", "editor", "helix", "tea", "coffee", "meeting", "agenda",
         "budget", "latency", "cache", "index", "merge", "branch", "commit", "transcript",
         "memory", "source", "evidence", "question", "answer", "release", "incident")  # fmt: skip


def _code() -> str:
    """The checkout whose lantern_git is measured: ``--code DIR`` or this one."""
    if "--code" in sys.argv:
        return os.path.abspath(sys.argv[sys.argv.index("--code") + 1])
    return HERE


sys.path.insert(0, _code())

from lantern_git.evidence.sources import SourceInput  # noqa: E402
from lantern_git.store import Store  # noqa: E402

PY = sys.executable
ENV = dict(os.environ, LANTERN_AUTHOR="Bench <bench@example.com>", PYTHONPATH=_code())
ENV.update(
    GIT_AUTHOR_NAME="Bench",
    GIT_AUTHOR_EMAIL="bench@example.com",
    GIT_COMMITTER_NAME="Bench",
    GIT_COMMITTER_EMAIL="bench@example.com",
    LANTERN_EMBEDDER="none",
)
ENV.pop("LANTERN_STORE", None)


def transcript(rng: random.Random) -> bytes:
    """200,004 numbered transcript lines of about 100 bytes each: ~20 MB."""
    out = []
    for n in range(1, LINES + 1):
        speaker = "User" if n % 2 else "Assistant"
        words = " ".join(rng.choice(WORDS) for _ in range(12))
        out.append(f"{n:06d} {speaker}: {words}.".ljust(99) + "\n")
    return "".join(out).encode()


def timed(call, reps: int) -> float:
    times = []
    for _ in range(reps):
        start = time.perf_counter()
        call()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def cli(*args: str) -> float:
    # Run from the measured checkout: ``-m`` imports lantern_git from the working directory
    # first, ahead of an installed (editable) copy.
    start = time.perf_counter()
    subprocess.run(
        [PY, "-m", "lantern_git", *args], env=ENV, cwd=_code(), capture_output=True, check=True
    )
    return time.perf_counter() - start


def measure(reps: int) -> dict[str, float]:
    rng = random.Random(2612)
    body = transcript(rng)
    tmp = tempfile.mkdtemp(prefix="lantern-verify-cost-")
    try:
        root = os.path.join(tmp, "store")
        cli("init", root)
        store = Store.open(root, actor="bench", author="Bench <bench@example.com>")
        [ingested] = store.sources.add(
            [SourceInput(body, "long.md", kind="transcript", uri="session:long")]
        )
        source_id = ingested.manifest.id
        refs = [f"source:{source_id}#L{1000 * i + 1}-L{1000 * i + 3}" for i in range(REFS)]
        figures: dict[str, float] = {"bytes": len(body), "lines": LINES}

        git = store.git.repo
        blob = git.revparse_single(f"HEAD:sources/{source_id[:2]}/{source_id}.md").id
        # The floor is the same for every checkout measured: git's read and one C split.
        figures["floor"] = timed(lambda: git[blob].data.split(b"\n"), reps)

        store.add("one citation", kind="fact", source_refs=[f"source:{source_id}#L5"])
        figures["verify_1"] = timed(store.sources.verify, reps)

        adds = [timed(lambda: store.add("many citations", kind="fact", source_refs=refs), 1)]
        report = store.sources.verify()
        assert report.ok and report.checked == REFS + 1, report.to_dict()
        figures["verify_201"] = timed(store.sources.verify, reps)
        figures["per_ref"] = (figures["verify_201"] - figures["verify_1"]) / REFS
        figures["ratio"] = figures["verify_201"] / figures["floor"]
        figures["cli_verify"] = min(cli("--store", root, "verify") for _ in range(2))

        store.sources.add(
            [SourceInput(b"new\n" * SHIFT + body, "long.md", kind="transcript", uri="session:long")]
        )
        start = time.perf_counter()
        drifted = store.sources.verify()  # once: 77 s before verify kept its bodies
        figures["verify_drifted"] = time.perf_counter() - start
        assert len(drifted.problems) == drifted.checked == REFS + 1, drifted.checked
        assert all(p.moved_to for p in drifted.problems), drifted.problems[:3]

        for n in range(1, reps):
            content = f"many citations, again ({n})"
            adds.append(timed(lambda c=content: store.add(c, kind="fact", source_refs=refs), 1))
        figures["add_200"] = statistics.median(adds)
        other = [f"source:{source_id}#L{1000 * i + 501}-L{1000 * i + 502}" for i in range(REFS)]
        argv = [a for ref in other for a in ("--source-ref", ref)]
        figures["cli_add_200"] = cli("--store", root, "memory", "add", "cli", "--kind", "fact",
                                     *argv)  # fmt: skip
        store.close()
        return figures
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


ROWS = (
    ("floor", "read the blob from git + split into lines, once", "ms"),
    ("verify_1", "verify, 1 reference", "ms"),
    ("verify_201", "verify, 201 references (library)", "ms"),
    ("per_ref", "  per reference beyond the first", "ms"),
    ("ratio", "  verify of 201 / the floor (target <= 2)", "x"),
    ("verify_drifted", "verify, 201 references, all drifted (once)", "ms"),
    ("cli_verify", "lantern verify (process), 201 references", "ms"),
    ("add_200", "add a record with 200 references (library)", "ms"),
    ("cli_add_200", "lantern memory add, 200 --source-ref (process)", "ms"),
)


def show(columns: list[tuple[str, dict[str, float]]]) -> None:
    figures = columns[0][1]
    print(f"one source of {int(figures['lines']):,} lines, {figures['bytes'] / 1e6:.1f} MB")
    print(f"{'':<50}" + "".join(f"{name:>14}" for name, _ in columns))
    for key, label, unit in ROWS:
        cells = []
        for _, data in columns:
            value = data[key]
            cells.append(f"{value:>12.2f} x" if unit == "x" else f"{value * 1000:>11.1f} ms")
        print(f"{label:<50}" + "".join(f"{c:>14}" for c in cells))
    after = columns[-1][1]
    print(
        f"targets: verify <= 2x the floor: {'yes' if after['ratio'] <= 2 else 'NO'}; "
        f"add of 200 references <= 0.5 s: {'yes' if after['add_200'] <= 0.5 else 'NO'}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--compare", metavar="DIR", help="Another checkout, measured first.")
    parser.add_argument("--code", metavar="DIR", help=argparse.SUPPRESS)
    parser.add_argument("--json", action="store_true", help="Print the figures as JSON.")
    args = parser.parse_args()
    columns = []
    if args.compare:
        child = subprocess.run(
            [PY, os.path.abspath(__file__), "--json", "--reps", str(args.reps),
             "--code", args.compare],
            check=True, capture_output=True, text=True,
        )  # fmt: skip
        columns.append((os.path.basename(os.path.normpath(args.compare)), json.loads(child.stdout)))
    figures = measure(args.reps)
    if args.json:
        print(json.dumps(figures))
        return
    columns.append(("this checkout", figures))
    show(columns)


if __name__ == "__main__":
    main()
