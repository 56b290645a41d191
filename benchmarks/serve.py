"""``lantern serve``: server time for every page kind, warm, and the first page after start, at
10,000 and 100,000 records; the CLI's answers to the same questions (``memory list``,
``memory show --evidence``, each a process) beside them; and the server under concurrent load.

    python benchmarks/serve.py                 # 10,000 and 100,000 records
    python benchmarks/serve.py --sizes 10000   # one size
    python benchmarks/serve.py --reps 50
    python benchmarks/serve.py --compare ../before   # beside another checkout's code
    python benchmarks/serve.py --stores /tmp/serve-stores   # build each store once, reuse it
    python benchmarks/serve.py --code ../before      # another checkout's code alone

``--compare PATH`` times the same pages, on the same store, with the library of another
checkout (``git worktree add ../before COMMIT``) in turn with this one's, twice (each figure
from the run with the lower median), and prints the two side by side with their ratio: on a
shared machine, figures from separate runs differ by 2x.

Server time is the app's: a request through the ASGI app in process (Starlette's test client,
no socket), the median and p95 of ``--reps`` requests after one warm-up, for each page kind:
records (plain, filtered, a search, ``?pending=1``), a record with its evidence, a source cited
by one record in a hundred, sources, review with 20 pending records, changes, status. The first
page after start is a real ``lantern serve --port 0`` process: from its start to the first 200
answer for ``/`` (Python, the imports, opening the store and its index, the watch, the page).

Under load, against a real ``lantern serve`` over HTTP (keep-alive connections, one thread
each): the records page's requests per second from one client in a loop and from 20 clients at
once (with the 20's median and p95), and the records page's median alone and beside two
clients loading ``/status`` and ``/changes`` in a loop. Python's lock and the machine's cores
are the floor: 20 clients cannot get more than the cores the server's one process uses.

Every figure is printed with the machine's load average (1 minute) when it was taken: on a
shared machine a figure means little without it. A page that takes over 20 s across its
repetitions stops after 3 (the code before a fix can take minutes a load at 100,000 records).

Targets (issue 32): every page at most 100 ms median at 100,000 records, warm; 20 clients at
least the requests per second of one; the records page beside status and changes within 2x
of alone. Stores are built through ``import_records`` (one commit) in a temporary folder, with
20 pending writes on a review branch, then removed (with ``--stores DIR``: built in DIR once,
kept, and reused by the next run).
"""

from __future__ import annotations

import argparse
import http.client
import http.cookiejar
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from urllib.parse import urlsplit

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# A child timing another checkout's library (see --compare) imports that checkout's.
CODE = sys.argv[sys.argv.index("--code") + 1] if "--code" in sys.argv else REPO
sys.path.insert(0, CODE)

from lantern_git.evidence.sources import SourceInput  # noqa: E402
from lantern_git.model.query import RecordQuery  # noqa: E402
from lantern_git.store import Store  # noqa: E402

PY = sys.executable
ENV = dict(os.environ, LANTERN_AUTHOR="Bench <bench@example.com>", LANTERN_EMBEDDER="none")
ENV.update(
    GIT_AUTHOR_NAME="Bench",
    GIT_AUTHOR_EMAIL="bench@example.com",
    GIT_COMMITTER_NAME="Bench",
    GIT_COMMITTER_EMAIL="bench@example.com",
)
ENV.pop("LANTERN_STORE", None)
ENV["PYTHONPATH"] = CODE
os.environ.update(LANTERN_EMBEDDER="none", LANTERN_AUTHOR="Bench <bench@example.com>")
WORDS = [
    "deploy",
    "review",
    "freeze",
    "editor",
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
    "release",
    "incident",
    "rollback",
    "feature",
]
KINDS = ["fact", "preference", "goal", "constraint", "task_state", "observation", "hypothesis"]


PENDING = 20


