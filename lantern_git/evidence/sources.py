"""Evidence: ingest, append, remove, show and verify sources, and pin what records cite.

Everything here writes through the workspace's one write transaction
(:meth:`~lantern_git.workspace.workspace.Workspace.transaction`), so a source is committed,
journaled and recovered exactly as a record is. What a reference says is checked against git's
objects, not the working tree alone: a pinned reference names a blob, and that blob stays readable
after later versions and after the source is removed.

The evidence part stands on the workspace alone and knows nothing of the records: the Store hands
the records :meth:`Sources.pin` and :meth:`Sources.resolve` (as
:class:`~lantern_git.workspace.workspace.Citations`), and hands :meth:`Sources.verify` the records
whose references it checks.
"""

from __future__ import annotations

import builtins
import os
import time
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from ..core.paging import Page
from ..errors import InvalidInput, NotFound, StoreError, ValidationError
from ..model.source import (
    MAX_INGEST_BYTES,
    PIN_DIGITS,
    SourceManifest,
    SourceRef,
    body_path,
    check_body,
    check_kind,
    check_meta,
    check_size,
    check_source_id,
    check_text_field,
    compute_source_id,
    count_lines,
    encode_body,
    extension_for,
    is_source_ref,
    line_spans,
    manifest_path,
    media_type_for,
    source_dir,
)
from ..model.source_file import (
    SourceFile,
    describe,
    load_manifest,
    load_source,
    parse_manifest,
    read_manifest,
    source_ids,
)
from ..workspace.transaction import refuse_uncommitted

if TYPE_CHECKING:
    import pygit2

    from ..git.repo import GitRepo
    from ..index.chunks import ChunkHit
    from ..model.record import Record
    from ..workspace.transaction import WriteTransaction
    from ..workspace.workspace import Workspace


@dataclass(frozen=True)
class SourceInput:
    """One document to ingest: its bytes and what the caller says about it."""

    data: bytes
    name: str | None = None  # the file name it came from (its extension); None for stdin
    kind: str | None = None
    uri: str | None = None
    title: str | None = None
    meta: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class IngestResult:
    """What one ingest or append did to one source: ``added``, ``updated`` (a new version),
    ``appended`` (a new version that keeps every earlier line) or ``unchanged``."""

    manifest: SourceManifest
    status: str

    def to_dict(self) -> dict[str, Any]:
        return self.manifest.to_dict()


@dataclass(frozen=True)
class SourceView:
    """``source show``: a manifest, and for a reference with lines, the lines it names."""

    manifest: SourceManifest
    ref: str | None = None
    lines: tuple[int, int] | None = None
    text: str | None = None

    def to_dict(self) -> dict[str, Any]:
        data = self.manifest.to_dict()
        if self.lines is not None:
            data["ref"] = self.ref
            data["lines"] = list(self.lines)
            data["text"] = self.text
        return data


@dataclass(frozen=True)
class RefCheck:
    """What verify found for one reference of one record."""

    record_id: str
    ref: str
    problem: str
    detail: str
    moved_to: tuple[int, int] | None = None
    lines: tuple[int, int] | None = None
    text: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "record_id": self.record_id,
            "ref": self.ref,
            "problem": self.problem,
            "detail": self.detail,
            "moved_to": list(self.moved_to) if self.moved_to else None,
        }

    def evidence(self) -> dict[str, Any]:
        return {
            "ref": self.ref,
            "problem": None if self.problem == "ok" else self.problem,
            "lines": list(self.lines) if self.lines else None,
            "text": self.text,
        }


@dataclass
class VerifyReport:
    checked: int = 0
    problems: list[RefCheck] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems

    def to_dict(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "checked": self.checked,
            "problems": [p.to_dict() for p in self.problems],
        }


def blob_id(data: bytes) -> str:
    """Git's id for a blob of ``data`` (what the body's file is in a commit)."""
    import pygit2

    return str(pygit2.hash(data))


