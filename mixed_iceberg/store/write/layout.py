"""Split rows by partition and by tree node, as Amoro lays files out. Vectorized.

The only loops are over partitions and nodes (at most ``buckets`` per partition).

Partition values are computed here, field by field, with each transform's own Arrow kernel
(``Transform.pyarrow_transform``: pyiceberg-core for bucket and the time transforms), not with
pyiceberg 0.12's private ``_determine_partitions``, which cannot write some specs the Iceberg
spec allows: two fields over one source column (``["id", "bucket(16, id)"]``: "Cannot have
redundant partitions"), a non-identity transform over a ``time`` column (it converts the
transformed int as a time), ``truncate`` over binary (pyiceberg-core takes ``binary``, not the
``large_binary`` pyiceberg reads), and ``uuid`` columns (no Arrow hash kernel for the extension
type). It also filtered the whole batch once per partition.
"""

from __future__ import annotations

import datetime as dt
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc
from pyiceberg.manifest import DataFile
from pyiceberg.partitioning import PartitionSpec
from pyiceberg.schema import Schema
from pyiceberg.table import Table
from pyiceberg.transforms import IdentityTransform, TruncateTransform
from pyiceberg.typedef import Record
from pyiceberg.types import IcebergType, UUIDType
from pyiceberg.utils.datetime import date_to_days, datetime_to_micros, time_to_micros

from mixed_iceberg.format import DataTreeNode, tree_node_ids
from mixed_iceberg.store.write.partition_paths import partition_to_path

__all__ = ["RowGroup", "chunk_rows", "partition_path", "split_rows", "split_sized"]


@dataclass(frozen=True, slots=True)
class RowGroup:
    """Rows of one partition and one tree node."""

    partition: Record
    partition_path: str
    node: DataTreeNode
    rows: pa.Table


def partition_path(store: Table, data_file: DataFile) -> str:
    """The partition path of a live file (``""`` when unpartitioned), the key of per-partition maps,
    as Iceberg Java spells it (:mod:`mixed_iceberg.store.write.partition_paths`)."""
    # Called per live file by planning and collecting: no dict of specs built per call (specs()).
    spec = next((s for s in store.metadata.partition_specs if s.spec_id == data_file.spec_id), None)
    if spec is None:
        raise KeyError(f"{data_file.file_path}: partition spec {data_file.spec_id} is not one of the table's")
    return "" if not spec.fields else partition_to_path(spec, data_file.partition, store.schema())


def _internal(value: Any, result_type: IcebergType) -> Any:
    """A partition value as pyiceberg reads it back from a manifest (days, microseconds, UUID)."""
    if isinstance(value, dt.datetime):
        return datetime_to_micros(value)
    if isinstance(value, dt.date):
        return date_to_days(value)
    if isinstance(value, dt.time):
        return time_to_micros(value)
    if isinstance(result_type, UUIDType) and isinstance(value, bytes):
        return uuid.UUID(bytes=value)  # the path then shows the UUID, as Iceberg Java's does
    return value


def _storage(array: pa.ChunkedArray) -> pa.ChunkedArray:
    """Extension arrays (uuid) as their storage: Arrow's hash kernels and pyiceberg-core take those."""
    if isinstance(array.type, pa.BaseExtensionType):
        return pa.chunked_array([chunk.storage for chunk in array.chunks], array.type.storage_type)
    return array


def _partition_values(spec: PartitionSpec, schema: Schema, rows: pa.Table) -> list[pa.ChunkedArray]:
    """One array per partition field: the transform of its source column, row by row."""
    values = []
    for field in spec.fields:
        source = schema.find_field(field.source_id)
        name = schema.find_column_name(field.source_id)
        if name is None or "." in name:
            raise NotImplementedError(f"partition field {field.name}: expected a top-level source column, found {name}")
        column = _storage(rows.column(name))
        if isinstance(field.transform, IdentityTransform):
            values.append(column)
            continue
        if isinstance(field.transform, TruncateTransform) and pa.types.is_large_binary(column.type):
            column = column.cast(pa.binary())
        transformed = field.transform.pyarrow_transform(source.field_type)(column)
        values.append(transformed if isinstance(transformed, pa.ChunkedArray) else pa.chunked_array([transformed]))
    return values


def _group_codes(values: list[pa.ChunkedArray]) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """(group of each row, first row of each group), groups in order of first appearance."""
    n = len(values[0])
    codes = np.zeros(n, dtype=np.int64)
    for array in values:
        encoded = pc.dictionary_encode(array, null_encoding="encode").combine_chunks()
        indices = encoded.indices.to_numpy(zero_copy_only=False).astype(np.int64)
        codes = codes * (len(encoded.dictionary) + 1) + indices
        codes = np.unique(codes, return_inverse=True)[1]  # dense again, so the products stay small
    _, first, inverse = np.unique(codes, return_index=True, return_inverse=True)
    # renumber groups by first appearance, so partitions come out in row order
    order = np.argsort(first, kind="stable")
    rank = np.empty_like(order)
    rank[order] = np.arange(len(order))
    return rank[inverse].astype(np.int64), first[order].astype(np.int64)


