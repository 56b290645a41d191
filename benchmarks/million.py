"""A million records: what each step costs, and what breaks first. Not in CI (hours, gigabytes).

    nice -n 5 python benchmarks/million.py --dir /tmp/million          # 1,000,000 records
    python benchmarks/million.py --dir /tmp/m --size 200000            # a smaller try first
    python benchmarks/million.py --dir /tmp/million --report           # the table, from the log
    python benchmarks/million.py --dir /tmp/million --from commands    # the store built: resume

The store is built from the shared corpus generator (as ``run.py`` builds its stores) through
``Store.import_records``, in one import (one commit; ``--batch`` splits it), then each figure
the scale issue lists is measured once, in this order: import, full index rebuild, CLI list,
add and search, a list after a pull of 100 records, ``git status``, ``git gc``, a
``git clone --no-local`` (its time and size), the first command in that clone, and the peak
RSS of each process. Every step is appended to ``<dir>/million.jsonl`` as soon as it ends,
with the load average beside it (the machine may be shared), so a run cut off still says what
it measured and which step it was in; ``--report`` prints the markdown table docs/speed.md
carries.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import run  # noqa: E402 - the benchmark's own helpers: corpus, stores, processes, pulls


def log(path: str, step: str, **figures: object) -> None:
    entry = {"step": step, "load": os.getloadavg()[0], "at": time.strftime("%H:%M:%S"), **figures}
    with open(path, "a", encoding="utf-8") as handle:
        handle.write(json.dumps(entry) + "\n")
    print(json.dumps(entry), flush=True)


def du(path: str) -> int:
    out = subprocess.run(["du", "-sb", path], capture_output=True, text=True, check=True)
    return int(out.stdout.split()[0])


def timed_git(root: str, *args: str) -> float:
    start = time.perf_counter()
    subprocess.run(["git", *args], cwd=root, env=run.ENV, check=True, capture_output=True)
    return time.perf_counter() - start


def build(root: str, size: int, batch: int, journal: str) -> None:
    import resource

    from lantern_git.store import Store

    store = Store.init(root, author="Bench <bench@example.com>")
    store.close()
    done = 0
    while done < size:
        count = min(batch, size - done)
        lines = run.jsonl(run.corpus.iter_corpus(count, start=done))
        start = time.perf_counter()
        store = Store.open(root, author="Bench <bench@example.com>")
        store.import_records(lines)
        store.close()
        done += count
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        log(journal, "import batch", records=done, s=time.perf_counter() - start, peak_mb=peak)


def measure(root: str, size: int, journal: str, start_at: str | None = None) -> None:
    """Each step in turn (from ``start_at``, one of :data:`STEPS`, where a run was cut off)."""
    lantern = [*run.LANTERN, "--store", root]
    clone = root + "-clone"

    def rebuild() -> None:
        elapsed, peak = run.run_process([run.PY, "-c", REBUILD, run.REPO, root])
        log(journal, "full index rebuild", s=elapsed, peak_mb=peak)

    def commands() -> None:
        run.warm_bytecode(root)
        elapsed, peak = run.run_process(run.IMPORT_FLOOR)
        log(journal, "import floor", s=elapsed, peak_mb=peak)
        for _ in range(3):
            elapsed, peak = run.run_process([*lantern, "memory", "list", "--limit", "50"])
            log(journal, "lantern memory list --limit 50", s=elapsed, peak_mb=peak)
        # Records no earlier run of this store added: an add of an existing record (the same
        # content, so the same id) changes nothing and costs no commit.
        with open(journal, encoding="utf-8") as handle:
            added = sum('"lantern memory add"' in line for line in handle)
        for rec in run.corpus.extra_records(size + added, 3):
            options = ["--kind", rec.kind, "--scope", rec.scope]
            elapsed, peak = run.run_process([*lantern, "memory", "add", rec.content, *options])
            log(journal, "lantern memory add", s=elapsed, peak_mb=peak)
        for word in run.corpus.query_words(3):
            elapsed, peak = run.run_process([*lantern, "memory", "search", word, "--limit", "10"])
            log(journal, "lantern memory search", s=elapsed, peak_mb=peak, query=word)

    def watched() -> None:
        with run.watching(root):
            for _ in range(4):
                elapsed, peak = run.run_process([*lantern, "memory", "list", "--limit", "50"])
                log(journal, "memory list, lantern index watch running", s=elapsed, peak_mb=peak)

    def scan() -> None:
        scan_start = time.perf_counter()
        run.naive_scan(root, "user:u1")
        log(journal, "naive scan (read + parse every file)", s=time.perf_counter() - scan_start)

    def pull() -> None:
        run.git(root, "merge", "--ff-only", "-q", run.pull_commit(root, 0))
        elapsed, peak = run.run_process([*lantern, "memory", "list", "--limit", "50"])
        log(journal, "list after a pull of 100 records", s=elapsed, peak_mb=peak)

    def status() -> None:
        log(journal, "git status", s=timed_git(root, "status", "--porcelain"))
        log(journal, "git status (again, warm)", s=timed_git(root, "status", "--porcelain"))

    def gc() -> None:
        log(journal, "size before gc", git_bytes=du(os.path.join(root, ".git")))
        elapsed = timed_git(root, "gc", "-q")
        log(journal, "git gc", s=elapsed, git_bytes=du(os.path.join(root, ".git")))

    def cloned() -> None:
        shutil.rmtree(clone, ignore_errors=True)
        start = time.perf_counter()
        subprocess.run(["git", "clone", "-q", "--no-local", root, clone], check=True, env=run.ENV)
        log(journal, "git clone --no-local", s=time.perf_counter() - start, bytes=du(clone))
        listing = [*run.LANTERN, "--store", clone, "memory", "list", "--limit", "50"]
        elapsed, peak = run.run_process(listing)
        log(journal, "first command in the clone", s=elapsed, peak_mb=peak)
        elapsed, peak = run.run_process(listing)
        log(journal, "second command in the clone", s=elapsed, peak_mb=peak)
        log(journal, "done", index_bytes=du(os.path.join(root, ".lantern")))

    steps = dict(zip(STEPS, [rebuild, commands, watched, scan, pull, status, gc, cloned]))
    names = list(steps)
    for name in names[names.index(start_at) if start_at else 0 :]:
        steps[name]()


# The steps of ``measure``, in order: a run cut off resumes with --from STEP.
STEPS = ("rebuild", "commands", "watched", "scan", "pull", "status", "gc", "clone")


REBUILD = """
import sys
sys.path.insert(0, sys.argv[1])
from lantern_git.store import Store
store = Store.open(sys.argv[2])
store.rebuild_index()
store.close()
"""


def report(journal: str) -> str:
    rows = ["| step | figure | peak RSS | load average |", "|---|---|---|---|"]
    with open(journal, encoding="utf-8") as handle:
        for line in handle:
            entry = json.loads(line)
            figures = []
            if "s" in entry:
                figures.append(run.fmt(entry["s"]))
            for key in ("records", "git_bytes", "bytes", "index_bytes"):
                if key in entry:
                    value = entry[key]
                    figures.append(f"{value:,}" if key == "records" else f"{value / 2**20:,.0f} MB")
            peak = f"{entry['peak_mb']:.0f} MB" if "peak_mb" in entry else ""
            cells = [entry["step"], ", ".join(figures), peak, f"{entry['load']:.1f}"]
            rows.append(f"| {' | '.join(cells)} |")
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dir", required=True, help="where the store (and its clone) go")
    parser.add_argument("--size", type=int, default=1_000_000, help="records (default 1M)")
    parser.add_argument("--report", action="store_true", help="print the table of a run")
    parser.add_argument("--batch", type=int, help="records per import (default: all at once)")
    parser.add_argument("--measure-only", action="store_true", help="the store is built")
    parser.add_argument("--from", dest="start_at", choices=STEPS, help="measure from this step")
    args = parser.parse_args(argv)
    journal = os.path.join(args.dir, "million.jsonl")
    if args.report:
        print(report(journal))
        return 0
    os.makedirs(args.dir, exist_ok=True)
    # Compiled bytecode for every timed process, lantern's and the import floor's (run.ENV)
    run.ENV["PYTHONPYCACHEPREFIX"] = os.path.join(args.dir, "bytecode")
    root = os.path.join(args.dir, "store")
    log(journal, "start", records=args.size)
    if not (args.measure_only or args.start_at):
        build(root, args.size, args.batch or args.size, journal)
    measure(root, args.size, journal, args.start_at)
    return 0


if __name__ == "__main__":
    sys.exit(main())
