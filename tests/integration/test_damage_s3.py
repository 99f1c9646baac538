"""Damage on the real S3 server: a deleted key (NoSuchKey) and a truncated object are damage,
named as such; the damaged table is purged without a key left."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest
from pyarrow import fs

from mixed_iceberg import load_catalog
from mixed_iceberg.exceptions import CorruptFileError, MissingFileError
from tests.support.damage import forget_reads
from tests.support.services import S3Endpoint
from tests.support.tables import ORDERS_SCHEMA, changes

pytestmark = pytest.mark.integration


def test_a_deleted_or_truncated_object_is_damage_and_the_table_still_purges(tmp_path: Path, s3_endpoint: S3Endpoint) -> None:
    prefix = f"damage/{uuid.uuid4().hex[:8]}"
    catalog = load_catalog(
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
    s3 = fs.S3FileSystem(
        access_key=s3_endpoint.access_key,
        secret_key=s3_endpoint.secret_key,
        endpoint_override=s3_endpoint.host_port,
        scheme="http",
        region=s3_endpoint.region,
    )
    table = catalog.create_table("db.t", ORDERS_SCHEMA, primary_key=["id"], partition_by=["cat"])
    table.bulk_load(changes([("+I", k, "ab"[k % 2], k, 1.0) for k in range(10)]).drop_columns(["_change_action"]))
    first, second, *_ = sorted(table.base_store.inspect.files().column("file_path").to_pylist())
    s3.delete_file(first.removeprefix("s3://"))
    with pytest.raises(MissingFileError, match=r"data file .* is damaged: expected the file its table references") as gone:
        catalog.load_table("db.t").scan().to_arrow()
    assert gone.value.path == first
    with s3.open_input_file(second.removeprefix("s3://")) as stream:
        data = stream.read()
    with s3.open_output_stream(second.removeprefix("s3://")) as stream:
        stream.write(data[: len(data) // 2])
    s3.copy_file(second.removeprefix("s3://"), first.removeprefix("s3://"))  # the first back, truncated too
    forget_reads(catalog)
    with pytest.raises(CorruptFileError, match=r"table db\.t, BaseStore: data file .* is damaged: expected \d+ bytes"):
        catalog.load_table("db.t").scan().to_arrow()
    catalog.purge_table("db.t")
    left = s3.get_file_info(fs.FileSelector(f"{s3_endpoint.bucket}/{prefix}", recursive=True, allow_not_found=True))
    assert [info.path for info in left if info.type == fs.FileType.File] == []
