"""Shared by the reliability, fault and soak tests: writers, killers, and the store audit.

The audit is the definition of "nothing lost, nothing broken" used everywhere:
every acknowledged write is in HEAD and in the listing, the history is linear, ``git fsck`` and
``lantern check`` pass, ``git status`` is clean, no journal or temporary file is left, and the
search index lists exactly the records of the working tree.
"""

from __future__ import annotations

import json
import random
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import pygit2

from lantern_git.model.record import compute_id
from lantern_git.store import Store

from .cli import lantern, start_lantern
from .processes import join, kill_after
from .stores import git_out


def add_args(content: str, scope: str = "global", kind: str = "fact") -> list[str]:
    return ["memory", "add", content, "--kind", kind, "--scope", scope, "--json"]


def record_id(content: str, scope: str = "global", kind: str = "fact") -> str:
    return compute_id(kind, scope, content)


@dataclass
class Tally:
    """Figures a run reports: what was tried, what was acknowledged, what was found."""

    attempted: int = 0
    acknowledged: int = 0
    failed_cleanly: int = 0
    kills: int = 0
    recoveries: int = 0
    found: int = 0
    inputs: int = 0
    acked_ids: set[str] = field(default_factory=set)

    def merge(self, other: Tally) -> None:
        for name in ("attempted", "acknowledged", "failed_cleanly", "kills", "recoveries"):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        self.inputs += other.inputs
        self.acked_ids |= other.acked_ids


def audit(path: Path | str, acknowledged: set[str] = frozenset()) -> dict:
    """Assert the store is whole; returns figures. ``acknowledged``: ids whose write returned 0."""
    path = Path(path)
    listing = lantern(
        "memory", "list", "--status", "all", "--include-expired", "--json", store=path
    )
    assert listing.returncode == 0, listing.stderr
    assert "Traceback" not in listing.stderr, listing.stderr
    listed = {r["id"] for r in json.loads(listing.stdout)}
    repo = pygit2.Repository(str(path))
    head = repo.head.peel(pygit2.Commit)
    committed = set()
    memory = head.tree["memory"] if "memory" in head.tree else None  # noqa: SIM401 - Tree
    if memory is not None:
        for shard in repo[memory.id]:
            for entry in repo[shard.id]:
                committed.add(entry.name[:-3])
    worktree = {p.stem for p in (path / "memory").glob("*/*.md")}
    missing = acknowledged - committed
    assert not missing, f"acknowledged writes lost: {sorted(missing)}"
    assert committed == worktree, f"HEAD and working tree differ: {committed ^ worktree}"
    assert listed == committed, f"index lists {listed ^ committed} wrongly"
    merges = git_out(path, "rev-list", "--min-parents=2", "HEAD").stdout.split()
    assert not merges, f"unexpected merge commits: {merges}"
    fsck = git_out(path, "fsck", "--no-dangling")
    assert fsck.returncode == 0, fsck.stderr + fsck.stdout
    status = git_out(path, "status", "--porcelain", "--untracked-files=all")
    assert status.stdout == "", f"git status not clean:\n{status.stdout}"
    check = lantern("check", "--json", store=path)
    assert check.returncode == 0, check.stdout + check.stderr
    assert not (path / ".lantern" / "journal.json").exists()
    leftovers = [p for p in path.rglob("*.lantern-tmp")]
    assert not leftovers, f"temporary files left: {leftovers}"
    return {
        "committed": len(committed),
        "commits": int(git_out(path, "rev-list", "--count", "HEAD").stdout),
    }


def write_duration(path: Path) -> float:
    """How long one CLI write takes on this machine now, so kills land inside writes."""
    started = time.monotonic()
    result = lantern(*add_args(f"timing probe {time.time_ns()}", "agent:probe"), store=path)
    assert result.returncode == 0, result.stderr
    return time.monotonic() - started


def random_kill_round(
    path: Path, rng: random.Random, tally: Tally, tag: str, span: float = 0.6
) -> None:
    """Start one CLI write, kill it within ``span`` seconds, and account for what happened."""
    content = f"{tag} {rng.getrandbits(48):x}"
    scope = f"project:p{rng.randrange(4)}"
    existing = _existing_ids(path)
    op = rng.random()
    if existing and op < 0.25:
        args = ["memory", "archive", rng.choice(existing), "--json"]
        new_id = None
    elif existing and op < 0.4:
        args = ["memory", "supersede", rng.choice(existing), content, "--json"]
        new_id = "from-output"
    else:
        args = add_args(content, scope)
        new_id = record_id(content, scope)
    proc = start_lantern(*args, store=path)
    tally.attempted += 1
    killed = kill_after(proc, rng.uniform(0.0, span))
    if killed:
        tally.kills += 1
        return
    out, err = proc.communicate(timeout=120)
    assert "Traceback" not in err, err
    if "lantern: completed" in err or "lantern: rolled back" in err:
        tally.recoveries += 1
    if proc.returncode == 0:
        tally.acknowledged += 1
        if new_id == "from-output":
            new_id = json.loads(out)["id"]
        if new_id:
            tally.acked_ids.add(new_id)
    elif proc.returncode == 3 and args[1] in ("archive", "supersede"):
        # The target was read from the files, where a racing write puts its record before its
        # commit; if that write was killed and rolled back, the target is gone.
        assert '"code": "not_found"' in err, err
        tally.failed_cleanly += 1
    else:
        assert proc.returncode in (1, 2), err
        tally.failed_cleanly += 1


