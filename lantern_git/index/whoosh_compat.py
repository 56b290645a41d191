"""Every reach into Whoosh's internals, in one place, each checked before its first use.

Whoosh's public API answers everything lantern asks, but some of it slowly enough to matter, so
lantern does four things itself, knowing how whoosh-reloaded 2.7 lays out its objects:

- Segment parts are read in place. Whoosh maps each compound segment file and copies every part
  it opens into a BytesIO: megabytes at 100k records on every open of the stored records'
  column, of which a list reads 50. Lantern's storage hands Whoosh its own file, whose parts read
  the map in place (``CompoundStorage.open_file`` asks a file it did not map for ``subset``).
- A numeric column is read whole as an array, in one piece: iterating Whoosh's reader unpacks
  one value per Python call (``NumericColumn.Reader``'s ``_dbfile``, ``_basepos``, ...).
- A segment's deleted documents are taken as the set Whoosh already keeps
  (``SegmentReader.deleted_docs_set``) instead of asking ``is_deleted`` of every document.
- The index's documents are counted from its table of contents (``FileIndex._segments``), not
  by opening a reader on every segment.

- A rebuild writes one segment per process, each process reading and parsing its share of the
  record files itself (``SegmentWriter._finalize_segment``, then one table of contents for all,
  as Whoosh's own ``MpWriter`` does with ``multisegment=True``). ``MpWriter`` leaves the reading
  and parsing in the parent, a third of a rebuild's work, and feeds the children through pickled
  job files.

- A rebuild's builders write their segments without Whoosh's posting pool: each term's
  postings are kept in arrays as documents come and handed to Whoosh's field writer a block at
  a time (``W3PostingsWriter``'s block buffer, ``W3FieldWriter._postwriter``), the same bytes
  Whoosh writes after sorting every posting as a tuple (:func:`_direct_writer`).

- A segment being written takes its documents' field lengths from memory: Whoosh looks each
  posting's up by the field's name through the length column's reader (``W3PerDocReader``'s
  ``_readers``), a sixth of a rebuild's CPU time; each column is read once, whole, instead.

A seventh needs no internals: lantern's storage remembers which of its files exist. While writing
a segment, Whoosh asks with a stat() for every posting of an unscored field whether the field
has a length column (a tenth of a rebuild).

All of it acts on objects lantern creates (its ``FileStorage`` subclass and the files that
opens) or only reads Whoosh's objects: no Whoosh class, function, module or ``sys.modules``
entry is changed, so a program using Whoosh beside lantern, in the same process, gets stock
Whoosh. Each internal speed-up checks at its first use in the process that what it relies on is
there and gives the public API's answers on a small probe; where not (another Whoosh), the
public API does the same work: slower, same answers.
"""

from __future__ import annotations

import contextlib
import functools
import gc
import mmap
import os
import shutil
import sys
import threading
from array import array
from collections.abc import Callable, Iterable, Iterator, Sequence
from io import BytesIO
from itertools import repeat
from typing import Any

from cachetools import LRUCache
from whoosh.fields import ID, KEYWORD
from whoosh.filedb.filestore import FileStorage, RamStorage
from whoosh.filedb.structfile import StructFile

from ..errors import StoreError

# What each speed-up relies on, checked at its first use (tests add a name that does not exist
# to see the fallback): names ``CompoundStorage.open_file`` uses, attributes of a
# ``NumericColumn.Reader``, of ``SegmentReader`` and of ``FileIndex``.
COMPOUND_OPEN_USES = ("subset",)
NUMERIC_READER_HAS = ("_typecode", "_dbfile", "_basepos", "_count", "_default")
SEGMENT_READER_HAS = ("deleted_docs_set",)
FILE_INDEX_HAS = ("_segments",)
SEGMENT_WRITER_HAS = ("_finalize_segment", "_close_segment", "_commit_toc", "_finish", "_added")

_usable: dict[str, bool] = {}


class IdColumn(ID):
    """The record's id, stored and as a sortable column, without terms: every lookup by id
    reads the column (``_live_docs``, ``_ids_by_docnum``, the list order's tie-break), and a
    term per record, each with its own entry in the term table, was half of what a rebuild's
    segment wrote."""

    indexed = False


def memory_index(schema: Any) -> Any:
    """An index in memory (Whoosh's ``RamStorage``) whose writers keep their temporary files
    in a folder of their own. Stock ``RamStorage`` puts them in one folder per index name,
    ``$TMPDIR/MAIN.tmp``, shared by every process on the machine, and a writer that finishes
    deletes that folder with whatever is in it: two processes building one at once (two
    ``lantern`` commands, or lantern and any program using Whoosh) failed with
    ``FileNotFoundError: .../MAIN.tmp/....ctmp`` in the commit."""
    return _PrivateRamStorage().create_index(schema)


class _PrivateRamStorage(RamStorage):
    def __init__(self) -> None:
        super().__init__()
        # name -> this index's own folder for it: the segment writer and its per-document
        # writer share one, as they share MAIN.tmp in stock Whoosh, and the writer that
        # finishes deletes it.
        self._temp_folders: dict[str | None, str] = {}

    def temp_storage(self, name: str | None = None) -> Any:
        import tempfile

        folder = self._temp_folders.get(name)
        if folder is None or not os.path.isdir(folder):
            folder = self._temp_folders[name] = tempfile.mkdtemp(prefix="lantern-whoosh-")
        return FileStorage(folder).create()


def usable(speedup: str) -> bool:
    """Whether ``speedup`` ("parts", "numeric", "deleted", "toc", "segments", "written
    lengths", "postings", "positions" or "lengths") may be taken in this process."""
    try:
        return _usable[speedup]
    except KeyError:
        pass
    try:
        ok = bool(_CHECKS[speedup]())
    except Exception:  # anything unexpected in Whoosh: its public API instead
        ok = False
    _usable[speedup] = ok
    return ok


