"""A Mixed-Iceberg table as a bounded PyFlink ``Table``: its merged view, now or as of a snapshot.

The rows cross into the JVM as Arrow record batches, decoded there by Flink's Arrow source (the
path of PyFlink's ``from_pandas``, without pandas: :mod:`mixed_iceberg._pyflink`); nothing calls
Python per row. The merged read is the library's (:meth:`MixedTable.scan`), so a Flink query over
the result sees exactly what ``scan().to_arrow()`` returns, one ``+I`` row per key.

Column types (docs/flink.md, "Reading a table"): each Iceberg type to the Flink type that holds
its values exactly, or a :class:`~mixed_iceberg.exceptions.UnsupportedColumnTypeError` naming the
column. Flink's ``TIME`` holds milliseconds: a ``time`` column is read when every value is a
whole millisecond and refused otherwise, never rounded; Flink's Arrow reader cannot read an
instant before 1970 with a sub-millisecond part, which is refused too (:func:`_check_before_1970`). A ``timestamptz`` column is a
``TIMESTAMP_LTZ`` of the same instants, whatever the session time zone.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator, Sequence
from datetime import date, datetime

import numpy as np
import pyarrow as pa
from pyflink.table import DataTypes, Table, TableEnvironment
from pyflink.table.types import DataType, RowType

from mixed_iceberg._pyflink import arrow_schema, table_from_arrow
from mixed_iceberg.exceptions import UnsupportedColumnTypeError
from mixed_iceberg.table import MixedTable

__all__ = ["flink_row_type", "flink_type", "read_table", "to_flink_batches"]

log = logging.getLogger(__name__)

#: Rows per Arrow batch handed to the JVM (each batch is one unit of Flink's Arrow reader).
DEFAULT_BATCH_ROWS = 65_536


def _storage(kind: pa.DataType) -> pa.DataType:
    """An extension type's storage type (pyarrow's ``uuid`` is ``fixed_size_binary(16)``)."""
    return kind.storage_type if isinstance(kind, pa.BaseExtensionType) else kind


def flink_type(field: pa.Field, *, table: str, path: str | None = None) -> DataType:
    """The Flink type that holds every value of the table column ``field`` exactly.

    Raises:
        UnsupportedColumnTypeError: a type Flink's Arrow source cannot carry, naming the column.
    """
    name = path or field.name
    kind = _storage(field.type)
    nullable = field.nullable
    simple: dict[pa.DataType, DataType] = {
        pa.bool_(): DataTypes.BOOLEAN(nullable),
        pa.int8(): DataTypes.TINYINT(nullable),
        pa.int16(): DataTypes.SMALLINT(nullable),
        pa.int32(): DataTypes.INT(nullable),
        pa.int64(): DataTypes.BIGINT(nullable),
        pa.float32(): DataTypes.FLOAT(nullable),
        pa.float64(): DataTypes.DOUBLE(nullable),
        pa.date32(): DataTypes.DATE(nullable),
        pa.string(): DataTypes.STRING(nullable),
        pa.large_string(): DataTypes.STRING(nullable),
        pa.binary(): DataTypes.BYTES(nullable),
        pa.large_binary(): DataTypes.BYTES(nullable),
    }
    if kind in simple:
        return simple[kind]
    if pa.types.is_decimal128(kind):
        return DataTypes.DECIMAL(kind.precision, kind.scale, nullable)
    if pa.types.is_fixed_size_binary(kind):
        return DataTypes.BINARY(kind.byte_width, nullable)
    if pa.types.is_time(kind):
        return DataTypes.TIME(3, nullable)  # Flink's TIME holds milliseconds: checked per value
    if pa.types.is_timestamp(kind):
        precision = {"s": 0, "ms": 3, "us": 6, "ns": 9}[kind.unit]
        if kind.tz is not None:
            return DataTypes.TIMESTAMP_LTZ(precision, nullable)
        return DataTypes.TIMESTAMP(precision, nullable)
    nested = _nested(field, kind, table=table, name=name)
    if nested is not None:
        return nested
    raise UnsupportedColumnTypeError(f"{table}: column {name!r} of type {field.type} has no Flink type that holds it")


def _nested(field: pa.Field, kind: pa.DataType, *, table: str, name: str) -> DataType | None:
    """Lists, maps and structs of types Flink's Arrow source carries inside them: no structs
    or ``TIMESTAMP_LTZ`` within a list or a struct (PyFlink's Arrow mapping refuses them)."""

    def inner(child: pa.Field, where: str) -> DataType:
        found = flink_type(child, table=table, path=where)
        if isinstance(found, RowType) or type(found).__name__ == "LocalZonedTimestampType":
            raise UnsupportedColumnTypeError(
                f"{table}: column {where!r} of type {child.type}: Flink's Arrow source carries no struct or "
                "timestamptz inside a list or struct"
            )
        return found

    if pa.types.is_list(kind) or pa.types.is_large_list(kind):
        return DataTypes.ARRAY(inner(kind.value_field, f"{name}.element"), field.nullable)
    if pa.types.is_map(kind):
        key = flink_type(kind.key_field, table=table, path=f"{name}.key")
        value = flink_type(kind.item_field, table=table, path=f"{name}.value")
        return DataTypes.MAP(key, value, field.nullable)
    if pa.types.is_struct(kind):
        fields = [DataTypes.FIELD(child.name, inner(child, f"{name}.{child.name}")) for child in kind]
        return DataTypes.ROW(fields, field.nullable)
    return None


def flink_row_type(schema: pa.Schema, *, table: str) -> RowType:
    """The Flink row type of a merged read of ``schema``: column by column, key columns ``NOT NULL``."""
    row: RowType = DataTypes.ROW([DataTypes.FIELD(f.name, flink_type(f, table=table)) for f in schema], nullable=False)
    return row


def _column(column: pa.ChunkedArray, target: pa.DataType, *, table: str, name: str) -> pa.ChunkedArray:
    """``column`` in the Arrow type Flink's reader takes for it, refused rather than rounded."""
    kind = column.type
    if isinstance(kind, pa.BaseExtensionType):
        column = pa.chunked_array([chunk.storage for chunk in column.chunks], type=kind.storage_type)
        kind = kind.storage_type
    # A timestamptz goes as its UTC epoch value, which Flink's Arrow reader takes as the
    # TIMESTAMP_LTZ's instant. (PyFlink's from_pandas writes the session zone's wall clock
    # instead, which shifts every instant by the zone's offset inside Flink.)
    if pa.types.is_timestamp(kind) and kind.unit in ("us", "ns"):
        _check_before_1970(column, table=table, name=name)
    try:
        return column.cast(target, safe=True)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
        raise UnsupportedColumnTypeError(
            f"{table}: column {name!r} ({kind}) does not fit Flink's {target} without changing a value: {exc}"
        ) from exc


def _check_before_1970(column: pa.ChunkedArray, *, table: str, name: str) -> None:
    """Refuse an instant before 1970 with a sub-millisecond part: Flink's Arrow reader
    (flink-python 2.2.1, ``ArrowTimestampColumnVector.getTimestamp``) splits a micro- or nanosecond
    timestamp with truncating ``/`` and ``%``, so its nanosecond part comes out negative and the job
    fails with an ``IllegalArgumentException`` in ``TimestampData.fromEpochMillis``."""
    unit = 1_000 if column.type.unit == "us" else 1_000_000
    for chunk in column.chunks:
        values = np.asarray(chunk.cast(pa.int64()).fill_null(0))
        bad = (values < 0) & (values % unit != 0)
        if bad.any():
            found = chunk[int(np.argmax(bad))]
            raise UnsupportedColumnTypeError(
                f"{table}: column {name!r} holds {found}, before 1970 with a sub-millisecond part, which Flink's "
                "Arrow reader cannot read (it splits such a timestamp into a negative nanosecond part)"
            )


def to_flink_batches(
    data: pa.Table, row_type: RowType, *, table: str, batch_rows: int = DEFAULT_BATCH_ROWS
) -> Iterator[pa.RecordBatch]:
    """``data`` (a merged read) as record batches of :func:`~mixed_iceberg._pyflink.arrow_schema`
    of ``row_type``, at most ``batch_rows`` rows each, converted column by column (vectorized).

    Raises:
        UnsupportedColumnTypeError: a value Flink's type cannot hold (a sub-millisecond ``time``).
    """
    target = arrow_schema(row_type)
    columns = [_column(data.column(field.name), field.type, table=table, name=field.name) for field in target]
    converted = pa.Table.from_arrays(columns, schema=target)
    yield from converted.to_batches(max_chunksize=batch_rows)


def read_table(
    t_env: TableEnvironment,
    table: MixedTable,
    *,
    snapshot_id: int | None = None,
    as_of: datetime | date | str | int | None = None,
    row_filter: str | None = None,
    selected_fields: Sequence[str] = ("*",),
    batch_rows: int = DEFAULT_BATCH_ROWS,
) -> Table:
    """The merged view of ``table`` (now, as of ``snapshot_id`` or as of a time) as a bounded
    PyFlink ``Table`` of insert rows, one per key, in the table's column order and types.

    The read happens here, in the client; the rows then travel to the job in its graph, so the
    table must fit the client's memory (a join or aggregate over it runs in Flink as usual).

    Example:
        >>> orders = read_table(t_env, catalog.load_table("db.orders"))          # doctest: +SKIP
        >>> t_env.create_temporary_view("orders", orders)                        # doctest: +SKIP
        >>> t_env.sql_query("SELECT name, SUM(qty) FROM orders GROUP BY name")   # doctest: +SKIP

    Raises:
        NoSuchSnapshotError, SnapshotExpiredError, InvalidScanError: as :meth:`MixedTable.scan`.
        UnsupportedColumnTypeError: a column Flink cannot hold exactly, named.
    """
    started = time.monotonic()
    scan = table.scan(row_filter=row_filter, selected_fields=selected_fields, snapshot_id=snapshot_id, as_of=as_of)
    data = scan.to_arrow()
    row_type = flink_row_type(data.schema, table=table.name)
    batches = list(to_flink_batches(data, row_type, table=table.name, batch_rows=batch_rows))
    result = table_from_arrow(t_env, row_type, batches)
    log.info("%s: %d rows into a Flink table in %.2f s", table.name, data.num_rows, time.monotonic() - started)
    return result
