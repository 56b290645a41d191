"""The Store: the library API that the CLI and the MCP server are thin layers over.

A store is a git repository holding ``lantern.yaml``, ``memory/<aa>/<id>.md`` record files, and a
local ``.lantern/`` folder of derived state (search index, lock, write journal). The files are
the truth; every write is one git commit carrying provenance trailers.
"""

from __future__ import annotations

import builtins
import contextlib
import dataclasses
import os
import sys
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ParamSpec, TypeVar

import yaml

from .config import StoreSettings, environment
from .errors import (
    AmbiguousId,
    InvalidInput,
    NoStore,
    NotFound,
    ReadOnlyStore,
    StoreError,
    UnsupportedFormat,
    ValidationError,
)
from .fields import (
    DEFAULT_CONFIDENCE,
    DEFAULT_PRIORITY,
    DEFAULT_SCOPE,
    DEFAULT_URGENCY,
    DUPE_THRESHOLD,
    SEARCH_MODES,
    UNSET,
    Unset,
)
from .lock import WriterLock
from .record import (
    ID_RE,
    Record,
    check_id_prefix,
    compute_id,
    validate_confidence,
    validate_priority,
    validate_source_refs,
    validate_timestamp,
)
from .recordfile import (
    MERGE_PATTERN,
    RECORD_FILES,
    count_records,
    load,
    record_candidates,
    record_path,
)

if TYPE_CHECKING:
    from .checker import CheckReport, HandCommit
    from .editing import EditSession
    from .evidence import Sources
    from .git.identity import Identity
    from .git.repo import GitRepo
    from .history import HistoryEntry, LogEntry, RecordHistory
    from .index.chunks import ChunkIndex
    from .index.search import Hit, Progress, RefreshReport, SearchIndex
    from .index.vectors import Vectors
    from .query import DupePair, RecordQuery
    from .revert import RevertResult
    from .review import ReviewDecision, ReviewList
    from .sync import SyncReport
    from .timetravel import RecordDiff
    from .transaction import WriteTransaction
    from .transfer import ImportResult, RecordExport, SourceImport
    from .written import Written

P = ParamSpec("P")
T = TypeVar("T")

FORMAT_VERSION = 1
MARKER = "lantern.yaml"
STATE_DIR = ".lantern"
GITIGNORE_LINE = "/.lantern/"


def default_store_path() -> str:
    import platformdirs

    return os.path.join(platformdirs.user_data_dir("lantern", appauthor=False), "store")


def find_enclosing_store(start: str) -> str | None:
    """The nearest folder at or above ``start`` that holds a store, like git finds its repo."""
    current = os.path.abspath(start)
    while True:
        if os.path.isfile(os.path.join(current, MARKER)) and os.path.exists(
            os.path.join(current, ".git")
        ):
            return current
        parent = os.path.dirname(current)
        if parent == current:
            return None
        current = parent


def locate_store(
    explicit: str | None = None, cwd: str | None = None, *, creating: bool = False
) -> tuple[str, bool]:
    """(path, is_default): ``--store`` > ``LANTERN_STORE`` > enclosing store > default store.
    ``creating`` (``lantern init``): the current folder instead of the last two, since a new
    store is made where one stands."""
    if explicit:
        return os.path.abspath(os.path.expanduser(explicit)), False
    env = environment().store
    if env:
        return os.path.abspath(os.path.expanduser(env)), False
    if creating:
        return os.path.abspath(cwd or os.getcwd()), False
    enclosing = find_enclosing_store(cwd or os.getcwd())
    if enclosing:
        return enclosing, False
    return default_store_path(), True


@dataclass
class InitResult:
    path: str
    created_repo: bool
    committed: bool
    commit: str | None
    registered_merge_driver: bool = False


@dataclass
class CloneResult:
    """``lantern clone``: where the clone is, and what was set up in its ``.git/config``."""

    url: str
    path: str
    branch: str | None
    head: str | None
    records: int
    registered_merge_driver: bool
    set_pull_rebase: bool

    def to_dict(self) -> dict[str, Any]:
        return {
            "url": self.url,
            "path": self.path,
            "branch": self.branch,
            "head": self.head,
            "records": self.records,
            "registered_merge_driver": self.registered_merge_driver,
            "set_pull_rebase": self.set_pull_rebase,
        }


@dataclass
class Deletion:
    """``memory delete``: the record as it was, and the commit that removed its file."""

    record: Record
    commit: str | None

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.record.id, "commit": self.commit, "record": self.record.to_dict()}