# ---------------------------------------------------------------- the index's storage


def open_index(folder: str, indexname: str) -> Any:
    """The index in ``folder``, as ``whoosh.index.open_dir`` opens it, on lantern's storage."""
    return LanternStorage(folder).open_index(indexname)


def create_index(folder: str, schema: Any, indexname: str) -> Any:
    """A new index in ``folder``, as ``whoosh.index.create_in`` makes it, on lantern's storage."""
    return LanternStorage(folder).create_index(schema, indexname)


def create_beside(folder: str, schema: Any, indexname: str, what: str) -> tuple[str, Any]:
    """A new, empty index in ``folder + ".new"`` (what an earlier, cut-off build left there is
    removed first), to be built and then swapped in for ``folder``: its path and the index."""
    fresh = folder + ".new"
    shutil.rmtree(fresh, ignore_errors=True)
    try:
        os.makedirs(fresh)
    except OSError as err:
        raise StoreError(
            f"cannot write the {what} in {os.path.dirname(folder)}: {err.strerror}"
        ) from None
    return fresh, create_index(fresh, schema, indexname)


def swap_in(fresh: str, folder: str) -> None:
    """Put the index built in ``fresh`` (see :func:`create_beside`) in place of ``folder``:
    two renames, so a reader finds the old index or the new one, never half of either."""
    old = folder + ".old"
    shutil.rmtree(old, ignore_errors=True)
    if os.path.exists(folder):
        os.replace(folder, old)
    os.replace(fresh, folder)
    shutil.rmtree(old, ignore_errors=True)


class LanternStorage(FileStorage):
    """Whoosh's ``FileStorage`` for lantern's index folder only. It remembers which files
    exist (forgetting on every file it creates, deletes or renames: files another process adds
    have new names) and, where the check allows, opens files whose compound parts are read from
    a map in place, so Whoosh is told not to map them itself."""

    def __init__(self, path: str, readonly: bool = False):
        parts = usable("parts")
        super().__init__(path, supports_mmap=not parts, readonly=readonly)
        self._parts = parts
        self._path = os.path.abspath(path)
        self._exists: dict[str, bool] = {}

    def open_file(self, name: str, **kwargs: Any) -> Any:
        if not self._parts:
            return super().open_file(name, **kwargs)
        return _SegmentFile(open(os.path.join(self._path, name), "rb"), name=name, **kwargs)

    def file_exists(self, name: str) -> bool:
        try:
            return self._exists[name]
        except KeyError:
            found: bool = super().file_exists(name)
            self._exists[name] = found
            return found

    def _forget(self, change: Any, *args: Any, **kwargs: Any) -> Any:
        self._exists.clear()
        try:
            return change(*args, **kwargs)
        finally:
            self._exists.clear()

    def create_file(self, *args: Any, **kwargs: Any) -> Any:
        return self._forget(super().create_file, *args, **kwargs)

    def delete_file(self, *args: Any, **kwargs: Any) -> Any:
        return self._forget(super().delete_file, *args, **kwargs)

    def rename_file(self, *args: Any, **kwargs: Any) -> Any:
        return self._forget(super().rename_file, *args, **kwargs)

    def clean(self, *args: Any, **kwargs: Any) -> Any:
        return self._forget(super().clean, *args, **kwargs)

    def destroy(self, *args: Any, **kwargs: Any) -> Any:
        return self._forget(super().destroy, *args, **kwargs)


class _SegmentFile(StructFile):
    """A file of lantern's index, as Whoosh's ``FileStorage`` opens it; asked for a part of
    itself (a compound segment's part), it maps itself once and hands out the part in place."""

    _map: mmap.mmap | None = None
    _view: memoryview | None = None

    def subset(self, offset: int, length: int, name: str | None = None) -> Any:
        view = self._view
        if view is None:
            try:
                self._map = mmap.mmap(self.file.fileno(), 0, access=mmap.ACCESS_READ)
            except (OSError, ValueError):  # cannot be mapped (empty, no memory): Whoosh's way
                return super().subset(offset, length, name=name)
            view = self._view = memoryview(self._map)
        return _PartFile(view[offset : offset + length], name=name or self._name)

    def close(self) -> None:
        view, self._view = self._view, None
        source, self._map = self._map, None
        if view is not None:
            view.release()
        if source is not None:
            try:
                source.close()
            except BufferError:  # parts still in use: unmapped once they are gone
                pass
        super().close()


_BIG_ENDIAN = sys.byteorder == "big"


class _PartFile(StructFile):
    """One part of a mapped segment file, read in place: Whoosh's ``StructFile`` over a
    ``_MapFile``, with its positional reads served by slicing the map."""

    def __init__(self, buf: memoryview, name: str | None = None, onclose: Any = None) -> None:
        super().__init__(_MapFile(buf), name=name, onclose=onclose)
        self._buf = buf

    def subset(self, position: int, length: int, name: str | None = None) -> _PartFile:
        return _PartFile(self._buf[position : position + length], name=name or self._name)

    def get(self, position: int, length: int) -> bytes:
        return self._buf[position : position + length].tobytes()

    def get_array(self, position: int, typecode: str, length: int) -> array[Any]:
        values = array(typecode)
        values.frombytes(self._buf[position : position + length * values.itemsize])
        if not _BIG_ENDIAN:  # Whoosh writes arrays big-endian
            values.byteswap()
        return values


