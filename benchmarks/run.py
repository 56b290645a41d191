"""Speed at scale: lantern against its baselines, measured in the same run.

    python benchmarks/run.py            # 1,000, 10,000 and 100,000 records (~20 minutes)
    python benchmarks/run.py --quick    # 1,000 and 10,000 only (about four minutes)
    python benchmarks/run.py --sizes 1000,50000 --reps 9
    python benchmarks/run.py --evidence [--quick]   # sources: ingest, append, verify, search
    python benchmarks/run.py --semantic [--quick]   # search by mode, embedding time, peak RSS
    python benchmarks/run.py --recall               # recall@k and MRR on the labelled set

Besides the library and the CLI, it measures what agents live with: a fresh ``git clone`` of the
store (first and second list, then a list after a pull of 100 records), and ``lantern mcp``
through the MCP SDK's stdio client (add, and a list with nothing changed).

Stores are built from the shared corpus generator (``<repo>/../shared/bench/corpus.py``, or the
folder named by ``LANTERN_BENCH_SHARED``) through ``lantern import``'s library path, under
``bench-stores/`` (gitignored) unless ``--dir`` says otherwise, and removed afterwards unless
``--keep``. Every figure is printed as median and p95 next to its baseline and the ratio.
"""

from __future__ import annotations

import argparse
import calendar
import contextlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SHARED = os.environ.get("LANTERN_BENCH_SHARED") or os.path.join(REPO, "..", "shared", "bench")
sys.path.insert(0, os.path.abspath(SHARED))
sys.path.insert(0, REPO)

import corpus  # noqa: E402 - located at run time, never copied into the project

from lantern_git.model.record import Record  # noqa: E402
from lantern_git.model.record_file import record_path  # noqa: E402
from lantern_git.store import Store  # noqa: E402

PY = sys.executable
LANTERN = [PY, "-m", "lantern_git"]
IMPORT_FLOOR = [PY, "-c", "import pygit2, yaml, click, whoosh.index"]
# The peer's figures, basic-memory 0.24.1 at N=1000, as recorded beside the shared corpus;
# docs/speed.md compares them with lantern's.
PEER = {
    "write_inproc_ms": 347.0,
    "search_ms": 50.0,
    "bulk_index_s": 121.0,
    "cli_write_s": 9.4,
    "peak_mb": 265.0,
}
ENV = dict(os.environ, LANTERN_AUTHOR="Bench <bench@example.com>")
ENV.pop("LANTERN_STORE", None)
# Every measured process runs from compiled bytecode, lantern's and its dependencies' alike, as
# an installed lantern does (pip compiles it at install): with PYTHONDONTWRITEBYTECODE, an
# editable checkout compiled lantern's ~85 modules in every CLI process (0.1-0.3 s) while the
# import floor read its libraries' bytecode from site-packages. The bytecode goes to a folder
# of the run (``main`` sets PYTHONPYCACHEPREFIX), not into the checkout, and ``warm_bytecode``
# writes it before the first timed process.
ENV.pop("PYTHONDONTWRITEBYTECODE", None)
# No automatic gc from the benchmark's own git commands: a store's import leaves its objects
# loose, and the first `git merge` of a pull (or the commit of a baseline) past 6,700 loose
# objects starts `git gc --auto` in the background, which then packs 100k objects beside every
# later figure. `git gc` is measured as its own step where it is (million.py).
ENV.update(GIT_CONFIG_COUNT="1", GIT_CONFIG_KEY_0="gc.auto", GIT_CONFIG_VALUE_0="0")


# ---------------------------------------------------------------- measuring


def median(values):
    return statistics.median(values)


def p95(values):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]


def timed(fn, reps, setup=None):
    out = []
    for i in range(reps):
        if setup:
            setup(i)
        start = time.perf_counter()
        fn(i)
        out.append(time.perf_counter() - start)
    return out


# A process's peak RSS (ru_maxrss) starts at its parent's RSS when it is spawned (Linux keeps
# the high-water mark across exec), and this script holds a whole corpus: 411 MB reported for
# `python -c pass` spawned from a 400 MB parent. So a small launcher spawns the measured
# process, times it and reports its peak; stdout goes to /dev/null.
LAUNCHER = """
import os, sys, time
start = time.perf_counter()
pid = os.posix_spawn(sys.argv[1], sys.argv[1:], os.environ,
                     file_actions=[(os.POSIX_SPAWN_OPEN, 1, os.devnull, os.O_WRONLY, 0)])
_, status, usage = os.wait4(pid, 0)
print(time.perf_counter() - start, usage.ru_maxrss, os.waitstatus_to_exitcode(status),
      usage.ru_utime + usage.ru_stime)
"""
# CPU time (user + system) of each process run_process ran, its waited-for children included
# (the freshness check's finds): on a loaded machine wall times swing, CPU times much less.
CPU_TIMES: list[float] = []