class Store:
    """A lantern store. Open one with :meth:`open`, :meth:`discover` or :meth:`init`."""

    def __init__(
        self,
        root: str,
        *,
        actor: str = "api",
        author: str | None = None,
        create_on_write: bool = False,
        warn: Callable[[str], None] | None = None,
        watch: bool = False,
        review: bool | None = None,
        review_name: str | None = None,
    ):
        self.root = os.path.abspath(root)
        # Learn of changes from file-system notifications (a long-running process): see
        # lantern_git.index.watch. Started with the index, stopped by close().
        self.watch = watch
        # Given (total, what), a progress display for a long index job (see SearchIndex.progress)
        self.progress: Callable[[int, str], Progress] | None = None
        self.state_dir = os.path.join(self.root, STATE_DIR)
        self.actor = actor
        self.author = author
        self.create_on_write = create_on_write
        self.warn = warn or (lambda message: print(message, file=sys.stderr))
        # The transactions each running :meth:`written` call has seen finish, innermost last.
        self._watching: builtins.list[builtins.list[WriteTransaction]] = []
        # The write transaction in progress, if any: what a writer reads (a record or a source
        # a review branch changed) is read through it (see Sources.pin).
        self.writing: WriteTransaction | None = None
        self._review = review
        self._review_name = review_name
        # lantern.yaml's keys, once the store is opened (None: no store yet, every default).
        self.settings: StoreSettings | None = None
        self._vectors: dict[str, Vectors] = {}
        # Set when opening the store registered the record merge driver (a fresh clone).
        self.registered_merge_driver = False
        # Set by :meth:`clone`: what the clone set up.
        self.cloned: CloneResult | None = None
        self._git: GitRepo | None = None
        self._index: SearchIndex | None = None
        self._chunks: ChunkIndex | None = None
        self._sources: Sources | None = None
        if os.path.exists(self.root) and not os.path.isdir(self.root):
            raise NoStore(
                f"{self.root} is a file, not a folder; a store is a folder (give the folder of "
                "a store, or a new folder for lantern init)"
            )
        # Where derived state goes: .lantern/, or for a store this process cannot write, a
        # temporary folder removed when the store is closed or the process ends.
        self.read_only = self.exists and not (
            _writable(self.root, self.state_dir) and _writable_git(self.root)
        )
        self.derived_dir = self.state_dir
        if self.read_only and not _writable(self.root, self.state_dir):
            import shutil
            import tempfile
            import weakref

            self.derived_dir = tempfile.mkdtemp(prefix="lantern-read-only-")
            self._cleanup = weakref.finalize(self, shutil.rmtree, self.derived_dir, True)
        self._lock = WriterLock(os.path.join(self.derived_dir, "lock"))
        if self.exists:
            self._check_format()
            if not self.read_only:
                self._register_merge_driver()
        elif not create_on_write:
            raise NoStore(
                f"{self.root} is not a lantern store (no {MARKER}); "
                f"create one with: lantern init {self.root}"
            )

    # ------------------------------------------------------------------ opening

    @classmethod
    def open(cls, root: str, **kwargs: Any) -> Store:
        return cls(root, **kwargs)

    @classmethod
    def discover(cls, explicit: str | None = None, **kwargs: Any) -> Store:
        path, is_default = locate_store(explicit)
        return cls(path, create_on_write=is_default, **kwargs)

    @classmethod
    def init(cls, root: str, **kwargs: Any) -> Store:
        store = cls(root, create_on_write=True, **kwargs)
        store.initialize()
        return store

    @classmethod
    def clone(cls, url: str, path: str | None = None, **kwargs: Any) -> Store:
        """``git clone URL PATH``, then the record merge driver and a pull strategy registered
        in the clone's ``.git/config`` (git config is not cloned); ``store.cloned`` says what
        was done. PATH defaults to the URL's last part without ``.git``, as git's does.

        A PATH that exists and is not an empty folder is refused (``destination_exists``); a
        repository that is not a lantern store is removed again and refused (``no_store``).
        """
        import shutil

        from .git.config import ensure_merge_driver, ensure_pull_strategy
        from .git.remote import clone, clone_name

        if not isinstance(url, str) or not url.strip():
            raise InvalidInput("url: must not be empty", code="invalid_url")
        target = os.path.abspath(os.path.expanduser(path or clone_name(url.strip())))
        existed = os.path.lexists(target)
        if existed and (not os.path.isdir(target) or os.listdir(target)):
            raise InvalidInput(
                f"path: {target} already exists and is not an empty folder; "
                "give another PATH (lantern clone URL PATH)",
                code="destination_exists",
            )
        clone(url.strip(), target)
        if not os.path.isfile(os.path.join(target, MARKER)):
            # What we cloned is not a store: leave the folder as it was before.
            if existed:
                for name in os.listdir(target):
                    full = os.path.join(target, name)
                    if os.path.isdir(full) and not os.path.islink(full):
                        shutil.rmtree(full)
                    else:
                        os.unlink(full)
            else:
                shutil.rmtree(target)
            raise NoStore(
                f"{url} is not a lantern store (no {MARKER} on its default branch"
                " — an empty repository?); nothing was kept. Push a store to it first "
                "(lantern sync on the host that has one), or clone it with git and run lantern init"
            )
        from .git.repo import GitRepo

        git = GitRepo(target)
        registered = ensure_merge_driver(git.repo, kwargs.get("warn"))
        pull = ensure_pull_strategy(git.repo, kwargs.get("warn"))
        store = cls(target, **kwargs)
        info = store.git.branch_info()
        store.cloned = CloneResult(
            url=url.strip(),
            path=target,
            branch=info["branch"],
            head=info["head"],
            records=count_records(store.git),
            registered_merge_driver=registered,
            set_pull_rebase=pull,
        )
        return store

    @property
    def exists(self) -> bool:
        return os.path.isfile(os.path.join(self.root, MARKER)) and os.path.exists(
            os.path.join(self.root, ".git")
        )

    def _check_format(self) -> None:
        path = os.path.join(self.root, MARKER)
        try:
            with open(path, "rb") as handle:
                data = yaml.load(handle.read(), Loader=yaml.CSafeLoader)
        except (OSError, yaml.YAMLError) as err:
            raise StoreError(f"{path}: cannot be read: {err}") from None
        version = data.get("format") if isinstance(data, dict) else None
        if isinstance(version, bool) or not isinstance(version, int) or version < 1:
            raise StoreError(f"{path}: 'format' must be a positive integer, got {version!r}")
        if version > FORMAT_VERSION:
            raise UnsupportedFormat(
                f"{self.root} uses store format {version}, but this lantern knows formats up to "
                f"{FORMAT_VERSION}; upgrade lantern-git to use it"
            )
        self.settings = StoreSettings.parse(data, path, version)

    @property
    def review_ref(self) -> str | None:
        """The review branch this store's writes go to (docs/review.md), or
        None when review is off: ``Store(review=...)``, else ``LANTERN_REVIEW``, else
        ``review: true`` in ``lantern.yaml``. Its name: ``Store(review_name=...)``, else
        ``LANTERN_REVIEW_NAME``, else the actor."""
        from .review import review_enabled, review_name, review_ref

        if not review_enabled(self._review, self.settings):
            return None
        return review_ref(review_name(self._review_name, self.actor))

    def _register_merge_driver(self) -> None:
        """A plain ``git clone`` of a store lacks the merge driver its ``.gitattributes`` names
        (git config is not cloned), so the next plain ``git pull`` would write conflict markers
        into record files: register it when missing. Read as text first, so the usual case
        costs two small reads and no pygit2 import."""
        from .git.config import attributes_line, routes_to_driver

        if not routes_to_driver(self.root, attributes_line(MERGE_PATTERN)):
            return
        try:
            with open(os.path.join(self.root, ".git", "config"), "rb") as handle:
                if b'[merge "lantern"]' in handle.read():
                    return
        except OSError:
            pass  # .git is a file (a linked worktree): ask git itself
        from .git.config import driver_registered, ensure_merge_driver, ensure_pull_strategy

        if driver_registered(self.git.repo):
            return
        if ensure_merge_driver(self.git.repo, self.warn):
            ensure_pull_strategy(self.git.repo, self.warn)
            self.registered_merge_driver = True
            self.warn(
                "lantern: registered the record merge driver in .git/config "
                "(git config is not cloned; plain git pull now merges records field by field)"
            )

    @property
    def git(self) -> GitRepo:
        """The store's repository (opened on first use: pygit2 is imported only then)."""
        if self._git is None:
            from .git.repo import GitRepo

            self._git = GitRepo(self.root)
        return self._git

    @property
    def index(self) -> SearchIndex:
        """The search index (opened on first use: Whoosh is imported only then)."""
        if self._index is None:
            from .index.search import SearchIndex

            self._index = SearchIndex(self.root, self.derived_dir, self.locked)
            self._index.progress = self.progress
            if self.watch and self.exists:
                self._index.watch()
        return self._index

    @property
    def chunks(self) -> ChunkIndex:
        """The index of source chunks (opened on first use, like :attr:`index`)."""
        if self._chunks is None:
            from .index.chunks import ChunkIndex

            self._chunks = ChunkIndex(self.root, self.derived_dir, self.locked)
        return self._chunks

    @property
    def sources(self) -> Sources:
        """The store's evidence: ingest, append, show, search, remove sources; pin and verify
        the references records make to them (:class:`~lantern_git.evidence.Sources`)."""
        if self._sources is None:
            from .evidence import Sources

            self._sources = Sources(self)
        return self._sources

    def close(self) -> None:
        if self._index is not None:
            self._index.stop_watching()
            self._index.close()
        if self._chunks is not None:
            self._chunks.close()
        if self.derived_dir != self.state_dir:
            self._cleanup()

    # ------------------------------------------------------------------ init

    def initialize(self) -> InitResult:
        """Create the store, or adopt an existing git repository, touching none of its files."""
        import pygit2

        os.makedirs(self.root, exist_ok=True)
        created_repo = False
        if not os.path.exists(os.path.join(self.root, ".git")):
            pygit2.init_repository(self.root)
            created_repo = True
        self._git = None
        git = self.git
        from .git.config import (
            attributes_line,
            ensure_merge_driver,
            ensure_pull_strategy,
            with_lines,
        )
        from .sourcefile import MERGE_PATTERN as SOURCES_PATTERN

        # Git config is not cloned: every init (and sync) makes sure the record merge driver
        # that .gitattributes names is registered here, and that a bare git pull of diverged
        # branches merges rather than asks (unless the user chose a pull strategy).
        registered = ensure_merge_driver(git.repo, self.warn) or self.registered_merge_driver
        ensure_pull_strategy(git.repo, self.warn)
        # The transaction repairs an interrupted write first: this commit would overwrite its
        # journal.
        with self.transaction(require_head=False, review=False) as tx:
            head_tree = git.head_tree()
            files: dict[str, bytes] = {}
            keep: dict[str, bytes] = {}
            wanted: dict[str, tuple[tuple[str, ...], str | None]] = {
                MARKER: ((), f"format: {FORMAT_VERSION}\n"),
                ".gitignore": ((GITIGNORE_LINE,), None),
                ".gitattributes": (
                    (attributes_line(MERGE_PATTERN), attributes_line(SOURCES_PATTERN)),
                    None,
                ),
            }
            for name, (lines, whole) in wanted.items():
                current = _read_worktree(self.root, name)
                if whole is not None:
                    content = current if current is not None else whole.encode()
                else:
                    content = with_lines(current or b"", lines)
                    committed = git.blob_at(head_tree, name)
                    if committed is not None and current is not None and current != committed:
                        # The user's uncommitted edits to this file stay theirs, uncommitted:
                        # commit HEAD's version plus the lines; their copy gets them after.
                        if with_lines(committed, lines) != committed:
                            files[name] = with_lines(committed, lines)
                            keep[name] = content
                        continue
                if content != current or git.blob_at(head_tree, name) != content:
                    files[name] = content
            if self.exists:
                self._check_format()
            if not files:
                return InitResult(self.root, created_repo, False, None, registered)
            # Their copy is written in the same journaled write, so a crash cannot lose it.
            commit = tx.commit(files, "init lantern store", "init", (), worktree=keep)
        return InitResult(self.root, created_repo, True, commit, registered)

    # ------------------------------------------------------------------ locking and writes

    @contextlib.contextmanager
    def locked(self) -> Iterator[None]:
        """Hold the store's writer lock (re-entrant within a thread)."""
        with self._lock:
            yield

    def recover(self) -> None:
        """Complete or roll back a write that was cut off (a crash, a kill), if there is one."""
        from .transaction import interrupted, recover

        # Checked before self.git: opening the repository (and importing pygit2) is for
        # the rare read that finds a write to repair.
        if self.exists and interrupted(self.state_dir):
            if self.read_only:
                self.warn(
                    f"warning: {self.root} holds an interrupted write that only a process "
                    "that can write the store can repair; answering from the files as they are"
                )
                return
            recover(self.git, self.state_dir, self._lock, self.warn)

    def refuse_if_read_only(self) -> None:
        """Raise :class:`ReadOnlyStore` before a write to a store this process cannot write."""
        if self.read_only:
            raise ReadOnlyStore(
                f"{self.root} is read-only for this user (a mounted backup, or another user's "
                "store?): nothing was written; list, search, show and status still work"
            )

    @contextlib.contextmanager
    def transaction(
        self, *, require_head: bool = True, review: bool = True, branch: str | None = None
    ) -> Iterator[WriteTransaction]:
        """The one write path: see :mod:`lantern_git.transaction`. The default store is
        created by its first write. With review on (:attr:`review_ref`), its commits go to the
        review branch; ``review=False`` is for what moves the store's branch itself (init,
        sync, accept), never a writer's content; ``branch`` sends them to that review branch
        (a reject)."""
        from .sourcefile import SOURCE_FILES
        from .transaction import write_transaction

        self.refuse_if_read_only()
        review_ref = branch or (self.review_ref if review else None)
        if not self.exists and require_head:
            if not self.create_on_write:
                raise NoStore(f"{self.root} is not a lantern store")
            self.initialize()
        with write_transaction(
            self.root,
            self.state_dir,
            self.git,
            self._lock,
            lambda: self.index,
            records=RECORD_FILES,
            sources=SOURCE_FILES,
            actor=self.actor,
            author=self.author,
            warn=self.warn,
            require_head=require_head,
            chunks=lambda: self.chunks,
            review_ref=review_ref,
        ) as tx:
            outer, self.writing = self.writing, tx
            try:
                yield tx
            finally:
                self.writing = outer
                for seen in self._watching:
                    seen.append(tx)

    def written(self, write: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs) -> Written[T]:
        """Run one write of this store (``store.written(store.add, "text", kind="fact")``) and
        return what happened: its value, the last commit it made (None: it changed nothing) and
        whether its commits await review. The CLI and the MCP server learn of every write this
        way; the write methods themselves return only their value.

        Each call sees only the transactions opened during it, so calls may nest."""
        from .written import Written

        seen: builtins.list[WriteTransaction] = []
        self._watching.append(seen)
        try:
            value = write(*args, **kwargs)
        finally:
            self._watching.pop()  # calls nest, so the innermost ends first
        commits = [commit for tx in seen for commit in tx.commits]
        pending = any(tx.pending_review for tx in seen)
        return Written(value, commits[-1] if commits else None, pending)

    # ------------------------------------------------------------------ reading records

    def resolve_id(self, ref: str) -> str:
        """The full id for an id or a unique prefix of 4 or more hex digits."""
        prefix = check_id_prefix(ref)
        if not self.exists:
            raise NotFound(f"no record with id {prefix}")
        candidates = record_candidates(self.root, prefix)
        if not candidates and len(prefix) == 16:
            raise NotFound(f"no record with id {prefix}")
        if not candidates:
            raise NotFound(f"no record with id prefix {prefix}")
        if len(candidates) > 1:
            raise AmbiguousId(prefix, candidates)
        return candidates[0]

    def read(self, record_id: str) -> tuple[str, Record]:
        """A record file's text and record, as the working tree has it."""
        return load(self.root, record_id)

    def get(
        self, ref: str, *, at: str | int | None = None, include_pending: bool = False
    ) -> Record:
        """One record, by id or unique id prefix.

        ``at`` (a git revision or a time, as ``list``'s) reads it from git's tree at that point
        instead, where the prefix is resolved too: a record deleted since is found.
        ``include_pending``: as it would be once the review branches are accepted (a
        :class:`~lantern_git.review.PendingVersion` where one changed it).
        """
        self.recover()
        if include_pending:
            if at is not None:
                raise InvalidInput(
                    "at: cannot be combined with --include-pending", code="usage_error"
                )
            return self._get_pending(ref)
        if at is not None:
            from .timetravel import record_at

            prefix = check_id_prefix(ref)
            if not self.exists:
                raise NotFound(f"no record with id {prefix}")
            return record_at(self.git, prefix, at)
        return self.read(self.resolve_id(ref))[1]

    def _get_pending(self, ref: str) -> Record:
        from .review import pending_versions

        prefix = check_id_prefix(ref)
        versions = pending_versions(self.review_list())
        found = set(record_candidates(self.root, prefix)) if self.exists else set()
        for record_id, version in versions.items():
            if record_id.startswith(prefix):
                (found.add if version is not None else found.discard)(record_id)
        if not found:
            raise NotFound(f"no record with id {'prefix ' if len(prefix) < 16 else ''}{prefix}")
        if len(found) > 1:
            raise AmbiguousId(prefix, sorted(found))
        record_id = found.pop()
        return versions.get(record_id) or self.read(record_id)[1]

    # ------------------------------------------------------------------ listing

    def refresh(self, meanwhile: Callable[[], object] | None = None) -> RefreshReport:
        """Bring the search index in step with the files; warns about files it skipped."""
        self.recover()
        report = self.index.refresh(meanwhile)
        for problem in report.broken.values():
            self.warn(f"warning: skipped {problem}")
        return report

    def list(
        self,
        query: RecordQuery | None = None,
        *,
        at: str | int | None = None,
        include_pending: bool = False,
        **filters: Any,
    ) -> builtins.list[Record]:
        """Records in the contract's order: active first, priority, urgency, newest, id.

        ``at`` (a git revision or a time) answers from git's tree at that point instead.
        ``include_pending``: as the list would be once the review branches are accepted; a
        record a review branch added or changed is its
        :class:`~lantern_git.review.PendingVersion`, one it removed is left out.
        """
        from .query import RecordQuery

        query = query or RecordQuery(**filters)
        _check_query(query)
        if not self.exists:
            return []
        if include_pending:
            return self._list_pending(query, at)
        if query.cites is not None and len(query.cites) < 16:
            query = dataclasses.replace(query, cites=self.sources.resolve(query.cites))
        if query.cites is not None:
            # Citations are not indexed: the filter runs on the whole list, then the page.
            whole = dataclasses.replace(query, cites=None, limit=None, offset=0)
            cited = [r for r in self.list(whole, at=at) if query.matches_cites(r)]
            return query.page.take(cited)
        if at is not None:
            from .timetravel import list_at

            return list_at(self.git, at, query, warn=self.warn)
        return [hit.record for hit in self._fresh(query, scored=False)]

    def count(self, query: RecordQuery | None = None, *, at: str | int | None = None) -> int:
        """How many records :meth:`list` would return for ``query`` without its page: from the
        index's id column when only filters are given (100k records: no record is read)."""
        from .query import RecordQuery

        query = dataclasses.replace(query or RecordQuery(), limit=None, offset=0)
        _check_query(query)
        if not self.exists:
            return 0
        if at is not None or query.text or query.cites is not None:
            return len(self.list(query, at=at))
        self.refresh()
        return self.index.count(query)

    def _list_pending(self, query: RecordQuery, at: str | int | None) -> builtins.list[Record]:
        from .query import sort_key
        from .review import pending_versions

        if at is not None or query.text:
            raise InvalidInput(
                "--include-pending cannot be combined with --at or --query (pending records "
                "are read from their review branches, not the index)",
                code="usage_error",
            )
        versions = pending_versions(self.review_list())
        whole = dataclasses.replace(query, limit=None, offset=0)
        records: builtins.list[Record] = [r for r in self.list(whole) if r.id not in versions]
        if query.cites is not None:
            query = dataclasses.replace(query, cites=self.sources.resolve(query.cites))
        records.extend(v for v in versions.values() if v is not None and query.matches(v))
        records.sort(key=sort_key)
        return query.page.take(records)

    def _fresh(self, query: RecordQuery, scored: bool) -> builtins.list[Hit]:
        """The index's answer to ``query`` once the index is in step with the files.

        The query runs while the freshness check's finds do (on two cores their time is
        hidden), and its answer is kept when no record file changed since the last check.
        """
        early: builtins.list[builtins.list[Hit]] = []

        def meanwhile() -> None:
            try:
                early.append(self.index.run_once(query, scored))
            except Exception:  # a damaged index: the normal path below rebuilds it
                pass

        report = self.refresh(meanwhile)
        if report.unchanged and early:
            return early[0]
        return self.index.search(query) if scored else self.index.list(query)

    def search(
        self,
        text: str,
        query: RecordQuery | None = None,
        *,
        mode: str | None = None,
        include_pending: bool = False,
        explain: bool = False,
        **filters: Any,
    ) -> builtins.list[Hit]:
        """Records matching ``text``, most relevant first, as hits with a ``score`` and the
        ``mode`` that ranked them (docs/search.md):

        - ``keyword``: lantern's BM25 over the words (stems and forms as written, see
          :mod:`~lantern_git.index.bm25`); ``score`` is the BM25 score.
        - ``semantic``: cosine of the embeddings of ``text`` and each record's content, among
          the records the filters select; records under the similarity floor are left out
          (:mod:`~lantern_git.index.ranking`); ``score`` is the cosine.
        - ``hybrid``: ``KEYWORD_WEIGHT * bm25 / best bm25 + (1 - KEYWORD_WEIGHT) * cosine``
          (``KEYWORD_WEIGHT`` = 0.1, :mod:`~lantern_git.index.ranking`, where it is chosen),
          the cosine counted only at or above the floor, over the keyword matches and the
          records at or above the floor; ``score`` is that sum, between 0 and 1.

        ``explain``: each hit's ``explain`` says what made its score (mode, bm25, the query
        words matched, cosine, weights, floor).

        ``mode=None`` is hybrid when an embedder is available (the ``semantic`` extra, and no
        ``embedder: none``), keyword otherwise. Every filter applies before ranking; priority,
        urgency and status never enter a score. Semantic and hybrid raise
        :class:`~lantern_git.errors.SemanticUnavailable` without an embedder.

        ``include_pending``: searches the records as they would be once the review branches
        are accepted (as ``list``'s), each scored as the index would score it in that store; a
        pending record's hit is its :class:`~lantern_git.review.PendingVersion`. Keyword only:
        with ``mode`` semantic or hybrid it is refused (``usage_error``).
        """
        from .query import RecordQuery

        if mode is not None and mode not in SEARCH_MODES:
            raise InvalidInput(
                f"mode: must be keyword, semantic or hybrid; got {mode!r}", code="invalid_field"
            )
        if not isinstance(text, str) or not text.strip():
            raise InvalidInput("query: must not be empty", code="invalid_query")
        query = query or RecordQuery(**filters)
        query.text = text
        _check_query(query)
        if include_pending:
            if mode not in (None, "keyword"):
                raise InvalidInput(
                    f"mode: {mode} cannot include pending records, which have no vectors; "
                    "search them by keyword (--mode keyword, mode=keyword)",
                    code="usage_error",
                )
            mode = "keyword"
        if mode is None:
            mode = "hybrid" if self.semantic_available else "keyword"
        elif mode != "keyword":
            self.record_vectors()  # without an embedder, refused before anything is read
        if not self.exists:
            return []
        if include_pending:
            hits = self._search_pending(query)
        elif mode == "keyword":
            hits = self._fresh(query, scored=True)
        else:
            hits = self._search_vectors(query, mode, explain)
        for hit in hits:
            hit.mode = mode
            if explain and mode == "keyword":
                from .index import ranking

                hit.explain = ranking.explained(
                    mode, text, hit.record.content, hit.score, None, None, None
                )
        return hits

    def _search_vectors(
        self, query: RecordQuery, mode: str, explain: bool = False
    ) -> builtins.list[Hit]:
        from .index import ranking
        from .index.vectors import fuse, fuse_page, rank
        from .query import Hit

        if query.cites is not None and len(query.cites) < 16:
            query = dataclasses.replace(query, cites=self.sources.resolve(query.cites))
        self.refresh()
        vectors = self.record_vectors()
        current = vectors.current()
        whole = dataclasses.replace(query, limit=None, offset=0)
        ids_by_docnum, docs = self.index.matching_docs(whole)
        if query.cites is not None:
            # Citations are not indexed: checked on the candidates' records.
            cited = self.index.records(ids_by_docnum[d] for d in docs)
            docs = [d for d in docs if query.matches_cites(cited[ids_by_docnum[d]])]
        assert query.text is not None
        end = None if query.limit is None else query.offset + query.limit
        paged = mode == "hybrid" and end is not None  # fuse_page: the rows in any order
        candidates = current.rows_of_docs(ids_by_docnum, docs, ordered=not paged)
        wanted = vectors.embed_query(query.text)
        # The keyword ranking as documents and BM25 scores not yet rounded: a page ranks them
        # in bulk (fuse_page), so a common word's thousands of matches are never each rounded,
        # sorted or looked up by id.
        id_of, keyword_docs, keyword_scores = self.index.raw_scored_docs(whole)
        if query.cites is not None:
            chosen = set(docs)
            kept = [i for i, d in enumerate(keyword_docs) if d in chosen]
            keyword_docs = [keyword_docs[i] for i in kept]
            keyword_scores = [keyword_scores[i] for i in kept]
        # A query sharing no word with the records searched has the higher floor
        floor = ranking.floor(self.embedder_name, anchored=bool(keyword_docs))
        bm25: dict[str, float] = {}
        best: float | None = None
        if paged:
            assert end is not None
            fused = fuse_page(
                current, wanted, candidates, id_of, keyword_docs, keyword_scores, end, floor
            )
            ranked, bm25, best = fused.ranked, fused.bm25, fused.best
        else:
            keyword: builtins.list[tuple[str, float]] = []
            if mode == "hybrid" or explain:
                keyword = sorted(
                    ((id_of[d], round(s, 6)) for d, s in zip(keyword_docs, keyword_scores)),
                    key=lambda item: (-item[1], item[0]),
                )
                bm25, best = dict(keyword), (keyword[0][1] if keyword else None)
            if mode == "hybrid":  # every record: whole rankings fused
                ranked = fuse(keyword, rank(current, wanted, candidates, floor=floor))
            else:  # semantic needs only the page
                ranked = rank(current, wanted, candidates, end, floor)
        page = ranked[query.offset : end]
        records = self.index.records(record_id for record_id, _ in page)
        hits = [Hit(records[i], score) for i, score in page if i in records]
        if explain:
            for hit in hits:
                cosine = round(float(current.vector(hit.record.id) @ wanted), 6)
                hit.explain = ranking.explained(
                    mode,
                    query.text,
                    hit.record.content,
                    bm25.get(hit.record.id),
                    best,
                    cosine,
                    floor,
                )
        return hits

    def similar(
        self,
        ref: str,
        *,
        limit: int | None = 10,
        offset: int = 0,
        min_score: float | None = None,
    ) -> builtins.list[Hit]:
        """The records whose content embeds nearest to this record's, best first (cosine,
        ties by id), the record itself left out: among active, unexpired records, as the
        default list. ``min_score`` drops those below that cosine; ``limit`` 0 or None: all."""
        from .paging import Page
        from .query import Hit, RecordQuery

        page = Page(limit, offset)  # a bad page is the caller's error, with or without embedder
        vectors = self.record_vectors()  # refused without an embedder, before numpy
        from .index.vectors import rank

        if min_score is not None and (
            isinstance(min_score, bool) or not -1.0 <= float(min_score) <= 1.0
        ):
            raise InvalidInput("min_score: must be between -1 and 1", code="invalid_field")
        self.recover()
        record_id = self.resolve_id(ref)
        self.refresh()
        current = vectors.current()
        if record_id not in current.row:
            raise NotFound(f"record {record_id} is not indexed (a broken file? see lantern check)")
        candidates = [i for i in self.index.matching_ids(RecordQuery()) if i != record_id]
        ranked = rank(current, current.vector(record_id), candidates)
        if min_score is not None:
            ranked = [item for item in ranked if item[1] >= min_score]
        ranked = page.take(ranked)
        records = self.index.records(i for i, _ in ranked)
        return [Hit(records[i], score, "semantic") for i, score in ranked if i in records]

    def dupes(
        self,
        *,
        scopes: Iterable[str] | None = None,
        threshold: float = DUPE_THRESHOLD,
        limit: int | None = None,
        offset: int = 0,
    ) -> builtins.list[DupePair]:
        """Pairs of active, unexpired records (in ``scopes``, if given; a trailing ``*``
        matches a prefix) whose contents have a cosine of at least ``threshold``, by score
        desc then ids; ``limit`` and ``offset`` page them (``limit`` 0 or None: all). Lantern
        only reports them: it never merges or archives on its own."""
        from .paging import Page
        from .query import DupePair, RecordQuery

        page = Page(limit, offset)  # a bad page is the caller's error, with or without embedder
        vectors = self.record_vectors()  # refused without an embedder, before numpy
        from .index.vectors import pairs_above

        if isinstance(threshold, bool) or not -1.0 <= float(threshold) <= 1.0:
            raise InvalidInput("threshold: must be between -1 and 1", code="invalid_field")
        query = RecordQuery(scopes=_ref_list(scopes or (), "scopes"))
        _check_query(query)
        if not self.exists:
            return []
        self.refresh()
        current = vectors.current()
        pairs = pairs_above(current, self.index.matching_ids(query), float(threshold))
        pairs = page.take(pairs)
        records = self.index.records({i for a, b, _ in pairs for i in (a, b)})
        return [
            DupePair(records[a], records[b], score)
            for a, b, score in pairs
            if a in records and b in records
        ]

    def identity(self) -> Identity:
        """The author and committer this store's next commit names (``--author``, then
        ``LANTERN_AUTHOR``, then git's identity as git reads it; see git/identity.py)."""
        from .git.identity import resolve_identity

        repo = self.git.repo if self.exists else None
        return resolve_identity(repo, self.author, self.warn)

    @property
    def embedder_name(self) -> str:
        """The embedder this store uses: ``LANTERN_EMBEDDER``, else ``embedder:`` in
        ``lantern.yaml``, else wordllama (see :mod:`lantern_git.embedders`)."""
        from .embedders import chosen_name

        return chosen_name(self.settings)

    @property
    def semantic_available(self) -> bool:
        """Whether semantic and hybrid search can run (decides the default search mode),
        found without importing numpy or the embedder."""
        from .embedders import available

        return available(self.embedder_name)

    def record_vectors(self) -> Vectors:
        """The records' vectors under this store's embedder (loaded on first use); raises
        :class:`~lantern_git.errors.SemanticUnavailable` without one."""
        return self._vectors_of("records")

    def chunk_vectors(self) -> Vectors:
        """The source chunks' vectors, as :meth:`record_vectors`."""
        return self._vectors_of("chunks")

    def _vectors_of(self, name: str) -> Vectors:
        if name not in self._vectors:
            from .embedders import load_embedder

            # First: without an embedder this raises before numpy is imported.
            embedder = load_embedder(self.embedder_name)
            from .index.vectors import RecordTexts, Vectors

            texts = RecordTexts(self.index) if name == "records" else self.chunks
            self._vectors[name] = Vectors(self.derived_dir, name, texts, embedder, self.locked)
        return self._vectors[name]

    def _search_pending(self, query: RecordQuery) -> builtins.list[Hit]:
        from .index.search import search_records
        from .query import Hit, RecordQuery
        from .review import pending_versions

        self.recover()
        versions = pending_versions(self.review_list())
        every = RecordQuery(status="all", include_expired=True)
        records: builtins.list[Record] = [r for r in self.list(every) if r.id not in versions]
        records.extend(v for v in versions.values() if v is not None)
        if query.cites is not None:
            query = dataclasses.replace(query, cites=self.sources.resolve(query.cites))
            records = [r for r in records if query.matches_cites(r)]
        by_id = {r.id: r for r in records}
        return [Hit(by_id[h.record.id], h.score) for h in search_records(records, query)]

    def rebuild_index(self) -> RefreshReport:
        """Build the search index from scratch from the record files, the chunk index from
        the sources, and with an embedder the records' vectors."""
        self.recover()
        report = self.index.rebuild()
        chunks = self.chunks.rebuild()
        if self.semantic_available:
            self.record_vectors().rebuild()
            self.chunk_vectors().rebuild()
        for problem in [*report.broken.values(), *chunks.broken.values()]:
            self.warn(f"warning: skipped {problem}")
        return report

    # ------------------------------------------------------------------ writing records

    def add(
        self,
        content: str,
        *,
        kind: str,
        scope: str = DEFAULT_SCOPE,
        priority: int = DEFAULT_PRIORITY,
        urgency: int = DEFAULT_URGENCY,
        confidence: float = DEFAULT_CONFIDENCE,
        expires_at: int | None = None,
        source_refs: Iterable[str] = (),
        reason: str | None = None,
    ) -> Record:
        """Add a record; adding the same kind+scope+content again returns it, with no commit."""
        record = Record.new(
            kind=kind,
            content=content,
            scope=scope,
            priority=priority,
            urgency=urgency,
            confidence=confidence,
            expires_at=expires_at,
            source_refs=_ref_list(source_refs),
        )
        with self.transaction() as tx:
            if record.source_refs:
                record = record.evolve(source_refs=self.sources.pin(record.source_refs))
            path = record_path(record.id)
            if tx.exists(record.id):
                return tx.read(record.id)[1]
            text = record.to_markdown()
            tx.commit(
                {path: text.encode("utf-8")},
                _summary("add", record),
                "add",
                (record.id,),
                reason=reason,
            )
        return record

    def archive(self, ref: str, *, reason: str | None = None) -> Record:
        """Mark a record archived. It stays in the store and in history."""

        def change(record: Record) -> Record:
            if record.status == "superseded":
                raise InvalidInput(
                    f"record {record.id} is superseded; restore it before archiving",
                    code="invalid_state",
                )
            return record.evolve(status="archived")

        return self._mutate(ref, "archive", change, reason)

    def restore(self, ref: str, *, reason: str | None = None) -> Record:
        """Make an archived or superseded record active again."""
        return self._mutate(ref, "restore", lambda r: r.evolve(status="active"), reason)

    def update(
        self,
        ref: str,
        *,
        priority: int | None = None,
        urgency: int | None = None,
        confidence: float | None = None,
        expires_at: int | Unset | None = UNSET,
        add_source_refs: Iterable[str] = (),
        reason: str | None = None,
    ) -> Record:
        """Change importance fields; ``expires_at=None`` clears the expiry."""
        changes: dict[str, Any] = {}
        if priority is not None:
            changes["priority"] = validate_priority(priority)
        if urgency is not None:
            changes["urgency"] = validate_priority(urgency, "urgency")
        if confidence is not None:
            changes["confidence"] = validate_confidence(confidence)
        if expires_at is not UNSET:
            changes["expires_at"] = (
                None if expires_at is None else validate_timestamp("expires_at", expires_at)
            )
        new_refs = validate_source_refs(_ref_list(add_source_refs, "add_source_refs"))
        if not changes and not new_refs:
            raise InvalidInput(
                "nothing to update: give --priority, --urgency, --confidence, --expires-at "
                "or --add-source-ref",
                code="nothing_to_update",
            )

        def change(record: Record) -> Record:
            pinned = self.sources.pin(new_refs)
            refs = record.source_refs + tuple(r for r in pinned if r not in record.source_refs)
            return record.evolve(**changes, source_refs=refs)

        return self._mutate(ref, "update", change, reason)

    def supersede(
        self,
        old_ref: str,
        content: str,
        *,
        kind: str | None = None,
        scope: str | None = None,
        priority: int | None = None,
        urgency: int | None = None,
        confidence: float | None = None,
        expires_at: int | Unset | None = None,
        source_refs: Iterable[str] = (),
        reason: str | None = None,
    ) -> Record:
        """Replace a record: the new one carries ``supersedes_id``; both change in one commit.

        Kind, scope, priority, urgency and confidence default to the old record's.
        """
        if isinstance(expires_at, Unset):
            expires_at = None
        with self.transaction() as tx:
            old_id = tx.resolve_id(old_ref)
            old_text, old = tx.read(old_id)
            tx.ensure_committed(old_id, old_text)
            if old.status != "active":
                raise InvalidInput(
                    f"record {old_id} is {old.status}; only an active record can be superseded",
                    code="invalid_state",
                )
            new_kind, new_scope = kind or old.kind, scope or old.scope
            if compute_id(new_kind, new_scope, content) == old_id:
                raise InvalidInput(
                    "the new content is the same as the old record's; nothing to supersede",
                    code="identical_content",
                )
            new = Record.new(
                kind=new_kind,
                content=content,
                scope=new_scope,
                priority=old.priority if priority is None else priority,
                urgency=old.urgency if urgency is None else urgency,
                confidence=old.confidence if confidence is None else confidence,
                expires_at=expires_at,
                supersedes_id=old_id,
                source_refs=self.sources.pin(_ref_list(source_refs)),
            )
            new_path = record_path(new.id)
            if tx.exists(new.id):
                raise InvalidInput(
                    f"a record with this content already exists ({new.id}); "
                    "restore or update it instead",
                    code="already_exists",
                )
            old_new = old.evolve(
                status="superseded", updated_at=max(new.updated_at, old.updated_at)
            )
            tx.commit(
                {
                    new_path: new.to_markdown().encode("utf-8"),
                    record_path(old_id): old_new.rewrite(old_text).encode("utf-8"),
                },
                f"supersede {old_id} -> {new.id}: {_first_line(new.content)}",
                "supersede",
                (old_id, new.id),
                reason=reason,
            )
        return new

    def delete(self, ref: str, *, reason: str | None = None) -> Deletion:
        """Remove a record's file in one commit (``Lantern-Op: delete``): the one way lantern
        removes a record, for data that must not stay (stored by mistake). Git history keeps
        the text until it is purged with git's own tools (docs/usage.md, "Deleting a record").

        The commit's summary names only the id, never the content: a purge of the file from
        history must not leave a copy in a commit message.
        """
        with self.transaction() as tx:
            record_id = tx.resolve_id(ref)
            text, record = tx.read(record_id)
            tx.ensure_committed(record_id, text)
            commit = tx.commit(
                {record_path(record_id): None},
                f"delete {record_id}",
                "delete",
                (record_id,),
                reason=reason,
            )
        return Deletion(record, commit)

    def revert(self, commit: str, *, reason: str | None = None) -> RevertResult:
        """Undo one lantern commit in a new commit (``Lantern-Op: revert``), record-aware: a
        later change to another field of the same record is kept. Refuses (CannotRevert) a
        merge commit, a commit lantern did not make and a later change to the same field."""
        from .revert import revert

        with self.transaction() as tx:
            return revert(tx, commit, reason=reason)

    def diff(self, old: str | int | None = None, new: str | int | None = None) -> RecordDiff:
        """Records added, removed and changed from ``old`` (default HEAD) to ``new`` (default:
        the working tree, hand edits included)."""
        from .timetravel import record_diff

        self.recover()
        if not self.exists:
            raise NoStore(f"{self.root} is not a lantern store")
        return record_diff(self.git, old, new)

    def _mutate(
        self, ref: str, op: str, change: Callable[[Record], Record], reason: str | None
    ) -> Record:
        with self.transaction() as tx:
            record_id = tx.resolve_id(ref)
            text, record = tx.read(record_id)
            tx.ensure_committed(record_id, text)
            changed = change(record)
            if changed == record:
                return record
            changed = changed.evolve(updated_at=max(int(time.time()), record.updated_at))
            tx.commit(
                {record_path(record_id): changed.rewrite(text).encode("utf-8")},
                _summary(op, changed),
                op,
                (record_id,),
                reason=reason,
            )
        return changed

    def ensure_committed(self, record_id: str, text: str) -> None:
        """Refuse (UncommittedChanges) when ``text`` is not what HEAD holds for the record."""
        from .transaction import refuse_uncommitted

        path = record_path(record_id)
        refuse_uncommitted(self.git, [path], read={path: text.encode("utf-8")})

    # ------------------------------------------------------------ history, hand edits, transfer

    def history(self, ref: str) -> builtins.list[HistoryEntry]:
        """The commits that changed a record, newest first, with the fields they changed."""
        return self.record_history(ref).entries

    def record_history(
        self, ref: str, *, limit: int | None = None, offset: int = 0
    ) -> RecordHistory:
        """``memory history``'s answer: the record's full id and one page of :meth:`history`
        (``limit`` 0 or None: every commit).

        A deleted record has no file to resolve a prefix against; its full id still finds
        its history.
        """
        from .history import RecordHistory, record_history
        from .paging import Page

        page = Page(limit, offset)
        self.recover()
        try:
            record_id = self.resolve_id(ref)
        except NotFound:
            if not (isinstance(ref, str) and ID_RE.fullmatch(ref.strip().lower())):
                raise
            record_id = ref.strip().lower()
        return RecordHistory(record_id, page.take(record_history(self.git, record_id)))

    def log(self, limit: int | None = 20, offset: int = 0) -> builtins.list[LogEntry]:
        """The store's recent operations, newest first, read from the commit trailers;
        ``limit`` 0 or None: all."""
        from .history import store_log
        from .paging import Page

        page = Page(limit, offset)
        if not self.exists:
            return []
        self.recover()
        return store_log(self.git, page)

    def check(self) -> CheckReport:
        """Validate every file under memory/; a report of ``path:line: message`` problems."""
        from .checker import CheckReport, check_files

        self.recover()
        return check_files(self.root) if self.exists else CheckReport()

    def commit_hand_edits(
        self, message: str | None = None, *, reason: str | None = None
    ) -> HandCommit:
        """Validate and commit record files edited by hand (raises CheckFailed if invalid).

        Refused in review mode: hand edits are made in the store's working tree, on top of the
        store's branch, so committing them to a review branch could undo a change pending
        there without anyone seeing it; commit them without review, or edit the pending record
        with memory edit, which reads it from the review branch."""
        if self.review_ref is not None:
            raise InvalidInput(
                "lantern commit is not available in review mode: hand edits are made on the "
                "store's branch and could undo a change that awaits review; commit them "
                "without review (LANTERN_REVIEW=0), or use lantern memory edit, which edits "
                "a pending record as its review branch has it",
                code="review_mode",
            )
        from .checker import commit_hand_edits

        with self.transaction() as tx:
            return commit_hand_edits(tx, message, reason=reason)[0]

    def begin_edit(self, ref: str) -> EditSession:
        """An :class:`~lantern_git.editing.EditSession`: a temporary copy for an editor. In
        review mode the copy is of the record as the review branch has it, when it changed
        it, and the edit is committed there."""
        from .editing import EditSession

        # Read as the writer sees it (refusing a read-only store before the editor opens); the
        # writer lock is not held while the editor is open: apply_edit checks nothing changed.
        if not self.exists:
            raise NotFound(f"no record with id {check_id_prefix(ref)}")
        with self.transaction() as tx:
            record_id = tx.resolve_id(ref)
            text, _ = tx.read(record_id)
            tx.ensure_committed(record_id, text)
        return EditSession(
            record_id,
            text,
            lambda ref, original, edited, reason: self.apply_edit(
                ref, original, edited, reason=reason
            ),
        )

    def apply_edit(
        self, ref: str, original_text: str, text: str, *, reason: str | None = None
    ) -> Record:
        """Commit ``text`` as the record's new file if it validates (Lantern-Op: edit)."""
        from .editing import apply_edit

        with self.transaction() as tx:
            return apply_edit(tx, tx.resolve_id(ref), original_text, text, reason)

    def export_records(self) -> RecordExport:
        """Every record, any status, in id order, read from the files; the files it had to
        skip are in the export's ``skipped`` once it has been iterated."""
        from .transfer import RecordExport

        self.recover()
        return RecordExport(self.root if self.exists else None, self.warn)

    def import_records(
        self,
        lines: Iterable[str | bytes],
        *,
        reason: str | None = None,
        progress: Callable[[int], None] | None = None,
    ) -> ImportResult:
        """Add the new records of a JSON Lines batch in one commit; existing ids are skipped."""
        from .transfer import import_records, parse_lines

        sources: builtins.list[SourceImport] = []
        parsed = parse_lines(lines, progress, sources)
        with self.transaction() as tx:
            return import_records(
                tx, (record for _, record in parsed), reason=reason, sources=sources
            )

    def import_source(
        self,
        source: str,
        *,
        format: str = "auto",
        kind: str | None = None,
        scope: str | None = None,
        reason: str | None = None,
        progress: Callable[[int, int], None] | None = None,
    ) -> ImportResult:
        """Import a file (``-``: stdin) or a folder: lantern's JSON Lines, the MCP memory
        server's ``memory.json`` or markdown notes (see :mod:`lantern_git.importers`), in one
        commit; records already present are skipped."""
        from .importers import read_source
        from .transfer import import_records

        self.refuse_if_read_only()
        sources: builtins.list[SourceImport] = []
        found = read_source(
            source, format=format, kind=kind, scope=scope, progress=progress, sources=sources
        )
        with self.transaction() as tx:
            return import_records(
                tx, (record for _, record in found), reason=reason, sources=sources
            )

    # ------------------------------------------------------------------ review

    def review_list(self, *, limit: int | None = None, offset: int = 0) -> ReviewList:
        """Every review branch's pending changes, record by record (docs/review.md): what each
        writer changed since its branch left the store's branch. ``limit`` and ``offset`` page
        the branches, by name (``limit`` 0 or None: all)."""
        from .paging import Page
        from .review import ReviewList, review_list

        page = Page(limit, offset)
        self.recover()
        if not self.exists:
            return ReviewList()
        found = review_list(self.git)
        return ReviewList(page.take(found.branches))

    def review_accept(
        self,
        ids: Iterable[str] | None = None,
        *,
        branch: str | None = None,
        reason: str | None = None,
    ) -> ReviewDecision:
        """Bring pending records (``ids``, or None for everything on the branch) of one review
        branch onto the store's branch in one ``Lantern-Op: accept`` commit, this store's
        author as the reviewer; they are no longer pending after. Refuses (``self_approval``)
        a reviewer with the writer's actor and review name."""
        from .review import accept, choose

        wanted = None if ids is None else list(ids)
        with self.transaction(review=False) as tx:
            return accept(
                tx,
                choose(self.git, wanted, branch),
                everything=wanted is None,
                reason=reason,
                reviewer=self.reviewer,
            )

    def review_reject(
        self,
        ids: Iterable[str] | None = None,
        *,
        branch: str | None = None,
        reason: str | None = None,
    ) -> ReviewDecision:
        """Drop pending records (``ids``, or None for all) from their review branch with a
        ``Lantern-Op: reject`` commit on it; the store's branch does not change."""
        from .review import REVIEW_PREFIX as REVIEW_BRANCHES
        from .review import choose, reject

        wanted = None if ids is None else list(ids)
        ref = choose(self.git, wanted, branch).branch.ref
        with self.transaction(branch=ref) as tx:
            # Chosen again under the writer lock: the branch may have moved meanwhile.
            chosen = choose(self.git, wanted, ref.removeprefix(REVIEW_BRANCHES))
            return reject(tx, chosen, everything=wanted is None, reason=reason)

    @property
    def reviewer(self) -> tuple[str, str]:
        """Who accepts: (actor, review name), compared with a change's writer."""
        from .review import review_name

        return self.actor, review_name(self._review_name, self.actor)

    # ------------------------------------------------------------------ sync

    def sync(
        self,
        remote: str | None = None,
        *,
        push: bool = True,
        review_branches: bool | None = None,
    ) -> SyncReport:
        """Fetch, merge records field by field, push; returns a :class:`SyncReport`.

        ``review_branches``: the review branches travel too (fetched, merged record by record,
        pushed); None takes ``sync_review_branches`` from ``lantern.yaml`` (default: no)."""
        from .git.config import ensure_merge_driver
        from .review import sync_review_enabled
        from .sync import sync

        if not self.exists:
            raise NoStore(f"{self.root} is not a lantern store; create one with: lantern init")
        with_reviews = sync_review_enabled(review_branches, self.settings)
        with self.transaction(require_head=False, review=False) as tx:
            ensure_merge_driver(self.git.repo, self.warn)
            report = sync(tx, remote, push=push, review_branches=with_reviews)
            self.refresh()
        return report

    # ------------------------------------------------------------------ status

    def status(self) -> dict[str, Any]:
        info: dict[str, Any] = {
            "path": self.root,
            "exists": self.exists,
            "read_only": self.read_only,
            "format": FORMAT_VERSION if self.exists else None,
            "records": 0,
            "by_status": {},
            "by_kind": {},
            "broken_files": 0,
            "sources": 0,
            "chunks": 0,
            "index": None,
            "embedder": None,
            "search_mode": "keyword",
            "branch": None,
            "head": None,
            "upstream": None,
            "ahead": None,
            "behind": None,
        }
        if not self.exists:
            return info
        report = self.refresh()
        counts = self.index.counts()
        info["by_status"] = dict(sorted(counts["status"].items()))
        info["by_kind"] = dict(sorted(counts["kind"].items()))
        info["records"] = sum(counts["status"].values())
        chunks = self.chunks.refresh()
        info["sources"], info["chunks"] = self.chunks.counts()
        info["broken_files"] = len(report.broken) + len(chunks.broken)
        info["index"] = (
            "rebuilt"
            if report.rebuilt
            else ("refreshed" if report.updated or report.removed else "up to date")
        )
        if self.semantic_available:
            info["embedder"], info["search_mode"] = self.embedder_name, "hybrid"
        info.update(self.git.branch_info())
        return info


