"""Partition specs: Iceberg Java's field names, specs refused at create_table, and every source
type a transform takes (two fields over one column included) written, read and optimized."""

from __future__ import annotations

import datetime as dt
import random
import uuid
from decimal import Decimal
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyiceberg.manifest import DataFileContent
from pyiceberg.table import Table
from pyiceberg.utils.datetime import date_to_days, datetime_to_micros, time_to_micros

from mixed_iceberg import TableFormat
from mixed_iceberg.exceptions import ConfigError
from mixed_iceberg.store.write.layout import partition_path
from mixed_iceberg.store.write.partition_paths import java_double_string
from tests.support.partitions import (
    ANCHORS,
    SCHEMA,
    Replay,
    Row,
    as_changes,
    as_table,
    current_files,
    local,
)
from tests.support.tables import local_catalog, rows_of


def test_partition_fields_are_named_as_iceberg_java_names_them(tmp_path: Path) -> None:
    catalog = local_catalog(tmp_path)
    specs = ["region", "identity(n)", "bucket(16, id)", "truncate(4, name)", "year(d)", "month(ts)", "day(tz)", "void(name)"]
    table = catalog.create_table("db.t", SCHEMA, primary_key=["id"], partition_by=specs)
    names = [f.name for f in table.base_store.spec().fields]
    assert names == ["region", "n", "id_bucket", "name_trunc", "d_year", "ts_month", "tz_day", "name_null"]
    assert table.change_store is not None
    assert table.change_store.spec() == table.base_store.spec()
    hourly = catalog.create_table("db.h", SCHEMA, primary_key=["id"], partition_by=["hour(ts)"])
    assert [f.name for f in hourly.base_store.spec().fields] == ["ts_hour"]


@pytest.mark.parametrize(
    ("partition_by", "message"),
    [
        (["bucket(0, id)"], r"expected a bucket width >= 1, found 0"),
        (["truncate(0, name)"], r"expected a truncate width >= 1, found 0"),
        (["day(name)"], r"day does not apply to 'name' of type string"),
        (["hour(d)"], r"hour does not apply to 'd' of type date"),
        (["truncate(2, d)"], r"truncate\[2\] does not apply to 'd' of type date"),
        (["bucket(4, id)", "bucket(8, id)"], r"found 'id_bucket' twice"),
        (["region", "identity(region)"], r"found 'region' twice"),
        (["bucket(4, nope)"], r"column 'nope' not in schema"),
        (["day(ts)", "hour(ts)"], r"expected one time transform of 'ts', found a second"),
        (["days(ts)"], r"unknown transform 'days'"),
    ],
)
def test_partition_specs_that_cannot_be_written_are_refused_at_create(
    tmp_path: Path, partition_by: list[str], message: str
) -> None:
    catalog = local_catalog(tmp_path)
    with pytest.raises(ConfigError, match=message):
        catalog.create_table("db.t", SCHEMA, primary_key=["id"], partition_by=partition_by)
    assert catalog.list_tables("db") == []


def test_a_partition_name_may_not_shadow_another_column(tmp_path: Path) -> None:
    schema = SCHEMA.append(pa.field("ts_day", pa.int32()))
    with pytest.raises(ConfigError, match=r"partition field name 'ts_day' is also a column"):
        local_catalog(tmp_path).create_table("db.t", schema, primary_key=["id"], partition_by=["day(ts)"])


# ---- the other source types the transforms take, and two fields over one column ----

TYPED = pa.schema(
    [
        pa.field("id", pa.int64(), nullable=False),
        pa.field("dec", pa.decimal128(9, 2)),
        pa.field("bin", pa.binary()),
        pa.field("fix", pa.binary(3)),
        pa.field("u", pa.uuid()),
        pa.field("t", pa.time64("us")),
        pa.field("b", pa.bool_()),
        pa.field("x", pa.float64()),
        pa.field("ts", pa.timestamp("us")),
    ]
)


