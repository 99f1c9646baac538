"""Bulk load: the initial snapshot of an existing dataset, or rows that replace their keys.

A batch that repeats a key keeps the key's last row (the batch is read as +I rows in order).
Into an empty keyed table (and with ``overwrite``) rows are bucketed by key into ``B`` files
(Amoro's layout) and committed to the BaseStore in one snapshot; their transaction id is the
ChangeStore's current sequence. ``overwrite`` replaces every base file and advances the
optimized sequence of every partition, so the table then reads exactly as the loaded rows.
Into a keyed table that already holds rows they are committed as ``+I`` change rows, so that
each replaces its key's row (the BaseStore keeps at most one live row per key, which is what
lets readers probe only the keys of the change tail).
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, TypeAlias

import numpy as np
import pyarrow as pa
import pyarrow.dataset as ds
from pyiceberg.manifest import DataFile, DataFileContent
from pyiceberg.table import Transaction

from mixed_iceberg.basestore.optimized_sequence import (
    read_optimized_sequence,
    stage_optimized_sequence,
    summary_flags,
)
from mixed_iceberg.basestore.streamed_load import write_stream
from mixed_iceberg.changestore.batch import ACTION_COLUMN
from mixed_iceberg.changestore.transaction import ChangeTransaction
from mixed_iceberg.exceptions import MissingKeyError
from mixed_iceberg.format import WriterIdentity
from mixed_iceberg.merge.group import Tail, merge_group
from mixed_iceberg.merge.latest import LSN
from mixed_iceberg.schema import arrow_schema, conform
from mixed_iceberg.store.commit import CommitOutcome, Stager, commit_files, last_committed_sequence
from mixed_iceberg.store.manifests.live_files import live_files
from mixed_iceberg.store.write.layout import partition_path, split_sized
from mixed_iceberg.store.write.parallel import write_groups
from mixed_iceberg.typedef import CommitId, DataFileType

if TYPE_CHECKING:
    from mixed_iceberg.handle import TableHandle

__all__ = ["bulk_load"]


#: What ``bulk_load`` reads: rows in memory, or a stream of them.
LoadInput: TypeAlias = pa.Table | pa.RecordBatch | pa.RecordBatchReader | ds.Dataset | ds.Scanner | Iterable[pa.RecordBatch]


def bulk_load(
    table: TableHandle, data: LoadInput, *, overwrite: bool = False, commit_id: CommitId | None = None
) -> CommitOutcome:
    """Load ``data`` (exactly the table's columns) into the BaseStore.

    A ``pyarrow.Table`` or ``RecordBatch`` is loaded as it is. A ``RecordBatchReader``, a
    ``pyarrow.dataset`` Dataset or Scanner, or any iterable of record batches is streamed
    (:mod:`mixed_iceberg.basestore.streamed_load`): memory is bounded by the files being
    written, not by the input. Into a keyed table that already holds rows (and without
    ``overwrite``) the rows are change rows of one transaction, which holds them until it
    commits.

    Raises:
        MissingKeyError: a key column holds nulls.
        SchemaMismatchError: the columns do not match the table.
        RepeatedKeyError: a streamed input repeats a key of a table whose merge engine
            combines a key's rows.
    """
    if commit_id is not None and _already_committed(table, commit_id):
        return CommitOutcome.skip()
    if not isinstance(data, pa.Table | pa.RecordBatch):
        return _load_stream(table, _batches(data), overwrite=overwrite, commit_id=commit_id)
    if isinstance(data, pa.RecordBatch):
        data = pa.Table.from_batches([data])
    for key in table.primary_key:
        if key in data.column_names and data.column(key).null_count:
            raise MissingKeyError(
                f"{table.name}: primary key column {key!r} expected non-null, found {data.column(key).null_count} null(s)"
            )
    rows = conform(data, arrow_schema(table.schema()), table_name=table.name)
    base = table.base_store
    if table.is_keyed and rows.num_rows:
        rows = _one_per_key(table, rows)
    if table.is_keyed and not overwrite and _holds_rows(table):
        with ChangeTransaction(table, commit_id) as txn:
            txn.write(_as_inserts(rows))
        assert txn.outcome is not None
        return txn.outcome
    transaction_id = _transaction_id(table)
    layout = table.config.layout
    groups = split_sized(base, rows, table.primary_key, layout.base_buckets, layout.target_file_size)
    writer = WriterIdentity()
    files = write_groups(base, groups, base.schema(), lambda g: writer.file_name(g.node, DataFileType.BASE_FILE, transaction_id))
    return _commit(table, files, [], {g.partition_path for g in groups}, overwrite, commit_id, transaction_id)


def _batches(data: LoadInput) -> Iterator[pa.RecordBatch]:
    if isinstance(data, ds.Dataset):
        return iter(data.to_batches())
    if isinstance(data, ds.Scanner):
        return iter(data.to_batches())
    return iter(data)


def _as_inserts(rows: pa.Table) -> pa.Table:
    return rows.append_column(ACTION_COLUMN, pa.array(np.full(rows.num_rows, "+I"), pa.string()))


def _transaction_id(table: TableHandle) -> int:
    """The ChangeStore's current sequence: the transaction id of loaded base files (0 unkeyed)."""
    change = table.change_store
    snapshot = change.current_snapshot() if change is not None else None
    return (snapshot.sequence_number or 0) if snapshot is not None else 0


def _load_stream(
    table: TableHandle, batches: Iterator[pa.RecordBatch], *, overwrite: bool, commit_id: CommitId | None
) -> CommitOutcome:
    if table.is_keyed and not overwrite and _holds_rows(table):
        target = arrow_schema(table.schema())
        with ChangeTransaction(table, commit_id) as txn:
            for batch in batches:
                txn.write(_as_inserts(conform(pa.Table.from_batches([batch]), target, table_name=table.name)))
        assert txn.outcome is not None
        return txn.outcome
    transaction_id = _transaction_id(table)
    layout = table.config.layout
    written = write_stream(
        table.base_store,
        batches,
        table=table.name,
        primary_key=table.primary_key,
        buckets=layout.base_buckets,
        target_bytes=layout.target_file_size,
        transaction_id=transaction_id,
        replaces_by_key=table.merge_config.is_default,
    )
    return _commit(table, written.data, written.deletes, written.partition_paths, overwrite, commit_id, transaction_id)


def _commit(
    table: TableHandle,
    files: list[DataFile],
    deletes: list[DataFile],
    partition_paths: set[str],
    overwrite: bool,
    commit_id: CommitId | None,
    transaction_id: int,
) -> CommitOutcome:
    """Commit loaded files (and, with ``overwrite``, replace everything live)."""
    base = table.base_store
    change = table.change_store
    deleted: list[DataFile] = []
    deleted_deletes: list[DataFile] = []
    summary: dict[str, str] = {}
    stage: Stager | None = None
    if overwrite:
        live = [f.data_file for f in live_files(base, base.current_snapshot())]
        deleted = [f for f in live if f.content == DataFileContent.DATA]
        deleted_deletes = [f for f in live if f.content != DataFileContent.DATA]
        if table.is_keyed:
            assert change is not None
            paths = set(partition_paths) | set(read_optimized_sequence(base, base.current_snapshot()))
            paths |= {partition_path(change, f.data_file) for f in live_files(change, change.current_snapshot())}
            now = int(time.time() * 1000)
            sequences = dict.fromkeys(paths, transaction_id)
            times = dict.fromkeys(paths, now)

            def stage(txn: Transaction, snapshot_id: int) -> None:
                stage_optimized_sequence(txn, snapshot_id, sequences, times)

            summary = summary_flags()
    return commit_files(
        base,
        added=files,
        deleted=deleted,
        added_deletes=deletes,
        deleted_deletes=deleted_deletes,
        commit_id=commit_id,
        summary=summary,
        stage=stage,
        table_name=table.name,
    )


def _one_per_key(table: TableHandle, rows: pa.Table) -> pa.Table:
    """One row per key: the batch read as +I rows in order, merged by the table's merge engine
    (by default the last row of a repeated key, input order kept)."""
    inserts = rows.append_column(LSN, pa.array(np.arange(1, rows.num_rows + 1, dtype=np.int64)))
    merged = merge_group(table.merge_config, table.primary_key, [], Tail(inserts, inserts.slice(0, 0)))
    return merged.table().select(rows.column_names)


def _already_committed(table: TableHandle, commit_id: CommitId) -> bool:
    """Whether either store already recorded ``commit_id`` (a load may have gone to either)."""
    stores = [table.base_store, *([table.change_store] if table.change_store is not None else [])]
    return any((last := last_committed_sequence(s, commit_id.writer)) is not None and last >= commit_id.sequence for s in stores)


def _holds_rows(table: TableHandle) -> bool:
    """Whether the BaseStore has a live data file or the ChangeStore any file (from metadata)."""
    base = table.base_store
    if any(f.data_file.content == DataFileContent.DATA for f in live_files(base, base.current_snapshot())):
        return True
    change = table.change_store
    return change is not None and bool(live_files(change, change.current_snapshot()))
