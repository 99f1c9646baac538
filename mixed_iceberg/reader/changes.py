"""CDC reads of the ChangeStore: ``table.changes(from_snapshot, to_snapshot).to_arrow()``.

Change files do not store the action: ``I`` files hold +I and +U rows, ``ED`` files -D and
-U rows. A delete and an insert of the same key sharing one LSN are an update pair (-U/+U);
any other delete is -D and any other insert +I. Rows come out ordered by
(transaction id, file offset), the delete half of a pair first.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc
from pyiceberg.expressions import AlwaysTrue

from mixed_iceberg.exceptions import NoSuchTableError, NotKeyedTableError
from mixed_iceberg.reader.merge import LSN, PART
from mixed_iceberg.reader.plan import PartitionIndex, plan_change_files
from mixed_iceberg.reader.read import read_change_rows
from mixed_iceberg.store.entries import live_files

if TYPE_CHECKING:
    from mixed_iceberg.table import MixedTable

__all__ = ["ChangeScan", "label_actions"]

_ROW = "__row"
_ORDER = "__order"


def _paired(side: pa.Table, other: pa.Table, keys: list[str]) -> npt.NDArray[np.bool_]:
    """For each row of ``side``: does ``other`` hold a row with the same key, partition and LSN?"""
    join_keys = [*keys, LSN, *([PART] if PART in side.column_names else [])]
    probe = side.select(join_keys).append_column(_ROW, pa.array(np.arange(side.num_rows, dtype=np.int64)))
    hits = probe.join(other.select(join_keys), keys=join_keys, join_type="left semi")
    mask = np.zeros(side.num_rows, dtype=bool)
    mask[hits.column(_ROW).to_numpy()] = True
    return mask


def label_actions(inserts: pa.Table, deletes: pa.Table, keys: list[str]) -> pa.Table:
    """Inserts and deletes as one CDC table with ``_change_action``, in LSN order. Pure."""
    ins_pair = _paired(inserts, deletes, keys)
    del_pair = _paired(deletes, inserts, keys)
    ins = inserts.append_column("_change_action", pa.array(np.where(ins_pair, "+U", "+I"))).append_column(
        _ORDER, pa.array(np.ones(inserts.num_rows, np.int8))
    )
    dels = deletes.append_column("_change_action", pa.array(np.where(del_pair, "-U", "-D"))).append_column(
        _ORDER, pa.array(np.zeros(deletes.num_rows, np.int8))
    )
    rows = pa.concat_tables([ins, dels.select(ins.column_names)])
    rows = rows.sort_by([(LSN, "ascending"), (_ORDER, "ascending")])
    lsn = rows.column(LSN)
    tx = pc.shift_right(lsn, 32)
    offset = pc.bit_wise_and(lsn, 0xFFFFFFFF)
    rows = rows.append_column("_transaction_id", tx).append_column("_file_offset", offset)
    return rows.drop_columns([c for c in (LSN, PART, _ORDER) if c in rows.column_names])


class ChangeScan:
    """Change rows committed after ``from_snapshot`` up to and including ``to_snapshot``."""

    def __init__(self, table: MixedTable, from_snapshot: int | None = None, to_snapshot: int | None = None) -> None:
        change = table.change_store
        if change is None:
            raise NotKeyedTableError(f"{table.name}: changes() needs a keyed table with a ChangeStore; this table has none")
        self.table = table
        meta = change.metadata
        self.from_sequence = self._sequence(meta.snapshot_by_id(from_snapshot) if from_snapshot else None, from_snapshot, 0)
        end = meta.snapshot_by_id(to_snapshot) if to_snapshot else change.current_snapshot()
        self._end = end
        self.to_sequence = self._sequence(end, to_snapshot, 0)

    def _sequence(self, snapshot: object, wanted: int | None, default: int) -> int:
        if wanted is not None and snapshot is None:
            raise NoSuchTableError(f"{self.table.name}: ChangeStore has no snapshot {wanted}")
        return int(getattr(snapshot, "sequence_number", default) or default)

    def to_arrow(self) -> pa.Table:
        """Table columns plus ``_change_action``, ``_transaction_id`` and ``_file_offset``."""
        table = self.table
        change = table.change_store
        assert change is not None
        schema = table.schema()
        keys = list(table.primary_key)
        partitioned = not change.spec().is_unpartitioned()
        partitions = PartitionIndex()
        refs = plan_change_files(
            change, live_files(change, self._end), partitions, {}, from_sequence=self.from_sequence, to_sequence=self.to_sequence
        )
        columns = schema.column_names
        inserts = read_change_rows(
            change.io, schema, [r for r in refs if not r.is_delete], columns, AlwaysTrue(), with_partition=partitioned
        )
        deletes = read_change_rows(
            change.io, schema, [r for r in refs if r.is_delete], columns, AlwaysTrue(), with_partition=partitioned
        )
        return label_actions(inserts, deletes, keys)
