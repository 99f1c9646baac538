"""Write row groups as named data files of one store, in parallel.

The writer threads live as long as the process: starting four threads for every small
commit cost more than writing its files.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor

from pyiceberg.manifest import DataFile
from pyiceberg.schema import Schema
from pyiceberg.table import Table

from mixed_iceberg.store.write.data_file import data_location, write_data_file
from mixed_iceberg.store.write.layout import RowGroup

__all__ = ["write_groups", "writer_pool"]

_WRITERS = 4
_pool: ThreadPoolExecutor | None = None
_pool_lock = threading.Lock()


def writer_pool() -> ThreadPoolExecutor:
    """The process's writer threads (four), shared by every writer of many files."""
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = ThreadPoolExecutor(max_workers=_WRITERS, thread_name_prefix="mixed-iceberg-writer")
        return _pool


def write_groups(
    store: Table, groups: Sequence[RowGroup], file_schema: Schema, name: Callable[[RowGroup], str]
) -> list[DataFile]:
    """One Parquet file per group, named by ``name``, written by up to four threads.

    Must not be called from a writer thread (the pool would wait on itself).
    """
    spec_id = store.spec().spec_id
    properties = store.properties
    jobs = [(data_location(store.location(), group.partition_path, name(group)), group) for group in groups]

    def write(job: tuple[str, RowGroup]) -> DataFile:
        path, group = job
        return write_data_file(
            store.io, path, group.rows, file_schema, spec_id=spec_id, partition=group.partition, properties=properties
        )

    if len(jobs) <= 1:
        return [write(job) for job in jobs]
    return list(writer_pool().map(write, jobs))
