"""Read Iceberg data files with their position deletes applied as one NumPy mask per file.

pyiceberg 0.12 applies position deletes batch by batch through ``np.setdiff1d`` over a
Python-built range (iceberg-python #1271), which makes a BaseStore read with position deletes
several times slower than the read here (claim ``position_deletes`` of
``bench/results/design_choices-2026-12-06-e9ea149.json``, ``nice -n 5 .venv/bin/python -m bench.design_choices``). Here all files are read in one
multi-threaded pyarrow dataset scan: files without deletes with the row filter pushed down,
files with position deletes whole (so rows keep their file positions). Deleted positions
and the row filter become one mask that the caller applies in one pass, possibly together
with the merge's own drops. Columns are read by name only while no schema of the table ever
named them otherwise (:mod:`mixed_iceberg.reader.field_ids`); else pyiceberg's ``ArrowScan``
maps them by field id. Equality deletes are not this module's job: a
task that has any is left to pyiceberg whole.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds
import pyarrow.parquet as pq
from pyiceberg.expressions import AlwaysTrue, BooleanExpression
from pyiceberg.expressions.visitors import bind, extract_field_ids
from pyiceberg.io import FileIO
from pyiceberg.io.pyarrow import ArrowScan, PyArrowFileIO, schema_to_pyarrow
from pyiceberg.manifest import DataFile, DataFileContent, FileFormat
from pyiceberg.schema import Schema, prune_columns
from pyiceberg.table import FileScanTask, Table
from pyiceberg.types import UUIDType

from mixed_iceberg._pyiceberg.arrow_filters import arrow_filter
from mixed_iceberg.arrow_types import empty_table
from mixed_iceberg.caching import LruCache
from mixed_iceberg.exceptions import CorruptTableError
from mixed_iceberg.merge.latest import keep_rows
from mixed_iceberg.merge.runs import Runs
from mixed_iceberg.reader.field_ids import history_fits_by_name
from mixed_iceberg.reader.small_files import are_small, read_small_files
from mixed_iceberg.sorting import stable_order
from mixed_iceberg.store.damage import expected, locating
from mixed_iceberg.store.write.position_deletes import referenced_data_file

__all__ = [
    "FileRows",
    "deleted_positions",
    "filesystem_for",
    "positions_by_file",
    "read_data_files",
    "read_files",
    "read_positional",
    "read_unmasked",
    "remember_positions",
]

_FILE_PATH = "file_path"
_POS = "pos"
_FRAGMENT = "__fragment_index"
_MATCH = "__match"


@dataclass(frozen=True, slots=True)
class FileRows:
    """Rows read from data files before their mask is applied.

    ``rows`` has the projected columns; ``task`` is the index (into the tasks read) of each
    row's file, as runs (rows of a file are consecutive); ``keep`` marks the rows that survive
    position deletes and the row filter (``None``: all of them).
    """

    rows: pa.Table
    task: Runs
    keep: npt.NDArray[np.bool_] | None

    def kept(self) -> pa.Table:
        return self.rows if self.keep is None else keep_rows(self.rows, self.keep)


def filesystem_for(io: FileIO, path: str) -> tuple[pa.fs.FileSystem, str]:
    """The pyarrow filesystem of ``io`` for ``path``, and the path within it."""
    pyarrow_io = io if isinstance(io, PyArrowFileIO) else PyArrowFileIO(io.properties)
    scheme, netloc, local = pyarrow_io.parse_location(path, pyarrow_io.properties)
    return pyarrow_io.fs_by_scheme(scheme, netloc), local


def read_file_columns(io: FileIO, path: str, columns: Sequence[str]) -> pa.Table:
    """``columns`` of one Parquet file, every row in file order (positions), no hive-path inference."""
    filesystem, local = filesystem_for(io, path)
    with filesystem.open_input_file(local) as stream:
        return pq.ParquetFile(stream).read(columns=list(columns))


#: Positions per delete file (delete files are immutable): a position delete of a segment is
#: read by every later scan and every later optimizing of it, so it is read once per process.
_POSITIONS: LruCache[str, Mapping[str, npt.NDArray[np.int64]]] = LruCache(
    256 << 20, sizeof=lambda by_target: sum(p.nbytes for p in by_target.values()) + 100 * len(by_target)
)


def positions_by_file(store: Table, delete_files: Iterable[DataFile]) -> dict[str, Mapping[str, npt.NDArray[np.int64]]]:
    """Per position-delete file (by path): the positions it deletes, per data file path.

    Files whose ``file_path`` bounds name one data file (a segment's own file) are read for
    ``pos`` only, in one scan split by their record counts; others are read whole. Each
    file's positions are cached by its path, read-only.

    Raises:
        CorruptTableError: delete files hold another number of rows than their manifests say,
            or one does not parse (``CorruptFileError``) or is gone (``MissingFileError``).
    """
    files = list(delete_files)
    per_file: dict[str, Mapping[str, npt.NDArray[np.int64]]] = {
        d.file_path: found for d in files if (found := _POSITIONS.get(d.file_path)) is not None
    }
    missing = list({d.file_path: d for d in files if d.file_path not in per_file}.values())
    if missing:
        with locating(store.io, lambda: [expected(d) for d in missing]):
            read = _read_positions(store, missing)
        for d in missing:
            _POSITIONS.put(d.file_path, read[d.file_path])
        per_file.update(read)
    return per_file


def remember_positions(delete_path: str, by_target: Mapping[str, npt.NDArray[np.int64]]) -> None:
    """Cache what a position-delete file just written holds, so that its writer's next plan and
    reads do not open it again."""
    frozen = {}
    for target, positions in by_target.items():
        positions = np.asarray(positions, dtype=np.int64)
        positions.setflags(write=False)
        frozen[target] = positions
    _POSITIONS.put(delete_path, frozen)


def deleted_positions(store: Table, delete_files: Iterable[DataFile]) -> dict[str, npt.NDArray[np.int64]]:
    """Deleted row positions per data file path, from position delete files (see
    :func:`positions_by_file`)."""
    files = list(delete_files)
    per_file = positions_by_file(store, files)
    pieces: dict[str, list[npt.NDArray[np.int64]]] = defaultdict(list)
    for d in files:
        for target, positions in per_file[d.file_path].items():
            pieces[target].append(positions)
    return {path: chunks[0] if len(chunks) == 1 else np.concatenate(chunks) for path, chunks in pieces.items()}


def _read_positions(store: Table, files: Sequence[DataFile]) -> dict[str, dict[str, npt.NDArray[np.int64]]]:
    """Per delete file: its positions per data file path."""
    filesystem, _ = filesystem_for(store.io, files[0].file_path)
    found: dict[str, dict[str, npt.NDArray[np.int64]]] = {d.file_path: {} for d in files}
    targeted = [(d, target) for d in files if (target := referenced_data_file(d)) is not None]
    if targeted:
        local = [filesystem_for(store.io, d.file_path)[1] for d, _ in targeted]
        positions = ds.dataset(local, format="parquet", filesystem=filesystem).to_table(columns=[_POS]).column(_POS)
        counts = np.fromiter((d.record_count for d, _ in targeted), dtype=np.int64, count=len(targeted))
        if len(positions) != int(counts.sum()):
            raise CorruptTableError(
                f"{'.'.join(store.name())}: position-delete files hold {len(positions)} rows; "
                f"their manifests say {int(counts.sum())}"
            )
        for (d, target), chunk in zip(targeted, np.split(positions.to_numpy(), np.cumsum(counts)[:-1]), strict=True):
            found[d.file_path][target] = chunk
    for d in files:
        if referenced_data_file(d) is not None:
            continue
        rows = ds.dataset([filesystem_for(store.io, d.file_path)[1]], format="parquet", filesystem=filesystem).to_table(
            columns=[_FILE_PATH, _POS]
        )
        if rows.num_rows != d.record_count:
            raise CorruptTableError(
                f"{'.'.join(store.name())}: position-delete file {d.file_path} holds {rows.num_rows} rows; "
                f"its manifest says {d.record_count}"
            )
        encoded = rows.column(_FILE_PATH).combine_chunks().dictionary_encode()
        codes = encoded.indices.to_numpy(zero_copy_only=False)
        positions = rows.column(_POS).to_numpy()
        order = stable_order(codes)
        bounds = np.searchsorted(codes[order], np.arange(len(encoded.dictionary) + 1))
        for i, path in enumerate(encoded.dictionary.to_pylist()):
            found[d.file_path][str(path)] = positions[order[bounds[i] : bounds[i + 1]]]
    for by_target in found.values():  # shared through the cache: nobody may change them
        for array in by_target.values():
            array.setflags(write=False)
    return found


def _only_position_deletes(task: FileScanTask) -> bool:
    return all(d.content == DataFileContent.POSITION_DELETES for d in task.delete_files)


def read_data_files(store: Table, tasks: Sequence[FileScanTask], projected: Schema, row_filter: BooleanExpression) -> pa.Table:
    """Rows of ``tasks`` that survive their deletes and ``row_filter``."""
    other = [t for t in tasks if not _only_position_deletes(t)]
    pieces = []
    if other:
        pieces.append(ArrowScan(store.metadata, store.io, projected, row_filter).to_table(other))
    if len(other) < len(tasks):
        pieces.append(read_files(store, [t for t in tasks if _only_position_deletes(t)], projected, row_filter).kept())
    if len(pieces) == 1:
        return pieces[0]
    return pa.concat_tables(pieces, promote_options="permissive")


def read_files(store: Table, tasks: Sequence[FileScanTask], projected: Schema, row_filter: BooleanExpression) -> FileRows:
    """The rows of ``tasks`` with their file and survival mask (see :class:`FileRows`).

    Without a filter every file is read whole; with one, files without deletes are read with
    the filter pushed down (row groups skipped by statistics) and the others whole, with the
    filter evaluated into the mask.

    Raises:
        ValueError: a task carries equality deletes.
        CorruptTableError: a file's row count disagrees with its manifest.
    """
    if not isinstance(row_filter, AlwaysTrue):
        bound = bind(store.schema(), row_filter, case_sensitive=True)
        wanted = extract_field_ids(bound) | {f.field_id for f in projected.fields}
        read_schema = prune_columns(store.schema(), wanted, select_full_types=True)
        condition = arrow_filter(bind(read_schema, row_filter, case_sensitive=True), read_schema)
        # pyarrow 20's Parquet scan simplifies a filter with each row group's statistics and
        # has no kernel to compare uuids by (pyiceberg's own scan fails the same way): a filter
        # on a uuid column is evaluated on the rows read instead.
        on_uuid = any(isinstance(store.schema().find_type(i), UUIDType) for i in extract_field_ids(bound))
        clean = [] if on_uuid else [i for i, t in enumerate(tasks) if not t.delete_files]
    else:
        read_schema, condition, clean = projected, None, []
    names = [f.name for f in projected.fields]
    whole = sorted(set(range(len(tasks))) - set(clean))
    pieces: list[FileRows] = []
    if clean:
        rows, index = _read_filtered(store, [tasks[i] for i in clean], read_schema, condition, row_filter)
        pieces.append(FileRows(rows.select(names), Runs.of_dense(index).map(np.asarray(clean, dtype=np.int64)), None))
    if whole:
        rows, keep = read_unmasked(store, [tasks[i] for i in whole], read_schema)
        counts = np.fromiter((tasks[i].file.record_count for i in whole), dtype=np.int64, count=len(whole))
        if condition is not None:
            match = ds.dataset(rows).to_table(columns={_MATCH: condition}).column(_MATCH)
            matched = pc.fill_null(match, False).to_numpy(zero_copy_only=False)
            keep = matched if keep is None else keep & matched
        pieces.append(FileRows(rows.select(names), Runs.of(whole, counts), keep))
    if len(pieces) == 1:
        return pieces[0]
    if not pieces:
        return FileRows(empty_table(schema_to_pyarrow(projected, include_field_ids=False)), Runs.empty(), None)
    masks = [p.keep if p.keep is not None else np.ones(p.rows.num_rows, dtype=bool) for p in pieces]
    return FileRows(
        pa.concat_tables([p.rows for p in pieces], promote_options="permissive"),
        Runs.concat([p.task for p in pieces]),
        None if all(p.keep is None for p in pieces) else np.concatenate(masks),
    )


def _read_filtered(
    store: Table, tasks: Sequence[FileScanTask], schema: Schema, condition: pc.Expression, row_filter: BooleanExpression
) -> tuple[pa.Table, npt.NDArray[np.int64]]:
    """Rows of delete-free ``tasks`` matching the filter, and the index of each row's task."""
    if _by_name(store, tasks, schema):
        filesystem, _ = filesystem_for(store.io, tasks[0].file.file_path)
        local = [filesystem_for(store.io, t.file.file_path)[1] for t in tasks]
        target = schema_to_pyarrow(schema, include_field_ids=False)
        dataset = ds.dataset(local, schema=target, format="parquet", filesystem=filesystem)
        rows = dataset.to_table(columns=[*target.names, _FRAGMENT], filter=condition)
        return rows.drop_columns([_FRAGMENT]), rows.column(_FRAGMENT).to_numpy().astype(np.int64)
    scan = ArrowScan(store.metadata, store.io, schema, row_filter)
    # One file per call (rows must be told apart by file), a few files at a time.
    with ThreadPoolExecutor(max_workers=min(4, len(tasks))) as pool:
        tables = list(pool.map(lambda task: scan.to_table([task]), tasks))
    index = np.repeat(np.arange(len(tasks), dtype=np.int64), [t.num_rows for t in tables])
    return pa.concat_tables(tables, promote_options="permissive"), index


def read_positional(store: Table, tasks: Sequence[FileScanTask], projected: Schema) -> tuple[pa.Table, npt.NDArray[np.int64]]:
    """Every surviving row of ``tasks`` (no filter; position deletes only), and how many per task.

    One scan reads all files in parallel; rows keep task order, so per-file constants can be
    attached with ``np.repeat(values, counts)``.

    Raises:
        ValueError: a task carries equality deletes.
        CorruptTableError: a file's row count disagrees with its manifest, or a file does not
            parse (``CorruptFileError``) or is gone (``MissingFileError``).
    """
    with locating(store.io, lambda: [expected(f) for t in tasks for f in (t.file, *t.delete_files)]):
        rows, keep = read_unmasked(store, tasks, projected)
    counts = np.fromiter((t.file.record_count for t in tasks), dtype=np.int64, count=len(tasks))
    if keep is None:
        return rows, counts
    kept = np.concatenate([[0], np.cumsum(keep, dtype=np.int64)])
    ends = np.cumsum(counts)
    return keep_rows(rows, keep), kept[ends] - kept[ends - counts]


def read_unmasked(
    store: Table, tasks: Sequence[FileScanTask], projected: Schema
) -> tuple[pa.Table, npt.NDArray[np.bool_] | None]:
    """Every row of ``tasks``' files in task order, deleted ones included, and which rows survive
    their position deletes (``None``: all do). Lets a caller filter once for several reasons.

    Raises:
        ValueError: a task carries equality deletes.
        CorruptTableError: a file's row count disagrees with its manifest.
    """
    if not all(_only_position_deletes(t) for t in tasks):
        raise ValueError("read_positional applies position deletes only; a task carries equality deletes")
    rows = _read_whole(store, tasks, projected)
    counts = [t.file.record_count for t in tasks]
    if rows.num_rows != sum(counts):
        raise CorruptTableError(
            f"{'.'.join(store.name())}: data files hold {rows.num_rows} rows; their manifests say {sum(counts)}"
        )
    deleted = deleted_positions(store, {d for t in tasks for d in t.delete_files})
    if not deleted:
        return rows, None
    keep = np.ones(rows.num_rows, dtype=bool)
    start = 0
    for task, count in zip(tasks, counts, strict=True):
        positions = deleted.get(task.file.file_path)
        if positions is not None:
            keep[start + positions[(positions >= 0) & (positions < count)]] = False
        start += count
    return rows, keep


def _read_whole(store: Table, tasks: Sequence[FileScanTask], projected: Schema) -> pa.Table:
    """Every row of every task's file, in task order.

    While no schema of the table named the projected columns otherwise, every file names them
    as the current schema does, so one multi-threaded pyarrow dataset scan reads them (about
    20 % less CPU than pyiceberg's per-file projection), or, small files, one read per file;
    otherwise pyiceberg maps them by id.
    """
    if _by_name(store, tasks, projected):
        filesystem, _ = filesystem_for(store.io, tasks[0].file.file_path)
        local = [filesystem_for(store.io, t.file.file_path)[1] for t in tasks]
        target = schema_to_pyarrow(projected, include_field_ids=False)
        if are_small([t.file.record_count for t in tasks]):
            return read_small_files(filesystem, local, target)[0]
        return ds.dataset(local, schema=target, format="parquet", filesystem=filesystem).to_table(columns=target.names)
    return ArrowScan(store.metadata, store.io, projected, AlwaysTrue()).to_table([FileScanTask(t.file) for t in tasks])


def _by_name(store: Table, tasks: Sequence[FileScanTask], projected: Schema) -> bool:
    """Whether every file names the ``projected`` columns as the current schema does: Parquet
    files, and no schema the store ever had names one of them otherwise (a rename, a drop and
    re-add of the name, a widening); see :mod:`mixed_iceberg.reader.field_ids`."""
    if not all(t.file.file_format == FileFormat.PARQUET for t in tasks):
        return False
    schemas = store.metadata.schemas
    return len(schemas) == 1 or history_fits_by_name(schemas, list(schema_to_pyarrow(projected, include_field_ids=True)))
