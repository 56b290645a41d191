"""The life cycle the record index and the chunk index share, written once.

Both indexes (``search.py`` over the record files, ``chunks.py`` over the sources' line ranges)
are derived state: a Whoosh index and a state file in a folder of ``.lantern/``, never
committed, rebuilt from the files (the truth) whenever missing, of an older schema or damaged.
What they do alike lives here, in :class:`DerivedIndex`:

- opening the Whoosh index, and noticing that another process rebuilt it into a new folder;
  one searcher kept between calls while no writer has committed since;
- the state file beside the index (what the files looked like when last indexed), written
  whole or not at all and checked for its shape when read: a damaged one causes a rebuild,
  not a crash;
- one rule for a read from a damaged index (:meth:`DerivedIndex._answer`) and one for an
  update that fails (:meth:`DerivedIndex._start_over`): rebuild from the files, once;
- a rebuild into a new folder swapped in whole, so that a reader finds the old index or the
  new one, never half of either, and a build cut off leaves the old one in place;
- one Whoosh commit per update, small segments merged only once they are many, and a failed
  writer cancelled without hiding why it failed;
- when a file's signature (its lstat) proves it unchanged at the next check.

A subclass says what is indexed and how it keeps in step: its schema, how it scans the files,
what changed since the last check, the documents, and its state file's shape.
"""

from __future__ import annotations

import abc
import contextlib
import marshal
import os
import shutil
import stat
import sys
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any, ClassVar, Generic, TypeVar

from whoosh import index as whoosh_index

from ..errors import LanternError, StoreError
from . import clock, whoosh_compat

# A file's timestamps must lie this far before a check for its signature to prove it unchanged
# at the next one: a later write then sets a ctime no program can set back, so the signature
# changes. Whole-second (and FAT's two-second) filesystems need the wide margin; one whose
# times carry sub-millisecond digits takes them from the kernel's coarse clock (one tick, at
# most 10 ms behind), and needs only the narrow one.
COARSE_MARGIN_NS = 3_000_000_000
FINE_MARGIN_NS = 100_000_000
# Each small write adds a segment (a transcript appended message by message, a record saved
# at a time); merging them on every write costs more than the write, so small segments are
# merged only once there are this many.
MERGE_AT_SEGMENTS = 8
# How long an update waits for Whoosh's own write lock, held by another process's commit.
WRITER_TIMEOUT_S = 30.0
# Set to 1, each refresh says on stderr what it did.
DEBUG_ENV = "LANTERN_DEBUG_INDEX"

Report = TypeVar("Report")
T = TypeVar("T")


class NeedsRebuild(Exception):
    """The index cannot answer as it is (missing, of an older schema, unreadable): the files
    are the truth, so it is built again from them."""


def fine(ctime_ns: int, mtime_ns: int) -> bool:
    """Whether a file's timestamps carry sub-millisecond digits (a filesystem with fine
    timestamps, set from the kernel's coarse clock)."""
    if os.name != "posix":
        return False
    return ctime_ns % 1_000_000 != 0 and mtime_ns % 1_000_000 != 0


def settled(ctime_ns: int, mtime_ns: int, mode: int, before: int) -> bool:
    """Whether any write after ``before`` (a moment taken before the ``lstat`` that gave these
    times) must change the file's signature: its timestamps lie further back than the
    filesystem's granularity. A write sets ctime to the kernel's clock at that moment, which no
    program can set back; on a filesystem with fine timestamps that is past ``before -
    FINE_MARGIN_NS``, elsewhere (whole seconds, FAT's two) past ``before - COARSE_MARGIN_NS``.
    Then a file showing the same signature later was not written since, and its content is
    what was read after ``before``."""
    if os.name != "posix" or not stat.S_ISREG(mode):
        return False  # where ctime is a creation time, an edit could keep every field but one
    margin = FINE_MARGIN_NS if fine(ctime_ns, mtime_ns) else COARSE_MARGIN_NS
    return max(ctime_ns, mtime_ns) < before - margin


def merge_when_many(writer: Any, segments: list[Any]) -> list[Any]:
    """Whoosh's merge policy for an update: small segments merged once there are many."""
    from whoosh.writing import MERGE_SMALL

    if len(segments) < MERGE_AT_SEGMENTS:
        return segments
    merged: list[Any] = MERGE_SMALL(writer, segments)
    return merged


def cancel(writer: Any) -> None:
    """Cancel a Whoosh writer whose work or commit failed, without hiding why it failed: after
    ENOSPC its files may be closed already, and cancel raises ValueError over the OSError."""
    try:
        writer.cancel()
    except Exception:
        pass


