"""Where segment key indexes live: a process-wide cache, then a file beside the table, then the data file.

:func:`segment_index` answers from the first of these that has an intact index of the file:

1. **The cache** (:data:`CACHE`): indexes used recently by this process, up to a byte budget. An
   optimizer is a long-running process, so after a table's first minor every later one finds
   its big segments here and pays only for the change.
2. **The index file** ``<BaseStore location>/key-index/<data file's path below the location>.keys``
   (a data file elsewhere: ``key-index/external/<sha1 of its path>.keys``), written when the
   index of a file of at least :data:`PERSIST_MIN_ROWS` rows is built, so a restarted optimizer
   does not read a big segment's keys again. One whose identity or checksum does not match is
   ignored and overwritten. Smaller files are not worth it: an index is about as big as the key
   columns (20 bytes a row for one ``long`` key), and small files are rewritten soon, so their
   index files raised the bytes a streaming table's optimizer wrote markedly (``make
   bench-peers``: ``bench/results/peers-2026-12-02-c4f55d4.json``, against
   ``peers-2026-12-01-a36fe34.json`` that wrote every index), to spare the read of a few key columns.
3. **The data file**: its key columns are read and the index is built, cached and written.

Index files are a cache, never a source of truth: losing one costs a rebuild. Orphan cleaning
removes those whose data file is no longer live (:func:`index_location` names them).
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Sequence

import pyarrow as pa
from pyiceberg.table import Table

from mixed_iceberg.caching import LruCache
from mixed_iceberg.optimizing.key_index import IndexedFile, SegmentIndex
from mixed_iceberg.reader.file_reads import read_file_columns

__all__ = ["CACHE", "INDEX_FOLDER", "PERSIST_MIN_ROWS", "index_cache", "index_location", "remember_index", "segment_index"]

log = logging.getLogger(__name__)

INDEX_FOLDER = "key-index"


def index_cache(budget_bytes: int) -> LruCache[IndexedFile, SegmentIndex]:
    """A cache of segment indexes holding at most ``budget_bytes`` of them."""
    return LruCache(budget_bytes, sizeof=lambda index: index.nbytes)


#: The process's indexes: 1 GiB holds the keys of about 50M rows of a single long key.
CACHE = index_cache(1 << 30)

#: Files with fewer rows get no index file (see the module docstring): rebuilding theirs
#: reads under 1M keys (a single column, no index file to manage).
PERSIST_MIN_ROWS = 1_000_000


def index_location(store: Table, data_path: str) -> str:
    """Where the index file of ``data_path`` (a data file of ``store``) lives."""
    location = store.metadata.location.rstrip("/")
    if data_path.startswith(location + "/"):
        return f"{location}/{INDEX_FOLDER}/{data_path[len(location) + 1 :]}.keys"
    return f"{location}/{INDEX_FOLDER}/external/{hashlib.sha1(data_path.encode()).hexdigest()}.keys"


def _read_index_file(store: Table, file: IndexedFile, keys: Sequence[str]) -> SegmentIndex | None:
    location = index_location(store, file.path)
    try:
        stream = store.io.new_input(location)
        if not stream.exists():
            return None
        with stream.open() as handle:
            data = handle.read()
    except OSError as exc:
        log.debug("%s: key index not read: %s", location, exc)
        return None
    index = SegmentIndex.parse(data, file, keys)
    if index is None:
        log.warning("%s: key index refused (another file's, or damaged); rebuilding it", location)
    return index


def _write_index_file(store: Table, index: SegmentIndex) -> None:
    location = index_location(store, index.file.path)
    try:
        with store.io.new_output(location).create(overwrite=True) as out:
            out.write(index.serialize())
    except OSError as exc:  # a cache: the next use rebuilds it
        log.warning("%s: key index not written: %s", location, exc)


def _build(store: Table, file: IndexedFile, keys: Sequence[str]) -> SegmentIndex:
    return SegmentIndex.build(file, read_file_columns(store.io, file.path, keys))


def segment_index(
    store: Table, file: IndexedFile, keys: Sequence[str], *, cache: LruCache[IndexedFile, SegmentIndex] = CACHE
) -> SegmentIndex:
    """The key index of ``file``, a data file of ``store`` (see the module docstring).

    Raises:
        CorruptTableError: the data file holds another number of rows than its manifest says.
    """
    found = cache.get(file)
    if found is not None and found.keys.column_names == list(keys):
        return found
    index = _read_index_file(store, file, keys) if file.records >= PERSIST_MIN_ROWS else None
    if index is None:
        return _keep(store, _build(store, file, keys), cache)
    cache.put(file, index)
    return index


def _keep(store: Table, index: SegmentIndex, cache: LruCache[IndexedFile, SegmentIndex]) -> SegmentIndex:
    """Cache a freshly built index, and persist it when its file is large enough."""
    if index.file.records >= PERSIST_MIN_ROWS:
        _write_index_file(store, index)
    cache.put(index.file, index)
    return index


def remember_index(
    store: Table, file: IndexedFile, keys: pa.Table, *, cache: LruCache[IndexedFile, SegmentIndex] = CACHE
) -> None:
    """Index a data file the optimizer has just written from the key columns it wrote (in file
    order), so that the next minor does not read them back; persisted as :func:`segment_index`
    would."""
    _keep(store, SegmentIndex.build(file, keys), cache)