class _MapFile:
    """A read-only file over a memoryview: what BytesIO offers, without copying the buffer."""

    __slots__ = ("_buf", "_len", "_pos")

    def __init__(self, buf: memoryview) -> None:
        self._buf = buf
        self._pos = 0
        self._len = len(buf)

    def read(self, size: int | None = -1) -> bytes:
        start = self._pos
        end = self._len if size is None or size < 0 else min(self._len, start + size)
        if end <= start:
            return b""
        self._pos = end
        return self._buf[start:end].tobytes()

    def readinto(self, target: bytearray | memoryview) -> int:
        data = self.read(len(target))
        target[: len(data)] = data
        return len(data)

    def readline(self, size: int | None = -1) -> bytes:
        start = self._pos
        end = self._len if size is None or size < 0 else min(self._len, start + size)
        at = start
        while at < end:
            chunk = self._buf[at : min(end, at + 4096)].tobytes()
            found = chunk.find(b"\n")
            if found >= 0:
                return self.read(at + found + 1 - start)
            at += len(chunk)
        return self.read(end - start)

    def __iter__(self) -> Iterator[bytes]:
        while True:
            line = self.readline()
            if not line:
                return
            yield line

    def seek(self, offset: int, whence: int = 0) -> int:
        if whence == 1:
            offset += self._pos
        elif whence == 2:
            offset += self._len
        if offset < 0:
            raise ValueError("negative seek position")
        self._pos = offset
        return offset

    def tell(self) -> int:
        return self._pos

    def close(self) -> None:
        pass


def _check_parts() -> bool:
    """Whoosh asks a compound file it did not map for its parts with ``subset``, and a part
    read in place answers as Whoosh's own file over the same bytes."""
    from whoosh.filedb.compound import CompoundStorage

    if not set(COMPOUND_OPEN_USES) <= set(CompoundStorage.open_file.__code__.co_names):
        return False
    written = StructFile(BytesIO())
    written.write(b"\x00lantern\n")
    written.write_varint(300)
    written.write_int(-7)
    written.write_long(2**40)
    written.write_array(array("I", [1, 2, 70000]))
    written.write_string(b"part")
    data = written.file.getvalue()
    theirs = StructFile(BytesIO(data))
    ours = _PartFile(memoryview(data)).subset(0, len(data))
    steps: tuple[Callable[[Any], Any], ...] = (
        lambda f: f.readline(),
        lambda f: f.read_varint(),
        lambda f: f.read_int(),
        lambda f: f.read_long(),
        lambda f: f.read_array("I", 3),
        lambda f: f.read_string(),
        lambda f: f.tell(),
        lambda f: f.get_array(18, "I", 3),
        lambda f: f.get(1, 7),
        lambda f: f.get_long(10),
        lambda f: f.subset(1, 7).read(),
    )
    return all(step(ours) == step(theirs) for step in steps)


# ---------------------------------------------------------------- numeric columns


def numeric_column(reader: Any, fieldname: str, typecode: str = "Q") -> array[int]:
    """A segment's numeric column (``NumericColumn(typecode)``) as an array with a value for
    every document, deleted or not. Documents past the stored values have the default
    (Whoosh's writer leaves trailing defaults out); a segment without the column gives the
    default for each."""
    from whoosh.columns import NumericColumn

    column = reader.column_reader(fieldname, translate=False)
    count = reader.doc_count_all()
    if (
        isinstance(column, NumericColumn.Reader)
        and usable("numeric")
        and column._typecode == typecode
    ):
        return _numeric_in_one_piece(column, count)
    return array(typecode, column)


def _numeric_in_one_piece(column: Any, count: int) -> array[int]:
    values: array[int] = column._dbfile.get_array(column._basepos, column._typecode, column._count)
    values.extend(repeat(column._default, count - len(values)))
    return values


def _check_numeric() -> bool:
    """A column written by Whoosh reads the same in one piece as value by value."""
    from whoosh.columns import NumericColumn

    column = NumericColumn("Q", default=7)
    written = StructFile(BytesIO())
    writer = column.writer(written)
    writer.add(0, 5)
    writer.add(2, 2**40)
    writer.finish(6)
    data = written.file.getvalue()
    reader = column.reader(StructFile(BytesIO(data)), 0, len(data), 6)
    if not all(hasattr(reader, name) for name in NUMERIC_READER_HAS):
        return False
    expected = array("Q", [5, 7, 2**40, 7, 7, 7])
    return _numeric_in_one_piece(reader, 6) == array("Q", reader) == expected


# ---------------------------------------------------------------- deleted documents


def deleted_docs(reader: Any) -> Any:
    """A segment reader's deleted document numbers (relative to the segment), as a set."""
    from whoosh.reading import SegmentReader

    if isinstance(reader, SegmentReader) and usable("deleted"):
        return reader.deleted_docs_set
    return frozenset(
        docnum for docnum in range(reader.doc_count_all()) if reader.is_deleted(docnum)
    )


def _check_deleted() -> bool:
    from whoosh.reading import SegmentReader

    return all(hasattr(SegmentReader, name) for name in SEGMENT_READER_HAS)


# ---------------------------------------------------------------- the table of contents


def doc_count_all(ix: Any) -> int:
    """Documents in the index, deleted or not, counted from its table of contents
    (``FileIndex._segments``): opening every segment only to count them costs ~3 ms."""
    if usable("toc"):
        return sum(segment.doc_count_all() for segment in ix._segments())
    count: int = ix.doc_count_all()
    return count


def _check_toc() -> bool:
    from whoosh.index import FileIndex

    return all(hasattr(FileIndex, name) for name in FILE_INDEX_HAS)


# ---------------------------------------------------------------- one segment per process


