"""Purge and fresh table folders on the real S3 server: no key of a purged table is left, and a
new table never shares a prefix with the files a dropped one left."""

from __future__ import annotations

import uuid
from pathlib import Path

import pyarrow as pa
import pytest
from pyarrow import fs

from mixed_iceberg import MixedCatalog, load_catalog
from tests.support.services import S3Endpoint
from tests.support.tables import ORDERS_SCHEMA, changes, rows_of

pytestmark = pytest.mark.integration


def _keys(s3: fs.S3FileSystem, prefix: str) -> list[str]:
    return sorted(i.path for i in s3.get_file_info(fs.FileSelector(prefix, recursive=True, allow_not_found=True)))


def _catalog(tmp_path: Path, s3_endpoint: S3Endpoint, prefix: str) -> MixedCatalog:
    return load_catalog(
        "s3",
        uri=f"sqlite:///{tmp_path}/s3cat.db",
        warehouse=f"s3://{s3_endpoint.bucket}/{prefix}",
        **{
            "s3.endpoint": s3_endpoint.url,
            "s3.access-key-id": s3_endpoint.access_key,
            "s3.secret-access-key": s3_endpoint.secret_key,
            "s3.region": s3_endpoint.region,
        },
    )


def test_purge_and_fresh_folders_on_s3(tmp_path: Path, s3_endpoint: S3Endpoint) -> None:
    prefix = f"purge/{uuid.uuid4().hex[:8]}"
    catalog = _catalog(tmp_path, s3_endpoint, prefix)
    s3 = fs.S3FileSystem(
        access_key=s3_endpoint.access_key,
        secret_key=s3_endpoint.secret_key,
        endpoint_override=s3_endpoint.host_port,
        scheme="http",
        region=s3_endpoint.region,
    )
    root = f"{s3_endpoint.bucket}/{prefix}/db"
    rows = changes([("+I", k, "ab"[k % 2], k, 1.0) for k in range(10)]).drop_columns(["_change_action"])

    table = catalog.create_table("db.t", ORDERS_SCHEMA, primary_key=["id"], partition_by=["cat"])
    table.bulk_load(rows)
    with table.new_transaction() as txn:
        txn.write(changes([("-D", 1, "b", 1, 1.0), ("+I", 20, "a", 1, 1.0)]))
    table.optimizing.run("full")
    assert any(key.endswith(".puffin") for key in _keys(s3, f"{root}/t"))
    catalog.drop_table("db.t", purge=True)
    assert _keys(s3, root) == []

    table = catalog.create_table("db.t", ORDERS_SCHEMA, primary_key=["id"])
    assert table.base_store.location() == f"s3://{root}/t"
    table.bulk_load(rows)
    catalog.drop_table("db.t")  # no purge: its keys stay
    left = _keys(s3, root)
    again = catalog.create_table("db.t", ORDERS_SCHEMA, primary_key=["id"])
    assert again.base_store.location().startswith(f"s3://{root}/t-")
    again.bulk_load(rows.slice(0, 1).set_column(0, "id", pa.array([99], pa.int64())))
    assert rows_of(again.scan().to_arrow()) == [(99, "a", 0, 1.0)]
    catalog.drop_table("db.t", purge=True)
    assert _keys(s3, root) == left
