"""Plain Iceberg tables and hand-made data, delete and position-delete files for store tests.

Tables live in a real SQLite catalog under the test's tmp_path. Equality-delete files are
written the way another engine (Flink) would, since the library only reads them.
"""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pyarrow as pa
from pyiceberg.catalog.sql import SqlCatalog
from pyiceberg.io.fileformat import FileFormatFactory
from pyiceberg.io.pyarrow import schema_to_pyarrow
from pyiceberg.manifest import DataFile, DataFileContent, FileFormat
from pyiceberg.schema import Schema
from pyiceberg.table import Table
from pyiceberg.typedef import Record
from pyiceberg.types import LongType, NestedField, StringType

from mixed_iceberg.store.rewrite import stage_rewrite
from mixed_iceberg.store.write.data_file import write_data_file
from mixed_iceberg.store.write.position_deletes import write_position_deletes

__all__ = ["SCHEMA", "Row", "commit", "data_file", "eq_deletes", "new_table", "pos_deletes", "sorted_rows"]

SCHEMA = Schema(
    NestedField(1, "id", LongType(), required=False),
    NestedField(2, "k", StringType(), required=False),
    NestedField(3, "p", StringType(), required=False),
    NestedField(4, "v", LongType(), required=False),
)
Row = tuple[int | None, str | None, str, int]


def new_table(tmp_path: Path, *, partitioned: bool = False, format_version: int = 2) -> Table:
    """A v2 (or ``format_version``) table of SCHEMA; partitioned: spec 1 is identity(p)."""
    tmp_path.mkdir(parents=True, exist_ok=True)
    catalog = SqlCatalog("t", uri=f"sqlite:///{tmp_path}/catalog.db", warehouse=f"file://{tmp_path}/wh")
    catalog.create_namespace_if_not_exists("db")
    table = catalog.create_table(f"db.t{uuid.uuid4().hex[:8]}", SCHEMA, properties={"format-version": str(format_version)})
    if partitioned:
        with table.update_spec() as update:
            update.add_identity("p")
    return table


def data_file(table: Table, rows: list[Row]) -> DataFile:
    """One data file of the default spec; all rows must share the partition value ``p``."""
    spec = table.spec()
    partition = Record(rows[0][2]) if spec.fields else Record()
    arrow = pa.Table.from_pylist(
        [dict(zip(("id", "k", "p", "v"), r, strict=True)) for r in rows], schema=schema_to_pyarrow(SCHEMA)
    )
    path = f"{table.location()}/data/d-{uuid.uuid4().hex}.parquet"
    data_file = write_data_file(
        table.io, path, arrow, SCHEMA, spec_id=spec.spec_id, partition=partition, properties=table.properties
    )
    data_file.spec_id = spec.spec_id
    return data_file


def eq_deletes(table: Table, keys: list[tuple[Any, ...]], ids: tuple[int, ...] = (1,), partition: str | None = None) -> DataFile:
    """An equality-delete file as Flink writes it: the key columns only. No partition = global."""
    key_schema = Schema(*(table.schema().find_field(i) for i in ids))
    names = [f.name for f in key_schema.fields]
    arrow = pa.Table.from_pylist([dict(zip(names, k, strict=True)) for k in keys], schema=schema_to_pyarrow(key_schema))
    path = f"{table.location()}/data/eq-{uuid.uuid4().hex}.parquet"
    output = table.io.new_output(path)
    writer = FileFormatFactory.get(FileFormat.PARQUET).create_writer(output, key_schema, table.properties)
    with writer:
        writer.write(arrow)
    data_file = DataFile.from_args(
        content=DataFileContent.EQUALITY_DELETES,
        file_path=path,
        file_format=FileFormat.PARQUET,
        partition=Record(partition) if partition is not None else Record(),
        file_size_in_bytes=len(output),
        equality_ids=list(ids),
        sort_order_id=None,
        key_metadata=None,
        **writer.result().to_serialized_dict(),
    )
    data_file.spec_id = table.spec().spec_id if partition is not None else 0
    return data_file


def pos_deletes(table: Table, targets: list[tuple[DataFile, int]]) -> DataFile:
    first = targets[0][0]
    return write_position_deletes(
        table.io,
        f"{table.location()}/data/pos-{uuid.uuid4().hex}.parquet",
        pa.array([f.file_path for f, _ in targets]),
        pa.array([pos for _, pos in targets]),
        spec_id=first.spec_id,
        partition=first.partition,
        properties=table.properties,
    )


def commit(table: Table, **files: Any) -> int:
    with table.transaction() as txn:
        return stage_rewrite(txn, **files)


def sorted_rows(arrow: pa.Table) -> list[tuple[Any, ...]]:
    return sorted((tuple(r.values()) for r in arrow.to_pylist()), key=repr)
