"""Helpers for tests that need a real catalog and keyed tables (SQLite + local warehouse)."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa

from mixed_iceberg import MixedCatalog, load_catalog

ORDERS_SCHEMA = pa.schema(
    [
        pa.field("id", pa.int64(), nullable=False),
        pa.field("cat", pa.string()),
        pa.field("qty", pa.int32()),
        pa.field("price", pa.float64()),
    ]
)


def local_catalog(root: Path, name: str = "local") -> MixedCatalog:
    """A fresh SQLite catalog whose warehouse lives under ``root``."""
    root.mkdir(parents=True, exist_ok=True)
    return load_catalog(name, uri=f"sqlite:///{root}/catalog.db", warehouse=str(root / "wh"))


def changes(rows: list[tuple[str, int, str | None, int | None, float | None]]) -> pa.Table:
    """A change batch from (action, id, cat, qty, price) tuples."""
    return pa.table(
        {
            "id": pa.array([r[1] for r in rows], pa.int64()),
            "cat": pa.array([r[2] for r in rows], pa.string()),
            "qty": pa.array([r[3] for r in rows], pa.int32()),
            "price": pa.array([r[4] for r in rows], pa.float64()),
            "_change_action": pa.array([r[0] for r in rows], pa.string()),
        }
    )


def rows_of(table: pa.Table) -> list[tuple[object, ...]]:
    """Rows as sorted tuples (order-free comparison)."""
    return sorted(tuple(r.values()) for r in table.to_pylist())
