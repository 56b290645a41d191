"""``lantern sync`` and the hidden ``lantern merge-file`` git merge driver.

Only click and the standard library are imported at module level. The merge driver imports just
the record merge (PyYAML), never pygit2 or the search index: git runs it once per record file
both sides changed, holding its own index lock, so it must start fast and touch nothing else.
"""

from __future__ import annotations

import os
import subprocess
import sys

import click

from .support import open_store, writer


def register(cli: click.Group, memory: click.Group) -> None:
    cli.add_command(sync_command)
    cli.add_command(merge_file_command)


@click.command("sync")
@click.argument("remote", required=False)
@click.option("--no-push", is_flag=True, help="Fetch and merge only; do not push.")
@writer
def sync_command(remote, no_push, as_json, store_path, author) -> None:
    """Fetch from REMOTE, merge records field by field, push.

    REMOTE is a configured remote (default: the branch's upstream, else origin) or a URL or
    path. Records both sides changed are listed in the merge commit and in --json output.
    Never force-pushes; refuses to run with uncommitted hand edits.
    """
    from .. import render

    store = open_store(store_path, author)
    report = store.sync(remote, push=not no_push)
    render.emit(report.to_dict(), as_json, _text)


def _text(value: dict) -> list[str]:
    lines: list[str] = []
    where = value["remote"] + ("/" + value["remote_branch"] if "/" not in value["remote"] else "")
    records = value["records"]
    if value["remote_head"] is None:
        lines.append(f"{where} is empty")
    elif value["fast_forward"]:
        lines.append(f"fast-forwarded to {where} ({_commits(value['incoming_commits'])})")
    elif value["merge_commits"]:
        lines.append(
            f"merged {where} ({_commits(value['incoming_commits'])}) "
            f"in {value['merge_commits'][-1][:7]}"
        )
    else:
        lines.append(f"nothing new from {where}")
    moved = [f"{len(records[k])} {k}" for k in ("added", "changed", "removed") if records[k]]
    if moved:
        lines.append("records: " + ", ".join(moved))
    for item in value["merged"]:
        fields = item["fields"]
        head = f"changed on both sides: {item['id']}"
        if item["note"]:
            head += f" ({item['note']})"
        lines.append(head)
        for change in fields:
            lines.append(
                f"  {change['field']}: local {_short(change['local'])}, "
                f"remote {_short(change['remote'])} -> {_short(change['merged'])}"
            )
    if value["pushed"]:
        lines.append(
            f"pushed {_commits(value['pushed_commits'])} to {where}"
            + (" (upstream set)" if value["set_upstream"] else "")
        )
    elif value["remote_head"] is not None and value["head_after"] == value["remote_head"]:
        lines.append("up to date")
    return lines


def _commits(count: int) -> str:
    return f"{count} commit" + ("" if count == 1 else "s")


def _short(value) -> str:
    text = " ".join(str(value).split()) if value is not None else "(absent)"
    return text if len(text) <= 50 else text[:47] + "..."


@click.command("merge-file", hidden=True)
@click.argument("base")
@click.argument("ours")
@click.argument("theirs")
@click.argument("path", required=False)
@click.pass_context
def merge_file_command(ctx, base, ours, theirs, path) -> None:
    """Git merge driver: merge BASE, OURS, THEIRS (temporary files) into OURS."""
    ctx.exit(run_merge_driver(base, ours, theirs, path))


def run_merge_driver(base: str, ours: str, theirs: str, path: str | None) -> int:
    """Exit status for git: 0 merged, 1 conflict (OURS left as it was, never with markers)."""
    from ..merge import MergeError, expected_id, merge_records

    if expected_id(path) is None:
        # Not a record file (a README in memory/, say): git's own line merge, as git would do.
        result = subprocess.run(
            ["git", "merge-file", "-L", "ours", "-L", "base", "-L", "theirs", ours, base, theirs],
            check=False,
        )
        return 0 if result.returncode == 0 else 1
    try:
        data = [_read(p) for p in (base, ours, theirs)]
        merged = merge_records(data[0], data[1], data[2], path)
    except MergeError as err:
        sys.stderr.write(f"lantern merge driver: {err.message}\n")
        return 1
    except OSError as err:
        sys.stderr.write(f"lantern merge driver: {path}: {err}\n")
        return 1
    tmp = ours + ".lantern-merge"
    with open(tmp, "wb") as handle:
        handle.write(merged.text.encode("utf-8"))
    os.replace(tmp, ours)
    return 0


def _read(name: str) -> bytes:
    with open(name, "rb") as handle:
        return handle.read()
