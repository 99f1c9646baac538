"""Split rows by partition and by tree node, as Amoro lays files out. Vectorized.

The only loops are over partitions and nodes (at most ``buckets`` per partition).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
import pyarrow as pa
from pyiceberg.io.pyarrow import _determine_partitions
from pyiceberg.manifest import DataFile
from pyiceberg.table import Table
from pyiceberg.typedef import Record

from mixed_iceberg.format import DataTreeNode, tree_node_ids

__all__ = ["RowGroup", "chunk_rows", "partition_path", "split_rows", "split_sized"]


@dataclass(frozen=True, slots=True)
class RowGroup:
    """Rows of one partition and one tree node."""

    partition: Record
    partition_path: str
    node: DataTreeNode
    rows: pa.Table


def partition_path(store: Table, data_file: DataFile) -> str:
    """The partition path of a live file (``""`` when unpartitioned), the key of per-partition maps."""
    spec = store.specs()[data_file.spec_id]
    return "" if spec.is_unpartitioned() else spec.partition_to_path(data_file.partition, store.schema())


def _partitions(store: Table, rows: pa.Table) -> list[tuple[Record, str, pa.Table]]:
    spec = store.spec()
    if spec.is_unpartitioned():
        return [(Record(), "", rows)]
    return [
        (part.partition_key.partition, part.partition_key.to_path(), part.arrow_table_partition)
        for part in _determine_partitions(spec, store.schema(), rows)
    ]


def _node_slices(rows: pa.Table, nodes: npt.NDArray[np.int64]) -> list[tuple[int, pa.Table]]:
    """Rows grouped by node id; stable, so rows keep their order inside each group."""
    if len(nodes) == 0:
        return []
    order = np.argsort(nodes, kind="stable")
    sorted_rows = rows.take(pa.array(order))
    sorted_nodes = nodes[order]
    # already sorted: groups start where the node id changes (no second sort as np.unique would do)
    starts = np.concatenate([[0], np.flatnonzero(np.diff(sorted_nodes)) + 1]).astype(np.int64)
    ends = [*starts[1:].tolist(), len(order)]
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


def split_sized(
    store: Table,
    rows: pa.Table,
    primary_key: Sequence[str],
    buckets: int,
    target_bytes: int,
    bytes_per_row: float | None = None,
) -> list[RowGroup]:
    """:func:`split_rows`, then each group cut into pieces of about ``target_bytes``."""
    return [
        RowGroup(group.partition, group.partition_path, group.node, piece)
        for group in split_rows(store, rows, primary_key, buckets)
        for piece in chunk_rows(group.rows, target_bytes, bytes_per_row)
    ]
