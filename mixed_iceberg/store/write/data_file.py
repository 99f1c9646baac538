"""Write one Arrow table as one Parquet data file of an Iceberg table, and describe it.

The caller chooses the path (Amoro's file names); the column statistics that go into the
manifest are pyiceberg's, computed from the Parquet footer as pyiceberg's own writer does.

Two differences from pyiceberg's writer, both measured on the small change files of a
streaming commit (about 1,900 rows each, eight per commit):

- The statistics plan and the Arrow schema depend only on the Iceberg schema and the table
  properties, so they are built once per schema instead of once per file (``.venv/bin/python -m
  bench.commit_profile``, ``bench/results/commit_profile-2026-12-06-4647a3f.json``).
- A column is dictionary-encoded only when a sample of its values repeats. Arrow's writer
  encodes every column with a dictionary and falls back only once the dictionary outgrows its
  page limit, so columns of distinct values (keys, timestamps, amounts) were stored as a
  dictionary as large as the column plus indices: 32% larger and twice as slow to write for the
  peers workload's change files, 38% larger and four times as slow for a 300k-row base file.
  Parquet-mr (Iceberg Java, Amoro) likewise falls back to plain encoding when the dictionary
  does not pay off. Readers are unaffected: Parquet readers handle either encoding per column.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from pyiceberg.io import FileIO
from pyiceberg.io.pyarrow import (
    StatisticsCollector,
    compute_statistics_plan,
    data_file_statistics_from_parquet_metadata,
    parquet_path_to_id_mapping,
    schema_to_pyarrow,
)
from pyiceberg.manifest import DataFile, DataFileContent, FileFormat
from pyiceberg.schema import Schema
from pyiceberg.table import TableProperties
from pyiceberg.typedef import Properties, Record
from pyiceberg.utils.properties import property_as_int

from mixed_iceberg._pyiceberg.parquet import parquet_writer_kwargs
from mixed_iceberg.caching import LruCache

__all__ = ["DICTIONARY_SAMPLE_ROWS", "data_location", "dictionary_columns", "write_data_file"]

#: Rows of each column sampled to decide whether it is dictionary-encoded.
DICTIONARY_SAMPLE_ROWS = 512


def data_location(table_location: str, partition_path: str, file_name: str) -> str:
    """``<location>/data/<partitionPath>/<fileName>`` (Amoro's ``CommonOutputFileFactory``)."""
    base = table_location.rstrip("/")
    return f"{base}/data/{partition_path}/{file_name}" if partition_path else f"{base}/data/{file_name}"


@dataclass(frozen=True, slots=True)
class _WritePlan:
    """What writing a file of one schema under one set of table properties needs."""

    arrow_schema: pa.Schema
    writer_kwargs: dict[str, Any]
    row_group_size: int
    statistics: dict[int, StatisticsCollector]
    column_ids: dict[str, int]


_plans: LruCache[tuple[object, ...], _WritePlan] = LruCache(32)


def _plan(file_schema: Schema, properties: Properties) -> _WritePlan:
    key = (file_schema.schema_id, tuple(file_schema.fields), tuple(sorted(properties.items())))
    found = _plans.get(key)
    if found is not None:
        return found
    row_group_size = property_as_int(
        properties, TableProperties.PARQUET_ROW_GROUP_LIMIT, TableProperties.PARQUET_ROW_GROUP_LIMIT_DEFAULT
    )
    plan = _WritePlan(
        arrow_schema=schema_to_pyarrow(file_schema, include_field_ids=True),
        writer_kwargs=parquet_writer_kwargs(properties),
        row_group_size=row_group_size or TableProperties.PARQUET_ROW_GROUP_LIMIT_DEFAULT,
        statistics=compute_statistics_plan(file_schema, properties),
        column_ids=parquet_path_to_id_mapping(file_schema),
    )
    _plans.put(key, plan)
    return plan


def dictionary_columns(rows: pa.Table, sample_rows: int = DICTIONARY_SAMPLE_ROWS) -> list[str]:
    """The top-level columns worth a dictionary: at most half the sampled values are distinct.

    Nested columns keep Arrow's default (dictionary on, with its size fallback).
    """
    sample = rows.slice(0, sample_rows)
    n = sample.num_rows
    chosen = []
    for name, column in zip(sample.column_names, sample.columns, strict=True):
        if isinstance(column.type, pa.BaseExtensionType):  # uuid: pc.unique has no extension kernel
            column = pa.chunked_array([chunk.storage for chunk in column.chunks], column.type.storage_type)
        if pa.types.is_nested(column.type) or n == 0 or 2 * len(pc.unique(column)) <= n:
            chosen.append(name)
    return chosen


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
    plan = _plan(file_schema, properties)
    # Readers map columns by Parquet field id: always write the ids, whatever ``rows`` carried.
    target = plan.arrow_schema
    if not rows.schema.equals(target, check_metadata=True):  # change files arrive in it already
        rows = rows.select(target.names).cast(target)
    output = io.new_output(path)
    with output.create(overwrite=True) as stream:
        writer = pq.ParquetWriter(
            stream,
            schema=target,
            store_decimal_as_integer=True,
            use_dictionary=dictionary_columns(rows),
            **plan.writer_kwargs,
        )
        with writer:
            writer.write(rows, row_group_size=plan.row_group_size)
    statistics = data_file_statistics_from_parquet_metadata(
        parquet_metadata=writer.writer.metadata, stats_columns=plan.statistics, parquet_column_mapping=plan.column_ids
    )
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