class Sources:
    """The evidence of one store: ``store.sources``. ``records``: the records whose references
    :meth:`verify` checks when it is handed none, read when it runs (the Store hands it every
    record of the store)."""

    def __init__(self, workspace: Workspace, records: Iterable[Record] = ()):
        self.workspace = workspace
        self.records = records
        self._versions: dict[str, dict[str, str]] = {}
        self._head: str | None = None

    @property
    def root(self) -> str:
        return self.workspace.root

    # ------------------------------------------------------------------ writing

    def add(
        self,
        inputs: Sequence[SourceInput],
        *,
        reason: str | None = None,
        progress: Callable[[int], None] | None = None,
    ) -> list[IngestResult]:
        """Ingest documents in one commit: new sources, new versions of known ones (same
        uri), or nothing for a document already stored as it is."""
        if not inputs:
            raise InvalidInput("nothing to ingest: give one or more paths, or - for stdin")
        total = 0
        checked: list[tuple[SourceInput, str]] = []
        for item in inputs:
            label = item.name or "stdin"
            check_body(item.data, label)
            total += len(item.data)
            if total > MAX_INGEST_BYTES:
                raise ValidationError(
                    f"one ingest may write at most {MAX_INGEST_BYTES} bytes; split it",
                    field="body",
                    code="too_large",
                )
            uri = check_text_field("uri", item.uri, 4096)
            check_text_field("title", item.title)
            check_meta(item.meta)
            if item.kind is not None:
                check_kind(item.kind)
            checked.append((item, compute_source_id(uri, item.data)))
        seen: dict[str, str] = {}
        for item, source_id in checked:
            label = item.name or "stdin"
            if source_id in seen:
                raise InvalidInput(
                    f"{label} and {seen[source_id]} are the same source ({source_id}): one "
                    "ingest takes each uri (or, without one, each text) once"
                )
            seen[source_id] = label
        with self.workspace.transaction() as tx:
            now = int(time.time())
            files: dict[str, bytes | None] = {}
            results: list[IngestResult] = []
            for done, (item, source_id) in enumerate(checked, 1):
                result, written = self._version(tx, item, source_id, now)
                files.update(written)
                results.append(result)
                if progress is not None:
                    progress(done)
            changed = [r for r in results if r.status != "unchanged"]
            if changed:
                files.update(_route_sources_to_driver(tx))
                tx.commit(
                    files,
                    _ingest_summary("ingest", changed),
                    "ingest",
                    (),
                    reason=reason,
                    sources=[r.manifest.id for r in changed],
                )
        return results

    def _version(
        self, tx: WriteTransaction, item: SourceInput, source_id: str, now: int
    ) -> tuple[IngestResult, dict[str, bytes | None]]:
        current = self._committed(tx, source_id)
        facts = describe(item.data)
        if current is None:
            # Without a file name, the uri's (file:///notes/a.md is markdown).
            ext = extension_for(item.name or urlsplit(item.uri or "").path)
            manifest = SourceManifest(
                id=source_id,
                kind=item.kind or ("file" if item.name else "other"),
                uri=item.uri,
                title=item.title,
                media_type=media_type_for(ext),
                captured_at=now,
                updated_at=now,
                meta=dict(item.meta),
                **facts,  # type: ignore[arg-type]
            )
            return IngestResult(manifest, "added"), {
                body_path(source_id, ext): item.data,
                manifest_path(source_id): manifest.to_yaml(),
            }
        old = current.manifest
        changes: dict[str, Any] = {}
        if item.kind is not None and item.kind != old.kind:
            changes["kind"] = item.kind
        if item.title is not None and item.title != old.title:
            changes["title"] = item.title
        if item.meta and item.meta != old.meta:
            changes["meta"] = dict(item.meta)
        if current.body == item.data and not changes:
            return IngestResult(old, "unchanged"), {}
        status = "updated"
        if current.body != item.data:
            changes.update(facts)
            status = "appended" if item.data.startswith(current.body) else "updated"
        manifest = old.evolve(updated_at=max(now, old.updated_at), **changes)
        files: dict[str, bytes | None] = {manifest_path(source_id): manifest.to_yaml()}
        if current.body != item.data:
            files[current.body_path] = item.data
        return IngestResult(manifest, status), files

    def append(self, ref: str, text: str, *, reason: str | None = None) -> IngestResult:
        """Add ``text`` at the end of a source, on a new line: every earlier line keeps its
        number, so every reference to them still holds."""
        # One rule for every surface: text of nothing but whitespace is empty, as a record's
        # content is; appending it would commit blank lines and say nothing.
        if not isinstance(text, str) or not text.strip():
            raise InvalidInput(
                "nothing to append: the text is empty or only whitespace", code="invalid_input"
            )
        added = encode_body(text)
        with self.workspace.transaction() as tx:
            source_id = self.resolve(ref, tx)
            current = self._committed(tx, source_id)
            if current is None:
                raise NotFound(f"no source with id {source_id}")
            body = current.body
            if body and not body.endswith(b"\n"):
                body += b"\n"
            body += added  # both parts are text already: only the size can fail now
            check_size(body, current.body_path)
            manifest = current.manifest.evolve(
                updated_at=max(int(time.time()), current.manifest.updated_at), **describe(body)
            )
            tx.commit(
                {current.body_path: body, manifest_path(source_id): manifest.to_yaml()},
                f"append {source_id}: {len(added)} bytes to {_name(manifest)}",
                "append",
                (),
                reason=reason,
                sources=[source_id],
            )
        return IngestResult(manifest, "appended")

    def remove(self, ref: str, *, reason: str | None = None) -> SourceManifest:
        """Delete a source's two files in one commit; history keeps them, and references
        pinned to its versions still resolve."""
        with self.workspace.transaction() as tx:
            source_id = self.resolve(ref, tx)
            current = self._committed(tx, source_id)
            if current is None:
                raise NotFound(f"no source with id {source_id}")
            tx.commit(
                {current.body_path: None, manifest_path(source_id): None},
                f"remove {source_id}: {_name(current.manifest)}",
                "remove",
                (),
                reason=reason,
                sources=[source_id],
            )
        return current.manifest

    def _committed(self, tx: WriteTransaction, source_id: str) -> SourceFile | None:
        """The source as this writer sees it: as the review branch has it when the branch
        changed it (review mode), else the working tree's, refused when its files differ from
        HEAD's (a hand edit is committed by ``lantern commit`` first, never swept into another
        write)."""
        if source_id in tx.pending_sources():
            return tx.read_pending_source(source_id)
        found = self._current(source_id)
        if found is None:
            return None
        read = {found.body_path: found.body, manifest_path(source_id): found.manifest_bytes}
        refuse_uncommitted(tx.git, read, read=read)
        return found

    def _current(self, source_id: str) -> SourceFile | None:
        try:
            return load_source(self.root, source_id)
        except NotFound:
            return None

    # ------------------------------------------------------------------ reading

    def resolve(self, ref: str, tx: WriteTransaction | None = None) -> str:
        """The source id in ``ref``: an id, a unique id prefix (4+ hex digits), or a
        ``source:`` reference. Inside a write, ``tx``: a prefix may also name a source the
        write's review branch added."""
        if not isinstance(ref, str) or not ref:
            raise InvalidInput("source id: must be text", code="invalid_id")
        if is_source_ref(ref):
            return SourceRef.parse(ref, "source id").source_id
        lowered = ref.lower()
        if len(lowered) == 16:
            return check_source_id(lowered)
        if not (4 <= len(lowered) < 16) or any(c not in "0123456789abcdef" for c in lowered):
            raise InvalidInput(
                f"invalid source id {ref!r}: expected 16 hex digits or a prefix of 4 or more",
                code="invalid_id",
            )
        known = set(source_ids(self.root))
        if tx is not None:
            # A writer in review mode also sees the sources its review branch added.
            known |= tx.pending_sources()
        matches = sorted(i for i in known if i.startswith(lowered))
        if not matches:
            raise NotFound(f"no source with id prefix {ref}")
        if len(matches) > 1:
            from ..errors import AmbiguousId

            raise AmbiguousId(ref, matches)
        return matches[0]

    def get(self, ref: str) -> SourceManifest:
        self.workspace.recover()
        return load_manifest(self.root, self.resolve(ref))

    def list(
        self,
        *,
        kinds: Iterable[str] = (),
        uri_prefix: str | None = None,
        limit: int | None = None,
        offset: int = 0,
    ) -> builtins.list[SourceManifest]:
        """Manifests, newest version first (``updated_at``, then id)."""
        kinds = tuple(kinds)
        for kind in kinds:
            check_kind(kind)
        page = Page(limit, offset)
        if not self.workspace.exists:
            return []
        self.workspace.recover()
        found = []
        # Manifests only: listing never reads a body (lantern check judges those).
        for source_id in source_ids(self.root):
            manifest, _, problem = read_manifest(self.root, source_id)
            if problem is not None:
                self.workspace.warn(f"warning: skipped {problem}")
                continue
            if manifest is None:
                continue
            if kinds and manifest.kind not in kinds:
                continue
            if uri_prefix and not (manifest.uri or "").startswith(uri_prefix):
                continue
            found.append(manifest)
        found.sort(key=lambda m: (-m.updated_at, m.id))
        return page.take(found)

    def show(self, ref: str, *, at: str | None = None) -> SourceView:
        """A source's manifest, or the exact lines a reference names, read from git's objects
        for a pinned or ``at`` reference (so they are found after later versions and after a
        removal)."""
        parsed, source_id, manifest, body, blob = self._read(ref, at)
        if parsed is None or parsed.start is None:
            return SourceView(manifest)
        start, end = parsed.start, parsed.last or parsed.start
        spans = line_spans(body)
        if end > len(spans) - 1:
            raise InvalidInput(
                f"{ref}: lines {start}-{end} are out of range: that version has "
                f"{len(spans) - 1} lines",
                code="out_of_range",
            )
        text = body[spans[start - 1] : spans[end]].decode("utf-8")
        pinned = SourceRef(source_id, blob[:PIN_DIGITS], start, end)
        return SourceView(manifest, str(pinned), (start, end), text)

    def body(self, ref: str, *, at: str | None = None) -> SourceView:
        """The whole body of the version ``ref`` names (an id: the current one; a pinned
        reference: that version, even after a removal), as a view of all its lines."""
        _, source_id, manifest, body, blob = self._read(ref, at)
        lines = len(line_spans(body)) - 1
        pinned = SourceRef(source_id, blob[:PIN_DIGITS])
        return SourceView(manifest, str(pinned), (1, lines), body.decode("utf-8"))

    def _read(
        self, ref: str, at: str | None
    ) -> tuple[SourceRef | None, str, SourceManifest, bytes, str]:
        """The version ``ref`` (at ``at``) names: the parsed reference, the source id, its
        manifest, body and blob id."""
        self.workspace.recover()
        parsed = SourceRef.parse(ref, "ref") if is_source_ref(ref) else None
        source_id = parsed.source_id if parsed else self.resolve(ref)
        current = None if at is not None else self._current(source_id)
        current_blob = blob_id(current.body) if current is not None else ""
        if at is not None:
            manifest, body, blob = self._at(source_id, at)
        elif parsed is not None and parsed.blob and not current_blob.startswith(parsed.blob):
            manifest, body, blob = self._pinned(source_id, parsed.blob)
        elif current is not None:
            manifest, body, blob = current.manifest, current.body, current_blob
        else:
            raise NotFound(f"no source with id {source_id}")
        return parsed, source_id, manifest, body, blob

    def _at(self, source_id: str, at: str) -> tuple[SourceManifest, bytes, str]:
        from ..git.repo import resolve_point

        git = self.workspace.git
        commit, _ = resolve_point(git, at)
        if commit is None:
            raise NotFound(f"no source with id {source_id} at {at} (the store had no commit)")
        return self._from_tree(git, commit.tree, source_id, f"at {at}")

    def _from_tree(
        self, git: GitRepo, tree: pygit2.Tree, source_id: str, where: str
    ) -> tuple[SourceManifest, bytes, str]:
        path = manifest_path(source_id)
        data = git.blob_at(tree, path)
        if data is None:
            raise NotFound(f"no source with id {source_id} {where}")
        manifest, problem = parse_manifest(path, data, source_id)
        if manifest is None:
            raise StoreError(f"{problem} ({where})", code="invalid_source")
        entry = _body_entry(tree, source_id)
        if entry is None:
            raise NotFound(f"source {source_id} has no body {where}")
        return manifest, git.blob_data(entry), entry

    def _pinned(self, source_id: str, pin: str) -> tuple[SourceManifest, bytes, str]:
        """The version ``pin`` names: its bytes, and the manifest that came with it."""
        git = self.workspace.git
        versions = self.versions(source_id)
        blob = next((b for b in versions if b.startswith(pin)), None)
        if blob is None:
            if _object_exists(git, pin):
                raise InvalidInput(
                    f"source:{source_id}@{pin}: {pin} is not a version of source {source_id}",
                    code="unknown_version",
                )
            raise NotFound(f"source:{source_id}@{pin}: no such version in this repository")
        commit = git.repo[versions[blob]]
        manifest, _, _ = self._from_tree(git, commit.tree, source_id, "")
        return manifest, git.blob_data(blob), blob

    def versions(self, source_id: str) -> dict[str, str]:
        """Every version of a source in the branch's history: body blob id -> the newest
        commit that has it. Read once per HEAD and kept."""
        git = self.workspace.git
        head = git.head_oid()
        if str(head) != self._head:
            self._versions.clear()
            self._head = str(head)
        if source_id in self._versions:
            return self._versions[source_id]
        found: dict[str, str] = {}
        if head is not None:
            import pygit2

            folder = source_dir(source_id)
            last: str | None = None
            for commit in git.repo.walk(head, pygit2.enums.SortMode.TOPOLOGICAL):
                try:
                    shard = commit.tree[folder]
                except KeyError:
                    continue
                if str(shard.id) == last:
                    continue  # the shard did not change: nor did this source
                last = str(shard.id)
                entry = _body_entry(commit.tree, source_id)
                if entry is not None:
                    found.setdefault(entry, str(commit.id))
        self._versions[source_id] = found
        return found

    def search(
        self,
        text: str,
        *,
        kinds: Iterable[str] = (),
        sources: Iterable[str] = (),
        limit: int | None = None,
        offset: int = 0,
        mode: str | None = None,
        explain: bool = False,
        phrases: Iterable[str] = (),
    ) -> builtins.list[ChunkHit]:
        """Chunks matching ``text``, most relevant first; each hit's ``ref`` can be cited.
        ``phrases``: only chunks holding one of them as a phrase (``--entity``: the entity's
        key, name and aliases, which the Store looks up).

        ``mode`` as for :meth:`Store.search`: keyword (BM25), semantic (cosine of the chunk's
        embedding with the query's, among the chunks the filters select, the similarity floor
        applied) or hybrid (the two weighted as :mod:`~lantern_git.index.ranking` says); None
        is hybrid when an embedder is available. ``explain``: each hit's ``explain`` says what
        made its score, as for records.
        """
        from ..index import retrieval
        from ..index.corpora import ChunkCorpus, ChunkFilters

        retrieval.check(text, mode)
        kinds = tuple(kinds)
        for kind in kinds:
            check_kind(kind)
        source_ids = tuple(self.resolve(s) for s in sources)
        page = Page(limit, offset)
        mode = self.workspace.search_mode(mode, "chunks")
        if not self.workspace.exists:
            return []
        self.workspace.recover()
        index = self.workspace.chunks

        def refresh() -> None:
            for problem in index.refresh().broken.values():
                self.workspace.warn(f"warning: skipped {problem}")

        if mode == "keyword":
            corpus = ChunkCorpus(index, refresh)
        else:
            vectors, embedder = self.workspace.chunk_vectors(), self.workspace.embedder_name
            corpus = ChunkCorpus(index, refresh, vectors, embedder)
        filters = ChunkFilters(kinds, source_ids, tuple(phrases))
        return retrieval.search(corpus, retrieval.SearchRequest(text, mode, filters, page, explain))

    def holding(self, phrases: Iterable[str]) -> builtins.list[ChunkHit]:
        """Every chunk holding one of ``phrases`` (an entity's names: ``entity show``), in
        source id and line order, as references to cite."""
        wanted = tuple(phrases)
        if not wanted or not self.workspace.exists:
            return []
        self.workspace.recover()
        index = self.workspace.chunks
        index.refresh()
        keys = index.chunk_keys(phrases=wanted)
        ordered = sorted(keys, key=lambda k: (k.split(":")[0], int(k.split(":")[1])))
        return index.hits([(key, 0.0) for key in ordered])

    # ------------------------------------------------------------------ references

    def pin(self, refs: Iterable[str], tx: WriteTransaction | None = None) -> tuple[str, ...]:
        """``refs`` with every ``source:`` reference checked and pinned to the version current
        now; other references as given. A reference that fails is refused, naming it.

        Inside a write, ``tx`` is its transaction: the versions are those it sees (in review
        mode, a source its review branch changed is pinned to the branch's version)."""
        out = []
        # Several references to one source read, hash and count its body once.
        current: dict[str, tuple[SourceFile, str]] = {}
        bodies = _Bodies(self.workspace.git)
        for ref in refs:
            if not is_source_ref(ref):
                out.append(ref)
                continue
            out.append(str(self._pin_one(ref, current, bodies, tx)))
        return tuple(out)

    def _pin_one(
        self,
        text: str,
        read: dict[str, tuple[SourceFile, str]],
        bodies: _Bodies,
        tx: WriteTransaction | None,
    ) -> SourceRef:
        def refuse(reason: str) -> ValidationError:
            return ValidationError(f"source_refs: {text}: {reason}", field="source_refs")

        ref = SourceRef.parse(text)
        git = self.workspace.git
        if ref.source_id not in read and tx is not None and ref.source_id in tx.pending_sources():
            # Review mode: the version the review branch has, so that once accepted the pin
            # names the body the store's branch then holds.
            pending = tx.read_pending_source(ref.source_id)
            if pending is None:
                raise refuse("no such source in this store (its removal awaits review)")
            read[ref.source_id] = (pending, bodies.hold(pending.body))
        if ref.source_id not in read:
            try:
                found = load_source(self.root, ref.source_id)
            except NotFound:
                raise refuse("no such source in this store") from None
            except StoreError as err:
                raise refuse(f"the source cannot be read ({err.message})") from None
            refuse_uncommitted(git, [found.body_path], read={found.body_path: found.body})
            read[ref.source_id] = (found, bodies.hold(found.body))
        _, current_blob = read[ref.source_id]
        if ref.blob is None or current_blob.startswith(ref.blob):
            blob = current_blob
        else:
            versions = self.versions(ref.source_id)
            matches = [b for b in versions if b.startswith(ref.blob)]
            if not matches:
                raise refuse(f"{ref.blob} is not a version of source {ref.source_id}")
            if len(matches) > 1:
                raise refuse(f"{ref.blob} names more than one version; give more digits")
            blob = matches[0]
        if ref.start is not None:
            lines = bodies.line_count(blob)
            if (ref.last or ref.start) > lines:
                raise refuse(
                    f"lines {ref.start}-{ref.last} are out of range: the source has {lines} lines"
                )
        return ref.pinned(blob)

    def verify(self, records: Iterable[Record] | None = None) -> VerifyReport:
        """Check the ``source:`` references of ``records`` (None: the records this evidence
        was handed, every record of the store) against the store and its history."""
        report = VerifyReport()
        checker = _Checker(self)
        for record in self.records if records is None else records:
            for ref in record.source_refs:
                if not is_source_ref(ref):
                    continue
                report.checked += 1
                result = checker.check(record.id, ref)
                if result.problem != "ok":
                    report.problems.append(result)
        return report

    def evidence(self, record: Record) -> builtins.list[dict[str, Any]]:
        """Each reference of ``record`` with the lines it names (``memory show --evidence``)."""
        return [
            check.evidence()
            if check is not None
            else {"ref": ref, "problem": None, "lines": None, "text": None}
            for ref, check in self.check_refs(record)
        ]

    def check_refs(self, record: Record) -> builtins.list[tuple[str, RefCheck | None]]:
        """Each reference of ``record`` in order, with verify's finding for a ``source:`` one
        (the lines, their text, where drifted text moved to) and None for an opaque one."""
        return _checked_refs(_Checker(self), record, with_text=True)

    def check_refs_of(
        self, records: Iterable[Record]
    ) -> builtins.list[builtins.list[tuple[str, RefCheck | None]]]:
        """:meth:`check_refs` of each of ``records``, in order, with one verify's memory: a
        source cited by 1,000 records (a source's page) is read and parsed once, not 1,000
        times. Without the cited text, which a source page does not show (it marks the lines
        in the version shown)."""
        checker = _Checker(self)
        return [_checked_refs(checker, record, with_text=False) for record in records]


