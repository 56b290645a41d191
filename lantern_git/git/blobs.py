"""Finding a blob in the repository by its size and sha256, for the git merge driver.

Git runs a merge driver on one file at a time and, with the ``ort`` strategy, in reverse path
order: ``<id>.yaml`` is merged before ``<id>.txt``, and nothing reaches the working tree or the
index until every file is merged. So the manifest's driver cannot read the merged body; it
looks up each side's body instead, by the sha256 its manifest records, and merges the bodies
itself by the same rule the body's driver applies. The lookup is exact (a body is used only if
its sha256 matches) and needs no knowledge of which command is merging:

1. the files the caller names (the source's body files, in one folder) in the commits git
   names while merging: ``HEAD`` (ours, in a merge, a rebase and a cherry-pick), the
   ``GITHEAD_<commit>`` variables ``git merge`` sets for the commits it merges, and
   ``MERGE_HEAD``, ``CHERRY_PICK_HEAD``, ``REBASE_HEAD``, ``REVERT_HEAD`` when present;
2. otherwise every blob of that exact size in the object database (a body being merged is
   always there).

Which folder and which files a source's body is are for the caller to say (the merge driver's
:func:`lantern_git.cli.sync.find_source_body`). Only the git CLI and the standard library
are used, so the driver starts fast.
"""

from __future__ import annotations

import hashlib
import os
import re
import subprocess
from collections.abc import Callable, Iterable

_NAMED_HEADS = ("HEAD", "MERGE_HEAD", "CHERRY_PICK_HEAD", "REBASE_HEAD", "REVERT_HEAD")
_GITHEAD_RE = re.compile(r"GITHEAD_([0-9a-f]{40,64})")


def _git(root: str, *args: str, data: bytes | None = None) -> bytes | None:
    try:
        result = subprocess.run(
            ["git", *args], cwd=root, input=data, capture_output=True, check=False
        )
    except OSError:
        return None
    return result.stdout if result.returncode == 0 else None


def _commits(environ: dict[str, str]) -> list[str]:
    merged = [m.group(1) for key in sorted(environ) if (m := _GITHEAD_RE.fullmatch(key))]
    return ["HEAD", *merged, *_NAMED_HEADS[1:]]


def _tree_candidates(
    root: str, folder: str, wanted: Callable[[str], bool], commits: Iterable[str]
) -> list[str]:
    """Blob ids of the files in ``folder`` whose names are ``wanted``, in each of ``commits``
    that exists."""
    found: list[str] = []
    for commit in commits:
        listing = _git(root, "ls-tree", "-z", f"{commit}^{{tree}}", "--", folder + "/")
        for item in (listing or b"").split(b"\0"):
            meta, _, name = item.partition(b"\t")
            base = os.path.basename(name.decode("utf-8", "replace"))
            parts = meta.split()
            if len(parts) == 3 and parts[1] == b"blob" and wanted(base):
                found.append(parts[2].decode("ascii"))
    return list(dict.fromkeys(found))


def _sizes(root: str, blob_ids: list[str]) -> dict[str, int]:
    if not blob_ids:
        return {}
    out = _git(root, "cat-file", "--batch-check", data="\n".join(blob_ids).encode() + b"\n")
    sizes: dict[str, int] = {}
    for line in (out or b"").decode("ascii", "replace").splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[1] == "blob":
            sizes[parts[0]] = int(parts[2])
    return sizes


def _matching(root: str, blob_ids: list[str], size: int, sha256: str) -> bytes | None:
    for blob_id in blob_ids:
        data = _git(root, "cat-file", "blob", blob_id)
        if data is not None and len(data) == size and hashlib.sha256(data).hexdigest() == sha256:
            return data
    return None


def find_blob(
    root: str,
    folder: str,
    wanted: Callable[[str], bool],
    size: int,
    sha256: str,
    environ: dict[str, str] | None = None,
) -> bytes | None:
    """The blob whose length is ``size`` and sha256 is ``sha256``, from the repository at
    ``root`` (git runs a merge driver at the top of the working tree): looked for first among
    the files of ``folder`` whose names are ``wanted``, then among all blobs; None when no such
    blob is there."""
    environ = dict(os.environ) if environ is None else environ
    candidates = _tree_candidates(root, folder, wanted, _commits(environ))
    sizes = _sizes(root, candidates)
    found = _matching(root, [b for b in candidates if sizes.get(b) == size], size, sha256)
    if found is not None:
        return found
    listing = _git(
        root,
        "cat-file",
        "--batch-all-objects",
        "--batch-check=%(objectname) %(objecttype) %(objectsize)",
    )
    same_size = []
    for line in (listing or b"").decode("ascii", "replace").splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[1] == "blob" and parts[2] == str(size):
            same_size.append(parts[0])
    return _matching(root, same_size, size, sha256)