def build_segments(
    ix: Any,
    work: Callable[[Any, Any, Callable[[int], None]], Any],
    shares: list[Any],
    limitmb: int,
    progress: Callable[[int], None] | None = None,
    at_once: int | None = None,
) -> list[Any]:
    """Fill the new, empty index ``ix`` with one segment per share, each written by its own
    process calling ``work(writer, share, tick)`` (``tick(n)``: n more files done), at most
    ``at_once`` processes at a time (all at once where None); the results of ``work``, in the
    order of ``shares``. Nothing is committed unless every share succeeded. ``work`` must be
    a module-level function (it is pickled where processes are spawned rather than forked)."""
    import multiprocessing
    import threading

    # Forking a process that runs other threads can copy a lock some thread holds; a server's
    # process (threads) starts fresh interpreters instead, at the cost of their imports.
    method = "fork" if threading.active_count() == 1 and sys.platform != "win32" else "spawn"
    context: Any = multiprocessing.get_context(method)
    if method == "fork":  # checked once here, not again in every builder
        usable("direct segments") or usable("written lengths")
    messages = context.Queue()
    writer = ix.writer()
    children = [
        context.Process(
            target=_segment_child,
            args=(ix.storage.folder, ix.indexname, work, share, number, limitmb, messages),
            daemon=True,
        )
        for number, share in enumerate(shares)
    ]
    results: dict[int, Any] = {}
    segments: dict[int, Any] = {}
    limit = len(children) if at_once is None else max(1, at_once)
    waiting = list(children)
    try:
        while len(results) < len(children):
            # A builder holds its share's postings until it writes its segment: at most
            # ``limit`` of them at once.
            building = sum(
                1 for n, child in enumerate(children) if child.pid is not None and n not in results
            )
            for _ in range(min(len(waiting), limit - building)):
                waiting.pop(0).start()
            try:
                message = messages.get(timeout=1.0)
            except Exception:  # queue.Empty: a child that died without a word?
                dead = [c for c in children if c.exitcode not in (None, 0)]
                if dead:
                    raise RuntimeError(f"an index builder exited with {dead[0].exitcode}") from None
                continue
            kind, number, payload = message
            if kind == "tick":
                if progress is not None:
                    progress(payload)
            elif kind == "done":
                segments[number], results[number] = payload
                children[number].join()
            else:
                raise RuntimeError(f"building the index failed: {payload}")
        for child in children:
            child.join()
        writer._close_segment()
        writer._commit_toc([segments[n] for n in sorted(segments) if segments[n] is not None])
        writer._finish()
    except BaseException:
        for child in children:
            if child.is_alive():
                child.kill()
            if child.pid is not None:
                child.join()
        try:
            writer.cancel()
        except Exception:
            pass
        raise
    finally:
        messages.close()
    return [results[n] for n in range(len(shares))]


@contextlib.contextmanager
def no_collection() -> Iterator[None]:
    """Python's cycle collector off while a segment is built. Whoosh keeps every posting of a
    segment in memory as tuples until it writes them (2M at 50k records); each full collection
    walks them all, and collections come ever more often as they pile up. Building makes no
    reference cycles worth collecting."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def _segment_child(
    folder: str,
    indexname: str,
    work: Callable[[Any, Any, Callable[[int], None]], Any],
    share: Any,
    number: int,
    limitmb: int,
    messages: Any,
) -> None:
    from whoosh.writing import SegmentWriter

    gc.disable()  # see no_collection: this process only builds one segment
    try:
        ix = LanternStorage(folder).open_index(indexname)
        # _lk=False: the parent holds the index's lock for all of them, as MpWriter's children
        if usable("direct segments"):
            writer = _direct_writer()(ix, _lk=False, limitmb=limitmb)
        else:
            writer = SegmentWriter(ix, _lk=False, limitmb=limitmb)
            if usable("written lengths"):
                _lengths_in_memory(writer)
        result = work(writer, share, lambda n: messages.put(("tick", number, n)))
        segment = writer._finalize_segment() if writer._added else None
        if segment is None:
            writer._close_segment()
        messages.put(("done", number, (segment, result)))
    except BaseException as err:
        messages.put(("error", number, f"{type(err).__name__}: {err}"))
        raise


def building_writer(ix: Any, **options: Any) -> Any:
    """A writer for filling the new, empty index ``ix``: where the check allows, one that
    groups its postings by term as they come (:func:`_direct_writer`), else ``ix.writer`` whose
    segment takes its documents' field lengths from memory (:func:`_lengths_in_memory`)."""
    if usable("direct segments"):
        return _direct_writer()(ix, **options)
    writer = ix.writer(**options)
    if usable("written lengths"):
        _lengths_in_memory(writer)
    return writer


# What the direct writer relies on, checked at its first use: the segment writer's parts it
# drives, the postings writer's block buffer it fills a block at a time, and the field writer's
# postings writer.
DIRECT_WRITER_HAS = ("perdocwriter", "fieldwriter", "pool", "_check_fields", "_doc_boost")
POSTINGS_WRITER_HAS = (
    "_ids",
    "_weights",
    "_values",
    "_minlength",
    "_maxlength",
    "_maxweight",
    "_blocklimit",
    "_write_block",
)
FIELD_WRITER_HAS = ("_postwriter",)
# Values of ID and KEYWORD fields whose terms a direct writer keeps
ANALYZED_KEPT = 50_000
# Sets of keys given to a direct writer's add_document whose sorted field names it keeps
FIELD_SETS_KEPT = 64