def run_process(argv, cwd=None):
    """Wall time and peak RSS (MB) of one whole process; its CPU time goes to CPU_TIMES."""
    proc = subprocess.run(
        [PY, "-c", LAUNCHER, *argv], cwd=cwd, env=ENV, capture_output=True, check=False
    )
    err = proc.stderr.decode(errors="replace")
    try:
        elapsed, peak_kb, code, cpu = proc.stdout.split()
    except ValueError:
        raise RuntimeError(f"{' '.join(argv)}: launcher failed: {err[-2000:]}") from None
    if int(code) != 0:
        raise RuntimeError(f"{' '.join(argv)} failed ({int(code)}): {err[-2000:]}")
    CPU_TIMES.append(float(cpu))
    return float(elapsed), int(peak_kb) / 1024.0


def cpu_of(count):
    """The CPU times of the last ``count`` processes run_process ran."""
    return CPU_TIMES[-count:]


def warm_bytecode(root):
    """Compile what the timed processes import, once, before any is timed (``ENV``)."""
    run_process(IMPORT_FLOOR)
    run_process([*LANTERN, "--help"])
    run_process([*LANTERN, "--store", root, "memory", "list", "--limit", "1"])


def git(root, *args):
    subprocess.run(["git", *args], cwd=root, check=True, env=ENV, capture_output=True)


# ---------------------------------------------------------------- the corpus as records


def to_record(rec) -> Record:
    stamp = calendar.timegm(time.strptime(rec.created, "%Y-%m-%dT%H:%M:%SZ"))
    return Record.new(
        kind=rec.kind,
        content=rec.content,
        scope=rec.scope,
        priority=rec.priority,
        urgency=rec.urgency,
        now=stamp,
    )


def jsonl(records) -> list[bytes]:
    return [json.dumps(to_record(r).to_dict()).encode() for r in records]


def build_store(root: str, n: int) -> dict:
    """A store of the first ``n`` corpus records, through the import path; its timings."""
    lines = jsonl(corpus.iter_corpus(n))
    start = time.perf_counter()
    store = Store.init(root, author="Bench <bench@example.com>")
    store.import_records(lines)
    imported = time.perf_counter() - start
    store.close()
    # The import may have updated the index record by record; time a full rebuild on its own.
    return {"import_s": imported}


def naive_scan(root: str, scope: str, limit: int = 50):
    """The baseline list: read every record file, parse its front matter, filter, sort."""
    import yaml

    found = []
    memory = os.path.join(root, "memory")
    for shard in os.listdir(memory):
        folder = os.path.join(memory, shard)
        for name in os.listdir(folder):
            with open(os.path.join(folder, name), encoding="utf-8") as handle:
                text = handle.read()
            front = text.split("\n---\n", 1)[0][4:]
            data = yaml.load(front, Loader=yaml.CSafeLoader)
            if data.get("scope") != scope or data.get("status") != "active":
                continue
            found.append(
                (-data["priority"], -data["urgency"], -data["updated_at"], data["id"], data)
            )
    found.sort(key=lambda item: item[:4])
    return found[:limit]


def pull_commit(root: str, round_number: int, count: int = 100) -> str:
    """A commit on top of HEAD changing ``count`` records, as a collaborator's push would."""
    import pygit2

    from lantern_git.git.repo import GitRepo

    repo = GitRepo(root)
    head = repo.head_oid()
    tree = repo.head_tree()
    memory = tree["memory"].peel(pygit2.Tree)
    paths = []
    for shard in memory:
        for entry in repo.repo[shard.id]:
            paths.append(f"memory/{shard.name}/{entry.name}")
            if len(paths) >= count * (round_number + 1):
                break
        if len(paths) >= count * (round_number + 1):
            break
    changes = {}
    for path in paths[-count:]:
        text = repo.blob_at(tree, path).decode()
        lines = [
            f"urgency: {(int(line.split(':')[1]) + 1 + round_number) % 101}"
            if line.startswith("urgency: ")
            else line
            for line in text.split("\n")
        ]
        changes[path] = (str(repo.repo.create_blob("\n".join(lines).encode())), 0o100644)
    new_tree = repo.build_tree(tree, changes)
    sig = pygit2.Signature("Peer", "peer@example.com")
    oid = repo.repo.create_commit(None, sig, sig, f"peer edit {round_number}", new_tree, [head])
    return str(oid)


