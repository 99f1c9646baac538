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
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa
from pyiceberg.manifest import DataFileContent
from pyiceberg.table import Transaction

from mixed_iceberg.basestore.optimized_sequence import (
    read_optimized_sequence,
    stage_optimized_sequence,
    summary_flags,
)
from mixed_iceberg.changestore.batch import ACTION_COLUMN
from mixed_iceberg.exceptions import MissingKeyError
from mixed_iceberg.reader.engines import merge_by_engine
from mixed_iceberg.reader.merge import LSN, key_codes
from mixed_iceberg.schema import arrow_schema, conform
from mixed_iceberg.store.commit import CommitOutcome, Stager, commit_files, last_committed_sequence
from mixed_iceberg.store.entries import live_files
from mixed_iceberg.store.layout import partition_path, split_sized
from mixed_iceberg.store.writing import write_groups
from mixed_iceberg.typedef import CommitId, DataFileType

if TYPE_CHECKING:
    from mixed_iceberg.table import MixedTable

__all__ = ["bulk_load"]


def bulk_load(
    table: MixedTable, data: pa.Table | pa.RecordBatch, *, overwrite: bool = False, commit_id: CommitId | None = None
) -> CommitOutcome:
    """Load ``data`` (exactly the table's columns) into the BaseStore.

    Raises:
        MissingKeyError: a key column holds nulls.
        SchemaMismatchError: the columns do not match the table.
    """
    if isinstance(data, pa.RecordBatch):
        data = pa.Table.from_batches([data])
    for key in table.primary_key:
        if key in data.column_names and data.column(key).null_count:
            raise MissingKeyError(
                f"{table.name}: primary key column {key!r} expected non-null, found {data.column(key).null_count} null(s)"
            )
    rows = conform(data, arrow_schema(table.schema()), table_name=table.name)
    base = table.base_store
    change = table.change_store
    if table.is_keyed and rows.num_rows:
        rows = _one_per_key(table, rows)
    if commit_id is not None and _already_committed(table, commit_id):
        return CommitOutcome(None, True, 0, 0, 0.0)
    if table.is_keyed and not overwrite and _holds_rows(table):
        with table.new_transaction(commit_id) as txn:
            txn.write(rows.append_column(ACTION_COLUMN, pa.array(np.full(rows.num_rows, "+I"), pa.string())))
        assert txn.outcome is not None
        return txn.outcome
    change_snapshot = change.current_snapshot() if change is not None else None
    transaction_id = (change_snapshot.sequence_number or 0) if change_snapshot is not None else 0
    groups = split_sized(base, rows, table.primary_key, table.options.base_buckets, table.options.target_file_size)
    writer = table.writer_identity()
    files = write_groups(base, groups, base.schema(), lambda g: writer.file_name(g.node, DataFileType.BASE_FILE, transaction_id))
    deleted = []
    summary: dict[str, str] = {}
    stage: Stager | None = None
    if overwrite:
        deleted = [live.data_file for live in live_files(base, base.current_snapshot())]
        if table.is_keyed:
            paths = {group.partition_path for group in groups}
            paths |= set(read_optimized_sequence(base, base.current_snapshot()))
            assert change is not None
            paths |= {partition_path(change, f.data_file) for f in live_files(change, change_snapshot)}
            now = int(time.time() * 1000)
            sequences = dict.fromkeys(paths, transaction_id)
            times = dict.fromkeys(paths, now)

            def stage(txn: Transaction, snapshot_id: int) -> None:
                stage_optimized_sequence(txn, snapshot_id, sequences, times)

            summary = summary_flags()
    return commit_files(
        base, added=files, deleted=deleted, commit_id=commit_id, summary=summary, stage=stage, table_name=table.name
    )


def _one_per_key(table: MixedTable, rows: pa.Table) -> pa.Table:
    """One row per key: the batch read as +I rows in order, merged by the table's merge engine
    (by default the last row of a repeated key, input order kept)."""
    config = table.merge_config
    if not config.is_default:
        offsets = np.arange(1, rows.num_rows + 1, dtype=np.int64)
        inserts = rows.append_column(LSN, pa.array(offsets))
        empty = rows.slice(0, 0).append_column(LSN, pa.array([], pa.int64()))
        _, merged = merge_by_engine(config, table.primary_key, [], inserts, empty, LSN)
        return merged.select(rows.column_names)
    codes, count = key_codes([rows.column(k) for k in table.primary_key])
    if count == rows.num_rows:
        return rows
    last = np.full(count, -1, dtype=np.int64)
    np.maximum.at(last, codes, np.arange(rows.num_rows, dtype=np.int64))
    return rows.take(pa.array(np.sort(last)))


def _already_committed(table: MixedTable, commit_id: CommitId) -> bool:
    """Whether either store already recorded ``commit_id`` (a load may have gone to either)."""
    stores = [table.base_store, *([table.change_store] if table.change_store is not None else [])]
    return any((last := last_committed_sequence(s, commit_id.writer)) is not None and last >= commit_id.sequence for s in stores)


def _holds_rows(table: MixedTable) -> bool:
    """Whether the BaseStore has a live data file or the ChangeStore any file (from metadata)."""
    base = table.base_store
    if any(f.data_file.content == DataFileContent.DATA for f in live_files(base, base.current_snapshot())):
        return True
    change = table.change_store
    return change is not None and bool(live_files(change, change.current_snapshot()))
