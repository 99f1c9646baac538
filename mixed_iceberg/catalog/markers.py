"""Amoro's table properties that link a BaseStore to its ChangeStore (``TablePropertyUtil``)."""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence

from mixed_iceberg.typedef import TableFormat, TableStore

__all__ = [
    "CHANGE_IDENTIFIER",
    "PRIMARY_KEY_FIELDS",
    "TABLE_FORMAT",
    "TABLE_STORE",
    "WRITER_HEADER",
    "change_store_name",
    "primary_key_of",
    "store_properties",
    "table_format_of",
]

TABLE_FORMAT = "table-format"
PRIMARY_KEY_FIELDS = "mixed-format.primary-key-fields"
TABLE_STORE = "mixed-format.table-store"
CHANGE_IDENTIFIER = "mixed-format.change.identifier"
#: The HTTP header mixed-iceberg's REST client sends with every request, so that a REST server
#: guarding keyed tables (``mixed-iceberg serve``) tells its structural changes (a schema change
#: applied to both stores) from a plain client's; other servers ignore it.
WRITER_HEADER = "X-Mixed-Iceberg-Writer"


def change_store_name(table_name: str, separator: str) -> str:
    """``orders`` -> ``orders_change_`` (Amoro's ``MixedTableUtil.changeStoreName``)."""
    return f"{table_name}{separator}change{separator}"


def store_properties(
    user: Mapping[str, str],
    store: TableStore,
    primary_key: Sequence[str] | None,
    change_identifier: str | None,
) -> dict[str, str]:
    """The properties a store is created with: the user's plus Amoro's markers."""
    props = dict(user)
    props.update(
        {
            TABLE_FORMAT: TableFormat.MIXED_ICEBERG.value,
            TABLE_STORE: store.value,
            "table.create-timestamp": str(int(time.time() * 1000)),
            "format-version": "2",
            "write.metadata.delete-after-commit.enabled": "true",
            "flink.max-continuous-empty-commits": str(2**31 - 1),
        }
    )
    if primary_key:
        props[PRIMARY_KEY_FIELDS] = ",".join(primary_key)
    if change_identifier is not None:
        props[CHANGE_IDENTIFIER] = change_identifier
    return props


def table_format_of(properties: Mapping[str, str]) -> TableFormat:
    """MIXED_ICEBERG when the Amoro marker says so, ICEBERG otherwise."""
    value = properties.get(TABLE_FORMAT, "").upper()
    return TableFormat.MIXED_ICEBERG if value == TableFormat.MIXED_ICEBERG.value else TableFormat.ICEBERG


def primary_key_of(properties: Mapping[str, str]) -> tuple[str, ...]:
    """Primary-key column names (empty for unkeyed tables)."""
    raw = properties.get(PRIMARY_KEY_FIELDS, "")
    return tuple(name.strip() for name in raw.split(",") if name.strip())
