"""What a store needs from git's configuration: the record merge driver and pull strategy.

Only the standard library is imported at module level: every command that opens a store asks
:func:`routes_to_driver`, and a list must not pay for pygit2. Git config is not cloned,
so a fresh clone of a store has a ``.gitattributes`` that routes
record files to a driver its ``.git/config`` does not define yet; any command that opens such a
store registers it (:func:`ensure_merge_driver`). Who commits is :mod:`.identity`'s.

Which files go to the driver is for the record and source modules to say (each has its
``MERGE_PATTERN``, made a line by :func:`attributes_line`); this module knows no store layout.
"""

from __future__ import annotations

import os
import shlex
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pygit2

DRIVER = "lantern"
DRIVER_NAME = "lantern record merge (field by field; see lantern's docs/sync.md)"
DRIVER_KEY = f"merge.{DRIVER}.driver"
# Either of these, set anywhere (system, global, the repository), says how the user wants a
# diverged `git pull` reconciled; without both, git 2.27+ stops with "Need to specify how to
# reconcile divergent branches".
PULL_KEYS = ("pull.rebase", "pull.ff")

Warn = Callable[[str], None]


def merge_driver_command() -> str:
    """The driver line for git config: this Python, so it works without PATH set up."""
    return f"{shlex.quote(sys.executable)} -m lantern_git merge-file %O %A %B %P"


def attributes_line(pattern: str) -> str:
    """The ``.gitattributes`` line that sends the files ``pattern`` matches to the driver."""
    return f"{pattern} merge={DRIVER}"


def routes_to_driver(root: str, line: str) -> bool:
    """Whether the repository's ``.gitattributes`` has ``line`` (an :func:`attributes_line`)."""
    try:
        with open(os.path.join(root, ".gitattributes"), "rb") as handle:
            text = handle.read(1 << 16).decode("utf-8", "replace")
    except OSError:
        return False
    return any(existing.strip() == line for existing in text.splitlines())


def driver_registered(repo: pygit2.Repository) -> bool:
    import pygit2

    try:
        return bool(repo.config[DRIVER_KEY])
    except (KeyError, pygit2.GitError):
        return False


def ensure_merge_driver(repo: pygit2.Repository, warn: Warn | None = None) -> bool:
    """Register the record merge driver in the repository's own config; True if it changed.

    A config that cannot be written (locked by a running git, read-only) only costs plain
    ``git pull`` its record merge, so it is a warning, not a failure.
    """
    import pygit2

    changed = False
    try:
        config = repo.config
        for key, value in (
            (f"merge.{DRIVER}.name", DRIVER_NAME),
            (DRIVER_KEY, merge_driver_command()),
        ):
            try:
                current = config[key]
            except KeyError:
                current = None
            if current != value:
                config[key] = value
                changed = True
    except (pygit2.GitError, OSError) as err:
        if warn is not None:
            warn(
                f"lantern: could not register the record merge driver in .git/config ({err}); "
                "plain git pull will merge record files line by line until it is"
            )
    return changed


def ensure_pull_strategy(repo: pygit2.Repository, warn: Warn | None = None) -> bool:
    """Set ``pull.rebase=false`` in the repository's own config, unless the user has chosen a
    pull strategy (``pull.rebase`` or ``pull.ff``) at any level; True if it set it.

    Two hosts that both wrote have diverged branches, so a bare ``git pull`` in a store must
    merge (through the record merge driver) rather than stop and ask. A rebase merges record
    files with the same driver, so a user's ``pull.rebase=true`` is left as it is.
    """
    import pygit2

    try:
        config = repo.config
        for key in PULL_KEYS:
            if key in config:
                return False
        config["pull.rebase"] = "false"
        return True
    except (pygit2.GitError, OSError) as err:
        if warn is not None:
            warn(
                f"lantern: could not set pull.rebase in .git/config ({err}); a bare git pull "
                "of diverged branches will ask how to reconcile them"
            )
        return False


def with_lines(current: bytes, lines: tuple[str, ...]) -> bytes:
    """``current`` (a .gitignore or .gitattributes) with each of ``lines`` it lacks added at
    the end."""
    for line in lines:
        current = _with_line(current, line)
    return current


def _with_line(current: bytes, line: str) -> bytes:
    lines = current.decode("utf-8", "replace").splitlines()
    if line in (existing.strip() for existing in lines):
        return current
    prefix = current if not current or current.endswith(b"\n") else current + b"\n"
    return prefix + line.encode() + b"\n"