def _checked_refs(
    checker: _Checker, record: Record, *, with_text: bool
) -> builtins.list[tuple[str, RefCheck | None]]:
    return [
        (ref, checker.check(record.id, ref, with_text=with_text) if is_source_ref(ref) else None)
        for ref in record.source_refs
    ]


class _Bodies:
    """The bodies one verify, one ``--evidence`` or one write's pinning reads, by blob id: each
    read from git, hashed, counted and split into lines once, however many references name it.
    A record citing one 20 MB transcript 200 times re-read and re-split it for each reference
    (10 s to verify, 4 s to add; ``benchmarks/verify_cost.py``). Lives for one call only."""

    def __init__(self, git: GitRepo):
        self.git = git
        self._data: dict[str, bytes] = {}
        self._counts: dict[str, int] = {}
        self._spans: dict[str, list[int]] = {}
        self._index: dict[str, tuple[list[bytes], Counter[bytes], dict[bytes, int]]] = {}

    def hold(self, data: bytes) -> str:
        """Keep ``data`` (a body already read, from the working tree or a review branch) and
        return its blob id, so that git's copy of the same blob is never read."""
        blob = blob_id(data)
        self._data.setdefault(blob, data)
        return blob

    def data(self, blob: str) -> bytes:
        """The bytes of a blob (a full id); KeyError when the repository lacks it."""
        if blob not in self._data:
            self._data[blob] = self.git.blob_data(blob)
        return self._data[blob]

    def lookup(self, pin: str) -> str | None:
        """The full id of the blob a (short) pin names, if the repository has one."""
        for blob in self._data:
            if blob.startswith(pin):
                return blob
        try:
            obj = self.git.repo.revparse_single(pin)
        except (KeyError, ValueError):
            return None
        import pygit2

        if not isinstance(obj, pygit2.Blob):
            return None
        self._data.setdefault(str(obj.id), obj.data)  # git has just read it: keep it
        return str(obj.id)

    def line_count(self, blob: str) -> int:
        # Only a write's pinning counts lines, and it never splits a body: no spans to reuse.
        if blob not in self._counts:
            self._counts[blob] = count_lines(self.data(blob))
        return self._counts[blob]

    def spans(self, blob: str) -> list[int]:
        if blob not in self._spans:
            self._spans[blob] = line_spans(self.data(blob))
        return self._spans[blob]

    def find(self, blob: str, want: bytes) -> tuple[int, int] | None:
        """The first place where ``want`` (whole lines) is in the blob, as a line range: where
        a drifted reference's text went. The body's lines are counted and indexed once; each
        search tries only the places of the rarest of the wanted lines (a scan of the whole
        body per drifted reference cost 20 MB of search each)."""
        needle = want.removesuffix(b"\n")
        if not needle:
            return None
        wanted = needle.split(b"\n")
        lines, counts, first = self._line_index(blob)
        offset = min(range(len(wanted)), key=lambda i: counts.get(wanted[i], 0))
        line = wanted[offset]
        left = counts.get(line, 0)
        place = first.get(line, 0)  # 1-based
        while left:
            start = place - offset
            if start >= 1 and lines[start - 1 : start - 1 + len(wanted)] == wanted:
                return start, start + len(wanted) - 1
            left -= 1
            if left:
                place = lines.index(line, place) + 1
        return None

    def _line_index(self, blob: str) -> tuple[list[bytes], Counter[bytes], dict[bytes, int]]:
        """The blob's lines (without newlines), how often each occurs and the number of its
        first line: built by C loops (a Python loop over 200,000 lines cost 0.5 s)."""
        if blob not in self._index:
            lines = self.data(blob).split(b"\n")
            if lines[-1] == b"":
                lines.pop()  # after a final newline there is no line
            first = dict(zip(reversed(lines), range(len(lines), 0, -1), strict=True))
            self._index[blob] = (lines, Counter(lines), first)
        return self._index[blob]


