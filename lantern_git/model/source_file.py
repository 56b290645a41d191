"""Source files in the working tree: where they are, the one safe way to read them, and what
is wrong with them.

As :mod:`lantern_git.model.record_file` is for records, this is for ``sources/<aa>/<id>.<ext>`` and
its manifest: every reader (the chunk index, show, verify, check, commit, writes) comes here,
so a symbolic link, a FIFO or a folder where a source file should be is reported the same way
everywhere and never read through or waited on.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..core.fields import TMP_SUFFIX
from ..errors import NotFound, StoreError, ValidationError
from .record_file import Problem, conflict_line, read_bytes
from .source import (
    MANIFEST_SUFFIX,
    MAX_MANIFEST_BYTES,
    MAX_SOURCE_BYTES,
    SOURCES_DIR,
    SourceManifest,
    check_body,
    check_source_id,
    count_lines,
    manifest_path,
    parse_source_path,
    source_dir,
    too_large,
)

if TYPE_CHECKING:
    import pygit2

    from ..git.repo import GitRepo

WHAT = "source files"
# Source files (bodies and manifests), as a .gitattributes pattern: they go to the record merge
# driver too, which tells them apart by path. A store made before sources existed gets this
# line from the next lantern init.
MERGE_PATTERN = f"{SOURCES_DIR}/**"


@dataclass(frozen=True)
class SourceFile:
    """One source as the working tree has it: its manifest, its body's path and bytes."""

    manifest: SourceManifest
    body_path: str
    body: bytes
    manifest_bytes: bytes

    @property
    def ext(self) -> str:
        return self.body_path.rsplit(".", 1)[-1]

    @property
    def stale(self) -> bool:
        """The body was changed by hand and the manifest does not say so yet."""
        return self.manifest.sha256 != hashlib.sha256(self.body).hexdigest()


def body_paths(root: str, source_id: str) -> list[str]:
    """Every body file of ``source_id`` in the working tree (normally one), by name."""
    folder = source_dir(source_id)
    try:
        names = os.listdir(os.path.join(root, folder))
    except OSError:
        return []
    prefix = source_id + "."
    return sorted(
        f"{folder}/{name}"
        for name in names
        if name.startswith(prefix)
        and not name.endswith(MANIFEST_SUFFIX)
        and parse_source_path(f"{folder}/{name}") is not None
    )


def source_ids(root: str) -> list[str]:
    """Ids of every source the working tree has a manifest or a body for, sorted."""
    top = os.path.join(root, SOURCES_DIR)
    if os.path.islink(top):
        return []
    found: set[str] = set()
    try:
        shards = list(os.scandir(top))
    except (FileNotFoundError, NotADirectoryError):
        return []
    for shard in shards:
        if not shard.is_dir(follow_symlinks=False):
            continue
        for name in os.listdir(shard.path):
            if name.startswith(".") and name.endswith(TMP_SUFFIX):
                continue
            parsed = parse_source_path(f"{SOURCES_DIR}/{shard.name}/{name}")
            if parsed is not None:
                found.add(parsed[0])
    return sorted(found)


def stray_paths(root: str) -> list[str]:
    """Entries under ``sources/`` that are not where a source file can live."""
    top = os.path.join(root, SOURCES_DIR)
    if os.path.islink(top):
        return [SOURCES_DIR]
    stray = []
    try:
        shards = sorted(os.scandir(top), key=lambda e: e.name)
    except (FileNotFoundError, NotADirectoryError):
        return []
    for shard in shards:
        path = f"{SOURCES_DIR}/{shard.name}"
        if not shard.is_dir(follow_symlinks=False):
            stray.append(path)
            continue
        for name in sorted(os.listdir(shard.path)):
            if name.startswith(".") and name.endswith(TMP_SUFFIX):
                continue
            if parse_source_path(f"{path}/{name}") is None:
                stray.append(f"{path}/{name}")
    return stray


def read_manifest(
    root: str, source_id: str
) -> tuple[SourceManifest | None, bytes | None, Problem | None]:
    """The manifest of ``source_id`` in the working tree and its bytes; (None, None, None)
    when there is none."""
    path = manifest_path(source_id)
    data, problem = read_bytes(root, path, MAX_MANIFEST_BYTES, WHAT)
    if data is None:
        return None, None, problem
    manifest, problem = parse_manifest(path, data, source_id)
    return manifest, data, problem


def parse_manifest(
    path: str, data: bytes, source_id: str
) -> tuple[SourceManifest | None, Problem | None]:
    try:
        manifest = SourceManifest.from_yaml(data, path)
    except ValidationError as err:
        return None, Problem(path, err.line, err.reason)
    if manifest.id != source_id:
        return None, Problem(path, None, f"id: {manifest.id} does not match the file name")
    return manifest, None