@functools.lru_cache(maxsize=1)
def _direct_writer() -> type:
    """Whoosh's ``SegmentWriter`` without its posting pool, for filling a new index.

    Whoosh's writer hands every posting to a pool as a tuple (field, term, document, weight,
    positions), sorts all of them (spilling sorted runs to temporary files past ``limitmb``),
    then walks the sorted tuples calling its field writer once per posting, which looks up the
    posting's field length and fills the block buffer one value at a time. Postings arrive in
    document order, so grouping them by field and term as they come leaves only the terms to
    sort: this writer keeps each term's document numbers, weights and positions in three
    arrays, and at the end hands the field writer each term's postings a block (128) at a time,
    with the block's statistics Whoosh's postings writer would have kept. The documents' stored
    fields, columns and lengths go through Whoosh's per-document writer as before. The segment
    written is Whoosh's to the byte (``_check_direct_segments``)."""
    from whoosh.util.numeric import byte_to_length, length_to_byte
    from whoosh.writing import SegmentWriter

    lengths_of = [0] + [byte_to_length(code) for code in range(1, 256)]
    # Fields whose terms depend on nothing but the value (Whoosh's ID and KEYWORD, exactly):
    # a value's terms are worked out once per segment.
    repeated_kinds = (ID, KEYWORD)

    class DirectSegmentWriter(SegmentWriter):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            # field -> term -> (document numbers, weights, encoded values)
            self._terms: dict[str, dict[bytes, tuple[array[int], array[float], list[bytes]]]] = {}
            # field -> each document's length code (Whoosh's length byte), for scorable fields
            self._length_codes: dict[str, bytearray] = {}
            # (field, value) -> the field's terms for the value, for fields of repeated values
            self._analyzed: dict[tuple[str, Any], list[Any]] = {}
            # the keys a document gave -> (its field names, sorted; whether any is "_...")
            self._fieldnames_of: dict[tuple[str, ...], tuple[list[str], bool]] = {}

        def add_document(self, **fields: Any) -> None:
            self._check_state()
            perdocwriter = self.perdocwriter
            schema = self.schema
            docnum = self.docnum
            docboost = self._doc_boost(fields)
            analyzed = self._analyzed
            # Every document of a rebuild names the same fields: sorted and checked once, and
            # with no "_..." key given (a boost, a stored value of its own) each field's boost
            # is the document's and its stored value its value.
            given = tuple(fields)
            known = self._fieldnames_of.get(given)
            if known is None:
                fieldnames = sorted(name for name in fields if not name.startswith("_"))
                self._check_fields(schema, fieldnames)
                special = any(name.startswith("_") for name in fields)
                if len(self._fieldnames_of) < FIELD_SETS_KEPT:
                    self._fieldnames_of[given] = (fieldnames, special)
            else:
                fieldnames, special = known
            perdocwriter.start_doc(docnum)
            try:
                for fieldname in fieldnames:
                    value = fields.get(fieldname)
                    if value is None:
                        continue
                    field = schema[fieldname]
                    length = 0
                    if field.indexed:
                        fieldboost = (
                            self._field_boost(fields, fieldname, docboost) if special else docboost
                        )
                        terms = self._terms.get(fieldname)
                        if terms is None:
                            terms = self._terms[fieldname] = {}
                        scorable = field.scorable
                        if type(field) in repeated_kinds and not field.unique:
                            # kind, scope, status, cites: a few values, each analyzed once
                            key = (fieldname, value)
                            items = analyzed.get(key)
                            if items is None:
                                items = list(field.index(value))
                                if len(analyzed) < ANALYZED_KEPT:
                                    analyzed[key] = items
                        else:
                            items = field.index(value)
                        for tbytes, freq, weight, vbytes in items:
                            weight *= fieldboost
                            if scorable:
                                length += freq
                            held = terms.get(tbytes)
                            if held is None:
                                held = terms[tbytes] = (array("I"), array("d"), [])
                            held[0].append(docnum)
                            held[1].append(weight)
                            if vbytes:  # as Whoosh's postings writer keeps only values given
                                held[2].append(vbytes)
                        if length:
                            codes = self._length_codes.get(fieldname)
                            if codes is None:
                                codes = self._length_codes[fieldname] = bytearray()
                            codes.extend(bytes(docnum - len(codes)))
                            codes.append(length_to_byte(length))
                    customval = fields.get(f"_stored_{fieldname}", value) if special else value
                    perdocwriter.add_field(
                        fieldname, field, customval if field.stored else None, length
                    )
                    column = field.column_type
                    if column and customval is not None:
                        perdocwriter.add_column_value(
                            fieldname, column, field.to_column_value(customval)
                        )
            except Exception:
                # As Whoosh's writer, whose pool keeps the postings already given: a document
                # refused part way leaves the segment unusable, and a rebuild fails whole.
                perdocwriter.cancel_doc()
                raise
            perdocwriter.finish_doc()
            self._added = True
            self.docnum += 1

        def _flush_segment(self) -> None:
            if self.pool.fieldnames:  # postings from elsewhere (a merge): Whoosh sorts them all
                self._into_pool()
                super()._flush_segment()
                return
            self.perdocwriter.close()
            self._write_postings()
            self.fieldwriter.close()

        def _into_pool(self) -> None:
            add = self.pool.add
            for fieldname, terms in self._terms.items():
                for tbytes, (ids, weights, values) in terms.items():
                    if values and len(values) != len(ids):
                        raise ValueError(f"postings of {fieldname!r} with and without values")
                    given = values or repeat(b"", len(ids))
                    for docnum, weight, vbytes in zip(ids, weights, given):
                        add((fieldname, tbytes, docnum, weight, vbytes))
            self._terms.clear()

        def _write_postings(self) -> None:
            fieldwriter = self.fieldwriter
            schema = self.schema
            for fieldname in sorted(self._terms):
                terms = self._terms[fieldname]
                if not terms:  # a field every document left without terms: no field at all
                    continue
                codes = self._length_codes.get(fieldname)
                if not schema[fieldname].scorable or not self.codec.length_stats:
                    codes = None
                fieldwriter.start_field(fieldname, schema[fieldname])
                postwriter = fieldwriter._postwriter
                limit = postwriter._blocklimit
                for tbytes in sorted(terms):
                    ids, weights, values = terms[tbytes]
                    fieldwriter.start_term(tbytes)
                    count = len(ids)
                    if values and len(values) != count:
                        raise ValueError(f"postings of {fieldname!r} with and without values")
                    for start in range(0, count, limit):
                        if start:  # a full block before this one: written as Whoosh does
                            postwriter._write_block()
                        end = min(count, start + limit)
                        block_ids = ids[start:end]
                        block_weights = weights[start:end]
                        postwriter._ids = block_ids
                        postwriter._weights = array("f", block_weights)
                        postwriter._values = values[start:end]
                        postwriter._maxweight = max(0, max(block_weights))
                        lengths = (
                            [lengths_of[codes[d]] for d in block_ids if d < len(codes)]
                            if codes is not None
                            else []
                        )
                        lengths = [length for length in lengths if length]
                        postwriter._minlength = min(lengths) if lengths else None
                        postwriter._maxlength = max(lengths) if lengths else 0
                    fieldwriter.finish_term()
                fieldwriter.finish_field()
                terms.clear()
            self._terms.clear()

    return DirectSegmentWriter