def build(root: str, n: int) -> tuple[str, str]:
    """A store of ``n`` records, one in a hundred citing lines of a transcript, and 20 records
    an agent wrote for review; the id of one citing record in the middle of the list, and the
    transcript's."""
    subprocess.run(["git", "init", "-q", "-b", "main", root], check=True, env=ENV)
    store = Store.init(root)
    body = "".join(f"line {i}: {' '.join(random.sample(WORDS, 6))}\n" for i in range(1, 201))
    source = store.sources.add([SourceInput(body.encode(), "chat.txt", uri="session:bench")])
    view = store.sources.show(f"source:{source[0].manifest.id}#L10-L12")
    rng = random.Random(n)
    lines = []
    for i in range(n):
        record = {
            "kind": rng.choice(KINDS),
            "scope": f"project:p{rng.randrange(20)}",
            "priority": rng.randrange(101),
            "urgency": rng.randrange(101),
            "content": f"record {i}: " + " ".join(rng.choices(WORDS, k=12)),
        }
        if i % 100 == 0:
            record["source_refs"] = [view.ref]
        lines.append(json.dumps(record))
    store.import_records(lines)
    store.close()
    store = Store(root)
    citing = [r for r in store.list(limit=0) if r.source_refs]
    store.close()
    agent = Store(root, actor="mcp", review=True)
    for i in range(PENDING):
        agent.add(f"pending {i}: " + " ".join(rng.choices(WORDS, k=8)), kind="fact")
    agent.close()
    return citing[len(citing) // 2].id, source[0].manifest.id


def kept(root: str, n: int) -> tuple[str, str]:
    """``build``'s store at ``root``, built once and reused (``--stores``): a store of 100,000
    records takes minutes to build. Its ids are kept beside it; a store without them (a build
    cut short) is built again."""
    ids = f"{root}.json"
    if os.path.exists(ids):
        with open(ids) as file:
            record_id, source_id = json.load(file)
        return record_id, source_id
    shutil.rmtree(root, ignore_errors=True)
    os.makedirs(os.path.dirname(root), exist_ok=True)
    found = build(root, n)
    with open(ids, "w") as file:
        json.dump(found, file)
    return found


# A page slower than this many seconds over its repetitions stops early (after at least 3):
# the code before a fix can take seconds a page, and the figure needs no 30 of them.
BUDGET_SECONDS = 20.0


def timed(call, reps: int) -> tuple[float, float]:
    call()  # warm
    times: list[float] = []
    began = time.perf_counter()
    for _ in range(reps):
        start = time.perf_counter()
        call()
        times.append((time.perf_counter() - start) * 1000)
        if len(times) >= 3 and time.perf_counter() - began > BUDGET_SECONDS:
            break
    times.sort()
    return statistics.median(times), times[min(len(times) - 1, int(len(times) * 0.95))]


def with_load(figures: dict[str, list[float]]) -> dict[str, list[float]]:
    """Each figure with the machine's load average (1 minute) when it was taken: on a shared
    machine a figure means little without it."""
    return {name: [*values[:2], os.getloadavg()[0]] for name, values in figures.items()}


def app_times(
    root: str, record_id: str, source_id: str, reps: int
) -> dict[str, tuple[float, float]]:
    from starlette.testclient import TestClient

    from lantern_git.web.app import ServeConfig, create_app

    store = Store(root, actor="cli", watch=True)
    config = ServeConfig(port=8765, reviewer="Bench <bench@example.com>")
    client = TestClient(create_app(store, config), base_url="http://127.0.0.1:8765")
    client.get(f"/?token={config.token}")
    pages = {
        "records page /": "/",
        "records page, filtered": "/?kind=fact&scope=project:p3&min_priority=50",
        "records page, search": "/?q=deploy+coffee&mode=keyword",
        "records page, ?pending=1": "/?pending=1",
        "record page, with evidence": f"/records/{record_id}",
        "source page (cited by 1 record in 100)": f"/sources/{source_id}",
        "sources page": "/sources",
        f"review page ({PENDING} pending)": "/review",
        "changes page": "/changes",
        "status page": "/status",
    }
    # The library calls each page makes, timed alone: what the web layer adds is the rest.
    query = RecordQuery(limit=50)
    filtered = RecordQuery(kinds=("fact",), scopes=("project:p3",), min_priority=50, limit=50)
    calls = {
        "records page /": lambda: (store.list(query), store.count(query)),
        "records page, filtered": lambda: (store.list(filtered), store.count(filtered)),
        "records page, search": lambda: store.search(
            "deploy coffee", RecordQuery(limit=50), mode="keyword"
        ),
        "record page, with evidence": lambda: (
            store.get(record_id),
            store.record_history(record_id),
            store.sources.check_refs(store.get(record_id)),
        ),
    }
    found = {}
    for name, call in calls.items():
        found[f"{name}: library calls alone"] = [*timed(call, reps), os.getloadavg()[0]]
    for name, target in pages.items():

        def get(target: str = target) -> None:
            response = client.get(target)
            assert response.status_code == 200, response.text[:300]

        found[name] = [*timed(get, reps), os.getloadavg()[0]]
    client.close()
    store.close()
    return found


def process_ms(argv: list[str], reps: int) -> float:
    times = []
    for _ in range(reps):
        start = time.perf_counter()
        subprocess.run(argv, env=ENV, check=True, capture_output=True)
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


def first_page_ms(root: str) -> float:
    """From ``lantern serve``'s start to its first 200 answer for ``/``."""
    start = time.perf_counter()
    proc = subprocess.Popen(
        [PY, "-m", "lantern_git", "serve", "--store", root, "--port", "0"],
        env=ENV,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        line = proc.stdout.readline().strip()  # type: ignore[union-attr]
        url = line.removeprefix("lantern serve: ")
        jar = urllib.request.build_opener(
            urllib.request.HTTPCookieProcessor(http.cookiejar.CookieJar())
        )
        with jar.open(url, timeout=600) as response:
            assert response.status == 200
        return (time.perf_counter() - start) * 1000
    finally:
        proc.terminate()
        proc.wait()


class Served:
    """A real ``lantern serve`` over the store (with the library ``CODE`` names), logged in."""

    def __init__(self, root: str):
        self.proc = subprocess.Popen(
            [PY, "-m", "lantern_git", "serve", "--store", root, "--port", "0"],
            env=ENV,
            stdout=subprocess.PIPE,
            text=True,
        )
        line = self.proc.stdout.readline().strip()  # type: ignore[union-attr]
        url = urlsplit(line.removeprefix("lantern serve: "))
        self.host, self.port = url.hostname or "", url.port or 0
        connection = http.client.HTTPConnection(self.host, self.port, timeout=600)
        connection.request("GET", f"/?{url.query}")
        response = connection.getresponse()
        response.read()
        self.cookie = response.getheader("set-cookie", "").split(";", 1)[0]
        connection.close()

    def client(self) -> http.client.HTTPConnection:
        return http.client.HTTPConnection(self.host, self.port, timeout=600)

    def get(self, connection: http.client.HTTPConnection, target: str) -> float:
        """One request on a kept-alive connection; its time in ms."""
        start = time.perf_counter()
        connection.request("GET", target, headers={"Cookie": self.cookie})
        response = connection.getresponse()
        response.read()
        assert response.status == 200, (target, response.status)
        return (time.perf_counter() - start) * 1000

    def close(self) -> None:
        self.proc.terminate()
        self.proc.wait()


def loop(served: Served, target: str, seconds: float, stop: threading.Event | None = None):
    """Load ``target`` in a loop for ``seconds`` (or until ``stop``): every request's ms."""
    connection = served.client()
    times: list[float] = []
    end = time.perf_counter() + seconds
    while time.perf_counter() < end and not (stop and stop.is_set()):
        times.append(served.get(connection, target))
    connection.close()
    return times


def in_threads(work: list) -> list[list[float]]:
    """Each of ``work`` (a no-argument call returning times) in its own thread, all at once."""
    found: list[list[float]] = [[] for _ in work]

    def run(i: int) -> None:
        found[i] = work[i]()

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(work))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return found


def _median_p95(times: list[float]) -> list[float]:
    times = sorted(times)
    return [statistics.median(times), times[min(len(times) - 1, int(len(times) * 0.95))]]


def concurrent_figures(root: str, seconds: float) -> dict[str, list[float]]:
    """The records page under load: one client, 20 clients, and beside status and changes."""
    served = Served(root)
    try:
        for target in ("/", "/status", "/changes"):
            loop(served, target, 0.5)  # warm
        one = loop(served, "/", seconds)
        twenty = in_threads([lambda: loop(served, "/", seconds) for _ in range(20)])
        every = [t for times in twenty for t in times]
        alone = loop(served, "/", seconds)
        stop = threading.Event()
        neighbours_done: list[float] = []

        def neighbour(page: str) -> None:
            neighbours_done.extend(loop(served, page, seconds * 10, stop))

        neighbours = [
            threading.Thread(target=neighbour, args=(p,)) for p in ("/status", "/changes")
        ]
        for thread in neighbours:
            thread.start()
        beside = loop(served, "/", seconds)
        stop.set()
        for thread in neighbours:
            thread.join()
    finally:
        served.close()
    return {
        "load  records page, 1 client in a loop (req/s)": [len(one) / seconds, 0.0],
        "load  records page, 20 clients at once (req/s)": [len(every) / seconds, 0.0],
        "load  records page, 20 clients at once: each request": _median_p95(every),
        "load  20 clients' requests/s over 1 client's (ratio)": [len(every) / len(one), 0.0],
        "load  records page alone": _median_p95(alone),
        "load  records page beside 2 clients on /status, /changes": _median_p95(beside),
        "load  records page beside over alone, medians (ratio)": [
            statistics.median(beside) / statistics.median(alone),
            0.0,
        ],
        # What the neighbours got meanwhile: the share of the one interpreter they took.
        "load  /status and /changes beside it (req/s)": [len(neighbours_done) / seconds, 0.0],
    }


def measure(root: str, record_id: str, source_id: str, reps: int) -> dict[str, list[float]]:
    """Every figure for one store, with the library this process imports: (median, p95) in
    ms (or a rate), p95 0 where only one figure is taken."""
    pages = app_times(root, record_id, source_id, reps)
    found = {f"serve {name}": list(times) for name, times in pages.items()}
    cli = [PY, "-m", "lantern_git", "--store", root]
    found["cli   memory list --limit 50 (a process)"] = [
        process_ms([*cli, "memory", "list", "--limit", "50"], 3),
        0.0,
        os.getloadavg()[0],
    ]
    found["cli   memory show ID --evidence (a process)"] = [
        process_ms([*cli, "memory", "show", record_id, "--evidence"], 3),
        0.0,
        os.getloadavg()[0],
    ]
    found["serve first page after start (a process)"] = [
        first_page_ms(root),
        0.0,
        os.getloadavg()[0],
    ]
    found.update(with_load(concurrent_figures(root, LOAD_SECONDS)))
    return found


# How long each load figure runs.
LOAD_SECONDS = 5.0


def measured_by(
    code: str, root: str, record_id: str, source_id: str, reps: int
) -> dict[str, list[float]]:
    """``measure`` in a child process importing the library of the checkout at ``code``."""
    argv = [PY, os.path.abspath(__file__), "--child", root, record_id, source_id]
    argv += ["--reps", str(reps)]
    done = subprocess.run([*argv, "--code", code], check=True, capture_output=True, text=True)
    return json.loads(done.stdout)


def _lower(a: dict[str, list[float]], b: dict[str, list[float]]) -> dict[str, list[float]]:
    """Each figure from the run whose median was lower."""
    return {name: (max if _higher_is_better(name) else min)(a[name], b[name]) for name in a}


def _higher_is_better(name: str) -> bool:
    return _rate(name) or name.startswith("load  20 clients' requests/s")


def _ratio(name: str) -> bool:
    return name.endswith("(ratio)")


def _rate(name: str) -> bool:
    return name.endswith("(req/s)")


def _shown(name: str, value: float) -> str:
    if _ratio(name):
        return f"{value:7.2f} x  "
    return f"{value:7.1f} r/s" if _rate(name) else _ms(value)


def _ms(value: float) -> str:
    return f"{value:7.1f} ms" if value else " " * 10


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="10000,100000")
    parser.add_argument("--reps", type=int, default=30)
    parser.add_argument("--compare", metavar="PATH", help="another checkout, timed beside")
    parser.add_argument(
        "--stores", metavar="DIR", help="build each store once in DIR and reuse it (kept)"
    )
    parser.add_argument(
        "--code", metavar="PATH", help="time another checkout's library in place of this one's"
    )
    parser.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(measure(*args.child, args.reps)))
        return
    other = os.path.abspath(args.compare) if args.compare else None
    if other is not None and not os.path.isdir(os.path.join(other, "lantern_git")):
        parser.error(f"--compare: no lantern_git in {other}")
    for n in (int(s) for s in args.sizes.split(",")):
        folder = args.stores or tempfile.mkdtemp(prefix="lantern-bench-serve-")
        root = os.path.join(folder, f"store-{n}")
        try:
            start = time.perf_counter()
            record_id, source_id = kept(root, n) if args.stores else build(root, n)
            print(f"{n:,} records (built in {time.perf_counter() - start:.0f} s)", flush=True)
            if other is None:
                figures = measure(root, record_id, source_id, args.reps)
                for name, (median, p95, load) in figures.items():
                    p95_text = f"   p95 {_ms(p95)}" if p95 else " " * 17
                    label = "      " if _rate(name) or _ratio(name) else "median"
                    print(
                        f"  {name:58s} {label} {_shown(name, median)}{p95_text}   load {load:4.1f}"
                    )
                continue
            # In turn, twice, each figure the lower of its two: the load on a shared machine
            # drifts over minutes, and the first run also warms the store's files.
            runs = [
                measured_by(code, root, record_id, source_id, args.reps)
                for code in [REPO, other] * 2
            ]
            ours, theirs = (_lower(runs[i], runs[i + 2]) for i in (0, 1))
            print(f"  {'median (p95)':58s} {'this checkout':>24s} {'--compare':>24s}  ratio")
            for name, (median, p95, _) in ours.items():
                was, was_p95, _ = theirs[name]
                mine = f"{_shown(name, median)} ({_ms(p95).strip() or '-'})"
                before = f"{_shown(name, was)} ({_ms(was_p95).strip() or '-'})"
                print(f"  {name:58s} {mine:>24s} {before:>24s}  {median / was:5.2f}")
        finally:
            if not args.stores:
                shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
