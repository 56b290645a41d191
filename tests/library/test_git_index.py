"""Git's view of the store: ``git status`` shows every hand edit, even one git's stat cache
could take for unchanged.

Git decides that a file is unchanged when its size, inode and times (in whole seconds, as
Debian's and most builds of git compare them) match what ``.git/index`` recorded. A hand edit
that keeps the size, made in the same second lantern wrote the file, matches all of them; git
then reads the file only while the index itself was written in that second, and a later write
of ``.git/index`` in another second would hide the edit for good."""

from __future__ import annotations

import os
import time

from support.stores import git, init_repo

from lantern_git.git.repo import GitRepo
from lantern_git.model.record_file import record_path
from lantern_git.store import Store


def _to_the_next_second() -> int:
    """Sleeps until a new second starts (a second at most); that second."""
    now = time.time()
    time.sleep(1 - (now - int(now)) + 0.01)
    return int(now) + 1


def test_git_sees_a_same_size_hand_edit_made_in_the_second_lantern_wrote_the_file(store_path):
    store = Store.open(str(store_path), actor="api")
    try:
        for _ in range(5):  # bounded: a machine too slow to edit within the second retries
            second = _to_the_next_second()
            other = store.add("Edited by hand meanwhile.", kind="fact")
            path = store_path / record_path(other.id)
            path.write_text(path.read_text().replace("urgency: 0", "urgency: 8"))
            if int(path.stat().st_mtime) == second:
                break
        else:
            raise AssertionError("no hand edit landed in the second of lantern's write")
        _to_the_next_second()
        # Another write, in a later second, rewrites .git/index.
        store.add("A later write.", kind="fact")
    finally:
        store.close()
    assert git(store_path, "status", "--porcelain") == f" M {record_path(other.id)}\n"
    assert "urgency: 8" in path.read_text()


def _recorded_sizes(path) -> dict[str, int]:
    """Each path's size as ``.git/index`` records it (0: recorded without its stat)."""
    sizes: dict[str, int] = {}
    name = ""
    for line in git(path, "ls-files", "--debug").splitlines():
        if not line.startswith(" "):
            name = line
        elif line.strip().startswith("size:"):
            sizes[name] = int(line.split()[1])
    return sizes


def test_only_files_changed_this_second_or_the_last_are_recorded_without_their_stat(tmp_path):
    """Git reads the content of a file whose entry has no stat at every ``git status``: a
    file changed seconds ago keeps its stat, and the margin of one second covers a file
    system clock a little behind this process's."""
    path = tmp_path / "repo"
    init_repo(path)
    repo = GitRepo(str(path))
    names = ("an-hour-ago.md", "two-seconds-ago.md", "a-second-ago.md", "now.md")
    for name in names:
        (path / name).write_text(f"{name}\n")
    for _ in range(5):  # bounded: each try must stay within one second
        second = int(time.time())
        os.utime(path / names[0], (second - 3600, second - 3600))
        os.utime(path / names[1], (second - 1.5, second - 1.5))
        os.utime(path / names[2], (second - 0.5, second - 0.5))
        repo.sync_index(names)
        if int(time.time()) == second:
            break
    else:
        raise AssertionError("no try stayed within one second")
    assert _recorded_sizes(path) == {
        names[0]: len(names[0]) + 1,
        names[1]: len(names[1]) + 1,
        names[2]: 0,
        names[3]: 0,
    }
