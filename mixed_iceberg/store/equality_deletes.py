"""Read Iceberg tables that carry equality deletes, which pyiceberg 0.12 refuses to scan.

Engines such as Flink write upserts as equality deletes ("drop every older row with this key")
plus new data files. pyiceberg raises on such tables, so reading one written by another engine
needs this module. The rule is the spec's ("Scan Planning"):

* an equality delete file applies to a data file whose *data* sequence number is strictly lower,
  in the same partition (spec id and values), or in every partition when the delete file's spec
  is unpartitioned (a global delete);
* a row is deleted when it equals a delete row on the file's ``equality_ids`` columns, null
  equal to null;
* position deletes apply as usual (data sequence number lower or equal).

Data files are grouped so that every file of a group has exactly the same applicable equality
deletes (a suffix, by sequence number, of its partition's and of the global ones). A group is read
with pyiceberg's ``ArrowScan``, which applies position deletes and the row filter, and its rows
are anti-joined with Arrow against the union of the group's delete keys: no per-row Python.
Files newer than every equality delete form one group and are read without any join.

Example:
    >>> rows = scan_with_equality_deletes(tbl, EqualTo("region", "eu"), ("id", "v"))  # doctest: +SKIP
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyiceberg.expressions import AlwaysTrue, BooleanExpression
from pyiceberg.io.pyarrow import ArrowScan, schema_to_pyarrow
from pyiceberg.manifest import DataFile, DataFileContent
from pyiceberg.partitioning import PartitionSpec
from pyiceberg.schema import Schema
from pyiceberg.table import FileScanTask, Table

from mixed_iceberg.arrow_types import empty_table
from mixed_iceberg.store.damage import expected, locating
from mixed_iceberg.store.manifests.delete_index import DeleteIndex
from mixed_iceberg.store.manifests.live_files import LiveFile, live_files

__all__ = ["EqualityScanGroup", "anti_join_null_safe", "plan_equality_scan", "read_with_deletes", "scan_with_equality_deletes"]

_ALWAYS_TRUE: BooleanExpression = AlwaysTrue()
_ROW = "__row"


@dataclass(frozen=True, slots=True)
class EqualityScanGroup:
    """Data files (with their position deletes) that share the same applicable equality deletes."""

    tasks: tuple[FileScanTask, ...]
    equality_deletes: tuple[DataFile, ...]


def plan_equality_scan(
    specs: Mapping[int, PartitionSpec], data: Sequence[LiveFile], deletes: Sequence[LiveFile]
) -> list[EqualityScanGroup]:
    """Group ``data`` by the equality deletes that apply to them (no I/O: metadata only).

    Args:
        specs: the table's partition specs by id (decides which deletes are global).
        data: live data files with their data sequence numbers.
        deletes: live position and equality delete files with their data sequence numbers.
    """
    index = DeleteIndex.build(specs, deletes)
    groups: dict[tuple[object, ...], list[FileScanTask]] = defaultdict(list)
    applicable: dict[tuple[object, ...], tuple[DataFile, ...]] = {}
    for live in data:
        equality = index.equality_deletes(live)
        applicable.setdefault(equality.key, tuple(d.data_file for d in equality.files))
        positions = {d.data_file for d in index.position_deletes(live)}
        groups[equality.key].append(FileScanTask(live.data_file, delete_files=positions))
    return [EqualityScanGroup(tuple(tasks), applicable[key]) for key, tasks in groups.items()]


def scan_with_equality_deletes(
    table: Table,
    row_filter: str | BooleanExpression = _ALWAYS_TRUE,
    selected_fields: tuple[str, ...] = ("*",),
    snapshot_id: int | None = None,
    *,
    case_sensitive: bool = True,
) -> pa.Table:
    """The rows of ``table`` (at ``snapshot_id``, default current) after all delete files.

    Same arguments and result as ``table.scan(...).to_arrow()``, which fails on equality deletes,
    except that an older snapshot is read with the current schema too (pyiceberg: the snapshot's).

    Raises:
        ValueError: ``snapshot_id`` is unknown.
        NotImplementedError: an equality column is nested or no longer in the schema.
    """
    scan = table.scan(row_filter=row_filter, case_sensitive=case_sensitive, snapshot_id=snapshot_id)
    scan.projection()  # validates snapshot_id
    # Every read uses the current schema, time travel included (as merged reads of keyed tables
    # do): files are read by field id, and row_filter is bound to the current schema anyway.
    full_schema = table.schema()
    projection = full_schema if "*" in selected_fields else full_schema.select(*selected_fields, case_sensitive=case_sensitive)
    snapshot = table.metadata.snapshot_by_id(snapshot_id) if snapshot_id is not None else table.metadata.current_snapshot()
    if snapshot is None:
        return empty_table(schema_to_pyarrow(projection, include_field_ids=False))
    data = live_files(table, snapshot, scan.row_filter, keep=lambda f: f.content == DataFileContent.DATA)
    # Delete files are pruned by partition only: their column bounds need not be those of the rows
    # they delete (an equality delete file may carry other columns than its key).
    deletes = live_files(
        table, snapshot, _ALWAYS_TRUE, keep=lambda f: f.content != DataFileContent.DATA, partition_filter=scan.row_filter
    )
    return read_with_deletes(table, data, deletes, full_schema, projection, scan.row_filter, selected_fields, case_sensitive)


def read_with_deletes(
    table: Table,
    data: Sequence[LiveFile],
    deletes: Sequence[LiveFile],
    full_schema: Schema,
    projection: Schema,
    row_filter: BooleanExpression = _ALWAYS_TRUE,
    selected_fields: tuple[str, ...] = ("*",),
    case_sensitive: bool = True,
) -> pa.Table:
    """The rows of the ``data`` files after the position and equality ``deletes`` that apply.

    The building block of :func:`scan_with_equality_deletes`; the optimizer uses it to read
    exactly the files it rewrites.

    Raises:
        CorruptFileError: a data or delete file does not parse, or is gone (``MissingFileError``).
    """
    with locating(table.io, lambda: [expected(f.data_file) for f in (*data, *deletes)]):
        return _read_with_deletes(table, data, deletes, full_schema, projection, row_filter, selected_fields, case_sensitive)


def _read_with_deletes(
    table: Table,
    data: Sequence[LiveFile],
    deletes: Sequence[LiveFile],
    full_schema: Schema,
    projection: Schema,
    row_filter: BooleanExpression,
    selected_fields: tuple[str, ...],
    case_sensitive: bool,
) -> pa.Table:
    groups = plan_equality_scan(table.metadata.specs(), data, deletes)
    key_cache: dict[str, pa.Table] = {}
    results = []
    for group in groups:
        names = {_column_name(full_schema, field_id) for f in group.equality_deletes for field_id in f.equality_ids or ()}
        read_schema = projection
        if not names <= {field.name for field in projection.fields}:
            read_schema = full_schema.select(*(selected_fields if "*" not in selected_fields else ()), *sorted(names))
        rows = ArrowScan(table.metadata, table.io, read_schema, row_filter, case_sensitive).to_table(group.tasks)
        by_ids: dict[tuple[int, ...], list[DataFile]] = defaultdict(list)
        for f in group.equality_deletes:
            by_ids[tuple(f.equality_ids or ())].append(f)
        for ids, files in by_ids.items():
            keys = [_delete_keys(table, full_schema, f, key_cache) for f in files]
            rows = anti_join_null_safe(
                rows, pa.concat_tables(keys, promote_options="permissive"), [_column_name(full_schema, i) for i in ids]
            )
        results.append(rows.select([field.name for field in projection.fields]))
    if not results:
        return empty_table(schema_to_pyarrow(projection, include_field_ids=False))
    return pa.concat_tables(results, promote_options="permissive")


def _column_name(schema: Schema, field_id: int) -> str:
    name = schema.find_column_name(field_id)
    if name is None or "." in name:
        raise NotImplementedError(f"equality field id {field_id}: expected a top-level column of the schema, found {name}")
    return name


def _delete_keys(table: Table, schema: Schema, delete_file: DataFile, cache: dict[str, pa.Table]) -> pa.Table:
    """The equality columns of one delete file, typed as the table's (read once per scan)."""
    if delete_file.file_path not in cache:
        key_schema = Schema(*(schema.find_field(field_id) for field_id in delete_file.equality_ids or ()))
        cache[delete_file.file_path] = ArrowScan(table.metadata, table.io, key_schema, _ALWAYS_TRUE).to_table(
            [FileScanTask(delete_file)]
        )
    return cache[delete_file.file_path]


def anti_join_null_safe(rows: pa.Table, deleted: pa.Table, columns: Sequence[str]) -> pa.Table:
    """The rows of ``rows`` whose ``columns`` equal no row of ``deleted``; null equals null.

    Arrow's hash join never matches nulls and cannot carry nested payload columns, so only the
    keys and a row number go through the join: each nullable key becomes a null flag plus the
    value with nulls filled by any valid value of the column. Row order is kept.
    """
    if rows.num_rows == 0 or deleted.num_rows == 0:
        return rows
    left: dict[str, pa.ChunkedArray] = {}
    right: dict[str, pa.ChunkedArray] = {}
    for i, name in enumerate(columns):
        lhs = rows.column(name)
        rhs = deleted.column(name).cast(lhs.type)
        if lhs.null_count or rhs.null_count:
            left[f"null{i}"], right[f"null{i}"] = pc.is_null(lhs), pc.is_null(rhs)
            valid = pc.drop_null(lhs) if len(lhs) > lhs.null_count else pc.drop_null(rhs)
            if len(valid) == 0:
                continue  # nulls on both sides only: the flags decide
            lhs, rhs = pc.fill_null(lhs, valid[0]), pc.fill_null(rhs, valid[0])
        left[f"key{i}"], right[f"key{i}"] = lhs, rhs
    keys = list(right)
    left[_ROW] = pa.chunked_array([np.arange(rows.num_rows, dtype=np.int64)])
    distinct = pa.table(right).group_by(keys).aggregate([])
    kept = pa.table(left).join(distinct, keys=keys, join_type="left anti").column(_ROW)
    return rows.take(kept.sort())