def _check_direct_segments() -> bool:
    """The writer and its parts have what the direct writer drives, and a segment it writes
    is, file by file, the bytes Whoosh's own writer writes for the same documents."""
    from whoosh.codec.whoosh3 import W3FieldWriter, W3PostingsWriter
    from whoosh.fields import ID, KEYWORD, NUMERIC, STORED, TEXT, Schema
    from whoosh.writing import SegmentWriter

    if not all(hasattr(SegmentWriter, name) for name in ("_flush_segment", "_field_boost")):
        return False
    probe_writer = memory_index(Schema(body=TEXT)).writer()
    try:
        have = all(hasattr(probe_writer, name) for name in DIRECT_WRITER_HAS)
        fieldwriter = probe_writer.fieldwriter
        have = have and isinstance(fieldwriter, W3FieldWriter)
        have = have and hasattr(probe_writer.pool, "fieldnames")
    finally:
        probe_writer.cancel()
    if not have or not all(hasattr(W3PostingsWriter, n) for n in ("_write_block", "_new_block")):
        return False
    postwriter = W3PostingsWriter(StructFile(BytesIO()), blocklimit=128)
    postwriter.start_postings(TEXT().format, None)
    if not all(hasattr(postwriter, name) for name in POSTINGS_WRITER_HAS):
        return False
    if "_postwriter" not in W3FieldWriter.start_field.__code__.co_names:
        return False

    def schema() -> Any:
        return Schema(
            key=ID(stored=True),
            body=TEXT(stored=True),
            tags=KEYWORD(commas=True),
            number=NUMERIC(int, sortable=True),
            extra=STORED,
        )

    def documents() -> Iterator[dict[str, Any]]:
        for n in range(160):  # "alpha" in 145 documents: two blocks of postings
            words = ["alpha"] * (1 + n % 4) + ["beta"] * (n % 5) + [f"w{n % 17}", f"u{n}"]
            yield {
                "key": f"k{n}",
                "body": " ".join(words) if n % 11 else None,
                "tags": ",".join(f"t{n % m}" for m in (2, 3, 7)),
                "number": n * 7 - 500,
                "extra": {"n": n},
            }

    files = []
    for direct in (False, True):
        # its own temporary folder: stock RamStorage's, $TMPDIR/probe.tmp, is shared by every
        # process on the machine, and two running this check at once failed it
        storage = _PrivateRamStorage()
        ix = storage.create_index(schema(), "probe")
        writer = _direct_writer()(ix) if direct else SegmentWriter(ix)
        for document in documents():
            writer.add_document(**document)
        writer.commit(merge=False)
        (segment,) = ix._segments()
        files.append(_segment_files(storage, segment))
    return files[0] == files[1] and len(files[0]) > 3


def _segment_files(storage: Any, segment: Any) -> dict[str, bytes]:
    """A segment's files (its parts, where compound) by name without the segment's id."""
    name = segment.make_filename("")
    found = {}
    if segment.is_compound():  # its file holds its parts' names, with the segment's id
        compound = segment.open_compound_file(storage)
        for part in sorted(compound.list()):
            found[part.replace(name, "")] = compound.open_file(part).read()
        compound.close()
    else:
        for part in storage.list():
            if part.startswith(name):
                found[part.replace(name, "")] = storage.open_file(part).read()
    return found


def _lengths_in_memory(writer: Any) -> None:
    """Writing a segment's postings, Whoosh asks for the length of the posting's field in its
    document, one posting at a time: a lookup of the field's length column by name (a file
    check where the field has none) and a read of one byte through the column's reader, a
    sixth of a rebuild's CPU time. Here each length column is read once, whole, and a field
    without one is known to have none: the same lengths (``_check_written_lengths``)."""
    from whoosh.codec.whoosh3 import LENGTHS_COLUMN, _lenfield

    open_reader = writer.per_document_reader

    def per_document_reader() -> Any:
        reader = open_reader()
        count = reader.doc_count_all()
        for name in writer.schema.names():
            lengths = _lenfield(name)
            if not reader.has_column(lengths):
                reader._readers[lengths] = None
                continue
            column = reader.column_reader(lengths, LENGTHS_COLUMN)
            reader._readers[lengths] = (
                _numeric_in_one_piece(column, count) if usable("numeric") else array("B", column)
            )
        return reader

    writer.per_document_reader = per_document_reader


