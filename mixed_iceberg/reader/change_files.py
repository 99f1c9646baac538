"""Read ChangeStore files by Iceberg field id (DESIGN.md, invariant 8).

A change file holds the table's columns as its writer's schema had them, plus ``_file_offset``
(Amoro's reserved field id). Files whose wanted columns carry the current schema's names, field
ids and types (every file, until the schema changes) are read together in one multi-threaded
pyarrow dataset scan, by name, with the row filter pushed down; a wanted column a file lacks
under both its name and its id reads as nulls there, as it would by id. The other files (a
column renamed, dropped and re-added under its name, widened) are read one by one and
projected by field id onto the current schema with pyiceberg's projection visitor: renamed
columns by id, new ones as nulls, dropped ones gone, widened types cast. Each file's footer is
read once: the dataset keeps the metadata its fitness check parsed for the scan.
"""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.parquet as pq
from pyiceberg.expressions import AlwaysTrue, BooleanExpression
from pyiceberg.expressions.visitors import bind, extract_field_ids
from pyiceberg.io import FileIO
from pyiceberg.io.pyarrow import ArrowAccessor, ArrowProjectionVisitor, pyarrow_to_schema
from pyiceberg.schema import Schema, prune_columns, visit_with_partner

from mixed_iceberg._pyiceberg.arrow_filters import arrow_filter
from mixed_iceberg.arrow_types import empty_table
from mixed_iceberg.caching import IdentityCache
from mixed_iceberg.reader.field_ids import fits_by_name, history_fits_by_name
from mixed_iceberg.reader.file_reads import filesystem_for
from mixed_iceberg.reader.small_files import are_small, read_small_files
from mixed_iceberg.schema import FILE_OFFSET_FIELD, arrow_schema, change_file_schema
from mixed_iceberg.sorting import stable_order

__all__ = ["ChangeFileSchemas", "change_file_schemas", "read_change_files"]

_FRAGMENT = "__fragment_index"


@dataclass(frozen=True, slots=True)
class ChangeFileSchemas:
    """A change file's schema for one table schema: its columns and ``_file_offset``."""

    iceberg: Schema
    by_name: pa.Schema  # without field ids: what a scan by name reads into
    with_ids: pa.Schema  # with field ids: what the ChangeStore writer writes (schema.change_file_schema)


#: Per table schema object: pyiceberg's schema conversion took about a sixth of a minor's
#: change-file reads (one per wanted column, on every read).
_FILE_SCHEMAS: IdentityCache[ChangeFileSchemas] = IdentityCache(64)


def change_file_schemas(schema: Schema) -> ChangeFileSchemas:
    def build() -> ChangeFileSchemas:
        iceberg = Schema(*schema.fields, FILE_OFFSET_FIELD)
        return ChangeFileSchemas(iceberg, arrow_schema(iceberg, field_ids=False), change_file_schema(schema))

    return _FILE_SCHEMAS.get_or_build((schema,), build)


def _wanted(schema: Schema, columns: Sequence[str], row_filter: BooleanExpression) -> list[str]:
    """``columns``, ``_file_offset`` and the top-level columns the filter reads."""
    names = [*columns, FILE_OFFSET_FIELD.name]
    if not isinstance(row_filter, AlwaysTrue):
        ids = extract_field_ids(bind(schema, row_filter, case_sensitive=True))
        names += [f.name for f in prune_columns(schema, ids, select_full_types=True).fields if f.name not in names]
    return names


def _always_fits(schema: Schema, wanted: Sequence[str], expected: Sequence[pa.Field], schemas: Sequence[Schema] | None) -> bool:
    """Whether every file of the store fits (:func:`fits_by_name`) whatever schema wrote it: the wanted
    columns are primary-key columns, which never change name, id or type (the schema evolution
    of :mod:`mixed_iceberg.schema_evolution` refuses it), or no schema the store ever had names
    a wanted column otherwise."""
    identifiers = set(schema.identifier_field_ids)
    if all(schema.find_field(name).field_id in identifiers for name in wanted if name != FILE_OFFSET_FIELD.name):
        return True
    offset = change_file_schemas(schema).with_ids.field(FILE_OFFSET_FIELD.name)
    return schemas is not None and history_fits_by_name(schemas, expected, (offset,))


def _physical_schema(fragment: ds.ParquetFileFragment) -> pa.Schema:
    fragment.ensure_complete_metadata()  # the footer, kept by the fragment for the scan
    return fragment.physical_schema


