"""A real Spark (3.5, Iceberg 1.10) on our tables: its maintenance and readers must not break them.

One ``local[1]`` Spark for the module reads our SQLite SQL catalog through Iceberg's JDBC
catalog, under the same catalog name; each step that must see our latest commits takes a fresh
session of it (tests/support/spark.py says why). What is pinned:

* ``CALL system.compute_table_stats`` replaces the BaseStore snapshot's statistics file (our
  ``optimized-sequence`` Puffin blob is gone); our merged read stays correct and the next
  minor merges no change row twice (basestore/optimized_sequence.py keeps a summary copy).
* Our optimizing commits are ``replace`` snapshots: Spark's streaming reader of the BaseStore
  skips them instead of failing with "Cannot process overwrite snapshot", and their summary
  has the keys Iceberg Java's ``RewriteFiles`` writes (checked against Spark's own rewrite).
* Spark sees the rows of both stores that we see.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from mixed_iceberg import MixedCatalog, MixedTable
from mixed_iceberg.basestore.optimized_sequence import OPTIMIZED_SEQUENCE, read_optimized_sequence
from tests.support.spark import shutdown, spark_session
from tests.support.tables import ORDERS_SCHEMA, changes, local_catalog, rows_of

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = [
    pytest.mark.integration,
    pytest.mark.slow,
    # py4j drops idle gateway connections without closing their sockets; the fixture shuts the
    # gateway down (closing them) and collects the rest, so none escapes this module.
    pytest.mark.filterwarnings(r"ignore:Exception ignored in. <socket\.socket:pytest.PytestUnraisableExceptionWarning"),
]

CATALOG = "local"
# Keys of a snapshot summary that name the engine or the run, not the commit's content.
ENGINE_KEYS = {"app-id", "spark.app.id", "engine-name", "engine-version", "iceberg-version"}


@dataclass(frozen=True, slots=True)
class Interop:
    root: SparkSession
    catalog: MixedCatalog
    scratch: Path

    def spark(self) -> SparkSession:
        """A session that sees every commit made so far (its catalogs are loaded afresh)."""
        return self.root.newSession()


@pytest.fixture(scope="module")
def interop(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Interop]:
    root = tmp_path_factory.mktemp("spark-interop")
    catalog = local_catalog(root, name=CATALOG)  # creates the catalog tables Spark then finds
    spark = spark_session(CATALOG, root / "catalog.db", root / "wh", root / "spark")
    try:
        yield Interop(spark, catalog, root / "spark")
    finally:
        shutdown(spark)


def _spark_rows(interop: Interop, identifier: str) -> list[tuple[object, ...]]:
    frame = interop.spark().table(f"{CATALOG}.{identifier}").select(*ORDERS_SCHEMA.names)
    return sorted(tuple(row) for row in frame.collect())


def _loaded(catalog: MixedCatalog, name: str, rows: int) -> MixedTable:
    table = catalog.create_table(name, ORDERS_SCHEMA, primary_key=["id"], partition_by=["cat"])
    table.bulk_load(changes([("+I", k, "ab"[k % 2], k, 1.0) for k in range(rows)]).drop_columns(["_change_action"]))
    return table


def test_compute_table_stats_neither_brings_back_merged_rows_nor_gets_them_merged_twice(interop: Interop) -> None:
    table = _loaded(interop.catalog, "db.stats", 40)
    with table.new_transaction() as txn:
        txn.write(changes([("-U", 1, "b", 1, 1.0), ("+U", 1, "b", 100, 2.0), ("-D", 2, "a", 2, 1.0), ("+I", 50, "a", 5, 5.0)]))
    assert table.optimizing.run("minor").committed
    table = table.refresh()
    merged = rows_of(table.scan().to_arrow())
    sequences = read_optimized_sequence(table.base_store, table.base_store.current_snapshot())
    assert sequences, "the minor recorded an optimized sequence"

    interop.spark().sql(f"CALL {CATALOG}.system.compute_table_stats(table => 'db.stats')").collect()

    table = table.refresh()
    base = table.base_store
    snapshot = base.current_snapshot()
    assert snapshot is not None
    (statistics,) = [s for s in base.metadata.statistics if s.snapshot_id == snapshot.snapshot_id]
    blob_types = {b.type for b in statistics.blob_metadata}
    assert OPTIMIZED_SEQUENCE not in blob_types, f"Spark's statistics file replaced ours: {blob_types}"
    assert rows_of(table.scan().to_arrow()) == merged, "no merged-away version may come back"
    assert read_optimized_sequence(base, snapshot) == sequences

    with table.new_transaction() as txn:
        txn.write(changes([("-U", 3, "b", 3, 1.0), ("+U", 3, "b", 300, 3.0)]))
    table = table.refresh()
    expected = sorted([r for r in merged if r[0] != 3] + [(3, "b", 300, 3.0)])
    assert rows_of(table.scan().to_arrow()) == expected
    assert table.optimizing.run("minor").committed
    table = table.refresh()
    assert rows_of(table.scan().to_arrow()) == expected
    # Every change is merged now: the BaseStore alone holds the merged view, once per key.
    assert rows_of(table.base_store.scan().to_arrow()) == expected
    assert _spark_rows(interop, "db.stats") == expected
    change = table.change_store
    assert change is not None
    assert interop.spark().table(f"{CATALOG}.{'.'.join(change.name())}").count() == change.scan().to_arrow().num_rows


def test_spark_streams_the_base_store_past_our_optimizing_commits(interop: Interop) -> None:
    table = _loaded(interop.catalog, "db.stream", 30)
    loaded = rows_of(table.base_store.scan().to_arrow())
    for kind, update in (("minor", 1), ("major", 2), ("full", 3)):
        with table.new_transaction() as txn:
            txn.write(changes([("-U", update, "b", update, 1.0), ("+U", update, "b", 10 * update, 2.0)]))
        assert table.optimizing.run(kind).committed, kind
        table = table.refresh()
    base = table.base_store

    spark = interop.spark()
    query = (
        spark.readStream.format("iceberg")
        .load(f"{CATALOG}.db.stream")
        .writeStream.format("memory")
        .queryName("base_stream")
        .option("checkpointLocation", str(interop.scratch / "checkpoint-base-stream"))
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination(120)
    assert query.exception() is None
    streamed = sorted(tuple(r) for r in spark.table("base_stream").select(*ORDERS_SCHEMA.names).collect())
    assert streamed == loaded, "the stream holds the appended rows; the replaces add nothing"
    operations = [s.summary.operation.value for s in base.snapshots() if s.summary is not None]
    assert operations == ["append", "replace", "replace", "replace"]

    # An incremental batch read from the bulk load on reads no optimizing commit's rows either.
    first = base.snapshots()[0].snapshot_id
    incremental = spark.read.format("iceberg").option("start-snapshot-id", str(first)).load(f"{CATALOG}.db.stream")
    assert incremental.count() == 0
    # Spark and we see the same BaseStore and ChangeStore rows.
    assert _spark_rows(interop, "db.stream") == rows_of(base.scan().to_arrow())
    change = table.change_store
    assert change is not None
    assert _spark_rows(interop, ".".join(change.name())) == rows_of(change.scan().to_arrow().select(ORDERS_SCHEMA.names))


def test_our_replace_summary_has_the_keys_of_spark_rewrite_data_files(interop: Interop) -> None:
    spark = interop.spark()
    spark.sql(
        f"CREATE TABLE {CATALOG}.db.plain (id BIGINT, v STRING) USING iceberg "
        "TBLPROPERTIES ('format-version'='2', 'write.delete.mode'='merge-on-read')"
    )
    spark.sql(f"INSERT INTO {CATALOG}.db.plain VALUES (1, 'a'), (3, 'c')")
    spark.sql(f"INSERT INTO {CATALOG}.db.plain VALUES (2, 'b')")
    spark.sql(f"DELETE FROM {CATALOG}.db.plain WHERE id = 1")
    spark.sql(
        f"CALL {CATALOG}.system.rewrite_data_files(table => 'db.plain', "
        "options => map('min-input-files', '1', 'delete-file-threshold', '1'))"
    ).collect()
    (java,) = spark.sql(f"SELECT summary FROM {CATALOG}.db.plain.snapshots WHERE operation = 'replace'").collect()

    table = _loaded(interop.catalog, "db.summary", 20)
    with table.new_transaction() as txn:
        txn.write(changes([("-D", 2, "a", 2, 1.0)]))
    assert table.optimizing.run("minor").committed
    assert table.optimizing.run("full").committed
    snapshot = table.refresh().base_store.current_snapshot()
    assert snapshot is not None
    assert snapshot.summary is not None
    assert snapshot.summary.operation.value == "replace"
    ours = {k for k in snapshot.summary.additional_properties if not k.startswith(("mixed-iceberg.", "optimized-", "base-"))}
    # The same content keys (which counters appear depends on what each rewrite touched).
    assert set(java.summary) - ENGINE_KEYS <= ours
    assert "changed-partition-count" in ours