def _check_query(query: RecordQuery) -> None:
    from .record import KINDS, has_undecodable, validate_scope

    if query.status not in ("active", "archived", "superseded", "all"):
        raise InvalidInput(
            f"status: must be active, archived, superseded or all; got {query.status!r}",
            code="invalid_field",
        )
    for kind in query.kinds:
        if kind not in KINDS:
            raise InvalidInput(
                f"kind: must be one of {', '.join(KINDS)}; got {kind!r}", code="invalid_field"
            )
    for scope in query.scopes:
        if scope.endswith("*"):
            if len(scope) > 200 or not scope.isprintable() or any(c.isspace() for c in scope):
                raise InvalidInput(f"scope: invalid scope pattern {scope!r}", code="invalid_field")
        else:
            try:
                validate_scope(scope)
            except ValidationError as err:
                message = err.message
                if scope.isascii() and all(c.isalnum() or c in "_.-" for c in scope):
                    # A bare namespace ('user') is what someone means by every user's records.
                    message += f"; did you mean --scope '{scope}:*'?"
                raise InvalidInput(message, code="invalid_field") from None
    for name in ("min_priority", "min_urgency"):
        value = getattr(query, name)
        if value is not None:
            validate_priority(value, name)
    if query.text is not None and has_undecodable(query.text):
        # Whoosh would fail encoding the terms, deep in a search, as if the index were damaged.
        raise InvalidInput(
            "query: is not valid Unicode text (undecodable bytes?)", code="invalid_query"
        )
    if query.cites is not None:
        from .source import check_source_id

        if len(query.cites) == 16:
            check_source_id(query.cites, "cites")


