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
from pyflink.table.types import RowType, _to_java_data_type, create_arrow_schema
from pyflink.util.java_utils import load_java_class

__all__ = ["SUPPORTED_PYFLINK", "arrow_schema", "table_from_arrow"]

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
