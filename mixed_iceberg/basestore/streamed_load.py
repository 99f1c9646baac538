"""Bulk load from a stream of record batches, with memory bounded by the open files, not the input.

Batches are split by partition and tree node as they arrive; each (partition, node) buffers
rows until it holds a target file's worth (``write.target-file-size-bytes`` of Arrow memory),
and is written then, so at most ``buffer_files`` target files of rows are held at once (the
largest buffer is written early beyond that). What stays in memory for the whole load is the
key columns of a keyed table and one arrival number per row: a key repeated across batches
keeps its last row, and the earlier rows are deleted by position-delete files committed in the
same snapshot (the spec's own way of superseding a row, cleaned up by the next optimizing).

A stream repeating a key of a table whose merge engine is not the default (the rows of a key
then combine rather than replace) is refused; its written files are deleted.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt
import pyarrow as pa
from pyiceberg.manifest import DataFile
from pyiceberg.table import Table
from pyiceberg.typedef import Record

from mixed_iceberg.exceptions import MissingKeyError, RepeatedKeyError
from mixed_iceberg.format import DataTreeNode, WriterIdentity
from mixed_iceberg.merge.group import DEDUPLICATE, Tail, merge_group
from mixed_iceberg.merge.latest import LSN
from mixed_iceberg.schema import arrow_schema, conform
from mixed_iceberg.store.write.data_file import data_location
from mixed_iceberg.store.write.layout import RowGroup, split_rows
from mixed_iceberg.store.write.parallel import write_groups
from mixed_iceberg.store.write.position_deletes import write_position_deletes
from mixed_iceberg.typedef import DataFileType

__all__ = ["StreamedFiles", "write_stream"]

#: A row's place in the input, carried through routing and the merge.
_ARRIVAL = "__arrival"
#: Target files of rows buffered at most before the largest buffer is written early.
BUFFER_FILES = 8


@dataclass(slots=True)
class StreamedFiles:
    """What a streamed load wrote: data files, and position deletes for superseded rows."""

    data: list[DataFile] = field(default_factory=list)
    deletes: list[DataFile] = field(default_factory=list)
    partition_paths: set[str] = field(default_factory=set)
    rows: int = 0


@dataclass(slots=True)
class _Buffer:
    partition: Record
    partition_path: str
    node: DataTreeNode
    tables: list[pa.Table] = field(default_factory=list)
    arrivals: list[npt.NDArray[np.int64]] = field(default_factory=list)
    nbytes: int = 0


@dataclass(slots=True)
class _Written:
    """Per written data file: its keys and the arrival number of each of its rows, in file order."""

    files: list[DataFile] = field(default_factory=list)
    nodes: list[DataTreeNode] = field(default_factory=list)
    partition_paths: list[str] = field(default_factory=list)
    keys: list[pa.Table] = field(default_factory=list)
    arrivals: list[npt.NDArray[np.int64]] = field(default_factory=list)


def _checked(batch: pa.RecordBatch, target: pa.Schema, primary_key: tuple[str, ...], table: str) -> pa.Table:
    rows = pa.Table.from_batches([batch])
    for key in primary_key:
        if key in rows.column_names and rows.column(key).null_count:
            raise MissingKeyError(
                f"{table}: primary key column {key!r} expected non-null, found {rows.column(key).null_count} null(s)"
            )
    return conform(rows, target, table_name=table)


def write_stream(
    store: Table,
    batches: Iterator[pa.RecordBatch],
    *,
    table: str,
    primary_key: tuple[str, ...],
    buckets: int,
    target_bytes: int,
    transaction_id: int,
    replaces_by_key: bool,
    buffer_files: int = BUFFER_FILES,
) -> StreamedFiles:
    """Write ``batches`` as data files of ``store`` (not committed), superseded rows as deletes.

    Args:
        replaces_by_key: whether a repeated key's last row replaces the earlier ones (the
            default merge engine); if not, a repeated key is refused.

    Raises:
        MissingKeyError: a key column holds nulls.
        SchemaMismatchError: the columns do not match the table.
        RepeatedKeyError: a key repeats and ``replaces_by_key`` is false.
        Every error deletes the files written so far.
    """
    target = arrow_schema(store.schema())
    writer = WriterIdentity()
    buffers: dict[tuple[str, int], _Buffer] = {}
    written = _Written()
    result = StreamedFiles()

    def flush(key: tuple[str, int]) -> None:
        buffer = buffers.pop(key)
        rows = pa.concat_tables(buffer.tables)
        group = RowGroup(buffer.partition, buffer.partition_path, buffer.node, rows)
        (data_file,) = write_groups(
            store, [group], store.schema(), lambda g: writer.file_name(g.node, DataFileType.BASE_FILE, transaction_id)
        )
        written.files.append(data_file)
        written.partition_paths.append(buffer.partition_path)
        if primary_key:
            written.nodes.append(buffer.node)
            written.keys.append(rows.select(list(primary_key)))
            written.arrivals.append(np.concatenate(buffer.arrivals))

    try:
        arrived = 0
        for batch in batches:
            if batch.num_rows == 0:
                continue
            rows = _checked(batch, target, primary_key, table)
            arrival = np.arange(arrived, arrived + rows.num_rows, dtype=np.int64)
            arrived += rows.num_rows
            numbered = rows.append_column(_ARRIVAL, pa.array(arrival))
            for group in split_rows(store, numbered, primary_key, buckets):
                key = (group.partition_path, group.node.id)
                buffer = buffers.setdefault(key, _Buffer(group.partition, group.partition_path, group.node))
                buffer.tables.append(group.rows.drop_columns([_ARRIVAL]))
                buffer.arrivals.append(group.rows.column(_ARRIVAL).to_numpy())
                buffer.nbytes += group.rows.nbytes
                if buffer.nbytes >= target_bytes:
                    flush(key)
            while buffers and sum(b.nbytes for b in buffers.values()) > buffer_files * target_bytes:
                flush(max(buffers, key=lambda k: buffers[k].nbytes))
        for key in list(buffers):
            flush(key)
        result.data = written.files
        result.partition_paths = set(written.partition_paths)
        result.rows = arrived
        if primary_key and written.files:
            result.deletes = _supersede(store, written, table, replaces_by_key, writer, transaction_id)
    except BaseException:
        _delete(store, [*written.files, *result.deletes])
        raise
    return result


def _supersede(
    store: Table, written: _Written, table: str, replaces_by_key: bool, writer: WriterIdentity, transaction_id: int
) -> list[DataFile]:
    """Position deletes for every row whose key arrives again later (keys only, vectorized)."""
    keys = pa.concat_tables(written.keys)
    arrivals = np.concatenate(written.arrivals)
    # The rows read as +I rows in arrival order: the merge keeps each key's last one.
    inserts = keys.append_column(_ARRIVAL, pa.array(arrivals)).append_column(LSN, pa.array(arrivals))
    merged = merge_group(DEDUPLICATE, keys.column_names, [], Tail(inserts, inserts.slice(0, 0)))
    is_last = np.zeros(int(arrivals.max()) + 1, dtype=bool)
    is_last[merged.table().column(_ARRIVAL).to_numpy()] = True
    superseded = ~is_last[arrivals]
    if not superseded.any():
        return []
    if not replaces_by_key:
        raise RepeatedKeyError(
            f"{table}: a streamed bulk load repeats {int(superseded.sum())} key(s), and the table's merge engine combines "
            "a key's rows rather than keeping the last; load it as one pyarrow Table, or without repeated keys"
        )
    sizes = [len(a) for a in written.arrivals]
    bounds = np.cumsum([0, *sizes])
    deletes = []
    for i, data_file in enumerate(written.files):
        positions = np.flatnonzero(superseded[bounds[i] : bounds[i + 1]]).astype(np.int64)
        if len(positions) == 0:
            continue
        name = writer.file_name(written.nodes[i], DataFileType.POS_DELETE_FILE, transaction_id)
        location = data_location(store.location(), written.partition_paths[i], name)
        deletes.append(
            write_position_deletes(
                store.io,
                location,
                pa.repeat(pa.scalar(data_file.file_path, pa.string()), len(positions)),
                pa.array(positions),
                spec_id=data_file.spec_id,
                partition=data_file.partition,
                properties=store.properties,
            )
        )
    return deletes


def _delete(store: Table, files: list[DataFile]) -> None:
    for f in files:
        with contextlib.suppress(OSError):  # what cannot be deleted is left for orphan cleaning
            store.io.delete(f.file_path)