def _writable(root: str, state_dir: str) -> bool:
    """Whether this process can write the store's ``.lantern/`` (or, before there is one,
    the store's folder, to create it)."""
    return os.access(state_dir if os.path.isdir(state_dir) else root, os.W_OK | os.X_OK)


def _writable_git(root: str) -> bool:
    """Whether this process can write the store's git directory (a linked worktree's ``.git``
    file is left to git to judge)."""
    git_dir = os.path.join(root, ".git")
    return not os.path.isdir(git_dir) or os.access(git_dir, os.W_OK | os.X_OK)


def _ref_list(refs: Iterable[str], name: str = "source_refs") -> tuple[str, ...]:
    # tuple("session:1") would silently store one reference per character.
    if isinstance(refs, (str, bytes)):
        raise InvalidInput(
            f"{name}: must be a list of strings, not a single string", code="invalid_field"
        )
    return tuple(refs)


def _first_line(content: str, width: int = 60) -> str:
    line = " ".join(content.split())
    return line if len(line) <= width else line[: width - 3] + "..."


def _summary(op: str, record: Record) -> str:
    return f"{op} {record.id}: {_first_line(record.content)}"


def _read_worktree(root: str, name: str) -> bytes | None:
    try:
        with open(os.path.join(root, name), "rb") as handle:
            return handle.read()
    except FileNotFoundError:
        return None
