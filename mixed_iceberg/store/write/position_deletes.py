"""Position-delete files: write one (the spec's schema, exact bounds) and find the data file it targets.

Committing delete files needs pyiceberg internals; that lives in
:mod:`mixed_iceberg._pyiceberg.row_delta` (``stage_rewrite``).

Example:
    >>> deletes = write_position_deletes(  # doctest: +SKIP
    ...     tbl.io, path, pa.array([data.file_path] * 2), pa.array([3, 7]),
    ...     spec_id=0, partition=Record(), properties=tbl.properties)
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc
from pyiceberg.io import FileIO
from pyiceberg.io.fileformat import FileFormatFactory
from pyiceberg.io.pyarrow import schema_to_pyarrow
from pyiceberg.manifest import (
    DataFile,
    DataFileContent,
    FileFormat,
)
from pyiceberg.schema import Schema
from pyiceberg.table import TableProperties
from pyiceberg.typedef import Properties, Record
from pyiceberg.types import LongType, NestedField, StringType

__all__ = ["FILE_PATH_FIELD_ID", "POSITION_DELETE_SCHEMA", "POS_FIELD_ID", "referenced_data_file", "write_position_deletes"]

FILE_PATH_FIELD_ID = 2147483546
POS_FIELD_ID = 2147483545


def referenced_data_file(delete: DataFile) -> str | None:
    """The one data file every row of a position-delete file points at, when its ``file_path``
    bounds are equal (Iceberg's rule, as Java's ``ContentFileUtil.referencedDataFile``); else None."""
    if delete.content != DataFileContent.POSITION_DELETES:
        return None
    lower = (delete.lower_bounds or {}).get(FILE_PATH_FIELD_ID)
    if lower is None or lower != (delete.upper_bounds or {}).get(FILE_PATH_FIELD_ID):
        return None
    return lower.decode()


#: The spec's position-delete schema. pyiceberg's ``POSITIONAL_DELETE_SCHEMA`` is only fit for
#: reading: both columns are optional there and ``pos`` is an int.
POSITION_DELETE_SCHEMA = Schema(
    NestedField(FILE_PATH_FIELD_ID, "file_path", StringType(), required=True),
    NestedField(POS_FIELD_ID, "pos", LongType(), required=True),
)

# Exact bounds, whatever the table's metrics mode: a delete file whose file_path bounds are equal
# is indexed by that one data file (pyiceberg's DeleteFileIndex, Java's too) instead of being
# opened for every data file of its partition. The default truncate(16) would lose that.
_FULL_METRICS = {f"{TableProperties.METRICS_MODE_COLUMN_CONF_PREFIX}.{name}": "full" for name in ("file_path", "pos")}


def write_position_deletes(
    io: FileIO,
    path: str,
    file_paths: pa.Array | pa.ChunkedArray,
    positions: pa.Array | pa.ChunkedArray,
    *,
    spec_id: int,
    partition: Record,
    properties: Properties,
) -> DataFile:
    """Write the deleted rows ``(file_paths[i], positions[i])`` as one Parquet position-delete file.

    Rows are deduplicated and sorted by (file_path, pos), as the spec requires of writers (readers
    may merge them with data rows in order). All data files referenced must share ``partition``.

    Returns:
        The manifest description (``content=POSITION_DELETES``, counts, size, exact bounds).

    Raises:
        ValueError: the two arrays differ in length, hold nulls, or are empty.
    """
    if len(file_paths) != len(positions):
        raise ValueError(f"{path}: expected as many positions as file paths, found {len(positions)} and {len(file_paths)}")
    if len(file_paths) == 0:
        raise ValueError(f"{path}: expected at least one deleted row, found none")
    rows = pa.table({"file_path": pc.cast(file_paths, pa.string()), "pos": pc.cast(positions, pa.int64())})
    if rows["file_path"].null_count or rows["pos"].null_count:
        raise ValueError(f"{path}: expected no null file path or position, found some")
    rows = rows.group_by(["file_path", "pos"]).aggregate([])
    rows = rows.sort_by([("file_path", "ascending"), ("pos", "ascending")])
    rows = rows.cast(schema_to_pyarrow(POSITION_DELETE_SCHEMA))
    output = io.new_output(path)
    writer = FileFormatFactory.get(FileFormat.PARQUET).create_writer(
        output, POSITION_DELETE_SCHEMA, {**properties, **_FULL_METRICS}
    )
    with writer:
        writer.write(rows)
    data_file = DataFile.from_args(
        content=DataFileContent.POSITION_DELETES,
        file_path=path,
        file_format=FileFormat.PARQUET,
        partition=partition,
        file_size_in_bytes=len(output),
        sort_order_id=None,
        equality_ids=None,
        key_metadata=None,
        **writer.result().to_serialized_dict(),
    )
    data_file.spec_id = spec_id  # from_args drops spec_id: it is not a manifest column
    return data_file
