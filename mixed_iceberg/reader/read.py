"""Read the rows a plan names, tagged with their LSN and partition ordinal.

Change files are read in one multi-threaded pyarrow dataset scan (per-file constants are
attached through ``__fragment_index``); base files through :mod:`mixed_iceberg.reader.data_files`,
which leaves position-deleted and filtered-out rows to one final mask (applied here, or by the
merge together with its own drops).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.dataset as ds
from pyiceberg.expressions import AlwaysTrue, BooleanExpression
from pyiceberg.expressions.visitors import bind
from pyiceberg.io import FileIO
from pyiceberg.io.pyarrow import expression_to_pyarrow
from pyiceberg.manifest import DataFileContent
from pyiceberg.schema import Schema
from pyiceberg.table import FileScanTask, Table

from mixed_iceberg.reader.data_files import filesystem_for, read_data_files, read_files
from mixed_iceberg.reader.merge import BASE_OFFSET, LSN, PART, keep_rows, pack_lsn
from mixed_iceberg.reader.plan import ChangeFileRef
from mixed_iceberg.schema import FILE_OFFSET_FIELD, arrow_schema

__all__ = ["filesystem_for", "is_maskable", "read_base_rows", "read_base_unmasked", "read_change_rows"]

_FRAGMENT = "__fragment_index"


def read_change_rows(
    io: FileIO,
    schema: Schema,
    refs: Sequence[ChangeFileRef],
    columns: Sequence[str],
    row_filter: BooleanExpression,
    *,
    with_partition: bool,
) -> pa.Table:
    """``columns`` of every row in ``refs`` that passes ``row_filter``, plus LSN (and PART)."""
    file_schema = arrow_schema(Schema(*schema.fields, FILE_OFFSET_FIELD), field_ids=False)
    output = [*columns, FILE_OFFSET_FIELD.name, _FRAGMENT]
    if not refs:
        empty = file_schema.empty_table().select([*columns, FILE_OFFSET_FIELD.name])
        return _tag_change(empty, np.empty(0, np.int64), np.empty(0, np.int64), np.empty(0, np.int32), with_partition)
    filesystem, _ = filesystem_for(io, refs[0].path)
    paths = [filesystem_for(io, ref.path)[1] for ref in refs]
    dataset = ds.dataset(paths, schema=file_schema, format="parquet", filesystem=filesystem)
    arrow_filter = None
    if not isinstance(row_filter, AlwaysTrue):
        arrow_filter = expression_to_pyarrow(bind(schema, row_filter, case_sensitive=True), schema)
    rows = dataset.to_table(columns=output, filter=arrow_filter)
    fragment = rows.column(_FRAGMENT).to_numpy()
    tx = np.fromiter((ref.transaction_id for ref in refs), dtype=np.int64, count=len(refs))[fragment]
    part = np.fromiter((ref.partition for ref in refs), dtype=np.int32, count=len(refs))[fragment]
    offsets = rows.column(FILE_OFFSET_FIELD.name).fill_null(0).to_numpy()
    return _tag_change(rows.drop_columns([_FRAGMENT]), tx, offsets, part, with_partition)


def _tag_change(
    rows: pa.Table,
    tx: npt.NDArray[np.int64],
    offsets: npt.NDArray[np.int64],
    part: npt.NDArray[np.int32],
    with_partition: bool,
) -> pa.Table:
    rows = rows.drop_columns([FILE_OFFSET_FIELD.name]).append_column(LSN, pa.array(pack_lsn(tx, offsets)))
    return rows.append_column(PART, pa.array(part)) if with_partition else rows


def _has_equality_deletes(task: FileScanTask) -> bool:
    return any(d.content == DataFileContent.EQUALITY_DELETES for d in task.delete_files)


def is_maskable(tasks: Sequence[FileScanTask]) -> bool:
    """Whether ``tasks`` can be read by :func:`read_base_unmasked`: some, none with equality deletes."""
    return bool(tasks) and not any(_has_equality_deletes(t) for t in tasks)


def read_base_unmasked(
    base: Table,
    groups: Sequence[tuple[int, int, list[FileScanTask]]],
    projected: Schema,
    row_filter: BooleanExpression,
    *,
    with_partition: bool,
) -> tuple[pa.Table, npt.NDArray[np.bool_] | None]:
    """Base rows tagged with LSN (and PART), rows that position deletes or ``row_filter`` drop
    included, with the mask of the rows to keep (``None``: all), so that a merge can drop all
    of them in one pass. Needs :func:`is_maskable` tasks."""
    tasks = [task for _, _, group in groups for task in group]
    read = read_files(base, tasks, projected, row_filter)
    tx = np.fromiter((tx for tx, _, group in groups for _ in group), dtype=np.int64, count=len(tasks))
    lsn = pack_lsn(tx, np.zeros(len(tasks), np.int64)) | BASE_OFFSET
    rows = read.rows.append_column(LSN, pa.array(lsn[read.task]))
    if with_partition:
        part = np.fromiter((part for _, part, group in groups for _ in group), dtype=np.int32, count=len(tasks))
        rows = rows.append_column(PART, pa.array(part[read.task]))
    return rows, read.keep


def read_base_rows(
    base: Table,
    groups: Sequence[tuple[int, int, list[FileScanTask]]],
    projected: Schema,
    row_filter: BooleanExpression,
    *,
    with_partition: bool,
    tagged: bool = True,
) -> pa.Table:
    """Rows of base files grouped as (transaction id, partition ordinal, tasks), tagged with LSN
    and PART (``with_partition``) unless ``tagged`` is false: no delete can apply to them."""
    tasks = [task for _, _, group in groups for task in group]
    maskable = is_maskable(tasks)
    if not tagged:
        if maskable:
            return read_files(base, tasks, projected, row_filter).kept()
        if tasks:
            return read_data_files(base, tasks, projected, row_filter)
        return arrow_schema(projected, field_ids=False).empty_table()
    if maskable:
        rows, keep = read_base_unmasked(base, groups, projected, row_filter, with_partition=with_partition)
        return rows if keep is None else keep_rows(rows, keep)
    # Equality deletes (another engine's): pyiceberg reads each group.
    tables = []
    for transaction_id, partition, tasks in groups:
        rows = read_data_files(base, tasks, projected, row_filter)
        n = rows.num_rows
        lsn = pack_lsn(np.full(n, transaction_id, np.int64), np.zeros(n, np.int64)) | BASE_OFFSET
        rows = rows.append_column(LSN, pa.array(lsn))
        if with_partition:
            rows = rows.append_column(PART, pa.array(np.full(n, partition, np.int32)))
        tables.append(rows)
    if not tables:
        empty = arrow_schema(projected, field_ids=False).empty_table().append_column(LSN, pa.array([], pa.int64()))
        return empty.append_column(PART, pa.array([], pa.int32())) if with_partition else empty
    return pa.concat_tables(tables, promote_options="permissive")
