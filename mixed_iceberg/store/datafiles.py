"""Write one Arrow table as one Parquet data file of an Iceberg table, and describe it.

The caller chooses the path (Amoro's file names); pyiceberg's Parquet writer computes the
column statistics that go into the manifest.
"""

from __future__ import annotations

import pyarrow as pa
from pyiceberg.io import FileIO
from pyiceberg.io.fileformat import FileFormatFactory
from pyiceberg.io.pyarrow import schema_to_pyarrow
from pyiceberg.manifest import DataFile, DataFileContent, FileFormat
from pyiceberg.schema import Schema
from pyiceberg.typedef import Properties, Record

__all__ = ["data_location", "write_data_file"]


def data_location(table_location: str, partition_path: str, file_name: str) -> str:
    """``<location>/data/<partitionPath>/<fileName>`` (Amoro's ``CommonOutputFileFactory``)."""
    base = table_location.rstrip("/")
    return f"{base}/data/{partition_path}/{file_name}" if partition_path else f"{base}/data/{file_name}"


def write_data_file(
    io: FileIO,
    path: str,
    rows: pa.Table,
    file_schema: Schema,
    *,
    spec_id: int,
    partition: Record,
    properties: Properties,
    content: DataFileContent = DataFileContent.DATA,
    equality_ids: list[int] | None = None,
) -> DataFile:
    """Write ``rows`` (the columns of ``file_schema``, in compatible types) to ``path``.

    Returns:
        The manifest description of the written file (statistics included).
    """
    # Readers map columns by Parquet field id: always write the ids, whatever ``rows`` carried.
    target = schema_to_pyarrow(file_schema, include_field_ids=True)
    rows = rows.select(target.names).cast(target)
    output = io.new_output(path)
    writer = FileFormatFactory.get(FileFormat.PARQUET).create_writer(output, file_schema, properties)
    with writer:
        writer.write(rows)
    statistics = writer.result()
    data_file = DataFile.from_args(
        content=content,
        file_path=path,
        file_format=FileFormat.PARQUET,
        partition=partition,
        file_size_in_bytes=len(output),
        sort_order_id=None,
        spec_id=spec_id,
        equality_ids=equality_ids,
        key_metadata=None,
        **statistics.to_serialized_dict(),
    )
    data_file.spec_id = spec_id  # from_args drops it, and partition_path() needs it
    return data_file
