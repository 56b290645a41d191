"""``lantern --help`` stays lean (issue 36, item 5): it imports no module a command does not
need to describe itself, and its text is click's own, width rule included.
``benchmarks/help_startup.py`` times it against ``python -c pass`` (target: at most 5x)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest

from lantern_git.cli import LAZY_COMMANDS, cli, render

# What --help never needs: each comes with a command that uses it.
NOT_FOR_HELP = ["json", "shutil", "subprocess", "dataclasses", "lantern_git.core.config"]
# The modules of the commands loaded when used (LAZY_COMMANDS): --help lists them from the table.
LAZY_MODULES = sorted({f"lantern_git.cli.{entry.module}" for entry in LAZY_COMMANDS.values()})


def test_help_imports_nothing_a_command_alone_needs():
    probe = (
        "import sys\n"
        "sys.argv = ['lantern', '--help']\n"
        "from lantern_git.cli import main\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        f"print([m for m in {[*NOT_FOR_HELP, *LAZY_MODULES]!r} if m in sys.modules],"
        " file=sys.stderr)\n"
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


def test_each_lazy_summary_is_its_command_s_own_help():
    """The table --help lists a lazy command from says what the command's help says (its first
    paragraph; None for a hidden command), and names every command its module registers."""
    commands = cli.every_command()
    for name, entry in LAZY_COMMANDS.items():
        command = commands[name]
        assert command.callback.__module__ == f"lantern_git.cli.{entry.module}", name
        first = " ".join((command.help or "").split("\n\n")[0].split())
        assert entry.summary == (None if command.hidden else first), name
    registered = {
        name for name, command in commands.items()
        if command.callback.__module__ in LAZY_MODULES
    }  # fmt: skip
    assert registered == set(LAZY_COMMANDS)


@pytest.mark.parametrize("columns", ["60", "80", "200"])
def test_help_lists_the_commands_as_click_lists_the_real_ones(columns):
    """``lantern --help`` (lazy: nothing loaded) is click's own help over every real command."""
    env = dict(os.environ, COLUMNS=columns)
    lazy = subprocess.run([sys.executable, "-m", "lantern_git", "--help"], env=env,
                          capture_output=True, text=True, timeout=60)  # fmt: skip
    loaded = subprocess.run(
        [sys.executable, "-c",
         "import sys, click; from lantern_git.cli import cli, main, support; cli.every_command(); "
         "support.LanternGroup.format_commands = click.Group.format_commands; "
         "sys.argv = ['lantern', '--help']; main()"],
        env=env, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert lazy.returncode == loaded.returncode == 0, lazy.stderr + loaded.stderr
    assert "  verify " in lazy.stdout and "merge-file" not in lazy.stdout
    assert lazy.stdout == loaded.stdout


def test_a_lazy_command_runs_and_is_suggested():
    """A lazy command loads when named; a nested name is still suggested from every group."""
    run = subprocess.run([sys.executable, "-m", "lantern_git", "source", "--help"],
                         capture_output=True, text=True, timeout=60)  # fmt: skip
    assert run.returncode == 0 and "Evidence: ingest" in run.stdout, run.stderr
    wrong = subprocess.run([sys.executable, "-m", "lantern_git", "search", "x"],
                           capture_output=True, text=True, timeout=60)  # fmt: skip
    assert wrong.returncode == 2
    assert "'lantern memory search' or 'lantern source search'" in wrong.stderr
