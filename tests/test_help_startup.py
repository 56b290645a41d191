"""``lantern --help`` stays lean (issue 36, item 5): it imports no module a command does not
need to describe itself, and its text is click's own, width rule included.
``benchmarks/help_startup.py`` times it against ``python -c pass`` (target: at most 5x)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest

from lantern_git.cli import render

# What --help never needs: each comes with a command that uses it.
NOT_FOR_HELP = ["json", "shutil", "subprocess", "dataclasses", "lantern_git.core.config"]


def test_help_imports_nothing_a_command_alone_needs():
    probe = (
        "import sys\n"
        "sys.argv = ['lantern', '--help']\n"
        "from lantern_git.cli import main\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        f"print([m for m in {NOT_FOR_HELP!r} if m in sys.modules], file=sys.stderr)\n"
    )
    run = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                         timeout=60)  # fmt: skip
    assert run.returncode == 0 and "Commands:" in run.stdout, run.stderr
    assert run.stderr.strip() == "[]"


@pytest.mark.parametrize("columns", [None, "60", "200", "0", "-3", "wide", "100"])
def test_the_terminal_width_is_shutil_s(monkeypatch, columns):
    if columns is None:
        monkeypatch.delenv("COLUMNS", raising=False)
    else:
        monkeypatch.setenv("COLUMNS", columns)
    for fallback in (80, 100):
        assert render.terminal_columns(fallback) == shutil.get_terminal_size((fallback, 24)).columns


@pytest.mark.parametrize("columns", ["50", "79", "80", "100", "200"])
def test_help_is_wrapped_as_click_wraps_it(columns):
    """The width lantern hands click is the one click would take for itself."""
    env = dict(os.environ, COLUMNS=columns)
    ours = subprocess.run([sys.executable, "-m", "lantern_git", "memory", "add", "--help"],
                          env=env, capture_output=True, text=True, timeout=60)  # fmt: skip
    plain = subprocess.run(
        [sys.executable, "-c",
         "import sys; from lantern_git.cli import cli; "
         "import click; click.Group.main(cli, ['memory', 'add', '--help'], 'lantern')"],
        env=env, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert ours.returncode == 0 and ours.stdout == plain.stdout != ""
