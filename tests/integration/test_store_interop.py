"""Other Iceberg readers see exactly what our stores hold: pyiceberg and DuckDB 1.5.5.

Also runs the format core against the real PostgreSQL catalog and the real S3 server, so the
same keyed-table behaviour holds on every backend the catalogs.yaml offers.
"""

from __future__ import annotations

import uuid
from pathlib import Path

import pyarrow as pa
import pytest

from mixed_iceberg import MixedCatalog, MixedTable, load_catalog
from tests.support.duckdb_iceberg import read_iceberg
from tests.support.services import S3Endpoint
from tests.support.tables import ORDERS_SCHEMA, changes, local_catalog, rows_of

pytestmark = pytest.mark.integration


def _populate(table: MixedTable) -> None:
    table.bulk_load(changes([("+I", k, "abc"[k % 3], k, k / 2) for k in range(50)]).drop_columns(["_change_action"]))
    with table.new_transaction(("interop", 1)) as txn:
        txn.write(changes([("-U", 3, "a", 3, 1.5), ("+U", 3, "z", 33, 9.0), ("-D", 4, "b", 4, 2.0), ("+I", 100, "c", 1, 1.0)]))
    with table.new_transaction(("interop", 2)) as txn:
        txn.write(changes([("+I", 101, "a", 2, 2.0), ("-D", 100, "c", 1, 1.0)]))


def _expected_merged() -> list[tuple[object, ...]]:
    state = {k: (k, "abc"[k % 3], k, k / 2) for k in range(50)}
    state[3] = (3, "z", 33, 9.0)
    del state[4]
    state[101] = (101, "a", 2, 2.0)
    return sorted(state.values())


def _assert_readers_agree(table: MixedTable, s3: S3Endpoint | None = None) -> None:
    for store in (table.base_store, table.change_store):
        assert store is not None
        store.refresh()
        ours = rows_of(store.scan().to_arrow())
        duck = read_iceberg(store.metadata_location, s3)
        assert rows_of(duck.select(ORDERS_SCHEMA.names)) == ours
    assert rows_of(table.scan().to_arrow()) == _expected_merged()


@pytest.mark.parametrize("partition_by", [None, ["cat"]], ids=["unpartitioned", "partitioned"])
def test_pyiceberg_and_duckdb_read_each_store_identically(tmp_path: Path, partition_by: list[str] | None) -> None:
    table = local_catalog(tmp_path).create_table("db.orders", ORDERS_SCHEMA, primary_key=["id"], partition_by=partition_by)
    _populate(table)
    _assert_readers_agree(table)


def test_readers_agree_after_bulk_overwrite_with_puffin_statistics(tmp_path: Path) -> None:
    table = local_catalog(tmp_path).create_table("db.orders", ORDERS_SCHEMA, primary_key=["id"])
    _populate(table)
    table.bulk_load(
        pa.table({"id": pa.array([1], pa.int64()), "cat": ["a"], "qty": pa.array([1], pa.int32()), "price": [1.0]}),
        overwrite=True,
    )
    assert rows_of(read_iceberg(table.base_store.metadata_location).select(ORDERS_SCHEMA.names)) == [(1, "a", 1, 1.0)]
    assert rows_of(table.scan().to_arrow()) == [(1, "a", 1, 1.0)]


def test_keyed_tables_on_real_postgresql_catalog(tmp_path: Path, postgres_url: str) -> None:
    catalog: MixedCatalog = load_catalog("postgres", uri=postgres_url, warehouse=str(tmp_path / "wh"))
    name = f"pg_{uuid.uuid4().hex[:8]}.orders"
    table = catalog.create_table(name, ORDERS_SCHEMA, primary_key=["id"])
    _populate(table)
    reloaded = load_catalog("postgres", uri=postgres_url, warehouse=str(tmp_path / "wh")).load_table(name)
    _assert_readers_agree(reloaded)
    catalog.drop_table(name, purge=True)
    assert not catalog.table_exists(name)


def test_keyed_tables_on_real_s3_server(tmp_path: Path, s3_endpoint: S3Endpoint) -> None:
    catalog = load_catalog(
        "s3",
        uri=f"sqlite:///{tmp_path}/s3cat.db",
        warehouse=f"s3://{s3_endpoint.bucket}/{uuid.uuid4().hex[:8]}",
        **{
            "s3.endpoint": s3_endpoint.url,
            "s3.access-key-id": s3_endpoint.access_key,
            "s3.secret-access-key": s3_endpoint.secret_key,
            "s3.region": s3_endpoint.region,
        },
    )
    table = catalog.create_table("db.orders", ORDERS_SCHEMA, primary_key=["id"], partition_by=["cat"])
    _populate(table)
    assert table.change_store is not None
    assert table.change_store.location().startswith("s3://")
    _assert_readers_agree(table, s3_endpoint)
