"""Partitioned tables with every transform pyiceberg supports: layout, merged reads, optimizing, pushdown.

Each keyed case bulk-loads rows, commits random well-formed CDC and compares the merged read
with a plain replay of the changes after every commit and after each optimizing type
(``tests/support/partitions.py`` holds the model of the transforms and the checks).
"""

from __future__ import annotations

import datetime as dt
import random
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyiceberg.io.pyarrow import FileFormatFactory, schema_to_pyarrow
from pyiceberg.manifest import DataFile, DataFileContent, FileFormat
from pyiceberg.schema import Schema
from pyiceberg.typedef import Record

from mixed_iceberg import TableFormat
from mixed_iceberg.store.rewrite import stage_rewrite
from tests.support.partitions import (
    SCHEMA,
    SPECS,
    TRANSFORMS,
    Replay,
    Row,
    Spec,
    as_changes,
    as_table,
    assert_amoro_layout,
    assert_pushdown,
    base_partitions,
    bucket,
    commit,
    current_files,
    day,
    hour,
    identity,
    ids,
    keyed_table,
    local,
    month,
    partition_of,
    random_row,
    truncate,
    unordered,
    void,
)
from tests.support.tables import local_catalog, rows_of


@pytest.mark.parametrize("spec", SPECS, ids=ids)
def test_keyed_table_with_transform_reads_writes_and_optimizes(tmp_path: Path, spec: Spec) -> None:
    table, replay = keyed_table(tmp_path, spec, seed=len(ids(spec)))
    assert_amoro_layout(table.base_store, spec)
    for sequence in range(1, 4):
        commit(table, replay, sequence)
        assert rows_of(table.scan().to_arrow()) == replay.expected()
    assert table.change_store is not None
    assert_amoro_layout(table.change_store, spec)
    assert_pushdown(table, spec, replay)
    for sequence, kind in enumerate(("minor", "major", "full"), start=4):
        result = table.optimizing.run(kind)
        # minor and full always have fresh change files to merge; major only rewrites what needs it
        assert result.committed or kind == "major", kind
        assert rows_of(table.scan().to_arrow()) == replay.expected(), kind
        assert_amoro_layout(table.base_store, spec)
        assert {partition_of(spec, r) for r in replay.rows.values()} <= base_partitions(table), kind
        assert_pushdown(table, spec, replay)
        commit(table, replay, sequence)  # the next type starts from fresh change files
        assert rows_of(table.scan().to_arrow()) == replay.expected(), kind
    table.optimizing.run("full")
    assert rows_of(table.scan().to_arrow()) == replay.expected()
    # After a full optimizing the BaseStore alone is the table: one partition per file, no change to merge.
    assert rows_of(table.base_store.scan().to_arrow()) == replay.expected()
    assert_amoro_layout(table.base_store, spec)


@pytest.mark.parametrize("spec", [(identity("region"),), (day("ts"),)], ids=ids)
def test_update_moves_a_key_between_partitions(tmp_path: Path, spec: Spec) -> None:
    catalog = local_catalog(tmp_path)
    table = catalog.create_table("db.t", SCHEMA, primary_key=["id"], partition_by=[t.spec for t in spec])
    rng = random.Random(7)
    first = {**random_row(rng, 1), "region": "eu", "ts": dt.datetime(2024, 1, 1, 10)}
    other = {**random_row(rng, 2), "region": "us", "ts": dt.datetime(2024, 1, 2, 10)}
    moved = {**first, "region": "us", "ts": dt.datetime(2024, 1, 2, 11), "name": "moved"}
    table.bulk_load(as_table([first, other]))
    with table.new_transaction(("w", 1)) as txn:
        txn.write(as_changes([("-U", first), ("+U", moved)]))
    old, new = partition_of(spec, first), partition_of(spec, moved)
    assert old != new
    change = table.change_store
    assert change is not None
    assert_amoro_layout(change, spec)
    # Amoro's file names: <node>-<type>-<txId>-...; the -U is an ED file of the old partition, the +U an I file of the new
    types = {(tuple(f.data_file.partition), f.data_file.file_path.rsplit("/", 1)[1].split("-")[1]) for f in current_files(change)}
    assert types == {(old, "ED"), (new, "I")}
    assert rows_of(table.scan().to_arrow()) == rows_of(as_table([moved, other]))
    column = spec[0].column
    old_filter = "region = 'eu'" if column == "region" else "ts < '2024-01-02T00:00:00'"
    new_filter = "region = 'us'" if column == "region" else "ts >= '2024-01-02T00:00:00'"
    assert table.scan(row_filter=old_filter).to_arrow().num_rows == 0
    assert rows_of(table.scan(row_filter=new_filter).to_arrow()) == rows_of(as_table([moved, other]))
    # ... and back again, then every optimizing type.
    back = {**moved, "region": "eu", "ts": dt.datetime(2024, 1, 1, 12), "name": "back"}
    with table.new_transaction(("w", 2)) as txn:
        txn.write(as_changes([("-U", moved), ("+U", back)]))
    expected = rows_of(as_table([back, other]))
    assert rows_of(table.scan().to_arrow()) == expected
    # The CDC read pairs each -U with its +U across the two partitions.
    cdc = [(r["_change_action"], r["region"], r["ts"]) for r in table.changes().to_arrow().to_pylist()]
    assert sorted(cdc[:-4]) == sorted(("+I", r["region"], r["ts"]) for r in (first, other))  # the initial load
    assert cdc[-4:] == [(a, r["region"], r["ts"]) for a, r in (("-U", first), ("+U", moved), ("-U", moved), ("+U", back))]
    assert rows_of(table.scan(row_filter=old_filter).to_arrow()) == rows_of(as_table([back]))
    for kind in ("minor", "major", "full"):
        table.optimizing.run(kind)
        assert rows_of(table.scan().to_arrow()) == expected, kind
        assert rows_of(table.scan(row_filter=new_filter).to_arrow()) == rows_of(as_table([other])), kind
    assert_amoro_layout(table.base_store, spec)
    keys_by_partition = {
        tuple(f.data_file.partition): pq.ParquetFile(local(f.data_file.file_path)).read().column("id").to_pylist()
        for f in current_files(table.base_store)
        if f.data_file.content == DataFileContent.DATA
    }
    assert sorted(keys_by_partition[old]) == [1]


