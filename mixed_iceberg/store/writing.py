"""Write row groups as named data files of one store, in parallel."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor

from pyiceberg.manifest import DataFile
from pyiceberg.schema import Schema
from pyiceberg.table import Table

from mixed_iceberg.store.datafiles import data_location, write_data_file
from mixed_iceberg.store.layout import RowGroup

__all__ = ["write_groups"]


def write_groups(
    store: Table, groups: Sequence[RowGroup], file_schema: Schema, name: Callable[[RowGroup], str]
) -> list[DataFile]:
    """One Parquet file per group, named by ``name``, written by up to four threads."""
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
    with ThreadPoolExecutor(max_workers=min(4, len(jobs))) as pool:
        return list(pool.map(write, jobs))