def _existing_ids(path: Path) -> list[str]:
    """Active records, read from the files (a listing would race the writers)."""
    ids = []
    for p in sorted((path / "memory").glob("*/*.md")):
        try:
            text = p.read_text()
        except OSError:
            continue
        if "\nstatus: active\n" in text:
            ids.append(p.stem)
    return ids


def recover_now(path: Path, tally: Tally | None = None) -> str:
    """The next command after a kill: a read, which must repair the store on its own."""
    result = lantern("memory", "list", "--json", "--status", "all", store=path)
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr
    if tally is not None and (
        "lantern: completed" in result.stderr or "rolled back" in result.stderr
    ):
        tally.recoveries += 1
    return result.stderr


# ---------------------------------------------------------------------------- scenarios


def mcp_writer(path: Path, contents: list[str], tally: Tally) -> None:
    """Add ``contents`` through a real ``lantern mcp`` server, driven by the MCP SDK client."""
    import anyio
    from mcp import ClientSession
    from mcp.client.stdio import stdio_client

    from .mcp import server_params

    params = server_params(path)

    async def main() -> None:
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            for content in contents:
                tally.attempted += 1
                result = await session.call_tool(
                    "lantern_memory_add", {"content": content, "kind": "fact", "scope": "agent:mcp"}
                )
                if result.is_error:
                    code = json.loads(result.content[0].text)["error"]["code"]
                    assert code == "lock_timeout", result.content[0].text
                    tally.failed_cleanly += 1
                else:
                    tally.acknowledged += 1
                    tally.acked_ids.add(json.loads(result.content[0].text)["id"])

    anyio.run(main)


def library_writer(path: Path, contents: list[str], tally: Tally, store: Store | None = None):
    """Add ``contents`` through the library, in this process (own Store unless one is shared)."""
    from lantern_git.errors import LockTimeout

    own = store is None
    store = store or Store.open(str(path), actor="api")
    try:
        for content in contents:
            tally.attempted += 1
            try:
                record = store.add(content, kind="fact", scope="agent:lib")
            except LockTimeout:
                tally.failed_cleanly += 1
                continue
            tally.acknowledged += 1
            tally.acked_ids.add(record.id)
    finally:
        if own:
            store.close()


def cli_writer(path: Path, contents: list[str], tally: Tally, scope: str) -> None:
    """Add ``contents`` one CLI process after another; every exit must be 0 or a clean 1."""
    for content in contents:
        tally.attempted += 1
        result = lantern(*add_args(content, scope), store=path)
        assert "Traceback" not in result.stderr, result.stderr
        if result.returncode == 0:
            tally.acknowledged += 1
            tally.acked_ids.add(json.loads(result.stdout)["id"])
        else:
            assert result.returncode == 1, result.stderr
            assert json.loads(result.stderr)["error"]["code"] == "lock_timeout", result.stderr
            tally.failed_cleanly += 1


def cli_reader(path: Path, tallies: list[Tally], stop, reads: list[int]) -> None:
    """List again and again; each answer must hold every write acknowledged before it began."""
    while not stop.is_set():
        known = set().union(*(set(t.acked_ids) for t in tallies))
        result = lantern(
            "memory", "list", "--status", "all", "--json", "--scope", "agent:*", store=path
        )
        assert result.returncode == 0, result.stderr
        assert "Traceback" not in result.stderr
        listed = {r["id"] for r in json.loads(result.stdout)}
        missing = known - listed
        assert not missing, f"a reader missed acknowledged writes: {sorted(missing)}"
        reads[0] += 1


def concurrent_round(path: Path, rng: random.Random, tally: Tally, tag: str, with_mcp: bool) -> int:
    """CLI processes, library threads (own and shared Store) and an MCP server write at once,
    while CLI readers list. Returns the number of reads done."""

    shared = Store.open(str(path), actor="api")
    per = rng.randint(1, 3)
    jobs = []
    tallies: list[Tally] = []

    def job(func, items, *extra):
        tallies.append(Tally())
        jobs.append((func, (path, items, tallies[-1], *extra)))

    for w in range(4):
        job(
            cli_writer,
            [f"{tag} cli{w} {n} {rng.getrandbits(32):x}" for n in range(per)],
            f"agent:cli{w}",
        )
    for w in range(2):
        job(library_writer, [f"{tag} lib{w} {n} {rng.getrandbits(32):x}" for n in range(per)])
    for w in range(2):
        items = [f"{tag} shared{w} {n} {rng.getrandbits(32):x}" for n in range(per)]
        job(library_writer, items, shared)
    # The same content from two writers at once: one record, one commit, both acknowledged.
    twin = [f"{tag} twin {rng.getrandbits(32):x}"]
    job(cli_writer, twin, "agent:lib")
    job(library_writer, twin)
    if with_mcp:
        job(mcp_writer, [f"{tag} mcp {n} {rng.getrandbits(32):x}" for n in range(per)])
    errors: list[BaseException] = []

    def guarded(func, args):
        try:
            func(*args)
        except BaseException as err:  # reported by the caller's thread
            errors.append(err)

    stop = threading.Event()
    reads = [0]
    readers = [
        threading.Thread(target=guarded, args=(cli_reader, (path, tallies, stop, reads)))
        for _ in range(2)
    ]
    writers = [threading.Thread(target=guarded, args=job) for job in jobs]
    for thread in readers + writers:
        thread.start()
    for thread in writers:
        join(thread)
    stop.set()
    for thread in readers:
        join(thread)
    shared.close()
    for each in tallies:
        tally.merge(each)
    if errors:
        raise errors[0]
    return reads[0]