class _Checker:
    """Verify's memory: each source read once, each body (by blob id) read and split once."""

    def __init__(self, sources: Sources):
        self.sources = sources
        self.bodies = _Bodies(sources.workspace.git)
        self.current: dict[str, tuple[SourceFile, str] | None] = {}

    def _source(self, source_id: str) -> tuple[SourceFile, str] | None:
        """The source as the working tree has it, and its blob id."""
        if source_id not in self.current:
            try:
                found = load_source(self.sources.root, source_id)
            except (NotFound, StoreError):
                self.current[source_id] = None
            else:
                self.current[source_id] = (found, self.bodies.hold(found.body))
        return self.current[source_id]

    def check(self, record_id: str, text: str, *, with_text: bool = False) -> RefCheck:
        """What ``text`` (a ``source:`` reference of ``record_id``) finds; the lines it names
        are decoded only ``with_text`` (``--evidence``), which verify does not need."""

        def result(problem: str, detail: str, **more: Any) -> RefCheck:
            return RefCheck(record_id, text, problem, detail, **more)

        try:
            ref = SourceRef.parse(text)
        except ValidationError as err:
            return result("unknown_source", err.reason)
        bodies = self.bodies
        found = self._source(ref.source_id)
        pinned: str | None = None
        if found is not None and (ref.blob is None or found[1].startswith(ref.blob)):
            pinned = found[1]  # the working tree's body is that blob: git's copy is not read
        elif ref.blob:
            pinned = bodies.lookup(ref.blob)
        if found is None:
            if pinned is not None:
                spans = bodies.spans(pinned)
                start, end = ref.start or 1, ref.last or len(spans) - 1
                readable = end <= len(spans) - 1
                return result(
                    "removed",
                    f"source {ref.source_id} was removed; the pinned text is still readable",
                    lines=(start, end) if readable else None,
                    text=_text(bodies.data(pinned), spans, start, end)
                    if readable and with_text
                    else None,
                )
            return result("unknown_source", f"no source {ref.source_id} in this store")
        current_blob = found[1]
        if pinned is None:
            return result("unknown_version", f"no version {ref.blob} in this repository")
        if pinned != current_blob and pinned not in self.sources.versions(ref.source_id):
            return result(
                "unknown_version", f"{ref.blob} is not a version of source {ref.source_id}"
            )
        pin_spans = bodies.spans(pinned)
        start, end = ref.start or 1, ref.last or len(pin_spans) - 1
        if end > len(pin_spans) - 1 or (ref.start is None and end < 1):
            return result(
                "out_of_range",
                f"lines {start}-{end}: the pinned version has {len(pin_spans) - 1} lines",
            )
        data = bodies.data(pinned)
        snippet = _text(data, pin_spans, start, end) if with_text else None
        if pinned == current_blob:
            return result("ok", "", lines=(start, end), text=snippet)
        want = data[pin_spans[start - 1] : pin_spans[end]]
        current_spans = bodies.spans(current_blob)
        if end <= len(current_spans) - 1 and _same(
            found[0].body[current_spans[start - 1] : current_spans[end]], want
        ):
            return result("ok", "", lines=(start, end), text=snippet)
        moved = bodies.find(current_blob, want)
        where = f"; the text is now at {_lines_label(*moved)}" if moved else ""
        held = "holds" if start == end else "hold"
        return result(
            "drifted",
            f"{_lines_label(start, end)} no longer {held} the pinned text{where}",
            moved_to=moved,
            lines=(start, end),
            text=snippet,
        )


