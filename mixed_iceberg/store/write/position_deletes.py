"""Position-delete files: write one (the spec's schema, exact bounds) and find the data file it targets.

Committing delete files needs pyiceberg internals; that lives in
:mod:`mixed_iceberg._pyiceberg.row_delta` (``stage_rewrite``).

Example:
    >>> deletes = write_position_deletes(  # doctest: +SKIP
    ...     tbl.io, path, pa.array([data.file_path] * 2), pa.array([3, 7]),
    ...     spec_id=0, partition=Record(), properties=tbl.properties)
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc
from pyiceberg.io import FileIO
from pyiceberg.manifest import DataFile, DataFileContent
from pyiceberg.schema import Schema
from pyiceberg.table import TableProperties
from pyiceberg.typedef import Properties, Record
from pyiceberg.types import LongType, NestedField, StringType

from mixed_iceberg.store.write.data_file import write_data_file

__all__ = [
    "FILE_PATH_FIELD_ID",
    "POSITION_DELETE_SCHEMA",
    "POS_FIELD_ID",
    "referenced_data_file",
    "write_position_deletes",
    "write_positions_by_file",
]

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


def _sorted_unique(paths: pa.Array | pa.ChunkedArray, positions: pa.Array | pa.ChunkedArray) -> tuple[pa.Array, pa.Array]:
    """The distinct ``(path, position)`` pairs sorted by path, then position. A delete file names
    a few data files: their paths are sorted once as a dictionary and the rows by (rank, pos) as
    integers (a group-by and sort on the string column took three times as long)."""
    encoded = (paths.combine_chunks() if isinstance(paths, pa.ChunkedArray) else paths).dictionary_encode()
    order = pc.sort_indices(encoded.dictionary).to_numpy()
    rank = np.empty(len(order), dtype=np.int64)
    rank[order] = np.arange(len(order))
    codes = rank[encoded.indices.to_numpy(zero_copy_only=False)]
    pos = (positions.combine_chunks() if isinstance(positions, pa.ChunkedArray) else positions).to_numpy()
    at = np.lexsort((pos, codes))
    codes, pos = codes[at], pos[at]
    first = np.ones(len(at), dtype=bool)
    first[1:] = (codes[1:] != codes[:-1]) | (pos[1:] != pos[:-1])
    return encoded.dictionary.take(pa.array(order[codes[first]])), pa.array(pos[first])


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
    paths = pc.cast(file_paths, pa.string())
    pos = pc.cast(positions, pa.int64())
    if paths.null_count or pos.null_count:
        raise ValueError(f"{path}: expected no null file path or position, found some")
    return _write(io, path, *_sorted_unique(paths, pos), spec_id=spec_id, partition=partition, properties=properties)


def write_positions_by_file(
    io: FileIO,
    path: str,
    by_target: Mapping[str, npt.NDArray[np.int64]],
    *,
    spec_id: int,
    partition: Record,
    properties: Properties,
) -> DataFile:
    """:func:`write_position_deletes` for positions already grouped by data file, each group
    ascending and distinct (what a merge finds): the rows are laid out in order without the
    general sort and deduplication.

    Raises:
        ValueError: no positions, or a group that is not ascending and distinct.
    """
    targets = sorted(t for t, p in by_target.items() if len(p))
    if not targets:
        raise ValueError(f"{path}: expected at least one deleted row, found none")
    groups = [np.asarray(by_target[t], dtype=np.int64) for t in targets]
    for target, positions in zip(targets, groups, strict=True):
        if len(positions) > 1 and not bool((positions[1:] > positions[:-1]).all()):
            raise ValueError(f"{path}: expected ascending distinct positions for {target}, found others")
    paths = pa.DictionaryArray.from_arrays(
        pa.array(np.repeat(np.arange(len(targets), dtype=np.int32), [len(p) for p in groups])), pa.array(targets, pa.string())
    )
    return _write(
        io,
        path,
        paths.cast(pa.string()),
        pa.array(np.concatenate(groups)),
        spec_id=spec_id,
        partition=partition,
        properties=properties,
    )


def _write(
    io: FileIO, path: str, paths: pa.Array, positions: pa.Array, *, spec_id: int, partition: Record, properties: Properties
) -> DataFile:
    rows = pa.Table.from_arrays([paths, positions], names=["file_path", "pos"])  # typed by the writer
    # The data-file writer: its statistics plan is built once per schema and properties (built
    # per file, pyiceberg's writer spent half of a small delete file's time on it).
    return write_data_file(
        io,
        path,
        rows,
        POSITION_DELETE_SCHEMA,
        spec_id=spec_id,
        partition=partition,
        properties={**properties, **_FULL_METRICS},
        content=DataFileContent.POSITION_DELETES,
    )
