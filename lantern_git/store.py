"""The Store: the library API that the CLI and the MCP server are thin layers over.

A store is a git repository holding ``lantern.yaml``, ``memory/<aa>/<id>.md`` record files, and a
local ``.lantern/`` folder of derived state (search index, lock, write journal). The files are
the truth; every write is one git commit carrying provenance trailers.

The Store is a front over three parts it creates and wires together: the
:class:`~lantern_git.workspace.workspace.Workspace` (the folder, git, the lock, the indexes, the
write path), the records (:class:`~lantern_git.memory.records.Records`, the memory half) and the
sources (:class:`~lantern_git.evidence.sources.Sources`, the evidence half, ``store.sources``). The
halves each take the workspace and never each other: the Store hands the records the sources'
pinning and resolving (as :class:`~lantern_git.workspace.workspace.Citations`), and the sources'
verify the records it checks. Review and sync, which span both halves, are the Store's own.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Concatenate, Generic, ParamSpec, TypeVar, overload

from .errors import InvalidInput, NoStore
from .memory.records import Records
from .model.record_file import count_records
from .workspace.workspace import MARKER, Workspace, locate_store

if TYPE_CHECKING:
    from .core.config import StoreSettings
    from .entities.entities import Entities
    from .evidence.sources import Sources
    from .git.repo import GitRepo
    from .index.chunks import ChunkIndex
    from .index.search import Progress, SearchIndex
    from .model.record import Record
    from .review import ReviewDecision, ReviewList
    from .sync import SyncReport
    from .workspace.lock import WriterLock

P = ParamSpec("P")
T = TypeVar("T")


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


def _forwarded(
    part: str, method: Callable[Concatenate[Any, P], T]
) -> Callable[Concatenate[Store, P], T]:
    """``method`` of one of the Store's parts (``"records"``, ``"workspace"``) as a method of
    the Store itself, with its name, docstring and signature: ``store.add(...)`` is
    ``store.records.add(...)``."""

    @functools.wraps(method)
    def forward(self: Store, /, *args: P.args, **kwargs: P.kwargs) -> T:
        return method(getattr(self, part), *args, **kwargs)

    return forward


class _Shared(Generic[T]):
    """An attribute of the Store's workspace, read through the Store: ``store.root`` is
    ``store.workspace.root``. Settable only where the workspace's is meant to be replaced."""

    def __init__(self, doc: str | None = None, *, settable: bool = False) -> None:
        self.__doc__ = doc
        self.settable = settable

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    @overload
    def __get__(self, store: None, owner: type) -> _Shared[T]: ...

    @overload
    def __get__(self, store: Store, owner: type | None = None) -> T: ...

    def __get__(self, store: Store | None, owner: type | None = None) -> T | _Shared[T]:
        if store is None:
            return self
        value: T = getattr(store.workspace, self.name)
        return value

    def __set__(self, store: Store, value: T) -> None:
        if not self.settable:
            raise AttributeError(f"the store's {self.name} cannot be set")
        setattr(store.workspace, self.name, value)


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
        self.workspace = Workspace(
            root,
            actor=actor,
            author=author,
            create_on_write=create_on_write,
            warn=warn,
            watch=watch,
            review=review,
            review_name=review_name,
        )
        self.records = Records(self.workspace, lambda: self.sources, self._pending_versions)
        self._sources: Sources | None = None
        self._entities: Entities | None = None
        # Set by :meth:`clone`: what the clone set up.
        self.cloned: CloneResult | None = None

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
    def sources(self) -> Sources:
        """The store's evidence: ingest, append, show, search, remove sources; pin and verify
        the references records make to them (:class:`~lantern_git.evidence.sources.Sources`)."""
        if self._sources is None:
            from .evidence.sources import Sources

            self._sources = Sources(self.workspace, _EveryRecord(self.records))
        return self._sources

    @property
    def entities(self) -> Entities:
        """The store's entities: add, update, rename, list, show
        (:class:`~lantern_git.entities.entities.Entities`); a rename rewrites the records that
        name the old key through :class:`~lantern_git.memory.mentions.RecordMentions`."""
        if self._entities is None:
            from .entities.entities import Entities
            from .memory.mentions import RecordMentions

            self._entities = Entities(self.workspace, RecordMentions())
        return self._entities

    def _pending_versions(self) -> Mapping[str, Record | None]:
        """What the records read with ``include_pending``: every record a review branch
        changes, as it would be once accepted (None: removed there)."""
        from .review import pending_versions

        return pending_versions(self.review_list())

    # ------------------------------------------------------------------ the workspace

    root: _Shared[str] = _Shared()
    state_dir: _Shared[str] = _Shared()
    derived_dir: _Shared[str] = _Shared(
        "Where the indexes live: ``.lantern/``, or a temporary folder for a read-only store."
    )
    read_only: _Shared[bool] = _Shared()
    exists: _Shared[bool] = _Shared()
    settings: _Shared[StoreSettings | None] = _Shared(
        "``lantern.yaml``'s keys (None: no store yet, every default)."
    )
    actor: _Shared[str] = _Shared()
    author: _Shared[str | None] = _Shared()
    create_on_write: _Shared[bool] = _Shared()
    watch: _Shared[bool] = _Shared()
    warn: _Shared[Callable[[str], None]] = _Shared(
        "Where warnings go (stderr unless ``warn=`` says otherwise); it may be replaced.",
        settable=True,
    )
    registered_merge_driver: _Shared[bool] = _Shared(
        "Whether opening the store registered the record merge driver (a fresh clone)."
    )
    progress: _Shared[Callable[[int, str], Progress] | None] = _Shared(
        "Given (total, what), a progress display for a long index job (set it before the "
        "first read: the index takes it when it opens).",
        settable=True,
    )
    git: _Shared[GitRepo] = _Shared(
        "The store's repository (opened on first use: pygit2 is imported then)."
    )
    index: _Shared[SearchIndex] = _Shared(
        "The search index (opened on first use: Whoosh is imported then)."
    )
    chunks: _Shared[ChunkIndex] = _Shared(
        "The index of source chunks (opened on first use, like ``index``)."
    )
    review_ref: _Shared[str | None] = _Shared(
        "The review branch this store's writes go to, or None when review is off (see "
        ":attr:`Workspace.review_ref <lantern_git.workspace.workspace.Workspace.review_ref>`)."
    )
    reviewer: _Shared[tuple[str, str]] = _Shared(
        "Who accepts: (actor, review name), compared with a change's writer."
    )
    embedder_name: _Shared[str] = _Shared(
        "The embedder this store uses (see :mod:`lantern_git.index.embedders`)."
    )
    semantic_available: _Shared[bool] = _Shared(
        "Whether semantic and hybrid search can run (decides the default search mode)."
    )

    # The workspace's lock and record index under the names the Store once held them by, for
    # the tests that look inside (the lock's timeout, the index's segments).
    @property
    def _lock(self) -> WriterLock:
        return self.workspace.lock

    @property
    def _index(self) -> SearchIndex:
        return self.workspace.index

    close = _forwarded("workspace", Workspace.close)
    initialize = _forwarded("workspace", Workspace.initialize)
    locked = _forwarded("workspace", Workspace.locked)
    recover = _forwarded("workspace", Workspace.recover)
    refuse_if_read_only = _forwarded("workspace", Workspace.refuse_if_read_only)
    transaction = _forwarded("workspace", Workspace.transaction)
    written = _forwarded("workspace", Workspace.written)
    identity = _forwarded("workspace", Workspace.identity)
    refresh = _forwarded("workspace", Workspace.refresh)
    record_vectors = _forwarded("workspace", Workspace.record_vectors)
    chunk_vectors = _forwarded("workspace", Workspace.chunk_vectors)
    rebuild_index = _forwarded("workspace", Workspace.rebuild_index)
    status = _forwarded("workspace", Workspace.status)

    # ------------------------------------------------------------------ the records

    resolve_id = _forwarded("records", Records.resolve_id)
    read = _forwarded("records", Records.read)
    get = _forwarded("records", Records.get)
    list = _forwarded("records", Records.list)
    count = _forwarded("records", Records.count)
    search = _forwarded("records", Records.search)
    similar = _forwarded("records", Records.similar)
    dupes = _forwarded("records", Records.dupes)
    add = _forwarded("records", Records.add)
    archive = _forwarded("records", Records.archive)
    restore = _forwarded("records", Records.restore)
    update = _forwarded("records", Records.update)
    supersede = _forwarded("records", Records.supersede)
    delete = _forwarded("records", Records.delete)
    revert = _forwarded("records", Records.revert)
    diff = _forwarded("records", Records.diff)
    ensure_committed = _forwarded("records", Records.ensure_committed)
    history = _forwarded("records", Records.history)
    record_history = _forwarded("records", Records.record_history)
    log = _forwarded("records", Records.log)
    check = _forwarded("records", Records.check)
    commit_hand_edits = _forwarded("records", Records.commit_hand_edits)
    begin_edit = _forwarded("records", Records.begin_edit)
    apply_edit = _forwarded("records", Records.apply_edit)
    export_records = _forwarded("records", Records.export_records)
    import_records = _forwarded("records", Records.import_records)
    import_source = _forwarded("records", Records.import_source)

    # ------------------------------------------------------------------ review

    def review_list(self, *, limit: int | None = None, offset: int = 0) -> ReviewList:
        """Every review branch's pending changes, record by record (docs/review.md): what each
        writer changed since its branch left the store's branch. ``limit`` and ``offset`` page
        the branches, by name (``limit`` 0 or None: all)."""
        from .core.paging import Page
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


class _EveryRecord:
    """Every record of a store, any status, expired or not, read afresh each time it is
    iterated: the records whose references ``store.sources.verify()`` checks."""

    def __init__(self, records: Records):
        self.records = records

    def __iter__(self) -> Iterator[Record]:
        from .model.query import RecordQuery

        return iter(self.records.list(RecordQuery(status="all", include_expired=True)))