def _lines_label(start: int, end: int) -> str:
    return f"line {start}" if start == end else f"lines {start}-{end}"


def _same(a: bytes, b: bytes) -> bool:
    return a.removesuffix(b"\n") == b.removesuffix(b"\n")


def _text(data: bytes, spans: list[int], start: int, end: int) -> str:
    """Lines ``start``..``end`` (1-based, inclusive) of a body split at ``spans``, as text."""
    return data[spans[start - 1] : spans[end]].decode("utf-8")


def _body_entry(tree: pygit2.Tree, source_id: str) -> str | None:
    """The blob id of the source's body in ``tree``, if it has one."""
    import pygit2

    try:
        shard = tree[source_dir(source_id)]
    except KeyError:
        return None
    if not isinstance(shard, pygit2.Tree):
        return None
    prefix = source_id + "."
    for entry in shard:
        name = entry.name or ""
        if name.startswith(prefix) and not name.endswith(".yaml"):
            return str(entry.id)
    return None


def _object_exists(git: GitRepo, pin: str) -> bool:
    try:
        git.repo.revparse_single(pin)
        return True
    except (KeyError, ValueError):
        return False


def _route_sources_to_driver(tx: WriteTransaction) -> dict[str, bytes | None]:
    """``.gitattributes`` with the line that sends sources to the merge driver, for a store
    made before sources existed: written with its first ingest, so a plain ``git pull`` merges
    sources as ``lantern sync`` does. A user's uncommitted edit of the file is left alone."""
    from ..git.config import attributes_line, with_lines
    from ..model.source_file import MERGE_PATTERN

    name = ".gitattributes"
    committed = tx.git.blob_at(tx.git.head_tree(), name)
    try:
        with open(os.path.join(tx.root, name), "rb") as handle:
            current: bytes | None = handle.read()
    except FileNotFoundError:
        current = None
    except OSError:
        return {}
    if current != committed:
        return {}
    wanted = with_lines(committed or b"", (attributes_line(MERGE_PATTERN),))
    return {} if wanted == committed else {name: wanted}


def _name(manifest: SourceManifest) -> str:
    return manifest.title or manifest.uri or manifest.id


def _ingest_summary(op: str, results: Sequence[IngestResult]) -> str:
    if len(results) == 1:
        return f"{op} {results[0].manifest.id}: {_name(results[0].manifest)}"[:120]
    return f"{op} {len(results)} sources"
