"""The one seam over PyFlink's internals (its py4j gateway and private helpers).

PyFlink's public ``TableEnvironment.from_pandas`` turns a pandas DataFrame into a bounded table
whose rows the JVM reads from Arrow batches: Python serializes the batches once, Java's
``ArrowUtils.createArrowTableSourceDesc`` loads them into a table descriptor, and Flink's
``ArrowSourceFunction`` decodes them in the JVM, no Python call per row. Its only public entry
takes pandas, which costs a conversion of every column there and back and loses Arrow types on the
way (an all-null column, dates and decimals as Python objects; a ``TIMESTAMP_LTZ`` as the session
zone's wall clock, which Flink's reader then takes for the UTC instant, shifting it by the zone's
offset). :func:`table_from_arrow` takes Arrow record batches straight to the same Java entry.

Needs removing when PyFlink offers ``from_arrow`` (no upstream issue known; PyFlink 2.2.1 has
none). Checked against the PyFlink version below at import.

:func:`column_types` mends a loss in PyFlink's own type conversion: its ``_from_java_data_type``
(what ``Table.get_schema()`` and ``get_resolved_schema()`` use) turns every Java ``TIMESTAMP(p)``
into a Python ``TIMESTAMP(3)`` and every ``TIMESTAMP_LTZ(p)`` into ``TIMESTAMP_LTZ(6)``. A sink
table declared from those types truncates each ``TIMESTAMP(6)`` value to milliseconds without a
word (found by tests/integration/test_flink_sql.py); :func:`column_types` takes the precisions
from the Java types instead.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterable
from typing import Any

import pyarrow as pa
from pyflink import version as _pyflink_version
from pyflink.java_gateway import get_gateway
from pyflink.table import Table, TableEnvironment
from pyflink.table.types import (
    ArrayType,
    DataType,
    DataTypes,
    MapType,
    RowType,
    _from_java_data_type,
    _to_java_data_type,
    create_arrow_schema,
)
from pyflink.util.java_utils import load_java_class

__all__ = ["SUPPORTED_PYFLINK", "arrow_schema", "column_types", "table_from_arrow"]

#: The PyFlink whose private names this module uses (pyproject.toml pins the same).
SUPPORTED_PYFLINK = "2.2.1"
if _pyflink_version.__version__ != SUPPORTED_PYFLINK:  # pragma: no cover - the pin in pyproject.toml holds it
    raise ImportError(f"mixed_iceberg._pyflink: expected PyFlink {SUPPORTED_PYFLINK}, found {_pyflink_version.__version__}")


def arrow_schema(row_type: RowType) -> pa.Schema:
    """The Arrow schema Flink's Arrow reader expects for ``row_type`` (PyFlink's own mapping)."""
    return create_arrow_schema(row_type.field_names(), row_type.field_types())


def table_from_arrow(t_env: TableEnvironment, row_type: RowType, batches: Iterable[pa.RecordBatch]) -> Table:
    """A bounded PyFlink table of ``batches`` (each already of :func:`arrow_schema`), decoded in the JVM.

    The batches are written once, as an Arrow IPC stream, to a temporary file that the JVM reads
    into the table's descriptor before this returns (so they travel with the job graph).
    """
    directory = tempfile.mkdtemp(prefix="mixed-iceberg-flink-source-")
    path = os.path.join(directory, "batches.arrows")
    try:
        schema = arrow_schema(row_type)
        with pa.OSFile(path, "wb") as sink, pa.ipc.new_stream(sink, schema) as writer:
            for batch in batches:
                writer.write_batch(batch)
        gateway: Any = get_gateway()
        data_type = _to_java_data_type(row_type).notNull().bridgedTo(load_java_class("org.apache.flink.table.data.RowData"))
        descriptor = gateway.jvm.org.apache.flink.table.runtime.arrow.ArrowUtils.createArrowTableSourceDesc(data_type, path)
        return Table(getattr(t_env._j_tenv, "from")(descriptor), t_env)
    finally:
        if os.path.exists(path):
            os.unlink(path)
        os.rmdir(directory)


def column_types(table: Table) -> tuple[list[str], list[DataType]]:
    """The names and types of ``table``'s resolved columns, every timestamp with its precision
    (module docstring: PyFlink's own conversion loses it)."""
    columns = table._j_table.getResolvedSchema().getColumns()
    names = [str(column.getName()) for column in columns]
    types = [_exact(_from_java_data_type(column.getDataType()), column.getDataType().getLogicalType()) for column in columns]
    return names, types


def _exact(kind: DataType, logical: Any) -> DataType:
    """``kind`` (PyFlink's conversion of the Java ``logical`` type) with the Java type's timestamp
    precisions, at every level."""
    java = str(logical.getClass().getSimpleName())
    nullable = bool(logical.isNullable())
    if java == "TimestampType":
        return DataTypes.TIMESTAMP(int(logical.getPrecision()), nullable)
    if java == "LocalZonedTimestampType":
        return DataTypes.TIMESTAMP_LTZ(int(logical.getPrecision()), nullable)
    if isinstance(kind, ArrayType):
        return DataTypes.ARRAY(_exact(kind.element_type, logical.getElementType()), nullable)
    if isinstance(kind, MapType):
        return DataTypes.MAP(
            _exact(kind.key_type, logical.getKeyType()), _exact(kind.value_type, logical.getValueType()), nullable
        )
    if isinstance(kind, RowType):
        fields = [DataTypes.FIELD(f.name, _exact(f.data_type, logical.getTypeAt(i))) for i, f in enumerate(kind.fields)]
        return DataTypes.ROW(fields, nullable)
    return kind