def _partitions(store: Table, rows: pa.Table) -> list[tuple[Record, str, pa.Table]]:
    spec = store.spec()
    if spec.is_unpartitioned():
        return [(Record(), "", rows)]
    if rows.num_rows == 0:
        return []
    schema = store.schema()
    values = _partition_values(spec, schema, rows)
    groups, firsts = _group_codes(values)
    types = [field.transform.result_type(schema.find_field(field.source_id).field_type) for field in spec.fields]
    records = [
        Record(*(_internal(v, t) for v, t in zip(row, types, strict=True)))
        for row in zip(*(array.take(pa.array(firsts)).to_pylist() for array in values), strict=True)
    ]
    return [
        (records[group], partition_to_path(spec, records[group], schema), group_rows)
        for group, group_rows in _node_slices(rows, groups)  # a stable grouping, by row order of first appearance
    ]


def _node_slices(rows: pa.Table, nodes: npt.NDArray[np.int64]) -> list[tuple[int, pa.Table]]:
    """Rows grouped by node id; stable, so rows keep their order inside each group."""
    if len(nodes) == 0:
        return []
    if bool((nodes[1:] >= nodes[:-1]).all()):
        # Already grouped (one node, or a merge of one node's rows): slices, no copy of the rows.
        sorted_rows, sorted_nodes = rows, nodes
    else:
        order = np.argsort(nodes, kind="stable")
        sorted_rows = rows.take(pa.array(order))
        sorted_nodes = nodes[order]
    # already sorted: groups start where the node id changes (no second sort as np.unique would do)
    starts = np.concatenate([[0], np.flatnonzero(np.diff(sorted_nodes)) + 1]).astype(np.int64)
    ends = [*starts[1:].tolist(), len(nodes)]
    return [
        (int(sorted_nodes[start]), sorted_rows.slice(int(start), int(end - start)))
        for start, end in zip(starts.tolist(), ends, strict=True)
    ]


def split_rows(store: Table, rows: pa.Table, primary_key: Sequence[str], buckets: int) -> list[RowGroup]:
    """Rows of ``store`` grouped by partition and by the tree node of their key.

    Unkeyed tables (empty ``primary_key``) put everything in the root node.
    """
    groups = []
    for partition, path, part_rows in _partitions(store, rows):
        if not primary_key:
            groups.append(RowGroup(partition, path, DataTreeNode.root(), part_rows))
            continue
        nodes = tree_node_ids([part_rows.column(key) for key in primary_key], buckets - 1)
        for node_id, node_rows in _node_slices(part_rows, np.asarray(nodes, dtype=np.int64)):
            groups.append(RowGroup(partition, path, DataTreeNode.of_id(node_id), node_rows))
    return groups


def chunk_rows(rows: pa.Table, target_bytes: int, bytes_per_row: float | None = None) -> list[pa.Table]:
    """Slices of ``rows`` of about ``target_bytes`` each (one file each).

    ``bytes_per_row`` is the expected size of a row once written (Parquet compresses, so a
    file's size is well below the Arrow memory of its rows); without it, Arrow memory is used.
    """
    if rows.num_rows == 0:
        return []
    per_row = bytes_per_row if bytes_per_row and bytes_per_row > 0 else max(1, rows.nbytes // rows.num_rows)
    step = max(1, int(target_bytes // per_row))
    return [rows.slice(start, step) for start in range(0, rows.num_rows, step)]


def _split_parts(store: Table, parts: Sequence[pa.Table], primary_key: Sequence[str], buckets: int) -> list[RowGroup]:
    """:func:`split_rows` of the concatenation of ``parts`` (same groups, same row order), without
    concatenating them first: each part is grouped on its own and the groups it shares joined.
    A big part of one node (a segment being rewritten) is then sliced, not copied by a sort
    together with a small part of every node (the change's inserts)."""
    if len(parts) == 1:
        return split_rows(store, parts[0], primary_key, buckets)
    by_partition: dict[str, dict[int, list[RowGroup]]] = {}
    for part in parts:
        for group in split_rows(store, part, primary_key, buckets):
            by_partition.setdefault(group.partition_path, {}).setdefault(group.node.id, []).append(group)
    return [
        RowGroup(
            groups[0].partition,
            path,
            groups[0].node,
            groups[0].rows if len(groups) == 1 else pa.concat_tables([g.rows for g in groups], promote_options="permissive"),
        )
        for path, nodes in by_partition.items()  # partitions by first appearance, as split_rows
        for _, groups in sorted(nodes.items())  # nodes ascending, as split_rows
    ]


def split_sized(
    store: Table,
    rows: pa.Table | Sequence[pa.Table],
    primary_key: Sequence[str],
    buckets: int,
    target_bytes: int,
    bytes_per_row: float | None = None,
) -> list[RowGroup]:
    """:func:`split_rows`, then each group cut into pieces of about ``target_bytes``.

    ``rows`` may be given as parts (of one schema, up to type promotion): the groups are those
    of their concatenation, built without it.
    """
    parts = [rows] if isinstance(rows, pa.Table) else list(rows)
    return [
        RowGroup(group.partition, group.partition_path, group.node, piece)
        for group in _split_parts(store, parts, primary_key, buckets)
        for piece in chunk_rows(group.rows, target_bytes, bytes_per_row)
    ]
