"""The workspace: what the memory and the evidence halves of a store both stand on.

One :class:`Workspace` owns a store's folder and everything derived from it: where it is and whether
this process may write it, ``lantern.yaml``'s settings, the git repository, the writer lock, the
record and chunk indexes and their vectors, and the one write path (:meth:`Workspace.transaction`).
The records (:class:`~lantern_git.memory.records.Records`) and the evidence
(:class:`~lantern_git.evidence.sources.Sources`) each take it; neither holds the other. What the
records need of the evidence, pinning and resolving what they cite, is handed to them as
:class:`Citations` by the :class:`~lantern_git.store.Store`, which wires the halves together.

Opening one is cheap: git (pygit2), the indexes (Whoosh) and the embedder (numpy) are opened
on first use.
"""

from __future__ import annotations

import builtins
import contextlib
import os
import sys
import threading
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ParamSpec, Protocol, TypeVar

from ..core.config import StoreSettings, environment
from ..errors import NeedsMigration, NoStore, ReadOnlyStore, StoreError, UnsupportedFormat
from ..model.record_file import MERGE_PATTERN, RECORD_FILES
from .lock import WriterLock
from .migrations import FORMAT, MARKER, attribute_lines, parse_marker

if TYPE_CHECKING:
    from ..core.written import Written
    from ..git.identity import Identity
    from ..git.repo import GitRepo
    from ..index.chunks import ChunkIndex
    from ..index.entities import EntityIndex
    from ..index.search import Progress, RefreshReport, SearchIndex
    from ..index.vectors import Vectors
    from .migrations import Plan
    from .transaction import WriteTransaction

P = ParamSpec("P")
T = TypeVar("T")

# The newest store format this lantern knows (workspace/migrations.py); new stores get it.
FORMAT_VERSION = FORMAT
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


class Citations(Protocol):
    """What the records need of the evidence half (:class:`~lantern_git.evidence.sources.Sources`),
    handed to them by the Store, so that neither half imports the other."""

    def pin(self, refs: Iterable[str], tx: WriteTransaction) -> tuple[str, ...]:
        """``refs`` with each ``source:`` reference checked and pinned to the version ``tx``
        (the write about to record them) sees; other references as given."""
        ...

    def resolve(self, ref: str, tx: WriteTransaction | None = None) -> str:
        """The source id an id, a unique id prefix or a ``source:`` reference names."""
        ...


