"""``lantern sync`` and the hidden ``lantern merge-file`` git merge driver.

Only click, the standard library and the renderer are imported at module level. The merge driver
imports just the record merge (PyYAML), never pygit2 or the search index: git runs it once per
record file both sides changed, holding its own index lock, so it must start fast and touch
nothing else.
"""

from __future__ import annotations

import os
import sys

import click

from . import render, support
from .support import json_option, writer


def register(cli: click.Group, memory: click.Group) -> None:
    cli.add_command(clone_command)
    cli.add_command(sync_command)
    cli.add_command(merge_file_command)


@click.command("clone")
@click.argument("url")
@click.argument("path", required=False)
@json_option
def clone_command(url: str, path: str | None, as_json: bool) -> None:
    """Clone the store at URL into PATH and register its record merge driver.

    PATH defaults to the folder git clone makes (the URL's last part without .git, past any
    user and password). A plain git pull in the clone then merges records field by field,
    and merges rather than asks when the two hosts' branches diverged (pull.rebase=false,
    unless you set a pull strategy yourself).
    """
    from ..store import Store

    store = Store.clone(url, path, actor="cli")
    render.emit(store.cloned, as_json, render.clone_lines)


@click.command("sync")
@click.argument("remote", required=False)
@click.option("--no-push", is_flag=True, help="Fetch and merge only; do not push.")
@click.option(
    "--review-branches/--no-review-branches",
    default=None,
    help="Also fetch, merge and push the review branches (lantern/review/*). "
    "Default: sync_review_branches in lantern.yaml, else no.",
)
@writer
def sync_command(
    remote: str | None,
    no_push: bool,
    review_branches: bool | None,
    as_json: bool,
    store_path: str | None,
    author: str | None,
) -> None:
    """Fetch from REMOTE, merge records field by field, push.

    REMOTE is a configured remote (default: the branch's upstream, else origin) or a URL or
    path. Records both sides changed are listed in the merge commit and in --json output.
    Never force-pushes; refuses to run with uncommitted hand edits. With --review-branches,
    the review branches travel too, so a person on another host can review them.
    """
    store = support.open_store(store_path, author)
    report = store.sync(remote, push=not no_push, review_branches=review_branches)
    render.emit(report.to_dict(), as_json, render.sync_lines)


@click.command("merge-file", hidden=True)
@click.argument("base")
@click.argument("ours")
@click.argument("theirs")
@click.argument("path", required=False)
@click.pass_context
def merge_file_command(
    ctx: click.Context, base: str, ours: str, theirs: str, path: str | None
) -> None:
    """Git merge driver: merge BASE, OURS, THEIRS (temporary files) into OURS."""
    ctx.exit(run_merge_driver(base, ours, theirs, path))


def run_merge_driver(base: str, ours: str, theirs: str, path: str | None) -> int:
    """Exit status for git: 0 merged, 1 conflict (OURS left as it was, never with markers)."""
    from ..model.entity_keys import key_of_path
    from ..model.record_file import expected_id
    from ..model.record_merge import MergeError, merge_records
    from ..model.source import parse_source_path
    from ..workspace.migrations import MARKER

    source = parse_source_path(path) if path else None
    if source is not None:
        return _merge_source_file(base, ours, theirs, path or "", *source)
    if path == MARKER:
        return _merge_marker(base, ours, theirs)
    if path and key_of_path(path) is not None:
        return _merge_entity_file(base, ours, theirs, path)
    if expected_id(path) is None:
        # Not a record file (a README in memory/, say): git's own line merge, as git would do.
        import subprocess

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
    _write(ours, merged.text.encode("utf-8"))
    return 0


def _merge_source_file(
    base: str, ours: str, theirs: str, path: str, source_id: str, part: str
) -> int:
    """One file of a source: a body by the body rules alone; a manifest with the bodies it
    describes looked up in the repository, so it describes the body git writes beside it
    (see :mod:`lantern_git.git.blobs` for why the driver cannot just read it)."""
    from ..model.record_merge import MergeError
    from ..model.source_merge import merge_bodies, merge_manifest_files

    try:
        data = [_read(p) for p in (base, ours, theirs)]
        if part == "body":
            # Git passes an empty base for a file added on both sides: the rules read it as none.
            result = merge_bodies(data[0] or None, data[1], data[2]).body
        else:
            root = os.getcwd()
            result = merge_manifest_files(
                data[0] or None,
                data[1],
                data[2],
                source_id,
                lambda m: find_source_body(root, source_id, m.bytes, m.sha256),
            )
    except MergeError as err:
        sys.stderr.write(f"lantern merge driver: {path}: {err.message}\n")
        return 1
    except OSError as err:
        sys.stderr.write(f"lantern merge driver: {path}: {err}\n")
        return 1
    if result is None:
        return 1
    _write(ours, result)
    return 0


def _merge_entity_file(base: str, ours: str, theirs: str, path: str) -> int:
    """An entity file, field by field (aliases as a set): the function sync uses."""
    from ..model.entity_merge import merge_entity_files
    from ..model.record_merge import MergeError

    try:
        data = [_read(p) for p in (base, ours, theirs)]
        merged = merge_entity_files(data[0] or None, data[1], data[2], path)
    except MergeError as err:
        sys.stderr.write(f"lantern merge driver: {err.message}\n")
        return 1
    except OSError as err:
        sys.stderr.write(f"lantern merge driver: {path}: {err}\n")
        return 1
    _write(ours, merged)
    return 0


def _merge_marker(base: str, ours: str, theirs: str) -> int:
    """``lantern.yaml``: two stores of different formats are never merged (the result would
    hold one format's files under the other's marker), so a plain ``git pull`` stops here as
    ``lantern sync`` does, naming ``lantern migrate``; same formats: git's line merge."""
    from ..errors import StoreError
    from ..workspace.migrations import MARKER, read_format

    try:
        mine, other = (read_format(_read(name), MARKER) for name in (ours, theirs))
    except (OSError, StoreError) as err:
        sys.stderr.write(f"lantern merge driver: {MARKER}: {err}\n")
        return 1
    if mine != other:
        older = "this store" if mine < other else "the other store"
        sys.stderr.write(
            f"lantern merge driver: {MARKER}: this store is format {mine} and the other is "
            f"format {other}; lantern merges only stores of the same format: run lantern "
            f"migrate in {older} first (git merge --abort undoes this merge)\n"
        )
        return 1
    import subprocess

    result = subprocess.run(
        ["git", "merge-file", "-p", ours, base, theirs], capture_output=True, check=False
    )
    if result.returncode != 0:
        return 1
    _write(ours, result.stdout)
    return 0


def find_source_body(
    root: str, source_id: str, size: int, sha256: str, environ: dict[str, str] | None = None
) -> bytes | None:
    """The body of ``source_id`` whose length is ``size`` and sha256 is ``sha256``, from the
    repository at ``root``; None when no such blob is there. The git layer searches, the
    source layout says where (its folder, and which of its files are bodies)."""
    from ..git.blobs import find_blob
    from ..model.source import MANIFEST_SUFFIX, source_dir

    def is_body(name: str) -> bool:
        return name.startswith(source_id + ".") and not name.endswith(MANIFEST_SUFFIX)

    return find_blob(root, source_dir(source_id), is_body, size, sha256, environ)


def _write(name: str, data: bytes) -> None:
    tmp = name + ".lantern-merge"
    with open(tmp, "wb") as handle:
        handle.write(data)
    os.replace(tmp, name)


def _read(name: str) -> bytes:
    with open(name, "rb") as handle:
        return handle.read()
