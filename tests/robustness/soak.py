"""The long reliability run: the crash, concurrency and hostile-input scenarios, over and over.

    cd <your checkout> && python -m tests.robustness.soak --minutes 10 [--seed N] [--keep]

Each cycle runs concurrent writers (CLI processes, library threads with their own and a shared
Store, a ``lantern mcp`` server) beside CLI readers; CLI writers killed at random moments;
writes killed at every LANTERN_FAULT step; and random hostile CLI arguments and record files.
After every cycle the store is audited (support.reliability.audit): every acknowledged write is
in HEAD and in the listing, history is linear, ``git fsck`` and ``lantern check`` pass, and
``git status`` is clean. The figures are printed at the end; any failure stops the run with the
seed to replay it.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import sys
import tempfile
import threading
import time
from pathlib import Path

# tests/, where the shared helpers are (support/), from tests/robustness/.
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from support.cli import cli_env, invoke, lantern
from support.reliability import (
    Tally,
    add_args,
    audit,
    concurrent_round,
    random_kill_round,
    recover_now,
    write_duration,
)
from support.stores import make_store

FAULTS = (
    "after-objects",
    "after-journal",
    "after-first-file",
    "after-files",
    "after-ref",
    "after-index",
    "after-search-index",
)
HOSTILE_PIECES = [
    "../",
    "/etc/passwd",
    "\\",
    "\x00",
    "\n---\n",
    "&a [*a]",
    "!!python/object/apply:os.system",
    "user:",
    ":",
    "*",
    "\udcff",
    "\u2028",
    "é",
    "x" * 300,
    "-1",
    "101",
    "nan",
    "+7d",
    "--json",
    "global",
]


def isolate(folder: Path) -> None:
    """Our own HOME and git identity, as the test suite's support.env does."""
    home = folder / "home"
    home.mkdir()
    (home / ".gitconfig").write_text(
        "[user]\n\tname = Soak Test\n\temail = soak@example.com\n[init]\n\tdefaultBranch = main\n"
    )
    for name in list(os.environ):
        if name.startswith("LANTERN_"):
            del os.environ[name]
    os.environ.update(
        HOME=str(home),
        XDG_DATA_HOME=str(home / "data"),
        XDG_CONFIG_HOME=str(home / "config"),
        LANTERN_LOCK_TIMEOUT="30",
    )


def fault_round(path: Path, rng: random.Random, tally: Tally) -> None:
    """One write killed at a named step, then a command that must repair the store."""
    point = rng.choice(FAULTS)
    content = f"fault {point} {rng.getrandbits(40):x}"
    existing = [p.stem for p in (path / "memory").glob("*/*.md")]
    target = rng.choice(existing) if existing else None
    if target and rng.random() < 0.4:
        args = ["memory", "supersede", target, content]
    else:
        args = add_args(content, "agent:fault")
    result = lantern(*args, env=cli_env(LANTERN_FAULT=point), store=path)
    tally.attempted += 1
    if result.returncode == -9:
        tally.kills += 1
    elif result.returncode != 0:
        assert result.returncode in (1, 2), result.stderr
        tally.failed_cleanly += 1
    recover_now(path, tally)


