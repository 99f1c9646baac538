"""Read small Parquet files one at a time, by column name, with ``ParquetFile.read``.

A pyarrow dataset scan sets up a fragment, a scan task and thread hand-offs for every file:
for the files a streaming table is made of (a commit's change files and the optimizer's
fresh fragments, a few thousand rows each) that costs more than the rows: a small file of the
peers table takes less CPU through ``ParquetFile.read``, its key column alone even more so
(claims ``small_files`` and ``small_files_key`` of ``bench/results/design_choices-2026-12-06-e9ea149.json``,
``nice -n 5 .venv/bin/python -m bench.design_choices``). Big files keep the dataset scan, and so do many files
together: its threads read several files at once, for about the same CPU. They are kept for
the wall time more cores can save: on the two shared CPUs of the stored runs they saved none
that the runs can tell (claim ``many_files``, within noise there and in
``bench/results/design_choices-2026-12-06-e9ea149-2.json``) (:func:`are_small` tells them apart).

Columns are taken by name, as a dataset with an explicit schema takes them: the caller checks
that the files name them as ``target`` does (:mod:`mixed_iceberg.reader.field_ids`). A column
a file lacks reads as nulls, and types are cast to ``target``'s.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.parquet as pq

from mixed_iceberg.arrow_types import empty_table

__all__ = ["SMALL_FILE_ROWS", "SMALL_READ_ROWS", "are_small", "read_small_files"]

#: Mean rows per file up to which files are read one by one (a 1 MB fragment of the peers
#: table holds about 60,000 rows; per-file reads stay cheaper than a dataset scan up to there).
SMALL_FILE_ROWS = 50_000
#: Rows of all files together up to which they are read one by one: beyond, the dataset's
#: threads may save wall time on more cores, for about the same CPU (claim many_files, see above).
SMALL_READ_ROWS = 200_000


def are_small(record_counts: Sequence[int]) -> bool:
    """Whether files of these row counts are read more cheaply one by one than by a dataset
    scan, and nearly as fast: small files, few rows in all."""
    total = sum(record_counts)
    return bool(record_counts) and total <= SMALL_READ_ROWS and total <= SMALL_FILE_ROWS * len(record_counts)


def read_small_files(
    filesystem: pa.fs.FileSystem, paths: Sequence[str], target: pa.Schema
) -> tuple[pa.Table, npt.NDArray[np.int64]]:
    """The ``target`` columns of every row of ``paths`` (paths within ``filesystem``), in path
    order, and how many rows each file gave."""
    pieces = []
    for path in paths:
        with filesystem.open_input_file(path) as stream:
            parquet = pq.ParquetFile(stream)
            present = set(parquet.schema_arrow.names)
            rows = parquet.read(columns=[name for name in target.names if name in present], use_threads=False)
        pieces.append(_conform(rows, target))
    counts = np.fromiter((piece.num_rows for piece in pieces), dtype=np.int64, count=len(pieces))
    if not pieces:
        return empty_table(target), counts
    return pa.concat_tables(pieces), counts


def _conform(rows: pa.Table, target: pa.Schema) -> pa.Table:
    """``rows`` with ``target``'s columns, order and types: missing columns as nulls."""
    if rows.schema.equals(target):
        return rows
    columns = [
        rows.column(field.name).cast(field.type) if field.name in rows.column_names else pa.nulls(rows.num_rows, field.type)
        for field in target
    ]
    return pa.Table.from_arrays(columns, schema=target)