class Workspace:
    """A store's folder, its repository, lock, indexes and write path (see the module's
    docstring). Raises :class:`~lantern_git.errors.NoStore` for a folder that is not a store
    unless ``create_on_write``: then the first write creates it."""

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
        read_only: bool = False,
    ):
        self.root = os.path.abspath(root)
        # Learn of changes from file-system notifications (a long-running process): see
        # lantern_git.index.watch. Started with the index, stopped by close().
        self.watch = watch
        # Given (total, what), a progress display for a long index job (see SearchIndex.progress)
        self.progress: Callable[[int, str], Progress] | None = None
        # False: a write leaves the record files it wrote to the next read's freshness check
        # (their ctime is past the index's stamp) instead of indexing them itself. A CLI
        # process exits after its write; indexing there costs Whoosh's import and a commit that
        # the next command, which checks anyway, does as well with one file more.
        self.index_on_write = True
        # An embedding another thread runs for this store (lantern mcp): see keyword_for_now
        self.embedding: BackgroundEmbedding | None = None
        self.state_dir = os.path.join(self.root, STATE_DIR)
        self.actor = actor
        self.author = author
        self.create_on_write = create_on_write
        self.warn = warn or (lambda message: print(message, file=sys.stderr))
        # The transactions each running :meth:`written` call has seen finish, innermost last.
        self._watching: builtins.list[builtins.list[WriteTransaction]] = []
        self._review = review
        self._review_name = review_name
        # lantern.yaml's keys, once the store is opened (None: no store yet, every default).
        self.settings: StoreSettings | None = None
        self._vectors: dict[str, Vectors] = {}
        # Set when opening the store registered the record merge driver (a fresh clone).
        self.registered_merge_driver = False
        self._git: GitRepo | None = None
        self._index: SearchIndex | None = None
        self._chunks: ChunkIndex | None = None
        self._entity_index: EntityIndex | None = None
        if os.path.exists(self.root) and not os.path.isdir(self.root):
            raise NoStore(
                f"{self.root} is a file, not a folder; a store is a folder (give the folder of "
                "a store, or a new folder for lantern init)"
            )
        # Where derived state goes: .lantern/, or for a store this process cannot write, a
        # temporary folder removed when the store is closed or the process ends.
        # ``read_only`` asks for it (``lantern serve --read-only``): the files, the refs and
        # git's config are never written, crash recovery included; only derived state may be.
        self.read_only_asked = read_only
        self.read_only = self.exists and (
            read_only or not (_writable(self.root, self.state_dir) and _writable_git(self.root))
        )
        self.derived_dir = self.state_dir
        if self.read_only and not _writable(self.root, self.state_dir):
            import shutil
            import tempfile
            import weakref

            self.derived_dir = tempfile.mkdtemp(prefix="lantern-read-only-")
            self._cleanup = weakref.finalize(self, shutil.rmtree, self.derived_dir, True)
        # The writer lock (re-entrant per thread): every write, and every repair, holds it.
        self.lock = WriterLock(os.path.join(self.derived_dir, "lock"))
        if self.exists:
            self._check_format()
            if not self.read_only:
                self._register_merge_driver()
        elif not create_on_write:
            raise NoStore(
                f"{self.root} is not a lantern store (no {MARKER}); "
                f"create one with: lantern init {self.root}"
            )

    @property
    def exists(self) -> bool:
        return os.path.isfile(os.path.join(self.root, MARKER)) and os.path.exists(
            os.path.join(self.root, ".git")
        )

    def _check_format(self) -> None:
        path = os.path.join(self.root, MARKER)
        try:
            with open(path, "rb") as handle:
                data, version = parse_marker(handle.read(), path)
        except OSError as err:
            raise StoreError(f"{path}: cannot be read: {err}") from None
        if version > FORMAT_VERSION:
            raise UnsupportedFormat(
                f"{self.root} uses store format {version}, but this lantern knows formats up to "
                f"{FORMAT_VERSION}; upgrade lantern-git to use it (nothing was read or written)"
            )
        self.settings = StoreSettings.parse(data, path, version)

    @property
    def format(self) -> int:
        """The store's format (``lantern.yaml``); a store not made yet gets the newest."""
        return self.settings.format if self.settings is not None else FORMAT_VERSION

    def require_format(self, version: int, what: str) -> None:
        """Refuse (:class:`NeedsMigration`) ``what``, a write that needs format ``version``, in
        an older store: before anything is written, naming the command that migrates it."""
        if self.exists and self.format < version:
            raise NeedsMigration(
                f"{what} needs store format {version}, and {self.root} is format {self.format}: "
                "run lantern migrate (lantern migrate --dry-run shows what it changes), then "
                "try again; nothing was written"
            )

    @property
    def review_ref(self) -> str | None:
        """The review branch this store's writes go to (docs/review.md), or
        None when review is off: ``Store(review=...)``, else ``LANTERN_REVIEW``, else
        ``review: true`` in ``lantern.yaml``. Its name: ``Store(review_name=...)``, else
        ``LANTERN_REVIEW_NAME``, else the actor."""
        from ..model.review_refs import review_enabled, review_name, review_ref

        if not review_enabled(self._review, self.settings):
            return None
        return review_ref(review_name(self._review_name, self.actor))

    @property
    def reviewer(self) -> tuple[str, str]:
        """Who accepts: (actor, review name), compared with a change's writer."""
        from ..model.review_refs import review_name

        return self.actor, review_name(self._review_name, self.actor)

    def _register_merge_driver(self) -> None:
        """A plain ``git clone`` of a store lacks the merge driver its ``.gitattributes`` names
        (git config is not cloned), so the next plain ``git pull`` would write conflict markers
        into record files: register it when missing. Read as text first, so the usual case
        costs two small reads and no pygit2 import."""
        from ..git.config import attributes_line, routes_to_driver

        if not routes_to_driver(self.root, attributes_line(MERGE_PATTERN)):
            return
        try:
            with open(os.path.join(self.root, ".git", "config"), "rb") as handle:
                if b'[merge "lantern"]' in handle.read():
                    return
        except OSError:
            pass  # .git is a file (a linked worktree): ask git itself
        from ..git.config import driver_registered, ensure_merge_driver, ensure_pull_strategy

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
            from ..git.repo import GitRepo

            self._git = GitRepo(self.root)
        return self._git

    @property
    def index(self) -> SearchIndex:
        """The search index (opened on first use: Whoosh is imported only then)."""
        if self._index is None:
            from ..index.search import SearchIndex

            self._index = SearchIndex(self.root, self.derived_dir, self.locked)
            self._index.progress = self.progress
            if self.watch and self.exists:
                self._index.watch()
        return self._index

    @property
    def chunks(self) -> ChunkIndex:
        """The index of source chunks (opened on first use, like :attr:`index`)."""
        if self._chunks is None:
            from ..index.chunks import ChunkIndex

            self._chunks = ChunkIndex(self.root, self.derived_dir, self.locked)
        return self._chunks

    @property
    def entity_index(self) -> EntityIndex:
        """The entity index: the entity files and the chunks holding each entity (opened on
        first use; it keeps itself in step with the entity files and the chunk index)."""
        if self._entity_index is None:
            from ..index.entities import EntityIndex

            self._entity_index = EntityIndex(
                self.root, self.derived_dir, self.locked, lambda: self.chunks
            )
        return self._entity_index

    def close(self) -> None:
        if self._index is not None:
            self._index.stop_watching()
            self._index.close()
        if self._chunks is not None:
            self._chunks.close()
        if self._entity_index is not None:
            self._entity_index.close()
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
        from ..git.config import ensure_merge_driver, ensure_pull_strategy, with_lines

        # Git config is not cloned: every init (and sync) makes sure the record merge driver
        # that .gitattributes names is registered here, and that a bare git pull of diverged
        # branches merges rather than asks (unless the user chose a pull strategy).
        registered = ensure_merge_driver(git.repo, self.warn) or self.registered_merge_driver
        ensure_pull_strategy(git.repo, self.warn)
        # The transaction repairs an interrupted write first: this commit would overwrite its
        # journal.
        with self.transaction(require_head=False, review=False) as tx:
            head_tree = git.head_tree()
            # An existing store keeps its format (lantern migrate changes it, on purpose).
            version = self.format if self.exists else FORMAT_VERSION
            files: dict[str, bytes] = {}
            keep: dict[str, bytes] = {}
            wanted: dict[str, tuple[tuple[str, ...], str | None]] = {
                MARKER: ((), f"format: {version}\n"),
                ".gitignore": ((GITIGNORE_LINE,), None),
                ".gitattributes": (attribute_lines(version), None),
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
        with self.lock:
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
            recover(self.git, self.state_dir, self.lock, self.warn)
            # The repaired write may have been a migration: lantern.yaml is the old or the new.
            self._check_format()

    @property
    def recovery_pending(self) -> bool:
        """Whether a cut-off write waits for its repair: only in a read-only store, which
        leaves it for a process that can write (every other read repairs it first)."""
        from .transaction import interrupted

        return self.exists and interrupted(self.state_dir)

    def refuse_if_read_only(self) -> None:
        """Raise :class:`ReadOnlyStore` before a write to a store this process cannot write."""
        if self.read_only and self.read_only_asked:
            raise ReadOnlyStore(
                f"{self.root} was opened read-only: nothing was written; list, search, show "
                "and status still work"
            )
        if self.read_only:
            raise ReadOnlyStore(
                f"{self.root} is read-only for this user (a mounted backup, or another user's "
                "store?): nothing was written; list, search, show and status still work"
            )

    @contextlib.contextmanager
    def transaction(
        self, *, require_head: bool = True, review: bool = True, branch: str | None = None
    ) -> Iterator[WriteTransaction]:
        """The one write path: see :mod:`lantern_git.workspace.transaction`. The default store is
        created by its first write. With review on (:attr:`review_ref`), its commits go to the
        review branch; ``review=False`` is for what moves the store's branch itself (init,
        sync, accept), never a writer's content; ``branch`` sends them to that review branch
        (a reject)."""
        from ..model.source_file import SOURCE_FILES
        from .transaction import write_transaction

        self.refuse_if_read_only()
        self.recover()
        review_ref = branch or (self.review_ref if review else None)
        if not self.exists and require_head:
            if not self.create_on_write:
                raise NoStore(f"{self.root} is not a lantern store")
            self.initialize()
        with write_transaction(
            self.root,
            self.state_dir,
            self.git,
            self.lock,
            lambda: self.index if self.index_on_write else _LeftToTheNextRead(self),
            records=RECORD_FILES,
            sources=SOURCE_FILES,
            actor=self.actor,
            author=self.author,
            warn=self.warn,
            require_head=require_head,
            chunks=lambda: self.chunks,
            review_ref=review_ref,
        ) as tx:
            try:
                yield tx
            finally:
                for seen in self._watching:
                    seen.append(tx)

    def written(self, write: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs) -> Written[T]:
        """Run one write of this store (``store.written(store.add, "text", kind="fact")``) and
        return what happened: its value, the last commit it made (None: it changed nothing) and
        whether its commits await review. The CLI and the MCP server learn of every write this
        way; the write methods themselves return only their value.

        Each call sees only the transactions opened during it, so calls may nest."""
        from ..core.written import Written

        seen: builtins.list[WriteTransaction] = []
        self._watching.append(seen)
        try:
            value = write(*args, **kwargs)
        finally:
            self._watching.pop()  # calls nest, so the innermost ends first
        commits = [commit for tx in seen for commit in tx.commits]
        pending = any(tx.pending_review for tx in seen)
        return Written(value, commits[-1] if commits else None, pending)

    def identity(self) -> Identity:
        """The author and committer this store's next commit names (``--author``, then
        ``LANTERN_AUTHOR``, then git's identity as git reads it; see git/identity.py)."""
        from ..git.identity import resolve_identity

        repo = self.git.repo if self.exists else None
        return resolve_identity(repo, self.author, self.warn)

    # ------------------------------------------------------------------ the store's format

    def migrate(self, *, dry_run: bool = False) -> MigrationReport:
        """Bring the store to the newest format in one commit (``Lantern-Op: migrate``,
        ``Lantern-Format: 1 -> 2``): the pending steps of :data:`.migrations.MIGRATIONS`,
        applied to the committed files. ``dry_run``: the same answer, nothing written. A
        store at the newest format is left alone (no commit). Uncommitted changes are refused
        first (a migration must not sweep a hand edit into its commit). The commit is one
        journaled write: killed anywhere, the store is at the old format or the new."""
        from ..model.record_file import MEMORY_DIR
        from ..model.source import SOURCES_DIR
        from .migrations import MIGRATIONS
        from .transaction import refuse_uncommitted

        lantern_data = (MEMORY_DIR + "/", SOURCES_DIR + "/", "entities/")
        with self.transaction(review=False) as tx:
            refuse_uncommitted(
                tx.git,
                counts_untracked=lambda path: path.startswith(lantern_data) or path == MARKER,
            )
            head = tx.git.head_tree()
            marker = tx.git.blob_at(head, MARKER)
            if marker is None:
                raise StoreError(f"{self.root}: {MARKER} is not committed; run lantern init")
            _, current = parse_marker(marker, MARKER)
            if current > FORMAT_VERSION:
                raise UnsupportedFormat(
                    f"{self.root} uses store format {current}, but this lantern knows formats "
                    f"up to {FORMAT_VERSION}; upgrade lantern-git to use it"
                )
            plan = MIGRATIONS.plan(lambda path: tx.git.blob_at(head, path), current)
            report = MigrationReport(plan, dry_run=dry_run)
            if dry_run or not plan.steps:
                return report
            report.commit = tx.commit(
                dict(plan.files),
                f"migrate store format {plan.start} -> {plan.target}",
                "migrate",
                (),
                extra_trailers=[plan.trailer],
            )
        self._check_format()
        return report

    # ------------------------------------------------------------------ the derived indexes

    def refresh(self, meanwhile: Callable[[], object] | None = None) -> RefreshReport:
        """Bring the search index in step with the files; warns about files it skipped."""
        self.recover()
        report = self.index.refresh(meanwhile)
        for problem in report.broken.values():
            self.warn(f"warning: skipped {problem}")
        return report

    @property
    def embedder_name(self) -> str:
        """The embedder this store uses: ``LANTERN_EMBEDDER``, else ``embedder:`` in
        ``lantern.yaml``, else wordllama (see :mod:`lantern_git.index.embedders`)."""
        from ..index.embedders import chosen_name

        return chosen_name(self.settings)

    @property
    def semantic_available(self) -> bool:
        """Whether semantic and hybrid search can run (decides the default search mode),
        found without importing numpy or the embedder."""
        from ..index.embedders import available

        return available(self.embedder_name)

    def search_mode(self, mode: str | None, texts: str) -> str:
        """The mode a search of ``texts`` (``"records"`` or ``"chunks"``) runs in: ``mode`` as
        given, or for None hybrid when an embedder is available and keyword otherwise. Semantic
        and hybrid load the vectors first, so that without an embedder they are refused
        (:class:`~lantern_git.errors.SemanticUnavailable`) before anything is read."""
        if mode is None:
            return "hybrid" if self.semantic_available else "keyword"
        if mode != "keyword":
            self._vectors_of(texts)
        return mode

    def record_vectors(self) -> Vectors:
        """The records' vectors under this store's embedder (loaded on first use); raises
        :class:`~lantern_git.errors.SemanticUnavailable` without one."""
        return self._vectors_of("records")

    def chunk_vectors(self) -> Vectors:
        """The source chunks' vectors, as :meth:`record_vectors`."""
        return self._vectors_of("chunks")

    def _vectors_of(self, name: str) -> Vectors:
        if name not in self._vectors:
            from ..index.embedders import load_embedder

            # First: without an embedder this raises before numpy is imported.
            embedder = load_embedder(self.embedder_name)
            from ..index.vectors import RecordTexts, Vectors

            texts = RecordTexts(self.index) if name == "records" else self.chunks
            self._vectors[name] = Vectors(self.derived_dir, name, texts, embedder, self.locked)
        # The front end's progress display, as it is now (the CLI sets it after opening)
        self._vectors[name].progress = self.progress
        return self._vectors[name]

    def rebuild_index(self) -> RefreshReport:
        """Build the search index from scratch from the record files, the chunk index from
        the sources, the entity index from the entity files and the chunks, and with an
        embedder the records' vectors."""
        self.recover()
        report = self.index.rebuild()
        chunks = self.chunks.rebuild()
        self.entity_index.rebuild()
        if self.semantic_available:
            self.record_vectors().rebuild()
            self.chunk_vectors().rebuild()
        for problem in [*report.broken.values(), *chunks.broken.values()]:
            self.warn(f"warning: skipped {problem}")
        return report

    def embed(self) -> dict[str, Any]:
        """Bring the records' and source chunks' vectors in step with the files now, embedding
        what is new (``lantern index embed``): what a first semantic search would otherwise
        do. Large jobs go in batches, each kept as it is made, so a killed run resumes where
        it stopped. Raises :class:`~lantern_git.errors.SemanticUnavailable` without an
        embedder. Returns the embedder's name and how many texts each part embedded."""
        records, chunks = self.record_vectors(), self.chunk_vectors()
        self.refresh()
        self.chunks.refresh()
        done: dict[str, Any] = {"embedder": self.embedder_name}
        for name, vectors in (("records", records), ("chunks", chunks)):
            vectors.current()
            done[name] = vectors.embedded
        return done

    def embed_ahead(self, state: BackgroundEmbedding) -> None:
        """Embed what is new in a thread of a long-running process (``lantern mcp``), holding
        the writer lock only to keep each batch, and report on ``state``: how much there is
        (``sized``), how far it is, and when it is over (``ready``, also after an error)."""
        try:
            records, chunks = self.record_vectors(), self.chunk_vectors()
            self.refresh()
            self.chunks.refresh()
            state.pending = records.pending() + chunks.pending()
            state.sized.set()
            for vectors in (records, chunks):
                vectors.progress = state.progress
                vectors.embed_ahead()
        except Exception as err:  # reported; the searches' own catch-up takes over
            state.error = f"{type(err).__name__}: {err}"
            self.warn(f"warning: embedding in the background failed: {state.error}")
        finally:
            state.sized.set()
            state.ready.set()

    def keyword_for_now(self, mode: str | None) -> str | None:
        """Why a search in ``mode`` (None: the default) answers by keyword for now, or None:
        while another thread embeds many new texts (more than one batch), a semantic or hybrid
        search would wait for it, so it answers by keyword and says so. Waits a few seconds at
        most for that thread to know how much there is."""
        state = self.embedding
        if state is None or mode == "keyword" or state.ready.is_set():
            return None
        state.sized.wait(SIZING_WAIT)
        if state.ready.is_set() or state.pending <= RESUMABLE_BATCH:
            return None
        return (
            f"the vectors are being embedded in the background ({state.done} of "
            f"{state.pending} texts): keyword search until they are ready"
        )

    # ------------------------------------------------------------------ status

    def status(self) -> dict[str, Any]:
        info: dict[str, Any] = {
            "path": self.root,
            "exists": self.exists,
            "read_only": self.read_only,
            "format": self.format if self.exists else None,
            "records": 0,
            "by_status": {},
            "by_kind": {},
            "broken_files": 0,
            "sources": 0,
            "chunks": 0,
            "index": None,
            "embedder": None,
            "search_mode": "keyword",
            "floors": None,
            "branch": None,
            "head": None,
            "upstream": None,
            "ahead": None,
            "behind": None,
        }
        if not self.exists:
            return info
        report = self.refresh()
        info["format"] = self.format  # after the repair of an interrupted write (a migrate)
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
            from ..index import ranking

            info["embedder"], info["search_mode"] = self.embedder_name, "hybrid"
            # The embedder's calibrated similarity floors; None: not calibrated, no floor
            if ranking.calibrated(self.embedder_name):
                found = ranking.floors(self.embedder_name)
                info["floors"] = {"floor": found.floor, "alone": found.alone}
                if found.noise is not None:  # the lower of alone and the query's noise level + it
                    info["floors"]["noise"] = found.noise
                    # Over the mean of the query's and each record's levels: a floor per record
                    info["floors"]["centred"] = found.centred
                if found.words is not None:  # a word pair holds the nearest record to ``floor``
                    info["floors"]["words"] = found.words
        info.update(self.git.branch_info())
        return info


# How long a search waits for a background embedding to count what it has to embed
SIZING_WAIT = 10.0
# An embedding of more texts than this makes a search answer by keyword meanwhile (one batch:
# index/vectors.py's RESUMABLE_BATCH, repeated here so that a search never imports numpy)
RESUMABLE_BATCH = 256


@dataclass
class BackgroundEmbedding:
    """An embedding that a thread runs (:meth:`Workspace.embed_ahead`), as the searches of
    the same store see it."""

    sized: threading.Event = field(default_factory=threading.Event)
    ready: threading.Event = field(default_factory=threading.Event)
    pending: int = 0
    done: int = 0
    error: str | None = None

    def progress(self, total: int, what: str) -> _Counted:
        return _Counted(self)


class _Counted:
    """A Progress that counts into a :class:`BackgroundEmbedding`."""

    def __init__(self, state: BackgroundEmbedding):
        self.state = state

    def update(self, count: int) -> None:
        self.state.done += count

    def finish(self) -> None:
        pass


@dataclass
class MigrationReport:
    """What ``lantern migrate`` did, or with ``dry_run`` would do."""

    plan: Plan
    dry_run: bool = False
    commit: str | None = None

    def to_dict(self) -> dict[str, Any]:
        plan = self.plan
        return {
            "from": plan.start,
            "to": plan.target,
            "up_to_date": not plan.steps,
            "dry_run": self.dry_run,
            "steps": [step.to_dict() for step in plan.steps],
            "files": sorted(plan.files),
            "commit": self.commit,
        }


def _writable(root: str, state_dir: str) -> bool:
    """Whether this process can write the store's ``.lantern/`` (or, before there is one,
    the store's folder, to create it)."""
    return os.access(state_dir if os.path.isdir(state_dir) else root, os.W_OK | os.X_OK)


def _writable_git(root: str) -> bool:
    """Whether this process can write the store's git directory (a linked worktree's ``.git``
    file is left to git to judge)."""
    git_dir = os.path.join(root, ".git")
    return not os.path.isdir(git_dir) or os.access(git_dir, os.W_OK | os.X_OK)


def _read_worktree(root: str, name: str) -> bytes | None:
    try:
        with open(os.path.join(root, name), "rb") as handle:
            return handle.read()
    except FileNotFoundError:
        return None


class _LeftToTheNextRead:
    """What a write tells the index where it leaves its record files to the next read
    (``Workspace.index_on_write``): nothing, unless it asks for a whole rebuild."""

    def __init__(self, workspace: Workspace) -> None:
        self._workspace = workspace

    def note_written(self, paths: Iterable[str]) -> None:
        pass

    def rebuild(self) -> object:
        return self._workspace.index.rebuild()
