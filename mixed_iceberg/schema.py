"""Table schemas: Arrow in, Iceberg stored, and the change-file schema with ``_file_offset``.

The ChangeStore's Iceberg schema equals the BaseStore's; ``_file_offset`` lives only in the
Parquet files of the ChangeStore (Amoro's ``SchemaUtil.changeWriteSchema``), under Amoro's
reserved field id so that Java readers find it.

A new table may not take the names of the columns mixed-iceberg adds next to the user's
(:data:`RESERVED_COLUMNS`, and any name starting with ``__``, the prefix of the merge kernels'
working columns), nor key on a type whose rows cannot be hashed into tree nodes and compared by
key (:data:`KEY_TYPES`): such a table could be created but never written or read.
"""

from __future__ import annotations

from collections.abc import Sequence

import pyarrow as pa
from pyiceberg.io.pyarrow import schema_to_pyarrow
from pyiceberg.schema import Schema, assign_fresh_schema_ids
from pyiceberg.types import (
    BinaryType,
    BooleanType,
    DateType,
    DecimalType,
    FixedType,
    IcebergType,
    IntegerType,
    LongType,
    NestedField,
    StringType,
    TimestampType,
    TimestamptzType,
    TimeType,
)

from mixed_iceberg._pyiceberg.schemas import to_iceberg_schema
from mixed_iceberg.arrow_types import conform_column, creatable_schema
from mixed_iceberg.exceptions import InvalidScanError, InvalidSchemaError, MissingKeyError, SchemaMismatchError

__all__ = [
    "FILE_OFFSET_FIELD",
    "FILE_OFFSET_FIELD_ID",
    "KEY_TYPES",
    "RESERVED_COLUMNS",
    "RESERVED_PREFIX",
    "TRANSACTION_ID_FIELD_ID",
    "arrow_schema",
    "change_file_schema",
    "check_column_names",
    "conform",
    "keyed_iceberg_schema",
    "selected_columns",
    "top_level_names",
]

#: Amoro's reserved ids (``MetadataColumns.java``): Integer.MAX_VALUE - 1001 / - 1002.
TRANSACTION_ID_FIELD_ID = 2147483647 - 1001
FILE_OFFSET_FIELD_ID = 2147483647 - 1002
FILE_OFFSET_FIELD = NestedField(FILE_OFFSET_FIELD_ID, "_file_offset", LongType(), required=False)

#: Column names mixed-iceberg puts next to the table's own, matched case-insensitively:
#: Amoro's metadata columns (``MetadataColumns.java``: ``_transaction_id``, ``_file_offset``,
#: ``_change_action``, ``_tree_node``; ``_ingest_time`` of its watermark generator), and the
#: columns of change batches, change scans and LogStore reads.
RESERVED_COLUMNS = (
    "_transaction_id",
    "_file_offset",
    "_change_action",
    "_tree_node",
    "_ingest_time",
    "_upstream_id",
    "_epic",
    "_partition",
    "_offset",
)
#: Prefix of the working columns of the merge kernels (``__lsn``, ``__row``, ...).
RESERVED_PREFIX = "__"
#: Iceberg types a primary-key column may have: hashed as Amoro's Java writers do
#: (:mod:`mixed_iceberg.format.javahash`) and usable as Arrow join and group-by keys.
#: float and double are refused as Iceberg refuses them as identifier fields (NaN, -0.0);
#: uuid because Arrow's hash kernels take no extension-typed keys; nested types as Amoro does.
KEY_TYPES: tuple[type[IcebergType], ...] = (
    BooleanType,
    IntegerType,
    LongType,
    DecimalType,
    DateType,
    TimeType,
    TimestampType,
    TimestamptzType,
    StringType,
    FixedType,
    BinaryType,
)
_KEY_TYPE_NAMES = "boolean, int, long, decimal, date, time, timestamp, timestamptz, string, fixed, binary"


def top_level_names(schema: Schema) -> list[str]:
    """The names of ``schema``'s top-level columns, in order (pyiceberg's ``Schema.column_names``
    also lists every nested field, ``l.element`` or ``s.a``, which are no columns of a table)."""
    return [field.name for field in schema.fields]


def selected_columns(schema: Schema, selected: Sequence[str], *, case_sensitive: bool, table: str) -> list[str]:
    """The top-level columns ``selected`` names (``("*",)``: all), in table order, as the table
    spells them; with ``case_sensitive=False`` names match whatever their case.

    Raises:
        InvalidScanError: a name that is no column of the table.
    """
    names = top_level_names(schema)
    if tuple(selected) == ("*",):
        return names
    spelled = {name if case_sensitive else name.lower(): name for name in names}
    unknown = [f for f in selected if (f if case_sensitive else f.lower()) not in spelled]
    if unknown:
        how = "" if case_sensitive else " (case-insensitive)"
        raise InvalidScanError(f"{table}: selected fields {unknown} are not columns; expected some of {names}{how}")
    wanted = {spelled[f if case_sensitive else f.lower()] for f in selected}
    return [name for name in names if name in wanted]