def typed_row(rng: random.Random, key: int) -> Row:
    maybe = lambda v: None if rng.random() < 0.1 else v  # noqa: E731
    return {
        "id": key,
        "dec": maybe(Decimal(rng.randrange(-9999, 9999)) / 100),
        "bin": maybe(bytes(rng.choice([b"ab", b"\x00\xff", b"abc", b"b"]))),
        "fix": maybe(rng.choice([b"abc", b"xyz", b"\x00\x00\x01"])),
        "u": maybe(uuid.UUID(int=rng.randrange(4)).bytes),
        "t": maybe(rng.choice([dt.time(0, 0), dt.time(10, 30), dt.time(23, 59, 59, 999999)])),
        "b": maybe(rng.random() < 0.5),
        "x": maybe(rng.choice([0.5, -1.25, 1e10, 0.1, 1e300])),  # 0.1 and 1e300 have no float32 twin
        "ts": maybe(rng.choice(ANCHORS)),
    }


def _internal(value: object) -> object:
    if isinstance(value, dt.datetime):
        return datetime_to_micros(value)
    if isinstance(value, dt.date):
        return date_to_days(value)
    if isinstance(value, dt.time):
        return time_to_micros(value)
    return value


def expected_partition(store: Table, row: Row) -> tuple[object, ...]:
    """pyiceberg's per-value (pure Python) transforms of the row's source values."""
    schema = store.schema()
    values = []
    for field in store.spec().fields:
        source = schema.find_field(field.source_id)
        value = row[source.name]
        values.append(field.transform.transform(source.field_type)(_internal(value)))
    return tuple(_internal(v) for v in values)


def assert_files_hold_their_partition(store: Table) -> None:
    files = current_files(store)
    assert files
    for live in files:
        data_file = live.data_file
        value = tuple(data_file.partition)
        directory = local(data_file.file_path).rsplit("/", 1)[0]
        assert directory == f"{local(store.location())}/data/{partition_path(store, data_file)}"
        if data_file.content == DataFileContent.DATA:
            rows = pq.ParquetFile(local(data_file.file_path)).read().to_pylist()
            assert {expected_partition(store, r) for r in rows} == {value}, data_file.file_path


@pytest.mark.parametrize(
    "partition_by",
    [
        ["bucket(4, dec)"],
        ["truncate(50, dec)"],
        ["bin"],
        ["bucket(3, bin)"],
        ["truncate(1, bin)"],
        ["bucket(3, fix)"],
        ["u"],
        ["bucket(4, u)"],
        ["t"],
        ["bucket(4, t)"],
        ["b"],
        ["x"],
        ["ts"],
        ["bucket(4, id)", "truncate(10, id)"],  # two fields over one source column
        ["ts", "day(ts)"],
    ],
    ids=lambda p: "+".join(p).replace(" ", ""),
)
def test_every_source_type_a_transform_takes_is_written_read_and_optimized(tmp_path: Path, partition_by: list[str]) -> None:
    table = local_catalog(tmp_path).create_table("db.t", TYPED, primary_key=["id"], partition_by=partition_by)
    rng = random.Random(len(partition_by[0]))
    replay = Replay({k: typed_row(rng, k) for k in range(30)}, rng, typed_row, TYPED)
    table.bulk_load(as_table(list(replay.rows.values()), TYPED))
    for sequence in (1, 2):
        with table.new_transaction(("w", sequence)) as txn:
            txn.write(as_changes(replay.transaction(keys=40, size=12), TYPED))
        assert rows_of(table.scan().to_arrow()) == replay.expected()
    assert table.change_store is not None
    assert_files_hold_their_partition(table.change_store)
    table.optimizing.run("full")
    assert rows_of(table.scan().to_arrow()) == replay.expected()
    assert_files_hold_their_partition(table.base_store)