def _check_written_lengths() -> bool:
    """A segment written with the lengths in memory reads the same lengths and scores as one
    written by Whoosh alone."""
    from whoosh.codec.whoosh3 import W3PerDocReader
    from whoosh.fields import ID, TEXT, Schema
    from whoosh.writing import SegmentWriter

    if "_readers" not in W3PerDocReader._cached_reader.__code__.co_names:
        return False
    if not hasattr(SegmentWriter, "per_document_reader"):
        return False
    texts = ["alpha beta beta", "beta", "", "gamma alpha alpha alpha delta"]
    found = []
    for in_memory in (False, True):
        ix = memory_index(Schema(key=ID(stored=True), text=TEXT))
        writer = ix.writer()
        if in_memory:
            _lengths_in_memory(writer)
        for number, text in enumerate(texts):
            writer.add_document(key=str(number), text=text)
        writer.commit()
        with ix.searcher() as searcher:
            reader = searcher.reader()
            terms = [
                (field, text, info.min_length(), info.max_length(), list(matcher.all_items()))
                for field, text in reader.all_terms()
                for info, matcher in [(reader.term_info(field, text), reader.postings(field, text))]
            ]
            found.append(terms)
    return found[0] == found[1] and bool(found[0])


def _check_segments() -> bool:
    from whoosh.writing import SegmentWriter

    return all(hasattr(SegmentWriter, name) for name in SEGMENT_WRITER_HAS[:-1])


_CHECKS = {
    "parts": _check_parts,
    "numeric": _check_numeric,
    "deleted": _check_deleted,
    "toc": _check_toc,
    "segments": _check_segments,
    "written lengths": _check_written_lengths,
    "direct segments": _check_direct_segments,
}


# ---------------------------------------------------------------- postings and field lengths
# For the chunk index (lantern_git.index.chunks), which scores a plain word query itself: Whoosh
# scores one posting per Python call through three layers of matcher and scorer (~6 us each, a
# quarter of a second for a word in 40k chunks). Read in bulk, the same numbers give the same
# BM25F scores in a few milliseconds.

# Names ``W3LeafMatcher`` keeps each block's postings under, and where ``SegmentReader`` keeps
# its per-document reader (which holds the field-length columns).
W3_MATCHER_HAS = ("_read_ids", "_read_weights", "_next_block", "_ids", "_weights")
W3_MATCHER_VALUES = ("_read_ids", "_read_values", "_next_block", "_ids", "_values")
SEGMENT_READER_PERDOC = ("_perdoc",)
PROBE_DOCS = 150


# A segment's postings never change (a delete only marks documents; a merge makes a new
# segment), and reading them is most of a keyword search: each block of postings is a pickle
# holding every posting's positions too (100k records, a query of three common words: ~60 ms of
# ~100). The last ones read are kept, up to this many postings in all (12 bytes each: 24 MB).
POSTINGS_KEPT = 2_000_000
_postings: LRUCache[tuple[Any, ...], tuple[array[int], array[float]]] = LRUCache(
    POSTINGS_KEPT, getsizeof=lambda found: len(found[0])
)
_postings_lock = threading.Lock()


def term_postings(reader: Any, fieldname: str, text: str) -> tuple[Sequence[int], Sequence[float]]:
    """A segment's postings of one term: document numbers (relative to the segment, deleted
    ones included) and weights (the term's frequency in each), read block by block
    (``W3LeafMatcher``'s ``_ids`` and ``_weights``) where the check allows; kept by segment
    and term (the segment's id, the term's place in its postings file and its document count)
    for the process."""
    from whoosh.codec.whoosh3 import W3LeafMatcher

    key = postings_key(reader, fieldname, text)
    if key is not None:
        with _postings_lock:
            found = _postings.get(key)
        if found is not None:
            return found[0][:], found[1][:]  # copies: the kept arrays stay as read
    matcher = reader.postings(fieldname, text)
    if isinstance(matcher, W3LeafMatcher) and usable("postings"):
        ids, weights = _postings_by_block(matcher)
    else:
        ids, weights = _postings_one_by_one(matcher)
    # Arrays whether kept or not, so that no caller works with one and fails with the other.
    read = (array("I" if max(ids, default=0) < 2**32 else "Q", ids), array("d", weights))
    if key is not None:
        with _postings_lock, contextlib.suppress(ValueError):  # above the whole budget
            _postings[key] = read
        return read[0][:], read[1][:]
    return read


def postings_key(reader: Any, fieldname: str, text: str) -> tuple[Any, ...] | None:
    """What identifies a term's postings in a segment, which never change (for a caller that
    keeps what it derives from them, as :func:`term_postings` keeps them); None for a reader of
    several segments or a term info without a place in the postings file (another codec)."""
    segment = reader.segment() if hasattr(reader, "segment") else None
    if segment is None:
        return None
    info = reader.term_info(fieldname, text)
    extent = info.extent() if hasattr(info, "extent") else None  # W3TermInfo's
    place = extent[0] if isinstance(extent, tuple) else None
    if not isinstance(place, int):
        return None  # postings inlined in the term's entry: a few, read at once anyway
    return (
        _index_folder(getattr(reader, "_storage", None)),
        segment.segment_id(),
        fieldname,
        text,
        place,
        info.doc_frequency(),
    )


def _index_folder(storage: Any) -> Any:
    """The folder of the index a reader reads (an in-memory index: the storage itself).
    Whoosh names segments from the ``random`` module, so a process that seeds it alike before
    building two indexes gets the same segment names in both: the name alone is not enough."""
    while storage is not None and not hasattr(storage, "folder") and hasattr(storage, "b"):
        storage = storage.b  # a compound segment's overlay on the index's own storage
    folder = getattr(storage, "folder", None)
    return folder if isinstance(folder, str) else id(storage)


def _postings_by_block(matcher: Any) -> tuple[list[int], list[float]]:
    ids: list[int] = []
    weights: list[float] = []
    while matcher.is_active():
        matcher._read_ids()
        matcher._read_weights()
        ids.extend(matcher._ids)
        weights.extend(matcher._weights)
        matcher._next_block()
    return ids, weights


