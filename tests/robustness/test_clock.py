"""The indexes compare file times with the file system's clock, not only the process's.

A process whose clock runs ahead of its file system (a network file system with another server
clock, a container with a faked time) once set the index's stamp into the future, and later
hand edits stayed invisible. These tests run lantern under ``faketime`` (libfaketime, from the
distribution: ``.ci/system-deps`` installs it), which moves the process's clock and leaves the
file times the kernel writes alone.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

from lantern_git.index import clock
from lantern_git.model.record_file import record_path

YEAR_S = 365 * 24 * 3600
FAKETIME = shutil.which("faketime")


def ahead(*argv: str, env: dict | None = None) -> subprocess.CompletedProcess:
    """``argv`` run with its clock one year ahead of the file system's."""
    assert FAKETIME, "faketime is missing: .ci/system-deps installs it"
    return subprocess.run(
        [FAKETIME, "-f", "+365d", *argv],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, **(env or {})},
        check=False,
    )


def lantern_ahead(store: str, *args: str) -> subprocess.CompletedProcess:
    result = ahead(sys.executable, "-m", "lantern_git", *args, "--store", store)
    assert result.returncode == 0, result.stderr
    return result


def test_the_offset_is_measured_from_a_file_the_file_system_stamps(tmp_path):
    code = "import sys; from lantern_git.index import clock; print(clock.offset_ns(sys.argv[1]))"
    result = ahead(sys.executable, "-c", code, str(tmp_path / "not" / "made" / "yet"))
    assert result.returncode == 0, result.stderr
    offset_s = int(result.stdout) / 1e9
    # The file system's clock is a year behind the faked one; the test's own steps take seconds.
    assert abs(offset_s + YEAR_S) < 60, offset_s
    assert sorted(os.listdir(tmp_path)) == [], "the probe file is removed"


def test_hand_edits_are_seen_by_a_process_whose_clock_runs_a_year_ahead(store_path):
    store = str(store_path)
    added = lantern_ahead(
        store, "memory", "add", "The build runs at noon.", "--kind", "fact", "--json"
    )
    path = store_path / record_path(json.loads(added.stdout)["id"])
    for hour in ("one", "two"):
        # Written by this process, on the real clock: the kernel stamps it with the file
        # system's time, a year before the lantern process's.
        text = path.read_text()
        path.write_text(text.replace("at noon" if hour == "one" else "at one", f"at {hour}"))
        listed = json.loads(lantern_ahead(store, "memory", "list", "--json").stdout)
        assert [r["content"] for r in listed] == [f"The build runs at {hour}."]


def test_a_long_lived_store_sees_edits_with_its_clock_a_year_ahead(store_path):
    code = """
import os, sys, time
from lantern_git.store import Store
from lantern_git.index import clock
from lantern_git.model.record_file import record_path
store = Store.open(sys.argv[1])
record = store.add("The deploy runs at noon.", kind="fact")
path = os.path.join(store.root, record_path(record.id))
seen = []
for word in ("one", "two", "three"):
    with open(path) as handle:
        text = handle.read()
    with open(path, "w") as handle:
        handle.write(text.replace(text.split("runs at ")[1].split(".")[0], word, 1))
    seen.append(store.list()[0].content)
print("|".join(seen))
"""
    result = ahead(sys.executable, "-c", code, str(store_path))
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == (
        "The deploy runs at one.|The deploy runs at two.|The deploy runs at three."
    )


STEPPED = """
import sys
from lantern_git.index import clock
folder, step_file = sys.argv[1:]

def stepped(by):
    with open(step_file, "w") as handle:
        handle.write(by + "\\n")
    return clock.offset_ns(folder) / 1e9

print(clock.offset_ns(folder) / 1e9, stepped("+20s"), stepped("+1h"))
"""


def test_a_clock_step_is_noticed_once_the_re_measure_period_has_passed(tmp_path):
    """A long-running process (``lantern mcp``, ``lantern serve``) outlives a clock step: the
    offset measured at its start must not stay its offset for ever. Its clock is stepped from
    outside while it runs (libfaketime reads the step from a file at every call); a step moves
    its monotonic clock too, so a step of an hour is also an hour of the re-measure period."""
    assert FAKETIME, "faketime is missing: .ci/system-deps installs it"
    # The library the wrapper preloads, wherever the distribution keeps it.
    preload = subprocess.run(
        [FAKETIME, "-f", "+0", "sh", "-c", 'printf %s "$LD_PRELOAD"'],
        capture_output=True, text=True, timeout=30, check=True,
    ).stdout  # fmt: skip
    assert "faketime" in preload, preload
    step_file = tmp_path / "step"
    step_file.write_text("+0\n")
    env = {
        **os.environ,
        "LD_PRELOAD": preload,
        "FAKETIME_TIMESTAMP_FILE": str(step_file),
        "FAKETIME_NO_CACHE": "1",
    }
    env.pop("FAKETIME", None)
    folder = tmp_path / "index"
    folder.mkdir()
    result = subprocess.run(
        [sys.executable, "-c", STEPPED, str(folder), str(step_file)],
        capture_output=True, text=True, timeout=120, env=env, check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    start, within, after = map(float, result.stdout.split())
    # In step with the file system at first; 20 s on (within the period, 60 s) the offset
    # measured then still holds; an hour on, it is measured again: an hour behind.
    assert (start, within) == (0.0, 0.0)
    assert clock.REMEASURE_AFTER_S < 3600
    assert abs(after + 3600) < 60, after