# ---------------------------------------------------------------- one size


def bench_size(root: str, n: int, reps: int, rows: list, extras: dict, first: bool) -> None:
    big = n >= 100_000
    slow_reps = 3 if big else max(3, reps // 2)
    print(f"\n== {n} records: building ...", flush=True)
    built = build_store(root, n)
    extras.setdefault("import_s", {})[n] = built["import_s"]
    print(f"   import (commit + index): {built['import_s']:.1f} s", flush=True)

    store = Store.open(root, author="Bench <bench@example.com>")
    rebuilds = timed(lambda i: store.rebuild_index(), 1 if big else 3)
    store.close()
    extras.setdefault("rebuild_s", {})[n] = median(rebuilds)
    print(f"   full index rebuild: {median(rebuilds):.2f} s", flush=True)

    scopes = [f"user:u{i % 10}" for i in range(reps)]

    # -- list through the library, vs a naive scan
    def lib_list(i):
        s = Store.open(root)
        result = s.list(scopes=(scopes[i],), limit=50)
        s.close()
        assert result, scopes[i]

    Store.open(root).list(limit=1)  # the index is fresh after the rebuild: warm the page cache
    ours = timed(lib_list, reps)
    base = timed(lambda i: naive_scan(root, scopes[i]), slow_reps)
    check = naive_scan(root, scopes[0])
    got = Store.open(root).list(scopes=(scopes[0],), limit=50)
    assert [r.id for r in got] == [item[3] for item in check], "list order differs from the scan"
    rows.append(("list (library, 1 scope, top 50)", n, ours, "naive scan + CSafeLoader", base))
    scan = base
    rows.append(("full index rebuild", n, rebuilds, "naive scan (read + parse every file)", scan))

    # -- add through the library, vs git add + commit of one record file
    writes = corpus.extra_records(n, 2 * reps + 2 * slow_reps + 20)
    store = Store.open(root, author="Bench <bench@example.com>")

    def lib_add(i):
        rec = writes[i]
        store.add(rec.content, kind=rec.kind, scope=rec.scope, priority=rec.priority)

    ours = timed(lib_add, reps)
    seen = {r.id for r in Store.open(root).list(status="all", limit=None)}
    added = [to_record(writes[i]).id for i in range(reps)]
    assert all(rid in seen for rid in added), "an added record is not visible to the next list"
    store.close()

    def write_file(i):
        record = to_record(writes[reps + i])
        path = os.path.join(root, record_path(record.id))
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w", encoding="utf-8") as handle:
            handle.write(record.to_markdown())
        base_paths[i] = record_path(record.id)

    base_paths: dict[int, str] = {}
    base = timed(
        lambda i: subprocess.run(
            f"git add {base_paths[i]} && git commit -q -m x",
            shell=True,
            cwd=root,
            env=ENV,
            check=True,
        ),
        reps,
        setup=write_file,
    )
    rows.append(("add (library: commit + index)", n, ours, "git add FILE && git commit", base))
    extras.setdefault("add_lib", {})[n] = ours
    commit_base = base

    # -- whole processes
    warm_bytecode(root)
    floor = [run_process(IMPORT_FLOOR)[0] for _ in range(slow_reps)]
    floor_cpu = cpu_of(slow_reps)
    cli_list = [
        run_process([*LANTERN, "--store", root, "memory", "list", "--limit", "50"])
        for _ in range(slow_reps)
    ]
    rows.append(
        ("lantern memory list --limit 50", n, [t for t, _ in cli_list], "import floor", floor)
    )
    rows.append(
        (
            "lantern memory list --limit 50, CPU",
            n,
            cpu_of(slow_reps),
            "import floor, CPU",
            floor_cpu,
        )
    )
    extras.setdefault("peak_list_mb", {})[n] = max(mb for _, mb in cli_list)
    offset = 2 * reps

    def cli_add(i):
        rec = writes[offset + i]
        options = ["--kind", rec.kind, "--scope", rec.scope]
        run_process([*LANTERN, "--store", root, "memory", "add", rec.content, *options])

    ours = timed(cli_add, slow_reps)
    rows.append(("lantern memory add", n, ours, "import floor", floor))
    rows.append(("lantern memory add, CPU", n, cpu_of(slow_reps), "import floor, CPU", floor_cpu))
    extras.setdefault("cli_add", {})[n] = ours

    # -- the same two commands while `lantern index watch` runs (as lantern mcp and lantern
    # serve watch while they run): they read its journal instead of sweeping every file
    with watching(root):
        cli_list = [
            run_process([*LANTERN, "--store", root, "memory", "list", "--limit", "50"])
            for _ in range(slow_reps + 1)
        ][1:]  # the first reads a journal it has no position in yet: a sweep
        rows.append(
            (
                "lantern memory list --limit 50, lantern index watch running",
                n,
                [t for t, _ in cli_list],
                "import floor",
                floor,
            )
        )
        offset += slow_reps
        ours = timed(cli_add, slow_reps)
        rows.append(
            ("lantern memory add, lantern index watch running", n, ours, "import floor", floor)
        )
    if first:
        helps = [run_process([*LANTERN, "--help"])[0] for _ in range(slow_reps)]
        bare = [run_process([PY, "-c", "pass"])[0] for _ in range(slow_reps)]
        rows.append(("lantern --help", n, helps, "python -c pass", bare))

    # -- search (for the peer comparison)
    words = corpus.query_words(reps)

    def lib_search(i):
        s = Store.open(root)
        s.search(words[i], limit=10)
        s.close()

    extras.setdefault("search", {})[n] = timed(lib_search, reps)

    # -- refresh after a git pull that changed 100 records, vs a full rebuild
    def pull(i):
        git(root, "merge", "--ff-only", "-q", pull_commit(root, i))

    def refresh(i):
        s = Store.open(root)
        report = s.refresh()
        s.close()
        assert report.updated >= 100, report

    ours = timed(refresh, slow_reps, setup=pull)
    rows.append(("refresh after a pull of 100 records", n, ours, "full index rebuild", rebuilds))

    print("   fresh clone ...", flush=True)
    bench_clone(root, n, reps, rows, extras, rebuilds, scan)
    print("   MCP ...", flush=True)
    # Records after those the library and CLI adds took, so that every add commits
    mcp_writes = corpus.extra_records(n + 2 * reps + 2 * slow_reps + 20, reps)
    bench_mcp(root, n, reps, rows, extras, mcp_writes, commit_base)


def bench_clone(
    root: str, n: int, reps: int, rows: list, extras: dict, rebuilds, scan: list[float]
) -> None:
    """A fresh ``git clone`` of the store: its first list builds the index, the second must
    cost about what a list costs in a store that was never cloned; then a ``git pull`` of 100
    changed records, whose first list re-reads only those, against a full rebuild."""
    clone = root + "-clone"
    shutil.rmtree(clone, ignore_errors=True)
    # --no-local: a consistent snapshot through the pack protocol, as over the network; a
    # local clone copies loose objects that git's automatic gc may be packing meanwhile.
    subprocess.run(["git", "clone", "-q", "--no-local", root, clone], check=True, env=ENV)
    listing = ["memory", "list", "--limit", "50"]
    first = run_process([*LANTERN, "--store", clone, *listing])[0]
    second = run_process([*LANTERN, "--store", clone, *listing])[0]
    # The never-cloned store, in the same state of the page cache and of its index
    run_process([*LANTERN, "--store", root, *listing])
    plain = [run_process([*LANTERN, "--store", root, *listing])[0] for _ in range(3)]
    extras.setdefault("clone_first_s", {})[n] = first
    rows.append(("first command in a fresh clone", n, [first], "naive scan", scan))
    rows.append(("second list in a fresh clone", n, [second], "list, never-cloned store", plain))
    pulled = []
    for i in range(3):
        commit = pull_commit(root, 10 + i)
        git(root, "merge", "--ff-only", "-q", commit)
        git(clone, "pull", "-q", "--ff-only")
        pulled.append(run_process([*LANTERN, "--store", clone, *listing])[0])
    rows.append(("list after a pull of 100 (clone)", n, pulled, "full index rebuild", rebuilds))
    shutil.rmtree(clone, ignore_errors=True)


@contextlib.contextmanager
def watching(root: str):
    """``lantern index watch`` on the store (the journal ``lantern mcp`` and ``lantern serve``
    also keep while they run), until the block ends."""
    proc = subprocess.Popen(
        [*LANTERN, "--store", root, "index", "watch"], stdout=subprocess.PIPE, env=ENV
    )
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline().startswith(b"lantern index watch: watching")
        yield
    finally:
        proc.terminate()
        proc.wait(timeout=60)


def bench_mcp(root: str, n: int, reps: int, rows: list, extras: dict, writes, commit_base) -> None:
    """``lantern mcp`` over stdio, through the MCP SDK's client, as an agent calls it."""
    import anyio
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    params = StdioServerParameters(
        command=PY, args=["-m", "lantern_git", "mcp", "--store", root], env=ENV
    )
    scopes = [f"user:u{i % 10}" for i in range(reps)]
    adds: list[float] = []
    lists: list[float] = []

    async def session() -> None:
        async with Client(params) as client:
            await client.call_tool("lantern_memory_list", {"limit": 1})  # the first sweep
            for i in range(reps):
                rec = writes[i]
                arguments = {"content": rec.content, "kind": rec.kind, "scope": rec.scope}
                start = time.perf_counter()
                result = await client.call_tool("lantern_memory_add", arguments)
                adds.append(time.perf_counter() - start)
                assert not result.is_error, result.content
            await client.call_tool("lantern_memory_list", {"limit": 1})  # after the writes
            for i in range(reps):
                start = time.perf_counter()
                result = await client.call_tool(
                    "lantern_memory_list", {"scope": [scopes[i]], "limit": 50}
                )
                lists.append(time.perf_counter() - start)
                assert not result.is_error and result.structured_content["records"], scopes[i]

    anyio.run(session)
    rows.append(("MCP lantern_memory_add", n, adds, "git add FILE && git commit", commit_base))
    scan = timed(lambda i: naive_scan(root, scopes[i]), 1 if n >= 100_000 else 3)
    rows.append(("MCP list (1 scope, top 50), nothing changed", n, lists, "naive scan", scan))


# ---------------------------------------------------------------- report

TARGETS = {
    "add (library: commit + index)": (0.5, (10_000, 100_000)),
    "list (library, 1 scope, top 50)": (1 / 30, (10_000, 100_000)),
    "full index rebuild": (3.0, (100_000,)),
    "first command in a fresh clone": (3.0, (100_000,)),
    "lantern memory list --limit 50": (2.0, (10_000, 100_000)),
    "lantern memory add": (2.0, (10_000, 100_000)),
    "lantern memory list --limit 50, CPU": (2.0, (10_000, 100_000)),
    "lantern memory add, CPU": (2.0, (10_000, 100_000)),
    "lantern memory list --limit 50, lantern index watch running": (2.0, (10_000, 100_000)),
    "lantern memory add, lantern index watch running": (2.0, (10_000, 100_000)),
    "lantern --help": (5.0, None),
    "refresh after a pull of 100 records": (1 / 20, (100_000,)),
    "second list in a fresh clone": (1.2, None),
    "list after a pull of 100 (clone)": (1 / 20, (100_000,)),
    "MCP lantern_memory_add": (0.5, None),
    "MCP list (1 scope, top 50), nothing changed": (1 / 300, (100_000,)),
}
REBUILD_TARGET_S = (20.0, 100_000)


def fmt(seconds):
    if seconds >= 10:
        return f"{seconds:.1f} s"
    if seconds >= 1:
        return f"{seconds:.2f} s"
    return f"{seconds * 1000:.1f} ms"


def report(rows, extras, sizes, fingerprint) -> str:
    out = [
        f"corpus_fingerprint(1000) = {fingerprint}; python {sys.version.split()[0]}; "
        f"{os.cpu_count()} CPUs; load average at start {extras['load'][0]:.1f}, "
        f"at the end {os.getloadavg()[0]:.1f} (other work on the machine slows every figure)",
        "",
        "| figure | N | ours median | ours p95 | baseline | baseline median | baseline p95 "
        "| ratio (median) | target | holds |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for name, n, ours, base_name, base in rows:
        ratio = median(ours) / median(base)
        limit, at = TARGETS[name]
        applies = at is None or n in at
        holds = ("yes" if ratio <= limit else "NO") if applies else "-"
        target = f"<= {limit:.3g}" if limit >= 1 or limit == 0.5 else f"<= 1/{round(1 / limit)}"
        out.append(
            f"| {name} | {n:,} | {fmt(median(ours))} | {fmt(p95(ours))} | {base_name} "
            f"| {fmt(median(base))} | {fmt(p95(base))} | {ratio:.3f} | {target} | {holds} |"
        )
    out += [
        "",
        "| size | import (commit + index) | full index rebuild | first list in a fresh clone "
        "| peak RSS of list |",
        "|---|---|---|---|---|",
    ]
    limit_s, at_n = REBUILD_TARGET_S
    for n in sizes:
        rebuild = extras["rebuild_s"][n]
        verdict = f" (target <= {limit_s:g} s: {'yes' if rebuild <= limit_s else 'NO'})"
        out.append(
            f"| {n:,} | {fmt(extras['import_s'][n])} "
            f"| {fmt(rebuild)}{verdict if n == at_n else ''} "
            f"| {fmt(extras['clone_first_s'][n])} | {extras['peak_list_mb'][n]:.0f} MB |"
        )
    adds = extras["add_lib"]
    if min(sizes) <= 1000 and max(sizes) >= 100_000:
        growth = median(adds[max(sizes)]) / median(adds[min(sizes)])
        out.append(
            f"\nadd latency growth {min(sizes):,} -> {max(sizes):,}: {growth:.2f}x "
            f"(target <= 3x: {'yes' if growth <= 3 else 'NO'})"
        )
    if 1000 in sizes:
        lib_add = median(adds[1000]) * 1000
        search = median(extras["search"][1000]) * 1000
        cli_add = median(extras["cli_add"][1000])
        peak = extras["peak_list_mb"][1000]
        imported = extras["import_s"][1000]
        out += [
            "",
            "Against basic-memory 0.24.1 (its recorded figures), at 1,000 records:",
            "",
            "| figure | basic-memory | lantern | speed-up | target |",
            "|---|---|---|---|---|",
            _peer_row("in-process write", PEER["write_inproc_ms"], lib_add, "ms", 20),
            _peer_row("keyword search", PEER["search_ms"], search, "ms", 5),
            _peer_row("bulk index / lantern import", PEER["bulk_index_s"], imported, "s", 100),
            _peer_row("CLI write", PEER["cli_write_s"], cli_add, "s", 20),
            _peer_row("peak memory (MB)", PEER["peak_mb"], peak, "MB", 3),
        ]
    return "\n".join(out)


def _peer_row(name, theirs, ours, unit, want):
    factor = theirs / ours
    return (
        f"| {name} | {theirs:g} {unit} | {ours:.3g} {unit} | {factor:.1f}x "
        f"| >= {want}x: {'yes' if factor >= want else 'NO'} |"
    )


def run_evidence(quick: bool) -> int:
    """The two evidence benchmarks, one after the other, in this run."""
    here = os.path.dirname(os.path.abspath(__file__))
    steps = [
        [PY, os.path.join(here, "evidence.py"), *(["--quick"] if quick else [])],
        [PY, os.path.join(here, "evidence_search.py"), *([] if quick else ["--full"])],
    ]
    for step in steps:
        print(f"$ {' '.join(os.path.basename(a) for a in step[1:])}", flush=True)
        code = subprocess.run(step, env=dict(os.environ, PYTHONPATH=REPO), check=False).returncode
        if code:
            return code
    return 0


# ---------------------------------------------------------------- semantic search

NA = "n/a (semantic extra/API not available)"
SEARCH_MODES = ("keyword", "semantic", "hybrid")
HYBRID_RATIO_TARGET = (2.0, (10_000, 100_000))
EMBED_TARGET_S = (60.0, 100_000)
HYBRID_PEAK_TARGET_MB = (300.0, 100_000)

# One hybrid search in a fresh process (spawned through LAUNCHER, whose wait4 gives this
# process's own ru_maxrss): open the store, search once. Exit 3: no hybrid mode here.
HYBRID_ONCE = """
import sys
sys.path.insert(0, sys.argv[1])
from lantern_git.store import Store
store = Store.open(sys.argv[2])
try:
    store.search(sys.argv[3], mode="hybrid", limit=10)
except TypeError:
    sys.exit(3)
store.close()
"""


def mode_search(store: Store, mode: str):
    """A function searching ``store`` in ``mode``, or why the mode is not available: a
    ``search`` without a ``mode`` parameter (TypeError) searches by keyword alone."""

    def search(text):
        return store.search(text, mode=mode, limit=10)

    try:
        search("availability probe")
    except TypeError:
        if mode == "keyword":
            return lambda text: store.search(text, limit=10)
        return NA
    except Exception as exc:  # the API is there, the mode is not (no extra installed)
        return f"n/a ({type(exc).__name__}: {str(exc)[:80]})"
    return search


def bench_semantic_size(root: str, n: int, reps: int) -> dict:
    """Keyword, semantic and hybrid search medians over the same queries, the time to embed
    the store from scratch and the peak RSS of one hybrid search in a fresh process."""
    print(f"\n== {n} records: building ...", flush=True)
    built = build_store(root, n)
    print(f"   import (commit + index): {built['import_s']:.1f} s", flush=True)
    words = corpus.query_words(2 * reps)
    queries = [f"{words[2 * i]} {words[2 * i + 1]}" for i in range(reps)]
    out: dict = {"n": n, "median_s": {}, "unavailable": {}}
    store = Store.open(root, author="Bench <bench@example.com>")
    try:
        # Embedding from scratch: with the vectors deleted, the first semantic search embeds
        # every record (it also runs the query, a few ms of the total).
        vectors = os.path.join(store.derived_dir, "vectors")
        runs = {"keyword": mode_search(store, "keyword")}  # the keyword index is now fresh
        shutil.rmtree(vectors, ignore_errors=True)
        start = time.perf_counter()
        runs["semantic"] = mode_search(store, "semantic")
        embed = time.perf_counter() - start
        if not isinstance(runs["semantic"], str):
            out["embed_s"] = embed
            out["vectors_rebuilt"] = os.path.isdir(vectors)
            print(f"   first semantic search after deleting vectors: {fmt(embed)}", flush=True)
        runs["hybrid"] = mode_search(store, "hybrid")
        ready = [m for m in SEARCH_MODES if not isinstance(runs[m], str)]
        out["unavailable"] = {m: runs[m] for m in SEARCH_MODES if m not in ready}
        for m in ready:  # warm each mode (models, searchers) before timing
            runs[m](queries[0])
        times: dict[str, list[float]] = {m: [] for m in ready}
        for text in queries:  # the modes interleaved, so that load on the machine hits all
            for m in ready:
                start = time.perf_counter()
                runs[m](text)
                times[m].append(time.perf_counter() - start)
        out["median_s"] = {m: median(times[m]) for m in ready}
        out["p95_s"] = {m: p95(times[m]) for m in ready}
        if "hybrid" in ready:
            # An agent's loop: write one record, then search. The search brings the index and
            # the vectors in step with that one record first.
            after: list[float] = []
            for number, text in enumerate(queries):
                store.add(
                    f"bench note {number} {time.time_ns()}: {text}",
                    kind="observation",
                    scope="project:bench",
                )
                start = time.perf_counter()
                runs["hybrid"](text)
                after.append(time.perf_counter() - start)
            out["after_add_s"] = median(after)
    finally:
        store.close()
    if "hybrid" in out["median_s"]:
        try:
            _, peak = run_process([PY, "-c", HYBRID_ONCE, REPO, root, queries[0]])
            out["peak_hybrid_mb"] = peak
        except RuntimeError as exc:
            out["peak_error"] = str(exc)[:200]
    for m in SEARCH_MODES:
        got = out["median_s"].get(m)
        print(f"   {m}: {fmt(got) if got is not None else out['unavailable'][m]}", flush=True)
    if "after_add_s" in out:
        print(f"   hybrid search after one add: {fmt(out['after_add_s'])}", flush=True)
    return out


def _verdict(ok: bool, applies: bool) -> str:
    return ("yes" if ok else "NO") if applies else "-"


def semantic_report(results: list[dict]) -> str:
    ratio_limit, ratio_at = HYBRID_RATIO_TARGET
    embed_limit, embed_at = EMBED_TARGET_S
    peak_limit, peak_at = HYBRID_PEAK_TARGET_MB
    out = [
        "Search by mode: medians over the same queries (two corpus words each, limit 10), in "
        "one open store, the modes interleaved; embedding = the first semantic search after "
        "deleting .lantern/vectors; after add = a hybrid search right after one store.add "
        "(median); peak RSS = a fresh process that opens the store and runs one hybrid "
        "search. Targets apply to hybrid / keyword at 10k and 100k, to embedding and peak RSS "
        "at 100k ('-' elsewhere).",
        "",
        "| N | keyword | semantic | hybrid | hybrid after one add | hybrid / keyword | target "
        "| embed from scratch | target | peak RSS, hybrid | target |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in results:
        n = r["n"]
        med = r["median_s"]
        cells = [fmt(med[m]) if m in med else NA for m in SEARCH_MODES]
        cells.append(fmt(r["after_add_s"]) if "after_add_s" in r else NA)
        if "keyword" in med and "hybrid" in med:
            ratio = med["hybrid"] / med["keyword"]
            ratio_cell = f"{ratio:.2f}x"
            ratio_ok = _verdict(ratio <= ratio_limit, n in ratio_at)
        else:
            ratio_cell, ratio_ok = "n/a", "-"
        if "embed_s" in r:
            embed_cell = fmt(r["embed_s"])
            if not r.get("vectors_rebuilt"):
                embed_cell += " (no .lantern/vectors written)"
            embed_ok = _verdict(r["embed_s"] < embed_limit, n == embed_at)
        else:
            embed_cell, embed_ok = NA, "-"
        if "peak_hybrid_mb" in r:
            peak_cell = f"{r['peak_hybrid_mb']:.0f} MB"
            peak_ok = _verdict(r["peak_hybrid_mb"] < peak_limit, n == peak_at)
        else:
            peak_cell, peak_ok = ("failed" if "peak_error" in r else NA), "-"
        out.append(
            f"| {n:,} | {' | '.join(cells)} | {ratio_cell} | <= {ratio_limit:g}x: {ratio_ok} "
            f"| {embed_cell} | < {embed_limit:g} s: {embed_ok} "
            f"| {peak_cell} | < {peak_limit:g} MB: {peak_ok} |"
        )
    for r in results:
        if "peak_error" in r:
            out.append(f"\npeak RSS at {r['n']:,} failed: {r['peak_error']}")
    return "\n".join(out)


def run_semantic(sizes: list[int], reps: int, base_dir: str, keep: bool) -> int:
    """Search speed by mode at each size, embedding time and the hybrid search's peak RSS."""
    work = tempfile.mkdtemp(prefix="semantic-", dir=base_dir)
    ENV["PYTHONPYCACHEPREFIX"] = os.path.join(work, "bytecode")
    results: list[dict] = []
    started = time.perf_counter()
    try:
        for n in sizes:
            results.append(bench_semantic_size(os.path.join(work, str(n)), n, reps))
    finally:
        if not keep:
            shutil.rmtree(work, ignore_errors=True)
        if results:
            print()
            print(
                f"corpus_fingerprint(1000) = {corpus.corpus_fingerprint(1000)}; "
                f"{os.cpu_count()} CPUs; load average {os.getloadavg()[0]:.1f}"
            )
            print(semantic_report(results))
    print(f"\n(total run time {time.perf_counter() - started:.0f} s)")
    return 0


def run_recall(extra: list[str]) -> int:
    """The labelled retrieval set (recall.py): recall@1, recall@5 and MRR by query type."""
    here = os.path.dirname(os.path.abspath(__file__))
    step = [PY, os.path.join(here, "recall.py"), *extra]
    env = dict(os.environ, PYTHONPATH=REPO)
    return subprocess.run(step, env=env, check=False).returncode


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="1,000 and 10,000 records only")
    parser.add_argument("--sizes", help="comma-separated store sizes (default 1000,10000,100000)")
    parser.add_argument("--reps", type=int, default=15, help="repetitions of in-process figures")
    parser.add_argument("--dir", help="where to build the stores (default: <repo>/bench-stores)")
    parser.add_argument("--keep", action="store_true", help="keep the stores afterwards")
    parser.add_argument(
        "--evidence",
        action="store_true",
        help="the evidence benchmarks instead: ingest, append and verify (evidence.py), and "
        "source search against git grep (evidence_search.py); with --quick, smaller sizes",
    )
    parser.add_argument(
        "--semantic",
        action="store_true",
        help="search speed by mode instead: keyword, semantic and hybrid medians and their "
        "ratio, time to embed the store, peak RSS of a hybrid search (n/a where the semantic "
        "extra or API is missing); with --quick, 1,000 and 10,000 records",
    )
    parser.add_argument(
        "--recall",
        action="store_true",
        help="retrieval quality instead: recall.py's labelled set, every mode",
    )
    args = parser.parse_args(argv)
    if args.evidence:
        return run_evidence(args.quick)
    if args.recall:
        return run_recall([])
    if args.sizes:
        sizes = [int(s.replace("_", "").replace(",", "")) for s in args.sizes.split(",")]
    else:
        sizes = [1000, 10_000] if args.quick else [1000, 10_000, 100_000]
    base_dir = args.dir or os.path.join(REPO, "bench-stores")
    os.makedirs(base_dir, exist_ok=True)
    if args.semantic:
        return run_semantic(sizes, args.reps, base_dir, args.keep)
    work = tempfile.mkdtemp(prefix="run-", dir=base_dir)
    ENV["PYTHONPYCACHEPREFIX"] = os.path.join(work, "bytecode")
    rows: list = []
    extras: dict = {"load": os.getloadavg()}
    started = time.perf_counter()
    done: list[int] = []
    try:
        for number, n in enumerate(sizes):
            bench_size(os.path.join(work, str(n)), n, args.reps, rows, extras, number == 0)
            done.append(n)
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
        # The sizes measured to the end, even when a later one failed
        complete = [row for row in rows if row[1] in done]
        if done:
            print()
            print(report(complete, extras, done, corpus.corpus_fingerprint(1000)))
    print(f"\n(total run time {time.perf_counter() - started:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