def read_change_files(
    io: FileIO,
    schema: Schema,
    paths: Sequence[str],
    columns: Sequence[str],
    row_filter: BooleanExpression,
    schemas: Sequence[Schema] | None = None,
    record_counts: Sequence[int] | None = None,
) -> tuple[pa.Table, npt.NDArray[np.int64]]:
    """``columns`` and ``_file_offset`` of the rows of ``paths`` that pass ``row_filter``
    (bound to ``schema``, the current one), and the index into ``paths`` of each row's file.

    ``schemas``: every schema the ChangeStore has had (``metadata.schemas``). When none of them
    names a wanted column differently from ``schema`` (no rename, re-creation or widening of
    it), every file is read by name without a look at its footer; otherwise, and without
    ``schemas``, each file's footer decides. ``record_counts`` (each file's rows, as its
    manifest says): small files without a row filter are read one by one, more cheaply
    (:mod:`mixed_iceberg.reader.small_files`)."""
    schemas_of_file = change_file_schemas(schema)
    file_schema = schemas_of_file.iceberg
    output = [*columns, FILE_OFFSET_FIELD.name]
    wanted = _wanted(schema, columns, row_filter)
    target = schemas_of_file.by_name
    expected = [schemas_of_file.with_ids.field(name) for name in wanted]
    condition = None
    if not isinstance(row_filter, AlwaysTrue):
        condition = arrow_filter(bind(schema, row_filter, case_sensitive=True), schema)
    filesystem, _ = filesystem_for(io, paths[0])
    local = [filesystem_for(io, path)[1] for path in paths]
    fits = _always_fits(schema, wanted, expected, schemas)
    if fits and condition is None and record_counts is not None and are_small(record_counts):
        rows, counts = read_small_files(filesystem, local, pa.schema([target.field(name) for name in output]))
        return rows, np.repeat(np.arange(len(paths), dtype=np.int64), counts)
    dataset = ds.dataset(local, schema=target, format="parquet", filesystem=filesystem)
    if fits:
        return _scan(dataset, output, condition, np.arange(len(paths), dtype=np.int64))
    fragments = list(dataset.get_fragments())
    with ThreadPoolExecutor(max_workers=min(8, len(fragments))) as pool:  # footers, read in parallel
        physical = list(pool.map(_physical_schema, fragments))
    fit = [fits_by_name(schema_of_file, expected) for schema_of_file in physical]
    if all(fit):
        return _scan(dataset, output, condition, np.arange(len(paths), dtype=np.int64))
    pieces: list[tuple[pa.Table, npt.NDArray[np.int64]]] = []
    fitting = np.flatnonzero(fit).astype(np.int64)
    if len(fitting):
        subset = ds.FileSystemDataset(
            [fragments[i] for i in fitting], schema=target, format=ds.ParquetFileFormat(), filesystem=filesystem
        )
        pieces.append(_scan(subset, output, condition, fitting))
    others = [i for i, ok in enumerate(fit) if not ok]
    requested = Schema(*(file_schema.find_field(name) for name in wanted))

    def project(i: int) -> pa.Table:
        rows = _projected(filesystem, local[i], requested)
        if condition is not None:
            rows = rows.filter(condition)
        return rows.select(output)

    with ThreadPoolExecutor(max_workers=min(4, len(others))) as pool:
        for i, rows in zip(others, pool.map(project, others), strict=True):
            pieces.append((rows, np.full(rows.num_rows, i, dtype=np.int64)))
    tables = pa.concat_tables([t for t, _ in pieces], promote_options="permissive")
    index = np.concatenate([i for _, i in pieces])
    order = stable_order(index)  # in ``paths`` order, as the dataset scan reads
    return tables.take(pa.array(order)), index[order]


def _scan(
    dataset: ds.Dataset, output: list[str], condition: object, positions: npt.NDArray[np.int64]
) -> tuple[pa.Table, npt.NDArray[np.int64]]:
    rows = dataset.to_table(columns=[*output, _FRAGMENT], filter=condition)
    fragment = rows.column(_FRAGMENT).to_numpy().astype(np.int64)
    return rows.drop_columns([_FRAGMENT]), positions[fragment]


def _projected(filesystem: pa.fs.FileSystem, path: str, requested: Schema) -> pa.Table:
    """Every row of one file, its columns found by field id and cast to ``requested``."""
    with filesystem.open_input_file(path) as stream:
        parquet = pq.ParquetFile(stream)
        physical = parquet.schema_arrow
        file_schema = pyarrow_to_schema(physical)
        ids = {f.field_id for f in requested.fields}
        present = [f.name for f in file_schema.fields if f.field_id in ids]
        rows = parquet.read(columns=present)
    empty = empty_table(arrow_schema(requested, field_ids=False))
    batches = [
        pa.RecordBatch.from_struct_array(
            visit_with_partner(requested, batch, ArrowProjectionVisitor(file_schema), ArrowAccessor(file_schema))
        )
        for batch in rows.to_batches()
        if batch.num_rows
    ]
    if not batches:
        return empty
    return pa.concat_tables([pa.Table.from_batches([b]) for b in batches], promote_options="permissive")