def hostile_round(path: Path, rng: random.Random, tally: Tally) -> None:
    """Random CLI arguments in-process, and random record files through the parser."""
    from lantern_git.model.record_file import read_record_file

    def piece() -> str:
        return "".join(rng.choice(HOSTILE_PIECES) for _ in range(rng.randint(0, 3)))

    for _ in range(20):
        verb = rng.choice(["add", "show", "archive", "update", "list", "search"])
        if verb == "add":
            args = ["memory", "add", piece() or "x", "--kind", rng.choice(["fact", piece()])]
            args += ["--scope", piece() or "global", "--priority", piece() or "1"]
        elif verb in ("show", "archive", "update"):
            args = ["memory", verb, piece() or "0000"]
            args += ["--priority", "5"] if verb == "update" else []
        else:
            args = ["memory", verb, piece() or "q", "--scope", piece() or "global"]
        head = (path / ".git" / "refs" / "heads" / "main").read_text()
        result = invoke(*args, "--json", store=path, catch_exceptions=True)
        tally.inputs += 1
        output = result.output + result.stderr
        assert result.exception is None or isinstance(result.exception, SystemExit), output
        assert "Traceback" not in output and "internal_error" not in output, (args, output)
        if verb == "add" and result.exit_code == 0:
            tally.attempted += 1
            tally.acknowledged += 1
            tally.acked_ids.add(json.loads(result.stdout)["id"])
        elif result.exit_code != 0 or verb not in ("add", "archive", "update"):
            assert (path / ".git" / "refs" / "heads" / "main").read_text() == head, args
    with tempfile.TemporaryDirectory() as scratch:
        target = Path(scratch, "memory/01/0123456789abcdef.md")
        target.parent.mkdir(parents=True)
        for _ in range(30):
            lines = ["---", "id: 0123456789abcdef", "kind: fact", "created_at: 1", "updated_at: 1"]
            lines = [line for line in lines if rng.random() < 0.9]
            lines += [piece() for _ in range(rng.randint(0, 3))] + ["---", piece() or "body"]
            data = "\n".join(lines).encode("utf-8", "surrogatepass")
            if rng.random() < 0.2:
                data = rng.randbytes(rng.randint(0, 200))
            target.write_bytes(data)
            _, record, problem = read_record_file(scratch, "memory/01/0123456789abcdef.md")
            assert (record is None) != (problem is None)
            tally.inputs += 1


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--minutes", type=float, default=10.0)
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("--keep", action="store_true", help="keep the store for inspection")
    options = parser.parse_args()
    seed = options.seed if options.seed is not None else random.randrange(1 << 30)
    rng = random.Random(seed)
    folder = Path(tempfile.mkdtemp(prefix="lantern-soak-"))
    isolate(folder)
    path = make_store(folder / "store")
    tally = Tally()
    audits = reads = cycles = 0
    deadline = time.monotonic() + options.minutes * 60
    started = time.monotonic()
    print(f"soak: seed {seed}, store {path}, {options.minutes:g} min", flush=True)
    try:
        while time.monotonic() < deadline:
            cycles += 1
            reads += concurrent_round(path, rng, tally, f"c{cycles}", with_mcp=cycles % 3 == 1)
            span = 2.5 * write_duration(path)
            for n in range(8):
                racers = [Tally(), Tally()]
                threads = [
                    threading.Thread(
                        target=random_kill_round, args=(path, rng, t, f"k{cycles}.{n}", span)
                    )
                    for t in racers
                ]
                for thread in threads:
                    thread.start()
                for thread in threads:
                    thread.join()
                for t in racers:
                    tally.merge(t)
            recover_now(path, tally)
            for _ in range(4):
                fault_round(path, rng, tally)
            hostile_round(path, rng, tally)
            audit(path, tally.acked_ids)
            audits += 1
            print(
                f"  cycle {cycles}: {time.monotonic() - started:.0f}s, "
                f"acknowledged {tally.acknowledged}, kills {tally.kills}",
                flush=True,
            )
    except BaseException:
        print(f"soak FAILED in cycle {cycles}; replay with --seed {seed}; store kept at {path}")
        raise
    figures = audit(path, tally.acked_ids)
    found = len(tally.acked_ids)  # audit() asserted that every one of them is in HEAD
    print(
        "soak figures:\n"
        f"  duration            {time.monotonic() - started:.0f} s, {cycles} cycles, seed {seed}\n"
        f"  writes attempted    {tally.attempted}\n"
        f"  acknowledged        {tally.acknowledged} ({len(tally.acked_ids)} distinct records)\n"
        f"  acknowledged found  {found} of {len(tally.acked_ids)}\n"
        f"  failed cleanly      {tally.failed_cleanly} (lock timeout or refused, exit 1/2)\n"
        f"  kills survived      {tally.kills} (SIGKILL at random moments and at fault points)\n"
        f"  recoveries reported {tally.recoveries} (completed or rolled back on stderr)\n"
        f"  hostile inputs      {tally.inputs}\n"
        f"  concurrent reads    {reads}\n"
        f"  audits passed       {audits + 1}\n"
        f"  store               {figures['committed']} records, {figures['commits']} commits"
    )
    if not options.keep:
        shutil.rmtree(folder, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