@contextlib.contextmanager
def writing(open_writer: Callable[[], Any], **commit: Any) -> Iterator[Callable[[], Any]]:
    """A function that gives a Whoosh writer, opened by ``open_writer`` at its first call (a
    check that finds nothing to write opens none), then the same one; committed with the
    ``commit`` options when the block ends, cancelled when the block or the commit fails."""
    taken: list[Any] = []

    def writer() -> Any:
        if not taken:
            taken.append(open_writer())
        return taken[0]

    try:
        yield writer
        if taken:
            taken[0].commit(**commit)
    except BaseException:
        if taken:
            cancel(taken[0])
        raise


def folder_identity(folder: str) -> tuple[int, int] | None:
    """(device, inode) of ``folder``: a rebuild swaps in a new folder under the same name."""
    try:
        st = os.stat(folder)
    except OSError:
        return None
    return st.st_dev, st.st_ino


def write_atomically(path: str, value: Any) -> None:
    """``value`` marshalled into ``path`` whole or not at all: written beside it under a name
    of this process's, then renamed over it (what was left half written is removed)."""
    tmp = f"{path}.{os.getpid()}.tmp"
    try:
        with open(tmp, "wb") as handle:
            marshal.dump(value, handle)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def debug(line: str) -> None:
    """Say ``line`` on stderr when ``LANTERN_DEBUG_INDEX=1``."""
    if os.environ.get(DEBUG_ENV) == "1":
        print(line, file=sys.stderr)


@dataclass(frozen=True)
class Layout:
    """What a derived index is on disk, and what it is called."""

    folder: str  # its folder in the state folder (``.lantern/``)
    index_name: str  # Whoosh's name for it, which carries the schema version
    state: str  # its state file's name in the folder
    version: int  # the schema version, which the state file carries too
    what: str  # its name in errors ("the search index")
    schema: Callable[[], Any]  # the Whoosh schema of its documents


