"""Debezium messages in Kafka Connect's JsonConverter envelope, written by hand.

The shape is the one Debezium 3.6's PostgreSQL connector writes with ``schemas.enable=true``:
``{"schema": {"type": "struct", "fields": [before, after, source, transaction, op, ts_ms,
...]}, "payload": {...}}``, compact, schema first. Each column is given as its Kafka Connect
schema (:func:`column`), so a test can say which semantic type a value comes as.
"""

from __future__ import annotations

import json
from typing import Any

__all__ = ["column", "envelope", "envelope_schema", "value_schema"]

_SOURCE = {
    "type": "struct",
    "fields": [
        {"type": "string", "optional": False, "field": "version"},
        {"type": "string", "optional": False, "field": "connector"},
        {"type": "string", "optional": False, "field": "name"},
        {"type": "int64", "optional": False, "field": "ts_ms"},
        {
            "type": "string",
            "optional": True,
            "name": "io.debezium.data.Enum",
            "version": 1,
            "parameters": {"allowed": "true,first,first_in_data_collection,last_in_data_collection,last,false,incremental"},
            "default": "false",
            "field": "snapshot",
        },
        {"type": "string", "optional": False, "field": "db"},
        {"type": "string", "optional": True, "field": "sequence"},
        {"type": "int64", "optional": True, "field": "ts_us"},
        {"type": "int64", "optional": True, "field": "ts_ns"},
        {"type": "string", "optional": False, "field": "schema"},
        {"type": "string", "optional": False, "field": "table"},
        {"type": "int64", "optional": True, "field": "txId"},
        {"type": "int64", "optional": True, "field": "lsn"},
        {"type": "int64", "optional": True, "field": "xmin"},
    ],
    "optional": False,
    "name": "io.debezium.connector.postgresql.Source",
    "version": 1,
    "field": "source",
}


def column(name: str, connect_type: str, semantic: str | None = None, **parameters: str) -> dict[str, Any]:
    """One column's Kafka Connect schema, as Debezium writes it."""
    out: dict[str, Any] = {"type": connect_type, "optional": name != "id"}
    if semantic is not None:
        out |= {"name": semantic, "version": 1}
    if parameters:
        out["parameters"] = parameters
    return out | {"field": name}


def value_schema(columns: list[dict[str, Any]], table: str = "t") -> dict[str, Any]:
    return {"type": "struct", "fields": columns, "optional": True, "name": f"pg.public.{table}.Value"}


def envelope_schema(columns: list[dict[str, Any]], table: str = "t") -> dict[str, Any]:
    """The schema of a change event whose before and after images have ``columns``."""
    value = value_schema(columns, table)
    return {
        "type": "struct",
        "fields": [
            {**value, "field": "before"},
            {**value, "field": "after"},
            _SOURCE,
            {"type": "string", "optional": False, "field": "op"},
            {"type": "int64", "optional": True, "field": "ts_ms"},
            {"type": "int64", "optional": True, "field": "ts_us"},
            {"type": "int64", "optional": True, "field": "ts_ns"},
        ],
        "optional": False,
        "name": f"pg.public.{table}.Envelope",
        "version": 2,
    }


def envelope(
    columns: list[dict[str, Any]],
    *,
    op: str = "c",
    before: dict[str, Any] | None = None,
    after: dict[str, Any] | None = None,
    ts_ms: int = 1_700_000_000_000,
    table: str = "t",
    schema_first: bool = True,
) -> bytes:
    """A Debezium change event with its schema; ``columns`` from :func:`column`."""
    schema = envelope_schema(columns, table)
    source = {"version": "3.6.1.Final", "connector": "postgresql", "name": "pg", "ts_ms": ts_ms - 5, "snapshot": "false",
              "db": "mixed_iceberg", "schema": "public", "table": table, "txId": 780, "lsn": 24023128}  # fmt: skip
    payload = {"before": before, "after": after, "source": source, "op": op, "ts_ms": ts_ms}
    message = {"schema": schema, "payload": payload} if schema_first else {"payload": payload, "schema": schema}
    return json.dumps(message, separators=(",", ":")).encode()
