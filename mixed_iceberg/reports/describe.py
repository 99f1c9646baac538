"""A table's definition: what ``mixed-iceberg describe --json`` prints and the dashboard's table page shows."""

from __future__ import annotations

from typing import Any

from pyiceberg.table import Table

from mixed_iceberg.table import MixedTable
from mixed_iceberg.typedef import TableFormat

__all__ = ["KIND_TEXT", "describe_report", "kind_of"]

#: A table's kind for people.
KIND_TEXT = {"keyed": "Mixed-Iceberg, keyed", "unkeyed": "Mixed-Iceberg, unkeyed", "iceberg": "plain Iceberg"}


def kind_of(table: MixedTable) -> str:
    """``keyed`` or ``unkeyed`` (Mixed-Iceberg), or ``iceberg`` (a plain Iceberg table)."""
    if table.format is TableFormat.ICEBERG:
        return "iceberg"
    return "keyed" if table.is_keyed else "unkeyed"


def _store(store: Table | None) -> dict[str, Any] | None:
    if store is None:
        return None
    snapshot = store.current_snapshot()
    return {
        "location": store.location(),
        "current_snapshot_id": snapshot.snapshot_id if snapshot else None,
        "snapshots": len(store.metadata.snapshots),
        "metadata_location": store.metadata_location,
    }


def describe_report(mixed: MixedTable, catalog: str) -> dict[str, Any]:
    """Schema, primary key, partition spec, merge engine, both stores and properties of ``mixed``."""
    spec = mixed.base_store.spec()
    schema = mixed.schema()
    merge = mixed.merge_config
    return {
        "table": mixed.name,
        "catalog": catalog,
        "kind": kind_of(mixed),
        "format": mixed.format.value,
        "primary_key": list(mixed.primary_key),
        "columns": [
            {"id": f.field_id, "name": f.name, "type": str(f.field_type), "required": f.required, "doc": f.doc}
            for f in schema.fields
        ],
        "partition_spec": [
            {"name": p.name, "transform": str(p.transform), "source": schema.find_column_name(p.source_id)} for p in spec.fields
        ],
        "merge_engine": merge.engine.value if mixed.is_keyed else None,
        "sequence_field": merge.sequence_field if mixed.is_keyed else None,
        "base_store": _store(mixed.base_store),
        "change_store": _store(mixed.change_store),
        "properties": dict(sorted(mixed.properties.items())),
    }
