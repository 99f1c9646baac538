"""Write validated change rows as Amoro ``I`` and ``ED`` files, one per partition and tree node.

Rows arrive with their ``_file_offset`` already assigned; here they are routed to insert or
delete files (a row may go to both under upsert), split by partition and by the tree node of
their key's Java hash, and written in parallel.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt
import pyarrow as pa
from pyiceberg.manifest import DataFile
from pyiceberg.schema import Schema
from pyiceberg.table import Table
from pyiceberg.typedef import Record

from mixed_iceberg.format import DataTreeNode, WriterIdentity, tree_node_ids
from mixed_iceberg.schema import FILE_OFFSET_FIELD, change_file_schema
from mixed_iceberg.sorting import stable_order
from mixed_iceberg.store.write.layout import RowGroup, split_rows
from mixed_iceberg.store.write.parallel import write_groups
from mixed_iceberg.typedef import DataFileType

__all__ = ["write_change_files"]


def write_change_files(
    store: Table,
    rows: pa.Table,
    insert_mask: npt.NDArray[np.bool_],
    delete_mask: npt.NDArray[np.bool_],
    primary_key: Sequence[str],
    buckets: int,
    writer: WriterIdentity,
    transaction_id: int = 0,
    schema: Schema | None = None,
) -> list[DataFile]:
    """Write ``rows`` (table columns + ``_file_offset``) into ``I``/``ED`` files of ``store``.

    ``transaction_id`` 0 makes readers use the file's data sequence number, as Amoro's Flink
    writer does: the transaction id is then the ChangeStore commit that adds the file.
    ``schema``: the schema ``rows`` were validated against (default: the store's current one).
    The files carry its field ids, so a schema change committed meanwhile cannot relabel the
    columns (readers resolve them by id).
    """
    schema = schema or store.schema()
    file_schema = Schema(*schema.fields, FILE_OFFSET_FIELD, schema_id=schema.schema_id)
    rows = pa.Table.from_arrays(rows.columns, schema=change_file_schema(schema))
    masks = ((insert_mask, DataFileType.INSERT_FILE), (delete_mask, DataFileType.EQ_DELETE_FILE))
    # Insert and delete files go to the writer threads together: one batch of up to
    # 2 x buckets files instead of two batches, each waiting for its slowest file.
    groups: list[RowGroup] = []
    types: dict[int, DataFileType] = {}
    if primary_key and store.spec().is_unpartitioned():
        # One key hash for all rows, and one take per file type (no filter, then take).
        nodes = np.asarray(tree_node_ids([rows.column(key) for key in primary_key], buckets - 1), dtype=np.int64)
        for mask, file_type in masks:
            for group in _node_groups(rows, nodes, np.flatnonzero(mask)):
                types[id(group)] = file_type
                groups.append(group)
    else:
        for mask, file_type in masks:
            if not mask.any():
                continue
            for group in split_rows(store, rows.filter(pa.array(mask)), primary_key, buckets):
                types[id(group)] = file_type
                groups.append(group)
    return write_groups(store, groups, file_schema, lambda group: writer.file_name(group.node, types[id(group)], transaction_id))


def _node_groups(rows: pa.Table, nodes: npt.NDArray[np.int64], picked: npt.NDArray[np.intp]) -> list[RowGroup]:
    """The ``picked`` rows of an unpartitioned store by tree node, in row order within a node.

    The same groups as ``split_rows`` of those rows (its stable sort by node, one slice per node).
    """
    if len(picked) == 0:
        return []
    order = picked[stable_order(nodes[picked])]
    sorted_nodes = nodes[order]
    taken = rows.take(pa.array(order))
    starts = [0, *(np.flatnonzero(np.diff(sorted_nodes)) + 1).tolist()]
    ends = [*starts[1:], len(order)]
    return [
        RowGroup(Record(), "", DataTreeNode.of_id(int(sorted_nodes[start])), taken.slice(start, end - start))
        for start, end in zip(starts, ends, strict=True)
    ]