def read_source_file(root: str, source_id: str) -> tuple[SourceFile | None, Problem | None]:
    """The source as the working tree has it, or the first problem with its files; (None,
    None) when it has no files at all."""
    check_source_id(source_id)
    manifest, manifest_bytes, problem = read_manifest(root, source_id)
    bodies = body_paths(root, source_id)
    if problem is not None:
        return None, problem
    if manifest is None or manifest_bytes is None:
        if bodies:
            return None, Problem(bodies[0], None, f"has no manifest ({manifest_path(source_id)})")
        return None, None
    if not bodies:
        return None, Problem(manifest_path(source_id), None, "has no body file beside it")
    if len(bodies) > 1:
        return None, Problem(
            bodies[1], None, f"is a second body of source {source_id} (the first: {bodies[0]})"
        )
    data, problem = read_bytes(root, bodies[0], MAX_SOURCE_BYTES, WHAT)
    if data is None:
        return None, problem or Problem(bodies[0], None, "disappeared while being read")
    if len(data) > MAX_SOURCE_BYTES:  # read up to the limit and one byte: its size is unknown
        refusal = too_large(bodies[0]).reason.removeprefix(bodies[0] + ": ")
        return None, Problem(bodies[0], None, refusal)
    try:
        check_body(data, bodies[0])
    except ValidationError as err:
        return None, Problem(bodies[0], None, err.reason.removeprefix(bodies[0] + ": "))
    return SourceFile(manifest, bodies[0], data, manifest_bytes), None


def load_manifest(root: str, source_id: str) -> SourceManifest:
    """The manifest of ``source_id`` alone (the body is not read): for listing and ``get``,
    which a 10 MB transcript must not slow down. :class:`NotFound`, or a StoreError naming the
    file."""
    manifest, _, problem = read_manifest(root, check_source_id(source_id))
    if manifest is None:
        if problem is None:
            raise NotFound(f"no source with id {source_id}")
        raise StoreError(f"{problem}; fix the file (see lantern check)", code="invalid_source")
    return manifest


def load_source(root: str, source_id: str) -> SourceFile:
    """The source of ``source_id``, or :class:`NotFound`, or a StoreError naming the file."""
    found, problem = read_source_file(root, source_id)
    if found is None:
        if problem is None:
            raise NotFound(f"no source with id {source_id}")
        raise StoreError(f"{problem}; fix the file (see lantern check)", code="invalid_source")
    return found


def source_in_tree(
    git: GitRepo, tree: pygit2.Tree, source_id: str
) -> tuple[SourceFile | None, Problem | None]:
    """The source as a commit's ``tree`` has it (a review branch's tip), as
    :func:`read_source_file` reads the working tree's; (None, None) when it has no files."""
    import pygit2

    path = manifest_path(source_id)
    data = git.blob_at(tree, path)
    folder = source_dir(source_id)
    try:
        shard = git.repo[tree[folder].id]
    except KeyError:
        shard = None
    names = [entry.name or "" for entry in shard] if isinstance(shard, pygit2.Tree) else []
    bodies = sorted(
        f"{folder}/{name}"
        for name in names
        if parse_source_path(f"{folder}/{name}") == (source_id, "body")
    )
    if data is None:
        return None, (Problem(bodies[0], None, f"has no manifest ({path})") if bodies else None)
    manifest, problem = parse_manifest(path, data, source_id)
    if manifest is None:
        return None, problem
    if not bodies:
        return None, Problem(path, None, "has no body file beside it")
    body = git.blob_at(tree, bodies[0])
    if body is None:
        return None, Problem(bodies[0], None, "is not a file")
    return SourceFile(manifest, bodies[0], body, data), None


def source_problems(root: str, source_id: str) -> list[Problem]:
    """What ``lantern check`` reports for one source: unreadable files, a bad manifest, a
    body changed by hand into git's conflict markers, and a manifest that does not describe
    its body (lines, bytes, sha256)."""
    found, problem = read_source_file(root, source_id)
    if problem is not None:
        return [problem]
    if found is None:
        return []
    manifest, body = found.manifest, found.body
    if found.stale or manifest.bytes != len(body) or manifest.lines != count_lines(body):
        # Markers in a body its manifest does not describe: a line-by-line merge, not a
        # transcript that quotes them (that one was ingested, and its manifest describes it).
        conflict = conflict_line(body.decode("utf-8", "replace"))
        if conflict is not None:
            return [
                Problem(
                    found.body_path,
                    conflict,
                    "holds git merge conflict markers: git merged it line by line, without "
                    "lantern's source merge driver. Undo that merge with git merge --abort and "
                    "merge with lantern sync, or keep one version (git checkout --ours or "
                    f"--theirs -- {found.body_path}) and run lantern commit",
                )
            ]
        return [
            Problem(
                manifest_path(source_id),
                None,
                f"does not describe {found.body_path} (its sha256, lines or bytes differ: the "
                "body was changed by hand); lantern commit records the new version",
            )
        ]
    return []


def iter_sources(root: str) -> Iterator[tuple[str, SourceFile | None, Problem | None]]:
    for source_id in source_ids(root):
        found, problem = read_source_file(root, source_id)
        yield source_id, found, problem


def describe(body: bytes) -> dict[str, int | str]:
    """The manifest fields a body determines."""
    return {
        "lines": count_lines(body),
        "bytes": len(body),
        "sha256": hashlib.sha256(body).hexdigest(),
    }


class SourceFiles:
    """Source files as the write transaction reads them (see
    :class:`lantern_git.model.record_file.RecordFiles`): the store hands it :data:`SOURCE_FILES`."""

    def owner(self, path: str) -> str | None:
        """The id of the source whose file (body or manifest) ``path`` is; None for any other."""
        parsed = parse_source_path(path)
        return parsed[0] if parsed is not None else None

    def in_tree(
        self, git: GitRepo, tree: pygit2.Tree, source_id: str
    ) -> tuple[SourceFile | None, Problem | None]:
        return source_in_tree(git, tree, source_id)


SOURCE_FILES = SourceFiles()
