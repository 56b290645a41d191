"""The README documents what lantern offers: every CLI command, and every MCP tool, is named in
it (as sqlite-utils' docs test checks its commands)."""

from __future__ import annotations

from pathlib import Path

import click

from lantern_git.cli import cli
from lantern_git.mcp.server import ALL_TOOLS

README = (Path(__file__).resolve().parent.parent / "README.md").read_text()


def command_paths(group: click.Group, prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    paths = []
    for name, command in group.commands.items():
        if command.hidden:
            continue
        paths.append((*prefix, name))
        if isinstance(command, click.Group):
            paths.extend(command_paths(command, (*prefix, name)))
    return paths


def test_every_cli_command_is_in_the_readme():
    missing = [
        " ".join(path) for path in command_paths(cli) if f"lantern {' '.join(path)}" not in README
    ]
    assert missing == []


def test_every_mcp_tool_is_in_the_readme():
    assert [tool.name for tool in ALL_TOOLS if f"`{tool.name}`" not in README] == []


def test_the_walk_finds_the_commands_it_checks():
    paths = {" ".join(path) for path in command_paths(cli)}
    assert {"memory add", "source search", "verify", "clone", "revert"} <= paths