class DerivedIndex(abc.ABC, Generic[Report]):
    """A Whoosh index derived from files of the store, kept in ``<state_dir>/<folder>/`` with a
    state file beside it (:class:`Layout`); ``Report`` is what a refresh or a rebuild says it
    did."""

    LAYOUT: ClassVar[Layout]

    def __init__(
        self, root: str, state_dir: str, locked: Callable[[], AbstractContextManager[object]]
    ):
        self.root = root
        self.dir = os.path.join(state_dir, self.LAYOUT.folder)
        # The store's writer lock (re-entrant in a thread): every write to the index holds it.
        self._locked = locked
        self._ix: Any = None
        # The index folder's identity when ``_ix`` was opened (a rebuild swaps in a new one)
        self._folder: tuple[int, int] | None = None
        # The searcher kept between calls while the index is unchanged
        self._kept: Any = None

    # -- what a subclass says

    @abc.abstractmethod
    def _build(self, started: int) -> Report:
        """Scan every file and fill a new index (:meth:`_new_folder`), its state file saved in
        it; ``started`` is a moment taken (by the file system's clock) before the scan."""

    @abc.abstractmethod
    def _well_formed(self, state: dict[str, Any]) -> dict[str, Any]:
        """The state as read (a dict of the current schema version), checked: raises
        ValueError or TypeError where it was damaged into another valid shape."""

    # -- the Whoosh index

    def _open(self) -> Any:
        """The index, opened on first use and again after another process rebuilt it into a
        new folder; NeedsRebuild when it is missing or cannot be opened."""
        if self._ix is not None and self._folder != folder_identity(self.dir):
            self.close()
        if self._ix is None:
            try:
                # exists_in opens the table of contents, and raises when it is damaged
                exists = whoosh_index.exists_in(self.dir, indexname=self.LAYOUT.index_name)
            except Exception as err:
                raise NeedsRebuild(f"unreadable ({type(err).__name__})") from None
            if not exists:
                raise NeedsRebuild("missing")
            try:
                self._ix = whoosh_compat.open_index(self.dir, self.LAYOUT.index_name)
            except Exception as err:  # whoosh raises many kinds on a damaged index
                raise NeedsRebuild(f"unreadable ({type(err).__name__})") from None
            self._folder = folder_identity(self.dir)
        return self._ix

    def _usable(self) -> bool:
        try:
            self._open()
            return True
        except NeedsRebuild:
            return False

    def _searcher(self) -> Any:
        """A searcher on the index as it is now: the one kept from the last call while no
        writer has committed since (opening one reads every segment's table; a long-running
        process answers from it), else a new one."""
        ix = self._open()
        kept = self._kept
        if kept is not None:
            try:
                if kept.up_to_date():
                    return kept
            except Exception:  # a segment file gone: open afresh
                pass
            # Not Searcher.refresh(): it reuses a segment's reader by the segment's id, which a
            # delete in that segment keeps, so the deleted document would still be found.
            self._kept = None
            kept.close()
        self._kept = ix.searcher()
        return self._kept

    def close(self) -> None:
        kept, self._kept = self._kept, None
        if kept is not None:
            kept.close()
        if self._ix is not None:
            self._ix.close()
            self._ix = None

    def _forget(self) -> None:
        """Drop what was read from the index's folder: it is damaged, or about to be rebuilt."""
        self.close()

    def generation(self) -> str:
        """A token that changes whenever the index's content may have: its folder (a rebuild
        swaps in a new one) and Whoosh's commit generation."""

        def read() -> str:
            generation = self._open().latest_generation()
            device, inode = self._folder or (0, 0)
            return f"{device}:{inode}:{generation}"

        return self._answer(read)

    # -- the state file

    def _state_path(self, folder: str | None = None) -> str:
        return os.path.join(folder or self.dir, self.LAYOUT.state)

    def _read_state(self) -> dict[str, Any] | None:
        """The state file as saved and checked (:meth:`_well_formed`); None where it is
        missing, of another schema version or damaged: the index is then rebuilt."""
        try:
            with open(self._state_path(), "rb") as handle:
                state = marshal.load(handle)
            if not isinstance(state, dict) or state.get("v") != self.LAYOUT.version:
                raise ValueError("old or damaged state")
            return self._well_formed(state)
        except (OSError, ValueError, EOFError, TypeError):
            return None

    def _write_state(self, state: dict[str, Any], folder: str | None = None) -> None:
        """Save ``state`` (with the schema version) in the index's folder, or in ``folder``
        (a rebuild's new one)."""
        write_atomically(self._state_path(folder), {"v": self.LAYOUT.version, **state})

    # -- answering, and the one rule for a damaged index

    def _answer(self, read: Callable[[], T]) -> T:
        """``read()``, the index rebuilt from the files once if it cannot answer.

        The one rule for every read of both indexes. Whoosh fails on a damaged segment in many
        ways, so any failure of the first read counts as damage (lantern's own errors aside:
        they judge the question, not the index), and the index is rebuilt. A second failure,
        on an index just built from the files, is a store error, whatever Whoosh raised: a
        second rebuild would build the same index from the same files and only double the
        wait, and Whoosh's own error, let through, would reach the surfaces as an internal
        error rather than one they map. The cause stays chained to the store error.
        """
        try:
            return self._read_once(read)
        except NeedsRebuild:
            self.rebuild()
        try:
            return self._read_once(read)
        except NeedsRebuild as err:
            raise StoreError(
                f"the {self.LAYOUT.what} cannot be read after a rebuild: {err}"
            ) from err

    def _read_once(self, read: Callable[[], T]) -> T:
        """``read()`` on the index as it is; NeedsRebuild where it cannot answer."""
        try:
            return read()
        except (NeedsRebuild, LanternError):
            raise
        except Exception as err:
            self._forget()
            raise NeedsRebuild(f"unreadable ({type(err).__name__})") from err

    # -- writing

    def _changing(self) -> AbstractContextManager[Callable[[], Any]]:
        """For one update: a function giving the writer (:func:`writing`), taken when there is
        something to write; one commit, small segments merged only when many."""
        return writing(
            lambda: self._open().writer(timeout=WRITER_TIMEOUT_S), mergetype=merge_when_many
        )

    def _start_over(self) -> Report:
        """After an update failed: the index is damaged (a read of it failed) or its files are
        (a commit failed); the files are the truth, so it is rebuilt from them (the rebuild drops
        what was read from the old folder first)."""
        return self.rebuild()

    def rebuild(self) -> Report:
        """Build the index from scratch in a new folder, then swap it in."""
        with self._locked():
            self._forget()
            return self._build(clock.now_ns(self.dir))

    @contextlib.contextmanager
    def _new_folder(self) -> Iterator[tuple[str, Any]]:
        """(the new folder, its empty index) for a rebuild to fill and save its state in;
        swapped in for the index's folder when the block ends, removed (the old index left as
        it was) when the block fails."""
        fresh, ix = whoosh_compat.create_beside(
            self.dir, self.LAYOUT.schema(), self.LAYOUT.index_name, self.LAYOUT.what
        )
        try:
            yield fresh, ix
        except BaseException:
            ix.close()
            shutil.rmtree(fresh, ignore_errors=True)
            raise
        ix.close()
        whoosh_compat.swap_in(fresh, self.dir)
