"""pyiceberg works against the suite's real services: PostgreSQL catalogs and S3 warehouses.

This proves the services, not our catalog: the Mixed-Iceberg catalog wrapper gets its own
backend tests.
"""

from __future__ import annotations

import uuid
from pathlib import Path

import pyarrow as pa
import pytest
import sqlalchemy
from pyarrow import fs
from pyiceberg.catalog.sql import SqlCatalog
from pyiceberg.schema import Schema
from pyiceberg.types import LongType, NestedField, StringType

from tests.support.services import S3Endpoint

pytestmark = pytest.mark.integration

SCHEMA = Schema(
    NestedField(1, "id", LongType(), required=True),
    NestedField(2, "name", StringType(), required=False),
    identifier_field_ids=[1],
)


def _batch(start: int, count: int) -> pa.Table:
    return pa.table(
        {
            "id": pa.array(range(start, start + count), pa.int64()),
            "name": pa.array([f"n{i}" for i in range(start, start + count)], pa.string()),
        },
        schema=pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("name", pa.string())]),
    )


def _create_append_read(catalog: SqlCatalog) -> None:
    namespace = f"smoke_{uuid.uuid4().hex[:8]}"
    catalog.create_namespace(namespace)
    table = catalog.create_table(f"{namespace}.t", schema=SCHEMA)
    table.append(_batch(0, 100))
    table.append(_batch(100, 50))

    reloaded = catalog.load_table(f"{namespace}.t")
    rows = reloaded.scan().to_arrow().sort_by("id")

    assert rows.num_rows == 150
    assert rows.column("id").to_pylist() == list(range(150))
    assert len(reloaded.snapshots()) == 2
    assert (f"{namespace}", "t") in [tuple(i) for i in catalog.list_tables(namespace)]


def test_sql_catalog_on_postgres(postgres_url: str, tmp_path: Path) -> None:
    catalog = SqlCatalog("pg_smoke", uri=postgres_url, warehouse=f"file://{tmp_path}")

    _create_append_read(catalog)

    # The catalog rows really are in PostgreSQL, not in some fallback store.
    engine = sqlalchemy.create_engine(postgres_url)
    try:
        with engine.connect() as conn:
            server = conn.execute(sqlalchemy.text("SHOW server_version")).scalar_one()
            count = conn.execute(
                sqlalchemy.text("SELECT count(*) FROM iceberg_tables WHERE catalog_name = 'pg_smoke'")
            ).scalar_one()
    finally:
        engine.dispose()
    assert server
    assert count >= 1


def test_sqlite_catalog_with_s3_warehouse(s3_endpoint: S3Endpoint, tmp_path: Path) -> None:
    prefix = f"smoke/{uuid.uuid4().hex}"
    catalog = SqlCatalog(
        "s3_smoke",
        uri=f"sqlite:///{tmp_path / 'catalog.db'}",
        warehouse=s3_endpoint.warehouse(prefix),
        **s3_endpoint.pyiceberg_properties(),
    )

    _create_append_read(catalog)

    # Data and metadata landed in the bucket.
    s3 = fs.S3FileSystem(
        access_key=s3_endpoint.access_key,
        secret_key=s3_endpoint.secret_key,
        endpoint_override=s3_endpoint.host_port,
        scheme="http",
        region=s3_endpoint.region,
    )
    keys = [info.path for info in s3.get_file_info(fs.FileSelector(f"{s3_endpoint.bucket}/{prefix}", recursive=True))]
    assert any(key.endswith(".parquet") for key in keys)
    assert any(key.endswith(".metadata.json") for key in keys)


def test_s3_rejects_wrong_credentials(s3_endpoint: S3Endpoint) -> None:
    s3 = fs.S3FileSystem(
        access_key=s3_endpoint.access_key,
        secret_key="not-the-secret",
        endpoint_override=s3_endpoint.host_port,
        scheme="http",
        region=s3_endpoint.region,
        retry_strategy=fs.AwsStandardS3RetryStrategy(max_attempts=1),
    )
    with pytest.raises(OSError, match=r"SIGNATURE_DOES_NOT_MATCH|AccessDenied|ACCESS_DENIED"):
        s3.get_file_info(fs.FileSelector(s3_endpoint.bucket))
