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
from pyiceberg.table import Table
from pyiceberg.typedef import Record

from mixed_iceberg.format import DataTreeNode, tree_node_ids

__all__ = ["RowGroup", "split_rows"]


@dataclass(frozen=True, slots=True)
class RowGroup:
    """Rows of one partition and one tree node."""

    partition: Record
    partition_path: str
    node: DataTreeNode
    rows: pa.Table


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
    order = np.argsort(nodes, kind="stable")
    sorted_rows = rows.take(pa.array(order))
    ids, starts = np.unique(nodes[order], return_index=True)
    ends = [*starts[1:], len(order)]
    return [
        (int(node), sorted_rows.slice(int(start), int(end - start))) for node, start, end in zip(ids, starts, ends, strict=True)
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