def test_a_double_identity_partition_keeps_its_value_and_its_rows(tmp_path: Path) -> None:
    """pyiceberg 0.12's Cython decoder read manifest doubles as floats (mixed_iceberg._pyiceberg.patches)."""
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("x", pa.float64())])
    table = local_catalog(tmp_path).create_table("db.t", schema, primary_key=["id"], partition_by=["x"])
    table.bulk_load(pa.table({"id": [1, 2, 3], "x": [0.1, 1e300, 1e-5]}, schema=schema))
    store = table.base_store
    assert sorted(f.data_file.partition[0] for f in current_files(store)) == [1e-5, 0.1, 1e300]
    assert {partition_path(store, f.data_file) for f in current_files(store)} == {"x=0.1", "x=1.0E300", "x=1.0E-5"}
    assert table.scan(row_filter="x = 0.1").to_arrow().column("id").to_pylist() == [1]


# Rows and the directories Iceberg Java 1.10.1 (Spark 3.5.7) wrote for them, partition by partition
# (tests/integration/test_spark_partition_paths.py writes them with Spark again).
JAVA_SCHEMA = pa.schema(
    [
        pa.field("id", pa.int64(), nullable=False),
        pa.field("s", pa.string()),
        pa.field("ts", pa.timestamp("us")),
        pa.field("tz", pa.timestamp("us", tz="UTC")),
        pa.field("x", pa.float64()),
    ]
)
JAVA_ROWS = [
    {"id": 1, "s": "a*b~c d/e", "ts": dt.datetime(2024, 1, 1, 10), "tz": dt.datetime(2024, 1, 1, 10, tzinfo=dt.UTC), "x": 1e10},
    {
        "id": 2,
        "s": "é%+=",
        "ts": dt.datetime(2024, 1, 1, 10, 0, 1, 500000),
        "tz": dt.datetime(1969, 12, 31, 23, 30, 0, 250, tzinfo=dt.UTC),
        "x": 0.1,
    },
    {"id": 3, "s": None, "ts": None, "tz": None, "x": None},
]
JAVA_PATHS = {
    "s": {"s=a*b%7Ec+d%2Fe", "s=%C3%A9%25%2B%3D", "s=null"},
    "truncate(2, s)": {"s_trunc=a*", "s_trunc=%C3%A9%25", "s_trunc=null"},
    "ts": {"ts=2024-01-01T10%3A00%3A00", "ts=2024-01-01T10%3A00%3A01.5", "ts=null"},
    "tz": {"tz=2024-01-01T10%3A00%3A00%2B00%3A00", "tz=1969-12-31T23%3A30%3A00.00025%2B00%3A00", "tz=null"},
    "x": {"x=1.0E10", "x=0.1", "x=null"},
}


@pytest.mark.parametrize("spec", sorted(JAVA_PATHS))
def test_partition_paths_are_spelled_as_iceberg_java_spells_them(tmp_path: Path, spec: str) -> None:
    table = local_catalog(tmp_path).create_table("db.t", JAVA_SCHEMA, partition_by=[spec], table_format=TableFormat.ICEBERG)
    table.bulk_load(pa.Table.from_pylist(JAVA_ROWS, schema=JAVA_SCHEMA))
    store = table.base_store
    directories = {local(f.data_file.file_path).split("/data/")[1].rsplit("/", 1)[0] for f in current_files(store)}
    assert directories == JAVA_PATHS[spec]
    assert {partition_path(store, f.data_file) for f in current_files(store)} == JAVA_PATHS[spec]


@pytest.mark.parametrize(
    ("value", "java"),
    [
        (1e10, "1.0E10"),
        (1e7, "1.0E7"),
        (9999999.0, "9999999.0"),
        (0.001, "0.001"),
        (1e-4, "1.0E-4"),
        (-1.25, "-1.25"),
        (100.0, "100.0"),
        (12345678.9, "1.23456789E7"),
        (1.7976931348623157e308, "1.7976931348623157E308"),
        (-0.0, "-0.0"),
        (float("nan"), "NaN"),
        (float("-inf"), "-Infinity"),
    ],
)
def test_doubles_are_spelled_as_java_double_to_string(value: float, java: str) -> None:
    assert java_double_string(value) == java
