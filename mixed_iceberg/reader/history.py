"""A keyed table's history across both stores: ``table.snapshots()`` and ``table.history()``."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pyarrow as pa

from mixed_iceberg.store.commit import COMMIT_SEQUENCE, COMMIT_WRITER

if TYPE_CHECKING:
    from pyiceberg.table import Table

    from mixed_iceberg.handle import TableHandle

__all__ = ["table_history", "table_snapshots"]

#: Summary key of BaseStore snapshots written by the optimizer (``optimizing.collect``).
_OPTIMIZING_TYPE = "mixed-iceberg.optimizing.type"

_SNAPSHOTS = pa.schema(
    [
        ("store", pa.string()),
        ("snapshot_id", pa.int64()),
        ("parent_id", pa.int64()),
        ("sequence_number", pa.int64()),
        ("committed_at", pa.timestamp("ms", tz="UTC")),
        ("operation", pa.string()),
        ("commit_writer", pa.string()),
        ("commit_sequence", pa.int64()),
        ("optimizing_type", pa.string()),
    ]
)
_HISTORY = pa.schema([("made_current_at", pa.timestamp("ms", tz="UTC")), ("store", pa.string()), ("snapshot_id", pa.int64())])


def _stores(table: TableHandle) -> list[tuple[str, Table]]:
    stores = [("base", table.base_store)]
    if table.change_store is not None:
        stores.append(("change", table.change_store))
    return stores


def table_snapshots(table: TableHandle) -> pa.Table:
    """Every retained snapshot of both stores, oldest first (metadata only)."""
    rows = []
    for name, store in _stores(table):
        for s in store.metadata.snapshots:
            summary = s.summary
            extra = summary.additional_properties if summary is not None else {}
            sequence = extra.get(COMMIT_SEQUENCE)
            rows.append(
                {
                    "store": name,
                    "snapshot_id": s.snapshot_id,
                    "parent_id": s.parent_snapshot_id,
                    "sequence_number": s.sequence_number,
                    "committed_at": s.timestamp_ms,
                    "operation": summary.operation.value if summary is not None else None,
                    "commit_writer": extra.get(COMMIT_WRITER),
                    "commit_sequence": int(sequence) if sequence is not None else None,
                    "optimizing_type": extra.get(_OPTIMIZING_TYPE),
                }
            )
    rows.sort(key=lambda r: (r["committed_at"], r["store"], r["sequence_number"]))
    return pa.Table.from_pylist(rows, schema=_SNAPSHOTS)


def table_history(table: TableHandle) -> pa.Table:
    """When each store's current snapshot changed, oldest first (the stores' snapshot logs)."""
    rows = [
        {"made_current_at": entry.timestamp_ms, "store": name, "snapshot_id": entry.snapshot_id}
        for name, store in _stores(table)
        for entry in store.metadata.snapshot_log
    ]
    rows.sort(key=lambda r: (r["made_current_at"], r["store"]))
    return pa.Table.from_pylist(rows, schema=_HISTORY)
