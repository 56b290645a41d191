"""Renders the CLI and MCP reference pages (docs/cli.md, docs/mcp.md) from the code, for cog.

The pages are written from what the program declares, never by hand, so they cannot drift: the
click command tree behind ``lantern`` and the MCP server's tool specs. CI runs
``cog --check docs/cli.md docs/mcp.md``; after changing a command or a tool, regenerate them with
``cog -r docs/cli.md docs/mcp.md`` (docs/development.md). cog puts this folder on ``sys.path``
while it runs a page's block, so the blocks ``import gen_reference``. Kept out of the runtime
package: nothing in lantern needs it.
"""

from __future__ import annotations

import json

import click

from lantern_git.cli.support import LanternGroup

# Help is rendered at a fixed width so the page does not depend on the terminal that made it.
WIDTH = 100


def _commands(
    command: click.Command, parent: click.Context | None, name: str
) -> list[tuple[str, click.Command, click.Context]]:
    """``command`` and every visible subcommand under it, depth first in declaration order,
    each with the context its ``--help`` is rendered in."""
    settings = {**command.context_settings, "terminal_width": WIDTH, "max_content_width": WIDTH}
    ctx = click.Context(command, info_name=name, parent=parent, **settings)
    found = [(ctx.command_path, command, ctx)]
    if isinstance(command, click.Group):
        # lantern's own group loads its lazy commands here, in their registration order.
        subs = command.every_command() if isinstance(command, LanternGroup) else command.commands
        for sub_name, sub in subs.items():
            if not sub.hidden:
                found.extend(_commands(sub, ctx, sub_name))
    return found


def cli_reference() -> str:
    """Every command's ``--help``, under a heading of its own, ``lantern`` first."""
    from lantern_git.cli import cli

    parts = []
    for path, command, ctx in _commands(cli, None, "lantern"):
        help_text = command.get_help(ctx).rstrip()
        parts.append(f"## `{path}`\n\n```\n$ {path} --help\n{help_text}\n```\n")
    return "\n".join(parts)


def cli_index() -> str:
    """One line per command, linking to its section, for the top of the page."""
    from lantern_git.cli import cli

    lines = []
    for path, command, _ in _commands(cli, None, "lantern"):
        anchor = path.replace(" ", "-")
        summary = command.get_short_help_str(limit=WIDTH)
        lines.append(f"- [`{path}`](#{anchor}): {summary}")
    return "\n".join(lines) + "\n"


def _type_of(schema: dict) -> str:
    """A JSON Schema type as a reader wants it: ``string``, ``integer``, ``array of string``,
    ``one of: keyword, semantic, hybrid``."""
    if "enum" in schema:
        return "one of: " + ", ".join(str(value) for value in schema["enum"])
    kind = schema.get("type", "any")
    if isinstance(kind, list):
        kind = " or ".join(kind)
    if kind == "array":
        items = schema.get("items", {})
        return f"array of {_type_of(items)}" if items else "array"
    return kind


def _limits(schema: dict) -> str:
    """The bounds a value must keep, as one short phrase (empty when there are none)."""
    words = []
    for key, say in (
        ("minimum", ">= {}"),
        ("maximum", "<= {}"),
        ("minLength", "at least {} character{}"),
        ("maxLength", "at most {} character{}"),
        ("minItems", "at least {} item{}"),
        ("maxItems", "at most {} item{}"),
        ("pattern", "matches `{}`"),
    ):
        if key in schema:
            value = schema[key]
            words.append(say.format(value, "" if value == 1 else "s"))
    return ", ".join(words)


def _cell(text: str) -> str:
    """Text fit for one cell of a markdown table."""
    return " ".join(text.split()).replace("|", "\\|")


def mcp_index() -> str:
    """The tools at a glance: one table row each, with the hints a client sees."""
    from lantern_git.mcp.server import ALL_TOOLS

    yes_no = {True: "yes", False: "no"}
    rows = [
        "| tool | title | read-only | destructive | idempotent |",
        "|---|---|---|---|---|",
    ]
    for tool in ALL_TOOLS:
        rows.append(
            f"| [`{tool.name}`](#{tool.name}) | {_cell(tool.title)} | {yes_no[tool.read_only]} "
            f"| {yes_no[tool.destructive]} | {yes_no[tool.idempotent]} |"
        )
    return "\n".join(rows) + "\n"


def mcp_reference() -> str:
    """Each tool: its description, hints and input fields (type, required, default, limits)."""
    from lantern_git.mcp.server import ALL_TOOLS

    parts = []
    for tool in ALL_TOOLS:
        hints = (
            ("read-only" if tool.read_only else "writes")
            + (", destructive" if tool.destructive else "")
            + (", idempotent" if tool.idempotent else "")
        )
        lines = [f"### `{tool.name}`", "", f"**{tool.title}** ({hints})", "", tool.description, ""]
        properties = tool.input_schema.get("properties", {})
        required = set(tool.input_schema.get("required", ()))
        if properties:
            lines += [
                "| argument | type | required | default | description |",
                "|---|---|---|---|---|",
            ]
            for name, schema in properties.items():
                default = json.dumps(schema["default"]) if "default" in schema else ""
                about = schema.get("description", "")
                limits = _limits(schema)
                if limits:
                    about = f"{about} ({limits})" if about else limits
                lines.append(
                    f"| `{name}` | {_cell(_type_of(schema))} | "
                    f"{'yes' if name in required else 'no'} | {_cell(default)} | {_cell(about)} |"
                )
        else:
            lines.append("No arguments.")
        parts.append("\n".join(lines) + "\n")
    return "\n".join(parts)
