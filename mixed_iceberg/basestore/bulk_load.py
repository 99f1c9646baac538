"""Bulk load into the BaseStore: the initial snapshot of an existing dataset.

Rows are bucketed by key into ``B`` files (Amoro's layout) and committed to the BaseStore in
one snapshot. Their transaction id is the ChangeStore's current sequence, so changes already
committed never delete them. ``overwrite`` replaces every base file and advances the optimized
sequence of every partition, so the table then reads exactly as the loaded rows.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

import pyarrow as pa
from pyiceberg.table import Transaction

from mixed_iceberg.basestore.optimized_sequence import (
    read_optimized_sequence,
    stage_optimized_sequence,
    summary_flags,
)
from mixed_iceberg.exceptions import MissingKeyError
from mixed_iceberg.schema import arrow_schema, conform
from mixed_iceberg.store.commit import CommitOutcome, Stager, commit_files
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
