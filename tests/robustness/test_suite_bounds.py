"""The suite's own bounds: every wait a test makes ends, and the whole run uses both cores.

A wait with no bound (a ``readline()`` on a server that never prints, a ``wait()`` on a process
that never exits) stalls the whole run; pytest-timeout's per-test limit (``timeout`` in
pyproject.toml) is the net under the waits' own bounds, and these tests prove both hold."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest
from support.processes import first_line, stop

ROOT = Path(__file__).resolve().parents[2]


def test_first_line_gives_up_on_a_process_that_prints_nothing():
    silent = subprocess.Popen(
        [sys.executable, "-c", "import time; time.sleep(60)"], stdout=subprocess.PIPE, text=True
    )
    try:
        started = time.monotonic()
        with pytest.raises(AssertionError, match="printed no line in 1 s"):
            first_line(silent, timeout=1)
        assert time.monotonic() - started < 30
    finally:
        stop(silent, timeout=5)
    assert silent.returncode is not None


def test_stop_kills_a_process_that_ignores_sigterm():
    stubborn = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import signal, time\n"
            "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
            "print('ready', flush=True)\n"
            "time.sleep(60)",
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert first_line(stubborn) == "ready"
    started = time.monotonic()
    stop(stubborn, timeout=1)
    assert stubborn.returncode == -9 and time.monotonic() - started < 30


def test_a_hanging_test_fails_at_the_per_test_bound_and_the_run_goes_on(tmp_path):
    """pytest-timeout is installed and on: a test that never ends fails, with its stack, and
    the test after it still runs."""
    (tmp_path / "test_hang.py").write_text(
        "import time\n\ndef test_hangs():\n    time.sleep(600)\n\ndef test_after():\n    pass\n"
    )
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-o", "timeout=2",
         "test_hang.py"],
        cwd=tmp_path, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert run.returncode == 1, run.stdout + run.stderr
    assert "Timeout" in run.stdout and "1 failed, 1 passed" in run.stdout


def test_the_suite_has_a_per_test_bound_and_runs_on_both_cores(pytestconfig):
    # The bound this very test runs under, from pyproject.toml.
    assert float(pytestconfig.getini("timeout")) == 300
    assert pytestconfig.pluginmanager.hasplugin("xdist")
    pyproject = (ROOT / "pyproject.toml").read_text()
    assert '"pytest-xdist>=' in pyproject and '"pytest-timeout>=' in pyproject
    parallel = "python -m pytest -q -n 2 --dist loadgroup -m"
    readme = (ROOT / "README.md").read_text()
    ci = (ROOT / ".ci" / "run").read_text()
    assert readme.count(parallel) == 2 and ci.count(parallel) == 2
