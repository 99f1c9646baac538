"""Spark 3.5 with Iceberg's Spark runtime, configured as a REST catalog on ``mixed-iceberg serve``
(issue 35 item 4).

The session's Spark JVM (``spark_jvm``) and the session's ``serve`` (``rest_server``) are shared;
Spark's catalog ``lake`` is the served catalog, with the properties docs/rest.md shows
(``tests.support.spark.rest_catalog``). What is protected, in the order a user meets it:

* Spark creates a namespace and a table and INSERTs through the server;
* ``CREATE TABLE ... AS SELECT`` is atomic: Iceberg's SparkCatalog stages the create
  (``stage-create``) and commits it with ``assert-create``, so the table's first metadata
  file already holds its one snapshot (a create followed by an append would leave two);
* ``MERGE INTO`` in merge-on-read mode commits position deletes and new rows through the
  server;
* Spark, in a fresh session, and pyiceberg's ``RestCatalog`` read the same rows, which equal a
  plain replay of the statements;
* Spark's ``credential`` (OAuth2 client credentials) is accepted, and no credential is a 401
  (a server of its own, with credentials).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pyarrow as pa
import pytest
from pyiceberg.catalog.rest import RestCatalog
from pyiceberg.schema import Schema
from pyiceberg.types import LongType, NestedField

from tests.support.rest_server import RestServer
from tests.support.spark import catalog_session, rest_catalog

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = [
    pytest.mark.integration,
    # py4j drops idle gateway connections without closing their sockets; the session fixture
    # shuts the gateway down (closing them) and collects the rest.
    pytest.mark.filterwarnings(r"ignore:Exception ignored in. <socket\.socket:pytest.PytestUnraisableExceptionWarning"),
]

CATALOG = "lake"
NAMESPACE = "spark_rest"


def _spark(jvm: SparkSession, server: RestServer) -> SparkSession:
    """A session whose catalog ``lake`` is the served catalog, loaded afresh."""
    return catalog_session(jvm, {CATALOG: rest_catalog(server.uri, server.warehouse, token=server.token)})


def _rows(spark: SparkSession, table: str) -> list[tuple[int, str, float]]:
    return sorted((r.id, r.name, r.amount) for r in spark.table(f"{CATALOG}.{NAMESPACE}.{table}").collect())


def test_spark_creates_inserts_ctas_and_merges_through_rest_and_pyiceberg_reads_the_same(
    spark_jvm: SparkSession, rest_server: RestServer
) -> None:
    spark = _spark(spark_jvm, rest_server)
    orders, copy = f"{CATALOG}.{NAMESPACE}.orders", f"{CATALOG}.{NAMESPACE}.big_orders"
    spark.sql(f"CREATE NAMESPACE {CATALOG}.{NAMESPACE}")
    spark.sql(
        f"CREATE TABLE {orders} (id BIGINT, name STRING, amount DOUBLE) USING iceberg "
        "TBLPROPERTIES ('format-version' = '2', 'write.merge.mode' = 'merge-on-read', "
        "'write.update.mode' = 'merge-on-read', 'write.delete.mode' = 'merge-on-read')"
    )
    spark.sql(f"INSERT INTO {orders} VALUES (1, 'a', 10.0), (2, 'b', 20.0), (3, 'c', 30.0), (4, 'd', 40.0)")
    spark.sql(f"CREATE TABLE {copy} USING iceberg AS SELECT * FROM {orders} WHERE amount >= 20")
    spark.sql(
        f"""MERGE INTO {orders} t
        USING (SELECT * FROM VALUES (2, 'B', 21.0), (4, NULL, 0.0), (5, 'e', 50.0) AS s(id, name, amount)) s
        ON t.id = s.id
        WHEN MATCHED AND s.name IS NULL THEN DELETE
        WHEN MATCHED THEN UPDATE SET t.name = s.name, t.amount = s.amount
        WHEN NOT MATCHED THEN INSERT *"""
    )

    expected_orders = [(1, "a", 10.0), (2, "B", 21.0), (3, "c", 30.0), (5, "e", 50.0)]
    expected_copy = [(2, "b", 20.0), (3, "c", 30.0), (4, "d", 40.0)]
    fresh = _spark(spark_jvm, rest_server)
    assert _rows(fresh, "orders") == expected_orders
    assert _rows(fresh, "big_orders") == expected_copy

    catalog = RestCatalog("rest", **rest_server.pyiceberg_properties())
    assert {name for _, name in catalog.list_tables(NAMESPACE)} == {"orders", "big_orders"}
    table = catalog.load_table(f"{NAMESPACE}.orders")
    assert sorted(tuple(row.values()) for row in table.scan().to_arrow().to_pylist()) == expected_orders
    merge = table.current_snapshot()
    assert merge is not None
    assert merge.summary is not None
    assert merge.summary.operation.value == "overwrite"
    assert int(merge.summary["added-position-deletes"]) == 2, "merge-on-read: the updated and the deleted row"
    assert len(table.metadata.snapshots) == 2

    ctas = catalog.load_table(f"{NAMESPACE}.big_orders")
    assert sorted(tuple(row.values()) for row in ctas.scan().to_arrow().to_pylist()) == expected_copy
    assert len(ctas.metadata.snapshots) == 1
    assert ctas.metadata.metadata_log == [], "the staged create and its data committed as one metadata file"


def test_spark_authenticates_with_oauth2_client_credentials(spark_jvm: SparkSession, tmp_path: Path) -> None:
    """``credential=<id>:<secret>`` (Iceberg Java's OAuth2 client-credentials exchange) gets Spark
    a token; without it the server refuses Spark with 401."""
    server = RestServer.start(tmp_path / "serve", credentials={"spark": "spark-secret"})
    try:
        client = RestCatalog("rest", **server.pyiceberg_properties())
        client.create_namespace("authed")
        client.create_table("authed.t", Schema(NestedField(1, "id", LongType(), required=False))).append(
            pa.table({"id": pa.array([7], pa.int64())})
        )
        assert server.credential == "spark:spark-secret"
        spark = catalog_session(spark_jvm, {CATALOG: rest_catalog(server.uri, server.warehouse, credential=server.credential)})
        assert [r.id for r in spark.table(f"{CATALOG}.authed.t").collect()] == [7]
        anonymous = catalog_session(spark_jvm, {CATALOG: rest_catalog(server.uri, server.warehouse)})
        with pytest.raises(Exception, match="NotAuthorizedException"):
            anonymous.table(f"{CATALOG}.authed.t").collect()
    finally:
        server.stop()
