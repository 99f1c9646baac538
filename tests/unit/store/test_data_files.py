"""Data files: the statistics pyiceberg's writer would record, dictionaries only where values repeat."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from pyiceberg.io.fileformat import FileFormatFactory
from pyiceberg.io.pyarrow import PyArrowFileIO, schema_to_pyarrow
from pyiceberg.manifest import FileFormat
from pyiceberg.schema import Schema
from pyiceberg.typedef import Record
from pyiceberg.types import DoubleType, LongType, NestedField, StringType, TimestamptzType

from mixed_iceberg.store.write.data_file import dictionary_columns, write_data_file

SCHEMA = Schema(
    NestedField(1, "id", LongType(), required=True),
    NestedField(2, "status", StringType(), required=False),
    NestedField(3, "note", StringType(), required=False),
    NestedField(4, "amount", DoubleType(), required=False),
    NestedField(5, "ts", TimestamptzType(), required=False),
)


def _rows(n: int) -> pa.Table:
    return pa.table(
        {
            "id": pa.array(range(n), pa.int64()),
            "status": pa.array([("new", "paid", None)[i % 3] for i in range(n)], pa.string()),
            "note": pa.array([f"note-{i}-" + "x" * (i % 40) for i in range(n)], pa.string()),
            "amount": pa.array([float("nan") if i % 7 == 0 else i * 0.5 for i in range(n)], pa.float64()),
            "ts": pa.array([1_700_000_000_000_000 + i for i in range(n)], pa.timestamp("us", tz="UTC")),
        },
        schema=schema_to_pyarrow(SCHEMA, include_field_ids=False),
    )


def test_statistics_equal_pyiceberg_writer(tmp_path: Path) -> None:
    io = PyArrowFileIO()
    rows = _rows(3000)
    ours = write_data_file(io, str(tmp_path / "ours.parquet"), rows, SCHEMA, spec_id=0, partition=Record(), properties={})
    output = io.new_output(str(tmp_path / "theirs.parquet"))
    writer = FileFormatFactory.get(FileFormat.PARQUET).create_writer(output, SCHEMA, {})
    with writer:
        writer.write(rows.cast(schema_to_pyarrow(SCHEMA, include_field_ids=True)))
    theirs = writer.result()
    assert ours.record_count == theirs.record_count == 3000
    assert ours.value_counts == theirs.value_counts
    assert ours.null_value_counts == theirs.null_value_counts
    assert ours.nan_value_counts == theirs.nan_value_counts
    serialized = theirs.to_serialized_dict()
    assert ours.lower_bounds == serialized["lower_bounds"]
    assert ours.upper_bounds == serialized["upper_bounds"]
    assert ours.split_offsets == serialized["split_offsets"]
    read_ours, read_theirs = (pq.read_table(tmp_path / f"{who}.parquet") for who in ("ours", "theirs"))
    assert read_ours.schema.equals(read_theirs.schema)
    assert read_ours.to_pydict().keys() == read_theirs.to_pydict().keys()
    for name in read_ours.column_names:  # NaN != NaN: compare their text
        assert pc.cast(read_ours[name], pa.string()).equals(pc.cast(read_theirs[name], pa.string())), name
    field_ids = [f.metadata[b"PARQUET:field_id"] for f in pq.read_schema(tmp_path / "ours.parquet")]
    assert field_ids == [b"1", b"2", b"3", b"4", b"5"]


def test_only_repeating_columns_get_a_dictionary(tmp_path: Path) -> None:
    rows = _rows(2000)
    assert dictionary_columns(rows) == ["status"]
    write_data_file(PyArrowFileIO(), str(tmp_path / "f.parquet"), rows, SCHEMA, spec_id=0, partition=Record(), properties={})
    group = pq.ParquetFile(tmp_path / "f.parquet").metadata.row_group(0)
    encoded = {
        group.column(i).path_in_schema: any("DICTIONARY" in e for e in group.column(i).encodings)
        for i in range(group.num_columns)
    }
    assert encoded == {"id": False, "status": True, "note": False, "amount": False, "ts": False}


def test_empty_and_tiny_inputs_keep_arrow_defaults() -> None:
    assert dictionary_columns(_rows(0)) == ["id", "status", "note", "amount", "ts"]
    assert dictionary_columns(_rows(1)) == []  # one value: nothing repeats
