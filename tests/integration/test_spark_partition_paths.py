"""Iceberg Java (Spark 3.5, Iceberg 1.10) and we lay the same rows out in the same partition directories.

The partition path is also the key of a partition's optimized sequence in Amoro's Puffin blob,
so ours must be Java's to the byte (``mixed_iceberg/store/write/partition_paths.py``). Each spec gets
two plain Iceberg tables: we bulk-load one, Spark inserts the same rows into the other.
"""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from typing import TYPE_CHECKING

import pyarrow as pa
import pytest
from pyiceberg.table import Table

from mixed_iceberg import MixedCatalog, TableFormat
from mixed_iceberg.store.manifests.live_files import live_files
from mixed_iceberg.store.write.layout import partition_path
from tests.support.spark import catalog_session, jdbc_catalog
from tests.support.tables import local_catalog

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = [
    pytest.mark.integration,
    pytest.mark.slow,
    # py4j drops idle gateway connections without closing their sockets (see test_spark_interop.py).
    pytest.mark.filterwarnings(r"ignore:Exception ignored in. <socket\.socket:pytest.PytestUnraisableExceptionWarning"),
]

CATALOG = "local"
SCHEMA = pa.schema(
    [
        pa.field("id", pa.int64(), nullable=False),
        pa.field("s", pa.string()),
        pa.field("ts", pa.timestamp("us")),
        pa.field("tz", pa.timestamp("us", tz="UTC")),
        pa.field("x", pa.float64()),
        pa.field("f", pa.float32()),
        pa.field("dec", pa.decimal128(9, 2)),
        pa.field("d", pa.date32()),
        pa.field("b", pa.bool_()),
    ]
)
ROWS = [
    {
        "id": 1,
        "s": "a*b~c d/e",
        "ts": dt.datetime(2024, 1, 1, 10),
        "tz": dt.datetime(2024, 1, 1, 10, tzinfo=dt.UTC),
        "x": 1e10,
        "f": 0.1,
        "dec": Decimal("1.50"),
        "d": dt.date(1969, 12, 31),
        "b": True,
    },
    {
        "id": 2,
        "s": "é%+=",
        "ts": dt.datetime(2024, 1, 1, 10, 0, 1, 500000),
        "tz": dt.datetime(1969, 12, 31, 23, 30, 0, 250, tzinfo=dt.UTC),
        "x": 0.1,
        "f": 1e10,
        "dec": Decimal("-0.05"),
        "d": dt.date(2024, 2, 29),
        "b": False,
    },
    {"id": 3, "s": None, "ts": None, "tz": None, "x": None, "f": None, "dec": None, "d": None, "b": None},
]
SPARK_VALUES = ", ".join(
    [
        "(1, 'a*b~c d/e', TIMESTAMP_NTZ '2024-01-01 10:00:00', TIMESTAMP '2024-01-01 10:00:00', 1e10D, CAST(0.1 AS FLOAT),"
        " CAST(1.50 AS DECIMAL(9,2)), DATE '1969-12-31', true)",
        "(2, 'é%+=', TIMESTAMP_NTZ '2024-01-01 10:00:01.5', TIMESTAMP '1969-12-31 23:30:00.00025', 0.1D, CAST(1e10 AS FLOAT),"
        " CAST(-0.05 AS DECIMAL(9,2)), DATE '2024-02-29', false)",
        "(3, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL)",
    ]
)
SPECS = {
    "identity_string": ["s"],
    "identity_timestamp": ["ts"],
    "identity_timestamptz": ["tz"],
    "identity_double": ["x"],
    "identity_float": ["f"],
    "identity_decimal": ["dec"],
    "identity_date": ["d"],
    "identity_boolean": ["b"],
    "truncate_string": ["truncate(2, s)"],
    "truncate_decimal": ["truncate(10, dec)"],
    "bucket_string": ["bucket(8, s)"],
    "bucket_timestamp": ["bucket(8, ts)"],
    "year_timestamp": ["year(ts)"],
    "month_date": ["month(d)"],
    "day_timestamptz": ["day(tz)"],
    "hour_timestamptz": ["hour(tz)"],
    "three_fields": ["day(ts)", "bucket(4, id)", "s"],
}


def _directories(store: Table) -> set[tuple[tuple[object, ...], str]]:
    files = live_files(store, store.current_snapshot())
    assert files
    return {(tuple(f.data_file.partition), f.data_file.file_path.split("/data/")[1].rsplit("/", 1)[0]) for f in files}


@pytest.fixture(scope="module")
def written(tmp_path_factory: pytest.TempPathFactory, spark_jvm: SparkSession) -> MixedCatalog:
    root = tmp_path_factory.mktemp("spark-partition-paths")
    catalog = local_catalog(root, name=CATALOG)
    for name, partition_by in SPECS.items():
        catalog.create_table(f"db.ours_{name}", SCHEMA, partition_by=partition_by, table_format=TableFormat.ICEBERG).bulk_load(
            pa.Table.from_pylist(ROWS, schema=SCHEMA)
        )
        catalog.create_table(f"db.java_{name}", SCHEMA, partition_by=partition_by, table_format=TableFormat.ICEBERG)
    spark = catalog_session(spark_jvm, {CATALOG: jdbc_catalog(root / "catalog.db", root / "wh")})
    spark.conf.set("spark.sql.session.timeZone", "UTC")
    for name in SPECS:
        spark.sql(f"INSERT INTO {CATALOG}.db.java_{name} VALUES {SPARK_VALUES}")
    return catalog


@pytest.mark.parametrize("name", sorted(SPECS))
def test_our_partition_directories_and_values_are_iceberg_javas(written: MixedCatalog, name: str) -> None:
    ours = written.load_table(f"db.ours_{name}").base_store
    java = written.load_table(f"db.java_{name}").base_store
    assert _directories(ours) == _directories(java)
    # the key under which Amoro keeps the partition's optimized sequence
    assert {partition_path(ours, f.data_file) for f in live_files(ours, ours.current_snapshot())} == {
        directory for _, directory in _directories(java)
    }


def test_the_rows_read_back_alike(written: MixedCatalog) -> None:
    ours = written.load_table("db.ours_three_fields").scan().to_arrow().sort_by("id")
    java = written.load_table("db.java_three_fields").scan().to_arrow().sort_by("id")
    assert ours.to_pylist() == java.to_pylist() == pa.Table.from_pylist(ROWS, schema=SCHEMA).to_pylist()
