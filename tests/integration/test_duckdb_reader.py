"""DuckDB (offline extensions) reads pyiceberg tables exactly as pyiceberg does."""

from __future__ import annotations

import datetime as dt
import uuid
from decimal import Decimal
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa
import pytest
from pyiceberg.catalog.sql import SqlCatalog
from pyiceberg.partitioning import PartitionField, PartitionSpec
from pyiceberg.schema import Schema
from pyiceberg.table import Table
from pyiceberg.transforms import IdentityTransform
from pyiceberg.types import (
    BooleanType,
    DateType,
    DecimalType,
    DoubleType,
    LongType,
    NestedField,
    StringType,
    TimestampType,
    TimestamptzType,
)

from tests.support.duckdb_iceberg import EXTENSIONS, connect, extension_path, read_iceberg
from tests.support.services import S3Endpoint

pytestmark = pytest.mark.integration

SCHEMA = Schema(
    NestedField(1, "id", LongType(), required=True),
    NestedField(2, "category", StringType(), required=False),
    NestedField(3, "amount", DecimalType(10, 2), required=False),
    NestedField(4, "score", DoubleType(), required=False),
    NestedField(5, "active", BooleanType(), required=False),
    NestedField(6, "day", DateType(), required=False),
    NestedField(7, "ts", TimestampType(), required=False),
    NestedField(8, "ts_utc", TimestamptzType(), required=False),
    identifier_field_ids=[1],
)
ARROW_SCHEMA = pa.schema(
    [
        pa.field("id", pa.int64(), nullable=False),
        pa.field("category", pa.string()),
        pa.field("amount", pa.decimal128(10, 2)),
        pa.field("score", pa.float64()),
        pa.field("active", pa.bool_()),
        pa.field("day", pa.date32()),
        pa.field("ts", pa.timestamp("us")),
        pa.field("ts_utc", pa.timestamp("us", tz="UTC")),
    ]
)


def _rows(start: int, count: int) -> pa.Table:
    base = dt.datetime(2026, 1, 1, 12, 0, 0)
    rows: list[dict[str, Any]] = [
        {
            "id": i,
            "category": None if i % 7 == 0 else f"cat-{i % 3}",
            "amount": Decimal(i) / 4,
            "score": None if i % 5 == 0 else i * 0.5,
            "active": i % 2 == 0,
            "day": (base + dt.timedelta(days=i)).date(),
            "ts": base + dt.timedelta(minutes=i),
            "ts_utc": (base + dt.timedelta(seconds=i)).replace(tzinfo=dt.UTC),
        }
        for i in range(start, start + count)
    ]
    return pa.Table.from_pylist(rows, schema=ARROW_SCHEMA)


def _sorted_rows(table: pa.Table) -> list[dict[str, Any]]:
    return sorted(table.to_pylist(), key=lambda row: row["id"])


def _make_table(catalog: SqlCatalog, *, partitioned: bool) -> Table:
    namespace = f"ns_{uuid.uuid4().hex[:8]}"
    catalog.create_namespace(namespace)
    spec = (
        PartitionSpec(PartitionField(source_id=2, field_id=1000, transform=IdentityTransform(), name="category"))
        if partitioned
        else PartitionSpec()
    )
    table = catalog.create_table(f"{namespace}.events", schema=SCHEMA, partition_spec=spec)
    table.append(_rows(0, 60))
    table.append(_rows(60, 40))
    # Copy-on-write delete: rewrites data files, so DuckDB must follow the current snapshot's
    # manifests rather than every file under data/.
    table.delete("active = false")
    table.append(_rows(100, 5))
    return table


@pytest.fixture(params=["local", "s3"])
def catalog(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[SqlCatalog, S3Endpoint | None]:
    uri = f"sqlite:///{tmp_path / 'catalog.db'}"
    if request.param == "local":
        return SqlCatalog("duckdb_oracle", uri=uri, warehouse=f"file://{tmp_path / 'warehouse'}"), None
    s3: S3Endpoint = request.getfixturevalue("s3_endpoint")
    warehouse = s3.warehouse("duckdb-reader", uuid.uuid4().hex)
    return SqlCatalog("duckdb_oracle", uri=uri, warehouse=warehouse, **s3.pyiceberg_properties()), s3


def test_extensions_load_from_wheels_without_network() -> None:
    con = connect()
    loaded = {name for (name,) in con.execute("SELECT extension_name FROM duckdb_extensions() WHERE loaded").fetchall()}
    assert set(EXTENSIONS) <= loaded
    assert duckdb.__version__ == "1.5.5"
    assert all(extension_path(name).is_file() for name in EXTENSIONS)


@pytest.mark.parametrize("partitioned", [False, True], ids=["unpartitioned", "partitioned"])
def test_duckdb_reads_same_rows_as_pyiceberg(
    catalog: tuple[SqlCatalog, S3Endpoint | None],
    partitioned: bool,
) -> None:
    cat, s3 = catalog
    table = _make_table(cat, partitioned=partitioned)

    expected = table.scan().to_arrow()
    actual = read_iceberg(table.metadata_location, s3=s3)

    assert actual.column_names == expected.column_names
    assert actual.num_rows == expected.num_rows == 55
    assert _sorted_rows(actual) == _sorted_rows(expected)


def test_duckdb_reads_the_snapshot_of_older_metadata(tmp_path: Path) -> None:
    cat = SqlCatalog("duckdb_oracle", uri=f"sqlite:///{tmp_path / 'c.db'}", warehouse=f"file://{tmp_path}")
    cat.create_namespace("ns")
    table = cat.create_table("ns.t", schema=SCHEMA)
    table.append(_rows(0, 10))
    first = table.metadata_location
    table.append(_rows(10, 10))

    assert read_iceberg(first).num_rows == 10
    assert read_iceberg(table.metadata_location).num_rows == 20
