"""``bulk_load`` from a stream: written as it is read, the last row of a repeated key kept, nothing left on error.

A ``RecordBatchReader``, a ``pyarrow.dataset`` or any iterable of batches is loaded without
materialising it: files are written while the input is still being read, and a key repeated
across batches is superseded by position deletes that every Iceberg reader applies.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.parquet as pq
import pytest

from mixed_iceberg import MixedTable
from mixed_iceberg.exceptions import MissingKeyError, RepeatedKeyError
from tests.support.tables import ORDERS_SCHEMA, local_catalog, rows_of

#: Small files, so that a few thousand rows make many of them.
SMALL_FILES = {"write.target-file-size-bytes": str(64 * 1024), "base.file-index.hash-bucket": "4"}
_names = itertools.count()


def orders(ids: np.ndarray, tag: str) -> pa.RecordBatch:
    n = len(ids)
    return pa.RecordBatch.from_arrays(
        [
            pa.array(ids, pa.int64()),
            pa.array([tag] * n, pa.string()),
            pa.array(np.arange(n, dtype=np.int32)),
            pa.array(ids.astype(np.float64) / 2),
        ],
        schema=ORDERS_SCHEMA,
    )


def stream(batches: int, rows: int, overlap: int) -> list[pa.RecordBatch]:
    """``batches`` batches of ``rows`` keys each, consecutive batches sharing ``overlap`` keys."""
    step = rows - overlap
    return [orders(np.arange(i * step, i * step + rows), f"b{i}") for i in range(batches)]


def last_per_key(batches: list[pa.RecordBatch]) -> list[tuple[object, ...]]:
    latest: dict[object, tuple[object, ...]] = {}
    for batch in batches:
        for row in rows_of(pa.Table.from_batches([batch])):
            latest[row[0]] = row
    return sorted(latest.values())


def keyed(tmp_path: Path, **properties: str) -> MixedTable:
    return local_catalog(tmp_path).create_table(
        f"db.s{next(_names)}", ORDERS_SCHEMA, primary_key=["id"], properties={**SMALL_FILES, **properties}
    )


def data_files(table: MixedTable) -> list[Path]:
    return sorted(Path(table.base_store.location().removeprefix("file://"), "data").rglob("*.parquet"))


def test_a_stream_is_written_while_it_is_read(tmp_path: Path) -> None:
    table = keyed(tmp_path)
    batches = stream(40, 2000, 0)
    seen_before_end: list[int] = []

    def source() -> Iterator[pa.RecordBatch]:
        for i, batch in enumerate(batches):
            if i == len(batches) - 1:
                seen_before_end.append(len(data_files(table)))
            yield batch

    table.bulk_load(source())
    assert seen_before_end[0] > 0, "no file was written before the input ended"
    assert sorted(rows_of(table.scan().to_arrow())) == last_per_key(batches)
    assert len(data_files(table)) > 4  # cut by the target size, not one file per node


def test_a_key_repeated_across_batches_keeps_its_last_row_for_every_reader(tmp_path: Path) -> None:
    table = keyed(tmp_path)
    batches = stream(12, 1500, 500)
    table.bulk_load(pa.RecordBatchReader.from_batches(ORDERS_SCHEMA, batches))
    expected = last_per_key(batches)
    assert sorted(rows_of(table.scan().to_arrow())) == expected
    # The BaseStore alone, read by pyiceberg, applies the position deletes too: one row per key.
    assert sorted(rows_of(table.base_store.scan().to_arrow().select(ORDERS_SCHEMA.names))) == expected
    assert table.base_store.current_snapshot().summary["added-position-delete-files"] != "0"


def test_a_dataset_loads_streamed(tmp_path: Path) -> None:
    source = tmp_path / "export"
    source.mkdir()
    batches = stream(6, 1000, 0)
    for i, batch in enumerate(batches):
        pq.write_table(pa.Table.from_batches([batch]), source / f"part-{i}.parquet")
    table = keyed(tmp_path)
    table.bulk_load(ds.dataset(source, format="parquet", schema=ORDERS_SCHEMA))
    assert sorted(rows_of(table.scan().to_arrow())) == last_per_key(batches)


def test_an_unkeyed_table_and_an_overwrite_stream_too(tmp_path: Path) -> None:
    catalog = local_catalog(tmp_path)
    unkeyed = catalog.create_table("db.unkeyed", ORDERS_SCHEMA, properties=SMALL_FILES)
    batches = stream(5, 1000, 200)  # repeated ids are separate rows without a key
    unkeyed.bulk_load(iter(batches))
    assert unkeyed.scan().count() == 5000
    table = keyed(tmp_path)
    table.bulk_load(stream(3, 1000, 0))
    replacement = stream(4, 500, 100)
    table.bulk_load(iter(replacement), overwrite=True)
    assert sorted(rows_of(table.scan().to_arrow())) == last_per_key(replacement)


def test_into_a_table_holding_rows_the_stream_is_change_rows(tmp_path: Path) -> None:
    table = keyed(tmp_path)
    first = stream(2, 1000, 0)
    table.bulk_load(first)
    later = [orders(np.arange(500, 1500), "later")]
    table.bulk_load(iter(later))
    assert table.change_store is not None
    assert table.change_store.current_snapshot() is not None
    assert sorted(rows_of(table.scan().to_arrow())) == last_per_key([*first, *later])


def test_a_combining_merge_engine_refuses_a_repeated_key_and_leaves_no_file(tmp_path: Path) -> None:
    table = keyed(tmp_path, **{"merge-engine": "partial-update", "write.upsert.enabled": "false"})
    with pytest.raises(RepeatedKeyError, match="repeats 500 key"):
        table.bulk_load(iter(stream(2, 1000, 500)))
    assert data_files(table) == []
    assert table.refresh().scan().count() == 0
    table.bulk_load(iter(stream(2, 1000, 0)))  # without repeated keys it loads
    assert table.scan().count() == 2000


def test_a_bad_batch_mid_stream_fails_the_load_and_leaves_no_file(tmp_path: Path) -> None:
    table = keyed(tmp_path)
    good = stream(20, 1000, 0)
    bad = pa.RecordBatch.from_arrays(
        [pa.array([1, None], pa.int64()), pa.array(["x", "y"]), pa.array([1, 2], pa.int32()), pa.array([1.0, 2.0])],
        schema=ORDERS_SCHEMA.set(0, pa.field("id", pa.int64())),
    )
    with pytest.raises(MissingKeyError, match="'id' expected non-null"):
        table.bulk_load(iter([*good, bad]))
    assert data_files(table) == []
    assert table.refresh().base_store.current_snapshot() is None