def _where(table: str) -> str:
    return f"table {table}: " if table else ""


def check_column_names(schema: Schema, table: str = "") -> None:
    """Refuse top-level columns that take a name mixed-iceberg reserves.

    Raises:
        InvalidSchemaError: naming the columns, the reserved names and the reserved prefix.
    """
    reserved = set(RESERVED_COLUMNS)
    taken = [f.name for f in schema.fields if f.name.lower() in reserved or f.name.startswith(RESERVED_PREFIX)]
    if taken:
        raise InvalidSchemaError(
            f"{_where(table)}expected column names other than the reserved {list(RESERVED_COLUMNS)} "
            f"and names starting with {RESERVED_PREFIX!r}, found {taken}; rename them"
        )


def keyed_iceberg_schema(schema: pa.Schema | Schema, primary_key: Sequence[str], *, table: str = "") -> Schema:
    """The Iceberg schema for a new table: fresh field ids, key columns required.

    Key columns are made required (a key can never be null) and declared as the
    schema's identifier fields, so that engines such as Flink see the upsert key too.

    An Arrow schema's types are mapped as :mod:`mixed_iceberg.arrow_types` says (uint32 to
    long, ...) or refused.

    Raises:
        MissingKeyError: a key column is not a top-level column of ``schema``.
        InvalidSchemaError: a column takes a reserved name, two columns share a name, or a key
            column's type is not one of :data:`KEY_TYPES` (nested fields are never keys).
        UnsupportedColumnTypeError: an Arrow type no Iceberg type holds exactly (uint64,
            timestamp[ns], a zone other than UTC, ...), naming the type to use.
    """
    if isinstance(schema, pa.Schema):
        schema = creatable_schema(schema, table=table)
    converted = to_iceberg_schema(schema)
    fresh = assign_fresh_schema_ids(converted)
    check_column_names(fresh, table)
    names = [field.name for field in fresh.fields]
    nested = [key for key in primary_key if key not in names and _is_field(fresh, key)]
    if nested:
        raise InvalidSchemaError(
            f"{_where(table)}primary key columns {nested} are nested fields; expected top-level columns of {names} "
            "(nested fields are payload only)"
        )
    missing = [key for key in primary_key if key not in names]
    if missing:
        raise MissingKeyError(f"{_where(table)}primary key columns {missing} are not in the schema; expected a subset of {names}")
    if len(set(primary_key)) != len(primary_key):
        raise MissingKeyError(f"{_where(table)}primary key lists a column twice: {list(primary_key)}")
    fields = []
    for field in fresh.fields:
        if field.name in primary_key:
            if not isinstance(field.field_type, KEY_TYPES):
                raise InvalidSchemaError(
                    f"{_where(table)}primary key column {field.name!r}: expected one of the key types "
                    f"{_KEY_TYPE_NAMES}, found {field.field_type}"
                )
            field = NestedField(field.field_id, field.name, field.field_type, required=True, doc=field.doc)
        fields.append(field)
    key_ids = [next(f.field_id for f in fields if f.name == key) for key in primary_key]
    return Schema(*fields, schema_id=fresh.schema_id, identifier_field_ids=key_ids)


def _is_field(schema: Schema, name: str) -> bool:
    try:
        schema.find_field(name)
    except ValueError:
        return False
    return True


def arrow_schema(schema: Schema, *, field_ids: bool = True) -> pa.Schema:
    """The Arrow schema pyiceberg reads and writes for ``schema`` (strings as large_string)."""
    return schema_to_pyarrow(schema, include_field_ids=field_ids)


def change_file_schema(schema: Schema) -> pa.Schema:
    """Arrow schema of a ChangeStore Parquet file: table columns plus ``_file_offset``."""
    base = arrow_schema(schema)
    offset = pa.field(
        FILE_OFFSET_FIELD.name,
        pa.int64(),
        nullable=True,
        metadata={b"PARQUET:field_id": str(FILE_OFFSET_FIELD_ID).encode()},
    )
    return base.append(offset)


def conform(table: pa.Table, target: pa.Schema, *, table_name: str) -> pa.Table:
    """Select ``table``'s columns by name and give them ``target``'s types, or say what differs.

    A column converts only where every value keeps its meaning (:mod:`mixed_iceberg.arrow_types`).

    Raises:
        SchemaMismatchError: a column is missing or extra, its type is not the table's nor one
            that widens to it, or a required field holds nulls.
    """
    expected = target.names
    found = table.column_names
    missing = [name for name in expected if name not in found]
    extra = [name for name in found if name not in expected]
    if missing or extra:
        raise SchemaMismatchError(
            f"{table_name}: columns do not match the table schema; expected {expected}, "
            f"found {found} (missing {missing}, unexpected {extra})"
        )
    columns = [conform_column(table.column(field.name), field, table=table_name) for field in target]
    return pa.Table.from_arrays(columns, schema=target)
