"""Read the rows a plan names, tagged with their LSN.

Change files are read by field id through :mod:`mixed_iceberg.reader.change_files` (one
multi-threaded pyarrow dataset scan while they have the current schema; per-file constants are
attached through each row's file index); base files through :mod:`mixed_iceberg.reader.file_reads`,
which leaves position-deleted and filtered-out rows to one final mask (applied here, or by the
merge together with its own drops).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import numpy.typing as npt
import pyarrow as pa
from pyiceberg.expressions import BooleanExpression
from pyiceberg.io import FileIO
from pyiceberg.manifest import DataFileContent
from pyiceberg.schema import Schema
from pyiceberg.table import FileScanTask, Table

from mixed_iceberg.arrow_types import empty_table
from mixed_iceberg.merge.latest import BASE_OFFSET, LSN, keep_rows, pack_lsn
from mixed_iceberg.merge.runs import Runs
from mixed_iceberg.reader.change_files import change_file_schemas, read_change_files
from mixed_iceberg.reader.file_reads import filesystem_for, read_data_files, read_files
from mixed_iceberg.reader.plan import ChangeFileRef
from mixed_iceberg.schema import FILE_OFFSET_FIELD, arrow_schema
from mixed_iceberg.store.damage import CHANGE_FILE, ExpectedFile, expected, locating

__all__ = [
    "base_lsn",
    "filesystem_for",
    "is_maskable",
    "read_base_keyed",
    "read_base_rows",
    "read_base_unmasked",
    "read_change_rows",
]


def read_change_rows(
    io: FileIO,
    schema: Schema,
    refs: Sequence[ChangeFileRef],
    columns: Sequence[str],
    row_filter: BooleanExpression,
    *,
    schemas: Sequence[Schema] | None = None,
) -> pa.Table:
    """``columns`` of every row in ``refs`` that passes ``row_filter``, plus LSN, in ``refs`` order.

    Columns are resolved by field id. ``schemas`` (the ChangeStore's ``metadata.schemas``)
    spares a look at the files' footers while no schema named a wanted column otherwise.

    Raises:
        CorruptFileError: a change file does not parse, or is gone (``MissingFileError``).
    """
    if not refs:
        empty = empty_table(change_file_schemas(schema).by_name).select([*columns, FILE_OFFSET_FIELD.name])
        return _tag_change(empty, np.empty(0, np.int64), np.empty(0, np.int64))
    # By field id: files of the current schema in one dataset scan, the others projected.
    with locating(io, lambda: [ExpectedFile(ref.path, CHANGE_FILE, records=ref.record_count) for ref in refs]):
        rows, fragment = read_change_files(
            io, schema, [ref.path for ref in refs], columns, row_filter, schemas, [ref.record_count for ref in refs]
        )
    tx = np.fromiter((ref.transaction_id for ref in refs), dtype=np.int64, count=len(refs))[fragment]
    offsets = rows.column(FILE_OFFSET_FIELD.name).fill_null(0).to_numpy()
    return _tag_change(rows, tx, offsets)


def _tag_change(rows: pa.Table, tx: npt.NDArray[np.int64], offsets: npt.NDArray[np.int64]) -> pa.Table:
    return rows.drop_columns([FILE_OFFSET_FIELD.name]).append_column(LSN, pa.array(pack_lsn(tx, offsets)))


def _has_equality_deletes(task: FileScanTask) -> bool:
    return any(d.content == DataFileContent.EQUALITY_DELETES for d in task.delete_files)


def is_maskable(tasks: Sequence[FileScanTask]) -> bool:
    """Whether ``tasks`` can be read by :func:`read_base_unmasked`: some, none with equality deletes."""
    return bool(tasks) and not any(_has_equality_deletes(t) for t in tasks)


def base_lsn(transaction_ids: Sequence[int]) -> npt.NDArray[np.int64]:
    """The LSN of rows of base files with these transaction ids: ``(txId, max offset)``."""
    tx = np.fromiter(transaction_ids, dtype=np.int64, count=len(transaction_ids))
    return pack_lsn(tx, np.zeros(len(tx), np.int64)) | BASE_OFFSET


def read_base_unmasked(
    base: Table,
    tasks: Sequence[FileScanTask],
    transaction_ids: Sequence[int],
    projected: Schema,
    row_filter: BooleanExpression,
) -> tuple[pa.Table, npt.NDArray[np.bool_] | None]:
    """Rows of ``tasks`` tagged with LSN, rows that position deletes or ``row_filter`` drop
    included, with the mask of the rows to keep (``None``: all), so that a merge can drop all
    of them in one pass. Needs :func:`is_maskable` tasks."""
    rows, keep, lsn = read_base_keyed(base, tasks, transaction_ids, projected, row_filter)
    return rows.append_column(LSN, pa.array(lsn.dense())), keep


def read_base_keyed(
    base: Table,
    tasks: Sequence[FileScanTask],
    transaction_ids: Sequence[int],
    projected: Schema,
    row_filter: BooleanExpression,
) -> tuple[pa.Table, npt.NDArray[np.bool_] | None, Runs]:
    """:func:`read_base_unmasked` with the LSNs as runs (one per file) beside the rows rather than
    a column of them: a merge looks at the LSNs of the few rows whose key the tail holds.

    Raises:
        CorruptFileError: a data or delete file does not parse, or is gone (``MissingFileError``).
    """
    with locating(base.io, _files_of(tasks)):
        read = read_files(base, tasks, projected, row_filter)
    return read.rows, read.keep, read.task.map(base_lsn(transaction_ids))


def read_base_rows(
    base: Table,
    tasks: Sequence[FileScanTask],
    transaction_ids: Sequence[int],
    projected: Schema,
    row_filter: BooleanExpression,
    *,
    tagged: bool = True,
) -> pa.Table:
    """Surviving rows of base ``tasks`` (one transaction id each), tagged with LSN unless
    ``tagged`` is false.

    Raises:
        CorruptFileError: a data or delete file does not parse, or is gone (``MissingFileError``).
    """
    with locating(base.io, _files_of(tasks)):
        return _base_rows(base, tasks, transaction_ids, projected, row_filter, tagged=tagged)


def _files_of(tasks: Sequence[FileScanTask]) -> Callable[[], list[ExpectedFile]]:
    """The data and delete files of ``tasks``, as their manifests describe them (for :func:`locating`)."""
    return lambda: [expected(data_file) for task in tasks for data_file in (task.file, *task.delete_files)]


def _base_rows(
    base: Table,
    tasks: Sequence[FileScanTask],
    transaction_ids: Sequence[int],
    projected: Schema,
    row_filter: BooleanExpression,
    *,
    tagged: bool,
) -> pa.Table:
    maskable = is_maskable(tasks)
    if not tagged:
        if maskable:
            return read_files(base, tasks, projected, row_filter).kept()
        if tasks:
            return read_data_files(base, tasks, projected, row_filter)
        return empty_table(arrow_schema(projected, field_ids=False))
    if maskable:
        rows, keep = read_base_unmasked(base, tasks, transaction_ids, projected, row_filter)
        return rows if keep is None else keep_rows(rows, keep)
    # Equality deletes (another engine's): pyiceberg reads each transaction's files.
    by_tx: dict[int, list[FileScanTask]] = {}
    for task, tx in zip(tasks, transaction_ids, strict=True):
        by_tx.setdefault(tx, []).append(task)
    tables = []
    for tx, group in by_tx.items():
        rows = read_data_files(base, group, projected, row_filter)
        tables.append(rows.append_column(LSN, pa.array(np.repeat(base_lsn([tx]), rows.num_rows))))
    if not tables:
        return empty_table(arrow_schema(projected, field_ids=False)).append_column(LSN, pa.array([], pa.int64()))
    return pa.concat_tables(tables, promote_options="permissive")
