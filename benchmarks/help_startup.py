"""How long ``lantern --help`` takes against ``python -c pass``: the target is at most 5x.

    python benchmarks/help_startup.py             # median of 31 alternating runs of each
    python benchmarks/help_startup.py --runs 61

``lantern --help`` is the console script of the environment this runs in (the one ``pip
install`` made beside ``sys.executable``), else ``python -m lantern_git``. The two processes
alternate, so a busy machine slows them alike; each is spawned directly (no shell) with stdout
to /dev/null, and its wall time and CPU time (user + system, from wait4) are kept. Both ratios
are printed: the wall one is the target, the CPU one moves less with the machine's load. To see
what the help imports: ``python -X importtime -m lantern_git --help 2>&1 >/dev/null | sort
-t'|' -k2 -n | tail``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

TARGET = 5.0


def spawn(argv: list[str]) -> tuple[float, float]:
    """Wall and CPU seconds of one process."""
    start = time.perf_counter()
    pid = os.posix_spawn(
        argv[0], argv, os.environ,
        file_actions=[(os.POSIX_SPAWN_OPEN, 1, os.devnull, os.O_WRONLY, 0)],
    )  # fmt: skip
    _, status, usage = os.wait4(pid, 0)
    wall = time.perf_counter() - start
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{' '.join(argv)} failed")
    return wall, usage.ru_utime + usage.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=31)
    runs = parser.parse_args().runs
    script = os.path.join(os.path.dirname(sys.executable), "lantern")
    help_argv = [script, "--help"] if os.access(script, os.X_OK) else [
        sys.executable, "-m", "lantern_git", "--help",
    ]  # fmt: skip
    bare_argv = [sys.executable, "-c", "pass"]
    for argv in (bare_argv, help_argv):  # warm: bytecode compiled, files in the page cache
        spawn(argv)
    bare, helps = [], []
    for _ in range(runs):
        bare.append(spawn(bare_argv))
        helps.append(spawn(help_argv))
    load = os.getloadavg()[0]
    print(f"{' '.join(help_argv)} against {' '.join(bare_argv)}: {runs} runs each, load {load:.2f}")
    for n, what in enumerate(("wall", "cpu")):
        ours = statistics.median(t[n] for t in helps)
        base = statistics.median(t[n] for t in bare)
        print(f"  {what:4}  --help {ours * 1000:6.1f} ms  pass {base * 1000:6.1f} ms  "
              f"ratio {ours / base:.2f}  (target <= {TARGET:g})")  # fmt: skip


if __name__ == "__main__":
    main()