def _postings_one_by_one(matcher: Any) -> tuple[list[int], list[float]]:
    ids: list[int] = []
    weights: list[float] = []
    while matcher.is_active():
        ids.append(matcher.id())
        weights.append(matcher.weight())
        matcher.next()
    return ids, weights


def term_positions(
    reader: Any, fieldname: str, text: str, docs: Iterable[int]
) -> dict[int, list[int]]:
    """Positions of one term in each of ``docs`` (segment document numbers, ascending) that
    holds it. Only the blocks holding one of them have their postings' values read and
    decoded (``W3LeafMatcher``'s ``_values``), where the check allows."""
    from whoosh.codec.whoosh3 import W3LeafMatcher

    matcher = reader.postings(fieldname, text)
    if isinstance(matcher, W3LeafMatcher) and usable("positions"):
        return _positions_by_block(matcher, docs)
    return _positions_one_by_one(matcher, docs)


def _positions_by_block(matcher: Any, docs: Iterable[int]) -> dict[int, list[int]]:
    decode = matcher.format.decoder("positions")
    wanted = set(docs)
    found: dict[int, list[int]] = {}
    while matcher.is_active() and wanted:
        if matcher.block_max_id() >= min(wanted):
            matcher._read_ids()
            ids = matcher._ids
            hits = [i for i, docnum in enumerate(ids) if docnum in wanted]
            if hits:
                matcher._read_values()
                values = matcher._values
                for i in hits:
                    found[ids[i]] = list(decode(values[i]))
                    wanted.discard(ids[i])
        matcher._next_block()
    return found


def _positions_one_by_one(matcher: Any, docs: Iterable[int]) -> dict[int, list[int]]:
    found: dict[int, list[int]] = {}
    for docnum in docs:
        if not matcher.is_active():
            break
        matcher.skip_to(docnum)
        if matcher.is_active() and matcher.id() == docnum:
            found[docnum] = list(matcher.value_as("positions"))
    return found


def field_length_codes(reader: Any, fieldname: str) -> tuple[Any, list[int]]:
    """(code of each document's length in ``fieldname``, length of each code): Whoosh keeps a
    field's lengths as one byte per document (``length_to_byte``), in a column of the
    segment's per-document reader (``SegmentReader._perdoc``), read here in one piece. Code 0:
    the document has no such field."""
    from whoosh.reading import SegmentReader
    from whoosh.util.numeric import length_to_byte

    table = _length_table()
    if isinstance(reader, SegmentReader) and usable("lengths"):
        return _codes_in_one_piece(reader, fieldname), table
    count = reader.doc_count_all()
    codes = array(
        "B", (length_to_byte(reader.doc_field_length(d, fieldname, 0)) for d in range(count))
    )
    return codes, table


@functools.lru_cache(maxsize=1)
def _length_table() -> list[int]:
    from whoosh.util.numeric import byte_to_length

    return [0] + [byte_to_length(code) for code in range(1, 256)]


def _codes_in_one_piece(reader: Any, fieldname: str) -> Any:
    from whoosh.codec.whoosh3 import LENGTHS_COLUMN

    count = reader.doc_count_all()
    column = reader._perdoc._cached_reader(f"_{fieldname}_len", LENGTHS_COLUMN)
    if column is None:
        return bytes(count)
    if usable("numeric") and all(hasattr(column, name) for name in NUMERIC_READER_HAS):
        return _numeric_in_one_piece(column, count)
    return array("B", column)


@functools.lru_cache(maxsize=1)
def _probe_index() -> Any:
    """A small index in memory whose word ``alpha`` spans two posting blocks (128 postings
    each), with varied frequencies and lengths."""
    from whoosh.fields import TEXT, Schema

    ix = memory_index(Schema(body=TEXT))
    writer = ix.writer()
    for n in range(PROBE_DOCS):
        writer.add_document(body=" ".join(["alpha"] * (1 + n % 3) + ["beta"] * (n % 7)))
    writer.commit()
    return ix


def _check_postings() -> bool:
    from whoosh.codec.whoosh3 import W3LeafMatcher

    with _probe_index().reader() as reader:
        probe = reader.postings("body", "alpha")
        if not isinstance(probe, W3LeafMatcher):
            return False
        if not all(hasattr(probe, name) for name in W3_MATCHER_HAS):
            return False
        ours = _postings_by_block(reader.postings("body", "alpha"))
        theirs = _postings_one_by_one(reader.postings("body", "alpha"))
        return ours == theirs and len(ours[0]) == PROBE_DOCS


def _check_lengths() -> bool:
    from whoosh.reading import SegmentReader
    from whoosh.util.numeric import byte_to_length

    with _probe_index().reader() as reader:
        if not isinstance(reader, SegmentReader) or not all(
            hasattr(reader, name) for name in SEGMENT_READER_PERDOC
        ):
            return False
        codes = _codes_in_one_piece(reader, "body")
        lengths = [byte_to_length(code) for code in codes]
        return lengths == [reader.doc_field_length(d, "body", 0) for d in range(PROBE_DOCS)]


def _check_positions() -> bool:
    from whoosh.codec.whoosh3 import W3LeafMatcher

    with _probe_index().reader() as reader:
        probe = reader.postings("body", "alpha")
        if not isinstance(probe, W3LeafMatcher):
            return False
        if not all(hasattr(probe, name) for name in W3_MATCHER_VALUES):
            return False
        docs = [0, 1, 2, 5, 130, PROBE_DOCS - 1]
        ours = _positions_by_block(reader.postings("body", "alpha"), docs)
        theirs = _positions_one_by_one(reader.postings("body", "alpha"), docs)
        return ours == theirs and ours[2] == [0, 1, 2]


_CHECKS["postings"] = _check_postings
_CHECKS["positions"] = _check_positions
_CHECKS["lengths"] = _check_lengths