def unkeyed_rows(rng: random.Random, keys: range) -> list[Row]:
    return [random_row(rng, k) for k in keys]


@pytest.mark.parametrize("table_format", [TableFormat.MIXED_ICEBERG, TableFormat.ICEBERG], ids=["unkeyed", "iceberg"])
@pytest.mark.parametrize(
    "spec", [(bucket(4, "id"),), (truncate(2, "name"),), (month("tz"),), (day("d"),), (hour("ts"),), SPECS[-1]], ids=ids
)
def test_unkeyed_and_plain_iceberg_tables_with_transform(tmp_path: Path, spec: Spec, table_format: TableFormat) -> None:
    catalog = local_catalog(tmp_path)
    table = catalog.create_table("db.t", SCHEMA, partition_by=[t.spec for t in spec], table_format=table_format)
    rng = random.Random(3)
    rows = unkeyed_rows(rng, range(40))
    table.bulk_load(as_table(rows))
    more = unkeyed_rows(rng, range(40, 70))
    table.base_store.append(as_table(more))  # pyiceberg's own writer lays files out the same way
    rows += more
    assert_amoro_layout(table.base_store, spec)
    assert rows_of(table.scan().to_arrow()) == rows_of(as_table(rows))
    replay = Replay({r["id"]: r for r in rows}, rng)
    assert_pushdown(table, spec, replay)
    table.optimizing.run("full")
    assert rows_of(table.scan().to_arrow()) == rows_of(as_table(rows))
    assert_amoro_layout(table.base_store, spec)
    assert_pushdown(table, spec, replay)


def test_every_transform_is_covered() -> None:
    kinds = {t.spec.split("(")[0] if "(" in t.spec else "identity" for t in TRANSFORMS}
    assert kinds == {"identity", "bucket", "truncate", "year", "month", "day", "hour"}


def test_void_partition_keeps_every_row_in_the_null_partition(tmp_path: Path) -> None:
    spec = (void("name"),)
    table, replay = keyed_table(tmp_path, spec, seed=5)
    commit(table, replay, 1)
    assert rows_of(table.scan().to_arrow()) == replay.expected()
    assert table.change_store is not None
    assert_amoro_layout(table.change_store, spec)
    table.optimizing.run("full")
    assert rows_of(table.scan().to_arrow()) == replay.expected()
    assert_amoro_layout(table.base_store, spec)
    assert base_partitions(table) == {(None,)}


def test_equality_deletes_of_another_engine_apply_within_their_day_partition(tmp_path: Path) -> None:
    """A Flink-style upsert on a plain Iceberg table partitioned by day(ts): the equality delete
    file is scoped to one day, so the same key in another day survives; full optimizing keeps it so."""
    spec = (day("ts"),)
    table = local_catalog(tmp_path).create_table("db.t", SCHEMA, partition_by=["day(ts)"], table_format=TableFormat.ICEBERG)
    store = table.base_store
    rng = random.Random(11)
    monday, tuesday = dt.datetime(2024, 1, 1, 9), dt.datetime(2024, 1, 2, 9)
    rows = [{**random_row(rng, k), "ts": when} for when in (monday, tuesday) for k in range(6)]
    store.append(as_table(rows))
    # Iceberg Java's equality-delete file for keys 1 and 2 of the 2024-01-01 partition: the key column only.
    key_schema = Schema(store.schema().find_field("id"))
    partition = Record(spec[0].partition(monday))
    path = f"{store.location()}/data/{spec[0].path(partition[0])}/eq-deletes.parquet"
    output = store.io.new_output(path)
    writer = FileFormatFactory.get(FileFormat.PARQUET).create_writer(output, key_schema, store.properties)
    with writer:
        writer.write(pa.Table.from_pylist([{"id": 1}, {"id": 2}], schema=schema_to_pyarrow(key_schema)))
    deletes = DataFile.from_args(
        content=DataFileContent.EQUALITY_DELETES,
        file_path=path,
        file_format=FileFormat.PARQUET,
        partition=partition,
        file_size_in_bytes=len(output),
        equality_ids=[key_schema.fields[0].field_id],
        sort_order_id=None,
        key_metadata=None,
        **writer.result().to_serialized_dict(),
    )
    deletes.spec_id = store.spec().spec_id
    with store.transaction() as txn:
        stage_rewrite(txn, add_deletes=[deletes])
    expected = unordered(as_table([r for r in rows if not (r["ts"] == monday and r["id"] in (1, 2))]))
    assert unordered(table.refresh().scan().to_arrow()) == expected
    assert unordered(table.scan(row_filter="ts >= '2024-01-02T00:00:00'").to_arrow()) == unordered(as_table(rows[6:]))
    table.optimizing.run("full")
    assert unordered(table.scan().to_arrow()) == expected
    assert not [f for f in current_files(table.base_store) if f.data_file.content != DataFileContent.DATA]
    assert_amoro_layout(table.base_store, spec)
