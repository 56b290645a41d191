"""The format-1 stores the old lantern made (tests/fixtures/make_format1_store.py), unpacked.

The archive holds a hub, a host that synced to it (``alpha``, with a pending review branch) and
a host that cloned it and wrote on its own (``beta``). Unpacked into a test's folder, their
remotes point at the unpacked hub and their merge driver is this Python's (git config names
an absolute path, which was the maker's).
"""

from __future__ import annotations

import sys
import tarfile
from dataclasses import dataclass
from pathlib import Path

from .stores import git

ARCHIVE = Path(__file__).parent.parent / "fixtures" / "format1_stores.tar.gz"


@dataclass(frozen=True)
class Format1:
    hub: Path
    alpha: Path
    beta: Path


def unpack_format1(into: Path) -> Format1:
    with tarfile.open(ARCHIVE) as tar:
        tar.extractall(into, filter="data")
    root = into / "format1"
    stores = Format1(root / "hub.git", root / "alpha", root / "beta")
    driver = f"{sys.executable} -m lantern_git merge-file %O %A %B %P"
    for host in (stores.alpha, stores.beta):
        git(host, "remote", "set-url", "origin", str(stores.hub))
        git(host, "config", "merge.lantern.driver", driver)
    return stores
